/* Unit tests of edge inference (src/dag.h): stream order, event record and
 * wait pairs inside a segment, waits on events recorded before it, and the
 * legacy default stream against blocking and non-blocking streams. */
#include <stdlib.h>

#include "dag.h"
#include "unit.h"

static struct ut_kernel kn;
static const uint32_t sz1[] = { 8 };

/* Streams the blocking callback calls non-blocking, and how often it was
 * asked about each stream. */
struct blocking_info {
	CUstream nonblocking[4];
	int nnb;
	CUstream asked[16];
	int nasked;
};

static int blocking_cb(void *cookie, CUstream s)
{
	struct blocking_info *b = cookie;
	if (b->nasked < 16)
		b->asked[b->nasked] = s;
	b->nasked++;
	for (int i = 0; i < b->nnb; i++)
		if (b->nonblocking[i] == s)
			return 0;
	return 1;
}

static int setup(void **state)
{
	(void)state;
	fk_install();
	ut_kernel_init(&kn, 0x1000, 1, sz1);
	return 0;
}

/* A test's segment: ops with their argument storage. */
struct seg {
	struct cg_op ops[32];
	struct ut_kop k[32];
	size_t n;
};

static void kernel(struct seg *s, CUstream st)
{
	struct ut_kop *k = &s->k[s->n];
	ut_kop(k, &kn, st, 1, (uint64_t[]){ s->n });
	s->ops[s->n++] = k->op;
}

static void record(struct seg *s, CUstream st, CUevent e)
{
	ut_evop(&s->ops[s->n++], CG_OP_RECORD, st, e);
}

static void wait_ev(struct seg *s, CUstream st, CUevent e)
{
	ut_evop(&s->ops[s->n++], CG_OP_WAIT, st, e);
}

/* Whether op i depends on exactly the listed ops (in any order, once each). */
static void assert_deps(const struct cg_dag *d, size_t i, size_t n, const uint32_t *want)
{
	uint32_t a = d->dep_start[i], b = d->dep_start[i + 1];
	if (b - a != n)
		fail_msg("op %zu has %u dependencies, expected %zu", i, b - a, n);
	for (size_t k = 0; k < n; k++) {
		int found = 0;
		for (uint32_t j = a; j < b; j++)
			found += d->deps[j] == want[k];
		if (found != 1)
			fail_msg("op %zu: dependency on op %u found %d times", i, want[k], found);
	}
	/* Edges only ever point back, at nodes. */
	for (uint32_t j = a; j < b; j++) {
		assert_true(d->deps[j] < i);
		assert_true(d->is_node[d->deps[j]]);
	}
}

#define DEPS(d, i, ...)                                                                 \
	do {                                                                            \
		const uint32_t want_[] = { __VA_ARGS__ };                               \
		assert_deps(d, i, sizeof want_ / sizeof want_[0], want_);               \
	} while (0)
#define NO_DEPS(d, i) assert_deps(d, i, 0, NULL)

static void test_chain(void **state)
{
	(void)state;
	struct seg s = { .n = 0 };
	for (int i = 0; i < 4; i++)
		kernel(&s, UT_STREAM(1));
	struct blocking_info b = { .nnb = 0 };
	struct cg_dag d;
	assert_int_equal(cg_dag_build(&d, s.ops, s.n, blocking_cb, &b), 0);
	assert_int_equal(d.n, 4);
	assert_int_equal(d.nstreams, 1);
	assert_ptr_equal(d.streams[0], UT_STREAM(1));
	assert_int_equal(d.next_wait, 0);
	NO_DEPS(&d, 0);
	for (uint32_t i = 1; i < 4; i++) {
		assert_true(d.is_node[i]);
		DEPS(&d, i, i - 1);
	}
	assert_int_equal(b.nasked, 1); /* once per stream */
	cg_dag_free(&d);
}

/* s1: k0, record e1; s2: wait e1, k3, record e2; s1: wait e2, k6. */
static void test_fork_join(void **state)
{
	(void)state;
	struct seg s = { .n = 0 };
	CUstream s1 = UT_STREAM(1), s2 = UT_STREAM(2);
	kernel(&s, s1);                   /* 0 */
	record(&s, s1, UT_EVENT(1));      /* 1 */
	wait_ev(&s, s2, UT_EVENT(1));     /* 2 */
	kernel(&s, s2);                   /* 3 */
	record(&s, s2, UT_EVENT(2));      /* 4 */
	wait_ev(&s, s1, UT_EVENT(2));     /* 5 */
	kernel(&s, s1);                   /* 6 */
	struct blocking_info b = { .nnb = 0 };
	struct cg_dag d;
	assert_int_equal(cg_dag_build(&d, s.ops, s.n, blocking_cb, &b), 0);
	assert_int_equal(d.nstreams, 2);
	assert_ptr_equal(d.streams[0], s1);
	assert_ptr_equal(d.streams[1], s2);
	assert_int_equal(d.next_wait, 0); /* both waits are inside */
	assert_false(d.is_node[2]);
	assert_false(d.is_node[5]);
	NO_DEPS(&d, 0);
	DEPS(&d, 1, 0);
	DEPS(&d, 3, 1);    /* the fork: the record on s1 */
	DEPS(&d, 4, 3);
	DEPS(&d, 6, 1, 4); /* the join: s1's own last node and the record on s2 */
	cg_dag_free(&d);
}

/* A wait on an event recorded twice orders after the latest record. */
static void test_wait_latest_record(void **state)
{
	(void)state;
	struct seg s = { .n = 0 };
	CUstream s1 = UT_STREAM(1), s2 = UT_STREAM(2);
	record(&s, s1, UT_EVENT(1));  /* 0 */
	kernel(&s, s1);               /* 1 */
	record(&s, s1, UT_EVENT(1));  /* 2 */
	wait_ev(&s, s2, UT_EVENT(1)); /* 3 */
	kernel(&s, s2);               /* 4 */
	struct blocking_info b = { .nnb = 0 };
	struct cg_dag d;
	assert_int_equal(cg_dag_build(&d, s.ops, s.n, blocking_cb, &b), 0);
	DEPS(&d, 4, 2);
	cg_dag_free(&d);
}

/* An event recorded before the segment: the launch waits for it. */
static void test_external_wait(void **state)
{
	(void)state;
	struct seg s = { .n = 0 };
	CUstream s1 = UT_STREAM(1), s2 = UT_STREAM(2);
	kernel(&s, s1);               /* 0 */
	wait_ev(&s, s2, UT_EVENT(7)); /* 1: recorded before the segment */
	kernel(&s, s2);               /* 2 */
	wait_ev(&s, s1, UT_EVENT(8)); /* 3: recorded later in the segment: still external */
	kernel(&s, s1);               /* 4 */
	record(&s, s1, UT_EVENT(8));  /* 5 */
	struct blocking_info b = { .nnb = 0 };
	struct cg_dag d;
	assert_int_equal(cg_dag_build(&d, s.ops, s.n, blocking_cb, &b), 0);
	assert_int_equal(d.next_wait, 2);
	assert_ptr_equal(d.ext_wait[0], UT_EVENT(7));
	assert_ptr_equal(d.ext_wait[1], UT_EVENT(8));
	assert_false(d.is_node[1]);
	NO_DEPS(&d, 2); /* ordered by the launch's wait, not by an edge */
	DEPS(&d, 4, 0);
	DEPS(&d, 5, 4);
	cg_dag_free(&d);
}

/* The legacy stream waits for blocking streams and they for it; a
 * non-blocking stream orders against neither. */
static void test_legacy_blocking(void **state)
{
	(void)state;
	struct seg s = { .n = 0 };
	CUstream blk = UT_STREAM(1), nb = UT_STREAM(2);
	kernel(&s, blk);              /* 0 */
	kernel(&s, nb);               /* 1 */
	kernel(&s, CU_STREAM_LEGACY); /* 2 */
	kernel(&s, blk);              /* 3 */
	kernel(&s, nb);               /* 4 */
	kernel(&s, CU_STREAM_LEGACY); /* 5 */
	struct blocking_info b = { .nonblocking = { nb }, .nnb = 1 };
	struct cg_dag d;
	assert_int_equal(cg_dag_build(&d, s.ops, s.n, blocking_cb, &b), 0);
	assert_int_equal(d.nstreams, 3);
	NO_DEPS(&d, 0);
	NO_DEPS(&d, 1);
	DEPS(&d, 2, 0);    /* legacy after the blocking stream's work only */
	DEPS(&d, 3, 0, 2); /* the blocking stream after the legacy stream */
	DEPS(&d, 4, 1);    /* the non-blocking one in its own order */
	DEPS(&d, 5, 2, 3);
	/* The callback decides, and is not asked about the legacy stream. */
	for (int i = 0; i < b.nasked && i < 16; i++)
		assert_ptr_not_equal(b.asked[i], CU_STREAM_LEGACY);
	assert_int_equal(b.nasked, 2);
	cg_dag_free(&d);

	/* The same ops with the first stream called non-blocking. */
	struct blocking_info all_nb = { .nonblocking = { blk, nb }, .nnb = 2 };
	assert_int_equal(cg_dag_build(&d, s.ops, s.n, blocking_cb, &all_nb), 0);
	NO_DEPS(&d, 2);
	DEPS(&d, 3, 0);
	DEPS(&d, 5, 2);
	cg_dag_free(&d);
}

/* The per-thread default stream is an ordinary blocking stream: its own
 * order, and the legacy stream's barrier. */
static void test_per_thread(void **state)
{
	(void)state;
	struct seg s = { .n = 0 };
	kernel(&s, CU_STREAM_PER_THREAD); /* 0 */
	kernel(&s, CU_STREAM_PER_THREAD); /* 1 */
	kernel(&s, CU_STREAM_LEGACY);     /* 2 */
	kernel(&s, CU_STREAM_PER_THREAD); /* 3 */
	struct blocking_info b = { .nnb = 0 };
	struct cg_dag d;
	assert_int_equal(cg_dag_build(&d, s.ops, s.n, blocking_cb, &b), 0);
	assert_int_equal(d.nstreams, 2);
	assert_ptr_equal(d.streams[0], CU_STREAM_PER_THREAD);
	DEPS(&d, 1, 0);
	DEPS(&d, 2, 1);
	DEPS(&d, 3, 1, 2);
	assert_int_equal(b.nasked, 1);
	assert_ptr_equal(b.asked[0], CU_STREAM_PER_THREAD);
	cg_dag_free(&d);
}

/* A node reached through several frontiers is one edge. */
static void test_duplicates_dropped(void **state)
{
	(void)state;
	struct seg s = { .n = 0 };
	CUstream s1 = UT_STREAM(1), s2 = UT_STREAM(2);
	kernel(&s, s1);               /* 0 */
	record(&s, s1, UT_EVENT(1));  /* 1 */
	wait_ev(&s, s1, UT_EVENT(1)); /* 2: a wait on its own stream's last node */
	wait_ev(&s, s1, UT_EVENT(1)); /* 3: twice */
	kernel(&s, s1);               /* 4 */
	kernel(&s, s2);               /* 5 */
	record(&s, s1, UT_EVENT(2));  /* 6 */
	wait_ev(&s, s2, UT_EVENT(2)); /* 7: s2's frontier is {5, 6} */
	kernel(&s, CU_STREAM_LEGACY); /* 8: s1 {6} and s2 {5, 6} */
	struct blocking_info b = { .nnb = 0 };
	struct cg_dag d;
	assert_int_equal(cg_dag_build(&d, s.ops, s.n, blocking_cb, &b), 0);
	DEPS(&d, 4, 1);
	DEPS(&d, 8, 5, 6);
	cg_dag_free(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_chain, setup),
		cmocka_unit_test_setup(test_fork_join, setup),
		cmocka_unit_test_setup(test_wait_latest_record, setup),
		cmocka_unit_test_setup(test_external_wait, setup),
		cmocka_unit_test_setup(test_legacy_blocking, setup),
		cmocka_unit_test_setup(test_per_thread, setup),
		cmocka_unit_test_setup(test_duplicates_dropped, setup),
	};
	return cmocka_run_group_tests_name("dag", tests, NULL, NULL);
}
