/* Templates: built graphs of segment shapes, their instantiated variants,
 * and how a deferred segment is launched through them. Called under the
 * engine lock. */
#ifndef CGRAFT_GRAPH_I_H
#define CGRAFT_GRAPH_I_H

#include "cgraft_i.h"

struct cg_tmpl;

uint64_t cg_segno(void) CG_HIDDEN;
uint64_t cg_epoch_now(void) CG_HIDDEN;
void cg_epoch_bump(void) CG_HIDDEN;

/* Counts a recorded shape; returns how often it has been seen. */
int cg_seen_note(const uint64_t *shape, size_t n, uint64_t eager_ns) CG_HIDDEN;
/* Builds and instantiates a template from recorded ops; NULL if it fails. */
struct cg_tmpl *cg_tmpl_build(const uint64_t *shape, const struct cg_op *ops, size_t n,
			      uint64_t eager_ns) CG_HIDDEN;
/* Builds a whole template for a segment, after dropping the chains that
 * start alike: they would lose every match to it. */
void cg_tmpl_build_whole(const uint64_t *shape, const struct cg_op *ops, size_t n, uint64_t eager_ns) CG_HIDDEN;
/* Whether the segment may be replayed as a chain with a first piece of
 * `first` ops: no template starts alike, and the pieces fit. */
int cg_tmpl_chain_ok(const uint64_t *shape, const struct cg_op *ops, size_t n, size_t first) CG_HIDDEN;
/* Builds a chain of templates for the pieces of a segment, the first of
 * `first` ops; returns how many pieces were built. */
size_t cg_tmpl_build_chain(const uint64_t *shape, const struct cg_op *ops, size_t n, uint64_t eager_ns,
			   size_t first) CG_HIDDEN;
/* How many of ops differ in their values from t's last launch. */
size_t cg_tmpl_distance(struct cg_tmpl *t, const struct cg_op *ops, size_t n) CG_HIDDEN;
/* The piece launched after t, or NULL. */
struct cg_tmpl *cg_tmpl_next_piece(const struct cg_tmpl *t) CG_HIDDEN;
/* Whether t, a piece expected next, may go on from op. */
int cg_tmpl_can_follow(struct cg_tmpl *t, uint64_t shape, const struct cg_op *op) CG_HIDDEN;
/* The engine forgets a template that is being freed. */
void cg_engine_tmpl_gone(const struct cg_tmpl *t) CG_HIDDEN;
struct cg_tmpl *cg_tmpl_lookup(const uint64_t *shape, const struct cg_op *ops, size_t n) CG_HIDDEN;
int cg_tmpl_any(void) CG_HIDDEN;
void cg_tmpl_note_eager(struct cg_tmpl *t, uint64_t ns) CG_HIDDEN;
void cg_tmpl_note_divergence(struct cg_tmpl *t) CG_HIDDEN;

/* Templates whose first op has op's shape and that may be replayed now. */
int cg_tmpl_candidates(uint64_t shape, const struct cg_op *op, struct cg_tmpl **out, int max) CG_HIDDEN;
size_t cg_tmpl_nops(const struct cg_tmpl *t) CG_HIDDEN;
int cg_tmpl_op_matches(const struct cg_tmpl *t, size_t pos, uint64_t shape, const struct cg_op *op) CG_HIDDEN;
const char *cg_tmpl_describe_mismatch(struct cg_tmpl *const *cand, int ncand, size_t pos,
				      const struct cg_op *op) CG_HIDDEN;

/* Whether the calls of this deferral are to be timed: a sample of t's
 * replay cost, for the comparison with eager. */
int cg_tmpl_wants_timing(const struct cg_tmpl *t) CG_HIDDEN;
/* Launches t for the deferred ops: 0, or a negative errno when nothing was
 * launched (the caller submits the ops eagerly). defer_ns: the host time
 * the deferred calls took, or 0 where they were not timed. */
int cg_tmpl_launch(struct cg_tmpl *t, const struct cg_op *ops, size_t n, uint64_t defer_ns) CG_HIDDEN;
/* A stream or event is destroyed: templates naming it go. */
void cg_tmpl_forget_handle(cudaStream_t s, cudaEvent_t e) CG_HIDDEN;

#endif
