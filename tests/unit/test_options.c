/* Unit tests of the options table: strict parsing, clear refusal of bad
 * values, and pass-through after one. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "log.h"
#include "options.h"

/* The defaults, as cgraft starts with them (a copy taken before any test). */
static struct cg_options defaults;

static const char *const vars[] = { "CGRAFT_ENABLE", "CGRAFT_LOG", "CGRAFT_STATS", "CGRAFT_REPORT",
				    "CGRAFT_MIN_REPEATS", "CGRAFT_WARMUP", "CGRAFT_WINDOW",
				    "CGRAFT_MIN_OPS", "CGRAFT_MAX_GRAPHS", "CGRAFT_MAX_SEGMENT_OPS",
				    "CGRAFT_MAX_VARIANTS", "CGRAFT_MAX_HOLD_US", "CGRAFT_BACKOFF_SLOW",
				    "CGRAFT_DRIVER_OPS" };

static int reset(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
		unsetenv(vars[i]);
	cg_opt = defaults;
	cg_log_level = -1; /* silence the refusal lines */
	return 0;
}

static int take_defaults(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
		if (getenv(vars[i]))
			return -1; /* the defaults below would not be cgraft's */
	defaults = cg_opt;
	return 0;
}

static void test_defaults(void **state)
{
	(void)state;
	assert_int_equal(defaults.enable, 1);
	assert_int_equal(defaults.log_level, CG_LOG_WARN);
	assert_null(defaults.stats_path);
	assert_int_equal(defaults.report, 0);
	assert_int_equal(defaults.min_repeats, 2);
	assert_int_equal(defaults.warmup, 0);
	assert_int_equal(defaults.window_lo, 0);
	assert_int_equal(defaults.window_hi, LONG_MAX);
	assert_int_equal(defaults.min_ops, 2);
	assert_int_equal(defaults.max_graphs, 64);
	assert_int_equal(defaults.max_segment_ops, 4096);
	assert_int_equal(defaults.max_variants, 4);
	assert_int_equal(defaults.max_hold_us, 1000);
	assert_int_equal(defaults.backoff_slow, 1);
	assert_int_equal(defaults.driver_ops, 1);
}

static void test_defaults_untouched(void **state)
{
	(void)state;
	assert_int_equal(cg_options_load(), 0);
	assert_int_equal(cg_opt.enable, 1);
	assert_int_equal(cg_opt.min_repeats, 2);
	assert_int_equal(cg_opt.min_ops, 2);
	assert_int_equal(cg_opt.max_hold_us, 1000);
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
		{ "CGRAFT_MAX_GRAPHS", "9999999999G" },
		{ "CGRAFT_MIN_REPEATS", "0" },  { "CGRAFT_MAX_SEGMENT_OPS", "1" },
		{ "CGRAFT_MAX_HOLD_US", "0" },  { "CGRAFT_MAX_HOLD_US", "1.5" },
		{ "CGRAFT_MAX_VARIANTS", "0" }, { "CGRAFT_BACKOFF_SLOW", "" },
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

static void test_hold_and_flags(void **state)
{
	(void)state;
	setenv("CGRAFT_MAX_HOLD_US", "250", 1);
	setenv("CGRAFT_BACKOFF_SLOW", "off", 1);
	setenv("CGRAFT_DRIVER_OPS", "no", 1);
	setenv("CGRAFT_WARMUP", "0", 1); /* 0 is accepted where the minimum is 0 */
	assert_int_equal(cg_options_load(), 0);
	assert_int_equal(cg_opt.max_hold_us, 250);
	assert_int_equal(cg_opt.backoff_slow, 0);
	assert_int_equal(cg_opt.driver_ops, 0);
	assert_int_equal(cg_opt.warmup, 0);
	setenv("CGRAFT_MAX_HOLD_US", "1k", 1);
	assert_int_equal(cg_options_load(), 0);
	assert_int_equal(cg_opt.max_hold_us, 1024);
}

static void test_stats_path(void **state)
{
	(void)state;
	setenv("CGRAFT_STATS", "/tmp/cg-%p.json", 1);
	assert_int_equal(cg_options_load(), 0);
	assert_non_null(cg_opt.stats_path);
	assert_string_equal(cg_opt.stats_path, "/tmp/cg-%p.json");
}

/* Every option is described, in both forms. */
static void test_describe(void **state)
{
	(void)state;
	for (int md = 0; md < 2; md++) {
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);
		assert_non_null(f);
		cg_options_describe(f, md);
		fclose(f);
		for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
			assert_non_null(strstr(buf, vars[i]));
		assert_non_null(strstr(buf, md ? "| `CGRAFT_MAX_HOLD_US` | 1000 |" : "CGRAFT_MAX_HOLD_US (default 1000)"));
		free(buf);
	}
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
		cmocka_unit_test(test_defaults),
		cmocka_unit_test_setup(test_defaults_untouched, reset),
		cmocka_unit_test_setup(test_bool_words, reset),
		cmocka_unit_test_setup(test_counts_with_suffixes, reset),
		cmocka_unit_test_setup(test_bad_values_refused, reset),
		cmocka_unit_test_setup(test_window_ranges, reset),
		cmocka_unit_test_setup(test_hold_and_flags, reset),
		cmocka_unit_test_setup(test_stats_path, reset),
		cmocka_unit_test_setup(test_describe, reset),
		cmocka_unit_test_setup(test_log_levels, reset),
	};
	return cmocka_run_group_tests_name("options", tests, take_defaults, NULL);
}
