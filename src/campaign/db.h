/*
 * db.h - the campaign's SQLite database (WAL mode): problems, attempts, evaluations, the best per
 * problem, planner decisions, agent logs, lessons, GPU timing holds. Every finished evaluation is
 * written in one transaction together with the best-per-problem update, so a kill -9 at any moment
 * loses at most the evaluations still running (they are redone on --resume; finished ones are not).
 *
 * Small helpers bind arguments by a type string: 'i' int64_t, 'd' double, 's' const char * (NULL
 * binds SQL NULL).
 */
#ifndef SF_CAMP_DB_H
#define SF_CAMP_DB_H

#include <stddef.h>
#include <stdint.h>

typedef struct sqlite3 sf_db;

/* Opens (creating) the database and its schema. NULL with err on failure. */
sf_db *sf_db_open(const char *path, int readonly, char *err, size_t errlen);
void sf_db_close(sf_db *db);
/* Runs one statement with bound arguments. 0, or -1 (message on stderr). */
int sf_db_exec(sf_db *db, const char *sql, const char *types, ...);
/* The last inserted row id. */
int64_t sf_db_last_id(sf_db *db);
/* First column of the first row as int64 / double / text (caller frees); dflt / NAN / NULL when no row. */
int64_t sf_db_i64(sf_db *db, int64_t dflt, const char *sql, const char *types, ...);
double sf_db_dbl(sf_db *db, const char *sql, const char *types, ...);
char *sf_db_text(sf_db *db, const char *sql, const char *types, ...);
/* BEGIN IMMEDIATE / COMMIT / ROLLBACK. */
int sf_db_begin(sf_db *db);
int sf_db_commit(sf_db *db);
void sf_db_rollback(sf_db *db);
/* A prepared statement for row-by-row reading (report): NULL on error. */
struct sqlite3_stmt *sf_db_prepare(sf_db *db, const char *sql, const char *types, ...);

#endif
