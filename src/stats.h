/* Counters cgraft keeps, the JSON object written at exit (CGRAFT_STATS) and
 * the human summary (CGRAFT_REPORT). */
#ifndef CG_STATS_H
#define CG_STATS_H

#include <stdatomic.h>
#include <stdio.h>

#include "api.h"
#include "base.h"

/* Why work ran eagerly. */
enum cg_reason {
	CG_WHY_UNSUPPORTED_API,   /* an entry point cgraft does not model */
	CG_WHY_LAUNCH_ATTRIBUTE,  /* launch attributes a graph node cannot carry */
	CG_WHY_PARAM_INFO,        /* kernel parameter layout unknown */
	CG_WHY_MEMCPY_KIND,       /* copy cgraft cannot put in a node */
	CG_WHY_EVENT_FLAGS,       /* external event record or wait */
	CG_WHY_CAPTURE,           /* the program's own stream capture */
	CG_WHY_THREADS,           /* work from another host thread */
	CG_WHY_DEVICE,            /* another device or context */
	CG_WHY_HOST_MEMORY,       /* a kernel given host memory the host may poll */
	CG_WHY_HELD_TOO_LONG,     /* no call came for CGRAFT_MAX_HOLD_US */
	CG_WHY_RESET,             /* kernels, contexts or launch settings changed */
	CG_WHY_KERNEL_ATTR,       /* a kernel's attribute changed: the graphs that launch it go */
	CG_WHY_BUILD_FAILED,      /* graph construction or instantiation failed */
	CG_WHY_LAUNCH_FAILED,     /* graph launch or update failed */
	CG_WHY_BACKOFF_DIVERGE,   /* shape kept diverging */
	CG_WHY_BACKOFF_SLOW,      /* replay did not save host time */
	CG_WHY_BACKOFF_NOREPEAT,  /* the op stream did not repeat */
	CG_WHY_NCCL,              /* NCCL kernels carry host-side proxy work */
	CG_WHY_UNSEEN_LAUNCH,     /* a kernel launched so for the first time, where a node has another */
	CG_WHY_MEMORY_WAIT,       /* a graph over streams, one of which may wait for memory */
	CG_WHY_FREED_UNLAUNCHED,  /* a graph went before its first launch, memory it names freed */
	CG_WHY_FREE_UNHELD,       /* a free in stream order, or an unmap, not held behind held work */
	CG_WHY_CALLBACKS,         /* a stream callback not held: CGRAFT_CALLBACKS=0, or not kept (CG_CALLBACKS) */
	CG_WHY_COUNT
};

/* Where the host's time in the program's calls goes, timed while the
 * program asks for whole calls (cgraft_call_time_ns(2)): once a call, and
 * in graph launches, never once an op inside a call (two clock reads, which
 * the call's time would count, cost as much as a tenth of a held op). */
enum cg_cost {
	CG_COST_CALLS,   /* the calls as cgraft handles them, all of it */
	CG_COST_LAUNCH,  /* graph launches: variant, node updates, staging, fork, join */
	CG_COST_UPDATE,  /* of those, node updates */
	CG_COST_SUBMIT,  /* held work submitted eagerly */
	CG_COST_DRIVER,  /* of CG_COST_LAUNCH, the driver's graph launch calls */
	CG_COST_REBUILD, /* of CG_COST_LAUNCH, graphs built again at a launch (cg_graph_rebuild) */
	CG_COST_PICK,    /* of CG_COST_LAUNCH, the variant picked and its nodes updated (cg_pick_variant) */
	CG_COST_WAIT,    /* of CG_COST_CALLS, a read-back's wait for the graph it ends (cg_wait_readback) */
	CG_COST_COUNT
};

/* Why an op took the slow path (cg_engine_op_slow). */
enum cg_slow {
	CG_SLOW_RECORD,     /* nothing held: the op may start a template */
	CG_SLOW_NOT_KERNEL, /* a kind the fast path does not take: a copy, memset, host function */
	CG_SLOW_CANDIDATES, /* past where several candidate templates part */
	CG_SLOW_TIMED,      /* a replay timed for the back-off */
	CG_SLOW_VALUES,     /* a kernel the prediction does not have: its values, or another */
	CG_SLOW_COUNT
};

struct cg_stats {
	atomic_ullong calls[CG_E_COUNT];      /* by entry point, made by the program */
	atomic_ullong boundaries[CG_E_COUNT]; /* of them, unmodelled calls that ended a segment */
	atomic_ullong segments, graphs_built, graph_launches, ops_total, ops_replayed, divergences,
		node_updates, variants, pieces_eager;
	atomic_ullong node_updates_device; /* of node_updates, those the updater applied (devupd.h) */
	/* of node_updates, those made from the host: kernels, copies, memsets, host functions */
	atomic_ullong node_updates_host[4];
	atomic_ullong node_updates_host_beside[4]; /* of those, in graphs with updaters, by kind */
	atomic_ullong kernel_swaps; /* of the kernels, those given another function, block or shared memory */
	atomic_ullong graphs_updater; /* graphs built again with an updater (devupd.h) */
	atomic_ullong fallbacks[CG_WHY_COUNT];
	atomic_ullong record_ns, instantiate_ns, backoffs;
	atomic_ullong lookups;  /* dlsym and cuGetProcAddress calls answered */
	atomic_ullong syncs_answered; /* stream synchronisations answered (cg_engine_stream_sync) */
	atomic_ullong joins_owed, joins_made; /* launches over several streams whose joins were owed; made later */
	atomic_ullong forgotten_freed; /* graphs forgotten: memory their copies or memsets name was freed */
	atomic_ullong frees_held; /* frees in stream order made after the held work before them */
	atomic_ullong allocs_again; /* allocations in stream order made again once the frees held back went out */
	atomic_ullong host_gaps; /* runs ended where the host was away from CUDA for longer than a hold */
	atomic_ullong piece_ops, piece_gap_ns; /* the pieces' cap where the host's time set it, and that time an op */
	atomic_ullong held_bytes_device, held_bytes_host; /* staging and graph memory cgraft holds now */
	atomic_ullong held_bytes_host_peak;
	/* The governor (govern.c): windows, those standing aside, probes, those
	 * that found replay slower, and the last probe's speed ratio x1000. */
	atomic_ullong gov_windows, gov_aside, gov_probes, gov_slower, gov_ratio_milli;
	/* Host time split while the program times whole calls
	 * (cgraft_call_time_ns(2)), by enum cg_cost. */
	atomic_ullong cost_ns[CG_COST_COUNT];
	atomic_ullong cost_n[CG_COST_COUNT]; /* how many times each was timed */
	atomic_ullong real_ns[CG_E_COUNT]; /* of CG_COST_CALLS, the program's own real calls, by entry point */
	atomic_ullong call_ns[CG_E_COUNT]; /* CG_COST_CALLS by entry point */
	atomic_ullong call_n[CG_E_COUNT];  /* how many calls of each were timed */
	/* The real calls by entry point while the program times them alone
	 * (cgraft_call_time_ns(1)), and how many. */
	atomic_ullong real1_ns[CG_E_COUNT], real1_n[CG_E_COUNT];
	atomic_ullong slow[CG_SLOW_COUNT]; /* ops past the fast path, by enum cg_slow */
};
extern struct cg_stats cg_stats CG_HIDDEN;
struct cg_reason_text {
	const char *name, *help;
};
extern const struct cg_reason_text cg_reasons[CG_WHY_COUNT] CG_HIDDEN;

#define cg_stat_add(field, n) atomic_fetch_add_explicit(&cg_stats.field, (n), memory_order_relaxed)
static inline void cg_count_fallback(enum cg_reason why)
{
	atomic_fetch_add_explicit(&cg_stats.fallbacks[why], 1, memory_order_relaxed);
}

static inline uint64_t cg_cost_start(void)
{
	return cg_unlikely(atomic_load_explicit(&cg_hot.timing, memory_order_relaxed) == 2) ? cg_now_ns() : 0;
}
static inline void cg_cost_add(enum cg_cost what, uint64_t d)
{
	atomic_fetch_add_explicit(&cg_stats.cost_ns[what], d, memory_order_relaxed);
	atomic_fetch_add_explicit(&cg_stats.cost_n[what], 1, memory_order_relaxed);
}
static inline void cg_cost_stop(enum cg_cost what, uint64_t t0)
{
	if (cg_unlikely(t0))
		cg_cost_add(what, cg_now_ns() - t0);
}

/* A whole call of entry, timed from t0 (nonzero): CG_COST_CALLS and the
 * entry's own share. */
static inline void cg_call_cost_stop(int entry, uint64_t t0)
{
	uint64_t d = cg_now_ns() - t0;
	cg_cost_add(CG_COST_CALLS, d);
	atomic_fetch_add_explicit(&cg_stats.call_ns[entry], d, memory_order_relaxed);
	atomic_fetch_add_explicit(&cg_stats.call_n[entry], 1, memory_order_relaxed);
}

void cg_stats_write_json(FILE *f) CG_HIDDEN;
void cg_stats_write_report(FILE *f) CG_HIDDEN;
/* Expands %p in a CGRAFT_STATS path; returns 0 or -ENAMETOOLONG. */
int cg_stats_expand_path(const char *pattern, long pid, char *out, size_t size) CG_HIDDEN;
/* The program's calls of stream work, held or not. */
unsigned long long cg_stats_stream_calls(void) CG_HIDDEN;
/* Whether the process made any CUDA call through cgraft. */
int cg_stats_any_calls(void) CG_HIDDEN;

#endif
