/* Unit tests of what the launcher reads from the options table: every row
 * described, and a check of one value that decides as cg_options_load does
 * and changes nothing. */
#include <errno.h>
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

static struct cg_options defaults;

static int take_defaults(void **state)
{
	(void)state;
	struct cg_option_info info;
	for (size_t i = 0; !cg_options_info(i, &info); i++)
		unsetenv(info.name);
	defaults = cg_opt;
	cg_log_level = -1; /* silence the refusal lines */
	return 0;
}

static void test_rows(void **state)
{
	(void)state;
	static const char *const bools[] = { "CGRAFT_ENABLE", "CGRAFT_REPORT", "CGRAFT_DRIVER_OPS",
					     "CGRAFT_BACKOFF_SLOW", "CGRAFT_PROFILE", "CGRAFT_NCCL", "CGRAFT_CALLBACKS",
					     "CGRAFT_DEVICE_UPDATES" };
	struct cg_option_info info;
	size_t n = cg_options_count();
	assert_true(n >= 16);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(cg_options_info(i, &info), 0);
		assert_int_equal(strncmp(info.name, "CGRAFT_", 7), 0);
		assert_non_null(info.deflt);
		assert_true(info.what && info.what[0]);
		assert_true(info.accepted && info.accepted[0]);
		assert_int_equal(cg_options_find(info.name), (int)i);
		int is_bool = 0;
		for (size_t b = 0; b < sizeof bools / sizeof bools[0]; b++)
			is_bool |= !strcmp(info.name, bools[b]);
		assert_int_equal(info.metavar == NULL, is_bool);
	}
	assert_int_equal(cg_options_info(n, &info), -ENOENT);
	assert_int_equal(cg_options_find("CGRAFT_NO_SUCH"), -ENOENT);
	assert_int_equal(cg_options_find("CGRAFT_STAT"), -ENOENT);
}

static int same_as_defaults(void)
{
	const struct cg_options *a = &cg_opt, *d = &defaults;
	return a->enable == d->enable && a->log_level == d->log_level && a->stats_path == d->stats_path &&
	       a->report == d->report && a->min_repeats == d->min_repeats && a->warmup == d->warmup &&
	       a->window_lo == d->window_lo && a->window_hi == d->window_hi && a->min_ops == d->min_ops &&
	       a->max_graphs == d->max_graphs && a->max_segment_ops == d->max_segment_ops &&
	       a->max_variants == d->max_variants && a->max_hold_us == d->max_hold_us &&
	       a->backoff_slow == d->backoff_slow && a->driver_ops == d->driver_ops && a->profile == d->profile &&
	       a->profile_trace == d->profile_trace && a->nccl == d->nccl && a->callbacks == d->callbacks;
}

/* The check and the load agree on every value, and the check leaves the
 * options as they were. */
static void test_check_agrees_with_load(void **state)
{
	(void)state;
	static const char *const cases[][2] = {
		{ "CGRAFT_MIN_OPS", "abc" },     { "CGRAFT_MIN_OPS", "0" },      { "CGRAFT_MIN_OPS", "7" },
		{ "CGRAFT_MIN_OPS", "" },        { "CGRAFT_MIN_OPS", "-3" },     { "CGRAFT_MAX_SEGMENT_OPS", "1" },
		{ "CGRAFT_MAX_SEGMENT_OPS", "8K" }, { "CGRAFT_MAX_GRAPHS", "9999999999G" },
		{ "CGRAFT_WARMUP", "0" },        { "CGRAFT_ENABLE", "maybe" },   { "CGRAFT_ENABLE", "off" },
		{ "CGRAFT_REPORT", "YES" },      { "CGRAFT_REPORT", "" },        { "CGRAFT_LOG", "loud" },
		{ "CGRAFT_LOG", "debug" },       { "CGRAFT_LOG", "3" },          { "CGRAFT_WINDOW", "5" },
		{ "CGRAFT_WINDOW", "9:3" },      { "CGRAFT_WINDOW", "10:" },     { "CGRAFT_WINDOW", ":7" },
		{ "CGRAFT_STATS", "" },          { "CGRAFT_STATS", "s-%p.json" }, { "CGRAFT_MAX_HOLD_US", "1.5" },
		{ "CGRAFT_PROFILE_TRACE", "t.json" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char msg[160] = "x";
		cg_opt = defaults;
		int rc = cg_options_check(cases[i][0], cases[i][1], msg, sizeof msg);
		assert_true(same_as_defaults());
		setenv(cases[i][0], cases[i][1], 1);
		int load = cg_options_load();
		unsetenv(cases[i][0]);
		assert_int_equal(rc, load);
		if (rc)
			assert_int_equal(strncmp(msg, "expected ", 9), 0);
		else
			assert_string_equal(msg, "");
	}
	cg_opt = defaults;
}

static void test_check_messages(void **state)
{
	(void)state;
	char msg[160];
	assert_int_equal(cg_options_check("CGRAFT_MIN_REPEATS", "0", msg, sizeof msg), -EINVAL);
	assert_string_equal(msg, "expected a whole number (K, M, G suffixes allowed), at least 1");
	assert_int_equal(cg_options_check("CGRAFT_WARMUP", "x", msg, sizeof msg), -EINVAL);
	assert_string_equal(msg, "expected a whole number (K, M, G suffixes allowed)");
	assert_int_equal(cg_options_check("CGRAFT_LOG", "loud", msg, sizeof msg), -EINVAL);
	assert_string_equal(msg, "expected error, warn, info, debug (or 0-3)");
	assert_int_equal(cg_options_check("CGRAFT_NOPE", "1", msg, sizeof msg), -ENOENT);
	assert_non_null(strstr(msg, "CGRAFT_NOPE"));
	/* A short buffer is cut, not overrun. */
	char small[8];
	assert_int_equal(cg_options_check("CGRAFT_LOG", "loud", small, sizeof small), -EINVAL);
	assert_string_equal(small, "expecte");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rows),
		cmocka_unit_test(test_check_agrees_with_load),
		cmocka_unit_test(test_check_messages),
	};
	return cmocka_run_group_tests_name("launcher_options", tests, take_defaults, NULL);
}
