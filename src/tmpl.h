/* Templates: op sequences cgraft has seen recur and replays as one graph
 * each; the table that finds them by their first op, keeps the most recently
 * used, and backs off those that do not pay. And learning: which stretches of
 * a run of eager ops recur (whole, or as pieces around ops that vary). No
 * CUDA here: graphs are replay.c's. */
#ifndef CG_TMPL_H
#define CG_TMPL_H

#include "segment.h"

struct cg_graph; /* replay.c */

#define CG_TMPL_STARTS 4

enum cg_tstate { CG_T_READY, CG_T_BACKOFF, CG_T_DEAD };

struct cg_tmpl {
	struct cg_tmpl *hnext;           /* same first-op bucket */
	struct cg_tmpl *prev, *next;     /* most recently used first */
	uint64_t key;                    /* cg_tmpl_key() of the shapes */
	size_t n;
	struct cg_op *ops;               /* shapes, with the values recorded */
	struct cg_graph *g;              /* the built graph and its variants */
	enum cg_tstate state;
	uint64_t backoff_until;          /* segment number */
	int rounds;
	uint32_t replays, diverged;
	double eager_ns, replay_ns;      /* host time in CUDA calls, moving averages */
	/* It holds NCCL calls: whether it replays must not hang on timing,
	 * which differs from rank to rank. */
	uint8_t nccl;
	/* Its last launch built its graph again (replay.c), which pays what a
	 * first launch does: not a sample of replay's host time, the first
	 * CG_UNTIMED_REBUILDS times (more often, rebuilds are replay's cost). */
	uint8_t rebuilt, rebuilds;
	/* Its graph updates kernel nodes from the host and could take an
	 * updater (replay.c); the back-off asked for one once, rather than
	 * judge it slower than eager (want_updater: at its next launch). */
	uint8_t host_updates, updater_asked, want_updater;
	/* It has a memset, or a copy that is no copy kernel: a node of its
	 * graph may hold memory it names (cg_graph_names_memory). */
	uint8_t binds;
	/* An op of it is on a per-thread stream: its ops are one thread's. */
	uint8_t per_thread;
	/* The template launched right after it, with nothing between (by id),
	 * after how many of its launches in a row, and how many templates were
	 * made of it and the one after it (engine.c, cg_fuse_note). */
	uint64_t fuse_next;
	uint32_t fuse_n;
	uint8_t fusions;
	/* Made so, of two pieces: the first one's ops (0: not made so). */
	uint32_t fused_at;
	struct cg_tmpl *next_piece;      /* a chain: launched after this one */
	int follows;                     /* a chain's later piece: never starts a match */
	/* Starts no match either: it replays what a deferral's end leaves
	 * (cg_table_covering), a period's short group at a loop's end. A run
	 * that recurs whole as it is makes it start matches. */
	int tail;
	int in_table;
	int pins;                        /* hosts waiting on its read-back (engine.c) */
	/* Its graph is being built off the program's thread (engine.c): it
	 * matches nothing till then. */
	int building;
	int buried;                      /* taken out while under way: the builder frees it */
	struct cg_tmpl *bnext;           /* the builder's queue */
	uint64_t id;                     /* unique: templates freed and made again differ */
	/* How many first ops it shares in shape with the template of shared_id,
	 * the last one cg_tmpl_shared() was asked about. */
	uint64_t shared_id;
	size_t shared_n;
	/* Where it may start inside a run: after which template (a key only),
	 * after how many eager ops. At a run's start any template may. */
	struct cg_tmpl_start {
		const void *anchor;
		size_t offset;
	} starts[CG_TMPL_STARTS];
	int nstarts;
	uint32_t legacy_n;               /* its first ops on the legacy stream, how many */
	/* Where in its last match the hold timer found the host away (held
	 * ops), while gaps: a launch of it sets gaps to 0 (engine.c). */
	uint32_t gap_at, gaps;
	/* Where its last timed match first found the host away for a shorter
	 * gap (held ops), while short_gaps (engine.c, cg_defer_gap). */
	uint32_t short_at, short_gaps;
};

#define CG_UNTIMED_REBUILDS 4

/* ---- building blocks ------------------------------------------------------ */
uint64_t cg_tmpl_key(const struct cg_op *ops, size_t n) CG_HIDDEN;
/* A template owning a copy of ops (values included); NULL without memory. */
struct cg_tmpl *cg_tmpl_new(const struct cg_op *ops, size_t n, uint64_t eager_ns) CG_HIDDEN;
/* Frees what cg_tmpl_new() made; the graph must be gone already. */
void cg_tmpl_free(struct cg_tmpl *t) CG_HIDDEN;

/* ---- the table ---------------------------------------------------------------- */
/* Adds t; returns templates pushed out to stay within max (the caller frees
 * their graphs and them), linked through next. */
struct cg_tmpl *cg_table_add(struct cg_tmpl *t, long max) CG_HIDDEN;
/* Takes t out of the table (it stays allocated). */
void cg_table_remove(struct cg_tmpl *t) CG_HIDDEN;
/* The template of exactly these shapes, starting on the same grid, or NULL. */
struct cg_tmpl *cg_table_find(const struct cg_op *ops, size_t n) CG_HIDDEN;
/* Usable templates that start a match with op, at most max: any at a run's
 * start, inside a run (offset > 0 eager ops after anchor) only those learnt
 * at that place, so that a stretch is not tried wherever its first op
 * recurs. The one replayed most comes first. */
int cg_table_starting(const struct cg_op *op, uint64_t segno, const void *anchor, size_t offset,
		      struct cg_tmpl **out, int max) CG_HIDDEN;
/* The longest usable template, a chain's later pieces excepted, whose
 * shapes are the first of these n ops; NULL when none. */
struct cg_tmpl *cg_table_covering(const struct cg_op *ops, size_t n, uint64_t segno) CG_HIDDEN;
/* Notes that t was found at this place of a run. */
void cg_tmpl_add_start(struct cg_tmpl *t, const void *anchor, size_t offset) CG_HIDDEN;
/* How many first ops a and b share in shape: held ops that match a's there
 * match b's too. */
size_t cg_tmpl_shared(struct cg_tmpl *a, const struct cg_tmpl *b) CG_HIDDEN;
/* Whether t, a chain's next piece, may go on from op. */
int cg_tmpl_can_follow(struct cg_tmpl *t, const struct cg_op *op, uint64_t segno) CG_HIDDEN;
void cg_table_touch(struct cg_tmpl *t) CG_HIDDEN;
int cg_table_count(void) CG_HIDDEN;
/* Whether a template that starts a match starts with op. */
int cg_table_starts_alike(const struct cg_op *op) CG_HIDDEN;
/* Whether another template that starts matches starts as t does and parts
 * from it before either ends: another form of t's stretch (one that t's
 * ops begin, or that begins with t's, is none). */
int cg_tmpl_has_forms(struct cg_tmpl *t) CG_HIDDEN;
/* The ids of the pieces of t's chain, first to last, at most max (t's
 * own where it is no piece of one). */
int cg_tmpl_chain_ids(const struct cg_tmpl *t, uint64_t *ids, int max) CG_HIDDEN;
/* Takes out the chains that start with op, all their pieces. */
struct cg_tmpl *cg_table_take_chains(const struct cg_op *op) CG_HIDDEN;
/* Takes out every template naming a stream or event (NULL matches none), or
 * every template at all; returns them linked through next. */
struct cg_tmpl *cg_table_take_naming(CUstream s, CUevent e, int all) CG_HIDDEN;
/* Whether t's ops are on more than one stream (its graph's DAG spans them). */
int cg_tmpl_spans_streams(const struct cg_tmpl *t) CG_HIDDEN;
/* Takes out every template pred holds for. */
struct cg_tmpl *cg_table_take_if(int (*pred)(const struct cg_tmpl *t, void *cookie), void *cookie) CG_HIDDEN;

/* ---- back-off ------------------------------------------------------------------ */
void cg_tmpl_note_divergence(struct cg_tmpl *t, uint64_t segno) CG_HIDDEN;
void cg_tmpl_note_eager(struct cg_tmpl *t, uint64_t ns) CG_HIDDEN;
/* After a launch whose deferral cost defer_ns and launch launch_ns (0: not
 * timed); may back the template off. */
void cg_tmpl_note_replay(struct cg_tmpl *t, uint64_t ns, uint64_t segno, int backoff_slow) CG_HIDDEN;
void cg_tmpl_backoff(struct cg_tmpl *t, enum cg_reason why, uint64_t segno) CG_HIDDEN;
/* Whether this deferral's calls are to be timed: a sample of the replay's
 * host cost for the comparison with eager. */
int cg_tmpl_wants_timing(const struct cg_tmpl *t) CG_HIDDEN;

/* ---- learning ------------------------------------------------------------------ */
/* What to build from a run of eager ops that ended: stretches [start, start+n),
 * each once seen often enough; first > 0 asks for a chain with a first piece
 * of that many ops. */
struct cg_build {
	size_t start, n, first;
};
#define CG_MAX_BUILDS 16
struct cg_learn_in {
	const struct cg_seg *run;
	const struct cg_tmpl *anchor; /* the template launched just before it, or NULL */
	uint64_t eager_ns;
	long min_ops, min_repeats;
	size_t chain_first;           /* > 0: a whole run may be a chain */
};
struct cg_learn_out {
	struct cg_tmpl *whole; /* the template the whole run already has */
	int novel;             /* nothing of the run recurred */
};
/* Counts the run and its recurring stretches; returns how many builds to do
 * (written to out). */
int cg_learn(const struct cg_learn_in *in, struct cg_build *out, struct cg_learn_out *res) CG_HIDDEN;
/* Chains: the pieces of a whole run, first small, each three times the last. */
size_t cg_chain_piece_len(size_t done, size_t left, size_t first) CG_HIDDEN;
/* A template of these ops could not be built: do not try again soon. */
void cg_learn_failed(const struct cg_op *ops, size_t n) CG_HIDDEN;
/* A template of these ops went before its first launch, memory that its
 * ops named[] name freed: it waits longer at each such loss before it is
 * built again whole, and the stretches around those ops (CG_FREED_CUTS at
 * most) are built instead. */
#define CG_FREED_CUTS 4
void cg_learn_freed(const struct cg_op *ops, size_t n, const uint32_t *named, int n_named) CG_HIDDEN;
/* Forgets what learning remembers (after a reset). */
void cg_learn_forget(void) CG_HIDDEN;

#endif
