/* The calls with their own handling: event queries and waits that need not
 * end a segment, the program's own capture, handles that go away, device
 * and context switches, kernel attributes, and host memory kernels reach. */
#include <pthread.h>
#include <string.h>

#include "backend.h"
#include "log.h"
#include "special.h"

static int cg_on(void)
{
	return atomic_load_explicit(&cg_hot.engine_on, memory_order_relaxed);
}

/* ---- events ----------------------------------------------------------------- */
/* A query of an event held work does not record sees what it would see
 * eagerly: the held work comes after it in every stream. */
static void cg_events_looked_at(int entry, CUevent a, CUevent b)
{
	if (cg_on() && !(cg_engine_event_independent(a) && (!b || cg_engine_event_independent(b))))
		cg_engine_boundary(entry, CG_K_SYNC, CG_WHY_UNSUPPORTED_API);
}

/* A wait on such an event is not wrong either, but the held work would idle
 * while the host blocks: it goes out unless the event is already complete. */
static void cg_event_waited(int entry, CUevent e)
{
	if (!cg_on())
		return;
	if (!cg_engine_event_independent(e) || (cg_backend_ready() == 0 && CG_BK(event_query, e) != CUDA_SUCCESS))
		cg_engine_boundary(entry, CG_K_SYNC, CG_WHY_UNSUPPORTED_API);
}

/* ---- stream synchronisation -------------------------------------------------- */
int cg_wait_cuStreamSynchronize(int entry, int pt, CUstream s)
{
	if (!cg_on())
		return 0;
	return cg_engine_stream_sync(entry, cg_stream_explicit(s, pt));
}

int cg_wait_rt_stream_sync(int entry, int pt, cudaStream_t s)
{
	return cg_wait_cuStreamSynchronize(entry, pt, (CUstream)s);
}

void cg_pre_rt_event_query(int entry, int pt, cudaEvent_t e)
{
	(void)pt;
	cg_events_looked_at(entry, (CUevent)e, NULL);
}

void cg_pre_rt_event_sync(int entry, int pt, cudaEvent_t e)
{
	(void)pt;
	cg_event_waited(entry, (CUevent)e);
}

void cg_pre_rt_event_elapsed(int entry, int pt, float *ms, cudaEvent_t a, cudaEvent_t b)
{
	(void)pt, (void)ms;
	cg_events_looked_at(entry, (CUevent)a, (CUevent)b);
}

void cg_pre_cuEventQuery(int entry, int pt, CUevent e)
{
	(void)pt;
	cg_events_looked_at(entry, e, NULL);
}

void cg_pre_cuEventSynchronize(int entry, int pt, CUevent e)
{
	(void)pt;
	cg_event_waited(entry, e);
}

void cg_pre_cuEventElapsedTime_v2(int entry, int pt, float *ms, CUevent a, CUevent b)
{
	(void)pt, (void)ms;
	cg_events_looked_at(entry, a, b);
}

/* ---- the program's own capture: cgraft stands aside ------------------------------ */
static void cg_capture_pre(int entry)
{
	cg_capture_begin(entry);
}

static void cg_capture_post(int rc)
{
	if (rc != 0)
		cg_capture_end();
}

void cg_pre_rt_capture_begin(int entry, int pt, cudaStream_t s, enum cudaStreamCaptureMode mode)
{
	(void)pt, (void)s, (void)mode;
	cg_capture_pre(entry);
}

void cg_post_rt_capture_begin(int entry, int pt, int rc, cudaStream_t s, enum cudaStreamCaptureMode mode)
{
	(void)entry, (void)pt, (void)s, (void)mode;
	cg_capture_post(rc);
}

void cg_pre_rt_capture_begin_to_graph(int entry, int pt, cudaStream_t s, cudaGraph_t g,
				      const cudaGraphNode_t *deps, const cudaGraphEdgeData *edges, size_t n,
				      enum cudaStreamCaptureMode mode)
{
	(void)pt, (void)s, (void)g, (void)deps, (void)edges, (void)n, (void)mode;
	cg_capture_pre(entry);
}

void cg_post_rt_capture_begin_to_graph(int entry, int pt, int rc, cudaStream_t s, cudaGraph_t g,
				       const cudaGraphNode_t *deps, const cudaGraphEdgeData *edges, size_t n,
				       enum cudaStreamCaptureMode mode)
{
	(void)entry, (void)pt, (void)s, (void)g, (void)deps, (void)edges, (void)n, (void)mode;
	cg_capture_post(rc);
}

/* Even a failed end closes the capture. */
void cg_post_rt_capture_end(int entry, int pt, int rc, cudaStream_t s, cudaGraph_t *g)
{
	(void)entry, (void)pt, (void)rc, (void)s, (void)g;
	cg_capture_end();
}

void cg_pre_cuStreamBeginCapture_v2(int entry, int pt, CUstream s, CUstreamCaptureMode mode)
{
	(void)pt, (void)s, (void)mode;
	cg_capture_pre(entry);
}

void cg_post_cuStreamBeginCapture_v2(int entry, int pt, int rc, CUstream s, CUstreamCaptureMode mode)
{
	(void)entry, (void)pt, (void)s, (void)mode;
	cg_capture_post(rc);
}

void cg_pre_cuStreamBeginCaptureToGraph(int entry, int pt, CUstream s, CUgraph g, const CUgraphNode *deps,
					const CUgraphEdgeData *edges, size_t n, CUstreamCaptureMode mode)
{
	(void)pt, (void)s, (void)g, (void)deps, (void)edges, (void)n, (void)mode;
	cg_capture_pre(entry);
}

void cg_post_cuStreamBeginCaptureToGraph(int entry, int pt, int rc, CUstream s, CUgraph g,
					 const CUgraphNode *deps, const CUgraphEdgeData *edges, size_t n,
					 CUstreamCaptureMode mode)
{
	(void)entry, (void)pt, (void)s, (void)g, (void)deps, (void)edges, (void)n, (void)mode;
	cg_capture_post(rc);
}

void cg_post_cuStreamEndCapture(int entry, int pt, int rc, CUstream s, CUgraph *g)
{
	(void)entry, (void)pt, (void)rc, (void)s, (void)g;
	cg_capture_end();
}

/* ---- the program's graphs ----------------------------------------------------- */
/* A node that waits for memory or a semaphore, or of a type newer than
 * cgraft (unknown: a wait), is a memory wait once the graph is launched
 * (CG_K_MWAIT). The driver's and the runtime's types have the same values. */
static void cg_graph_node_added(int entry, int type)
{
	if (type == CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT || type == CU_GRAPH_NODE_TYPE_BATCH_MEM_OP ||
	    type > CU_GRAPH_NODE_TYPE_CONDITIONAL)
		cg_engine_boundary(entry, CG_K_MWAIT, CG_WHY_UNSUPPORTED_API);
}

void cg_pre_rt_graph_add_node(int entry, int pt, cudaGraphNode_t *n, cudaGraph_t g, const cudaGraphNode_t *deps,
			      const cudaGraphEdgeData *edges, size_t nd, struct cudaGraphNodeParams *p)
{
	(void)pt, (void)n, (void)g, (void)deps, (void)edges, (void)nd;
	if (p)
		cg_graph_node_added(entry, (int)p->type);
}

void cg_pre_cuGraphAddNode(int entry, int pt, CUgraphNode *n, CUgraph g, const CUgraphNode *deps, size_t nd,
			   CUgraphNodeParams *p)
{
	(void)pt, (void)n, (void)g, (void)deps, (void)nd;
	if (p)
		cg_graph_node_added(entry, (int)p->type);
}

void cg_pre_cuGraphAddNode_v2(int entry, int pt, CUgraphNode *n, CUgraph g, const CUgraphNode *deps,
			      const CUgraphEdgeData *edges, size_t nd, CUgraphNodeParams *p)
{
	(void)pt, (void)n, (void)g, (void)deps, (void)edges, (void)nd;
	if (p)
		cg_graph_node_added(entry, (int)p->type);
}

/* ---- handles, devices, contexts ------------------------------------------------- */
/* A destroyed handle may come back as another object: graphs naming it go. */
void cg_pre_rt_stream_destroy(int entry, int pt, cudaStream_t s)
{
	(void)pt;
	cg_engine_forget_handle(entry, (CUstream)s, NULL);
}

void cg_pre_rt_event_destroy(int entry, int pt, cudaEvent_t e)
{
	(void)pt;
	cg_engine_forget_handle(entry, NULL, (CUevent)e);
}

void cg_pre_cuStreamDestroy_v2(int entry, int pt, CUstream s)
{
	cg_pre_rt_stream_destroy(entry, pt, (cudaStream_t)s);
}

void cg_pre_cuEventDestroy_v2(int entry, int pt, CUevent e)
{
	cg_pre_rt_event_destroy(entry, pt, (cudaEvent_t)e);
}

/* ---- events other processes share ------------------------------------------------- */
/* Noted as made or opened, forgotten once destroyed (its handle may come
 * back as an event of this process alone). The driver's event flags are
 * the runtime's. */
void cg_post_rt_event_create_flags(int entry, int pt, int rc, cudaEvent_t *e, unsigned int flags)
{
	(void)entry, (void)pt;
	if (rc == 0 && e && *e && (flags & cudaEventInterprocess))
		cg_op_event_shared((CUevent)*e, 1);
}

void cg_post_cuEventCreate(int entry, int pt, int rc, CUevent *e, unsigned int flags)
{
	cg_post_rt_event_create_flags(entry, pt, rc, (cudaEvent_t *)e, flags);
}

void cg_post_rt_ipc_open_event(int entry, int pt, int rc, cudaEvent_t *e, cudaIpcEventHandle_t h)
{
	(void)h;
	cg_post_rt_event_create_flags(entry, pt, rc, e, cudaEventInterprocess);
}

void cg_post_cuIpcOpenEventHandle(int entry, int pt, int rc, CUevent *e, CUipcEventHandle h)
{
	(void)h;
	cg_post_rt_event_create_flags(entry, pt, rc, (cudaEvent_t *)e, cudaEventInterprocess);
}

void cg_post_rt_event_destroy(int entry, int pt, int rc, cudaEvent_t e)
{
	(void)entry, (void)pt;
	if (rc == 0 && e)
		cg_op_event_shared((CUevent)e, 0);
}

void cg_post_cuEventDestroy_v2(int entry, int pt, int rc, CUevent e)
{
	cg_post_rt_event_destroy(entry, pt, rc, (cudaEvent_t)e);
}

/* Naming the current device or context again changes nothing. */
void cg_pre_rt_set_device(int entry, int pt, int device)
{
	(void)pt;
	CUdevice cur;
	if (cg_on() && !(cg_backend_ready() == 0 && CG_BK(ctx_get_device, &cur) == CUDA_SUCCESS && cur == device))
		cg_engine_boundary(entry, CG_K_SYNC, CG_WHY_DEVICE);
}

void cg_pre_cuCtxSetCurrent(int entry, int pt, CUcontext c)
{
	(void)pt;
	CUcontext cur;
	if (cg_on() && !(cg_backend_ready() == 0 && CG_BK(ctx_get_current, &cur) == CUDA_SUCCESS && cur == c))
		cg_engine_boundary(entry, CG_K_SYNC, CG_WHY_DEVICE);
}

void cg_pre_cuCtxPushCurrent_v2(int entry, int pt, CUcontext c)
{
	cg_pre_cuCtxSetCurrent(entry, pt, c);
}

/* Libraries push the current context around their work (cuFFT, cuRAND) and
 * pop it after: a pop that leaves the same context current changes nothing.
 * Which context a pop makes current is known only once it is made; where it
 * is another, the segment ends there with the context popped pushed again,
 * so that held work goes out where it was recorded, as it would have before
 * the pop. One whose context before cannot be told ends the segment first. */
static CG_TLS CUcontext cg_pop_from;
static CG_TLS int cg_pop_known;

void cg_pre_cuCtxPopCurrent_v2(int entry, int pt, CUcontext *pctx)
{
	(void)pt, (void)pctx;
	cg_pop_known = 0;
	if (!cg_on())
		return;
	if (cg_backend_ready() == 0 && CG_BK(ctx_get_current, &cg_pop_from) == CUDA_SUCCESS && cg_pop_from)
		cg_pop_known = 1;
	else
		cg_engine_boundary(entry, CG_K_SYNC, CG_WHY_DEVICE);
}

void cg_post_cuCtxPopCurrent_v2(int entry, int pt, int rc, CUcontext *pctx)
{
	(void)pt, (void)pctx;
	CUcontext now, popped;
	if (!cg_pop_known || rc != CUDA_SUCCESS)
		return;
	cg_pop_known = 0;
	if (CG_BK(ctx_get_current, &now) == CUDA_SUCCESS && now == cg_pop_from)
		return;
	int pushed = CG_BK(ctx_push, cg_pop_from) == CUDA_SUCCESS;
	cg_engine_boundary(entry, CG_K_SYNC, CG_WHY_DEVICE);
	if (pushed)
		CG_BK(ctx_pop, &popped);
}

/* ---- kernel attributes ------------------------------------------------------------ */
/* Raising or lowering a kernel's limits changes which launches succeed: the
 * graphs that may launch it go, so that the next launches are made, and
 * fail, as eagerly (every graph where the kernel is not told apart).
 * Setting a value a kernel already has (PyTorch does before each launch of
 * some kernels) changes nothing. A host stub, the runtime's kernel, a
 * library kernel and a function may name one kernel: values set through
 * the first three are kept by the current context's function of it; a
 * function handle (which may be a kernel cast to one) is kept as it is, and
 * a change through one kind drops the values kept of the other. A kernel
 * whose function cannot be told is a change, after which no value kept is
 * trusted. The attributes that can be set are numbered alike in the
 * runtime and the driver. */
#define CG_ATTR_SLOTS 4096 /* open addressing; a full table is emptied */
enum cg_attr_how { CG_ATTR_STUB, CG_ATTR_FUNC, CG_ATTR_KERNEL };
static struct {
	const void *k; /* NULL: never used; cg_attr_gone: a value no longer kept */
	int attr, value, raw;
} cg_attr_seen[CG_ATTR_SLOTS];
static const char cg_attr_gone_mark;
#define cg_attr_gone ((const void *)&cg_attr_gone_mark)
static pthread_mutex_t cg_attr_lock = PTHREAD_MUTEX_INITIALIZER;
/* From the pre hook to the post hook. */
static CG_TLS struct {
	const void *f;
	int raw, same;
} cg_attr_call;

/* The slot keeping k's attr, else the first free one on its probe, else
 * SIZE_MAX (the table is full). A value no longer kept stays a mark, so
 * that the values after it on a probe are still found, and none of them
 * is found twice. */
static size_t cg_attr_slot(const void *k, int attr)
{
	uint64_t h = ((uint64_t)(uintptr_t)k ^ ((uint64_t)(unsigned)attr << 52)) * 0x9E3779B97F4A7C15ull;
	size_t i = (size_t)(h >> 52) & (CG_ATTR_SLOTS - 1);
	for (size_t n = 0; n < CG_ATTR_SLOTS; n++, i = (i + 1) & (CG_ATTR_SLOTS - 1))
		if (!cg_attr_seen[i].k || (cg_attr_seen[i].k == k && cg_attr_seen[i].attr == attr))
			return i;
	return SIZE_MAX;
}

/* The current context's function of the kernel h names, or NULL; *k its
 * CUkernel where h names one through the runtime or the driver's kernel
 * calls (a function handle may be a kernel cast to one: not told). */
static const void *cg_attr_function(const void *h, enum cg_attr_how how, const void **k)
{
	*k = NULL;
	if (!h || cg_backend_ready())
		return NULL;
	if (how == CG_ATTR_STUB && !(h = cg_backend_stub_kernel(h)))
		return NULL;
	if (how == CG_ATTR_FUNC)
		return h;
	CUfunction f = NULL;
	if (CG_BK(kernel_get_function, &f, (CUkernel)h) != CUDA_SUCCESS)
		return NULL;
	*k = h;
	return f;
}

static void cg_attr_pre(int entry, const void *h, enum cg_attr_how how, int attr, int value)
{
	const void *k;
	const void *f = cg_attr_function(h, how, &k);
	int raw = how == CG_ATTR_FUNC;
	pthread_mutex_lock(&cg_attr_lock);
	size_t i = f ? cg_attr_slot(f, attr) : SIZE_MAX;
	int same = i != SIZE_MAX && cg_attr_seen[i].k == f && cg_attr_seen[i].value == value &&
		   cg_attr_seen[i].raw == raw;
	pthread_mutex_unlock(&cg_attr_lock);
	cg_attr_call.f = f, cg_attr_call.raw = raw, cg_attr_call.same = same;
	if (same)
		return;
	/* A kernel told apart: only the graphs that may launch it go. */
	CUcontext ctx = NULL;
	if (k && CG_BK(ctx_get_current, &ctx) == CUDA_SUCCESS && ctx)
		cg_engine_kernel_changed(entry, k, f, ctx);
	else
		cg_engine_boundary(entry, CG_K_RESET, CG_WHY_RESET);
}

static void cg_attr_post(int rc, int attr, int value)
{
	const void *f = cg_attr_call.f;
	int raw = cg_attr_call.raw;
	pthread_mutex_lock(&cg_attr_lock);
	if (!f && rc == 0) {
		memset(cg_attr_seen, 0, sizeof cg_attr_seen); /* some kernel changed */
	} else if (rc == 0) {
		if (!cg_attr_call.same)
			for (size_t j = 0; j < CG_ATTR_SLOTS; j++)
				if (cg_attr_seen[j].k && cg_attr_seen[j].raw != raw)
					cg_attr_seen[j].k = cg_attr_gone;
		size_t i = cg_attr_slot(f, attr);
		if (i == SIZE_MAX) {
			memset(cg_attr_seen, 0, sizeof cg_attr_seen);
			i = cg_attr_slot(f, attr);
		}
		cg_attr_seen[i].k = f, cg_attr_seen[i].attr = attr, cg_attr_seen[i].value = value;
		cg_attr_seen[i].raw = raw;
	} else if (f) {
		size_t i = cg_attr_slot(f, attr);
		if (i != SIZE_MAX && cg_attr_seen[i].k == f)
			cg_attr_seen[i].k = cg_attr_gone;
	}
	pthread_mutex_unlock(&cg_attr_lock);
}

void cg_pre_rt_func_set_attribute(int entry, int pt, const void *func, enum cudaFuncAttribute attr, int value)
{
	(void)pt;
	cg_attr_pre(entry, func, CG_ATTR_STUB, (int)attr, value);
}

void cg_post_rt_func_set_attribute(int entry, int pt, int rc, const void *func, enum cudaFuncAttribute attr,
				   int value)
{
	(void)entry, (void)pt, (void)func;
	cg_attr_post(rc, (int)attr, value);
}

void cg_pre_cuFuncSetAttribute(int entry, int pt, CUfunction f, CUfunction_attribute attr, int value)
{
	(void)pt;
	cg_attr_pre(entry, f, CG_ATTR_FUNC, (int)attr, value);
}

void cg_post_cuFuncSetAttribute(int entry, int pt, int rc, CUfunction f, CUfunction_attribute attr, int value)
{
	(void)entry, (void)pt, (void)f;
	cg_attr_post(rc, (int)attr, value);
}

/* A kernel's value on another device than the current one is not told. */
void cg_pre_cuKernelSetAttribute(int entry, int pt, CUfunction_attribute attr, int value, CUkernel k,
				 CUdevice dev)
{
	(void)pt;
	CUdevice cur = -1;
	int here = cg_backend_ready() == 0 && CG_BK(ctx_get_device, &cur) == CUDA_SUCCESS && cur == dev;
	cg_attr_pre(entry, here ? (const void *)k : NULL, CG_ATTR_KERNEL, (int)attr, value);
}

void cg_post_cuKernelSetAttribute(int entry, int pt, int rc, CUfunction_attribute attr, int value, CUkernel k,
				  CUdevice dev)
{
	(void)entry, (void)pt, (void)k, (void)dev;
	cg_attr_post(rc, (int)attr, value);
}

/* ---- host memory ---------------------------------------------------------------- */
static void cg_host_memory(const void *p, size_t n)
{
	cg_hostmem_add(p, n);
	cg_engine_host_memory(p, n);
}

#define CG_NOTE_ALLOC(family, ptype, ...) void cg_post_##family(int entry, int pt, int rc, ptype p, __VA_ARGS__)
CG_NOTE_ALLOC(rt_malloc_host, void **, size_t n)
{
	(void)entry, (void)pt;
	if (rc == 0)
		cg_host_memory(*p, n);
}
CG_NOTE_ALLOC(rt_host_alloc, void **, size_t n, unsigned int flags)
{
	(void)entry, (void)pt, (void)flags;
	if (rc == 0)
		cg_host_memory(*p, n);
}
CG_NOTE_ALLOC(rt_host_register, void *, size_t n, unsigned int flags)
{
	(void)entry, (void)pt, (void)flags;
	if (rc == 0)
		cg_host_memory(p, n);
}
CG_NOTE_ALLOC(rt_malloc_managed, void **, size_t n, unsigned int flags)
{
	(void)entry, (void)pt, (void)flags;
	if (rc == 0)
		cg_host_memory(*p, n);
}
CG_NOTE_ALLOC(cuMemAllocHost_v2, void **, size_t n)
{
	(void)entry, (void)pt;
	if (rc == 0)
		cg_host_memory(*p, n);
}
CG_NOTE_ALLOC(cuMemHostAlloc, void **, size_t n, unsigned int flags)
{
	(void)entry, (void)pt, (void)flags;
	if (rc == 0)
		cg_host_memory(*p, n);
}
CG_NOTE_ALLOC(cuMemHostRegister_v2, void *, size_t n, unsigned int flags)
{
	(void)entry, (void)pt, (void)flags;
	if (rc == 0)
		cg_host_memory(p, n);
}
CG_NOTE_ALLOC(cuMemAllocManaged, CUdeviceptr *, size_t n, unsigned int flags)
{
	(void)entry, (void)pt, (void)flags;
	if (rc == 0)
		cg_host_memory((void *)(uintptr_t)*p, n);
}

static void cg_pool_post(int rc, const void *p, size_t n)
{
	if (rc == 0 && cg_mem_is_host(p))
		cg_host_memory(p, n);
}

void cg_post_rt_malloc_from_pool(int entry, int pt, int rc, void **p, size_t n, cudaMemPool_t pool, cudaStream_t s)
{
	(void)entry, (void)pt, (void)pool, (void)s;
	cg_pool_post(rc, rc == 0 ? *p : NULL, n);
}

void cg_post_cuMemAllocFromPoolAsync(int entry, int pt, int rc, CUdeviceptr *p, size_t n, CUmemoryPool pool,
				     CUstream s)
{
	(void)entry, (void)pt, (void)pool, (void)s;
	cg_pool_post(rc, rc == 0 ? (const void *)(uintptr_t)*p : NULL, n);
}

/* Virtual memory mapped: host memory where the handle's memory is not on a
 * device, or where the driver does not say. */
void cg_post_cuMemMap(int entry, int pt, int rc, CUdeviceptr p, size_t n, size_t off, CUmemGenericAllocationHandle h,
		      unsigned long long flags)
{
	(void)entry, (void)pt, (void)off, (void)flags;
	if (rc != 0)
		return;
	CUmemAllocationProp prop;
	memset(&prop, 0, sizeof prop);
	CUresult q = CG_BK(alloc_props, &prop, h);
	if (q == CUDA_SUCCESS && prop.location.type == CU_MEM_LOCATION_TYPE_DEVICE)
		return;
	cg_debug("memory mapped at %#llx (%zu bytes) %s: host memory", (unsigned long long)p, n,
		 q == CUDA_SUCCESS ? "lives on the host" : "has no properties the driver tells");
	cg_host_memory((const void *)(uintptr_t)p, n);
}

/* Frees synchronise: held work goes out, the memory is no longer host
 * memory a kernel can reach, and the graphs whose copies or memsets name its
 * allocation go (host: a free of host memory). */
static void cg_freed(int entry, const void *p, int host)
{
	if (cg_on())
		cg_engine_boundary(entry, CG_K_SYNC, CG_WHY_UNSUPPORTED_API);
	if (!p)
		return;
	size_t n = 0;
	int noted = cg_hostmem_remove(p, &n);
	cg_engine_memory_freed(p, noted ? n : 0, host);
}

void cg_pre_rt_host_unregister(int entry, int pt, void *p)
{
	(void)pt;
	cg_freed(entry, p, 1);
}

void cg_pre_rt_free_host(int entry, int pt, void *p)
{
	(void)pt;
	cg_freed(entry, p, 1);
}

void cg_pre_rt_free(int entry, int pt, void *p)
{
	(void)pt;
	cg_freed(entry, p, 0);
}

void cg_pre_cuMemHostUnregister(int entry, int pt, void *p)
{
	(void)pt;
	cg_freed(entry, p, 1);
}

void cg_pre_cuMemFreeHost(int entry, int pt, void *p)
{
	(void)pt;
	cg_freed(entry, p, 1);
}

void cg_pre_cuMemFree_v2(int entry, int pt, CUdeviceptr p)
{
	(void)pt;
	cg_freed(entry, (const void *)(uintptr_t)p, 0);
}

/* A free in stream order, or an unmap: not held, so it ends the segment as
 * a call not modelled does, counted as such a free; then what names the
 * memory goes, as after a free (n: the range, where the call says it). */
static void cg_freed_unheld(int entry, const void *p, size_t n)
{
	if (cg_on())
		cg_engine_boundary(entry, CG_K_BND, CG_WHY_FREE_UNHELD);
	if (!p)
		return;
	size_t noted = 0;
	int host = cg_hostmem_remove(p, &noted);
	cg_engine_memory_freed(p, host ? noted : n, host);
}

/* A free in stream order of device memory: held back behind held work, or
 * made now with the segment going on, where the engine can (1: the call is
 * answered); else as any free that is not held. */
int cg_wait_cuMemFreeAsync(int entry, int pt, CUdeviceptr p, CUstream s)
{
	const void *a = (const void *)(uintptr_t)p, *start;
	size_t n;
	if (!cg_on() || !a || cg_hostmem_has(a) || cg_mem_device_range(a, &start, &n)) {
		if (cg_on())
			cg_debug("free in stream order of %p: not device memory whose allocation starts there", a);
		cg_freed_unheld(entry, a, 0);
		return 0;
	}
	int rc = cg_engine_free_async(a, n, cg_stream_explicit(s, pt));
	if (rc < 0)
		cg_freed_unheld(entry, a, n);
	return rc > 0;
}

int cg_wait_rt_free_async(int entry, int pt, void *p, cudaStream_t s)
{
	return cg_wait_cuMemFreeAsync(entry, pt, (CUdeviceptr)(uintptr_t)p, (CUstream)s);
}

void cg_pre_cuMemPoolGetAttribute(int entry, int pt, CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
	(void)pt, (void)pool, (void)attr, (void)value;
	if (cg_on())
		cg_engine_frees_seen(entry);
}

void cg_pre_rt_pool_get_attr(int entry, int pt, cudaMemPool_t pool, enum cudaMemPoolAttr attr, void *value)
{
	cg_pre_cuMemPoolGetAttribute(entry, pt, (CUmemoryPool)pool, (CUmemPool_attribute)attr, value);
}

void cg_pre_cuMemUnmap(int entry, int pt, CUdeviceptr p, size_t n)
{
	(void)pt;
	cg_freed_unheld(entry, (const void *)(uintptr_t)p, n ? n : 1);
}

void cg_pre_cuMemAddressFree(int entry, int pt, CUdeviceptr p, size_t n)
{
	(void)pt;
	cg_freed_unheld(entry, (const void *)(uintptr_t)p, n ? n : 1);
}
