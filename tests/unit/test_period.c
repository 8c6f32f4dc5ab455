/* Unit tests of the period detector (src/segment.h): a loop without a
 * blocking point is cut where its op stream repeats, at an iteration, not at
 * a layer repeated inside one; short periods are grouped; max_ops cuts. */
#include "unit.h"

static struct ut_kernel ka, kb, kc;
static const uint32_t sz1[] = { 8 };

static int setup(void **state)
{
	(void)state;
	fk_install();
	ut_kernel_init(&ka, 0x1000, 1, sz1);
	ut_kernel_init(&kb, 0x2000, 1, sz1);
	ut_kernel_init(&kc, 0x3000, 1, sz1);
	return 0;
}

/* Feeds ops to a segment as the engine does (hashed, copied), stepping the
 * detector after each; returns the step of the last op. */
struct feed {
	struct cg_seg seg;
	struct cg_period pd;
	size_t min_ops, max_ops;
	size_t found, origin;
};

static enum cg_period_step feed(struct feed *f, const struct ut_kernel *k, uint64_t arg)
{
	struct ut_kop op;
	ut_shaped(ut_kop(&op, k, UT_STREAM(1), 1, &arg));
	assert_int_equal(cg_seg_push(&f->seg, &op.op, 0, NULL, NULL), 0);
	return cg_period_step(&f->pd, &f->seg, f->min_ops, f->max_ops, &f->found, &f->origin);
}

static void feed_init(struct feed *f, size_t min_ops, size_t max_ops)
{
	memset(f, 0, sizeof *f);
	f->min_ops = min_ops;
	f->max_ops = max_ops;
}

/* a b c a b c: two iterations of three ops. */
static void test_two_halves(void **state)
{
	(void)state;
	struct feed f;
	feed_init(&f, 2, 4096);
	const struct ut_kernel *it[] = { &ka, &kb, &kc };
	for (int r = 0; r < 2; r++)
		for (int i = 0; i < 3; i++) {
			enum cg_period_step st = feed(&f, it[i], 100 + (uint64_t)i);
			if (r == 1 && i == 2) {
				assert_int_equal(st, CG_PERIOD_HALVES);
				assert_int_equal(f.found, 3);
			} else {
				assert_int_equal(st, CG_PERIOD_NONE);
			}
		}
	cg_seg_free(&f.seg);
}

/* A loop counter or RNG offset in one op does not hide the iteration: most
 * of the ops carry the same arguments. */
static void test_halves_with_a_counter(void **state)
{
	(void)state;
	struct feed f;
	feed_init(&f, 2, 4096);
	enum cg_period_step st = CG_PERIOD_NONE;
	for (uint64_t r = 0; r < 2; r++) {
		feed(&f, &ka, 7);
		feed(&f, &kb, 8);
		st = feed(&f, &kc, r); /* the step */
	}
	assert_int_equal(st, CG_PERIOD_HALVES);
	assert_int_equal(f.found, 3);
	cg_seg_free(&f.seg);
}

/* One layer kernel three times with other weights, then again: the
 * iteration is the three layers, not one layer. */
static void test_layers_are_not_a_period(void **state)
{
	(void)state;
	struct feed f;
	feed_init(&f, 2, 4096);
	const uint64_t w[] = { 0x1000, 0x2000, 0x3000 };
	for (int r = 0; r < 2; r++)
		for (int i = 0; i < 3; i++) {
			enum cg_period_step st = feed(&f, &ka, w[i]);
			if (r == 1 && i == 2) {
				assert_int_equal(st, CG_PERIOD_HALVES);
				assert_int_equal(f.found, 3);
			} else {
				/* [L1 L2]: same shapes, other arguments: not halves. */
				assert_int_equal(st, CG_PERIOD_NONE);
			}
		}
	cg_seg_free(&f.seg);

	/* Nothing recurs with its arguments at all: no period. */
	feed_init(&f, 2, 4096);
	for (uint64_t i = 0; i < 40; i++)
		assert_int_equal(feed(&f, &ka, 0x1000 * (i + 1)), CG_PERIOD_NONE);
	cg_seg_free(&f.seg);
}

/* min_ops: a period is looked for only from min_ops / 2 ops on. */
static void test_min_ops(void **state)
{
	(void)state;
	struct feed f;
	feed_init(&f, 8, 4096);
	enum cg_period_step st = CG_PERIOD_NONE;
	int n = 0;
	while (st == CG_PERIOD_NONE && n < 64) {
		st = feed(&f, n % 2 ? &kb : &ka, 5);
		n++;
	}
	assert_int_equal(st, CG_PERIOD_HALVES);
	assert_int_equal(f.found, 4); /* a b a b, twice: 2 is shorter than min_ops / 2 */
	assert_int_equal(n, 8);
	cg_seg_free(&f.seg);
}

/* One kernel over and over: a period found within a few ops, grouped into
 * segments of at least CG_PERIOD_GROUP ops (or max_ops). */
static void test_period_of_one(void **state)
{
	(void)state;
	struct feed f;
	feed_init(&f, 2, 4096);
	enum cg_period_step st = CG_PERIOD_NONE;
	int n = 0;
	while (st == CG_PERIOD_NONE && n < 8) {
		st = feed(&f, &ka, 1);
		n++;
	}
	assert_int_equal(st, CG_PERIOD_HALVES);
	assert_true(f.found <= 2);
	assert_true(cg_period_group(f.found, 4096) >= CG_PERIOD_GROUP);
	cg_seg_free(&f.seg);

	assert_int_equal(cg_period_group(1, 4096), 64);
	assert_int_equal(cg_period_group(2, 4096), 64);
	assert_int_equal(cg_period_group(3, 4096) % 3, 0);
	assert_true(cg_period_group(3, 4096) >= 64 && cg_period_group(3, 4096) < 64 + 3);
	assert_int_equal(cg_period_group(64, 4096), 64);
	assert_int_equal(cg_period_group(100, 4096), 100);
	/* max_ops bounds the group. */
	assert_int_equal(cg_period_group(1, 40), 40);
	assert_int_equal(cg_period_group(3, 50), 48);
	assert_int_equal(cg_period_group(30, 50), 30);
}

/* A period of one is found where it first completes: at the second op. */
static void test_period_of_one_exact(void **state)
{
	(void)state;
	struct feed f;
	feed_init(&f, 2, 4096);
	assert_int_equal(feed(&f, &ka, 1), CG_PERIOD_NONE);
	assert_int_equal(feed(&f, &ka, 1), CG_PERIOD_HALVES);
	assert_int_equal(f.found, 1);
	cg_seg_free(&f.seg);
}

/* A known period cuts at each multiple. */
static void test_known(void **state)
{
	(void)state;
	struct feed f;
	feed_init(&f, 2, 4096);
	f.pd.known = 5;
	for (int i = 0; i < 4; i++)
		assert_int_equal(feed(&f, &ka, (uint64_t)i), CG_PERIOD_NONE);
	assert_int_equal(feed(&f, &kb, 0), CG_PERIOD_KNOWN);
	cg_seg_free(&f.seg);
}

/* No period: cut at max_ops; a candidate twice as long as max_ops is not
 * kept. */
static void test_max_ops(void **state)
{
	(void)state;
	struct feed f;
	feed_init(&f, 2, 10);
	const struct ut_kernel *k[] = { &ka, &kb, &kc };
	for (int i = 0; i < 9; i++)
		assert_int_equal(feed(&f, k[i % 3], (uint64_t)i), CG_PERIOD_NONE); /* arguments never recur */
	assert_int_equal(feed(&f, &ka, 99), CG_PERIOD_MAX);
	cg_seg_free(&f.seg);

	/* a b c d e f, then a: the candidate of 6 would need 12 ops. */
	feed_init(&f, 2, 10);
	struct ut_kernel more[6];
	for (int i = 0; i < 6; i++) {
		ut_kernel_init(&more[i], 0x9000 + 0x100 * (uintptr_t)i, 1, sz1);
		feed(&f, &more[i], 1);
	}
	feed(&f, &more[0], 1);
	assert_int_equal(f.pd.at[0].ncand, 0);
	cg_seg_free(&f.seg);
}

/* x, then a b c a b c: an op that never recurs before the iterations (a
 * timing event) does not hide their period. */
static void test_one_off_first(void **state)
{
	(void)state;
	struct feed f;
	feed_init(&f, 2, 4096);
	assert_int_equal(feed(&f, &kc, 999), CG_PERIOD_NONE);
	const struct ut_kernel *it[] = { &ka, &kb, &ka };
	enum cg_period_step st = CG_PERIOD_NONE;
	for (int r = 0; r < 2 && st == CG_PERIOD_NONE; r++)
		for (int i = 0; i < 3; i++) {
			st = feed(&f, it[i], 100 + (uint64_t)i);
			if (st != CG_PERIOD_NONE)
				break;
		}
	assert_int_equal(st, CG_PERIOD_HALVES);
	assert_int_equal(f.found, 3);
	assert_int_equal(f.origin, 1);
	assert_int_equal(f.seg.n, 7);
	cg_seg_free(&f.seg);
}

/* With a minimum run, halves are reported as whole periods once they are
 * that long: a b, repeated, reports 128 at op 256 for a minimum of 256. */
static void test_min_run(void **state)
{
	(void)state;
	struct feed f;
	feed_init(&f, 2, 4096);
	f.pd.min_run = 256;
	const struct ut_kernel *it[] = { &ka, &kb };
	for (int i = 0; i < 255; i++)
		assert_int_equal(feed(&f, it[i % 2], 100 + (uint64_t)(i % 2)), CG_PERIOD_NONE);
	assert_int_equal(feed(&f, it[1], 101), CG_PERIOD_HALVES);
	assert_int_equal(f.found, 128);
	cg_seg_free(&f.seg);
	/* A stretch of periods shorter than the minimum, then something else:
	 * nothing (left to the iteration's end). */
	feed_init(&f, 2, 4096);
	f.pd.min_run = 256;
	for (int i = 0; i < 100; i++)
		assert_int_equal(feed(&f, it[i % 2], 100 + (uint64_t)(i % 2)), CG_PERIOD_NONE);
	for (int i = 0; i < 100; i++)
		assert_int_equal(feed(&f, &kc, (uint64_t)i), CG_PERIOD_NONE);
	cg_seg_free(&f.seg);
}

/* An early run reports halves from that long, but where stretches of the
 * same ops ended short CG_PERIOD_SHORT_TRIES times (whichever op they were
 * entered at): there the minimum holds again. Other stretches still report
 * early. */
static void test_early_run(void **state)
{
	(void)state;
	const struct ut_kernel *it[] = { &ka, &kb };
	uint64_t key = 0;
	for (int run = 0; run < 2; run++)
		for (int shorts = 0; shorts <= CG_PERIOD_SHORT_TRIES; shorts++) {
			struct feed f;
			feed_init(&f, 2, 4096);
			f.pd.min_run = 256;
			f.pd.early_run = 32;
			cg_period_note_short(&f.pd, 0x5eed); /* another stretch */
			for (int s = 0; s < shorts && run; s++)
				cg_period_note_short(&f.pd, key);
			enum cg_period_step st = CG_PERIOD_NONE;
			int i = 0;
			for (; i < 256 && st == CG_PERIOD_NONE; i++)
				st = feed(&f, it[(i + shorts) % 2], 100 + (uint64_t)((i + shorts) % 2));
			assert_int_equal(st, CG_PERIOD_HALVES);
			int early = !run || shorts < CG_PERIOD_SHORT_TRIES;
			assert_int_equal(i, early ? 32 : 256);
			assert_int_equal(f.found, early ? 16 : 128);
			/* Entered at a or at b: the same key. */
			uint64_t k = cg_period_key(f.seg.ops + f.origin, f.found);
			if (!run && shorts)
				assert_true(k == key);
			key = k;
			cg_seg_free(&f.seg);
		}
}

/* Ops that join the segment unseen by the detector (held ops the engine
 * submitted eagerly): halves that pair a kernel with a copy are no
 * iteration, and the copy is not read as a kernel (its bytes are no
 * kernel's: reading them as one would crash). */
static void test_unseen_ops_checked(void **state)
{
	(void)state;
	struct feed f;
	feed_init(&f, 2, 4096);
	assert_int_equal(feed(&f, &ka, 1), CG_PERIOD_NONE);
	assert_int_equal(feed(&f, &kb, 1), CG_PERIOD_NONE);
	assert_int_equal(feed(&f, &ka, 2), CG_PERIOD_NONE); /* a period of 2 is born */
	struct ut_kop op;
	const struct ut_kernel *unseen[] = { &kb, &ka, &kb };
	const uint64_t args[] = { 1, 1, 1 };
	for (int i = 0; i < 3; i++) {
		ut_shaped(ut_kop(&op, unseen[i], UT_STREAM(1), 1, &args[i]));
		assert_int_equal(cg_seg_push(&f.seg, &op.op, 0, NULL, NULL), 0);
	}
	struct cg_op copy;
	memset(&copy, 0x41, sizeof copy);
	copy.kind = CG_OP_COPY;
	copy.flags = 0;
	copy.stream = UT_STREAM(1);
	copy.shape = f.seg.ops[2].shape; /* even where the hashes of shape meet */
	assert_int_equal(cg_seg_push(&f.seg, &copy, 0, NULL, NULL), 0); /* op 6, where op 2 is a kernel */
	/* Op 7 is alike op 5: the period of 2 holds there, and its halves
	 * [0,4) and [4,8) share most values but one pair's kinds. */
	assert_int_equal(feed(&f, &kb, 1), CG_PERIOD_NONE);
	cg_seg_free(&f.seg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_two_halves, setup),
		cmocka_unit_test_setup(test_halves_with_a_counter, setup),
		cmocka_unit_test_setup(test_layers_are_not_a_period, setup),
		cmocka_unit_test_setup(test_min_ops, setup),
		cmocka_unit_test_setup(test_period_of_one, setup),
		cmocka_unit_test_setup(test_period_of_one_exact, setup),
		cmocka_unit_test_setup(test_known, setup),
		cmocka_unit_test_setup(test_max_ops, setup),
		cmocka_unit_test_setup(test_one_off_first, setup),
		cmocka_unit_test_setup(test_min_run, setup),
		cmocka_unit_test_setup(test_early_run, setup),
		cmocka_unit_test_setup(test_unseen_ops_checked, setup),
	};
	return cmocka_run_group_tests_name("period", tests, NULL, NULL);
}
