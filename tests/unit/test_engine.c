/* Unit tests of the engine through its entry points (src/engine.h), acting
 * as the shim does: ops built by the normalisers, an eager op's real call
 * logged (fk_app) then reported with cg_engine_op_done(), a deferred one
 * left alone; what cgraft itself submits is seen in the fake backend's log.
 * The engine is one per process: each test starts from a reset boundary,
 * which forgets every template, layout and learnt run. */
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "log.h"
#include "options.h"
#include "special.h"
#include "stats.h"
#include "tmpl.h"
#include "unit.h"

#define DEV_LO 0x10000000u
#define BUF(n) ((uint64_t)DEV_LO + 0x10000u * (uint64_t)(n))
#define K(n) ((CUfunction)(uintptr_t)(0x100000u + 0x1000u * (unsigned)(n)))
#define NKERNELS 8
#define HOLD_US 500000 /* held work is never timed out in tests but the timer's */

static const uint32_t sz2[] = { 8, 8 }; /* a pointer and a scalar */

static int group_setup(void **state)
{
	(void)state;
	fk_install();
	fk_device_range(DEV_LO, 1u << 28);
	for (int k = 1; k <= NKERNELS; k++)
		fk_kernel(K(k), 2, sz2, NULL);
	cg_init();
	cg_log_level = CG_LOG_ERROR;
	atomic_store(&cg_hot.engine_on, 1);
	return 0;
}

static int setup(void **state)
{
	(void)state;
	cg_opt.enable = 1;
	cg_opt.min_repeats = 2;
	cg_opt.min_ops = 2;
	cg_opt.warmup = 0;
	cg_opt.window_lo = 0;
	cg_opt.window_hi = LONG_MAX;
	cg_opt.max_graphs = 64;
	cg_opt.max_segment_ops = 4096;
	cg_opt.piece_us = 0;
	cg_opt.max_variants = 4;
	cg_opt.backoff_slow = 0;
	cg_opt.max_hold_us = HOLD_US;
	atomic_store(&cg_hot.engine_on, 1);
	/* Whatever a test left held goes out, and everything learnt goes. */
	cg_engine_boundary(-1, CG_K_RESET, CG_WHY_RESET);
	fk_clear();
	return 0;
}

/* ---- acting as the shim ------------------------------------------------------ */
struct launch {
	struct cg_op op;
	void *argv[2];
	uint64_t val[2];
};

/* A cuLaunchKernel of K(k) with arguments (a0, a1), normalised. */
static struct cg_op *launch(struct launch *l, int k, CUstream s, unsigned block, uint64_t a0, uint64_t a1)
{
	memset(l, 0, sizeof *l);
	l->val[0] = a0;
	l->val[1] = a1;
	l->argv[0] = &l->val[0];
	l->argv[1] = &l->val[1];
	enum cg_reason why;
	assert_int_equal(cg_op_from_cuLaunchKernel(&l->op, 0, &why, K(k), 1, 1, 1, block, 1, 1, 0, s, l->argv, NULL),
			 0);
	l->op.entry = CG_E_cuLaunchKernel;
	assert_int_equal(cg_op_finish(&l->op, &why), 0);
	return &l->op;
}

/* The same with grid (grid,1,1) and block 1. */
static struct cg_op *launch_grid(struct launch *l, int k, CUstream s, unsigned grid, uint64_t a0, uint64_t a1)
{
	launch(l, k, s, 1, a0, a1);
	enum cg_reason why;
	assert_int_equal(cg_op_from_cuLaunchKernel(&l->op, 0, &why, K(k), grid, 1, 1, 1, 1, 1, 0, s, l->argv, NULL),
			 0);
	l->op.entry = CG_E_cuLaunchKernel;
	assert_int_equal(cg_op_finish(&l->op, &why), 0);
	return &l->op;
}

static struct cg_op *record(struct cg_op *op, CUstream s, CUevent e)
{
	enum cg_reason why;
	assert_int_equal(cg_op_from_cuEventRecord(op, 0, &why, e, s), 0);
	op->entry = CG_E_cuEventRecord;
	assert_int_equal(cg_op_finish(op, &why), 0);
	return op;
}

/* The call as the shim makes it: returns what the engine answered. */
static int call(struct cg_op *op, int tag)
{
	int r = cg_engine_op(op);
	if (r != CG_DEFERRED)
		fk_app(op, tag);
	if (r == CG_EAGER)
		cg_engine_op_done(op, 1);
	return r;
}

static void sync_point(void)
{
	cg_engine_boundary(CG_E_cudaStreamSynchronize, CG_K_SYNC, CG_WHY_UNSUPPORTED_API);
}

/* One iteration of n kernels K(1..n) (or kernels[i]) with first arguments
 * a[i], second b[i] (0 without b), block 1 (or blocks[i]), then a sync. */
struct iter {
	int n;
	const int *kernels;
	const unsigned *blocks, *grids;
	const uint64_t *a, *b;
	int res[64];
};

static void run_iter(struct iter *it, CUstream s)
{
	for (int i = 0; i < it->n; i++) {
		struct launch l;
		int k = it->kernels ? it->kernels[i] : i + 1;
		if (it->grids)
			launch_grid(&l, k, s, it->grids[i], it->a[i], it->b ? it->b[i] : 0);
		else
			launch(&l, k, s, it->blocks ? it->blocks[i] : 1, it->a[i], it->b ? it->b[i] : 0);
		it->res[i] = call(&l.op, i);
	}
	sync_point();
}

static int count_res(const struct iter *it, int what)
{
	int n = 0;
	for (int i = 0; i < it->n; i++)
		n += it->res[i] == what;
	return n;
}

static uint64_t param_u64(const struct fk_call *c, size_t off)
{
	uint64_t v;
	memcpy(&v, c->params + off, 8);
	return v;
}

#define STAT(f) atomic_load(&cg_stats.f)

/* ---- (g) the hold timer (first: the timer starts with this test's hold) -------- */
/* Held work with no further call is submitted after about max_hold_us, by
 * the timer, eagerly. */
static void test_hold_timer(void **state)
{
	(void)state;
	CUstream s = UT_STREAM(9);
	const uint64_t a[] = { BUF(1), BUF(2), BUF(3) };
	struct iter it = { .n = 3, .a = a };
	run_iter(&it, s);
	run_iter(&it, s);
	const long hold_us = 20000;
	cg_opt.max_hold_us = hold_us;
	unsigned long long why0 = STAT(fallbacks[CG_WHY_HELD_TOO_LONG]);
	struct launch l;
	size_t m = fk_mark();
	assert_int_equal(call(launch(&l, 1, s, 1, a[0], 0), 0), CG_DEFERRED);
	uint64_t t0 = cg_now_ns();
	long at = -1;
	while ((at = fk_nth(FK_LAUNCH_KERNEL, m, 0)) < 0 && cg_now_ns() - t0 < 3000000000ull)
		usleep(500);
	uint64_t waited = cg_now_ns() - t0;
	assert_true(at >= 0);
	assert_true(waited >= (uint64_t)hold_us * 800);  /* not before the hold, give or take the clock */
	assert_true(waited < 1500000000ull);             /* and not much later */
	struct fk_call c = fk_at((size_t)at);
	assert_ptr_equal(c.kernel, K(1));
	assert_int_equal(param_u64(&c, 0), a[0]);
	assert_false(pthread_equal(c.thread, pthread_self())); /* the timer's */
	assert_int_equal(STAT(fallbacks[CG_WHY_HELD_TOO_LONG]), why0 + 1);
	assert_int_equal(fk_count(FK_GRAPH_LAUNCH, m), 0);
	/* The iteration goes on eagerly: nothing is held twice. */
	cg_opt.max_hold_us = HOLD_US;
	assert_int_equal(call(launch(&l, 2, s, 1, a[1], 0), 1), CG_EAGER);
	assert_int_equal(call(launch(&l, 3, s, 1, a[2], 0), 2), CG_EAGER);
	sync_point();
	assert_int_equal(fk_count(FK_LAUNCH_KERNEL, m), 1);
}

/* ---- (a) recording, then replay ---------------------------------------------------- */
static void test_record_then_replay(void **state)
{
	(void)state;
	CUstream s = UT_STREAM(1);
	const uint64_t a[] = { BUF(1), BUF(2), BUF(3) };
	struct iter it = { .n = 3, .a = a };
	size_t m = fk_mark();
	run_iter(&it, s);
	assert_int_equal(count_res(&it, CG_EAGER), 3);
	assert_int_equal(fk_count(FK_APP, m), 3);
	assert_int_equal(fk_count(FK_GRAPH_CREATE, m), 0);

	/* The second time the run is learnt: one graph of three kernel nodes in
	 * stream order, instantiated, not launched. */
	m = fk_mark();
	run_iter(&it, s);
	assert_int_equal(count_res(&it, CG_EAGER), 3);
	assert_int_equal(fk_count(FK_APP, m), 3);
	assert_int_equal(fk_count(FK_GRAPH_CREATE, m), 1);
	assert_int_equal(fk_count(FK_GRAPH_ADD_KERNEL, m), 3);
	assert_int_equal(fk_count(FK_GRAPH_INSTANTIATE, m), 1);
	assert_int_equal(fk_count(FK_GRAPH_LAUNCH, m), 0);
	struct fk_call n0 = fk_get(FK_GRAPH_ADD_KERNEL, m, 0), n1 = fk_get(FK_GRAPH_ADD_KERNEL, m, 1),
		       n2 = fk_get(FK_GRAPH_ADD_KERNEL, m, 2);
	assert_int_equal(n0.ndeps, 0);
	assert_int_equal(n1.ndeps, 1);
	assert_ptr_equal(n1.deps[0], n0.node);
	assert_int_equal(n2.ndeps, 1);
	assert_ptr_equal(n2.deps[0], n1.node);
	assert_ptr_equal(n0.kernel, K(1));
	assert_ptr_equal(n2.kernel, K(3));
	assert_int_equal(param_u64(&n1, 0), a[1]);
	CUgraphExec exec = fk_get(FK_GRAPH_INSTANTIATE, m, 0).exec;

	/* The third time every op is held, and the last launches the graph. */
	m = fk_mark();
	struct launch l;
	assert_int_equal(call(launch(&l, 1, s, 1, a[0], 0), 0), CG_DEFERRED);
	assert_int_equal(call(launch(&l, 2, s, 1, a[1], 0), 1), CG_DEFERRED);
	assert_int_equal(fk_count(FK_GRAPH_LAUNCH, m), 0);
	assert_int_equal(call(launch(&l, 3, s, 1, a[2], 0), 2), CG_DEFERRED);
	assert_int_equal(fk_count(FK_GRAPH_LAUNCH, m), 1);
	struct fk_call gl = fk_get(FK_GRAPH_LAUNCH, m, 0);
	assert_ptr_equal(gl.exec, exec);
	assert_ptr_equal(gl.stream, s);
	sync_point();
	assert_int_equal(fk_count(FK_APP, m), 0);
	assert_int_equal(fk_count(FK_LAUNCH_KERNEL, m), 0);
	assert_int_equal(fk_count(FK_EXEC_SET_KERNEL, m), 0);

	/* And so on (past the timed replays, through the engine's fast path). */
	unsigned long long replayed = STAT(ops_replayed);
	for (int i = 0; i < 40; i++) {
		m = fk_mark();
		run_iter(&it, s);
		assert_int_equal(count_res(&it, CG_DEFERRED), 3);
		assert_int_equal(fk_count(FK_GRAPH_LAUNCH, m), 1);
		assert_ptr_equal(fk_get(FK_GRAPH_LAUNCH, m, 0).exec, exec);
		assert_int_equal(fk_count(FK_APP, m), 0);
		assert_int_equal(fk_count(FK_LAUNCH_KERNEL, m), 0);
		assert_int_equal(fk_count(FK_EXEC_SET_KERNEL, m), 0);
		assert_int_equal(fk_count(FK_GRAPH_INSTANTIATE, m), 0);
	}
	assert_int_equal(STAT(ops_replayed), replayed + 40 * 3);
}

/* ---- (b) divergence ------------------------------------------------------------------ */
/* An op that differs from the template: the held ops before it go out
 * eagerly, in order, before the call returns; then it runs eagerly. */
static void test_divergence(void **state)
{
	(void)state;
	CUstream s = UT_STREAM(2);
	const uint64_t a[] = { BUF(1), BUF(2), BUF(3), BUF(4) };
	struct iter it = { .n = 4, .a = a };
	run_iter(&it, s);
	run_iter(&it, s);
	unsigned long long div0 = STAT(divergences);

	/* The second op is another kernel. */
	size_t m = fk_mark();
	struct launch l;
	assert_int_equal(call(launch(&l, 1, s, 1, a[0], 0), 0), CG_DEFERRED);
	assert_int_equal(fk_count(FK_LAUNCH_KERNEL, m), 0);
	assert_int_equal(call(launch(&l, 5, s, 1, a[1], 0), 1), CG_EAGER);
	assert_int_equal(call(launch(&l, 3, s, 1, a[2], 0), 2), CG_EAGER);
	assert_int_equal(call(launch(&l, 4, s, 1, a[3], 0), 3), CG_EAGER);
	sync_point();
	assert_int_equal(fk_count(FK_LAUNCH_KERNEL, m), 1);
	struct fk_call held = fk_get(FK_LAUNCH_KERNEL, m, 0);
	assert_ptr_equal(held.kernel, K(1));
	assert_ptr_equal(held.stream, s);
	assert_int_equal(param_u64(&held, 0), a[0]);
	assert_true(fk_nth(FK_LAUNCH_KERNEL, m, 0) < fk_nth(FK_APP, m, 0)); /* before the diverging op */
	assert_int_equal(fk_get(FK_APP, m, 0).tag, 1);
	assert_int_equal(fk_count(FK_GRAPH_LAUNCH, m), 0);
	assert_int_equal(STAT(divergences), div0 + 1);

	/* Well replayed (held ops left implicit on the engine's fast path),
	 * then the third op with another block: both held ops go out, with the
	 * arguments the program gave. */
	for (int i = 0; i < 20; i++) {
		m = fk_mark();
		run_iter(&it, s);
		assert_int_equal(fk_count(FK_GRAPH_LAUNCH, m), 1);
	}
	m = fk_mark();
	assert_int_equal(call(launch(&l, 1, s, 1, a[0], 0), 0), CG_DEFERRED);
	assert_int_equal(call(launch(&l, 2, s, 1, a[1], 0), 1), CG_DEFERRED);
	assert_int_equal(call(launch(&l, 3, s, 7, a[2], 0), 2), CG_EAGER);
	assert_int_equal(fk_count(FK_LAUNCH_KERNEL, m), 2);
	struct fk_call h0 = fk_get(FK_LAUNCH_KERNEL, m, 0), h1 = fk_get(FK_LAUNCH_KERNEL, m, 1);
	assert_ptr_equal(h0.kernel, K(1));
	assert_ptr_equal(h1.kernel, K(2));
	assert_int_equal(param_u64(&h0, 0), a[0]);
	assert_int_equal(param_u64(&h1, 0), a[1]);
	assert_true(fk_nth(FK_LAUNCH_KERNEL, m, 1) < fk_nth(FK_APP, m, 0));
	assert_int_equal(call(launch(&l, 4, s, 1, a[3], 0), 3), CG_EAGER);
	sync_point();
	assert_int_equal(fk_count(FK_GRAPH_LAUNCH, m), 0);

	/* The other kernel again, now seen to launch (it ran eagerly above):
	 * held, and its node given it from the host (a value, its grid's
	 * kind); the third with block 7 too. */
	m = fk_mark();
	for (int i = 0; i < 4; i++)
		assert_int_equal(call(launch(&l, i == 1 ? 5 : i + 1, s, i == 2 ? 7 : 1, a[i], 0), i), CG_DEFERRED);
	sync_point();
	assert_int_equal(fk_count(FK_GRAPH_LAUNCH, m), 1);
	assert_int_equal(fk_count(FK_LAUNCH_KERNEL, m), 0);
	assert_int_equal(fk_count(FK_EXEC_SET_KERNEL, m), 2);
	assert_ptr_equal(fk_get(FK_EXEC_SET_KERNEL, m, 0).kernel, K(5));
	assert_ptr_equal(fk_get(FK_EXEC_SET_KERNEL, m, 1).kernel, K(3));
	assert_int_equal(STAT(node_updates_host[CG_OP_KERNEL]) > 0, 1);
	assert_true(STAT(kernel_swaps) >= 2);
}

/* ---- (c) variants and node updates ------------------------------------------------------ */
/* An argument alternating between two buffers: two variants, launched in
 * turn, with no node updates once both exist. */
static void test_variants_alternate(void **state)
{
	(void)state;
	CUstream s = UT_STREAM(3);
	uint64_t a[] = { BUF(1), BUF(9), BUF(10) };
	struct iter it = { .n = 3, .a = a };
	unsigned long long var0 = STAT(variants);
	size_t m0 = fk_mark();
	CUgraphExec last[2] = { NULL, NULL };
	for (int i = 0; i < 30; i++) {
		a[0] = i % 2 ? BUF(2) : BUF(1);
		size_t m = fk_mark();
		run_iter(&it, s);
		if (i < 2)
			continue;
		assert_int_equal(fk_count(FK_GRAPH_LAUNCH, m), 1);
		assert_int_equal(fk_count(FK_APP, m), 0);
		CUgraphExec e = fk_get(FK_GRAPH_LAUNCH, m, 0).exec;
		if (i >= 20) {
			/* Steady state: no updates, no new variants, one exec per
			 * buffer, in turn. */
			assert_int_equal(fk_count(FK_EXEC_SET_KERNEL, m), 0);
			assert_int_equal(fk_count(FK_GRAPH_INSTANTIATE, m), 0);
			assert_ptr_not_equal(e, last[(i + 1) % 2]);
			if (i >= 22)
				assert_ptr_equal(e, last[i % 2]);
		}
		last[i % 2] = e;
	}
	assert_int_equal(fk_count(FK_GRAPH_INSTANTIATE, m0), 2);
	assert_int_equal(STAT(variants), var0 + 1);
}

/* A scalar that changes every iteration: one variant, its node updated at
 * every launch. */
static void test_variants_counter(void **state)
{
	(void)state;
	CUstream s = UT_STREAM(4);
	const uint64_t a[] = { BUF(1), BUF(2), BUF(3) };
	uint64_t b[] = { 0, 5, 6 };
	struct iter it = { .n = 3, .a = a, .b = b };
	size_t m0 = fk_mark();
	CUgraphNode node0 = NULL;
	for (uint64_t i = 0; i < 30; i++) {
		b[0] = 1000 + i;
		size_t m = fk_mark();
		run_iter(&it, s);
		if (i == 1)
			node0 = fk_get(FK_GRAPH_ADD_KERNEL, m, 0).node;
		if (i < 2)
			continue;
		assert_int_equal(fk_count(FK_GRAPH_LAUNCH, m), 1);
		assert_int_equal(fk_count(FK_EXEC_SET_KERNEL, m), 1);
		struct fk_call u = fk_get(FK_EXEC_SET_KERNEL, m, 0);
		assert_ptr_equal(u.node, node0);
		assert_ptr_equal(u.kernel, K(1));
		assert_int_equal(param_u64(&u, 0), a[0]);
		assert_int_equal(param_u64(&u, 8), 1000 + i);
		assert_true(fk_nth(FK_EXEC_SET_KERNEL, m, 0) < fk_nth(FK_GRAPH_LAUNCH, m, 0));
	}
	assert_int_equal(fk_count(FK_GRAPH_INSTANTIATE, m0), 1);
}

/* Both at once: the buffer picks the variant, the counter (a node that
 * changes at every launch) is updated on whichever is launched. */
static void test_variants_with_counter(void **state)
{
	(void)state;
	CUstream s = UT_STREAM(16);
	uint64_t a[] = { BUF(1), BUF(9), BUF(10) };
	uint64_t b[] = { 0, 0, 7 };
	struct iter it = { .n = 3, .a = a, .b = b };
	size_t m0 = fk_mark();
	CUgraphNode node1 = NULL;
	CUgraphExec last[2] = { NULL, NULL };
	for (uint64_t i = 0; i < 30; i++) {
		a[0] = i % 2 ? BUF(2) : BUF(1);
		b[1] = 500 + i;
		size_t m = fk_mark();
		run_iter(&it, s);
		if (i == 1)
			node1 = fk_get(FK_GRAPH_ADD_KERNEL, m, 1).node;
		if (i < 20)
			continue;
		assert_int_equal(fk_count(FK_GRAPH_LAUNCH, m), 1);
		assert_int_equal(fk_count(FK_GRAPH_INSTANTIATE, m), 0);
		assert_int_equal(fk_count(FK_EXEC_SET_KERNEL, m), 1);
		struct fk_call u = fk_get(FK_EXEC_SET_KERNEL, m, 0), gl = fk_get(FK_GRAPH_LAUNCH, m, 0);
		assert_ptr_equal(u.node, node1);
		assert_int_equal(param_u64(&u, 8), 500 + i);
		assert_ptr_equal(u.exec, gl.exec); /* on the variant launched */
		assert_ptr_not_equal(gl.exec, last[(i + 1) % 2]);
		if (i >= 22)
			assert_ptr_equal(gl.exec, last[i % 2]);
		last[i % 2] = gl.exec;
	}
	assert_int_equal(fk_count(FK_GRAPH_INSTANTIATE, m0), 2);
}

/* ---- (d) back-off ----------------------------------------------------------------------- */
/* A template that keeps diverging is not tried for a while, then again. */
static void test_backoff(void **state)
{
	(void)state;
	CUstream s = UT_STREAM(5);
	const uint64_t a[] = { BUF(1), BUF(2), BUF(3) };
	struct iter it = { .n = 3, .a = a };
	run_iter(&it, s);
	run_iter(&it, s);
	unsigned long long bo0 = STAT(fallbacks[CG_WHY_BACKOFF_DIVERGE]);
	/* The second op's block grows: it differs every time. */
	int tried = 0;
	for (unsigned i = 0; i < 8; i++) {
		const unsigned blocks[] = { 1, 100 + i, 1 };
		struct iter d = { .n = 3, .a = a, .blocks = blocks };
		run_iter(&d, s);
		tried += d.res[0] == CG_DEFERRED;
		assert_int_equal(d.res[1], CG_EAGER);
		if (i >= 4)
			assert_int_equal(d.res[0], CG_EAGER);
	}
	assert_int_equal(tried, 4);
	assert_int_equal(STAT(fallbacks[CG_WHY_BACKOFF_DIVERGE]), bo0 + 1);
	/* The iteration as it was: eager for a while, then replayed again. */
	int eager = 0;
	size_t m = 0;
	for (;;) {
		m = fk_mark();
		run_iter(&it, s);
		if (it.res[0] == CG_DEFERRED || eager > 200)
			break;
		assert_int_equal(count_res(&it, CG_EAGER), 3);
		eager++;
	}
	assert_true(eager >= 16);
	assert_true(eager <= 40);
	assert_int_equal(count_res(&it, CG_DEFERRED), 3);
	assert_int_equal(fk_count(FK_GRAPH_LAUNCH, m), 1);
}

/* ---- (e) chains --------------------------------------------------------------------------- */
/* 40 ops on one stream ending where the host waits: a chain of graphs, the
 * first launched while the host still makes the calls of the next. */
static void test_chain(void **state)
{
	(void)state;
	CUstream s = UT_STREAM(6);
	unsigned blocks[40];
	uint64_t a[40];
	int ks[40];
	for (int i = 0; i < 40; i++) {
		blocks[i] = 1 + (unsigned)i; /* 40 shapes: no period */
		a[i] = BUF(i);
		ks[i] = 1 + i % 3;
	}
	struct iter it = { .n = 40, .a = a, .blocks = blocks, .kernels = ks };
	run_iter(&it, s);
	size_t m = fk_mark();
	run_iter(&it, s);
	assert_int_equal(fk_count(FK_GRAPH_INSTANTIATE, m), 2);
	assert_int_equal(fk_count(FK_GRAPH_ADD_KERNEL, m), 40);
	for (int r = 0; r < 10; r++) {
		m = fk_mark();
		long first_at = -1;
		for (int i = 0; i < 40; i++) {
			struct launch l;
			launch(&l, ks[i], s, blocks[i], a[i], 0);
			assert_int_equal(call(&l.op, i), CG_DEFERRED);
			if (i == 7)
				first_at = (long)fk_mark();
			if (i < 7)
				assert_int_equal(fk_count(FK_GRAPH_LAUNCH, m), 0);
		}
		sync_point();
		assert_int_equal(fk_count(FK_GRAPH_LAUNCH, m), 2);
		/* The first piece went out with the eighth op. */
		assert_true(fk_nth(FK_GRAPH_LAUNCH, m, 0) < first_at);
		assert_ptr_not_equal(fk_get(FK_GRAPH_LAUNCH, m, 0).exec, fk_get(FK_GRAPH_LAUNCH, m, 1).exec);
		assert_int_equal(fk_count(FK_APP, m), 0);
		assert_int_equal(fk_count(FK_LAUNCH_KERNEL, m), 0);
	}
}

/* ---- (f) another thread --------------------------------------------------------------------- */
struct other {
	CUstream s;
	int sync; /* a sync boundary instead of a launch */
	pthread_t self;
	int res;
};

static void *other_thread(void *arg)
{
	struct other *o = arg;
	o->self = pthread_self();
	if (o->sync) {
		sync_point();
	} else {
		struct launch l;
		o->res = call(launch(&l, 6, o->s, 1, BUF(50), 0), 99);
	}
	return NULL;
}

static void test_other_thread(void **state)
{
	(void)state;
	CUstream s = UT_STREAM(7);
	const uint64_t a[] = { BUF(1), BUF(2), BUF(3) };
	struct iter it = { .n = 3, .a = a };
	run_iter(&it, s);
	run_iter(&it, s);
	unsigned long long th0 = STAT(fallbacks[CG_WHY_THREADS]);
	size_t m = fk_mark();
	struct launch l;
	assert_int_equal(call(launch(&l, 1, s, 1, a[0], 0), 0), CG_DEFERRED);
	struct other o = { .s = UT_STREAM(8) };
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, other_thread, &o), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(o.res, CG_EAGER);
	/* The held op went out first, from the other thread's call. */
	long sub = fk_nth(FK_LAUNCH_KERNEL, m, 0), app = fk_nth(FK_APP, m, 0);
	assert_true(sub >= 0 && app >= 0);
	assert_true(sub < app);
	struct fk_call c = fk_at((size_t)sub);
	assert_ptr_equal(c.kernel, K(1));
	assert_ptr_equal(c.stream, s);
	assert_true(pthread_equal(c.thread, o.self));
	assert_int_equal(fk_at((size_t)app).tag, 99);
	assert_int_equal(STAT(fallbacks[CG_WHY_THREADS]), th0 + 1);
	/* This thread goes on eagerly. */
	assert_int_equal(call(launch(&l, 2, s, 1, a[1], 0), 1), CG_EAGER);
	assert_int_equal(call(launch(&l, 3, s, 1, a[2], 0), 2), CG_EAGER);
	sync_point();
	assert_int_equal(fk_count(FK_GRAPH_LAUNCH, m), 0);
	assert_int_equal(fk_count(FK_LAUNCH_KERNEL, m), 1);
}

/* Held work on this thread's per-thread stream, submitted from another
 * thread, goes to the legacy stream (the other thread's per-thread stream
 * is another stream). */
static void test_other_thread_per_thread_stream(void **state)
{
	(void)state;
	const uint64_t a[] = { BUF(1), BUF(2), BUF(3) };
	struct iter it = { .n = 3, .a = a };
	run_iter(&it, CU_STREAM_PER_THREAD);
	run_iter(&it, CU_STREAM_PER_THREAD);
	size_t m = fk_mark();
	struct launch l;
	assert_int_equal(call(launch(&l, 1, CU_STREAM_PER_THREAD, 1, a[0], 0), 0), CG_DEFERRED);
	assert_int_equal(call(launch(&l, 2, CU_STREAM_PER_THREAD, 1, a[1], 0), 1), CG_DEFERRED);
	struct other o = { .sync = 1 };
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, other_thread, &o), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(fk_count(FK_LAUNCH_KERNEL, m), 2);
	for (int i = 0; i < 2; i++) {
		struct fk_call c = fk_get(FK_LAUNCH_KERNEL, m, (size_t)i);
		assert_ptr_equal(c.kernel, K(1 + i));
		assert_ptr_equal(c.stream, CU_STREAM_LEGACY);
		assert_true(pthread_equal(c.thread, o.self));
	}
	assert_int_equal(call(launch(&l, 3, CU_STREAM_PER_THREAD, 1, a[2], 0), 2), CG_EAGER);
	sync_point();
}

/* ---- (h) events ------------------------------------------------------------------------------ */
static void events_iter(CUstream s, CUevent e, int last_kernel, int res[3], int check)
{
	struct launch l;
	struct cg_op rec;
	res[0] = call(launch(&l, 1, s, 1, BUF(1), 0), 0);
	res[1] = call(record(&rec, s, e), 1);
	if (check) {
		/* Held or eager, the work that recorded e is not out of the
		 * segment yet: a query of e is not independent. */
		assert_false(cg_engine_event_independent(e));
		assert_true(cg_engine_event_independent(UT_EVENT(99)));
	}
	res[2] = call(launch(&l, last_kernel, s, 1, BUF(2), 0), 2);
}

static void test_event_independent(void **state)
{
	(void)state;
	CUstream s = UT_STREAM(10);
	CUevent e = UT_EVENT(1);
	int res[3];
	events_iter(s, e, 2, res, 1);
	assert_int_equal(res[1], CG_EAGER);
	assert_false(cg_engine_event_independent(e)); /* recorded by the run: its end is where the host looks */
	sync_point();
	assert_true(cg_engine_event_independent(e));
	size_t m = fk_mark();
	events_iter(s, e, 2, res, 0);
	sync_point();
	struct fk_call rn = fk_get(FK_GRAPH_ADD_RECORD, m, 0);
	assert_ptr_equal(rn.event, e);

	/* Held: not independent while held; independent once the graph is out. */
	m = fk_mark();
	events_iter(s, e, 2, res, 1);
	assert_int_equal(res[0], CG_DEFERRED);
	assert_int_equal(res[1], CG_DEFERRED);
	assert_int_equal(res[2], CG_DEFERRED);
	assert_int_equal(fk_count(FK_GRAPH_LAUNCH, m), 1);
	assert_true(cg_engine_event_independent(e));
	sync_point();
	assert_true(cg_engine_event_independent(e));

	/* Held, then submitted eagerly by a divergence: the run recorded it. */
	m = fk_mark();
	events_iter(s, e, 5, res, 1);
	assert_int_equal(res[2], CG_EAGER);
	assert_ptr_equal(fk_get(FK_EVENT_RECORD, m, 0).event, e);
	assert_false(cg_engine_event_independent(e));
	sync_point();
	assert_true(cg_engine_event_independent(e));
}

/* ---- (i) host memory ---------------------------------------------------------------------------- */
static uint8_t hostbuf[4096];

/* A kernel given host memory the host may poll is never held; the rest of
 * the iteration is. */
static void test_host_memory_never_held(void **state)
{
	(void)state;
	CUstream s = UT_STREAM(11);
	cg_hostmem_add(hostbuf, sizeof hostbuf);
	const uint64_t a[] = { (uint64_t)(uintptr_t)(hostbuf + 64), BUF(2), BUF(3) };
	struct iter it = { .n = 3, .a = a };
	unsigned long long hm0 = STAT(fallbacks[CG_WHY_HOST_MEMORY]);
	size_t m0 = fk_mark();
	for (int i = 0; i < 8; i++) {
		size_t m = fk_mark();
		run_iter(&it, s);
		assert_int_equal(it.res[0], CG_EAGER);
		assert_int_equal(fk_get(FK_APP, m, 0).tag, 0);
		if (i >= 2) {
			assert_int_equal(it.res[1], CG_DEFERRED);
			assert_int_equal(it.res[2], CG_DEFERRED);
			assert_int_equal(fk_count(FK_GRAPH_LAUNCH, m), 1);
		}
	}
	/* The graph has the two other kernels only. */
	assert_int_equal(fk_count(FK_GRAPH_ADD_KERNEL, m0), 2);
	for (size_t k = 0; k < 2; k++)
		assert_ptr_not_equal(fk_get(FK_GRAPH_ADD_KERNEL, m0, k).kernel, K(1));
	assert_true(STAT(fallbacks[CG_WHY_HOST_MEMORY]) >= hm0 + 8);
	size_t n_;
	assert_true(cg_hostmem_remove(hostbuf, &n_));
}

/* A template learnt with device memory, then given host memory: that op is
 * not held, and what was held goes out before it. */
static void test_host_memory_in_template(void **state)
{
	(void)state;
	CUstream s = UT_STREAM(12);
	const uint64_t a[] = { BUF(1), BUF(2), BUF(3) };
	struct iter it = { .n = 3, .a = a };
	run_iter(&it, s);
	run_iter(&it, s);
	cg_hostmem_add(hostbuf, sizeof hostbuf);
	const uint64_t host = (uint64_t)(uintptr_t)hostbuf;
	size_t m = fk_mark();
	struct launch l;
	assert_int_equal(call(launch(&l, 1, s, 1, a[0], 0), 0), CG_DEFERRED);
	assert_int_equal(call(launch(&l, 2, s, 1, host, 0), 1), CG_EAGER);
	assert_int_equal(fk_count(FK_LAUNCH_KERNEL, m), 1);
	assert_true(fk_nth(FK_LAUNCH_KERNEL, m, 0) < fk_nth(FK_APP, m, 0));
	assert_int_equal(call(launch(&l, 3, s, 1, a[2], 0), 2), CG_EAGER);
	sync_point();
	/* At the first op. */
	m = fk_mark();
	assert_int_equal(call(launch(&l, 1, s, 1, host, 0), 0), CG_EAGER);
	assert_int_equal(call(launch(&l, 2, s, 1, a[1], 0), 1), CG_EAGER);
	assert_int_equal(call(launch(&l, 3, s, 1, a[2], 0), 2), CG_EAGER);
	sync_point();
	assert_int_equal(fk_count(FK_GRAPH_LAUNCH, m), 0);
	/* Back to device memory: replayed again. */
	m = fk_mark();
	run_iter(&it, s);
	assert_int_equal(count_res(&it, CG_DEFERRED), 3);
	size_t n_;
	assert_true(cg_hostmem_remove(hostbuf, &n_));
}

/* An address the graph was built with that becomes host memory later
 * (cudaHostRegister of a range the program already handed a kernel, or a
 * freed device buffer's address reused for host memory): the graph is
 * forgotten, and the kernel is no longer held. */
static void test_host_memory_registered_later(void **state)
{
	(void)state;
	CUstream s = UT_STREAM(13);
	const uint64_t a[] = { (uint64_t)(uintptr_t)hostbuf, BUF(2), BUF(3) };
	struct iter it = { .n = 3, .a = a };
	run_iter(&it, s);
	run_iter(&it, s);
	run_iter(&it, s);
	assert_int_equal(count_res(&it, CG_DEFERRED), 3);
	cg_hostmem_add(hostbuf, sizeof hostbuf);
	cg_engine_host_memory(hostbuf, sizeof hostbuf);
	for (int i = 0; i < 4; i++) {
		run_iter(&it, s);
		assert_int_equal(it.res[0], CG_EAGER);
	}
	size_t n_;
	assert_true(cg_hostmem_remove(hostbuf, &n_));
}

/* ---- pageable sources ------------------------------------------------------------------------------ */
static uint8_t pagebuf[64]; /* pageable: in no range the fake calls device or pinned memory */

/* A held copy from pageable memory reads the bytes the program had at its
 * call (it may reuse the buffer as soon as the call returns): the graph
 * copies them from pinned staging, of two buffers the one its node reads
 * while the launches that read it are done (no node update), else the
 * other, rewritten only after the launch that read it is done. */
static void test_pageable_copy_snapshot(void **state)
{
	(void)state;
	CUstream s = UT_STREAM(17);
	void *dst = (void *)(uintptr_t)BUF(20);
	size_t build = 0;
	uint8_t *staging[2] = { NULL, NULL };
	int pending = 0, reading = -1, used[2] = { 0, 0 };
	for (int i = 0; i < 12; i++) {
		size_t m = fk_mark();
		if (i == 1)
			build = m;
		if (i == 8) {
			/* The launches that read the staging buffers are still
			 * running. */
			for (size_t k = 0; k < 2; k++)
				fk_event_pending(fk_get(FK_EVENT_CREATE, build, k).event, 1);
			pending = 1;
		}
		struct launch l;
		struct cg_op cp;
		enum cg_reason why;
		assert_int_equal(call(launch(&l, 1, s, 1, BUF(1), 0), 0), i < 2 ? CG_EAGER : CG_DEFERRED);
		memset(pagebuf, 0x40 + i, sizeof pagebuf);
		assert_int_equal(cg_op_from_rt_memcpy_async(&cp, 0, &why, dst, pagebuf, sizeof pagebuf,
							    cudaMemcpyHostToDevice, (cudaStream_t)s), 0);
		cp.entry = CG_E_cudaMemcpyAsync;
		assert_int_equal(cg_op_finish(&cp, &why), 0);
		assert_int_equal(call(&cp, 1), i < 2 ? CG_EAGER : CG_DEFERRED);
		memset(pagebuf, 0xee, sizeof pagebuf); /* the program reuses its buffer */
		assert_int_equal(call(launch(&l, 2, s, 1, BUF(2), 0), 2), i < 2 ? CG_EAGER : CG_DEFERRED);
		sync_point();
		if (i == 1) {
			assert_int_equal(fk_count(FK_MEM_ALLOC_HOST, m), 2);
			for (size_t k = 0; k < 2; k++)
				staging[k] = (uint8_t *)fk_get(FK_MEM_ALLOC_HOST, m, k).dst;
			struct fk_call node = fk_get(FK_GRAPH_ADD_MEMCPY, m, 0);
			assert_true(node.src == (uintptr_t)staging[0] || node.src == (uintptr_t)staging[1]);
			reading = node.src == (uintptr_t)staging[1];
			assert_int_equal(node.dst, (uintptr_t)dst);
			assert_int_equal(node.bytes, sizeof pagebuf);
		}
		if (i < 2)
			continue;
		assert_int_equal(fk_count(FK_GRAPH_LAUNCH, m), 1);
		if (pending) {
			/* The launches still run: the copy node is given the
			 * other buffer, in turn, rewritten only once the launch
			 * that read it (if one did) is done. */
			assert_int_equal(fk_count(FK_EXEC_SET_MEMCPY, m), 1);
			struct fk_call u = fk_get(FK_EXEC_SET_MEMCPY, m, 0);
			assert_int_equal(u.src, (uintptr_t)staging[reading ^ 1]);
			reading ^= 1;
			assert_true(fk_nth(FK_EXEC_SET_MEMCPY, m, 0) < fk_nth(FK_GRAPH_LAUNCH, m, 0));
			long sync_at = fk_nth(FK_EVENT_SYNC, m, 0);
			if (used[reading]) {
				assert_true(sync_at >= 0);
				assert_true(sync_at < fk_nth(FK_EXEC_SET_MEMCPY, m, 0));
			} else {
				assert_true(sync_at < 0);
			}
		} else {
			/* They are done: the buffer the node reads, no update. */
			assert_int_equal(fk_count(FK_EXEC_SET_MEMCPY, m), 0);
			assert_int_equal(fk_count(FK_EVENT_SYNC, m), 0);
		}
		/* The buffer the copy node reads holds this call's bytes. */
		for (size_t k = 0; k < sizeof pagebuf; k++)
			assert_int_equal(staging[reading][k], 0x40 + i);
		used[reading] = 1;
	}
	for (size_t k = 0; k < 2; k++)
		fk_event_pending(fk_get(FK_EVENT_CREATE, build, k).event, 0);
}

/* Two staged copies whose switch to the other buffer is refused part way
 * (the first node updated, the second not): the next graph launch, with the
 * buffers free again, gives both nodes the buffer it fills. */
static void test_pageable_switch_refused_part_way(void **state)
{
	(void)state;
	CUstream s = UT_STREAM(18);
	void *dst[2] = { (void *)(uintptr_t)BUF(21), (void *)(uintptr_t)BUF(22) };
	size_t build = 0;
	uint8_t *staging[2] = { NULL, NULL };
	int checked = 0;
	for (int i = 0; i < 64 && !checked; i++) {
		size_t m = fk_mark();
		if (i == 1)
			build = m;
		/* The launches that read the staging buffers are still running
		 * at the fourth iteration's, done at the fifth's. */
		for (size_t k = 0; i >= 3 && i <= 4 && k < 2; k++)
			fk_event_pending(fk_get(FK_EVENT_CREATE, build, k).event, i == 3);
		if (i == 3)
			fk_fail_after(FK_EXEC_SET_MEMCPY, CUDA_ERROR_INVALID_VALUE, 1, 1);
		struct launch l;
		int r = call(launch(&l, 1, s, 1, BUF(1), 0), 0);
		if (i < 3)
			assert_int_equal(r, i < 2 ? CG_EAGER : CG_DEFERRED);
		for (int c = 0; c < 2; c++) {
			struct cg_op cp;
			enum cg_reason why;
			memset(pagebuf, 0x40 + 2 * i + c, sizeof pagebuf);
			assert_int_equal(cg_op_from_rt_memcpy_async(&cp, 0, &why, dst[c], pagebuf, sizeof pagebuf,
								    cudaMemcpyHostToDevice, (cudaStream_t)s), 0);
			cp.entry = CG_E_cudaMemcpyAsync;
			assert_int_equal(cg_op_finish(&cp, &why), 0);
			call(&cp, 1 + c);
		}
		call(launch(&l, 2, s, 1, BUF(2), 0), 3);
		sync_point();
		if (i == 1)
			for (size_t k = 0; k < 2; k++)
				staging[k] = (uint8_t *)fk_get(FK_MEM_ALLOC_HOST, m, k).dst;
		if (i == 3) {
			/* Refused at the second node: that stretch ran eagerly. */
			assert_int_equal(fk_count(FK_EXEC_SET_MEMCPY, m), 2);
			assert_int_equal(fk_count(FK_GRAPH_LAUNCH, m), 0);
		}
		if (i >= 4 && fk_count(FK_GRAPH_LAUNCH, m)) {
			/* Both nodes given the buffer just filled, as built. */
			checked = 1;
			assert_int_equal(fk_count(FK_EXEC_SET_MEMCPY, m), 2);
			struct fk_call a = fk_get(FK_EXEC_SET_MEMCPY, m, 0), b = fk_get(FK_EXEC_SET_MEMCPY, m, 1);
			int x = a.src == (uintptr_t)staging[1];
			assert_int_equal(a.src, (uintptr_t)staging[x]);
			assert_int_equal(b.src - a.src, fk_get(FK_GRAPH_ADD_MEMCPY, build, 1).src -
							fk_get(FK_GRAPH_ADD_MEMCPY, build, 0).src);
			for (size_t k = 0; k < sizeof pagebuf; k++) {
				assert_int_equal(((uint8_t *)(uintptr_t)a.src)[k], 0x40 + 2 * i);
				assert_int_equal(((uint8_t *)(uintptr_t)b.src)[k], 0x40 + 2 * i + 1);
			}
		}
	}
	assert_true(checked);
	fk_fail(FK_EXEC_SET_MEMCPY, CUDA_SUCCESS, 0);
}

/* ---- kernels cgraft cannot hold, builds that fail ------------------------------------------------ */
/* A kernel whose layout the driver does not tell passes through as a
 * boundary: the held work goes out first. */
static void test_unknown_kernel_passes(void **state)
{
	(void)state;
	CUstream s = UT_STREAM(14);
	const uint64_t a[] = { BUF(1), BUF(2), BUF(3) };
	struct iter it = { .n = 3, .a = a };
	run_iter(&it, s);
	run_iter(&it, s);
	unsigned long long pi0 = STAT(fallbacks[CG_WHY_PARAM_INFO]);
	size_t m = fk_mark();
	struct launch l;
	assert_int_equal(call(launch(&l, 1, s, 1, a[0], 0), 0), CG_DEFERRED);
	assert_int_equal(call(launch(&l, NKERNELS + 1, s, 1, a[1], 0), 1), CG_PASS);
	assert_int_equal(fk_count(FK_LAUNCH_KERNEL, m), 1);
	assert_true(fk_nth(FK_LAUNCH_KERNEL, m, 0) < fk_nth(FK_APP, m, 0));
	assert_int_equal(STAT(fallbacks[CG_WHY_PARAM_INFO]), pi0 + 1);
	sync_point();
}

/* A graph that fails to build leaves the run eager, and is not tried again
 * soon. */
static void test_build_failure_not_retried(void **state)
{
	(void)state;
	CUstream s = UT_STREAM(15);
	const uint64_t a[] = { BUF(1), BUF(2), BUF(3), BUF(4), BUF(5) };
	struct iter it = { .n = 5, .a = a };
	fk_fail(FK_GRAPH_INSTANTIATE, CUDA_ERROR_UNKNOWN, 100);
	size_t m = fk_mark();
	for (int i = 0; i < 12; i++) {
		run_iter(&it, s);
		assert_int_equal(count_res(&it, CG_EAGER), 5);
	}
	fk_fail(FK_GRAPH_INSTANTIATE, CUDA_SUCCESS, 0);
	assert_int_equal(fk_count(FK_GRAPH_INSTANTIATE, m), 1);
}

/* ==== mutant guards (begin) =========================================================== */
/* Tests of protections no program on the simulator can show (scripts/mutants
 * breaks each on purpose). */

/* A template of one context is never taken for ops of another. No program
 * shows it: a run and a deferral never span contexts (a call from another
 * context ends both), and the lookup of a template's first op hashes the
 * context in; only ops whose hash lands in the bucket of a template of
 * another context (where the addresses fall, from run to run) reach the
 * comparison. Their graph, built in the other context, would then be
 * launched for them; the simulator refuses such a launch and the work runs
 * eagerly, so even then the output stays the same. The legacy stream's
 * handle is the same in every context: on it only the context tells the
 * ops apart. */
static void test_context_in_shape(void **state)
{
	(void)state;
	CUstream s = CU_STREAM_LEGACY;
	const uint64_t a[] = { BUF(1), BUF(2), BUF(3) };
	struct iter it = { .n = 3, .a = a };
	size_t m = fk_mark();
	run_iter(&it, s);
	run_iter(&it, s);
	assert_int_equal(fk_count(FK_GRAPH_INSTANTIATE, m), 1);
	struct launch here, there;
	enum cg_reason why;
	launch(&here, 1, s, 1, a[0], 0);
	assert_int_equal(cg_op_kernel_info(&here.op, &why), 0);
	here.op.shape = cg_op_shape_hash(&here.op);
	struct cg_tmpl *found[8];
	assert_int_equal(cg_table_starting(&here.op, 0, NULL, 0, found, 8), 1);
	/* Many contexts, so that some first op lands in the template's bucket. */
	int matched = 0, started = 0;
	for (uintptr_t k = 1; k <= 8192; k++) {
		fk_set_ctx((CUcontext)((uintptr_t)FK_CTX + 0x1000u * k));
		launch(&there, 1, s, 1, a[0], 0);
		fk_set_ctx(FK_CTX);
		assert_int_equal(cg_op_kernel_info(&there.op, &why), 0);
		there.op.shape = cg_op_shape_hash(&there.op);
		matched += cg_op_same_shape(&here.op, &there.op);
		started += cg_table_starting(&there.op, 0, NULL, 0, found, 8);
	}
	assert_int_equal(matched, 0);
	assert_int_equal(started, 0);
	/* The iteration in the template's own context is still replayed. */
	m = fk_mark();
	run_iter(&it, s);
	assert_int_equal(count_res(&it, CG_DEFERRED), 3);
	assert_int_equal(fk_count(FK_GRAPH_LAUNCH, m), 1);
}
/* ==== mutant guards (end) ============================================================= */

/* A kernel's grid is a value: learnt with one grid, an iteration whose
 * middle kernel's grid then grows replays, the grid a node update; but where
 * the kernel was compiled with a cluster (a grid it does not divide fails to
 * launch), the grid is shape and the iteration diverges there. */
static void test_grid_value(void **state)
{
	(void)state;
	CUstream s = UT_STREAM(6);
	const uint64_t a[] = { BUF(1), BUF(2), BUF(3) };
	for (int clustered = 0; clustered < 2; clustered++) {
		const int ks[] = { 1 + 3 * clustered, 2 + 3 * clustered, 3 + 3 * clustered };
		fk_kernel_cluster(K(ks[1]), clustered ? 2 : 0);
		unsigned long long upd0 = STAT(node_updates);
		int replayed = 0;
		for (unsigned i = 0; i < 8; i++) {
			const unsigned grids[] = { 1, i < 2 ? 2 : 2 * i, 1 };
			struct iter d = { .n = 3, .a = a, .kernels = ks, .grids = grids };
			run_iter(&d, s);
			replayed += count_res(&d, CG_DEFERRED) == 3;
		}
		fk_kernel_cluster(K(ks[1]), 0);
		assert_int_equal(replayed, clustered ? 0 : 6);
		if (!clustered)
			assert_true(STAT(node_updates) >= upd0 + 6);
	}
}

/* A memset in the loop, then a call that frees memory without saying which
 * (cuMemPoolTrimTo, cudaFreeArray, cuIpcCloseMemHandle): the graph naming
 * memory is forgotten, its ops run eagerly and are learnt again; a graph of
 * kernels only, which holds no memory, replays on. */
static struct cg_op *memset32(struct cg_op *op, CUstream s, uint64_t dst, unsigned n)
{
	enum cg_reason why;
	memset(op, 0, sizeof *op);
	assert_int_equal(cg_op_from_cuMemsetD32Async(op, 0, &why, dst, 7, n, s), 0);
	op->entry = CG_E_cuMemsetD32Async;
	assert_int_equal(cg_op_finish(op, &why), 0);
	return op;
}

static int memset_iter(CUstream s, const uint64_t *a)
{
	struct cg_op op;
	int held = call(memset32(&op, s, BUF(7) + 256, 64), 0) == CG_DEFERRED;
	struct launch l;
	held += call(launch(&l, 1, s, 1, a[0], 0), 1) == CG_DEFERRED;
	held += call(launch(&l, 2, s, 1, a[1], 0), 2) == CG_DEFERRED;
	sync_point();
	return held;
}

static void test_unsaid_free_forgets_memory_graphs(void **state)
{
	(void)state;
	CUstream s = UT_STREAM(19), t = UT_STREAM(20);
	const uint64_t a[] = { BUF(1), BUF(2), BUF(3) };
	struct iter kernels = { .n = 3, .a = a };
	for (int i = 0; i < 3; i++) {
		memset_iter(s, a);
		run_iter(&kernels, t);
	}
	size_t m = fk_mark();
	assert_int_equal(memset_iter(s, a), 3);
	assert_int_equal(fk_count(FK_GRAPH_LAUNCH, m), 1);
	cg_engine_boundary(CG_E_cuMemPoolTrimTo, CG_K_FREE, CG_WHY_UNSUPPORTED_API);
	m = fk_mark();
	assert_int_equal(memset_iter(s, a), 0);
	assert_int_equal(fk_count(FK_GRAPH_LAUNCH, m), 0);
	assert_int_equal(fk_count(FK_MEMSET_ASYNC, m), 0); /* none held, none sent out later */
	run_iter(&kernels, t);
	assert_int_equal(count_res(&kernels, CG_DEFERRED), 3);
	assert_int_equal(fk_count(FK_GRAPH_LAUNCH, m), 1);
}

/* K(1) and K(3) on s, K(2) on t between them, then a sync: 3 where all
 * three were held. */
static int two_streams(CUstream s, CUstream t, const uint64_t *a)
{
	struct launch l;
	int held = call(launch(&l, 1, s, 1, a[0], 0), 0) == CG_DEFERRED;
	held += call(launch(&l, 2, t, 1, a[1], 0), 1) == CG_DEFERRED;
	held += call(launch(&l, 3, s, 1, a[2], 0), 2) == CG_DEFERRED;
	sync_point();
	return held;
}

/* Last, since a memory wait stays for good: a node added to the program's
 * graph that waits for memory is one (other types are not). Graphs over two
 * streams go and none is built again; one stream's still are. */
static void test_memory_wait_node(void **state)
{
	(void)state;
	CUstream s = UT_STREAM(23), t = UT_STREAM(24);
	const uint64_t a[] = { BUF(1), BUF(2), BUF(3) };
	for (int i = 0; i < 3; i++)
		two_streams(s, t, a);
	size_t m = fk_mark();
	assert_int_equal(two_streams(s, t, a), 3);
	assert_int_equal(fk_count(FK_GRAPH_LAUNCH, m), 1);
	CUgraphNodeParams p = { .type = CU_GRAPH_NODE_TYPE_KERNEL };
	cg_pre_cuGraphAddNode_v2(CG_E_cuGraphAddNode_v2, 0, NULL, NULL, NULL, NULL, 0, &p);
	struct cudaGraphNodeParams rp = { .type = cudaGraphNodeTypeConditional };
	cg_pre_rt_graph_add_node(CG_E_cudaGraphAddNode, 0, NULL, NULL, NULL, NULL, 0, &rp);
	assert_false(cg_engine_memory_waits());
	m = fk_mark();
	assert_int_equal(two_streams(s, t, a), 3);
	assert_int_equal(fk_count(FK_GRAPH_LAUNCH, m), 1);
	unsigned long long why0 = STAT(fallbacks[CG_WHY_MEMORY_WAIT]);
	p.type = CU_GRAPH_NODE_TYPE_BATCH_MEM_OP;
	cg_pre_cuGraphAddNode(CG_E_cuGraphAddNode, 0, NULL, NULL, NULL, 0, &p);
	assert_true(cg_engine_memory_waits());
	assert_int_equal(STAT(fallbacks[CG_WHY_MEMORY_WAIT]), why0 + 1); /* the graph that went */
	m = fk_mark();
	for (int i = 0; i < 6; i++)
		two_streams(s, t, a);
	assert_int_equal(fk_count(FK_GRAPH_LAUNCH, m), 0);
	assert_int_equal(fk_count(FK_LAUNCH_KERNEL, m) + fk_count(FK_APP, m), 18); /* all eager */
	assert_true(STAT(fallbacks[CG_WHY_MEMORY_WAIT]) > why0 + 1); /* refused when built again */
	struct iter it = { .n = 3, .a = a };
	for (int i = 0; i < 3; i++)
		run_iter(&it, s);
	m = fk_mark();
	run_iter(&it, s);
	assert_int_equal(count_res(&it, CG_DEFERRED), 3);
	assert_int_equal(fk_count(FK_GRAPH_LAUNCH, m), 1);
}

/* Where the run starts amid a step (cgraft on again after a pause), a
 * template starts where an op is its first as its graph last ran, at any
 * offset; not one of other values. Where the phase is known (the run
 * starts at a sync), only where its starts were counted: the same op at
 * another offset runs eagerly. */
int cgraft_set_enabled(int on);

static void test_phase_lost(void **state)
{
	(void)state;
	CUstream s = UT_STREAM(2);
	const uint64_t a[] = { BUF(1), BUF(2), BUF(3), BUF(4) };
	struct iter it = { .n = 4, .a = a };
	for (int i = 0; i < 4; i++)
		run_iter(&it, s);
	struct launch l;
	size_t m = fk_mark();
	run_iter(&it, s);
	assert_int_equal(count_res(&it, CG_DEFERRED), 4);
	assert_int_equal(fk_count(FK_GRAPH_LAUNCH, m), 1);

	/* Paused amid a step, on again amid it: K(3) and K(4) eagerly, K(1) of
	 * other values too, then the step's first op as it ran, at offset 3. */
	assert_int_equal(cgraft_set_enabled(0), 1);
	assert_int_equal(call(launch(&l, 1, s, 1, a[0], 0), 0), CG_PASS);
	assert_int_equal(call(launch(&l, 2, s, 1, a[1], 0), 1), CG_PASS);
	assert_int_equal(cgraft_set_enabled(1), 0);
	m = fk_mark();
	assert_int_equal(call(launch(&l, 3, s, 1, a[2], 0), 2), CG_EAGER);
	assert_int_equal(call(launch(&l, 4, s, 1, a[3], 0), 3), CG_EAGER);
	assert_int_equal(call(launch(&l, 1, s, 1, a[0] + 64, 0), 4), CG_EAGER);
	run_iter(&it, s);
	assert_int_equal(count_res(&it, CG_DEFERRED), 4);
	assert_int_equal(fk_count(FK_GRAPH_LAUNCH, m), 1);

	/* The phase known again: after the sync, the same op at offset 1 is
	 * no start. */
	m = fk_mark();
	assert_int_equal(call(launch(&l, 6, s, 1, BUF(9), 0), 0), CG_EAGER);
	run_iter(&it, s);
	assert_int_equal(count_res(&it, CG_EAGER), 4);
	assert_int_equal(fk_count(FK_GRAPH_LAUNCH, m), 0);
}

/* A divergence in a run no sync ends: the step right after it runs
 * eagerly (its offsets name no start); a few steps on, with still no
 * start, the template starts at its first op as it ran. */
static void test_phase_lost_after_divergence(void **state)
{
	(void)state;
	CUstream s = UT_STREAM(2);
	const uint64_t a[] = { BUF(1), BUF(2), BUF(3), BUF(4) };
	struct iter it = { .n = 4, .a = a };
	for (int i = 0; i < 5; i++)
		run_iter(&it, s);
	struct launch l;
	size_t m = fk_mark();
	assert_int_equal(call(launch(&l, 1, s, 1, a[0], 0), 0), CG_DEFERRED);
	assert_int_equal(call(launch(&l, 5, s, 1, a[1], 0), 1), CG_EAGER);
	assert_int_equal(call(launch(&l, 3, s, 1, a[2], 0), 2), CG_EAGER);
	assert_int_equal(call(launch(&l, 4, s, 1, a[3], 0), 3), CG_EAGER);
	for (int i = 0; i < 4; i++)
		assert_int_equal(call(launch(&l, i + 1, s, 1, a[i], 0), 4 + i), CG_EAGER);
	int deferred = 0;
	for (int step = 0; step < 4 && !deferred; step++)
		for (int i = 0; i < 4; i++)
			deferred += call(launch(&l, i + 1, s, 1, a[i], 0), 8 + 4 * step + i) == CG_DEFERRED;
	assert_int_equal(deferred, 4);
	assert_int_equal(fk_count(FK_GRAPH_LAUNCH, m), 1);
	sync_point();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_hold_timer, setup),
		cmocka_unit_test_setup(test_record_then_replay, setup),
		cmocka_unit_test_setup(test_divergence, setup),
		cmocka_unit_test_setup(test_variants_alternate, setup),
		cmocka_unit_test_setup(test_variants_counter, setup),
		cmocka_unit_test_setup(test_variants_with_counter, setup),
		cmocka_unit_test_setup(test_backoff, setup),
		cmocka_unit_test_setup(test_chain, setup),
		cmocka_unit_test_setup(test_other_thread, setup),
		cmocka_unit_test_setup(test_other_thread_per_thread_stream, setup),
		cmocka_unit_test_setup(test_event_independent, setup),
		cmocka_unit_test_setup(test_host_memory_never_held, setup),
		cmocka_unit_test_setup(test_host_memory_in_template, setup),
		cmocka_unit_test_setup(test_host_memory_registered_later, setup),
		cmocka_unit_test_setup(test_pageable_copy_snapshot, setup),
		cmocka_unit_test_setup(test_pageable_switch_refused_part_way, setup),
		cmocka_unit_test_setup(test_unknown_kernel_passes, setup),
		cmocka_unit_test_setup(test_build_failure_not_retried, setup),
		/* mutant guards */
		cmocka_unit_test_setup(test_context_in_shape, setup),
		cmocka_unit_test_setup(test_grid_value, setup),
		cmocka_unit_test_setup(test_unsaid_free_forgets_memory_graphs, setup),
		cmocka_unit_test_setup(test_memory_wait_node, setup),
		cmocka_unit_test_setup(test_phase_lost, setup),
		cmocka_unit_test_setup(test_phase_lost_after_divergence, setup),
	};
	return cmocka_run_group_tests_name("engine", tests, group_setup, NULL);
}
