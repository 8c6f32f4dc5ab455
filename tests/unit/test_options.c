/* Unit tests of the options table: strict parsing, clear refusal of bad
 * values, and pass-through after one. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "cgraft_i.h"

static const struct cg_options defaults = {
	.enable = 1, .log_level = CG_LOG_ERROR + 5, .min_repeats = 2, .window_lo = 0,
	.window_hi = LONG_MAX, .min_ops = 3, .max_graphs = 64, .max_segment_ops = 4096,
	.max_variants = 4, .backoff_slow = 1, .driver_ops = 1,
};

static const char *const vars[] = { "CGRAFT_ENABLE", "CGRAFT_LOG", "CGRAFT_STATS", "CGRAFT_REPORT",
				    "CGRAFT_MIN_REPEATS", "CGRAFT_WARMUP", "CGRAFT_WINDOW",
				    "CGRAFT_MIN_OPS", "CGRAFT_MAX_GRAPHS", "CGRAFT_MAX_SEGMENT_OPS",
				    "CGRAFT_MAX_VARIANTS", "CGRAFT_BACKOFF_SLOW", "CGRAFT_DRIVER_OPS" };

static int reset(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
		unsetenv(vars[i]);
	cg_opt = defaults;
	cg_opt.log_level = -1; /* silence the refusal lines */
	return 0;
}

static void test_defaults_untouched(void **state)
{
	(void)state;
	assert_int_equal(cg_options_load(), 0);
	assert_int_equal(cg_opt.enable, 1);
	assert_int_equal(cg_opt.min_repeats, 2);
	assert_int_equal(cg_opt.window_hi, LONG_MAX);
}

static void test_bool_words(void **state)
{
	(void)state;
	const char *yes[] = { "1", "true", "YES", "on" }, *no[] = { "0", "false", "No", "OFF" };
	for (int i = 0; i < 4; i++) {
		setenv("CGRAFT_REPORT", yes[i], 1);
		assert_int_equal(cg_options_load(), 0);
		assert_int_equal(cg_opt.report, 1);
		setenv("CGRAFT_REPORT", no[i], 1);
		assert_int_equal(cg_options_load(), 0);
		assert_int_equal(cg_opt.report, 0);
	}
}

static void test_counts_with_suffixes(void **state)
{
	(void)state;
	setenv("CGRAFT_MAX_SEGMENT_OPS", "8K", 1);
	setenv("CGRAFT_MIN_OPS", "7", 1);
	assert_int_equal(cg_options_load(), 0);
	assert_int_equal(cg_opt.max_segment_ops, 8192);
	assert_int_equal(cg_opt.min_ops, 7);
	setenv("CGRAFT_MAX_SEGMENT_OPS", "1M", 1);
	assert_int_equal(cg_options_load(), 0);
	assert_int_equal(cg_opt.max_segment_ops, 1 << 20);
}

static void test_bad_values_refused(void **state)
{
	(void)state;
	const char *bad[][2] = {
		{ "CGRAFT_MIN_OPS", "abc" },   { "CGRAFT_MIN_OPS", "-3" },
		{ "CGRAFT_MIN_OPS", "3x" },    { "CGRAFT_MIN_OPS", "" },
		{ "CGRAFT_MIN_OPS", "0" },     { "CGRAFT_ENABLE", "2" },
		{ "CGRAFT_ENABLE", "maybe" },  { "CGRAFT_LOG", "loud" },
		{ "CGRAFT_WINDOW", "5" },      { "CGRAFT_WINDOW", "9:3" },
		{ "CGRAFT_WINDOW", "a:b" },    { "CGRAFT_STATS", "" },
		{ "CGRAFT_MAX_GRAPHS", "99999999999999999999" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		reset(NULL);
		setenv(bad[i][0], bad[i][1], 1);
		assert_int_equal(cg_options_load(), -EINVAL);
		assert_int_equal(cg_opt.enable, 0); /* pass-through */
	}
}

static void test_window_ranges(void **state)
{
	(void)state;
	setenv("CGRAFT_WINDOW", "100:5000", 1);
	assert_int_equal(cg_options_load(), 0);
	assert_int_equal(cg_opt.window_lo, 100);
	assert_int_equal(cg_opt.window_hi, 5000);
	setenv("CGRAFT_WINDOW", "10:", 1);
	assert_int_equal(cg_options_load(), 0);
	assert_int_equal(cg_opt.window_lo, 10);
	assert_int_equal(cg_opt.window_hi, LONG_MAX);
	setenv("CGRAFT_WINDOW", ":7", 1);
	assert_int_equal(cg_options_load(), 0);
	assert_int_equal(cg_opt.window_lo, 0);
	assert_int_equal(cg_opt.window_hi, 7);
}

static void test_log_levels(void **state)
{
	(void)state;
	setenv("CGRAFT_LOG", "debug", 1);
	assert_int_equal(cg_options_load(), 0);
	assert_int_equal(cg_opt.log_level, CG_LOG_DEBUG);
	setenv("CGRAFT_LOG", "1", 1);
	assert_int_equal(cg_options_load(), 0);
	assert_int_equal(cg_opt.log_level, CG_LOG_WARN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_defaults_untouched, reset),
		cmocka_unit_test_setup(test_bool_words, reset),
		cmocka_unit_test_setup(test_counts_with_suffixes, reset),
		cmocka_unit_test_setup(test_bad_values_refused, reset),
		cmocka_unit_test_setup(test_window_ranges, reset),
		cmocka_unit_test_setup(test_log_levels, reset),
	};
	return cmocka_run_group_tests_name("options", tests, NULL, NULL);
}
