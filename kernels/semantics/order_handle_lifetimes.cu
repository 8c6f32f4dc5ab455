// handle_lifetimes: streams and events destroyed while work that uses them is
// still queued, their handles handed out again by the next create (often at
// the same address, with other flags), and eight host threads doing so at once.
//  A. Per iteration a NEW stream (blocking, non-blocking, blocking high
//     priority, non-blocking low priority, in turn): slow kernels, an async
//     D2H into pinned memory, then a legacy-stream cudaMemcpy of a buffer the
//     stream wrote: for a blocking stream with no sync at all (implicit legacy
//     synchronisation), for a non-blocking one after a cudaStreamWaitEvent on
//     an event destroyed right after the wait.  More slow work and a second
//     D2H, an event recorded, cudaStreamDestroy with all that pending (the work
//     still completes), then cudaEventSynchronize (or cudaEventDestroy on the
//     incomplete event and cudaDeviceSynchronize).  Both copies are checked.
//  B. Three long-lived non-blocking streams chained ONLY by events that are
//     created, recorded, waited on and destroyed at once, three per iteration
//     (each new one probably gets the handle just freed): a wait binds to the
//     record at call time, so it holds after the destroy and does not follow
//     the next event that takes the handle.  Read-after-write and
//     write-after-read on every buffer hang on these waits alone.
//  C. Eight host threads, 60 iterations each, each with its own accumulator,
//     checked exactly every iteration; even threads create and destroy their
//     stream and events every iteration (destroy before the work is done),
//     odd threads keep theirs.  All append, under a mutex, an order-dependent
//     update to ONE shared non-blocking stream, which waits on the thread's
//     (then destroyed) event; the thread waits two iterations later on an event
//     recorded on the shared stream before it rewrites the buffer it lent.
//     The shared result is replayed from the host log of the mutex order.
// An interposer that keys held work or stream flags by handle, replays work
// into a destroyed stream, resolves an event wait when it flushes instead of
// when it was called, or loses work of a destroyed stream reads stale or
// wrong values (every value depends on the iteration), or fails a CUDA call.
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>
#include <cuda_runtime.h>
#include "order_common.cuh"

static const int N = 2048, TPB = 256, GRID = N / TPB;
static const int ITA = 64, ITB = 64, T = 8, ITC = 60;
static const long long SLOW = 20000;  // ~10 us: work is still queued when its handles go away
static const unsigned POISON = 0xABABABABu;

__global__ void kStep(unsigned *acc, unsigned seed, long long slow) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned v = acc[j] * 5u + hsh(seed, (unsigned)j);
    spin_cycles(slow);
    acc[j] = v;
}
__global__ void kDerive(unsigned *out, const unsigned *in, unsigned k, long long slow) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned v = hsh(in[j], k);
    spin_cycles(slow);
    out[j] = v;
}
__global__ void kTwist(unsigned *acc, unsigned k, long long slow) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned a = acc[j];
    spin_cycles(slow);
    acc[j] = (a ^ (a >> 7)) + k;
}
__global__ void kFill(unsigned *p, unsigned c, long long slow) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    spin_cycles(slow);
    p[j] = hsh(c, (unsigned)j);
}
__global__ void kMix(unsigned *q, const unsigned *p, unsigned i, long long slow) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned v = q[j] * 7u + (p[j] ^ i);
    spin_cycles(slow);
    q[j] = v;
}
__global__ void kShared(unsigned *S, unsigned *log, const unsigned *c, int pos, unsigned code) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned v = S[j] * 3u + (c[j] ^ code);
    spin_cycles(2000);
    S[j] = v;
    if (j == 0) log[pos] = code;
}

static int g_least = 0, g_greatest = 0;
// kind 0: blocking, 1: non-blocking, 2: blocking high priority, 3: non-blocking low priority
static cudaStream_t make_stream(int kind) {
    cudaStream_t s;
    switch (kind & 3) {
    case 0: CK(cudaStreamCreate(&s)); break;
    case 1: CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); break;
    case 2: CK(cudaStreamCreateWithPriority(&s, cudaStreamDefault, g_greatest)); break;
    default: CK(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, g_least)); break;
    }
    return s;
}
static bool is_blocking(int kind) { return (kind & 1) == 0; }
static cudaEvent_t make_event(int k) {
    static const unsigned fl[3] = {cudaEventDisableTiming, cudaEventDefault, cudaEventBlockingSync | cudaEventDisableTiming};
    cudaEvent_t e;
    CK(cudaEventCreateWithFlags(&e, fl[k % 3]));
    return e;
}
static bool same(const char *what, int it, const unsigned *got, const unsigned *want) {
    for (int j = 0; j < N; ++j)
        if (got[j] != want[j]) { failf("%s, iter %d: [%d] = %08x, want %08x", what, it, j, got[j], want[j]); return false; }
    return true;
}
static uint64_t hash_row(const unsigned *r) {
    uint64_t h = 1469598103934665603ull;
    for (int j = 0; j < N; ++j) { h ^= r[j]; h *= 1099511628211ull; }
    return h;
}

// ---------------------------------------------------------------- phase A
static void phaseA() {
    unsigned *ACC, *B, *h1, *h2;
    CK(cudaMalloc(&ACC, N * 4)); CK(cudaMalloc(&B, N * 4));
    CK(cudaMemset(ACC, 0, N * 4));
    CK(cudaMallocHost(&h1, N * 4)); CK(cudaMallocHost(&h2, N * 4));
    memset(h1, 0xAB, N * 4); memset(h2, 0xAB, N * 4);
    std::vector<unsigned> hB(N), acc(N, 0u), rB(N), r1(N);
    CK(cudaDeviceSynchronize());
    for (int i = 0; i < ITA; ++i) {
        int kind = i & 3;
        unsigned seed = hsh(0xA11Au, (unsigned)i), kB = (unsigned)i * 3u + 1u, kT = (unsigned)i * 0x9E3779B9u;
        cudaStream_t s = make_stream(kind);
        kStep<<<GRID, TPB, 0, s>>>(ACC, seed, SLOW);
        CK(cudaGetLastError());
        kDerive<<<GRID, TPB, 0, s>>>(B, ACC, kB, SLOW);
        CK(cudaGetLastError());
        CK(cudaMemcpyAsync(h1, ACC, N * 4, cudaMemcpyDeviceToHost, s));
        if (is_blocking(kind)) {
            // legacy stream: waits for the blocking stream's work, no explicit sync
            CK(cudaMemcpy(hB.data(), B, N * 4, cudaMemcpyDeviceToHost));
        } else {
            cudaEvent_t e = make_event(i);
            CK(cudaEventRecord(e, s));
            CK(cudaStreamWaitEvent(cudaStreamLegacy, e, 0));
            CK(cudaEventDestroy(e));  // the wait is already bound
            CK(cudaMemcpy(hB.data(), B, N * 4, cudaMemcpyDeviceToHost));
        }
        kTwist<<<GRID, TPB, 0, s>>>(ACC, kT, SLOW);
        CK(cudaGetLastError());
        CK(cudaMemcpyAsync(h2, ACC, N * 4, cudaMemcpyDeviceToHost, s));
        cudaEvent_t end = make_event(i / 4);
        CK(cudaEventRecord(end, s));
        CK(cudaStreamDestroy(s));  // kTwist and the copy are (very likely) still pending
        if (i % 3 != 2) {
            CK(cudaEventSynchronize(end));
            CK(cudaEventDestroy(end));
        } else {
            CK(cudaEventDestroy(end));  // recorded, not complete
            CK(cudaDeviceSynchronize());
        }
        for (int j = 0; j < N; ++j) {
            acc[j] = acc[j] * 5u + hsh(seed, (unsigned)j);
            r1[j] = acc[j];
            rB[j] = hsh(acc[j], kB);
            acc[j] = (acc[j] ^ (acc[j] >> 7)) + kT;
        }
        static const char *kn[4] = {"blocking", "non-blocking", "blocking/high", "non-blocking/low"};
        char what[96];
        snprintf(what, sizeof what, "A %s stream: legacy cudaMemcpy", kn[kind]);
        same(what, i, hB.data(), rB.data());
        snprintf(what, sizeof what, "A %s stream: D2H before the legacy copy", kn[kind]);
        same(what, i, h1, r1.data());
        snprintf(what, sizeof what, "A %s stream: D2H pending at cudaStreamDestroy", kn[kind]);
        same(what, i, h2, acc.data());
        mix(hash_row(hB.data())); mix(hash_row(h1)); mix(hash_row(h2));
        memset(h1, 0xAB, N * 4); memset(h2, 0xAB, N * 4);
    }
    CK(cudaGetLastError());
    CK(cudaFree(ACC)); CK(cudaFree(B)); CK(cudaFreeHost(h1)); CK(cudaFreeHost(h2));
}

// ---------------------------------------------------------------- phase B
static void phaseB() {
    cudaStream_t s1, s2, s3;
    CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s3, cudaStreamNonBlocking));
    cudaEvent_t eE = make_event(0);
    unsigned *P, *Q, *R, *ring;
    CK(cudaMalloc(&P, N * 4)); CK(cudaMalloc(&Q, N * 4)); CK(cudaMalloc(&R, N * 4));
    CK(cudaMemset(P, 0, N * 4)); CK(cudaMemset(Q, 0, N * 4));
    CK(cudaMallocHost(&ring, (size_t)ITB * N * 4));
    memset(ring, 0xAB, (size_t)ITB * N * 4);
    std::vector<unsigned> q(N, 0u), ref((size_t)ITB * N);
    CK(cudaDeviceSynchronize());
    for (int i = 0; i < ITB; ++i) {
        unsigned c = hsh(0xB00Bu, (unsigned)i), kR = (unsigned)i ^ 0x55u;
        kFill<<<GRID, TPB, 0, s1>>>(P, c, SLOW);                       // after eY of i-1: kMix read P
        CK(cudaGetLastError());
        cudaEvent_t eX = make_event(i);
        CK(cudaEventRecord(eX, s1));
        CK(cudaStreamWaitEvent(s2, eX, 0));
        CK(cudaEventDestroy(eX));
        kMix<<<GRID, TPB, 0, s2>>>(Q, P, (unsigned)i, SLOW);           // after eX: P written
        CK(cudaGetLastError());
        cudaEvent_t eY = make_event(i + 1);                            // likely eX's handle
        CK(cudaEventRecord(eY, s2));
        CK(cudaStreamWaitEvent(s3, eY, 0));
        CK(cudaStreamWaitEvent(s1, eY, 0));
        CK(cudaEventDestroy(eY));
        kDerive<<<GRID, TPB, 0, s3>>>(R, Q, kR, 0);                    // after eY: Q written
        CK(cudaGetLastError());
        CK(cudaMemcpyAsync(ring + (size_t)i * N, R, N * 4, cudaMemcpyDeviceToHost, s3));
        cudaEvent_t eZ = make_event(i + 2);
        CK(cudaEventRecord(eZ, s3));
        CK(cudaStreamWaitEvent(s2, eZ, 0));                            // next kMix after Q was read
        CK(cudaEventDestroy(eZ));
        CK(cudaEventRecord(eE, s3));
        unsigned *want = &ref[(size_t)i * N];
        for (int j = 0; j < N; ++j) {
            q[j] = q[j] * 7u + (hsh(c, (unsigned)j) ^ (unsigned)i);
            want[j] = hsh(q[j], kR);
        }
        if (i % 8 == 7) {
            CK(cudaEventSynchronize(eE));
            same("B (at cudaEventSynchronize)", i, ring + (size_t)i * N, want);
        }
    }
    CK(cudaDeviceSynchronize());
    CK(cudaGetLastError());
    for (int i = 0; i < ITB; ++i) {
        same("B", i, ring + (size_t)i * N, &ref[(size_t)i * N]);
        mix(hash_row(ring + (size_t)i * N));
    }
    CK(cudaStreamDestroy(s1)); CK(cudaStreamDestroy(s2)); CK(cudaStreamDestroy(s3));
    CK(cudaEventDestroy(eE));
    CK(cudaFree(P)); CK(cudaFree(Q)); CK(cudaFree(R)); CK(cudaFreeHost(ring));
}

// ---------------------------------------------------------------- phase C
static cudaStream_t g_gs;                 // the shared stream (non-blocking, long-lived)
static unsigned *g_S, *g_LOG;             // device
static std::mutex g_mu;
static int g_pos = 0;
static unsigned g_hostlog[T * ITC];
static unsigned *g_acc[T], *g_C[T];       // device: per thread accumulator, 2 lent slots
static unsigned *g_out[T];                // pinned, per thread
static std::vector<unsigned> g_refC[T];   // ITC * N per thread: what was lent each iteration
static std::vector<unsigned> g_refAcc[T];
static uint64_t g_rowhash[T][ITC];
static int g_legacyChecks[T];

static void worker(int t) {
    CK(cudaSetDevice(0));
    const bool churn = (t % 2) == 0;  // new stream and events every iteration
    cudaStream_t own[2] = {nullptr, nullptr};
    cudaEvent_t evReadyL = nullptr, evEndL = nullptr;
    cudaEvent_t evFree[2] = {nullptr, nullptr};
    if (!churn) {
        own[0] = make_stream(0);
        own[1] = make_stream(t & 2 ? 3 : 1);
        evReadyL = make_event(t); evEndL = make_event(t + 1);
        evFree[0] = make_event(0); evFree[1] = make_event(2);
    }
    std::vector<unsigned> acc(N, 0u), hC(N);
    g_refC[t].assign((size_t)ITC * N, 0u);
    for (int i = 0; i < ITC; ++i) {
        const int slot = i & 1;
        const unsigned code = ((unsigned)t << 16) | (unsigned)i, seed = hsh(0xC0C0u + (unsigned)t, (unsigned)i);
        unsigned *C = g_C[t] + (size_t)slot * N;
        int kind = churn ? (i + t / 2) & 3 : ((i / 3) & 1 ? (t & 2 ? 3 : 1) : 0);
        cudaStream_t s = churn ? make_stream(kind) : own[(i / 3) & 1];
        if (i >= 2) {  // the shared stream has read C (lent two iterations ago)
            CK(cudaStreamWaitEvent(s, evFree[slot], 0));
            if (churn) { CK(cudaEventDestroy(evFree[slot])); evFree[slot] = nullptr; }
        }
        kStep<<<GRID, TPB, 0, s>>>(g_acc[t], seed, SLOW);
        CK(cudaGetLastError());
        kDerive<<<GRID, TPB, 0, s>>>(C, g_acc[t], code, 0);
        CK(cudaGetLastError());
        cudaEvent_t evReady = churn ? make_event(i + t) : evReadyL;
        CK(cudaEventRecord(evReady, s));
        {
            std::lock_guard<std::mutex> g(g_mu);
            int pos = g_pos++;
            CK(cudaStreamWaitEvent(g_gs, evReady, 0));
            kShared<<<GRID, TPB, 0, g_gs>>>(g_S, g_LOG, C, pos, code);
            CK(cudaGetLastError());
            if (churn) evFree[slot] = make_event(i);
            CK(cudaEventRecord(evFree[slot], g_gs));
            g_hostlog[pos] = code;
        }
        if (churn) CK(cudaEventDestroy(evReady));  // the shared stream's wait is bound
        CK(cudaMemcpyAsync(g_out[t], g_acc[t], N * 4, cudaMemcpyDeviceToHost, s));
        // reference
        unsigned *rc = &g_refC[t][(size_t)i * N];
        for (int j = 0; j < N; ++j) {
            acc[j] = acc[j] * 5u + hsh(seed, (unsigned)j);
            rc[j] = hsh(acc[j], code);
        }
        if (is_blocking(kind) && i % 3 == 0) {
            // legacy stream: ordered after the blocking stream's kDerive by the implicit rule only
            CK(cudaMemcpy(hC.data(), C, N * 4, cudaMemcpyDeviceToHost));
            char what[64];
            snprintf(what, sizeof what, "C thread %d: legacy cudaMemcpy of the lent slot", t);
            same(what, i, hC.data(), rc);
            ++g_legacyChecks[t];
        }
        if (churn) {
            cudaEvent_t end = make_event(i + 2 * t);
            CK(cudaEventRecord(end, s));
            CK(cudaStreamDestroy(s));  // kStep and the copy are still queued
            if (i % 5 == 4) {
                CK(cudaEventDestroy(end));
                CK(cudaDeviceSynchronize());
            } else {
                CK(cudaEventSynchronize(end));
                CK(cudaEventDestroy(end));
            }
        } else if (i % 2) {
            CK(cudaStreamSynchronize(s));
        } else {
            CK(cudaEventRecord(evEndL, s));
            CK(cudaEventSynchronize(evEndL));
        }
        char what[64];
        snprintf(what, sizeof what, "C thread %d (%s): accumulator", t, churn ? "new handles" : "long-lived");
        same(what, i, g_out[t], acc.data());
        g_rowhash[t][i] = hash_row(g_out[t]);
        for (int j = 0; j < N; ++j) g_out[t][j] = POISON;
    }
    // evFree of the last two iterations: recorded, possibly incomplete
    for (int k = 0; k < 2; ++k) CK(cudaEventDestroy(evFree[k]));
    if (!churn) {
        CK(cudaStreamDestroy(own[0])); CK(cudaStreamDestroy(own[1]));
        CK(cudaEventDestroy(evReadyL)); CK(cudaEventDestroy(evEndL));
    }
    g_refAcc[t] = acc;
}

static void phaseC() {
    CK(cudaStreamCreateWithFlags(&g_gs, cudaStreamNonBlocking));
    CK(cudaMalloc(&g_S, N * 4)); CK(cudaMalloc(&g_LOG, T * ITC * 4));
    CK(cudaMemset(g_S, 0, N * 4)); CK(cudaMemset(g_LOG, 0xFF, T * ITC * 4));
    for (int t = 0; t < T; ++t) {
        CK(cudaMalloc(&g_acc[t], N * 4)); CK(cudaMalloc(&g_C[t], 2 * N * 4));
        CK(cudaMemset(g_acc[t], 0, N * 4)); CK(cudaMemset(g_C[t], 0, 2 * N * 4));
        CK(cudaMallocHost(&g_out[t], N * 4));
        for (int j = 0; j < N; ++j) g_out[t][j] = POISON;
    }
    CK(cudaDeviceSynchronize());
    {
        std::vector<std::thread> th;
        for (int t = 0; t < T; ++t) th.emplace_back(worker, t);
        for (auto &x : th) x.join();
    }
    CK(cudaDeviceSynchronize());
    CK(cudaGetLastError());

    // the shared stream executed in mutex order: replay the host log
    std::vector<unsigned> S(N, 0u), dS(N), dlog(T * ITC);
    CK(cudaMemcpy(dS.data(), g_S, N * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(dlog.data(), g_LOG, T * ITC * 4, cudaMemcpyDeviceToHost));
    int seen[T] = {0};
    unsigned codesum = 0;
    bool logok = g_pos == T * ITC;
    if (!logok) failf("C: %d shared appends, want %d", g_pos, T * ITC);
    for (int pos = 0; pos < T * ITC && logok; ++pos) {
        unsigned code = g_hostlog[pos];
        int t = (int)(code >> 16), i = (int)(code & 0xffff);
        if (t >= T || i != seen[t]) { failf("C: host log [%d] = %08x out of order", pos, code); logok = false; break; }
        ++seen[t];
        codesum += code * 2654435761u;
        if (dlog[pos] != code) failf("C: shared stream ran %08x at position %d, mutex order says %08x", dlog[pos], pos, code);
        const unsigned *rc = &g_refC[t][(size_t)i * N];
        for (int j = 0; j < N; ++j) S[j] = S[j] * 3u + (rc[j] ^ code);
    }
    if (logok) same("C: shared stream result (mutex order)", T * ITC, dS.data(), S.data());  // order-dependent: not in the digest
    mix(codesum);
    for (int t = 0; t < T; ++t) {
        std::vector<unsigned> a(N);
        CK(cudaMemcpy(a.data(), g_acc[t], N * 4, cudaMemcpyDeviceToHost));
        char what[48];
        snprintf(what, sizeof what, "C thread %d: final accumulator", t);
        same(what, ITC, a.data(), g_refAcc[t].data());
        mix(hash_row(a.data()));
        for (int i = 0; i < ITC; ++i) mix(g_rowhash[t][i]);
        mix((uint64_t)g_legacyChecks[t]);
    }
    int legacy = 0;
    for (int t = 0; t < T; ++t) legacy += g_legacyChecks[t];
    printf("phase C: %d threads x %d iterations, %d shared appends, %d legacy-copy checks\n", T, ITC, g_pos, legacy);

    CK(cudaStreamDestroy(g_gs));
    CK(cudaFree(g_S)); CK(cudaFree(g_LOG));
    for (int t = 0; t < T; ++t) { CK(cudaFree(g_acc[t])); CK(cudaFree(g_C[t])); CK(cudaFreeHost(g_out[t])); }
}

int main() {
    CK(cudaSetDevice(0));
    CK(cudaFree(0));
    CK(cudaDeviceGetStreamPriorityRange(&g_least, &g_greatest));
    phaseA();
    printf("phase A: %d streams destroyed with work pending\n", ITA);
    phaseB();
    printf("phase B: %d events destroyed right after their waits\n", 3 * ITB);
    phaseC();
    return finish("handle_lifetimes");
}
