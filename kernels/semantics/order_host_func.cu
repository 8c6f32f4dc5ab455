// host_func: host functions in the middle of an iteration that read what an
// earlier D2H copy brought back and write pinned memory that a LATER H2D copy
// (and a kernel reading mapped host memory directly) consume, all in one
// stream.  Stream order alone says the host function ran after the D2H and
// before the H2D; an async copy from pinned memory reads it when it executes,
// not when it was called (a snapshot taken at call time would be stale).
// The userData pointer changes every iteration.  cudaStreamAddCallback every
// 5th iteration.  A second host function reads the D2H result of the
// iteration's last copy.  A log of the order in which host code ran is
// checked against stream order.
#include <atomic>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>
#include "order_common.cuh"

static const int N = 2048, TPB = 256, GRID = N / TPB, ITERS = 80;

__global__ void kGen(unsigned *a, unsigned seed) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    a[j] = hsh(seed, (unsigned)j);
}
__global__ void kUse(unsigned *acc, const unsigned *in, const volatile unsigned *scalar) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    acc[j] = acc[j] * 3u + in[j] + *scalar;
}

struct Ctx {
    const unsigned *src;  // hMid
    unsigned *dst;        // hIn[i % 2]
    unsigned *scalar;     // mapped pinned scalar
    const unsigned *out;  // this iteration's slot of the result ring
    int iter;
    unsigned sum;         // written by hostSum
};
static std::atomic<int> g_seq{0};
static int g_log[ITERS * 3 + 8];

static void log_code(int code) {
    int k = g_seq.fetch_add(1);
    if (k < ITERS * 3 + 8) g_log[k] = code;
}
static void CUDART_CB hostTransform(void *p) {
    Ctx *c = (Ctx *)p;
    for (int j = 0; j < N; ++j) c->dst[j] = c->src[j] * 5u + (unsigned)c->iter;
    *(volatile unsigned *)c->scalar = (unsigned)c->iter * 7u + 1u;
    log_code(c->iter * 3 + 0);
}
static void CUDART_CB cbAfter(cudaStream_t, cudaError_t status, void *p) {
    Ctx *c = (Ctx *)p;
    log_code(status == cudaSuccess ? c->iter * 3 + 1 : -1);
}
static void CUDART_CB hostSum(void *p) {
    Ctx *c = (Ctx *)p;
    unsigned s = 0;
    for (int j = 0; j < N; ++j) s = s * 31u + c->out[j];
    c->sum = s;
    log_code(c->iter * 3 + 2);
}

int main() {
    CK(cudaSetDevice(0));
    CK(cudaFree(0));
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    unsigned *dA, *dIn, *ACC;
    CK(cudaMalloc(&dA, N * 4)); CK(cudaMalloc(&dIn, N * 4)); CK(cudaMalloc(&ACC, N * 4));
    CK(cudaMemset(ACC, 0, N * 4));
    unsigned *hMid, *hIn[2], *hScalar, *dScalar, *ring;
    CK(cudaMallocHost(&hMid, N * 4));
    CK(cudaMallocHost(&hIn[0], N * 4)); CK(cudaMallocHost(&hIn[1], N * 4));
    CK(cudaHostAlloc(&hScalar, 4, cudaHostAllocMapped));
    CK(cudaHostGetDevicePointer((void **)&dScalar, hScalar, 0));
    CK(cudaMallocHost(&ring, (size_t)ITERS * N * 4));
    memset(hMid, 0, N * 4); memset(hIn[0], 0x11, N * 4); memset(hIn[1], 0x22, N * 4);
    memset(ring, 0xAB, (size_t)ITERS * N * 4);
    *hScalar = 0xDEADBEEFu;
    std::vector<Ctx> ctx(ITERS);
    CK(cudaDeviceSynchronize());

    std::vector<int> want_log;
    for (int i = 0; i < ITERS; ++i) {
        ctx[i].src = hMid; ctx[i].dst = hIn[i % 2]; ctx[i].scalar = hScalar;
        ctx[i].out = ring + (size_t)i * N; ctx[i].iter = i; ctx[i].sum = 0;
        kGen<<<GRID, TPB, 0, s>>>(dA, hsh(9u, (unsigned)i));
        CK(cudaGetLastError());
        CK(cudaMemcpyAsync(hMid, dA, N * 4, cudaMemcpyDeviceToHost, s));
        CK(cudaLaunchHostFunc(s, hostTransform, &ctx[i]));
        CK(cudaMemcpyAsync(dIn, hIn[i % 2], N * 4, cudaMemcpyHostToDevice, s));
        kUse<<<GRID, TPB, 0, s>>>(ACC, dIn, dScalar);
        CK(cudaGetLastError());
        want_log.push_back(i * 3 + 0);
        if (i % 5 == 4) {
            CK(cudaStreamAddCallback(s, cbAfter, &ctx[i], 0));
            want_log.push_back(i * 3 + 1);
        }
        CK(cudaMemcpyAsync(ring + (size_t)i * N, ACC, N * 4, cudaMemcpyDeviceToHost, s));
        CK(cudaLaunchHostFunc(s, hostSum, &ctx[i]));
        want_log.push_back(i * 3 + 2);
    }
    CK(cudaStreamSynchronize(s));
    CK(cudaGetLastError());

    // reference
    std::vector<unsigned> acc(N, 0u);
    for (int i = 0; i < ITERS; ++i) {
        unsigned seed = hsh(9u, (unsigned)i);
        unsigned sc = (unsigned)i * 7u + 1u;
        unsigned rs = 0;
        for (int j = 0; j < N; ++j) {
            unsigned in = hsh(seed, (unsigned)j) * 5u + (unsigned)i;
            acc[j] = acc[j] * 3u + in + sc;
            rs = rs * 31u + acc[j];
        }
        const unsigned *got = ring + (size_t)i * N;
        check_acc(i, got, acc.data(), N);
        if (ctx[i].sum != rs) failf("iter %d: host function saw sum %08x of the copied result, want %08x", i, ctx[i].sum, rs);
        mix(ctx[i].sum);
    }
    int n = g_seq.load();
    if (n != (int)want_log.size()) failf("host code ran %d times, want %d", n, (int)want_log.size());
    for (int k = 0; k < n && k < (int)want_log.size(); ++k)
        if (g_log[k] != want_log[k]) { failf("host code #%d was %d, want %d (stream order)", k, g_log[k], want_log[k]); break; }
    mix((uint64_t)n);
    for (int k = 0; k < n && k < ITERS * 3 + 8; ++k) mix((uint64_t)(int64_t)g_log[k]);
    if (*hScalar != (unsigned)(ITERS - 1) * 7u + 1u) failf("scalar = %08x", *hScalar);

    CK(cudaStreamDestroy(s));
    CK(cudaFreeHost(hMid)); CK(cudaFreeHost(hIn[0])); CK(cudaFreeHost(hIn[1]));
    CK(cudaFreeHost(hScalar)); CK(cudaFreeHost(ring));
    return finish("host_func");
}
