/*
 * runner_cuda_cupti.cu - per-call device time from CUPTI activity records for solforge-runner-cuda.
 *
 * A timed call is a window [t0, t1] on CUPTI's clock; every kernel, memcpy and memset record (on any
 * stream) that starts inside a window counts for it, and the call's time is max(end) - min(start)
 * of its records (the whole window when none started in it). CUPTI delivers records on its own
 * thread (buffer callbacks below), so the windows are guarded by a mutex. runner_cuda.h has the
 * contracts of what the timing phase calls.
 */
#include <cuda.h>
#include <cupti.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner/runner_cuda.h"

/* A timed call: [t0, t1] on CUPTI's clock; the records that start inside it. */
typedef struct cwin {
	uint64_t t0, t1;          /* t1 == UINT64_MAX while the call runs */
	uint64_t min_start, max_end;
	int64_t count;
} cwin;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static cwin *g_win;       /* windows in call order (t0 increasing, disjoint) */
static int g_nwin, g_capwin;
static uint64_t g_dropped, g_untimed;

#define CUPTI_BUF_BYTES (4u << 20)

static void CUPTIAPI cupti_buf_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	void *p = NULL;
	if (posix_memalign(&p, 8, CUPTI_BUF_BYTES))
		p = NULL;
	*buffer = (uint8_t *)p;
	*size = p ? CUPTI_BUF_BYTES : 0;
	*max_records = 0;
}

/* Adds one record to the window its start lies in, if any. Called with g_mu held. */
static void attribute(uint64_t start, uint64_t end)
{
	if (start == 0 && end == 0) {
		g_untimed++;
		return;
	}
	int lo = 0, hi = g_nwin;
	while (lo < hi) { /* last window with t0 <= start */
		int mid = (lo + hi) / 2;
		if (g_win[mid].t0 <= start)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return;
	cwin *w = &g_win[lo - 1];
	if (start > w->t1)
		return;
	if (end < start)
		end = start;
	if (!w->count || start < w->min_start)
		w->min_start = start;
	if (!w->count || end > w->max_end)
		w->max_end = end;
	w->count++;
}

static void CUPTIAPI cupti_buf_completed(CUcontext ctx, uint32_t stream_id, uint8_t *buffer, size_t size,
					 size_t valid)
{
	(void)size;
	pthread_mutex_lock(&g_mu);
	CUpti_Activity *rec = NULL;
	while (valid > 0 && cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
		switch (rec->kind) {
		case CUPTI_ACTIVITY_KIND_KERNEL:
		case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
			const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
			attribute(k->start, k->end);
			break;
		}
		case CUPTI_ACTIVITY_KIND_MEMCPY: {
			const CUpti_ActivityMemcpy6 *k = (const CUpti_ActivityMemcpy6 *)rec;
			attribute(k->start, k->end);
			break;
		}
		case CUPTI_ACTIVITY_KIND_MEMSET: {
			const CUpti_ActivityMemset4 *k = (const CUpti_ActivityMemset4 *)rec;
			attribute(k->start, k->end);
			break;
		}
		default:
			break;
		}
	}
	size_t dropped = 0;
	if (cuptiActivityGetNumDroppedRecords(ctx, stream_id, &dropped) == CUPTI_SUCCESS)
		g_dropped += dropped;
	pthread_mutex_unlock(&g_mu);
	free(buffer);
}

static const char *cupti_str(CUptiResult r)
{
	const char *s = NULL;
	if (cuptiGetResultString(r, &s) != CUPTI_SUCCESS || !s)
		s = "unknown CUPTI error";
	return s;
}

/* Registers the buffers and enables the record kinds; 0 or -1 with the reason in why. */
int rcu_cupti_init(char *why, size_t whylen)
{
	CUptiResult r = cuptiActivityRegisterCallbacks(cupti_buf_requested, cupti_buf_completed);
	if (r != CUPTI_SUCCESS) {
		snprintf(why, whylen, "cuptiActivityRegisterCallbacks: %s", cupti_str(r));
		return -1;
	}
	const CUpti_ActivityKind kinds[] = { CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
					     CUPTI_ACTIVITY_KIND_MEMSET };
	for (int i = 0; i < 3; i++) {
		r = cuptiActivityEnable(kinds[i]);
		if (r != CUPTI_SUCCESS) {
			snprintf(why, whylen, "cuptiActivityEnable(%d): %s", (int)kinds[i], cupti_str(r));
			for (int j = 0; j < i; j++)
				cuptiActivityDisable(kinds[j]);
			return -1;
		}
	}
	uint64_t ts = 0;
	r = cuptiGetTimestamp(&ts);
	if (r != CUPTI_SUCCESS || ts == 0) {
		snprintf(why, whylen, "cuptiGetTimestamp: %s", cupti_str(r));
		for (int j = 0; j < 3; j++)
			cuptiActivityDisable(kinds[j]);
		return -1;
	}
	return 0;
}

static void cupti_stop(void)
{
	cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMCPY);
	cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMSET);
}

/* CUPTI's clock now (0 when it cannot be read). */
uint64_t rcu_cupti_now(void)
{
	uint64_t t = 0;
	cuptiGetTimestamp(&t);
	return t;
}

/* Time of window i in ms: the span of its records, or the whole window when none started in it. */
static double window_ms(int i, int *empty)
{
	const cwin *w = &g_win[i];
	*empty = w->count == 0;
	if (w->count == 0)
		return (double)(w->t1 - w->t0) * 1e-6;
	return (double)(w->max_end - w->min_start) * 1e-6;
}

/* ---------------------------------------------------------------------------------------------- */
/* what the timing phase calls (contracts in runner_cuda.h)                                        */

void rcu_cupti_flush(void)
{
	cuptiActivityFlushAll(0);
}

void rcu_cupti_windows_begin(int cap)
{
	cuptiActivityFlushAll(0); /* deliver (and ignore) everything recorded so far */
	pthread_mutex_lock(&g_mu);
	g_win = (cwin *)sf_xcalloc((size_t)cap, sizeof *g_win);
	g_capwin = cap;
	g_nwin = 0;
	pthread_mutex_unlock(&g_mu);
}

int rcu_cupti_window_open(uint64_t t0)
{
	pthread_mutex_lock(&g_mu);
	if (g_nwin >= g_capwin) {
		pthread_mutex_unlock(&g_mu);
		return -1;
	}
	g_win[g_nwin].t0 = t0;
	g_win[g_nwin].t1 = UINT64_MAX;
	g_win[g_nwin].count = 0;
	g_nwin++;
	pthread_mutex_unlock(&g_mu);
	return 0;
}

void rcu_cupti_window_close(int i, uint64_t t1)
{
	pthread_mutex_lock(&g_mu);
	g_win[i].t1 = t1;
	pthread_mutex_unlock(&g_mu);
}

double rcu_cupti_window_ms(int i)
{
	cuptiActivityFlushAll(0);
	int empty;
	pthread_mutex_lock(&g_mu);
	double ms = window_ms(i, &empty);
	pthread_mutex_unlock(&g_mu);
	return ms;
}

int rcu_cupti_finish(double *samples, int n, uint64_t *dropped, uint64_t *untimed)
{
	cupti_stop();
	int empty_calls = 0;
	pthread_mutex_lock(&g_mu);
	for (int i = 0; i < n; i++) {
		int empty;
		samples[i] = window_ms(i, &empty);
		empty_calls += empty;
	}
	*dropped = g_dropped;
	*untimed = g_untimed;
	pthread_mutex_unlock(&g_mu);
	return empty_calls;
}
