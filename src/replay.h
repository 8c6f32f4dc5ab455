/* Replay: a template's native graph built by explicit construction (edges
 * from dag.c), its instantiated variants for recurring argument sets, node
 * updates for the values that change, pinned staging for held pageable
 * sources, and the launch after each stream's earlier work (fork) and before
 * its later work (join). Every call here is a real CUDA call: the engine
 * makes them without its lock, holding its submission turn. */
#ifndef CG_REPLAY_H
#define CG_REPLAY_H

#include "tmpl.h"

/* Builds and instantiates t's graph into *out; 0 or a negative errno. The
 * exec is uploaded on *upload (none where it is NULL), or with upload NULL
 * on the graph's first stream. */
int cg_graph_build(const struct cg_tmpl *t, struct cg_graph **out, const CUstream *upload) CG_HIDDEN;
/* Destroys a template's graph and everything it owns. */
void cg_graph_destroy(struct cg_graph *g) CG_HIDDEN;
/* Forgets a graph without destroying it: after a reset its handles are gone. */
void cg_graph_abandon(struct cg_graph *g) CG_HIDDEN;
/* The op whose values the next launch of t is expected to carry at i. */
const struct cg_op *cg_graph_expect(const struct cg_tmpl *t, size_t i) CG_HIDDEN;
/* Whether a kernel of t, as recorded or in a variant, is given an address
 * in [p, p + n). */
int cg_graph_reaches(const struct cg_tmpl *t, const void *p, size_t n) CG_HIDDEN;
/* Whether a copy or memset node of t's graph (before it is built, a copy or
 * memset of t), as recorded or in a variant, names memory in [p, p + n):
 * such a node holds the allocation it named. */
int cg_graph_names_memory(const struct cg_tmpl *t, const void *p, size_t n) CG_HIDDEN;
/* Whether a copy op goes into graphs as cgraft's copy kernel, a kernel node
 * that holds only bytes: a linear copy between device memory whose ranges
 * do not overlap, where the kernel is there. */
int cg_copy_is_kernel(const struct cg_op *op) CG_HIDDEN;

struct cg_launch {
	const struct cg_op *ops;  /* the held ops, n == t->n */
	const uint8_t *dirty;     /* per op: values differ from cg_graph_expect(); NULL: unknown */
	uint64_t epoch;           /* work enqueued outside cgraft's replays so far */
	const void *thread;       /* the launching thread's token: its per-thread stream */
	CUevent wait;             /* out: for a read-back, the event the host then waits for */
	/* out: where the read-back landed (CG_F_LANDS_PINNED), NULL if in place */
	const void *landing;
	size_t landing_size;
	CUstream stream;          /* out: the graph's stream when it has one, else NULL */
};
/* Launches t; 0, or a negative errno when nothing of the graph ran (the
 * caller submits the ops eagerly). */
int cg_graph_launch(struct cg_tmpl *t, struct cg_launch *l) CG_HIDDEN;
/* Makes the waits the last launch over several streams owes its streams past
 * the first (none where its graph is done): before anything else may reach
 * one of them or the host may look at one. Holding the turn. */
void cg_graph_settle(void) CG_HIDDEN;
/* The same before the host waits for stream s: only where they are owed to
 * s (the host's wait for the graph's first stream needs none). */
void cg_graph_settle_for(CUstream s) CG_HIDDEN;
/* Drops them: in a forked child, which submits nothing. */
void cg_graph_forget_owed(void) CG_HIDDEN;

#endif
