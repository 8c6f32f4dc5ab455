/* Edge inference: a node depends on its stream's frontier (the last node, or
 * the nodes a stream wait joined in), on the legacy stream's last node where
 * the stream blocks, and, on the legacy stream, on every blocking stream's
 * frontier. A wait on an event recorded earlier in the segment joins that
 * record node into the stream's frontier; one recorded before it is a wait
 * of the whole launch. No CUDA here. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dag.h"

struct cg_frontier {
	uint32_t *idx;
	size_t n, cap;
	int blocking, legacy, known;
};

static int cg_front_add(struct cg_frontier *f, uint32_t i)
{
	for (size_t k = 0; k < f->n; k++)
		if (f->idx[k] == i)
			return 0;
	if (f->n == f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 4;
		uint32_t *p = realloc(f->idx, cap * sizeof *p);
		if (!p)
			return -ENOMEM;
		f->idx = p;
		f->cap = cap;
	}
	f->idx[f->n++] = i;
	return 0;
}

static int cg_stream_index(struct cg_dag *d, CUstream s)
{
	for (int i = 0; i < d->nstreams; i++)
		if (d->streams[i] == s)
			return i;
	d->streams[d->nstreams] = s;
	return d->nstreams++;
}

/* Appends the edges of op i to d->deps: the frontiers it orders after, and
 * the NCCL call before it (after, where there is one): NCCL's calls must
 * run in the program's order on every rank. */
static int cg_add_edges(struct cg_dag *d, struct cg_frontier *fr, int si, int legacy, size_t *nd, uint32_t i,
			uint32_t after)
{
	struct cg_frontier *s = &fr[si];
	size_t start = *nd;
	if (after != CG_DAG_NONE)
		d->deps[(*nd)++] = after;
#define ADD_FRONT(f)                                                            \
	for (size_t k = 0; k < (f)->n; k++) {                                   \
		size_t j;                                                       \
		for (j = start; j < *nd && d->deps[j] != (f)->idx[k]; j++)      \
			;                                                       \
		if (j == *nd)                                                   \
			d->deps[(*nd)++] = (f)->idx[k];                         \
	}
	ADD_FRONT(s);
	if (s->legacy) {
		for (int b = 0; b < d->nstreams; b++)
			if (b != si && fr[b].blocking)
				ADD_FRONT(&fr[b]);
	} else if (s->blocking && legacy >= 0) {
		ADD_FRONT(&fr[legacy]);
	}
#undef ADD_FRONT
	d->dep_start[i + 1] = (uint32_t)*nd;
	s->n = 0;
	return cg_front_add(s, i);
}

int cg_dag_build(struct cg_dag *d, const struct cg_op *ops, size_t n, cg_blocking_fn blocking, void *cookie)
{
	memset(d, 0, sizeof *d);
	d->n = n;
	struct cg_frontier *fr = calloc(n + 1, sizeof *fr);
	d->dep_start = calloc(n + 1, sizeof *d->dep_start);
	d->is_node = calloc(n + 1, 1);
	d->streams = calloc(n + 1, sizeof *d->streams);
	d->ext_wait = calloc(n + 1, sizeof *d->ext_wait);
	size_t cap = 4 * n + 16, nd = 0;
	d->deps = malloc(cap * sizeof *d->deps);
	int rc = -ENOMEM, legacy = -1;
	uint32_t nccl = CG_DAG_NONE; /* the last NCCL call */
	if (!fr || !d->dep_start || !d->is_node || !d->streams || !d->ext_wait || !d->deps)
		goto out;
	for (size_t i = 0; i < n; i++) {
		int si = cg_stream_index(d, ops[i].stream);
		if (!fr[si].known) {
			fr[si].known = 1;
			fr[si].legacy = ops[i].stream == CU_STREAM_LEGACY;
			fr[si].blocking = fr[si].legacy || blocking(cookie, ops[i].stream);
			if (fr[si].legacy)
				legacy = si;
		}
		const struct cg_op *op = &ops[i];
		if (op->kind == CG_OP_WAIT) {
			d->dep_start[i + 1] = (uint32_t)nd;
			size_t r = i;
			while (r-- > 0)
				if (ops[r].kind == CG_OP_RECORD && ops[r].u.ev.event == op->u.ev.event)
					break;
			if (r != (size_t)-1) {
				if (cg_front_add(&fr[si], (uint32_t)r))
					goto out;
			} else {
				d->ext_wait[d->next_wait++] = op->u.ev.event;
			}
			continue;
		}
		/* Each frontier holds at most a node per stream and one per wait. */
		if (nd + 2 * (size_t)d->nstreams + n + 1 >= cap) {
			cap = 2 * cap + 2 * (size_t)d->nstreams + n + 1;
			uint32_t *p = realloc(d->deps, cap * sizeof *p);
			if (!p)
				goto out;
			d->deps = p;
		}
		d->is_node[i] = 1;
		if (cg_add_edges(d, fr, si, legacy, &nd, (uint32_t)i, op->kind == CG_OP_NCCL ? nccl : CG_DAG_NONE))
			goto out;
		if (op->kind == CG_OP_NCCL)
			nccl = (uint32_t)i;
	}
	rc = 0;
out:
	for (size_t i = 0; fr && i <= n; i++)
		free(fr[i].idx);
	free(fr);
	if (rc)
		cg_dag_free(d);
	return rc;
}

void cg_dag_free(struct cg_dag *d)
{
	free(d->dep_start);
	free(d->deps);
	free(d->is_node);
	free(d->streams);
	free(d->ext_wait);
	memset(d, 0, sizeof *d);
}
