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
	long piece_us;
	long max_variants;
	int device_updates;
	long max_hold_us;
	int backoff_slow;
	long build_thread;
	int driver_ops;
	int nccl;
	int callbacks;
	int profile;
	const char *profile_trace;
};
extern struct cg_options cg_opt CG_HIDDEN;

/* Reads CGRAFT_*; returns 0, or -EINVAL after printing what was wrong (cgraft
 * then runs in pass-through). */
int cg_options_load(void) CG_HIDDEN;
/* The table as Markdown rows, or as the launcher's --help lines. */
void cg_options_describe(FILE *f, int markdown) CG_HIDDEN;

/* One row of the table, as the launcher shows and checks it. */
struct cg_option_info {
	const char *name;     /* the variable, CGRAFT_FOO_BAR */
	const char *deflt;    /* the default, as shown to users */
	const char *what;     /* what it does, one sentence */
	const char *accepted; /* the values accepted, in words */
	const char *metavar;  /* the value in a usage line; NULL for a boolean */
};

/* Rows in the table. */
size_t cg_options_count(void) CG_HIDDEN;
/* Row i; -ENOENT past the end. */
int cg_options_info(size_t i, struct cg_option_info *info) CG_HIDDEN;
/* The row of a variable name, or -ENOENT. */
int cg_options_find(const char *name) CG_HIDDEN;
/* Checks one name and value with the parser cg_options_load uses, changing
 * nothing: 0; -ENOENT for a name not in the table; -EINVAL for a value not
 * accepted, with what is accepted in msg ("expected ..."). */
int cg_options_check(const char *name, const char *value, char *msg, size_t size) CG_HIDDEN;

#endif
