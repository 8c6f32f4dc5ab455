// capture_threads: the program's OWN stream captures, in three capture modes,
// while another host thread keeps doing eager work.
//  (main) before the threads start: an eager loop on stream sM (repeats, so an
//      interposer has learnt it), then WITHOUT synchronising a capture on sM.
//      Beginning a capture on a stream with pending eager work is legal; that
//      work is not part of the graph (it runs eagerly, before the graph's later
//      launch in stream order).  The captured graph must hold exactly its 3
//      nodes (1 memset, 2 kernels): held-back eager work flushed INTO the
//      capture shows up as extra nodes and runs again at every launch.
//  (C) 60 captures on s1, in turn cudaStreamCaptureModeGlobal / ThreadLocal /
//      Relaxed: memset, kernels, an event fork onto s2 and a join back; some
//      capture with cudaStreamBeginCaptureToGraph into a graph that already
//      holds a node (the captured work depends on it), some order the last
//      kernel after s2's node with cudaStreamUpdateCaptureDependencies (the
//      event join comes only after it).  cudaStreamIsCapturing and
//      cudaStreamGetCaptureInfo are checked during the capture (status, id
//      stable within a capture and new for each, dependency counts), the node
//      count and types after it; the graph is launched 2-3 times with eager
//      kernels between the launches on the same stream that scramble what the
//      graph must recompute, so a lost dependency reads stale data.
//  (E) 240 eager iterations on its own non-blocking streams sE/sE2: kernels with
//      changing scalars, an event fork/join, a D2H copy into pinned memory,
//      cudaStreamSynchronize, host check.  Every 4th iteration runs while one of
//      C's captures is held open (handshake), whatever its mode.  E stays in the
//      default (global) capture-interaction mode for launches, event record/
//      wait and async copies, which are stream-ordered and not "potentially
//      unsafe"; only around cudaStreamSynchronize does it switch itself to
//      cudaStreamCaptureModeRelaxed with cudaThreadExchangeStreamCaptureMode
//      (push/pop, as PyTorch's capture-mode guard does), since a synchronising
//      call from a global-mode thread is prohibited while another thread has a
//      global-mode capture open.  An interposer that allocates, instantiates,
//      synchronises or captures from E's launch/copy calls invalidates C's
//      global-mode capture (C sees status Invalidated, its next capture call
//      fails) or makes sE report capturing.
// Each thread checks its own results; both digests are folded in a fixed order.
#include <pthread.h>
#include <atomic>
#include <chrono>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>
#include <cuda_runtime.h>
#include "order_common.cuh"

static const int N = 2048, TPB = 256, GRID = N / TPB;
static const int MITERS = 48, CITERS = 60, R = 4, EITERS = CITERS * R;

__global__ void kFill(unsigned *a, unsigned seed) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    a[j] = hsh(seed, (unsigned)j);
}
// main thread
__global__ void kM2(unsigned *acc, const unsigned *t, unsigned i) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    acc[j] = acc[j] * 3u + t[j] + i;
}
__global__ void kG1(unsigned *w, const unsigned *acc, unsigned c) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    w[j] = w[j] + acc[j] * 5u + c;
}
__global__ void kG2(unsigned *acc, const unsigned *w) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    acc[j] = (acc[j] * 3u) ^ w[j];
}
// thread C
__global__ void kPreC(unsigned *p, unsigned s) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    spin_cycles(10000);
    p[j] = hsh(s, (unsigned)j);
}
__global__ void kC1(unsigned *x, const unsigned *p, unsigned usePre, unsigned a) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    x[j] = x[j] * 3u + a + (usePre ? p[j] : 0u);
}
__global__ void kC2(unsigned *y, const unsigned *x, unsigned a) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    y[j] = x[j] ^ a;
}
__global__ void kC3(unsigned *b, const unsigned *x, unsigned a) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned v = hsh(x[j], a);
    spin_cycles(20000);
    b[j] = v;
}
__global__ void kC4(unsigned *acc, const unsigned *y, const unsigned *b) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    acc[j] = acc[j] * 3u + y[j] + b[j] * 5u;
}
__global__ void kSetC(unsigned *acc, unsigned *b, unsigned *p, unsigned seed) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned v = hsh(seed, (unsigned)j);
    acc[j] = v; b[j] = ~v; p[j] = v ^ 0x5A5A5A5Au;
}
__global__ void kEagerC(unsigned *acc, unsigned *b, unsigned *p, unsigned e, unsigned l) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    acc[j] = (acc[j] ^ hsh(e, (unsigned)j)) + l;
    b[j] ^= 0xA5A5A5A5u; p[j] += 0x9E3779B9u;
}
// thread E
__global__ void kE2(unsigned *q, const unsigned *a, unsigned c) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned v = a[j] * 7u + c;
    spin_cycles(8000);
    q[j] = v;
}
__global__ void kE3(unsigned *acc, const unsigned *a, const unsigned *q, unsigned i) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    acc[j] = acc[j] * 3u + (a[j] ^ q[j]) + i;
}

struct Dig {  // per-thread digest (g_hash/mix are not thread-safe)
    uint64_t h = 1469598103934665603ull;
    void add(uint64_t v) { for (int b = 0; b < 8; ++b) { h ^= (v >> (8 * b)) & 0xff; h *= 1099511628211ull; } }
};
static Dig g_digC, g_digE;
static pthread_barrier_t g_bar;
static std::atomic<int> g_open{0}, g_ack{0};  // handshake: capture k open -> k+1; E done -> k+1
static cudaStream_t s1, s2, sE, sE2;
static cudaEvent_t evFork, evJoin, evE1, evE2;
static unsigned *cX, *cY, *cB, *cP, *cACC, *hC;   // thread C
static unsigned *eA, *eQ, *eACC, *hE;             // thread E

static bool wait_at_least(std::atomic<int> &a, int v) {
    auto t0 = std::chrono::steady_clock::now();
    while (a.load(std::memory_order_acquire) < v) {
        if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(10)) return false;
        std::this_thread::yield();
    }
    return true;
}
static int cap_status(cudaStream_t s) {
    cudaStreamCaptureStatus st;
    CK(cudaStreamIsCapturing(s, &st));
    return (int)st;
}
// node count and how many memset / kernel nodes
static void count_nodes(cudaGraph_t g, size_t *n, int *nMemset, int *nKernel) {
    CK(cudaGraphGetNodes(g, nullptr, n));
    std::vector<cudaGraphNode_t> v(*n);
    size_t m = *n;
    if (m) CK(cudaGraphGetNodes(g, v.data(), &m));
    *nMemset = *nKernel = 0;
    for (size_t i = 0; i < m; ++i) {
        cudaGraphNodeType t;
        CK(cudaGraphNodeGetType(v[i], &t));
        if (t == cudaGraphNodeTypeMemset) ++*nMemset;
        if (t == cudaGraphNodeTypeKernel) ++*nKernel;
    }
}

static void thread_c() {
    CK(cudaSetDevice(0));
    pthread_barrier_wait(&g_bar);
    Dig &d = g_digC;
    unsigned long long prevId = 0;
    for (int k = 0; k < CITERS; ++k) {
        unsigned uk = (unsigned)k;
        cudaStreamCaptureMode mode = k % 3 == 0 ? cudaStreamCaptureModeGlobal
                                   : k % 3 == 1 ? cudaStreamCaptureModeThreadLocal : cudaStreamCaptureModeRelaxed;
        bool toGraph = (k % 5) >= 3, useUpd = (k % 2) == 1;
        int L = 2 + (k / 2) % 2;
        unsigned bm = (uk * 37u + 11u) & 0xffu, a1 = hsh(uk, 1), a2 = hsh(uk, 2), a3 = hsh(uk, 3), ps = hsh(uk + 77u, 4);
        kSetC<<<GRID, TPB, 0, s1>>>(cACC, cB, cP, hsh(uk, 9));  // eager, still pending at capture begin
        CK(cudaGetLastError());
        cudaGraph_t G = nullptr;
        cudaGraphNode_t pre = nullptr;
        if (toGraph) {
            CK(cudaGraphCreate(&G, 0));
            void *args[] = {&cP, &ps};
            cudaKernelNodeParams p = {};
            p.func = (void *)kPreC; p.gridDim = dim3(GRID); p.blockDim = dim3(TPB);
            p.sharedMemBytes = 0; p.kernelParams = args; p.extra = nullptr;
            CK(cudaGraphAddKernelNode(&pre, G, nullptr, 0, &p));
            CK(cudaStreamBeginCaptureToGraph(s1, G, &pre, nullptr, 1, mode));
        } else {
            CK(cudaStreamBeginCapture(s1, mode));
        }
        cudaStreamCaptureStatus st;
        unsigned long long id0 = 0, id = 0;
        cudaGraph_t cg = nullptr;
        const cudaGraphNode_t *deps = nullptr;
        size_t nd = 99;
        CK(cudaStreamGetCaptureInfo(s1, &st, &id0, &cg, &deps, nullptr, &nd));
        if (st != cudaStreamCaptureStatusActive) failf("C %d: capture status %d after begin", k, (int)st);
        if (nd != (toGraph ? 1u : 0u)) failf("C %d: %zu dependencies after begin, want %d", k, nd, toGraph ? 1 : 0);
        if (toGraph && (cg != G || nd != 1 || deps[0] != pre)) failf("C %d: capture is not into the given graph / node", k);
        if (k > 0 && id0 == prevId) failf("C %d: capture id repeats the previous capture's", k);
        d.add((uint64_t)st); d.add(nd);

        CK(cudaMemsetAsync(cX, (int)bm, N * 4, s1));
        CK(cudaStreamGetCaptureInfo(s1, &st, &id, nullptr, nullptr, nullptr, &nd));
        if (st != cudaStreamCaptureStatusActive || id != id0 || nd != 1) failf("C %d: after memset status %d nd %zu, id stable %d", k, (int)st, nd, (int)(id == id0));
        kC1<<<GRID, TPB, 0, s1>>>(cX, cP, toGraph ? 1u : 0u, a1);
        CK(cudaGetLastError());
        CK(cudaEventRecord(evFork, s1));
        int s2before = cap_status(s2);
        CK(cudaStreamWaitEvent(s2, evFork, 0));
        int s2after = cap_status(s2);
        if (s2before != cudaStreamCaptureStatusNone || s2after != cudaStreamCaptureStatusActive)
            failf("C %d: s2 capture status %d before the fork, %d after", k, s2before, s2after);
        d.add((uint64_t)s2before); d.add((uint64_t)s2after);
        kC3<<<GRID, TPB, 0, s2>>>(cB, cX, a3);
        CK(cudaGetLastError());
        kC2<<<GRID, TPB, 0, s1>>>(cY, cX, a2);
        CK(cudaGetLastError());

        // hold the capture open while E runs one full eager iteration (with a sync)
        g_open.store(k + 1, std::memory_order_release);
        if (!wait_at_least(g_ack, k + 1)) failf("C %d: timed out waiting for thread E", k);
        CK(cudaStreamGetCaptureInfo(s1, &st, &id));
        if (st != cudaStreamCaptureStatusActive || id != id0)
            failf("C %d: capture (mode %d) status %d after E's eager work, id stable %d", k, (int)mode, (int)st, (int)(id == id0));
        d.add((uint64_t)st);

        if (useUpd) {
            unsigned long long id2 = 0;
            CK(cudaStreamGetCaptureInfo(s2, &st, &id2, nullptr, &deps, nullptr, &nd));
            if (st != cudaStreamCaptureStatusActive || id2 != id0 || nd != 1) {
                failf("C %d: s2 status %d, %zu deps, same id %d", k, (int)st, nd, (int)(id2 == id0));
            } else {
                cudaGraphNode_t n3 = deps[0];
                CK(cudaStreamUpdateCaptureDependencies(s1, &n3, nullptr, 1, cudaStreamAddCaptureDependencies));
            }
            CK(cudaStreamGetCaptureInfo(s1, &st, &id, nullptr, nullptr, nullptr, &nd));
            if (nd != 2) failf("C %d: %zu dependencies after the update, want 2", k, nd);
            d.add(nd);
            kC4<<<GRID, TPB, 0, s1>>>(cACC, cY, cB);   // ordered after kC3 only by the update
            CK(cudaGetLastError());
            CK(cudaEventRecord(evJoin, s2));
            CK(cudaStreamWaitEvent(s1, evJoin, 0));
        } else {
            CK(cudaEventRecord(evJoin, s2));
            CK(cudaStreamWaitEvent(s1, evJoin, 0));
            CK(cudaStreamGetCaptureInfo(s1, &st, &id, nullptr, nullptr, nullptr, &nd));
            if (nd != 2) failf("C %d: %zu dependencies after the join, want 2", k, nd);
            d.add(nd);
            kC4<<<GRID, TPB, 0, s1>>>(cACC, cY, cB);
            CK(cudaGetLastError());
        }
        if (cap_status(s1) != cudaStreamCaptureStatusActive) failf("C %d: s1 not capturing before end", k);
        cudaGraph_t g = nullptr;
        CK(cudaStreamEndCapture(s1, &g));
        if (toGraph && g != G) failf("C %d: end of capture returned another graph", k);
        int e1 = cap_status(s1), e2 = cap_status(s2);
        if (e1 != cudaStreamCaptureStatusNone || e2 != cudaStreamCaptureStatusNone) failf("C %d: still capturing after end (%d %d)", k, e1, e2);
        size_t nn; int nms, nk;
        count_nodes(g, &nn, &nms, &nk);
        int wantK = toGraph ? 5 : 4;
        if ((int)nn != wantK + 1 || nms != 1 || nk != wantK) failf("C %d: graph has %zu nodes (%d memset, %d kernel), want %d", k, nn, nms, nk, wantK + 1);
        d.add(nn); d.add((uint64_t)nms); d.add((uint64_t)nk);

        cudaGraphExec_t gx;
        CK(cudaGraphInstantiate(&gx, g, 0));
        for (int l = 0; l < L; ++l) {
            if (l > 0) {
                kEagerC<<<GRID, TPB, 0, s1>>>(cACC, cB, cP, hsh(uk, 20u + l), (unsigned)l);
                CK(cudaGetLastError());
            }
            CK(cudaGraphLaunch(gx, s1));
        }
        CK(cudaMemcpyAsync(hC, cACC, N * 4, cudaMemcpyDeviceToHost, s1));
        CK(cudaStreamSynchronize(s1));
        CK(cudaGraphExecDestroy(gx));
        CK(cudaGraphDestroy(g));

        unsigned seed = hsh(uk, 9);
        for (int j = 0; j < N; ++j) {
            unsigned uj = (unsigned)j;
            unsigned x = (bm * 0x01010101u) * 3u + a1 + (toGraph ? hsh(ps, uj) : 0u);
            unsigned y = x ^ a2, b = hsh(x, a3), acc = hsh(seed, uj);
            for (int l = 0; l < L; ++l) {
                if (l > 0) acc = (acc ^ hsh(hsh(uk, 20u + l), uj)) + (unsigned)l;
                acc = acc * 3u + y + b * 5u;
            }
            if (hC[j] != acc) { failf("C %d (mode %d, toGraph %d, update %d): ACC[%d] = %08x, want %08x", k, (int)mode, (int)toGraph, (int)useUpd, j, hC[j], acc); break; }
        }
        for (int j = 0; j < N; ++j) d.add(hC[j]);
        prevId = id0;
    }
}

static void thread_e() {
    CK(cudaSetDevice(0));
    pthread_barrier_wait(&g_bar);
    Dig &d = g_digE;
    std::vector<unsigned> acc(N, 0u);
    for (int i = 0; i < EITERS; ++i) {
        unsigned ui = (unsigned)i;
        bool hs = (i % R) == R - 1;
        int k = i / R;
        if (hs && !wait_at_least(g_open, k + 1)) failf("E %d: timed out waiting for capture %d to open", i, k);
        unsigned seed = hsh(700u, ui), c = hsh(701u, ui);
        kFill<<<GRID, TPB, 0, sE>>>(eA, seed);
        CK(cudaGetLastError());
        CK(cudaEventRecord(evE1, sE));
        CK(cudaStreamWaitEvent(sE2, evE1, 0));
        kE2<<<GRID, TPB, 0, sE2>>>(eQ, eA, c);
        CK(cudaGetLastError());
        CK(cudaEventRecord(evE2, sE2));
        CK(cudaStreamWaitEvent(sE, evE2, 0));
        kE3<<<GRID, TPB, 0, sE>>>(eACC, eA, eQ, ui);
        CK(cudaGetLastError());
        CK(cudaMemcpyAsync(hE, eACC, N * 4, cudaMemcpyDeviceToHost, sE));
        if (hs) {
            int a = cap_status(sE), b = cap_status(sE2);
            if (a != cudaStreamCaptureStatusNone || b != cudaStreamCaptureStatusNone) failf("E %d: own streams report capture status %d %d", i, a, b);
            d.add((uint64_t)a); d.add((uint64_t)b);
        }
        {   // synchronising: relaxed for the call (another thread may hold a global capture open)
            cudaStreamCaptureMode m = cudaStreamCaptureModeRelaxed;
            CK(cudaThreadExchangeStreamCaptureMode(&m));
            CK(cudaStreamSynchronize(sE));
            CK(cudaThreadExchangeStreamCaptureMode(&m));
            if (m != cudaStreamCaptureModeRelaxed) failf("E %d: capture mode swap returned %d", i, (int)m);
        }
        if (hs) g_ack.store(k + 1, std::memory_order_release);
        bool bad = false;
        for (int j = 0; j < N; ++j) {
            unsigned a = hsh(seed, (unsigned)j), q = a * 7u + c;
            acc[j] = acc[j] * 3u + (a ^ q) + ui;
            if (!bad && hE[j] != acc[j]) { failf("E %d: ACC[%d] = %08x, want %08x", i, j, hE[j], acc[j]); bad = true; }
            d.add(hE[j]);
        }
    }
}

int main() {
    CK(cudaSetDevice(0));
    CK(cudaFree(0));
    cudaStream_t sM;
    CK(cudaStreamCreateWithFlags(&sM, cudaStreamNonBlocking));
    unsigned *T, *ACC, *W, *dummy, *ringM, *hM;
    CK(cudaMalloc(&T, N * 4)); CK(cudaMalloc(&ACC, N * 4)); CK(cudaMalloc(&W, N * 4)); CK(cudaMalloc(&dummy, N * 4));
    unsigned **bufs[] = {&cX, &cY, &cB, &cP, &cACC, &eA, &eQ, &eACC};
    for (unsigned **b : bufs) { CK(cudaMalloc(b, N * 4)); CK(cudaMemset(*b, 0, N * 4)); }
    CK(cudaMemset(ACC, 0, N * 4)); CK(cudaMemset(dummy, 0, N * 4));
    CK(cudaMallocHost(&ringM, (size_t)MITERS * N * 4)); CK(cudaMallocHost(&hM, N * 4));
    CK(cudaMallocHost(&hC, N * 4)); CK(cudaMallocHost(&hE, N * 4));
    memset(ringM, 0xAB, (size_t)MITERS * N * 4); memset(hM, 0xAB, N * 4);
    // every kernel loaded before any capture (lazy loading must not happen inside one)
    kFill<<<GRID, TPB, 0, sM>>>(dummy, 1u); kM2<<<GRID, TPB, 0, sM>>>(dummy, dummy, 1u);
    kG1<<<GRID, TPB, 0, sM>>>(dummy, dummy, 1u); kG2<<<GRID, TPB, 0, sM>>>(dummy, dummy);
    kPreC<<<GRID, TPB, 0, sM>>>(dummy, 1u); kC1<<<GRID, TPB, 0, sM>>>(dummy, dummy, 1u, 1u);
    kC2<<<GRID, TPB, 0, sM>>>(dummy, dummy, 1u); kC3<<<GRID, TPB, 0, sM>>>(dummy, dummy, 1u);
    kC4<<<GRID, TPB, 0, sM>>>(dummy, dummy, dummy); kSetC<<<GRID, TPB, 0, sM>>>(dummy, dummy, dummy, 1u);
    kEagerC<<<GRID, TPB, 0, sM>>>(dummy, dummy, dummy, 1u, 1u); kE2<<<GRID, TPB, 0, sM>>>(dummy, dummy, 1u);
    kE3<<<GRID, TPB, 0, sM>>>(dummy, dummy, dummy, 1u);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());

    // ---- main: eager loop, then a capture on the same stream with that work still pending
    for (int i = 0; i < MITERS; ++i) {
        kFill<<<GRID, TPB, 0, sM>>>(T, hsh(500u, (unsigned)i));
        kM2<<<GRID, TPB, 0, sM>>>(ACC, T, (unsigned)i);
        CK(cudaGetLastError());
        CK(cudaMemcpyAsync(ringM + (size_t)i * N, ACC, N * 4, cudaMemcpyDeviceToHost, sM));
    }
    const unsigned cG = 0x01234567u;
    CK(cudaStreamBeginCapture(sM, cudaStreamCaptureModeGlobal));
    int mActive = cap_status(sM);
    CK(cudaMemsetAsync(W, 0x3C, N * 4, sM));
    kG1<<<GRID, TPB, 0, sM>>>(W, ACC, cG);
    kG2<<<GRID, TPB, 0, sM>>>(ACC, W);
    CK(cudaGetLastError());
    cudaGraph_t gM;
    CK(cudaStreamEndCapture(sM, &gM));
    int mNone = cap_status(sM);
    if (mActive != cudaStreamCaptureStatusActive || mNone != cudaStreamCaptureStatusNone) failf("main: capture status %d during, %d after", mActive, mNone);
    size_t nn; int nms, nk;
    count_nodes(gM, &nn, &nms, &nk);
    if (nn != 3 || nms != 1 || nk != 2) failf("main: captured graph has %zu nodes (%d memset, %d kernel), want 3 (1, 2)", nn, nms, nk);
    mix((uint64_t)mActive); mix((uint64_t)mNone); mix(nn); mix((uint64_t)nms); mix((uint64_t)nk);
    cudaGraphExec_t gxM;
    CK(cudaGraphInstantiate(&gxM, gM, 0));
    CK(cudaGraphLaunch(gxM, sM));
    kM2<<<GRID, TPB, 0, sM>>>(ACC, T, 1000u);
    CK(cudaGetLastError());
    CK(cudaGraphLaunch(gxM, sM));
    CK(cudaMemcpyAsync(hM, ACC, N * 4, cudaMemcpyDeviceToHost, sM));
    CK(cudaStreamSynchronize(sM));
    CK(cudaGraphExecDestroy(gxM));
    CK(cudaGraphDestroy(gM));
    {
        std::vector<unsigned> acc(N, 0u);
        for (int i = 0; i < MITERS; ++i) {
            unsigned s = hsh(500u, (unsigned)i);
            for (int j = 0; j < N; ++j) acc[j] = acc[j] * 3u + hsh(s, (unsigned)j) + (unsigned)i;
            check_acc(i, ringM + (size_t)i * N, acc.data(), N);
        }
        unsigned s = hsh(500u, (unsigned)(MITERS - 1));
        for (int j = 0; j < N; ++j) {
            unsigned t = hsh(s, (unsigned)j), a = acc[j];
            for (int l = 0; l < 2; ++l) {
                if (l > 0) a = a * 3u + t + 1000u;
                unsigned w = 0x3C3C3C3Cu + a * 5u + cG;
                a = (a * 3u) ^ w;
            }
            acc[j] = a;
        }
        check_acc(MITERS, hM, acc.data(), N);
    }

    // ---- threads C and E
    CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking)); CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&sE, cudaStreamNonBlocking)); CK(cudaStreamCreateWithFlags(&sE2, cudaStreamNonBlocking));
    cudaEvent_t *evs[] = {&evFork, &evJoin, &evE1, &evE2};
    for (cudaEvent_t *e : evs) CK(cudaEventCreateWithFlags(e, cudaEventDisableTiming));
    CK(cudaDeviceSynchronize());
    pthread_barrier_init(&g_bar, nullptr, 2);
    std::thread tc(thread_c), te(thread_e);
    tc.join(); te.join();
    pthread_barrier_destroy(&g_bar);
    mix(g_digC.h); mix(g_digE.h);
    mix((uint64_t)g_open.load()); mix((uint64_t)g_ack.load());
    if (g_open.load() != CITERS || g_ack.load() != CITERS) failf("handshakes: %d opened, %d acknowledged", g_open.load(), g_ack.load());

    CK(cudaDeviceSynchronize());
    CK(cudaGetLastError());
    for (cudaEvent_t *e : evs) CK(cudaEventDestroy(*e));
    CK(cudaStreamDestroy(s1)); CK(cudaStreamDestroy(s2)); CK(cudaStreamDestroy(sE)); CK(cudaStreamDestroy(sE2));
    CK(cudaStreamDestroy(sM));
    for (unsigned **b : bufs) CK(cudaFree(*b));
    CK(cudaFree(T)); CK(cudaFree(ACC)); CK(cudaFree(W)); CK(cudaFree(dummy));
    CK(cudaFreeHost(ringM)); CK(cudaFreeHost(hM)); CK(cudaFreeHost(hC)); CK(cudaFreeHost(hE));
    return finish("capture_threads");
}
