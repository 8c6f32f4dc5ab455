/* Unit tests of learning and the template table (src/tmpl.h): which
 * stretches of a run of eager ops are built (whole at min_repeats, pieces
 * around ops that vary), runs a template covers already, where a template
 * may start, back-off, and the pieces of a chain. */
#include <stdlib.h>

#include "tmpl.h"
#include "unit.h"

static struct ut_kernel ka, kb, kc;
static const uint32_t sz1[] = { 8 };

static void table_empty(void)
{
	struct cg_tmpl *t = cg_table_take_naming(NULL, NULL, 1);
	while (t) {
		struct cg_tmpl *nx = t->next;
		cg_tmpl_free(t);
		t = nx;
	}
}

static int setup(void **state)
{
	(void)state;
	fk_install();
	ut_kernel_init(&ka, 0x1000, 1, sz1);
	ut_kernel_init(&kb, 0x2000, 1, sz1);
	ut_kernel_init(&kc, 0x3000, 1, sz1);
	/* Compiled with a cluster: their launches, blocks included, are shape
	 * (cg_op_kernel_is_value), so that blocks tell ops apart below. */
	ka.ki.grid_fixed = kb.ki.grid_fixed = kc.ki.grid_fixed = 1;
	cg_learn_forget();
	table_empty();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	table_empty();
	cg_learn_forget();
	return 0;
}

/* Appends a launch of k with that block and argument, hashed as the engine
 * keeps it. */
static void add(struct cg_seg *s, const struct ut_kernel *k, unsigned block, uint64_t arg)
{
	struct ut_kop op;
	ut_shaped(ut_kop(&op, k, UT_STREAM(1), block, &arg));
	assert_int_equal(cg_seg_push(s, &op.op, 0, NULL, NULL), 0);
}

/* n distinct ops of kernel k (blocks base .. base+n-1). */
static void add_n(struct cg_seg *s, const struct ut_kernel *k, unsigned base, int n)
{
	for (int i = 0; i < n; i++)
		add(s, k, base + (unsigned)i, 0);
}

static int learn(const struct cg_seg *run, const struct cg_tmpl *anchor, long min_repeats, size_t chain_first,
		 struct cg_build *b, struct cg_learn_out *res)
{
	struct cg_learn_in in = { run, anchor, 1000, 2, min_repeats, chain_first };
	return cg_learn(&in, b, res);
}

/* The template the engine would add for a build. */
static struct cg_tmpl *add_template(const struct cg_seg *run, const struct cg_build *b, const void *anchor)
{
	struct cg_tmpl *t = cg_tmpl_new(run->ops + b->start, b->n, 0);
	assert_non_null(t);
	cg_tmpl_add_start(t, anchor, b->start);
	assert_null(cg_table_add(t, 64));
	return t;
}

static void test_exact_repeat(void **state)
{
	(void)state;
	struct cg_seg run = { 0 };
	add_n(&run, &ka, 1, 5);
	struct cg_build b[CG_MAX_BUILDS];
	struct cg_learn_out res;
	assert_int_equal(learn(&run, NULL, 2, 0, b, &res), 0);
	assert_true(res.novel);
	assert_null(res.whole);
	assert_int_equal(learn(&run, NULL, 2, 0, b, &res), 1);
	assert_int_equal(b[0].start, 0);
	assert_int_equal(b[0].n, 5);
	assert_int_equal(b[0].first, 0);
	assert_false(res.novel);

	/* A chain asked for is passed on. */
	struct cg_seg r2 = { 0 };
	add_n(&r2, &kb, 1, 40);
	assert_int_equal(learn(&r2, NULL, 2, 8, b, &res), 0);
	assert_int_equal(learn(&r2, NULL, 2, 8, b, &res), 1);
	assert_int_equal(b[0].n, 40);
	assert_int_equal(b[0].first, 8);

	/* Shorter than min_ops: nothing, not even counted. */
	struct cg_seg one = { 0 };
	add_n(&one, &kc, 1, 1);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(learn(&one, NULL, 2, 0, b, &res), 0);
		assert_false(res.novel);
	}
	cg_seg_free(&run);
	cg_seg_free(&r2);
	cg_seg_free(&one);
}

/* A block of the diff that covers the whole run is the whole-run count's,
 * not a piece of itself: with min_repeats 3 the run is built at its third
 * sighting, as the chain asked for. */
static void test_min_repeats_three(void **state)
{
	(void)state;
	struct cg_seg run = { 0 };
	add_n(&run, &kb, 1, 40);
	struct cg_build b[CG_MAX_BUILDS];
	struct cg_learn_out res;
	assert_int_equal(learn(&run, NULL, 3, 8, b, &res), 0);
	assert_int_equal(learn(&run, NULL, 3, 8, b, &res), 0);
	assert_int_equal(learn(&run, NULL, 3, 8, b, &res), 1);
	assert_int_equal(b[0].n, 40);
	assert_int_equal(b[0].first, 8);
	cg_seg_free(&run);
}

/* A run whose graph failed to build is not built again soon: neither the
 * whole-run count nor its finding as a piece brings it back. */
static void test_failed_not_retried(void **state)
{
	(void)state;
	struct cg_build b[CG_MAX_BUILDS];
	struct cg_learn_out res;
	for (int n = 3; n <= 5; n += 2) { /* under CG_PIECE_MIN, and over it */
		struct cg_seg run = { 0 };
		add_n(&run, n == 3 ? &ka : &kb, 1, n);
		learn(&run, NULL, 2, 0, b, &res);
		assert_int_equal(learn(&run, NULL, 2, 0, b, &res), 1);
		cg_learn_failed(run.ops, run.n);
		for (int i = 0; i < 20; i++)
			if (learn(&run, NULL, 2, 0, b, &res))
				fail_msg("a %d-op run that failed to build is built again %d sightings later", n, i + 1);
		cg_seg_free(&run);
	}
}

/* a0..a4 X b0..b4 where X's shape differs every run: the second run finds
 * the two stretches around X; once they are templates, a third run builds
 * nothing more, and the second piece may start at its offset. */
static void test_pieces_around_varying_op(void **state)
{
	(void)state;
	struct cg_seg runs[3] = { { 0 } };
	for (int r = 0; r < 3; r++) {
		add_n(&runs[r], &ka, 1, 5);
		add(&runs[r], &kb, 100 + (unsigned)r, 0); /* a block that grows */
		add_n(&runs[r], &kc, 1, 5);
	}
	struct cg_build b[CG_MAX_BUILDS];
	struct cg_learn_out res;
	assert_int_equal(learn(&runs[0], NULL, 2, 0, b, &res), 0);
	assert_true(res.novel);
	int nb = learn(&runs[1], NULL, 2, 0, b, &res);
	assert_int_equal(nb, 2);
	assert_false(res.novel);
	int seen0 = 0, seen6 = 0;
	for (int i = 0; i < nb; i++) {
		assert_int_equal(b[i].n, 5);
		assert_int_equal(b[i].first, 0);
		seen0 += b[i].start == 0;
		seen6 += b[i].start == 6;
	}
	assert_int_equal(seen0, 1);
	assert_int_equal(seen6, 1);
	struct cg_tmpl *t[2];
	for (int i = 0; i < nb; i++)
		t[i] = add_template(&runs[1], &b[i], NULL);
	assert_int_equal(cg_table_count(), 2);

	assert_int_equal(learn(&runs[2], NULL, 2, 0, b, &res), 0);
	assert_null(res.whole);
	/* The piece after X starts at offset 6 of a run, not at 5 or 7. */
	struct cg_tmpl *second = t[0]->ops[0].u.k.ki == &kc.ki ? t[0] : t[1];
	struct cg_tmpl *out[8];
	assert_int_equal(cg_table_starting(&runs[2].ops[6], 0, NULL, 6, out, 8), 1);
	assert_ptr_equal(out[0], second);
	assert_int_equal(cg_table_starting(&runs[2].ops[6], 0, NULL, 5, out, 8), 0);
	assert_int_equal(cg_table_starting(&runs[2].ops[6], 0, NULL, 7, out, 8), 0);
	for (int r = 0; r < 3; r++)
		cg_seg_free(&runs[r]);
}

/* d a1..a4 X b0..b4 where X is another kernel, block and shared memory
 * every run, of one parameter size, its launch a value (no cluster): the
 * run recurs whole, one build, no pieces. The first op (d, a value too) is
 * the template's own, though: a run starting on another kernel is another
 * stretch. */
static void test_other_kernel_recurs_whole(void **state)
{
	(void)state;
	struct ut_kernel kd, ke;
	ut_kernel_init(&kd, 0x4000, 1, sz1);
	ut_kernel_init(&ke, 0x5000, 1, sz1); /* another function, one size */
	struct cg_seg runs[3] = { { 0 } };
	for (int r = 0; r < 3; r++) {
		add(&runs[r], &kd, 1, 0);
		add_n(&runs[r], &ka, 1, 4);
		add(&runs[r], r == 1 ? &ke : &kd, 100 + (unsigned)r, 0);
		runs[r].ops[runs[r].n - 1].u.k.shmem = 1024u * (unsigned)r;
		runs[r].ops[runs[r].n - 1].shape = cg_op_shape_hash(&runs[r].ops[runs[r].n - 1]);
		add_n(&runs[r], &kc, 1, 5);
	}
	struct cg_build b[CG_MAX_BUILDS];
	struct cg_learn_out res;
	assert_int_equal(learn(&runs[0], NULL, 2, 0, b, &res), 0);
	assert_int_equal(learn(&runs[1], NULL, 2, 0, b, &res), 1);
	assert_int_equal(b[0].start, 0);
	assert_int_equal(b[0].n, 11);
	struct cg_tmpl *t = add_template(&runs[1], &b[0], NULL);
	assert_int_equal(learn(&runs[2], NULL, 2, 0, b, &res), 0);
	assert_ptr_equal(res.whole, t);
	/* Another first kernel: not this template's stretch. */
	struct cg_seg other = { 0 };
	add(&other, &ke, 1, 0);
	assert_true(cg_op_same_shape(&other.ops[0], &runs[2].ops[0]));
	for (size_t i = 1; i < runs[2].n; i++)
		assert_int_equal(cg_seg_push(&other, &runs[2].ops[i], 0, NULL, NULL), 0);
	assert_null(cg_table_find(other.ops, other.n));
	struct cg_tmpl *out[8];
	assert_int_equal(cg_table_starting(&other.ops[0], 0, NULL, 0, out, 8), 0);
	assert_int_equal(cg_table_starting(&runs[2].ops[0], 0, NULL, 0, out, 8), 1);
	cg_seg_free(&other);
	for (int r = 0; r < 3; r++)
		cg_seg_free(&runs[r]);
}

/* a0..a19 X b0..b19 where X is one of two kernels of their own parameter
 * sizes in turn (PyTorch's unrolled or vectorised kernel as an alignment
 * alternates): the second run waits instead of giving pieces, then each
 * run is built whole at its second sighting, unchained though a chain is
 * asked for. A third kernel at X after the wait gives pieces at once. */
static void test_alternating_kernels_whole(void **state)
{
	(void)state;
	static const uint32_t sz4[] = { 4 }, sz2[] = { 2 };
	struct ut_kernel kx, ky, kz;
	ut_kernel_init(&kx, 0x6000, 1, sz1);
	ut_kernel_init(&ky, 0x7000, 1, sz4);
	ut_kernel_init(&kz, 0x8000, 1, sz2);
	struct cg_seg runs[3] = { { 0 } };
	struct ut_kernel *x[3] = { &kx, &ky, &kz };
	for (int r = 0; r < 3; r++) {
		add_n(&runs[r], &ka, 1, 20);
		add(&runs[r], x[r], 7, 0);
		add_n(&runs[r], &kc, 1, 20);
	}
	struct cg_build b[CG_MAX_BUILDS];
	struct cg_learn_out res;
	assert_int_equal(learn(&runs[0], NULL, 2, 8, b, &res), 0);
	assert_true(res.novel);
	assert_int_equal(learn(&runs[1], NULL, 2, 8, b, &res), 0);
	assert_false(res.novel);
	assert_int_equal(learn(&runs[0], NULL, 2, 8, b, &res), 1);
	assert_int_equal(b[0].start, 0);
	assert_int_equal(b[0].n, 41);
	assert_int_equal(b[0].first, 0);
	struct cg_tmpl *t0 = add_template(&runs[0], &b[0], NULL);
	assert_int_equal(learn(&runs[1], NULL, 2, 8, b, &res), 1);
	assert_int_equal(b[0].n, 41);
	assert_int_equal(b[0].first, 0);
	struct cg_tmpl *t1 = add_template(&runs[1], &b[0], NULL);
	assert_int_equal(learn(&runs[0], NULL, 2, 8, b, &res), 0);
	assert_ptr_equal(res.whole, t0);
	assert_int_equal(learn(&runs[1], NULL, 2, 8, b, &res), 0);
	assert_ptr_equal(res.whole, t1);
	/* Both start a match on the same op. */
	struct cg_tmpl *out[8];
	assert_int_equal(cg_table_starting(&runs[2].ops[0], 0, NULL, 0, out, 8), 2);
	/* Another kernel again, not seen before: pieces around it now. */
	int nb = learn(&runs[2], NULL, 2, 8, b, &res);
	assert_int_equal(nb, 2);
	for (int i = 0; i < nb; i++) {
		assert_int_equal(b[i].n, 20);
		assert_true(b[i].start == 0 || b[i].start == 21);
	}
	for (int r = 0; r < 3; r++)
		cg_seg_free(&runs[r]);
}

/* A kernel of the same function at another block where the last run had
 * it is an op that varies: pieces at the second run, no wait. */
static void test_same_kernel_other_shape_no_wait(void **state)
{
	(void)state;
	struct cg_seg runs[2] = { { 0 } };
	for (int r = 0; r < 2; r++) {
		add_n(&runs[r], &ka, 1, 6);
		add(&runs[r], &kb, 100 + (unsigned)r, 0);
		add_n(&runs[r], &kc, 1, 6);
	}
	struct cg_build b[CG_MAX_BUILDS];
	struct cg_learn_out res;
	assert_int_equal(learn(&runs[0], NULL, 2, 0, b, &res), 0);
	assert_int_equal(learn(&runs[1], NULL, 2, 0, b, &res), 2);
	for (int r = 0; r < 2; r++)
		cg_seg_free(&runs[r]);
}

/* Runs that differ in too many places, or share no stretch of CG_PIECE_MIN,
 * give no pieces. */
static void test_no_short_pieces(void **state)
{
	(void)state;
	struct cg_seg r1 = { 0 }, r2 = { 0 };
	/* a0..a2 X b0..b2: stretches of 3 only. */
	add_n(&r1, &ka, 1, 3);
	add(&r1, &kb, 100, 0);
	add_n(&r1, &kc, 1, 3);
	add_n(&r2, &ka, 1, 3);
	add(&r2, &kb, 101, 0);
	add_n(&r2, &kc, 1, 3);
	struct cg_build b[CG_MAX_BUILDS];
	struct cg_learn_out res;
	assert_int_equal(learn(&r1, NULL, 2, 0, b, &res), 0);
	assert_int_equal(learn(&r2, NULL, 2, 0, b, &res), 0);
	assert_true(res.novel);
	cg_seg_free(&r1);
	cg_seg_free(&r2);
}

/* A run the table has a template for builds nothing and names it; so does a
 * run whose chain's first piece is there. */
static void test_whole_known(void **state)
{
	(void)state;
	struct cg_seg run = { 0 };
	add_n(&run, &ka, 1, 6);
	struct cg_build b[CG_MAX_BUILDS];
	struct cg_learn_out res;
	struct cg_build all = { 0, run.n, 0 };
	struct cg_tmpl *t = add_template(&run, &all, NULL);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(learn(&run, NULL, 2, 0, b, &res), 0);
		assert_ptr_equal(res.whole, t);
		assert_false(res.novel);
	}

	struct cg_seg chain = { 0 };
	add_n(&chain, &kb, 1, 40);
	struct cg_build first = { 0, 8, 0 };
	struct cg_tmpl *p = add_template(&chain, &first, NULL);
	assert_int_equal(learn(&chain, NULL, 2, 8, b, &res), 0);
	assert_ptr_equal(res.whole, p);
	/* Without the chain asked for, the first piece is not the run's. */
	assert_int_equal(learn(&chain, NULL, 2, 0, b, &res), 0);
	assert_null(res.whole);
	cg_seg_free(&run);
	cg_seg_free(&chain);
}

/* Start keys: a piece learnt after template A at offset 3 starts only
 * there; at a run's start (offset 0) any template starts. */
static void test_start_keys(void **state)
{
	(void)state;
	struct cg_seg run = { 0 };
	add_n(&run, &ka, 1, 4);
	struct cg_tmpl *p = cg_tmpl_new(run.ops, run.n, 0);
	assert_non_null(p);
	assert_null(cg_table_add(p, 64));
	static const char anchor_a, anchor_b;
	const struct cg_op *op = &run.ops[0];
	struct cg_tmpl *out[8];
	/* Learnt nowhere yet: only at a run's start. */
	assert_int_equal(cg_table_starting(op, 0, &anchor_a, 3, out, 8), 0);
	assert_int_equal(cg_table_starting(op, 0, &anchor_a, 0, out, 8), 1);
	cg_tmpl_add_start(p, &anchor_a, 3);
	assert_int_equal(cg_table_starting(op, 0, &anchor_a, 3, out, 8), 1);
	assert_ptr_equal(out[0], p);
	assert_int_equal(cg_table_starting(op, 0, &anchor_a, 4, out, 8), 0);
	assert_int_equal(cg_table_starting(op, 0, &anchor_b, 3, out, 8), 0);
	assert_int_equal(cg_table_starting(op, 0, NULL, 3, out, 8), 0);
	assert_int_equal(cg_table_starting(op, 0, &anchor_b, 0, out, 8), 1);
	assert_int_equal(cg_table_starting(op, 0, NULL, 0, out, 8), 1);
	/* Offset 0 is no key; a key twice is kept once. */
	cg_tmpl_add_start(p, &anchor_b, 0);
	cg_tmpl_add_start(p, &anchor_a, 3);
	assert_int_equal(p->nstarts, 1);
	/* Other first ops: never. */
	struct cg_seg other = { 0 };
	add(&other, &kb, 1, 0);
	assert_int_equal(cg_table_starting(&other.ops[0], 0, NULL, 0, out, 8), 0);
	/* The newest of more keys than CG_TMPL_STARTS is kept. */
	for (size_t off = 10; off < 10 + CG_TMPL_STARTS + 1; off++)
		cg_tmpl_add_start(p, &anchor_b, off);
	assert_int_equal(p->nstarts, CG_TMPL_STARTS);
	assert_int_equal(cg_table_starting(op, 0, &anchor_b, 10 + CG_TMPL_STARTS, out, 8), 1);
	/* A chain's later piece never starts a match. */
	p->follows = 1;
	assert_int_equal(cg_table_starting(op, 0, NULL, 0, out, 8), 0);
	assert_false(cg_table_starts_alike(op));
	assert_true(cg_tmpl_can_follow(p, op, 0));
	cg_seg_free(&run);
	cg_seg_free(&other);
}

/* Learning records where a piece it finds again starts. */
static void test_learn_adds_start(void **state)
{
	(void)state;
	static struct cg_tmpl anchor;
	struct cg_seg runs[3] = { { 0 } };
	for (int r = 0; r < 3; r++) {
		add(&runs[r], &kb, 100 + (unsigned)r, 0); /* varies */
		add(&runs[r], &kb, 200 + (unsigned)r, 0); /* varies */
		add(&runs[r], &kb, 300 + (unsigned)r, 0); /* varies */
		add_n(&runs[r], &ka, 1, 5);
	}
	struct cg_build b[CG_MAX_BUILDS];
	struct cg_learn_out res;
	/* The history is per place: the first op's shape and the anchor, or
	 * the anchor alone where the first op varies. Without an anchor (after
	 * a boundary) and with the first op varying, no run is compared with
	 * another. */
	for (int r = 0; r < 3; r++)
		assert_int_equal(learn(&runs[r], NULL, 2, 0, b, &res), 0);
	for (int r = 0; r < 3; r++)
		cg_seg_free(&runs[r]);

	/* First op fixed: the piece at offset 3 is found on the second run. */
	for (int r = 0; r < 3; r++) {
		add(&runs[r], &kc, 1, 0);
		add(&runs[r], &kb, 200 + (unsigned)r, 0);
		add(&runs[r], &kb, 300 + (unsigned)r, 0);
		add_n(&runs[r], &ka, 1, 5);
	}
	assert_int_equal(learn(&runs[0], &anchor, 2, 0, b, &res), 0);
	assert_int_equal(learn(&runs[1], &anchor, 2, 0, b, &res), 1);
	assert_int_equal(b[0].start, 3);
	assert_int_equal(b[0].n, 5);
	/* Built as the engine does (start key at its place)... */
	struct cg_tmpl *t = cg_tmpl_new(runs[1].ops + 3, 5, 0);
	assert_non_null(t);
	assert_null(cg_table_add(t, 64));
	assert_int_equal(t->nstarts, 0);
	/* ...or, found again by learning, given its place. */
	assert_int_equal(learn(&runs[2], &anchor, 2, 0, b, &res), 0);
	struct cg_tmpl *out[8];
	assert_int_equal(cg_table_starting(&runs[2].ops[3], 0, &anchor, 3, out, 8), 1);
	assert_ptr_equal(out[0], t);
	for (int r = 0; r < 3; r++)
		cg_seg_free(&runs[r]);

	/* After a template, with the first op varying (a kernel over a growing
	 * sequence): compared with the last run after that template. */
	static struct cg_tmpl anchor2;
	for (int r = 0; r < 3; r++) {
		add(&runs[r], &kb, 500 + (unsigned)r, 0);
		add_n(&runs[r], &ka, 50, 6);
	}
	assert_int_equal(learn(&runs[0], &anchor2, 2, 0, b, &res), 0);
	assert_int_equal(learn(&runs[1], &anchor2, 2, 0, b, &res), 1);
	assert_int_equal(b[0].start, 1);
	assert_int_equal(b[0].n, 6);
	for (int r = 0; r < 3; r++)
		cg_seg_free(&runs[r]);
}

/* Back-off: a template that keeps diverging is left alone for a while,
 * longer each round, and for good after a few rounds. */
static void test_backoff(void **state)
{
	(void)state;
	struct cg_seg run = { 0 };
	add_n(&run, &ka, 1, 4);
	struct cg_tmpl *t = cg_tmpl_new(run.ops, run.n, 0);
	assert_null(cg_table_add(t, 64));
	struct cg_tmpl *out[8];
	uint64_t segno = 100;
	for (int round = 1; round <= 3; round++) {
		for (int i = 0; i < 3; i++)
			cg_tmpl_note_divergence(t, segno);
		assert_int_equal(t->state, CG_T_READY); /* three are not enough */
		cg_tmpl_note_divergence(t, segno);
		assert_int_equal(t->state, CG_T_BACKOFF);
		uint64_t until = t->backoff_until;
		assert_true(until > segno + 16);
		assert_int_equal(cg_table_starting(&run.ops[0], until - 1, NULL, 0, out, 8), 0);
		assert_int_equal(cg_table_starting(&run.ops[0], until, NULL, 0, out, 8), 1);
		assert_int_equal(t->state, CG_T_READY);
		segno = until;
	}
	/* Divergences are weighed against replays. */
	for (int i = 0; i < 10; i++)
		cg_tmpl_note_replay(t, 0, segno, 0);
	for (int i = 0; i < 5; i++)
		cg_tmpl_note_divergence(t, segno);
	assert_int_equal(t->state, CG_T_READY);
	for (int i = 0; i < 6; i++)
		cg_tmpl_note_divergence(t, segno);
	assert_int_equal(t->state, CG_T_DEAD); /* the fourth round */
	assert_int_equal(cg_table_starting(&run.ops[0], segno + 100000, NULL, 0, out, 8), 0);
	cg_seg_free(&run);
}

/* A replay that costs more host time than the eager calls backs off (when
 * asked to), not for one slow sample. */
static void test_backoff_slow(void **state)
{
	(void)state;
	struct cg_seg run = { 0 };
	add_n(&run, &ka, 1, 4);
	struct cg_tmpl *t = cg_tmpl_new(run.ops, run.n, 1000);
	assert_null(cg_table_add(t, 64));
	for (int i = 0; i < 20; i++)
		cg_tmpl_note_replay(t, 5000, 1, 0);
	assert_int_equal(t->state, CG_T_READY); /* backoff_slow = 0 */
	struct cg_tmpl *u = cg_tmpl_new(run.ops, run.n, 1000);
	for (int i = 0; i < 3; i++)
		cg_tmpl_note_replay(u, 5000, 1, 1);
	assert_int_equal(u->state, CG_T_BACKOFF);
	struct cg_tmpl *v = cg_tmpl_new(run.ops, run.n, 1000);
	for (int i = 0; i < 20; i++)
		cg_tmpl_note_replay(v, 500, 1, 1);
	assert_int_equal(v->state, CG_T_READY); /* faster */
	/* One sample a hundred times slower (the host taken away) is one
	 * outlier; slower at every sample, it backs off a few samples on. */
	cg_tmpl_note_replay(v, 50000, 1, 1);
	assert_int_equal(v->state, CG_T_READY);
	for (int i = 0; i < 8 && v->state == CG_T_READY; i++)
		cg_tmpl_note_replay(v, 5000, 1, 1);
	assert_int_equal(v->state, CG_T_BACKOFF);
	/* A launch that built its graph again is not a sample (six of them
	 * in a row, each slower than eager by far: as samples, even bounded
	 * at twice the mean, they would lift it past eager's). */
	struct cg_tmpl *w = cg_tmpl_new(run.ops, run.n, 1000);
	for (int i = 0; i < 20; i++) {
		w->rebuilt = i >= 4 && i < 10;
		cg_tmpl_note_replay(w, w->rebuilt ? 3000000 : 500, 1, 1);
	}
	assert_int_equal(w->state, CG_T_READY);
	assert_int_equal(w->rebuilt, 0);
	/* One whose graph updates kernel nodes from the host gets an
	 * updater first, once; slower still, it backs off. */
	struct cg_tmpl *x = cg_tmpl_new(run.ops, run.n, 1000);
	x->host_updates = 1;
	for (int i = 0; i < 3; i++)
		cg_tmpl_note_replay(x, 5000, 1, 1);
	assert_int_equal(x->state, CG_T_READY);
	assert_int_equal(x->want_updater, 1);
	assert_int_equal(x->replays, 1); /* sampled afresh */
	x->want_updater = 0;
	for (int i = 0; i < 3; i++)
		cg_tmpl_note_replay(x, 5000, 1, 1);
	assert_int_equal(x->state, CG_T_BACKOFF);
	cg_tmpl_free(u);
	cg_tmpl_free(w);
	cg_tmpl_free(x);
	cg_tmpl_free(v);
	cg_seg_free(&run);
}

/* The table keeps the most recently used within its size. */
static void test_table_lru(void **state)
{
	(void)state;
	struct cg_seg run = { 0 };
	add_n(&run, &ka, 1, 8);
	struct cg_tmpl *t[4];
	for (int i = 0; i < 3; i++) {
		t[i] = cg_tmpl_new(run.ops + i, 2, 0);
		assert_null(cg_table_add(t[i], 3));
	}
	cg_table_touch(t[0]);
	t[3] = cg_tmpl_new(run.ops + 3, 2, 0);
	struct cg_tmpl *gone = cg_table_add(t[3], 3);
	assert_ptr_equal(gone, t[1]); /* the least recently used */
	assert_null(gone->next);
	assert_false(t[1]->in_table);
	assert_int_equal(cg_table_count(), 3);
	assert_ptr_equal(cg_table_find(run.ops + 1, 2), NULL);
	assert_ptr_equal(cg_table_find(run.ops, 2), t[0]);
	cg_tmpl_free(gone);
	cg_seg_free(&run);
}

/* Templates that start alike: the one replayed most is found first, and
 * how many first ops two share in shape is counted once and kept for the
 * pair, not for a template made again where a freed one was. */
static void test_starting_alike(void **state)
{
	(void)state;
	struct cg_seg four = { 0 }, three = { 0 }, other = { 0 };
	add_n(&four, &ka, 1, 4);
	add_n(&three, &ka, 1, 2);
	add(&three, &kb, 1, 0);
	add_n(&other, &ka, 1, 3);
	struct cg_tmpl *a = cg_tmpl_new(four.ops, four.n, 0), *b = cg_tmpl_new(three.ops, three.n, 0);
	assert_non_null(a);
	assert_non_null(b);
	assert_null(cg_table_add(a, 64));
	assert_null(cg_table_add(b, 64));
	struct cg_tmpl *out[8];
	a->replays = 5;
	b->replays = 2;
	assert_int_equal(cg_table_starting(&four.ops[0], 0, NULL, 0, out, 8), 2);
	assert_ptr_equal(out[0], a);
	assert_ptr_equal(out[1], b);
	a->replays = 1;
	assert_int_equal(cg_table_starting(&four.ops[0], 0, NULL, 0, out, 8), 2);
	assert_ptr_equal(out[0], b);
	assert_ptr_equal(out[1], a);
	assert_int_equal(cg_tmpl_shared(a, b), 2);
	assert_int_equal(cg_tmpl_shared(a, b), 2);
	assert_int_equal(cg_tmpl_shared(b, a), 2);
	/* b goes; a template of other shapes comes, perhaps where b was. */
	cg_table_remove(b);
	cg_tmpl_free(b);
	struct cg_tmpl *c = cg_tmpl_new(other.ops, other.n, 0);
	assert_non_null(c);
	assert_int_equal(cg_tmpl_shared(a, c), 3);
	cg_tmpl_free(c);
	cg_seg_free(&four);
	cg_seg_free(&three);
	cg_seg_free(&other);
}

/* The pieces of a chain of n ops: 8, 24, 72, ... with a rest shorter than
 * half a piece joining the last. */
static int pieces(size_t n, size_t first, size_t *out)
{
	int k = 0;
	for (size_t done = 0; done < n && k < 16; k++) {
		out[k] = cg_chain_piece_len(done, n - done, first);
		assert_true(out[k] > 0);
		done += out[k];
	}
	return k;
}

static void test_chain_pieces(void **state)
{
	(void)state;
	size_t p[16];
	assert_int_equal(pieces(104, 8, p), 3);
	assert_int_equal(p[0], 8);
	assert_int_equal(p[1], 24);
	assert_int_equal(p[2], 72);
	assert_int_equal(pieces(320, 8, p), 4);
	assert_int_equal(p[3], 216);
	/* A rest of 20 (under half of 72) joins the third piece. */
	assert_int_equal(pieces(124, 8, p), 3);
	assert_int_equal(p[2], 92);
	/* A rest of 46 (half of 72 or more) is a piece of its own. */
	assert_int_equal(pieces(150, 8, p), 4);
	assert_int_equal(p[2], 72);
	assert_int_equal(p[3], 46);
	/* The engine's 40-op run: 8 and the rest. */
	assert_int_equal(pieces(40, 8, p), 2);
	assert_int_equal(p[0], 8);
	assert_int_equal(p[1], 32);
	/* Short runs: one piece. */
	assert_int_equal(pieces(11, 8, p), 1);
	assert_int_equal(p[0], 11);
	assert_int_equal(pieces(12, 8, p), 2);
	/* Another first piece. */
	assert_int_equal(pieces(40, 10, p), 2);
	assert_int_equal(p[0], 10);
	assert_int_equal(p[1], 30);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_exact_repeat, setup, teardown),
		cmocka_unit_test_setup_teardown(test_min_repeats_three, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failed_not_retried, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pieces_around_varying_op, setup, teardown),
		cmocka_unit_test_setup_teardown(test_other_kernel_recurs_whole, setup, teardown),
		cmocka_unit_test_setup_teardown(test_alternating_kernels_whole, setup, teardown),
		cmocka_unit_test_setup_teardown(test_same_kernel_other_shape_no_wait, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_short_pieces, setup, teardown),
		cmocka_unit_test_setup_teardown(test_whole_known, setup, teardown),
		cmocka_unit_test_setup_teardown(test_start_keys, setup, teardown),
		cmocka_unit_test_setup_teardown(test_starting_alike, setup, teardown),
		cmocka_unit_test_setup_teardown(test_learn_adds_start, setup, teardown),
		cmocka_unit_test_setup_teardown(test_backoff, setup, teardown),
		cmocka_unit_test_setup_teardown(test_backoff_slow, setup, teardown),
		cmocka_unit_test_setup_teardown(test_table_lru, setup, teardown),
		cmocka_unit_test(test_chain_pieces),
	};
	return cmocka_run_group_tests_name("learn", tests, NULL, NULL);
}
