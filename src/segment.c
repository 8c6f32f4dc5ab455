/* Segments and their arena; the period detector. No CUDA here. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "segment.h"

/* Blocks of the usual size kept across resets, per arena: a loop of kernels
 * with 32 KB of parameters spent more time faulting fresh pages in for its
 * segments' copies than in its calls. */
#define CG_ARENA_BLK 65536
#define CG_ARENA_SPARE (16u << 20)

/* A block for an allocation of n (rounded) bytes that does not fit: a spare
 * one where n fits one of the usual size, else a new one. */
void *cg_arena_grow(struct cg_arena *a, size_t n)
{
	struct cg_arena_blk *b = a->spare;
	if (b && n <= CG_ARENA_BLK) {
		a->spare = b->next;
		a->spare_bytes -= b->cap;
	} else {
		size_t cap = n > CG_ARENA_BLK ? n : CG_ARENA_BLK;
		b = malloc(sizeof *b + cap);
		if (!b)
			return NULL;
		b->cap = cap;
	}
	b->used = n;
	b->next = a->head;
	a->head = b;
	return b->data;
}

/* Keeps the newest block for reuse, and the others of the usual size as
 * spares while they fit. */
void cg_arena_reset(struct cg_arena *a)
{
	struct cg_arena_blk *b = a->head;
	if (!b)
		return;
	struct cg_arena_blk *rest = b->next;
	b->next = NULL;
	b->used = 0;
	while (rest) {
		struct cg_arena_blk *n = rest->next;
		if (rest->cap == CG_ARENA_BLK && a->spare_bytes + CG_ARENA_BLK <= CG_ARENA_SPARE) {
			rest->next = a->spare;
			a->spare = rest;
			a->spare_bytes += CG_ARENA_BLK;
		} else {
			free(rest);
		}
		rest = n;
	}
}

void cg_arena_free(struct cg_arena *a)
{
	cg_arena_reset(a);
	free(a->head);
	a->head = NULL;
	while (a->spare) {
		struct cg_arena_blk *n = a->spare->next;
		free(a->spare);
		a->spare = n;
	}
	a->spare_bytes = 0;
}

int cg_seg_grow(struct cg_seg *s, size_t more)
{
	size_t cap = s->cap ? s->cap : 256;
	while (cap < s->n + more)
		cap *= 2;
	struct cg_op *o = realloc(s->ops, cap * sizeof *o);
	if (!o)
		return -ENOMEM;
	s->ops = o;
	s->cap = cap;
	return 0;
}

/* Copies a kernel's parameters into the arena and compares them with what
 * the graph has, in one pass; the usual sizes without a call. exp may be
 * the copy itself (nothing to compare with). */
static uint64_t cg_copy_params(uint8_t *__restrict p, const struct cg_op *op, const uint8_t *exp)
{
	uint64_t diff = 0;
	if (cg_likely(op->u.k.args && !(op->flags & CG_F_PACKED))) {
		const struct cg_kinfo *ki = op->u.k.ki;
		void *const *__restrict args = op->u.k.args;
		const uint32_t *__restrict size = ki->size;
		uint32_t n = ki->nparams;
		for (uint32_t i = 0, off = 0; i < n; off += size[i], i++) {
			uint32_t sz = size[i];
			if (cg_likely(sz == 8)) {
				uint64_t w, v;
				memcpy(&w, args[i], 8);
				memcpy(p + off, &w, 8);
				memcpy(&v, exp + off, 8);
				diff |= w ^ v;
			} else if (sz == 4) {
				uint32_t w, v;
				memcpy(&w, args[i], 4);
				memcpy(p + off, &w, 4);
				memcpy(&v, exp + off, 4);
				diff |= w ^ v;
			} else {
				memcpy(p + off, args[i], sz);
				if (exp != p)
					diff |= (uint64_t)(memcmp(p + off, exp + off, sz) != 0);
			}
		}
		return diff;
	}
	/* The caller's packed buffer, or cgraft's own copy of an op kept already. */
	const void *src = op->u.k.extra ? op->u.k.extra : op->u.k.params;
	if (src && op->nbytes) {
		memcpy(p, src, op->nbytes);
		if (exp != p)
			diff = (uint64_t)(memcmp(p, exp, op->nbytes) != 0);
	}
	return diff;
}

static int cg_push_kernel(struct cg_seg *s, struct cg_op *d, const struct cg_op *op, const struct cg_op *expect,
			  int *differs)
{
	uint8_t *p = cg_arena_alloc(&s->arena, op->nbytes ? op->nbytes : 1);
	if (cg_unlikely(!p))
		return -ENOMEM;
	/* Another kernel's parameters are not compared: it differs. */
	int other = expect && !cg_op_same_kernel(op, expect);
	uint64_t diff = cg_copy_params(p, op, expect && !other ? expect->u.k.params : p) | (uint64_t)other;
	d->u.k.params = p;
	d->u.k.args = NULL;
	d->u.k.extra = NULL;
	if (cg_unlikely(op->u.k.nattr)) {
		CUlaunchAttribute *a = cg_arena_alloc(&s->arena, op->u.k.nattr * sizeof *a);
		if (!a)
			return -ENOMEM;
		memcpy(a, op->u.k.attr, op->u.k.nattr * sizeof *a);
		d->u.k.attr = a;
	}
	if (differs)
		*differs = diff != 0 || (expect && !cg_op_same_grid(op, expect));
	return 0;
}

int cg_seg_push(struct cg_seg *s, const struct cg_op *op, int snapshot, const struct cg_op *expect, int *differs)
{
	if (cg_seg_reserve(s, 1))
		return -ENOMEM;
	struct cg_op *d = &s->ops[s->n];
	*d = *op;
	if (op->kind == CG_OP_KERNEL) {
		if (cg_push_kernel(s, d, op, expect, differs))
			return -ENOMEM;
	} else {
		if (op->kind == CG_OP_COPY && op->flags & CG_F_SRC_PAGEABLE && !(op->flags & CG_F_HOST_WAITS) &&
		    snapshot) {
			size_t n = op->u.cp.spitch * op->u.cp.sheight * (op->u.cp.depth - 1) +
				   op->u.cp.spitch * (op->u.cp.height - 1) + op->u.cp.width;
			void *p = cg_arena_alloc(&s->arena, n);
			if (!p)
				return -ENOMEM;
			memcpy(p, op->u.cp.src, n);
			d->u.cp.src = p;
		}
		if (differs)
			*differs = expect && !cg_op_same_values(op, expect);
	}
	s->n++;
	return 0;
}

/* cg_params_equal for layouts with other sizes. */
int cg_params_equal_sized(const struct cg_op *op, const uint8_t *exp)
{
	const struct cg_kinfo *ki = op->u.k.ki;
	void *const *__restrict args = op->u.k.args;
	const uint32_t *__restrict size = ki->size;
	uint64_t diff = 0;
	for (uint32_t i = 0, off = 0, n = ki->nparams; i < n; off += size[i], i++) {
		if (cg_likely(size[i] == 8)) {
			uint64_t w, v;
			memcpy(&w, args[i], 8);
			memcpy(&v, exp + off, 8);
			diff |= w ^ v;
		} else if (size[i] == 4) {
			uint32_t w, v;
			memcpy(&w, args[i], 4);
			memcpy(&v, exp + off, 4);
			diff |= w ^ v;
		} else {
			diff |= (uint64_t)(memcmp(args[i], exp + off, size[i]) != 0);
		}
	}
	return !diff;
}

int cg_seg_append(struct cg_seg *s, const struct cg_op *ops, size_t n)
{
	if (cg_seg_reserve(s, n))
		return -ENOMEM;
	memcpy(s->ops + s->n, ops, n * sizeof *ops);
	s->n += n;
	return 0;
}

void cg_seg_clear(struct cg_seg *s)
{
	s->n = 0;
	cg_arena_reset(&s->arena);
}

void cg_seg_free(struct cg_seg *s)
{
	free(s->ops);
	cg_arena_free(&s->arena);
	memset(s, 0, sizeof *s);
}

void cg_seg_drop_front(struct cg_seg *s, size_t k)
{
	if (k >= s->n) {
		s->n = 0;
		return;
	}
	memmove(s->ops, s->ops + k, (s->n - k) * sizeof *s->ops);
	s->n -= k;
}

/* Ops alike for periods: of one shape, and kernels of one launch. A
 * kernel's function is a value of its node (cg_op_kernel_is_value), but a
 * loop's iteration repeats its functions: the kernels of one stream are
 * not all one period. */
static inline int cg_period_alike(const struct cg_op *a, const struct cg_op *b)
{
	return a->shape == b->shape && a->kind == b->kind && (a->kind != CG_OP_KERNEL || cg_op_same_kernel(a, b));
}

/* Whether the halves [0,p) and [p,2p) are one iteration twice: alike op by
 * op (checked again here: ops may have joined the run unseen by the
 * search, and a copy has no kernel to read), and most of them with the
 * same arguments too. A loop's iteration does, but for a counter or an RNG
 * offset; a layer repeated within the iteration does not (other weights). */
static int cg_values_recur(const struct cg_seg *s, size_t p)
{
	size_t same = 0;
	for (size_t i = 0; i < p; i++) {
		if (!cg_period_alike(&s->ops[i], &s->ops[i + p]))
			return 0;
		same += (size_t)cg_op_same_values(&s->ops[i], &s->ops[i + p]);
	}
	return 2 * same >= p;
}

uint64_t cg_period_key(const struct cg_op *ops, size_t n)
{
	uint64_t lo = UINT64_MAX, hi = 0;
	for (size_t i = 0; i < n; i++) {
		lo = ops[i].shape < lo ? ops[i].shape : lo;
		hi = ops[i].shape > hi ? ops[i].shape : hi;
	}
	return lo ^ hi * 0x9E3779B97F4A7C15ull;
}

static int cg_period_short(const struct cg_period *pd, uint64_t key)
{
	for (int i = 0; i < pd->nshorts; i++)
		if (pd->shorts[i].key == key)
			return pd->shorts[i].n >= CG_PERIOD_SHORT_TRIES;
	return 0;
}

/* One origin's candidates after op k: 1 with *found when two iterations
 * from o are complete. */
static int cg_period_from(struct cg_period *pd, int o, const struct cg_seg *s, size_t min_ops, size_t max_ops,
			  size_t *found)
{
	size_t k = s->n - 1, base = (size_t)o;
	size_t *cand = pd->at[o].cand;
	int w = 0;
	if (k < base)
		return 0;
	size_t len = k + 1 - base;
	size_t need = pd->early_run && pd->early_run < pd->min_run ? pd->early_run : pd->min_run;
	for (int i = 0; i < pd->at[o].ncand; i++) {
		size_t p = cand[i];
		if (!cg_period_alike(&s->ops[k], &s->ops[k - p]))
			continue;
		/* Halves of whole periods, once they reach need: a part of
		 * an iteration that repeats inside it is left to the
		 * iteration's own end (a sync, a read-back), or undone there
		 * when cut early (the engine's probation). */
		if (len % (2 * p) == 0 && (len >= need || 2 * len > max_ops)) {
			/* Same shapes with other arguments: a part of the
			 * iteration (layers, a chain of one kernel) repeating
			 * inside it, not the iteration. */
			struct cg_seg from = { .ops = s->ops + base, .n = s->n - base };
			if (!cg_values_recur(&from, len / 2))
				continue;
			/* Early where such stretches did not end short. */
			if (len < pd->min_run && 2 * len <= max_ops &&
			    cg_period_short(pd, cg_period_key(s->ops + base, len / 2))) {
				if (len + p <= max_ops)
					cand[w++] = p;
				continue;
			}
			*found = len / 2;
			return 1;
		}
		if (len + p <= max_ops)
			cand[w++] = p;
	}
	pd->at[o].ncand = w;
	size_t d = k - base;
	if (d >= 1 && d >= min_ops / 2 && cg_period_alike(&s->ops[k], &s->ops[base]) && w < CG_MAX_PERIODS &&
	    2 * d <= max_ops) {
		/* A period of one is complete where it is born. */
		struct cg_seg from = { .ops = s->ops + base, .n = s->n - base };
		if (d == 1 && len >= need && cg_values_recur(&from, 1)) {
			*found = 1;
			return 1;
		}
		cand[pd->at[o].ncand++] = d;
	}
	return 0;
}

enum cg_period_step cg_period_step(struct cg_period *pd, const struct cg_seg *s, size_t min_ops, size_t max_ops,
				   size_t *found, size_t *origin)
{
	if (pd->known)
		return s->n >= pd->known ? CG_PERIOD_KNOWN : CG_PERIOD_NONE;
	for (int o = 0; o < CG_PERIOD_ORIGINS; o++)
		if (cg_period_from(pd, o, s, min_ops, max_ops, found)) {
			*origin = (size_t)o;
			cg_period_reset(pd);
			return CG_PERIOD_HALVES;
		}
	return s->n >= max_ops ? CG_PERIOD_MAX : CG_PERIOD_NONE;
}

void cg_period_reset(struct cg_period *pd)
{
	for (int o = 0; o < CG_PERIOD_ORIGINS; o++)
		pd->at[o].ncand = 0;
}

void cg_period_note_short(struct cg_period *pd, uint64_t key)
{
	int i = 0;
	while (i < pd->nshorts && pd->shorts[i].key != key)
		i++;
	if (i == pd->nshorts) {
		i = pd->nshorts < CG_PERIOD_SHORTS ? pd->nshorts++ : (int)(key % CG_PERIOD_SHORTS);
		pd->shorts[i].key = key;
		pd->shorts[i].n = 0;
	}
	pd->shorts[i].n++;
}

size_t cg_period_group(size_t p, size_t max_ops)
{
	size_t g = p;
	while (g < CG_PERIOD_GROUP && g + p <= max_ops)
		g += p;
	return g;
}
