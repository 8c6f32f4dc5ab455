/* The governor's decision: replaying against standing aside, in windows. */
#include "unit.h"

#include "govern.h"

/* Runs windows until the governor leaves its current state; each window's
 * time per call is on_ns replaying and off_ns standing aside. Returns the
 * windows it took. */
static int run_until_change(struct cg_gov *g, double on_ns, double off_ns, int max)
{
	enum cg_gov_state st = g->state;
	for (int i = 1; i <= max; i++) {
		double per = g->aside ? off_ns : on_ns;
		cg_gov_step(g, (uint64_t)(per * 1000), 1000);
		if (g->state != st)
			return i;
	}
	return -1;
}

static void test_learns_then_probes(void **state)
{
	(void)state;
	struct cg_gov g;
	cg_gov_init(&g);
	assert_int_equal(g.state, CG_G_LEARN);
	assert_int_equal(g.aside, 0);
	assert_int_equal(run_until_change(&g, 1000, 2000, 100), CG_GOV_LEARN);
	assert_int_equal(g.state, CG_G_PROBE);
	/* A probe stands aside in half its windows, pairs in both orders. */
	int aside = 0, pattern[CG_GOV_PROBE];
	for (int i = 0; i < CG_GOV_PROBE; i++) {
		pattern[i] = g.aside;
		aside += g.aside;
		cg_gov_step(&g, 1000000, 1000);
	}
	assert_int_equal(aside, CG_GOV_PROBE / 2);
	assert_int_not_equal(pattern[0], pattern[1]);
	assert_int_equal(g.state, CG_G_ON); /* all windows alike: not slower */
}

static void test_faster_stays_on(void **state)
{
	(void)state;
	struct cg_gov g;
	cg_gov_init(&g);
	run_until_change(&g, 500, 1000, 100); /* learn */
	assert_int_equal(run_until_change(&g, 500, 1000, 100), CG_GOV_PROBE);
	assert_int_equal(g.state, CG_G_ON);
	assert_true(g.ratio > 1.9 && g.ratio < 2.1);
	assert_int_equal(g.aside, 0);
	/* The next probe comes later, and later again. */
	assert_int_equal(run_until_change(&g, 500, 1000, 1000), CG_GOV_ON);
	run_until_change(&g, 500, 1000, 100);
	assert_int_equal(run_until_change(&g, 500, 1000, 1000), 2 * CG_GOV_ON);
}

/* Replaying, a probe that finds replay slower is probed again at once
 * (each window of it alike: its pairs all agree), and a second that finds
 * the same stands cgraft aside. Standing aside, one such probe keeps it
 * aside, for longer. */
static void test_slower_stands_aside(void **state)
{
	(void)state;
	struct cg_gov g;
	cg_gov_init(&g);
	run_until_change(&g, 1300, 1000, 100); /* learn */
	for (int i = 0; i < CG_GOV_PROBE; i++)
		cg_gov_step(&g, (uint64_t)((g.aside ? 1000 : 1300) * 1000), 1000);
	assert_int_equal(g.state, CG_G_PROBE);
	assert_int_equal(g.slower, 0);
	assert_int_equal(g.probes, 1);
	assert_int_equal(run_until_change(&g, 1300, 1000, 100), CG_GOV_PROBE);
	assert_int_equal(g.state, CG_G_ASIDE);
	assert_int_equal(g.aside, 1);
	assert_int_equal(g.slower, 1);
	/* Aside for a while, then probed again; slower again: aside at once,
	 * for longer. */
	assert_int_equal(run_until_change(&g, 1300, 1000, 1000), CG_GOV_ASIDE);
	assert_int_equal(g.state, CG_G_PROBE);
	assert_int_equal(run_until_change(&g, 1300, 1000, 100), CG_GOV_PROBE);
	assert_int_equal(g.state, CG_G_ASIDE);
	assert_int_equal(g.slower, 2);
	assert_int_equal(run_until_change(&g, 1300, 1000, 1000), 2 * CG_GOV_ASIDE);
	/* The program changed: replay pays now, and cgraft is back. */
	run_until_change(&g, 700, 1000, 100);
	assert_int_equal(g.state, CG_G_ON);
	assert_int_equal(g.aside, 0);
}

/* Noise: within a few percent either way is not "slower". */
static void test_close_is_not_slower(void **state)
{
	(void)state;
	struct cg_gov g;
	cg_gov_init(&g);
	run_until_change(&g, 1020, 1000, 100);
	run_until_change(&g, 1020, 1000, 100);
	assert_int_equal(g.state, CG_G_ON);
}

/* Runs one probe whose windows replaying take on[pair] per call, and those
 * standing aside off. */
static void run_probe(struct cg_gov *g, const double on[CG_GOV_PROBE / 2], double off)
{
	for (int i = 0; i < CG_GOV_PROBE; i++)
		cg_gov_step(g, (uint64_t)((g->aside ? off : on[i / 2]) * 1000), 1000);
}

/* One probe swayed by a few of its windows (every pair slower here, as
 * where the program built graphs in the windows that replayed): the second
 * finds replay as fast, and cgraft replays on. A probe after that, while
 * replaying, is doubted again. */
static void test_doubt_probes_again(void **state)
{
	(void)state;
	static const double swayed[CG_GOV_PROBE / 2] = { 1300, 1300, 1200, 1200 };
	static const double split[CG_GOV_PROBE / 2] = { 1300, 1300, 990, 990 };
	static const double same[CG_GOV_PROBE / 2] = { 1000, 1000, 1000, 1000 };
	struct cg_gov g;
	cg_gov_init(&g);
	run_until_change(&g, 1000, 1000, 100); /* learn */
	run_probe(&g, swayed, 1000);
	assert_int_equal(g.state, CG_G_PROBE);
	run_probe(&g, same, 1000);
	assert_int_equal(g.state, CG_G_ON);
	assert_int_equal(g.slower, 0);
	assert_int_equal(g.aside, 0);
	run_until_change(&g, 1000, 1000, 1000);
	run_probe(&g, split, 1000);
	assert_int_equal(g.state, CG_G_PROBE);
	run_probe(&g, split, 1000);
	assert_int_equal(g.state, CG_G_ASIDE);
	assert_int_equal(g.slower, 1);
}

/* Windows with too few calls say nothing: the same window runs again. */
static void test_idle_windows_ignored(void **state)
{
	(void)state;
	struct cg_gov g;
	cg_gov_init(&g);
	for (int i = 0; i < 100; i++)
		cg_gov_step(&g, 1000000, CG_GOV_MIN_CALLS - 1);
	assert_int_equal(g.state, CG_G_LEARN);
	assert_int_equal(g.n, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_learns_then_probes),
		cmocka_unit_test(test_faster_stays_on),
		cmocka_unit_test(test_slower_stands_aside),
		cmocka_unit_test(test_close_is_not_slower),
		cmocka_unit_test(test_doubt_probes_again),
		cmocka_unit_test(test_idle_windows_ignored),
	};
	return cmocka_run_group_tests_name("govern", tests, NULL, NULL);
}
