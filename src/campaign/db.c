/*
 * db.c - the campaign database: schema and small binding helpers (see db.h).
 */
#include "campaign/db.h"
#include "core/util.h"

#include <math.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char schema[] =
	"CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);"
	"CREATE TABLE IF NOT EXISTS problems(id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL, path TEXT NOT NULL,"
	" op_type TEXT, weight REAL DEFAULT 1, best_eval INTEGER, first_eval INTEGER, seeded INTEGER DEFAULT 0,"
	" attempts INTEGER DEFAULT 0, since_improve INTEGER DEFAULT 0);"
	"CREATE TABLE IF NOT EXISTS attempts(id INTEGER PRIMARY KEY, problem_id INTEGER NOT NULL, worker INTEGER,"
	" agent TEXT, state TEXT, started REAL, finished REAL, improved INTEGER DEFAULT 0, gpu TEXT, workspace TEXT,"
	" error TEXT, prompt_tokens INTEGER DEFAULT 0, completion_tokens INTEGER DEFAULT 0, evals INTEGER DEFAULT 0);"
	"CREATE TABLE IF NOT EXISTS evaluations(id INTEGER PRIMARY KEY, problem_id INTEGER NOT NULL,"
	" attempt_id INTEGER, key TEXT UNIQUE NOT NULL, solution TEXT, defines TEXT, source TEXT, status TEXT,"
	" exit_code INTEGER, passed INTEGER, failed INTEGER, skipped INTEGER, speedup REAL, score REAL,"
	" latency_ms REAL, baseline_ms REAL, sol_frac REAL, started REAL, finished REAL, gpu TEXT, improved INTEGER DEFAULT 0,"
	" error TEXT, traces TEXT);"
	"CREATE TABLE IF NOT EXISTS decisions(id INTEGER PRIMARY KEY, t REAL, worker INTEGER, problem_id INTEGER,"
	" attempt_id INTEGER, gain REAL, explain TEXT);"
	"CREATE TABLE IF NOT EXISTS agent_logs(id INTEGER PRIMARY KEY, attempt_id INTEGER, t REAL, kind TEXT, text TEXT);"
	"CREATE TABLE IF NOT EXISTS lessons(id INTEGER PRIMARY KEY, op_type TEXT, problem_id INTEGER,"
	" attempt_id INTEGER, t REAL, text TEXT);"
	"CREATE TABLE IF NOT EXISTS gpu_timing(id INTEGER PRIMARY KEY, line TEXT UNIQUE, start TEXT, slot TEXT,"
	" pid INTEGER, wait_s REAL, held_s REAL, problem TEXT, solution TEXT, what TEXT);";

sf_db *sf_db_open(const char *path, int readonly, char *err, size_t errlen)
{
	sqlite3 *db = NULL;
	int flags = readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
	if (sqlite3_open_v2(path, &db, flags | SQLITE_OPEN_FULLMUTEX, NULL) != SQLITE_OK) {
		sf_errf(err, errlen, "cannot open database %s: %s", path, db ? sqlite3_errmsg(db) : "out of memory");
		sqlite3_close(db);
		return NULL;
	}
	sqlite3_busy_timeout(db, 30000);
	if (!readonly) {
		char *msg = NULL;
		if (sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", NULL, NULL, &msg) != SQLITE_OK ||
		    sqlite3_exec(db, schema, NULL, NULL, &msg) != SQLITE_OK) {
			sf_errf(err, errlen, "cannot set up database %s: %s", path, msg ? msg : "?");
			sqlite3_free(msg);
			sqlite3_close(db);
			return NULL;
		}
	}
	return db;
}

void sf_db_close(sf_db *db)
{
	if (db)
		sqlite3_close(db);
}

static int bind_args(sqlite3_stmt *st, const char *types, va_list ap)
{
	for (int i = 0; types && types[i]; i++) {
		int rc;
		switch (types[i]) {
		case 'i':
			rc = sqlite3_bind_int64(st, i + 1, va_arg(ap, int64_t));
			break;
		case 'd': {
			double v = va_arg(ap, double);
			rc = isfinite(v) ? sqlite3_bind_double(st, i + 1, v) : sqlite3_bind_null(st, i + 1);
			break;
		}
		case 's': {
			const char *s = va_arg(ap, const char *);
			rc = s ? sqlite3_bind_text(st, i + 1, s, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(st, i + 1);
			break;
		}
		default:
			return -1;
		}
		if (rc != SQLITE_OK)
			return -1;
	}
	return 0;
}

static sqlite3_stmt *vprep(sf_db *db, const char *sql, const char *types, va_list ap)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		fprintf(stderr, "solforge: database: %s in: %.120s\n", sqlite3_errmsg(db), sql);
		return NULL;
	}
	if (bind_args(st, types, ap)) {
		fprintf(stderr, "solforge: database: cannot bind arguments of: %.120s\n", sql);
		sqlite3_finalize(st);
		return NULL;
	}
	return st;
}

sqlite3_stmt *sf_db_prepare(sf_db *db, const char *sql, const char *types, ...)
{
	va_list ap;
	va_start(ap, types);
	sqlite3_stmt *st = vprep(db, sql, types, ap);
	va_end(ap);
	return st;
}

int sf_db_exec(sf_db *db, const char *sql, const char *types, ...)
{
	va_list ap;
	va_start(ap, types);
	sqlite3_stmt *st = vprep(db, sql, types, ap);
	va_end(ap);
	if (!st)
		return -1;
	int rc = sqlite3_step(st);
	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		fprintf(stderr, "solforge: database: %s in: %.120s\n", sqlite3_errmsg(db), sql);
	sqlite3_finalize(st);
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : -1;
}

int64_t sf_db_last_id(sf_db *db)
{
	return sqlite3_last_insert_rowid(db);
}

int64_t sf_db_i64(sf_db *db, int64_t dflt, const char *sql, const char *types, ...)
{
	va_list ap;
	va_start(ap, types);
	sqlite3_stmt *st = vprep(db, sql, types, ap);
	va_end(ap);
	int64_t v = dflt;
	if (st && sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

double sf_db_dbl(sf_db *db, const char *sql, const char *types, ...)
{
	va_list ap;
	va_start(ap, types);
	sqlite3_stmt *st = vprep(db, sql, types, ap);
	va_end(ap);
	double v = NAN;
	if (st && sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
		v = sqlite3_column_double(st, 0);
	sqlite3_finalize(st);
	return v;
}

char *sf_db_text(sf_db *db, const char *sql, const char *types, ...)
{
	va_list ap;
	va_start(ap, types);
	sqlite3_stmt *st = vprep(db, sql, types, ap);
	va_end(ap);
	char *v = NULL;
	if (st && sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
		v = sf_xstrdup((const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	return v;
}

int sf_db_begin(sf_db *db)
{
	return sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
}

int sf_db_commit(sf_db *db)
{
	return sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
}

void sf_db_rollback(sf_db *db)
{
	sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
}
