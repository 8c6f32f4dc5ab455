/* The capture-window engine: cuts the op stream into segments, learns their
 * shapes, defers calls that match a built graph and replays it, or flushes. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cgraft.h"
#include "cgraft_i.h"
#include "graph_i.h"

/* ---- small helpers ---------------------------------------------------- */
static uint64_t cg_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Chunked byte arena: pointers into it stay valid until it is reset. */
struct cg_arena_blk {
	struct cg_arena_blk *next;
	size_t used, cap;
	uint8_t data[];
};
struct cg_arena {
	struct cg_arena_blk *head;
};

static void *cg_arena_alloc(struct cg_arena *a, size_t n)
{
	n = (n + 15) & ~(size_t)15;
	struct cg_arena_blk *b = a->head;
	if (!b || b->cap - b->used < n) {
		size_t cap = n > 65536 ? n : 65536;
		b = malloc(sizeof *b + cap);
		if (!b)
			return NULL;
		b->used = 0;
		b->cap = cap;
		b->next = a->head;
		a->head = b;
	}
	void *p = b->data + b->used;
	b->used += n;
	return p;
}

/* Keeps the newest block for reuse. */
static void cg_arena_reset(struct cg_arena *a)
{
	struct cg_arena_blk *b = a->head;
	if (!b)
		return;
	struct cg_arena_blk *rest = b->next;
	b->next = NULL;
	b->used = 0;
	while (rest) {
		struct cg_arena_blk *n = rest->next;
		free(rest);
		rest = n;
	}
}

/* ---- engine state (under cg_lock) ------------------------------------- */
enum cg_mode { CG_RECORD, CG_DEFER };

#define CG_MAX_CAND 16
#define CG_MAX_PERIODS 64
/* Segments at least this long that end where the host waits are replayed
 * as a chain of graphs, the first of CG_CHAIN_FIRST ops. */
#define CG_CHAIN_MIN 32
#define CG_CHAIN_FIRST 8

static pthread_mutex_t cg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	enum cg_mode mode;
	/* The current segment: recorded (eager) or deferred ops, in order. */
	struct cg_op *ops;
	uint64_t *shape;
	size_t n, cap;
	struct cg_arena arena;
	/* Host time spent in the segment's calls (the real calls when eager,
	 * cgraft's when deferred), where it was measured (api_ok). */
	uint64_t api_ns;
	int api_ok;
	int timing;        /* the deferral's calls are timed */
	uint64_t t_submit; /* when the eager call under way entered cgraft */
	pthread_t owner;
	int have_owner;
	/* Deferral: templates whose first n ops match. */
	struct cg_tmpl *cand[CG_MAX_CAND];
	int ncand;
	struct cg_tmpl *complete; /* a candidate of exactly n ops */
	struct cg_tmpl *expect;   /* the next piece of a chain being replayed */
	int host_waits;           /* the segment ends at a call the host waits in */
	/* Period detection in RECORD mode: live candidate periods. */
	size_t period[CG_MAX_PERIODS];
	int nperiod;
	size_t known_period;
	/* Counters. */
	uint64_t segno;
	uint64_t quiet_segments; /* learnt segments since a shape last recurred */
	uint64_t passive_until;  /* no-repeat back-off: segment number */
	int passive_rounds;
	int atexit_done;
} E;

static atomic_int cg_threads_seen;
/* Counts work enqueued other than by cgraft's replays: a graph launched
 * again with nothing in between needs no fork from its side streams. */
static uint64_t cg_epoch;
static int cg_dead; /* nothing repeats: pass-through for good */
static CG_TLS int cg_thread_known;

/* ---- segment buffer --------------------------------------------------- */
static int cg_seg_reserve(void)
{
	if (E.n < E.cap)
		return 0;
	size_t cap = E.cap ? E.cap * 2 : 256;
	struct cg_op *o = realloc(E.ops, cap * sizeof *o);
	if (!o)
		return -ENOMEM;
	E.ops = o;
	uint64_t *s = realloc(E.shape, cap * sizeof *s);
	if (!s)
		return -ENOMEM;
	E.shape = s;
	E.cap = cap;
	return 0;
}

/* Keeps a copy of op in the segment: kernel parameters packed, and for a
 * pageable source (deferred only) a snapshot of its bytes taken now. */
static int cg_seg_push(const struct cg_op *op, uint64_t shape, int snapshot)
{
	if (cg_seg_reserve())
		return -ENOMEM;
	struct cg_op *d = &E.ops[E.n];
	*d = *op;
	if (op->kind == CG_OP_KERNEL) {
		uint8_t *p = cg_arena_alloc(&E.arena, op->nbytes ? op->nbytes : 1);
		if (!p)
			return -ENOMEM;
		const struct cg_kinfo *ki = op->u.k.ki;
		uint8_t *w = p;
		if (op->u.k.packed) {
			memcpy(w, op->u.k.extra, op->nbytes);
		} else {
			for (uint32_t i = 0; i < ki->nparams; i++) {
				memcpy(w, op->u.k.args[i], ki->size[i]);
				w += ki->size[i];
			}
		}
		d->u.k.params = p;
		d->u.k.args = NULL;
		d->u.k.extra = NULL;
	} else if (op->kind == CG_OP_MEMCPY && op->u.cp.src_pageable && snapshot) {
		void *p = cg_arena_alloc(&E.arena, op->u.cp.count);
		if (!p)
			return -ENOMEM;
		memcpy(p, op->u.cp.src, op->u.cp.count);
		d->u.cp.src = p;
	}
	E.shape[E.n] = shape;
	E.n++;
	return 0;
}

static void cg_seg_clear(void)
{
	E.n = 0;
	E.ncand = 0;
	E.complete = NULL;
	E.nperiod = 0;
	E.api_ns = 0;
	E.api_ok = 1;
	E.timing = 0;
	cg_arena_reset(&E.arena);
}

/* ---- learning --------------------------------------------------------- */
static int cg_in_window(void)
{
	if (E.segno < (uint64_t)cg_opt.warmup)
		return 0;
	return E.segno >= (uint64_t)cg_opt.window_lo && E.segno <= (uint64_t)cg_opt.window_hi &&
	       E.segno >= E.passive_until;
}

/* The length of the first piece where the segment is to be replayed as a
 * chain, else 0. Where the host waits for the device at the segment's end,
 * the device idles while the host makes the calls that a single graph would
 * be launched after; a chain starts it after the first few. One stream only:
 * pieces over several would each need their fork and join. */
static size_t cg_chain_first(size_t n)
{
	if (!E.host_waits || n < CG_CHAIN_MIN)
		return 0;
	for (size_t i = 1; i < n; i++)
		if (E.ops[i].stream != E.ops[0].stream)
			return 0;
	return cg_opt.min_ops > CG_CHAIN_FIRST ? (size_t)cg_opt.min_ops : CG_CHAIN_FIRST;
}

void cg_engine_tmpl_gone(const struct cg_tmpl *t)
{
	if (E.expect == t)
		E.expect = NULL;
}

/* A recorded segment ends: count its shape, build a graph once it recurs.
 * eager_ns: the host time its calls took, or 0 where unknown. */
static int cg_learn(uint64_t eager_ns)
{
	size_t n = E.n;
	if (!n)
		return 0;
	E.segno++;
	cg_stat_add(segments, 1);
	if ((long)n < cg_opt.min_ops || !cg_in_window())
		return 0;
	uint64_t t0 = cg_now_ns();
	size_t first = cg_chain_first(n);
	struct cg_tmpl *t = cg_tmpl_lookup(E.shape, E.ops, n);
	if (!t && first)
		t = cg_tmpl_lookup(E.shape, E.ops, first);
	if (t) {
		/* A built shape ran eagerly (after a divergence): its cost
		 * is a fresh eager sample. */
		cg_tmpl_note_eager(t, eager_ns);
		return 1;
	}
	int seen = cg_seen_note(E.shape, n, eager_ns);
	if (seen < cg_opt.min_repeats) {
		if (seen == 1 && ++E.quiet_segments >= 64) {
			/* Nothing recurs: stop recording for a while, then for good. */
			E.quiet_segments = 0;
			cg_stat_add(backoffs, 1);
			cg_count_fallback(CG_WHY_BACKOFF_NOREPEAT);
			if (++E.passive_rounds > 3 && !cg_tmpl_any()) {
				cg_log(CG_LOG_INFO, CG_FAULT_NONE,
				       "the op stream does not repeat: cgraft passes calls through from now on");
				cg_dead = 1;
				cg_engine_on = 0;
			}
			E.passive_until = E.segno + (64ull << E.passive_rounds);
		}
		return 0;
	}
	E.quiet_segments = 0;
	if (first && cg_tmpl_chain_ok(E.shape, E.ops, n, first))
		cg_tmpl_build_chain(E.shape, E.ops, n, eager_ns, first);
	else
		cg_tmpl_build_whole(E.shape, E.ops, n, eager_ns);
	cg_stat_add(record_ns, cg_now_ns() - t0);
	return 1;
}

/* Ends the current segment where it stands; returns whether its shape is
 * one cgraft has seen before. */
static int cg_cut(void)
{
	int known = E.mode == CG_RECORD && E.n ? cg_learn(E.api_ok ? E.api_ns : 0) : 0;
	E.mode = CG_RECORD;
	E.expect = NULL;
	E.have_owner = 0;
	cg_seg_clear();
	return known;
}

/* Whether most ops of the two halves of a 2p-op segment carry the same
 * arguments too. A loop's iteration does, but for a counter or an RNG offset;
 * a layer repeated within the iteration does not (other weights). */
static int cg_values_recur(size_t p)
{
	size_t same = 0;
	for (size_t i = 0; i < p; i++)
		same += (size_t)cg_op_same_values(&E.ops[i], &E.ops[i + p]);
	return 2 * same >= p;
}

/* Period detection: a candidate period p is born where an op equals the
 * segment's first op, and lives while each op equals the one p before it.
 * When it has matched p ops the segment is two identical halves. */
static void cg_period_step(void)
{
	size_t k = E.n - 1;
	if (E.known_period && E.n == E.known_period) {
		if (!cg_cut())
			E.known_period = 0; /* the period changed: look again */
		return;
	}
	int w = 0;
	for (int i = 0; i < E.nperiod; i++) {
		size_t p = E.period[i];
		if (E.shape[k] != E.shape[k - p])
			continue;
		if (k + 1 == 2 * p && !cg_values_recur(p)) {
			/* Same shapes, other arguments: a part of the iteration
			 * (layers, a chain of one kernel) repeating inside it. */
			continue;
		}
		if (k + 1 == 2 * p) {
			/* Two halves: learn the first, keep the second;
			 * each took about half the time. */
			uint64_t half = E.api_ok ? E.api_ns / 2 : 0;
			size_t n2 = E.n;
			E.n = p;
			cg_learn(half);
			memmove(E.ops, E.ops + p, p * sizeof *E.ops);
			memmove(E.shape, E.shape + p, p * sizeof *E.shape);
			E.n = n2 - p;
			E.known_period = p;
			E.nperiod = 0;
			E.api_ns = half;
			cg_cut();
			return;
		}
		E.period[w++] = p;
	}
	E.nperiod = w;
	if (k >= (size_t)cg_opt.min_ops && E.shape[k] == E.shape[0] && E.nperiod < CG_MAX_PERIODS &&
	    2 * k <= (size_t)cg_opt.max_segment_ops)
		E.period[E.nperiod++] = k;
	if (E.n >= (size_t)cg_opt.max_segment_ops)
		cg_cut();
}

/* ---- deferral --------------------------------------------------------- */
static void cg_record_deferred_as_eager(void)
{
	cg_epoch++;
	/* Submit in the original order; they become the recorded segment. */
	for (size_t i = 0; i < E.n; i++) {
		int rc = cg_op_submit(&E.ops[i]);
		if (rc)
			cg_log_capped(CG_LOG_WARN, CG_FAULT_DRIVER,
				      "a deferred call failed when submitted eagerly (error %d)", rc);
	}
	E.mode = CG_RECORD;
	E.ncand = 0;
	E.complete = NULL;
	E.api_ok = 0; /* the submission just now was not timed */
}

static void cg_diverge(const struct cg_op *next)
{
	for (int i = 0; i < E.ncand; i++)
		cg_tmpl_note_divergence(E.cand[i]);
	cg_stat_add(divergences, 1);
	if (cg_opt.log_level >= CG_LOG_DEBUG)
		cg_debug("divergence after %zu deferred ops: %s", E.n,
			 next ? cg_tmpl_describe_mismatch(E.cand, E.ncand, E.n, next)
			      : "segment ended before the graph's last op");
	cg_record_deferred_as_eager();
}

/* Launches the complete candidate for the deferred ops, or submits them
 * eagerly if that fails. */
static void cg_launch_complete(void)
{
	struct cg_tmpl *t = E.complete;
	size_t n = E.n;
	if (cg_tmpl_launch(t, E.ops, n, E.timing ? E.api_ns : 0) == 0) {
		cg_stat_add(ops_replayed, n);
		E.expect = cg_tmpl_next_piece(t);
		E.mode = CG_RECORD;
		E.have_owner = 0;
		cg_seg_clear();
		E.segno++;
		cg_stat_add(segments, 1);
		return;
	}
	cg_count_fallback(CG_WHY_LAUNCH_FAILED);
	cg_record_deferred_as_eager();
	cg_cut();
}

uint64_t cg_segno(void)
{
	return E.segno;
}

uint64_t cg_epoch_now(void)
{
	return cg_epoch;
}

void cg_epoch_bump(void)
{
	cg_epoch++;
}

/* While the program captures, or has switched cgraft off, everything
 * passes through untouched. */
static atomic_int cg_capturing, cg_paused;

static void cg_stand_aside_changed(void)
{
	cg_epoch++; /* work enqueued while standing aside goes unseen */
	cg_engine_on = cg_opt.enable && !cg_dead && !atomic_load(&cg_capturing) && !atomic_load(&cg_paused);
}

/* Flushes whatever is deferred or recorded: the segment ends here. */
static void cg_flush(void)
{
	if (E.mode == CG_DEFER && E.n) {
		if (E.complete && cg_tmpl_nops(E.complete) == E.n) {
			cg_launch_complete();
			return;
		}
		cg_diverge(NULL);
	}
	cg_cut();
}

static void cg_atexit(void)
{
	pthread_mutex_lock(&cg_lock);
	if (cg_engine_on)
		cg_flush();
	pthread_mutex_unlock(&cg_lock);
}

/* Another host thread, or the first call of a new thread. */
static void cg_check_thread(void)
{
	if (cg_unlikely(!cg_thread_known)) {
		cg_thread_known = 1;
		atomic_fetch_add(&cg_threads_seen, 1);
	}
	pthread_t self = pthread_self();
	if (E.have_owner && !pthread_equal(E.owner, self)) {
		if (E.n)
			cg_count_fallback(CG_WHY_THREADS);
		cg_flush();
	}
	if (!E.have_owner) {
		E.owner = self;
		E.have_owner = 1;
	}
	if (cg_unlikely(!E.atexit_done)) {
		E.atexit_done = 1;
		atexit(cg_atexit);
	}
}

/* Tries to continue (or start) a deferral with op. Returns 1 if deferred. */
static int cg_try_defer(const struct cg_op *op, uint64_t shape)
{
	size_t pos = E.n;
	if (E.mode == CG_RECORD) {
		if (pos || !cg_in_window())
			return 0;
		if (E.expect && cg_tmpl_can_follow(E.expect, shape, op)) {
			E.cand[0] = E.expect; /* a chain goes on */
			E.ncand = 1;
		} else {
			E.ncand = cg_tmpl_candidates(shape, op, E.cand, CG_MAX_CAND);
		}
		E.expect = NULL;
		if (!E.ncand)
			return 0;
		E.timing = cg_tmpl_wants_timing(E.cand[0]);
	} else {
		int w = 0;
		for (int i = 0; i < E.ncand; i++)
			if (cg_tmpl_nops(E.cand[i]) > pos && cg_tmpl_op_matches(E.cand[i], pos, shape, op))
				E.cand[w++] = E.cand[i];
		if (!w) {
			if (E.complete) {
				/* The deferred ops form a whole graph; op
				 * starts the next segment. */
				cg_launch_complete();
				return cg_try_defer(op, shape);
			}
			cg_diverge(op);
			return 0;
		}
		E.ncand = w;
	}
	if (cg_seg_push(op, shape, 1)) {
		/* Out of memory: give the deferred work back. */
		cg_diverge(op);
		return 0;
	}
	E.mode = CG_DEFER;
	E.complete = NULL;
	int longer = 0;
	for (int i = 0; i < E.ncand; i++) {
		if (cg_tmpl_nops(E.cand[i]) != E.n)
			longer = 1;
		else if (!E.complete || cg_tmpl_distance(E.cand[i], E.ops, E.n) <
						cg_tmpl_distance(E.complete, E.ops, E.n))
			E.complete = E.cand[i]; /* of equal shapes, the closer values */
	}
	if (E.complete && !longer)
		cg_launch_complete();
	return 1;
}

int cg_engine_submit(struct cg_op *op)
{
	/* Driver work from a program without a dynamic runtime: graphs are
	 * built through one cgraft opens; without it, nothing is held. */
	if (cg_unlikely(!atomic_load_explicit(&cg_resolved, memory_order_acquire)) && cg_resolve(1)) {
		op->unrecorded = 1;
		pthread_mutex_lock(&cg_lock);
		return CG_EAGER;
	}
	pthread_mutex_lock(&cg_lock);
	/* Eager calls are always timed (a clock read is little beside a
	 * launch), deferred ones for some launches only. */
	uint64_t t0 = E.mode == CG_RECORD || E.timing ? cg_now_ns() : 0;
	cg_check_thread();
	cg_stat_add(ops_total, 1);
	if (op->stream == cudaStreamPerThread && atomic_load(&cg_threads_seen) > 1) {
		/* Another thread could not launch this thread's per-thread
		 * stream's work: never hold it. */
		cg_count_fallback(CG_WHY_PER_THREAD_STREAM);
		cg_flush();
		op->unrecorded = 1;
		return CG_EAGER;
	}
	uint64_t shape = op->shape = cg_op_shape_hash(op);
	if (cg_try_defer(op, shape)) {
		if (t0 && E.timing && E.mode == CG_DEFER)
			E.api_ns += cg_now_ns() - t0;
		pthread_mutex_unlock(&cg_lock);
		return CG_DEFERRED;
	}
	E.t_submit = t0;
	return CG_EAGER; /* cg_engine_submitted() unlocks */
}

void cg_engine_submitted(struct cg_op *op, int status)
{
	cg_epoch++;
	if (op->unrecorded) {
		pthread_mutex_unlock(&cg_lock);
		return;
	}
	if (E.t_submit) {
		E.api_ns += cg_now_ns() - E.t_submit;
		E.t_submit = 0;
	} else {
		E.api_ok = 0;
	}
	if (status != cudaSuccess) {
		/* The program sees its error; cgraft keeps nothing of it. */
		cg_flush();
	} else if (cg_seg_push(op, op->shape, 0) == 0) {
		if (op->kind == CG_OP_HOST)
			cg_cut(); /* the host may wait for it without calling CUDA */
		else
			cg_period_step();
	} else {
		cg_cut();
	}
	pthread_mutex_unlock(&cg_lock);
}

/* Calls that only wait for or look at device work, and enqueue none. */
static int cg_api_pure_sync(enum cg_api api)
{
	switch (api) {
	case CG_API_cudaStreamSynchronize: case CG_API_cudaStreamSynchronize_ptsz:
	case CG_API_cudaStreamQuery: case CG_API_cudaStreamQuery_ptsz:
	case CG_API_cudaEventSynchronize: case CG_API_cudaEventQuery:
	case CG_API_cudaEventElapsedTime: case CG_API_cudaDeviceSynchronize:
		return 1;
	default:
		return 0;
	}
}

void cg_engine_boundary(enum cg_api api, enum cg_reason why, int unsupported)
{
	pthread_mutex_lock(&cg_lock);
	cg_check_thread();
	if (!cg_api_pure_sync(api))
		cg_epoch++;
	if (unsupported) {
		cg_count_fallback(why);
		cg_debug("%s: not modelled (%s), runs eagerly",
			 api < CG_API_COUNT ? cg_api_names[api] : "driver call", cg_reason_names[why]);
	}
	/* Calls cgraft models as boundaries (synchronisation, blocking
	 * copies, queries) are where the host waits for the device. */
	E.host_waits = !unsupported;
	cg_flush();
	E.host_waits = 0;
	E.expect = NULL;
	E.known_period = 0;
	pthread_mutex_unlock(&cg_lock);
}

/* ---- the program's switch ---------------------------------------------- */
CG_EXPORT int cgraft_set_enabled(int on)
{
	cg_init();
	if (!cg_opt.enable || cg_dead)
		return -1;
	pthread_mutex_lock(&cg_lock);
	int was = !atomic_load(&cg_paused);
	if (was && !on) {
		/* What is deferred runs now, as if the switch were a sync. */
		cg_flush();
		E.expect = NULL;
		E.known_period = 0;
	}
	atomic_store(&cg_paused, !on);
	if (was != !!on)
		cg_stand_aside_changed();
	pthread_mutex_unlock(&cg_lock);
	return was;
}

/* ---- specials --------------------------------------------------------- */
cudaError_t cg_special_cudaStreamBeginCapture(enum cg_api api, int pt, cudaStream_t stream,
					      enum cudaStreamCaptureMode mode)
{
	(void)pt;
	if (cg_engine_on)
		cg_engine_boundary(api, CG_WHY_CAPTURE, 1);
	cudaError_t rc = CG_CALL(cudaStreamBeginCapture, stream, mode);
	if (rc == cudaSuccess)
		cg_capture_begin();
	return rc;
}

void cg_capture_begin(void)
{
	if (atomic_fetch_add(&cg_capturing, 1) == 0)
		cg_stand_aside_changed();
}

void cg_capture_end(void)
{
	/* Even a failed end closes the capture. */
	if (atomic_load(&cg_capturing) > 0 && atomic_fetch_sub(&cg_capturing, 1) == 1)
		cg_stand_aside_changed();
}

cudaError_t cg_special_cudaStreamEndCapture(enum cg_api api, int pt, cudaStream_t stream,
					    cudaGraph_t *pGraph)
{
	(void)api;
	(void)pt;
	cudaError_t rc = CG_CALL(cudaStreamEndCapture, stream, pGraph);
	cg_capture_end();
	return rc;
}

/* A handle the program destroys may come back as another object: graphs
 * that name it go first. */
static void cg_forget(enum cg_api api, cudaStream_t stream, cudaEvent_t event)
{
	if (!cg_engine_on)
		return;
	cg_engine_boundary(api, CG_WHY_UNSUPPORTED_API, 0);
	pthread_mutex_lock(&cg_lock);
	cg_tmpl_forget_handle(stream, event);
	pthread_mutex_unlock(&cg_lock);
}

cudaError_t cg_special_cudaStreamDestroy(enum cg_api api, int pt, cudaStream_t stream)
{
	(void)pt;
	cg_forget(api, stream, NULL);
	cudaError_t rc = CG_CALL(cudaStreamDestroy, stream);
	return rc;
}

cudaError_t cg_special_cudaEventDestroy(enum cg_api api, int pt, cudaEvent_t event)
{
	(void)pt;
	cg_forget(api, NULL, event);
	cudaError_t rc = CG_CALL(cudaEventDestroy, event);
	return rc;
}

/* Whether an event is past, for what cgraft holds back: not recorded by an
 * op of the current segment, and complete. Then a query or a wait on it
 * sees what it would see eagerly (the held-back work comes after it in
 * every stream), and the segment goes on. Otherwise the host may wait for
 * held-back work, so the segment ends first; this is asked before anything
 * can block, so a program that waits for work cgraft holds never hangs. */
static int cg_event_past(cudaEvent_t e)
{
	pthread_mutex_lock(&cg_lock);
	int inside = 0;
	for (size_t i = 0; i < E.n && !inside; i++)
		inside = E.ops[i].kind == CG_OP_RECORD && E.ops[i].u.ev.event == e;
	pthread_mutex_unlock(&cg_lock);
	if (inside)
		return 0;
	cudaError_t rc = CG_CALL(cudaEventQuery, e);
	return rc == cudaSuccess;
}

/* Ends the segment before a call that looks at events, unless they are past. */
static void cg_events_looked_at(enum cg_api api, cudaEvent_t e1, cudaEvent_t e2)
{
	if (cg_engine_on && !(cg_event_past(e1) && (!e2 || cg_event_past(e2))))
		cg_engine_boundary(api, CG_WHY_UNSUPPORTED_API, 0);
}

cudaError_t cg_special_cudaEventQuery(enum cg_api api, int pt, cudaEvent_t event)
{
	(void)pt;
	cg_events_looked_at(api, event, NULL);
	return CG_CALL(cudaEventQuery, event);
}

cudaError_t cg_special_cudaEventSynchronize(enum cg_api api, int pt, cudaEvent_t event)
{
	(void)pt;
	cg_events_looked_at(api, event, NULL);
	return CG_CALL(cudaEventSynchronize, event);
}

cudaError_t cg_special_cudaEventElapsedTime(enum cg_api api, int pt, float *ms, cudaEvent_t start,
					    cudaEvent_t end)
{
	(void)pt;
	cg_events_looked_at(api, start, end);
	return CG_CALL(cudaEventElapsedTime, ms, start, end);
}

cudaError_t cg_special_cudaSetDevice(enum cg_api api, int pt, int device)
{
	(void)pt;
	/* Setting the current device again changes nothing. */
	int cur;
	if (cg_engine_on && !(cg_real.cudaGetDevice && cg_real.cudaGetDevice(&cur) == cudaSuccess && cur == device))
		cg_engine_boundary(api, CG_WHY_DEVICE, 0);
	cudaError_t rc = CG_CALL(cudaSetDevice, device);
	return rc;
}
