/* CGRAFT_PROFILE: the GPU's busy time and idle gaps, eager and replayed, from
 * CUPTI's activity records (libcupti.so.13, opened only then), and the trace. */
#ifndef CG_PROFILE_H
#define CG_PROFILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base.h"

enum cg_prof_kind { CG_PROF_KERNEL, CG_PROF_MEMCPY, CG_PROF_MEMSET, CG_PROF_KINDS };
extern const char *const cg_prof_kind_names[CG_PROF_KINDS] CG_HIDDEN;

/* One GPU operation as CUPTI timed it. */
struct cg_prof_iv {
	uint64_t start, end; /* ns, CUPTI's clock */
	uint32_t stream;
	uint16_t name;       /* kernel: index in the name table (0: none); memcpy: CUPTI's copy kind */
	uint8_t kind;        /* enum cg_prof_kind */
	uint8_t graph;       /* 1: ran inside a graph (cgraft's replay or the program's own) */
};

/* Idle gaps of the device: from the end of all work before to the start of
 * the next operation, where nothing ran. Median and p90 are nearest-rank. */
struct cg_prof_gaps {
	uint64_t count, total_ns, median_ns, p90_ns;
};

struct cg_prof_part {
	uint64_t ops;
	uint64_t busy_ns;          /* union of this part's intervals */
	struct cg_prof_gaps gaps;  /* the gaps its operations end */
};

enum { CG_PROF_EAGER, CG_PROF_REPLAYED };

struct cg_prof_summary {
	uint64_t ops;
	uint64_t first_ns, last_ns; /* the window: first start to last end */
	uint64_t window_ns;
	uint64_t busy_ns;           /* union of all intervals: overlapping streams count once */
	struct cg_prof_gaps gaps;
	struct cg_prof_part part[2]; /* CG_PROF_EAGER (outside graphs), CG_PROF_REPLAYED (inside) */
	int gaps_partial;           /* no memory for the percentiles: count and total only */
};

/* The figures of n intervals, in any order (sorted in place by start).
 * Pure: no CUPTI, no clock, no globals. */
void cg_prof_analyse(struct cg_prof_iv *iv, size_t n, struct cg_prof_summary *s) CG_HIDDEN;

/* Everything the report says: availability, the figures, and what the
 * profiling cost. */
struct cg_prof_result {
	int available;
	char why[384];               /* when not available */
	struct cg_prof_summary sum;
	uint64_t records;            /* kernel, memcpy and memset records received */
	uint64_t stored;             /* of them, kept and analysed */
	uint64_t over_cap;           /* timed records past the cap, counted only */
	uint64_t untimed;            /* records without valid timestamps */
	uint64_t dropped;            /* records CUPTI says it dropped */
	uint64_t other;              /* records of other kinds */
	uint64_t buffers, buffer_bytes;
	uint64_t buffer_ns;          /* time in cgraft's buffer callbacks */
	uint64_t flush_ns, analyse_ns;
	uint64_t cap;
	unsigned devices;
};

void cg_prof_write_json(FILE *f, const struct cg_prof_result *r) CG_HIDDEN;
void cg_prof_write_report(FILE *f, const struct cg_prof_result *r) CG_HIDDEN;
/* One line per interval: start_ns end_ns kind graph stream name. names[i]
 * is kernel name i (names[0] and missing ones print as "?"). */
void cg_prof_write_trace(FILE *f, const struct cg_prof_iv *iv, size_t n, const char *const *names,
			 size_t nnames) CG_HIDDEN;

/* Turns one CUPTI activity record into an interval: 1 when it is a timed
 * kernel, memcpy or memset (name: the kernel's, or NULL; device: CUPTI's
 * device id), 0 for one without valid timestamps, -1 for another kind (or
 * a build without CUPTI's headers). */
int cg_prof_from_record(const void *record, struct cg_prof_iv *iv, const char **name, unsigned *device) CG_HIDDEN;

/* The process's profiling: started at load (cg_init), again at later
 * cg_init() calls while CUPTI waits for the program's runtime to appear
 * beside it, finished at exit before the report. No-ops unless
 * CGRAFT_PROFILE is set. */
void cg_profile_start(void) CG_HIDDEN;
void cg_profile_finish(void) CG_HIDDEN;
void cg_profile_forked_child(void) CG_HIDDEN;
/* The "profile" object of CGRAFT_STATS and the report's lines. */
void cg_profile_write_json(FILE *f) CG_HIDDEN;
void cg_profile_write_report(FILE *f) CG_HIDDEN;

#endif
