/* Unit tests of the stats file: %p expansion and the JSON object's keys. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "options.h"
#include "stats.h"

static void test_expand_pid(void **state)
{
	(void)state;
	char out[64];
	assert_int_equal(cg_stats_expand_path("/tmp/s-%p.json", 4242, out, sizeof out), 0);
	assert_string_equal(out, "/tmp/s-4242.json");
	assert_int_equal(cg_stats_expand_path("plain", 1, out, sizeof out), 0);
	assert_string_equal(out, "plain");
	assert_int_equal(cg_stats_expand_path("%p%p", 7, out, sizeof out), 0);
	assert_string_equal(out, "77");
	assert_int_equal(cg_stats_expand_path("0123456789", 1, out, 8), -ENAMETOOLONG);
}

static char *json_of_stats(void)
{
	static char *buf; /* static: GCC takes the local open_memstream writes to for dangling */
	static size_t len;
	buf = NULL;
	len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	cg_stats_write_json(f);
	fclose(f);
	return buf;
}

static void test_json_keys(void **state)
{
	(void)state;
	memset(&cg_stats, 0, sizeof cg_stats);
	cg_stat_add(calls[CG_E_cudaLaunchKernel], 2);
	cg_stat_add(calls[CG_E_cuLaunchKernel], 3);
	cg_stat_add(boundaries[CG_E_cudaStreamSynchronize], 1);
	cg_stat_add(graph_launches, 5);
	cg_count_fallback(CG_WHY_CAPTURE);
	cg_count_fallback(CG_WHY_HELD_TOO_LONG);
	char *j = json_of_stats();
	const char *keys[] = { "\"calls\"", "\"driver_calls\"", "\"boundary_calls\"", "\"segments\"",
			       "\"graphs_built\"", "\"graph_launches\": 5", "\"ops_total\"", "\"ops_replayed\"",
			       "\"divergences\"", "\"pieces_eager\"", "\"node_updates\"", "\"variants\"",
			       "\"fallbacks\"", "\"cudaLaunchKernel\": 2", "\"cuLaunchKernel\": 3",
			       "\"cudaStreamSynchronize\": 1", "\"program_capture\": 1", "\"held_too_long\": 1",
			       "\"enabled\": true" };
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
		if (!strstr(j, keys[i]))
			fail_msg("%s missing from %s", keys[i], j);
	/* Only counted calls are listed, each under its layer. */
	assert_null(strstr(j, "\"cudaMemcpyAsync\""));
	size_t rt = (size_t)(strstr(j, "\"calls\"") - j), drv = (size_t)(strstr(j, "\"driver_calls\"") - j);
	size_t rtk = (size_t)(strstr(j, "\"cudaLaunchKernel\"") - j), drvk = (size_t)(strstr(j, "\"cuLaunchKernel\"") - j);
	assert_true(rt < rtk && rtk < drv);
	assert_true(drvk > drv);
	free(j);
}

static void test_json_balanced(void **state)
{
	(void)state;
	memset(&cg_stats, 0, sizeof cg_stats);
	char *j = json_of_stats();
	int depth = 0;
	for (char *p = j; *p; p++) {
		depth += *p == '{';
		depth -= *p == '}';
		assert_true(depth >= 0);
	}
	assert_int_equal(depth, 0);
	free(j);
}

/* Every reason has a name and says what it means, and the names are
 * distinct. */
static void test_reason_names(void **state)
{
	(void)state;
	for (int i = 0; i < CG_WHY_COUNT; i++) {
		assert_non_null(cg_reasons[i].name);
		assert_non_null(cg_reasons[i].help);
		assert_true(strlen(cg_reasons[i].help) > 10);
		for (int k = 0; k < i; k++)
			assert_string_not_equal(cg_reasons[i].name, cg_reasons[k].name);
	}
}

static void test_any_calls(void **state)
{
	(void)state;
	memset(&cg_stats, 0, sizeof cg_stats);
	assert_false(cg_stats_any_calls());
	cg_stat_add(calls[CG_E_cudaMemcpyAsync], 1);
	assert_true(cg_stats_any_calls());
	memset(&cg_stats, 0, sizeof cg_stats);
	cg_stat_add(ops_total, 1);
	assert_true(cg_stats_any_calls());
}

static void test_report(void **state)
{
	(void)state;
	memset(&cg_stats, 0, sizeof cg_stats);
	cg_stat_add(ops_total, 10);
	cg_stat_add(ops_replayed, 4);
	cg_count_fallback(CG_WHY_UNSUPPORTED_API);
	cg_stat_add(boundaries[CG_E_cudaStreamSynchronize], 7);
	cg_stat_add(boundaries[CG_E_cudaDeviceSynchronize], 9);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	cg_stats_write_report(f);
	fclose(f);
	assert_non_null(strstr(buf, "ops seen 10, replayed in graphs 4 (40.0%)"));
	assert_non_null(strstr(buf, "eager because unsupported_api: 1 (a call cgraft does not model"));
	/* The boundaries that ended most segments, most first. */
	const char *a = strstr(buf, "cudaDeviceSynchronize: 9"), *b = strstr(buf, "cudaStreamSynchronize: 7");
	assert_non_null(a);
	assert_non_null(b);
	assert_true(a < b);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_expand_pid),
		cmocka_unit_test(test_json_keys),
		cmocka_unit_test(test_json_balanced),
		cmocka_unit_test(test_reason_names),
		cmocka_unit_test(test_any_calls),
		cmocka_unit_test(test_report),
	};
	return cmocka_run_group_tests_name("stats", tests, NULL, NULL);
}
