/* Never slower: cgraft measures itself against standing aside. In windows of
 * wall time it alternates replaying and passing calls through, and compares
 * the time per call of the program's stream work; where replaying is not
 * faster it stands aside, for longer each time it finds so. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "engine.h"
#include "govern.h"
#include "log.h"
#include "options.h"
#include "stats.h"

/* Which windows of a probe stand aside: pairs in both orders, so that a
 * program's drift cancels. */
static const uint8_t cg_probe_aside[CG_GOV_PROBE] = { 1, 0, 0, 1, 1, 0, 0, 1 };

static int cg_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double cg_median(const double *v, int n)
{
	double s[CG_GOV_PROBE];
	for (int i = 0; i < n; i++)
		s[i] = v[i];
	qsort(s, (size_t)n, sizeof *s, cg_cmp_double);
	return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

static void cg_gov_enter(struct cg_gov *g, enum cg_gov_state st, uint64_t windows)
{
	g->state = st;
	g->n = 0;
	g->until = windows;
	g->aside = st == CG_G_ASIDE ? 1 : st == CG_G_PROBE ? cg_probe_aside[0] : 0;
}

/* A probe's verdict: replay is slower when the median time per call is
 * clearly higher with it. Replaying, one such probe is doubt: a second
 * follows at once, and cgraft stands aside only when that one finds the
 * same. A probe is eight windows of 25 ms, and what the program did in one
 * or two of them (a round of its loop starting, graphs built or built
 * again) can sway its median and its pairs alike, where the verdict would
 * stand cgraft aside for a second or more. Standing aside already, one
 * probe that finds replay slower keeps it aside. */
static void cg_gov_decide(struct cg_gov *g)
{
	double on[CG_GOV_PROBE / 2], off[CG_GOV_PROBE / 2];
	for (int i = 0, a = 0, b = 0; i < CG_GOV_PROBE; i++) {
		if (cg_probe_aside[i])
			off[a++] = g->probe[i];
		else
			on[b++] = g->probe[i];
	}
	double m_on = cg_median(on, CG_GOV_PROBE / 2), m_off = cg_median(off, CG_GOV_PROBE / 2);
	g->ratio = m_on > 0 ? m_off / m_on : 1.0;
	g->probes++;
	if (cg_unlikely(cg_log_level >= CG_LOG_DEBUG)) {
		char w[CG_GOV_PROBE * 24] = "";
		for (int i = 0, at = 0; i < CG_GOV_PROBE && at < (int)sizeof w; i++)
			at += snprintf(w + at, sizeof w - (size_t)at, " %s%.0f", cg_probe_aside[i] ? "aside " : "", g->probe[i]);
		cg_debug("probe %llu, ns a call by window:%s", (unsigned long long)g->probes, w);
	}
	int slower = g->ratio < CG_GOV_SLOWER;
	if (slower && !g->doubt && !g->from_aside) {
		g->doubt = 1;
		cg_gov_enter(g, CG_G_PROBE, CG_GOV_PROBE);
		return;
	}
	g->doubt = 0;
	if (slower) {
		g->slower++;
		int r = g->rounds < 6 ? g->rounds++ : 6;
		cg_gov_enter(g, CG_G_ASIDE, (uint64_t)CG_GOV_ASIDE << r);
	} else {
		int c = g->confirms < 5 ? g->confirms++ : 5;
		cg_gov_enter(g, CG_G_ON, (uint64_t)CG_GOV_ON << c);
	}
}

void cg_gov_init(struct cg_gov *g)
{
	*g = (struct cg_gov){ .ratio = 1.0 };
	cg_gov_enter(g, CG_G_LEARN, CG_GOV_LEARN);
}

int cg_gov_step(struct cg_gov *g, uint64_t ns, uint64_t calls)
{
	g->windows++;
	g->aside_windows += (uint64_t)g->aside;
	/* Too few calls to say anything: the window is run again. */
	if (calls < CG_GOV_MIN_CALLS)
		return g->aside;
	if (g->state == CG_G_PROBE) {
		g->probe[g->n++] = (double)ns / (double)calls;
		if (g->n == CG_GOV_PROBE)
			cg_gov_decide(g);
		else
			g->aside = cg_probe_aside[g->n];
		return g->aside;
	}
	if (++g->n >= g->until) {
		g->from_aside = g->state == CG_G_ASIDE;
		cg_gov_enter(g, CG_G_PROBE, CG_GOV_PROBE);
	}
	return g->aside;
}

/* ---- the thread ------------------------------------------------------------------ */
static struct cg_gov cg_gov;

/* The program's calls of stream work so far, counted by the wrappers
 * whether cgraft replays or stands aside. */
static uint64_t cg_stream_calls(void)
{
	return cg_stats_stream_calls();
}

static void cg_gov_publish(const struct cg_gov *g)
{
	atomic_store(&cg_stats.gov_windows, g->windows);
	atomic_store(&cg_stats.gov_aside, g->aside_windows);
	atomic_store(&cg_stats.gov_probes, g->probes);
	atomic_store(&cg_stats.gov_slower, g->slower);
	atomic_store(&cg_stats.gov_ratio_milli, (unsigned long long)(g->ratio * 1000 + 0.5));
}
static pthread_once_t cg_gov_once = PTHREAD_ONCE_INIT;

static void *cg_gov_main(void *arg)
{
	(void)arg;
	uint64_t t0 = cg_now_ns(), c0 = cg_stream_calls();
	int aside = 0;
	for (;;) {
		struct timespec w = { 0, CG_GOV_WINDOW_NS };
		while (nanosleep(&w, &w) && errno == EINTR)
			;
		uint64_t t1 = cg_now_ns(), c1 = cg_stream_calls();
		/* The program's own switch, its capture or the end of cgraft: the
		 * window does not count. Standing aside, it stays aside: when the
		 * program switches cgraft on again, its first window does not
		 * replay against the verdict. Once NCCL calls were held, it stands
		 * in for good. */
		int gov = cg_engine_governable();
		if (gov <= 0) {
			if (gov < 0 && aside)
				cg_engine_govern(aside = 0);
			t0 = t1, c0 = c1;
			continue;
		}
		int next = cg_gov_step(&cg_gov, t1 - t0, c1 - c0);
		cg_gov_publish(&cg_gov);
		if (next != aside) {
			cg_engine_govern(next);
			cg_debug("%s: replay was %.2fx as fast as standing aside", next ? "standing aside" : "replaying",
				 cg_gov.ratio);
			aside = next;
		}
		t0 = cg_now_ns(), c0 = cg_stream_calls();
	}
	return NULL;
}

static void cg_gov_spawn(void)
{
	cg_gov_init(&cg_gov);
	if (cg_thread_start(cg_gov_main))
		cg_log(CG_LOG_WARN, CG_FAULT_NONE, "no governor thread: replay is not checked against eager");
}

void cg_govern_start(void)
{
	if (cg_opt.backoff_slow)
		pthread_once(&cg_gov_once, cg_gov_spawn);
}

const struct cg_gov *cg_govern_state(void)
{
	return &cg_gov;
}
