/* The calls with their own handling (SPC in shim/cuda_api.def): what each does
 * before the real call (end the segment, forget handles) and after it
 * (remember host memory, stand aside for the program's capture). The shim
 * makes the real call between the two. */
#ifndef CG_SPECIAL_H
#define CG_SPECIAL_H

#include "engine.h"

#define CG_PRE(family, ...) void cg_pre_##family(int entry, int pt, __VA_ARGS__) CG_HIDDEN
#define CG_POST(family, ...) void cg_post_##family(int entry, int pt, int rc, __VA_ARGS__) CG_HIDDEN
/* Families with nothing to do after (or before) the call. */
#define CG_NOTHING(...) ((void)0)

/* Events: a segment end only where held work records them. */
CG_PRE(rt_event_query, cudaEvent_t e);
#define cg_post_rt_event_query CG_NOTHING
CG_PRE(rt_event_sync, cudaEvent_t e);
#define cg_post_rt_event_sync CG_NOTHING
CG_PRE(rt_event_elapsed, float *ms, cudaEvent_t a, cudaEvent_t b);
#define cg_post_rt_event_elapsed CG_NOTHING
CG_PRE(cuEventQuery, CUevent e);
#define cg_post_cuEventQuery CG_NOTHING
CG_PRE(cuEventSynchronize, CUevent e);
#define cg_post_cuEventSynchronize CG_NOTHING
CG_PRE(cuEventElapsedTime_v2, float *ms, CUevent a, CUevent b);
#define cg_post_cuEventElapsedTime_v2 CG_NOTHING

/* Whether a WAIT family's real call is a wait, not timed as the call's cost
 * (shim.c): a synchronisation's is, a free's is not. */
#define CG_WAIT_UNTIMED_rt_stream_sync 1
#define CG_WAIT_UNTIMED_cuStreamSynchronize 1
#define CG_WAIT_UNTIMED_rt_free_async 0
#define CG_WAIT_UNTIMED_cuMemFreeAsync 0

/* A stream synchronisation: 1 where it is answered without the real call. */
int cg_wait_rt_stream_sync(int entry, int pt, cudaStream_t s) CG_HIDDEN;
int cg_wait_cuStreamSynchronize(int entry, int pt, CUstream s) CG_HIDDEN;

/* The program's own capture. */
CG_PRE(rt_capture_begin, cudaStream_t s, enum cudaStreamCaptureMode mode);
CG_POST(rt_capture_begin, cudaStream_t s, enum cudaStreamCaptureMode mode);
CG_PRE(rt_capture_begin_to_graph, cudaStream_t s, cudaGraph_t g, const cudaGraphNode_t *deps,
       const cudaGraphEdgeData *edges, size_t n, enum cudaStreamCaptureMode mode);
CG_POST(rt_capture_begin_to_graph, cudaStream_t s, cudaGraph_t g, const cudaGraphNode_t *deps,
	const cudaGraphEdgeData *edges, size_t n, enum cudaStreamCaptureMode mode);
#define cg_pre_rt_capture_end CG_NOTHING
CG_POST(rt_capture_end, cudaStream_t s, cudaGraph_t *g);
CG_PRE(cuStreamBeginCapture_v2, CUstream s, CUstreamCaptureMode mode);
CG_POST(cuStreamBeginCapture_v2, CUstream s, CUstreamCaptureMode mode);
CG_PRE(cuStreamBeginCaptureToGraph, CUstream s, CUgraph g, const CUgraphNode *deps, const CUgraphEdgeData *edges,
       size_t n, CUstreamCaptureMode mode);
CG_POST(cuStreamBeginCaptureToGraph, CUstream s, CUgraph g, const CUgraphNode *deps,
	const CUgraphEdgeData *edges, size_t n, CUstreamCaptureMode mode);
#define cg_pre_cuStreamEndCapture CG_NOTHING
CG_POST(cuStreamEndCapture, CUstream s, CUgraph *g);

/* Handles, devices and contexts. */
CG_PRE(rt_stream_destroy, cudaStream_t s);
#define cg_post_rt_stream_destroy CG_NOTHING
CG_PRE(rt_event_destroy, cudaEvent_t e);
CG_POST(rt_event_destroy, cudaEvent_t e);
CG_PRE(cuStreamDestroy_v2, CUstream s);
#define cg_post_cuStreamDestroy_v2 CG_NOTHING
CG_PRE(cuEventDestroy_v2, CUevent e);
CG_POST(cuEventDestroy_v2, CUevent e);
/* Events other processes share: noted as made or opened. */
#define cg_pre_rt_event_create_flags CG_NOTHING
CG_POST(rt_event_create_flags, cudaEvent_t *e, unsigned int flags);
#define cg_pre_cuEventCreate CG_NOTHING
CG_POST(cuEventCreate, CUevent *e, unsigned int flags);
#define cg_pre_rt_ipc_open_event CG_NOTHING
CG_POST(rt_ipc_open_event, cudaEvent_t *e, cudaIpcEventHandle_t h);
#define cg_pre_cuIpcOpenEventHandle CG_NOTHING
CG_POST(cuIpcOpenEventHandle, CUevent *e, CUipcEventHandle h);
CG_PRE(rt_set_device, int device);
#define cg_post_rt_set_device CG_NOTHING
CG_PRE(cuCtxSetCurrent, CUcontext c);
#define cg_post_cuCtxSetCurrent CG_NOTHING
CG_PRE(cuCtxPushCurrent_v2, CUcontext c);
#define cg_post_cuCtxPushCurrent_v2 CG_NOTHING
CG_PRE(cuCtxPopCurrent_v2, CUcontext *pctx);
CG_POST(cuCtxPopCurrent_v2, CUcontext *pctx);

/* A node of the program's graph that waits for memory or a semaphore. */
CG_PRE(rt_graph_add_node, cudaGraphNode_t *n, cudaGraph_t g, const cudaGraphNode_t *deps, const cudaGraphEdgeData *edges,
       size_t nd, struct cudaGraphNodeParams *p);
#define cg_post_rt_graph_add_node CG_NOTHING
CG_PRE(cuGraphAddNode, CUgraphNode *n, CUgraph g, const CUgraphNode *deps, size_t nd, CUgraphNodeParams *p);
#define cg_post_cuGraphAddNode CG_NOTHING
CG_PRE(cuGraphAddNode_v2, CUgraphNode *n, CUgraph g, const CUgraphNode *deps, const CUgraphEdgeData *edges, size_t nd,
       CUgraphNodeParams *p);
#define cg_post_cuGraphAddNode_v2 CG_NOTHING

/* Kernel attributes that change how launches behave. */
CG_PRE(rt_func_set_attribute, const void *func, enum cudaFuncAttribute attr, int value);
CG_POST(rt_func_set_attribute, const void *func, enum cudaFuncAttribute attr, int value);
CG_PRE(cuFuncSetAttribute, CUfunction f, CUfunction_attribute attr, int value);
CG_POST(cuFuncSetAttribute, CUfunction f, CUfunction_attribute attr, int value);
CG_PRE(cuKernelSetAttribute, CUfunction_attribute attr, int value, CUkernel k, CUdevice dev);
CG_POST(cuKernelSetAttribute, CUfunction_attribute attr, int value, CUkernel k, CUdevice dev);

/* Host memory a kernel can reach, and frees. */
#define cg_pre_rt_malloc_host CG_NOTHING
CG_POST(rt_malloc_host, void **p, size_t n);
#define cg_pre_rt_host_alloc CG_NOTHING
CG_POST(rt_host_alloc, void **p, size_t n, unsigned int flags);
#define cg_pre_rt_host_register CG_NOTHING
CG_POST(rt_host_register, void *p, size_t n, unsigned int flags);
#define cg_pre_rt_malloc_managed CG_NOTHING
CG_POST(rt_malloc_managed, void **p, size_t n, unsigned int flags);
CG_PRE(rt_host_unregister, void *p);
#define cg_post_rt_host_unregister CG_NOTHING
CG_PRE(rt_free_host, void *p);
#define cg_post_rt_free_host CG_NOTHING
CG_PRE(rt_free, void *p);
#define cg_post_rt_free CG_NOTHING
#define cg_pre_cuMemAllocHost_v2 CG_NOTHING
CG_POST(cuMemAllocHost_v2, void **p, size_t n);
#define cg_pre_cuMemHostAlloc CG_NOTHING
CG_POST(cuMemHostAlloc, void **p, size_t n, unsigned int flags);
#define cg_pre_cuMemHostRegister_v2 CG_NOTHING
CG_POST(cuMemHostRegister_v2, void *p, size_t n, unsigned int flags);
#define cg_pre_cuMemAllocManaged CG_NOTHING
CG_POST(cuMemAllocManaged, CUdeviceptr *p, size_t n, unsigned int flags);
/* Stream-ordered allocations (ALLOC in cuda_api.def), made at once: a
 * host-located pool's memory is host memory. */
#define cg_post_rt_malloc_async CG_NOTHING
#define cg_post_cuMemAllocAsync CG_NOTHING
CG_POST(rt_malloc_from_pool, void **p, size_t n, cudaMemPool_t pool, cudaStream_t s);
CG_POST(cuMemAllocFromPoolAsync, CUdeviceptr *p, size_t n, CUmemoryPool pool, CUstream s);
CG_PRE(cuMemHostUnregister, void *p);
#define cg_post_cuMemHostUnregister CG_NOTHING
CG_PRE(cuMemFreeHost, void *p);
#define cg_post_cuMemFreeHost CG_NOTHING
CG_PRE(cuMemFree_v2, CUdeviceptr p);
#define cg_post_cuMemFree_v2 CG_NOTHING
/* Frees in stream order and unmapped virtual memory: held work goes out
 * first (not modelled), and what names that memory is forgotten. */
/* A free in stream order: 1 where it is answered without the real call
 * (held back behind held work). */
int cg_wait_rt_free_async(int entry, int pt, void *p, cudaStream_t s) CG_HIDDEN;
int cg_wait_cuMemFreeAsync(int entry, int pt, CUdeviceptr p, CUstream s) CG_HIDDEN;
/* A pool's counts: frees held back go first. */
CG_PRE(rt_pool_get_attr, cudaMemPool_t pool, enum cudaMemPoolAttr attr, void *value);
#define cg_post_rt_pool_get_attr CG_NOTHING
CG_PRE(cuMemPoolGetAttribute, CUmemoryPool pool, CUmemPool_attribute attr, void *value);
#define cg_post_cuMemPoolGetAttribute CG_NOTHING
/* A mapping passes through as an allocation does; host-located memory is
 * noted as host memory. */
#define cg_pre_cuMemMap CG_NOTHING
CG_POST(cuMemMap, CUdeviceptr p, size_t n, size_t off, CUmemGenericAllocationHandle h, unsigned long long flags);
CG_PRE(cuMemUnmap, CUdeviceptr p, size_t n);
#define cg_post_cuMemUnmap CG_NOTHING
CG_PRE(cuMemAddressFree, CUdeviceptr p, size_t n);
#define cg_post_cuMemAddressFree CG_NOTHING

#endif
