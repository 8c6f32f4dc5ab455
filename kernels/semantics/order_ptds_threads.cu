// ptds_threads: three host threads, each looping on its own per-thread default
// stream (stream 0 and cudaStreamPerThread) with its own buffers, and three
// cross-thread orderings that come only from the host:
//  (a) a shared device array updated by a non-atomic read-modify-write kernel
//      under a host mutex, chained across threads by ONE shared event: each
//      thread waits for the event (last recorded by whichever thread held the
//      mutex before) and records it again after its kernel.  Lost updates show
//      a wait that bound to an older record.
//  (b) every 8th iteration each thread writes its slot of a shared array, all
//      meet at a host barrier, then thread 0 alone calls cudaDeviceSynchronize
//      and reads every slot: the other threads' launches returned before the
//      barrier, so the device-wide sync must cover them.
//  (c) pageable-source cudaMemcpyAsync: the host buffer is overwritten right
//      after the call returns (documented: the data is staged before return).
#include <pthread.h>
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

static const int T = 3, ITERS = 64, N = 2048, TPB = 256, GRID = N / TPB, NS = 2048, SLOTS = 64;

__global__ void kFill(unsigned *a, unsigned seed) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    a[j] = hsh(seed, (unsigned)j);
}
__global__ void kAffine(unsigned *b, const unsigned *a, unsigned m, unsigned add) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    b[j] = a[j] * m + add;
}
__global__ void kMix(unsigned *b, const unsigned *c, const unsigned *d, unsigned k) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    b[j] = (b[j] ^ c[j]) + d[j] + k * (unsigned)j;
}
// non-atomic read-modify-write with a pause between load and store
__global__ void kRMW(unsigned *s, unsigned val) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned x = ((volatile unsigned *)s)[j];
    spin_cycles(4000);
    ((volatile unsigned *)s)[j] = x + val + (unsigned)j;
}
__global__ void kSlot(unsigned *slots, int t, unsigned v) {
    int k = threadIdx.x;
    slots[t * SLOTS + k] = hsh(v, (unsigned)k);
}

static unsigned *g_shared, *g_slots;
static cudaEvent_t g_ev;
static std::mutex g_mu;
static pthread_barrier_t g_bar;
static unsigned *g_ring[T];  // pinned, per thread: ITERS * N

static unsigned rmw_val(int t, int i) { return hsh(1000u + t, (unsigned)i) & 0xffffu; }
static unsigned slot_val(int t, int i) { return (unsigned)(t * 100000 + i * 17 + 5); }

static void worker(int t) {
    CK(cudaSetDevice(0));
    unsigned *a, *b, *c, *d;
    CK(cudaMalloc(&a, N * 4)); CK(cudaMalloc(&b, N * 4)); CK(cudaMalloc(&c, N * 4)); CK(cudaMalloc(&d, N * 4));
    std::vector<unsigned> pageable(N);
    std::vector<unsigned> hslots(T * SLOTS);
    for (int i = 0; i < ITERS; ++i) {
        unsigned seed = hsh((unsigned)t, (unsigned)i);
        kFill<<<GRID, TPB>>>(a, seed);                                       // stream 0 = per-thread
        CK(cudaGetLastError());
        kAffine<<<GRID, TPB, 0, cudaStreamPerThread>>>(b, a, 3u + 2u * t, (unsigned)i);
        CK(cudaGetLastError());
        CK(cudaMemsetAsync(c, t + 1, N * 4, 0));
        // pageable source: overwritten as soon as the call returns
        for (int j = 0; j < N; ++j) pageable[j] = hsh(seed + 1u, (unsigned)j) & 0xffffu;
        CK(cudaMemcpyAsync(d, pageable.data(), N * 4, cudaMemcpyHostToDevice, cudaStreamPerThread));
        for (int j = 0; j < N; ++j) pageable[j] = 0xDEADBEEFu;
        kMix<<<GRID, TPB>>>(b, c, d, (unsigned)i);
        CK(cudaGetLastError());
        CK(cudaMemcpyAsync(g_ring[t] + (size_t)i * N, b, N * 4, cudaMemcpyDeviceToHost, 0));

        // (a) shared array, chained by the shared event under the mutex
        {
            std::lock_guard<std::mutex> g(g_mu);
            CK(cudaStreamWaitEvent(cudaStreamPerThread, g_ev, 0));  // first time: never recorded, a no-op
            kRMW<<<NS / TPB, TPB>>>(g_shared, rmw_val(t, i));
            CK(cudaGetLastError());
            CK(cudaEventRecord(g_ev, 0));
        }

        // (b) barrier phase
        if (i % 8 == 7) {
            kSlot<<<1, SLOTS>>>(g_slots, t, slot_val(t, i));
            CK(cudaGetLastError());
            pthread_barrier_wait(&g_bar);
            if (t == 0) {
                CK(cudaDeviceSynchronize());
                CK(cudaMemcpy(hslots.data(), g_slots, T * SLOTS * 4, cudaMemcpyDeviceToHost));
                for (int u = 0; u < T; ++u)
                    for (int k = 0; k < SLOTS; ++k)
                        if (hslots[u * SLOTS + k] != hsh(slot_val(u, i), (unsigned)k)) {
                            failf("iter %d: slot of thread %d [%d] = %08x, want %08x", i, u, k,
                                  hslots[u * SLOTS + k], hsh(slot_val(u, i), (unsigned)k));
                            k = SLOTS;
                        }
            }
            pthread_barrier_wait(&g_bar);
        }
    }
    CK(cudaStreamSynchronize(0));
    CK(cudaFree(a)); CK(cudaFree(b)); CK(cudaFree(c)); CK(cudaFree(d));
}

int main() {
    CK(cudaSetDevice(0));
    CK(cudaFree(0));
    CK(cudaMalloc(&g_shared, NS * 4));
    CK(cudaMalloc(&g_slots, T * SLOTS * 4));
    CK(cudaMemset(g_shared, 0, NS * 4));
    CK(cudaMemset(g_slots, 0, T * SLOTS * 4));
    CK(cudaEventCreateWithFlags(&g_ev, cudaEventDisableTiming));
    for (int t = 0; t < T; ++t) {
        CK(cudaMallocHost(&g_ring[t], (size_t)ITERS * N * 4));
        memset(g_ring[t], 0xAB, (size_t)ITERS * N * 4);
    }
    CK(cudaDeviceSynchronize());
    pthread_barrier_init(&g_bar, nullptr, T);

    std::vector<std::thread> th;
    for (int t = 0; t < T; ++t) th.emplace_back(worker, t);
    for (auto &x : th) x.join();
    CK(cudaDeviceSynchronize());
    CK(cudaGetLastError());

    // per-thread results, in thread order
    for (int t = 0; t < T; ++t) {
        std::vector<unsigned> a(N), b(N);
        for (int i = 0; i < ITERS; ++i) {
            unsigned seed = hsh((unsigned)t, (unsigned)i);
            const unsigned *got = g_ring[t] + (size_t)i * N;
            bool bad = false;
            for (int j = 0; j < N; ++j) {
                unsigned av = hsh(seed, (unsigned)j);
                unsigned bv = av * (3u + 2u * t) + (unsigned)i;
                unsigned cv = 0x01010101u * (unsigned)(t + 1);
                unsigned dv = hsh(seed + 1u, (unsigned)j) & 0xffffu;
                unsigned want = (bv ^ cv) + dv + (unsigned)i * (unsigned)j;
                if (!bad && got[j] != want) {
                    failf("thread %d iter %d: b[%d] = %08x, want %08x", t, i, j, got[j], want);
                    bad = true;
                }
                mix(got[j]);
            }
        }
    }
    // shared array: order-free sum of every update
    std::vector<unsigned> hs(NS);
    CK(cudaMemcpy(hs.data(), g_shared, NS * 4, cudaMemcpyDeviceToHost));
    unsigned total = 0;
    for (int t = 0; t < T; ++t)
        for (int i = 0; i < ITERS; ++i) total += rmw_val(t, i);
    for (int j = 0; j < NS; ++j) {
        unsigned want = total + (unsigned)(T * ITERS) * (unsigned)j;
        if (hs[j] != want) { failf("shared[%d] = %08x, want %08x (lost update)", j, hs[j], want); break; }
    }
    for (int j = 0; j < NS; ++j) mix(hs[j]);

    pthread_barrier_destroy(&g_bar);
    CK(cudaEventDestroy(g_ev));
    for (int t = 0; t < T; ++t) CK(cudaFreeHost(g_ring[t]));
    return finish("ptds_threads");
}
