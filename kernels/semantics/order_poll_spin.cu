// poll_spin: the host learns that work is done only by polling, or by waiting
// on one stream while others still have work, and a kernel spins on a device
// flag that a LATER launch on ANOTHER stream sets.
//  A: kernel + D2H into a reused pinned buffer + cudaEventRecord (same event
//     every iteration); the host polls cudaEventQuery until cudaSuccess, then
//     reads the buffer.  A held record would let the query see the previous
//     (completed) record and the host read last iteration's data.
//  B: the same with cudaStreamQuery polling.
//  C: streams of high and low priority: cudaStreamSynchronize on the high one
//     while a slow kernel is pending on the low one; then cudaEventSynchronize
//     on an event recorded on the low one.
//  D: kWait (1 thread, stream sLo) spins until a device flag reaches i+1; kSet
//     (stream sB, or the legacy stream on odd iterations, both unordered with
//     sLo: sLo is non-blocking) writes a payload and sets the flag.  The host
//     then synchronises sLo only.  Bare, the two kernels run side by side.
//     If kSet is held back, or ordered after kWait, kWait gives up after 200 ms
//     and the check fails (it cannot hang).
//     Caveat: relies on two one-block kernels on different streams running
//     concurrently, which CUDA does not promise but any idle H200 does; every
//     kernel is loaded up front (cudaFuncGetAttributes), since lazy loading of
//     kSet at its first launch waits for the spinning kWait (seen bare).
#include <chrono>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>
#include "order_common.cuh"

__device__ __forceinline__ unsigned long long gtimer() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

static const int N = 1024, TPB = 256, GRID = N / TPB, ITERS = 64;
static const unsigned TIMEOUT_MARK = 0xFFFFFFFFu;

__global__ void kGen(unsigned *x, unsigned seed, long long slow) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    spin_cycles(slow);
    x[j] = hsh(seed, (unsigned)j);
}
__global__ void kAffine(unsigned *y, const unsigned *x, unsigned m, unsigned a) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    y[j] = x[j] * m + a;
}
__global__ void kWait(volatile unsigned *flag, unsigned target, volatile const unsigned *payload, unsigned *out,
                      unsigned long long timeout_ns) {
    unsigned long long t0 = gtimer();
    bool ok = true;
    while (*flag < target) {
        if (gtimer() - t0 > timeout_ns) { ok = false; break; }
    }
    __threadfence();
    unsigned s = 0;
    if (ok)
        for (int k = 0; k < 32; ++k) s += payload[k];
    *out = ok ? s : TIMEOUT_MARK;
}
__global__ void kSet(unsigned *flag, unsigned target, unsigned *payload, unsigned val) {
    ((volatile unsigned *)payload)[threadIdx.x] = val + threadIdx.x;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) atomicMax(flag, target);
}

static double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
static bool check_arr(const char *what, int i, const unsigned *got, unsigned seed, unsigned m, unsigned a) {
    for (int j = 0; j < N; ++j) {
        unsigned want = hsh(seed, (unsigned)j) * m + a;
        if (got[j] != want) { failf("iter %d: %s[%d] = %08x, want %08x", i, what, j, got[j], want); return false; }
    }
    for (int j = 0; j < N; ++j) mix(got[j]);
    return true;
}

int main() {
    CK(cudaSetDevice(0));
    CK(cudaFree(0));
    int least = 0, greatest = 0;
    CK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    cudaStream_t sHi, sLo, sB;
    CK(cudaStreamCreateWithPriority(&sHi, cudaStreamNonBlocking, greatest));
    CK(cudaStreamCreateWithPriority(&sLo, cudaStreamNonBlocking, least));
    CK(cudaStreamCreateWithFlags(&sB, cudaStreamNonBlocking));
    cudaEvent_t e1, e2;
    CK(cudaEventCreateWithFlags(&e1, cudaEventDisableTiming));
    CK(cudaEventCreate(&e2));

    unsigned *X, *Y, *Z, *Wd, *flag, *payload, *outSpin;
    CK(cudaMalloc(&X, N * 4)); CK(cudaMalloc(&Y, N * 4)); CK(cudaMalloc(&Z, N * 4)); CK(cudaMalloc(&Wd, N * 4));
    CK(cudaMalloc(&flag, 4)); CK(cudaMalloc(&payload, 32 * 4)); CK(cudaMalloc(&outSpin, ITERS * 4));
    CK(cudaMemset(flag, 0, 4)); CK(cudaMemset(payload, 0, 32 * 4)); CK(cudaMemset(outSpin, 0, ITERS * 4));
    unsigned *hX, *hY, *hZ, *hW, *hSpin;
    CK(cudaMallocHost(&hX, N * 4)); CK(cudaMallocHost(&hY, N * 4)); CK(cudaMallocHost(&hZ, N * 4));
    CK(cudaMallocHost(&hW, N * 4)); CK(cudaMallocHost(&hSpin, 4));
    CK(cudaDeviceSynchronize());

    // Lazy loading (the default) may load a kernel at its first launch and need a
    // context synchronisation to do so, which would wait for a spinning kWait: load
    // every kernel now (the CUDA programming guide's advice for kernels that wait on
    // each other).
    {
        cudaFuncAttributes fa;
        CK(cudaFuncGetAttributes(&fa, (const void *)kGen));
        CK(cudaFuncGetAttributes(&fa, (const void *)kAffine));
        CK(cudaFuncGetAttributes(&fa, (const void *)kWait));
        CK(cudaFuncGetAttributes(&fa, (const void *)kSet));
    }
    // documented: a query of a never-recorded event, or of an idle stream, is cudaSuccess
    CK(cudaEventQuery(e1));
    CK(cudaStreamQuery(sLo));

    const double POLL_LIMIT = 5.0;
    for (int i = 0; i < ITERS; ++i) {
        unsigned sa = hsh(1u, (unsigned)i), sbv = hsh(2u, (unsigned)i), sc = hsh(3u, (unsigned)i);
        // A: poll an event
        kGen<<<GRID, TPB, 0, sHi>>>(X, sa, 10000);
        CK(cudaGetLastError());
        CK(cudaMemcpyAsync(hX, X, N * 4, cudaMemcpyDeviceToHost, sHi));
        CK(cudaEventRecord(e1, sHi));
        {
            double t0 = now_s();
            cudaError_t r;
            while ((r = cudaEventQuery(e1)) == cudaErrorNotReady) {
                if (now_s() - t0 > POLL_LIMIT) break;
            }
            if (r == cudaErrorNotReady) { failf("iter %d: cudaEventQuery still not ready after %.0f s", i, POLL_LIMIT); break; }
            CK(r);
            // cudaErrorNotReady "is not an error"; tolerate it in the last-error slot either way
            cudaError_t le = cudaGetLastError();
            if (le != cudaErrorNotReady) CK(le);
        }
        check_arr("X (after cudaEventQuery)", i, hX, sa, 1u, 0u);

        // B: poll a stream
        kGen<<<GRID, TPB, 0, sLo>>>(Y, sbv, 10000);
        CK(cudaGetLastError());
        CK(cudaMemcpyAsync(hY, Y, N * 4, cudaMemcpyDeviceToHost, sLo));
        {
            double t0 = now_s();
            cudaError_t r;
            while ((r = cudaStreamQuery(sLo)) == cudaErrorNotReady) {
                if (now_s() - t0 > POLL_LIMIT) break;
            }
            if (r == cudaErrorNotReady) { failf("iter %d: cudaStreamQuery still not ready after %.0f s", i, POLL_LIMIT); break; }
            CK(r);
            // cudaErrorNotReady "is not an error"; tolerate it in the last-error slot either way
            cudaError_t le = cudaGetLastError();
            if (le != cudaErrorNotReady) CK(le);
        }
        check_arr("Y (after cudaStreamQuery)", i, hY, sbv, 1u, 0u);

        // C: sync the high-priority stream while the low one is busy
        kGen<<<GRID, TPB, 0, sLo>>>(Z, sc, 100000);  // ~50 us
        CK(cudaGetLastError());
        CK(cudaMemcpyAsync(hZ, Z, N * 4, cudaMemcpyDeviceToHost, sLo));
        kAffine<<<GRID, TPB, 0, sHi>>>(Wd, X, 3u, (unsigned)i);
        CK(cudaGetLastError());
        CK(cudaMemcpyAsync(hW, Wd, N * 4, cudaMemcpyDeviceToHost, sHi));
        CK(cudaStreamSynchronize(sHi));
        check_arr("W (after sync of sHi)", i, hW, sa, 3u, (unsigned)i);
        CK(cudaEventRecord(e2, sLo));
        CK(cudaEventSynchronize(e2));
        check_arr("Z (after cudaEventSynchronize)", i, hZ, sc, 1u, 0u);

        // D: device spin on a flag set by a later launch on another stream
        unsigned val = hsh(4u, (unsigned)i) & 0xffffffu;
        kWait<<<1, 1, 0, sLo>>>(flag, (unsigned)(i + 1), payload, outSpin + i, 200000000ull);
        CK(cudaGetLastError());
        CK(cudaMemcpyAsync(hSpin, outSpin + i, 4, cudaMemcpyDeviceToHost, sLo));
        cudaStream_t setter = (i % 2 == 0) ? sB : (cudaStream_t)0;  // legacy stream: no tie to non-blocking sLo
        kSet<<<1, 32, 0, setter>>>(flag, (unsigned)(i + 1), payload, val);
        CK(cudaGetLastError());
        CK(cudaStreamSynchronize(sLo));
        unsigned want = 32u * val + 496u;
        if (*hSpin == TIMEOUT_MARK) {
            failf("iter %d: kWait timed out: the flag set on %s never came", i, i % 2 ? "the legacy stream" : "sB");
            break;
        }
        if (*hSpin != want) failf("iter %d: spin payload sum %08x, want %08x", i, *hSpin, want);
        mix(*hSpin);
        CK(cudaStreamSynchronize(setter));
    }
    CK(cudaDeviceSynchronize());
    CK(cudaGetLastError());
    unsigned hf = 0;
    CK(cudaMemcpy(&hf, flag, 4, cudaMemcpyDeviceToHost));
    mix(hf);

    CK(cudaStreamDestroy(sHi)); CK(cudaStreamDestroy(sLo)); CK(cudaStreamDestroy(sB));
    CK(cudaEventDestroy(e1)); CK(cudaEventDestroy(e2));
    CK(cudaFreeHost(hX)); CK(cudaFreeHost(hY)); CK(cudaFreeHost(hZ)); CK(cudaFreeHost(hW)); CK(cudaFreeHost(hSpin));
    return finish("poll_spin");
}
