// stream_callback: a loop whose every iteration ends its work with stream
// callbacks, the runtime's (cudaStreamAddCallback) and the driver's
// (cuStreamAddCallback), as older code signals the host. The runtime's
// callback reads what the copy just before it brought back into pinned
// memory; the driver's logs one of three tags. Each must run exactly once,
// in stream order, after the work before it and before the work after it,
// given its stream and success. A sync every 16 iterations. Then the same
// on the legacy stream (NULL): the stream each callback is given there is
// printed, as bare, and must be the same at every iteration.
#include <cstdint>
#include <cstdio>
#include <vector>
#include "order_common.cuh"

static const int N = 1024, TPB = 256, GRID = N / TPB, ITERS = 160;

__global__ void kStep(unsigned *acc, unsigned seed) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    acc[j] = acc[j] * 3u + hsh(seed, (unsigned)j);
}
__global__ void kAfter(unsigned *acc) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    acc[j] ^= acc[j] >> 7;
}

static cudaStream_t g_s;
static unsigned *g_pin[2];
static std::vector<uint64_t> g_log;
static const int g_slot[2] = {0, 1};
static const unsigned g_tag[3] = {0x1111u, 0x2222u, 0x3333u};

static void CUDART_CB rtCb(cudaStream_t s, cudaError_t status, void *p) {
    int slot = *(const int *)p;
    uint64_t h = fnv_bytes(g_pin[slot], N * 4);
    g_log.push_back(s == g_s && status == cudaSuccess ? h : 0xdeadull);
}
static void CUDA_CB drvCb(CUstream s, CUresult status, void *p) {
    g_log.push_back((CUstream)g_s == s && status == CUDA_SUCCESS ? *(const unsigned *)p : 0xbeefull);
}
static std::vector<uint64_t> g_null;
static void CUDART_CB rtNullCb(cudaStream_t s, cudaError_t status, void *) {
    g_null.push_back(status == cudaSuccess ? (uint64_t)(uintptr_t)s : 0xdeadull);
}
static void CUDA_CB drvNullCb(CUstream s, CUresult status, void *) {
    g_null.push_back(status == CUDA_SUCCESS ? (uint64_t)(uintptr_t)s ^ 0x100000000ull : 0xbeefull);
}

int main() {
    CK(cudaSetDevice(0));
    CK(cudaFree(0));
    CK(cudaStreamCreateWithFlags(&g_s, cudaStreamNonBlocking));
    unsigned *acc;
    CK(cudaMalloc(&acc, N * 4));
    CK(cudaMemset(acc, 0, N * 4));
    CK(cudaMallocHost(&g_pin[0], N * 4));
    CK(cudaMallocHost(&g_pin[1], N * 4));
    g_log.reserve(ITERS * 2);
    CK(cudaDeviceSynchronize());

    for (int i = 0; i < ITERS; ++i) {
        kStep<<<GRID, TPB, 0, g_s>>>(acc, hsh(5u, (unsigned)(i % 4)));
        CK(cudaGetLastError());
        CK(cudaMemcpyAsync(g_pin[i % 2], acc, N * 4, cudaMemcpyDeviceToHost, g_s));
        CK(cudaStreamAddCallback(g_s, rtCb, (void *)&g_slot[i % 2], 0));
        kAfter<<<GRID, TPB, 0, g_s>>>(acc);
        CK(cudaGetLastError());
        CU(cuStreamAddCallback((CUstream)g_s, drvCb, (void *)&g_tag[i % 3], 0));
        if (i % 16 == 15)
            CK(cudaStreamSynchronize(g_s));
    }
    CK(cudaStreamSynchronize(g_s));

    // reference
    std::vector<unsigned> ref(N, 0u);
    std::vector<uint64_t> want;
    for (int i = 0; i < ITERS; ++i) {
        unsigned seed = hsh(5u, (unsigned)(i % 4));
        for (int j = 0; j < N; ++j) ref[j] = ref[j] * 3u + hsh(seed, (unsigned)j);
        want.push_back(fnv_bytes(ref.data(), N * 4));
        for (int j = 0; j < N; ++j) ref[j] ^= ref[j] >> 7;
        want.push_back(g_tag[i % 3]);
    }
    if (g_log.size() != want.size()) failf("callbacks ran %zu times, want %zu", g_log.size(), want.size());
    for (size_t k = 0; k < g_log.size() && k < want.size(); ++k)
        if (g_log[k] != want[k]) { failf("callback #%zu logged %016llx, want %016llx", k,
                                         (unsigned long long)g_log[k], (unsigned long long)want[k]); break; }
    for (uint64_t v : g_log) mix(v);
    std::vector<unsigned> got(N);
    CK(cudaMemcpy(got.data(), acc, N * 4, cudaMemcpyDeviceToHost));
    check_acc(ITERS, got.data(), ref.data(), N);

    // the legacy stream
    CK(cudaMemset(acc, 0, N * 4));
    for (int i = 0; i < 64; ++i) {
        kStep<<<GRID, TPB>>>(acc, hsh(7u, (unsigned)(i % 2)));
        CK(cudaGetLastError());
        CK(cudaStreamAddCallback(0, rtNullCb, nullptr, 0));
        kAfter<<<GRID, TPB>>>(acc);
        CU(cuStreamAddCallback(0, drvNullCb, nullptr, 0));
        if (i % 16 == 15)
            CK(cudaDeviceSynchronize());
    }
    CK(cudaDeviceSynchronize());
    if (g_null.size() != 128) failf("legacy-stream callbacks ran %zu times, want 128", g_null.size());
    for (size_t k = 2; k < g_null.size(); ++k)
        if (g_null[k] != g_null[k % 2]) { failf("legacy-stream callback #%zu was given %llx, the first %llx", k,
                                                (unsigned long long)g_null[k], (unsigned long long)g_null[k % 2]); break; }
    if (g_null.size() >= 2)
        printf("legacy-stream callbacks given %llx (runtime) and %llx (driver, bit 32 set)\n",
               (unsigned long long)g_null[0], (unsigned long long)g_null[1]);
    for (uint64_t v : g_null) mix(v);
    CK(cudaMemcpy(got.data(), acc, N * 4, cudaMemcpyDeviceToHost));
    for (int j = 0; j < N; ++j) mix(got[j]);

    CK(cudaStreamDestroy(g_s));
    CK(cudaFree(acc));
    CK(cudaFreeHost(g_pin[0])); CK(cudaFreeHost(g_pin[1]));
    return finish("stream_callback");
}
