/* Learning what recurs. A run of eager ops that recurs whole becomes one
 * template (or a chain of them). One that recurs but for a few ops that vary
 * (a grid that grows with a sequence, a step's own buffer) is compared with
 * the last run found at the same place (after the same template, starting
 * with the same op): the stretches both share become templates of their own,
 * and the ops between them stay eager. Runs that differ from the last only
 * in another kernel at a few places (PyTorch's vectorised or unrolled kernel
 * as a pointer's alignment alternates) may each recur whole: pieces wait
 * for one more run there. No CUDA here. */
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "tmpl.h"

/* ---- seen shapes ---------------------------------------------------------- */
/* Both tables are set-associative, the least recently used of a set's ways
 * giving way: runs that alternate (a step's pieces between the frees or
 * syncs that end them) must not evict each other's counts or last runs at
 * every turn, whatever their keys' hashes (which carry handles' addresses,
 * so differ from process to process). */
#define CG_WAYS 4
#define CG_SEEN_SETS 1024

static struct cg_seen_way {
	uint64_t key;
	size_t n;
	long count;
	uint64_t used;
	int freed; /* its graphs went before their first launch (cg_learn_freed) */
	/* The ops of the last such graph that named the freed memory. */
	int ncut;
	uint32_t cut[CG_FREED_CUTS];
} cg_seen[CG_SEEN_SETS][CG_WAYS];
static uint64_t cg_learn_clock; /* under the engine lock, as every table here */

/* The way of set ways[] holding what match() says, marked used now, else
 * (*fresh) the least recently used one, for the caller to fill. */
#define CG_WAY_PICK(ways, match, fresh)                                                 \
	({                                                                              \
		int w_ = -1, lru_ = 0;                                                  \
		for (int i_ = 0; i_ < CG_WAYS && w_ < 0; i_++)                          \
			if (match(&(ways)[i_]))                                         \
				w_ = i_;                                                \
			else if ((ways)[i_].used < (ways)[lru_].used)                   \
				lru_ = i_;                                              \
		if (w_ >= 0)                                                            \
			(ways)[w_].used = ++cg_learn_clock;                             \
		*(fresh) = w_ < 0;                                                      \
		&(ways)[w_ < 0 ? lru_ : w_];                                            \
	})

static struct cg_seen_way *cg_seen_entry(uint64_t key, size_t n)
{
	struct cg_seen_way *set = cg_seen[(size_t)(key ^ key >> 31) & (CG_SEEN_SETS - 1)];
	int fresh;
#define CG_SEEN_MATCH(e) ((e)->key == key && (e)->n == n && (e)->used)
	struct cg_seen_way *e = CG_WAY_PICK(set, CG_SEEN_MATCH, &fresh);
#undef CG_SEEN_MATCH
	if (fresh) {
		e->key = key;
		e->n = n;
		e->count = 0;
		e->freed = 0;
		e->ncut = 0;
		e->used = ++cg_learn_clock;
	}
	return e;
}

/* One more sighting of e's run, counted at least at_least. */
static long cg_seen_bump(struct cg_seen_way *e, long at_least)
{
	e->count++;
	/* A run whose graph failed stays below zero (cg_learn_failed). */
	if (e->count >= 0 && e->count < at_least)
		e->count = at_least;
	return e->count;
}

/* A miss only delays a build, never makes one wrong (templates compare
 * every op before they are used). */
static long cg_seen_note(uint64_t key, size_t n, long at_least)
{
	return cg_seen_bump(cg_seen_entry(key, n), at_least);
}

void cg_learn_failed(const struct cg_op *ops, size_t n)
{
	cg_seen_entry(cg_tmpl_key(ops, n), n)->count = -(1l << 20); /* do not try again soon */
}

/* A run whose graph went before its first launch, because memory its copies
 * or memsets name was freed (scratch memory allocated and freed at every
 * iteration): it is built again whole only once it has recurred 2, 4, 8, ...
 * 1,024 times more, the wait doubling at each such loss, rather than at every
 * iteration, a build paid for nothing each time. From the second loss on,
 * the stretches between the ops that named the memory are built instead
 * where they are long enough (cg_learn_cuts): those ops run eagerly between
 * them, and a free no longer takes the graphs. named: the ops' indices, n_named
 * of them in order, more than CG_FREED_CUTS for no cut. */
#define CG_FREED_WAITS 10

void cg_learn_freed(const struct cg_op *ops, size_t n, const uint32_t *named, int n_named)
{
	struct cg_seen_way *e = cg_seen_entry(cg_tmpl_key(ops, n), n);
	if (e->freed < CG_FREED_WAITS)
		e->freed++;
	long wait = 1 - (1l << e->freed);
	if (e->count > wait)
		e->count = wait;
	e->ncut = n_named <= CG_FREED_CUTS ? n_named : 0;
	for (int i = 0; i < e->ncut; i++)
		e->cut[i] = named[i];
}

/* ---- the last run at each place ---------------------------------------------- */
#define CG_HIST_SETS 64
#define CG_HIST_SLOTS (CG_HIST_SETS * CG_WAYS)
#define CG_HIST_MAX 8192

static struct cg_hist_way {
	const void *anchor;
	uint64_t first;
	uint64_t *shape;
	const void **fn; /* each op's kernel function, NULL for other ops */
	size_t n;
	/* Runs here differed in other kernels only, once: pieces waited for
	 * whole runs to recur, which are built unchained (a chain's first
	 * piece would stand for every run that shares it). */
	int alternates;
	uint64_t used;
} cg_hist[CG_HIST_SLOTS];

/* A run is compared with the last one after the same template that began
 * with the same op or, where the first op is one that varies (the grid of a
 * kernel over a growing sequence), with the last one after that template. */
#define CG_ANY_FIRST 0xa5a5a5a5a5a5a5a5ull

/* The slot kept for (anchor, first): the one holding it, else the least
 * recently used of its set (*fresh). */
static size_t cg_hist_slot(const void *anchor, uint64_t first, int *fresh)
{
	uint64_t h = ((uint64_t)(uintptr_t)anchor * 0x9E3779B97F4A7C15ull) ^ first;
	struct cg_hist_way *set = &cg_hist[((size_t)(h ^ h >> 29) & (CG_HIST_SETS - 1)) * CG_WAYS];
#define CG_HIST_MATCH(e) ((e)->shape && (e)->anchor == anchor && (e)->first == first)
	return (size_t)(CG_WAY_PICK(set, CG_HIST_MATCH, fresh) - cg_hist);
#undef CG_HIST_MATCH
}

void cg_learn_forget(void)
{
	for (size_t i = 0; i < CG_HIST_SLOTS; i++) {
		free(cg_hist[i].shape);
		memset(&cg_hist[i], 0, sizeof cg_hist[i]);
	}
	memset(cg_seen, 0, sizeof cg_seen);
}

/* ---- matching blocks (Myers' O(ND) difference, D bounded) ---------------------- */
#define CG_DIFF_MAX_D 48
#define CG_PIECE_MIN 4

struct cg_block {
	size_t x, len; /* in the new run */
};

/* Common stretches of a (new) and b (last), longest path of matches first;
 * at most maxb, each at least minlen; -1 when they differ in more than
 * CG_DIFF_MAX_D places. */
static int cg_diff_blocks(const uint64_t *a, size_t n, const uint64_t *b, size_t m, size_t minlen,
			  struct cg_block *out, int maxb)
{
	enum { W = 2 * CG_DIFF_MAX_D + 3, OFF = CG_DIFF_MAX_D + 1 };
	static long trace[CG_DIFF_MAX_D + 1][W]; /* under the engine lock */
	long v[W];
	int dfin = -1;
	memset(v, 0, sizeof v);
	for (int d = 0; d <= CG_DIFF_MAX_D && dfin < 0; d++) {
		for (int k = -d; k <= d; k += 2) {
			long x = (k == -d || (k != d && v[OFF + k - 1] < v[OFF + k + 1])) ? v[OFF + k + 1]
											   : v[OFF + k - 1] + 1;
			long y = x - k;
			while ((size_t)x < n && y >= 0 && (size_t)y < m && a[x] == b[y])
				x++, y++;
			v[OFF + k] = x;
			if ((size_t)x >= n && y >= 0 && (size_t)y >= m) {
				dfin = d;
				break;
			}
		}
		memcpy(trace[d], v, sizeof v);
	}
	if (dfin < 0)
		return -1;
	/* Walk back from the end: each step d arrived by one move (down or
	 * right) from diagonal k+1 or k-1, then slid along a run of matches. */
	int nb = 0;
	long x = (long)n, y = (long)m;
	for (int d = dfin; d >= 0; d--) {
		long k = x - y, mx, my, px, py;
		if (d == 0) {
			mx = my = px = py = 0;
		} else {
			const long *pv = trace[d - 1];
			int down = k == -d || (k != d && pv[OFF + k - 1] < pv[OFF + k + 1]);
			long pk = down ? k + 1 : k - 1;
			px = pv[OFF + pk];
			py = px - pk;
			mx = down ? px : px + 1;
			my = down ? py + 1 : py;
		}
		long len = x - mx;
		(void)my;
		if (len >= (long)minlen && nb < maxb)
			out[nb++] = (struct cg_block){ (size_t)mx, (size_t)len };
		x = px;
		y = py;
	}
	return nb;
}

/* ---- chains ------------------------------------------------------------------------ */
size_t cg_chain_piece_len(size_t done, size_t left, size_t first)
{
	size_t len = first;
	for (size_t d = 0; d < done; d += len, len *= 3)
		;
	/* A rest shorter than half a piece joins this piece. */
	return left < len + len / 2 ? left : len;
}

/* ---- learning ---------------------------------------------------------------------- */
static void cg_hist_store(const struct cg_learn_in *in, uint64_t first, const uint64_t *shape, int alternates)
{
	int fresh;
	size_t slot = cg_hist_slot(in->anchor, first, &fresh), n = in->run->n;
	uint64_t *copy = malloc(n * (sizeof *copy + sizeof *cg_hist[slot].fn));
	if (!copy)
		return;
	memcpy(copy, shape, n * sizeof *copy);
	const void **fn = (const void **)(copy + n);
	for (size_t i = 0; i < n; i++) {
		const struct cg_op *o = &in->run->ops[i];
		fn[i] = o->kind == CG_OP_KERNEL ? o->u.k.ki->handle : NULL;
	}
	free(cg_hist[slot].shape);
	cg_hist[slot].alternates = alternates || (!fresh && cg_hist[slot].alternates);
	cg_hist[slot].anchor = in->anchor;
	cg_hist[slot].first = first;
	cg_hist[slot].shape = copy;
	cg_hist[slot].fn = fn;
	cg_hist[slot].n = n;
	cg_hist[slot].used = ++cg_learn_clock;
}

/* The last run kept at (anchor, first), or -1. */
static long cg_hist_find(const void *anchor, uint64_t first)
{
	int fresh;
	size_t slot = cg_hist_slot(anchor, first, &fresh);
	return fresh ? -1 : (long)slot;
}

/* The last run at this place, or -1: after the same template, starting
 * with the same op, or any op after that template. */
static long cg_hist_place(const void *anchor, uint64_t first)
{
	long slot = cg_hist_find(anchor, first);
	if (slot < 0 && anchor)
		slot = cg_hist_find(anchor, CG_ANY_FIRST);
	return slot;
}

/* How many places of a run as long as the last one at slot may hold
 * another kernel, all else the same, for both to be tried whole. */
#define CG_ALT_MAX 4

/* Whether the run differs from the last at slot in another kernel at
 * 1..CG_ALT_MAX places and nowhere else: the same length, each op that
 * differs a kernel where the last had a kernel of another function. A
 * kernel of the same function at another shape (a grid that grows) is an
 * op that varies, around which pieces are learnt at once. */
static int cg_runs_alternate(const struct cg_op *ops, const uint64_t *shape, size_t n, size_t slot)
{
	if (cg_hist[slot].n != n)
		return 0;
	int k = 0;
	for (size_t i = 0; i < n; i++) {
		if (shape[i] == cg_hist[slot].shape[i])
			continue;
		if (ops[i].kind != CG_OP_KERNEL || !cg_hist[slot].fn[i] || cg_hist[slot].fn[i] == ops[i].u.k.ki->handle ||
		    ++k > CG_ALT_MAX)
			return 0;
	}
	return k > 0;
}

/* A piece of the run, [start, start + len): known, it gets this place as a
 * start; new and seen twice, it is to be built (out[nb]). Returns nb. */
static int cg_piece_note(const struct cg_learn_in *in, size_t start, size_t len, struct cg_tmpl *have,
			 struct cg_build *out, int nb)
{
	const struct cg_op *b = in->run->ops + start;
	if (have)
		cg_tmpl_add_start(have, in->anchor, start);
	else if (cg_seen_note(cg_tmpl_key(b, len), len, 1) + 1 >= in->min_repeats)
		out[nb++] = (struct cg_build){ start, len, 0 };
	return nb;
}

/* Pieces of the run that the last run at slot shares, at least CG_PIECE_MIN
 * ops between ops that vary: known ones get this place as a start, new
 * ones seen twice are to be built. */
static int cg_learn_pieces(const struct cg_learn_in *in, const uint64_t *shape, size_t slot,
			   struct cg_build *out)
{
	const struct cg_op *ops = in->run->ops;
	size_t n = in->run->n;
	struct cg_block blk[CG_MAX_BUILDS];
	/* A piece between ops that vary pays a graph launch of its own:
	 * shorter ones than CG_PIECE_MIN save little. */
	size_t minlen = (size_t)in->min_ops > CG_PIECE_MIN ? (size_t)in->min_ops : CG_PIECE_MIN;
	int got = cg_diff_blocks(shape, n, cg_hist[slot].shape, cg_hist[slot].n, minlen, blk, CG_MAX_BUILDS);
	int nb = 0;
	for (int i = 0; i < got; i++) {
		struct cg_tmpl *have = cg_table_find(ops + blk[i].x, blk[i].len);
		/* The whole run again is the whole-run count's. */
		if (!have && blk[i].x == 0 && blk[i].len == n)
			continue;
		/* Found in both runs: seen twice already. */
		nb = cg_piece_note(in, blk[i].x, blk[i].len, have, out, nb);
	}
	if (nb)
		cg_debug("a %zu-op run recurs in %d pieces around ops that vary", n, nb);
	return nb;
}

/* A run whose graphs went twice before their first launch (cg_learn_freed):
 * its stretches between the ops that named the freed memory, those at least
 * as long as a piece, are known at this place or to be built (out). */
static int cg_learn_cuts(const struct cg_learn_in *in, const struct cg_seen_way *e, struct cg_build *out)
{
	const struct cg_op *ops = in->run->ops;
	size_t n = in->run->n;
	if (e->freed < 2 || !e->ncut)
		return 0;
	/* Noting a piece may take e's way for another count: the cuts are read first. */
	uint32_t cut[CG_FREED_CUTS];
	int ncut = e->ncut;
	memcpy(cut, e->cut, sizeof cut);
	size_t minlen = (size_t)in->min_ops > CG_PIECE_MIN ? (size_t)in->min_ops : CG_PIECE_MIN;
	int nb = 0;
	size_t start = 0;
	for (int i = 0; i <= ncut; i++) {
		size_t end = i < ncut ? cut[i] : n;
		if (end > start && end - start >= minlen)
			nb = cg_piece_note(in, start, end - start, cg_table_find(ops + start, end - start), out, nb);
		start = end + 1;
	}
	if (nb)
		cg_debug("a %zu-op run whose graphs went before launching, memory they name freed: %d pieces around "
			 "the ops that name it", n, nb);
	return nb;
}

int cg_learn(const struct cg_learn_in *in, struct cg_build *out, struct cg_learn_out *res)
{
	const struct cg_op *ops = in->run->ops;
	size_t n = in->run->n;
	res->whole = NULL;
	res->novel = 0;
	if ((long)n < in->min_ops)
		return 0;
	long slot = cg_hist_place(in->anchor, ops[0].shape);
	size_t chain = slot >= 0 && cg_hist[slot].alternates ? 0 : in->chain_first;
	res->whole = cg_table_find(ops, n);
	if (!res->whole && chain)
		res->whole = cg_table_find(ops, chain);
	if (res->whole)
		return 0;
	struct cg_seen_way *e = cg_seen_entry(cg_tmpl_key(ops, n), n);
	long seen = cg_seen_bump(e, 0);
	int cuts = cg_learn_cuts(in, e, out);
	if (cuts)
		return cuts;
	if (seen >= in->min_repeats) {
		out[0] = (struct cg_build){ 0, n, chain };
		return 1;
	}
	if (n > CG_HIST_MAX)
		return 0;
	uint64_t *shape = malloc(n * sizeof *shape);
	if (!shape)
		return 0;
	for (size_t i = 0; i < n; i++)
		shape[i] = ops[i].shape;
	int nb = 0, alternates = 0;
	if (slot >= 0 && !cg_hist[slot].alternates && cg_runs_alternate(ops, shape, n, (size_t)slot)) {
		alternates = 1;
		cg_debug("a %zu-op run differs from the last in other kernels only: pieces wait a run", n);
	} else if (slot >= 0) {
		nb = cg_learn_pieces(in, shape, (size_t)slot, out);
	}
	cg_hist_store(in, shape[0], shape, alternates);
	if (in->anchor)
		cg_hist_store(in, CG_ANY_FIRST, shape, alternates);
	free(shape);
	res->novel = seen == 1 && !nb && !alternates;
	return nb;
}
