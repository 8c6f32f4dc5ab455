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

#include "cgraft_i.h"

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
	char *buf = NULL;
	size_t len = 0;
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
	cg_count_call(CG_API_cudaLaunchKernel);
	cg_count_call(CG_API_cudaLaunchKernel);
	cg_stat_add(graph_launches, 5);
	cg_count_fallback(CG_WHY_CAPTURE);
	char *j = json_of_stats();
	const char *keys[] = { "\"calls\"", "\"segments\"", "\"graphs_built\"", "\"graph_launches\": 5",
			       "\"ops_total\"", "\"ops_replayed\"", "\"divergences\"", "\"fallbacks\"",
			       "\"cudaLaunchKernel\": 2", "\"program_capture\": 1" };
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
		assert_non_null(strstr(j, keys[i]));
	/* Only counted calls are listed. */
	assert_null(strstr(j, "\"cudaMemcpyAsync\""));
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_expand_pid),
		cmocka_unit_test(test_json_keys),
		cmocka_unit_test(test_json_balanced),
	};
	return cmocka_run_group_tests_name("stats", tests, NULL, NULL);
}
