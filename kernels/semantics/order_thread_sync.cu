// thread_sync: one host thread issues GPU work, ANOTHER host thread waits for
// it through a CUDA call and then reads the results.  The only host-side tie
// is a mutex/condition variable turn counter that the producer advances after
// all its calls of the turn have returned; it then makes no CUDA call until
// its next turn.  Roles alternate every turn; one device accumulator is
// chained through every turn of every phase (60 turns each):
//  (a) producer: kernels + D2H into pinned memory on its non-blocking stream;
//      consumer: cudaStreamSynchronize(that stream), reads the pinned buffer.
//  (b) producer also records an event; consumer cudaEventSynchronize, or polls
//      cudaEventQuery (bounded) until cudaSuccess.
//  (c) producer: work on its non-blocking AND its blocking stream; consumer:
//      cudaDeviceSynchronize, reads both results.
//  (d) producer: kernels on a BLOCKING stream, no copy; consumer: a plain
//      cudaMemcpy D2H on the legacy default stream (after a legacy-stream
//      kernel every third time), which must wait for the earlier-issued
//      blocking-stream work (implicit synchronisation, no explicit sync).
//  (e) consumer: cudaStreamWaitEvent on its OWN stream for the producer's
//      event, a kernel consuming the producer's output, D2H, syncs its stream.
// An interposer that holds work back per thread or per stream and flushes it
// only on the issuing thread's own calls leaves the waiting thread a stale
// buffer (every value depends on the turn's seed and the accumulator, pinned
// buffers are poisoned after each check), binds a wait to an older event
// record, or never completes: every host wait is bounded (10 s).
#if defined(CUDA_API_PER_THREAD_DEFAULT_STREAM)
#error "order_thread_sync needs the legacy default stream (no --default-stream per-thread)"
#endif
#include <chrono>
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

static const int N = 4096, TPB = 256, GRID = N / TPB, ITERS = 60, PHASES = 5;
static const long long SLOW = 100000;  // ~50 us in kGen: a wait that returns early reads too soon
static const unsigned POISON = 0xEEEEEEEEu;
static const char PH[PHASES + 1] = "abcde";

__global__ void kGen(unsigned *a, unsigned seed, long long slow) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    spin_cycles(slow);
    a[j] = hsh(seed, (unsigned)j);
}
__global__ void kAcc(unsigned *acc, unsigned *out, const unsigned *a, unsigned k) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned v = acc[j] * 3u + a[j] + k;
    acc[j] = v;
    out[j] = v ^ (k * 0x01000193u);
}
__global__ void kConsume(unsigned *c, const unsigned *out, unsigned k) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    c[j] = out[j] * 5u + hsh(k, (unsigned)j);
}

// per thread t (index 0/1): created by thread t itself
static cudaStream_t g_ns[2], g_bs[2];  // non-blocking, blocking (cudaStreamCreate)
static cudaEvent_t g_ev[2];
static unsigned *g_a[2], *g_out[2], *g_aux[2], *g_cons[2];  // device
static unsigned *g_hres[2], *g_haux[2], *g_hcons[2];        // pinned
static unsigned *g_acc;                                      // device, shared by both threads
static std::vector<unsigned> g_ref;  // host model of g_acc: touched only by the consumer of the turn

static unsigned seed_of(int g) { return hsh(0x5EEDu, (unsigned)g); }
static unsigned k_of(int g) { return hsh(0xC0DEu, (unsigned)g) | 1u; }
static unsigned aux_of(int g) { return hsh(0xA0Au, (unsigned)g); }

[[noreturn]] static void fatal(int g, const char *what) {
    failf("turn %d: %s: no progress in 10 s", g, what);
    finish("thread_sync");
    fflush(stdout);
    std::_Exit(1);
}

// turn counter: 0,1 = resource creation by thread 0, 1; then turn g is
// producer's at 2+2g, consumer's at 3+2g.
static std::mutex g_mu;
static std::condition_variable g_cv;
static int g_state = 0;
static void wait_state(int want, int g, const char *what) {
    std::unique_lock<std::mutex> lk(g_mu);
    if (!g_cv.wait_for(lk, std::chrono::seconds(10), [&] { return g_state == want; })) {
        lk.unlock();
        fatal(g, what);
    }
}
static void set_state(int v) {
    { std::lock_guard<std::mutex> lk(g_mu); g_state = v; }
    g_cv.notify_all();
}

static void poll_event(cudaEvent_t ev, int g) {
    auto dl = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (;;) {
        cudaError_t e = cudaEventQuery(ev);
        if (e == cudaSuccess) break;
        if (e != cudaErrorNotReady) CK(e);
        if (std::chrono::steady_clock::now() > dl) fatal(g, "cudaEventQuery never returned cudaSuccess");
        std::this_thread::yield();
    }
    // cudaErrorNotReady is not an error; whether it is kept as the thread's
    // last error or not, clear it the same way
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess && e != cudaErrorNotReady) CK(e);
}

// compare N words, report the first difference, fold all into the digest
static void check(int g, int t, const char *what, const unsigned *got, const unsigned *want) {
    for (int j = 0; j < N; ++j)
        if (got[j] != want[j]) {
            failf("phase %c turn %d (consumer thread %d): %s[%d] = %08x, want %08x",
                  PH[g / ITERS], g % ITERS, t, what, j, got[j], want[j]);
            break;
        }
    for (int j = 0; j < N; ++j) mix(got[j]);
}

static void gen_acc(int t, int g, cudaStream_t s) {
    kGen<<<GRID, TPB, 0, s>>>(g_a[t], seed_of(g), SLOW);
    CK(cudaGetLastError());
    kAcc<<<GRID, TPB, 0, s>>>(g_acc, g_out[t], g_a[t], k_of(g));
    CK(cudaGetLastError());
}

static void produce(int t, int g) {
    int ph = g / ITERS;
    if (ph == 3) {  // (d): blocking stream only, nothing copied back
        gen_acc(t, g, g_bs[t]);
        return;
    }
    gen_acc(t, g, g_ns[t]);
    CK(cudaMemcpyAsync(g_hres[t], g_out[t], N * 4, cudaMemcpyDeviceToHost, g_ns[t]));
    if (ph == 1 || ph == 4) CK(cudaEventRecord(g_ev[t], g_ns[t]));
    if (ph == 2) {  // (c): independent work on the blocking stream too
        kGen<<<GRID, TPB, 0, g_bs[t]>>>(g_aux[t], aux_of(g), SLOW);
        CK(cudaGetLastError());
        CK(cudaMemcpyAsync(g_haux[t], g_aux[t], N * 4, cudaMemcpyDeviceToHost, g_bs[t]));
    }
}

static void consume(int t, int g, std::vector<unsigned> &page) {
    int ph = g / ITERS, i = g % ITERS, p = 1 - t;
    unsigned seed = seed_of(g), k = k_of(g);
    // host reference of this turn's accumulator step
    std::vector<unsigned> want(N), wcons(N);
    for (int j = 0; j < N; ++j) {
        unsigned v = g_ref[j] * 3u + hsh(seed, (unsigned)j) + k;
        g_ref[j] = v;
        want[j] = v ^ (k * 0x01000193u);
        wcons[j] = want[j] * 5u + hsh(k, (unsigned)j);
    }
    switch (ph) {
    case 0:  // (a)
        CK(cudaStreamSynchronize(g_ns[p]));
        check(g, t, "pinned result after cudaStreamSynchronize", g_hres[p], want.data());
        break;
    case 1:  // (b)
        if ((i / 2) % 2 == 0) CK(cudaEventSynchronize(g_ev[p]));
        else poll_event(g_ev[p], g);
        check(g, t, (i / 2) % 2 == 0 ? "pinned result after cudaEventSynchronize"
                                     : "pinned result after cudaEventQuery", g_hres[p], want.data());
        break;
    case 2: {  // (c)
        CK(cudaDeviceSynchronize());
        check(g, t, "pinned result (non-blocking stream) after cudaDeviceSynchronize", g_hres[p], want.data());
        std::vector<unsigned> waux(N);
        for (int j = 0; j < N; ++j) waux[j] = hsh(aux_of(g), (unsigned)j);
        check(g, t, "pinned aux (blocking stream) after cudaDeviceSynchronize", g_haux[p], waux.data());
        for (int j = 0; j < N; ++j) g_haux[p][j] = POISON;
        break;
    }
    case 3: {  // (d): legacy default stream, no explicit sync
        int v = (i / 2) % 3;
        if (v == 0) {
            for (int j = 0; j < N; ++j) page[j] = POISON;
            CK(cudaMemcpy(page.data(), g_out[p], N * 4, cudaMemcpyDeviceToHost));
            check(g, t, "legacy cudaMemcpy to pageable", page.data(), want.data());
        } else if (v == 1) {
            CK(cudaMemcpy(g_hres[t], g_out[p], N * 4, cudaMemcpyDeviceToHost));
            check(g, t, "legacy cudaMemcpy to pinned", g_hres[t], want.data());
            for (int j = 0; j < N; ++j) g_hres[t][j] = POISON;
        } else {
            kConsume<<<GRID, TPB>>>(g_cons[t], g_out[p], k);  // legacy stream
            CK(cudaGetLastError());
            CK(cudaMemcpy(g_hcons[t], g_cons[t], N * 4, cudaMemcpyDeviceToHost));
            for (int j = 0; j < N; ++j) page[j] = POISON;
            CK(cudaMemcpy(page.data(), g_out[p], N * 4, cudaMemcpyDeviceToHost));
            check(g, t, "legacy kernel then cudaMemcpy", g_hcons[t], wcons.data());
            check(g, t, "legacy cudaMemcpy after legacy kernel", page.data(), want.data());
            for (int j = 0; j < N; ++j) g_hcons[t][j] = POISON;
        }
        return;  // nothing of the producer's pinned buffer was used
    }
    case 4:  // (e)
        CK(cudaStreamWaitEvent(g_ns[t], g_ev[p], 0));
        kConsume<<<GRID, TPB, 0, g_ns[t]>>>(g_cons[t], g_out[p], k);
        CK(cudaGetLastError());
        CK(cudaMemcpyAsync(g_hcons[t], g_cons[t], N * 4, cudaMemcpyDeviceToHost, g_ns[t]));
        CK(cudaStreamSynchronize(g_ns[t]));
        check(g, t, "consumer kernel after cudaStreamWaitEvent", g_hcons[t], wcons.data());
        // the waited event covered the producer's copy as well
        check(g, t, "producer's pinned result after own-stream sync", g_hres[p], want.data());
        for (int j = 0; j < N; ++j) g_hcons[t][j] = POISON;
        break;
    }
    for (int j = 0; j < N; ++j) g_hres[p][j] = POISON;
}

static void worker(int t) {
    CK(cudaSetDevice(0));
    wait_state(t, -1, "start");
    CK(cudaStreamCreateWithFlags(&g_ns[t], cudaStreamNonBlocking));
    CK(cudaStreamCreate(&g_bs[t]));
    CK(cudaEventCreateWithFlags(&g_ev[t], cudaEventDisableTiming));
    CK(cudaMalloc(&g_a[t], N * 4)); CK(cudaMalloc(&g_out[t], N * 4));
    CK(cudaMalloc(&g_aux[t], N * 4)); CK(cudaMalloc(&g_cons[t], N * 4));
    CK(cudaMallocHost(&g_hres[t], N * 4)); CK(cudaMallocHost(&g_haux[t], N * 4));
    CK(cudaMallocHost(&g_hcons[t], N * 4));
    for (int j = 0; j < N; ++j) g_hres[t][j] = g_haux[t][j] = g_hcons[t][j] = POISON;
    CK(cudaDeviceSynchronize());
    set_state(t + 1);

    std::vector<unsigned> page(N);
    for (int g = 0; g < PHASES * ITERS; ++g) {
        if (g % 2 == t) {  // producer
            wait_state(2 + 2 * g, g, "producer waiting for its turn");
            produce(t, g);
            set_state(3 + 2 * g);  // every call of the turn has returned
        } else {           // consumer
            wait_state(3 + 2 * g, g, "consumer waiting for the producer");
            consume(t, g, page);
            set_state(4 + 2 * g);
        }
    }
}

int main() {
    CK(cudaSetDevice(0));
    CK(cudaFree(0));
    CK(cudaMalloc(&g_acc, N * 4));
    CK(cudaMemset(g_acc, 0, N * 4));
    CK(cudaDeviceSynchronize());
    g_ref.assign(N, 0u);

    std::thread th0(worker, 0), th1(worker, 1);
    th0.join(); th1.join();
    CK(cudaDeviceSynchronize());
    CK(cudaGetLastError());

    // the accumulator after all turns, read back on the main thread
    std::vector<unsigned> acc(N);
    CK(cudaMemcpy(acc.data(), g_acc, N * 4, cudaMemcpyDeviceToHost));
    for (int j = 0; j < N; ++j)
        if (acc[j] != g_ref[j]) { failf("final ACC[%d] = %08x, want %08x", j, acc[j], g_ref[j]); break; }
    for (int j = 0; j < N; ++j) mix(acc[j]);
    mix((uint64_t)g_state);

    for (int t = 0; t < 2; ++t) {
        CK(cudaStreamDestroy(g_ns[t])); CK(cudaStreamDestroy(g_bs[t])); CK(cudaEventDestroy(g_ev[t]));
        CK(cudaFree(g_a[t])); CK(cudaFree(g_out[t])); CK(cudaFree(g_aux[t])); CK(cudaFree(g_cons[t]));
        CK(cudaFreeHost(g_hres[t])); CK(cudaFreeHost(g_haux[t])); CK(cudaFreeHost(g_hcons[t]));
    }
    CK(cudaFree(g_acc));
    return finish("thread_sync");
}
