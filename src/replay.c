/* Replay: building a template's graph through the driver, its variants and
 * node updates, staging, fork and join events, and the launch. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "dag.h"
#include "devupd.h"
#include "engine.h"
#include "log.h"
#include "options.h"
#include "replay.h"

#define CG_MAX_VARIANTS 16
#define CG_RECENT 8
#define CG_NHIST 4    /* values remembered per node */
#define CG_VOLATILE 3 /* unseen values in a row: the node changes at every launch */
/* A graph whose launches update CG_UPD_WORTH kernel nodes or more from the
 * host, on average over CG_UPD_WINDOW launches, is built again with an
 * updater (devupd.h); at once where its first CG_UPD_EARLY launches
 * updated that many (HF's 227-op step changes about 100 nodes a launch: its
 * first launch decides, not its sixteenth; the launch that builds it again
 * is not weighed against eager, tmpl.h). One host update a launch then, and
 * the updater's own kernel on the GPU, which cost more than a few node
 * updates (on the H200, the read-back solver's one node a launch: 1.26 of
 * the hand-written graph's time with an updater from the start, 1.09
 * without). */
#ifndef CG_UPD_WORTH
#define CG_UPD_WORTH 4
#endif
#define CG_UPD_WINDOW 16
#define CG_UPD_EARLY 2

struct cg_variant {
	CUgraphExec exec;
	struct cg_op *vals;   /* values as last applied */
	uint64_t *vh;         /* per node, the hash of vals (not kept with updaters) */
	int stage;            /* staging buffer its copy nodes read */
	int stage_mixed;      /* a switch refused part way: some read the other */
	size_t dev_bytes;     /* device memory its instantiation took, as far as seen */
	int next;             /* the variant launched after this one, last time */
	int uploaded;
};

struct cg_graph {
	CUgraph graph;
	CUgraphNode *node;      /* per op; NULL for stream waits */
	struct cg_dag dag;
	struct cg_variant var[CG_MAX_VARIANTS];
	int nvar, last, predict;
	uint64_t recent[CG_RECENT]; /* keys of recent launches' stable values */
	int nrecent;
	/* Per node: hashes of its last distinct values, how many launches in a
	 * row brought one unseen before, and this launch's hash. */
	uint64_t *hist, *hnow;
	uint8_t *fresh;
	CUevent *fork;          /* one per stream past the first */
	/* After a launch each stream past the first waits on join: that wait,
	 * an action of its stream, is what the legacy stream's rules order
	 * later work after (kernels/class_legacy.cu checks CUDA keeps it).
	 * Where every such stream is an explicit one, the waits are owed
	 * (lazy_join, cg_graph_settle). */
	CUevent join, waitev;
	int lazy_join;
	/* With the first stream explicit too, join is recorded only where the
	 * waits are made: nothing reached that stream after the launch then
	 * (every call that may reach it settles first), so its work then is
	 * the launch's, or a later launch's of the same graph, owing the same. */
	int join_late;
	CUcontext ctx;
	/* Held pageable sources are copied into pinned staging at launch, two
	 * buffers in turn; done[b] orders a rewrite after the launch that read b. */
	uint8_t *staging[2];
	size_t stage_size, *stage_off;
	CUevent done[2];
	int used[2], cur;
	/* Records no node comes after, made on their streams after a launch
	 * (cg_tail_records): the ops' indices. */
	uint32_t *tails;
	int ntails;
	/* A read-back into pageable memory lands here (CG_F_LANDS_PINNED). */
	uint8_t *landing;
	size_t landing_size;
	uint64_t epoch_after;   /* epoch right after the last launch */
	const void *thread;     /* that launch's thread */
	int launched;
	/* Device updates (devupd.h): nupd updaters, one after another before
	 * every other node; per op, its kernel node's device handle (0: updated
	 * from the host); per updater, the blob being made (made at its first
	 * use); the blob an updater is given, written out for that call. Such a
	 * graph is instantiated once: it has no variants. */
	CUgraphNode upd[CG_UPD_CHAIN];
	int nupd;
	CUcontext upd_ctx;
	uint64_t *devnode;
	/* Per op, the changes a launch sent it (cg_pick_updated). */
	uint32_t (*sent)[2];
	struct cg_upd *ub[CG_UPD_CHAIN];
	uint8_t *blob;
	/* Without one: kernel nodes updated from the host over the last
	 * launches, counted in windows of CG_UPD_WINDOW launches; upgrade: the
	 * next launch builds the graph again with an updater. */
	unsigned kupd, wlaunch, kupd_last;
	int upgrade;
	/* With them: the next launch builds the graph again at once, with twice
	 * as many where a launch's changes exceeded them (grow) and
	 * CG_UPD_CHAIN allows, else without (no_upgrade: for good). */
	int downgrade, grow, no_upgrade;
	unsigned upd_on; /* which updaters are enabled in the exec, a bit each */
	int upd_pending; /* it was given changes this launch has yet to carry */
	int upd_lost;    /* a launch failed with such changes: the nodes' values are not known (till built again) */
	/* The values its nodes were built with where they are not the
	 * template's (a graph built again: its launch's), which a variant's
	 * exec starts from (cg_vals_alloc's block); NULL: the template's. */
	struct cg_op *built;
	/* Per op, 1 where its node was given another kernel (a function, block
	 * or shared memory of its own): no device updates for it, which set
	 * parameters by the old one's layout and a host update would race. */
	uint8_t *kvar;
	/* Per op, 1 where a linear copy between device memory runs as
	 * cgraft's copy kernel (devupd.h), a node its updater changes: in a
	 * graph with updaters, where the copy's ranges lie apart (one that
	 * brings overlapping ranges is marked in kvar, and stays a copy node). */
	uint8_t *copyk;
	/* The ops whose nodes hold the memory they name, copy and memset nodes
	 * (cg_graph_names_memory looks at these only). */
	uint32_t *holds;
	size_t nholds;
};

/* A launch's values: the held op where it differs from the predicted
 * variant, else the predicted variant's own (the engine may leave such held
 * ops unwritten). */
struct cg_vals {
	const struct cg_op *ops;
	const uint8_t *dirty;
	const struct cg_variant *pred;
};

static inline const struct cg_op *cg_val(const struct cg_vals *v, size_t i)
{
	return v->dirty[i] ? &v->ops[i] : &v->pred->vals[i];
}

/* ---- the join ------------------------------------------------------------- */
/* The graph whose launch's join its streams past the first owe a wait on:
 * the last launched over several explicit streams, while nothing else
 * came. Its next launch, with nothing in between, comes after all of it on
 * its first stream anyway: the waits are made only where other work may
 * reach such a stream, or the host may look at one (cg_graph_settle). */
static struct cg_graph *cg_owed;

static void cg_join_streams(struct cg_graph *g)
{
	for (int i = 1; i < g->dag.nstreams; i++)
		CG_BK(stream_wait, g->dag.streams[i], g->join, 0);
}

void cg_graph_settle(void)
{
	struct cg_graph *g = cg_owed;
	if (cg_likely(!g))
		return;
	cg_owed = NULL;
	/* The graph done already: nothing to order after. */
	CUstream ls = g->dag.streams[0];
	if (g->join_late ? CG_BK(stream_query, ls) == CUDA_SUCCESS : CG_BK(event_query, g->join) == CUDA_SUCCESS)
		return;
	CUcontext cur = NULL, popped;
	int pushed = (CG_BK(ctx_get_current, &cur) != CUDA_SUCCESS || cur != g->ctx) &&
		     CG_BK(ctx_push, g->ctx) == CUDA_SUCCESS;
	if (g->join_late)
		CG_BK(event_record, g->join, ls);
	cg_join_streams(g);
	cg_stat_add(joins_made, 1);
	if (pushed)
		CG_BK(ctx_pop, &popped);
}

void cg_graph_settle_for(CUstream s)
{
	const struct cg_graph *g = cg_owed;
	for (int i = 1; g && i < g->dag.nstreams; i++)
		if (g->dag.streams[i] == s) {
			cg_graph_settle();
			return;
		}
}

void cg_graph_forget_owed(void)
{
	cg_owed = NULL;
}

/* ---- building ------------------------------------------------------------- */
static int cg_stream_blocking(void *cookie, CUstream s)
{
	(void)cookie;
	if (cg_stream_implicit(s))
		return 1;
	unsigned flags = 0;
	if (CG_BK(stream_flags, s, &flags) != CUDA_SUCCESS)
		return 1; /* the stricter ordering */
	return !(flags & CU_STREAM_NON_BLOCKING);
}

/* A kernel node's parameters: a CUkernel with its context, or a CUfunction. */
struct cg_knode {
	void *argv[CG_MAX_PARAMS];
	void *extra[5];
	size_t extra_size;
	CUDA_KERNEL_NODE_PARAMS p;
};

static void cg_knode_fill(struct cg_knode *k, const struct cg_op *op)
{
	cg_kernel_args(op, k->argv, k->extra, &k->extra_size);
	memset(&k->p, 0, sizeof k->p);
	if (op->u.k.ki->hkind == CG_KH_KERNEL) {
		k->p.kern = (CUkernel)op->u.k.ki->handle;
		k->p.ctx = op->ctx;
	} else {
		k->p.func = (CUfunction)op->u.k.ki->handle;
	}
	k->p.gridDimX = op->u.k.grid[0];
	k->p.gridDimY = op->u.k.grid[1];
	k->p.gridDimZ = op->u.k.grid[2];
	k->p.blockDimX = op->u.k.block[0];
	k->p.blockDimY = op->u.k.block[1];
	k->p.blockDimZ = op->u.k.block[2];
	k->p.sharedMemBytes = op->u.k.shmem;
	k->p.kernelParams = op->flags & CG_F_PACKED ? NULL : k->argv;
	k->p.extra = op->flags & CG_F_PACKED ? k->extra : NULL;
}

static void cg_memset_params(const struct cg_op *op, CUDA_MEMSET_NODE_PARAMS *p)
{
	memset(p, 0, sizeof *p);
	p->dst = (CUdeviceptr)(uintptr_t)op->u.ms.dst;
	p->pitch = op->u.ms.pitch;
	p->value = op->u.ms.value;
	p->elementSize = op->u.ms.elem;
	p->width = op->u.ms.width;
	p->height = op->u.ms.height;
}

static int cg_staged(const struct cg_op *op)
{
	return op->kind == CG_OP_COPY && op->flags & CG_F_SRC_PAGEABLE && !(op->flags & CG_F_HOST_WAITS);
}

/* A copy node reads a held pageable source from staging buffer b. */
static const void *cg_copy_source(const struct cg_graph *g, size_t i, const struct cg_op *op, int b)
{
	return cg_staged(op) ? g->staging[b] + g->stage_off[i] : op->u.cp.src;
}

/* A copy node writes a read-back into pageable memory to the landing. */
static void *cg_copy_dest(const struct cg_graph *g, const struct cg_op *op)
{
	return op->flags & CG_F_LANDS_PINNED ? g->landing : op->u.cp.dst;
}

/* Whether a copy's two ranges overlap. */
static int cg_copy_overlaps(const struct cg_op *op)
{
	uintptr_t d = (uintptr_t)op->u.cp.dst, s = (uintptr_t)op->u.cp.src;
	return d < s + op->u.cp.width && s < d + op->u.cp.width;
}

int cg_copy_is_kernel(const struct cg_op *op)
{
	if (op->kind != CG_OP_COPY || op->u.cp.height != 1 || op->u.cp.depth != 1 || op->u.cp.src_host)
		return 0;
	if (op->u.cp.dst_host ? !(op->flags & (CG_F_LANDS_PINNED | CG_F_DST_MAPPED)) ||
					op->u.cp.width > CG_COPY_HOST_KERNEL_MAX
			      : cg_copy_overlaps(op))
		return 0;
	return cg_copy_kernel() != NULL;
}

/* Whether copy op i of g is added as cgraft's copy kernel. */
static int cg_copy_as_kernel(const struct cg_graph *g, const struct cg_op *op, size_t i)
{
	return !(g->kvar && g->kvar[i]) && cg_copy_is_kernel(op);
}

/* The copy kernel's blocks: 256 threads of 16 bytes a step each, a block
 * for every 4 KB up to 1,024 (the grid strides over the rest). */
static uint32_t cg_copy_grid(uint64_t n)
{
	uint64_t b = (n + 4095) / 4096;
	return b < 1 ? 1 : b > 1024 ? 1024 : (uint32_t)b;
}

static void cg_copy_args_of(const struct cg_graph *g, const struct cg_op *op, struct cg_copy_args *a)
{
	memset(a, 0, sizeof *a);
	a->dst = cg_copy_dest(g, op);
	a->src = op->u.cp.src;
	a->n = op->u.cp.width;
}

/* Copy op as cgraft's copy kernel: its node's parameters, a and argv with them. */
static void cg_copy_knode(const struct cg_graph *g, const struct cg_op *op, struct cg_copy_args *a, void **argv,
			  CUDA_KERNEL_NODE_PARAMS *p)
{
	cg_copy_args_of(g, op, a);
	argv[0] = a;
	memset(p, 0, sizeof *p);
	p->kern = cg_copy_kernel();
	p->ctx = op->ctx;
	p->gridDimX = cg_copy_grid(a->n);
	p->gridDimY = p->gridDimZ = 1;
	p->blockDimX = 256;
	p->blockDimY = p->blockDimZ = 1;
	p->kernelParams = argv;
}

static CUresult cg_kernel_node_attrs(CUgraphNode node, const struct cg_op *op)
{
	for (uint32_t a = 0; a < op->u.k.nattr; a++) {
		const CUlaunchAttribute *at = &op->u.k.attr[a];
		if (at->id == CU_LAUNCH_ATTRIBUTE_IGNORE || at->id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION)
			continue;
		CUresult rc = CG_BK(graph_kernel_attr, node, at->id, &at->value);
		if (rc != CUDA_SUCCESS)
			return rc;
	}
	return CUDA_SUCCESS;
}

/* An NCCL call as a child graph: the real call captured, on a stream of
 * cgraft's own, the way NCCL supports running inside graphs. */
static CUresult cg_nccl_node(struct cg_graph *g, const struct cg_op *op, CUgraphNode *node,
			     const CUgraphNode *deps, size_t nd)
{
	CUstream cs = NULL;
	CUgraph child = NULL;
	CUresult rc = CG_BK(stream_create, &cs, CU_STREAM_NON_BLOCKING);
	if (rc != CUDA_SUCCESS)
		return rc;
	rc = CG_BK(begin_capture, cs, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
	if (rc == CUDA_SUCCESS) {
		CUresult sub = cg_op_submit(op, cs);
		rc = CG_BK(end_capture, cs, &child);
		if (sub != CUDA_SUCCESS)
			rc = sub;
	}
	if (rc == CUDA_SUCCESS)
		rc = CG_BK(graph_add_child, node, g->graph, deps, nd, child);
	if (child)
		CG_BK(graph_destroy, child); /* the node holds its own copy */
	CG_BK(stream_destroy, cs);
	return rc;
}

/* An updater's node parameters: blob of class c. */
static void cg_upd_params(const struct cg_graph *g, uint8_t *blob, int c, void **argv, CUDA_KERNEL_NODE_PARAMS *p)
{
	argv[0] = blob;
	memset(p, 0, sizeof *p);
	p->kern = cg_upd_kernel(c);
	p->ctx = g->upd_ctx;
	p->gridDimX = p->gridDimY = p->gridDimZ = 1;
	p->blockDimX = 128;
	p->blockDimY = p->blockDimZ = 1;
	p->kernelParams = argv;
}

/* The blob of updater k, made at its first use. */
static int cg_upd_scratch(struct cg_graph *g, int k)
{
	if (!g->ub[k])
		g->ub[k] = malloc(sizeof *g->ub[k]);
	return g->ub[k] ? 0 : -ENOMEM;
}

/* n updaters, one after another, each a node of its own with an empty blob;
 * every node without another dependency will follow the last. */
static int cg_add_updaters(struct cg_graph *g, const struct cg_tmpl *t, int n)
{
	g->devnode = calloc(t->n, sizeof *g->devnode);
	g->sent = calloc(t->n, sizeof *g->sent);
	g->blob = calloc(1, CG_UPD_MAX);
	if (!g->devnode || !g->sent || !g->blob || cg_upd_scratch(g, 0))
		return -ENOMEM;
	g->upd_ctx = t->ops[0].ctx;
	for (int k = 0; k < n; k++) {
		void *argv[1];
		CUDA_KERNEL_NODE_PARAMS p;
		cg_upd_params(g, g->blob, 0, argv, &p); /* empty: no record */
		if (CG_BK(graph_add_kernel, &g->upd[k], g->graph, k ? &g->upd[k - 1] : NULL, k ? 1 : 0, &p) !=
		    CUDA_SUCCESS)
			return -EIO;
		g->nupd = k + 1;
	}
	return 0;
}

/* A kernel node the updater may change: its device handle, or 0 where the
 * driver will not make it device-updatable. */
static uint64_t cg_devnode(CUgraphNode node)
{
	CUkernelNodeAttrValue v;
	memset(&v, 0, sizeof v);
	v.deviceUpdatableKernelNode.deviceUpdatable = 1;
	if (CG_BK(graph_kernel_attr, node, CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE, &v) != CUDA_SUCCESS)
		return 0;
	memset(&v, 0, sizeof v);
	if (CG_BK(graph_kernel_attr_get, node, CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE, &v) != CUDA_SUCCESS ||
	    !v.deviceUpdatableKernelNode.deviceUpdatable)
		return 0;
	return (uint64_t)(uintptr_t)v.deviceUpdatableKernelNode.devNode;
}

static CUresult cg_node_add(struct cg_graph *g, const struct cg_op *op, size_t i, const CUgraphNode *deps,
			    size_t nd)
{
	CUgraphNode *node = &g->node[i];
	switch (op->kind) {
	case CG_OP_KERNEL: {
		struct cg_knode k;
		cg_knode_fill(&k, op);
		CUresult rc = CG_BK(graph_add_kernel, node, g->graph, deps, nd, &k.p);
		if (rc == CUDA_SUCCESS)
			rc = cg_kernel_node_attrs(*node, op);
		if (rc == CUDA_SUCCESS && g->nupd && (op->flags & CG_F_PACKED || op->u.k.ki->off) &&
		    !(g->kvar && g->kvar[i]))
			g->devnode[i] = cg_devnode(*node);
		return rc;
	}
	case CG_OP_COPY: {
		if (cg_copy_as_kernel(g, op, i)) {
			struct cg_copy_args a;
			void *argv[1];
			CUDA_KERNEL_NODE_PARAMS p;
			cg_copy_knode(g, op, &a, argv, &p);
			CUresult rc = CG_BK(graph_add_kernel, node, g->graph, deps, nd, &p);
			if (rc == CUDA_SUCCESS) {
				g->copyk[i] = 1;
				if (g->nupd)
					g->devnode[i] = cg_devnode(*node);
			}
			return rc;
		}
		CUDA_MEMCPY3D d;
		cg_copy_desc(op, cg_copy_source(g, i, op, 0), cg_copy_dest(g, op), &d);
		return CG_BK(graph_add_memcpy, node, g->graph, deps, nd, &d, op->ctx);
	}
	case CG_OP_MEMSET: {
		CUDA_MEMSET_NODE_PARAMS p;
		cg_memset_params(op, &p);
		return CG_BK(graph_add_memset, node, g->graph, deps, nd, &p, op->ctx);
	}
	case CG_OP_HOST: {
		CUDA_HOST_NODE_PARAMS p = { .fn = op->u.host.fn, .userData = op->u.host.data };
		return CG_BK(graph_add_host, node, g->graph, deps, nd, &p);
	}
	case CG_OP_RECORD:
		return CG_BK(graph_add_record, node, g->graph, deps, nd, op->u.ev.event);
	case CG_OP_NCCL:
		return cg_nccl_node(g, op, node, deps, nd);
	default:
		return CUDA_ERROR_NOT_SUPPORTED;
	}
}

static int cg_add_nodes(struct cg_graph *g, const struct cg_tmpl *t)
{
	const struct cg_dag *d = &g->dag;
	CUgraphNode *deps = malloc((t->n + 1) * sizeof *deps);
	if (!deps)
		return -ENOMEM;
	int rc = 0;
	for (size_t i = 0; i < t->n && !rc; i++) {
		if (!d->is_node[i])
			continue;
		size_t nd = 0;
		for (uint32_t k = d->dep_start[i]; k < d->dep_start[i + 1]; k++)
			deps[nd++] = g->node[d->deps[k]];
		if (!nd && g->nupd)
			deps[nd++] = g->upd[g->nupd - 1];
		CUresult e = cg_node_add(g, &t->ops[i], i, deps, nd);
		if (e != CUDA_SUCCESS) {
			cg_log_capped(CG_LOG_WARN, CG_FAULT_DRIVER,
				      "adding graph node %zu failed (error %d): that stretch stays eager", i, (int)e);
			rc = -EIO;
		}
	}
	free(deps);
	return rc;
}

static int cg_make_staging(struct cg_graph *g, const struct cg_tmpl *t)
{
	for (size_t i = 0; i < t->n; i++)
		if (cg_staged(&t->ops[i])) {
			const struct cg_op *o = &t->ops[i];
			g->stage_off[i] = g->stage_size;
			g->stage_size += (o->u.cp.spitch * o->u.cp.sheight * (o->u.cp.depth - 1) +
					  o->u.cp.spitch * (o->u.cp.height - 1) + o->u.cp.width + 63) &
					 ~(size_t)63;
		}
	const struct cg_op *last = &t->ops[t->n - 1];
	if (last->flags & CG_F_LANDS_PINNED) {
		if (CG_BK(mem_alloc_host, (void **)&g->landing, last->u.cp.width) != CUDA_SUCCESS) {
			g->landing = NULL;
			return -ENOMEM;
		}
		g->landing_size = last->u.cp.width;
		cg_stat_add(held_bytes_host, g->landing_size);
	}
	if (!g->stage_size)
		return 0;
	for (int b = 0; b < 2; b++) {
		if (CG_BK(mem_alloc_host, (void **)&g->staging[b], g->stage_size) != CUDA_SUCCESS ||
		    CG_BK(event_create, &g->done[b], CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
			return -ENOMEM;
		cg_stat_add(held_bytes_host, g->stage_size);
	}
	return 0;
}

static int cg_make_events(struct cg_graph *g, const struct cg_tmpl *t)
{
	const unsigned fl = CU_EVENT_DISABLE_TIMING;
	int ns = g->dag.nstreams;
	if (ns > 1) {
		g->fork = calloc((size_t)ns, sizeof *g->fork);
		if (!g->fork)
			return -ENOMEM;
		for (int i = 0; i + 1 < ns; i++)
			if (CG_BK(event_create, &g->fork[i], fl) != CUDA_SUCCESS)
				return -EIO;
		if (CG_BK(event_create, &g->join, fl) != CUDA_SUCCESS)
			return -EIO;
		g->lazy_join = 1;
		for (int i = 1; i < ns; i++)
			g->lazy_join &= !cg_stream_implicit(g->dag.streams[i]);
		g->join_late = g->lazy_join && !cg_stream_implicit(g->dag.streams[0]) && cg_hot.bk->stream_query;
	}
	g->ctx = t->ops[0].ctx;
	if (t->ops[t->n - 1].flags & CG_F_HOST_WAITS &&
	    CG_BK(event_create, &g->waitev, fl) != CUDA_SUCCESS)
		return -EIO;
	return 0;
}

/* v's values: a copy of the n ops from, its own parameter bytes with them. */
static int cg_vals_alloc(struct cg_variant *v, size_t n, const struct cg_op *from)
{
	size_t pb = 0;
	for (size_t i = 0; i < n; i++)
		if (from[i].kind == CG_OP_KERNEL)
			pb += (from[i].nbytes + 15) & ~(size_t)15;
	v->vals = malloc(n * (sizeof *v->vals + sizeof *v->vh) + pb + 1);
	if (!v->vals)
		return -ENOMEM;
	v->vh = (uint64_t *)(v->vals + n);
	uint8_t *p = (uint8_t *)(v->vh + n);
	memcpy(v->vals, from, n * sizeof *from);
	for (size_t i = 0; i < n; i++) {
		if (from[i].kind == CG_OP_KERNEL) {
			memcpy(p, from[i].u.k.params, from[i].nbytes);
			v->vals[i].u.k.params = p;
			p += (from[i].nbytes + 15) & ~(size_t)15;
		}
		v->vh[i] = cg_op_values_hash(&from[i]);
	}
	return 0;
}

/* Node i of v takes kernel op's launch and parameters (of the size it has:
 * one shape), once the driver took them. */
static void cg_vals_set_kernel(struct cg_variant *v, size_t i, const struct cg_op *op)
{
	memcpy((void *)v->vals[i].u.k.params, op->u.k.params, op->nbytes);
	cg_op_copy_launch(&v->vals[i], op);
}

/* Notes that node i of g was given another kernel. */
static int cg_kvar_mark(struct cg_graph *g, const struct cg_tmpl *t, size_t i)
{
	if (!g->kvar && !(g->kvar = calloc(t->n, 1)))
		return -ENOMEM;
	g->kvar[i] = 1;
	return 0;
}

/* With CGRAFT_LOG=debug, what changes in node i (the first 200 such). */
static void cg_log_update(const struct cg_tmpl *t, size_t i, const struct cg_op *was, const struct cg_op *op,
			  const char *how)
{
	static atomic_int logged;
	if (cg_log_level >= CG_LOG_DEBUG && atomic_load(&logged) < 200) {
		char what[512];
		cg_op_describe_change(what, sizeof what, was, op);
		int k = atomic_fetch_add(&logged, 1) + 1;
		cg_debug("node %zu of a %zu-op graph updated%s%s: %s", i, t->n, how, k == 200 ? " (last such message)" : "",
			 what);
	}
}

/* Sets node i of variant v to the values of op, whose values hash to h. */
static int cg_update_node(struct cg_graph *g, const struct cg_tmpl *t, struct cg_variant *v, size_t i,
			  const struct cg_op *op, uint64_t h)
{
	cg_log_update(t, i, &v->vals[i], op, "");
	CUresult rc = CUDA_ERROR_NOT_SUPPORTED;
	uint64_t c0 = cg_cost_start();
	switch (op->kind) {
	case CG_OP_KERNEL: {
		struct cg_knode k;
		int other = !cg_op_same_kernel(&v->vals[i], op);
		if (other && cg_kvar_mark(g, t, i)) {
			rc = CUDA_ERROR_OUT_OF_MEMORY;
			break;
		}
		cg_knode_fill(&k, op);
		rc = CG_BK(exec_set_kernel, v->exec, g->node[i], &k.p);
		if (rc == CUDA_SUCCESS) {
			cg_vals_set_kernel(v, i, op);
			cg_stat_add(kernel_swaps, (unsigned)other);
		}
		break;
	}
	case CG_OP_COPY: {
		if (g->copyk[i]) {
			/* Overlapping ranges go to a copy node: the graph is
			 * built again with one there (cg_pick_updated sends
			 * them before, in a graph with updaters). */
			struct cg_copy_args a;
			void *argv[1];
			CUDA_KERNEL_NODE_PARAMS p;
			cg_copy_knode(g, op, &a, argv, &p);
			if (!cg_copy_overlaps(op))
				rc = CG_BK(exec_set_kernel, v->exec, g->node[i], &p);
			else if (!g->nupd && !cg_kvar_mark(g, t, i)) {
				cg_debug("node %zu of a %zu-op graph takes a copy between overlapping ranges: built again", i,
					 t->n);
				g->downgrade = 1;
				g->grow = 0;
				return -EIO;
			}
		} else {
			CUDA_MEMCPY3D d;
			cg_copy_desc(op, cg_copy_source(g, i, op, v->stage), cg_copy_dest(g, op), &d);
			rc = CG_BK(exec_set_memcpy, v->exec, g->node[i], &d, op->ctx);
		}
		if (rc == CUDA_SUCCESS)
			v->vals[i].u.cp = op->u.cp;
		break;
	}
	case CG_OP_MEMSET: {
		CUDA_MEMSET_NODE_PARAMS p;
		cg_memset_params(op, &p);
		rc = CG_BK(exec_set_memset, v->exec, g->node[i], &p, op->ctx);
		if (rc == CUDA_SUCCESS)
			v->vals[i].u.ms = op->u.ms;
		break;
	}
	case CG_OP_HOST: {
		CUDA_HOST_NODE_PARAMS p = { .fn = op->u.host.fn, .userData = op->u.host.data };
		rc = CG_BK(exec_set_host, v->exec, g->node[i], &p);
		if (rc == CUDA_SUCCESS)
			v->vals[i].u.host = op->u.host;
		break;
	}
	default:
		return 0;
	}
	cg_cost_stop(CG_COST_UPDATE, c0);
	if (rc != CUDA_SUCCESS) {
		cg_log_capped(CG_LOG_WARN, CG_FAULT_DRIVER, "a graph node update failed (error %d): that stretch runs eagerly",
			      (int)rc);
		return -EIO;
	}
	v->vh[i] = h;
	g->kupd += op->kind == CG_OP_KERNEL;
	cg_stat_add(node_updates, 1);
	cg_stat_add(node_updates_host[op->kind], 1);
	if (g->nupd)
		cg_stat_add(node_updates_host_beside[op->kind], 1);
	return 0;
}

/* Brings every node of v whose values differ from vals to them. */
static int cg_update_all(struct cg_graph *g, const struct cg_tmpl *t, struct cg_variant *v,
			 const struct cg_vals *vals)
{
	for (size_t i = 0; i < t->n; i++) {
		const struct cg_op *o = cg_val(vals, i);
		if (g->node[i] && !cg_op_same_values(&v->vals[i], o) && cg_update_node(g, t, v, i, o, cg_op_values_hash(o)))
			return -EIO;
	}
	return 0;
}

/* A variant made for other values starts from the recording's and is
 * brought to vals node by node. */
static int cg_instantiate(struct cg_graph *g, const struct cg_tmpl *t, struct cg_variant *v,
			  const struct cg_vals *vals, const CUstream *upload)
{
	uint64_t t0 = cg_now_ns();
	/* What an exec holds on the device is not told: the free memory it
	 * took is (another thread's allocation meanwhile would count too). */
	size_t free0 = 0, free1 = 0, total = 0;
	int seen = CG_BK(mem_get_info, &free0, &total) == CUDA_SUCCESS;
	CUresult e = CG_BK(graph_instantiate, &v->exec, g->graph, 0);
	cg_stat_add(instantiate_ns, cg_now_ns() - t0);
	v->dev_bytes = 0;
	if (e == CUDA_SUCCESS && seen && CG_BK(mem_get_info, &free1, &total) == CUDA_SUCCESS && free1 < free0) {
		v->dev_bytes = free0 - free1;
		cg_stat_add(held_bytes_device, v->dev_bytes);
	}
	if (e != CUDA_SUCCESS) {
		cg_log_capped(CG_LOG_WARN, CG_FAULT_DRIVER,
			      "graph instantiation failed (error %d): that stretch stays eager", (int)e);
		return -EIO;
	}
	v->stage = 0;
	v->stage_mixed = 0;
	v->next = -1;
	/* The exec goes to the device now, not at its first launch. */
	CUstream up = upload ? *upload : g->dag.streams[0];
	v->uploaded = (!upload || up) && CG_BK(graph_upload, v->exec, up) == CUDA_SUCCESS;
	/* The updaters start disabled: a launch that changes nothing runs
	 * without them. */
	for (int k = 0; k < g->nupd; k++)
		if (CG_BK(exec_node_enable, v->exec, g->upd[k], 0) != CUDA_SUCCESS) {
			CG_BK(exec_destroy, v->exec);
			cg_stat_add(held_bytes_device, -(unsigned long long)v->dev_bytes);
			return -EIO;
		}
	if (cg_vals_alloc(v, t->n, g->built ? g->built : t->ops) || (vals && cg_update_all(g, t, v, vals))) {
		CG_BK(exec_destroy, v->exec);
		cg_stat_add(held_bytes_device, -(unsigned long long)v->dev_bytes);
		free(v->vals);
		v->vals = NULL;
		return -EIO;
	}
	return 0;
}

/* Whether t's graph gets an updater: it has a kernel, and the updater is there. */
static int cg_wants_updater(const struct cg_tmpl *t)
{
	if (!cg_opt.device_updates)
		return 0;
	for (size_t i = 0; i < t->n; i++)
		if (t->ops[i].kind == CG_OP_KERNEL)
			return cg_upd_kernel(0) != NULL;
	return 0;
}

static int cg_holds_memory(const struct cg_graph *g, const struct cg_op *op, size_t i)
{
	return !g->copyk[i] && (op->kind == CG_OP_COPY || op->kind == CG_OP_MEMSET);
}

static int cg_note_holds(struct cg_graph *g, const struct cg_tmpl *t)
{
	size_t k = 0;
	for (size_t i = 0; i < t->n; i++)
		k += cg_holds_memory(g, &t->ops[i], i);
	if (k && !(g->holds = malloc(k * sizeof *g->holds)))
		return -ENOMEM;
	for (size_t i = 0; i < t->n; i++)
		if (cg_holds_memory(g, &t->ops[i], i))
			g->holds[g->nholds++] = (uint32_t)i;
	return 0;
}

/* A record no node comes after is made on its stream after the launch,
 * not as a node: eagerly its event completes with its stream's work before
 * it, the stream then idle where nothing follows; a record node's event
 * completes before the graph launch does, and a host that waited on it
 * could find the stream still busy (cudaStreamQuery). */
static int cg_tail_records(struct cg_graph *g, const struct cg_tmpl *t)
{
	struct cg_dag *d = &g->dag;
	uint8_t *after = calloc(t->n, 1);
	if (!after)
		return -ENOMEM;
	for (uint32_t k = 0; k < d->dep_start[t->n]; k++)
		after[d->deps[k]] = 1;
	int n = 0;
	for (size_t i = 0; i < t->n; i++)
		n += t->ops[i].kind == CG_OP_RECORD && d->is_node[i] && !after[i];
	if (n && !(g->tails = malloc((size_t)n * sizeof *g->tails))) {
		free(after);
		return -ENOMEM;
	}
	for (size_t i = 0; i < t->n; i++)
		if (t->ops[i].kind == CG_OP_RECORD && d->is_node[i] && !after[i]) {
			d->is_node[i] = 0;
			g->tails[g->ntails++] = (uint32_t)i;
		}
	free(after);
	return 0;
}

/* t's graph, with nupd updaters at its head (0: none). */
static int cg_graph_make(const struct cg_tmpl *t, struct cg_graph **out, const CUstream *upload, int nupd,
			 const uint8_t *kvar)
{
	struct cg_graph *g = calloc(1, sizeof *g);
	*out = NULL;
	if (!g)
		return -ENOMEM;
	size_t n = t->n;
	g->node = calloc(n, sizeof *g->node);
	g->stage_off = calloc(n, sizeof *g->stage_off);
	g->hist = calloc(n, (CG_NHIST + 1) * sizeof *g->hist + 1);
	g->copyk = calloc(n, 1);
	if (!g->node || !g->stage_off || !g->hist || !g->copyk)
		goto fail;
	g->hnow = g->hist + n * CG_NHIST;
	g->fresh = (uint8_t *)(g->hnow + n);
	if (kvar) {
		if (!(g->kvar = malloc(n)))
			goto fail;
		memcpy(g->kvar, kvar, n);
	}
	for (size_t i = 0; i < n; i++)
		g->hist[i * CG_NHIST] = cg_op_values_hash(&t->ops[i]);
	if (cg_dag_build(&g->dag, t->ops, n, cg_stream_blocking, NULL) || cg_tail_records(g, t))
		goto fail;
	if (CG_BK(graph_create, &g->graph, 0) != CUDA_SUCCESS) {
		g->graph = NULL;
		goto fail;
	}
	if (cg_make_staging(g, t) || (nupd && cg_add_updaters(g, t, nupd)) || cg_add_nodes(g, t) ||
	    cg_make_events(g, t) || cg_instantiate(g, t, &g->var[0], NULL, upload) || cg_note_holds(g, t))
		goto fail;
	g->nvar = 1;
	*out = g;
	return 0;
fail:
	cg_graph_destroy(g);
	return -EIO;
}

int cg_graph_build(const struct cg_tmpl *t, struct cg_graph **out, const CUstream *upload)
{
	if (cg_engine_memory_waits() && cg_tmpl_spans_streams(t)) {
		cg_count_fallback(CG_WHY_MEMORY_WAIT);
		return -EIO;
	}
	if (cg_graph_make(t, out, upload, 0, NULL)) {
		cg_count_fallback(CG_WHY_BUILD_FAILED);
		return -EIO;
	}
	cg_stat_add(graphs_built, 1);
	cg_debug("built a graph of %zu ops over %d streams", t->n, (*out)->dag.nstreams);
	return 0;
}

/* How many updaters would take the changes from g's last launch to ops,
 * were t's graph built with them (its kernel nodes that keep their kernel):
 * 1 to CG_UPD_CHAIN, or CG_UPD_CHAIN + 1 where those take less. */
static int cg_upd_need(const struct cg_graph *g, const struct cg_tmpl *t, const struct cg_op *ops)
{
	const struct cg_variant *v = &g->var[g->predict];
	struct cg_upd *u = malloc(sizeof *u);
	int k = 1;
	if (!u)
		return k;
	cg_upd_clear(u);
	for (size_t i = 0; i < t->n && k <= CG_UPD_CHAIN; i++) {
		const struct cg_op *o = &ops[i], *was = &v->vals[i];
		if (o->kind != CG_OP_KERNEL || was->kind != CG_OP_KERNEL || !cg_op_same_kernel(was, o))
			continue;
		const uint32_t *grid = memcmp(was->u.k.grid, o->u.k.grid, sizeof o->u.k.grid) ? o->u.k.grid : NULL;
		while (cg_upd_add(u, i + 1, was->u.k.params, o->u.k.params,
				  o->flags & CG_F_PACKED ? NULL : o->u.k.ki, o->nbytes, grid)) {
			if (!u->nrec || ++k > CG_UPD_CHAIN) {
				k = CG_UPD_CHAIN + 1; /* more than one blob a node, or than the chain */
				break;
			}
			cg_upd_clear(u);
		}
	}
	free(u);
	return k;
}

/* t's graph built again, with an updater or without, once its last launch
 * is done (the old one's staging and events go with it), its nodes holding
 * ops, this launch's values: the recording's may lie far behind them, more
 * than an updater takes at once. NULL where it cannot be, and it stays as
 * it is. */
static struct cg_graph *cg_graph_rebuild(struct cg_tmpl *t, const struct cg_op *ops)
{
	struct cg_graph *g = t->g, *ng = NULL;
	struct cg_tmpl now = *t;
	now.ops = (struct cg_op *)ops;
	/* Given updaters, as many as the last launch's changes take (none
	 * where that is more than CG_UPD_CHAIN), not one at first and then
	 * more, each a build; twice as many where they took less. */
	int nupd = 0;
	if (!g->downgrade) {
		nupd = cg_upd_need(g, t, ops);
		if (nupd > CG_UPD_CHAIN && !g->nupd) {
			g->upgrade = 0;
			g->no_upgrade = 1; /* as it is: built again, it would be the same */
			return NULL;
		}
		if (nupd > CG_UPD_CHAIN)
			nupd = 0;
	} else if (g->grow && g->nupd < CG_UPD_CHAIN) {
		nupd = g->nupd * 2 < CG_UPD_CHAIN ? g->nupd * 2 : CG_UPD_CHAIN;
	}
	g->upgrade = 0; /* a graph that must lose its updaters tries again at its next launch */
	if ((nupd && !cg_wants_updater(t)) || CG_BK(stream_sync, g->dag.streams[0]) != CUDA_SUCCESS ||
	    cg_graph_make(&now, &ng, NULL, nupd, g->kvar))
		return NULL;
	struct cg_variant b;
	if (cg_vals_alloc(&b, t->n, ng->var[0].vals)) {
		cg_graph_destroy(ng);
		return NULL;
	}
	ng->built = b.vals;
	ng->no_upgrade = !nupd;
	cg_stat_add(graphs_updater, nupd > 0);
	if (nupd)
		cg_debug("a graph of %zu ops was built again with %d updater%s: its kernel nodes change at most "
			 "launches%s", t->n, nupd, nupd > 1 ? "s" : "",
			 !g->nupd ? "" : g->downgrade ? ", by more than its updaters took"
						      : ", those given another kernel from the host");
	else
		cg_debug("a graph of %zu ops was built again without updaters", t->n);
	return ng;
}

static void cg_graph_free_memory(struct cg_graph *g)
{
	for (int i = 0; i < g->nvar; i++)
		free(g->var[i].vals);
	free(g->kvar);
	free(g->copyk);
	free(g->holds);
	free(g->tails);
	cg_dag_free(&g->dag);
	free(g->hist);
	free(g->node);
	free(g->fork);
	free(g->stage_off);
	free(g->devnode);
	free(g->sent);
	for (int k = 0; k < CG_UPD_CHAIN; k++)
		free(g->ub[k]);
	free(g->blob);
	free(g->built);
	free(g);
}

void cg_graph_destroy(struct cg_graph *g)
{
	if (!g)
		return;
	if (g->launched && cg_owed == g)
		cg_graph_settle();
	for (int i = 0; i < g->nvar; i++) {
		CG_BK(exec_destroy, g->var[i].exec);
		cg_stat_add(held_bytes_device, -(unsigned long long)g->var[i].dev_bytes);
	}
	if (g->graph)
		CG_BK(graph_destroy, g->graph);
	for (int i = 0; g->fork && i + 1 < g->dag.nstreams; i++)
		if (g->fork[i])
			CG_BK(event_destroy, g->fork[i]);
	if (g->join)
		CG_BK(event_destroy, g->join);
	if (g->waitev)
		CG_BK(event_destroy, g->waitev);
	if (g->landing) {
		CG_BK(mem_free_host, g->landing);
		cg_stat_add(held_bytes_host, -(unsigned long long)g->landing_size);
	}
	for (int b = 0; b < 2; b++) {
		if (g->done[b])
			CG_BK(event_destroy, g->done[b]);
		if (g->staging[b]) {
			CG_BK(mem_free_host, g->staging[b]);
			cg_stat_add(held_bytes_host, -(unsigned long long)g->stage_size);
		}
	}
	cg_graph_free_memory(g);
}

void cg_graph_abandon(struct cg_graph *g)
{
	if (!g)
		return;
	if (g->launched && cg_owed == g)
		cg_owed = NULL;
	cg_graph_free_memory(g);
}

const struct cg_op *cg_graph_expect(const struct cg_tmpl *t, size_t i)
{
	const struct cg_graph *g = t->g;
	return &g->var[g->predict].vals[i];
}

typedef int (*cg_op_touch_fn)(const struct cg_op *op, const void *p, size_t n);

static int cg_ops_touch(const struct cg_op *ops, size_t k, cg_op_touch_fn f, const void *p, size_t n)
{
	for (size_t i = 0; i < k; i++)
		if (f(&ops[i], p, n))
			return 1;
	return 0;
}

/* Whether f holds for an op of t, as recorded or in a variant. */
static int cg_graph_touches(const struct cg_tmpl *t, cg_op_touch_fn f, const void *p, size_t n)
{
	if (cg_ops_touch(t->ops, t->n, f, p, n))
		return 1;
	const struct cg_graph *g = t->g;
	for (int v = 0; g && v < g->nvar; v++)
		if (cg_ops_touch(g->var[v].vals, t->n, f, p, n))
			return 1;
	return g && g->built && cg_ops_touch(g->built, t->n, f, p, n);
}

int cg_graph_reaches(const struct cg_tmpl *t, const void *p, size_t n)
{
	return cg_graph_touches(t, cg_params_reach, p, n);
}

/* Copy kernels hold only bytes, as kernel nodes do: their ops name no
 * memory the graph holds. Before the graph is built, every op's. */
int cg_graph_names_memory(const struct cg_tmpl *t, const void *p, size_t n)
{
	const struct cg_graph *g = t->g;
	/* Only copy kernels and kernels where no node was given another
	 * (a copy whose ranges overlapped is a copy node then). */
	if (!t->binds && !(g && g->kvar))
		return 0;
	if (!g)
		return cg_graph_touches(t, cg_op_names_memory, p, n);
	for (size_t k = 0; k < g->nholds; k++) {
		size_t i = g->holds[k];
		int hit = cg_op_names_memory(&t->ops[i], p, n) || (g->built && cg_op_names_memory(&g->built[i], p, n));
		for (int v = 0; v < g->nvar && !hit; v++)
			hit = cg_op_names_memory(&g->var[v].vals[i], p, n);
		if (hit)
			return 1;
	}
	return 0;
}

/* ---- variants ---------------------------------------------------------------- */
static int cg_node_volatile(const struct cg_graph *g, size_t i)
{
	return g->fresh[i] >= CG_VOLATILE;
}

/* Notes this launch's values node by node (hashing only those that differ
 * from the predicted variant). A node that brings a value unseen in its last
 * CG_NHIST several launches in a row changes at every launch (a step's
 * counter or output slot, bytes left uninitialised in a parameter struct):
 * it is updated whatever the variant. Returns the key of the other nodes'
 * values, which pick the variant: allocators that reuse a few buffers make
 * those recur. */
static uint64_t cg_note_values(struct cg_graph *g, const struct cg_tmpl *t, const struct cg_op *ops,
			       const uint8_t *dirty)
{
	const struct cg_variant *p = &g->var[g->predict];
	uint64_t key = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < t->n; i++) {
		uint64_t h = p->vh[i];
		if (dirty[i]) {
			h = cg_op_values_hash(&ops[i]);
			uint64_t *hist = g->hist + i * CG_NHIST;
			int seen = 0;
			for (int k = 0; k < CG_NHIST; k++)
				seen |= hist[k] == h;
			if (!seen) {
				memmove(hist + 1, hist, (CG_NHIST - 1) * sizeof *hist);
				hist[0] = h;
				g->fresh[i] += g->fresh[i] < 255;
			} else {
				g->fresh[i] = 0;
			}
		} else {
			g->fresh[i] = 0;
		}
		g->hnow[i] = h;
		if (!cg_node_volatile(g, i))
			key = (key ^ h) * 0x100000001b3ull + (key >> 29);
	}
	return key;
}

/* Nodes of v whose values differ from this launch's, by hash: all of them,
 * or only those that do not change at every launch. */
static size_t cg_distance(const struct cg_graph *g, size_t n, const struct cg_variant *v, int stable_only)
{
	size_t d = 0;
	for (size_t i = 0; i < n; i++)
		d += v->vh[i] != g->hnow[i] && !(stable_only && cg_node_volatile(g, i));
	return d;
}

static int cg_recurring(struct cg_graph *g, uint64_t key)
{
	for (int i = 0; i < g->nrecent && i < CG_RECENT; i++)
		if (g->recent[i] == key)
			return 1;
	g->recent[g->nrecent++ % CG_RECENT] = key;
	return 0;
}

/* A graph with updaters has its one exec (whose value hashes, read only to
 * pick among variants, are not kept): the kernel nodes whose values
 * changed are given them through the updaters where they are
 * device-updatable (a node's changes all in one blob, the blobs filled in
 * turn), the other nodes from the host. NULL when the changes could not be
 * given (too many for the updaters, a call refused): the exec's nodes then
 * hold what they held. */
static struct cg_variant *cg_pick_updated(struct cg_graph *g, const struct cg_tmpl *t, const struct cg_op *ops,
					  const uint8_t *dirty)
{
	struct cg_variant *v = &g->var[0];
	/* Per node, the changes sent: its updater and first record
	 * (updater << 16 | record), and the record after its last (a copy:
	 * 0 and 1); 0 when not sent. */
	uint32_t(*sent)[2] = g->sent;
	int k = 0;
	cg_upd_clear(g->ub[0]);
	for (size_t i = 0; i < t->n; i++) {
		sent[i][1] = 0;
		const struct cg_op *o = &ops[i], *was = &v->vals[i];
		if (!dirty[i] || !g->node[i])
			continue;
		int copyk = g->copyk[i];
		/* A device-updatable kernel node keeping its kernel has its
		 * values compared as its blob's records are found. */
		if (copyk || !g->devnode[i] || !cg_op_same_kernel(was, o)) {
			if (cg_op_same_values(was, o))
				continue;
			if (copyk ? cg_copy_overlaps(o) : g->devnode[i] != 0) {
				/* Built again at once, this node updated from the
				 * host (a copy: a copy node). */
				cg_debug("node %zu of a %zu-op graph takes %s: built again, its updates from the host",
					 i, t->n, copyk ? "a copy between overlapping ranges" : "another kernel");
				if (!cg_kvar_mark(g, t, i))
					g->upgrade = 1;
				return NULL;
			}
			if (!g->devnode[i]) {
				if (cg_update_node(g, t, v, i, o, 0))
					return NULL;
				continue;
			}
		}
		/* The bytes that take the node from was to o, and its grid where that changes. */
		struct cg_copy_args ca, cb;
		uint32_t cgrid[3] = { 0, 1, 1 };
		const uint8_t *pa, *pb;
		const struct cg_kinfo *ki = NULL;
		const uint32_t *grid = NULL;
		size_t nb;
		if (copyk) {
			cg_copy_args_of(g, was, &ca);
			cg_copy_args_of(g, o, &cb);
			pa = (const uint8_t *)&ca;
			pb = (const uint8_t *)&cb;
			nb = sizeof cb;
			cgrid[0] = cg_copy_grid(cb.n);
			grid = cgrid[0] != cg_copy_grid(ca.n) ? cgrid : NULL;
		} else {
			pa = was->u.k.params;
			pb = o->u.k.params;
			ki = o->flags & CG_F_PACKED ? NULL : o->u.k.ki;
			nb = o->nbytes;
			if (memcmp(was->u.k.grid, o->u.k.grid, sizeof o->u.k.grid))
				grid = o->u.k.grid;
		}
		uint32_t from;
		while (from = g->ub[k]->nrec, cg_upd_add(g->ub[k], g->devnode[i], pa, pb, ki, nb, grid)) {
			if (!g->ub[k]->nrec || k + 1 == g->nupd || cg_upd_scratch(g, k + 1)) {
				/* More updaters take more nodes, not a node's
				 * changes past one blob. */
				cg_debug("a graph's changes exceed what its %d updater%s take: it is built again",
					 g->nupd, g->nupd > 1 ? "s" : "");
				g->downgrade = 1;
				g->grow = g->ub[k]->nrec > 0;
				return NULL;
			}
			cg_upd_clear(g->ub[++k]);
		}
		if (!copyk && g->ub[k]->nrec == from)
			continue; /* the values it has */
		/* A kernel's changed runs (none where only its grid changed); a
		 * copy's whole values. */
		sent[i][0] = copyk ? 0 : (uint32_t)k << 16 | from;
		sent[i][1] = copyk ? 1 : g->ub[k]->nrec;
	}
	uint64_t c0 = cg_cost_start();
	CUresult rc = CUDA_SUCCESS;
	for (int j = 0; j < g->nupd && rc == CUDA_SUCCESS; j++) {
		unsigned bit = 1u << j;
		if (j > k || !g->ub[j]->nrec) {
			if (g->upd_on & bit && (rc = CG_BK(exec_node_enable, v->exec, g->upd[j], 0)) == CUDA_SUCCESS)
				g->upd_on &= ~bit;
			continue;
		}
		void *argv[1];
		CUDA_KERNEL_NODE_PARAMS p;
		cg_upd_params(g, g->blob, cg_upd_finish(g->ub[j], g->blob), argv, &p);
		rc = CG_BK(exec_set_kernel, v->exec, g->upd[j], &p);
		if (rc == CUDA_SUCCESS && !(g->upd_on & bit) &&
		    (rc = CG_BK(exec_node_enable, v->exec, g->upd[j], 1)) == CUDA_SUCCESS)
			g->upd_on |= bit;
		g->upd_pending = 1;
	}
	cg_cost_stop(CG_COST_UPDATE, c0);
	if (rc != CUDA_SUCCESS) {
		/* Refused: an updater keeps a blob the nodes may not hold yet,
		 * and the next launch gives every updater that is enabled its
		 * blob again, or disables it, before the exec runs. */
		cg_log_capped(CG_LOG_WARN, CG_FAULT_DRIVER,
			      "a graph updater's update failed (error %d): that stretch runs eagerly", (int)rc);
		g->upd_pending = 0;
		return NULL;
	}
	for (size_t i = 0; i < t->n; i++)
		if (sent[i][1]) {
			cg_log_update(t, i, &v->vals[i], &ops[i], " on the device");
			if (ops[i].kind == CG_OP_COPY) {
				v->vals[i].u.cp = ops[i].u.cp;
			} else {
				/* Where the parameters changed, and the grid. */
				cg_upd_apply(g->ub[sent[i][0] >> 16], sent[i][0] & 0xffff, sent[i][1],
					     (uint8_t *)v->vals[i].u.k.params, ops[i].u.k.params);
				cg_op_copy_grid(&v->vals[i], &ops[i]);
			}
			cg_stat_add(node_updates, 1);
			cg_stat_add(node_updates_device, 1);
		}
	return v;
}

/* The variant to launch for these values: the predicted one when nothing
 * changed, else the closest; a new one when the stable values recur; the
 * rest is updated node by node. NULL when an update failed. */
static struct cg_variant *cg_pick_variant(struct cg_graph *g, const struct cg_tmpl *t, const struct cg_op *ops,
					  const uint8_t *dirty)
{
	if (g->nupd)
		return g->upd_lost ? NULL : cg_pick_updated(g, t, ops, dirty);
	const struct cg_vals vals = { ops, dirty, &g->var[g->predict] };
	int any = 0;
	for (size_t i = 0; i < t->n; i++)
		any |= dirty[i];
	if (!any) {
		for (size_t i = 0; i < t->n; i++)
			g->fresh[i] = 0;
		return &g->var[g->predict];
	}
	uint64_t key = cg_note_values(g, t, ops, dirty);
	struct cg_variant *best = NULL;
	size_t best_d = 0;
	for (int i = 0; i < g->nvar; i++) {
		size_t d = cg_distance(g, t->n, &g->var[i], 0);
		if (!best || d < best_d) {
			best = &g->var[i];
			best_d = d;
		}
	}
	long maxv = cg_opt.max_variants < CG_MAX_VARIANTS ? cg_opt.max_variants : CG_MAX_VARIANTS;
	if (cg_recurring(g, key) && g->nvar < maxv && cg_distance(g, t->n, best, 1)) {
		struct cg_variant *v = &g->var[g->nvar];
		if (cg_instantiate(g, t, v, &vals, NULL) == 0) {
			g->nvar++;
			cg_stat_add(variants, 1);
			return v;
		}
	}
	for (size_t i = 0; i < t->n; i++)
		if (g->node[i] && best->vh[i] != g->hnow[i] && cg_update_node(g, t, best, i, cg_val(&vals, i), g->hnow[i]))
			return NULL;
	return best;
}

/* ---- launch -------------------------------------------------------------------- */
/* Copies held pageable sources into a staging buffer no running launch
 * reads: v's own where its launches are done, else the other once they are,
 * v's copy nodes updated to it. */
static int cg_stage(struct cg_graph *g, const struct cg_tmpl *t, struct cg_variant *v, const struct cg_op *ops)
{
	/* The buffer v's nodes read where the launches that read it are done
	 * (no node update then), else the other once its own are. */
	int b = v->stage;
	if (g->used[b] && CG_BK(event_query, g->done[b]) != CUDA_SUCCESS) {
		b ^= 1;
		if (g->used[b] && CG_BK(event_query, g->done[b]) != CUDA_SUCCESS &&
		    CG_BK(event_sync, g->done[b]) != CUDA_SUCCESS)
			return -EIO;
	}
	/* Which ops are staged is the template's to say: a held op the fast
	 * path left implicit (a kernel) is not written out. A staged copy is
	 * always, with the program's source in it, of the template's shape. */
	for (size_t i = 0; i < t->n; i++)
		if (cg_staged(&t->ops[i])) {
			const struct cg_op *o = &ops[i];
			size_t n = o->u.cp.spitch * o->u.cp.sheight * (o->u.cp.depth - 1) +
				   o->u.cp.spitch * (o->u.cp.height - 1) + o->u.cp.width;
			memcpy(g->staging[b] + g->stage_off[i], o->u.cp.src, n);
		}
	if (v->stage != b || v->stage_mixed) {
		/* Its nodes read b once every one of them was updated: after
		 * an update refused, the next launch updates them all again. */
		int was = v->stage;
		v->stage = b;
		for (size_t i = 0; i < t->n; i++)
			if (cg_staged(&t->ops[i]) && cg_update_node(g, t, v, i, &ops[i], cg_op_values_hash(&ops[i]))) {
				v->stage = was;
				v->stage_mixed = 1;
				return -EIO;
			}
		v->stage_mixed = 0;
	}
	g->cur = b;
	return 0;
}

/* Orders the launch after every stream's earlier work: unless nothing was
 * enqueued since this graph's last launch, from the same thread (another's
 * per-thread stream is another stream), whose join covers them. */
static int cg_fork(struct cg_graph *g, const struct cg_launch *l)
{
	const struct cg_dag *d = &g->dag;
	CUstream ls = d->streams[0];
	int forked = g->launched && g->epoch_after == l->epoch && g->thread == l->thread && ls != CU_STREAM_PER_THREAD;
	/* Another graph, or this one after other work: what is owed first. */
	if (cg_owed && (cg_owed != g || !forked))
		cg_graph_settle();
	for (int i = 1; i < d->nstreams && !forked; i++)
		if (CG_BK(event_record, g->fork[i - 1], d->streams[i]) != CUDA_SUCCESS ||
		    CG_BK(stream_wait, ls, g->fork[i - 1], 0) != CUDA_SUCCESS)
			return -EIO;
	for (int i = 0; i < d->next_wait; i++)
		if (CG_BK(stream_wait, ls, d->ext_wait[i], 0) != CUDA_SUCCESS)
			return -EIO;
	return 0;
}

static int cg_graph_launch_ops(struct cg_tmpl *t, struct cg_launch *l, const struct cg_op *ops, uint8_t *dirty);

/* Launches t for ops (every one written), building its graph again first
 * where that is due (cg_graph_rebuild): the new graph holds ops' values. */
static int cg_graph_launch_due(struct cg_tmpl *t, struct cg_launch *l, const struct cg_op *ops, uint8_t *dirty)
{
	struct cg_graph *g = t->g;
	/* A host still waiting on one of its events keeps the old graph. */
	uint64_t c0 = cg_cost_start();
	struct cg_graph *ng = (g->upgrade || g->downgrade) && !t->pins ? cg_graph_rebuild(t, ops) : NULL;
	cg_cost_stop(CG_COST_REBUILD, c0);
	if (!ng)
		return cg_graph_launch_ops(t, l, ops, dirty);
	if (t->rebuilds < CG_UNTIMED_REBUILDS) {
		t->rebuilds++;
		t->rebuilt = 1;
	}
	uint8_t dirty_new[t->n];
	for (size_t i = 0; i < t->n; i++)
		dirty_new[i] = !cg_op_same_values(&ng->var[0].vals[i], &ops[i]);
	t->g = ng;
	int rc = cg_graph_launch_ops(t, l, ops, dirty_new);
	cg_graph_destroy(g);
	return rc;
}

/* This launch's values, every op written (cg_val's where the held op may
 * be implicit; another kind is always written: a staged copy's source is
 * the held op's, whatever its values). A kernel's attributes, shape, are
 * the template's, which outlive a graph built from these. */
static struct cg_op *cg_launch_values(const struct cg_tmpl *t, const struct cg_launch *l, const uint8_t *dirty)
{
	const struct cg_vals vals = { l->ops, dirty, &t->g->var[t->g->predict] };
	struct cg_op *ops = malloc(t->n * sizeof *ops);
	for (size_t i = 0; ops && i < t->n; i++) {
		ops[i] = cg_op_kind_implicit(t->ops[i].kind) ? *cg_val(&vals, i) : l->ops[i];
		if (ops[i].kind == CG_OP_KERNEL)
			ops[i].u.k.attr = t->ops[i].u.k.attr;
	}
	return ops;
}

int cg_graph_launch(struct cg_tmpl *t, struct cg_launch *l)
{
	struct cg_graph *g = t->g;
	uint8_t dirty_all[t->n];
	uint8_t *dirty = (uint8_t *)l->dirty;
	if (!dirty) {
		const struct cg_variant *p = &g->var[g->predict];
		for (size_t i = 0; i < t->n; i++)
			dirty_all[i] = !cg_op_same_values(&p->vals[i], &l->ops[i]);
		dirty = dirty_all;
	}
	if (cg_unlikely(t->want_updater)) {
		t->want_updater = 0;
		if (!g->nupd && !g->no_upgrade)
			g->upgrade = 1;
		cg_debug("a %zu-op graph updating kernel nodes from the host replays slower than eager: built again "
			 "with an updater before it is judged", t->n);
	}
	if (cg_likely(!g->upgrade && !g->downgrade)) {
		int rc = cg_graph_launch_ops(t, l, l->ops, dirty);
		if (!rc || !(t->g->downgrade || t->g->upgrade))
			return rc;
	}
	/* The graph is built again: where that was due, or where its
	 * updater could not take this launch's changes (then without one,
	 * at once). */
	struct cg_op *ops = cg_launch_values(t, l, dirty);
	if (!ops)
		return -ENOMEM;
	int rc = cg_graph_launch_due(t, l, ops, dirty);
	if (rc && t->g->downgrade) {
		memset(dirty_all, 1, t->n);
		rc = cg_graph_launch_due(t, l, ops, dirty_all);
	}
	free(ops);
	return rc;
}

static int cg_graph_launch_ops(struct cg_tmpl *t, struct cg_launch *l, const struct cg_op *ops, uint8_t *dirty)
{
	struct cg_graph *g = t->g;
	uint64_t c0 = cg_cost_start();
	struct cg_variant *v = cg_pick_variant(g, t, ops, dirty);
	cg_cost_stop(CG_COST_PICK, c0);
	CUstream ls = g->dag.streams[0];
	/* An exec whose updater changes its nodes is uploaded before its launch. */
	if (v && g->nupd && !v->uploaded)
		v->uploaded = CG_BK(graph_upload, v->exec, ls) == CUDA_SUCCESS;
	int ready = v && (!g->nupd || v->uploaded) && !(g->stage_size && cg_stage(g, t, v, ops)) && !cg_fork(g, l);
	c0 = cg_cost_start();
	CUresult lr = ready ? CG_BK(graph_launch, v->exec, ls) : CUDA_ERROR_NOT_READY;
	cg_cost_stop(CG_COST_DRIVER, c0);
	if (g->upd_pending && lr != CUDA_SUCCESS) {
		g->upd_lost = g->downgrade = 1;
		g->grow = 0;
	}
	g->upd_pending = 0;
	if (lr != CUDA_SUCCESS) {
		if (ready)
			cg_log_capped(CG_LOG_WARN, CG_FAULT_DRIVER,
				      "graph launch failed (error %d): that stretch runs eagerly", (int)lr);
		return -EIO;
	}
	if (g->dag.nstreams > 1) {
		if (!g->join_late)
			CG_BK(event_record, g->join, ls);
		if (g->lazy_join) {
			cg_owed = g;
			cg_stat_add(joins_owed, 1);
		} else {
			cg_join_streams(g);
		}
	}
	/* With the join owed, a record on the first stream: it completes with
	 * the whole graph, after the work eagerly before it on its own. */
	for (int i = 0; i < g->ntails; i++)
		CG_BK(event_record, t->ops[g->tails[i]].u.ev.event, g->lazy_join ? ls : t->ops[g->tails[i]].stream);
	if (g->stage_size) {
		CG_BK(event_record, g->done[g->cur], ls);
		g->used[g->cur] = 1;
	}
	l->wait = NULL;
	l->landing = NULL;
	l->stream = g->dag.nstreams == 1 ? ls : NULL;
	if (g->waitev && CG_BK(event_record, g->waitev, ls) == CUDA_SUCCESS) {
		l->wait = g->waitev;
		l->landing = g->landing;
		l->landing_size = g->landing_size;
	}
	int vi = (int)(v - g->var);
	g->var[g->last].next = vi;
	g->last = vi;
	g->predict = v->next >= 0 ? v->next : vi;
	g->epoch_after = l->epoch + 1;
	g->thread = l->thread;
	g->launched = 1;
	/* Decided at the window's end, or at once where its first launches
	 * updated as many as the whole window would need (a graph launched
	 * now and then, a few nodes a launch, would pay a rebuild it takes
	 * long to earn back). */
	if (!g->nupd && !g->no_upgrade && cg_opt.device_updates &&
	    (++g->wlaunch == CG_UPD_WINDOW ||
	     (g->wlaunch <= CG_UPD_EARLY && g->kupd >= CG_UPD_WORTH * CG_UPD_WINDOW))) {
		g->upgrade = g->kupd >= CG_UPD_WORTH * CG_UPD_WINDOW;
		if (g->kupd && !g->upgrade)
			cg_debug("a graph of %zu ops updated %u kernel nodes from the host in %d launches: no updater",
				 t->n, g->kupd, CG_UPD_WINDOW);
		g->kupd_last = g->kupd;
		g->wlaunch = g->kupd = 0;
	}
	t->host_updates = !g->nupd && !g->no_upgrade && !g->upgrade && cg_opt.device_updates &&
			  (g->kupd || g->kupd_last);
	cg_stat_add(graph_launches, 1);
	return 0;
}
