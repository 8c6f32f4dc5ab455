/* Unit tests of CGRAFT_PROFILE's figures on synthetic intervals (busy union,
 * gaps, eager and replayed), CUPTI records read into intervals, the writers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "profile.h"

#if __has_include(<cupti_activity.h>)
#include <cupti_activity.h>
#define HAVE_CUPTI 1
#else
#define HAVE_CUPTI 0
#endif

static struct cg_prof_iv iv(uint64_t start, uint64_t end, int graph)
{
	struct cg_prof_iv v = { .start = start, .end = end, .graph = (uint8_t)graph };
	return v;
}

static void test_empty(void **state)
{
	(void)state;
	struct cg_prof_summary s;
	memset(&s, 0xff, sizeof s);
	cg_prof_analyse(NULL, 0, &s);
	assert_int_equal(s.ops, 0);
	assert_int_equal(s.window_ns, 0);
	assert_int_equal(s.busy_ns, 0);
	assert_int_equal(s.gaps.count, 0);
	assert_int_equal(s.part[CG_PROF_EAGER].ops, 0);
	assert_int_equal(s.part[CG_PROF_REPLAYED].busy_ns, 0);
}

static void test_single(void **state)
{
	(void)state;
	struct cg_prof_iv v[] = { iv(1000, 1250, 0) };
	struct cg_prof_summary s;
	cg_prof_analyse(v, 1, &s);
	assert_int_equal(s.ops, 1);
	assert_int_equal(s.first_ns, 1000);
	assert_int_equal(s.last_ns, 1250);
	assert_int_equal(s.window_ns, 250);
	assert_int_equal(s.busy_ns, 250);
	assert_int_equal(s.gaps.count, 0);
	assert_int_equal(s.part[CG_PROF_EAGER].busy_ns, 250);
}

/* Two streams overlapping count once; the gap is the stretch nothing ran. */
static void test_overlapping(void **state)
{
	(void)state;
	struct cg_prof_iv v[] = { iv(0, 10, 0), iv(5, 15, 0), iv(20, 30, 0) };
	struct cg_prof_summary s;
	cg_prof_analyse(v, 3, &s);
	assert_int_equal(s.window_ns, 30);
	assert_int_equal(s.busy_ns, 25);
	assert_int_equal(s.gaps.count, 1);
	assert_int_equal(s.gaps.total_ns, 5);
	assert_int_equal(s.gaps.median_ns, 5);
	assert_int_equal(s.gaps.p90_ns, 5);
	assert_int_equal(s.part[CG_PROF_EAGER].gaps.count, 1);
	assert_int_equal(s.part[CG_PROF_REPLAYED].gaps.count, 0);
}

/* Operations inside a longer one add nothing; touching ones leave no gap. */
static void test_nested(void **state)
{
	(void)state;
	struct cg_prof_iv v[] = { iv(0, 100, 0), iv(10, 20, 0), iv(30, 40, 0), iv(100, 110, 0), iv(150, 160, 0) };
	struct cg_prof_summary s;
	cg_prof_analyse(v, 5, &s);
	assert_int_equal(s.window_ns, 160);
	assert_int_equal(s.busy_ns, 120);
	assert_int_equal(s.gaps.count, 1);
	assert_int_equal(s.gaps.total_ns, 40);
}

static void test_unsorted(void **state)
{
	(void)state;
	struct cg_prof_iv a[] = { iv(0, 10, 0), iv(5, 15, 1), iv(20, 30, 0), iv(40, 45, 1), iv(47, 50, 0) };
	struct cg_prof_iv b[] = { a[3], a[0], a[4], a[2], a[1] };
	struct cg_prof_summary sa, sb;
	cg_prof_analyse(a, 5, &sa);
	cg_prof_analyse(b, 5, &sb);
	assert_memory_equal(&sa, &sb, sizeof sa);
	assert_int_equal(sb.first_ns, 0);
	assert_int_equal(sb.last_ns, 50);
	assert_int_equal(sb.busy_ns, 15 + 10 + 5 + 3);
	assert_int_equal(sb.gaps.count, 3);
	assert_int_equal(sb.gaps.total_ns, 5 + 10 + 2);
	/* Sorted by start in place. */
	for (int i = 1; i < 5; i++)
		assert_true(b[i - 1].start <= b[i].start);
}

static void test_all_in_graph(void **state)
{
	(void)state;
	struct cg_prof_iv v[] = { iv(0, 10, 1), iv(12, 20, 1), iv(25, 30, 1), iv(28, 40, 1) };
	struct cg_prof_summary s;
	cg_prof_analyse(v, 4, &s);
	const struct cg_prof_part *e = &s.part[CG_PROF_EAGER], *r = &s.part[CG_PROF_REPLAYED];
	assert_int_equal(s.busy_ns, 10 + 8 + 15);
	assert_int_equal(r->busy_ns, s.busy_ns);
	assert_int_equal(r->ops, 4);
	assert_int_equal(e->ops, 0);
	assert_int_equal(e->busy_ns, 0);
	assert_int_equal(e->gaps.count, 0);
	assert_int_equal(r->gaps.count, 2);
	assert_int_equal(r->gaps.total_ns, 2 + 5);
	assert_int_equal(r->gaps.median_ns, 2);
	assert_int_equal(r->gaps.p90_ns, 5);
}

/* Each part's busy time is the union of its own operations; a gap goes to
 * the part of the operation that ends it. */
static void test_split(void **state)
{
	(void)state;
	struct cg_prof_iv v[] = {
		iv(0, 100, 0),   /* eager */
		iv(50, 150, 1),  /* replayed, overlapping it */
		iv(160, 170, 1), /* gap 10, ended by a replayed op */
		iv(200, 210, 0), /* gap 30, ended by an eager op */
		iv(205, 230, 0),
		iv(300, 301, 1), /* gap 70 */
	};
	struct cg_prof_summary s;
	cg_prof_analyse(v, 6, &s);
	const struct cg_prof_part *e = &s.part[CG_PROF_EAGER], *r = &s.part[CG_PROF_REPLAYED];
	assert_int_equal(s.busy_ns, 150 + 10 + 30 + 1);
	assert_int_equal(e->busy_ns, 100 + 30);
	assert_int_equal(r->busy_ns, 100 + 10 + 1);
	assert_int_equal(e->ops, 3);
	assert_int_equal(r->ops, 3);
	assert_int_equal(s.gaps.count, 3);
	assert_int_equal(e->gaps.count, 1);
	assert_int_equal(e->gaps.total_ns, 30);
	assert_int_equal(r->gaps.count, 2);
	assert_int_equal(r->gaps.total_ns, 80);
	assert_int_equal(r->gaps.median_ns, 10);
	assert_int_equal(r->gaps.p90_ns, 70);
	assert_int_equal(s.gaps.median_ns, 30);
	assert_int_equal(s.gaps.p90_ns, 70);
	assert_int_equal(s.gaps.count, e->gaps.count + r->gaps.count);
	assert_int_equal(s.gaps.total_ns + s.busy_ns, s.window_ns);
}

/* Nearest rank: of 10 gaps, the median is the 5th smallest, p90 the 9th. */
static void test_percentiles(void **state)
{
	(void)state;
	struct cg_prof_iv v[11];
	uint64_t t = 0;
	static const uint64_t gaps[10] = { 70, 10, 100, 40, 20, 90, 30, 60, 80, 50 };
	for (int i = 0; i < 11; i++) {
		v[i] = iv(t, t + 5, i % 2);
		if (i < 10)
			t += 5 + gaps[i];
	}
	struct cg_prof_summary s;
	cg_prof_analyse(v, 11, &s);
	assert_int_equal(s.gaps.count, 10);
	assert_int_equal(s.gaps.total_ns, 550);
	assert_int_equal(s.gaps.median_ns, 50);
	assert_int_equal(s.gaps.p90_ns, 90);
	/* Gap i is ended by op i + 1: odd ops (replayed) end gaps 0, 2, 4, 6, 8. */
	assert_int_equal(s.part[CG_PROF_REPLAYED].gaps.count, 5);
	assert_int_equal(s.part[CG_PROF_REPLAYED].gaps.median_ns, 70); /* of 20 30 70 80 100 */
	assert_int_equal(s.part[CG_PROF_REPLAYED].gaps.p90_ns, 100);
	assert_int_equal(s.part[CG_PROF_EAGER].gaps.median_ns, 50);    /* of 10 40 50 60 90 */
	assert_int_equal(s.part[CG_PROF_EAGER].gaps.p90_ns, 90);
}

/* Zero-length and reversed intervals are points, not negative time. */
static void test_degenerate(void **state)
{
	(void)state;
	struct cg_prof_iv v[] = { iv(10, 10, 0), iv(20, 15, 0), iv(30, 40, 0) };
	struct cg_prof_summary s;
	cg_prof_analyse(v, 3, &s);
	assert_int_equal(s.ops, 3);
	assert_int_equal(s.busy_ns, 10);
	assert_int_equal(s.window_ns, 30);
	assert_int_equal(s.gaps.count, 2);
	assert_int_equal(s.gaps.total_ns, 20);
}

/* Random intervals against a brute-force count of covered nanoseconds. */
static void test_random_against_bitmap(void **state)
{
	(void)state;
	enum { N = 300, T = 4000 };
	static unsigned char covered[T], covered_part[2][T];
	struct cg_prof_iv v[N];
	unsigned seed = 12345;
	for (int round = 0; round < 20; round++) {
		memset(covered, 0, sizeof covered);
		memset(covered_part, 0, sizeof covered_part);
		for (int i = 0; i < N; i++) {
			seed = seed * 1103515245u + 12345u;
			uint64_t a = (seed >> 8) % (T - 50);
			seed = seed * 1103515245u + 12345u;
			uint64_t len = (seed >> 8) % (round % 2 ? 40 : 8);
			int g = (seed >> 20) & 1;
			v[i] = iv(a, a + len, g);
			for (uint64_t t = a; t < a + len; t++)
				covered[t] = covered_part[g][t] = 1;
		}
		struct cg_prof_summary s;
		cg_prof_analyse(v, N, &s);
		uint64_t busy = 0, bp[2] = { 0, 0 };
		for (int t = 0; t < T; t++) {
			busy += covered[t];
			bp[0] += covered_part[0][t];
			bp[1] += covered_part[1][t];
		}
		assert_int_equal(s.busy_ns, busy);
		assert_int_equal(s.part[0].busy_ns, bp[0]);
		assert_int_equal(s.part[1].busy_ns, bp[1]);
		assert_int_equal(s.busy_ns + s.gaps.total_ns, s.window_ns);
		assert_int_equal(s.part[0].gaps.total_ns + s.part[1].gaps.total_ns, s.gaps.total_ns);
		assert_true(s.gaps.median_ns <= s.gaps.p90_ns);
	}
}

static void test_records(void **state)
{
	(void)state;
	struct cg_prof_iv v;
	const char *name;
	unsigned dev;
#if HAVE_CUPTI
	CUpti_ActivityKernel10 k;
	memset(&k, 0, sizeof k);
	k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	k.start = 1000;
	k.end = 1500;
	k.streamId = 13;
	k.deviceId = 2;
	k.graphId = 7;
	k.name = "k_axpb";
	assert_int_equal(cg_prof_from_record(&k, &v, &name, &dev), 1);
	assert_int_equal(v.start, 1000);
	assert_int_equal(v.end, 1500);
	assert_int_equal(v.stream, 13);
	assert_int_equal(v.kind, CG_PROF_KERNEL);
	assert_int_equal(v.graph, 1);
	assert_int_equal(dev, 2);
	assert_string_equal(name, "k_axpb");
	/* KERNEL records share the layout; graphId 0: eager. */
	k.kind = CUPTI_ACTIVITY_KIND_KERNEL;
	k.graphId = 0;
	k.name = NULL;
	assert_int_equal(cg_prof_from_record(&k, &v, &name, &dev), 1);
	assert_int_equal(v.graph, 0);
	assert_null(name);
	/* No timestamps: counted, not an interval. */
	k.start = 0;
	assert_int_equal(cg_prof_from_record(&k, &v, &name, &dev), 0);
	k.start = 2000;
	assert_int_equal(cg_prof_from_record(&k, &v, &name, &dev), 0);

	CUpti_ActivityMemcpy6 m;
	memset(&m, 0, sizeof m);
	m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
	m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
	m.start = 10;
	m.end = 20;
	m.streamId = 3;
	m.graphId = 1;
	assert_int_equal(cg_prof_from_record(&m, &v, &name, &dev), 1);
	assert_int_equal(v.kind, CG_PROF_MEMCPY);
	assert_int_equal(v.name, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD);
	assert_int_equal(v.graph, 1);

	CUpti_ActivityMemset4 ms;
	memset(&ms, 0, sizeof ms);
	ms.kind = CUPTI_ACTIVITY_KIND_MEMSET;
	ms.start = 30;
	ms.end = 31;
	ms.streamId = 4;
	assert_int_equal(cg_prof_from_record(&ms, &v, &name, &dev), 1);
	assert_int_equal(v.kind, CG_PROF_MEMSET);
	assert_int_equal(v.graph, 0);

	CUpti_Activity other = { .kind = CUPTI_ACTIVITY_KIND_DRIVER };
	assert_int_equal(cg_prof_from_record(&other, &v, &name, &dev), -1);
#else
	char rec[256] = { 0 };
	assert_int_equal(cg_prof_from_record(rec, &v, &name, &dev), -1);
#endif
	assert_int_equal(cg_prof_from_record(NULL, &v, &name, &dev), -1);
}

static char *capture(void (*fn)(FILE *, const struct cg_prof_result *), const struct cg_prof_result *r)
{
	static char *buf; /* static: GCC takes the local open_memstream writes to for dangling */
	static size_t len;
	buf = NULL;
	len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	fn(f, r);
	fclose(f);
	return buf;
}

static struct cg_prof_result sample_result(void)
{
	struct cg_prof_result r;
	memset(&r, 0, sizeof r);
	r.available = 1;
	r.devices = 1;
	r.records = r.stored = 6;
	r.cap = 4u << 20;
	r.buffers = 1;
	r.buffer_bytes = 4u << 20;
	struct cg_prof_iv v[] = { iv(0, 100, 0), iv(50, 150, 1), iv(160, 170, 1), iv(200, 210, 0), iv(205, 230, 0),
				  iv(300, 400, 1) };
	cg_prof_analyse(v, 6, &r.sum);
	return r;
}

static void test_json(void **state)
{
	(void)state;
	struct cg_prof_result r = sample_result();
	char *j = capture(cg_prof_write_json, &r);
	const char *keys[] = { "\"profile\": {", "\"available\": true", "\"window_ns\": 400", "\"busy_ns\": 290",
			       "\"busy_share\": 0.725000", "\"gaps\": {\"count\": 3, \"total_ns\": 110",
			       "\"median_ns\": 30", "\"p90_ns\": 70", "\"eager\": {\"ops\": 3, \"busy_ns\": 130",
			       "\"replayed\": {\"ops\": 3, \"busy_ns\": 210", "\"cost\": {\"records\": 6",
			       "\"buffer_ns\"", "\"devices\": 1" };
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
		if (!strstr(j, keys[i]))
			fail_msg("%s missing from %s", keys[i], j);
	int depth = 0;
	for (char *p = j; *p; p++) {
		depth += *p == '{';
		depth -= *p == '}';
		assert_true(depth >= 0);
	}
	assert_int_equal(depth, 0);
	/* A member of the stats object: a comma and a new line after it. */
	assert_non_null(strstr(j, "},\n"));
	assert_int_equal(j[strlen(j) - 1], '\n');
	free(j);

	memset(&r, 0, sizeof r);
	snprintf(r.why, sizeof r.why, "libcupti.so.13 not found (tried \"a\\b\")");
	j = capture(cg_prof_write_json, &r);
	assert_string_equal(j, "  \"profile\": {\"available\": false, \"why\": "
			       "\"libcupti.so.13 not found (tried \\\"a\\\\b\\\")\"},\n");
	free(j);
}

static void test_report(void **state)
{
	(void)state;
	struct cg_prof_result r = sample_result();
	char *t = capture(cg_prof_write_report, &r);
	const char *lines[] = { "cgraft:   profile: GPU busy 72.5% of 400 ns (290 ns, 6 ops), idle gaps 3 (median 30 ns, "
				"p90 70 ns, total 110 ns)\n",
				"cgraft:   profile: eager: 3 ops, busy 32.5% (130 ns), gaps 1",
				"cgraft:   profile: replayed (in graphs): 3 ops, busy 52.5% (210 ns), gaps 2",
				"cgraft:   profile cost: 6 records in 1 buffers of 4096 KiB" };
	for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
		if (!strstr(t, lines[i]))
			fail_msg("'%s' missing from %s", lines[i], t);
	assert_null(strstr(t, "past the cap"));
	free(t);

	r.over_cap = 5;
	r.untimed = 2;
	t = capture(cg_prof_write_report, &r);
	assert_non_null(strstr(t, "5 ops past the cap of 4194304 were counted, not analysed"));
	assert_non_null(strstr(t, "2 records without timestamps, 0 dropped by CUPTI"));
	free(t);

	memset(&r, 0, sizeof r);
	snprintf(r.why, sizeof r.why, "no CUPTI here");
	t = capture(cg_prof_write_report, &r);
	assert_string_equal(t, "cgraft:   profile: unavailable (no CUPTI here)\n");
	free(t);
}

static void test_trace(void **state)
{
	(void)state;
	struct cg_prof_iv v[] = {
		{ .start = 100, .end = 200, .stream = 7, .name = 1, .kind = CG_PROF_KERNEL, .graph = 1 },
		{ .start = 150, .end = 160, .stream = 8, .name = 1, .kind = CG_PROF_MEMCPY },
		{ .start = 170, .end = 180, .stream = 8, .kind = CG_PROF_MEMSET },
		{ .start = 190, .end = 195, .stream = 9, .name = 2, .kind = CG_PROF_KERNEL },
		{ .start = 196, .end = 197, .stream = 9, .name = 0, .kind = CG_PROF_KERNEL },
	};
	const char *names[] = { NULL, "_Z6k_axpbPfPKfiff", "void k<int>(int)" };
	static char *buf;
	static size_t len;
	buf = NULL;
	FILE *f = open_memstream(&buf, &len);
	cg_prof_write_trace(f, v, 5, names, 3);
	fclose(f);
	assert_string_equal(buf, "# cgraft profile trace: start_ns end_ns kind graph stream name\n"
				 "100 200 kernel 1 7 _Z6k_axpbPfPKfiff\n"
				 "150 160 memcpy 0 8 HtoD\n"
				 "170 180 memset 0 8 memset\n"
				 "190 195 kernel 0 9 void_k<int>(int)\n"
				 "196 197 kernel 0 9 ?\n");
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_single),
		cmocka_unit_test(test_overlapping),
		cmocka_unit_test(test_nested),
		cmocka_unit_test(test_unsorted),
		cmocka_unit_test(test_all_in_graph),
		cmocka_unit_test(test_split),
		cmocka_unit_test(test_percentiles),
		cmocka_unit_test(test_degenerate),
		cmocka_unit_test(test_random_against_bitmap),
		cmocka_unit_test(test_records),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_report),
		cmocka_unit_test(test_trace),
	};
	return cmocka_run_group_tests_name("profile", tests, NULL, NULL);
}
