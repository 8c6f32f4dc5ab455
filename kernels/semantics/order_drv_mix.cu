// drv_mix: runtime and driver calls interleaved on the same streams, each
// reading what the other wrote:
//  - <<<>>> launches;
//  - cuLaunchKernel on a CUfunction from cudaGetFuncBySymbol, with kernelParams;
//  - cuLaunchKernel with the `extra` form (CU_LAUNCH_PARAM_BUFFER_POINTER), the
//    packed buffer rewritten right after each call;
//  - cuLaunchKernel and cuMemsetD32Async reached through
//    cudaGetDriverEntryPointByVersion (the way frameworks find the driver), the
//    first given a cudaKernel_t from cudaGetKernel cast to CUfunction;
//  - cuLaunchKernelEx on a CUfunction;
//  - cuEventRecord + cudaStreamWaitEvent and cudaEventRecord + cuStreamWaitEvent
//    across a driver-created and a runtime-created non-blocking stream;
//  - cuMemcpyDtoHAsync and cudaMemcpyAsync read-backs.
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda.h>
#include <cuda_runtime.h>
#include "order_common.cuh"

static const int N = 2048, TPB = 256, GRID = N / TPB, ITERS = 80;

__global__ void kA(unsigned *x, unsigned i) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    spin_cycles(8000);
    x[j] = hsh(i, (unsigned)j);
}
__global__ void kB(unsigned *y, const unsigned *x, unsigned i) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    y[j] = x[j] * 3u + i;
}
__global__ void kC(unsigned *z, const unsigned *y, unsigned k) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    z[j] = y[j] ^ k;
}
__global__ void kD(unsigned *acc, const unsigned *z, unsigned a, unsigned long long b) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned v = acc[j] * 5u + z[j] + a + (unsigned)(b >> 32) + (unsigned)b;
    spin_cycles(8000);
    acc[j] = v;
}
__global__ void kE(unsigned *t2, const unsigned *acc, const unsigned *t) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned v = acc[j] + t[j] * 9u;
    spin_cycles(8000);
    t2[j] = v;
}
__global__ void kF(unsigned *acc2, const unsigned *t2, unsigned i) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    acc2[j] = (acc2[j] ^ t2[j]) * 7u + i;
}

int main() {
    CK(cudaSetDevice(0));
    CK(cudaFree(0));

    cudaFunction_t fB, fD, fF;
    CK(cudaGetFuncBySymbol(&fB, (const void *)kB));
    CK(cudaGetFuncBySymbol(&fD, (const void *)kD));
    CK(cudaGetFuncBySymbol(&fF, (const void *)kF));
    cudaKernel_t kernC;
    CK(cudaGetKernel(&kernC, (const void *)kC));
    void *pfn = nullptr;
    cudaDriverEntryPointQueryResult q;
    CK(cudaGetDriverEntryPointByVersion("cuLaunchKernel", &pfn, 12000, cudaEnableDefault, &q));
    if (q != cudaDriverEntryPointSuccess || !pfn) { printf("no cuLaunchKernel entry point\n"); return 2; }
    auto pLaunch = (CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                 CUstream, void **, void **))pfn;
    CK(cudaGetDriverEntryPointByVersion("cuMemsetD32Async", &pfn, 12000, cudaEnableDefault, &q));
    if (q != cudaDriverEntryPointSuccess || !pfn) { printf("no cuMemsetD32Async entry point\n"); return 2; }
    auto pMemsetD32Async = (CUresult (*)(CUdeviceptr, unsigned, size_t, CUstream))pfn;

    CUstream s1;
    CU(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    cudaStream_t s2;
    CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    cudaEvent_t ev;
    CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    CUevent ev2;
    CU(cuEventCreate(&ev2, CU_EVENT_DISABLE_TIMING));

    unsigned *X, *Y, *Z, *ACC, *T, *T2, *ACC2;
    CK(cudaMalloc(&X, N * 4)); CK(cudaMalloc(&Y, N * 4)); CK(cudaMalloc(&Z, N * 4)); CK(cudaMalloc(&ACC, N * 4));
    CK(cudaMalloc(&T, N * 4)); CK(cudaMalloc(&T2, N * 4)); CK(cudaMalloc(&ACC2, N * 4));
    CK(cudaMemset(ACC, 0, N * 4)); CK(cudaMemset(ACC2, 0, N * 4));
    unsigned *ring, *ring2;
    CK(cudaMallocHost(&ring, (size_t)ITERS * N * 4));
    CK(cudaMallocHost(&ring2, (size_t)ITERS * N * 4));
    memset(ring, 0xAB, (size_t)ITERS * N * 4);
    memset(ring2, 0xAB, (size_t)ITERS * N * 4);
    CK(cudaDeviceSynchronize());

    std::vector<unsigned> acc(N, 0u), acc2(N, 0u);
    auto check_iter = [&](int i) {
        unsigned ui = (unsigned)i;
        unsigned a = ui * 17u + 3u;
        unsigned long long b = ((unsigned long long)(ui + 1u) << 32) | (ui * 5u);
        for (int j = 0; j < N; ++j) {
            unsigned x = hsh(ui, (unsigned)j);
            unsigned y = x * 3u + ui;
            unsigned z = y ^ (ui * 0x01000193u);
            acc[j] = acc[j] * 5u + z + a + (unsigned)(b >> 32) + (unsigned)b;
            unsigned t2 = acc[j] + (ui * 0x01000193u) * 9u;
            acc2[j] = (acc2[j] ^ t2) * 7u + ui;
        }
        const unsigned *g1 = ring + (size_t)i * N, *g2 = ring2 + (size_t)i * N;
        for (int j = 0; j < N; ++j)
            if (g1[j] != acc2[j]) { failf("iter %d: ACC2[%d] = %08x, want %08x", i, j, g1[j], acc2[j]); break; }
        for (int j = 0; j < N; ++j)
            if (g2[j] != acc[j]) { failf("iter %d: ACC[%d] = %08x, want %08x", i, j, g2[j], acc[j]); break; }
    };

    for (int i = 0; i < ITERS; ++i) {
        unsigned ui = (unsigned)i;
        // 1. runtime
        kA<<<GRID, TPB, 0, (cudaStream_t)s1>>>(X, ui);
        CK(cudaGetLastError());
        // 2. driver, CUfunction from cudaGetFuncBySymbol
        {
            void *p[] = {&Y, &X, &ui};
            CU(cuLaunchKernel((CUfunction)fB, GRID, 1, 1, TPB, 1, 1, 0, s1, p, nullptr));
        }
        // 3. driver through the entry point, cudaKernel_t as CUfunction
        {
            unsigned k = ui * 0x01000193u;
            void *p[] = {&Z, &Y, &k};
            CU(pLaunch((CUfunction)kernC, GRID, 1, 1, TPB, 1, 1, 0, s1, p, nullptr));
        }
        // 4. driver, extra form; the buffer is scribbled over after the call
        {
            alignas(8) unsigned char buf[32];
            unsigned a = ui * 17u + 3u;
            unsigned long long b = ((unsigned long long)(ui + 1u) << 32) | (ui * 5u);
            memcpy(buf + 0, &ACC, 8);
            memcpy(buf + 8, &Z, 8);
            memcpy(buf + 16, &a, 4);
            memset(buf + 20, 0, 4);
            memcpy(buf + 24, &b, 8);
            size_t sz = sizeof(buf);
            void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &sz, CU_LAUNCH_PARAM_END};
            CU(cuLaunchKernel((CUfunction)fD, GRID, 1, 1, TPB, 1, 1, 0, s1, nullptr, extra));
            memset(buf, 0xEE, sizeof(buf));
            sz = 0;
        }
        // 5. fork: driver record, runtime wait
        CU(cuEventRecord((CUevent)ev, s1));
        CK(cudaStreamWaitEvent(s2, ev, 0));
        // 6. driver memset through the entry point, then a runtime kernel reading ACC
        CU(pMemsetD32Async((CUdeviceptr)T, ui * 0x01000193u, N, (CUstream)s2));
        kE<<<GRID, TPB, 0, s2>>>(T2, ACC, T);
        CK(cudaGetLastError());
        // 7. join: runtime record, driver wait
        CK(cudaEventRecord((cudaEvent_t)ev2, s2));
        CU(cuStreamWaitEvent(s1, ev2, 0));
        // 8. cuLaunchKernelEx
        {
            CUlaunchConfig cfg;
            memset(&cfg, 0, sizeof(cfg));
            cfg.gridDimX = GRID; cfg.gridDimY = 1; cfg.gridDimZ = 1;
            cfg.blockDimX = TPB; cfg.blockDimY = 1; cfg.blockDimZ = 1;
            cfg.sharedMemBytes = 0; cfg.hStream = s1; cfg.attrs = nullptr; cfg.numAttrs = 0;
            void *p[] = {&ACC2, &T2, &ui};
            CU(cuLaunchKernelEx(&cfg, (CUfunction)fF, p, nullptr));
        }
        // 9. read-backs, driver and runtime
        CU(cuMemcpyDtoHAsync(ring + (size_t)i * N, (CUdeviceptr)ACC2, N * 4, s1));
        CK(cudaMemcpyAsync(ring2 + (size_t)i * N, ACC, N * 4, cudaMemcpyDeviceToHost, (cudaStream_t)s1));
        // 10. the host waits for s1 (s2's work is behind ev2) and checks this iteration at once
        CU(cuStreamSynchronize(s1));
        check_iter(i);
    }
    CU(cuStreamSynchronize(s1));
    CK(cudaStreamSynchronize(s2));
    CK(cudaDeviceSynchronize());
    CK(cudaGetLastError());
    for (int i = 0; i < ITERS; ++i) {
        const unsigned *g1 = ring + (size_t)i * N, *g2 = ring2 + (size_t)i * N;
        for (int j = 0; j < N; ++j) { mix(g1[j]); mix(g2[j]); }
    }

    CU(cuStreamDestroy(s1));
    CK(cudaStreamDestroy(s2));
    CK(cudaEventDestroy(ev));
    CU(cuEventDestroy(ev2));
    CK(cudaFreeHost(ring)); CK(cudaFreeHost(ring2));
    return finish("drv_mix");
}
