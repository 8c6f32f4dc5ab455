/* The template table: found by their first op in O(1), most recently used
 * kept within CGRAFT_MAX_GRAPHS, and backed off when they keep diverging or
 * their replay costs more host time than eager calls. No CUDA here. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "replay.h"
#include "tmpl.h"

#define CG_BUCKETS 1024 /* power of two */

static struct cg_tmpl *cg_bucket[CG_BUCKETS];
static struct cg_tmpl *cg_lru_head, *cg_lru_tail;
static int cg_ntmpl;

uint64_t cg_tmpl_key(const struct cg_op *ops, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull ^ n;
	/* A match starts on the first kernel's own function, block and shared
	 * memory (cg_first_grid): stretches that start on another are others.
	 * Its grid is not: a stretch seen at two grids recurs. */
	if (n && ops[0].kind == CG_OP_KERNEL)
		h = (h ^ cg_op_launch_hash(&ops[0])) * 0x100000001b3ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ ops[i].shape) * 0x100000001b3ull + (h >> 29);
	return h;
}

struct cg_tmpl *cg_tmpl_new(const struct cg_op *ops, size_t n, uint64_t eager_ns)
{
	size_t pb = 0, at = 0;
	for (size_t i = 0; i < n; i++) {
		if (ops[i].kind == CG_OP_KERNEL) {
			pb += (ops[i].nbytes + 15) & ~(size_t)15;
			at += ops[i].u.k.nattr;
		}
	}
	struct cg_tmpl *t = calloc(1, sizeof *t);
	uint8_t *blk = malloc(n * sizeof *t->ops + at * sizeof(CUlaunchAttribute) + pb + 1);
	if (!t || !blk) {
		free(t);
		free(blk);
		return NULL;
	}
	static _Atomic uint64_t ids;
	t->id = atomic_fetch_add_explicit(&ids, 1, memory_order_relaxed) + 1;
	t->ops = (struct cg_op *)blk;
	while (t->legacy_n < n && ops[t->legacy_n].stream == CU_STREAM_LEGACY)
		t->legacy_n++;
	for (size_t i = 0; i < n && !t->binds; i++)
		t->binds = ops[i].kind == CG_OP_MEMSET || (ops[i].kind == CG_OP_COPY && !cg_copy_is_kernel(&ops[i]));
	for (size_t i = 0; i < n && !t->per_thread; i++)
		t->per_thread = ops[i].stream == CU_STREAM_PER_THREAD;
	CUlaunchAttribute *attr = (CUlaunchAttribute *)(t->ops + n);
	uint8_t *p = (uint8_t *)(attr + at);
	memcpy(t->ops, ops, n * sizeof *ops);
	for (size_t i = 0; i < n; i++) {
		struct cg_op *o = &t->ops[i];
		t->nccl |= o->kind == CG_OP_NCCL;
		if (o->kind != CG_OP_KERNEL)
			continue;
		memcpy(p, ops[i].u.k.params, o->nbytes);
		o->u.k.params = p;
		p += (o->nbytes + 15) & ~(size_t)15;
		if (o->u.k.nattr) {
			memcpy(attr, ops[i].u.k.attr, o->u.k.nattr * sizeof *attr);
			o->u.k.attr = attr;
			attr += o->u.k.nattr;
		}
	}
	t->n = n;
	t->key = cg_tmpl_key(ops, n);
	t->eager_ns = (double)eager_ns;
	return t;
}

void cg_tmpl_free(struct cg_tmpl *t)
{
	if (!t)
		return;
	free(t->ops);
	free(t);
}

static size_t cg_bucket_of(uint64_t shape)
{
	return (size_t)(shape ^ shape >> 32) & (CG_BUCKETS - 1);
}

static void cg_lru_unlink(struct cg_tmpl *t)
{
	if (t->prev)
		t->prev->next = t->next;
	else
		cg_lru_head = t->next;
	if (t->next)
		t->next->prev = t->prev;
	else
		cg_lru_tail = t->prev;
	t->prev = t->next = NULL;
}

static void cg_lru_push(struct cg_tmpl *t)
{
	t->prev = NULL;
	t->next = cg_lru_head;
	if (cg_lru_head)
		cg_lru_head->prev = t;
	cg_lru_head = t;
	if (!cg_lru_tail)
		cg_lru_tail = t;
}

void cg_table_remove(struct cg_tmpl *t)
{
	if (!t->in_table)
		return;
	struct cg_tmpl **pp = &cg_bucket[cg_bucket_of(t->ops[0].shape)];
	while (*pp && *pp != t)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = t->hnext;
	t->hnext = NULL;
	cg_lru_unlink(t);
	/* A chain that led here ends before it. */
	for (struct cg_tmpl *o = cg_lru_head; o; o = o->next)
		if (o->next_piece == t)
			o->next_piece = NULL;
	t->next_piece = NULL;
	t->in_table = 0;
	cg_ntmpl--;
}

struct cg_tmpl *cg_table_add(struct cg_tmpl *t, long max)
{
	struct cg_tmpl *gone = NULL;
	while (cg_ntmpl >= max && cg_lru_tail) {
		struct cg_tmpl *v = cg_lru_tail;
		cg_table_remove(v);
		v->next = gone;
		gone = v;
	}
	size_t b = cg_bucket_of(t->ops[0].shape);
	t->hnext = cg_bucket[b];
	cg_bucket[b] = t;
	cg_lru_push(t);
	t->in_table = 1;
	cg_ntmpl++;
	return gone;
}

void cg_table_touch(struct cg_tmpl *t)
{
	if (t->in_table && cg_lru_head != t) {
		cg_lru_unlink(t);
		cg_lru_push(t);
	}
}

int cg_table_count(void)
{
	return cg_ntmpl;
}

static int cg_same_shapes(const struct cg_tmpl *t, const struct cg_op *ops, size_t n)
{
	if (t->n != n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!cg_op_same_shape(&t->ops[i], &ops[i]))
			return 0;
	return 1;
}

/* A match starts only on the kernel and grid its template starts with: a
 * kernel over another size starts other work (another thread's on its
 * per-thread stream, which has the same handle), which would diverge; once
 * held, a grown grid or another kernel is a node update. */
static int cg_first_grid(const struct cg_tmpl *t, const struct cg_op *op)
{
	return op->kind != CG_OP_KERNEL || (cg_op_same_kernel(&t->ops[0], op) && cg_op_same_grid(&t->ops[0], op));
}

struct cg_tmpl *cg_table_find(const struct cg_op *ops, size_t n)
{
	if (!n)
		return NULL;
	uint64_t key = cg_tmpl_key(ops, n);
	for (struct cg_tmpl *t = cg_bucket[cg_bucket_of(ops[0].shape)]; t; t = t->hnext)
		if (t->key == key && cg_same_shapes(t, ops, n) && cg_first_grid(t, ops))
			return t;
	return NULL;
}

static int cg_usable(struct cg_tmpl *t, uint64_t segno)
{
	if (t->state == CG_T_DEAD || t->building)
		return 0;
	if (t->state == CG_T_BACKOFF) {
		if (segno < t->backoff_until)
			return 0;
		t->state = CG_T_READY;
	}
	return 1;
}

static int cg_starts_here(const struct cg_tmpl *t, const void *anchor, size_t offset)
{
	if (!offset)
		return 1;
	for (int i = 0; i < t->nstarts; i++)
		if (t->starts[i].anchor == anchor && t->starts[i].offset == offset)
			return 1;
	return 0;
}

void cg_tmpl_add_start(struct cg_tmpl *t, const void *anchor, size_t offset)
{
	if (!offset || cg_starts_here(t, anchor, offset))
		return;
	int i = t->nstarts < CG_TMPL_STARTS ? t->nstarts++ : (int)(offset % CG_TMPL_STARTS);
	t->starts[i].anchor = anchor;
	t->starts[i].offset = offset;
}

int cg_table_starting(const struct cg_op *op, uint64_t segno, const void *anchor, size_t offset,
		      struct cg_tmpl **out, int max)
{
	int n = 0;
	for (struct cg_tmpl *t = cg_bucket[cg_bucket_of(op->shape)]; t && n < max; t = t->hnext)
		if (!t->follows && !t->tail && cg_op_same_shape(&t->ops[0], op) && cg_first_grid(t, op) &&
		    cg_starts_here(t, anchor, offset) && cg_usable(t, segno)) {
			out[n] = t;
			if (n && t->replays > out[0]->replays) {
				out[n] = out[0];
				out[0] = t;
			}
			n++;
		}
	return n;
}

struct cg_tmpl *cg_table_covering(const struct cg_op *ops, size_t n, uint64_t segno)
{
	struct cg_tmpl *best = NULL;
	for (struct cg_tmpl *t = cg_bucket[cg_bucket_of(ops[0].shape)]; t; t = t->hnext) {
		if (t->follows || t->n > n || (best && t->n <= best->n))
			continue;
		size_t i = 0;
		while (i < t->n && t->ops[i].shape == ops[i].shape && cg_op_same_shape(&t->ops[i], &ops[i]))
			i++;
		if (i == t->n && cg_usable(t, segno))
			best = t;
	}
	return best;
}

int cg_tmpl_can_follow(struct cg_tmpl *t, const struct cg_op *op, uint64_t segno)
{
	return cg_op_same_shape(&t->ops[0], op) && cg_usable(t, segno);
}

int cg_table_starts_alike(const struct cg_op *op)
{
	for (struct cg_tmpl *t = cg_bucket[cg_bucket_of(op->shape)]; t; t = t->hnext)
		if (!t->follows && !t->tail && cg_op_same_shape(&t->ops[0], op))
			return 1;
	return 0;
}

int cg_tmpl_has_forms(struct cg_tmpl *t)
{
	for (struct cg_tmpl *o = cg_bucket[cg_bucket_of(t->ops[0].shape)]; o; o = o->hnext)
		if (o != t && !o->follows && !o->tail && cg_op_same_shape(&o->ops[0], &t->ops[0]) &&
		    cg_tmpl_shared(o, t) < (o->n < t->n ? o->n : t->n))
			return 1;
	return 0;
}

int cg_tmpl_chain_ids(const struct cg_tmpl *t, uint64_t *ids, int max)
{
	/* Back to the first piece: a piece is the next of one piece at most. */
	const struct cg_tmpl *head = t;
	for (int steps = 0, moved = 1; moved && steps < max; steps++) {
		moved = 0;
		for (const struct cg_tmpl *o = cg_lru_head; o && !moved; o = o->next)
			if (o->next_piece == head) {
				head = o;
				moved = 1;
			}
	}
	int n = 0;
	for (const struct cg_tmpl *p = head; p && n < max; p = p->next_piece)
		ids[n++] = p->id;
	return n;
}

struct cg_tmpl *cg_table_take_chains(const struct cg_op *op)
{
	struct cg_tmpl *taken = NULL;
	for (;;) {
		struct cg_tmpl *head = NULL;
		for (struct cg_tmpl *t = cg_bucket[cg_bucket_of(op->shape)]; t && !head; t = t->hnext)
			if (!t->follows && t->next_piece && cg_op_same_shape(&t->ops[0], op))
				head = t;
		if (!head)
			return taken;
		while (head) {
			struct cg_tmpl *nx = head->next_piece;
			cg_table_remove(head);
			head->next = taken;
			taken = head;
			head = nx;
		}
	}
}

static int cg_names(const struct cg_tmpl *t, CUstream s, CUevent e)
{
	for (size_t i = 0; i < t->n; i++) {
		const struct cg_op *o = &t->ops[i];
		if (s && o->stream == s)
			return 1;
		if (e && (o->kind == CG_OP_RECORD || o->kind == CG_OP_WAIT) && o->u.ev.event == e)
			return 1;
	}
	return 0;
}

int cg_tmpl_spans_streams(const struct cg_tmpl *t)
{
	for (size_t i = 1; i < t->n; i++)
		if (t->ops[i].stream != t->ops[0].stream)
			return 1;
	return 0;
}

struct cg_tmpl *cg_table_take_naming(CUstream s, CUevent e, int all)
{
	struct cg_tmpl *taken = NULL, *t = cg_lru_head;
	while (t) {
		struct cg_tmpl *nx = t->next;
		if (all || cg_names(t, s, e)) {
			cg_table_remove(t);
			t->next = taken;
			taken = t;
		}
		t = nx;
	}
	return taken;
}

struct cg_tmpl *cg_table_take_if(int (*pred)(const struct cg_tmpl *t, void *cookie), void *cookie)
{
	struct cg_tmpl *taken = NULL, *t = cg_lru_head;
	while (t) {
		struct cg_tmpl *nx = t->next;
		if (pred(t, cookie)) {
			cg_table_remove(t);
			t->next = taken;
			taken = t;
		}
		t = nx;
	}
	return taken;
}

size_t cg_tmpl_shared(struct cg_tmpl *a, const struct cg_tmpl *b)
{
	if (a->shared_id != b->id) {
		size_t n = 0, m = a->n < b->n ? a->n : b->n;
		while (n < m && cg_op_same_shape(&a->ops[n], &b->ops[n]))
			n++;
		a->shared_id = b->id;
		a->shared_n = n;
	}
	return a->shared_n;
}

/* ---- back-off ---------------------------------------------------------------- */
void cg_tmpl_backoff(struct cg_tmpl *t, enum cg_reason why, uint64_t segno)
{
	cg_stat_add(backoffs, 1);
	cg_count_fallback(why);
	t->rounds++;
	t->diverged = 0;
	t->replays = 0;
	t->replay_ns = 0; /* the next round samples afresh */
	t->rebuilt = 0;
	if (t->rounds > 3) {
		t->state = CG_T_DEAD;
		cg_log(CG_LOG_INFO, CG_FAULT_NONE, "a %zu-op stretch stays eager for good (%s)", t->n,
		       cg_reasons[why].name);
		return;
	}
	t->state = CG_T_BACKOFF;
	t->backoff_until = segno + (16ull << t->rounds);
}

void cg_tmpl_note_divergence(struct cg_tmpl *t, uint64_t segno)
{
	t->diverged++;
	if (t->diverged >= 4 && t->diverged * 2 > t->replays)
		cg_tmpl_backoff(t, CG_WHY_BACKOFF_DIVERGE, segno);
}

void cg_tmpl_note_eager(struct cg_tmpl *t, uint64_t ns)
{
	if (ns)
		t->eager_ns = t->eager_ns ? 0.8 * t->eager_ns + 0.2 * (double)ns : (double)ns;
}

/* The first replays, which decide, and then one in 64, which watches: a
 * sampled replay reads the clock around each of its calls. */
int cg_tmpl_wants_timing(const struct cg_tmpl *t)
{
	return t->replays > 0 && (t->replays < 16 || (t->replays & 63) == 0);
}

/* Replay that costs more host time than eager is not worth its risks. Both
 * count the time spent in CUDA calls (or cgraft's in their place) only, not
 * the program's own between them: in a PyTorch step that is most of the
 * time, and it varies more than launches cost. */
void cg_tmpl_note_replay(struct cg_tmpl *t, uint64_t ns, uint64_t segno, int backoff_slow)
{
	/* The first replay also pays for what the first launch of a graph
	 * and of cgraft's own threads cost once: it is not a sample, nor is
	 * one that built its graph again. */
	if (ns && t->replays > 0 && !t->rebuilt) {
		/* A sample counts at most twice the mean so far: past a
		 * round's first sample, one replay the host was taken from (a
		 * preemption, a page fault) does not make replay look slower
		 * than eager; replays slower at every sample still do, a few
		 * samples on (the mean grows by a fifth at most a sample). */
		double x = (double)ns;
		if (t->replay_ns && x > 2 * t->replay_ns)
			x = 2 * t->replay_ns;
		t->replay_ns = t->replay_ns ? 0.8 * t->replay_ns + 0.2 * x : x;
	}
	t->replays++;
	t->rebuilt = 0;
	/* A few samples tell when replay costs far more; more when it is close. */
	if (backoff_slow && t->eager_ns > 0 &&
	    ((t->replays >= 8 && t->replay_ns > t->eager_ns) || (t->replays >= 3 && t->replay_ns > 2 * t->eager_ns))) {
		/* Updates from the host may be what costs: an updater first
		 * (once), then sampled afresh. */
		if (t->host_updates && !t->updater_asked) {
			t->updater_asked = t->want_updater = 1;
			t->replays = 1;
			t->replay_ns = 0;
			return;
		}
		cg_tmpl_backoff(t, CG_WHY_BACKOFF_SLOW, segno);
	}
}
