/* The fake driver table (see fake_backend.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fake_backend.h"

#define FK_MAX_KERNELS 64
#define FK_MAX_RANGES 32
#define FK_MAX_STREAMS 64
#define FK_MAX_EVENTS 64

struct fk_kernel {
	const void *handle;
	uint32_t nparams;
	uint32_t size[64];
	const char *name;
	int cluster;
};

struct fk_range {
	uintptr_t lo, hi;
	int host;
};

static pthread_mutex_t fk_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
	struct fk_call *log;
	size_t n, cap;
	struct fk_kernel kernels[FK_MAX_KERNELS];
	int nkernels;
	struct fk_range ranges[FK_MAX_RANGES];
	int nranges;
	CUstream nonblocking[FK_MAX_STREAMS];
	int nnonblocking;
	CUevent pending[FK_MAX_EVENTS];
	int npending;
	CUcontext ctx;
	uintptr_t next_handle;
	struct {
		CUresult rc;
		int skip, n;
	} fail[FK_COUNT];
} fk = { .ctx = FK_CTX, .next_handle = 0x70000000u };

static const char *const fk_names[FK_COUNT] = {
	[FK_CTX_GET_CURRENT] = "cuCtxGetCurrent",
	[FK_CTX_SET_CURRENT] = "cuCtxSetCurrent",
	[FK_CTX_PUSH] = "cuCtxPushCurrent",
	[FK_CTX_POP] = "cuCtxPopCurrent",
	[FK_CTX_GET_DEVICE] = "cuCtxGetDevice",
	[FK_FUNC_PARAM_INFO] = "cuFuncGetParamInfo",
	[FK_KERNEL_PARAM_INFO] = "cuKernelGetParamInfo",
	[FK_FUNC_NAME] = "cuFuncGetName",
	[FK_KERNEL_NAME] = "cuKernelGetName",
	[FK_FUNC_ATTR] = "cuFuncGetAttribute",
	[FK_POINTER_ATTRS] = "cuPointerGetAttributes",
	[FK_MEM_ALLOC_HOST] = "cuMemAllocHost",
	[FK_MEM_FREE_HOST] = "cuMemFreeHost",
	[FK_STREAM_FLAGS] = "cuStreamGetFlags",
	[FK_STREAM_SYNC] = "cuStreamSynchronize",
	[FK_EVENT_CREATE] = "cuEventCreate",
	[FK_EVENT_DESTROY] = "cuEventDestroy",
	[FK_EVENT_RECORD] = "cuEventRecord",
	[FK_EVENT_QUERY] = "cuEventQuery",
	[FK_EVENT_SYNC] = "cuEventSynchronize",
	[FK_STREAM_WAIT] = "cuStreamWaitEvent",
	[FK_GRAPH_CREATE] = "cuGraphCreate",
	[FK_GRAPH_DESTROY] = "cuGraphDestroy",
	[FK_GRAPH_ADD_KERNEL] = "cuGraphAddKernelNode",
	[FK_GRAPH_KERNEL_ATTR] = "cuGraphKernelNodeSetAttribute",
	[FK_GRAPH_ADD_MEMCPY] = "cuGraphAddMemcpyNode",
	[FK_GRAPH_ADD_MEMSET] = "cuGraphAddMemsetNode",
	[FK_GRAPH_ADD_HOST] = "cuGraphAddHostNode",
	[FK_GRAPH_ADD_RECORD] = "cuGraphAddEventRecordNode",
	[FK_GRAPH_INSTANTIATE] = "cuGraphInstantiateWithFlags",
	[FK_EXEC_DESTROY] = "cuGraphExecDestroy",
	[FK_EXEC_SET_KERNEL] = "cuGraphExecKernelNodeSetParams",
	[FK_EXEC_SET_MEMCPY] = "cuGraphExecMemcpyNodeSetParams",
	[FK_EXEC_SET_MEMSET] = "cuGraphExecMemsetNodeSetParams",
	[FK_EXEC_SET_HOST] = "cuGraphExecHostNodeSetParams",
	[FK_GRAPH_LAUNCH] = "cuGraphLaunch",
	[FK_LAUNCH_KERNEL] = "cuLaunchKernel",
	[FK_LAUNCH_KERNEL_EX] = "cuLaunchKernelEx",
	[FK_MEMCPY_ASYNC] = "cuMemcpyAsync",
	[FK_MEMCPY3D_ASYNC] = "cuMemcpy3DAsync",
	[FK_MEMSET_ASYNC] = "cuMemsetD*Async",
	[FK_HOST_FUNC] = "cuLaunchHostFunc",
	[FK_RT_GET_KERNEL] = "cudaGetKernel",
	[FK_RT_SYMBOL_ADDRESS] = "cudaGetSymbolAddress",
	[FK_APP] = "(program)",
};

const char *fk_name(enum fk_fn fn)
{
	return fn < FK_COUNT && fk_names[fn] ? fk_names[fn] : "?";
}

int fk_is_work(enum fk_fn fn)
{
	switch (fn) {
	case FK_EVENT_RECORD:
	case FK_STREAM_WAIT:
	case FK_GRAPH_LAUNCH:
	case FK_LAUNCH_KERNEL:
	case FK_LAUNCH_KERNEL_EX:
	case FK_MEMCPY_ASYNC:
	case FK_MEMCPY3D_ASYNC:
	case FK_MEMSET_ASYNC:
	case FK_HOST_FUNC:
	case FK_APP:
		return 1;
	default:
		return 0;
	}
}

/* ---- recording ------------------------------------------------------------ */
/* Starts an entry (under fk_mu): the answer is CUDA_SUCCESS unless a failure
 * was asked for. */
static struct fk_call *fk_begin(enum fk_fn fn)
{
	pthread_mutex_lock(&fk_mu);
	if (fk.n == fk.cap) {
		size_t cap = fk.cap ? 2 * fk.cap : 1024;
		struct fk_call *p = realloc(fk.log, cap * sizeof *p);
		if (!p)
			abort();
		fk.log = p;
		fk.cap = cap;
	}
	struct fk_call *c = &fk.log[fk.n++];
	memset(c, 0, sizeof *c);
	c->fn = fn;
	c->thread = pthread_self();
	if (fk.fail[fn].skip > 0) {
		fk.fail[fn].skip--;
	} else if (fk.fail[fn].n > 0) {
		fk.fail[fn].n--;
		c->rc = fk.fail[fn].rc;
	}
	return c;
}

static CUresult fk_end(struct fk_call *c)
{
	CUresult rc = c->rc;
	pthread_mutex_unlock(&fk_mu);
	return rc;
}

static CUresult fk_end_rc(struct fk_call *c, CUresult rc)
{
	if (c->rc == CUDA_SUCCESS)
		c->rc = rc;
	return fk_end(c);
}

static void *fk_handle(void)
{
	fk.next_handle += 0x10;
	return (void *)fk.next_handle;
}

static const struct fk_kernel *fk_kernel_of(const void *h)
{
	for (int i = 0; i < fk.nkernels; i++)
		if (fk.kernels[i].handle == h)
			return &fk.kernels[i];
	return NULL;
}

/* Copies a launch's parameters, as pointers (sizes from the declaration) or
 * as a packed buffer in extra. */
static void fk_params(struct fk_call *c, const void *kernel, void **params, void **extra)
{
	c->kernel = kernel;
	const struct fk_kernel *k = fk_kernel_of(kernel);
	if (params && k) {
		uint32_t off = 0;
		for (uint32_t i = 0; i < k->nparams; i++) {
			if (off + k->size[i] <= FK_MAX_PARAM_BYTES)
				memcpy(c->params + off, params[i], k->size[i]);
			off += k->size[i];
		}
		c->nbytes = off < FK_MAX_PARAM_BYTES ? off : FK_MAX_PARAM_BYTES;
	} else if (extra) {
		const void *buf = NULL;
		size_t size = 0;
		for (void **e = extra; *e != CU_LAUNCH_PARAM_END; e += 2) {
			if (e[0] == CU_LAUNCH_PARAM_BUFFER_POINTER)
				buf = e[1];
			else if (e[0] == CU_LAUNCH_PARAM_BUFFER_SIZE)
				size = *(const size_t *)e[1];
		}
		if (buf) {
			c->nbytes = (uint32_t)(size < FK_MAX_PARAM_BYTES ? size : FK_MAX_PARAM_BYTES);
			memcpy(c->params, buf, c->nbytes);
		}
	}
}

static void fk_deps(struct fk_call *c, const CUgraphNode *deps, size_t nd)
{
	c->ndeps = nd;
	for (size_t i = 0; i < nd && i < FK_MAX_DEPS; i++)
		c->deps[i] = deps[i];
}

/* ---- contexts --------------------------------------------------------------- */
static CUresult fk_ctx_get_current(CUcontext *pctx)
{
	struct fk_call *c = fk_begin(FK_CTX_GET_CURRENT);
	if (pctx)
		*pctx = fk.ctx;
	return fk_end(c);
}

static CUresult fk_ctx_set_current(CUcontext ctx)
{
	struct fk_call *c = fk_begin(FK_CTX_SET_CURRENT);
	(void)ctx;
	return fk_end(c);
}

static CUresult fk_ctx_push(CUcontext ctx)
{
	struct fk_call *c = fk_begin(FK_CTX_PUSH);
	(void)ctx;
	return fk_end(c);
}

static CUresult fk_ctx_pop(CUcontext *pctx)
{
	struct fk_call *c = fk_begin(FK_CTX_POP);
	if (pctx)
		*pctx = fk.ctx;
	return fk_end(c);
}

static CUresult fk_ctx_get_device(CUdevice_v1 *dev)
{
	struct fk_call *c = fk_begin(FK_CTX_GET_DEVICE);
	if (dev)
		*dev = 0;
	return fk_end(c);
}

/* ---- kernels -------------------------------------------------------------------- */
static CUresult fk_param_info(enum fk_fn fn, const void *h, size_t i, size_t *off, size_t *size)
{
	struct fk_call *c = fk_begin(fn);
	c->kernel = h;
	const struct fk_kernel *k = fk_kernel_of(h);
	if (!k)
		return fk_end_rc(c, CUDA_ERROR_INVALID_HANDLE);
	if (i >= k->nparams)
		return fk_end_rc(c, CUDA_ERROR_INVALID_VALUE);
	size_t o = 0;
	for (size_t j = 0; j < i; j++)
		o += k->size[j];
	*off = o;
	*size = k->size[i];
	return fk_end(c);
}

static CUresult fk_func_param_info(CUfunction f, size_t i, size_t *off, size_t *size)
{
	return fk_param_info(FK_FUNC_PARAM_INFO, f, i, off, size);
}

static CUresult fk_kernel_param_info(CUkernel k, size_t i, size_t *off, size_t *size)
{
	return fk_param_info(FK_KERNEL_PARAM_INFO, k, i, off, size);
}

static CUresult fk_name_of(enum fk_fn fn, const char **name, const void *h)
{
	struct fk_call *c = fk_begin(fn);
	c->kernel = h;
	const struct fk_kernel *k = fk_kernel_of(h);
	if (!k || !k->name)
		return fk_end_rc(c, CUDA_ERROR_NOT_FOUND);
	*name = k->name;
	return fk_end(c);
}

static CUresult fk_func_name(const char **name, CUfunction f)
{
	return fk_name_of(FK_FUNC_NAME, name, f);
}

static CUresult fk_kernel_name(const char **name, CUkernel k)
{
	return fk_name_of(FK_KERNEL_NAME, name, k);
}

static CUresult fk_func_attr(int *v, CUfunction_attribute a, CUfunction f)
{
	struct fk_call *c = fk_begin(FK_FUNC_ATTR);
	c->kernel = f;
	const struct fk_kernel *k = fk_kernel_of(f);
	if (!k)
		return fk_end_rc(c, CUDA_ERROR_INVALID_HANDLE);
	*v = a == CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH ? k->cluster : 0;
	return fk_end(c);
}

/* ---- memory ------------------------------------------------------------------------ */
static CUresult fk_pointer_attrs(unsigned n, CUpointer_attribute *at, void **data, CUdeviceptr p)
{
	struct fk_call *c = fk_begin(FK_POINTER_ATTRS);
	c->dst = (uintptr_t)p;
	const struct fk_range *r = NULL;
	for (int i = 0; i < fk.nranges && !r; i++)
		if ((uintptr_t)p >= fk.ranges[i].lo && (uintptr_t)p < fk.ranges[i].hi)
			r = &fk.ranges[i];
	for (unsigned i = 0; i < n; i++) {
		switch (at[i]) {
		case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
			*(unsigned *)data[i] = !r ? 0 : r->host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
			break;
		case CU_POINTER_ATTRIBUTE_IS_MANAGED:
			*(unsigned *)data[i] = 0;
			break;
		case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
			*(int *)data[i] = r ? 0 : -1;
			break;
		default:
			break;
		}
	}
	return fk_end(c);
}

static CUresult fk_mem_alloc_host(void **pp, size_t n)
{
	struct fk_call *c = fk_begin(FK_MEM_ALLOC_HOST);
	c->bytes = n;
	if (c->rc == CUDA_SUCCESS) {
		*pp = malloc(n ? n : 1);
		c->dst = (uintptr_t)*pp;
		if (!*pp)
			c->rc = CUDA_ERROR_OUT_OF_MEMORY;
	}
	return fk_end(c);
}

static CUresult fk_mem_free_host(void *p)
{
	struct fk_call *c = fk_begin(FK_MEM_FREE_HOST);
	c->dst = (uintptr_t)p;
	free(p);
	return fk_end(c);
}

/* ---- streams and events ------------------------------------------------------------- */
static CUresult fk_stream_flags(CUstream s, unsigned *flags)
{
	struct fk_call *c = fk_begin(FK_STREAM_FLAGS);
	c->stream = s;
	*flags = CU_STREAM_DEFAULT;
	for (int i = 0; i < fk.nnonblocking; i++)
		if (fk.nonblocking[i] == s)
			*flags = CU_STREAM_NON_BLOCKING;
	return fk_end(c);
}

static CUresult fk_stream_sync(CUstream s)
{
	struct fk_call *c = fk_begin(FK_STREAM_SYNC);
	c->stream = s;
	return fk_end(c);
}

static CUresult fk_event_create(CUevent *e, unsigned flags)
{
	struct fk_call *c = fk_begin(FK_EVENT_CREATE);
	(void)flags;
	if (c->rc == CUDA_SUCCESS)
		*e = c->event = fk_handle();
	return fk_end(c);
}

static CUresult fk_event_destroy(CUevent e)
{
	struct fk_call *c = fk_begin(FK_EVENT_DESTROY);
	c->event = e;
	return fk_end(c);
}

static CUresult fk_event_record(CUevent e, CUstream s)
{
	struct fk_call *c = fk_begin(FK_EVENT_RECORD);
	c->event = e;
	c->stream = s;
	return fk_end(c);
}

static CUresult fk_event_query(CUevent e)
{
	struct fk_call *c = fk_begin(FK_EVENT_QUERY);
	c->event = e;
	for (int i = 0; i < fk.npending; i++)
		if (fk.pending[i] == e)
			return fk_end_rc(c, CUDA_ERROR_NOT_READY);
	return fk_end(c);
}

static CUresult fk_event_sync(CUevent e)
{
	struct fk_call *c = fk_begin(FK_EVENT_SYNC);
	c->event = e;
	return fk_end(c);
}

static CUresult fk_stream_wait(CUstream s, CUevent e, unsigned flags)
{
	struct fk_call *c = fk_begin(FK_STREAM_WAIT);
	(void)flags;
	c->stream = s;
	c->event = e;
	return fk_end(c);
}

/* ---- graphs ------------------------------------------------------------------------------ */
static CUresult fk_graph_create(CUgraph *g, unsigned flags)
{
	struct fk_call *c = fk_begin(FK_GRAPH_CREATE);
	(void)flags;
	if (c->rc == CUDA_SUCCESS)
		*g = c->graph = fk_handle();
	return fk_end(c);
}

static CUresult fk_graph_destroy(CUgraph g)
{
	struct fk_call *c = fk_begin(FK_GRAPH_DESTROY);
	c->graph = g;
	return fk_end(c);
}

static CUresult fk_node_made(struct fk_call *c, CUgraphNode *node, CUgraph g, const CUgraphNode *deps,
			     size_t nd)
{
	c->graph = g;
	fk_deps(c, deps, nd);
	if (c->rc == CUDA_SUCCESS)
		*node = c->node = fk_handle();
	return fk_end(c);
}

static CUresult fk_graph_add_kernel(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t nd,
				    const CUDA_KERNEL_NODE_PARAMS *p)
{
	struct fk_call *c = fk_begin(FK_GRAPH_ADD_KERNEL);
	fk_params(c, p->kern ? (const void *)p->kern : (const void *)p->func, p->kernelParams, p->extra);
	return fk_node_made(c, node, g, deps, nd);
}

static CUresult fk_graph_kernel_attr(CUgraphNode node, CUkernelNodeAttrID attr, const CUkernelNodeAttrValue *v)
{
	struct fk_call *c = fk_begin(FK_GRAPH_KERNEL_ATTR);
	(void)v;
	c->node = node;
	c->value = (uint32_t)attr;
	return fk_end(c);
}

static void fk_copy_desc(struct fk_call *c, const CUDA_MEMCPY3D *d)
{
	c->dst = d->dstMemoryType == CU_MEMORYTYPE_HOST ? (uintptr_t)d->dstHost : (uintptr_t)d->dstDevice;
	c->src = d->srcMemoryType == CU_MEMORYTYPE_HOST ? (uintptr_t)d->srcHost : (uintptr_t)d->srcDevice;
	c->bytes = d->WidthInBytes * d->Height * d->Depth;
}

static CUresult fk_graph_add_memcpy(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t nd,
				    const CUDA_MEMCPY3D *d, CUcontext ctx)
{
	struct fk_call *c = fk_begin(FK_GRAPH_ADD_MEMCPY);
	(void)ctx;
	fk_copy_desc(c, d);
	return fk_node_made(c, node, g, deps, nd);
}

static CUresult fk_graph_add_memset(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t nd,
				    const CUDA_MEMSET_NODE_PARAMS *p, CUcontext ctx)
{
	struct fk_call *c = fk_begin(FK_GRAPH_ADD_MEMSET);
	(void)ctx;
	c->dst = (uintptr_t)p->dst;
	c->value = p->value;
	c->bytes = p->width * p->elementSize * p->height;
	return fk_node_made(c, node, g, deps, nd);
}

static CUresult fk_graph_add_host(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t nd,
				  const CUDA_HOST_NODE_PARAMS *p)
{
	struct fk_call *c = fk_begin(FK_GRAPH_ADD_HOST);
	c->src = (uintptr_t)p->userData;
	return fk_node_made(c, node, g, deps, nd);
}

static CUresult fk_graph_add_record(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t nd, CUevent e)
{
	struct fk_call *c = fk_begin(FK_GRAPH_ADD_RECORD);
	c->event = e;
	return fk_node_made(c, node, g, deps, nd);
}

static CUresult fk_graph_instantiate(CUgraphExec *exec, CUgraph g, unsigned long long flags)
{
	struct fk_call *c = fk_begin(FK_GRAPH_INSTANTIATE);
	(void)flags;
	c->graph = g;
	if (c->rc == CUDA_SUCCESS)
		*exec = c->exec = fk_handle();
	return fk_end(c);
}

static CUresult fk_exec_destroy(CUgraphExec exec)
{
	struct fk_call *c = fk_begin(FK_EXEC_DESTROY);
	c->exec = exec;
	return fk_end(c);
}

static CUresult fk_exec_set_kernel(CUgraphExec exec, CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS *p)
{
	struct fk_call *c = fk_begin(FK_EXEC_SET_KERNEL);
	c->exec = exec;
	c->node = node;
	fk_params(c, p->kern ? (const void *)p->kern : (const void *)p->func, p->kernelParams, p->extra);
	return fk_end(c);
}

static CUresult fk_exec_set_memcpy(CUgraphExec exec, CUgraphNode node, const CUDA_MEMCPY3D *d, CUcontext ctx)
{
	struct fk_call *c = fk_begin(FK_EXEC_SET_MEMCPY);
	(void)ctx;
	c->exec = exec;
	c->node = node;
	fk_copy_desc(c, d);
	return fk_end(c);
}

static CUresult fk_exec_set_memset(CUgraphExec exec, CUgraphNode node, const CUDA_MEMSET_NODE_PARAMS *p,
				   CUcontext ctx)
{
	struct fk_call *c = fk_begin(FK_EXEC_SET_MEMSET);
	(void)ctx;
	c->exec = exec;
	c->node = node;
	c->dst = (uintptr_t)p->dst;
	c->value = p->value;
	return fk_end(c);
}

static CUresult fk_exec_set_host(CUgraphExec exec, CUgraphNode node, const CUDA_HOST_NODE_PARAMS *p)
{
	struct fk_call *c = fk_begin(FK_EXEC_SET_HOST);
	c->exec = exec;
	c->node = node;
	c->src = (uintptr_t)p->userData;
	return fk_end(c);
}

static CUresult fk_graph_launch(CUgraphExec exec, CUstream s)
{
	struct fk_call *c = fk_begin(FK_GRAPH_LAUNCH);
	c->exec = exec;
	c->stream = s;
	return fk_end(c);
}

/* ---- eager work -------------------------------------------------------------------------- */
static CUresult fk_launch_kernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
				 unsigned bz, unsigned shmem, CUstream s, void **params, void **extra)
{
	struct fk_call *c = fk_begin(FK_LAUNCH_KERNEL);
	(void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)shmem;
	c->stream = s;
	fk_params(c, f, params, extra);
	return fk_end(c);
}

static CUresult fk_launch_kernel_ex(const CUlaunchConfig *cfg, CUfunction f, void **params, void **extra)
{
	struct fk_call *c = fk_begin(FK_LAUNCH_KERNEL_EX);
	c->stream = cfg->hStream;
	c->value = cfg->numAttrs;
	fk_params(c, f, params, extra);
	return fk_end(c);
}

static CUresult fk_memcpy_async(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
	struct fk_call *c = fk_begin(FK_MEMCPY_ASYNC);
	c->dst = (uintptr_t)dst;
	c->src = (uintptr_t)src;
	c->bytes = n;
	c->stream = s;
	return fk_end(c);
}

static CUresult fk_memcpy3d_async(const CUDA_MEMCPY3D *d, CUstream s)
{
	struct fk_call *c = fk_begin(FK_MEMCPY3D_ASYNC);
	fk_copy_desc(c, d);
	c->stream = s;
	return fk_end(c);
}

static CUresult fk_memset(CUdeviceptr dst, uint32_t v, size_t elem, size_t w, size_t h, CUstream s)
{
	struct fk_call *c = fk_begin(FK_MEMSET_ASYNC);
	c->dst = (uintptr_t)dst;
	c->value = v;
	c->bytes = elem * w * h;
	c->stream = s;
	return fk_end(c);
}

static CUresult fk_memset8(CUdeviceptr d, unsigned char v, size_t n, CUstream s)
{
	return fk_memset(d, v, 1, n, 1, s);
}
static CUresult fk_memset16(CUdeviceptr d, unsigned short v, size_t n, CUstream s)
{
	return fk_memset(d, v, 2, n, 1, s);
}
static CUresult fk_memset32(CUdeviceptr d, unsigned v, size_t n, CUstream s)
{
	return fk_memset(d, v, 4, n, 1, s);
}
static CUresult fk_memset2d8(CUdeviceptr d, size_t p, unsigned char v, size_t w, size_t h, CUstream s)
{
	(void)p;
	return fk_memset(d, v, 1, w, h, s);
}
static CUresult fk_memset2d16(CUdeviceptr d, size_t p, unsigned short v, size_t w, size_t h, CUstream s)
{
	(void)p;
	return fk_memset(d, v, 2, w, h, s);
}
static CUresult fk_memset2d32(CUdeviceptr d, size_t p, unsigned v, size_t w, size_t h, CUstream s)
{
	(void)p;
	return fk_memset(d, v, 4, w, h, s);
}

static CUresult fk_host_func(CUstream s, CUhostFn fn, void *data)
{
	struct fk_call *c = fk_begin(FK_HOST_FUNC);
	(void)fn;
	c->stream = s;
	c->src = (uintptr_t)data;
	return fk_end(c);
}

/* ---- the runtime's two helpers ------------------------------------------------------------- */
/* A stub is its own kernel handle here: declare it with fk_kernel(). */
static cudaError_t fk_rt_get_kernel(cudaKernel_t *k, const void *stub)
{
	struct fk_call *c = fk_begin(FK_RT_GET_KERNEL);
	c->kernel = stub;
	int known = fk_kernel_of(stub) != NULL;
	if (known)
		*k = (cudaKernel_t)stub;
	fk_end_rc(c, known ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE);
	return known ? cudaSuccess : cudaErrorInvalidDeviceFunction;
}

static cudaError_t fk_rt_symbol_address(void **p, const void *symbol)
{
	struct fk_call *c = fk_begin(FK_RT_SYMBOL_ADDRESS);
	(void)p;
	c->src = (uintptr_t)symbol;
	fk_end_rc(c, CUDA_ERROR_NOT_FOUND);
	return cudaErrorInvalidSymbol;
}

const struct cg_backend fk_backend = {
	.ctx_get_current = fk_ctx_get_current,
	.ctx_set_current = fk_ctx_set_current,
	.ctx_push = fk_ctx_push,
	.ctx_pop = fk_ctx_pop,
	.ctx_get_device = fk_ctx_get_device,
	.func_param_info = fk_func_param_info,
	.kernel_param_info = fk_kernel_param_info,
	.func_attr = fk_func_attr,
	.func_name = fk_func_name,
	.kernel_name = fk_kernel_name,
	.pointer_attrs = fk_pointer_attrs,
	.mem_alloc_host = fk_mem_alloc_host,
	.mem_free_host = fk_mem_free_host,
	.stream_flags = fk_stream_flags,
	.stream_sync = fk_stream_sync,
	.event_create = fk_event_create,
	.event_destroy = fk_event_destroy,
	.event_record = fk_event_record,
	.event_query = fk_event_query,
	.event_sync = fk_event_sync,
	.stream_wait = fk_stream_wait,
	.graph_create = fk_graph_create,
	.graph_destroy = fk_graph_destroy,
	.graph_add_kernel = fk_graph_add_kernel,
	.graph_kernel_attr = fk_graph_kernel_attr,
	.graph_add_memcpy = fk_graph_add_memcpy,
	.graph_add_memset = fk_graph_add_memset,
	.graph_add_host = fk_graph_add_host,
	.graph_add_record = fk_graph_add_record,
	.graph_instantiate = fk_graph_instantiate,
	.exec_destroy = fk_exec_destroy,
	.exec_set_kernel = fk_exec_set_kernel,
	.exec_set_memcpy = fk_exec_set_memcpy,
	.exec_set_memset = fk_exec_set_memset,
	.exec_set_host = fk_exec_set_host,
	.graph_launch = fk_graph_launch,
	.launch_kernel = fk_launch_kernel,
	.launch_kernel_ex = fk_launch_kernel_ex,
	.memcpy_async = fk_memcpy_async,
	.memcpy3d_async = fk_memcpy3d_async,
	.memset8_async = fk_memset8,
	.memset16_async = fk_memset16,
	.memset32_async = fk_memset32,
	.memset2d8_async = fk_memset2d8,
	.memset2d16_async = fk_memset2d16,
	.memset2d32_async = fk_memset2d32,
	.host_func = fk_host_func,
	.rt_get_kernel = fk_rt_get_kernel,
	.rt_symbol_address = fk_rt_symbol_address,
};

/* ---- declarations ------------------------------------------------------------------------------ */
void fk_reset(void)
{
	pthread_mutex_lock(&fk_mu);
	fk.n = 0;
	fk.nkernels = 0;
	fk.nranges = 0;
	fk.nnonblocking = 0;
	fk.npending = 0;
	fk.ctx = FK_CTX;
	memset(fk.fail, 0, sizeof fk.fail);
	pthread_mutex_unlock(&fk_mu);
}

void fk_install(void)
{
	fk_reset();
	cg_backend_set(&fk_backend);
}

void fk_kernel(const void *handle, uint32_t nparams, const uint32_t *sizes, const char *name)
{
	pthread_mutex_lock(&fk_mu);
	struct fk_kernel *k = NULL;
	for (int i = 0; i < fk.nkernels && !k; i++)
		if (fk.kernels[i].handle == handle)
			k = &fk.kernels[i];
	if (!k) {
		if (fk.nkernels == FK_MAX_KERNELS)
			abort();
		k = &fk.kernels[fk.nkernels++];
	}
	k->handle = handle;
	k->cluster = 0;
	k->nparams = nparams < 64 ? nparams : 64;
	for (uint32_t i = 0; i < k->nparams; i++)
		k->size[i] = sizes[i];
	k->name = name;
	pthread_mutex_unlock(&fk_mu);
}

static void fk_range(uintptr_t lo, size_t n, int host)
{
	pthread_mutex_lock(&fk_mu);
	if (fk.nranges == FK_MAX_RANGES)
		abort();
	fk.ranges[fk.nranges++] = (struct fk_range){ lo, lo + n, host };
	pthread_mutex_unlock(&fk_mu);
}

void fk_device_range(uintptr_t lo, size_t n)
{
	fk_range(lo, n, 0);
}

void fk_host_range(uintptr_t lo, size_t n)
{
	fk_range(lo, n, 1);
}

void fk_stream_nonblocking(CUstream s)
{
	pthread_mutex_lock(&fk_mu);
	if (fk.nnonblocking == FK_MAX_STREAMS)
		abort();
	fk.nonblocking[fk.nnonblocking++] = s;
	pthread_mutex_unlock(&fk_mu);
}

void fk_event_pending(CUevent e, int pending)
{
	pthread_mutex_lock(&fk_mu);
	int i;
	for (i = 0; i < fk.npending && fk.pending[i] != e; i++)
		;
	if (pending && i == fk.npending && fk.npending < FK_MAX_EVENTS)
		fk.pending[fk.npending++] = e;
	else if (!pending && i < fk.npending)
		fk.pending[i] = fk.pending[--fk.npending];
	pthread_mutex_unlock(&fk_mu);
}

void fk_set_ctx(CUcontext c)
{
	pthread_mutex_lock(&fk_mu);
	fk.ctx = c;
	pthread_mutex_unlock(&fk_mu);
}

void fk_fail(enum fk_fn fn, CUresult rc, int n)
{
	fk_fail_after(fn, rc, 0, n);
}

void fk_fail_after(enum fk_fn fn, CUresult rc, int skip, int n)
{
	pthread_mutex_lock(&fk_mu);
	fk.fail[fn].rc = rc;
	fk.fail[fn].skip = skip;
	fk.fail[fn].n = n;
	pthread_mutex_unlock(&fk_mu);
}

/* ---- the program's calls ---------------------------------------------------------------------------- */
void fk_app(const struct cg_op *op, int tag)
{
	struct fk_call *c = fk_begin(FK_APP);
	c->tag = tag;
	c->stream = op->stream;
	switch (op->kind) {
	case CG_OP_KERNEL: {
		/* The layout may not be looked up yet (the engine does that). */
		const void *h = op->u.k.ki ? op->u.k.ki->handle : op->u.k.key;
		if (op->flags & CG_F_PACKED) {
			c->kernel = h;
			c->nbytes = op->nbytes < FK_MAX_PARAM_BYTES ? op->nbytes : FK_MAX_PARAM_BYTES;
			memcpy(c->params, op->u.k.extra, c->nbytes);
		} else {
			fk_params(c, h, op->u.k.args, NULL);
		}
		break;
	}
	case CG_OP_COPY:
		c->dst = (uintptr_t)op->u.cp.dst;
		c->src = (uintptr_t)op->u.cp.src;
		c->bytes = op->u.cp.width * op->u.cp.height * op->u.cp.depth;
		break;
	case CG_OP_MEMSET:
		c->dst = (uintptr_t)op->u.ms.dst;
		c->value = op->u.ms.value;
		break;
	case CG_OP_RECORD:
	case CG_OP_WAIT:
		c->event = op->u.ev.event;
		break;
	case CG_OP_HOST:
		c->src = (uintptr_t)op->u.host.data;
		break;
	default:
		break;
	}
	fk_end(c);
}

/* ---- the log --------------------------------------------------------------------------------------------- */
size_t fk_mark(void)
{
	pthread_mutex_lock(&fk_mu);
	size_t n = fk.n;
	pthread_mutex_unlock(&fk_mu);
	return n;
}

void fk_clear(void)
{
	pthread_mutex_lock(&fk_mu);
	fk.n = 0;
	pthread_mutex_unlock(&fk_mu);
}

struct fk_call fk_at(size_t i)
{
	pthread_mutex_lock(&fk_mu);
	struct fk_call c;
	if (i < fk.n) {
		c = fk.log[i];
	} else {
		memset(&c, 0, sizeof c);
		c.fn = FK_COUNT;
	}
	pthread_mutex_unlock(&fk_mu);
	return c;
}

size_t fk_count(enum fk_fn fn, size_t from)
{
	pthread_mutex_lock(&fk_mu);
	size_t k = 0;
	for (size_t i = from; i < fk.n; i++)
		k += fk.log[i].fn == fn;
	pthread_mutex_unlock(&fk_mu);
	return k;
}

long fk_nth(enum fk_fn fn, size_t from, size_t k)
{
	pthread_mutex_lock(&fk_mu);
	long at = -1;
	for (size_t i = from; i < fk.n; i++)
		if (fk.log[i].fn == fn && k-- == 0) {
			at = (long)i;
			break;
		}
	pthread_mutex_unlock(&fk_mu);
	return at;
}

struct fk_call fk_get(enum fk_fn fn, size_t from, size_t k)
{
	long i = fk_nth(fn, from, k);
	if (i < 0) {
		fk_dump(from);
		fail_msg("no %s #%zu in the fake log from entry %zu", fk_name(fn), k, from);
	}
	return fk_at((size_t)i);
}

void fk_dump(size_t from)
{
	pthread_mutex_lock(&fk_mu);
	for (size_t i = from; i < fk.n; i++) {
		const struct fk_call *c = &fk.log[i];
		if (c->fn == FK_CTX_GET_CURRENT || c->fn == FK_POINTER_ATTRS || c->fn == FK_CTX_GET_DEVICE)
			continue;
		fprintf(stderr, "  [%zu] %s stream=%p kernel=%p exec=%p event=%p node=%p ndeps=%zu nbytes=%u tag=%d rc=%d\n",
			i, fk_name(c->fn), (void *)c->stream, c->kernel, (void *)c->exec, (void *)c->event,
			(void *)c->node, c->ndeps, c->nbytes, c->tag, (int)c->rc);
	}
	pthread_mutex_unlock(&fk_mu);
}

void fk_kernel_cluster(const void *handle, int width)
{
	pthread_mutex_lock(&fk_mu);
	for (int i = 0; i < fk.nkernels; i++)
		if (fk.kernels[i].handle == handle)
			fk.kernels[i].cluster = width;
	pthread_mutex_unlock(&fk_mu);
}
