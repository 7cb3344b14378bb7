/*
 * campaign.h - the campaign: a planner hands problems to workers; each worker runs one attempt at a
 * time with an agent (tune, cmd:, openai:), every candidate is evaluated officially by a child
 * `solforge eval --json`, and everything is recorded in SQLite (db.h) so that a killed campaign
 * resumes without losing or redoing a finished evaluation. docs/campaign.md describes it.
 */
#ifndef SF_CAMPAIGN_H
#define SF_CAMPAIGN_H

#include <pthread.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include "campaign/db.h"

#define SF_CAMP_MAX_WORKERS 256

typedef enum { SF_AGENT_TUNE, SF_AGENT_CMD, SF_AGENT_OPENAI } sf_agent_kind;

typedef struct sf_camp_opts {
	sf_agent_kind agent;
	const char *agent_spec;     /* as given: "tune", "cmd:...", "openai:MODEL" */
	const char *agent_arg;      /* the command or the model */
	int workers;
	const char *gpus[64];       /* device ids for CUDA_VISIBLE_DEVICES, one per entry */
	int n_gpus;
	double budget_s;            /* wall time of this run (<= 0: none) */
	int max_attempts;           /* per problem (0: none) */
	double agent_time_s;        /* per attempt of cmd:/openai: agents */
	long max_tokens;            /* model tokens over the whole campaign (0: none) */
	int turns;                  /* openai: evaluation turns per attempt */
	int per_problem;            /* workers allowed on one problem at once */
	int tune_batch;             /* variants per tune attempt */
	int tune_max;               /* variants per problem at most */
	double min_gain;            /* relative gain counted as an improvement (0.02) */
	int confirm;                /* measure a would-be new best again before keeping it (default 1) */
	double stagnation;          /* planner: penalty per attempt since the last improvement */
	double explore;             /* planner: bonus for a problem not yet attempted */
	const char *db_path;
	const char *protocol;       /* protocol file (default: PROTOCOL.md of the source tree) */
	int resume;
	const char *backend;        /* NULL: best here */
	const char *eval_args[32];  /* options passed on to every `solforge eval` */
	int n_eval_args;
	int live;                   /* redraw a status table (terminal) instead of log lines */
	uint64_t seed;              /* tuner's random search */
	const char *solutions;      /* comma-separated names of the bundled solutions to use (NULL: all) */
} sf_camp_opts;

typedef struct sf_camp_problem {
	int64_t id;
	char *name, *path, *op_type;
	double weight;
	int busy;                   /* workers on it now */
	int tune_state;             /* 0 unknown, 1 tunable, -1 nothing (left) to tune */
	char content[65];           /* sha256 of the problem folder's files when the run started (snapshot.c) */
} sf_camp_problem;

typedef struct sf_camp_worker {
	int id;
	const char *gpu;            /* NULL on the cpu backend */
	int64_t attempt;            /* running attempt, 0 when idle */
	const char *problem;
	double since;
	char what[160];             /* what it does now */
} sf_camp_worker;

typedef struct sf_camp {
	sf_camp_opts o;
	sf_db *db;
	pthread_mutex_t mu;         /* guards db, problems, workers, counters */
	sf_camp_problem *probs;
	int n_probs;
	sf_camp_worker workers[SF_CAMP_MAX_WORKERS];
	char *self;                 /* the solforge executable */
	char *home;                 /* source tree */
	char *dir;                  /* <db>.d: workspaces, locks, logs */
	char *locks;                /* SOLFORGE_GPU_LOCKS */
	const char *backend;        /* "cpu" or "cuda" */
	char *eval_sig;             /* backend + eval options: part of every evaluation key */
	double t0;                  /* sf_now() at the start */
	volatile int stop;          /* budget spent or interrupted */
	long tokens_used;
	char **inflight;            /* evaluation keys being evaluated now */
	int n_inflight;
	FILE *log;                  /* campaign.log */
	int64_t *recover;           /* agent attempts the last run left running: their workspaces are evaluated first */
	int n_recover;
} sf_camp;

/* ---- run.c ---- */
/* Runs the campaign over the problem folders given (with --resume: plus those in the database).
 * Returns a process exit status. */
int sf_campaign_run(sf_camp_opts *o, char **problems, int n_problems);
/* Logs one event line: campaign.log always, stderr unless the live table is on. Takes c->mu. */
void sf_camp_logf(sf_camp *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Whether the campaign should stop (budget spent, interrupted). */
int sf_camp_stopping(sf_camp *c);

/* ---- evaluate.c ---- */
typedef struct sf_camp_eval {
	int64_t id;                 /* evaluations row */
	int reused;                 /* found finished in the database: not evaluated again */
	int correct;                /* every evaluated workload passed (some passed) */
	int improved;               /* became the problem's best */
	char status[32];            /* PASSED or the first failing status, COMPILE_ERROR, ... */
	double speedup, score, latency_ms;
	char *summary;              /* short text for agents (caller frees) */
} sf_camp_eval;

/* Evaluates solution file `sol` (with defines "NAME=VALUE", may be NULL) of problem p for attempt
 * `attempt` officially through a child `solforge eval --json` on worker w's device; records it and,
 * when better by min_gain, makes it the problem's best. A finished evaluation with the same key
 * (problem, source text, defines, evaluation settings) is reused, never run again. 0; 1 when another
 * worker is evaluating the same key right now (nothing done; out->status "IN_FLIGHT"); -1 when it
 * could not be run at all (err says why; out->summary NULL). */
int sf_camp_evaluate(sf_camp *c, sf_camp_worker *w, sf_camp_problem *p, int64_t attempt, const char *sol,
		     const char *const *defines, sf_camp_eval *out, char *err, size_t errlen);
/* The evaluation key of a source text with defines (hex, 64 chars + NUL). */
void sf_camp_eval_key(const sf_camp *c, const sf_camp_problem *p, const char *text, const char *const *defines,
		      char key[65]);
/* Whether an evaluation with this key is finished (in the db) or running now. Takes c->mu. */
int sf_camp_key_known(sf_camp *c, const char *key);
/* Imports $SOLFORGE_GPU_LOCKS/timing.log lines not yet in the database. Takes c->mu. */
void sf_camp_import_timing(sf_camp *c);

/* ---- planner.c ---- */
/* Picks the problem for an idle worker (c->mu held): the highest expected gain among problems the
 * agent can still work on; records the decision with its explanation. NULL when nothing is left. */
sf_camp_problem *sf_camp_plan(sf_camp *c, sf_camp_worker *w, int64_t *attempt_out);

/* ---- tune.c ---- */
#define SF_TUNE_MAX_PARAMS 8
#define SF_TUNE_MAX_VALUES 16
typedef struct sf_tune_space {
	int n;
	char names[SF_TUNE_MAX_PARAMS][32];
	char values[SF_TUNE_MAX_PARAMS][SF_TUNE_MAX_VALUES][24];
	int n_values[SF_TUNE_MAX_PARAMS];
} sf_tune_space;
/* Parses the "solforge-tune:" lines of a source text into *s (n == 0: none). -1 with err on a
 * malformed declaration (bad name or value, too many). */
int sf_tune_parse(const char *text, sf_tune_space *s, char *err, size_t errlen);
/* Number of points in the space (capped at 1e9). */
double sf_tune_size(const sf_tune_space *s);
/* Runs one tune attempt on p. 0, or -1 with err. */
int sf_agent_tune(sf_camp *c, sf_camp_worker *w, sf_camp_problem *p, int64_t attempt, char *err, size_t errlen);

/* ---- workspace.c ---- */
/* Creates the attempt's workspace (problem link, best solution, history, protocol, lessons, brief,
 * NOTES.md). Returns the folder (caller frees) and in *sol_path the solution file to edit. */
char *sf_camp_workspace(sf_camp *c, sf_camp_problem *p, int64_t attempt, char **sol_path, char *err, size_t errlen);
/* The brief text of a workspace (protocol + task), for model agents. Caller frees. */
char *sf_camp_brief_text(sf_camp *c, sf_camp_problem *p, const char *ws);
/* Adds NOTES.md of an improving attempt to the lessons of p's op type. */
void sf_camp_add_lessons(sf_camp *c, sf_camp_problem *p, int64_t attempt, const char *ws);
/* The bundled solution files of p for the campaign's backend (NULL-terminated; caller frees all). */
char **sf_camp_bundled(sf_camp *c, const sf_camp_problem *p);

/* ---- agent_cmd.c, agent_openai.c ---- */
int sf_agent_cmd(sf_camp *c, sf_camp_worker *w, sf_camp_problem *p, int64_t attempt, char *err, size_t errlen);
int sf_agent_openai(sf_camp *c, sf_camp_worker *w, sf_camp_problem *p, int64_t attempt, char *err, size_t errlen);
/* The last fenced code block of a model reply (```c, ```cuda, ```cpp or bare), or NULL. Caller frees. */
char *sf_extract_code(const char *reply);
/* The reply without its fenced blocks (the model's notes). Caller frees. */
char *sf_prose_of(const char *reply);

/* snapshot.c - what an official evaluation measures, fixed against a worker that changes files under it */
/* sha256 (hex) of every file beneath dir (sorted relative paths, sizes, contents; a symlink by its target text, not
 * followed). -1 with err when something there cannot be read or is neither a file, a folder nor a link. */
int sf_camp_tree_hash(const char *dir, char out[65], char *err, size_t errlen);
/* Copies the regular files and folders beneath src to dst (created), files read-only (0444); links and other kinds are
 * left out. -1 with err on a failure. */
int sf_camp_tree_copy(const char *src, const char *dst, char *err, size_t errlen);
/* Reads the solution at path once, refusing anything but a regular file (a FIFO or device could hand the
 * evaluator other bytes than the ones stored), into *text (caller frees). -1 with err. */
int sf_camp_read_solution(const char *path, char **text, char *err, size_t errlen);
/* workspace.c: text with every `#include "REL"` that names a file from dir made absolute (caller frees) */
char *sf_camp_absolute_includes(const char *text, const char *dir);

#endif
