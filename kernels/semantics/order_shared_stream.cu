// shared_stream: two host threads share ONE explicitly created stream.
//  Phase 1: free-for-all under a mutex: each turn appends an order-dependent
//    update of a shared array (S = S*3 + code + j), a per-thread update and a
//    D2H snapshot of S, and logs its code on the host.  The stream executes in
//    the order the calls were made, so every snapshot must equal a replay of
//    the host log.  (The checksum uses only order-free parts.)
//  Phase 2: strict alternation (condition variable).  At the start of its turn
//    a thread calls cudaStreamSynchronize on the shared stream and reads the
//    pinned buffer the OTHER thread's copy filled in the previous turn: the
//    sync must cover work another thread enqueued (held work of another thread
//    must go out first).
#include <condition_variable>
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

static const int N = 1024, TPB = 256, GRID = N / TPB, TURNS1 = 60, TURNS2 = 120;

__global__ void kStep(unsigned *s, unsigned *log, int pos, unsigned code) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned v = s[j] * 3u + code + (unsigned)j;
    spin_cycles(3000);
    s[j] = v;
    if (j == 0) log[pos] = code;
}
__global__ void kOwn(unsigned *own, unsigned code) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    own[j] = own[j] * 5u + (code ^ (unsigned)j);
}
__global__ void kR1(unsigned *r, unsigned t) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned v = r[j] * 7u + t;
    spin_cycles(3000);
    r[j] = v;
}
__global__ void kR2(unsigned *r, const unsigned *tmp) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    r[j] = (r[j] ^ (r[j] >> 3)) + tmp[j];
}

static cudaStream_t g_s;
static unsigned *g_S, *g_LOG, *g_OWN[2], *g_R, *g_TMP;
static unsigned *g_snap;      // pinned, (2*TURNS1) * N
static unsigned *g_res;       // pinned, N, reused every turn
static std::mutex g_mu;
static std::condition_variable g_cv;
static int g_pos = 0;
static unsigned g_hostlog[2 * TURNS1];
static int g_turn = 0;
static std::vector<unsigned> g_refR(N, 0u);
static std::vector<uint64_t> g_turnhash(TURNS2 + 1, 0);

static void phase1(int t) {
    CK(cudaSetDevice(0));
    for (int k = 0; k < TURNS1; ++k) {
        std::lock_guard<std::mutex> g(g_mu);
        int pos = g_pos++;
        unsigned code = ((unsigned)t << 16) | (unsigned)k;
        kStep<<<GRID, TPB, 0, g_s>>>(g_S, g_LOG, pos, code);
        CK(cudaGetLastError());
        kOwn<<<GRID, TPB, 0, g_s>>>(g_OWN[t], code);
        CK(cudaGetLastError());
        CK(cudaMemcpyAsync(g_snap + (size_t)pos * N, g_S, N * 4, cudaMemcpyDeviceToHost, g_s));
        g_hostlog[pos] = code;
    }
}

static uint64_t hash_res(const unsigned *r) {
    uint64_t h = 1469598103934665603ull;
    for (int j = 0; j < N; ++j) { h ^= r[j]; h *= 1099511628211ull; }
    return h;
}

static void phase2(int t) {
    CK(cudaSetDevice(0));
    for (int turn = t; turn < TURNS2; turn += 2) {
        std::unique_lock<std::mutex> lk(g_mu);
        g_cv.wait(lk, [&] { return g_turn == turn; });
        if (turn > 0) {
            // the other thread enqueued the previous turn's work and copy
            CK(cudaStreamSynchronize(g_s));
            bool bad = false;
            for (int j = 0; j < N && !bad; ++j)
                if (g_res[j] != g_refR[j]) {
                    failf("turn %d (thread %d): result of turn %d [%d] = %08x, want %08x", turn, t, turn - 1, j,
                          g_res[j], g_refR[j]);
                    bad = true;
                }
            g_turnhash[turn - 1] = hash_res(g_res);
        }
        unsigned ut = (unsigned)turn;
        kR1<<<GRID, TPB, 0, g_s>>>(g_R, ut);
        CK(cudaGetLastError());
        CK(cudaMemsetAsync(g_TMP, (int)(ut & 0xff), N * 4, g_s));
        kR2<<<GRID, TPB, 0, g_s>>>(g_R, g_TMP);
        CK(cudaGetLastError());
        CK(cudaMemcpyAsync(g_res, g_R, N * 4, cudaMemcpyDeviceToHost, g_s));
        unsigned tmp = (ut & 0xffu) * 0x01010101u;
        for (int j = 0; j < N; ++j) {
            unsigned r = g_refR[j] * 7u + ut;
            g_refR[j] = (r ^ (r >> 3)) + tmp;
        }
        g_turn = turn + 1;
        lk.unlock();
        g_cv.notify_all();
    }
}

int main() {
    CK(cudaSetDevice(0));
    CK(cudaFree(0));
    CK(cudaStreamCreateWithFlags(&g_s, cudaStreamNonBlocking));
    CK(cudaMalloc(&g_S, N * 4)); CK(cudaMalloc(&g_LOG, 2 * TURNS1 * 4));
    CK(cudaMalloc(&g_OWN[0], N * 4)); CK(cudaMalloc(&g_OWN[1], N * 4));
    CK(cudaMalloc(&g_R, N * 4)); CK(cudaMalloc(&g_TMP, N * 4));
    CK(cudaMemset(g_S, 0, N * 4)); CK(cudaMemset(g_LOG, 0xFF, 2 * TURNS1 * 4));
    CK(cudaMemset(g_OWN[0], 0, N * 4)); CK(cudaMemset(g_OWN[1], 0, N * 4)); CK(cudaMemset(g_R, 0, N * 4));
    CK(cudaMallocHost(&g_snap, (size_t)2 * TURNS1 * N * 4));
    CK(cudaMallocHost(&g_res, N * 4));
    memset(g_snap, 0xAB, (size_t)2 * TURNS1 * N * 4);
    memset(g_res, 0xAB, N * 4);
    CK(cudaDeviceSynchronize());

    // ---- phase 1
    {
        std::thread a(phase1, 0), b(phase1, 1);
        a.join(); b.join();
    }
    CK(cudaStreamSynchronize(g_s));
    CK(cudaGetLastError());
    {
        std::vector<unsigned> S(N, 0u), own[2] = {std::vector<unsigned>(N, 0u), std::vector<unsigned>(N, 0u)};
        std::vector<unsigned> dlog(2 * TURNS1);
        CK(cudaMemcpy(dlog.data(), g_LOG, 2 * TURNS1 * 4, cudaMemcpyDeviceToHost));
        int seen[2] = {0, 0};
        unsigned codesum = 0;
        for (int pos = 0; pos < 2 * TURNS1; ++pos) {
            unsigned code = g_hostlog[pos];
            int t = (int)(code >> 16), k = (int)(code & 0xffff);
            if (t > 1 || k != seen[t]) { failf("host log entry %d = %08x is out of order", pos, code); break; }
            ++seen[t];
            codesum += code * 2654435761u;
            if (dlog[pos] != code) failf("device log [%d] = %08x, stream order says %08x", pos, dlog[pos], code);
            for (int j = 0; j < N; ++j) {
                S[j] = S[j] * 3u + code + (unsigned)j;
                own[t][j] = own[t][j] * 5u + (code ^ (unsigned)j);
            }
            const unsigned *got = g_snap + (size_t)pos * N;
            for (int j = 0; j < N; ++j)
                if (got[j] != S[j]) {
                    failf("snapshot %d (code %08x): S[%d] = %08x, want %08x", pos, code, j, got[j], S[j]);
                    break;
                }
        }
        mix(codesum);
        for (int t = 0; t < 2; ++t) {
            std::vector<unsigned> h(N);
            CK(cudaMemcpy(h.data(), g_OWN[t], N * 4, cudaMemcpyDeviceToHost));
            for (int j = 0; j < N; ++j)
                if (h[j] != own[t][j]) { failf("own[%d][%d] = %08x, want %08x", t, j, h[j], own[t][j]); break; }
            for (int j = 0; j < N; ++j) mix(h[j]);
        }
    }

    // ---- phase 2
    {
        std::thread a(phase2, 0), b(phase2, 1);
        a.join(); b.join();
    }
    CK(cudaStreamSynchronize(g_s));
    CK(cudaGetLastError());
    for (int j = 0; j < N; ++j)
        if (g_res[j] != g_refR[j]) { failf("final R[%d] = %08x, want %08x", j, g_res[j], g_refR[j]); break; }
    g_turnhash[TURNS2 - 1] = hash_res(g_res);
    for (int t = 0; t < TURNS2; ++t) mix(g_turnhash[t]);

    CK(cudaStreamDestroy(g_s));
    CK(cudaFreeHost(g_snap)); CK(cudaFreeHost(g_res));
    return finish("shared_stream");
}
