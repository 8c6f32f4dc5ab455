/* Templates: a segment shape turned into a native CUDA graph by explicit
 * construction (edges from stream order, event waits and the legacy stream's
 * rules), its instantiated variants, per-node updates, and the launch. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "graph_i.h"

static uint64_t cg_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#define CG_MAX_VARIANTS 16
#define CG_RECENT 8
#define CG_NHIST 4    /* values remembered per node */
#define CG_VOLATILE 3 /* unseen values in a row: the node changes every launch */

enum cg_tstate { CG_T_READY, CG_T_BACKOFF, CG_T_DEAD };

struct cg_variant {
	cudaGraphExec_t exec;
	struct cg_op *vals;   /* values as last applied */
	uint64_t *vh;         /* per node, the hash of vals */
	uint64_t last_used;
};

struct cg_tmpl {
	struct cg_tmpl *next;
	uint64_t key;
	size_t n;
	struct cg_op *ops;      /* shapes, with the values of the recording */
	uint64_t *shape;
	uint8_t *pbytes;
	cudaGraph_t graph;
	cudaGraphNode_t *node;  /* per op; NULL for stream waits */
	struct cg_variant var[CG_MAX_VARIANTS];
	int nvar;
	uint64_t recent[CG_RECENT]; /* keys of recent launches' values */
	int nrecent;
	/* Per node: hashes of its last distinct values, how many launches in
	 * a row brought one unseen before, and this launch's hash. */
	uint64_t *hist;
	uint8_t *fresh;
	uint64_t *hnow;
	cudaStream_t *streams;  /* [0] is the launch stream */
	int nstreams;
	cudaEvent_t *fork;      /* one per stream past the first */
	cudaEvent_t join;
	cudaEvent_t *ext_wait;  /* waits on events recorded before the segment */
	int next_wait;
	/* Pageable host-to-device sources are copied into pinned staging at
	 * replay; done orders the next write after the last launch read it. */
	uint8_t *staging;
	size_t *stage_off;
	cudaEvent_t done;
	int launched;
	uint64_t epoch_after;   /* cg_epoch_now() right after the last launch */
	int last_used_launch;   /* launched at least once */
	enum cg_tstate state;
	uint64_t backoff_until;
	int rounds;
	uint32_t replays, diverged;
	double eager_ns, replay_ns;
	uint64_t last_used;
	/* A piece of a longer segment: next is launched after it, and only
	 * a head piece starts a segment. */
	struct cg_tmpl *next_piece;
	int follows;
};

static struct cg_tmpl *cg_tmpls;
static int cg_ntmpl;
static uint64_t cg_clock; /* use counter for LRU */

/* ---- seen shapes ------------------------------------------------------ */
#define CG_SEEN_SLOTS 1024
static struct {
	uint64_t key;
	size_t n;
	int count;
} cg_seen[CG_SEEN_SLOTS];

static uint64_t cg_key(const uint64_t *shape, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull ^ n;
	for (size_t i = 0; i < n; i++)
		h = (h ^ shape[i]) * 0x100000001b3ull + (h >> 29);
	return h;
}

/* Direct-mapped: a collision only delays a build, never makes one wrong
 * (templates compare every op before they are used). */
int cg_seen_note(const uint64_t *shape, size_t n, uint64_t eager_ns)
{
	(void)eager_ns;
	uint64_t key = cg_key(shape, n);
	size_t i = key & (CG_SEEN_SLOTS - 1);
	if (cg_seen[i].key != key || cg_seen[i].n != n) {
		cg_seen[i].key = key;
		cg_seen[i].n = n;
		cg_seen[i].count = 0;
	}
	return ++cg_seen[i].count;
}

/* ---- values ----------------------------------------------------------- */
static uint64_t cg_op_vhash(const struct cg_op *o)
{
	uint64_t h = 0xcbf29ce484222325ull ^ o->kind;
	switch (o->kind) {
	case CG_OP_KERNEL: {
		uint32_t b = 0;
		for (; b + 8 <= o->nbytes; b += 8) {
			uint64_t w;
			memcpy(&w, o->u.k.params + b, 8);
			h = (h ^ w) * 0x100000001b3ull;
		}
		for (; b < o->nbytes; b++)
			h = (h ^ o->u.k.params[b]) * 0x100000001b3ull;
		break;
	}
	case CG_OP_MEMCPY:
		h = (h ^ (uintptr_t)o->u.cp.dst) * 0x100000001b3ull;
		if (!o->u.cp.src_pageable)
			h = (h ^ (uintptr_t)o->u.cp.src) * 0x100000001b3ull;
		break;
	case CG_OP_MEMSET:
		h = (h ^ (uintptr_t)o->u.ms.dst) * 0x100000001b3ull;
		h = (h ^ (uint32_t)o->u.ms.value) * 0x100000001b3ull;
		break;
	case CG_OP_HOST:
		h = (h ^ (uintptr_t)o->u.host.data) * 0x100000001b3ull;
		break;
	default:
		break;
	}
	return h;
}

static size_t cg_params_total(const struct cg_op *ops, size_t n)
{
	size_t total = 0;
	for (size_t i = 0; i < n; i++)
		if (ops[i].kind == CG_OP_KERNEL)
			total += ops[i].nbytes;
	return total;
}

/* Copies ops into dst, kernel parameters into pbytes. */
static void cg_copy_ops(struct cg_op *dst, uint8_t *pbytes, const struct cg_op *src, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		dst[i] = src[i];
		if (src[i].kind == CG_OP_KERNEL) {
			memcpy(pbytes, src[i].u.k.params, src[i].nbytes);
			dst[i].u.k.params = pbytes;
			pbytes += src[i].nbytes;
		}
	}
}

/* A kernel node's parameters in both faces: the runtime's for kernels the
 * program launched through the runtime, the driver's for CUfunction and
 * CUkernel handles (a cudaGraph_t is a CUgraph). */
struct cg_knode {
	void *argv[CG_MAX_PARAMS];
	void *extra[5];
	size_t extra_size;
	struct cudaKernelNodeParams rt;
	CUDA_KERNEL_NODE_PARAMS drv;
};

static void cg_knode_fill(struct cg_knode *k, const struct cg_op *op)
{
	cg_kernel_args(op, k->argv, k->extra, &k->extra_size);
	void **params = op->u.k.packed ? NULL : k->argv, **extra = op->u.k.packed ? k->extra : NULL;
	k->rt = (struct cudaKernelNodeParams){
		.func = (void *)op->u.k.func, .gridDim = op->u.k.grid, .blockDim = op->u.k.block,
		.sharedMemBytes = (unsigned)op->u.k.shmem, .kernelParams = params, .extra = extra,
	};
	memset(&k->drv, 0, sizeof k->drv);
	if (op->u.k.ki->handle == CG_K_KERNEL)
		k->drv.kern = (CUkernel)op->u.k.func;
	else
		k->drv.func = (CUfunction)op->u.k.func;
	k->drv.gridDimX = op->u.k.grid.x;
	k->drv.gridDimY = op->u.k.grid.y;
	k->drv.gridDimZ = op->u.k.grid.z;
	k->drv.blockDimX = op->u.k.block.x;
	k->drv.blockDimY = op->u.k.block.y;
	k->drv.blockDimZ = op->u.k.block.z;
	k->drv.sharedMemBytes = (unsigned)op->u.k.shmem;
	k->drv.kernelParams = params;
	k->drv.extra = extra;
}

static cudaError_t cg_knode_add(cudaGraphNode_t *node, cudaGraph_t g, const cudaGraphNode_t *deps,
				size_t nd, const struct cg_op *op)
{
	struct cg_knode k;
	cg_knode_fill(&k, op);
	if (!op->u.k.drv)
		return CG_CALL(cudaGraphAddKernelNode, node, g, deps, nd, &k.rt);
	if (!cg_drv.cuGraphAddKernelNode_v2)
		return cudaErrorNotSupported;
	cg_busy++;
	CUresult rc = cg_drv.cuGraphAddKernelNode_v2((CUgraphNode *)node, (CUgraph)g,
						     (const CUgraphNode *)deps, nd, &k.drv);
	cg_busy--;
	return rc == CUDA_SUCCESS ? cudaSuccess : cudaErrorUnknown;
}

static cudaError_t cg_knode_set(cudaGraphExec_t e, cudaGraphNode_t node, const struct cg_op *op)
{
	struct cg_knode k;
	cg_knode_fill(&k, op);
	if (!op->u.k.drv)
		return CG_CALL(cudaGraphExecKernelNodeSetParams, e, node, &k.rt);
	if (!cg_drv.cuGraphExecKernelNodeSetParams_v2)
		return cudaErrorNotSupported;
	cg_busy++;
	CUresult rc = cg_drv.cuGraphExecKernelNodeSetParams_v2((CUgraphExec)e, (CUgraphNode)node, &k.drv);
	cg_busy--;
	return rc == CUDA_SUCCESS ? cudaSuccess : cudaErrorUnknown;
}

static void cg_memset_params(const struct cg_op *op, struct cudaMemsetParams *p)
{
	memset(p, 0, sizeof *p);
	p->dst = op->u.ms.dst;
	p->value = (unsigned char)op->u.ms.value;
	p->elementSize = 1;
	p->width = op->u.ms.count;
	p->height = 1;
}

/* A copy node reads a pageable source from cgraft's staging, filled at
 * every replay; any other source in place. */
static const void *cg_copy_source(const struct cg_tmpl *t, size_t i, const struct cg_op *op)
{
	return op->u.cp.src_pageable ? t->staging + t->stage_off[i] : op->u.cp.src;
}

/* Sets node i of variant v to the values of op. */
static int cg_update_node(struct cg_tmpl *t, struct cg_variant *v, size_t i, const struct cg_op *op)
{
	static int logged;
	if (cg_opt.log_level >= CG_LOG_DEBUG && logged < 200) {
		char what[512];
		cg_op_describe_change(what, sizeof what, &v->vals[i], op);
		cg_debug("node %zu of a %zu-op graph updated%s: %s", i, t->n,
			 ++logged == 200 ? " (last such message)" : "", what);
	}
	cudaError_t rc = cudaSuccess;
	switch (op->kind) {
	case CG_OP_KERNEL: {
		rc = cg_knode_set(v->exec, t->node[i], op);
		if (rc == cudaSuccess)
			memcpy((void *)v->vals[i].u.k.params, op->u.k.params, op->nbytes);
		break;
	}
	case CG_OP_MEMCPY: {
		const void *src = cg_copy_source(t, i, op);
		rc = CG_CALL(cudaGraphExecMemcpyNodeSetParams1D, v->exec, t->node[i], op->u.cp.dst, src,
			     op->u.cp.count, op->u.cp.kind);
		if (rc == cudaSuccess) {
			v->vals[i].u.cp.dst = op->u.cp.dst;
			v->vals[i].u.cp.src = op->u.cp.src;
		}
		break;
	}
	case CG_OP_MEMSET: {
		struct cudaMemsetParams p;
		cg_memset_params(op, &p);
		rc = CG_CALL(cudaGraphExecMemsetNodeSetParams, v->exec, t->node[i], &p);
		if (rc == cudaSuccess)
			v->vals[i].u.ms = op->u.ms;
		break;
	}
	case CG_OP_HOST: {
		struct cudaHostNodeParams p = { .fn = op->u.host.fn, .userData = op->u.host.data };
		rc = CG_CALL(cudaGraphExecHostNodeSetParams, v->exec, t->node[i], &p);
		if (rc == cudaSuccess)
			v->vals[i].u.host = op->u.host;
		break;
	}
	default:
		break;
	}
	if (rc != cudaSuccess) {
		CG_CALL(cudaGetLastError);
		return -EIO;
	}
	v->vh[i] = cg_op_vhash(op);
	cg_stat_add(node_updates, 1);
	return 0;
}

/* ---- building --------------------------------------------------------- */
struct cg_sstate {
	cudaStream_t s;
	int blocking, legacy;
	size_t *tail;
	size_t ntail, cap;
};

static int cg_tail_add(struct cg_sstate *ss, size_t idx)
{
	for (size_t i = 0; i < ss->ntail; i++)
		if (ss->tail[i] == idx)
			return 0;
	if (ss->ntail == ss->cap) {
		size_t cap = ss->cap ? ss->cap * 2 : 4;
		size_t *p = realloc(ss->tail, cap * sizeof *p);
		if (!p)
			return -ENOMEM;
		ss->tail = p;
		ss->cap = cap;
	}
	ss->tail[ss->ntail++] = idx;
	return 0;
}

static int cg_stream_blocking(cudaStream_t s)
{
	if (s == cudaStreamLegacy || s == cudaStreamPerThread)
		return 1;
	unsigned flags = 0;
	if (CG_CALL(cudaStreamGetFlags, s, &flags) != cudaSuccess) {
		CG_CALL(cudaGetLastError);
		return 1; /* assume the stricter ordering */
	}
	return !(flags & cudaStreamNonBlocking);
}

static void cg_tmpl_free(struct cg_tmpl *t)
{
	for (struct cg_tmpl *o = cg_tmpls; o; o = o->next)
		if (o->next_piece == t)
			o->next_piece = NULL;
	cg_engine_tmpl_gone(t);
	for (int i = 0; i < t->nvar; i++) {
		CG_CALL(cudaGraphExecDestroy, t->var[i].exec);
		free(t->var[i].vals);
	}
	free(t->hist);
	if (t->graph)
		CG_CALL(cudaGraphDestroy, t->graph);
	for (int i = 0; i + 1 < t->nstreams; i++)
		if (t->fork && t->fork[i])
			CG_CALL(cudaEventDestroy, t->fork[i]);
	if (t->join)
		CG_CALL(cudaEventDestroy, t->join);
	if (t->done)
		CG_CALL(cudaEventDestroy, t->done);
	if (t->staging)
		CG_CALL(cudaFreeHost, t->staging);
	free(t->ops);
	free(t->shape);
	free(t->pbytes);
	free(t->node);
	free(t->streams);
	free(t->fork);
	free(t->ext_wait);
	free(t->stage_off);
	free(t);
}

/* Adds one node per op with the edges eager execution implies. */
static int cg_add_nodes(struct cg_tmpl *t)
{
	size_t n = t->n;
	struct cg_sstate *ss = calloc(n, sizeof *ss);
	cudaGraphNode_t *deps = NULL;
	int ns = 0, rc = -ENOMEM, legacy = -1;
	size_t stage = 0;
	t->node = calloc(n, sizeof *t->node);
	t->streams = calloc(n, sizeof *t->streams);
	t->ext_wait = calloc(n, sizeof *t->ext_wait);
	t->stage_off = calloc(n, sizeof *t->stage_off);
	if (!ss || !t->node || !t->streams || !t->ext_wait || !t->stage_off)
		goto out;
	for (size_t i = 0; i < n; i++) {
		const struct cg_op *op = &t->ops[i];
		int si;
		for (si = 0; si < ns; si++)
			if (ss[si].s == op->stream)
				break;
		if (si == ns) {
			ss[ns].s = op->stream;
			ss[ns].legacy = op->stream == cudaStreamLegacy;
			ss[ns].blocking = cg_stream_blocking(op->stream);
			if (ss[ns].legacy)
				legacy = ns;
			t->streams[ns] = op->stream;
			ns++;
		}
		if (op->kind == CG_OP_MEMCPY && op->u.cp.src_pageable) {
			t->stage_off[i] = stage;
			stage += (op->u.cp.count + 63) & ~(size_t)63;
		}
	}
	t->nstreams = ns;
	if (stage && CG_CALL(cudaMallocHost, (void **)&t->staging, stage) != cudaSuccess) {
		t->staging = NULL;
		rc = -ENOMEM;
		goto out;
	}
	/* A node waits on its stream's frontier and, on the legacy stream, on
	 * every blocking stream's: all frontiers hold at most a node per stream
	 * and one per wait. */
	deps = malloc(sizeof *deps * (2 * n + 2));
	if (!deps)
		goto out;
	for (size_t i = 0; i < n; i++) {
		const struct cg_op *op = &t->ops[i];
		int si;
		for (si = 0; si < ns && ss[si].s != op->stream; si++)
			;
		struct cg_sstate *s = &ss[si];
		if (op->kind == CG_OP_WAIT) {
			size_t r = 0;
			for (size_t j = i; j-- > 0;)
				if (t->ops[j].kind == CG_OP_RECORD && t->ops[j].u.ev.event == op->u.ev.event) {
					r = j + 1;
					break;
				}
			if (r) {
				if (cg_tail_add(s, r - 1))
					goto out;
			} else {
				t->ext_wait[t->next_wait++] = op->u.ev.event;
			}
			continue;
		}
		/* Edges: the stream's frontier, and the legacy stream's barrier. */
		size_t nd = 0;
		for (size_t k = 0; k < s->ntail; k++)
			deps[nd++] = t->node[s->tail[k]];
		if (s->legacy) {
			for (int b = 0; b < ns; b++)
				if (b != si && ss[b].blocking)
					for (size_t k = 0; k < ss[b].ntail; k++)
						deps[nd++] = t->node[ss[b].tail[k]];
		} else if (s->blocking && legacy >= 0) {
			for (size_t k = 0; k < ss[legacy].ntail; k++)
				deps[nd++] = t->node[ss[legacy].tail[k]];
		}
		/* Drop repeated edges. */
		size_t w = 0;
		for (size_t a = 0; a < nd; a++) {
			size_t b;
			for (b = 0; b < w && deps[b] != deps[a]; b++)
				;
			if (b == w)
				deps[w++] = deps[a];
		}
		nd = w;
		cudaError_t e = cudaErrorNotSupported;
		switch (op->kind) {
		case CG_OP_KERNEL:
			e = cg_knode_add(&t->node[i], t->graph, deps, nd, op);
			break;
		case CG_OP_MEMCPY: {
			const void *src = cg_copy_source(t, i, op);
			e = CG_CALL(cudaGraphAddMemcpyNode1D, &t->node[i], t->graph, deps, nd, op->u.cp.dst,
				    src, op->u.cp.count, op->u.cp.kind);
			break;
		}
		case CG_OP_MEMSET: {
			struct cudaMemsetParams p;
			cg_memset_params(op, &p);
			e = CG_CALL(cudaGraphAddMemsetNode, &t->node[i], t->graph, deps, nd, &p);
			break;
		}
		case CG_OP_HOST: {
			struct cudaHostNodeParams p = { .fn = op->u.host.fn, .userData = op->u.host.data };
			e = CG_CALL(cudaGraphAddHostNode, &t->node[i], t->graph, deps, nd, &p);
			break;
		}
		case CG_OP_RECORD:
			e = CG_CALL(cudaGraphAddEventRecordNode, &t->node[i], t->graph, deps, nd, op->u.ev.event);
			break;
		default:
			break;
		}
		if (e != cudaSuccess) {
			CG_CALL(cudaGetLastError);
			cg_log_capped(CG_LOG_WARN, CG_FAULT_DRIVER,
				      "adding graph node %zu failed (error %d): the segment stays eager", i, (int)e);
			rc = -EIO;
			goto out;
		}
		s->ntail = 0;
		if (cg_tail_add(s, i))
			goto out;
	}
	rc = 0;
out:
	for (size_t i = 0; i < n && ss; i++)
		free(ss[i].tail);
	free(ss);
	free(deps);
	return rc;
}

/* Fork and join events for a segment over several streams, and the event
 * that orders staging writes after the last launch. */
static int cg_make_events(struct cg_tmpl *t)
{
	const unsigned fl = cudaEventDisableTiming;
	if (t->nstreams > 1) {
		t->fork = calloc((size_t)t->nstreams, sizeof *t->fork);
		if (!t->fork)
			return -ENOMEM;
		for (int i = 0; i + 1 < t->nstreams; i++)
			if (CG_CALL(cudaEventCreateWithFlags, &t->fork[i], fl) != cudaSuccess)
				return -EIO;
		if (CG_CALL(cudaEventCreateWithFlags, &t->join, fl) != cudaSuccess)
			return -EIO;
	}
	if (t->staging && CG_CALL(cudaEventCreateWithFlags, &t->done, fl) != cudaSuccess)
		return -EIO;
	return 0;
}

static int cg_instantiate(struct cg_tmpl *t, struct cg_variant *v, const struct cg_op *vals)
{
	uint64_t t0 = cg_now_ns();
	cudaError_t e = CG_CALL(cudaGraphInstantiateWithFlags, &v->exec, t->graph, 0);
	cg_stat_add(instantiate_ns, cg_now_ns() - t0);
	if (e != cudaSuccess) {
		CG_CALL(cudaGetLastError);
		cg_log_capped(CG_LOG_WARN, CG_FAULT_DRIVER,
			      "graph instantiation failed (error %d): the segment stays eager", (int)e);
		return -EIO;
	}
	size_t pb = cg_params_total(t->ops, t->n);
	/* One block: values, their hashes, then the parameter bytes. */
	v->vals = malloc(t->n * (sizeof *v->vals + sizeof *v->vh) + pb + 1);
	if (!v->vals) {
		CG_CALL(cudaGraphExecDestroy, v->exec);
		return -ENOMEM;
	}
	v->vh = (uint64_t *)(v->vals + t->n);
	cg_copy_ops(v->vals, (uint8_t *)(v->vh + t->n), t->ops, t->n);
	for (size_t i = 0; i < t->n; i++)
		v->vh[i] = cg_op_vhash(&t->ops[i]);
	v->last_used = ++cg_clock;
	/* A variant made for other values starts from the recording's and is
	 * brought to vals node by node. */
	if (vals != t->ops)
		for (size_t i = 0; i < t->n; i++)
			if (t->node[i] && !cg_op_same_values(&v->vals[i], &vals[i]) &&
			    cg_update_node(t, v, i, &vals[i])) {
				CG_CALL(cudaGraphExecDestroy, v->exec);
				free(v->vals);
				return -EIO;
			}
	return 0;
}

static void cg_evict_lru(void)
{
	struct cg_tmpl **pp, **victim = NULL;
	for (pp = &cg_tmpls; *pp; pp = &(*pp)->next)
		if (!victim || (*pp)->last_used < (*victim)->last_used)
			victim = pp;
	if (victim) {
		struct cg_tmpl *t = *victim;
		*victim = t->next;
		cg_tmpl_free(t);
		cg_ntmpl--;
	}
}

struct cg_tmpl *cg_tmpl_build(const uint64_t *shape, const struct cg_op *ops, size_t n, uint64_t eager_ns)
{
	struct cg_tmpl *t = calloc(1, sizeof *t);
	size_t pb = cg_params_total(ops, n);
	if (!t)
		return NULL;
	t->n = n;
	t->key = cg_key(shape, n);
	t->ops = malloc(n * sizeof *t->ops);
	t->shape = malloc(n * sizeof *t->shape);
	t->pbytes = malloc(pb + 1);
	if (!t->ops || !t->shape || !t->pbytes)
		goto fail;
	cg_copy_ops(t->ops, t->pbytes, ops, n);
	memcpy(t->shape, shape, n * sizeof *shape);
	/* One block: value history, this launch's hashes, fresh counts. */
	t->hist = calloc(n, (CG_NHIST + 1) * sizeof *t->hist + 1);
	if (!t->hist)
		goto fail;
	t->hnow = t->hist + n * CG_NHIST;
	t->fresh = (uint8_t *)(t->hnow + n);
	for (size_t i = 0; i < n; i++)
		t->hist[i * CG_NHIST] = cg_op_vhash(&ops[i]);
	if (CG_CALL(cudaGraphCreate, &t->graph, 0) != cudaSuccess)
		goto fail;
	if (cg_add_nodes(t) || cg_make_events(t))
		goto fail;
	if (cg_instantiate(t, &t->var[0], t->ops))
		goto fail;
	t->nvar = 1;
	t->eager_ns = (double)eager_ns;
	t->last_used = ++cg_clock;
	if (cg_ntmpl >= cg_opt.max_graphs)
		cg_evict_lru();
	t->next = cg_tmpls;
	cg_tmpls = t;
	cg_ntmpl++;
	cg_stat_add(graphs_built, 1);
	cg_debug("built a graph of %zu ops over %d streams", n, t->nstreams);
	return t;
fail:
	cg_count_fallback(CG_WHY_BUILD_FAILED);
	cg_tmpl_free(t);
	return NULL;
}

/* The size of each piece of a chain: the first small, so the device starts
 * early, then each three times the last, which it runs while the host
 * records the next. */
static size_t cg_piece_len(size_t done, size_t left, size_t first)
{
	size_t len = first;
	for (size_t d = 0; d < done; d += len, len *= 3)
		;
	/* A rest shorter than half a piece joins this piece. */
	return left < len + len / 2 ? left : len;
}

static int cg_first_op_is(const struct cg_tmpl *t, uint64_t shape, const struct cg_op *op)
{
	return t->shape[0] == shape && cg_op_same_shape(&t->ops[0], op);
}

/* Whether a template that starts a segment starts with op. */
static int cg_starts_with(const struct cg_tmpl *t, uint64_t shape, const struct cg_op *op)
{
	return !t->follows && cg_first_op_is(t, shape, op);
}

/* Frees the chains that start with op, and their pieces. */
static void cg_drop_chains(uint64_t shape, const struct cg_op *op)
{
	struct cg_tmpl **pp = &cg_tmpls;
	while (*pp) {
		struct cg_tmpl *t = *pp;
		if (!t->next_piece || !cg_starts_with(t, shape, op)) {
			pp = &t->next;
			continue;
		}
		/* Unlink the chain piece by piece: freeing clears links to it. */
		while (t) {
			struct cg_tmpl *next = t->next_piece, **q = &cg_tmpls;
			while (*q && *q != t)
				q = &(*q)->next;
			if (*q) {
				*q = t->next;
				cg_tmpl_free(t);
				cg_ntmpl--;
			}
			t = next;
		}
		pp = &cg_tmpls;
	}
}

int cg_tmpl_chain_ok(const uint64_t *shape, const struct cg_op *ops, size_t n, size_t first)
{
	/* A template that starts alike would compete with the first piece
	 * (the longer candidate wins), and the chain could never start. */
	for (struct cg_tmpl *t = cg_tmpls; t; t = t->next)
		if (cg_starts_with(t, shape[0], &ops[0]))
			return 0;
	size_t pieces = 0;
	for (size_t done = 0; done < n; pieces++)
		done += cg_piece_len(done, n - done, first);
	/* Building a piece must not evict an earlier one. */
	return pieces < (size_t)cg_opt.max_graphs;
}

void cg_tmpl_build_whole(const uint64_t *shape, const struct cg_op *ops, size_t n, uint64_t eager_ns)
{
	cg_drop_chains(shape[0], &ops[0]);
	cg_tmpl_build(shape, ops, n, eager_ns);
}

size_t cg_tmpl_build_chain(const uint64_t *shape, const struct cg_op *ops, size_t n, uint64_t eager_ns,
			   size_t first)
{
	struct cg_tmpl *prev = NULL;
	size_t done = 0, pieces = 0;
	while (done < n) {
		size_t len = cg_piece_len(done, n - done, first);
		struct cg_tmpl *t = cg_tmpl_build(shape + done, ops + done, len, eager_ns * len / n);
		if (!t)
			break; /* the rest runs eagerly when it comes */
		t->follows = prev != NULL;
		if (prev)
			prev->next_piece = t;
		prev = t;
		done += len;
		pieces++;
	}
	if (pieces)
		cg_debug("built a chain of %zu graphs for a %zu-op segment", pieces, n);
	return pieces;
}

struct cg_tmpl *cg_tmpl_next_piece(const struct cg_tmpl *t)
{
	return t->next_piece;
}

/* ---- lookup ----------------------------------------------------------- */
static int cg_tmpl_usable(struct cg_tmpl *t)
{
	if (t->state == CG_T_DEAD)
		return 0;
	if (t->state == CG_T_BACKOFF) {
		if (cg_segno() < t->backoff_until)
			return 0;
		t->state = CG_T_READY;
	}
	return 1;
}

struct cg_tmpl *cg_tmpl_lookup(const uint64_t *shape, const struct cg_op *ops, size_t n)
{
	uint64_t key = cg_key(shape, n);
	for (struct cg_tmpl *t = cg_tmpls; t; t = t->next) {
		if (t->key != key || t->n != n)
			continue;
		size_t i;
		for (i = 0; i < n && cg_op_same_shape(&t->ops[i], &ops[i]); i++)
			;
		if (i == n)
			return t;
	}
	return NULL;
}

int cg_tmpl_any(void)
{
	return cg_tmpls != NULL;
}

int cg_tmpl_candidates(uint64_t shape, const struct cg_op *op, struct cg_tmpl **out, int max)
{
	int n = 0;
	for (struct cg_tmpl *t = cg_tmpls; t && n < max; t = t->next)
		if (cg_starts_with(t, shape, op) && cg_tmpl_usable(t))
			out[n++] = t;
	return n;
}

int cg_tmpl_can_follow(struct cg_tmpl *t, uint64_t shape, const struct cg_op *op)
{
	return cg_first_op_is(t, shape, op) && cg_tmpl_usable(t);
}

size_t cg_tmpl_nops(const struct cg_tmpl *t)
{
	return t->n;
}

int cg_tmpl_op_matches(const struct cg_tmpl *t, size_t pos, uint64_t shape, const struct cg_op *op)
{
	return t->shape[pos] == shape && cg_op_same_shape(&t->ops[pos], op);
}

static void cg_backoff(struct cg_tmpl *t, enum cg_reason why)
{
	cg_stat_add(backoffs, 1);
	cg_count_fallback(why);
	t->rounds++;
	t->diverged = 0;
	t->replays = 0;
	if (t->rounds > 3) {
		t->state = CG_T_DEAD;
		cg_log(CG_LOG_INFO, CG_FAULT_NONE, "a %zu-op segment stays eager for good (%s)", t->n,
		       cg_reason_names[why]);
		return;
	}
	t->state = CG_T_BACKOFF;
	t->backoff_until = cg_segno() + (16ull << t->rounds);
}

void cg_tmpl_note_divergence(struct cg_tmpl *t)
{
	t->diverged++;
	if (t->diverged >= 4 && t->diverged * 2 > t->replays)
		cg_backoff(t, CG_WHY_BACKOFF_DIVERGE);
}

void cg_tmpl_note_eager(struct cg_tmpl *t, uint64_t ns)
{
	if (!ns)
		return;
	t->eager_ns = t->eager_ns ? 0.8 * t->eager_ns + 0.2 * (double)ns : (double)ns;
}

static const char *cg_kind_name(int kind)
{
	static const char *const names[] = { "kernel", "memcpy", "memset", "host function",
					     "event record", "stream wait" };
	return names[kind];
}

static void cg_describe(char *buf, size_t size, const struct cg_op *op)
{
	switch (op->kind) {
	case CG_OP_KERNEL:
		snprintf(buf, size, "kernel %p grid (%u,%u,%u) block (%u,%u,%u) shmem %zu on stream %p",
			 op->u.k.func, op->u.k.grid.x, op->u.k.grid.y, op->u.k.grid.z, op->u.k.block.x,
			 op->u.k.block.y, op->u.k.block.z, op->u.k.shmem, (void *)op->stream);
		break;
	case CG_OP_MEMCPY:
		snprintf(buf, size, "memcpy kind %d of %zu bytes on stream %p", (int)op->u.cp.kind,
			 op->u.cp.count, (void *)op->stream);
		break;
	default:
		snprintf(buf, size, "%s on stream %p", cg_kind_name(op->kind), (void *)op->stream);
		break;
	}
}

const char *cg_tmpl_describe_mismatch(struct cg_tmpl *const *cand, int ncand, size_t pos,
				      const struct cg_op *op)
{
	static char buf[512];
	char want[200] = "nothing (the graph ended)", got[200];
	for (int i = 0; i < ncand; i++)
		if (cand[i]->n > pos) {
			cg_describe(want, sizeof want, &cand[i]->ops[pos]);
			break;
		}
	cg_describe(got, sizeof got, op);
	snprintf(buf, sizeof buf, "op #%zu: expected %s, got %s", pos, want, got);
	return buf;
}

void cg_tmpl_forget_handle(cudaStream_t s, cudaEvent_t e)
{
	struct cg_tmpl **pp = &cg_tmpls;
	while (*pp) {
		struct cg_tmpl *t = *pp;
		int hit = 0;
		for (size_t i = 0; i < t->n && !hit; i++)
			hit = (s && t->ops[i].stream == s) ||
			      (e && (t->ops[i].kind == CG_OP_RECORD || t->ops[i].kind == CG_OP_WAIT) &&
			       t->ops[i].u.ev.event == e);
		if (hit) {
			*pp = t->next;
			cg_tmpl_free(t);
			cg_ntmpl--;
		} else {
			pp = &t->next;
		}
	}
}

/* ---- launch ----------------------------------------------------------- */
static int cg_all_same(const struct cg_variant *v, const struct cg_op *ops, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!cg_op_same_values(&v->vals[i], &ops[i]))
			return 0;
	return 1;
}

static int cg_node_volatile(const struct cg_tmpl *t, size_t i)
{
	return t->fresh[i] >= CG_VOLATILE;
}

/* Notes this launch's values node by node. A node that brings a value
 * unseen in its last CG_NHIST several launches in a row changes at every
 * launch (a step counter, a per-step output slot): it is updated whatever
 * the variant. Returns the key of the other nodes' values, which pick the
 * variant: allocators that reuse a few buffers make those values recur. */
static uint64_t cg_note_values(struct cg_tmpl *t, const struct cg_op *ops)
{
	uint64_t key = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < t->n; i++) {
		uint64_t h = t->hnow[i] = cg_op_vhash(&ops[i]);
		uint64_t *hist = t->hist + i * CG_NHIST;
		int seen = 0;
		for (int k = 0; k < CG_NHIST; k++)
			seen |= hist[k] == h;
		if (seen) {
			t->fresh[i] = 0;
		} else {
			memmove(hist + 1, hist, (CG_NHIST - 1) * sizeof *hist);
			hist[0] = h;
			t->fresh[i] += t->fresh[i] < 255;
		}
		if (!cg_node_volatile(t, i))
			key = (key ^ h) * 0x100000001b3ull + (key >> 29);
	}
	return key;
}

/* Nodes of v whose values differ from this launch's, by hash: all of them,
 * or only those that do not change at every launch. */
static size_t cg_distance(const struct cg_tmpl *t, const struct cg_variant *v, int stable_only)
{
	size_t d = 0;
	for (size_t i = 0; i < t->n; i++)
		d += v->vh[i] != t->hnow[i] && !(stable_only && cg_node_volatile(t, i));
	return d;
}

/* The variant launched last: it holds the last launch's values. */
static struct cg_variant *cg_last_variant(struct cg_tmpl *t)
{
	struct cg_variant *last = &t->var[0];
	for (int i = 1; i < t->nvar; i++)
		if (t->var[i].last_used > last->last_used)
			last = &t->var[i];
	return last;
}

size_t cg_tmpl_distance(struct cg_tmpl *t, const struct cg_op *ops, size_t n)
{
	const struct cg_variant *last = cg_last_variant(t);
	size_t d = 0;
	for (size_t i = 0; i < n && i < t->n; i++)
		d += !cg_op_same_values(&last->vals[i], &ops[i]);
	return d;
}

/* Picks the variant to launch for these values: the last one when nothing
 * changed, else the closest; a new one when the values of the nodes that do
 * not change at every launch recur; the rest is updated node by node. */
static struct cg_variant *cg_pick_variant(struct cg_tmpl *t, const struct cg_op *ops, size_t n)
{
	struct cg_variant *last = cg_last_variant(t);
	if (cg_all_same(last, ops, n))
		return last;
	uint64_t key = cg_note_values(t, ops);
	struct cg_variant *best = NULL;
	size_t best_d = 0;
	for (int i = 0; i < t->nvar; i++) {
		struct cg_variant *v = &t->var[i];
		size_t d = cg_distance(t, v, 0);
		if (!best || d < best_d || (d == best_d && v->last_used > best->last_used)) {
			best = v;
			best_d = d;
		}
	}
	int recurring = 0;
	for (int i = 0; i < t->nrecent && i < CG_RECENT; i++)
		recurring |= t->recent[i] == key;
	if (!recurring)
		t->recent[t->nrecent++ % CG_RECENT] = key;
	long maxv = cg_opt.max_variants < CG_MAX_VARIANTS ? cg_opt.max_variants : CG_MAX_VARIANTS;
	if (recurring && t->nvar < maxv && cg_distance(t, best, 1)) {
		struct cg_variant *v = &t->var[t->nvar];
		if (cg_instantiate(t, v, ops) == 0) {
			t->nvar++;
			cg_stat_add(variants, 1);
			return v;
		}
	}
	for (size_t i = 0; i < n; i++)
		if (t->node[i] && !cg_op_same_values(&best->vals[i], &ops[i]) &&
		    cg_update_node(t, best, i, &ops[i]))
			return NULL;
	return best;
}

int cg_tmpl_wants_timing(const struct cg_tmpl *t)
{
	return t->replays < 16 || (t->replays & 15) == 0;
}

int cg_tmpl_launch(struct cg_tmpl *t, const struct cg_op *ops, size_t n, uint64_t defer_ns)
{
	uint64_t t0 = defer_ns ? cg_now_ns() : 0;
	struct cg_variant *v = cg_pick_variant(t, ops, n);
	if (!v) {
		cg_backoff(t, CG_WHY_LAUNCH_FAILED);
		return -EIO;
	}
	v->last_used = t->last_used = ++cg_clock;
	if (t->staging) {
		/* The last launch may still be reading the staging copy. */
		if (t->launched && CG_CALL(cudaEventSynchronize, t->done) != cudaSuccess)
			return -EIO;
		for (size_t i = 0; i < n; i++)
			if (ops[i].kind == CG_OP_MEMCPY && ops[i].u.cp.src_pageable)
				memcpy(t->staging + t->stage_off[i], ops[i].u.cp.src, ops[i].u.cp.count);
	}
	cudaStream_t l = t->streams[0];
	/* The side streams' last work is the join of this graph's last launch
	 * when nothing was enqueued since: the launch stream's order covers it. */
	int forked = t->last_used_launch && t->epoch_after == cg_epoch_now();
	for (int i = 1; i < t->nstreams && !forked; i++) {
		if (CG_CALL(cudaEventRecord, t->fork[i - 1], t->streams[i]) != cudaSuccess ||
		    CG_CALL(cudaStreamWaitEvent, l, t->fork[i - 1], 0) != cudaSuccess)
			goto fail;
	}
	for (int i = 0; i < t->next_wait; i++)
		if (CG_CALL(cudaStreamWaitEvent, l, t->ext_wait[i], 0) != cudaSuccess)
			goto fail;
	if (CG_CALL(cudaGraphLaunch, v->exec, l) != cudaSuccess)
		goto fail_launch;
	if (t->nstreams > 1) {
		CG_CALL(cudaEventRecord, t->join, l);
		for (int i = 1; i < t->nstreams; i++)
			CG_CALL(cudaStreamWaitEvent, t->streams[i], t->join, 0);
	}
	if (t->staging) {
		CG_CALL(cudaEventRecord, t->done, l);
		t->launched = 1;
	}
	cg_epoch_bump();
	t->epoch_after = cg_epoch_now();
	t->last_used_launch = 1;
	cg_stat_add(graph_launches, 1);
	t->replays++;
	if (defer_ns) {
		double ns = (double)(defer_ns + cg_now_ns() - t0);
		t->replay_ns = t->replay_ns ? 0.8 * t->replay_ns + 0.2 * ns : ns;
	}
	/* Replay that costs more host time than eager is not worth its risks.
	 * Both count the time spent in CUDA calls (or cgraft's in their place)
	 * only, not the program's own between them: in a PyTorch step that is
	 * most of the time, and it varies more than launches cost. */
	if (cg_opt.backoff_slow && t->replays >= 8 && t->eager_ns > 0 && t->replay_ns > t->eager_ns)
		cg_backoff(t, CG_WHY_BACKOFF_SLOW);
	return 0;
fail:
	/* Nothing of the graph ran: the fork waits only add order. */
	CG_CALL(cudaGetLastError);
	cg_backoff(t, CG_WHY_LAUNCH_FAILED);
	return -EIO;
fail_launch:
	CG_CALL(cudaGetLastError);
	cg_log_capped(CG_LOG_WARN, CG_FAULT_DRIVER, "graph launch failed: the segment runs eagerly");
	cg_backoff(t, CG_WHY_LAUNCH_FAILED);
	return -EIO;
}
