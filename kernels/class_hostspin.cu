// kernels/class_hostspin.cu: the host waits for the device without any CUDA call. Each
// iteration it spins on a flag a kernel writes into mapped pinned memory (cudaHostAlloc) and
// into cudaHostRegister'ed memory, launches a host function that waits for a condition the
// host signals right after the launch, and spins on a flag a second host function sets.
// Work held back by an interposer never arrives: every wait gives up after 10 s, and a spin
// that gives up prints TIMEOUT and exits 1.
#include <chrono>
#include <condition_variable>
#include <mutex>

#include "class_common.cuh"

static const int N = 4096;
static const double WAIT_S = 10.0;

__global__ void k_flag(volatile int *f, int v) {
    __threadfence_system();
    *f = v;
    __threadfence_system();
}

static void set_flag(cudaStream_t s, int *f, int v) {
    k_flag<<<1, 1, 0, s>>>(f, v);
    CK_LAUNCH();
}

static double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

static void spin(const int *p, int v, const char *what, long it) {
    auto t0 = std::chrono::steady_clock::now();
    while (__atomic_load_n(p, __ATOMIC_ACQUIRE) != v)
        if (seconds_since(t0) > WAIT_S) {
            printf("TIMEOUT iteration %ld: %s never became %d (is %d)\n", it, what, v,
                   __atomic_load_n(p, __ATOMIC_ACQUIRE));
            fflush(stdout);
            fprintf(stderr, "hostspin: TIMEOUT at iteration %ld waiting for %s\n", it, what);
            exit(1);
        }
}

static std::mutex mu;
static std::condition_variable cv;
static long go;          // the iteration the host has signalled, plus one
static int timeouts;     // host functions that gave up waiting
static int host_done;    // set by mark_done, read by the spinning host
static std::vector<long> seen;

// Runs in the driver's callback thread: waits for the host's signal of this iteration.
static void CUDART_CB wait_go(void *p) {
    long it = *(long *)p;
    std::unique_lock<std::mutex> l(mu);
    if (!cv.wait_for(l, std::chrono::duration<double>(WAIT_S), [&] { return go >= it + 1; })) timeouts++;
    seen[it] = go;
}

static void CUDART_CB mark_done(void *p) {
    __atomic_store_n(&host_done, (int)(*(long *)p + 1), __ATOMIC_RELEASE);
}

int main(int argc, char **argv) {
    long iters = class_start(argc, argv, 40, 6);
    seen.assign(iters, -1);
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    int *mapped, *dmapped, *dreg;
    const size_t page = 4096;
    int *reg = (int *)aligned_alloc(page, page);
    if (!reg) FAIL("out of host memory");
    memset(reg, 0, page);
    CK(cudaHostAlloc(&mapped, sizeof(int), cudaHostAllocMapped));
    CK(cudaHostGetDevicePointer((void **)&dmapped, mapped, 0));
    CK(cudaHostRegister(reg, page, cudaHostRegisterMapped));
    CK(cudaHostGetDevicePointer((void **)&dreg, reg, 0));
    *mapped = 0;
    float *y = dev_init(N, 0.5f), *z = dev_init(N, 0.0f);
    std::vector<float> log, h(N);
    std::vector<long> its(iters);
    for (long it = 0; it < iters; it++) {
        its[it] = it;
        axpb(s, y, 0.9f, 0.1f, N);
        sq(s, y, N);
        set_flag(s, dmapped, (int)it + 1);
        spin(mapped, (int)it + 1, "the flag in mapped pinned memory", it);
        acc(s, z, y, 0.5f, N);
        set_flag(s, dreg, (int)it + 1);
        spin(reg, (int)it + 1, "the flag in registered memory", it);
        CK(cudaLaunchHostFunc(s, wait_go, &its[it]));
        {
            std::lock_guard<std::mutex> l(mu);
            go = it + 1;
        }
        cv.notify_all();
        axpb(s, z, 1.0f, 0.01f, N);
        CK(cudaLaunchHostFunc(s, mark_done, &its[it]));
        spin(&host_done, (int)it + 1, "the host function's flag", it);
        if (it % 6 == 5) {
            CK(cudaMemcpyAsync(h.data(), z, N * sizeof(float), cudaMemcpyDeviceToHost, s));
            CK(cudaStreamSynchronize(s));
            log.push_back(h[it] + h[N - 1]);
        }
    }
    CK(cudaStreamSynchronize(s));
    bool ok = true;
    for (long it = 0; it < iters; it++) ok &= seen[it] == it + 1;
    printf("flags mapped=%d registered=%d host=%d waits-ok=%d timeouts=%d\n", *mapped, *reg, host_done, (int)ok,
           timeouts);
    print_host("log", log.data(), log.size());
    print_dev("y", y, N);
    print_dev("z", z, N);
    CK(cudaHostUnregister(reg));
    CK(cudaFreeHost(mapped));
    free(reg);
    CK(cudaFree(y));
    CK(cudaFree(z));
    CK(cudaStreamDestroy(s));
    return 0;
}
