/* Driver face of the simulated device: the cu* entry points with their real link
 * names (_v2, _ptsz, _ptds) and cuGetProcAddress, all thin over simcore.c. */
#define _GNU_SOURCE
/* Exports stay exported even if the parent project builds with -fvisibility=hidden. */
#pragma GCC visibility push(default)
#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sim_i.h"

#define DP(x) ((void *)(uintptr_t)(x))

/* The per-thread twins are not declared by cuda.h unless the including program
 * asks for them; declaring them from the plain ones keeps the signatures exact. */
__typeof__(cuLaunchKernel) cuLaunchKernel_ptsz;
__typeof__(cuLaunchKernelEx) cuLaunchKernelEx_ptsz;
__typeof__(cuLaunchCooperativeKernel) cuLaunchCooperativeKernel_ptsz;
__typeof__(cuMemcpyAsync) cuMemcpyAsync_ptsz;
__typeof__(cuMemcpyHtoDAsync) cuMemcpyHtoDAsync_v2_ptsz;
__typeof__(cuMemcpyDtoHAsync) cuMemcpyDtoHAsync_v2_ptsz;
__typeof__(cuMemcpyDtoDAsync) cuMemcpyDtoDAsync_v2_ptsz;
__typeof__(cuMemcpy2DAsync) cuMemcpy2DAsync_v2_ptsz;
__typeof__(cuMemcpy3DAsync) cuMemcpy3DAsync_v2_ptsz;
__typeof__(cuMemcpyPeerAsync) cuMemcpyPeerAsync_ptsz;
__typeof__(cuMemcpy3DPeerAsync) cuMemcpy3DPeerAsync_ptsz;
__typeof__(cuMemcpyBatchAsync) cuMemcpyBatchAsync_v2_ptsz;
__typeof__(cuMemcpy) cuMemcpy_ptds;
__typeof__(cuMemcpyHtoD) cuMemcpyHtoD_v2_ptds;
__typeof__(cuMemcpyDtoH) cuMemcpyDtoH_v2_ptds;
__typeof__(cuMemcpyDtoD) cuMemcpyDtoD_v2_ptds;
__typeof__(cuMemcpy2D) cuMemcpy2D_v2_ptds;
__typeof__(cuMemcpy2DUnaligned) cuMemcpy2DUnaligned_v2_ptds;
__typeof__(cuMemcpy3D) cuMemcpy3D_v2_ptds;
__typeof__(cuMemcpyPeer) cuMemcpyPeer_ptds;
__typeof__(cuMemcpy3DPeer) cuMemcpy3DPeer_ptds;
__typeof__(cuMemsetD8) cuMemsetD8_v2_ptds;
__typeof__(cuMemsetD16) cuMemsetD16_v2_ptds;
__typeof__(cuMemsetD32) cuMemsetD32_v2_ptds;
__typeof__(cuMemsetD2D8) cuMemsetD2D8_v2_ptds;
__typeof__(cuMemsetD2D16) cuMemsetD2D16_v2_ptds;
__typeof__(cuMemsetD2D32) cuMemsetD2D32_v2_ptds;
__typeof__(cuMemsetD8Async) cuMemsetD8Async_ptsz;
__typeof__(cuMemsetD16Async) cuMemsetD16Async_ptsz;
__typeof__(cuMemsetD32Async) cuMemsetD32Async_ptsz;
__typeof__(cuMemsetD2D8Async) cuMemsetD2D8Async_ptsz;
__typeof__(cuMemsetD2D16Async) cuMemsetD2D16Async_ptsz;
__typeof__(cuMemsetD2D32Async) cuMemsetD2D32Async_ptsz;
__typeof__(cuStreamWriteValue32) cuStreamWriteValue32_v2_ptsz;
__typeof__(cuStreamWriteValue64) cuStreamWriteValue64_v2_ptsz;
__typeof__(cuStreamWaitValue32) cuStreamWaitValue32_v2_ptsz;
__typeof__(cuStreamWaitValue64) cuStreamWaitValue64_v2_ptsz;
__typeof__(cuStreamBatchMemOp) cuStreamBatchMemOp_v2_ptsz;
__typeof__(cuEventRecord) cuEventRecord_ptsz;
__typeof__(cuEventRecordWithFlags) cuEventRecordWithFlags_ptsz;
__typeof__(cuStreamWaitEvent) cuStreamWaitEvent_ptsz;
__typeof__(cuLaunchHostFunc) cuLaunchHostFunc_ptsz;
__typeof__(cuStreamAddCallback) cuStreamAddCallback_ptsz;
__typeof__(cuStreamSynchronize) cuStreamSynchronize_ptsz;
__typeof__(cuStreamSynchronize) cuStreamSynchronize_v13050;
__typeof__(cuStreamQuery) cuStreamQuery_ptsz;
__typeof__(cuStreamGetFlags) cuStreamGetFlags_ptsz;
__typeof__(cuStreamGetPriority) cuStreamGetPriority_ptsz;
__typeof__(cuStreamGetCtx) cuStreamGetCtx_ptsz;
__typeof__(cuStreamGetCtx_v2) cuStreamGetCtx_v2_ptsz;
__typeof__(cuStreamBeginCapture) cuStreamBeginCapture_v2_ptsz;
__typeof__(cuStreamBeginCaptureToGraph) cuStreamBeginCaptureToGraph_ptsz;
__typeof__(cuStreamEndCapture) cuStreamEndCapture_ptsz;
__typeof__(cuStreamIsCapturing) cuStreamIsCapturing_ptsz;
__typeof__(cuStreamGetCaptureInfo) cuStreamGetCaptureInfo_v3_ptsz;
__typeof__(cuGraphLaunch) cuGraphLaunch_ptsz;
__typeof__(cuGraphUpload) cuGraphUpload_ptsz;
__typeof__(cuMemFreeAsync) cuMemFreeAsync_ptsz;
__typeof__(cuMemAllocAsync) cuMemAllocAsync_ptsz;
__typeof__(cuMemAllocFromPoolAsync) cuMemAllocFromPoolAsync_ptsz;

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

/* --------------------------------------------------------------- contexts */

CUresult cuCtxGetDevice(CUdevice *device)
{
    return simc_ctx_get_device(NULL, device);
}

CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
    return simc_ctx_get_device(ctx, device);
}

CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    return simc_ctx_get_current(pctx);
}

CUresult cuCtxSetCurrent(CUcontext ctx)
{
    return simc_ctx_set_current(ctx);
}

CUresult cuCtxPushCurrent(CUcontext ctx)
{
    return simc_ctx_push(ctx);
}

CUresult cuCtxPopCurrent(CUcontext *pctx)
{
    return simc_ctx_pop(pctx);
}

/* Execution affinity and CIG parameters shape scheduling only. */
CUresult cuCtxCreate(CUcontext *pctx, CUctxCreateParams *ctxCreateParams, unsigned int flags, CUdevice dev)
{
    (void)ctxCreateParams;
    return simc_ctx_create(pctx, flags, dev);
}

CUresult cuCtxDestroy(CUcontext ctx)
{
    return simc_ctx_destroy(ctx);
}

CUresult cuCtxGetId(CUcontext ctx, unsigned long long *ctxId)
{
    return ctxId ? simc_ctx_info(ctx, ctxId, NULL) : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuCtxGetFlags(unsigned int *flags)
{
    return flags ? simc_ctx_info(NULL, NULL, flags) : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int *version)
{
    if (!version)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = simc_ctx_info(ctx, NULL, NULL);
    if (r == CUDA_SUCCESS)
        *version = 3020;
    return r;
}

CUresult cuCtxSynchronize(void)
{
    return simc_ctx_sync(NULL);
}

CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
    return simc_ctx_sync(ctx);
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    return simc_primary_retain(pctx, dev);
}

CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
    return simc_primary_release(dev);
}

CUresult cuDevicePrimaryCtxReset(CUdevice dev)
{
    return simc_primary_reset(dev);
}

CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    return simc_primary_state(dev, flags, active);
}

CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags)
{
    return simc_primary_set_flags(dev, flags);
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

CUresult cuKernelGetName(const char **name, CUkernel hfunc)
{
    return cuFuncGetName(name, (CUfunction)(void *)hfunc);
}

CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc)
{
    return pi ? simc_func_attr(hfunc, -1, (int)attrib, pi, NULL) : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value)
{
    return simc_func_attr(hfunc, -1, (int)attrib, NULL, &value);
}

CUresult cuKernelGetAttribute(int *pi, CUfunction_attribute attrib, CUkernel kernel, CUdevice dev)
{
    if (!pi)
        return CUDA_ERROR_INVALID_VALUE;
    return dev < 0 ? CUDA_ERROR_INVALID_DEVICE : simc_func_attr(kernel, dev, (int)attrib, pi, NULL);
}

CUresult cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel, CUdevice dev)
{
    return dev < 0 ? CUDA_ERROR_INVALID_DEVICE : simc_func_attr(kernel, dev, (int)attrib, NULL, &val);
}

CUresult cuFuncGetModule(CUmodule *hmod, CUfunction hfunc)
{
    return simc_func_get_module(hmod, hfunc);
}

/* ------------------------------------------------------ modules, libraries */

/* An image is "sim:name1,name2,...": kernels registered with simRegisterKernel. */
CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
    return simc_module_load(module, image);
}

CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions, CUjit_option *options,
                            void **optionValues)
{
    (void)numOptions;
    (void)options;
    (void)optionValues;
    return simc_module_load(module, image);
}

CUresult cuModuleUnload(CUmodule hmod)
{
    return simc_module_unload(hmod);
}

CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
    return simc_module_get_function(hfunc, hmod, name);
}

CUresult cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions, void **jitOptionsValues,
                           unsigned int numJitOptions, CUlibraryOption *libraryOptions, void **libraryOptionValues,
                           unsigned int numLibraryOptions)
{
    (void)jitOptions;
    (void)jitOptionsValues;
    (void)numJitOptions;
    (void)libraryOptions;
    (void)libraryOptionValues;
    (void)numLibraryOptions;
    return simc_library_load(library, code);
}

CUresult cuLibraryUnload(CUlibrary library)
{
    return simc_library_unload(library);
}

CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
{
    return simc_library_get_kernel(pKernel, library, name);
}

CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
    return simc_kernel_get_function(pFunc, kernel);
}

CUresult cuKernelGetLibrary(CUlibrary *pLib, CUkernel kernel)
{
    return simc_kernel_get_library(pLib, kernel);
}

/* ---------------------------------------------------------------- launches */

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

/* A whole grid runs in one call here, so every grid is co-resident. */
CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                   unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                                   unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                                   void **kernelParams)
{
    return launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream,
                  kernelParams, NULL, 0);
}

CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                        unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                                        unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                                        void **kernelParams)
{
    return launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream,
                  kernelParams, NULL, 1);
}

/* Attributes change scheduling on a real device, never results here; only
 * what a real launch would refuse is checked: unknown ids and a grid that is
 * not made of whole clusters. */
static CUresult launch_ex(const CUlaunchConfig *c, CUfunction f, void **params, void **extra, int ptsz)
{
    if (!c || (c->numAttrs && !c->attrs))
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < c->numAttrs; i++) {
        const CUlaunchAttribute *a = &c->attrs[i];
        if ((unsigned)a->id > (unsigned)CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE + 8)
            return CUDA_ERROR_INVALID_VALUE;
        if (a->id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
            unsigned x = a->value.clusterDim.x, y = a->value.clusterDim.y, z = a->value.clusterDim.z;
            if (!x || !y || !z || c->gridDimX % x || c->gridDimY % y || c->gridDimZ % z)
                return CUDA_ERROR_INVALID_CLUSTER_SIZE;
        }
    }
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

#define LIN(dst, src, n, s, ptsz, blocking) simc_memcpy(s, ptsz, DP(dst), n, DP(src), n, n, 1, blocking)

CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)
{
    return LIN(dst, src, ByteCount, hStream, 0, 0);
}

CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)
{
    return LIN(dst, src, ByteCount, hStream, 1, 0);
}

CUresult cuMemcpyHtoDAsync(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream)
{
    return LIN(dstDevice, srcHost, ByteCount, hStream, 0, 0);
}

CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream)
{
    return LIN(dstDevice, srcHost, ByteCount, hStream, 1, 0);
}

CUresult cuMemcpyDtoHAsync(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
{
    return LIN(dstHost, srcDevice, ByteCount, hStream, 0, 0);
}

CUresult cuMemcpyDtoHAsync_v2_ptsz(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
{
    return LIN(dstHost, srcDevice, ByteCount, hStream, 1, 0);
}

CUresult cuMemcpyDtoDAsync(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
{
    return LIN(dstDevice, srcDevice, ByteCount, hStream, 0, 0);
}

CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
{
    return LIN(dstDevice, srcDevice, ByteCount, hStream, 1, 0);
}

/* The synchronous copies run on the legacy (or per-thread) stream and return
 * when done. */
CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    return LIN(dst, src, ByteCount, NULL, 0, 1);
}

CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    return LIN(dst, src, ByteCount, NULL, 1, 1);
}

CUresult cuMemcpyHtoD(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
    return LIN(dstDevice, srcHost, ByteCount, NULL, 0, 1);
}

CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
    return LIN(dstDevice, srcHost, ByteCount, NULL, 1, 1);
}

CUresult cuMemcpyDtoH(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    return LIN(dstHost, srcDevice, ByteCount, NULL, 0, 1);
}

CUresult cuMemcpyDtoH_v2_ptds(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    return LIN(dstHost, srcDevice, ByteCount, NULL, 1, 1);
}

CUresult cuMemcpyDtoD(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
{
    return LIN(dstDevice, srcDevice, ByteCount, NULL, 0, 1);
}

CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
{
    return LIN(dstDevice, srcDevice, ByteCount, NULL, 1, 1);
}

/* Peer copies: one address space under UVA, so only the contexts are checked. */
static CUresult peer_ctx_ok(CUcontext a, CUcontext b)
{
    int d;
    if (simc_ctx_get_device(a, &d) != CUDA_SUCCESS || simc_ctx_get_device(b, &d) != CUDA_SUCCESS || !a || !b)
        return CUDA_ERROR_INVALID_CONTEXT;
    return CUDA_SUCCESS;
}

CUresult cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext,
                      size_t ByteCount)
{
    CUresult r = peer_ctx_ok(dstContext, srcContext);
    return r != CUDA_SUCCESS ? r : LIN(dstDevice, srcDevice, ByteCount, NULL, 0, 1);
}

CUresult cuMemcpyPeer_ptds(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext,
                           size_t ByteCount)
{
    CUresult r = peer_ctx_ok(dstContext, srcContext);
    return r != CUDA_SUCCESS ? r : LIN(dstDevice, srcDevice, ByteCount, NULL, 1, 1);
}

CUresult cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                           CUcontext srcContext, size_t ByteCount, CUstream hStream)
{
    CUresult r = peer_ctx_ok(dstContext, srcContext);
    return r != CUDA_SUCCESS ? r : LIN(dstDevice, srcDevice, ByteCount, hStream, 0, 0);
}

CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                                CUcontext srcContext, size_t ByteCount, CUstream hStream)
{
    CUresult r = peer_ctx_ok(dstContext, srcContext);
    return r != CUDA_SUCCESS ? r : LIN(dstDevice, srcDevice, ByteCount, hStream, 1, 0);
}

static int memtype_ok(CUmemorytype t)
{
    return t == CU_MEMORYTYPE_HOST || t == CU_MEMORYTYPE_DEVICE || t == CU_MEMORYTYPE_UNIFIED;
}

/* Host sides name srcHost/dstHost; device and unified sides the device
 * address, which is the same address space here. */
static const void *copy_side(CUmemorytype t, const void *host, CUdeviceptr dev, size_t x, size_t y, size_t z,
                             size_t pitch, size_t height)
{
    const char *base = (t == CU_MEMORYTYPE_HOST) ? host : (const char *)DP(dev);
    return base ? base + (z * height + y) * pitch + x : NULL;
}

static CUresult copy2d_work(sim_work *w, const CUDA_MEMCPY2D *p)
{
    if (!p || !memtype_ok(p->srcMemoryType) || !memtype_ok(p->dstMemoryType))
        return CUDA_ERROR_INVALID_VALUE;
    memset(w, 0, sizeof(*w));
    w->kind = SIM_W_COPY;
    w->src = copy_side(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcXInBytes, p->srcY, 0, p->srcPitch, 0);
    w->dst = (void *)copy_side(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstXInBytes, p->dstY, 0,
                               p->dstPitch, 0);
    w->spitch = p->srcPitch;
    w->dpitch = p->dstPitch;
    w->width = p->WidthInBytes;
    w->height = p->Height;
    return CUDA_SUCCESS;
}

/* Linear memory only (no arrays). Slices are pitch * height apart. */
static CUresult copy3d_work(sim_work *w, const CUDA_MEMCPY3D *p)
{
    if (!p || !memtype_ok(p->srcMemoryType) || !memtype_ok(p->dstMemoryType))
        return CUDA_ERROR_INVALID_VALUE;
    size_t h = p->Height ? p->Height : 1, d = p->Depth ? p->Depth : 1;
    size_t sp = p->srcPitch ? p->srcPitch : p->WidthInBytes, dp = p->dstPitch ? p->dstPitch : p->WidthInBytes;
    size_t sh = p->srcHeight ? p->srcHeight : h, dh = p->dstHeight ? p->dstHeight : h;
    if (d > 1 && (sh < h || dh < h))
        return CUDA_ERROR_INVALID_VALUE;
    memset(w, 0, sizeof(*w));
    w->kind = SIM_W_COPY;
    w->src = copy_side(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcXInBytes, p->srcY, p->srcZ, sp, sh);
    w->dst = (void *)copy_side(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstXInBytes, p->dstY, p->dstZ, dp, dh);
    w->width = p->WidthInBytes;
    w->height = h;
    w->depth = d;
    w->spitch = sp;
    w->dpitch = dp;
    w->sslice = sp * sh;
    w->dslice = dp * dh;
    return (w->src && w->dst) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static CUresult peer3d_as_3d(CUDA_MEMCPY3D *q, const CUDA_MEMCPY3D_PEER *p)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = peer_ctx_ok(p->dstContext, p->srcContext);
    if (r != CUDA_SUCCESS)
        return r;
    memset(q, 0, sizeof(*q));
    q->srcXInBytes = p->srcXInBytes;
    q->srcY = p->srcY;
    q->srcZ = p->srcZ;
    q->srcMemoryType = p->srcMemoryType;
    q->srcHost = p->srcHost;
    q->srcDevice = p->srcDevice;
    q->srcPitch = p->srcPitch;
    q->srcHeight = p->srcHeight;
    q->dstXInBytes = p->dstXInBytes;
    q->dstY = p->dstY;
    q->dstZ = p->dstZ;
    q->dstMemoryType = p->dstMemoryType;
    q->dstHost = p->dstHost;
    q->dstDevice = p->dstDevice;
    q->dstPitch = p->dstPitch;
    q->dstHeight = p->dstHeight;
    q->WidthInBytes = p->WidthInBytes;
    q->Height = p->Height;
    q->Depth = p->Depth;
    return CUDA_SUCCESS;
}

static CUresult memcpy2d(const CUDA_MEMCPY2D *p, CUstream s, int ptsz, int blocking)
{
    sim_work w;
    CUresult r = copy2d_work(&w, p);
    return r != CUDA_SUCCESS ? r : simc_copy(s, ptsz, &w, blocking);
}

static CUresult memcpy3d(const CUDA_MEMCPY3D *p, CUstream s, int ptsz, int blocking)
{
    sim_work w;
    CUresult r = copy3d_work(&w, p);
    return r != CUDA_SUCCESS ? r : simc_copy(s, ptsz, &w, blocking);
}

static CUresult memcpy3d_peer(const CUDA_MEMCPY3D_PEER *p, CUstream s, int ptsz, int blocking)
{
    CUDA_MEMCPY3D q;
    CUresult r = peer3d_as_3d(&q, p);
    return r != CUDA_SUCCESS ? r : memcpy3d(&q, s, ptsz, blocking);
}

CUresult cuMemcpy2DAsync(const CUDA_MEMCPY2D *pCopy, CUstream hStream)
{
    return memcpy2d(pCopy, hStream, 0, 0);
}

CUresult cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D *pCopy, CUstream hStream)
{
    return memcpy2d(pCopy, hStream, 1, 0);
}

CUresult cuMemcpy2D(const CUDA_MEMCPY2D *pCopy)
{
    return memcpy2d(pCopy, NULL, 0, 1);
}

CUresult cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D *pCopy)
{
    return memcpy2d(pCopy, NULL, 1, 1);
}

/* No alignment constraints to lift here: the same copy. */
CUresult cuMemcpy2DUnaligned(const CUDA_MEMCPY2D *pCopy)
{
    return memcpy2d(pCopy, NULL, 0, 1);
}

CUresult cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D *pCopy)
{
    return memcpy2d(pCopy, NULL, 1, 1);
}

CUresult cuMemcpy3D(const CUDA_MEMCPY3D *pCopy)
{
    return memcpy3d(pCopy, NULL, 0, 1);
}

CUresult cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D *pCopy)
{
    return memcpy3d(pCopy, NULL, 1, 1);
}

CUresult cuMemcpy3DAsync(const CUDA_MEMCPY3D *pCopy, CUstream hStream)
{
    return memcpy3d(pCopy, hStream, 0, 0);
}

CUresult cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D *pCopy, CUstream hStream)
{
    return memcpy3d(pCopy, hStream, 1, 0);
}

CUresult cuMemcpy3DPeer(const CUDA_MEMCPY3D_PEER *pCopy)
{
    return memcpy3d_peer(pCopy, NULL, 0, 1);
}

CUresult cuMemcpy3DPeer_ptds(const CUDA_MEMCPY3D_PEER *pCopy)
{
    return memcpy3d_peer(pCopy, NULL, 1, 1);
}

CUresult cuMemcpy3DPeerAsync(const CUDA_MEMCPY3D_PEER *pCopy, CUstream hStream)
{
    return memcpy3d_peer(pCopy, hStream, 0, 0);
}

CUresult cuMemcpy3DPeerAsync_ptsz(const CUDA_MEMCPY3D_PEER *pCopy, CUstream hStream)
{
    return memcpy3d_peer(pCopy, hStream, 1, 0);
}

/* The CUDA 13 batch: copy i takes attribute j where attrsIdxs[j] <= i <
 * attrsIdxs[j+1]. A source read "during the API call" is copied now, whatever
 * its memory; the legacy stream is refused, as documented. */
static CUresult memcpy_batch(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                             CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs, CUstream s, int ptsz)
{
    if (!count || !dsts || !srcs || !sizes || !numAttrs || !attrs || !attrsIdxs || attrsIdxs[0] != 0 ||
        numAttrs > count)
        return CUDA_ERROR_INVALID_VALUE;
    if ((s == NULL && !ptsz) || s == CU_STREAM_LEGACY)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t j = 0; j < numAttrs; j++) {
        if ((j && attrsIdxs[j] <= attrsIdxs[j - 1]) || attrsIdxs[j] >= count)
            return CUDA_ERROR_INVALID_VALUE;
        if (attrs[j].srcAccessOrder < CU_MEMCPY_SRC_ACCESS_ORDER_STREAM ||
            attrs[j].srcAccessOrder > CU_MEMCPY_SRC_ACCESS_ORDER_ANY)
            return CUDA_ERROR_INVALID_VALUE;
    }
    for (size_t i = 0; i < count; i++)
        if (sizes[i] && (!dsts[i] || !srcs[i]))
            return CUDA_ERROR_INVALID_VALUE;
    size_t j = 0;
    for (size_t i = 0; i < count; i++) {
        while (j + 1 < numAttrs && attrsIdxs[j + 1] <= i)
            j++;
        sim_work w = { .kind = SIM_W_COPY, .dst = DP(dsts[i]), .src = DP(srcs[i]), .dpitch = sizes[i],
                       .spitch = sizes[i], .width = sizes[i], .height = 1 };
        if (attrs[j].srcAccessOrder == CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL && sizes[i]) {
            w.snap = malloc(sizes[i]);
            if (!w.snap)
                return CUDA_ERROR_OUT_OF_MEMORY;
            memcpy(w.snap, w.src, sizes[i]);
            w.src = w.snap;
        }
        CUresult r = simc_copy(s, ptsz, &w, 0);
        if (r != CUDA_SUCCESS)
            return r;
    }
    return CUDA_SUCCESS;
}

CUresult cuMemcpyBatchAsync(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                            CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs, CUstream hStream)
{
    return memcpy_batch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, hStream, 0);
}

CUresult cuMemcpyBatchAsync_v2_ptsz(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                                    CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs, CUstream hStream)
{
    return memcpy_batch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, hStream, 1);
}

/* ---------------------------------------------------------------- memsets */

/* N elements of elem bytes; 2D: Width elements per row, rows pitch bytes apart. */
#define SET1(dst, v, n, elem, s, ptsz, blocking) simc_memset(s, ptsz, DP(dst), 0, v, elem, n, 1, blocking)
#define SET2(dst, pitch, v, w, h, elem, s, ptsz, blocking) simc_memset(s, ptsz, DP(dst), pitch, v, elem, w, h, blocking)

CUresult cuMemsetD8(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
    return SET1(dstDevice, uc, N, 1, NULL, 0, 1);
}

CUresult cuMemsetD8_v2_ptds(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
    return SET1(dstDevice, uc, N, 1, NULL, 1, 1);
}

CUresult cuMemsetD16(CUdeviceptr dstDevice, unsigned short us, size_t N)
{
    return SET1(dstDevice, us, N, 2, NULL, 0, 1);
}

CUresult cuMemsetD16_v2_ptds(CUdeviceptr dstDevice, unsigned short us, size_t N)
{
    return SET1(dstDevice, us, N, 2, NULL, 1, 1);
}

CUresult cuMemsetD32(CUdeviceptr dstDevice, unsigned int ui, size_t N)
{
    return SET1(dstDevice, ui, N, 4, NULL, 0, 1);
}

CUresult cuMemsetD32_v2_ptds(CUdeviceptr dstDevice, unsigned int ui, size_t N)
{
    return SET1(dstDevice, ui, N, 4, NULL, 1, 1);
}

CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream)
{
    return SET1(dstDevice, uc, N, 1, hStream, 0, 0);
}

CUresult cuMemsetD8Async_ptsz(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream)
{
    return SET1(dstDevice, uc, N, 1, hStream, 1, 0);
}

CUresult cuMemsetD16Async(CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream)
{
    return SET1(dstDevice, us, N, 2, hStream, 0, 0);
}

CUresult cuMemsetD16Async_ptsz(CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream)
{
    return SET1(dstDevice, us, N, 2, hStream, 1, 0);
}

CUresult cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream)
{
    return SET1(dstDevice, ui, N, 4, hStream, 0, 0);
}

CUresult cuMemsetD32Async_ptsz(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream)
{
    return SET1(dstDevice, ui, N, 4, hStream, 1, 0);
}

CUresult cuMemsetD2D8(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width, size_t Height)
{
    return SET2(dstDevice, dstPitch, uc, Width, Height, 1, NULL, 0, 1);
}

CUresult cuMemsetD2D8_v2_ptds(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width, size_t Height)
{
    return SET2(dstDevice, dstPitch, uc, Width, Height, 1, NULL, 1, 1);
}

CUresult cuMemsetD2D16(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width, size_t Height)
{
    return SET2(dstDevice, dstPitch, us, Width, Height, 2, NULL, 0, 1);
}

CUresult cuMemsetD2D16_v2_ptds(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width,
                               size_t Height)
{
    return SET2(dstDevice, dstPitch, us, Width, Height, 2, NULL, 1, 1);
}

CUresult cuMemsetD2D32(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width, size_t Height)
{
    return SET2(dstDevice, dstPitch, ui, Width, Height, 4, NULL, 0, 1);
}

CUresult cuMemsetD2D32_v2_ptds(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width, size_t Height)
{
    return SET2(dstDevice, dstPitch, ui, Width, Height, 4, NULL, 1, 1);
}

CUresult cuMemsetD2D8Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width, size_t Height,
                           CUstream hStream)
{
    return SET2(dstDevice, dstPitch, uc, Width, Height, 1, hStream, 0, 0);
}

CUresult cuMemsetD2D8Async_ptsz(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
                                size_t Height, CUstream hStream)
{
    return SET2(dstDevice, dstPitch, uc, Width, Height, 1, hStream, 1, 0);
}

CUresult cuMemsetD2D16Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width, size_t Height,
                            CUstream hStream)
{
    return SET2(dstDevice, dstPitch, us, Width, Height, 2, hStream, 0, 0);
}

CUresult cuMemsetD2D16Async_ptsz(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width,
                                 size_t Height, CUstream hStream)
{
    return SET2(dstDevice, dstPitch, us, Width, Height, 2, hStream, 1, 0);
}

CUresult cuMemsetD2D32Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width, size_t Height,
                            CUstream hStream)
{
    return SET2(dstDevice, dstPitch, ui, Width, Height, 4, hStream, 0, 0);
}

CUresult cuMemsetD2D32Async_ptsz(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width,
                                 size_t Height, CUstream hStream)
{
    return SET2(dstDevice, dstPitch, ui, Width, Height, 4, hStream, 1, 0);
}

/* A stand-in for an entry point of a driver newer than the headers: it is
 * declared nowhere and exported under no name, so it can only be had from
 * cuGetProcAddress. Stream-ordered like cuMemsetD8Async. */
static CUresult cuSimFutureMemset(CUdeviceptr dst, unsigned char v, size_t n, CUstream s)
{
    return SET1(dst, v, n, 1, s, 0, 0);
}

static CUresult cuSimFutureMemset_ptsz(CUdeviceptr dst, unsigned char v, size_t n, CUstream s)
{
    return SET1(dst, v, n, 1, s, 1, 0);
}

/* ------------------------------------------------------ stream memory ops */

CUresult cuStreamWriteValue32(CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags)
{
    return simc_memop(stream, 0, SIM_W_WRITEVAL, DP(addr), value, 4, flags);
}

CUresult cuStreamWriteValue32_v2_ptsz(CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags)
{
    return simc_memop(stream, 1, SIM_W_WRITEVAL, DP(addr), value, 4, flags);
}

CUresult cuStreamWriteValue64(CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags)
{
    return simc_memop(stream, 0, SIM_W_WRITEVAL, DP(addr), value, 8, flags);
}

CUresult cuStreamWriteValue64_v2_ptsz(CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags)
{
    return simc_memop(stream, 1, SIM_W_WRITEVAL, DP(addr), value, 8, flags);
}

CUresult cuStreamWaitValue32(CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags)
{
    return simc_memop(stream, 0, SIM_W_WAITVAL, DP(addr), value, 4, flags);
}

CUresult cuStreamWaitValue32_v2_ptsz(CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags)
{
    return simc_memop(stream, 1, SIM_W_WAITVAL, DP(addr), value, 4, flags);
}

CUresult cuStreamWaitValue64(CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags)
{
    return simc_memop(stream, 0, SIM_W_WAITVAL, DP(addr), value, 8, flags);
}

CUresult cuStreamWaitValue64_v2_ptsz(CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags)
{
    return simc_memop(stream, 1, SIM_W_WAITVAL, DP(addr), value, 8, flags);
}

/* Checked as a whole first, then queued in order. */
static CUresult batch_memop(CUstream s, unsigned count, CUstreamBatchMemOpParams *p, unsigned flags, int ptsz)
{
    if (flags || (count && !p) || count > 256)
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < count; i++)
        switch (p[i].operation) {
        case CU_STREAM_MEM_OP_WAIT_VALUE_32:
        case CU_STREAM_MEM_OP_WAIT_VALUE_64:
        case CU_STREAM_MEM_OP_WRITE_VALUE_32:
        case CU_STREAM_MEM_OP_WRITE_VALUE_64:
        case CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES:
        case CU_STREAM_MEM_OP_BARRIER:
            break;
        default:
            return CUDA_ERROR_INVALID_VALUE;
        }
    for (unsigned i = 0; i < count; i++) {
        const CUstreamBatchMemOpParams *q = &p[i];
        CUresult r = CUDA_SUCCESS;
        switch (q->operation) {
        case CU_STREAM_MEM_OP_WAIT_VALUE_32:
            r = simc_memop(s, ptsz, SIM_W_WAITVAL, DP(q->waitValue.address), q->waitValue.value, 4,
                           q->waitValue.flags);
            break;
        case CU_STREAM_MEM_OP_WAIT_VALUE_64:
            r = simc_memop(s, ptsz, SIM_W_WAITVAL, DP(q->waitValue.address), q->waitValue.value64, 8,
                           q->waitValue.flags);
            break;
        case CU_STREAM_MEM_OP_WRITE_VALUE_32:
            r = simc_memop(s, ptsz, SIM_W_WRITEVAL, DP(q->writeValue.address), q->writeValue.value, 4,
                           q->writeValue.flags);
            break;
        case CU_STREAM_MEM_OP_WRITE_VALUE_64:
            r = simc_memop(s, ptsz, SIM_W_WRITEVAL, DP(q->writeValue.address), q->writeValue.value64, 8,
                           q->writeValue.flags);
            break;
        default:
            r = simc_memop(s, ptsz, SIM_W_NOP, NULL, 0, 0, 0);
        }
        if (r != CUDA_SUCCESS)
            return r;
    }
    return CUDA_SUCCESS;
}

CUresult cuStreamBatchMemOp(CUstream stream, unsigned int count, CUstreamBatchMemOpParams *paramArray,
                            unsigned int flags)
{
    return batch_memop(stream, count, paramArray, flags, 0);
}

CUresult cuStreamBatchMemOp_v2_ptsz(CUstream stream, unsigned int count, CUstreamBatchMemOpParams *paramArray,
                                    unsigned int flags)
{
    return batch_memop(stream, count, paramArray, flags, 1);
}

/* ------------------------------------------------------------------ memory */

CUresult cuMemAlloc(CUdeviceptr *dptr, size_t bytesize)
{
    void *p = NULL;
    if (!dptr)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = simc_malloc(&p, bytesize, SIM_MEM_DEVICE, 0);
    *dptr = (CUdeviceptr)(uintptr_t)p;
    return r;
}

CUresult cuMemFree(CUdeviceptr dptr)
{
    return simc_free(DP(dptr), SIM_MEM_DEVICE);
}

CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    void *p = NULL;
    if (!dptr || !bytesize || (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST))
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = simc_malloc(&p, bytesize, SIM_MEM_MANAGED, flags);
    *dptr = (CUdeviceptr)(uintptr_t)p;
    return r;
}

CUresult cuMemAllocHost(void **pp, size_t bytesize)
{
    return simc_malloc(pp, bytesize, SIM_MEM_PINNED, 0);
}

CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    if (Flags & ~(unsigned)(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED))
        return CUDA_ERROR_INVALID_VALUE;
    return simc_malloc(pp, bytesize, SIM_MEM_PINNED, Flags);
}

CUresult cuMemFreeHost(void *p)
{
    return simc_free(p, SIM_MEM_PINNED);
}

CUresult cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags)
{
    if (Flags & ~(unsigned)(CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
                            CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY))
        return CUDA_ERROR_INVALID_VALUE;
    return simc_host_register(p, bytesize, Flags);
}

CUresult cuMemHostUnregister(void *p)
{
    return simc_host_unregister(p);
}

/* Under UVA all pinned and registered memory is mapped at its own address. */
CUresult cuMemHostGetDevicePointer(CUdeviceptr *pdptr, void *p, unsigned int Flags)
{
    if (!pdptr || Flags)
        return CUDA_ERROR_INVALID_VALUE;
    int k = simc_mem_kind(p, NULL);
    if (k != SIM_MEM_PINNED && k != SIM_MEM_REGISTERED && k != SIM_MEM_MANAGED)
        return CUDA_ERROR_INVALID_VALUE;
    *pdptr = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

CUresult cuMemHostGetFlags(unsigned int *pFlags, void *p)
{
    sim_meminfo mi;
    if (!pFlags)
        return CUDA_ERROR_INVALID_VALUE;
    int k = simc_mem_query(p, &mi);
    if (k != SIM_MEM_PINNED && k != SIM_MEM_REGISTERED)
        return CUDA_ERROR_INVALID_VALUE;
    *pFlags = mi.flags;
    return CUDA_SUCCESS;
}

CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    void *p = NULL;
    if (!dptr)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = simc_malloc_async(&p, bytesize, hStream, 0, SIM_MEM_DEVICE);
    *dptr = (CUdeviceptr)(uintptr_t)p;
    return r;
}

CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    void *p = NULL;
    if (!dptr)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = simc_malloc_async(&p, bytesize, hStream, 1, SIM_MEM_DEVICE);
    *dptr = (CUdeviceptr)(uintptr_t)p;
    return r;
}

/* Memory pools: the simulator keeps only where a pool's memory lives (a
 * host-located pool's is pinned memory, handed out in stream order). */
struct CUmemPoolHandle_st {
    int host;
};

CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props)
{
    if (!pool || !props)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUmemPoolHandle_st *m = calloc(1, sizeof *m);
    if (!m)
        return CUDA_ERROR_OUT_OF_MEMORY;
    m->host = props->location.type == CU_MEM_LOCATION_TYPE_HOST;
    *pool = m;
    return CUDA_SUCCESS;
}

CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
    if (!pool)
        return CUDA_ERROR_INVALID_VALUE;
    free(pool);
    return CUDA_SUCCESS;
}

/* A pool's counts: the simulator keeps none, and answers 0. */
CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    if (!pool || !value)
        return CUDA_ERROR_INVALID_VALUE;
    if (attr == CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES || attr == CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC ||
        attr == CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES)
        *(int *)value = 1;
    else
        *(cuuint64_t *)value = 0;
    return CUDA_SUCCESS;
}

static CUresult alloc_from_pool(CUdeviceptr *dptr, size_t n, CUmemoryPool pool, CUstream s, int ptsz)
{
    void *p = NULL;
    if (!dptr || !pool)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = simc_malloc_async(&p, n, s, ptsz, pool->host ? SIM_MEM_PINNED : SIM_MEM_DEVICE);
    *dptr = (CUdeviceptr)(uintptr_t)p;
    return r;
}

CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t n, CUmemoryPool pool, CUstream s)
{
    return alloc_from_pool(dptr, n, pool, s, 0);
}

CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t n, CUmemoryPool pool, CUstream s)
{
    return alloc_from_pool(dptr, n, pool, s, 1);
}

/* Virtual memory: a reserved range is address space with nothing behind it;
 * a handle is memory of its own (a memory file), mapped shared into a range,
 * where it stays while mapped after its release; where the handle's memory
 * lives is kept to be told (a host location's is pinned memory). */
struct sim_vmm {
    int fd;
    size_t size;
    CUmemAllocationProp prop;
};

enum { SIM_VMM_GRAIN = 4096 };

CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                       CUmemAllocationGranularity_flags option)
{
    (void)option;
    if (!granularity || !prop)
        return CUDA_ERROR_INVALID_VALUE;
    *granularity = SIM_VMM_GRAIN;
    return CUDA_SUCCESS;
}

CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                             unsigned long long flags)
{
    (void)alignment, (void)addr, (void)flags;
    if (!ptr || !size || size % SIM_VMM_GRAIN)
        return CUDA_ERROR_INVALID_VALUE;
    void *p = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *ptr = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    if (!ptr || !size || munmap((void *)(uintptr_t)ptr, size))
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                     unsigned long long flags)
{
    (void)flags;
    if (!handle || !prop || !size || size % SIM_VMM_GRAIN)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_vmm *v = calloc(1, sizeof *v);
    if (!v)
        return CUDA_ERROR_OUT_OF_MEMORY;
    v->fd = memfd_create("sim-vmm", MFD_CLOEXEC);
    if (v->fd < 0 || ftruncate(v->fd, (off_t)size)) {
        if (v->fd >= 0)
            close(v->fd);
        free(v);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    v->size = size;
    v->prop = *prop;
    *handle = (CUmemGenericAllocationHandle)(uintptr_t)v;
    return CUDA_SUCCESS;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    struct sim_vmm *v = (struct sim_vmm *)(uintptr_t)handle;
    if (!v)
        return CUDA_ERROR_INVALID_VALUE;
    close(v->fd);
    free(v);
    return CUDA_SUCCESS;
}

CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop, CUmemGenericAllocationHandle handle)
{
    const struct sim_vmm *v = (const struct sim_vmm *)(uintptr_t)handle;
    if (!prop || !v)
        return CUDA_ERROR_INVALID_VALUE;
    *prop = v->prop;
    return CUDA_SUCCESS;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags)
{
    const struct sim_vmm *v = (const struct sim_vmm *)(uintptr_t)handle;
    if (!ptr || !v || flags || !size || offset + size > v->size || offset % SIM_VMM_GRAIN)
        return CUDA_ERROR_INVALID_VALUE;
    void *p = (void *)(uintptr_t)ptr;
    if (mmap(p, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, v->fd, (off_t)offset) == MAP_FAILED)
        return CUDA_ERROR_OUT_OF_MEMORY;
    return simc_mapped(p, size, v->prop.location.type == CU_MEM_LOCATION_TYPE_DEVICE ? SIM_MEM_DEVICE
                                                                                      : SIM_MEM_PINNED);
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    void *p = (void *)(uintptr_t)ptr;
    CUresult r = simc_mapped(p, size, SIM_MEM_PAGEABLE);
    if (r == CUDA_SUCCESS &&
        mmap(p, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0) == MAP_FAILED)
        r = CUDA_ERROR_INVALID_VALUE;
    return r;
}

/* Access is given at the map: what is asked is only checked. */
CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)
{
    if (!ptr || !size || !desc || !count)
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
    return simc_free_async(DP(dptr), hStream, 0);
}

CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
    return simc_free_async(DP(dptr), hStream, 1);
}

/* strict: cuPointerGetAttribute, which fails on memory CUDA does not know;
 * cuPointerGetAttributes answers zeros there instead. */
static CUresult ptr_attr(void *data, CUpointer_attribute a, CUdeviceptr ptr, int strict)
{
    sim_meminfo mi;
    int k = simc_mem_query(DP(ptr), &mi);
    int dev_only = k == SIM_MEM_DEVICE;
    if (!data)
        return CUDA_ERROR_INVALID_VALUE;
    if (k == SIM_MEM_PAGEABLE && strict)
        return CUDA_ERROR_INVALID_VALUE;
    switch (a) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        *(CUcontext *)data = mi.ctx;
        break;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        /* Managed memory is device memory to the driver; IS_MANAGED tells it apart. */
        *(unsigned *)data = k == SIM_MEM_PAGEABLE ? 0u
                            : (k == SIM_MEM_DEVICE || k == SIM_MEM_MANAGED) ? (unsigned)CU_MEMORYTYPE_DEVICE
                                                                             : (unsigned)CU_MEMORYTYPE_HOST;
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        *(CUdeviceptr *)data = k == SIM_MEM_PAGEABLE ? 0 : ptr;
        break;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        if (dev_only && strict)
            return CUDA_ERROR_INVALID_VALUE;
        *(void **)data = (k == SIM_MEM_PAGEABLE || dev_only) ? NULL : DP(ptr);
        break;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
    case CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE:
        *(int *)data = 0;
        break;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
        *(unsigned long long *)data = mi.id;
        break;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
        *(int *)data = k == SIM_MEM_MANAGED;
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        *(int *)data = k == SIM_MEM_PAGEABLE ? -2 : mi.device;
        break;
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
        *(int *)data = dev_only;
        break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        *(CUdeviceptr *)data = (CUdeviceptr)(uintptr_t)mi.base;
        break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        *(size_t *)data = mi.size;
        break;
    case CU_POINTER_ATTRIBUTE_MAPPED:
        *(int *)data = k != SIM_MEM_PAGEABLE;
        break;
    default:
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    return CUDA_SUCCESS;
}

CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
    return ptr_attr(data, attribute, ptr, 1);
}

CUresult cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute *attributes, void **data,
                                CUdeviceptr ptr)
{
    if (!numAttributes || !attributes || !data)
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < numAttributes; i++) {
        CUresult r = ptr_attr(data[i], attributes[i], ptr, 0);
        if (r != CUDA_SUCCESS)
            return r;
    }
    return CUDA_SUCCESS;
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

CUresult cuStreamGetCtx(CUstream hStream, CUcontext *pctx)
{
    return simc_stream_get_ctx(hStream, 0, pctx);
}

CUresult cuStreamGetCtx_ptsz(CUstream hStream, CUcontext *pctx)
{
    return simc_stream_get_ctx(hStream, 1, pctx);
}

/* No green contexts here: every stream belongs to a regular one. */
CUresult cuStreamGetCtx_v2(CUstream hStream, CUcontext *pCtx, CUgreenCtx *pGreenCtx)
{
    if (!pCtx || !pGreenCtx)
        return CUDA_ERROR_INVALID_VALUE;
    *pGreenCtx = NULL;
    return simc_stream_get_ctx(hStream, 0, pCtx);
}

CUresult cuStreamGetCtx_v2_ptsz(CUstream hStream, CUcontext *pCtx, CUgreenCtx *pGreenCtx)
{
    if (!pCtx || !pGreenCtx)
        return CUDA_ERROR_INVALID_VALUE;
    *pGreenCtx = NULL;
    return simc_stream_get_ctx(hStream, 1, pCtx);
}

CUresult cuStreamSynchronize(CUstream hStream)
{
    return simc_stream_sync(hStream, 0);
}

CUresult cuStreamSynchronize_ptsz(CUstream hStream)
{
    return simc_stream_sync(hStream, 1);
}

/* A newer ABI of the same name, handed out to callers of CUDA 13.5 and later
 * only: what a driver newer than cgraft's headers may do. */
CUresult cuStreamSynchronize_v13050(CUstream hStream)
{
    return simc_stream_sync(hStream, 0);
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
    return simc_capture_begin(hStream, 0, (int)mode, NULL, NULL, 0);
}

CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode)
{
    return simc_capture_begin(hStream, 1, (int)mode, NULL, NULL, 0);
}

/* Edge data only matters for programmatic dependencies, which run in order here. */
CUresult cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph hGraph, const CUgraphNode *dependencies,
                                     const CUgraphEdgeData *dependencyData, size_t numDependencies,
                                     CUstreamCaptureMode mode)
{
    (void)dependencyData;
    if (!hGraph)
        return CUDA_ERROR_INVALID_VALUE;
    return simc_capture_begin(hStream, 0, (int)mode, hGraph, dependencies, numDependencies);
}

CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream hStream, CUgraph hGraph, const CUgraphNode *dependencies,
                                          const CUgraphEdgeData *dependencyData, size_t numDependencies,
                                          CUstreamCaptureMode mode)
{
    (void)dependencyData;
    if (!hGraph)
        return CUDA_ERROR_INVALID_VALUE;
    return simc_capture_begin(hStream, 1, (int)mode, hGraph, dependencies, numDependencies);
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

CUresult cuGraphClone(CUgraph *phGraphClone, CUgraph originalGraph)
{
    return simc_graph_clone(phGraphClone, originalGraph);
}

/* .func, else .kern; .ctx, when given, must be a context. */
static CUresult kernel_work(sim_work *w, const CUDA_KERNEL_NODE_PARAMS *p)
{
    int dev;
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    if (p->ctx && simc_ctx_get_device(p->ctx, &dev) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_CONTEXT;
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

/* Graph copies read their sides when the node runs, pageable or not. */
/* Launch attributes of a kernel node shape scheduling only, as with
 * cuLaunchKernelEx: unknown ids and partial clusters are what is refused. */
CUresult cuGraphKernelNodeSetAttribute(CUgraphNode hNode, CUkernelNodeAttrID attr, const CUkernelNodeAttrValue *value)
{
    sim_launch l;
    if (!value || simc_node_launch(hNode, &l) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_VALUE;
    if ((unsigned)attr > (unsigned)CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE + 8)
        return CUDA_ERROR_INVALID_VALUE;
    if (attr == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
        unsigned x = value->clusterDim.x, y = value->clusterDim.y, z = value->clusterDim.z;
        if (!x || !y || !z || l.grid.x % x || l.grid.y % y || l.grid.z % z)
            return CUDA_ERROR_INVALID_CLUSTER_SIZE;
    }
    if (attr == CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE)
        return simc_node_set_devupd(hNode, value->deviceUpdatableKernelNode.deviceUpdatable);
    return CUDA_SUCCESS;
}

/* Only whether a node is device-updatable, and its device handle (the node). */
CUresult cuGraphKernelNodeGetAttribute(CUgraphNode hNode, CUkernelNodeAttrID attr, CUkernelNodeAttrValue *value_out)
{
    sim_launch l;
    if (!value_out || simc_node_launch(hNode, &l) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_VALUE;
    if (attr != CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE)
        return CUDA_ERROR_NOT_SUPPORTED;
    memset(value_out, 0, sizeof(*value_out));
    value_out->deviceUpdatableKernelNode.deviceUpdatable = simc_node_devupd(hNode);
    value_out->deviceUpdatableKernelNode.devNode = (CUgraphDeviceNode)hNode;
    return CUDA_SUCCESS;
}

CUresult cuGraphNodeSetEnabled(CUgraphExec hGraphExec, CUgraphNode hNode, unsigned int isEnabled)
{
    return simc_exec_enable(hGraphExec, hNode, isEnabled != 0);
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
    if (w->height > 1 && w->dpitch < w->width * w->elem)
        return CUDA_ERROR_INVALID_VALUE;
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

CUresult cuGraphAddChildGraphNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                  size_t numDependencies, CUgraph childGraph)
{
    return simc_graph_add_child(phGraphNode, hGraph, dependencies, numDependencies, childGraph);
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

/* An upload is work of its stream, ordered behind what came before: the
 * stream is busy till it is done. */
static CUresult graph_upload(CUgraphExec hGraphExec, CUstream hStream, int ptsz)
{
    simc_tick();
    CUresult r = hGraphExec ? simc_exec_upload(hGraphExec) : CUDA_ERROR_INVALID_VALUE;
    return r == CUDA_SUCCESS ? simc_memop(hStream, ptsz, SIM_W_NOP, NULL, 0, 0, 0) : r;
}

CUresult cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream)
{
    return graph_upload(hGraphExec, hStream, 0);
}

CUresult cuGraphUpload_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
    return graph_upload(hGraphExec, hStream, 1);
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
 * back for CUDA 12+ callers, plain and per-thread. since, when set, is the
 * first CUDA version that has the entry at all; from since2 on a caller gets
 * the newer ABI plain2/ptsz2 (cudaTypedefs.h's PFN_<name>_v<since2>). An entry
 * with a direct pointer is exported under no name. */
static const struct proc {
    const char *name, *plain, *ptsz;
    int since, since2;
    const char *plain2, *ptsz2;
    void *direct, *direct_ptsz;
} procs[] = {
#define P(n, pl, pt) { n, pl, pt, 0, 0, NULL, NULL, NULL, NULL }
#define PS(n, pl, pt, since) { n, pl, pt, since, 0, NULL, NULL, NULL, NULL }
#define PV(n, pl, pt, since2, pl2, pt2) { n, pl, pt, 0, since2, pl2, pt2, NULL, NULL }
#define PD(n, f, fpt, since) { n, NULL, NULL, since, 0, NULL, NULL, (void *)(f), (void *)(fpt) }
    P("cuInit", "cuInit", NULL),
    P("cuDriverGetVersion", "cuDriverGetVersion", NULL),
    P("cuGetProcAddress", "cuGetProcAddress_v2", NULL),
    P("cuDeviceGet", "cuDeviceGet", NULL),
    P("cuDeviceGetCount", "cuDeviceGetCount", NULL),
    PV("cuCtxGetDevice", "cuCtxGetDevice", NULL, 13000, "cuCtxGetDevice_v2", NULL),
    PV("cuCtxSynchronize", "cuCtxSynchronize", NULL, 13000, "cuCtxSynchronize_v2", NULL),
    P("cuCtxGetCurrent", "cuCtxGetCurrent", NULL),
    P("cuCtxSetCurrent", "cuCtxSetCurrent", NULL),
    P("cuCtxPushCurrent", "cuCtxPushCurrent_v2", NULL),
    P("cuCtxPopCurrent", "cuCtxPopCurrent_v2", NULL),
    P("cuCtxCreate", "cuCtxCreate_v4", NULL),
    P("cuCtxDestroy", "cuCtxDestroy_v2", NULL),
    P("cuCtxGetId", "cuCtxGetId", NULL),
    P("cuCtxGetFlags", "cuCtxGetFlags", NULL),
    P("cuCtxGetApiVersion", "cuCtxGetApiVersion", NULL),
    P("cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRetain", NULL),
    P("cuDevicePrimaryCtxRelease", "cuDevicePrimaryCtxRelease_v2", NULL),
    P("cuDevicePrimaryCtxReset", "cuDevicePrimaryCtxReset_v2", NULL),
    P("cuDevicePrimaryCtxGetState", "cuDevicePrimaryCtxGetState", NULL),
    P("cuDevicePrimaryCtxSetFlags", "cuDevicePrimaryCtxSetFlags_v2", NULL),
    P("cuKernelGetParamInfo", "cuKernelGetParamInfo", NULL),
    P("cuFuncGetParamInfo", "cuFuncGetParamInfo", NULL),
    P("cuFuncGetName", "cuFuncGetName", NULL),
    P("cuKernelGetName", "cuKernelGetName", NULL),
    P("cuFuncGetAttribute", "cuFuncGetAttribute", NULL),
    P("cuFuncSetAttribute", "cuFuncSetAttribute", NULL),
    P("cuKernelGetAttribute", "cuKernelGetAttribute", NULL),
    P("cuKernelSetAttribute", "cuKernelSetAttribute", NULL),
    P("cuFuncGetModule", "cuFuncGetModule", NULL),
    P("cuModuleLoadData", "cuModuleLoadData", NULL),
    P("cuModuleLoadDataEx", "cuModuleLoadDataEx", NULL),
    P("cuModuleUnload", "cuModuleUnload", NULL),
    P("cuModuleGetFunction", "cuModuleGetFunction", NULL),
    P("cuLibraryLoadData", "cuLibraryLoadData", NULL),
    P("cuLibraryUnload", "cuLibraryUnload", NULL),
    P("cuLibraryGetKernel", "cuLibraryGetKernel", NULL),
    P("cuKernelGetFunction", "cuKernelGetFunction", NULL),
    P("cuKernelGetLibrary", "cuKernelGetLibrary", NULL),
    P("cuLaunchKernel", "cuLaunchKernel", "cuLaunchKernel_ptsz"),
    P("cuLaunchKernelEx", "cuLaunchKernelEx", "cuLaunchKernelEx_ptsz"),
    P("cuLaunchCooperativeKernel", "cuLaunchCooperativeKernel", "cuLaunchCooperativeKernel_ptsz"),
    P("cuMemcpy", "cuMemcpy", "cuMemcpy_ptds"),
    P("cuMemcpyAsync", "cuMemcpyAsync", "cuMemcpyAsync_ptsz"),
    P("cuMemcpyHtoD", "cuMemcpyHtoD_v2", "cuMemcpyHtoD_v2_ptds"),
    P("cuMemcpyDtoH", "cuMemcpyDtoH_v2", "cuMemcpyDtoH_v2_ptds"),
    P("cuMemcpyDtoD", "cuMemcpyDtoD_v2", "cuMemcpyDtoD_v2_ptds"),
    P("cuMemcpyHtoDAsync", "cuMemcpyHtoDAsync_v2", "cuMemcpyHtoDAsync_v2_ptsz"),
    P("cuMemcpyDtoHAsync", "cuMemcpyDtoHAsync_v2", "cuMemcpyDtoHAsync_v2_ptsz"),
    P("cuMemcpyDtoDAsync", "cuMemcpyDtoDAsync_v2", "cuMemcpyDtoDAsync_v2_ptsz"),
    P("cuMemcpy2D", "cuMemcpy2D_v2", "cuMemcpy2D_v2_ptds"),
    P("cuMemcpy2DUnaligned", "cuMemcpy2DUnaligned_v2", "cuMemcpy2DUnaligned_v2_ptds"),
    P("cuMemcpy2DAsync", "cuMemcpy2DAsync_v2", "cuMemcpy2DAsync_v2_ptsz"),
    P("cuMemcpy3D", "cuMemcpy3D_v2", "cuMemcpy3D_v2_ptds"),
    P("cuMemcpy3DAsync", "cuMemcpy3DAsync_v2", "cuMemcpy3DAsync_v2_ptsz"),
    P("cuMemcpyPeer", "cuMemcpyPeer", "cuMemcpyPeer_ptds"),
    P("cuMemcpyPeerAsync", "cuMemcpyPeerAsync", "cuMemcpyPeerAsync_ptsz"),
    P("cuMemcpy3DPeer", "cuMemcpy3DPeer", "cuMemcpy3DPeer_ptds"),
    P("cuMemcpy3DPeerAsync", "cuMemcpy3DPeerAsync", "cuMemcpy3DPeerAsync_ptsz"),
    PS("cuMemcpyBatchAsync", "cuMemcpyBatchAsync_v2", "cuMemcpyBatchAsync_v2_ptsz", 13000),
    P("cuMemsetD8", "cuMemsetD8_v2", "cuMemsetD8_v2_ptds"),
    P("cuMemsetD16", "cuMemsetD16_v2", "cuMemsetD16_v2_ptds"),
    P("cuMemsetD32", "cuMemsetD32_v2", "cuMemsetD32_v2_ptds"),
    P("cuMemsetD2D8", "cuMemsetD2D8_v2", "cuMemsetD2D8_v2_ptds"),
    P("cuMemsetD2D16", "cuMemsetD2D16_v2", "cuMemsetD2D16_v2_ptds"),
    P("cuMemsetD2D32", "cuMemsetD2D32_v2", "cuMemsetD2D32_v2_ptds"),
    P("cuMemsetD8Async", "cuMemsetD8Async", "cuMemsetD8Async_ptsz"),
    P("cuMemsetD16Async", "cuMemsetD16Async", "cuMemsetD16Async_ptsz"),
    P("cuMemsetD32Async", "cuMemsetD32Async", "cuMemsetD32Async_ptsz"),
    P("cuMemsetD2D8Async", "cuMemsetD2D8Async", "cuMemsetD2D8Async_ptsz"),
    P("cuMemsetD2D16Async", "cuMemsetD2D16Async", "cuMemsetD2D16Async_ptsz"),
    P("cuMemsetD2D32Async", "cuMemsetD2D32Async", "cuMemsetD2D32Async_ptsz"),
    PD("cuSimFutureMemset", cuSimFutureMemset, cuSimFutureMemset_ptsz, 13000),
    P("cuStreamWriteValue32", "cuStreamWriteValue32_v2", "cuStreamWriteValue32_v2_ptsz"),
    P("cuStreamWriteValue64", "cuStreamWriteValue64_v2", "cuStreamWriteValue64_v2_ptsz"),
    P("cuStreamWaitValue32", "cuStreamWaitValue32_v2", "cuStreamWaitValue32_v2_ptsz"),
    P("cuStreamWaitValue64", "cuStreamWaitValue64_v2", "cuStreamWaitValue64_v2_ptsz"),
    P("cuStreamBatchMemOp", "cuStreamBatchMemOp_v2", "cuStreamBatchMemOp_v2_ptsz"),
    P("cuMemAlloc", "cuMemAlloc_v2", NULL),
    P("cuMemFree", "cuMemFree_v2", NULL),
    P("cuMemAllocManaged", "cuMemAllocManaged", NULL),
    P("cuMemAllocHost", "cuMemAllocHost_v2", NULL),
    P("cuMemHostAlloc", "cuMemHostAlloc", NULL),
    P("cuMemFreeHost", "cuMemFreeHost", NULL),
    P("cuMemHostRegister", "cuMemHostRegister_v2", NULL),
    P("cuMemHostUnregister", "cuMemHostUnregister", NULL),
    P("cuMemHostGetDevicePointer", "cuMemHostGetDevicePointer_v2", NULL),
    P("cuMemHostGetFlags", "cuMemHostGetFlags", NULL),
    P("cuMemAllocAsync", "cuMemAllocAsync", "cuMemAllocAsync_ptsz"),
    P("cuMemFreeAsync", "cuMemFreeAsync", "cuMemFreeAsync_ptsz"),
    P("cuMemPoolCreate", "cuMemPoolCreate", NULL),
    P("cuMemPoolDestroy", "cuMemPoolDestroy", NULL),
    P("cuMemPoolGetAttribute", "cuMemPoolGetAttribute", NULL),
    P("cuMemAllocFromPoolAsync", "cuMemAllocFromPoolAsync", "cuMemAllocFromPoolAsync_ptsz"),
    P("cuMemGetAllocationGranularity", "cuMemGetAllocationGranularity", NULL),
    P("cuMemAddressReserve", "cuMemAddressReserve", NULL),
    P("cuMemAddressFree", "cuMemAddressFree", NULL),
    P("cuMemCreate", "cuMemCreate", NULL),
    P("cuMemRelease", "cuMemRelease", NULL),
    P("cuMemGetAllocationPropertiesFromHandle", "cuMemGetAllocationPropertiesFromHandle", NULL),
    P("cuMemMap", "cuMemMap", NULL),
    P("cuMemUnmap", "cuMemUnmap", NULL),
    P("cuMemSetAccess", "cuMemSetAccess", NULL),
    P("cuPointerGetAttribute", "cuPointerGetAttribute", NULL),
    P("cuPointerGetAttributes", "cuPointerGetAttributes", NULL),
    P("cuStreamCreate", "cuStreamCreate", NULL),
    P("cuStreamCreateWithPriority", "cuStreamCreateWithPriority", NULL),
    P("cuStreamDestroy", "cuStreamDestroy_v2", NULL),
    P("cuStreamGetFlags", "cuStreamGetFlags", "cuStreamGetFlags_ptsz"),
    P("cuStreamGetPriority", "cuStreamGetPriority", "cuStreamGetPriority_ptsz"),
    PV("cuStreamGetCtx", "cuStreamGetCtx", "cuStreamGetCtx_ptsz", 12050, "cuStreamGetCtx_v2", "cuStreamGetCtx_v2_ptsz"),
    PV("cuStreamSynchronize", "cuStreamSynchronize", "cuStreamSynchronize_ptsz", 13050, "cuStreamSynchronize_v13050",
       NULL),
    P("cuStreamQuery", "cuStreamQuery", "cuStreamQuery_ptsz"),
    P("cuStreamWaitEvent", "cuStreamWaitEvent", "cuStreamWaitEvent_ptsz"),
    P("cuLaunchHostFunc", "cuLaunchHostFunc", "cuLaunchHostFunc_ptsz"),
    P("cuStreamAddCallback", "cuStreamAddCallback", "cuStreamAddCallback_ptsz"),
    P("cuEventCreate", "cuEventCreate", NULL),
    P("cuEventDestroy", "cuEventDestroy_v2", NULL),
    P("cuEventRecord", "cuEventRecord", "cuEventRecord_ptsz"),
    P("cuEventRecordWithFlags", "cuEventRecordWithFlags", "cuEventRecordWithFlags_ptsz"),
    P("cuEventQuery", "cuEventQuery", NULL),
    P("cuEventSynchronize", "cuEventSynchronize", NULL),
    P("cuEventElapsedTime", "cuEventElapsedTime_v2", NULL),
    P("cuStreamBeginCapture", "cuStreamBeginCapture_v2", "cuStreamBeginCapture_v2_ptsz"),
    P("cuStreamBeginCaptureToGraph", "cuStreamBeginCaptureToGraph", "cuStreamBeginCaptureToGraph_ptsz"),
    P("cuStreamEndCapture", "cuStreamEndCapture", "cuStreamEndCapture_ptsz"),
    P("cuStreamIsCapturing", "cuStreamIsCapturing", "cuStreamIsCapturing_ptsz"),
    P("cuStreamGetCaptureInfo", "cuStreamGetCaptureInfo_v3", "cuStreamGetCaptureInfo_v3_ptsz"),
    P("cuThreadExchangeStreamCaptureMode", "cuThreadExchangeStreamCaptureMode", NULL),
    P("cuGraphCreate", "cuGraphCreate", NULL),
    P("cuGraphDestroy", "cuGraphDestroy", NULL),
    P("cuGraphClone", "cuGraphClone", NULL),
    P("cuGraphAddKernelNode", "cuGraphAddKernelNode_v2", NULL),
    P("cuGraphKernelNodeSetAttribute", "cuGraphKernelNodeSetAttribute", NULL),
    P("cuGraphKernelNodeGetAttribute", "cuGraphKernelNodeGetAttribute", NULL),
    P("cuGraphNodeSetEnabled", "cuGraphNodeSetEnabled", NULL),
    P("cuGraphAddMemcpyNode", "cuGraphAddMemcpyNode", NULL),
    P("cuGraphAddMemsetNode", "cuGraphAddMemsetNode", NULL),
    P("cuGraphAddHostNode", "cuGraphAddHostNode", NULL),
    P("cuGraphAddEventRecordNode", "cuGraphAddEventRecordNode", NULL),
    P("cuGraphAddEventWaitNode", "cuGraphAddEventWaitNode", NULL),
    P("cuGraphAddEmptyNode", "cuGraphAddEmptyNode", NULL),
    P("cuGraphAddChildGraphNode", "cuGraphAddChildGraphNode", NULL),
    P("cuGraphAddDependencies", "cuGraphAddDependencies_v2", NULL),
    P("cuGraphGetNodes", "cuGraphGetNodes", NULL),
    P("cuGraphInstantiate", "cuGraphInstantiateWithFlags", NULL),
    P("cuGraphInstantiateWithFlags", "cuGraphInstantiateWithFlags", NULL),
    P("cuGraphExecDestroy", "cuGraphExecDestroy", NULL),
    P("cuGraphExecKernelNodeSetParams", "cuGraphExecKernelNodeSetParams_v2", NULL),
    P("cuGraphExecMemcpyNodeSetParams", "cuGraphExecMemcpyNodeSetParams", NULL),
    P("cuGraphExecMemsetNodeSetParams", "cuGraphExecMemsetNodeSetParams", NULL),
    P("cuGraphExecHostNodeSetParams", "cuGraphExecHostNodeSetParams", NULL),
    P("cuGraphExecEventRecordNodeSetEvent", "cuGraphExecEventRecordNodeSetEvent", NULL),
    P("cuGraphExecEventWaitNodeSetEvent", "cuGraphExecEventWaitNodeSetEvent", NULL),
    P("cuGraphExecUpdate", "cuGraphExecUpdate_v2", NULL),
    P("cuGraphUpload", "cuGraphUpload", "cuGraphUpload_ptsz"),
    P("cuGraphLaunch", "cuGraphLaunch", "cuGraphLaunch_ptsz"),
#undef P
#undef PS
#undef PV
#undef PD
};

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *symbolStatus)
{
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
    if (p->since && cudaVersion < p->since) {
        if (symbolStatus)
            *symbolStatus = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
        return CUDA_ERROR_NOT_FOUND;
    }
    int pt = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
    if (p->direct) {
        *pfn = pt && p->direct_ptsz ? p->direct_ptsz : p->direct;
    } else {
        int v2 = p->since2 && cudaVersion >= p->since2;
        const char *plain = v2 ? p->plain2 : p->plain, *ptsz = v2 ? p->ptsz2 : p->ptsz;
        const char *link = pt && ptsz ? ptsz : plain;
        /* The real driver hands out its own functions, never what an
         * interposed dlsym would answer: look them up with libc's dlsym. */
        static void *(*real_dlsym)(void *, const char *);
        if (!real_dlsym) {
            void *libc = dlopen("libc.so.6", RTLD_NOLOAD | RTLD_LAZY);
            real_dlsym = libc ? (void *(*)(void *, const char *))dlvsym(libc, "dlsym", "GLIBC_2.34") : NULL;
            if (libc && !real_dlsym)
                real_dlsym = (void *(*)(void *, const char *))dlvsym(libc, "dlsym", "GLIBC_2.2.5");
        }
        void *self = dlopen("libcuda.so.1", RTLD_NOLOAD | RTLD_LAZY);
        if (!self || !real_dlsym)
            return CUDA_ERROR_NOT_FOUND;
        *pfn = real_dlsym(self, link);
        dlclose(self);
    }
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
