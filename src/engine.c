/* The engine: ops arrive and are recorded (run eagerly, kept for learning) or
 * held while they match a template, whose graph is launched in their place
 * once the template is complete; a boundary or a mismatch ends a deferral
 * (the complete prefix launched, the rest submitted eagerly, in order).
 *
 * Locking: one mutex guards the state and is never held across a real CUDA
 * call. Real calls made for held work (launches, eager submission, graph
 * builds and frees) are made by the thread holding the submission turn,
 * without the mutex; any thread that would change the state waits for the
 * turn first, so held work is out before anything that follows it.
 *
 * Graphs are built on a thread of cgraft's (CGRAFT_BUILD_THREAD): a new
 * template goes into the table at once, marked building, and matches nothing
 * till its graph is there; the program's work goes on eagerly meanwhile. The
 * builder takes the mutex only to take work and to hand a graph over, never
 * the turn; what a build under way may use (a stream, an event, a kernel's
 * module, a context) is let go only after it (cg_build_pause). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "engine.h"
#include "lock.h"
#include "log.h"
#include "options.h"
#include "replay.h"

#define CG_MAX_CAND 8
/* Runs at least this long on one stream that end where the host waits are
 * replayed as a chain of graphs, the first of CG_CHAIN_FIRST ops: the device
 * starts on it while the host still makes the calls of the next. */
#define CG_CHAIN_MIN 32
#define CG_CHAIN_FIRST 8
#define CG_STARTED 64 /* power of two */
/* Frees in stream order held back behind held work, at most, and their
 * bytes: what the program's memory may grow by past what it would be. */
#define CG_FREES 64
#define CG_FREES_BYTES ((size_t)64 << 20)
#define CG_NAMED 16
/* The shortest host gap that ends a run: the hold, and never less than
 * CG_GAP_MIN_NS; where one came at the same op before, a quarter of the
 * hold, and never less than CG_GAP_SHORT_NS (cg_gap_ns). */
#define CG_GAP_MIN_NS 1000000ull
#define CG_GAP_SHORT_NS 250000ull
#define CG_GAP_ATS 8
/* Two templates launched one right after the other this many times in a
 * row are made one more, of both (cg_fuse_note); at most CG_FUSIONS from
 * one template. */
#define CG_FUSE_AFTER 4
#define CG_FUSIONS 2
#define CG_FUSE_STABLE 16 /* replays per divergence of the second piece, at least */
/* Pieces cut where the host works between calls (cg_piece_ask) are of
 * this many ops at least; runs of twice as many ask for them. */
#define CG_PIECE_MIN_OPS 32

/* Memory the copies and memsets of a stretch of ops name, but for copies
 * that become copy kernels (n > CG_NAMED: too many to tell, all of it),
 * and whether an op of it is on a stream other than the legacy one. */
struct cg_named {
	int n, other;
	uintptr_t lo[CG_NAMED], hi[CG_NAMED];
};

struct cg_free {
	const void *p;
	size_t n;
	CUstream s;
	CUcontext ctx;
};

enum cg_mode { CG_RECORD, CG_DEFER };

/* The fast path (cg_engine_op) reads the first 128 bytes only: a held
 * launch, between a program's calls that push the engine out of the
 * caches, costs the host a cache miss for each line it reads. */
static struct {
	struct cg_lock mu;
	int submitting;              /* depth of the turn's holder */
	enum cg_mode mode;
	int timing;
	const void *owner;           /* the owning thread's cg_self token */
	CUcontext ctx;               /* of the run and the held work */
	size_t fast_upto;            /* held ops before it may take the fast path (cg_fast_limit) */
	uint32_t nfast;              /* ops the fast path held, not yet in cg_stats */
	/* expect_src's ops, for the fast path, which reads no line of the
	 * template (0 where more than fit: the slow path takes them). */
	uint32_t expect_n;
	struct cg_tmpl *expect_src;  /* the template dirty[] was found against */
	const struct cg_op *expect_vals; /* its values the launch is expected to carry */
	/* The deferral: held ops, which differ from what the graph expects,
	 * the templates they match so far. */
	struct cg_seg held;
	struct cg_tmpl *cand[CG_MAX_CAND];
	int ncand;
	struct cg_cond turn_cv, timer_cv;
	pthread_t submitter;
	uint64_t seq;                /* engine entries but the fast path's, for the hold timer */
	uint64_t epoch;              /* work enqueued other than by replays */
	uint64_t segno;
	pthread_t owner_thread;
	uint8_t *dirty;
	uint8_t *lazy;               /* held ops not written out: lazy_src's op with its expected values */
	size_t dirty_cap;
	size_t nwritten;             /* held ops written out; the others are lazy */
	struct cg_tmpl *lazy_src;
	struct cg_tmpl *complete;    /* a candidate the held ops complete (a prefix of them) */
	struct cg_tmpl *expect;      /* a chain's next piece */
	CUevent evset[CG_EVSET];     /* events recorded by held work */
	int nev;                     /* > CG_EVSET: too many to tell */
	CUevent run_evset[CG_EVSET]; /* by the run's eager work */
	int run_nev;
	uint64_t defer_ns;
	/* The run: eager ops since the last boundary or launch, for learning. */
	struct cg_seg run;
	uint64_t run_ns, run_id;
	uint64_t run_tail_ns; /* of run_ns, the last op's call (a read-back's wait, as may be) */
	uint64_t run_own_ns;  /* cgraft's own time after the run's calls (cg_piece_ask) */
	int run_ns_ok;
	/* When the last call the engine saw ended, at the latest (0: not
	 * known): a host gap since then ends the run (cg_gap_ends_run). */
	uint64_t last_ns;
	int gapped;                  /* a timed replay found the host away (cg_defer_gap) */
	/* Where in the run (its ops before) shorter gaps came, in this run and
	 * the one before. */
	struct cg_gap_ats {
		uint32_t at[CG_GAP_ATS];
		int n;
	} gaps_now, gaps_before;
	struct cg_tmpl *anchor;      /* launched just before the run (a key only) */
	/* Held ops when another thread went on with them (cg_hand_over_ok):
	 * its first op that matches nothing there is no divergence. */
	size_t handed_at;
	/* The last launch, while nothing else came after it: no eager work or
	 * boundary, no host gap (epoch: E.epoch right after it, ns: when). Ops
	 * of a template about to be fused with the next: its held ops at its
	 * last launch (of: its id), then the next one's (ready: to be built). */
	struct {
		struct cg_tmpl *from;
		uint64_t epoch, ns, of;
		struct cg_seg ops;
		int second, ready;
		uint32_t first_n;
		/* Where the first piece starts, and both pieces' eager host time. */
		struct cg_tmpl_start starts[CG_TMPL_STARTS];
		int nstarts;
		double eager_ns;
	} fuse;
	struct cg_period period;
	/* Pieces (cg_piece_ask): stretches are cut at cap ops, where the
	 * host's time between calls set it (0: CGRAFT_MAX_SEGMENT_OPS); vote:
	 * the cap the last long stretch asked for (0: none). */
	struct {
		size_t cap, vote, pending; /* pending: asked for by a replay (cg_launch) */
		uint64_t t0; /* a timed replay's first held op */
	} piece;
	/* A period cut early (cg_period_early): its template is on probation
	 * till the stretch has run CG_PERIOD_MIN_RUN ops, and then replays in
	 * groups. Ended short of that, it goes, and the stretch is learnt as it
	 * ran. */
	struct {
		uint64_t id;         /* the template, by id (others may bury it) */
		int on;              /* 0: none on probation */
		int ended;           /* the stretch ended; its template goes at the next chance */
		int passed;          /* it ran long enough: its group is to be built */
		size_t ran;          /* ops of the stretch so far */
		size_t group;        /* ops of the group to build then */
		uint64_t key;        /* its halves' cg_period_key */
		struct cg_tmpl *anchor;
		struct cg_seg seg;   /* the stretch as it ran, but for the run after it */
		/* Its graph is built off the program's thread and it has not
		 * replayed yet: eager ops in its order go on with the stretch
		 * (cg_early_shadow), at phase of its p ops. */
		int waiting;
		size_t p, phase;
		uint64_t shape[CG_PERIOD_MIN_RUN / 2];
	} early;
	/* The builder: templates queued (oldest first), the one under way. */
	struct {
		struct cg_tmpl *head, *tail, *current;
		int thread;          /* 0 not started, 1 running, -1 could not start */
		int hold;            /* > 0: it starts no build (cg_build_pause) */
		struct cg_cond cv;   /* it waits for work here, others for current */
	} build;
	/* Which template completed the last two matches that started on an op
	 * of this shape (by id: either may be gone), for the pick of the first
	 * candidate where several start alike (cg_start_predict). */
	struct {
		uint64_t shape, last, before;
	} started[CG_STARTED];
	uint64_t quiet, passive_until;
	/* The engine came back on (from standing aside, a pause, a capture):
	 * the run starts wherever the program is, mid-step as like as not,
	 * not where the offsets of templates' starts were counted from. Till
	 * the run ends, a template also starts where an op is its first as
	 * its graph last ran, at whatever offset (cg_phase_starting). */
	int phase_lost;
	/* A replay diverged and the run went on from there: where it reaches
	 * this offset with nothing launched (which ends it), the phase is
	 * taken as lost (0: none). */
	size_t phase_lost_at;
	int passive_rounds;
	struct cg_tmpl *graveyard;   /* to be freed by the next turn */
	struct cg_tmpl *pinned;      /* buried while a host waits for its read-back */
	/* The stream of the last replayed read-back its host waited for, its
	 * context, and the epoch then: while it holds, with nothing held, no
	 * work came to any stream since, and that one has nothing left
	 * (cg_engine_stream_sync). */
	struct {
		CUstream stream;
		CUcontext ctx;
		const void *thread;
		uint64_t epoch;
	} idle;
	int timer;                   /* 0 not started, 1 idle, 2 watching */
	int atexit_done;
	/* Frees in stream order made after the held work (cg_frees_out), and
	 * the memory the run's and the held ops' copies and memsets name:
	 * a free of it ends the segment, as a template learnt from them would
	 * name memory freed since. */
	struct cg_free frees[CG_FREES];
	int nfree;
	int counts_seen;             /* the program read a pool's counts: frees end segments */
	size_t free_bytes;
	struct cg_named run_named, held_named;
} E __attribute__((aligned(128))) = {
	.run_ns_ok = 1,
	.handed_at = SIZE_MAX,
};
_Static_assert(offsetof(__typeof__(E), held) + offsetof(struct cg_seg, cap) <= 128 &&
		       offsetof(__typeof__(E), cand) + sizeof(E.cand[0]) <= 128,
	       "the fast path's fields lie in the engine's first 128 bytes");

/* Kernel launches seen to succeed, by function, block and shared memory:
 * a node takes another function only so launched before (a launch its
 * kernel's limits refuse is the program's error to see, from its own
 * call). Sets of four, under the lock; forgotten with the kernels. */
#define CG_SEEN_LAUNCHES 1024
static uint64_t cg_seen_launch[CG_SEEN_LAUNCHES];

static uint64_t cg_launch_key(const struct cg_op *op)
{
	return cg_op_launch_hash(op) | 1; /* 0 is an empty way */
}

/* The set of key k, and the way k has there (-1: none). */
static int cg_launch_way(uint64_t k, uint64_t **set)
{
	*set = &cg_seen_launch[(k >> 8) % (CG_SEEN_LAUNCHES / 4) * 4];
	for (int w = 0; w < 4; w++)
		if ((*set)[w] == k)
			return w;
	return -1;
}

static void cg_launch_seen(const struct cg_op *op)
{
	uint64_t k = cg_launch_key(op), *set;
	if (cg_launch_way(k, &set) < 0) {
		memmove(set + 1, set, 3 * sizeof *set); /* the oldest goes */
		set[0] = k;
	}
}

static int cg_launch_known(const struct cg_op *op)
{
	uint64_t *set;
	return cg_launch_way(cg_launch_key(op), &set) >= 0;
}

void (*cg_engine_first_op)(void);
/* Its address tells one thread from another, for the cost of a TLS access. */
static CG_TLS char cg_self;
static atomic_int cg_capturing, cg_paused, cg_dead, cg_governed;
/* NCCL calls were held: the governor keeps out, since each rank would decide
 * by its own timing whether a call runs inside a graph, which NCCL requires
 * to be the same on all. */
static atomic_int cg_nccl_held;
/* A stream may have waited for memory (cg_engine_memory_waits). */
static atomic_int cg_memory_waits;

static void cg_resolve(int foreign, int diverged);
static int cg_run_end(int host_waits);
static void cg_boundary_locked(int entry, enum cg_kind kind, enum cg_reason why);
static void cg_boundary_before(int entry, enum cg_kind kind, enum cg_reason why, CUstream s);
static void cg_forget_reset_locked(void);
static void cg_forget_memory_locked(const void *p, size_t n);
static int cg_engine_remembers(void);
static void cg_held_materialize(void);

/* ---- the submission turn ------------------------------------------------- */
static void cg_wait_turn_slow(void)
{
	while (E.submitting && !pthread_equal(E.submitter, pthread_self()))
		cg_cond_wait(&E.turn_cv, &E.mu, 0);
}

static inline void cg_wait_turn(void)
{
	if (cg_unlikely(E.submitting))
		cg_wait_turn_slow();
}

/* Takes the turn and lets go of the mutex for real calls. */
static void cg_unlock_for_calls(void)
{
	cg_wait_turn();
	E.submitting++;
	E.submitter = pthread_self();
	cg_lock_give(&E.mu);
}

static void cg_relock_after_calls(void)
{
	cg_lock_take(&E.mu);
	if (--E.submitting == 0)
		cg_cond_broadcast(&E.turn_cv);
}

/* A launched read-back: the event its host waits for, after the lock is
 * let go, and the template it belongs to, pinned until then (another
 * thread may bury it meanwhile: its graph and event stay till the wait is
 * over). */
struct cg_wait {
	CUevent ev;
	struct cg_tmpl *t;
	/* Where the read-back landed, to be copied to dst once it is there. */
	const void *landing;
	void *dst;
	size_t n;
	/* The graph's one stream (else NULL), and the epoch right after the launch. */
	CUstream stream;
	uint64_t epoch;
};

/* A template being built is taken out: one queued leaves the queue (and
 * is freed as any other), one under way is the builder's to free. Returns
 * whether it is the builder's. */
static int cg_build_forget(struct cg_tmpl *t)
{
	if (t == E.build.current) {
		t->buried = 1;
		return 1;
	}
	for (struct cg_tmpl **pp = &E.build.head, *prev = NULL; *pp; prev = *pp, pp = &(*pp)->bnext)
		if (*pp == t) {
			*pp = t->bnext;
			if (E.build.tail == t)
				E.build.tail = prev;
			break;
		}
	t->building = 0;
	return 0;
}

/* Frees the graphs of templates taken out of the table (one a host still
 * waits on is kept till cg_wait_readback lets it go; all wait while the
 * program captures, whose capture may forbid other calls). */
static void cg_bury(struct cg_tmpl *list)
{
	while (list) {
		struct cg_tmpl *nx = list->next;
		list->next = E.graveyard;
		E.graveyard = list;
		if (E.expect == list)
			E.expect = NULL;
		if (E.fuse.from == list)
			E.fuse.from = NULL;
		list = nx;
	}
	if (!E.graveyard || atomic_load(&cg_capturing))
		return;
	struct cg_tmpl *g = NULL;
	while (E.graveyard) {
		struct cg_tmpl *t = E.graveyard;
		E.graveyard = t->next;
		if (t->building && cg_build_forget(t))
			continue;
		t->next = t->pins ? E.pinned : g;
		*(t->pins ? &E.pinned : &g) = t;
	}
	if (!g)
		return;
	cg_unlock_for_calls();
	while (g) {
		struct cg_tmpl *nx = g->next;
		cg_graph_destroy(g->g);
		cg_tmpl_free(g);
		g = nx;
	}
	cg_relock_after_calls();
}

static void cg_stand_aside_changed(void)
{
	cg_graph_settle();
	E.epoch++; /* work enqueued while standing aside goes unseen */
	int was = atomic_load(&cg_hot.engine_on);
	int on = cg_opt.enable && !atomic_load(&cg_dead) && !atomic_load(&cg_capturing) && !atomic_load(&cg_paused) &&
		 !atomic_load(&cg_governed);
	atomic_store(&cg_hot.engine_on, on);
	if (on && !was)
		E.phase_lost = 1;
}

static int cg_in_window(void)
{
	if (E.segno < (uint64_t)cg_opt.warmup)
		return 0;
	return E.segno >= (uint64_t)cg_opt.window_lo && E.segno <= (uint64_t)cg_opt.window_hi &&
	       E.segno >= E.passive_until;
}

/* ---- eager submission of held work ------------------------------------------ */
/* Work of another thread's per-thread stream that went to the legacy stream
 * (cg_submit_ops): that thread's stream waits for it before its next call,
 * so that a synchronisation of it waits too. */
#define CG_MOVED 8
static struct {
	const void *owner;
	CUevent after;
} cg_moved[CG_MOVED];

/* After work of owner's per-thread stream went to the legacy stream: an
 * event after it, for owner. With no room, the work is waited for now. */
static void cg_note_moved(const void *owner)
{
	int slot = -1;
	for (int i = 0; i < CG_MOVED && slot < 0; i++)
		if (cg_moved[i].owner == owner || !cg_moved[i].owner)
			slot = i;
	if (slot >= 0 && (cg_moved[slot].after ||
			  CG_BK(event_create, &cg_moved[slot].after, CU_EVENT_DISABLE_TIMING) == CUDA_SUCCESS) &&
	    CG_BK(event_record, cg_moved[slot].after, CU_STREAM_LEGACY) == CUDA_SUCCESS) {
		cg_moved[slot].owner = owner;
		return;
	}
	CG_BK(stream_sync, CU_STREAM_LEGACY);
}

/* The calling thread's per-thread stream orders after its moved work. */
static void cg_wait_moved(void)
{
	for (int i = 0; i < CG_MOVED; i++)
		if (cg_moved[i].owner == &cg_self) {
			cg_moved[i].owner = NULL;
			cg_unlock_for_calls();
			CG_BK(stream_wait, CU_STREAM_PER_THREAD, cg_moved[i].after, 0);
			cg_relock_after_calls();
		}
}

/* Work of the owner's made from another thread (foreign): in the owner's
 * context, pushed where it is not current (the context pushed, or NULL). */
static CUcontext cg_foreign_enter(int foreign, CUcontext ctx)
{
	CUcontext cur = NULL;
	if (foreign && CG_BK(ctx_get_current, &cur) == CUDA_SUCCESS && cur != ctx &&
	    CG_BK(ctx_push, ctx) == CUDA_SUCCESS)
		return ctx;
	return NULL;
}

static void cg_foreign_leave(CUcontext pushed)
{
	CUcontext dummy;
	if (pushed)
		CG_BK(ctx_pop, &dummy);
}

/* ... and the owner's per-thread stream is the legacy one there, which the
 * owner's next call waits for (cg_wait_moved). */
static CUstream cg_foreign_stream(int foreign, CUstream s, int *moved)
{
	if (foreign && s == CU_STREAM_PER_THREAD) {
		*moved = 1;
		return CU_STREAM_LEGACY;
	}
	return s;
}

/* Submits held ops in order, holding the turn. From a thread other than the
 * one that made the calls, the segment's context is made current, and work
 * for that thread's per-thread stream goes to the legacy stream, which
 * orders after and before the same blocking streams; the thread's own
 * stream then waits for it (cg_wait_moved). */
static void cg_submit_ops(const struct cg_op *ops, size_t n, int foreign, const void *owner)
{
	int moved = 0;
	cg_graph_settle();
	CUcontext pushed = n ? cg_foreign_enter(foreign, ops[0].ctx) : NULL;
	for (size_t i = 0; i < n; i++) {
		CUresult rc = cg_op_submit(&ops[i], cg_foreign_stream(foreign, ops[i].stream, &moved));
		if (rc != CUDA_SUCCESS)
			cg_log_capped(CG_LOG_WARN, CG_FAULT_DRIVER,
				      "held work failed when submitted eagerly (error %d)", (int)rc);
	}
	if (moved)
		cg_note_moved(owner);
	cg_foreign_leave(pushed);
}

/* ---- frees in stream order behind held work ------------------------------------ */
static void cg_named_add(struct cg_named *m, const struct cg_op *op)
{
	const void *p[2];
	size_t n[2];
	int k = op->kind == CG_OP_COPY && cg_copy_is_kernel(op) ? 0 : cg_op_memory(op, p, n);
	m->other |= op->stream != CU_STREAM_LEGACY;
	for (int i = 0; i < k && m->n <= CG_NAMED; i++) {
		if (m->n < CG_NAMED) {
			m->lo[m->n] = (uintptr_t)p[i];
			m->hi[m->n] = (uintptr_t)p[i] + n[i];
		}
		m->n++;
	}
}

static void cg_named_merge(struct cg_named *m, const struct cg_named *from)
{
	m->other |= from->other;
	for (int i = 0; i < from->n && m->n <= CG_NAMED; i++) {
		if (i >= CG_NAMED) {
			m->n = CG_NAMED + 1;
			break;
		}
		if (m->n < CG_NAMED) {
			m->lo[m->n] = from->lo[i];
			m->hi[m->n] = from->hi[i];
		}
		m->n++;
	}
}

static int cg_named_hits(const struct cg_named *m, const void *p, size_t n)
{
	uintptr_t lo = (uintptr_t)p, hi = lo + n;
	if (m->n > CG_NAMED)
		return 1;
	for (int i = 0; i < m->n; i++)
		if (m->lo[i] < hi && lo < m->hi[i])
			return 1;
	return 0;
}

/* The frees held back go, each on its stream after the held work that came
 * before it (all of it went out: cg_defer_clear), which that stream's order
 * then covers as eagerly; then the graphs naming their memory go. From
 * another thread, as the held work went (cg_submit_ops). */
static void cg_frees_out(int foreign, const void *owner)
{
	int n = E.nfree, moved = 0;
	if (cg_likely(!n))
		return;
	struct cg_free f[CG_FREES];
	memcpy(f, E.frees, (size_t)n * sizeof *f);
	E.nfree = 0;
	E.free_bytes = 0;
	cg_unlock_for_calls();
	cg_graph_settle();
	CUcontext pushed = cg_foreign_enter(foreign, f[0].ctx);
	for (int i = 0; i < n; i++) {
		CUresult rc = CG_BK(mem_free_async, (CUdeviceptr)(uintptr_t)f[i].p,
				    cg_foreign_stream(foreign, f[i].s, &moved));
		if (rc != CUDA_SUCCESS)
			cg_log_capped(CG_LOG_WARN, CG_FAULT_DRIVER,
				      "a free held back behind held work failed when made (error %d)", (int)rc);
	}
	if (moved)
		cg_note_moved(owner);
	cg_foreign_leave(pushed);
	cg_relock_after_calls();
	E.epoch++;
	for (int i = 0; i < n; i++)
		cg_forget_memory_locked(f[i].p, f[i].n);
}


/* Held ops submitted eagerly join the run: they ran eagerly after all. */
static void cg_held_to_run(size_t from)
{
	cg_named_merge(&E.run_named, &E.held_named);
	for (size_t i = from; i < E.held.n; i++) {
		if (E.held.ops[i].kind == CG_OP_RECORD)
			cg_evset_add(E.run_evset, &E.run_nev, E.held.ops[i].u.ev.event);
		E.run_named.other |= E.held.ops[i].stream != CU_STREAM_LEGACY;
		if (cg_seg_push(&E.run, &E.held.ops[i], 0, NULL, NULL)) {
			cg_seg_clear(&E.run);
			E.run_id++;
			break;
		}
	}
	E.run_ns_ok = 0; /* that submission was not a program call */
	/* The period search saw none of them: its candidates, each checked
	 * op by op against the op a period before, start again (kept, they
	 * paired a kernel with a copy: fuzz seed 20023336). */
	cg_period_reset(&E.period);
}

static void cg_defer_clear(void)
{
	cg_seg_clear(&E.held);
	E.held_named.n = E.held_named.other = 0;
	E.mode = CG_RECORD;
	E.ncand = 0;
	E.fast_upto = 0;
	E.complete = NULL;
	E.expect_src = NULL;
	E.timing = 0;
	E.defer_ns = 0;
	E.nev = 0;
	E.nwritten = 0;
	E.last_ns = 0; /* the fast path reads no clock */
	E.gapped = 0;
	E.handed_at = SIZE_MAX;
	cg_stat_add(ops_total, E.nfast);
	E.nfast = 0;
}

/* ---- learning and building --------------------------------------------------- */
/* The first piece's length where the run is to be replayed as a chain, else
 * 0: where the host waits at the run's end, the device idles while the host
 * makes the calls a single graph would be launched after. One stream only:
 * pieces over several would each need their fork and join. */
static size_t cg_chain_first(const struct cg_seg *run, int host_waits)
{
	if (!host_waits || run->n < CG_CHAIN_MIN)
		return 0;
	/* The read-back the host waits for may be on the legacy stream. */
	size_t last = run->n - 1;
	for (size_t i = 1; i < run->n; i++)
		if (run->ops[i].stream != run->ops[0].stream && !(i == last && run->ops[i].flags & CG_F_HOST_WAITS))
			return 0;
	return cg_opt.min_ops > CG_CHAIN_FIRST ? (size_t)cg_opt.min_ops : CG_CHAIN_FIRST;
}

/* Templates for a chain of pieces, linked; NULL when one cannot be made. */
static int cg_chain_new(const struct cg_op *ops, size_t n, size_t first, uint64_t eager_ns,
			struct cg_tmpl **out, int max)
{
	int k = 0;
	for (size_t done = 0; done < n;) {
		size_t len = cg_chain_piece_len(done, n - done, first);
		if (k == max || k + 1 >= cg_opt.max_graphs)
			break;
		struct cg_tmpl *t = cg_tmpl_new(ops + done, len, n ? eager_ns * len / n : 0);
		if (!t)
			break;
		t->follows = k > 0;
		if (k)
			out[k - 1]->next_piece = t;
		out[k++] = t;
		done += len;
	}
	return k;
}

/* Adds built (or queued) templates to the table. */
static void cg_table_add_all(struct cg_tmpl **ts, int n)
{
	struct cg_tmpl *gone = NULL;
	for (int i = 0; i < n; i++) {
		if (!ts[i])
			continue;
		struct cg_tmpl *out = cg_table_add(ts[i], cg_opt.max_graphs);
		while (out) {
			struct cg_tmpl *nx = out->next;
			out->next = gone;
			gone = out;
			out = nx;
		}
	}
	cg_bury(gone);
}

/* ---- the builder ----------------------------------------------------------------- */
static void *cg_builder_main(void *arg)
{
	(void)arg;
	/* A capture the program runs in global mode would forbid this
	 * thread's calls (and none runs while cgraft sees one: cg_capture_begin). */
	CUstreamCaptureMode relaxed = CU_STREAM_CAPTURE_MODE_RELAXED;
	CG_BK(capture_mode, &relaxed);
	cg_lock_take(&E.mu);
	for (;;) {
		struct cg_tmpl *t = E.build.head;
		if (!t || E.build.hold || atomic_load(&cg_capturing) || atomic_load(&cg_dead)) {
			cg_cond_wait(&E.build.cv, &E.mu, 0);
			continue;
		}
		E.build.head = t->bnext;
		if (!E.build.head)
			E.build.tail = NULL;
		E.build.current = t;
		cg_lock_give(&E.mu);
		/* Uploaded on a stream of its own, not the program's (which may
		 * be capturing, or busy), and there before it is handed over. */
		struct cg_graph *g = NULL;
		CUstream up = NULL;
		int rc = CG_BK(ctx_set_current, t->ops[0].ctx) == CUDA_SUCCESS ? 0 : -EIO;
		if (!rc && CG_BK(stream_create, &up, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS)
			up = NULL;
		if (!rc)
			rc = cg_graph_build(t, &g, &up);
		if (up) {
			CG_BK(stream_sync, up);
			CG_BK(stream_destroy, up);
		}
		cg_lock_take(&E.mu);
		E.build.current = NULL;
		t->building = 0;
		cg_cond_broadcast(&E.build.cv);
		if (t->buried) {
			cg_lock_give(&E.mu);
			cg_graph_destroy(g);
			cg_tmpl_free(t);
			cg_lock_take(&E.mu);
		} else if (rc) {
			/* Gone, as a failed build on the program's thread. */
			cg_learn_failed(t->ops, t->n);
			if (E.early.on && E.early.id == t->id)
				E.early.waiting = 0;
			if (E.expect == t)
				E.expect = NULL;
			cg_table_remove(t);
			t->next = E.graveyard;
			E.graveyard = t;
		} else {
			t->g = g;
		}
	}
	return NULL;
}

int cg_thread_start(void *(*fn)(void *))
{
	pthread_t th;
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&th, &a, fn, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&a);
	return rc;
}

/* Whether the builder runs (started now where it was not). */
static int cg_builder_start(void)
{
	if (E.build.thread)
		return E.build.thread > 0;
	int rc = cg_thread_start(cg_builder_main);
	E.build.thread = rc ? -1 : 1;
	if (rc)
		cg_log_capped(CG_LOG_WARN, CG_FAULT_CGRAFT, "cannot start the builder: graphs are built on the program's thread");
	return !rc;
}

/* A build's cost in nodes, a KiB of kernel parameters counting as one (an
 * H200 builds one in about 2 us, a kernel node with 32 KB of parameters in
 * about 45). From the default weight, about 2 ms, builds go to the builder:
 * below it, a template ready at a run's end keeps what learning makes of the
 * next runs as it is (one built meanwhile let HF decoding learn both
 * vectorised forms of a kernel whole, and diverge between them). */
static size_t cg_tmpl_build_weight(const struct cg_tmpl *t)
{
	size_t w = t->n;
	for (size_t i = 0; i < t->n; i++)
		if (t->ops[i].kind == CG_OP_KERNEL)
			w += t->ops[i].nbytes / 1024;
	return w;
}

/* Queues new templates for the builder, where they weigh at least
 * CGRAFT_BUILD_THREAD, and adds them to the table, where they match nothing
 * till built; 0 where they are to be built here (cheap builds, and NCCL
 * calls, which are captured in turn on the program's thread). */
static int cg_build_queue(struct cg_tmpl **ts, int n)
{
	if (!cg_opt.build_thread || atomic_load(&cg_capturing))
		return 0;
	size_t weight = 0;
	for (int i = 0; i < n; i++) {
		if (ts[i]->nccl)
			return 0;
		weight += cg_tmpl_build_weight(ts[i]);
	}
	if (weight < (size_t)cg_opt.build_thread)
		return 0;
	if (!cg_builder_start())
		return 0;
	for (int i = 0; i < n; i++) {
		ts[i]->building = 1;
		ts[i]->bnext = NULL;
		*(E.build.tail ? &E.build.tail->bnext : &E.build.head) = ts[i];
		E.build.tail = ts[i];
	}
	cg_cond_broadcast(&E.build.cv);
	cg_table_add_all(ts, n);
	return 1;
}

/* What a build under way may use goes: it ends first, and none starts till
 * cg_build_go(). The caller has waited for the turn; the builder needs
 * neither it nor anything the wait holds. */
static void cg_build_pause(void)
{
	E.build.hold++;
	if (!E.build.current)
		return;
	cg_unlock_for_calls();
	cg_lock_take(&E.mu);
	while (E.build.current)
		cg_cond_wait(&E.build.cv, &E.mu, 0);
	cg_lock_give(&E.mu);
	cg_relock_after_calls();
}

static void cg_build_go(void)
{
	if (--E.build.hold == 0 && E.build.head)
		cg_cond_broadcast(&E.build.cv);
}

/* Builds the graphs of new templates, on the builder or here without the
 * mutex, and adds the ones that built to the table. */
static void cg_build(struct cg_tmpl **ts, int n)
{
	if (cg_build_queue(ts, n))
		return;
	uint64_t t0 = cg_now_ns();
	cg_unlock_for_calls();
	/* Not uploaded now: on the program's stream the upload would be work
	 * of cgraft's after the program's last, there when the host waits on
	 * that (a query of the stream finds it busy). Its first launch takes it
	 * to the device. */
	const CUstream no_upload = NULL;
	for (int i = 0; i < n; i++) {
		struct cg_graph *g;
		if (cg_graph_build(ts[i], &g, &no_upload) == 0) {
			ts[i]->g = g;
			continue;
		}
		cg_learn_failed(ts[i]->ops, ts[i]->n);
		/* A chain without this piece ends before it. */
		if (i > 0 && ts[i - 1] && ts[i - 1]->next_piece == ts[i])
			ts[i - 1]->next_piece = NULL;
		cg_tmpl_free(ts[i]);
		ts[i] = NULL;
	}
	cg_relock_after_calls();
	cg_stat_add(record_ns, cg_now_ns() - t0);
	cg_table_add_all(ts, n);
}

/* No template grew from the last runs: stop recording for a while, then
 * for good. */
static void cg_note_novel(void)
{
	if (++E.quiet < 64)
		return;
	E.quiet = 0;
	cg_stat_add(backoffs, 1);
	cg_count_fallback(CG_WHY_BACKOFF_NOREPEAT);
	if (++E.passive_rounds > 3 && !cg_table_count()) {
		cg_log(CG_LOG_INFO, CG_FAULT_NONE, "the op stream does not repeat: cgraft passes calls through from now on");
		atomic_store(&cg_dead, 1);
		cg_stand_aside_changed();
	}
	E.passive_until = E.segno + (64ull << E.passive_rounds);
}

/* Templates for what recurs in run (eager_ns its host time): a chain where
 * it may be one (and no template starts alike, whose matches the first piece
 * would lose), else a whole one, which replaces the chains that start alike. */
static int cg_templates_for(const struct cg_seg *run, const struct cg_build *b, int nb, uint64_t eager_ns,
			    struct cg_tmpl **ts, int max)
{
	const struct cg_op *ops = run->ops;
	int k = 0;
	for (int i = 0; i < nb && k < max; i++) {
		const struct cg_op *o = ops + b[i].start;
		uint64_t ns = run->n ? eager_ns * b[i].n / run->n : 0;
		int k0 = k;
		if (b[i].first && !cg_table_starts_alike(o)) {
			k += cg_chain_new(o, b[i].n, b[i].first, ns, ts + k, max - k);
		} else {
			cg_bury(cg_table_take_chains(o));
			if ((ts[k] = cg_tmpl_new(o, b[i].n, ns)))
				k++;
		}
		if (k > k0)
			cg_tmpl_add_start(ts[k0], E.anchor, b[i].start);
	}
	return k;
}

/* ---- pieces: held work sent to the GPU while the host works ------------------- */
static size_t cg_piece_cap(void)
{
	return E.piece.cap ? E.piece.cap : (size_t)cg_opt.max_segment_ops;
}

static int cg_tmpl_longer(const struct cg_tmpl *t, void *cookie)
{
	return t->n > *(const size_t *)cookie;
}

/* Where the host works long between a stretch's calls (Python between
 * kernels), its held work reaches the GPU only at the segment's end, and a
 * host that then synchronises waits for all of it, where eagerly the GPU
 * ran it while the host worked. Cut into pieces of about CGRAFT_PIECE_US
 * of the host's time, the GPU runs one while the host issues the next, for
 * one graph launch more a piece. A stretch of n ops that took span ns, its
 * calls calls ns of them (eager in a run, held in a timed replay), asks
 * for the cap that would cut it so. Two such stretches in turn must ask;
 * returns the larger cap then, or 0. */
static size_t cg_piece_ask(size_t n, uint64_t span, uint64_t calls)
{
	if (!cg_opt.piece_us || n < 2 * CG_PIECE_MIN_OPS || span <= calls)
		return 0;
	uint64_t gap = (span - calls) / (n - 1); /* n ops, n - 1 gaps */
	size_t want = gap ? (size_t)((uint64_t)cg_opt.piece_us * 1000 / gap) : SIZE_MAX;
	if (want < CG_PIECE_MIN_OPS)
		want = CG_PIECE_MIN_OPS;
	if (want >= n || want >= cg_piece_cap()) {
		E.piece.vote = 0;
		return 0;
	}
	size_t before = E.piece.vote;
	E.piece.vote = before ? 0 : want;
	if (!before)
		return 0;
	atomic_store_explicit(&cg_stats.piece_gap_ns, gap, memory_order_relaxed);
	return want > before ? want : before;
}

/* The cap falls to cap: templates longer go, so that segments cut alike
 * recur. Not while ops are held: a replay's ask waits for the next op
 * that may start a replay (cg_try_start). */
static void cg_piece_fall(size_t cap)
{
	E.piece.pending = 0;
	if (cap >= cg_piece_cap())
		return; /* asked for before an earlier ask fell lower */
	E.piece.cap = cap;
	E.period.known = 0;
	atomic_store_explicit(&cg_stats.piece_ops, cap, memory_order_relaxed);
	cg_debug("the host works %llu ns an op between calls: stretches are cut at %zu ops",
		 (unsigned long long)atomic_load(&cg_stats.piece_gap_ns), cap);
	cg_build_pause();
	cg_bury(cg_table_take_if(cg_tmpl_longer, &E.piece.cap));
	cg_build_go();
}

/* A new run starts: ops of the old one still in flight are not its. */
static void cg_run_clear(void)
{
	cg_seg_clear(&E.run);
	E.run_named.n = E.run_named.other = 0;
	E.run_id++;
	E.run_ns = 0;
	E.run_own_ns = 0;
	E.run_ns_ok = 1;
	E.run_nev = 0;
	E.anchor = NULL;
	E.phase_lost = 0;
	E.phase_lost_at = 0;
}

/* The run ends: learn from it, build what recurs, start a new one. Returns
 * whether anything of it recurred. */
static int cg_run_end(int host_waits)
{
	size_t n = E.run.n;
	cg_period_reset(&E.period);
	if (!n) {
		E.phase_lost_at = 0; /* a run dropped, or ended by launches: the phase is known */
		return 0;
	}
	E.gaps_before = E.gaps_now;
	E.gaps_now.n = 0;
	E.segno++;
	cg_stat_add(segments, 1);
	/* From the first op's start to the last's: the calls but the last,
	 * cgraft's own time after them, and the program's between (the run
	 * may be the first of two halves, E.run_ns half of both). */
	const struct cg_op *o = E.run.ops;
	uint64_t calls = (E.run_ns > E.run_tail_ns ? E.run_ns - E.run_tail_ns : 0) + E.run_own_ns;
	size_t cap = E.run_ns_ok && E.mode != CG_DEFER && o[n - 1].t0 > o[0].t0
			     ? cg_piece_ask(n, o[n - 1].t0 - o[0].t0, calls)
			     : 0;
	if (cap) { /* the run, longer than the cap, is not learnt */
		cg_piece_fall(cap);
		cg_run_clear();
		return 0;
	}
	uint64_t eager_ns = E.run_ns_ok ? E.run_ns : 0;
	struct cg_build b[CG_MAX_BUILDS];
	struct cg_learn_out res = { 0 };
	int nb = 0;
	if (cg_in_window()) {
		struct cg_learn_in in = { &E.run, E.anchor, eager_ns, cg_opt.min_ops, cg_opt.min_repeats,
					  cg_chain_first(&E.run, host_waits) };
		nb = cg_learn(&in, b, &res);
	}
	if (res.whole) {
		cg_tmpl_note_eager(res.whole, eager_ns); /* it ran eagerly (after a divergence) */
		res.whole->tail = 0; /* it recurs as it is */
	}
	if (res.novel)
		cg_note_novel();
	else if (nb)
		E.quiet = 0;
	struct cg_tmpl *ts[CG_MAX_BUILDS * 4];
	int nt = nb ? cg_templates_for(&E.run, b, nb, eager_ns, ts, (int)(sizeof ts / sizeof ts[0])) : 0;
	cg_run_clear();
	if (nt)
		cg_build(ts, nt);
	return res.whole || nb;
}

/* ---- a period cut early, on probation ------------------------------------------- */
static int cg_early_named(const struct cg_tmpl *t, void *cookie)
{
	(void)cookie;
	return t->id == E.early.id;
}

static void cg_early_clear(void)
{
	E.early.on = 0;
	E.early.ended = 0;
	E.early.passed = 0;
	E.early.waiting = 0;
	cg_seg_clear(&E.early.seg);
}

/* The stretch a period was cut early in ended (an eager op, a boundary,
 * another template's launch) short of CG_PERIOD_MIN_RUN: a part of an
 * iteration that repeats inside it. The run becomes the stretch as it ran,
 * learnt whole at the iteration's end as though never cut, and the
 * template goes (cg_early_bury). */
static void cg_early_end(void)
{
	if (!E.early.on || E.early.ended || E.early.passed)
		return;
	E.early.ended = 1;
	cg_debug("a period cut early ended after %zu ops: its template goes", E.early.ran);
	if (E.early.ran < CG_PERIOD_MIN_RUN) /* not where its graph came too late */
		cg_period_note_short(&E.period, E.early.key);
	cg_period_reset(&E.period);
	E.period.known = 0;
	int ok = 1;
	for (size_t i = 0; i < E.run.n && ok; i++)
		ok = cg_seg_push(&E.early.seg, &E.run.ops[i], 0, NULL, NULL) == 0;
	if (ok) {
		struct cg_seg run = E.run;
		E.run = E.early.seg;
		E.early.seg = run;
		E.run_named.n = CG_NAMED + 1; /* not kept for the stretch */
		E.run_named.other = 1;
		E.anchor = E.early.anchor;
		E.run_ns_ok = 0;
	}
}

/* Where no deferral holds candidates: an ended probation's template goes. */
static void cg_early_bury(void)
{
	if (!E.early.ended || E.mode == CG_DEFER)
		return;
	cg_bury(cg_table_take_if(cg_early_named, NULL));
	cg_early_clear();
}

/* A launch while a probation runs: its template's lengthen the stretch,
 * till it is long enough; any other ends it. */
static void cg_early_launched(const struct cg_tmpl *t)
{
	if (E.early.ended || E.early.passed)
		return;
	if (!cg_early_named(t, NULL)) {
		cg_early_end();
		return;
	}
	E.early.waiting = 0;
	E.early.ran += t->n;
	if (E.early.ran >= CG_PERIOD_MIN_RUN) {
		E.early.passed = 1; /* cg_early_pass, once the launch is done */
		return;
	}
	/* Eager ops since the last launch, then t's. */
	for (size_t i = 0; i < E.run.n; i++)
		cg_seg_push(&E.early.seg, &E.run.ops[i], 0, NULL, NULL);
	for (size_t i = 0; i < t->n; i++)
		cg_seg_push(&E.early.seg, &t->ops[i], 0, NULL, NULL);
}

/* An eager op while the template on probation waits for its graph: where
 * it is the template's next op in shape, with nothing else eager since the
 * cut, the stretch goes on (the op kept in the stretch as it ran) and the
 * run stays empty, so that the template may start at a run's start once
 * built. Returns whether op went so. */
static int cg_early_shadow(const struct cg_op *op, int ok)
{
	if (!ok || E.run.n || op->shape != E.early.shape[E.early.phase] || op->kind == CG_OP_HOST ||
	    op->flags & CG_F_HOST_WAITS || cg_seg_push(&E.early.seg, op, 0, NULL, NULL))
		return 0;
	const struct cg_op *r = &E.early.seg.ops[E.early.seg.n - 1];
	if (cg_hostmem_hit(r)) {
		E.early.seg.n--;
		return 0;
	}
	if (r->kind == CG_OP_RECORD)
		cg_evset_add(E.run_evset, &E.run_nev, r->u.ev.event);
	E.early.ran++;
	E.early.phase = (E.early.phase + 1) % E.early.p;
	return 1;
}

/* The stretch ran long enough: a group of t's ops, t repeated, is built,
 * and t starts no match any more: it replays what the groups leave at the
 * loop's end (a tail). */
static void cg_early_pass(struct cg_tmpl *t)
{
	size_t p = t->n, group = E.early.group;
	cg_debug("a period cut early ran %zu ops: groups of %zu follow", E.early.ran, group);
	cg_early_clear();
	if (group <= p || !cg_in_window())
		return;
	/* t's ops repeated, their values t's (copied once, by the template). */
	struct cg_seg grp = { 0 };
	int ok = cg_seg_reserve(&grp, group) == 0;
	for (size_t r = 0; r < group && ok; r += p)
		for (size_t i = 0; i < p; i++)
			grp.ops[grp.n++] = t->ops[i];
	if (ok && !cg_table_find(grp.ops, grp.n)) {
		struct cg_build b = { 0, grp.n, 0 };
		struct cg_tmpl *ts[1];
		if (cg_templates_for(&grp, &b, 1, (uint64_t)t->eager_ns * (grp.n / p), ts, 1)) {
			cg_build(ts, 1); /* t may be pushed out meanwhile */
			struct cg_tmpl *tp = ts[0] ? cg_table_find(grp.ops, p) : NULL;
			if (tp)
				tp->tail = 1;
		}
	}
	cg_seg_free(&grp);
}

/* Halves of p ops found early, after origin ops that did not recur: the
 * second becomes a template at once (the two are its two sightings), on
 * probation, and the run so far is kept for learning should the stretch end
 * short. 0 where none was built: the halves are learnt as usual. */
static int cg_period_early(size_t p, size_t origin)
{
	const struct cg_op *half = E.run.ops + origin + p;
	if (!cg_in_window() || cg_table_find(half, p))
		return 0;
	struct cg_build b = { origin + p, p, 0 };
	struct cg_tmpl *ts[1];
	if (!cg_templates_for(&E.run, &b, 1, E.run_ns_ok ? E.run_ns : 0, ts, 1))
		return 0;
	uint64_t id = ts[0]->id;
	cg_build(ts, 1);
	if (!ts[0])
		return 0;
	int waiting = ts[0]->building;
	cg_early_clear();
	int ok = 1;
	for (size_t i = 0; i < E.run.n && ok; i++)
		ok = cg_seg_push(&E.early.seg, &E.run.ops[i], 0, NULL, NULL) == 0;
	if (ok) {
		cg_debug("a period of %zu ops found early: its template is on probation", p);
		E.early.on = 1;
		E.early.id = id;
		E.early.ran = 2 * p;
		E.early.group = cg_period_group(p, cg_piece_cap());
		E.early.key = cg_period_key(half, p);
		E.early.anchor = E.anchor;
		E.early.waiting = waiting;
		E.early.p = p;
		E.early.phase = 0;
		for (size_t i = 0; i < p; i++)
			E.early.shape[i] = half[i].shape;
	}
	E.segno++;
	cg_stat_add(segments, 1);
	cg_run_clear();
	E.period.known = 0;
	return 1;
}

/* ---- replay ------------------------------------------------------------------ */
static size_t cg_started_slot(uint64_t shape)
{
	return (size_t)(shape ^ shape >> 29) & (CG_STARTED - 1);
}

/* t completed a match from its first op. */
static void cg_start_note(const struct cg_tmpl *t)
{
	size_t i = cg_started_slot(t->ops[0].shape);
	if (E.started[i].shape != t->ops[0].shape)
		E.started[i].shape = t->ops[0].shape, E.started[i].last = 0;
	E.started[i].before = E.started[i].last;
	E.started[i].last = t->id;
}

/* Puts first the candidate expected to complete, where several start on
 * op: one form of a step that alternates with another (the one before
 * the last), else the last again. The fast path follows the first, and
 * holds the others' ops only while they agree (cg_fast_limit): the right
 * one first keeps the rest of the step on it. Only the order changes. */
static void cg_start_predict(const struct cg_op *op)
{
	size_t s = cg_started_slot(op->shape);
	if (E.ncand < 2 || E.started[s].shape != op->shape || !E.started[s].last)
		return;
	uint64_t want = E.started[s].before && E.started[s].before != E.started[s].last ? E.started[s].before
											: E.started[s].last;
	for (int i = 1; i < E.ncand; i++)
		if (E.cand[i]->id == want) {
			struct cg_tmpl *c = E.cand[i];
			E.cand[i] = E.cand[0];
			E.cand[0] = c;
			return;
		}
}

/* ---- pieces launched back to back --------------------------------------------- */
/* A loop's step learnt in pieces (cut where the step's phase or a block's
 * end fell while it was learnt) replays as one graph once the pieces are
 * seen to launch one right after the other: each launch costs the host
 * more than the ops it holds. A template of both pieces' ops starts where
 * the first starts, beside it: a match that ends short of it launches the
 * first piece, and the rest as before. Not a chain's pieces (cut for the
 * device to start early), NCCL's, or a first piece the host waits after
 * (a read-back, a host function). */
static int cg_fusable(const struct cg_tmpl *t)
{
	return !t->follows && !t->next_piece && !t->tail && !t->nccl;
}

static int cg_fuse_first(const struct cg_tmpl *t)
{
	const struct cg_op *last = &t->ops[t->n - 1];
	return cg_fusable(t) && t->fusions < CG_FUSIONS && last->kind != CG_OP_HOST &&
	       !(last->flags & (CG_F_HOST_WAITS | CG_F_LANDS_PINNED));
}

/* Whether t's launch is looked at for a fusion: none made and not yet
 * built, t no chain's, tail's or NCCL's, in the window, no early cut on. */
static int cg_fuse_open(const struct cg_tmpl *t)
{
	return !E.fuse.ready && cg_fusable(t) && cg_in_window() && !E.early.on;
}

/* Nothing kept or noted: memory or kernels the kept ops name may be gone. */
static void cg_fuse_forget(void)
{
	E.fuse.from = NULL;
	E.fuse.ready = E.fuse.second = 0;
	E.fuse.of = 0;
	cg_seg_clear(&E.fuse.ops);
}

/* Keeps a copy of n held ops (written out) for a template to be made. */
static int cg_fuse_keep(size_t at, size_t n)
{
	cg_held_materialize();
	for (size_t i = at; i < at + n; i++)
		if (cg_seg_push(&E.fuse.ops, &E.held.ops[i], 0, NULL, NULL))
			return -ENOMEM;
	return 0;
}

/* Whether t, launched now for held ops, comes right after the last launch,
 * and that one, fused with it, would be a template of few enough ops. Not
 * where t diverged more than now and then (cg_fuse_before: or has other
 * forms): the forms of t are candidates after the first piece, but not
 * inside a fusion. */
static int cg_fuse_follows(const struct cg_tmpl *a, const struct cg_tmpl *t, uint64_t epoch)
{
	return a && a != t && epoch == E.fuse.epoch && a->n + t->n <= cg_piece_cap() &&
	       t->diverged * CG_FUSE_STABLE <= t->replays;
}

/* Before t is launched for the held ops from at (E.epoch unchanged since):
 * its ops are kept where it may be the second piece of a fusion, or its
 * first. Before, as a launch may free the values that held ops the fast
 * path left implicit stand for. */
static void cg_fuse_before(struct cg_tmpl *t, size_t at)
{
	struct cg_tmpl *a = E.fuse.from;
	E.fuse.second = 0;
	if (!cg_fuse_open(t))
		return;
	if (cg_fuse_follows(a, t, E.epoch) && E.fuse.of == a->id &&
	    (a->fuse_next == t->id ? a->fuse_n + 1 : 1) >= CG_FUSE_AFTER && !cg_tmpl_has_forms(t)) {
		if (cg_fuse_keep(at, t->n))
			cg_fuse_forget();
		else
			E.fuse.second = 1;
	} else if (cg_fuse_first(t) && t->fuse_n >= CG_FUSE_AFTER - 1) {
		cg_seg_clear(&E.fuse.ops);
		E.fuse.of = cg_fuse_keep(at, t->n) ? 0 : t->id;
	}
}

/* t was launched (before, E.epoch was epoch): whether it came right after
 * the last launch is counted, and the two pieces kept are to be made one
 * template where it came so CG_FUSE_AFTER times in a row. */
static void cg_fuse_note(struct cg_tmpl *t, uint64_t epoch)
{
	struct cg_tmpl *a = E.fuse.from;
	int second = E.fuse.second;
	E.fuse.from = NULL;
	E.fuse.second = 0;
	if (!cg_fuse_open(t))
		return;
	if (cg_fuse_follows(a, t, epoch)) {
		if (a->fuse_next != t->id) {
			a->fuse_next = t->id;
			a->fuse_n = 0;
		}
		a->fuse_n++;
		if (second) {
			E.fuse.ready = 1;
			E.fuse.first_n = (uint32_t)a->n;
			a->fusions++;
			memcpy(E.fuse.starts, a->starts, sizeof a->starts);
			E.fuse.nstarts = a->nstarts;
			E.fuse.eager_ns = a->eager_ns > 0 && t->eager_ns > 0 ? a->eager_ns + t->eager_ns : 0;
			return;
		}
	}
	if (cg_fuse_first(t)) {
		E.fuse.from = t;
		E.fuse.epoch = epoch + 1;
		E.fuse.ns = cg_now_ns();
	}
}

/* Makes the template of the two pieces kept (cg_fuse_note), where there is
 * none of their shapes yet; nothing is held. */
static void cg_fuse_build(void)
{
	const struct cg_op *ops = E.fuse.ops.ops;
	size_t n = E.fuse.ops.n;
	struct cg_tmpl *t = !cg_table_find(ops, n) ? cg_tmpl_new(ops, n, (uint64_t)E.fuse.eager_ns) : NULL;
	if (t) {
		for (int i = 0; i < E.fuse.nstarts; i++)
			cg_tmpl_add_start(t, E.fuse.starts[i].anchor, E.fuse.starts[i].offset);
		t->fused_at = E.fuse.first_n;
		cg_debug("pieces of %zu ops in all launch one right after the other: one graph of them", n);
		cg_build(&t, 1);
	}
	cg_fuse_forget();
}

/* Launches t for the t->n held ops from at. Returns 0 with *wait set to the
 * event a read-back's host must wait for (none: NULL), or a negative errno
 * when nothing was launched. */
static int cg_launch(struct cg_tmpl *t, size_t at, struct cg_wait *wait)
{
	*wait = (struct cg_wait){ 0 };
	/* A host still waiting on t's landing would read this launch's: the
	 * ops run eagerly (another thread's, in turn). */
	if (t->pins && t->ops[t->n - 1].flags & CG_F_LANDS_PINNED) {
		cg_count_fallback(CG_WHY_THREADS);
		return -EBUSY;
	}
	if (E.expect_src != t || at)
		cg_held_materialize();
	struct cg_launch l = { .ops = E.held.ops + at,
			       .dirty = E.expect_src == t && !at ? E.dirty : NULL,
			       .epoch = E.epoch,
			       .thread = &cg_self };
	uint64_t t0 = E.timing ? cg_now_ns() : 0, c0 = cg_cost_start();
	if (t0 && !E.gapped)
		t->short_gaps = 0; /* gaps in two timed matches running, or none */
	cg_fuse_before(t, at);
	cg_unlock_for_calls();
	int rc = cg_graph_launch(t, &l);
	cg_relock_after_calls();
	cg_cost_stop(CG_COST_LAUNCH, c0);
	if (rc) {
		cg_fuse_forget();
		cg_count_fallback(CG_WHY_LAUNCH_FAILED);
		cg_tmpl_backoff(t, CG_WHY_LAUNCH_FAILED, E.segno);
		return rc;
	}
	cg_tmpl_note_replay(t, t0 ? E.defer_ns + cg_now_ns() - t0 : 0, E.segno, cg_opt.backoff_slow && !t->nccl);
	if (t0 && !at && E.piece.t0 && t0 > E.piece.t0) {
		size_t cap = cg_piece_ask(t->n, t0 - E.piece.t0, E.defer_ns);
		if (cap)
			E.piece.pending = cap;
	}
	cg_stat_add(ops_replayed, t->n);
	cg_debug("launched graph %llu of %zu ops for held ops %zu to %zu", (unsigned long long)t->id, t->n, at,
		 at + t->n);
	cg_table_touch(t);
	if (!at && !t->follows)
		cg_start_note(t);
	E.epoch = l.epoch + 1;
	cg_fuse_note(t, l.epoch);
	if (cg_unlikely(E.early.on))
		cg_early_launched(t);
	if (l.wait) {
		*wait = (struct cg_wait){ .ev = l.wait, .t = t };
		if (l.landing) {
			wait->landing = l.landing;
			wait->dst = E.held.ops[at + t->n - 1].u.cp.dst;
			wait->n = l.landing_size;
		}
		wait->stream = l.stream;
		wait->epoch = E.epoch;
		t->pins++;
	}
	return 0;
}

/* The run before a launched piece ends there; the piece is the new anchor,
 * and a chain's next piece is tried first. */
static void cg_after_launch(struct cg_tmpl *t)
{
	t->gaps = 0;
	/* Expected before the run ends: a piece its learning pushes out of
	 * the table is expected no more (cg_bury). */
	E.expect = t->next_piece;
	cg_run_end(0);
	E.segno++;
	cg_stat_add(segments, 1);
	E.anchor = t;
	if (cg_unlikely(E.early.passed))
		cg_early_pass(t);
}

/* Ends the deferral: the complete candidate launched for the ops it covers,
 * the rest submitted eagerly in their place, in order. From another thread
 * (or the hold timer), everything is submitted eagerly. */
static void cg_resolve(int foreign, int diverged)
{
	if (E.mode != CG_DEFER)
		return;
	cg_held_materialize();
	size_t n = E.held.n, k = 0;
	struct cg_tmpl *t = E.complete, *launched = NULL;
	struct cg_wait wait;
	if (t && !foreign && t->n <= n && cg_launch(t, 0, &wait) == 0) {
		k = t->n;
		launched = t;
	}
	size_t longest = 0;
	if (k < n && diverged && !t) {
		for (int i = 0; i < E.ncand; i++) {
			cg_tmpl_note_divergence(E.cand[i], E.segno);
			if (E.cand[i]->n > longest)
				longest = E.cand[i]->n;
		}
		cg_stat_add(divergences, 1);
	}
	/* What is left may be whole templates still: a loop's last groups,
	 * short of the candidate that went on, replay as a period's shorter
	 * one. Not NCCL's: no launch of a held call may hang on timing. */
	while (!foreign && k + (size_t)cg_opt.min_ops <= n) {
		if (launched) {
			cg_after_launch(launched);
			launched = NULL;
		}
		struct cg_tmpl *p = cg_table_covering(E.held.ops + k, n - k, E.segno);
		if (!p || p->nccl || p->ops[p->n - 1].flags & CG_F_HOST_WAITS || cg_launch(p, k, &wait))
			break;
		k += p->n;
		launched = p;
	}
	if (k < n) {
		cg_debug("held ops %zu to %zu go out eagerly%s", k, n, foreign ? " (another thread's call)" : "");
		cg_stat_add(pieces_eager, 1);
		const void *owner = E.owner;
		uint64_t c0 = cg_cost_start();
		cg_unlock_for_calls();
		cg_submit_ops(E.held.ops + k, n - k, foreign, owner);
		cg_relock_after_calls();
		cg_cost_stop(CG_COST_SUBMIT, c0);
		E.epoch++;
		/* The owner's next call claims the segment again, and its
		 * per-thread stream waits for what went to the legacy stream. */
		if (foreign)
			E.owner = NULL;
	}
	/* Held ops after a launched piece are the new run's first. */
	if (launched)
		cg_after_launch(launched);
	cg_held_to_run(k);
	/* Twice the longest candidate's length past the held ops with no
	 * launch, the run is where the counted offsets name no start
	 * (cg_phase_starting). Held ops all launched, it starts anew. */
	if (longest && k < n)
		E.phase_lost_at = E.run.n + 2 * longest;
	const void *owner = E.owner;
	cg_defer_clear();
	cg_frees_out(foreign, owner);
	/* A piece that is not the whole held segment ends in no read-back. */
}

/* ---- deferral ------------------------------------------------------------------ */
static int cg_dirty_grow(size_t n)
{
	size_t cap = E.dirty_cap ? 2 * E.dirty_cap : 256;
	while (cap < n)
		cap *= 2;
	uint8_t *d = realloc(E.dirty, cap), *z = d ? realloc(E.lazy, cap) : NULL;
	if (d)
		E.dirty = d;
	if (!z)
		return -ENOMEM;
	E.lazy = z;
	E.dirty_cap = cap;
	return 0;
}

static inline int cg_dirty_reserve(size_t n)
{
	return cg_likely(n <= E.dirty_cap) ? 0 : cg_dirty_grow(n);
}

/* Writes out the held ops the fast path left implicit. */
static void cg_held_materialize(void)
{
	if (cg_likely(E.nwritten == E.held.n))
		return;
	for (size_t i = 0; i < E.held.n; i++)
		if (E.lazy[i]) {
			struct cg_op *h = &E.held.ops[i];
			*h = E.lazy_src->ops[i];
			if (h->kind == CG_OP_KERNEL) {
				h->u.k.params = E.expect_vals[i].u.k.params;
				cg_op_copy_launch(h, &E.expect_vals[i]);
			}
			E.lazy[i] = 0;
		}
	E.nwritten = E.held.n;
}

/* Takes the last held op back (it was written out): it runs eagerly. */
static void cg_held_drop_last(void)
{
	size_t pos = --E.held.n;
	E.nwritten--;
	E.lazy[pos] = 1;
	E.dirty[pos] = 0;
}

static void cg_timer_wake(void);

/* Held op pos written (no longer the template's, implicit), changed from
 * the values expected there or not; its shape the candidates'. */
static inline void cg_held_written(size_t pos, int dirty)
{
	E.dirty[pos] = (uint8_t)dirty;
	E.lazy[pos] = 0;
	E.nwritten++;
	E.held.ops[pos].shape = E.cand[0]->ops[pos].shape; /* one shape, which the candidates share */
}

/* Holds op as the next of the deferral. Returns 1 when held (and launched
 * if it completes the only candidate), 0 when op must run eagerly (the
 * deferral was resolved first), with *wait for a launched read-back. */
static int cg_defer_push(struct cg_op *op, struct cg_wait *wait)
{
	size_t pos = E.held.n;
	if (cg_unlikely(E.expect_src && E.cand[0] != E.expect_src)) {
		int keep_src = 0;
		for (int i = 0; i < E.ncand; i++)
			keep_src |= E.cand[i] == E.expect_src;
		if (!keep_src)
			E.expect_src = NULL;
	}
	const struct cg_op *exp = E.expect_src ? &E.expect_vals[pos] : NULL;
	int differs = 1;
	if (cg_dirty_reserve(pos + 1) || cg_seg_push(&E.held, op, 1, exp, &differs)) {
		cg_resolve(0, 0);
		return 0;
	}
	cg_held_written(pos, differs || !exp);
	E.mode = CG_DEFER;
	struct cg_op *h = &E.held.ops[pos];
	cg_named_add(&E.held_named, h);
	/* A kernel given host memory the host may poll, or a read-back that ends
	 * no template here, is not held: the work before it goes out, then it
	 * runs as the program called it. */
	if (E.dirty[pos] && cg_hostmem_hit(h)) {
		cg_held_drop_last();
		cg_count_fallback(CG_WHY_HOST_MEMORY);
		cg_resolve(0, 0);
		return 0;
	}
	/* Another kernel where the template has one (cg_op_kernel_is_value):
	 * held where this launch was seen to succeed, else a divergence. */
	if (h->kind == CG_OP_KERNEL && !cg_op_same_kernel(h, &E.cand[0]->ops[pos]) && !cg_launch_known(h)) {
		cg_held_drop_last();
		cg_count_fallback(CG_WHY_UNSEEN_LAUNCH);
		cg_resolve(0, 1);
		return 0;
	}
	if (h->kind == CG_OP_RECORD)
		cg_evset_add(E.evset, &E.nev, h->u.ev.event);
	int longer = 0;
	for (int i = 0; i < E.ncand; i++) {
		if (E.cand[i]->n > E.held.n)
			longer = 1;
		else if (E.cand[i]->n == E.held.n && (!E.complete || E.complete->n != E.held.n ||
						      E.cand[i] == E.expect_src))
			E.complete = E.cand[i];
	}
	int done = E.complete && E.complete->n == E.held.n;
	if ((op->flags & CG_F_HOST_WAITS) && !(done && !longer)) {
		cg_held_drop_last();
		cg_resolve(0, 0);
		return 0;
	}
	if (done && !longer) {
		struct cg_tmpl *t = E.complete;
		if (cg_launch(t, 0, wait) == 0) {
			cg_after_launch(t);
			cg_defer_clear();
			cg_frees_out(0, NULL);
			return 1;
		}
		E.complete = NULL;
		/* Not launched: the work before op goes out eagerly, and a call
		 * the host waits in is then made as the program made it (held
		 * work goes out without the host's wait). */
		if (op->flags & CG_F_HOST_WAITS) {
			cg_held_drop_last();
			cg_resolve(0, 0);
			return 0;
		}
		cg_resolve(0, 0);
	}
	return 1;
}

_Static_assert(offsetof(struct cg_op, u.k.zero) + 2 - offsetof(struct cg_op, u.k.grid) == 32 &&
		       offsetof(struct cg_op, flags) == 1,
	       "grid, block, shmem, nattr, how and zero lie side by side; kind and flags too");

/* The held ops are all of t's: launch it. */
static __attribute__((noinline)) void cg_fast_complete(struct cg_tmpl *t)
{
	struct cg_wait wait; /* a kernel is no read-back: none comes back */
	E.complete = t;
	if (cg_launch(t, 0, &wait) == 0) {
		cg_after_launch(t);
		cg_defer_clear();
		cg_frees_out(0, NULL);
	} else {
		E.complete = NULL;
		cg_resolve(0, 0);
	}
}

/* The fast path holds op pos of t, the only candidate and expect_src
 * (written out or left implicit): counted in cg_stats when the held work
 * ends; t's last launches the graph. 1: held. */
static inline __attribute__((always_inline)) int cg_fast_hold_at(struct cg_tmpl *t, size_t pos)
{
	E.nfast++;
	E.held.n = pos + 1;
	if (cg_unlikely(pos + 1 == E.expect_n))
		cg_fast_complete(t);
	return 1;
}

/* cg_hold_fast's kernel with values of its own (a tensor at another
 * address): written as cg_defer_push would write it, its parameters copied
 * and the op marked changed, without the slow path's search, which would
 * find what cg_hold_fast found. 0 where the slow path must look (a kernel
 * given host memory the host may poll, no memory): nothing held then. */
static __attribute__((noinline)) int cg_hold_values(struct cg_op *op, struct cg_tmpl *t, size_t pos,
						    const struct cg_op *v)
{
	op->nbytes = v->nbytes;
	/* Its values differ (its parameters do, cg_hold_fast): not
	 * compared again. */
	if (cg_seg_push(&E.held, op, 1, NULL, NULL))
		return 0;
	if (cg_hostmem_hit(&E.held.ops[pos])) {
		E.held.n = pos;
		return 0;
	}
	cg_held_written(pos, 1); /* t is E.cand[0] */
	return cg_fast_hold_at(t, pos);
}

/* cg_hold_fast's event record or stream wait: the template's own (its
 * event is shape, and it has no values), held implicit. A record's event
 * is one held work records (cg_engine_event_independent). */
static __attribute__((noinline)) int cg_hold_event(const struct cg_op *op, struct cg_tmpl *t, size_t pos)
{
	const struct cg_op *x = &t->ops[pos];
	if (x->kind != op->kind || x->flags != op->flags || x->stream != op->stream || x->u.ev.event != op->u.ev.event)
		return 0;
	if (op->kind == CG_OP_RECORD)
		cg_evset_add(E.evset, &E.nev, op->u.ev.event);
	return cg_fast_hold_at(t, pos);
}

/* The path of most held launches: a kernel the only candidate expects
 * here (or its event record or stream wait, cg_hold_event). With the
 * values the graph has, nothing is copied: the held op stays implicit
 * (cg_held_materialize); with others, cg_hold_values. Its last op
 * launches the graph. 1 when held. */
static inline __attribute__((always_inline)) int cg_hold_fast(struct cg_op *op)
{
	struct cg_tmpl *t = E.cand[0];
	size_t pos = E.held.n;
	/* expect_src is lazy_src wherever set; room for t's ops is made when
	 * it starts (cg_try_start). */
	if (t != E.expect_src || pos >= E.expect_n)
		return 0;
	if (cg_unlikely(op->kind != CG_OP_KERNEL))
		return cg_hold_event(op, t, pos);
	/* What the graph's node has: the template's shape, and a kernel of its
	 * own where the launch is a value (cg_op_kernel_is_value). Its kind and
	 * flags (op's kind is a kernel), then the grid, block and shared memory,
	 * attribute count and key kind: no attributes */
	const struct cg_op *v = &E.expect_vals[pos];
	uint16_t xa, oa;
	memcpy(&xa, v, 2), memcpy(&oa, op, 2);
	if (xa != oa || v->u.k.key != op->u.k.key || v->stream != op->stream || !op->u.k.args || op->u.k.nattr)
		return 0;
	uint64_t d = 0;
	for (int i = 0; i < 4; i++) {
		uint64_t a, b;
		memcpy(&a, (const uint8_t *)v->u.k.grid + 8 * i, 8);
		memcpy(&b, (const uint8_t *)op->u.k.grid + 8 * i, 8);
		d |= a ^ b;
	}
	if (d)
		return 0;
	op->u.k.ki = v->u.k.ki;
	if (!cg_params_equal(op, v->u.k.params))
		return cg_hold_values(op, t, pos, v);
	/* E.lazy[pos] is 1 and E.dirty[pos] 0 from the start (cg_try_start). */
	return cg_fast_hold_at(t, pos);
}

/* Up to where the fast path, which looks at the first candidate only, may
 * hold ops: with one candidate, everywhere; with more, before any of them
 * ends and while all share the first's shapes, where the slow path would
 * keep every one. */
static void cg_fast_limit(void)
{
	size_t lim = E.ncand > 1 ? E.cand[0]->n - 1 : SIZE_MAX;
	for (int i = 1; i < E.ncand; i++) {
		size_t s = cg_tmpl_shared(E.cand[0], E.cand[i]);
		if (s > E.cand[i]->n - 1)
			s = E.cand[i]->n - 1;
		if (s < lim)
			lim = s;
	}
	E.fast_upto = lim;
}

/* Whether op is t's first op as t's graph last ran it: grid and values. */
static int cg_first_as_ran(const struct cg_tmpl *t, const struct cg_op *op)
{
	if (!t->g)
		return 0;
	const struct cg_op *x = cg_graph_expect(t, 0);
	if (op->kind != CG_OP_KERNEL)
		return cg_op_same_values(x, op);
	return op->u.k.args && op->u.k.ki == x->u.k.ki && cg_op_same_grid(x, op) && cg_params_equal(op, x->u.k.params);
}

/* The phase lost (E.phase_lost): the templates op starts at an offset in
 * the run their starts do not name: those whose first op it is as it last
 * ran. An op of the same shape elsewhere in a step, with other values,
 * starts none (at its phase, the whole step's graph would replay with its
 * nodes changed at every launch); where the values are alike, a wrong
 * start diverges, as any. */
static int cg_phase_starting(const struct cg_op *op)
{
	struct cg_tmpl *t[CG_MAX_CAND];
	int k = cg_table_starting(op, E.segno, E.anchor, 0, t, CG_MAX_CAND), n = 0;
	for (int i = 0; i < k; i++)
		if (cg_first_as_ran(t[i], op))
			E.cand[n++] = t[i];
	return n;
}

/* Whether the run reached E.phase_lost_at (nothing launched since the
 * divergence): from there the phase is lost, as after standing aside. */
static int cg_phase_lost_late(void)
{
	if (!E.phase_lost_at || E.run.n < E.phase_lost_at)
		return 0;
	E.phase_lost_at = 0;
	E.phase_lost = 1;
	cg_debug("no template started by op %zu of a run past a divergence: templates start again at their "
		 "first op as it last ran", E.run.n);
	return 1;
}

/* In record mode: whether op starts a template (a chain's expected next
 * piece first), and then holds it. */
static int cg_try_start(struct cg_op *op, struct cg_wait *wait)
{
	if (cg_unlikely(E.fuse.ready))
		cg_fuse_build();
	if (!cg_in_window())
		return 0;
	if (cg_unlikely(E.early.ended))
		cg_early_bury();
	if (cg_unlikely(E.piece.pending))
		cg_piece_fall(E.piece.pending);
	op->shape = cg_op_shape_hash(op);
	if (E.expect && cg_tmpl_can_follow(E.expect, op, E.segno)) {
		/* A chain's next piece first, and beside it what else starts
		 * here (another form of the step, learnt where it diverged from
		 * the chain): the chain alone would diverge at every such step. */
		struct cg_tmpl *more[CG_MAX_CAND];
		int k = cg_table_starting(op, E.segno, E.anchor, E.run.n, more, CG_MAX_CAND);
		E.cand[0] = E.expect;
		E.ncand = 1;
		for (int i = 0; i < k && E.ncand < CG_MAX_CAND; i++)
			if (more[i] != E.expect)
				E.cand[E.ncand++] = more[i];
	} else {
		/* The one replayed most first: the fast path follows it, and
		 * it decides whether this replay is timed. */
		E.ncand = cg_table_starting(op, E.segno, E.anchor, E.run.n, E.cand, CG_MAX_CAND);
		if (cg_unlikely(!E.ncand) && (E.phase_lost || cg_phase_lost_late()))
			E.ncand = cg_phase_starting(op);
		cg_start_predict(op);
	}
	E.expect = NULL;
	if (!E.ncand)
		return 0;
	cg_fast_limit();
	E.complete = NULL;
	if (cg_seg_reserve(&E.held, E.cand[0]->n) || cg_dirty_reserve(E.cand[0]->n)) {
		E.ncand = 0;
		E.fast_upto = 0;
		return 0;
	}
	/* Held ops are implicit (the template's, with its values) until written. */
	memset(E.lazy, 1, E.cand[0]->n);
	memset(E.dirty, 0, E.cand[0]->n);
	E.expect_src = E.cand[0];
	E.expect_n = E.cand[0]->n <= UINT32_MAX ? (uint32_t)E.cand[0]->n : 0;
	E.expect_vals = cg_graph_expect(E.cand[0], 0);
	E.lazy_src = E.cand[0];
	E.timing = cg_tmpl_wants_timing(E.cand[0]);
	E.defer_ns = 0;
	E.piece.t0 = E.timing && cg_opt.piece_us ? cg_now_ns() : 0;
	cg_timer_wake();
	return cg_defer_push(op, wait);
}

/* In defer mode: whether op goes on matching a candidate; first: op is
 * known to match the first one (cg_kernel_expected). */
static int cg_defer_more(struct cg_op *op, int first, struct cg_wait *wait)
{
	size_t pos = E.held.n;
	int w = first;
	for (int i = first; i < E.ncand; i++)
		if (E.cand[i]->n > pos && cg_op_same_shape(&E.cand[i]->ops[pos], op))
			E.cand[w++] = E.cand[i];
	if (!w) {
		/* Another thread's work, done beside the held work rather than
		 * after it: the held work goes out, as at any thread's call
		 * before (cg_claim_slow). */
		if (pos == E.handed_at) {
			cg_count_fallback(CG_WHY_THREADS);
			cg_resolve(0, 0);
			return 0;
		}
		if (!E.complete && cg_log_level >= CG_LOG_DEBUG) {
			char want[200] = "nothing (the graph ended)", got[200];
			for (int i = 0; i < E.ncand; i++)
				if (E.cand[i]->n > pos) {
					cg_op_describe(want, sizeof want, &E.cand[i]->ops[pos]);
					break;
				}
			cg_op_describe(got, sizeof got, op);
			cg_debug("divergence after %zu held ops: expected %s, got %s", pos, want, got);
		}
		/* Pieces fused that do not follow each other after all: the
		 * first goes on alone, the second's forms matched after it. */
		for (int i = 0; i < E.ncand; i++)
			if (E.cand[i]->fused_at && pos >= E.cand[i]->fused_at)
				cg_tmpl_backoff(E.cand[i], CG_WHY_BACKOFF_DIVERGE, E.segno);
		cg_resolve(0, 1);
		return 0;
	}
	if (w != E.ncand) {
		E.ncand = w;
		cg_fast_limit();
	}
	return cg_defer_push(op, wait);
}

/* ---- entry points ---------------------------------------------------------------- */
/* Whether the calling thread may go on with what another one holds, or
 * launched last (to be fused with what comes next): no op of a per-thread
 * stream, held, in a candidate, in the last launch or behind held work (the
 * handle names each caller's own stream), and one context. The engine takes
 * calls one at a time: ops of several threads on streams of the process
 * are held, matched and replayed in the order the threads made them, the
 * order they reach the driver eagerly. (PyTorch's backward pass runs on a
 * thread of its own between the forward pass and the optimiser's step,
 * each of them a stretch of the training step.) */
static int cg_hand_over_ok(CUcontext ctx)
{
	/* A call of no context (a boundary) may come from a thread where
	 * another is current: held work goes out in its own, as before. */
	if (ctx ? ctx != E.ctx : E.mode == CG_DEFER)
		return 0;
	if (E.fuse.from && E.fuse.from->per_thread)
		return 0;
	if (E.mode != CG_DEFER)
		return 1;
	for (int i = 0; i < E.ncand; i++)
		if (E.cand[i]->per_thread)
			return 0;
	for (size_t i = 0; i < E.held.n; i++)
		if (!E.lazy[i] && E.held.ops[i].stream == CU_STREAM_PER_THREAD)
			return 0;
	for (int i = 0; i < E.nfree; i++)
		if (E.frees[i].s == CU_STREAM_PER_THREAD)
			return 0;
	return 1;
}

/* The calling thread takes the segment over: another thread's held work goes
 * out first (it may be what this call depends on), unless this one may go on
 * with it, and the other thread's run ends. So does work of another
 * context. */
static void cg_claim_slow(CUcontext ctx)
{
	cg_wait_moved();
	if (E.owner && E.owner != &cg_self) {
		if (!cg_hand_over_ok(ctx)) {
			E.fuse.from = NULL;
			if (E.mode == CG_DEFER) {
				cg_count_fallback(CG_WHY_THREADS);
				cg_resolve(1, 0);
			}
		}
		/* Held work taken over goes on, and so does its run: learning
		 * now could push a candidate out of the table. */
		E.handed_at = E.mode == CG_DEFER ? E.held.n : SIZE_MAX;
		if (E.mode != CG_DEFER)
			cg_run_end(0);
		E.expect = NULL;
	}
	E.owner = &cg_self;
	E.owner_thread = pthread_self();
	if (ctx && E.ctx != ctx) {
		if (E.mode == CG_DEFER || E.run.n) {
			cg_count_fallback(CG_WHY_DEVICE);
			cg_resolve(0, 0);
			cg_run_end(0);
			E.expect = NULL;
		}
		E.ctx = ctx;
	}
	if (cg_unlikely(!E.atexit_done)) {
		E.atexit_done = 1;
		atexit(cg_engine_exit);
		cg_timer_wake(); /* its thread starts now, not inside a timed replay */
		if (cg_engine_first_op)
			cg_engine_first_op();
	}
}

static inline void cg_claim(CUcontext ctx)
{
	if (cg_unlikely(E.owner != &cg_self || (ctx && E.ctx != ctx)))
		cg_claim_slow(ctx);
}

/* Waits for a launched read-back outside the lock, as the eager call
 * would, then lets its template go. */
static int cg_wait_readback(struct cg_wait *w)
{
	if (!w->ev)
		return 0;
	uint64_t c0 = cg_cost_start();
	int rc = (int)CG_BK(event_sync, w->ev);
	if (rc == CUDA_SUCCESS && w->landing)
		memcpy(w->dst, w->landing, w->n);
	cg_cost_stop(CG_COST_WAIT, c0);
	cg_lock_take(&E.mu);
	cg_wait_turn();
	/* No work came while it waited: its stream has nothing left. */
	if (rc == CUDA_SUCCESS && w->stream && E.epoch == w->epoch) {
		E.idle.stream = w->stream;
		E.idle.ctx = w->t->ops[w->t->n - 1].ctx;
		E.idle.thread = &cg_self;
		E.idle.epoch = E.epoch;
	}
	if (--w->t->pins == 0)
		for (struct cg_tmpl **pp = &E.pinned; *pp; pp = &(*pp)->next)
			if (*pp == w->t) {
				*pp = w->t->next;
				w->t->next = NULL;
				cg_bury(w->t);
				break;
			}
	cg_lock_give(&E.mu);
	return rc;
}

/* A kernel launch the held work's first candidate expects here: the
 * layout and shape are that op's, nothing to look up. */
static int cg_kernel_expected(struct cg_op *op)
{
	const struct cg_op *x = &E.cand[0]->ops[E.held.n];
	if (E.cand[0]->n <= E.held.n || x->kind != CG_OP_KERNEL || x->u.k.ki->key != op->u.k.key ||
	    x->stream != op->stream || x->ctx != op->ctx || x->flags != op->flags || x->u.k.nattr || op->u.k.nattr ||
	    x->u.k.block[0] != op->u.k.block[0] || x->u.k.block[1] != op->u.k.block[1] ||
	    x->u.k.block[2] != op->u.k.block[2] || x->u.k.shmem != op->u.k.shmem || !op->u.k.args ||
	    !cg_op_grid_fits(x, op))
		return 0;
	op->u.k.ki = x->u.k.ki;
	op->nbytes = x->nbytes;
	return 1;
}

/* Whether op may take the fast path: a kernel, event record or stream
 * wait (cg_op_kind_implicit), where the first candidate stands for all
 * (cg_fast_limit), of the thread and context that hold the segment. */
static inline int cg_fast_ok(const struct cg_op *op)
{
	return !E.submitting && E.mode == CG_DEFER && cg_op_kind_implicit(op->kind) && E.owner == &cg_self &&
	       E.ctx == op->ctx && E.held.n < E.fast_upto &&
	       atomic_load_explicit(&cg_hot.engine_on, memory_order_relaxed);
}

static int cg_fast_held(struct cg_op *op)
{
	op->status = 0;
	cg_lock_give(&E.mu);
	return CG_DEFERRED;
}

static int cg_gap_at(const struct cg_gap_ats *g, uint32_t at)
{
	for (int i = 0; i < g->n; i++)
		if (g->at[i] == at)
			return 1;
	return 0;
}

/* The host's gap ends the run, as a boundary would. */
static void cg_gap_end(void)
{
	cg_debug("the host was away between calls: the run ends there");
	E.fuse.from = NULL;
	cg_stat_add(host_gaps, 1);
	cg_early_end();
	cg_early_bury();
	cg_run_end(0);
}

static inline uint64_t cg_gap_ns(int again)
{
	uint64_t hold = (uint64_t)cg_opt.max_hold_us * 1000, g = again ? hold / 4 : hold;
	uint64_t least = again ? CG_GAP_SHORT_NS : CG_GAP_MIN_NS;
	return g < least ? least : g;
}

/* The host away from CUDA for longer than work may be held is where the
 * run ends: an iteration the host then works on its own after issuing ends
 * there, so that its graph, once learnt, is launched at its last op and
 * not held through the gap. So does a shorter one that came at the same op
 * of the run before: the host's own work in each iteration, not a
 * collector's pause now and then. */
static void cg_gap_ends_run(uint64_t now)
{
	uint64_t away = now - E.last_ns;
	int ends = 0;
	if (E.last_ns && E.run.n && away >= cg_gap_ns(1)) {
		uint32_t at = (uint32_t)E.run.n;
		ends = away >= cg_gap_ns(0) || cg_gap_at(&E.gaps_before, at);
		if (E.gaps_now.n < CG_GAP_ATS && !cg_gap_at(&E.gaps_now, at))
			E.gaps_now.at[E.gaps_now.n++] = at;
	}
	if (ends)
		cg_gap_end();
	E.last_ns = 0;
}

/* ---- candidates that span a host gap ------------------------------------------ */
struct cg_ids {
	int n;
	uint64_t id[8 * CG_MAX_CAND];
};

static int cg_id_in(const struct cg_tmpl *t, void *cookie)
{
	const struct cg_ids *ids = cookie;
	for (int i = 0; i < ids->n; i++)
		if (t->id == ids->id[i])
			return 1;
	return 0;
}

static struct cg_tmpl *cg_longest_cand(void)
{
	struct cg_tmpl *c = E.ncand ? E.cand[0] : NULL;
	for (int i = 1; i < E.ncand; i++)
		if (E.cand[i]->n > c->n)
			c = E.cand[i];
	return c;
}

/* The candidates longer than the held ops, by id (a resolve forgets them):
 * they span the place the host went away at. With chains, every piece of
 * a chain such a candidate is a piece of: the run the chain was cut from
 * spans it. */
static void cg_spanning(struct cg_ids *over, int chains)
{
	const int max = (int)(sizeof over->id / sizeof over->id[0]);
	for (int i = 0; i < E.ncand && over->n < max; i++)
		if (E.cand[i]->n > E.held.n) {
			if (chains)
				over->n += cg_tmpl_chain_ids(E.cand[i], over->id + over->n, max - over->n);
			else
				over->id[over->n++] = E.cand[i]->id;
		}
}

static void cg_bury_ids(const struct cg_ids *ids)
{
	if (!ids->n)
		return;
	cg_build_pause();
	cg_bury(cg_table_take_if(cg_id_in, (void *)ids));
	cg_build_go();
}

/* A replay timed for its host cost (cg_tmpl_wants_timing) found the host
 * away for a shorter gap (cg_gap_ns) before this call, with the held ops
 * before it. Where the longest candidate's last timed match found its
 * first gap at the same op, the host works there in each iteration (the template
 * was learnt before such gaps came, or its stretches were cut where the
 * ops alone cannot tell an iteration's end): the held work goes (a
 * candidate complete there launched), the candidates that span the gap
 * go with their chains, and the run ends there, so that what is learnt
 * again ends where the host goes away. A gap at another op each time ends
 * nothing. */
static void cg_defer_gap(void)
{
	struct cg_tmpl *c = cg_longest_cand();
	uint32_t at = (uint32_t)E.held.n;
	int recurs = c && c->short_gaps && c->short_at == at;
	/* A stretch over several gaps is known by its first. */
	if (c && !E.gapped) {
		c->short_at = at;
		c->short_gaps = 1;
	}
	E.last_ns = 0;
	E.gapped = 1;
	if (!recurs)
		return;
	struct cg_ids over = { 0 };
	cg_spanning(&over, 1);
	cg_resolve(0, 0);
	cg_bury_ids(&over);
	cg_gap_end();
}

/* In a timed replay: whether the host was away since the last held call
 * ended for long enough to look at (cg_defer_gap). */
static inline int cg_held_gap(uint64_t now)
{
	return E.mode == CG_DEFER && E.held.n && E.last_ns && now - E.last_ns >= cg_gap_ns(1);
}

/* cg_engine_op past its fast path, with the lock held. */
static __attribute__((noinline)) int cg_engine_op_slow(struct cg_op *op)
{
	E.seq++;
	cg_stat_add(slow[E.mode != CG_DEFER ? CG_SLOW_RECORD
		    : !cg_op_kind_implicit(op->kind) ? CG_SLOW_NOT_KERNEL
		    : E.held.n >= E.fast_upto ? CG_SLOW_CANDIDATES
		    : E.timing ? CG_SLOW_TIMED : CG_SLOW_VALUES], 1);
	if (cg_unlikely(op->kind == CG_OP_NCCL))
		atomic_store(&cg_nccl_held, 1);
	if (E.timing && cg_fast_ok(op)) {
		/* A replay sampled for its host time counts the held calls',
		 * and sees the host's gaps between them (cg_defer_gap). */
		uint64_t t0 = cg_now_ns();
		if (!cg_held_gap(t0) && cg_hold_fast(op)) {
			if (E.timing)
				E.defer_ns += (E.last_ns = cg_now_ns()) - t0;
			return cg_fast_held(op);
		}
	}
	cg_wait_turn();
	if (!atomic_load_explicit(&cg_hot.engine_on, memory_order_relaxed)) {
		cg_lock_give(&E.mu);
		return CG_PASS;
	}
	uint64_t t0 = E.mode == CG_RECORD || E.timing ? cg_now_ns() : 0;
	if (E.mode == CG_RECORD) {
		cg_gap_ends_run(t0);
		/* The host away since the last launch: what comes next is no
		 * piece to launch with it (a host's gap a graph is not to hold
		 * work through, cg_gap_ends_run). */
		if (E.fuse.from && t0 - E.fuse.ns >= cg_gap_ns(1))
			E.fuse.from = NULL;
	}
	cg_claim(op->ctx);
	if (E.timing && cg_held_gap(t0))
		cg_defer_gap();
	cg_stat_add(ops_total, 1);
	enum cg_reason why;
	int expected = op->kind == CG_OP_KERNEL && E.mode == CG_DEFER && cg_kernel_expected(op);
	if (op->kind == CG_OP_KERNEL && !expected && cg_op_kernel_info(op, &why)) {
		/* A kernel cgraft cannot hold: a boundary, then the real call. */
		cg_boundary_locked(op->entry, CG_K_BND, why);
		cg_lock_give(&E.mu);
		return CG_PASS;
	}
	struct cg_wait wait = { 0 };
	int held = E.mode == CG_DEFER ? cg_defer_more(op, expected, &wait) : 0;
	if (!held && E.mode == CG_RECORD)
		held = cg_try_start(op, &wait);
	if (held) {
		if (E.timing && t0)
			E.defer_ns += (E.last_ns = cg_now_ns()) - t0;
		cg_lock_give(&E.mu);
		op->status = cg_wait_readback(&wait);
		return CG_DEFERRED;
	}
	op->t0 = t0 ? t0 : cg_now_ns();
	op->run_id = E.run_id;
	E.epoch++;
	/* Last: a launch of held work above may owe the waits. */
	cg_graph_settle();
	cg_lock_give(&E.mu);
	return CG_EAGER;
}

int cg_engine_op(struct cg_op *op)
{
	cg_lock_take(&E.mu);
	/* The path of most held launches: a kernel the only candidate expects. */
	if (cg_likely(cg_fast_ok(op) && !E.timing) && cg_hold_fast(op))
		return cg_fast_held(op);
	return cg_engine_op_slow(op);
}

static void cg_period_cut(void)
{
	size_t p = 0, origin = 0;
	E.period.min_run = CG_PERIOD_MIN_RUN;
	/* Two halves are two sightings: early cuts need no more. */
	E.period.early_run = cg_opt.min_repeats <= 2 ? CG_PERIOD_EARLY_RUN : 0;
	switch (cg_period_step(&E.period, &E.run, (size_t)cg_opt.min_ops, cg_piece_cap(), &p,
			       &origin)) {
	case CG_PERIOD_HALVES: {
		/* Two iterations: learn the first, keep the second; each took
		 * about half the time. Where short iterations are grouped, the
		 * first only goes: the groups are learnt. Ops before them that
		 * did not recur are no part of either. Halves found early make
		 * a template of their own at once (cg_period_early). */
		if (2 * p < E.period.min_run && !E.early.on && cg_period_early(p, origin))
			break;
		cg_seg_drop_front(&E.run, origin);
		size_t n = E.run.n, group = cg_period_group(p, cg_piece_cap());
		uint64_t half = E.run_ns / 2, own = E.run_own_ns / 2;
		E.run.n = p;
		E.run_ns = half;
		E.run_own_ns = own;
		struct cg_seg second = { 0 };
		for (size_t i = p; i < n; i++)
			cg_seg_push(&second, &E.run.ops[i], 0, NULL, NULL);
		if (group > p)
			E.run.n = 0;
		cg_run_end(0);
		cg_seg_free(&E.run);
		E.run = second;
		E.run_ns = half;
		E.run_own_ns = own;
		E.period.known = group;
		E.period.misses = 0;
		if (group == p)
			cg_run_end(0);
		break;
	}
	case CG_PERIOD_KNOWN:
		/* A period that stops recurring is looked for again. */
		if (cg_run_end(0))
			E.period.misses = 0;
		else if (++E.period.misses >= 2)
			E.period.known = 0;
		break;
	case CG_PERIOD_MAX:
		E.period.known = 0;
		cg_run_end(0);
		break;
	default:
		break;
	}
}

void cg_engine_op_done(struct cg_op *op, int ok)
{
	cg_lock_take(&E.mu);
	cg_wait_turn();
	if (ok && op->kind == CG_OP_KERNEL && op->u.k.ki)
		cg_launch_seen(op);
	if (op->run_id != E.run_id || !atomic_load(&cg_hot.engine_on)) {
		cg_lock_give(&E.mu);
		return;
	}
	E.last_ns = cg_now_ns();
	E.run_tail_ns = E.last_ns - op->t0;
	E.run_ns += E.run_tail_ns;
	if (!op->shape)
		op->shape = cg_op_shape_hash(op);
	if (cg_unlikely(E.early.on)) {
		if (E.early.waiting && cg_early_shadow(op, ok)) {
			cg_lock_give(&E.mu);
			return;
		}
		cg_early_end();
		cg_early_bury();
	}
	size_t n = E.run.n;
	/* A failed call is the program's to see; cgraft keeps nothing of it. */
	int keep = ok && cg_seg_push(&E.run, op, 0, NULL, NULL) == 0;
	const struct cg_op *r = keep ? &E.run.ops[n] : NULL;
	if (r && cg_hostmem_hit(r)) {
		cg_count_fallback(CG_WHY_HOST_MEMORY);
		keep = 0;
	}
	if (keep && r->kind == CG_OP_RECORD)
		cg_evset_add(E.run_evset, &E.run_nev, r->u.ev.event);
	if (keep)
		cg_named_add(&E.run_named, r);
	if (!keep) {
		E.run.n = n;
		cg_run_end(0);
	} else if (r->flags & CG_F_HOST_WAITS) {
		cg_run_end(1); /* a read-back: the host waits here */
		E.period.known = 0;
	} else if (r->kind == CG_OP_HOST) {
		cg_run_end(0); /* the host may wait for it without calling CUDA */
	} else {
		cg_period_cut();
	}
	/* cgraft's own time after the call is no gap of the program's. */
	if (E.run.n && cg_opt.piece_us)
		E.run_own_ns += cg_now_ns() - E.last_ns;
	cg_lock_give(&E.mu);
}

static int cg_spans_streams(const struct cg_tmpl *t, void *cookie)
{
	(void)cookie;
	return cg_tmpl_spans_streams(t);
}

/* A stream may wait for memory that later work of another writes (held
 * work having gone out first): a graph over streams orders its launch after
 * each one's earlier work, and each one's later work after all of it, which
 * would keep the writer behind the waiter. Such graphs go, and none is built
 * again (cg_graph_build). */
static void cg_memory_waits_locked(void)
{
	atomic_store_explicit(&cg_memory_waits, 1, memory_order_release);
	cg_build_pause();
	struct cg_tmpl *gone = cg_table_take_if(cg_spans_streams, NULL);
	for (const struct cg_tmpl *t = gone; t; t = t->next)
		cg_count_fallback(CG_WHY_MEMORY_WAIT);
	cg_debug("a stream may wait for memory: graphs over two streams or more go, none is built again");
	cg_bury(gone);
	cg_build_go();
}

void cg_engine_boundary(int entry, enum cg_kind kind, enum cg_reason why)
{
	cg_lock_take(&E.mu);
	E.seq++;
	cg_wait_turn();
	if (atomic_load(&cg_hot.engine_on))
		cg_boundary_locked(entry, kind, why);
	else if (kind == CG_K_RESET && cg_engine_remembers())
		cg_forget_reset_locked();
	else if (kind == CG_K_FREE && cg_engine_remembers())
		cg_forget_memory_locked(NULL, SIZE_MAX);
	if (kind == CG_K_MWAIT && !atomic_load(&cg_memory_waits))
		cg_memory_waits_locked();
	cg_lock_give(&E.mu);
}

int cg_engine_memory_waits(void)
{
	return atomic_load_explicit(&cg_memory_waits, memory_order_acquire);
}

/* Copy and memset nodes hold the memory they name as the driver found it
 * when they were made or updated: freed and allocated again at the same
 * address, it is another allocation, and a launch of such a node may be
 * refused, fault, or fail the context (measured on the H200, for pinned,
 * registered and, in UnifiedMemoryPerf, device memory: docs/architecture.md).
 * Kernel nodes hold only bytes. */
struct cg_freed_range {
	const void *p;
	size_t n;
};

static int cg_names_memory(const struct cg_tmpl *t, void *cookie)
{
	const struct cg_freed_range *r = cookie;
	return cg_graph_names_memory(t, r->p, r->n);
}

/* Memory [p, p + n) went away (or some, not said: NULL, SIZE_MAX): graphs
 * whose copies or memsets name it go, whether or not the engine stands
 * aside now. */
static void cg_forget_memory_locked(const void *p, size_t n)
{
	struct cg_freed_range r = { p, n };
	cg_fuse_forget();
	/* The build under way is waited for only where its template names
	 * the memory: another goes on (the lock keeps a new one from starting
	 * but where graphs are destroyed, and then with a template kept). */
	int pause = E.build.current && cg_names_memory(E.build.current, &r);
	if (pause)
		cg_build_pause();
	struct cg_tmpl *gone = cg_table_take_if(cg_names_memory, &r);
	for (const struct cg_tmpl *t = gone; t; t = t->next) {
		cg_stat_add(forgotten_freed, 1);
		if (!t->replays) {
			/* One more than the cuts learning takes: too many for any. */
			uint32_t named[CG_FREED_CUTS + 1];
			int k = 0;
			for (size_t i = 0; p && i < t->n && k <= CG_FREED_CUTS; i++)
				if (cg_op_names_memory(&t->ops[i], p, n))
					named[k++] = (uint32_t)i;
			cg_learn_freed(t->ops, t->n, named, p ? k : CG_FREED_CUTS + 1);
			cg_count_fallback(CG_WHY_FREED_UNLAUNCHED);
		}
		if (cg_unlikely(cg_log_level >= CG_LOG_DEBUG) && p) {
			char what[200] = "an op as a variant holds it";
			for (size_t i = 0; i < t->n; i++)
				if (cg_op_names_memory(&t->ops[i], p, n)) {
					cg_op_describe(what, sizeof what, &t->ops[i]);
					break;
				}
			cg_debug("memory at %p (%zu bytes) freed: a %zu-op graph naming it goes (%s)", p, n, t->n, what);
		}
	}
	cg_bury(gone);
	if (pause)
		cg_build_go();
}

/* What a reset may take away, forgotten whether or not the engine stands
 * aside now (the governor's probes, a capture, a pause): its handles may
 * come back as other kernels, streams or communicators by the time it
 * stands in again. */
/* With the builder paused: the templates gone (taken out of the table) are
 * buried, and what learning kept, the launches seen to succeed and a
 * probation go with them. */
static void cg_forget_templates_locked(struct cg_tmpl *gone)
{
	cg_fuse_forget();
	memset(cg_seen_launch, 0, sizeof cg_seen_launch);
	cg_learn_forget();
	cg_bury(gone);
	cg_early_clear();
}

static void cg_forget_reset_locked(void)
{
	cg_build_pause();
	cg_kinfo_forget_all();
	cg_op_nccl_forget();
	cg_forget_templates_locked(cg_table_take_naming(NULL, NULL, 1));
	cg_build_go();
}

struct cg_kchange {
	const void *k, *f;
	CUcontext ctx;
};

/* Whether t may launch the kernel that changed: a node of its CUkernel
 * (through the runtime, or as the function handle the driver's launches
 * take it cast to), of its function, or of a function in another context
 * (which cannot be told apart from its there) or of a kernel not known. */
static int cg_tmpl_launches(const struct cg_tmpl *t, void *cookie)
{
	const struct cg_kchange *c = cookie;
	for (size_t i = 0; i < t->n; i++) {
		const struct cg_op *op = &t->ops[i];
		if (op->kind != CG_OP_KERNEL)
			continue;
		const struct cg_kinfo *ki = op->u.k.ki;
		if (!ki || ki->handle == c->k ||
		    (ki->hkind == CG_KH_FUNCTION && (ki->handle == c->f || op->ctx != c->ctx)))
			return 1;
	}
	return 0;
}

/* As a reset does, but of the templates only those that may launch the
 * kernel go, and the one on probation (its probation ends). */
static void cg_forget_kernel_locked(const struct cg_kchange *c)
{
	cg_build_pause();
	if (E.early.on)
		cg_bury(cg_table_take_if(cg_early_named, NULL));
	cg_forget_templates_locked(cg_table_take_if(cg_tmpl_launches, (void *)c));
	cg_build_go();
}

void cg_engine_kernel_changed(int entry, const void *k, const void *f, CUcontext ctx)
{
	struct cg_kchange c = { k, f, ctx };
	cg_lock_take(&E.mu);
	E.seq++;
	cg_wait_turn();
	if (atomic_load(&cg_hot.engine_on)) {
		cg_boundary_locked(entry, CG_K_BND, CG_WHY_KERNEL_ATTR);
		cg_forget_kernel_locked(&c);
	} else if (cg_engine_remembers()) {
		cg_forget_kernel_locked(&c);
	}
	cg_lock_give(&E.mu);
}

static void cg_boundary_locked(int entry, enum cg_kind kind, enum cg_reason why)
{
	cg_boundary_before(entry, kind, why, NULL);
}

/* A boundary before the host waits for stream s (NULL: before anything). */
static void cg_boundary_before(int entry, enum cg_kind kind, enum cg_reason why, CUstream s)
{
	cg_claim(NULL);
	E.fuse.from = NULL;
	const char *name = entry >= 0 && entry < CG_E_COUNT ? cg_entries[entry].name : "call";
	if (kind == CG_K_BND || kind == CG_K_FREE || kind == CG_K_MWAIT) {
		cg_count_fallback(why);
		if (entry >= 0 && entry < CG_E_COUNT)
			cg_stat_add(boundaries[entry], 1);
		cg_debug("%s: a boundary (%s), held work goes out first", name, cg_reasons[why].name);
	} else if (E.mode == CG_DEFER || E.run.n) {
		cg_debug("%s: %s", name, kind == CG_K_SYNC ? "the host may look at device work here" : "a reset");
	}
	/* Another thread's call, right after it took the held work over: no
	 * divergence of what the held work matched. */
	cg_resolve(0, E.held.n != E.handed_at);
	/* The call comes after what the resolve launched: the next launch of
	 * that graph is no longer right behind its last (cg_fork). */
	if (kind != CG_K_SYNC)
		E.epoch++;
	cg_early_end();
	cg_early_bury();
	cg_run_end(kind == CG_K_SYNC);
	E.expect = NULL;
	E.period.known = 0;
	if (kind == CG_K_RESET) {
		cg_count_fallback(CG_WHY_RESET);
		cg_forget_reset_locked();
	} else if (kind == CG_K_FREE) {
		cg_forget_memory_locked(NULL, SIZE_MAX);
	}
	/* Last: the held work's launch above may owe the waits. */
	if (s)
		cg_graph_settle_for(s);
	else
		cg_graph_settle();
}

int cg_engine_stream_sync(int entry, CUstream s)
{
	cg_lock_take(&E.mu);
	cg_wait_turn();
	/* Work that came since passed eagerly or was launched (epoch), or is
	 * held. */
	int idle = atomic_load(&cg_hot.engine_on) && E.idle.stream == s && E.idle.thread == &cg_self &&
		   E.idle.epoch == E.epoch && E.mode == CG_RECORD;
	/* The legacy and per-thread streams are the current context's: after
	 * a switch of device or context, another stream by the same name. */
	CUcontext cur;
	if (idle && cg_stream_implicit(s))
		idle = CG_BK(ctx_get_current, &cur) == CUDA_SUCCESS && cur == E.idle.ctx;
	E.seq++;
	E.fuse.from = NULL;
	if (idle)
		cg_stat_add(syncs_answered, 1);
	else if (atomic_load(&cg_hot.engine_on))
		cg_boundary_before(entry, CG_K_SYNC, CG_WHY_UNSUPPORTED_API, s);
	cg_lock_give(&E.mu);
	return idle;
}

/* What is kept may be replayed again: not after exit, nor in a forked child,
 * nor with cgraft disabled from the start. */
static int cg_engine_remembers(void)
{
	return cg_opt.enable && !atomic_load(&cg_dead);
}

void cg_engine_forget_handle(int entry, CUstream s, CUevent e)
{
	if (!cg_engine_remembers())
		return;
	cg_engine_boundary(entry, CG_K_SYNC, CG_WHY_UNSUPPORTED_API);
	cg_lock_take(&E.mu);
	cg_wait_turn();
	cg_build_pause();
	cg_fuse_forget();
	cg_bury(cg_table_take_naming(s, e, 0));
	cg_build_go();
	cg_lock_give(&E.mu);
}

void cg_engine_memory_freed(const void *p, size_t n, int host)
{
	if (!cg_engine_remembers())
		return;
	/* Not noted: device memory's range as the driver tells it, asked
	 * before the free; else some memory, not said. */
	if (!n && (host || cg_backend_ready() || cg_mem_range(p, &p, &n)))
		p = NULL, n = SIZE_MAX;
	cg_lock_take(&E.mu);
	cg_wait_turn();
	cg_forget_memory_locked(p, n);
	cg_lock_give(&E.mu);
}

int cg_engine_free_async(const void *p, size_t n, CUstream s)
{
	CUcontext ctx = NULL;
	if (!cg_hot.bk->mem_free_async || CG_BK(ctx_get_current, &ctx) != CUDA_SUCCESS || !ctx)
		return -1;
	cg_lock_take(&E.mu);
	E.seq++;
	cg_wait_turn();
	cg_graph_settle(); /* nothing held, the free goes now: after them */
	int rc = -1;
	/* On the legacy stream, a free orders the work of every blocking
	 * stream around it: only where the work before it, in the run and
	 * held, is all on the legacy stream too does it order nothing the
	 * graph's order (cg_dag_build) would not. */
	int legacy_ok = s != CU_STREAM_LEGACY ||
			(!E.run_named.other && (E.mode != CG_DEFER || (E.ncand && E.held.n <= E.cand[0]->legacy_n)));
	int named = cg_named_hits(&E.run_named, p, n) || cg_named_hits(&E.held_named, p, n);
	if (cg_unlikely(cg_log_level >= CG_LOG_DEBUG))
		cg_debug("free in stream order of %p (%zu bytes)%s%s", p, n, legacy_ok ? "" : ": after another stream's work",
			 named ? ": a copy or memset of the segment names it" : "");
	if (atomic_load(&cg_hot.engine_on) && E.owner == &cg_self && E.ctx == ctx && !E.early.on && legacy_ok &&
	    !named && !E.counts_seen) {
		if (E.mode != CG_DEFER) {
			/* Nothing held: it goes now, and the run goes on. */
			cg_forget_memory_locked(p, n);
			E.epoch++;
			rc = 0;
		} else if (E.nfree < CG_FREES && n <= CG_FREES_BYTES - E.free_bytes) {
			E.frees[E.nfree++] = (struct cg_free){ p, n, s, ctx };
			E.free_bytes += n;
			cg_stat_add(frees_held, 1);
			rc = 1;
		}
	}
	cg_lock_give(&E.mu);
	return rc;
}

void cg_engine_frees_seen(int entry)
{
	cg_lock_take(&E.mu);
	E.seq++;
	cg_wait_turn();
	if (!E.counts_seen)
		cg_debug("a pool's counts are read: frees in stream order end segments from now on");
	E.counts_seen = 1;
	if (E.nfree && atomic_load(&cg_hot.engine_on))
		cg_boundary_locked(entry, CG_K_SYNC, CG_WHY_UNSUPPORTED_API);
	cg_lock_give(&E.mu);
}

int cg_engine_frees_held(void)
{
	return __atomic_load_n(&E.nfree, __ATOMIC_RELAXED) != 0;
}

int cg_engine_alloc_failed(int entry)
{
	cg_lock_take(&E.mu);
	E.seq++;
	cg_wait_turn();
	int held = E.nfree != 0;
	if (held) {
		cg_debug("%s failed for want of memory while %d frees are held back: they go, and the call is made again",
			 cg_entries[entry].name, E.nfree);
		cg_stat_add(allocs_again, 1);
		cg_boundary_locked(entry, CG_K_SYNC, CG_WHY_UNSUPPORTED_API);
	}
	cg_lock_give(&E.mu);
	return held;
}

static int cg_names_comm(const struct cg_tmpl *t, void *comm)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->ops[i].kind == CG_OP_NCCL && t->ops[i].u.nc.comm == comm)
			return 1;
	return 0;
}

void cg_engine_forget_comm(int entry, void *comm)
{
	cg_engine_boundary(entry, CG_K_BND, CG_WHY_NCCL);
	cg_lock_take(&E.mu);
	cg_wait_turn();
	struct cg_tmpl *gone = cg_table_take_if(cg_names_comm, comm);
	cg_fuse_forget();
	cg_bury(gone);
	cg_lock_give(&E.mu);
	/* A replayed graph's captured call may still be on its way: the
	 * communicator's next call, from another stream, comes after it. */
	if (gone)
		CG_BK(ctx_sync);
}

struct cg_range_arg {
	const void *p;
	size_t n;
};

static int cg_reaches_range(const struct cg_tmpl *t, void *cookie)
{
	const struct cg_range_arg *r = cookie;
	return cg_graph_reaches(t, r->p, r->n);
}

void cg_engine_host_memory(const void *p, size_t n)
{
	if (!cg_engine_remembers())
		return;
	cg_lock_take(&E.mu);
	cg_wait_turn();
	E.seq++;
	if (E.mode == CG_DEFER)
		cg_resolve(0, 0);
	/* The run's kernels were kept before their addresses were host memory. */
	E.run.n = 0;
	cg_run_end(0);
	E.expect = NULL;
	E.period.known = 0;
	struct cg_range_arg r = { p, n };
	cg_bury(cg_table_take_if(cg_reaches_range, &r));
	cg_lock_give(&E.mu);
}

/* Held work comes after every event recorded before it: a query of such an
 * event, or a wait on it, sees what it would see with the work out. One the
 * run recorded is where the host looks at that run's work: its end. */
int cg_engine_event_independent(CUevent e)
{
	cg_lock_take(&E.mu);
	int indep = !(E.mode == CG_DEFER && cg_evset_has(E.evset, E.nev, e)) &&
		    !cg_evset_has(E.run_evset, E.run_nev, e);
	cg_lock_give(&E.mu);
	return indep;
}

/* ---- the hold timer --------------------------------------------------------------- */
/* The timer found held work with no call since t0: it goes out eagerly.
 * Where the timer found the host away at the same op of the longest
 * candidate's match as in its last, the host's gap ends the run (a pause
 * that comes now and then, such as a collector's, does not), and the
 * candidates longer than one complete there go: they span the gap, and
 * each of their matches would be held through it. */
static void cg_timer_send_out(uint64_t t0)
{
	cg_count_fallback(CG_WHY_HELD_TOO_LONG);
	struct cg_tmpl *c = cg_longest_cand();
	int recurs = c && c->gaps && c->gap_at == E.held.n;
	if (c) {
		c->gap_at = (uint32_t)E.held.n;
		c->gaps = 1;
	}
	struct cg_ids over = { 0 };
	if (recurs && E.complete && E.complete->n == E.held.n)
		cg_spanning(&over, 0);
	cg_resolve(1, 0);
	if (recurs)
		E.last_ns = t0; /* no call since */
	cg_bury_ids(&over);
}

/* Held work is never left waiting for a call that may not come: the host may
 * wait for the device without calling CUDA (spinning on memory a kernel
 * writes, or on a host function). After CGRAFT_MAX_HOLD_US without an entry
 * into the engine, the timer submits what is held. */
static void *cg_timer_main(void *arg)
{
	(void)arg;
	cg_lock_take(&E.mu);
	uint64_t idle_since = cg_now_ns();
	for (;;) {
		if (E.timer == 1) {
			cg_cond_wait(&E.timer_cv, &E.mu, 0);
			idle_since = cg_now_ns();
			continue;
		}
		/* The fast path only adds held ops: it leaves seq alone. */
		uint64_t seq = E.seq, nheld = E.held.n, hold = (uint64_t)cg_opt.max_hold_us * 1000, t0 = cg_now_ns();
		/* Wakes at the hold's end (a wake-up before it is a deferral
		 * starting, which changes nothing here). */
		while (cg_now_ns() - t0 < hold)
			cg_cond_wait(&E.timer_cv, &E.mu, hold - (cg_now_ns() - t0));
		if (E.mode == CG_DEFER && E.held.n && E.held.n == nheld && E.seq == seq && !E.submitting) {
			cg_timer_send_out(t0);
			idle_since = cg_now_ns();
		} else if (E.mode != CG_DEFER && cg_now_ns() - idle_since > 100 * hold) {
			E.timer = 1; /* nothing held for a while: sleep until woken */
		} else if (E.mode == CG_DEFER) {
			idle_since = cg_now_ns();
		}
	}
	return NULL;
}

/* Called as a deferral starts: a timer that sleeps is woken, one that does
 * not exist is started. */
static void cg_timer_wake(void)
{
	if (cg_likely(E.timer == 2))
		return;
	if (E.timer == 0) {
		if (cg_thread_start(cg_timer_main)) {
			cg_log_capped(CG_LOG_WARN, CG_FAULT_CGRAFT, "cannot start the hold timer: nothing is held");
			return;
		}
	}
	E.timer = 2;
	cg_cond_broadcast(&E.timer_cv);
}

/* ---- standing aside ----------------------------------------------------------------- */
/* Before the capture begins, in one turn: held work goes out and nothing
 * more is held, so that no other thread's call is held while the capture
 * runs, with its next calls passing through past it. */
void cg_capture_begin(int entry)
{
	cg_lock_take(&E.mu);
	E.seq++;
	cg_wait_turn();
	if (atomic_load(&cg_hot.engine_on))
		cg_boundary_locked(entry, CG_K_BND, CG_WHY_CAPTURE);
	if (atomic_fetch_add(&cg_capturing, 1) == 0)
		cg_stand_aside_changed();
	/* No build runs while it does (the builder looks at cg_capturing). */
	cg_build_pause();
	cg_build_go();
	cg_lock_give(&E.mu);
}

void cg_capture_end(void)
{
	cg_lock_take(&E.mu);
	cg_wait_turn();
	if (atomic_load(&cg_capturing) > 0 && atomic_fetch_sub(&cg_capturing, 1) == 1) {
		cg_stand_aside_changed();
		cg_bury(NULL); /* graphs forgotten while it ran */
		cg_cond_broadcast(&E.build.cv);
	}
	cg_lock_give(&E.mu);
}

CG_EXPORT int cgraft_set_enabled(int on)
{
	cg_init();
	if (!cg_opt.enable || atomic_load(&cg_dead))
		return -1;
	cg_lock_take(&E.mu);
	cg_wait_turn();
	int was = !atomic_load(&cg_paused);
	if (was && !on) {
		/* What is held runs now, as if the switch were a sync. */
		cg_resolve(0, 0);
		cg_run_end(0);
		E.expect = NULL;
		E.period.known = 0;
	}
	atomic_store(&cg_paused, !on);
	if (was != !!on)
		cg_stand_aside_changed();
	cg_lock_give(&E.mu);
	return was;
}

int cg_engine_governable(void)
{
	if (atomic_load(&cg_nccl_held))
		return -1;
	return cg_opt.enable && !atomic_load(&cg_dead) && !atomic_load(&cg_capturing) && !atomic_load(&cg_paused);
}

void cg_engine_govern(int aside)
{
	cg_lock_take(&E.mu);
	cg_wait_turn();
	if (aside && !atomic_load(&cg_governed)) {
		/* Held work is the owner thread's: it goes out eagerly, in order.
		 * The run is dropped, not learnt: graphs are built by the threads
		 * that run the program's work, in their context. */
		cg_resolve(1, 0);
		E.run.n = 0;
		cg_run_end(0);
		E.expect = NULL;
		E.period.known = 0;
	}
	atomic_store(&cg_governed, aside != 0);
	cg_stand_aside_changed();
	cg_lock_give(&E.mu);
}

void cg_engine_exit(void)
{
	cg_lock_take(&E.mu);
	cg_wait_turn();
	if (E.mode == CG_DEFER)
		cg_resolve(0, 0);
	/* What libraries tear down after this (modules unregistered, libraries
	 * unloaded) passes through: nothing is held or learnt any more, and
	 * no build is under way. */
	atomic_store(&cg_dead, 1);
	cg_stand_aside_changed();
	cg_build_pause();
	cg_lock_give(&E.mu);
}

/* The child of fork() inherits the parent's held work, its lock in whatever
 * state, and no timer or builder: it passes everything through and submits
 * nothing. */
void cg_engine_forked_child(void)
{
	atomic_store(&E.mu.state, 0);
	atomic_store(&E.turn_cv.waiters, 0);
	atomic_store(&E.timer_cv.waiters, 0);
	E.submitting = 0;
	E.timer = 0;
	atomic_store(&E.build.cv.waiters, 0);
	E.build.thread = 0;
	E.build.head = E.build.tail = E.build.current = NULL;
	E.mode = CG_RECORD;
	E.held.n = 0;
	E.run.n = 0;
	E.nfree = 0;
	cg_graph_forget_owed();
	atomic_store(&cg_dead, 1);
	atomic_store(&cg_hot.engine_on, 0);
}
