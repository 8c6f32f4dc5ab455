/* Edges of a segment's graph, a pure function of its ops: stream order,
 * event waits inside the segment, and the legacy default stream's barrier
 * against blocking streams. No CUDA here: a stream's flags come from the
 * caller. */
#ifndef CG_DAG_H
#define CG_DAG_H

#include "op.h"

#define CG_DAG_NONE ((uint32_t)-1)

struct cg_dag {
	size_t n;
	uint32_t *dep_start;   /* n + 1: deps of op i are deps[dep_start[i] .. dep_start[i+1]) */
	uint32_t *deps;        /* indices of earlier ops that are nodes */
	uint8_t *is_node;      /* stream waits are not nodes: they become edges */
	CUstream *streams;     /* distinct streams in order of first use */
	int nstreams;
	CUevent *ext_wait;     /* events waited on but recorded before the segment */
	int next_wait;
};

/* Whether a stream orders against the legacy default stream. */
typedef int (*cg_blocking_fn)(void *cookie, CUstream s);

/* Fills d for ops; 0 or -ENOMEM. */
int cg_dag_build(struct cg_dag *d, const struct cg_op *ops, size_t n, cg_blocking_fn blocking, void *cookie) CG_HIDDEN;
void cg_dag_free(struct cg_dag *d) CG_HIDDEN;

#endif
