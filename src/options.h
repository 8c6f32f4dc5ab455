/* The CGRAFT_* options: one table (options.c) of name, type, default and
 * description, read once at load. */
#ifndef CG_OPTIONS_H
#define CG_OPTIONS_H

#include <stdio.h>

#include "base.h"

struct cg_options {
	int enable;
	int log_level;
	const char *stats_path;
	int report;
	long min_repeats;
	long warmup;
	long window_lo, window_hi;
	long min_ops;
	long max_graphs;
	long max_segment_ops;
	long max_variants;
	long max_hold_us;
	int backoff_slow;
	int driver_ops;
	int profile;
	const char *profile_trace;
};
extern struct cg_options cg_opt CG_HIDDEN;

/* Reads CGRAFT_*; returns 0, or -EINVAL after printing what was wrong (cgraft
 * then runs in pass-through). */
int cg_options_load(void) CG_HIDDEN;
/* The table as Markdown rows, or as the launcher's --help lines. */
void cg_options_describe(FILE *f, int markdown) CG_HIDDEN;

#endif
