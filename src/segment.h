/* Segments: the ops between two points where the host may look at device
 * state, as cgraft keeps them (kernel parameters, launch attributes and held
 * pageable sources copied into an arena), and the period detector that cuts
 * loops without such points. No CUDA here. */
#ifndef CG_SEGMENT_H
#define CG_SEGMENT_H

#include <string.h>

#include "op.h"

struct cg_arena_blk {
	struct cg_arena_blk *next;
	size_t used, cap;
	_Alignas(16) uint8_t data[];
};
struct cg_arena {
	struct cg_arena_blk *head;
	/* Blocks a reset let go of, kept for the next segment (up to
	 * CG_ARENA_SPARE bytes): their pages stay faulted in. */
	struct cg_arena_blk *spare;
	size_t spare_bytes;
};
/* Pointers into an arena stay valid until it is reset. */
void *cg_arena_grow(struct cg_arena *a, size_t n) CG_HIDDEN;
static inline void *cg_arena_alloc(struct cg_arena *a, size_t n)
{
	n = (n + 15) & ~(size_t)15;
	struct cg_arena_blk *b = a->head;
	if (cg_unlikely(!b || b->cap - b->used < n))
		return cg_arena_grow(a, n);
	void *p = b->data + b->used;
	b->used += n;
	return p;
}
void cg_arena_reset(struct cg_arena *a) CG_HIDDEN;
void cg_arena_free(struct cg_arena *a) CG_HIDDEN;

struct cg_seg {
	struct cg_op *ops;
	size_t n, cap;
	struct cg_arena arena;
};

/* Makes room for more ops. */
int cg_seg_grow(struct cg_seg *s, size_t more) CG_HIDDEN;
static inline int cg_seg_reserve(struct cg_seg *s, size_t more)
{
	return cg_likely(s->n + more <= s->cap) ? 0 : cg_seg_grow(s, more);
}
/* Appends a copy of op. snapshot: a pageable source is copied now (the op is
 * held). expect: the op the graph has at this place; *differs is then set to
 * whether op's values differ from it, found in the same pass as the copy.
 * Returns 0 or -ENOMEM. */
int cg_seg_push(struct cg_seg *s, const struct cg_op *op, int snapshot, const struct cg_op *expect,
		int *differs) CG_HIDDEN;
/* Whether the caller's kernel parameters equal the bytes at exp, read in
 * place. Inline: every held launch compares its parameters. */
int cg_params_equal_sized(const struct cg_op *op, const uint8_t *exp) CG_HIDDEN;
static inline int cg_params_equal(const struct cg_op *op, const uint8_t *exp)
{
	const struct cg_kinfo *ki = op->u.k.ki;
	if (cg_unlikely(!ki->simple))
		return cg_params_equal_sized(op, exp);
	/* Every parameter 4 or 8 bytes, packed: bit i of wide says 8. */
	void *const *__restrict args = op->u.k.args;
	uint64_t diff = 0;
	uint32_t wide = ki->wide;
	for (uint32_t i = 0, n = ki->nparams; i < n; i++, wide >>= 1) {
		if (wide & 1) {
			uint64_t w, v;
			memcpy(&w, args[i], 8);
			memcpy(&v, exp, 8);
			diff |= w ^ v;
			exp += 8;
		} else {
			uint32_t w, v;
			memcpy(&w, args[i], 4);
			memcpy(&v, exp, 4);
			diff |= w ^ v;
			exp += 4;
		}
	}
	return !diff;
}
/* Appends ops that already live in cgraft's memory (their copies are kept). */
int cg_seg_append(struct cg_seg *s, const struct cg_op *ops, size_t n) CG_HIDDEN;
void cg_seg_clear(struct cg_seg *s) CG_HIDDEN;
void cg_seg_free(struct cg_seg *s) CG_HIDDEN;
/* Drops the first k ops (their copies stay until the arena is reset). */
void cg_seg_drop_front(struct cg_seg *s, size_t k) CG_HIDDEN;

/* Period detection over a segment being recorded: a candidate period p is
 * born where an op has the shape of the segment's first op, and lives while
 * each op has the shape of the one p before it. */
#define CG_MAX_PERIODS 64
/* A segment may begin with a few ops that never recur (a timing event, a
 * first copy): periods are looked for from each of its first ops. */
#define CG_PERIOD_ORIGINS 4
/* Shorter stretches of periods are not cut for good: they may be parts of
 * an iteration, repeating inside it. */
#define CG_PERIOD_MIN_RUN 128
/* Two halves this long together are cut early (a timed loop run once
 * replays from its 17th launch), on probation till the stretch has
 * run CG_PERIOD_MIN_RUN ops, except where stretches of the same ops
 * (cg_period_key) ended short of that CG_PERIOD_SHORT_TRIES times. */
#define CG_PERIOD_EARLY_RUN 16
#define CG_PERIOD_SHORTS 8
#define CG_PERIOD_SHORT_TRIES 2
struct cg_period {
	struct {
		size_t cand[CG_MAX_PERIODS];
		int ncand;
	} at[CG_PERIOD_ORIGINS];
	size_t min_run; /* halves shorter than this are not reported (CG_PERIOD_MIN_RUN) */
	size_t early_run; /* but from this long where not short (0: min_run) */
	struct {
		uint64_t key; /* cg_period_key of stretches cut early */
		int n;        /* that ended short */
	} shorts[CG_PERIOD_SHORTS];
	int nshorts;
	size_t known; /* ops per segment once a period was found, 0 if none */
	int misses;   /* cuts at the known period whose run did not recur */
};
enum cg_period_step { CG_PERIOD_NONE, CG_PERIOD_HALVES, CG_PERIOD_KNOWN, CG_PERIOD_MAX };
/* After op n-1 was appended: CG_PERIOD_HALVES when ops [o,o+p) and
 * [o+p,o+2p) are the same iterations twice (*p and *origin = o are set; the
 * o ops before them did not recur; p is a multiple of the period, and 2p at
 * least pd->min_run, or pd->early_run, where max_ops allows), CG_PERIOD_KNOWN when a
 * segment of the known period is complete, CG_PERIOD_MAX at max_ops. */
enum cg_period_step cg_period_step(struct cg_period *pd, const struct cg_seg *s, size_t min_ops,
				   size_t max_ops, size_t *p, size_t *origin) CG_HIDDEN;
/* Forgets the candidates (a segment was cut). */
void cg_period_reset(struct cg_period *pd) CG_HIDDEN;
/* What stretches of halves of n ops are known by: their least and greatest
 * shapes, the same wherever the loop is entered and however many
 * iterations a half holds (others may share it: they only wait longer). */
uint64_t cg_period_key(const struct cg_op *ops, size_t n) CG_HIDDEN;
/* A stretch cut early whose halves have this key ended short: such halves
 * wait for min_run again once that happened CG_PERIOD_SHORT_TRIES times. */
void cg_period_note_short(struct cg_period *pd, uint64_t key) CG_HIDDEN;
/* Ops per segment for a found period: short periods are grouped so that a
 * graph covers at least CG_PERIOD_GROUP ops of them. */
#define CG_PERIOD_GROUP 64
size_t cg_period_group(size_t p, size_t max_ops) CG_HIDDEN;

#endif
