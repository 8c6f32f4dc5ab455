// contexts: two CUDA contexts on one device, switched by the program inside
// the loop.  Context A is the primary context (cudaSetDevice; the handle from
// cuDevicePrimaryCtxRetain), context B is made with cuCtxCreate.  Each has its
// own stream, event and device buffers; only Portable pinned host memory is
// touched by both.  Per iteration:
//  - in A: a cuStreamWaitEvent on B's event of the previous iteration and an
//    H2D copy of B's previous result out of pinned memory (cuMemsetD32Async of
//    a per-iteration value instead when there is no B result), a slow <<<>>>
//    kernel, the SAME CUkernel (cudaGetKernel) through cuLaunchKernel, a D2H
//    copy into A's pinned ring and cudaEventRecord; nothing synchronised;
//  - switch to B (cuCtxSetCurrent, cuCtxPushCurrent or cuCtxSetCurrent by
//    turns): synchronise B's stream or context and check B's result of the
//    previous iteration; then, in B, a cuStreamWaitEvent on A's event just
//    recorded (documented: the event may come from another context), an H2D
//    copy of A's result of this iteration out of pinned memory, a slow <<<>>>
//    kernel, cuLaunchKernel of the CUkernel on B's stream (it runs in the
//    stream's context), cuMemcpyDtoHAsync and cuEventRecord;
//  - switch back (cuCtxSetCurrent, cuCtxPopCurrent or cudaSetDevice by turns),
//    synchronise only A's stream and check A's result while B's is in flight.
// Near the end B is synchronised, partly freed and destroyed with cuCtxDestroy
// (its stream and one buffer implicitly) while A's work of that iteration is
// still queued; the loop goes on in the primary context alone.
// An interposer that holds A's work back past the switch lets B's wait see an
// unrecorded event and copy a stale ring slot; one that submits held work in
// the wrong context, syncs the wrong stream, launches the CUkernel in the
// current instead of the stream's context, leaves another context current, or
// replays B's work after cuCtxDestroy gives wrong words, errors or a hang.
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda.h>
#include <cuda_runtime.h>
#include "order_common.cuh"

static const int N = 2048, TPB = 256, GRID = N / TPB, ITERS = 96, KILL = 64;

__global__ void kGen(unsigned *x, unsigned seed) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    spin_cycles(20000);
    x[j] = hsh(seed, (unsigned)j);
}
// Launched through cuLaunchKernel in both contexts.
__global__ void kAcc(unsigned *acc, const unsigned *in, const unsigned *x, unsigned a, unsigned mul) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    acc[j] = (acc[j] ^ in[j]) * mul + x[j] + a;
}

static unsigned seedA(int i) { return hsh(0xA000u + (unsigned)i, 1u); }
static unsigned seedB(int i) { return hsh(0xB000u + (unsigned)i, 2u); }
static unsigned addA(int i) { return (unsigned)i * 0x9E37u + 11u; }
static unsigned addB(int i) { return (unsigned)i * 0x85EBu + 7u; }
static unsigned fillA(int i) { return hsh((unsigned)i, 0x77u); }

static void expect_current(CUcontext want, const char *where, int i) {
    CUcontext c = nullptr;
    CU(cuCtxGetCurrent(&c));
    if (c != want) failf("iter %d: %s: wrong context current", i, where);
}
static void check_words(const char *what, int i, const unsigned *got, const unsigned *want) {
    for (int j = 0; j < N; ++j)
        if (got[j] != want[j]) { failf("iter %d: %s[%d] = %08x, want %08x", i, what, j, got[j], want[j]); break; }
    for (int j = 0; j < N; ++j) mix(got[j]);
}

int main() {
    CU(cuInit(0));
    CUdevice dev;
    CU(cuDeviceGet(&dev, 0));
    CK(cudaSetDevice(0));
    CK(cudaFree(0));
    CUcontext ctxA = nullptr, ctxB = nullptr;
    CU(cuDevicePrimaryCtxRetain(&ctxA, dev));
    expect_current(ctxA, "after cudaSetDevice", -1);

    cudaKernel_t kern;
    CK(cudaGetKernel(&kern, (const void *)kAcc));

    // ---- context A (primary): runtime stream and event, runtime buffers
    cudaStream_t sA;
    CK(cudaStreamCreateWithFlags(&sA, cudaStreamNonBlocking));
    cudaEvent_t evA;
    CK(cudaEventCreateWithFlags(&evA, cudaEventDisableTiming));
    unsigned *XA, *ACCA, *INA;
    CK(cudaMalloc(&XA, N * 4)); CK(cudaMalloc(&ACCA, N * 4)); CK(cudaMalloc(&INA, N * 4));
    CK(cudaMemset(ACCA, 0, N * 4));
    unsigned *ringA, *ringB;   // pinned for every context
    CK(cudaHostAlloc(&ringA, (size_t)ITERS * N * 4, cudaHostAllocPortable));
    CK(cudaHostAlloc(&ringB, (size_t)KILL * N * 4, cudaHostAllocPortable));
    memset(ringA, 0xAB, (size_t)ITERS * N * 4);
    memset(ringB, 0xCD, (size_t)KILL * N * 4);
    CK(cudaDeviceSynchronize());

    // ---- context B (cuCtxCreate pushes it): driver stream and event, mixed buffers
    CU(cuCtxCreate(&ctxB, nullptr, 0, dev));
    expect_current(ctxB, "after cuCtxCreate", -1);
    CUstream sB;
    CU(cuStreamCreate(&sB, CU_STREAM_NON_BLOCKING));
    CUevent evB;
    CU(cuEventCreate(&evB, CU_EVENT_DISABLE_TIMING));
    unsigned *XB, *ACCB;
    CK(cudaMalloc(&XB, N * 4)); CK(cudaMalloc(&ACCB, N * 4));   // the runtime works in B
    CUdeviceptr INBd;
    CU(cuMemAlloc(&INBd, N * 4));
    unsigned *INB = (unsigned *)(uintptr_t)INBd;
    CK(cudaMemset(ACCB, 0, N * 4));
    CU(cuCtxSynchronize());
    CUcontext sc = nullptr;
    CU(cuStreamGetCtx(sB, &sc));
    if (sc != ctxB) failf("stream B is not in context B");
    CUcontext popped = nullptr;
    CU(cuCtxPopCurrent(&popped));
    if (popped != ctxB) failf("cuCtxPopCurrent after cuCtxCreate did not pop B");
    expect_current(ctxA, "after pop", -1);
    CU(cuStreamGetCtx((CUstream)sA, &sc));
    if (sc != ctxA) failf("stream A is not in the primary context");

    std::vector<unsigned> refA(N, 0u), refB(N, 0u);
    int checkedA = 0, checkedB = 0;

    for (int i = 0; i < ITERS; ++i) {
        const int how = i % 3;   // how this iteration switches contexts
        // ---- 1. context A: queue, do not synchronise
        if (i >= 1 && i < KILL) {
            CU(cuStreamWaitEvent((CUstream)sA, evB, 0));   // B's result of i-1
            CK(cudaMemcpyAsync(INA, ringB + (size_t)(i - 1) * N, N * 4, cudaMemcpyHostToDevice, sA));
        } else {
            CU(cuMemsetD32Async((CUdeviceptr)(uintptr_t)INA, fillA(i), N, (CUstream)sA));
        }
        kGen<<<GRID, TPB, 0, sA>>>(XA, seedA(i));
        CK(cudaGetLastError());
        {
            unsigned a = addA(i), mul = 3u;
            void *p[] = {&ACCA, &INA, &XA, &a, &mul};
            CU(cuLaunchKernel((CUfunction)kern, GRID, 1, 1, TPB, 1, 1, 0, (CUstream)sA, p, nullptr));
        }
        CK(cudaMemcpyAsync(ringA + (size_t)i * N, ACCA, N * 4, cudaMemcpyDeviceToHost, sA));
        CK(cudaEventRecord(evA, sA));

        // ---- 2. context B (while A's work is still queued)
        if (i <= KILL) {
            if (how == 1) CU(cuCtxPushCurrent(ctxB));
            else CU(cuCtxSetCurrent(ctxB));
            expect_current(ctxB, "switch to B", i);
            CU(cuStreamGetCtx(sB, &sc));
            if (sc != ctxB) failf("iter %d: stream B left context B", i);
            if (i >= 1) {   // B's work of i-1, synchronised only now
                if (how == 2 || i == KILL) CU(cuCtxSynchronize());
                else CK(cudaStreamSynchronize((cudaStream_t)sB));
                check_words("B", i - 1, ringB + (size_t)(i - 1) * N, refB.data());
                ++checkedB;
            }
            if (i < KILL) {
                CU(cuStreamWaitEvent(sB, (CUevent)evA, 0));   // A's result of i
                CK(cudaMemcpyAsync(INB, ringA + (size_t)i * N, N * 4, cudaMemcpyHostToDevice, (cudaStream_t)sB));
                kGen<<<GRID, TPB, 0, (cudaStream_t)sB>>>(XB, seedB(i));
                CK(cudaGetLastError());
                {
                    unsigned b = addB(i), mul = 5u;
                    void *p[] = {&ACCB, &INB, &XB, &b, &mul};
                    CU(cuLaunchKernel((CUfunction)kern, GRID, 1, 1, TPB, 1, 1, 0, sB, p, nullptr));
                }
                CU(cuMemcpyDtoHAsync(ringB + (size_t)i * N, (CUdeviceptr)(uintptr_t)ACCB, N * 4, sB));
                CU(cuEventRecord(evB, sB));
            } else {
                // B is idle: free part of it explicitly, the rest goes with the context
                CU(cuEventDestroy(evB));
                CK(cudaFree(XB)); CK(cudaFree(ACCB));
            }
            if (how == 1) {
                CU(cuCtxPopCurrent(&popped));
                if (popped != ctxB) failf("iter %d: cuCtxPopCurrent did not pop B", i);
            } else if (how == 2) {
                CK(cudaSetDevice(0));   // makes the primary context current
            } else {
                CU(cuCtxSetCurrent(ctxA));
            }
            expect_current(ctxA, "switch back to A", i);
            if (i == KILL) {
                CU(cuCtxDestroy(ctxB));   // not current; A's work of this iteration still queued
                ctxB = nullptr;
                expect_current(ctxA, "after cuCtxDestroy", i);
                printf("context B destroyed before iteration %d completed\n", i);
            }
        }

        // ---- 3. context A: synchronise only A's stream; A's result is complete
        CK(cudaStreamSynchronize(sA));
        CU(cuStreamGetCtx((CUstream)sA, &sc));
        if (sc != ctxA) failf("iter %d: stream A left the primary context", i);
        {
            unsigned sa = seedA(i), aa = addA(i), fa = fillA(i);
            bool fromB = i >= 1 && i < KILL;
            for (int j = 0; j < N; ++j) {
                unsigned in = fromB ? refB[j] : fa;   // refB still holds B's result of i-1
                refA[j] = (refA[j] ^ in) * 3u + hsh(sa, (unsigned)j) + aa;
            }
            check_words("A", i, ringA + (size_t)i * N, refA.data());
            ++checkedA;
            if (i < KILL) {
                unsigned sb = seedB(i), ab = addB(i);
                for (int j = 0; j < N; ++j) refB[j] = (refB[j] ^ refA[j]) * 5u + hsh(sb, (unsigned)j) + ab;
            }
        }
    }
    CK(cudaGetLastError());
    expect_current(ctxA, "end", ITERS);
    printf("checked %d results of context A, %d of context B\n", checkedA, checkedB);
    if (checkedA != ITERS || checkedB != KILL) failf("checked %d/%d results, want %d/%d", checkedA, checkedB, ITERS, KILL);
    mix((uint64_t)checkedA); mix((uint64_t)checkedB);

    CK(cudaEventDestroy(evA));
    CK(cudaStreamDestroy(sA));
    CK(cudaFree(XA)); CK(cudaFree(ACCA)); CK(cudaFree(INA));
    CK(cudaFreeHost(ringA)); CK(cudaFreeHost(ringB));
    CU(cuDevicePrimaryCtxRelease(dev));
    return finish("contexts");
}
