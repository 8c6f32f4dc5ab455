/* The CGRAFT_* options: one table of name, type, default and description,
 * strict parsing, and one clear line for a value that is not accepted. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "log.h"
#include "options.h"

struct cg_options cg_opt = {
	.enable = 1,
	.log_level = CG_LOG_WARN,
	.stats_path = NULL,
	.report = 0,
	.min_repeats = 2,
	.warmup = 0,
	.window_lo = 0,
	.window_hi = LONG_MAX,
	.min_ops = 2,
	.max_graphs = 64,
	.max_segment_ops = 4096,
	.piece_us = 1000,
	.max_variants = 4,
	.device_updates = 1,
	.max_hold_us = 1000,
	.backoff_slow = 1,
	.build_thread = 1024,
	.driver_ops = 1,
};

enum cg_opt_type { CG_OPT_BOOL, CG_OPT_COUNT, CG_OPT_LEVEL, CG_OPT_PATH, CG_OPT_RANGE };

struct cg_opt_desc {
	const char *name;
	enum cg_opt_type type;
	void *value;
	long min;           /* COUNT: smallest accepted */
	const char *deflt;  /* as shown to users */
	const char *what;
};

static const struct cg_opt_desc cg_opt_table[] = {
	{ "CGRAFT_ENABLE", CG_OPT_BOOL, &cg_opt.enable, 0, "1",
	  "0 turns cgraft into pure pass-through (calls are only counted)" },
	{ "CGRAFT_LOG", CG_OPT_LEVEL, &cg_opt.log_level, 0, "warn",
	  "log level on stderr: error, warn, info or debug (debug names the first mismatching op, each graph "
	  "launched and held work sent out eagerly)" },
	{ "CGRAFT_STATS", CG_OPT_PATH, &cg_opt.stats_path, 0, "(none)",
	  "write a JSON object of counters to this path at exit; %p is replaced by the pid" },
	{ "CGRAFT_REPORT", CG_OPT_BOOL, &cg_opt.report, 0, "0",
	  "print a human summary to stderr at exit" },
	{ "CGRAFT_MIN_REPEATS", CG_OPT_COUNT, &cg_opt.min_repeats, 1, "2",
	  "times a segment shape must be seen before a graph is built" },
	{ "CGRAFT_WARMUP", CG_OPT_COUNT, &cg_opt.warmup, 0, "0",
	  "segments left alone at the start" },
	{ "CGRAFT_WINDOW", CG_OPT_RANGE, &cg_opt.window_lo, 0, "0:",
	  "segment range to record and replay, FIRST:LAST (either may be empty)" },
	{ "CGRAFT_MIN_OPS", CG_OPT_COUNT, &cg_opt.min_ops, 1, "2",
	  "stretches of fewer ops stay eager" },
	{ "CGRAFT_MAX_GRAPHS", CG_OPT_COUNT, &cg_opt.max_graphs, 1, "64",
	  "instantiated graphs kept at once (least recently used go first)" },
	{ "CGRAFT_MAX_SEGMENT_OPS", CG_OPT_COUNT, &cg_opt.max_segment_ops, 2, "4096",
	  "a segment with no blocking point is cut at this many ops" },
	{ "CGRAFT_PIECE_US", CG_OPT_COUNT, &cg_opt.piece_us, 0, "1000",
	  "where the host works between a stretch's calls (Python between kernels), the stretch is cut into pieces "
	  "of about this many microseconds of the host's time, so that the GPU runs one while the host issues the "
	  "next; 0: cut only at CGRAFT_MAX_SEGMENT_OPS" },
	{ "CGRAFT_MAX_VARIANTS", CG_OPT_COUNT, &cg_opt.max_variants, 1, "4",
	  "instantiated graphs per segment shape for recurring argument sets" },
	{ "CGRAFT_DEVICE_UPDATES", CG_OPT_BOOL, &cg_opt.device_updates, 0, "1",
	  "1: a graph whose launches change 4 kernel nodes' parameters or more (on average) is built again with a "
	  "kernel of cgraft's at its head that updates them on the GPU, one host call a launch (up to four such "
	  "kernels where the changes need them); 0: every node is updated from the host" },
	{ "CGRAFT_MAX_HOLD_US", CG_OPT_COUNT, &cg_opt.max_hold_us, 1, "1000",
	  "held work is submitted after this many microseconds without a CUDA call (the host may be polling); "
	  "a gap this long (1 ms at least) also ends what cgraft learns as one stretch, and so does a quarter of it "
	  "(250 us at least) that recurs at the same op" },
	{ "CGRAFT_DRIVER_OPS", CG_OPT_BOOL, &cg_opt.driver_ops, 0, "1",
	  "replay kernels launched through the driver (cuBLAS, static runtimes); 0 makes them segment ends" },
	{ "CGRAFT_BACKOFF_SLOW", CG_OPT_BOOL, &cg_opt.backoff_slow, 0, "1",
	  "send a stretch back to eager when its replay saves no host time, and stand aside where replay does not "
	  "make the program faster" },
	{ "CGRAFT_BUILD_THREAD", CG_OPT_COUNT, &cg_opt.build_thread, 0, "1024",
	  "graphs of at least this many nodes (a KiB of kernel parameters counting as one) are built on a thread "
	  "of cgraft's while the program's work goes on eagerly; smaller ones, or all with 0, on the program's "
	  "thread, which waits for the build" },
	{ "CGRAFT_NCCL", CG_OPT_BOOL, &cg_opt.nccl, 0, "0",
	  "1: NCCL collectives are held and replayed inside graphs (captured as child graphs); every rank must "
	  "make the same calls, as NCCL requires of captured ones; 0: they end segments" },
	{ "CGRAFT_CALLBACKS", CG_OPT_BOOL, &cg_opt.callbacks, 0, "0",
	  "1: stream callbacks (cudaStreamAddCallback, cuStreamAddCallback) are held and replayed as host "
	  "functions; after a fault on the device a graph runs none of its later nodes, where eagerly every "
	  "callback is still called, with the error; 0: they end segments" },
	{ "CGRAFT_PROFILE", CG_OPT_BOOL, &cg_opt.profile, 0, "0",
	  "measure GPU busy time and idle gaps with CUPTI (libcupti.so.13, loaded only then), eager and replayed" },
	{ "CGRAFT_PROFILE_TRACE", CG_OPT_PATH, &cg_opt.profile_trace, 0, "(none)",
	  "with CGRAFT_PROFILE: write each GPU operation's interval to this path (%p: the pid), for scripts/timeline" },
};

static int cg_parse_bool(const char *s, int *out)
{
	static const char *const yes[] = { "1", "true", "yes", "on" };
	static const char *const no[] = { "0", "false", "no", "off" };
	for (size_t i = 0; i < 4; i++) {
		if (!strcasecmp(s, yes[i])) {
			*out = 1;
			return 0;
		}
		if (!strcasecmp(s, no[i])) {
			*out = 0;
			return 0;
		}
	}
	return -EINVAL;
}

/* A non-negative count, with an optional K, M or G (powers of 1024). */
static int cg_parse_count(const char *s, long *out)
{
	char *end;
	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	unsigned shift = 0;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	default: break;
	}
	if (*end || v > ((unsigned long long)LONG_MAX >> shift))
		return -EINVAL;
	*out = (long)(v << shift);
	return 0;
}

static int cg_parse_level(const char *s, int *out)
{
	static const char *const names[] = { "error", "warn", "info", "debug" };
	for (int i = 0; i < 4; i++)
		if (!strcasecmp(s, names[i]) || (s[0] == '0' + i && !s[1])) {
			*out = i;
			return 0;
		}
	return -EINVAL;
}

static int cg_parse_range(const char *s, long *lo, long *hi)
{
	const char *colon = strchr(s, ':');
	char first[32];
	if (!colon || (size_t)(colon - s) >= sizeof first)
		return -EINVAL;
	memcpy(first, s, (size_t)(colon - s));
	first[colon - s] = 0;
	long a = 0, b = LONG_MAX;
	if (first[0] && cg_parse_count(first, &a))
		return -EINVAL;
	if (colon[1] && cg_parse_count(colon + 1, &b))
		return -EINVAL;
	if (b < a)
		return -EINVAL;
	*lo = a;
	*hi = b;
	return 0;
}

static const char *cg_accepted(const struct cg_opt_desc *d)
{
	switch (d->type) {
	case CG_OPT_BOOL: return "1, true, yes, on, 0, false, no or off";
	case CG_OPT_COUNT: return "a whole number (K, M, G suffixes allowed)";
	case CG_OPT_LEVEL: return "error, warn, info, debug (or 0-3)";
	case CG_OPT_PATH: return "a file path";
	case CG_OPT_RANGE: return "FIRST:LAST segment numbers, e.g. 100:5000 or 10:";
	}
	return "";
}

/* Parses s as the value of d the way cg_options_load reads it; the value is
 * stored only when store is set. */
static int cg_opt_parse(const struct cg_opt_desc *d, const char *s, int store)
{
	int rc = -EINVAL;
	switch (d->type) {
	case CG_OPT_BOOL:
	case CG_OPT_LEVEL: {
		int v;
		rc = d->type == CG_OPT_BOOL ? cg_parse_bool(s, &v) : cg_parse_level(s, &v);
		if (!rc && store)
			*(int *)d->value = v;
		break;
	}
	case CG_OPT_PATH:
		rc = *s ? 0 : -EINVAL;
		if (!rc && store)
			*(const char **)d->value = s;
		break;
	case CG_OPT_RANGE: {
		long lo, hi;
		rc = cg_parse_range(s, &lo, &hi);
		if (!rc && store) {
			cg_opt.window_lo = lo;
			cg_opt.window_hi = hi;
		}
		break;
	}
	case CG_OPT_COUNT: {
		long v;
		rc = cg_parse_count(s, &v);
		if (!rc && v < d->min)
			rc = -ERANGE;
		if (!rc && store)
			*(long *)d->value = v;
		break;
	}
	}
	return rc;
}

/* "expected ..." for a value of d that is not accepted. */
static void cg_opt_expected(const struct cg_opt_desc *d, char *msg, size_t size)
{
	char at_least[48] = "";
	if (d->type == CG_OPT_COUNT && d->min > 0)
		snprintf(at_least, sizeof at_least, ", at least %ld", d->min);
	snprintf(msg, size, "expected %s%s", cg_accepted(d), at_least);
}

int cg_options_load(void)
{
	int bad = 0;
	for (size_t i = 0; i < sizeof cg_opt_table / sizeof cg_opt_table[0]; i++) {
		const struct cg_opt_desc *d = &cg_opt_table[i];
		const char *s = getenv(d->name);
		if (!s)
			continue;
		if (cg_opt_parse(d, s, 1)) {
			char expected[160];
			cg_opt_expected(d, expected, sizeof expected);
			cg_log(CG_LOG_ERROR, CG_FAULT_PROGRAM, "%s='%s' is not accepted: %s; cgraft runs in pass-through",
			       d->name, s, expected);
			bad = 1;
		}
	}
	if (bad) {
		cg_opt.enable = 0;
		return -EINVAL;
	}
	return 0;
}

void cg_options_describe(FILE *f, int markdown)
{
	for (size_t i = 0; i < sizeof cg_opt_table / sizeof cg_opt_table[0]; i++)
		fprintf(f, markdown ? "| `%s` | %s | %s |\n" : "%s (default %s): %s\n", cg_opt_table[i].name,
			cg_opt_table[i].deflt, cg_opt_table[i].what);
}

size_t cg_options_count(void)
{
	return sizeof cg_opt_table / sizeof cg_opt_table[0];
}

int cg_options_info(size_t i, struct cg_option_info *info)
{
	static const char *const metavar[] = {
		[CG_OPT_BOOL] = NULL, [CG_OPT_COUNT] = "N", [CG_OPT_LEVEL] = "LEVEL",
		[CG_OPT_PATH] = "FILE", [CG_OPT_RANGE] = "FIRST:LAST",
	};
	if (i >= cg_options_count())
		return -ENOENT;
	const struct cg_opt_desc *d = &cg_opt_table[i];
	info->name = d->name;
	info->deflt = d->deflt;
	info->what = d->what;
	info->accepted = cg_accepted(d);
	info->metavar = metavar[d->type];
	return 0;
}

int cg_options_find(const char *name)
{
	for (size_t i = 0; i < cg_options_count(); i++)
		if (!strcmp(cg_opt_table[i].name, name))
			return (int)i;
	return -ENOENT;
}

int cg_options_check(const char *name, const char *value, char *msg, size_t size)
{
	int i = cg_options_find(name);
	if (i < 0) {
		snprintf(msg, size, "%s is not an option of cgraft", name);
		return -ENOENT;
	}
	if (cg_opt_parse(&cg_opt_table[i], value, 0)) {
		cg_opt_expected(&cg_opt_table[i], msg, size);
		return -EINVAL;
	}
	if (size)
		msg[0] = 0;
	return 0;
}
