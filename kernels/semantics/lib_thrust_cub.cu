// thrust_cub: the loop of a program built on Thrust and CUB (the toolkit's
// CCCL headers), calling them as such programs do.  Every iteration:
//  - our kernel writes the iteration's integers (hsh of the seed and index,
//    14 bits) into a thrust::device_vector made in the loop (cudaMalloc, a
//    fill on the default stream and its sync inside the library; cudaFree at
//    the end of the iteration).  A block of 8 iterations has one of four
//    sizes, so sizes, shapes and addresses recur and sometimes grow;
//  - Thrust on a non-blocking stream (par.on(s), par_nosync.on(s)) or, every
//    4th iteration, on the default stream (thrust::device, par_nosync):
//    transform into a vector kept across iterations and resize()d (it grows
//    when the size does) and inclusive_scan, both without a sync (the scan's
//    temporary from cudaMallocAsync/cudaFreeAsync), then blocking calls with
//    temporaries from cudaMalloc/cudaFree: reduce (the library reads its
//    result back), sort_by_key (unique keys), copy_if with the count it
//    returns sizing a transform_reduce, unique, count_if;
//  - CUB on the same stream with the two-call temp storage pattern:
//    DeviceReduce::Sum and ::Max, DeviceScan::ExclusiveSum,
//    DeviceRadixSort::SortPairs (20- or 32-bit keys, end_bit to match),
//    DeviceSelect::Flagged, reading the vector Thrust used; temp storage from
//    cudaMallocAsync/cudaFreeAsync on the stream in some blocks (each free's
//    memory is the next allocation's), from one buffer kept across
//    iterations (grown when a size needs more) in others; num_selected
//    copied into poisoned pinned memory and waited for, then that many
//    selected items and every other output copied back.
// Every result is checked exactly against the host's (integer arithmetic);
// the first wrong one ends the program.  The next seed, the copy_if
// threshold and the flag density follow from the sums and counts read back,
// and at the end of each block they choose the next size, temp storage and
// radix key width: a stale read-back takes another path.  Work reordered or
// replayed with a stale argument (seed, threshold, size, end_bit) gives
// other values, a read-back returned early the poison or an earlier count,
// and temp memory or a vector freed and handed out again while held work
// still uses it corrupts a result.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <vector>
#include <cuda_runtime.h>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_select.cuh>
#include <thrust/count.h>
#include <thrust/device_vector.h>
#include <thrust/execution_policy.h>
#include <thrust/functional.h>
#include <thrust/host_vector.h>
#include <thrust/reduce.h>
#include <thrust/scan.h>
#include <thrust/sequence.h>
#include <thrust/sort.h>
#include <thrust/system/cuda/execution_policy.h>
#include <thrust/system_error.h>
#include <thrust/transform.h>
#include <thrust/transform_reduce.h>
#include <thrust/unique.h>
#include "order_common.cuh"

// The first wrong result ends the program (the verdict line printed first).
#define FAIL(...) do { failf(__VA_ARGS__); fflush(stdout); exit(finish("thrust_cub")); } while (0)

static const int ITERS = 80, BLOCK = 8, TPB = 256;
static const int SIZES[] = {3000, 16384, 40000, 65536};  // a block's size is one of these
static const int NSIZES = 4, NMAX = 65536;
static const int POISON = 0x7A7A7A7A;                    // host-side poison of num_selected
static const int CHECKS = 17;                            // results checked per iteration

// The iteration's values: 14 bits, so no sum or scan of them wraps 32 bits.
__host__ __device__ inline uint32_t xval(unsigned seed, int k) { return hsh(seed, (unsigned)k) & 0x3FFFu; }
// Keys for sort_by_key: hsh(s, .) is a bijection (xor, odd multiplies and
// xorshifts), so the keys are unique and the sorted order is unique too.
__host__ __device__ inline uint32_t kval(unsigned seed, int k) { return hsh(seed ^ 0x6B657973u, (unsigned)k); }
// Runs for unique: groups of 3 equal values, neighbours equal one time in 5.
__host__ __device__ inline uint32_t rval(unsigned seed, int k) { return hsh(seed ^ 0x72756E73u, (unsigned)k / 3u) % 5u; }
// Radix keys of `bits` bits (20: many equal keys, which SortPairs keeps stable).
__host__ __device__ inline uint32_t ckey(unsigned seed, int k, int bits) {
    return hsh(seed ^ 0x7261646Bu, (unsigned)k) >> (32 - bits);
}
__host__ __device__ inline bool cflag(unsigned seed, int k, uint32_t fmask) {
    return (hsh(seed ^ 0x666C6167u, (unsigned)k) & fmask) == 0;
}

enum { FILL_X, FILL_KEYS, FILL_RUNS, FILL_RADIX };
__global__ void kFill(uint32_t *out, int n, int mode, unsigned seed, int bits) {
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n) return;
    uint32_t v;
    switch (mode) {
    case FILL_X: v = xval(seed, k); break;
    case FILL_KEYS: v = kval(seed, k); break;
    case FILL_RUNS: v = rval(seed, k); break;
    default: v = ckey(seed, k, bits); break;
    }
    out[k] = v;
}
__global__ void kFlags(uint8_t *flags, int n, unsigned seed, uint32_t fmask) {
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n) flags[k] = cflag(seed, k, fmask) ? 1 : 0;
}
static int grid(int n) { return (n + TPB - 1) / TPB; }

// Functors (kernel arguments that change every iteration).
struct Affine {
    uint32_t a, b;
    __host__ __device__ uint32_t operator()(uint32_t v) const { return v * a + b; }
};
struct Below {
    uint32_t t;
    __host__ __device__ bool operator()(uint32_t v) const { return v < t; }
};
struct Square {
    __host__ __device__ uint64_t operator()(uint32_t v) const { return (uint64_t)v * v; }
};
struct BitsAre {
    uint32_t mask, want;
    __host__ __device__ bool operator()(uint32_t v) const { return (v & mask) == want; }
};

// What the host decided from earlier read-backs.
struct State {
    unsigned chain;
    uint32_t thr, fmask;      // copy_if threshold, flag density: every iteration
    int n, keyBits;           // size, radix key width: every block
    bool asyncTemp;           // CUB temp storage from cudaMallocAsync: every block
};
static const State FIRST = {0x7C0B5EEDu, 0x2000u, 3u, SIZES[0], 32, false};
struct Plan {
    unsigned seed;
    int n, keyBits;
    bool onDefault, asyncTemp;
    uint32_t a, b, thr, cmask, cwant, fmask;
};
// The values read back that decide what comes next.
struct Readback {
    uint64_t tsum, csum;
    long m, nu, c, ns;
};
struct Ref {
    uint64_t tsum, sq, csum;
    uint32_t cmax;
    long c;
    std::vector<uint32_t> scan, skeys, svals, sel, uniq, cscan, rkeys, rvals, csel;
};

static Plan plan_iter(int i, const State &st) {
    Plan p;
    p.seed = hsh(st.chain, (unsigned)i);
    p.n = st.n;
    p.keyBits = st.keyBits;
    p.asyncTemp = st.asyncTemp;
    p.onDefault = i % 4 == 3;
    p.a = hsh(p.seed, 1u) | 1u;
    p.b = hsh(p.seed, 2u);
    p.thr = st.thr;
    const unsigned sh = 2u * (hsh(p.seed, 3u) % 6u);
    p.cmask = 3u << sh;
    p.cwant = (hsh(p.seed, 4u) & 3u) << sh;
    p.fmask = st.fmask;
    return p;
}

static void advance(State &st, int i, const Readback &rb) {
    st.chain = hsh(st.chain ^ (unsigned)rb.tsum ^ (unsigned)(rb.tsum >> 32),
                   (unsigned)rb.m * 131u + (unsigned)rb.nu * 7u + (unsigned)rb.c + (unsigned)rb.ns * 31u);
    st.thr = 0x1000u + (uint32_t)(rb.csum % 0x2000u);
    st.fmask = (rb.c & 1) ? 1u : 3u;
    if (i % BLOCK == BLOCK - 1) {
        st.n = SIZES[(rb.ns + rb.c) % NSIZES];
        st.asyncTemp = ((rb.tsum >> 5) & 1u) != 0;
        st.keyBits = (rb.m & 1) ? 32 : 20;
    }
}

static Ref make_ref(const Plan &p) {
    const int n = p.n;
    Ref r;
    std::vector<uint32_t> x(n);
    for (int k = 0; k < n; ++k) x[k] = xval(p.seed, k);
    r.tsum = 0;
    r.scan.resize(n);
    uint32_t run = 0;
    for (int k = 0; k < n; ++k) {
        r.tsum += (uint32_t)(x[k] * p.a + p.b);
        run += x[k];
        r.scan[k] = run;
    }
    std::vector<int> idx(n);
    for (int k = 0; k < n; ++k) idx[k] = k;
    std::sort(idx.begin(), idx.end(), [&](int u, int v) { return kval(p.seed, u) < kval(p.seed, v); });
    for (int k : idx) { r.skeys.push_back(kval(p.seed, k)); r.svals.push_back((uint32_t)k); }
    r.sq = 0;
    for (int k = 0; k < n; ++k)
        if (x[k] < p.thr) { r.sel.push_back(x[k]); r.sq += (uint64_t)x[k] * x[k]; }
    for (int k = 0; k < n; ++k) r.uniq.push_back(rval(p.seed, k));
    r.uniq.erase(std::unique(r.uniq.begin(), r.uniq.end()), r.uniq.end());
    r.c = 0;
    for (int k = 0; k < n; ++k) r.c += (x[k] & p.cmask) == p.cwant;

    r.csum = 0;
    r.cmax = 0;
    r.cscan.resize(n);
    run = 0;
    for (int k = 0; k < n; ++k) {
        r.cscan[k] = run;
        run += x[k];
        r.csum += x[k];
        r.cmax = std::max(r.cmax, x[k]);
    }
    for (int k = 0; k < n; ++k) idx[k] = k;
    std::stable_sort(idx.begin(), idx.end(),
                     [&](int u, int v) { return ckey(p.seed, u, p.keyBits) < ckey(p.seed, v, p.keyBits); });
    for (int k : idx) { r.rkeys.push_back(ckey(p.seed, k, p.keyBits)); r.rvals.push_back(x[k]); }
    for (int k = 0; k < n; ++k)
        if (cflag(p.seed, k, p.fmask)) r.csel.push_back(x[k]);
    return r;
}

static int g_pass = 0;
static void check_u64(int it, const char *what, uint64_t got, uint64_t want) {
    if (got != want) FAIL("iter %d: %s = %llu, want %llu", it, what, (unsigned long long)got, (unsigned long long)want);
    ++g_pass;
}
static void check_words(int it, const char *what, const uint32_t *got, const std::vector<uint32_t> &want) {
    for (size_t k = 0; k < want.size(); ++k)
        if (got[k] != want[k]) FAIL("iter %d: %s[%zu] = %u, want %u", it, what, k, got[k], want[k]);
    ++g_pass;
}

static uint64_t fold(const std::vector<uint32_t> &v) {
    uint64_t h = v.size();
    for (uint32_t w : v) h = h * 0x100000001B3ull + w;
    return h;
}
// Into the digest, once every one of them was found equal to the device's.
static void account(const Ref &r) {
    mix(r.tsum); mix(r.sq); mix(r.csum); mix(r.cmax); mix((uint64_t)r.c);
    const std::vector<uint32_t> *vs[] = {&r.scan, &r.skeys, &r.svals, &r.sel, &r.uniq,
                                         &r.cscan, &r.rkeys, &r.rvals, &r.csel};
    for (const std::vector<uint32_t> *v : vs) mix(fold(*v));
}
static void report(int i, const Plan &p, const Readback &rb) {
    printf("iters %2d-%2d: n=%5d temp=%-5s radix=%d bits  thrust sum=%llu selected=%ld unique=%ld  digest=%016llx pass=%d\n",
           i - BLOCK + 1, i, p.n, p.asyncTemp ? "async" : "kept", p.keyBits, (unsigned long long)rb.tsum, rb.ns,
           rb.nu, (unsigned long long)g_hash, g_pass);
}

// Thrust part: Sync blocks (the library syncs the stream before it returns),
// NoSync does not; both run on q.
template <class Sync, class NoSync>
static void thrust_part(int i, const Sync &pol, const NoSync &nosync, cudaStream_t q, const Plan &p, const Ref &r,
                        thrust::device_vector<uint32_t> &x, thrust::device_vector<uint32_t> &y, Readback &rb) {
    const int n = p.n;
    kFill<<<grid(n), TPB, 0, q>>>(thrust::raw_pointer_cast(x.data()), n, FILL_X, p.seed, 0);
    CK(cudaGetLastError());
    y.resize(n);
    thrust::transform(nosync, x.begin(), x.end(), y.begin(), Affine{p.a, p.b});
    thrust::device_vector<uint32_t> z(n);
    thrust::inclusive_scan(nosync, x.begin(), x.end(), z.begin());
    rb.tsum = thrust::reduce(pol, y.begin(), y.end(), (uint64_t)0, thrust::plus<uint64_t>());
    check_u64(i, "thrust::reduce", rb.tsum, r.tsum);
    thrust::host_vector<uint32_t> hz(z.begin(), z.end());
    check_words(i, "thrust::inclusive_scan", hz.data(), r.scan);

    thrust::device_vector<uint32_t> keys(n), vals(n);
    kFill<<<grid(n), TPB, 0, q>>>(thrust::raw_pointer_cast(keys.data()), n, FILL_KEYS, p.seed, 0);
    CK(cudaGetLastError());
    thrust::sequence(pol, vals.begin(), vals.end());
    thrust::sort_by_key(pol, keys.begin(), keys.end(), vals.begin());
    thrust::host_vector<uint32_t> hk(keys.begin(), keys.end()), hv(vals.begin(), vals.end());
    check_words(i, "thrust::sort_by_key keys", hk.data(), r.skeys);
    check_words(i, "thrust::sort_by_key values", hv.data(), r.svals);

    thrust::device_vector<uint32_t> w(n);
    auto wend = thrust::copy_if(pol, x.begin(), x.end(), w.begin(), Below{p.thr});
    rb.m = (long)(wend - w.begin());
    check_u64(i, "thrust::copy_if count", (uint64_t)rb.m, r.sel.size());
    const uint64_t sq = thrust::transform_reduce(pol, w.begin(), w.begin() + rb.m, Square{}, (uint64_t)0,
                                                 thrust::plus<uint64_t>());
    check_u64(i, "thrust::transform_reduce of the copy_if output", sq, r.sq);
    thrust::host_vector<uint32_t> hw(w.begin(), w.begin() + rb.m);
    check_words(i, "thrust::copy_if", hw.data(), r.sel);

    thrust::device_vector<uint32_t> u(n);
    kFill<<<grid(n), TPB, 0, q>>>(thrust::raw_pointer_cast(u.data()), n, FILL_RUNS, p.seed, 0);
    CK(cudaGetLastError());
    auto uend = thrust::unique(pol, u.begin(), u.end());
    rb.nu = (long)(uend - u.begin());
    check_u64(i, "thrust::unique count", (uint64_t)rb.nu, r.uniq.size());
    u.erase(uend, u.end());
    thrust::host_vector<uint32_t> hu(u.begin(), u.end());
    check_words(i, "thrust::unique", hu.data(), r.uniq);

    rb.c = (long)thrust::count_if(pol, x.begin(), x.end(), BitsAre{p.cmask, p.cwant});
    check_u64(i, "thrust::count_if", (uint64_t)rb.c, (uint64_t)r.c);
}

// Buffers of the CUB part, kept across iterations.
struct Kept {
    uint32_t *keysIn, *keysOut, *valsOut, *scan, *sel, *max;
    uint8_t *flags;
    uint64_t *sum;
    int *num;
    void *temp;                 // the kept temp storage and its size
    size_t cap;
};
struct Pinned {
    uint32_t *scan, *keys, *vals, *sel, *max;
    uint64_t *sum;
    int *num;
};

static void cub_part(int i, cudaStream_t q, const Plan &p, const Ref &r, const uint32_t *dx, Kept &kb,
                     const Pinned &h, Readback &rb) {
    const int n = p.n;
    size_t bSum = 0, bMax = 0, bScan = 0, bSort = 0, bSel = 0;
    CK(cub::DeviceReduce::Sum(nullptr, bSum, dx, kb.sum, n, q));
    CK(cub::DeviceReduce::Max(nullptr, bMax, dx, kb.max, n, q));
    CK(cub::DeviceScan::ExclusiveSum(nullptr, bScan, dx, kb.scan, n, q));
    CK(cub::DeviceRadixSort::SortPairs(nullptr, bSort, kb.keysIn, kb.keysOut, dx, kb.valsOut, n, 0, p.keyBits, q));
    CK(cub::DeviceSelect::Flagged(nullptr, bSel, dx, kb.flags, kb.sel, kb.num, n, q));
    if (!p.asyncTemp) {
        // Grown before this iteration queues anything on it: the last work
        // that used it was waited for at the end of an earlier iteration.
        const size_t need = std::max(std::max(std::max(bSum, bMax), std::max(bScan, bSort)), bSel);
        if (need > kb.cap) {
            CK(cudaFree(kb.temp));
            CK(cudaMalloc(&kb.temp, need));
            kb.cap = need;
        }
    }
    auto take = [&](size_t bytes) -> void * {
        if (!p.asyncTemp) return kb.temp;
        void *t = nullptr;
        CK(cudaMallocAsync(&t, std::max(bytes, (size_t)16), q));
        return t;
    };
    auto give = [&](void *t) {
        if (p.asyncTemp) CK(cudaFreeAsync(t, q));
    };

    kFill<<<grid(n), TPB, 0, q>>>(kb.keysIn, n, FILL_RADIX, p.seed, p.keyBits);
    CK(cudaGetLastError());
    kFlags<<<grid(n), TPB, 0, q>>>(kb.flags, n, p.seed, p.fmask);
    CK(cudaGetLastError());
    void *t = take(bSum);
    CK(cub::DeviceReduce::Sum(t, bSum, dx, kb.sum, n, q));
    give(t);
    t = take(bMax);
    CK(cub::DeviceReduce::Max(t, bMax, dx, kb.max, n, q));
    give(t);
    t = take(bScan);
    CK(cub::DeviceScan::ExclusiveSum(t, bScan, dx, kb.scan, n, q));
    give(t);
    t = take(bSort);
    CK(cub::DeviceRadixSort::SortPairs(t, bSort, kb.keysIn, kb.keysOut, dx, kb.valsOut, n, 0, p.keyBits, q));
    give(t);
    t = take(bSel);
    CK(cub::DeviceSelect::Flagged(t, bSel, dx, kb.flags, kb.sel, kb.num, n, q));
    give(t);

    *(volatile int *)h.num = POISON;
    CK(cudaMemcpyAsync(h.sum, kb.sum, sizeof(uint64_t), cudaMemcpyDeviceToHost, q));
    CK(cudaMemcpyAsync(h.max, kb.max, sizeof(uint32_t), cudaMemcpyDeviceToHost, q));
    CK(cudaMemcpyAsync(h.num, kb.num, sizeof(int), cudaMemcpyDeviceToHost, q));
    CK(cudaStreamSynchronize(q));
    rb.ns = *(volatile int *)h.num;
    check_u64(i, "cub::DeviceSelect::Flagged num_selected", (uint64_t)rb.ns, r.csel.size());
    rb.csum = *(volatile uint64_t *)h.sum;
    check_u64(i, "cub::DeviceReduce::Sum", rb.csum, r.csum);
    check_u64(i, "cub::DeviceReduce::Max", *(volatile uint32_t *)h.max, r.cmax);

    // As many selected items as the count just read says.
    CK(cudaMemcpyAsync(h.sel, kb.sel, (size_t)rb.ns * sizeof(uint32_t), cudaMemcpyDeviceToHost, q));
    CK(cudaMemcpyAsync(h.scan, kb.scan, (size_t)n * sizeof(uint32_t), cudaMemcpyDeviceToHost, q));
    CK(cudaMemcpyAsync(h.keys, kb.keysOut, (size_t)n * sizeof(uint32_t), cudaMemcpyDeviceToHost, q));
    CK(cudaMemcpyAsync(h.vals, kb.valsOut, (size_t)n * sizeof(uint32_t), cudaMemcpyDeviceToHost, q));
    CK(cudaStreamSynchronize(q));
    check_words(i, "cub::DeviceSelect::Flagged", h.sel, r.csel);
    check_words(i, "cub::DeviceScan::ExclusiveSum", h.scan, r.cscan);
    check_words(i, "cub::DeviceRadixSort::SortPairs keys", h.keys, r.rkeys);
    check_words(i, "cub::DeviceRadixSort::SortPairs values", h.vals, r.rvals);
}

static int run() {
    CK(cudaSetDevice(0));
    CK(cudaFree(0));
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

    Kept kb;
    CK(cudaMalloc(&kb.keysIn, NMAX * sizeof(uint32_t)));
    CK(cudaMalloc(&kb.keysOut, NMAX * sizeof(uint32_t)));
    CK(cudaMalloc(&kb.valsOut, NMAX * sizeof(uint32_t)));
    CK(cudaMalloc(&kb.scan, NMAX * sizeof(uint32_t)));
    CK(cudaMalloc(&kb.sel, NMAX * sizeof(uint32_t)));
    CK(cudaMalloc(&kb.max, sizeof(uint32_t)));
    CK(cudaMalloc(&kb.flags, NMAX));
    CK(cudaMalloc(&kb.sum, sizeof(uint64_t)));
    CK(cudaMalloc(&kb.num, sizeof(int)));
    kb.cap = 256;
    CK(cudaMalloc(&kb.temp, kb.cap));
    Pinned h;
    CK(cudaMallocHost(&h.scan, NMAX * sizeof(uint32_t)));
    CK(cudaMallocHost(&h.keys, NMAX * sizeof(uint32_t)));
    CK(cudaMallocHost(&h.vals, NMAX * sizeof(uint32_t)));
    CK(cudaMallocHost(&h.sel, NMAX * sizeof(uint32_t)));
    CK(cudaMallocHost(&h.max, sizeof(uint32_t)));
    CK(cudaMallocHost(&h.sum, sizeof(uint64_t)));
    CK(cudaMallocHost(&h.num, sizeof(int)));
    CK(cudaDeviceSynchronize());

    thrust::device_vector<uint32_t> y;  // kept across iterations, resized to each one's size
    State st = FIRST;
    int nDefault = 0, nAsync = 0;
    for (int i = 0; i < ITERS; ++i) {
        const Plan p = plan_iter(i, st);
        const Ref r = make_ref(p);
        Readback rb = {};
        // Nothing in flight: the previous iteration ended with a sync of its stream.
        memset(h.scan, 0x5C, NMAX * sizeof(uint32_t));
        memset(h.keys, 0x5C, NMAX * sizeof(uint32_t));
        memset(h.vals, 0x5C, NMAX * sizeof(uint32_t));
        memset(h.sel, 0x5C, NMAX * sizeof(uint32_t));
        memset(h.max, 0x5C, sizeof(uint32_t));
        memset(h.sum, 0x5C, sizeof(uint64_t));
        {
            thrust::device_vector<uint32_t> x(p.n);
            const cudaStream_t q = p.onDefault ? 0 : s;
            if (p.onDefault)
                thrust_part(i, thrust::device, thrust::cuda::par_nosync, q, p, r, x, y, rb);
            else
                thrust_part(i, thrust::cuda::par.on(s), thrust::cuda::par_nosync.on(s), q, p, r, x, y, rb);
            cub_part(i, q, p, r, thrust::raw_pointer_cast(x.data()), kb, h, rb);
        }
        nDefault += p.onDefault;
        nAsync += p.asyncTemp;
        account(r);
        if (i % BLOCK == BLOCK - 1) report(i, p, rb);
        advance(st, i, rb);
    }
    CK(cudaDeviceSynchronize());
    CK(cudaGetLastError());
    printf("thrust_cub: %d iterations, %d on the default stream, %d with temp storage from cudaMallocAsync, "
           "%d results checked of %d\n", ITERS, nDefault, nAsync, g_pass, ITERS * CHECKS);
    mix((uint64_t)g_pass);

    CK(cudaFree(kb.keysIn)); CK(cudaFree(kb.keysOut)); CK(cudaFree(kb.valsOut)); CK(cudaFree(kb.scan));
    CK(cudaFree(kb.sel)); CK(cudaFree(kb.max)); CK(cudaFree(kb.flags)); CK(cudaFree(kb.sum));
    CK(cudaFree(kb.num)); CK(cudaFree(kb.temp));
    CK(cudaFreeHost(h.scan)); CK(cudaFreeHost(h.keys)); CK(cudaFreeHost(h.vals)); CK(cudaFreeHost(h.sel));
    CK(cudaFreeHost(h.max)); CK(cudaFreeHost(h.sum)); CK(cudaFreeHost(h.num));
    CK(cudaStreamDestroy(s));
    return finish("thrust_cub");
}

int main() {
    // Thrust reports a CUDA error by throwing.
    try {
        return run();
    } catch (const thrust::system_error &e) {
        printf("Thrust error: %s\n", e.what());
    } catch (const std::exception &e) {
        printf("Thrust error: %s\n", e.what());
    }
    fflush(stdout);
    return 2;
}
