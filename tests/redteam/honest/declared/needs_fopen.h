/*
 * needs_fopen.h - included by copy_reads_file.c: declares the denied import it uses, to show that a
 * declaration in an included file counts (docs/security.md, static import check).
 */
// solforge-allow: fopen
