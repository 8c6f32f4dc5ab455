/* Runtime face of the simulated device (libcudart.so.13): cuda* entry points.
 * Work, sync and queries go through driver pointers from cuGetProcAddress, as in the real runtime. */
#define _GNU_SOURCE
/* Exports stay exported even if the parent project builds with -fvisibility=hidden. */
#pragma GCC visibility push(default)
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "sim_i.h"

/* Driver entry points the runtime reaches through cuGetProcAddress, both the
 * plain and the per-thread-default-stream flavour. */
#define DRIVER_LIST(X) \
    X(LaunchKernel, "cuLaunchKernel", cuLaunchKernel) \
    X(LaunchKernelEx, "cuLaunchKernelEx", cuLaunchKernelEx) \
    X(Memcpy, "cuMemcpy", cuMemcpy) \
    X(MemcpyAsync, "cuMemcpyAsync", cuMemcpyAsync) \
    X(MemcpyHtoDAsync, "cuMemcpyHtoDAsync", cuMemcpyHtoDAsync) \
    X(MemcpyDtoHAsync, "cuMemcpyDtoHAsync", cuMemcpyDtoHAsync) \
    X(MemcpyDtoDAsync, "cuMemcpyDtoDAsync", cuMemcpyDtoDAsync) \
    X(Memcpy2DAsync, "cuMemcpy2DAsync", cuMemcpy2DAsync) \
    X(Memcpy2D, "cuMemcpy2D", cuMemcpy2D) \
    X(Memcpy3D, "cuMemcpy3D", cuMemcpy3D) \
    X(Memcpy3DAsync, "cuMemcpy3DAsync", cuMemcpy3DAsync) \
    X(MemcpyPeer, "cuMemcpyPeer", cuMemcpyPeer) \
    X(MemcpyPeerAsync, "cuMemcpyPeerAsync", cuMemcpyPeerAsync) \
    X(Memcpy3DPeer, "cuMemcpy3DPeer", cuMemcpy3DPeer) \
    X(Memcpy3DPeerAsync, "cuMemcpy3DPeerAsync", cuMemcpy3DPeerAsync) \
    X(MemcpyBatchAsync, "cuMemcpyBatchAsync", cuMemcpyBatchAsync) \
    X(MemsetD8, "cuMemsetD8", cuMemsetD8) \
    X(MemsetD8Async, "cuMemsetD8Async", cuMemsetD8Async) \
    X(MemsetD2D8, "cuMemsetD2D8", cuMemsetD2D8) \
    X(MemsetD2D8Async, "cuMemsetD2D8Async", cuMemsetD2D8Async) \
    X(EventRecord, "cuEventRecord", cuEventRecord) \
    X(EventRecordWithFlags, "cuEventRecordWithFlags", cuEventRecordWithFlags) \
    X(EventQuery, "cuEventQuery", cuEventQuery) \
    X(EventSynchronize, "cuEventSynchronize", cuEventSynchronize) \
    X(StreamWaitEvent, "cuStreamWaitEvent", cuStreamWaitEvent) \
    X(LaunchHostFunc, "cuLaunchHostFunc", cuLaunchHostFunc) \
    X(StreamAddCallback, "cuStreamAddCallback", cuStreamAddCallback) \
    X(StreamSynchronize, "cuStreamSynchronize", cuStreamSynchronize) \
    X(StreamQuery, "cuStreamQuery", cuStreamQuery) \
    X(CtxSynchronize, "cuCtxSynchronize", cuCtxSynchronize_v2) \
    X(DevicePrimaryCtxReset, "cuDevicePrimaryCtxReset", cuDevicePrimaryCtxReset) \
    X(StreamBeginCapture, "cuStreamBeginCapture", cuStreamBeginCapture) \
    X(StreamBeginCaptureToGraph, "cuStreamBeginCaptureToGraph", cuStreamBeginCaptureToGraph) \
    X(StreamEndCapture, "cuStreamEndCapture", cuStreamEndCapture) \
    X(StreamIsCapturing, "cuStreamIsCapturing", cuStreamIsCapturing) \
    X(StreamGetCaptureInfo, "cuStreamGetCaptureInfo", cuStreamGetCaptureInfo) \
    X(GraphLaunch, "cuGraphLaunch", cuGraphLaunch) \
    X(GraphUpload, "cuGraphUpload", cuGraphUpload) \
    X(MemFree, "cuMemFree", cuMemFree) \
    X(MemFreeHost, "cuMemFreeHost", cuMemFreeHost) \
    X(MemHostRegister, "cuMemHostRegister", cuMemHostRegister) \
    X(MemHostUnregister, "cuMemHostUnregister", cuMemHostUnregister) \
    X(MemHostGetDevicePointer, "cuMemHostGetDevicePointer", cuMemHostGetDevicePointer) \
    X(MemHostGetFlags, "cuMemHostGetFlags", cuMemHostGetFlags) \
    X(PointerGetAttributes, "cuPointerGetAttributes", cuPointerGetAttributes) \
    X(MemAllocAsync, "cuMemAllocAsync", cuMemAllocAsync) \
    X(MemFreeAsync, "cuMemFreeAsync", cuMemFreeAsync) \
    X(MemPoolCreate, "cuMemPoolCreate", cuMemPoolCreate) \
    X(MemPoolDestroy, "cuMemPoolDestroy", cuMemPoolDestroy) \
    X(MemPoolGetAttribute, "cuMemPoolGetAttribute", cuMemPoolGetAttribute) \
    X(MemAllocFromPoolAsync, "cuMemAllocFromPoolAsync", cuMemAllocFromPoolAsync) \
    X(FuncGetParamInfo, "cuFuncGetParamInfo", cuFuncGetParamInfo) \
    X(FuncGetAttribute, "cuFuncGetAttribute", cuFuncGetAttribute) \
    X(FuncSetAttribute, "cuFuncSetAttribute", cuFuncSetAttribute)

static struct {
#define X(field, name, sym) __typeof__(&sym) field[2];
    DRIVER_LIST(X)
#undef X
    int ok;
} D;

static pthread_once_t d_once = PTHREAD_ONCE_INIT;
static __thread cudaError_t last_error;

static void d_load(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
        fprintf(stderr, "sim runtime: cannot load libcuda.so.1: %s\n", dlerror());
        return;
    }
    __typeof__(&cuGetProcAddress_v2) gpa = (__typeof__(&cuGetProcAddress_v2))dlsym(h, "cuGetProcAddress_v2");
    if (!gpa) {
        fprintf(stderr, "sim runtime: libcuda.so.1 has no cuGetProcAddress_v2\n");
        return;
    }
    int ok = 1;
    CUdriverProcAddressQueryResult st;
#define X(field, name, sym) \
    for (int pt = 0; pt < 2; pt++) { \
        void *p = NULL; \
        if (gpa(name, &p, CUDA_VERSION, pt ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : CU_GET_PROC_ADDRESS_DEFAULT, \
                &st) != CUDA_SUCCESS || !p) { \
            fprintf(stderr, "sim runtime: driver entry point %s not found\n", name); \
            ok = 0; \
        } \
        D.field[pt] = (__typeof__(&sym))p; \
    }
    DRIVER_LIST(X)
#undef X
    D.ok = ok;
}

static int drv(void)
{
    pthread_once(&d_once, d_load);
    return D.ok;
}

/* Records the error as the real runtime does; "not ready" is an answer, not a failure. */
static cudaError_t ret(cudaError_t e)
{
    if (e != cudaSuccess && e != cudaErrorNotReady)
        last_error = e;
    return e;
}

static cudaError_t retc(CUresult r)
{
    return ret((cudaError_t)r);
}

#define DRV(field, ptsz, ...) (drv() ? retc(D.field[ptsz](__VA_ARGS__)) : ret(cudaErrorInitializationError))

/* The _ptsz/_ptds twins are declared only when the includer asks for them. */
__typeof__(cudaLaunchKernel) cudaLaunchKernel_ptsz;
__typeof__(cudaLaunchKernelExC) cudaLaunchKernelExC_ptsz;
__typeof__(cudaLaunchCooperativeKernel) cudaLaunchCooperativeKernel_ptsz;
__typeof__(cudaMemcpyAsync) cudaMemcpyAsync_ptsz;
__typeof__(cudaMemcpy2DAsync) cudaMemcpy2DAsync_ptsz;
__typeof__(cudaMemcpy3DAsync) cudaMemcpy3DAsync_ptsz;
__typeof__(cudaMemcpy3DPeerAsync) cudaMemcpy3DPeerAsync_ptsz;
__typeof__(cudaMemcpyBatchAsync) cudaMemcpyBatchAsync_ptsz;
__typeof__(cudaMemcpyToSymbolAsync) cudaMemcpyToSymbolAsync_ptsz;
__typeof__(cudaMemcpyFromSymbolAsync) cudaMemcpyFromSymbolAsync_ptsz;
__typeof__(cudaMemsetAsync) cudaMemsetAsync_ptsz;
__typeof__(cudaMemset2DAsync) cudaMemset2DAsync_ptsz;
__typeof__(cudaMemset3DAsync) cudaMemset3DAsync_ptsz;
__typeof__(cudaEventRecord) cudaEventRecord_ptsz;
__typeof__(cudaEventRecordWithFlags) cudaEventRecordWithFlags_ptsz;
__typeof__(cudaStreamWaitEvent) cudaStreamWaitEvent_ptsz;
__typeof__(cudaLaunchHostFunc) cudaLaunchHostFunc_ptsz;
__typeof__(cudaStreamAddCallback) cudaStreamAddCallback_ptsz;
__typeof__(cudaStreamSynchronize) cudaStreamSynchronize_ptsz;
__typeof__(cudaStreamQuery) cudaStreamQuery_ptsz;
__typeof__(cudaStreamGetFlags) cudaStreamGetFlags_ptsz;
__typeof__(cudaStreamGetPriority) cudaStreamGetPriority_ptsz;
__typeof__(cudaMallocAsync) cudaMallocAsync_ptsz;
__typeof__(cudaFreeAsync) cudaFreeAsync_ptsz;
__typeof__(cudaMallocFromPoolAsync) cudaMallocFromPoolAsync_ptsz;
__typeof__(cudaStreamBeginCapture) cudaStreamBeginCapture_ptsz;
__typeof__(cudaStreamBeginCaptureToGraph) cudaStreamBeginCaptureToGraph_ptsz;
__typeof__(cudaStreamEndCapture) cudaStreamEndCapture_ptsz;
__typeof__(cudaStreamIsCapturing) cudaStreamIsCapturing_ptsz;
__typeof__(cudaStreamGetCaptureInfo) cudaStreamGetCaptureInfo_ptsz;
__typeof__(cudaGraphLaunch) cudaGraphLaunch_ptsz;
__typeof__(cudaGraphUpload) cudaGraphUpload_ptsz;
__typeof__(cudaMemcpy) cudaMemcpy_ptds;
__typeof__(cudaMemcpy2D) cudaMemcpy2D_ptds;
__typeof__(cudaMemcpy3D) cudaMemcpy3D_ptds;
__typeof__(cudaMemcpy3DPeer) cudaMemcpy3DPeer_ptds;
__typeof__(cudaMemcpyToSymbol) cudaMemcpyToSymbol_ptds;
__typeof__(cudaMemcpyFromSymbol) cudaMemcpyFromSymbol_ptds;
__typeof__(cudaMemset) cudaMemset_ptds;
__typeof__(cudaMemset2D) cudaMemset2D_ptds;
__typeof__(cudaMemset3D) cudaMemset3D_ptds;
cudaError_t cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr, unsigned long long flags,
                                         enum cudaDriverEntryPointQueryResult *driverStatus);
__typeof__(cudaGetDriverEntryPointByVersion) cudaGetDriverEntryPointByVersion_ptsz;
cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *func);
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,
                               cudaStream_t stream);
cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
                                    size_t sharedMem, cudaStream_t stream);

#define DP(p) ((CUdeviceptr)(uintptr_t)(p))

/* ------------------------------------------------------------------ errors */

#define ERROR_LIST(X) \
    X(cudaSuccess, "no error") \
    X(cudaErrorInvalidValue, "invalid argument") \
    X(cudaErrorMemoryAllocation, "out of memory") \
    X(cudaErrorInitializationError, "initialization error") \
    X(cudaErrorInvalidSymbol, "invalid device symbol") \
    X(cudaErrorInvalidDevicePointer, "invalid device pointer") \
    X(cudaErrorInvalidMemcpyDirection, "invalid copy direction for memcpy") \
    X(cudaErrorInvalidDeviceFunction, "invalid device function") \
    X(cudaErrorNoDevice, "no CUDA-capable device is detected") \
    X(cudaErrorInvalidDevice, "invalid device ordinal") \
    X(cudaErrorIllegalState, "the operation cannot be performed in the present state") \
    X(cudaErrorInvalidKernelImage, "device kernel image is invalid") \
    X(cudaErrorDeviceUninitialized, "invalid device context") \
    X(cudaErrorInvalidResourceHandle, "invalid resource handle") \
    X(cudaErrorSymbolNotFound, "named symbol not found") \
    X(cudaErrorNotReady, "device not ready") \
    X(cudaErrorNotPermitted, "operation not permitted") \
    X(cudaErrorNotSupported, "operation not supported") \
    X(cudaErrorContextIsDestroyed, "context is destroyed") \
    X(cudaErrorHostMemoryAlreadyRegistered, "part or all of the requested memory range is already mapped") \
    X(cudaErrorHostMemoryNotRegistered, "pointer does not correspond to a registered memory region") \
    X(cudaErrorInvalidClusterSize, "invalid cluster size") \
    X(cudaErrorStreamCaptureUnsupported, "operation not permitted when stream is capturing") \
    X(cudaErrorStreamCaptureInvalidated, "operation failed due to a previous error during capture") \
    X(cudaErrorStreamCaptureUnmatched, "capture was not initiated in this stream") \
    X(cudaErrorStreamCaptureIsolation, "dependency created on uncaptured work in another stream") \
    X(cudaErrorGraphExecUpdateFailure, "the graph update was not performed because it included changes which violated constraints specific to instantiated graph update") \
    X(cudaErrorUnknown, "unknown error")

const char *cudaGetErrorString(cudaError_t error)
{
    switch (error) {
#define X(code, text) case code: return text;
        ERROR_LIST(X)
#undef X
    default:
        return "unrecognized error code";
    }
}

const char *cudaGetErrorName(cudaError_t error)
{
    switch (error) {
#define X(code, text) case code: return #code;
        ERROR_LIST(X)
#undef X
    default:
        return "cudaErrorUnknown";
    }
}

cudaError_t cudaGetLastError(void)
{
    cudaError_t e = last_error;
    last_error = cudaSuccess;
    return e;
}

cudaError_t cudaPeekAtLastError(void)
{
    return last_error;
}

/* ----------------------------------------------------------------- devices */

cudaError_t cudaGetDeviceCount(int *count)
{
    if (!count)
        return ret(cudaErrorInvalidValue);
    *count = simc_device_count();
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int device)
{
    simc_tick();
    return retc(simc_set_device(device));
}

cudaError_t cudaGetDevice(int *device)
{
    if (!device)
        return ret(cudaErrorInvalidValue);
    *device = simc_get_device();
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void)
{
    return DRV(CtxSynchronize, 0, NULL);
}

/* Ends every stream, event, graph exec and allocation of the current device's
 * primary context; their handles come back for the next objects created. */
cudaError_t cudaDeviceReset(void)
{
    return DRV(DevicePrimaryCtxReset, 0, simc_get_device());
}

cudaError_t cudaDriverGetVersion(int *driverVersion)
{
    if (!driverVersion)
        return ret(cudaErrorInvalidValue);
    *driverVersion = CUDA_VERSION;
    return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int *runtimeVersion)
{
    if (!runtimeVersion)
        return ret(cudaErrorInvalidValue);
    *runtimeVersion = CUDART_VERSION;
    return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device)
{
    if (!prop)
        return ret(cudaErrorInvalidValue);
    if (device < 0 || device >= simc_device_count())
        return ret(cudaErrorInvalidDevice);
    memset(prop, 0, sizeof(*prop));
    snprintf(prop->name, sizeof(prop->name), "Simulated CUDA device %d", device);
    prop->major = 9;
    prop->minor = 0;
    prop->totalGlobalMem = (size_t)1 << 34;
    prop->multiProcessorCount = 4;
    prop->maxThreadsPerBlock = 1024;
    prop->warpSize = 32;
    return cudaSuccess;
}

/* ------------------------------------------------------------------ memory */

cudaError_t cudaMalloc(void **devPtr, size_t size)
{
    return retc(simc_malloc(devPtr, size, SIM_MEM_DEVICE, 0));
}

cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags)
{
    if (!devPtr || !size || (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost))
        return ret(cudaErrorInvalidValue);
    return retc(simc_malloc(devPtr, size, SIM_MEM_MANAGED, flags));
}

cudaError_t cudaFree(void *devPtr)
{
    return DRV(MemFree, 0, DP(devPtr));
}

cudaError_t cudaMallocHost(void **ptr, size_t size)
{
    return retc(simc_malloc(ptr, size, SIM_MEM_PINNED, 0));
}

cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
{
    if (flags & ~(unsigned)(cudaHostAllocPortable | cudaHostAllocMapped | cudaHostAllocWriteCombined))
        return ret(cudaErrorInvalidValue);
    return retc(simc_malloc(pHost, size, SIM_MEM_PINNED, flags));
}

cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags)
{
    return DRV(MemHostRegister, 0, ptr, size, flags);
}

cudaError_t cudaHostUnregister(void *ptr)
{
    return DRV(MemHostUnregister, 0, ptr);
}

cudaError_t cudaHostGetDevicePointer(void **pDevice, void *pHost, unsigned int flags)
{
    CUdeviceptr d = 0;
    if (!pDevice)
        return ret(cudaErrorInvalidValue);
    cudaError_t e = DRV(MemHostGetDevicePointer, 0, &d, pHost, flags);
    if (e == cudaSuccess)
        *pDevice = (void *)(uintptr_t)d;
    return e;
}

cudaError_t cudaHostGetFlags(unsigned int *pFlags, void *pHost)
{
    return DRV(MemHostGetFlags, 0, pFlags, pHost);
}

cudaError_t cudaFreeHost(void *ptr)
{
    return DRV(MemFreeHost, 0, ptr);
}

static cudaError_t malloc_async(void **p, size_t size, cudaStream_t s, int ptsz)
{
    CUdeviceptr d = 0;
    if (!p)
        return ret(cudaErrorInvalidValue);
    cudaError_t e = DRV(MemAllocAsync, ptsz, &d, size, s);
    *p = (void *)(uintptr_t)d;
    return e;
}

cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream)
{
    return malloc_async(devPtr, size, hStream, 0);
}

cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream)
{
    return malloc_async(devPtr, size, hStream, 1);
}

/* The runtime's pool types are the driver's. */
cudaError_t cudaMemPoolCreate(cudaMemPool_t *memPool, const struct cudaMemPoolProps *poolProps)
{
    return DRV(MemPoolCreate, 0, (CUmemoryPool *)memPool, (const CUmemPoolProps *)poolProps);
}

cudaError_t cudaMemPoolDestroy(cudaMemPool_t memPool)
{
    return DRV(MemPoolDestroy, 0, (CUmemoryPool)memPool);
}

cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr, void *value)
{
    return DRV(MemPoolGetAttribute, 0, (CUmemoryPool)memPool, (CUmemPool_attribute)attr, value);
}

static cudaError_t malloc_from_pool(void **p, size_t size, cudaMemPool_t pool, cudaStream_t s, int ptsz)
{
    CUdeviceptr d = 0;
    if (!p)
        return ret(cudaErrorInvalidValue);
    cudaError_t e = DRV(MemAllocFromPoolAsync, ptsz, &d, size, (CUmemoryPool)pool, s);
    *p = (void *)(uintptr_t)d;
    return e;
}

cudaError_t cudaMallocFromPoolAsync(void **ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream)
{
    return malloc_from_pool(ptr, size, memPool, stream, 0);
}

cudaError_t cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream)
{
    return malloc_from_pool(ptr, size, memPool, stream, 1);
}

cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t hStream)
{
    return DRV(MemFreeAsync, 0, DP(devPtr), hStream);
}

cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream)
{
    return DRV(MemFreeAsync, 1, DP(devPtr), hStream);
}

/* From the driver's attributes: registered memory is host memory, managed
 * memory is device memory the driver marks managed. */
cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attributes, const void *ptr)
{
    if (!attributes)
        return ret(cudaErrorInvalidValue);
    unsigned type = 0;
    int managed = 0, dev = -2;
    void *hp = NULL;
    CUdeviceptr dp = 0;
    CUpointer_attribute which[] = { CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, CU_POINTER_ATTRIBUTE_HOST_POINTER,
                                    CU_POINTER_ATTRIBUTE_DEVICE_POINTER };
    void *data[] = { &type, &managed, &dev, &hp, &dp };
    cudaError_t e = DRV(PointerGetAttributes, 0, 5, which, data, DP(ptr));
    if (e != cudaSuccess)
        return e;
    memset(attributes, 0, sizeof(*attributes));
    attributes->device = dev;
    attributes->hostPointer = hp;
    attributes->devicePointer = (void *)(uintptr_t)dp;
    if (managed)
        attributes->type = cudaMemoryTypeManaged;
    else if (type == CU_MEMORYTYPE_DEVICE)
        attributes->type = cudaMemoryTypeDevice;
    else if (type == CU_MEMORYTYPE_HOST)
        attributes->type = cudaMemoryTypeHost;
    else
        attributes->type = cudaMemoryTypeUnregistered;
    return cudaSuccess;
}

static cudaError_t memcpy_async(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind, cudaStream_t s,
                                int ptsz)
{
    switch (kind) {
    case cudaMemcpyHostToDevice:
        return DRV(MemcpyHtoDAsync, ptsz, DP(dst), src, n, s);
    case cudaMemcpyDeviceToHost:
        return DRV(MemcpyDtoHAsync, ptsz, dst, DP(src), n, s);
    case cudaMemcpyDeviceToDevice:
        return DRV(MemcpyDtoDAsync, ptsz, DP(dst), DP(src), n, s);
    case cudaMemcpyHostToHost:
    case cudaMemcpyDefault:
        return DRV(MemcpyAsync, ptsz, DP(dst), DP(src), n, s);
    default:
        return ret(cudaErrorInvalidMemcpyDirection);
    }
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream)
{
    return memcpy_async(dst, src, count, kind, stream, 0);
}

cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                                 cudaStream_t stream)
{
    return memcpy_async(dst, src, count, kind, stream, 1);
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
    if (kind < cudaMemcpyHostToHost || kind > cudaMemcpyDefault)
        return ret(cudaErrorInvalidMemcpyDirection);
    return DRV(Memcpy, 0, DP(dst), DP(src), count);
}

cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
    if (kind < cudaMemcpyHostToHost || kind > cudaMemcpyDefault)
        return ret(cudaErrorInvalidMemcpyDirection);
    return DRV(Memcpy, 1, DP(dst), DP(src), count);
}

/* The memory types a copy kind names; Default lets the address tell (UVA). */
static CUmemorytype side_type(enum cudaMemcpyKind kind, int is_src)
{
    switch (kind) {
    case cudaMemcpyHostToHost:
        return CU_MEMORYTYPE_HOST;
    case cudaMemcpyHostToDevice:
        return is_src ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
    case cudaMemcpyDeviceToHost:
        return is_src ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
    case cudaMemcpyDeviceToDevice:
        return CU_MEMORYTYPE_DEVICE;
    default:
        return CU_MEMORYTYPE_UNIFIED;
    }
}

static int kind_ok(enum cudaMemcpyKind kind)
{
    return kind >= cudaMemcpyHostToHost && kind <= cudaMemcpyDefault;
}

static void side(CUmemorytype t, CUmemorytype *tp, const void **host, CUdeviceptr *dev, const void *p)
{
    *tp = t;
    if (t == CU_MEMORYTYPE_HOST)
        *host = p;
    else
        *dev = DP(p);
}

static void copy2d_params(CUDA_MEMCPY2D *p, void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                          size_t height, enum cudaMemcpyKind kind)
{
    memset(p, 0, sizeof(*p));
    const void *dh = NULL;
    side(side_type(kind, 1), &p->srcMemoryType, &p->srcHost, &p->srcDevice, src);
    side(side_type(kind, 0), &p->dstMemoryType, &dh, &p->dstDevice, dst);
    p->dstHost = (void *)dh;
    p->srcPitch = spitch;
    p->dstPitch = dpitch;
    p->WidthInBytes = width;
    p->Height = height;
}

static cudaError_t memcpy2d_async(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                  size_t height, enum cudaMemcpyKind kind, cudaStream_t s, int ptsz)
{
    if (!kind_ok(kind))
        return ret(cudaErrorInvalidMemcpyDirection);
    CUDA_MEMCPY2D p;
    copy2d_params(&p, dst, dpitch, src, spitch, width, height, kind);
    return DRV(Memcpy2DAsync, ptsz, &p, s);
}

cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                              enum cudaMemcpyKind kind, cudaStream_t stream)
{
    return memcpy2d_async(dst, dpitch, src, spitch, width, height, kind, stream, 0);
}

cudaError_t cudaMemcpy2DAsync_ptsz(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                   size_t height, enum cudaMemcpyKind kind, cudaStream_t stream)
{
    return memcpy2d_async(dst, dpitch, src, spitch, width, height, kind, stream, 1);
}

static cudaError_t memcpy2d_sync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                 size_t height, enum cudaMemcpyKind kind, int ptsz)
{
    if (!kind_ok(kind))
        return ret(cudaErrorInvalidMemcpyDirection);
    CUDA_MEMCPY2D p;
    copy2d_params(&p, dst, dpitch, src, spitch, width, height, kind);
    return DRV(Memcpy2D, ptsz, &p);
}

cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                         enum cudaMemcpyKind kind)
{
    return memcpy2d_sync(dst, dpitch, src, spitch, width, height, kind, 0);
}

cudaError_t cudaMemcpy2D_ptds(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                              size_t height, enum cudaMemcpyKind kind)
{
    return memcpy2d_sync(dst, dpitch, src, spitch, width, height, kind, 1);
}

/* Linear memory only: arrays are refused. A slice is pitch * ysize bytes. */
static cudaError_t copy3d_params(CUDA_MEMCPY3D *q, const struct cudaMemcpy3DParms *p)
{
    if (!p || p->srcArray || p->dstArray)
        return cudaErrorInvalidValue;
    if (!kind_ok(p->kind))
        return cudaErrorInvalidMemcpyDirection;
    memset(q, 0, sizeof(*q));
    const void *dh = NULL;
    side(side_type(p->kind, 1), &q->srcMemoryType, &q->srcHost, &q->srcDevice, p->srcPtr.ptr);
    side(side_type(p->kind, 0), &q->dstMemoryType, &dh, &q->dstDevice, p->dstPtr.ptr);
    q->dstHost = (void *)dh;
    q->srcXInBytes = p->srcPos.x;
    q->srcY = p->srcPos.y;
    q->srcZ = p->srcPos.z;
    q->srcPitch = p->srcPtr.pitch;
    q->srcHeight = p->srcPtr.ysize;
    q->dstXInBytes = p->dstPos.x;
    q->dstY = p->dstPos.y;
    q->dstZ = p->dstPos.z;
    q->dstPitch = p->dstPtr.pitch;
    q->dstHeight = p->dstPtr.ysize;
    q->WidthInBytes = p->extent.width;
    q->Height = p->extent.height;
    q->Depth = p->extent.depth;
    return cudaSuccess;
}

static cudaError_t memcpy3d(const struct cudaMemcpy3DParms *p, cudaStream_t s, int ptsz, int async)
{
    CUDA_MEMCPY3D q;
    cudaError_t e = copy3d_params(&q, p);
    if (e != cudaSuccess)
        return ret(e);
    return async ? DRV(Memcpy3DAsync, ptsz, &q, s) : DRV(Memcpy3D, ptsz, &q);
}

cudaError_t cudaMemcpy3D(const struct cudaMemcpy3DParms *p)
{
    return memcpy3d(p, NULL, 0, 0);
}

cudaError_t cudaMemcpy3D_ptds(const struct cudaMemcpy3DParms *p)
{
    return memcpy3d(p, NULL, 1, 0);
}

cudaError_t cudaMemcpy3DAsync(const struct cudaMemcpy3DParms *p, cudaStream_t stream)
{
    return memcpy3d(p, stream, 0, 1);
}

cudaError_t cudaMemcpy3DAsync_ptsz(const struct cudaMemcpy3DParms *p, cudaStream_t stream)
{
    return memcpy3d(p, stream, 1, 1);
}

/* Peer copies name devices; the driver wants their primary contexts. */
cudaError_t cudaMemcpyPeer(void *dst, int dstDevice, const void *src, int srcDevice, size_t count)
{
    CUcontext dc = simc_primary(dstDevice), sc = simc_primary(srcDevice);
    if (!dc || !sc)
        return ret(cudaErrorInvalidDevice);
    return DRV(MemcpyPeer, 0, DP(dst), dc, DP(src), sc, count);
}

cudaError_t cudaMemcpyPeerAsync(void *dst, int dstDevice, const void *src, int srcDevice, size_t count,
                                cudaStream_t stream)
{
    CUcontext dc = simc_primary(dstDevice), sc = simc_primary(srcDevice);
    if (!dc || !sc)
        return ret(cudaErrorInvalidDevice);
    return DRV(MemcpyPeerAsync, 0, DP(dst), dc, DP(src), sc, count, stream);
}

static cudaError_t memcpy3d_peer(const struct cudaMemcpy3DPeerParms *p, cudaStream_t s, int ptsz, int async)
{
    if (!p || p->srcArray || p->dstArray)
        return ret(cudaErrorInvalidValue);
    CUcontext dc = simc_primary(p->dstDevice), sc = simc_primary(p->srcDevice);
    if (!dc || !sc)
        return ret(cudaErrorInvalidDevice);
    CUDA_MEMCPY3D_PEER q;
    memset(&q, 0, sizeof(q));
    q.srcMemoryType = q.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
    q.srcDevice = DP(p->srcPtr.ptr);
    q.dstDevice = DP(p->dstPtr.ptr);
    q.srcContext = sc;
    q.dstContext = dc;
    q.srcXInBytes = p->srcPos.x;
    q.srcY = p->srcPos.y;
    q.srcZ = p->srcPos.z;
    q.srcPitch = p->srcPtr.pitch;
    q.srcHeight = p->srcPtr.ysize;
    q.dstXInBytes = p->dstPos.x;
    q.dstY = p->dstPos.y;
    q.dstZ = p->dstPos.z;
    q.dstPitch = p->dstPtr.pitch;
    q.dstHeight = p->dstPtr.ysize;
    q.WidthInBytes = p->extent.width;
    q.Height = p->extent.height;
    q.Depth = p->extent.depth;
    return async ? DRV(Memcpy3DPeerAsync, ptsz, &q, s) : DRV(Memcpy3DPeer, ptsz, &q);
}

cudaError_t cudaMemcpy3DPeer(const struct cudaMemcpy3DPeerParms *p)
{
    return memcpy3d_peer(p, NULL, 0, 0);
}

cudaError_t cudaMemcpy3DPeer_ptds(const struct cudaMemcpy3DPeerParms *p)
{
    return memcpy3d_peer(p, NULL, 1, 0);
}

cudaError_t cudaMemcpy3DPeerAsync(const struct cudaMemcpy3DPeerParms *p, cudaStream_t stream)
{
    return memcpy3d_peer(p, stream, 0, 1);
}

cudaError_t cudaMemcpy3DPeerAsync_ptsz(const struct cudaMemcpy3DPeerParms *p, cudaStream_t stream)
{
    return memcpy3d_peer(p, stream, 1, 1);
}

/* Pointers and CUdeviceptr, cudaMemcpyAttributes and CUmemcpyAttributes share
 * their layouts, so the arrays pass through as the real runtime passes them. */
static cudaError_t memcpy_batch(void *const *dsts, const void *const *srcs, const size_t *sizes, size_t count,
                                struct cudaMemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,
                                cudaStream_t s, int ptsz)
{
    return DRV(MemcpyBatchAsync, ptsz, (CUdeviceptr *)(uintptr_t)dsts, (CUdeviceptr *)(uintptr_t)srcs,
               (size_t *)(uintptr_t)sizes, count, (CUmemcpyAttributes *)(void *)attrs, attrsIdxs, numAttrs, s);
}

cudaError_t cudaMemcpyBatchAsync(void *const *dsts, const void *const *srcs, const size_t *sizes, size_t count,
                                 struct cudaMemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,
                                 cudaStream_t stream)
{
    return memcpy_batch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, stream, 0);
}

cudaError_t cudaMemcpyBatchAsync_ptsz(void *const *dsts, const void *const *srcs, const size_t *sizes, size_t count,
                                      struct cudaMemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,
                                      cudaStream_t stream)
{
    return memcpy_batch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, stream, 1);
}

cudaError_t cudaMemset(void *devPtr, int value, size_t count)
{
    return DRV(MemsetD8, 0, DP(devPtr), (unsigned char)value, count);
}

cudaError_t cudaMemset_ptds(void *devPtr, int value, size_t count)
{
    return DRV(MemsetD8, 1, DP(devPtr), (unsigned char)value, count);
}

cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream)
{
    return DRV(MemsetD8Async, 0, DP(devPtr), (unsigned char)value, count, stream);
}

cudaError_t cudaMemsetAsync_ptsz(void *devPtr, int value, size_t count, cudaStream_t stream)
{
    return DRV(MemsetD8Async, 1, DP(devPtr), (unsigned char)value, count, stream);
}

cudaError_t cudaMemset2D(void *devPtr, size_t pitch, int value, size_t width, size_t height)
{
    return DRV(MemsetD2D8, 0, DP(devPtr), pitch, (unsigned char)value, width, height);
}

cudaError_t cudaMemset2D_ptds(void *devPtr, size_t pitch, int value, size_t width, size_t height)
{
    return DRV(MemsetD2D8, 1, DP(devPtr), pitch, (unsigned char)value, width, height);
}

cudaError_t cudaMemset2DAsync(void *devPtr, size_t pitch, int value, size_t width, size_t height,
                              cudaStream_t stream)
{
    return DRV(MemsetD2D8Async, 0, DP(devPtr), pitch, (unsigned char)value, width, height, stream);
}

cudaError_t cudaMemset2DAsync_ptsz(void *devPtr, size_t pitch, int value, size_t width, size_t height,
                                   cudaStream_t stream)
{
    return DRV(MemsetD2D8Async, 1, DP(devPtr), pitch, (unsigned char)value, width, height, stream);
}

/* One 2D memset a slice, in stream order; slices are pitch * ysize apart. */
static cudaError_t memset3d(struct cudaPitchedPtr p, int value, struct cudaExtent e, cudaStream_t s, int ptsz,
                            int async)
{
    size_t ysize = p.ysize ? p.ysize : e.height;
    if (!p.ptr || (e.depth > 1 && ysize < e.height) || (e.height > 1 && p.pitch < e.width))
        return ret(cudaErrorInvalidValue);
    size_t pitch = p.pitch ? p.pitch : e.width;
    for (size_t z = 0; z < e.depth; z++) {
        CUdeviceptr d = DP((char *)p.ptr + z * pitch * ysize);
        cudaError_t r = async ? DRV(MemsetD2D8Async, ptsz, d, pitch, (unsigned char)value, e.width, e.height, s)
                              : DRV(MemsetD2D8, ptsz, d, pitch, (unsigned char)value, e.width, e.height);
        if (r != cudaSuccess)
            return r;
    }
    return cudaSuccess;
}

cudaError_t cudaMemset3D(struct cudaPitchedPtr pitchedDevPtr, int value, struct cudaExtent extent)
{
    return memset3d(pitchedDevPtr, value, extent, NULL, 0, 0);
}

cudaError_t cudaMemset3D_ptds(struct cudaPitchedPtr pitchedDevPtr, int value, struct cudaExtent extent)
{
    return memset3d(pitchedDevPtr, value, extent, NULL, 1, 0);
}

cudaError_t cudaMemset3DAsync(struct cudaPitchedPtr pitchedDevPtr, int value, struct cudaExtent extent,
                              cudaStream_t stream)
{
    return memset3d(pitchedDevPtr, value, extent, stream, 0, 1);
}

cudaError_t cudaMemset3DAsync_ptsz(struct cudaPitchedPtr pitchedDevPtr, int value, struct cudaExtent extent,
                                   cudaStream_t stream)
{
    return memset3d(pitchedDevPtr, value, extent, stream, 1, 1);
}

/* ----------------------------------------------------------------- symbols */

/* The current context's copy of a __device__ variable registered with
 * simRegisterSymbol; offset + count must stay inside it. */
static cudaError_t symbol_at(const void *symbol, size_t offset, size_t count, char **at)
{
    void *dev = NULL;
    size_t size = 0;
    CUresult r = simc_symbol(symbol, &dev, &size);
    if (r == CUDA_ERROR_NOT_FOUND)
        return cudaErrorInvalidSymbol;
    if (r != CUDA_SUCCESS)
        return (cudaError_t)r;
    if (offset > size || count > size - offset)
        return cudaErrorInvalidValue;
    *at = (char *)dev + offset;
    return cudaSuccess;
}

static cudaError_t to_symbol(const void *symbol, const void *src, size_t count, size_t offset,
                             enum cudaMemcpyKind kind, cudaStream_t s, int ptsz, int async)
{
    char *at;
    if (kind != cudaMemcpyHostToDevice && kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault)
        return ret(cudaErrorInvalidMemcpyDirection);
    cudaError_t e = symbol_at(symbol, offset, count, &at);
    if (e != cudaSuccess)
        return ret(e);
    return async ? DRV(MemcpyAsync, ptsz, DP(at), DP(src), count, s) : DRV(Memcpy, ptsz, DP(at), DP(src), count);
}

static cudaError_t from_symbol(void *dst, const void *symbol, size_t count, size_t offset,
                               enum cudaMemcpyKind kind, cudaStream_t s, int ptsz, int async)
{
    char *at;
    if (kind != cudaMemcpyDeviceToHost && kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault)
        return ret(cudaErrorInvalidMemcpyDirection);
    cudaError_t e = symbol_at(symbol, offset, count, &at);
    if (e != cudaSuccess)
        return ret(e);
    return async ? DRV(MemcpyAsync, ptsz, DP(dst), DP(at), count, s) : DRV(Memcpy, ptsz, DP(dst), DP(at), count);
}

cudaError_t cudaMemcpyToSymbol(const void *symbol, const void *src, size_t count, size_t offset,
                               enum cudaMemcpyKind kind)
{
    return to_symbol(symbol, src, count, offset, kind, NULL, 0, 0);
}

cudaError_t cudaMemcpyToSymbol_ptds(const void *symbol, const void *src, size_t count, size_t offset,
                                    enum cudaMemcpyKind kind)
{
    return to_symbol(symbol, src, count, offset, kind, NULL, 1, 0);
}

cudaError_t cudaMemcpyToSymbolAsync(const void *symbol, const void *src, size_t count, size_t offset,
                                    enum cudaMemcpyKind kind, cudaStream_t stream)
{
    return to_symbol(symbol, src, count, offset, kind, stream, 0, 1);
}

cudaError_t cudaMemcpyToSymbolAsync_ptsz(const void *symbol, const void *src, size_t count, size_t offset,
                                         enum cudaMemcpyKind kind, cudaStream_t stream)
{
    return to_symbol(symbol, src, count, offset, kind, stream, 1, 1);
}

cudaError_t cudaMemcpyFromSymbol(void *dst, const void *symbol, size_t count, size_t offset,
                                 enum cudaMemcpyKind kind)
{
    return from_symbol(dst, symbol, count, offset, kind, NULL, 0, 0);
}

cudaError_t cudaMemcpyFromSymbol_ptds(void *dst, const void *symbol, size_t count, size_t offset,
                                      enum cudaMemcpyKind kind)
{
    return from_symbol(dst, symbol, count, offset, kind, NULL, 1, 0);
}

cudaError_t cudaMemcpyFromSymbolAsync(void *dst, const void *symbol, size_t count, size_t offset,
                                      enum cudaMemcpyKind kind, cudaStream_t stream)
{
    return from_symbol(dst, symbol, count, offset, kind, stream, 0, 1);
}

cudaError_t cudaMemcpyFromSymbolAsync_ptsz(void *dst, const void *symbol, size_t count, size_t offset,
                                           enum cudaMemcpyKind kind, cudaStream_t stream)
{
    return from_symbol(dst, symbol, count, offset, kind, stream, 1, 1);
}

cudaError_t cudaGetSymbolAddress(void **devPtr, const void *symbol)
{
    char *at;
    if (!devPtr)
        return ret(cudaErrorInvalidValue);
    cudaError_t e = symbol_at(symbol, 0, 0, &at);
    if (e == cudaSuccess)
        *devPtr = at;
    return ret(e);
}

cudaError_t cudaGetSymbolSize(size_t *size, const void *symbol)
{
    if (!size)
        return ret(cudaErrorInvalidValue);
    CUresult r = simc_symbol(symbol, NULL, size);
    return ret(r == CUDA_ERROR_NOT_FOUND ? cudaErrorInvalidSymbol : (cudaError_t)r);
}

/* ----------------------------------------------------------------- streams */

cudaError_t cudaStreamCreate(cudaStream_t *pStream)
{
    return retc(simc_stream_create(pStream, 0, 0));
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags)
{
    return retc(simc_stream_create(pStream, flags, 0));
}

cudaError_t cudaStreamCreateWithPriority(cudaStream_t *pStream, unsigned int flags, int priority)
{
    return retc(simc_stream_create(pStream, flags, priority));
}

cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
    return retc(simc_stream_destroy(stream));
}

cudaError_t cudaStreamGetFlags(cudaStream_t hStream, unsigned int *flags)
{
    return retc(simc_stream_get_flags(hStream, 0, flags));
}

cudaError_t cudaStreamGetFlags_ptsz(cudaStream_t hStream, unsigned int *flags)
{
    return retc(simc_stream_get_flags(hStream, 1, flags));
}

cudaError_t cudaStreamGetPriority(cudaStream_t hStream, int *priority)
{
    return retc(simc_stream_get_priority(hStream, 0, priority));
}

cudaError_t cudaStreamGetPriority_ptsz(cudaStream_t hStream, int *priority)
{
    return retc(simc_stream_get_priority(hStream, 1, priority));
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
    return DRV(StreamSynchronize, 0, stream);
}

cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream)
{
    return DRV(StreamSynchronize, 1, stream);
}

cudaError_t cudaStreamQuery(cudaStream_t stream)
{
    return DRV(StreamQuery, 0, stream);
}

cudaError_t cudaStreamQuery_ptsz(cudaStream_t stream)
{
    return DRV(StreamQuery, 1, stream);
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags)
{
    return DRV(StreamWaitEvent, 0, stream, event, flags);
}

cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event, unsigned int flags)
{
    return DRV(StreamWaitEvent, 1, stream, event, flags);
}

/* cudaStreamCallback_t and CUstreamCallback differ only in enum and handle
 * spellings of the same ABI types. */
static CUstreamCallback as_cu_callback(cudaStreamCallback_t cb)
{
    CUstreamCallback r;
    memcpy(&r, &cb, sizeof(r));
    return r;
}

cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback, void *userData,
                                  unsigned int flags)
{
    return DRV(StreamAddCallback, 0, stream, as_cu_callback(callback), userData, flags);
}

cudaError_t cudaStreamAddCallback_ptsz(cudaStream_t stream, cudaStreamCallback_t callback, void *userData,
                                       unsigned int flags)
{
    return DRV(StreamAddCallback, 1, stream, as_cu_callback(callback), userData, flags);
}

cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData)
{
    return DRV(LaunchHostFunc, 0, stream, fn, userData);
}

cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t stream, cudaHostFn_t fn, void *userData)
{
    return DRV(LaunchHostFunc, 1, stream, fn, userData);
}

/* ------------------------------------------------------------------ events */

cudaError_t cudaEventCreate(cudaEvent_t *event)
{
    return retc(simc_event_create(event, 0));
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags)
{
    return retc(simc_event_create(event, flags));
}

cudaError_t cudaEventDestroy(cudaEvent_t event)
{
    return retc(simc_event_destroy(event));
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
    return DRV(EventRecord, 0, event, stream);
}

cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream)
{
    return DRV(EventRecord, 1, event, stream);
}

cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned int flags)
{
    return DRV(EventRecordWithFlags, 0, event, stream, flags);
}

cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t event, cudaStream_t stream, unsigned int flags)
{
    return DRV(EventRecordWithFlags, 1, event, stream, flags);
}

cudaError_t cudaEventQuery(cudaEvent_t event)
{
    return DRV(EventQuery, 0, event);
}

cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
    return DRV(EventSynchronize, 0, event);
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    return retc(simc_event_elapsed(ms, start, end));
}

/* ---------------------------------------------------------------- launches */

static cudaError_t launch(const void *func, dim3 g, dim3 b, void **args, size_t shmem, cudaStream_t s, int ptsz)
{
    struct CUkern_st *k = simc_kernel_lookup(func);
    if (!k)
        return ret(cudaErrorInvalidDeviceFunction);
    return DRV(LaunchKernel, ptsz, (CUfunction)(void *)k, g.x, g.y, g.z, b.x, b.y, b.z, (unsigned)shmem, s, args,
               NULL);
}

cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,
                             cudaStream_t stream)
{
    return launch(func, gridDim, blockDim, args, sharedMem, stream, 0);
}

cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,
                                  cudaStream_t stream)
{
    return launch(func, gridDim, blockDim, args, sharedMem, stream, 1);
}

cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *func)
{
    if (!kernel)
        return ret(cudaErrorInvalidValue);
    struct CUkern_st *k = simc_kernel_lookup(func);
    if (!k)
        return ret(cudaErrorInvalidDeviceFunction);
    *kernel = k;
    return cudaSuccess;
}

cudaError_t cudaGetKernel(cudaKernel_t *kernelPtr, const void *entryFuncAddr)
{
    return __cudaGetKernel(kernelPtr, entryFuncAddr);
}

cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,
                               cudaStream_t stream)
{
    return launch(kernel, gridDim, blockDim, args, sharedMem, stream, 0);
}

cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
                                    size_t sharedMem, cudaStream_t stream)
{
    return launch(kernel, gridDim, blockDim, args, sharedMem, stream, 1);
}

/* cudaLaunchAttribute and CUlaunchAttribute share their layout, so the
 * attributes pass through unchanged, as the real runtime forwards them. */
static cudaError_t launch_ex(const cudaLaunchConfig_t *c, const void *func, void **args, int ptsz,
                             int cooperative)
{
    if (!c)
        return ret(cudaErrorInvalidValue);
    struct CUkern_st *k = simc_kernel_lookup(func);
    if (!k)
        return ret(cudaErrorInvalidDeviceFunction);
    CUlaunchAttribute coop[1];
    CUlaunchConfig cc = {
        .gridDimX = c->gridDim.x, .gridDimY = c->gridDim.y, .gridDimZ = c->gridDim.z,
        .blockDimX = c->blockDim.x, .blockDimY = c->blockDim.y, .blockDimZ = c->blockDim.z,
        .sharedMemBytes = (unsigned)c->dynamicSmemBytes, .hStream = c->stream,
        .attrs = (CUlaunchAttribute *)(void *)c->attrs, .numAttrs = c->numAttrs,
    };
    if (cooperative) {
        memset(coop, 0, sizeof(coop));
        coop[0].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
        coop[0].value.cooperative = 1;
        cc.attrs = coop;
        cc.numAttrs = 1;
    }
    return DRV(LaunchKernelEx, ptsz, &cc, (CUfunction)(void *)k, args, NULL);
}

cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *config, const void *func, void **args)
{
    return launch_ex(config, func, args, 0, 0);
}

cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t *config, const void *func, void **args)
{
    return launch_ex(config, func, args, 1, 0);
}

cudaError_t cudaLaunchCooperativeKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                                        size_t sharedMem, cudaStream_t stream)
{
    cudaLaunchConfig_t c = { .gridDim = gridDim, .blockDim = blockDim, .dynamicSmemBytes = sharedMem,
                             .stream = stream };
    return launch_ex(&c, func, args, 0, 1);
}

cudaError_t cudaLaunchCooperativeKernel_ptsz(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                                             size_t sharedMem, cudaStream_t stream)
{
    cudaLaunchConfig_t c = { .gridDim = gridDim, .blockDim = blockDim, .dynamicSmemBytes = sharedMem,
                             .stream = stream };
    return launch_ex(&c, func, args, 1, 1);
}

cudaError_t cudaFuncGetParamInfo(const void *func, size_t paramIndex, size_t *paramOffset, size_t *paramSize)
{
    struct CUkern_st *k = simc_kernel_lookup(func);
    if (!k)
        return ret(cudaErrorInvalidDeviceFunction);
    return DRV(FuncGetParamInfo, 0, (CUfunction)(void *)k, paramIndex, paramOffset, paramSize);
}

/* cudaFuncAttribute and CUfunction_attribute agree on the settable ones. */
cudaError_t cudaFuncSetAttribute(const void *func, enum cudaFuncAttribute attr, int value)
{
    struct CUkern_st *k = simc_kernel_lookup(func);
    if (!k)
        return ret(cudaErrorInvalidDeviceFunction);
    return DRV(FuncSetAttribute, 0, (CUfunction)(void *)k, (CUfunction_attribute)attr, value);
}

cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes *attr, const void *func)
{
    struct CUkern_st *k = simc_kernel_lookup(func);
    if (!k)
        return ret(cudaErrorInvalidDeviceFunction);
    if (!attr)
        return ret(cudaErrorInvalidValue);
    memset(attr, 0, sizeof(*attr));
    CUfunction f = (CUfunction)(void *)k;
    int v[CU_FUNC_ATTRIBUTE_MAX];
    for (int a = 0; a < CU_FUNC_ATTRIBUTE_MAX; a++) {
        v[a] = 0;
        cudaError_t e = DRV(FuncGetAttribute, 0, &v[a], (CUfunction_attribute)a, f);
        if (e != cudaSuccess)
            return e;
    }
    attr->sharedSizeBytes = (size_t)v[CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES];
    attr->constSizeBytes = (size_t)v[CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES];
    attr->localSizeBytes = (size_t)v[CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES];
    attr->maxThreadsPerBlock = v[CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK];
    attr->numRegs = v[CU_FUNC_ATTRIBUTE_NUM_REGS];
    attr->ptxVersion = v[CU_FUNC_ATTRIBUTE_PTX_VERSION];
    attr->binaryVersion = v[CU_FUNC_ATTRIBUTE_BINARY_VERSION];
    attr->cacheModeCA = v[CU_FUNC_ATTRIBUTE_CACHE_MODE_CA];
    attr->maxDynamicSharedSizeBytes = v[CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES];
    attr->preferredShmemCarveout = v[CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT];
    attr->clusterDimMustBeSet = v[CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET];
    attr->requiredClusterWidth = v[CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH];
    attr->requiredClusterHeight = v[CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT];
    attr->requiredClusterDepth = v[CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH];
    attr->clusterSchedulingPolicyPreference = v[CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE];
    attr->nonPortableClusterSizeAllowed = v[CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED];
    return cudaSuccess;
}

cudaError_t cudaFuncGetName(const char **name, const void *func)
{
    struct CUkern_st *k = simc_kernel_lookup(func);
    if (!k || !name)
        return ret(cudaErrorInvalidDeviceFunction);
    *name = k->name;
    return cudaSuccess;
}

/* ----------------------------------------------------------------- capture */

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode)
{
    return DRV(StreamBeginCapture, 0, stream, (CUstreamCaptureMode)mode);
}

cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t stream, enum cudaStreamCaptureMode mode)
{
    return DRV(StreamBeginCapture, 1, stream, (CUstreamCaptureMode)mode);
}

cudaError_t cudaStreamBeginCaptureToGraph(cudaStream_t stream, cudaGraph_t graph, const cudaGraphNode_t *dependencies,
                                          const cudaGraphEdgeData *dependencyData, size_t numDependencies,
                                          enum cudaStreamCaptureMode mode)
{
    return DRV(StreamBeginCaptureToGraph, 0, stream, graph, dependencies, (const CUgraphEdgeData *)dependencyData,
               numDependencies, (CUstreamCaptureMode)mode);
}

cudaError_t cudaStreamBeginCaptureToGraph_ptsz(cudaStream_t stream, cudaGraph_t graph,
                                               const cudaGraphNode_t *dependencies,
                                               const cudaGraphEdgeData *dependencyData, size_t numDependencies,
                                               enum cudaStreamCaptureMode mode)
{
    return DRV(StreamBeginCaptureToGraph, 1, stream, graph, dependencies, (const CUgraphEdgeData *)dependencyData,
               numDependencies, (CUstreamCaptureMode)mode);
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *pGraph)
{
    return DRV(StreamEndCapture, 0, stream, pGraph);
}

cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t *pGraph)
{
    return DRV(StreamEndCapture, 1, stream, pGraph);
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus *pCaptureStatus)
{
    return DRV(StreamIsCapturing, 0, stream, (CUstreamCaptureStatus *)pCaptureStatus);
}

cudaError_t cudaStreamIsCapturing_ptsz(cudaStream_t stream, enum cudaStreamCaptureStatus *pCaptureStatus)
{
    return DRV(StreamIsCapturing, 1, stream, (CUstreamCaptureStatus *)pCaptureStatus);
}

static cudaError_t capture_info(cudaStream_t s, enum cudaStreamCaptureStatus *st, unsigned long long *id,
                                cudaGraph_t *g, const cudaGraphNode_t **deps, const cudaGraphEdgeData **edges,
                                size_t *n, int ptsz)
{
    cuuint64_t cid = 0;
    cudaError_t e = DRV(StreamGetCaptureInfo, ptsz, s, (CUstreamCaptureStatus *)st, &cid, g, deps,
                        (const CUgraphEdgeData **)edges, n);
    if (id && e == cudaSuccess)
        *id = cid;
    return e;
}

cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream, enum cudaStreamCaptureStatus *captureStatus_out,
                                     unsigned long long *id_out, cudaGraph_t *graph_out,
                                     const cudaGraphNode_t **dependencies_out,
                                     const cudaGraphEdgeData **edgeData_out, size_t *numDependencies_out)
{
    return capture_info(stream, captureStatus_out, id_out, graph_out, dependencies_out, edgeData_out,
                        numDependencies_out, 0);
}

cudaError_t cudaStreamGetCaptureInfo_ptsz(cudaStream_t stream, enum cudaStreamCaptureStatus *captureStatus_out,
                                          unsigned long long *id_out, cudaGraph_t *graph_out,
                                          const cudaGraphNode_t **dependencies_out,
                                          const cudaGraphEdgeData **edgeData_out, size_t *numDependencies_out)
{
    return capture_info(stream, captureStatus_out, id_out, graph_out, dependencies_out, edgeData_out,
                        numDependencies_out, 1);
}

cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode *mode)
{
    return retc(simc_capture_exchange_mode((int *)mode));
}

/* ------------------------------------------------------------------ graphs */

cudaError_t cudaGraphCreate(cudaGraph_t *pGraph, unsigned int flags)
{
    return flags ? ret(cudaErrorInvalidValue) : retc(simc_graph_create(pGraph));
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph)
{
    return retc(simc_graph_destroy(graph));
}

cudaError_t cudaGraphClone(cudaGraph_t *pGraphClone, cudaGraph_t originalGraph)
{
    return retc(simc_graph_clone(pGraphClone, originalGraph));
}

cudaError_t cudaGraphKernelNodeSetAttribute(cudaGraphNode_t hNode, cudaKernelNodeAttrID attr,
                                            const cudaKernelNodeAttrValue *value)
{
    sim_launch l;
    if (!value || simc_node_launch(hNode, &l) != CUDA_SUCCESS)
        return ret(cudaErrorInvalidValue);
    if (attr == cudaLaunchAttributeClusterDimension) {
        unsigned x = value->clusterDim.x, y = value->clusterDim.y, z = value->clusterDim.z;
        if (!x || !y || !z || l.grid.x % x || l.grid.y % y || l.grid.z % z)
            return ret(cudaErrorInvalidClusterSize);
    }
    return cudaSuccess;
}

cudaError_t cudaGraphAddChildGraphNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                                       const cudaGraphNode_t *pDependencies, size_t numDependencies,
                                       cudaGraph_t childGraph)
{
    return retc(simc_graph_add_child(pGraphNode, graph, pDependencies, numDependencies, childGraph));
}

static cudaError_t kernel_work(sim_work *w, const struct cudaKernelNodeParams *p)
{
    if (!p)
        return cudaErrorInvalidValue;
    sim_launch l = { .grid = p->gridDim, .block = p->blockDim, .shmem = p->sharedMemBytes };
    if (!simc_kernel_lookup(p->func))
        return cudaErrorInvalidDeviceFunction;
    return (cudaError_t)simc_work_kernel(w, p->func, l, p->kernelParams, p->extra);
}

cudaError_t cudaGraphAddKernelNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                                   const cudaGraphNode_t *pDependencies, size_t numDependencies,
                                   const struct cudaKernelNodeParams *pNodeParams)
{
    sim_work w;
    cudaError_t e = kernel_work(&w, pNodeParams);
    if (e != cudaSuccess)
        return ret(e);
    return retc(simc_graph_add(pGraphNode, graph, pDependencies, numDependencies, &w));
}

/* Graph copies read their source when they run, pageable or not. */
static sim_work copy1d_work(void *dst, const void *src, size_t count)
{
    sim_work w = { .kind = SIM_W_COPY, .dst = dst, .src = src, .dpitch = count, .spitch = count,
                   .width = count, .height = 1 };
    return w;
}

cudaError_t cudaGraphAddMemcpyNode1D(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                                     const cudaGraphNode_t *pDependencies, size_t numDependencies, void *dst,
                                     const void *src, size_t count, enum cudaMemcpyKind kind)
{
    if (kind < cudaMemcpyHostToHost || kind > cudaMemcpyDefault)
        return ret(cudaErrorInvalidMemcpyDirection);
    if (!dst || !src)
        return ret(cudaErrorInvalidValue);
    sim_work w = copy1d_work(dst, src, count);
    return retc(simc_graph_add(pGraphNode, graph, pDependencies, numDependencies, &w));
}

/* Only the linear case: no arrays, depth 1. */
static cudaError_t copy3d_work(sim_work *w, const struct cudaMemcpy3DParms *p)
{
    if (!p || p->srcArray || p->dstArray || p->extent.depth > 1 || p->srcPos.z || p->dstPos.z)
        return cudaErrorInvalidValue;
    if (!p->srcPtr.ptr || !p->dstPtr.ptr)
        return cudaErrorInvalidValue;
    size_t sp = p->srcPtr.pitch ? p->srcPtr.pitch : p->extent.width;
    size_t dp = p->dstPtr.pitch ? p->dstPtr.pitch : p->extent.width;
    memset(w, 0, sizeof(*w));
    w->kind = SIM_W_COPY;
    w->src = (const char *)p->srcPtr.ptr + p->srcPos.y * sp + p->srcPos.x;
    w->dst = (char *)p->dstPtr.ptr + p->dstPos.y * dp + p->dstPos.x;
    w->spitch = sp;
    w->dpitch = dp;
    w->width = p->extent.width;
    w->height = p->extent.height ? p->extent.height : 1;
    return cudaSuccess;
}

cudaError_t cudaGraphAddMemcpyNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                                   const cudaGraphNode_t *pDependencies, size_t numDependencies,
                                   const struct cudaMemcpy3DParms *pCopyParams)
{
    sim_work w;
    cudaError_t e = copy3d_work(&w, pCopyParams);
    if (e != cudaSuccess)
        return ret(e);
    return retc(simc_graph_add(pGraphNode, graph, pDependencies, numDependencies, &w));
}

static cudaError_t memset_work(sim_work *w, const struct cudaMemsetParams *p)
{
    if (!p || !p->dst || (p->elementSize != 1 && p->elementSize != 2 && p->elementSize != 4))
        return cudaErrorInvalidValue;
    memset(w, 0, sizeof(*w));
    w->kind = SIM_W_SET;
    w->dst = p->dst;
    w->value = p->value;
    w->elem = p->elementSize;
    w->width = p->width;
    w->height = p->height ? p->height : 1;
    w->dpitch = w->height > 1 ? p->pitch : p->width * p->elementSize;
    return cudaSuccess;
}

cudaError_t cudaGraphAddMemsetNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                                   const cudaGraphNode_t *pDependencies, size_t numDependencies,
                                   const struct cudaMemsetParams *pMemsetParams)
{
    sim_work w;
    cudaError_t e = memset_work(&w, pMemsetParams);
    if (e != cudaSuccess)
        return ret(e);
    return retc(simc_graph_add(pGraphNode, graph, pDependencies, numDependencies, &w));
}

cudaError_t cudaGraphAddHostNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                                 const cudaGraphNode_t *pDependencies, size_t numDependencies,
                                 const struct cudaHostNodeParams *pNodeParams)
{
    if (!pNodeParams || !pNodeParams->fn)
        return ret(cudaErrorInvalidValue);
    sim_work w = { .kind = SIM_W_HOST, .hostfn = pNodeParams->fn, .user = pNodeParams->userData };
    return retc(simc_graph_add(pGraphNode, graph, pDependencies, numDependencies, &w));
}

cudaError_t cudaGraphAddEventRecordNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                                        const cudaGraphNode_t *pDependencies, size_t numDependencies,
                                        cudaEvent_t event)
{
    if (!event)
        return ret(cudaErrorInvalidValue);
    sim_work w = { .kind = SIM_W_EVREC, .ev = event };
    return retc(simc_graph_add(pGraphNode, graph, pDependencies, numDependencies, &w));
}

cudaError_t cudaGraphAddEventWaitNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                                      const cudaGraphNode_t *pDependencies, size_t numDependencies,
                                      cudaEvent_t event)
{
    if (!event)
        return ret(cudaErrorInvalidValue);
    sim_work w = { .kind = SIM_W_EVWAIT, .ev = event };
    return retc(simc_graph_add(pGraphNode, graph, pDependencies, numDependencies, &w));
}

cudaError_t cudaGraphAddEmptyNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                                  const cudaGraphNode_t *pDependencies, size_t numDependencies)
{
    sim_work w = { .kind = SIM_W_NOP };
    return retc(simc_graph_add(pGraphNode, graph, pDependencies, numDependencies, &w));
}

cudaError_t cudaGraphAddDependencies(cudaGraph_t graph, const cudaGraphNode_t *from, const cudaGraphNode_t *to,
                                     const cudaGraphEdgeData *edgeData, size_t numDependencies)
{
    (void)edgeData;
    return retc(simc_graph_add_deps(graph, from, to, numDependencies));
}

cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t *nodes, size_t *numNodes)
{
    return retc(simc_graph_get_nodes(graph, nodes, numNodes));
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph, unsigned long long flags)
{
    (void)flags;
    return retc(simc_graph_instantiate(pGraphExec, graph));
}

cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *pGraphExec, cudaGraph_t graph, unsigned long long flags)
{
    (void)flags;
    return retc(simc_graph_instantiate(pGraphExec, graph));
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec)
{
    return retc(simc_exec_destroy(graphExec));
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream)
{
    return DRV(GraphLaunch, 0, graphExec, stream);
}

cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream)
{
    return DRV(GraphLaunch, 1, graphExec, stream);
}

cudaError_t cudaGraphUpload(cudaGraphExec_t graphExec, cudaStream_t stream)
{
    return DRV(GraphUpload, 0, graphExec, stream);
}

cudaError_t cudaGraphUpload_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream)
{
    return DRV(GraphUpload, 1, graphExec, stream);
}

cudaError_t cudaGraphExecKernelNodeSetParams(cudaGraphExec_t hGraphExec, cudaGraphNode_t node,
                                             const struct cudaKernelNodeParams *pNodeParams)
{
    sim_work w;
    cudaError_t e = kernel_work(&w, pNodeParams);
    if (e != cudaSuccess)
        return ret(e);
    return retc(simc_exec_set(hGraphExec, node, SIM_W_KERNEL, &w));
}

cudaError_t cudaGraphExecMemcpyNodeSetParams1D(cudaGraphExec_t hGraphExec, cudaGraphNode_t node, void *dst,
                                               const void *src, size_t count, enum cudaMemcpyKind kind)
{
    if (kind < cudaMemcpyHostToHost || kind > cudaMemcpyDefault)
        return ret(cudaErrorInvalidMemcpyDirection);
    if (!dst || !src)
        return ret(cudaErrorInvalidValue);
    sim_work w = copy1d_work(dst, src, count);
    return retc(simc_exec_set(hGraphExec, node, SIM_W_COPY, &w));
}

cudaError_t cudaGraphExecMemcpyNodeSetParams(cudaGraphExec_t hGraphExec, cudaGraphNode_t node,
                                             const struct cudaMemcpy3DParms *pNodeParams)
{
    sim_work w;
    cudaError_t e = copy3d_work(&w, pNodeParams);
    if (e != cudaSuccess)
        return ret(e);
    return retc(simc_exec_set(hGraphExec, node, SIM_W_COPY, &w));
}

cudaError_t cudaGraphExecMemsetNodeSetParams(cudaGraphExec_t hGraphExec, cudaGraphNode_t node,
                                             const struct cudaMemsetParams *pNodeParams)
{
    sim_work w;
    cudaError_t e = memset_work(&w, pNodeParams);
    if (e != cudaSuccess)
        return ret(e);
    return retc(simc_exec_set(hGraphExec, node, SIM_W_SET, &w));
}

cudaError_t cudaGraphExecHostNodeSetParams(cudaGraphExec_t hGraphExec, cudaGraphNode_t node,
                                           const struct cudaHostNodeParams *pNodeParams)
{
    if (!pNodeParams || !pNodeParams->fn)
        return ret(cudaErrorInvalidValue);
    sim_work w = { .kind = SIM_W_HOST, .hostfn = pNodeParams->fn, .user = pNodeParams->userData };
    return retc(simc_exec_set(hGraphExec, node, SIM_W_HOST, &w));
}

cudaError_t cudaGraphExecEventRecordNodeSetEvent(cudaGraphExec_t hGraphExec, cudaGraphNode_t hNode,
                                                 cudaEvent_t event)
{
    if (!event)
        return ret(cudaErrorInvalidValue);
    sim_work w = { .kind = SIM_W_EVREC, .ev = event };
    return retc(simc_exec_set(hGraphExec, hNode, SIM_W_EVREC, &w));
}

cudaError_t cudaGraphExecEventWaitNodeSetEvent(cudaGraphExec_t hGraphExec, cudaGraphNode_t hNode,
                                               cudaEvent_t event)
{
    if (!event)
        return ret(cudaErrorInvalidValue);
    sim_work w = { .kind = SIM_W_EVWAIT, .ev = event };
    return retc(simc_exec_set(hGraphExec, hNode, SIM_W_EVWAIT, &w));
}

cudaError_t cudaGraphExecUpdate(cudaGraphExec_t hGraphExec, cudaGraph_t hGraph,
                                cudaGraphExecUpdateResultInfo *resultInfo)
{
    CUgraphNode err = NULL;
    CUresult r = simc_exec_update(hGraphExec, hGraph, &err);
    if (resultInfo) {
        memset(resultInfo, 0, sizeof(*resultInfo));
        resultInfo->result = r == CUDA_SUCCESS ? cudaGraphExecUpdateSuccess
                             : err             ? cudaGraphExecUpdateErrorNodeTypeChanged
                                               : cudaGraphExecUpdateErrorTopologyChanged;
        resultInfo->errorNode = err;
    }
    return retc(r);
}

/* ---------------------------------------------------- driver entry points */

/* As the real runtime does: the driver's cuGetProcAddress_v2 from dlopen and
 * dlsym, so an interposed dlsym sees the lookup, then the name through it. A
 * name it does not know is an answer (NULL, SymbolNotFound), not an error. */
static cudaError_t entry_point(const char *symbol, void **funcPtr, unsigned cudaVersion, unsigned long long flags,
                               enum cudaDriverEntryPointQueryResult *driverStatus, int ptsz)
{
    if (driverStatus)
        *driverStatus = cudaDriverEntryPointSymbolNotFound;
    if (!symbol || !funcPtr)
        return ret(cudaErrorInvalidValue);
    *funcPtr = NULL;
    if (cudaVersion > CUDA_VERSION)
        return ret(cudaErrorInvalidValue);
    cuuint64_t cf;
    if (flags == cudaEnableDefault)
        cf = ptsz ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : CU_GET_PROC_ADDRESS_LEGACY_STREAM;
    else if (flags == cudaEnableLegacyStream)
        cf = CU_GET_PROC_ADDRESS_LEGACY_STREAM;
    else if (flags == cudaEnablePerThreadDefaultStream)
        cf = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    else
        return ret(cudaErrorInvalidValue);
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!h)
        return ret(cudaErrorInitializationError);
    __typeof__(&cuGetProcAddress_v2) gpa = (__typeof__(&cuGetProcAddress_v2))dlsym(h, "cuGetProcAddress_v2");
    if (!gpa) {
        dlclose(h);
        return ret(cudaErrorInitializationError);
    }
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (gpa(symbol, funcPtr, (int)cudaVersion, cf, &st) != CUDA_SUCCESS)
        *funcPtr = NULL;
    dlclose(h);
    if (driverStatus)
        *driverStatus = st == CU_GET_PROC_ADDRESS_SUCCESS                  ? cudaDriverEntryPointSuccess
                        : st == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT ? cudaDriverEntryPointVersionNotSufficent
                                                                           : cudaDriverEntryPointSymbolNotFound;
    return cudaSuccess;
}

cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **funcPtr, unsigned long long flags,
                                    enum cudaDriverEntryPointQueryResult *driverStatus)
{
    return entry_point(symbol, funcPtr, CUDART_VERSION, flags, driverStatus, 0);
}

cudaError_t cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr, unsigned long long flags,
                                         enum cudaDriverEntryPointQueryResult *driverStatus)
{
    return entry_point(symbol, funcPtr, CUDART_VERSION, flags, driverStatus, 1);
}

cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **funcPtr, unsigned int cudaVersion,
                                             unsigned long long flags,
                                             enum cudaDriverEntryPointQueryResult *driverStatus)
{
    return entry_point(symbol, funcPtr, cudaVersion, flags, driverStatus, 0);
}

cudaError_t cudaGetDriverEntryPointByVersion_ptsz(const char *symbol, void **funcPtr, unsigned int cudaVersion,
                                                  unsigned long long flags,
                                                  enum cudaDriverEntryPointQueryResult *driverStatus)
{
    return entry_point(symbol, funcPtr, cudaVersion, flags, driverStatus, 1);
}
