// launch_events: launch attributes that carry ordering or events, between two
// non-blocking streams, every iteration (order_launch_ex.cu covers clusters,
// priority, cooperative launches and the basic PDL pair; this one does not):
//  - cudaLaunchAttributeProgrammaticEvent (triggerAtBlockStart = 0) on a primary
//    kernel in s1 that writes A, calls cudaTriggerProgrammaticLaunchCompletion()
//    and then writes B. s2 does cudaStreamWaitEvent on that event and a kernel
//    there calls cudaGridDependencySynchronize() and reads ONLY A (the trigger
//    alone promises no visibility; the sync waits for the primary to complete
//    and flush). The event alternates between two handles by parity, so a
//    replay that keeps a stale handle leaves the wait bound to an old record.
//    A normal kernel after the primary in s1 reads A and B (full completion).
//  - cudaLaunchAttributeProgrammaticStreamSerialization over a chain of three
//    kernels in s1: the first triggers at its very start, the second writes
//    independent data before cudaGridDependencySynchronize() and then reads
//    the first's output (other blocks' elements), the third syncs and reads both.
//  - cudaLaunchAttributeLaunchCompletionEvent on a kernel in s1; s2 waits on it
//    and runs a kernel that reads only s2's own earlier output (the event is
//    best effort and gives no memory ordering, so nothing depends on it beyond
//    "the waiting stream still runs, with this iteration's arguments"). s1 then
//    joins s2 with an ordinary event before reading that kernel's output.
// Producers spin before they write, so a dropped or misbound dependency reads a
// previous iteration's data; seeds change every iteration; every launch counts
// itself, so a kernel that ran twice or not at all is seen even when idempotent.
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>
#include "order_common.cuh"

static const int N = 2048, TPB = 256, GRID = N / TPB, ITERS = 80;
static const int ROWS = 6;               // ACC, CA, CB, Z, W, S per iteration
static const int NCNT = 9;               // one launch counter per kernel
static const long long SLOW = 100000;    // ~50 us

__device__ __forceinline__ unsigned gid() { return blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ void count(unsigned *cnt, int k) { if (gid() == 0) atomicAdd(&cnt[k], 1u); }

// s1, launched with cudaLaunchAttributeProgrammaticEvent
__global__ void kPrimEv(unsigned *a, unsigned *b, unsigned ka, unsigned kb, unsigned i, long long slow, unsigned *cnt) {
    unsigned j = gid();
    count(cnt, 0);
    spin_cycles(slow);
    a[j] = hsh(ka, j);                   // part A: before the trigger
    __threadfence();
    __syncthreads();
    cudaTriggerProgrammaticLaunchCompletion();
    spin_cycles(slow);
    b[j] = hsh(kb, j) + i;               // part B: after the trigger
}
// s2, after cudaStreamWaitEvent on the programmatic event: reads A only
__global__ void kConsA(unsigned *ca, const unsigned *a, unsigned kc, long long slow, unsigned *cnt) {
    cudaGridDependencySynchronize();
    unsigned j = gid();
    count(cnt, 1);
    unsigned v = a[j] * 3u + kc;
    spin_cycles(slow);
    ca[j] = v;
}
// s1, plain launch right after the primary: stream order, reads A and B
__global__ void kConsAB(unsigned *cb, const unsigned *a, const unsigned *b, unsigned kc2, unsigned *cnt) {
    unsigned j = gid();
    count(cnt, 2);
    cb[j] = a[j] ^ (b[j] * 5u + kc2);
}
// PDL chain in s1: P1 triggers at once, P2 and P3 carry ProgrammaticStreamSerialization
__global__ void kP1(unsigned *x, const unsigned *ca, const unsigned *cb, unsigned sx, long long slow, unsigned *cnt) {
    cudaTriggerProgrammaticLaunchCompletion();
    unsigned j = gid();
    count(cnt, 3);
    unsigned v = (hsh(sx, j) + ca[j] * 3u) ^ cb[(j + 1u) % N];
    spin_cycles(slow);
    x[j] = v;
}
__global__ void kP2(unsigned *y, unsigned *y1, const unsigned *x, unsigned sy, long long slow, unsigned *cnt) {
    unsigned j = gid();
    y1[j] = hsh(sy, j);                  // independent work, before the sync
    cudaGridDependencySynchronize();
    count(cnt, 4);
    unsigned v = x[(j + 257u) % N] * 7u + y1[j];
    spin_cycles(slow);
    y[j] = v;
    cudaTriggerProgrammaticLaunchCompletion();
}
__global__ void kP3(unsigned *z, const unsigned *y, const unsigned *x, const unsigned *y1, unsigned s3, unsigned *cnt) {
    cudaGridDependencySynchronize();
    unsigned j = gid();
    count(cnt, 5);
    z[j] = (y[(j + 3u * TPB + 1u) % N] ^ x[j]) + y1[(j + 3u) % N] + s3;
}
// s1, launched with cudaLaunchAttributeLaunchCompletionEvent
__global__ void kLc(unsigned *w, const unsigned *z, const unsigned *y, unsigned sw, long long slow, unsigned *cnt) {
    unsigned j = gid();
    count(cnt, 6);
    unsigned v = z[j] * 9u + y[j] + hsh(sw, j);
    spin_cycles(slow);
    w[j] = v;
}
// s2, after cudaStreamWaitEvent on the launch completion event: s2's own data only
__global__ void kSide(unsigned *s, const unsigned *ca, unsigned ss, long long slow, unsigned *cnt) {
    unsigned j = gid();
    count(cnt, 7);
    unsigned v = ca[(j + 100u) % N] * 11u + hsh(ss, j);
    spin_cycles(slow);
    s[j] = v;
}
// s1, after joining s2: accumulate and gather this iteration's rows
__global__ void kAcc(unsigned *acc, unsigned *out, const unsigned *w, const unsigned *s, const unsigned *cb,
                     const unsigned *z, const unsigned *ca, unsigned *cnt) {
    unsigned j = gid();
    count(cnt, 8);
    unsigned v = acc[j] * 3u + w[j] + (s[j] ^ cb[j]) + z[(j + 5u) % N];
    acc[j] = v;
    out[j] = v; out[N + j] = ca[j]; out[2 * N + j] = cb[j];
    out[3 * N + j] = z[j]; out[4 * N + j] = w[j]; out[5 * N + j] = s[j];
}

struct Seeds { unsigned ka, kb, kc, kc2, sx, sy, s3, sw, ss; };
static Seeds seeds(int i) {
    unsigned u = (unsigned)i;
    return Seeds{hsh(u, 0xA1u), hsh(u, 0xB2u), u * 0x9E3779B9u + 17u, hsh(u, 0xC3u), hsh(u, 0xD4u),
                 hsh(u, 0xE5u), u * 7u + 3u, hsh(u, 0xF6u), hsh(u, 0x17u)};
}

int main() {
    CK(cudaSetDevice(0));
    CK(cudaFree(0));
    cudaStream_t s1, s2;
    CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    // events given to launch attributes must have timing disabled
    cudaEvent_t evP[2], evL, evJ, evJ2, evEnd;
    CK(cudaEventCreateWithFlags(&evP[0], cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&evP[1], cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&evL, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&evJ, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&evJ2, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&evEnd, cudaEventDisableTiming));

    unsigned *A, *B, *CA, *CB, *X, *Y, *Y1, *Z, *W, *S, *ACC, *OUT, *CNT;
    unsigned **bufs[] = {&A, &B, &CA, &CB, &X, &Y, &Y1, &Z, &W, &S, &ACC};
    for (unsigned **p : bufs) { CK(cudaMalloc(p, N * 4)); CK(cudaMemset(*p, 0, N * 4)); }
    CK(cudaMalloc(&OUT, ROWS * N * 4)); CK(cudaMemset(OUT, 0, ROWS * N * 4));
    CK(cudaMalloc(&CNT, NCNT * 4)); CK(cudaMemset(CNT, 0, NCNT * 4));
    unsigned *ring;
    CK(cudaMallocHost(&ring, (size_t)ITERS * ROWS * N * 4));
    memset(ring, 0xAB, (size_t)ITERS * ROWS * N * 4);
    CK(cudaDeviceSynchronize());
    CK(cudaEventRecord(evEnd, s1));      // iteration 0's s2 waits on this

    for (int i = 0; i < ITERS; ++i) {
        const Seeds k = seeds(i);
        cudaEvent_t ep = evP[i & 1];
        // 1. primary in s1 records the programmatic event
        {
            cudaLaunchConfig_t cfg = {};
            cfg.gridDim = dim3(GRID); cfg.blockDim = dim3(TPB); cfg.dynamicSmemBytes = 0; cfg.stream = s1;
            cudaLaunchAttribute at[1] = {};
            at[0].id = cudaLaunchAttributeProgrammaticEvent;
            at[0].val.programmaticEvent.event = ep;
            at[0].val.programmaticEvent.flags = cudaEventRecordDefault;
            at[0].val.programmaticEvent.triggerAtBlockStart = 0;
            cfg.attrs = at; cfg.numAttrs = 1;
            CK(cudaLaunchKernelEx(&cfg, kPrimEv, A, B, k.ka, k.kb, (unsigned)i, SLOW, CNT));
        }
        // 2. s2: after the previous iteration's end (WAR on CA, S), and on the programmatic event
        CK(cudaStreamWaitEvent(s2, evEnd, 0));
        CK(cudaStreamWaitEvent(s2, ep, 0));
        {
            cudaLaunchConfig_t cfg = {};
            cfg.gridDim = dim3(GRID); cfg.blockDim = dim3(TPB); cfg.dynamicSmemBytes = 0; cfg.stream = s2;
            cfg.attrs = nullptr; cfg.numAttrs = 0;
            CK(cudaLaunchKernelEx(&cfg, kConsA, CA, (const unsigned *)A, k.kc, SLOW, CNT));
        }
        CK(cudaEventRecord(evJ, s2));
        // 3. s1: stream-ordered consumer of A and B, then join s2 (CA)
        kConsAB<<<GRID, TPB, 0, s1>>>(CB, A, B, k.kc2, CNT);
        CK(cudaGetLastError());
        CK(cudaStreamWaitEvent(s1, evJ, 0));
        // 4. PDL chain in s1
        kP1<<<GRID, TPB, 0, s1>>>(X, CA, CB, k.sx, SLOW, CNT);
        CK(cudaGetLastError());
        {
            cudaLaunchConfig_t cfg = {};
            cfg.gridDim = dim3(GRID); cfg.blockDim = dim3(TPB); cfg.dynamicSmemBytes = 0; cfg.stream = s1;
            cudaLaunchAttribute at[1] = {};
            at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
            at[0].val.programmaticStreamSerializationAllowed = 1;
            cfg.attrs = at; cfg.numAttrs = 1;
            CK(cudaLaunchKernelEx(&cfg, kP2, Y, Y1, (const unsigned *)X, k.sy, SLOW, CNT));
            CK(cudaLaunchKernelEx(&cfg, kP3, Z, (const unsigned *)Y, (const unsigned *)X, (const unsigned *)Y1, k.s3, CNT));
        }
        // 5. launch completion event: s2 waits on it, reads only its own data
        {
            cudaLaunchConfig_t cfg = {};
            cfg.gridDim = dim3(GRID); cfg.blockDim = dim3(TPB); cfg.dynamicSmemBytes = 0; cfg.stream = s1;
            cudaLaunchAttribute at[1] = {};
            at[0].id = cudaLaunchAttributeLaunchCompletionEvent;
            at[0].val.launchCompletionEvent.event = evL;
            at[0].val.launchCompletionEvent.flags = cudaEventRecordDefault;
            cfg.attrs = at; cfg.numAttrs = 1;
            CK(cudaLaunchKernelEx(&cfg, kLc, W, (const unsigned *)Z, (const unsigned *)Y, k.sw, SLOW, CNT));
        }
        CK(cudaStreamWaitEvent(s2, evL, 0));
        kSide<<<GRID, TPB, 0, s2>>>(S, CA, k.ss, SLOW, CNT);
        CK(cudaGetLastError());
        CK(cudaEventRecord(evJ2, s2));
        // 6. s1 joins s2 (S), accumulates, copies the rows out, marks the end
        CK(cudaStreamWaitEvent(s1, evJ2, 0));
        kAcc<<<GRID, TPB, 0, s1>>>(ACC, OUT, W, S, CB, Z, CA, CNT);
        CK(cudaGetLastError());
        CK(cudaMemcpyAsync(ring + (size_t)i * ROWS * N, OUT, ROWS * N * 4, cudaMemcpyDeviceToHost, s1));
        CK(cudaEventRecord(evEnd, s1));
    }
    CK(cudaStreamSynchronize(s1));
    CK(cudaStreamSynchronize(s2));
    CK(cudaGetLastError());

    // reference
    static const char *rowName[ROWS] = {"ACC", "CA", "CB", "Z", "W", "S"};
    std::vector<unsigned> a(N), b(N), ca(N), cb(N), x(N), y(N), y1(N), z(N), w(N), s(N), acc(N, 0u);
    std::vector<unsigned> want((size_t)ROWS * N);
    int bad_iters = 0;
    for (int i = 0; i < ITERS; ++i) {
        const Seeds k = seeds(i);
        for (unsigned j = 0; j < (unsigned)N; ++j) {
            a[j] = hsh(k.ka, j);
            b[j] = hsh(k.kb, j) + (unsigned)i;
            ca[j] = a[j] * 3u + k.kc;
            cb[j] = a[j] ^ (b[j] * 5u + k.kc2);
        }
        for (unsigned j = 0; j < (unsigned)N; ++j) {
            x[j] = (hsh(k.sx, j) + ca[j] * 3u) ^ cb[(j + 1u) % N];
            y1[j] = hsh(k.sy, j);
        }
        for (unsigned j = 0; j < (unsigned)N; ++j) y[j] = x[(j + 257u) % N] * 7u + y1[j];
        for (unsigned j = 0; j < (unsigned)N; ++j) z[j] = (y[(j + 3u * TPB + 1u) % N] ^ x[j]) + y1[(j + 3u) % N] + k.s3;
        for (unsigned j = 0; j < (unsigned)N; ++j) {
            w[j] = z[j] * 9u + y[j] + hsh(k.sw, j);
            s[j] = ca[(j + 100u) % N] * 11u + hsh(k.ss, j);
        }
        for (unsigned j = 0; j < (unsigned)N; ++j) {
            acc[j] = acc[j] * 3u + w[j] + (s[j] ^ cb[j]) + z[(j + 5u) % N];
            want[j] = acc[j]; want[N + j] = ca[j]; want[2 * N + j] = cb[j];
            want[3 * N + j] = z[j]; want[4 * N + j] = w[j]; want[5 * N + j] = s[j];
        }
        const unsigned *got = ring + (size_t)i * ROWS * N;
        bool ok = true;
        for (int r = 1; r <= ROWS && ok; ++r) {          // the phase rows first, ACC last
            int rr = r % ROWS;
            for (int j = 0; j < N; ++j)
                if (got[rr * N + j] != want[rr * N + j]) {
                    failf("iter %d: %s[%d] = %08x, want %08x", i, rowName[rr], j, got[rr * N + j], want[rr * N + j]);
                    ok = false;
                    break;
                }
        }
        if (!ok) ++bad_iters;
        for (int j = 0; j < ROWS * N; ++j) mix(got[j]);
    }
    if (bad_iters) failf("%d of %d iterations wrong", bad_iters, ITERS);

    static const char *kName[NCNT] = {"kPrimEv", "kConsA", "kConsAB", "kP1", "kP2", "kP3", "kLc", "kSide", "kAcc"};
    unsigned cnt[NCNT];
    CK(cudaMemcpy(cnt, CNT, NCNT * 4, cudaMemcpyDeviceToHost));
    for (int q = 0; q < NCNT; ++q) {
        if (cnt[q] != (unsigned)ITERS) failf("%s ran %u times, want %d", kName[q], cnt[q], ITERS);
        mix(cnt[q]);
    }

    CK(cudaStreamDestroy(s1)); CK(cudaStreamDestroy(s2));
    CK(cudaEventDestroy(evP[0])); CK(cudaEventDestroy(evP[1])); CK(cudaEventDestroy(evL));
    CK(cudaEventDestroy(evJ)); CK(cudaEventDestroy(evJ2)); CK(cudaEventDestroy(evEnd));
    for (unsigned **p : bufs) CK(cudaFree(*p));
    CK(cudaFree(OUT)); CK(cudaFree(CNT));
    CK(cudaFreeHost(ring));
    return finish("launch_events");
}
