// kernels/class_common.cuh: what the runtime-linked class programs (class_*.cu) share:
// launch wrappers for the class kernels, initialised buffers, the --iters option, a
// watchdog against hangs, and digest printers in common.cuh's format.
#pragma once

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "class_kernels.cuh"
#include "common.cuh"

// A condition the program itself checks (not a CUDA return code) failed.
#define FAIL(...)                         \
    do {                                  \
        fprintf(stderr, __VA_ARGS__);     \
        fputc('\n', stderr);              \
        exit(1);                          \
    } while (0)

static const int CL_N = 4096;  // floats in a buffer unless a program says otherwise
static const int CL_T = 128;   // threads per block of the element-wise kernels
static inline unsigned cl_grid(int n) { return (unsigned)((n + CL_T - 1) / CL_T); }

static inline void axpb(cudaStream_t s, float *y, float m, float b, int n) {
    k_axpb<<<cl_grid(n), CL_T, 0, s>>>(y, m, b, n);
    CK_LAUNCH();
}
static inline void acc(cudaStream_t s, float *d, const float *src, float m, int n) {
    k_acc<<<cl_grid(n), CL_T, 0, s>>>(d, src, m, n);
    CK_LAUNCH();
}
static inline void mix(cudaStream_t s, float *d, const float *x, const float *y, int n) {
    k_mix<<<cl_grid(n), CL_T, 0, s>>>(d, x, y, n);
    CK_LAUNCH();
}
static inline void sq(cudaStream_t s, float *y, int n) {
    k_sq<<<cl_grid(n), CL_T, 0, s>>>(y, n);
    CK_LAUNCH();
}
static inline void reduce(cudaStream_t s, float *out, const float *x, int n) {
    k_reduce<<<1, 256, 0, s>>>(out, x, n);
    CK_LAUNCH();
}

// base + i / 100, uploaded with a blocking copy.
static inline float *dev_init(size_t n, float base) {
    std::vector<float> h(n);
    for (size_t i = 0; i < n; i++) h[i] = base + (float)i * 0.01f;
    float *d = nullptr;
    CK(cudaMalloc(&d, n * sizeof(float)));
    CK(cudaMemcpy(d, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    // A copy from pageable memory returns once its bytes are staged, and work on a
    // non-blocking stream is not ordered after it: wait for it to land.
    CK(cudaDeviceSynchronize());
    return d;
}

static inline void print_host(const char *name, const float *h, size_t n) {
    Digest d;
    d.add(h, n * sizeof(float));
    std::vector<double> vals;
    if (n) vals = {h[0], h[n / 2], h[n - 1]};
    print_result(name, d, vals);
}

// Copies a device buffer back with a blocking cudaMemcpy and prints its digest.
static inline void print_dev(const char *name, const float *d, size_t n) {
    std::vector<float> h(n);
    CK(cudaMemcpy(h.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost));
    print_host(name, h.data(), n);
}

// A hang ends as a failure that says so, well before the test runner's timeout.
static const int CL_WATCHDOG_S = 60;
static inline void class_watchdog(const char *prog) {
    std::thread([prog] {
        std::this_thread::sleep_for(std::chrono::seconds(CL_WATCHDOG_S));
        fprintf(stderr, "TIMEOUT: %s still running after %d s\n", prog, CL_WATCHDOG_S);
        _exit(1);
    }).detach();
}

// The start of every class program: "--iters N" (the repeating part's length,
// nothing else on the command line) and the watchdog.
static inline long class_start(int argc, char **argv, long def, long min) {
    Args a(argc, argv);
    long n = a.num("--iters", def);
    a.finish();
    if (n < min) {
        fprintf(stderr, "usage: %s [--iters N], N >= %ld\n", argv[0], min);
        exit(64);
    }
    class_watchdog(argv[0]);
    return n;
}

// A second host thread that runs work(it) for each turn the main thread hands it, one at a
// time: run(it) returns once work(it) has, so what work wrote is the caller's to read. The
// thread ends with the object.
class Turns {
  public:
    template <class F> explicit Turns(F work) : t_([this, work] { serve(work); }) {}
    Turns(const Turns &) = delete;
    Turns &operator=(const Turns &) = delete;
    ~Turns() {
        {
            std::lock_guard<std::mutex> l(mu_);
            quit_ = true;
        }
        cv_.notify_all();
        t_.join();
    }
    void run(long it) {
        {
            std::lock_guard<std::mutex> l(mu_);
            turn_ = it;
        }
        cv_.notify_all();
        std::unique_lock<std::mutex> l(mu_);
        cv_.wait(l, [&] { return done_ == it; });
    }

  private:
    template <class F> void serve(F work) {
        for (;;) {
            long it;
            {
                std::unique_lock<std::mutex> l(mu_);
                cv_.wait(l, [&] { return quit_ || turn_ > done_; });
                if (quit_ && turn_ == done_) return;
                it = turn_;
            }
            work(it);
            {
                std::lock_guard<std::mutex> l(mu_);
                done_ = it;
            }
            cv_.notify_all();
        }
    }
    std::mutex mu_;
    std::condition_variable cv_;
    long turn_ = -1, done_ = -1;
    bool quit_ = false;
    std::thread t_;  // last: it starts once the members it uses are made
};
