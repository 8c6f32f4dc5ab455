// event_chains: cross-stream ordering through cudaEventRecord/cudaStreamWaitEvent
// on three non-blocking streams (no implicit ordering at all):
//  - an event that is never recorded, waited on every iteration (a no-op);
//  - an event (eP) waited on at the top of an iteration, BEFORE this iteration
//    records it: the wait binds to the previous iteration's record (and, in
//    iteration 0, to nothing); it alone orders a read after the previous write;
//  - an event (eQ) recorded twice in one iteration on the same stream, with a
//    wait between the records and one after: each wait binds to the record
//    most recent at the time of the call;
//  - eP recorded on s1 in most iterations and on s3 (after a wait on s1) in every
//    third, so the stream an event is recorded on changes;
//  - events created with cudaEventDisableTiming, one with timing, and
//    cudaEventRecordWithFlags.
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>
#include "order_common.cuh"

static const int N = 2048, TPB = 256, GRID = N / TPB, ITERS = 90;
static const long long SLOW = 20000;

__global__ void kQ(unsigned *q, const unsigned *p, unsigned i, long long slow) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned v = p[j] + i;
    spin_cycles(slow);
    q[j] = v;
}
__global__ void kQ2(unsigned *q2, const unsigned *p, unsigned i, long long slow) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned v = p[j] * 2u + i;
    spin_cycles(slow);
    q2[j] = v;
}
__global__ void kB(unsigned *b, const unsigned *q, long long slow) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned v = q[j] * 7u + 1u;
    spin_cycles(slow);
    b[j] = v;
}
__global__ void kP(unsigned *p, unsigned i, long long slow) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    spin_cycles(slow);
    p[j] = hsh(i, (unsigned)j);
}
__global__ void kNop(unsigned *d) { if (threadIdx.x == 0) d[0] += 1; }
__global__ void kAcc(unsigned *acc, const unsigned *b, const unsigned *q2, const unsigned *p) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    acc[j] = acc[j] * 5u + b[j] + (q2[j] ^ p[j]);
}

int main() {
    CK(cudaSetDevice(0));
    CK(cudaFree(0));
    cudaStream_t s1, s2, s3;
    CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s3, cudaStreamNonBlocking));
    cudaEvent_t eP, eQ, eX, eJ, eNever;
    CK(cudaEventCreateWithFlags(&eP, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&eQ, cudaEventDisableTiming));
    CK(cudaEventCreate(&eX));  // timing enabled
    CK(cudaEventCreateWithFlags(&eJ, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&eNever, cudaEventDisableTiming));

    unsigned *P, *Q[2], *Q2[2], *B[2], *ACC, *dummy;
    CK(cudaMalloc(&P, N * 4));
    for (int k = 0; k < 2; ++k) { CK(cudaMalloc(&Q[k], N * 4)); CK(cudaMalloc(&Q2[k], N * 4)); CK(cudaMalloc(&B[k], N * 4)); }
    CK(cudaMalloc(&ACC, N * 4)); CK(cudaMalloc(&dummy, 4));
    std::vector<unsigned> rP(N), rAcc(N, 0u);
    for (int j = 0; j < N; ++j) rP[j] = (unsigned)j * 3u + 1u;
    CK(cudaMemcpy(P, rP.data(), N * 4, cudaMemcpyHostToDevice));
    CK(cudaMemset(ACC, 0, N * 4));
    CK(cudaMemset(dummy, 0, 4));
    unsigned *ring;
    CK(cudaMallocHost(&ring, (size_t)ITERS * N * 4));
    memset(ring, 0xAB, (size_t)ITERS * N * 4);
    CK(cudaDeviceSynchronize());

    std::vector<unsigned> ref((size_t)ITERS * N);
    int nops = 0;
    for (int i = 0; i < ITERS; ++i) {
        int p = i & 1;
        CK(cudaStreamWaitEvent(s1, eNever, 0));
        CK(cudaStreamWaitEvent(s3, eNever, 0));
        CK(cudaStreamWaitEvent(s2, eP, 0));          // binds to iteration i-1's record
        kQ<<<GRID, TPB, 0, s2>>>(Q[p], P, (unsigned)i, 2000);
        CK(cudaGetLastError());
        CK(cudaEventRecord(eQ, s2));                  // eQ, first record
        CK(cudaStreamWaitEvent(s3, eQ, 0));
        kB<<<GRID, TPB, 0, s3>>>(B[p], Q[p], SLOW);
        CK(cudaGetLastError());
        kQ2<<<GRID, TPB, 0, s2>>>(Q2[p], P, (unsigned)i, SLOW);
        CK(cudaGetLastError());
        CK(cudaEventRecord(eQ, s2));                  // eQ, second record
        CK(cudaStreamWaitEvent(s1, eQ, 0));           // covers kQ and kQ2 (both read P)
        kP<<<GRID, TPB, 0, s1>>>(P, (unsigned)i, SLOW);
        CK(cudaGetLastError());
        if (i % 3 == 2) {
            CK(cudaEventRecord(eX, s1));
            CK(cudaStreamWaitEvent(s3, eX, 0));
            kNop<<<1, 32, 0, s3>>>(dummy);
            CK(cudaGetLastError());
            CK(cudaEventRecord(eP, s3));              // eP recorded on another stream
            ++nops;
        } else {
            CK(cudaEventRecord(eP, s1));
        }
        CK(cudaEventRecordWithFlags(eJ, s3, cudaEventRecordDefault));
        CK(cudaStreamWaitEvent(s1, eJ, 0));
        kAcc<<<GRID, TPB, 0, s1>>>(ACC, B[p], Q2[p], P);
        CK(cudaGetLastError());
        CK(cudaMemcpyAsync(ring + (size_t)i * N, ACC, N * 4, cudaMemcpyDeviceToHost, s1));

        // reference
        for (int j = 0; j < N; ++j) {
            unsigned q = rP[j] + (unsigned)i;
            unsigned b = q * 7u + 1u;
            unsigned q2 = rP[j] * 2u + (unsigned)i;
            unsigned np = hsh((unsigned)i, (unsigned)j);
            rAcc[j] = rAcc[j] * 5u + b + (q2 ^ np);
            rP[j] = np;
        }
        memcpy(&ref[(size_t)i * N], rAcc.data(), N * 4);
    }
    CK(cudaDeviceSynchronize());
    CK(cudaGetLastError());

    for (int i = 0; i < ITERS; ++i) {
        const unsigned *got = ring + (size_t)i * N, *want = &ref[(size_t)i * N];
        check_acc(i, got, want, N);
    }
    unsigned hd = 0;
    CK(cudaMemcpy(&hd, dummy, 4, cudaMemcpyDeviceToHost));
    if (hd != (unsigned)nops) failf("kNop ran %u times, want %d", hd, nops);
    mix(hd);
    std::vector<unsigned> hp(N);
    CK(cudaMemcpy(hp.data(), P, N * 4, cudaMemcpyDeviceToHost));
    for (int j = 0; j < N; ++j)
        if (hp[j] != rP[j]) { failf("final P[%d] = %08x, want %08x", j, hp[j], rP[j]); break; }
    for (int j = 0; j < N; ++j) mix(hp[j]);

    CK(cudaStreamDestroy(s1)); CK(cudaStreamDestroy(s2)); CK(cudaStreamDestroy(s3));
    CK(cudaEventDestroy(eP)); CK(cudaEventDestroy(eQ)); CK(cudaEventDestroy(eX));
    CK(cudaEventDestroy(eJ)); CK(cudaEventDestroy(eNever));
    CK(cudaFreeHost(ring));
    return finish("event_chains");
}
