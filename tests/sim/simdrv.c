/* Driver face of the simulated device: the cu* entry points with their real link
 * names (_v2, _ptsz, _ptds) and cuGetProcAddress, all thin over simcore.c. */
#define _GNU_SOURCE
/* Exports stay exported even if the parent project builds with -fvisibility=hidden. */
#pragma GCC visibility push(default)
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

#include "sim_i.h"

#define DP(x) ((void *)(uintptr_t)(x))

/* The per-thread twins are not declared by cuda.h unless the including program
 * asks for them; declaring them from the plain ones keeps the signatures exact. */
__typeof__(cuLaunchKernel) cuLaunchKernel_ptsz;
__typeof__(cuLaunchKernelEx) cuLaunchKernelEx_ptsz;
__typeof__(cuMemcpyAsync) cuMemcpyAsync_ptsz;
__typeof__(cuMemcpyHtoDAsync) cuMemcpyHtoDAsync_v2_ptsz;
__typeof__(cuMemcpyDtoHAsync) cuMemcpyDtoHAsync_v2_ptsz;
__typeof__(cuMemcpyDtoDAsync) cuMemcpyDtoDAsync_v2_ptsz;
__typeof__(cuMemcpy2DAsync) cuMemcpy2DAsync_v2_ptsz;
__typeof__(cuMemcpy) cuMemcpy_ptds;
__typeof__(cuMemsetD8) cuMemsetD8_v2_ptds;
__typeof__(cuMemsetD8Async) cuMemsetD8Async_ptsz;
__typeof__(cuMemsetD32Async) cuMemsetD32Async_ptsz;
__typeof__(cuEventRecord) cuEventRecord_ptsz;
__typeof__(cuEventRecordWithFlags) cuEventRecordWithFlags_ptsz;
__typeof__(cuStreamWaitEvent) cuStreamWaitEvent_ptsz;
__typeof__(cuLaunchHostFunc) cuLaunchHostFunc_ptsz;
__typeof__(cuStreamAddCallback) cuStreamAddCallback_ptsz;
__typeof__(cuStreamSynchronize) cuStreamSynchronize_ptsz;
__typeof__(cuStreamQuery) cuStreamQuery_ptsz;
__typeof__(cuStreamGetFlags) cuStreamGetFlags_ptsz;
__typeof__(cuStreamGetPriority) cuStreamGetPriority_ptsz;
__typeof__(cuStreamBeginCapture) cuStreamBeginCapture_v2_ptsz;
__typeof__(cuStreamEndCapture) cuStreamEndCapture_ptsz;
__typeof__(cuStreamIsCapturing) cuStreamIsCapturing_ptsz;
__typeof__(cuStreamGetCaptureInfo) cuStreamGetCaptureInfo_v3_ptsz;
__typeof__(cuGraphLaunch) cuGraphLaunch_ptsz;
__typeof__(cuGraphUpload) cuGraphUpload_ptsz;
__typeof__(cuMemFreeAsync) cuMemFreeAsync_ptsz;
__typeof__(cuMemAllocAsync) cuMemAllocAsync_ptsz;

/* ------------------------------------------------------------ init, device */

CUresult cuInit(unsigned int Flags)
{
    return Flags ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *driverVersion)
{
    if (!driverVersion)
        return CUDA_ERROR_INVALID_VALUE;
    *driverVersion = CUDA_VERSION;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count)
{
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    *count = simc_device_count();
    return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    if (!device || ordinal < 0 || ordinal >= simc_device_count())
        return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice *device)
{
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    *device = simc_get_device();
    return CUDA_SUCCESS;
}

/* One context per device, named by the address of its tag. */
static char sim_ctx_tag[SIM_MAXDEV];

CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    *pctx = (CUcontext)(void *)&sim_ctx_tag[simc_get_device()];
    return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx)
{
    char *t = (char *)(void *)ctx;
    if (t < sim_ctx_tag || t >= sim_ctx_tag + simc_device_count())
        return CUDA_ERROR_INVALID_CONTEXT;
    return simc_set_device((int)(t - sim_ctx_tag));
}

CUresult cuCtxSynchronize(void)
{
    return simc_ctx_sync();
}

/* ----------------------------------------------------------------- kernels */

CUresult cuKernelGetParamInfo(CUkernel kernel, size_t paramIndex, size_t *paramOffset, size_t *paramSize)
{
    simc_tick();
    return simc_param_info(kernel, paramIndex, paramOffset, paramSize);
}

CUresult cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t *paramOffset, size_t *paramSize)
{
    simc_tick();
    return simc_param_info(func, paramIndex, paramOffset, paramSize);
}

CUresult cuFuncGetName(const char **name, CUfunction func)
{
    struct CUkern_st *k = simc_kernel_lookup(func);
    if (!k || !name)
        return CUDA_ERROR_INVALID_HANDLE;
    *name = k->name;
    return CUDA_SUCCESS;
}

static CUresult launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                       unsigned bz, unsigned shmem, CUstream s, void **params, void **extra, int ptsz)
{
    sim_work w;
    sim_launch l = { .grid = { gx, gy, gz }, .block = { bx, by, bz }, .shmem = shmem };
    CUresult r = simc_work_kernel(&w, f, l, params, extra);
    return r != CUDA_SUCCESS ? r : simc_submit(s, ptsz, &w);
}

CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                        unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                        unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra)
{
    return launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream,
                  kernelParams, extra, 0);
}

CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                             unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                             unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra)
{
    return launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream,
                  kernelParams, extra, 1);
}

/* Attributes change scheduling on a real device, never results here. */
static CUresult launch_ex(const CUlaunchConfig *c, CUfunction f, void **params, void **extra, int ptsz)
{
    if (!c || (c->numAttrs && !c->attrs))
        return CUDA_ERROR_INVALID_VALUE;
    return launch(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY, c->blockDimZ,
                  c->sharedMemBytes, c->hStream, params, extra, ptsz);
}

CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra)
{
    return launch_ex(config, f, kernelParams, extra, 0);
}

CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra)
{
    return launch_ex(config, f, kernelParams, extra, 1);
}

/* ------------------------------------------------------------------ copies */

CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)
{
    return simc_memcpy(hStream, 0, DP(dst), ByteCount, DP(src), ByteCount, ByteCount, 1, 0);
}

CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)
{
    return simc_memcpy(hStream, 1, DP(dst), ByteCount, DP(src), ByteCount, ByteCount, 1, 0);
}

CUresult cuMemcpyHtoDAsync(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream)
{
    return simc_memcpy(hStream, 0, DP(dstDevice), ByteCount, srcHost, ByteCount, ByteCount, 1, 0);
}

CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream)
{
    return simc_memcpy(hStream, 1, DP(dstDevice), ByteCount, srcHost, ByteCount, ByteCount, 1, 0);
}

CUresult cuMemcpyDtoHAsync(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
{
    return simc_memcpy(hStream, 0, dstHost, ByteCount, DP(srcDevice), ByteCount, ByteCount, 1, 0);
}

CUresult cuMemcpyDtoHAsync_v2_ptsz(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
{
    return simc_memcpy(hStream, 1, dstHost, ByteCount, DP(srcDevice), ByteCount, ByteCount, 1, 0);
}

CUresult cuMemcpyDtoDAsync(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
{
    return simc_memcpy(hStream, 0, DP(dstDevice), ByteCount, DP(srcDevice), ByteCount, ByteCount, 1, 0);
}

CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
{
    return simc_memcpy(hStream, 1, DP(dstDevice), ByteCount, DP(srcDevice), ByteCount, ByteCount, 1, 0);
}

static const void *copy_side(CUmemorytype t, const void *host, CUdeviceptr dev, size_t x, size_t y, size_t pitch)
{
    const char *base = (t == CU_MEMORYTYPE_HOST) ? host : (const char *)DP(dev);
    return base ? base + y * pitch + x : NULL;
}

static CUresult memcpy2d(const CUDA_MEMCPY2D *p, CUstream s, int ptsz)
{
    if (!p || p->srcMemoryType == CU_MEMORYTYPE_ARRAY || p->dstMemoryType == CU_MEMORYTYPE_ARRAY)
        return CUDA_ERROR_INVALID_VALUE;
    const void *src = copy_side(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcXInBytes, p->srcY, p->srcPitch);
    void *dst = (void *)copy_side(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstXInBytes, p->dstY, p->dstPitch);
    return simc_memcpy(s, ptsz, dst, p->dstPitch, src, p->srcPitch, p->WidthInBytes, p->Height, 0);
}

CUresult cuMemcpy2DAsync(const CUDA_MEMCPY2D *pCopy, CUstream hStream)
{
    return memcpy2d(pCopy, hStream, 0);
}

CUresult cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D *pCopy, CUstream hStream)
{
    return memcpy2d(pCopy, hStream, 1);
}

CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    return simc_memcpy(NULL, 0, DP(dst), ByteCount, DP(src), ByteCount, ByteCount, 1, 1);
}

CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    return simc_memcpy(NULL, 1, DP(dst), ByteCount, DP(src), ByteCount, ByteCount, 1, 1);
}

CUresult cuMemsetD8(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
    return simc_memset(NULL, 0, DP(dstDevice), N, uc, 1, N, 1, 1);
}

CUresult cuMemsetD8_v2_ptds(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
    return simc_memset(NULL, 1, DP(dstDevice), N, uc, 1, N, 1, 1);
}

CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream)
{
    return simc_memset(hStream, 0, DP(dstDevice), N, uc, 1, N, 1, 0);
}

CUresult cuMemsetD8Async_ptsz(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream)
{
    return simc_memset(hStream, 1, DP(dstDevice), N, uc, 1, N, 1, 0);
}

CUresult cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream)
{
    return simc_memset(hStream, 0, DP(dstDevice), 4 * N, ui, 4, N, 1, 0);
}

CUresult cuMemsetD32Async_ptsz(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream)
{
    return simc_memset(hStream, 1, DP(dstDevice), 4 * N, ui, 4, N, 1, 0);
}

/* ------------------------------------------------------------------ memory */

CUresult cuMemAlloc(CUdeviceptr *dptr, size_t bytesize)
{
    void *p = NULL;
    if (!dptr)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = simc_malloc(&p, bytesize, SIM_MEM_DEVICE);
    *dptr = (CUdeviceptr)(uintptr_t)p;
    return r;
}

CUresult cuMemFree(CUdeviceptr dptr)
{
    return simc_free(DP(dptr), SIM_MEM_DEVICE);
}

CUresult cuMemAllocHost(void **pp, size_t bytesize)
{
    return simc_malloc(pp, bytesize, SIM_MEM_PINNED);
}

CUresult cuMemFreeHost(void *p)
{
    return simc_free(p, SIM_MEM_PINNED);
}

CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    void *p = NULL;
    if (!dptr)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = simc_malloc_async(&p, bytesize, hStream, 0);
    *dptr = (CUdeviceptr)(uintptr_t)p;
    return r;
}

CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    void *p = NULL;
    if (!dptr)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = simc_malloc_async(&p, bytesize, hStream, 1);
    *dptr = (CUdeviceptr)(uintptr_t)p;
    return r;
}

CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
    return simc_free_async(DP(dptr), hStream, 0);
}

CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
    return simc_free_async(DP(dptr), hStream, 1);
}

/* ----------------------------------------------------------------- streams */

CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
    return simc_stream_create(phStream, Flags, 0);
}

CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority)
{
    return simc_stream_create(phStream, flags, priority);
}

CUresult cuStreamDestroy(CUstream hStream)
{
    return simc_stream_destroy(hStream);
}

CUresult cuStreamGetFlags(CUstream hStream, unsigned int *flags)
{
    return simc_stream_get_flags(hStream, 0, flags);
}

CUresult cuStreamGetFlags_ptsz(CUstream hStream, unsigned int *flags)
{
    return simc_stream_get_flags(hStream, 1, flags);
}

CUresult cuStreamGetPriority(CUstream hStream, int *priority)
{
    return simc_stream_get_priority(hStream, 0, priority);
}

CUresult cuStreamGetPriority_ptsz(CUstream hStream, int *priority)
{
    return simc_stream_get_priority(hStream, 1, priority);
}

CUresult cuStreamSynchronize(CUstream hStream)
{
    return simc_stream_sync(hStream, 0);
}

CUresult cuStreamSynchronize_ptsz(CUstream hStream)
{
    return simc_stream_sync(hStream, 1);
}

CUresult cuStreamQuery(CUstream hStream)
{
    return simc_stream_query(hStream, 0);
}

CUresult cuStreamQuery_ptsz(CUstream hStream)
{
    return simc_stream_query(hStream, 1);
}

CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
    return Flags & ~1u ? CUDA_ERROR_INVALID_VALUE : simc_stream_wait_event(hStream, 0, hEvent);
}

CUresult cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
    return Flags & ~1u ? CUDA_ERROR_INVALID_VALUE : simc_stream_wait_event(hStream, 1, hEvent);
}

static CUresult host_func(CUstream s, CUhostFn fn, void *user, int ptsz)
{
    if (!fn)
        return CUDA_ERROR_INVALID_VALUE;
    sim_work w = { .kind = SIM_W_HOST, .hostfn = fn, .user = user };
    return simc_submit(s, ptsz, &w);
}

CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData)
{
    return host_func(hStream, fn, userData, 0);
}

CUresult cuLaunchHostFunc_ptsz(CUstream hStream, CUhostFn fn, void *userData)
{
    return host_func(hStream, fn, userData, 1);
}

static CUresult add_callback(CUstream s, CUstreamCallback cb, void *user, unsigned flags, int ptsz)
{
    if (!cb || flags)
        return CUDA_ERROR_INVALID_VALUE;
    sim_work w = { .kind = SIM_W_CALLBACK, .cb = cb, .user = user, .cbstream = s };
    return simc_submit(s, ptsz, &w);
}

CUresult cuStreamAddCallback(CUstream hStream, CUstreamCallback callback, void *userData, unsigned int flags)
{
    return add_callback(hStream, callback, userData, flags, 0);
}

CUresult cuStreamAddCallback_ptsz(CUstream hStream, CUstreamCallback callback, void *userData, unsigned int flags)
{
    return add_callback(hStream, callback, userData, flags, 1);
}

/* ------------------------------------------------------------------ events */

CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
    return simc_event_create(phEvent, Flags);
}

CUresult cuEventDestroy(CUevent hEvent)
{
    return simc_event_destroy(hEvent);
}

CUresult cuEventRecord(CUevent hEvent, CUstream hStream)
{
    return simc_event_record(hEvent, hStream, 0);
}

CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream hStream)
{
    return simc_event_record(hEvent, hStream, 1);
}

CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags)
{
    return flags & ~1u ? CUDA_ERROR_INVALID_VALUE : simc_event_record(hEvent, hStream, 0);
}

CUresult cuEventRecordWithFlags_ptsz(CUevent hEvent, CUstream hStream, unsigned int flags)
{
    return flags & ~1u ? CUDA_ERROR_INVALID_VALUE : simc_event_record(hEvent, hStream, 1);
}

CUresult cuEventQuery(CUevent hEvent)
{
    return simc_event_query(hEvent);
}

CUresult cuEventSynchronize(CUevent hEvent)
{
    return simc_event_sync(hEvent);
}

CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    return simc_event_elapsed(pMilliseconds, hStart, hEnd);
}

/* ----------------------------------------------------------------- capture */

CUresult cuStreamBeginCapture(CUstream hStream, CUstreamCaptureMode mode)
{
    return simc_capture_begin(hStream, 0, (int)mode);
}

CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode)
{
    return simc_capture_begin(hStream, 1, (int)mode);
}

CUresult cuStreamEndCapture(CUstream hStream, CUgraph *phGraph)
{
    return simc_capture_end(hStream, 0, phGraph);
}

CUresult cuStreamEndCapture_ptsz(CUstream hStream, CUgraph *phGraph)
{
    return simc_capture_end(hStream, 1, phGraph);
}

CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
    return simc_capture_info(hStream, 0, captureStatus, NULL, NULL, NULL, NULL);
}

CUresult cuStreamIsCapturing_ptsz(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
    return simc_capture_info(hStream, 1, captureStatus, NULL, NULL, NULL, NULL);
}

CUresult cuStreamGetCaptureInfo(CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out,
                                CUgraph *graph_out, const CUgraphNode **dependencies_out,
                                const CUgraphEdgeData **edgeData_out, size_t *numDependencies_out)
{
    if (edgeData_out)
        *edgeData_out = NULL;
    return simc_capture_info(hStream, 0, captureStatus_out, id_out, graph_out, dependencies_out,
                             numDependencies_out);
}

CUresult cuStreamGetCaptureInfo_v3_ptsz(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
                                        cuuint64_t *id_out, CUgraph *graph_out,
                                        const CUgraphNode **dependencies_out,
                                        const CUgraphEdgeData **edgeData_out, size_t *numDependencies_out)
{
    if (edgeData_out)
        *edgeData_out = NULL;
    return simc_capture_info(hStream, 1, captureStatus_out, id_out, graph_out, dependencies_out,
                             numDependencies_out);
}

CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
    return simc_capture_exchange_mode((int *)mode);
}

/* ------------------------------------------------------------------ graphs */

CUresult cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
    return flags ? CUDA_ERROR_INVALID_VALUE : simc_graph_create(phGraph);
}

CUresult cuGraphDestroy(CUgraph hGraph)
{
    return simc_graph_destroy(hGraph);
}

static CUresult kernel_work(sim_work *w, const CUDA_KERNEL_NODE_PARAMS *p)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    sim_launch l = { .grid = { p->gridDimX, p->gridDimY, p->gridDimZ },
                     .block = { p->blockDimX, p->blockDimY, p->blockDimZ }, .shmem = p->sharedMemBytes };
    return simc_work_kernel(w, p->func ? (const void *)p->func : (const void *)p->kern, l, p->kernelParams,
                            p->extra);
}

CUresult cuGraphAddKernelNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                              size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
    sim_work w;
    CUresult r = kernel_work(&w, nodeParams);
    return r != CUDA_SUCCESS ? r : simc_graph_add(phGraphNode, hGraph, dependencies, numDependencies, &w);
}

/* Only linear host/device copies are modelled (no arrays, depth 1). */
static CUresult copy3d_work(sim_work *w, const CUDA_MEMCPY3D *p)
{
    if (!p || p->srcMemoryType == CU_MEMORYTYPE_ARRAY || p->dstMemoryType == CU_MEMORYTYPE_ARRAY ||
        p->Depth > 1 || p->srcZ || p->dstZ)
        return CUDA_ERROR_INVALID_VALUE;
    memset(w, 0, sizeof(*w));
    w->kind = SIM_W_COPY;
    w->src = copy_side(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcXInBytes, p->srcY, p->srcPitch);
    w->dst = (void *)copy_side(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstXInBytes, p->dstY, p->dstPitch);
    w->width = p->WidthInBytes;
    w->height = p->Height ? p->Height : 1;
    w->spitch = p->srcPitch ? p->srcPitch : p->WidthInBytes;
    w->dpitch = p->dstPitch ? p->dstPitch : p->WidthInBytes;
    return (w->src && w->dst) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGraphAddMemcpyNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                              size_t numDependencies, const CUDA_MEMCPY3D *copyParams, CUcontext ctx)
{
    sim_work w;
    (void)ctx;
    CUresult r = copy3d_work(&w, copyParams);
    return r != CUDA_SUCCESS ? r : simc_graph_add(phGraphNode, hGraph, dependencies, numDependencies, &w);
}

static CUresult memset_work(sim_work *w, const CUDA_MEMSET_NODE_PARAMS *p)
{
    if (!p || !p->dst || (p->elementSize != 1 && p->elementSize != 2 && p->elementSize != 4))
        return CUDA_ERROR_INVALID_VALUE;
    memset(w, 0, sizeof(*w));
    w->kind = SIM_W_SET;
    w->dst = DP(p->dst);
    w->value = p->value;
    w->elem = p->elementSize;
    w->width = p->width;
    w->height = p->height ? p->height : 1;
    w->dpitch = w->height > 1 ? p->pitch : p->width * p->elementSize;
    return CUDA_SUCCESS;
}

CUresult cuGraphAddMemsetNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                              size_t numDependencies, const CUDA_MEMSET_NODE_PARAMS *memsetParams, CUcontext ctx)
{
    sim_work w;
    (void)ctx;
    CUresult r = memset_work(&w, memsetParams);
    return r != CUDA_SUCCESS ? r : simc_graph_add(phGraphNode, hGraph, dependencies, numDependencies, &w);
}

CUresult cuGraphAddHostNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                            size_t numDependencies, const CUDA_HOST_NODE_PARAMS *nodeParams)
{
    if (!nodeParams || !nodeParams->fn)
        return CUDA_ERROR_INVALID_VALUE;
    sim_work w = { .kind = SIM_W_HOST, .hostfn = nodeParams->fn, .user = nodeParams->userData };
    return simc_graph_add(phGraphNode, hGraph, dependencies, numDependencies, &w);
}

CUresult cuGraphAddEventRecordNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                   size_t numDependencies, CUevent event)
{
    if (!event)
        return CUDA_ERROR_INVALID_VALUE;
    sim_work w = { .kind = SIM_W_EVREC, .ev = event };
    return simc_graph_add(phGraphNode, hGraph, dependencies, numDependencies, &w);
}

CUresult cuGraphAddEventWaitNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                 size_t numDependencies, CUevent event)
{
    if (!event)
        return CUDA_ERROR_INVALID_VALUE;
    sim_work w = { .kind = SIM_W_EVWAIT, .ev = event };
    return simc_graph_add(phGraphNode, hGraph, dependencies, numDependencies, &w);
}

CUresult cuGraphAddEmptyNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                             size_t numDependencies)
{
    sim_work w = { .kind = SIM_W_NOP };
    return simc_graph_add(phGraphNode, hGraph, dependencies, numDependencies, &w);
}

CUresult cuGraphAddDependencies(CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to,
                                const CUgraphEdgeData *edgeData, size_t numDependencies)
{
    (void)edgeData;
    return simc_graph_add_deps(hGraph, from, to, numDependencies);
}

CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes)
{
    return simc_graph_get_nodes(hGraph, nodes, numNodes);
}

CUresult cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags)
{
    (void)flags;
    return simc_graph_instantiate(phGraphExec, hGraph);
}

CUresult cuGraphExecDestroy(CUgraphExec hGraphExec)
{
    return simc_exec_destroy(hGraphExec);
}

CUresult cuGraphExecKernelNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                        const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
    sim_work w;
    CUresult r = kernel_work(&w, nodeParams);
    return r != CUDA_SUCCESS ? r : simc_exec_set(hGraphExec, hNode, SIM_W_KERNEL, &w);
}

CUresult cuGraphExecMemcpyNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode, const CUDA_MEMCPY3D *copyParams,
                                        CUcontext ctx)
{
    sim_work w;
    (void)ctx;
    CUresult r = copy3d_work(&w, copyParams);
    return r != CUDA_SUCCESS ? r : simc_exec_set(hGraphExec, hNode, SIM_W_COPY, &w);
}

CUresult cuGraphExecMemsetNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                        const CUDA_MEMSET_NODE_PARAMS *memsetParams, CUcontext ctx)
{
    sim_work w;
    (void)ctx;
    CUresult r = memset_work(&w, memsetParams);
    return r != CUDA_SUCCESS ? r : simc_exec_set(hGraphExec, hNode, SIM_W_SET, &w);
}

CUresult cuGraphExecHostNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                      const CUDA_HOST_NODE_PARAMS *nodeParams)
{
    if (!nodeParams || !nodeParams->fn)
        return CUDA_ERROR_INVALID_VALUE;
    sim_work w = { .kind = SIM_W_HOST, .hostfn = nodeParams->fn, .user = nodeParams->userData };
    return simc_exec_set(hGraphExec, hNode, SIM_W_HOST, &w);
}

CUresult cuGraphExecEventRecordNodeSetEvent(CUgraphExec hGraphExec, CUgraphNode hNode, CUevent event)
{
    sim_work w = { .kind = SIM_W_EVREC, .ev = event };
    return event ? simc_exec_set(hGraphExec, hNode, SIM_W_EVREC, &w) : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGraphExecEventWaitNodeSetEvent(CUgraphExec hGraphExec, CUgraphNode hNode, CUevent event)
{
    sim_work w = { .kind = SIM_W_EVWAIT, .ev = event };
    return event ? simc_exec_set(hGraphExec, hNode, SIM_W_EVWAIT, &w) : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGraphExecUpdate(CUgraphExec hGraphExec, CUgraph hGraph, CUgraphExecUpdateResultInfo *resultInfo)
{
    CUgraphNode err = NULL;
    CUresult r = simc_exec_update(hGraphExec, hGraph, &err);
    if (resultInfo) {
        memset(resultInfo, 0, sizeof(*resultInfo));
        resultInfo->result = r == CUDA_SUCCESS ? CU_GRAPH_EXEC_UPDATE_SUCCESS
                             : err             ? CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED
                                               : CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
        resultInfo->errorNode = err;
    }
    return r;
}

CUresult cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream)
{
    (void)hStream;
    simc_tick();
    return hGraphExec ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGraphUpload_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
    return cuGraphUpload(hGraphExec, hStream);
}

CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
    return simc_graph_launch(hGraphExec, hStream, 0);
}

CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
    return simc_graph_launch(hGraphExec, hStream, 1);
}

/* ------------------------------------------------------- cuGetProcAddress */

/* Names as callers ask for them, with the link names the real driver hands
 * back for CUDA 12+ callers, plain and per-thread. */
static const struct proc {
    const char *name, *plain, *ptsz;
} procs[] = {
    { "cuInit", "cuInit", NULL },
    { "cuDriverGetVersion", "cuDriverGetVersion", NULL },
    { "cuGetProcAddress", "cuGetProcAddress_v2", NULL },
    { "cuDeviceGet", "cuDeviceGet", NULL },
    { "cuDeviceGetCount", "cuDeviceGetCount", NULL },
    { "cuCtxGetDevice", "cuCtxGetDevice", NULL },
    { "cuCtxSynchronize", "cuCtxSynchronize", NULL },
    { "cuCtxGetCurrent", "cuCtxGetCurrent", NULL },
    { "cuCtxSetCurrent", "cuCtxSetCurrent", NULL },
    { "cuKernelGetParamInfo", "cuKernelGetParamInfo", NULL },
    { "cuFuncGetParamInfo", "cuFuncGetParamInfo", NULL },
    { "cuFuncGetName", "cuFuncGetName", NULL },
    { "cuLaunchKernel", "cuLaunchKernel", "cuLaunchKernel_ptsz" },
    { "cuLaunchKernelEx", "cuLaunchKernelEx", "cuLaunchKernelEx_ptsz" },
    { "cuMemcpy", "cuMemcpy", "cuMemcpy_ptds" },
    { "cuMemcpyAsync", "cuMemcpyAsync", "cuMemcpyAsync_ptsz" },
    { "cuMemcpyHtoDAsync", "cuMemcpyHtoDAsync_v2", "cuMemcpyHtoDAsync_v2_ptsz" },
    { "cuMemcpyDtoHAsync", "cuMemcpyDtoHAsync_v2", "cuMemcpyDtoHAsync_v2_ptsz" },
    { "cuMemcpyDtoDAsync", "cuMemcpyDtoDAsync_v2", "cuMemcpyDtoDAsync_v2_ptsz" },
    { "cuMemcpy2DAsync", "cuMemcpy2DAsync_v2", "cuMemcpy2DAsync_v2_ptsz" },
    { "cuMemsetD8", "cuMemsetD8_v2", "cuMemsetD8_v2_ptds" },
    { "cuMemsetD8Async", "cuMemsetD8Async", "cuMemsetD8Async_ptsz" },
    { "cuMemsetD32Async", "cuMemsetD32Async", "cuMemsetD32Async_ptsz" },
    { "cuMemAlloc", "cuMemAlloc_v2", NULL },
    { "cuMemFree", "cuMemFree_v2", NULL },
    { "cuMemAllocHost", "cuMemAllocHost_v2", NULL },
    { "cuMemFreeHost", "cuMemFreeHost", NULL },
    { "cuMemAllocAsync", "cuMemAllocAsync", "cuMemAllocAsync_ptsz" },
    { "cuMemFreeAsync", "cuMemFreeAsync", "cuMemFreeAsync_ptsz" },
    { "cuStreamCreate", "cuStreamCreate", NULL },
    { "cuStreamCreateWithPriority", "cuStreamCreateWithPriority", NULL },
    { "cuStreamDestroy", "cuStreamDestroy_v2", NULL },
    { "cuStreamGetFlags", "cuStreamGetFlags", "cuStreamGetFlags_ptsz" },
    { "cuStreamGetPriority", "cuStreamGetPriority", "cuStreamGetPriority_ptsz" },
    { "cuStreamSynchronize", "cuStreamSynchronize", "cuStreamSynchronize_ptsz" },
    { "cuStreamQuery", "cuStreamQuery", "cuStreamQuery_ptsz" },
    { "cuStreamWaitEvent", "cuStreamWaitEvent", "cuStreamWaitEvent_ptsz" },
    { "cuLaunchHostFunc", "cuLaunchHostFunc", "cuLaunchHostFunc_ptsz" },
    { "cuStreamAddCallback", "cuStreamAddCallback", "cuStreamAddCallback_ptsz" },
    { "cuEventCreate", "cuEventCreate", NULL },
    { "cuEventDestroy", "cuEventDestroy_v2", NULL },
    { "cuEventRecord", "cuEventRecord", "cuEventRecord_ptsz" },
    { "cuEventRecordWithFlags", "cuEventRecordWithFlags", "cuEventRecordWithFlags_ptsz" },
    { "cuEventQuery", "cuEventQuery", NULL },
    { "cuEventSynchronize", "cuEventSynchronize", NULL },
    { "cuEventElapsedTime", "cuEventElapsedTime_v2", NULL },
    { "cuStreamBeginCapture", "cuStreamBeginCapture_v2", "cuStreamBeginCapture_v2_ptsz" },
    { "cuStreamEndCapture", "cuStreamEndCapture", "cuStreamEndCapture_ptsz" },
    { "cuStreamIsCapturing", "cuStreamIsCapturing", "cuStreamIsCapturing_ptsz" },
    { "cuStreamGetCaptureInfo", "cuStreamGetCaptureInfo_v3", "cuStreamGetCaptureInfo_v3_ptsz" },
    { "cuThreadExchangeStreamCaptureMode", "cuThreadExchangeStreamCaptureMode", NULL },
    { "cuGraphCreate", "cuGraphCreate", NULL },
    { "cuGraphDestroy", "cuGraphDestroy", NULL },
    { "cuGraphAddKernelNode", "cuGraphAddKernelNode_v2", NULL },
    { "cuGraphAddMemcpyNode", "cuGraphAddMemcpyNode", NULL },
    { "cuGraphAddMemsetNode", "cuGraphAddMemsetNode", NULL },
    { "cuGraphAddHostNode", "cuGraphAddHostNode", NULL },
    { "cuGraphAddEventRecordNode", "cuGraphAddEventRecordNode", NULL },
    { "cuGraphAddEventWaitNode", "cuGraphAddEventWaitNode", NULL },
    { "cuGraphAddEmptyNode", "cuGraphAddEmptyNode", NULL },
    { "cuGraphAddDependencies", "cuGraphAddDependencies_v2", NULL },
    { "cuGraphGetNodes", "cuGraphGetNodes", NULL },
    { "cuGraphInstantiate", "cuGraphInstantiateWithFlags", NULL },
    { "cuGraphInstantiateWithFlags", "cuGraphInstantiateWithFlags", NULL },
    { "cuGraphExecDestroy", "cuGraphExecDestroy", NULL },
    { "cuGraphExecKernelNodeSetParams", "cuGraphExecKernelNodeSetParams_v2", NULL },
    { "cuGraphExecMemcpyNodeSetParams", "cuGraphExecMemcpyNodeSetParams", NULL },
    { "cuGraphExecMemsetNodeSetParams", "cuGraphExecMemsetNodeSetParams", NULL },
    { "cuGraphExecHostNodeSetParams", "cuGraphExecHostNodeSetParams", NULL },
    { "cuGraphExecEventRecordNodeSetEvent", "cuGraphExecEventRecordNodeSetEvent", NULL },
    { "cuGraphExecEventWaitNodeSetEvent", "cuGraphExecEventWaitNodeSetEvent", NULL },
    { "cuGraphExecUpdate", "cuGraphExecUpdate_v2", NULL },
    { "cuGraphUpload", "cuGraphUpload", "cuGraphUpload_ptsz" },
    { "cuGraphLaunch", "cuGraphLaunch", "cuGraphLaunch_ptsz" },
};

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *symbolStatus)
{
    (void)cudaVersion;
    if (symbolStatus)
        *symbolStatus = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (!symbol || !pfn)
        return CUDA_ERROR_INVALID_VALUE;
    *pfn = NULL;
    const struct proc *p = NULL;
    for (size_t i = 0; i < sizeof(procs) / sizeof(procs[0]); i++)
        if (!strcmp(procs[i].name, symbol)) {
            p = &procs[i];
            break;
        }
    if (!p)
        return CUDA_ERROR_NOT_FOUND;
    const char *link = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && p->ptsz ? p->ptsz : p->plain;
    /* Through dlsym on our own handle, so an interposed dlsym sees every lookup. */
    void *self = dlopen("libcuda.so.1", RTLD_NOLOAD | RTLD_LAZY);
    if (!self)
        return CUDA_ERROR_NOT_FOUND;
    *pfn = dlsym(self, link);
    dlclose(self);
    if (!*pfn)
        return CUDA_ERROR_NOT_FOUND;
    if (symbolStatus)
        *symbolStatus = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
}

/* The pre-12.0 four-argument form, still looked up by older callers. */
#undef cuGetProcAddress
CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);
CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    return cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, NULL);
}
