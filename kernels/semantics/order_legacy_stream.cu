// legacy_stream: the legacy default stream's implicit synchronisation with
// blocking streams, however they were created (cudaStreamCreate,
// cudaStreamCreateWithPriority(cudaStreamDefault), cuStreamCreate(CU_STREAM_DEFAULT)),
// and its absence for a non-blocking stream, which is ordered only by events.
// Results flow legacy -> blocking streams -> legacy -> (event on a blocking
// stream whose only tie is the implicit one) -> non-blocking -> legacy -> copy
// on a blocking stream.  Every read-after-write and write-after-read below is
// ordered only by the legacy stream rules or by the events named.
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda.h>
#include <cuda_runtime.h>
#include "order_common.cuh"

static const int N = 4096, TPB = 256, GRID = N / TPB, ITERS = 80;
static const long long SLOW = 20000;  // ~10 us: widens any window a missing edge would open

__global__ void kFill(unsigned *x, unsigned v, long long slow) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    spin_cycles(slow);
    x[j] = v ^ (unsigned)(j * 7919);
}
__global__ void kAffine(unsigned *y, const unsigned *x, unsigned m, unsigned a) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    y[j] = x[j] * m + a;
}
__global__ void kSum3(unsigned *z, const unsigned *a, const unsigned *b, const unsigned *c, long long slow) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned v = a[j] + b[j] + c[j];
    spin_cycles(slow);
    z[j] = v;
}
__global__ void kNop(unsigned *dummy) { if (threadIdx.x == 0) dummy[blockIdx.x] += 1; }
__global__ void kXor(unsigned *w, const unsigned *z, unsigned k) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    w[j] = z[j] ^ k;
}
__global__ void kAcc(unsigned *acc, const unsigned *w, long long slow) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned v = acc[j] * 3u + w[j];
    spin_cycles(slow);
    acc[j] = v;
}

int main() {
    CK(cudaSetDevice(0));
    CK(cudaFree(0));
    int least = 0, greatest = 0;
    CK(cudaDeviceGetStreamPriorityRange(&least, &greatest));

    cudaStream_t sA, sB, sC, sN;
    CK(cudaStreamCreate(&sA));                                          // blocking
    CK(cudaStreamCreateWithPriority(&sB, cudaStreamDefault, greatest));  // blocking, high priority
    CUstream cs;
    CU(cuStreamCreate(&cs, CU_STREAM_DEFAULT));                          // blocking, through the driver
    sC = (cudaStream_t)cs;
    CK(cudaStreamCreateWithFlags(&sN, cudaStreamNonBlocking));           // non-blocking
    cudaEvent_t evA, evN;
    CK(cudaEventCreateWithFlags(&evA, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&evN, cudaEventDisableTiming));

    unsigned *X, *Ya, *Yb, *Yc, *Z, *W, *ACC, *dummy;
    CK(cudaMalloc(&X, N * 4)); CK(cudaMalloc(&Ya, N * 4)); CK(cudaMalloc(&Yb, N * 4));
    CK(cudaMalloc(&Yc, N * 4)); CK(cudaMalloc(&Z, N * 4)); CK(cudaMalloc(&W, N * 4));
    CK(cudaMalloc(&ACC, N * 4)); CK(cudaMalloc(&dummy, GRID * 4));
    CK(cudaMemset(ACC, 0, N * 4));
    CK(cudaMemset(dummy, 0, GRID * 4));
    unsigned *ring;
    CK(cudaMallocHost(&ring, (size_t)ITERS * N * 4));
    memset(ring, 0xAB, (size_t)ITERS * N * 4);
    CK(cudaDeviceSynchronize());

    // CPU reference
    std::vector<unsigned> rX(N), rZ(N), rW(N), rAcc(N, 0u);
    std::vector<unsigned> ref((size_t)ITERS * N);

    for (int i = 0; i < ITERS; ++i) {
        unsigned v = (unsigned)i * 2654435761u + 12345u;
        // 1. legacy: X
        kFill<<<GRID, TPB, 0, 0>>>(X, v, SLOW);
        CK(cudaGetLastError());
        // 2-4. blocking streams read X: ordered only by the legacy stream rule
        kAffine<<<GRID, TPB, 0, sA>>>(Ya, X, 3u, (unsigned)i);
        CK(cudaGetLastError());
        kAffine<<<GRID, TPB, 0, sB>>>(Yb, X, 5u, 7u);
        CK(cudaGetLastError());
        kAffine<<<GRID, TPB, 0, sC>>>(Yc, X, 11u, 1u);
        CK(cudaGetLastError());
        // 5. legacy (named explicitly): waits for the three blocking streams
        kSum3<<<GRID, TPB, 0, cudaStreamLegacy>>>(Z, Ya, Yb, Yc, SLOW);
        CK(cudaGetLastError());
        // 6. a blocking stream with no data tie to Z: its kernel waits for the legacy
        //    kernel, so the event recorded after it covers Z
        kNop<<<GRID, 32, 0, sA>>>(dummy);
        CK(cudaGetLastError());
        CK(cudaEventRecord(evA, sA));
        // 7. non-blocking stream: ordered by the event only
        CK(cudaStreamWaitEvent(sN, evA, 0));
        kXor<<<GRID, TPB, 0, sN>>>(W, Z, (unsigned)i * 31u);
        CK(cudaGetLastError());
        CK(cudaEventRecord(evN, sN));
        // 9. legacy waits for the non-blocking stream through the event
        CK(cudaStreamWaitEvent(0, evN, 0));
        kAcc<<<GRID, TPB, 0, 0>>>(ACC, W, SLOW);
        CK(cudaGetLastError());
        // 10. the copy on a blocking stream waits for the legacy kAcc
        CK(cudaMemcpyAsync(ring + (size_t)i * N, ACC, N * 4, cudaMemcpyDeviceToHost, sB));

        // reference
        for (int j = 0; j < N; ++j) rX[j] = v ^ (unsigned)(j * 7919);
        for (int j = 0; j < N; ++j) {
            unsigned a = rX[j] * 3u + (unsigned)i, b = rX[j] * 5u + 7u, c = rX[j] * 11u + 1u;
            rZ[j] = a + b + c;
            rW[j] = rZ[j] ^ ((unsigned)i * 31u);
            rAcc[j] = rAcc[j] * 3u + rW[j];
        }
        memcpy(&ref[(size_t)i * N], rAcc.data(), N * 4);

        // every 10th iteration: wait for the blocking stream sB only, read its copy
        if (i % 10 == 9) {
            CK(cudaStreamSynchronize(sB));
            const unsigned *got = ring + (size_t)i * N;
            for (int j = 0; j < N; ++j)
                if (got[j] != rAcc[j]) {
                    failf("iter %d (after sync of sB): ACC[%d] = %08x, want %08x", i, j, got[j], rAcc[j]);
                    break;
                }
        }
    }
    CK(cudaDeviceSynchronize());
    CK(cudaGetLastError());

    for (int i = 0; i < ITERS; ++i) {
        const unsigned *got = ring + (size_t)i * N;
        const unsigned *want = &ref[(size_t)i * N];
        for (int j = 0; j < N; ++j)
            if (got[j] != want[j]) {
                failf("iter %d: ACC[%d] = %08x, want %08x", i, j, got[j], want[j]);
                break;
            }
        for (int j = 0; j < N; ++j) mix(got[j]);
    }
    std::vector<unsigned> hd(GRID);
    CK(cudaMemcpy(hd.data(), dummy, GRID * 4, cudaMemcpyDeviceToHost));
    for (int b = 0; b < GRID; ++b) {
        if (hd[b] != (unsigned)ITERS) failf("dummy[%d] = %u, want %d", b, hd[b], ITERS);
        mix(hd[b]);
    }

    CK(cudaStreamDestroy(sA)); CK(cudaStreamDestroy(sB)); CU(cuStreamDestroy(cs)); CK(cudaStreamDestroy(sN));
    CK(cudaEventDestroy(evA)); CK(cudaEventDestroy(evN));
    CK(cudaFreeHost(ring));
    return finish("legacy_stream");
}
