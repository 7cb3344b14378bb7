"""sm90_model.py - the pieces of the sm_90a hardware and of the shared GEMM scheduling that several of the
tools/gemm_dev emulators model alike, kept here once (they were copies): the grouped tile raster of the
persistent kernels (wg_raster), the wgmma m64nNk16 accumulator (D fragment) layout (d_frag, d_frag_blocks),
TMA's 128-byte shared-memory swizzle (swz128) and a TMA box over all K blocks with zero fill (box). Each
emulator keeps its own model of what its kernel computes (the kernel's own address formulas, e.g. `jj ^ g`,
stay in the emulator: they are what is checked against these). Works on ints and on numpy integer arrays alike.
"""
import numpy as np


def wg_raster(t, tiles_m, tiles_n, gm):
    """the kernels' shared raster (wg_raster, pp_tile): tile t -> (tm, tn), walking groups of gm tile rows
    column by column (the last group may be shorter)"""
    group = t // (gm * tiles_n)
    first_m = group * gm
    gsz = min(tiles_m - first_m, gm)
    r = t % (gm * tiles_n)
    return first_m + r % gsz, r // gsz


def d_frag(n):
    """(tid, i) -> (row, col) of accumulator i of consumer thread tid (0..127) in its 64 x n block: the
    m64nNk16 D fragment layout; two int arrays of shape (128, n // 2)"""
    tid = np.arange(128)[:, None]
    i = np.arange(n // 2)[None, :]
    warp, lane = tid >> 5, tid & 31
    g, q = lane >> 2, lane & 3
    j, e = i >> 2, i & 3
    rows = warp * 16 + g + np.where(e >= 2, 8, 0)
    cols = 8 * j + 2 * q + (e & 1)
    return np.broadcast_to(rows, (128, n // 2)), np.broadcast_to(cols, (128, n // 2))


def swz128(row, chunk):
    """byte offset of 16-byte chunk `chunk` (0..7) of row `row` in a box of 128-byte rows that TMA writes or
    reads with the 128-byte swizzle: the chunk lands at chunk ^ (row % 8). TMA takes row % 8 from address
    bits 7..9, so `row` counts 128-byte rows from a 1024-byte aligned address (the caller's check)."""
    return row * 128 + ((chunk ^ (row & 7)) << 4)


def box(X, r0, rows, kpad):
    """a TMA box of rows [r0, r0 + rows) of X over all K blocks (kpad columns), zero past X's last row and
    past its K"""
    out = np.zeros((rows, kpad))
    if r0 < X.shape[0]:
        r = X[r0:min(r0 + rows, X.shape[0])]
        out[:r.shape[0], :X.shape[1]] = r
    return out


def d_frag_blocks(blocks, n):
    """d_frag for `blocks` 64-row blocks stacked (consumer or row block b at rows 64 b ..): row[b, tid, i] and
    col[b, tid, i], each of shape (blocks, 128, n // 2) (read-only broadcasts)"""
    rows, cols = d_frag(n)
    b = np.arange(blocks)[:, None, None]
    return np.broadcast_to(b * 64 + rows, (blocks, 128, n // 2)), np.broadcast_to(cols, (blocks, 128, n // 2))
