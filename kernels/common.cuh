// kernels/common.cuh: helpers shared by every GPU workload and scenario program:
// error checks, strict argument parsing, seeded inputs, output hashing, timing lines.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

// A failing call ends the program: a workload that goes on after an error
// would print a hash that means nothing, and the tests compare hashes.
#define CK(call)                                                                  \
    do {                                                                          \
        cudaError_t ck_err_ = (call);                                             \
        if (ck_err_ != cudaSuccess) {                                             \
            fprintf(stderr, "%s:%d: %s: %s (%s)\n", __FILE__, __LINE__, #call,    \
                    cudaGetErrorName(ck_err_), cudaGetErrorString(ck_err_));      \
            exit(2);                                                              \
        }                                                                         \
    } while (0)

// Launch errors surface only through cudaGetLastError; checking after every
// launch also proves a deferring layer still reports success for deferred work.
#define CK_LAUNCH() CK(cudaGetLastError())

// ---------------------------------------------------------------------------
// Arguments: "--name value" and "--flag". Every argument must be consumed, so a
// typo in the bench or test scripts fails loudly instead of running defaults.
struct Args {
    int argc;
    char **argv;
    std::vector<bool> used;

    Args(int c, char **v) : argc(c), argv(v), used(c, false) { used[0] = true; }

    int find(const char *name) {
        for (int i = 1; i < argc; i++)
            if (strcmp(argv[i], name) == 0) return i;
        return -1;
    }
    bool flag(const char *name) {
        int i = find(name);
        if (i < 0) return false;
        used[i] = true;
        return true;
    }
    const char *str(const char *name, const char *def) {
        int i = find(name);
        if (i < 0) return def;
        if (i + 1 >= argc) {
            fprintf(stderr, "option %s needs a value\n", name);
            exit(64);
        }
        used[i] = used[i + 1] = true;
        return argv[i + 1];
    }
    long long num(const char *name, long long def) {
        const char *s = str(name, nullptr);
        if (!s) return def;
        char *end = nullptr;
        long long v = strtoll(s, &end, 0);
        if (end == s || *end != '\0') {
            fprintf(stderr, "option %s: '%s' is not an integer\n", name, s);
            exit(64);
        }
        return v;
    }
    // The first unconsumed word that is not an option (scenario name, mode).
    const char *positional(const char *def) {
        for (int i = 1; i < argc; i++)
            if (!used[i] && argv[i][0] != '-') {
                used[i] = true;
                return argv[i];
            }
        return def;
    }
    void finish() {
        for (int i = 1; i < argc; i++)
            if (!used[i]) {
                fprintf(stderr, "unknown argument '%s'\n", argv[i]);
                exit(64);
            }
    }
};

// ---------------------------------------------------------------------------
// Seeded inputs: splitmix64, so results do not depend on the C library's rand().
struct Rng {
    uint64_t s;
    explicit Rng(uint64_t seed) : s(seed) {}
    uint64_t next() {
        uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    }
    // Uniform in [lo, hi).
    float uni(float lo, float hi) {
        return lo + (hi - lo) * (float)((next() >> 40) * (1.0 / 16777216.0));
    }
    void fill(float *p, size_t n, float lo, float hi) {
        for (size_t i = 0; i < n; i++) p[i] = uni(lo, hi);
    }
};

// Device-side counterpart for buffers too large to fill from the host.
__device__ __forceinline__ float dev_hash_uniform(uint64_t seed, uint64_t i) {
    uint64_t z = seed + (i + 1) * 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return (float)((z >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
}

__global__ void k_fill_random(float *p, size_t n, uint64_t seed) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = dev_hash_uniform(seed, i);
}

static inline void fill_random_device(float *d, size_t n, uint64_t seed, cudaStream_t s) {
    k_fill_random<<<1024, 256, 0, s>>>(d, n, seed);
    CK_LAUNCH();
}

static inline float *upload_random(size_t n, uint64_t seed, float lo, float hi) {
    std::vector<float> h(n);
    Rng r(seed);
    r.fill(h.data(), n, lo, hi);
    float *d = nullptr;
    CK(cudaMalloc(&d, n * sizeof(float)));
    CK(cudaMemcpy(d, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    // A copy from pageable memory returns once its bytes are staged, and work on a
    // non-blocking stream is not ordered after it: wait for it to land.
    CK(cudaDeviceSynchronize());
    return d;
}

// ---------------------------------------------------------------------------
// Output digest: 64-bit FNV-1a over the bytes of every output buffer, in order.
// Buffers above 64 MiB are cut into 16 MiB chunks hashed on several threads and
// the chunk digests are fed to the running hash; a byte-serial FNV over
// gigabytes would take seconds per run.
static inline uint64_t fnv1a_bytes(uint64_t h, const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

struct Digest {
    uint64_t h = 0xcbf29ce484222325ULL;

    void add(const void *p, size_t n) {
        const unsigned char *b = (const unsigned char *)p;
        const size_t big = (size_t)64 << 20, chunk = (size_t)16 << 20;
        if (n <= big) {
            h = fnv1a_bytes(h, b, n);
            return;
        }
        size_t nchunks = (n + chunk - 1) / chunk;
        std::vector<uint64_t> part(nchunks);
        unsigned nt = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
        std::vector<std::thread> th;
        for (unsigned t = 0; t < nt; t++)
            th.emplace_back([&, t] {
                for (size_t c = t; c < nchunks; c += nt) {
                    size_t off = c * chunk, len = std::min(chunk, n - off);
                    part[c] = fnv1a_bytes(0xcbf29ce484222325ULL, b + off, len);
                }
            });
        for (auto &t : th) t.join();
        h = fnv1a_bytes(h, (const unsigned char *)part.data(), nchunks * sizeof(uint64_t));
    }
    template <class T> void add_vec(const std::vector<T> &v) { add(v.data(), v.size() * sizeof(T)); }
    // Copies a device buffer back with a blocking cudaMemcpy: the digest is taken
    // after the timed part, so the copy's cost does not matter.
    void add_device(const void *d, size_t n) {
        std::vector<unsigned char> h_(n);
        CK(cudaMemcpy(h_.data(), d, n, cudaMemcpyDeviceToHost));
        add(h_.data(), n);
    }
};

static inline float read_device_float(const float *d, size_t i) {
    float v;
    CK(cudaMemcpy(&v, d + i, sizeof v, cudaMemcpyDeviceToHost));
    return v;
}

// One stdout line per result: the digest and a few values in %a, so two runs
// compare byte for byte and a difference is readable without a debugger.
static inline void print_result(const char *name, const Digest &d, const std::vector<double> &vals) {
    printf("%s hash=%016" PRIx64, name, d.h);
    for (size_t i = 0; i < vals.size(); i++) printf(" v%zu=%a", i, vals[i]);
    printf("\n");
    fflush(stdout);
}

// ---------------------------------------------------------------------------
// Timing: host clock around a loop bracketed by cudaDeviceSynchronize, so the
// CPU cost of submitting work (what cgraft removes) is inside the measure.
static inline double now_us() {
    return std::chrono::duration<double, std::micro>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

static inline double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct TimingPlan {
    long warmup, repeats, iters;
    static TimingPlan from(Args &a, long warmup, long repeats, long iters) {
        TimingPlan p;
        p.warmup = a.num("--warmup", warmup);
        p.repeats = a.num("--repeats", repeats);
        p.iters = a.num("--iters", iters);
        if (p.warmup < 0 || p.repeats < 1 || p.iters < 1) {
            fprintf(stderr, "need --warmup >= 0, --repeats >= 1, --iters >= 1\n");
            exit(64);
        }
        return p;
    }
    long total() const { return warmup + repeats * iters; }
};

// Runs body(global_iteration) warmup + repeats*iters times and prints
// "TIME us_per_iter=<median> min=<> max=<> repeats=<> iters=<> host_us_per_iter=<>"
// on stderr; host_us_per_iter is the median time the loop itself took, before
// its final synchronisation: the host's cost of submitting an iteration where
// the device keeps up (with a queue deep enough, it never waits).
// The iteration index runs on across repeats, so the final state (and hash)
// depends only on total(), never on how it was split.
template <class F> static double run_timed(const TimingPlan &p, F body) {
    long it = 0;
    for (long i = 0; i < p.warmup; i++) body(it++);
    std::vector<double> per_iter, host;
    for (long r = 0; r < p.repeats; r++) {
        CK(cudaDeviceSynchronize());
        double t0 = now_us();
        for (long i = 0; i < p.iters; i++) body(it++);
        host.push_back((now_us() - t0) / (double)p.iters);
        CK(cudaDeviceSynchronize());
        per_iter.push_back((now_us() - t0) / (double)p.iters);
    }
    double med = median(per_iter);
    fprintf(stderr, "TIME us_per_iter=%.3f min=%.3f max=%.3f repeats=%ld iters=%ld host_us_per_iter=%.3f\n", med,
            *std::min_element(per_iter.begin(), per_iter.end()),
            *std::max_element(per_iter.begin(), per_iter.end()), p.repeats, p.iters, median(host));
    return med;
}

enum class Mode { eager, graph };

static inline Mode parse_mode(Args &a, bool graph_ok) {
    const char *m = a.str("--mode", "eager");
    if (strcmp(m, "eager") == 0) return Mode::eager;
    if (strcmp(m, "graph") == 0 && graph_ok) return Mode::graph;
    fprintf(stderr, "--mode: '%s' is not one of: eager%s\n", m, graph_ok ? ", graph" : "");
    exit(64);
}

static inline int blocks_for(long n, int threads) { return (int)((n + threads - 1) / threads); }
