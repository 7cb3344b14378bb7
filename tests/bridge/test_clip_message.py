#!/usr/bin/env python3
"""test_clip_message.py - clip_message() of tools/bridge/solforge_bridge.py, the cut of a task's message
to result.json's size: on random messages of random lengths (around and far past the limit, random
limits and heads, a seed printed for a rerun), a message that fits comes back unchanged; a longer one
comes back exactly `limit` characters long, starting with the message's first `head` characters (at
most a third of the limit: the line the C side logs), ending with its last characters, and the number the gap line states is the
number of characters actually left out. Prints `ok NAME` / `FAIL NAME: why`; exits 1 on a failure.
"""
import os
import random
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "bridge"))
import solforge_bridge  # noqa: E402

seed = int(sys.argv[1]) if len(sys.argv) > 1 else random.SystemRandom().randrange(1 << 30)
rng = random.Random(seed)
bad = 0
for it in range(3000):
    limit = rng.choice([solforge_bridge.MESSAGE_MAX, rng.randrange(200, 6000)])
    head = rng.choice([solforge_bridge.MESSAGE_HEAD, rng.randrange(1, limit // 3)])
    n = rng.choice([rng.randrange(0, limit + 1), limit, limit + 1, rng.randrange(limit, 50 * limit)])
    msg = "".join(rng.choice("abc \nxyz0123456789[].") for _ in range(n))
    c = solforge_bridge.clip_message(msg, limit, head)
    head = min(head, limit // 3)  # the head it keeps
    why = None
    if n <= limit:
        if c != msg:
            why = "a message that fits was changed"
    else:
        m = re.search(r"\n\[\.\.\. (\d+) characters left out \.\.\.\]\n", c[head:])
        if len(c) != limit:
            why = f"length {len(c)}, limit {limit}"
        elif not c.startswith(msg[:head]):
            why = "the head is not the message's start"
        elif m is None or m.start() != 0:
            why = "no gap line right after the head"
        else:
            tail = c[head + m.end():]
            if not msg.endswith(tail) or head + int(m.group(1)) + len(tail) != n:
                why = f"states {m.group(1)} left out, the parts cover {head + len(tail)} of {n}"
    if why and bad < 10:
        print(f"FAIL clip_message: seed {seed}, case {it} (n {n}, limit {limit}, head {head}): {why}")
    bad += why is not None
print("ok clip_message" if bad == 0 else f"FAIL clip_message: {bad} of 3000 cases (seed {seed})")
sys.exit(1 if bad else 0)
