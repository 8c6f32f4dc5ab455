// own_graph: the program's own CUDA graphs inside the loop, interleaved with
// eager work on the same stream that feeds them and reads their results:
//  - a three-kernel graph built with cudaGraphAddKernelNode (a fork and a join),
//    instantiated once; before every launch cudaGraphExecKernelNodeSetParams
//    changes its first node's scalar and input pointer (ping-pong buffers);
//    updates apply to later launches only;
//  - every iteration a fresh stream capture (global mode) of a memset and a
//    kernel reading eager results, instantiated, launched, and destroyed
//    while the launch may still be in flight (documented as safe);
//  - eager kernels before, between and after the graph launches.
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>
#include "order_common.cuh"

static const int N = 2048, TPB = 256, GRID = N / TPB, ITERS = 70;

__global__ void kPre(unsigned *x, unsigned i) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    spin_cycles(10000);
    x[j] = hsh(i, (unsigned)j);
}
__global__ void gK1(unsigned *y, const unsigned *x, unsigned k) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    y[j] = x[j] * 3u + k;
}
__global__ void gK2(unsigned *y2, const unsigned *y) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    spin_cycles(5000);
    y2[j] = y[j] ^ 0x55555555u;
}
__global__ void gK3(unsigned *z, const unsigned *y, const unsigned *y2) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    z[j] = y[j] + y2[j] * 2u;
}
__global__ void kPost(unsigned *acc, const unsigned *z, unsigned i) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned v = acc[j] * 3u + z[j] + i;
    spin_cycles(5000);
    acc[j] = v;
}
__global__ void kTmp(unsigned *w, const unsigned *acc, const unsigned *w2, unsigned k) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    w[j] = (acc[j] ^ k) + w2[j];
}
__global__ void kMix(unsigned *acc, const unsigned *w) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    acc[j] = acc[j] + w[j] * 5u;
}

int main() {
    CK(cudaSetDevice(0));
    CK(cudaFree(0));
    cudaStream_t s, sc;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&sc, cudaStreamNonBlocking));

    unsigned *Xb[2], *Y, *Y2, *Z, *ACC, *W, *W2;
    CK(cudaMalloc(&Xb[0], N * 4)); CK(cudaMalloc(&Xb[1], N * 4));
    CK(cudaMalloc(&Y, N * 4)); CK(cudaMalloc(&Y2, N * 4)); CK(cudaMalloc(&Z, N * 4));
    CK(cudaMalloc(&ACC, N * 4)); CK(cudaMalloc(&W, N * 4)); CK(cudaMalloc(&W2, N * 4));
    CK(cudaMemset(ACC, 0, N * 4)); CK(cudaMemset(Xb[0], 0, N * 4)); CK(cudaMemset(Xb[1], 0, N * 4));
    unsigned *ring;
    CK(cudaMallocHost(&ring, (size_t)ITERS * N * 4));
    memset(ring, 0xAB, (size_t)ITERS * N * 4);
    CK(cudaDeviceSynchronize());

    // the explicit graph: n1 -> n2 -> n3, n1 -> n3
    cudaGraph_t G;
    CK(cudaGraphCreate(&G, 0));
    cudaGraphNode_t n1, n2, n3;
    unsigned k0 = 0;
    void *a1[] = {&Y, &Xb[0], &k0};
    void *a2[] = {&Y2, &Y};
    void *a3[] = {&Z, &Y, &Y2};
    cudaKernelNodeParams p = {};
    p.gridDim = dim3(GRID); p.blockDim = dim3(TPB); p.sharedMemBytes = 0; p.extra = nullptr;
    p.func = (void *)gK1; p.kernelParams = a1;
    CK(cudaGraphAddKernelNode(&n1, G, nullptr, 0, &p));
    p.func = (void *)gK2; p.kernelParams = a2;
    CK(cudaGraphAddKernelNode(&n2, G, &n1, 1, &p));
    cudaGraphNode_t deps3[2] = {n1, n2};
    p.func = (void *)gK3; p.kernelParams = a3;
    CK(cudaGraphAddKernelNode(&n3, G, deps3, 2, &p));
    cudaGraphExec_t Gx;
    CK(cudaGraphInstantiate(&Gx, G, 0));

    for (int i = 0; i < ITERS; ++i) {
        int pp = i & 1;
        unsigned ui = (unsigned)i;
        kPre<<<GRID, TPB, 0, s>>>(Xb[pp], ui);
        CK(cudaGetLastError());
        {
            unsigned k = ui * 3u + 1u;
            void *a[] = {&Y, &Xb[pp], &k};
            cudaKernelNodeParams q = {};
            q.func = (void *)gK1; q.gridDim = dim3(GRID); q.blockDim = dim3(TPB); q.sharedMemBytes = 0;
            q.kernelParams = a; q.extra = nullptr;
            CK(cudaGraphExecKernelNodeSetParams(Gx, n1, &q));
        }
        CK(cudaGraphLaunch(Gx, s));
        kPost<<<GRID, TPB, 0, s>>>(ACC, Z, ui);
        CK(cudaGetLastError());
        {
            cudaGraph_t g;
            cudaGraphExec_t gx;
            CK(cudaStreamBeginCapture(sc, cudaStreamCaptureModeGlobal));
            CK(cudaMemsetAsync(W2, (int)(ui & 0xff), N * 4, sc));
            kTmp<<<GRID, TPB, 0, sc>>>(W, ACC, W2, ui * 7u);
            CK(cudaGetLastError());
            CK(cudaStreamEndCapture(sc, &g));
            CK(cudaGraphInstantiate(&gx, g, 0));
            CK(cudaGraphLaunch(gx, s));
            CK(cudaGraphExecDestroy(gx));
            CK(cudaGraphDestroy(g));
        }
        kMix<<<GRID, TPB, 0, s>>>(ACC, W);
        CK(cudaGetLastError());
        CK(cudaMemcpyAsync(ring + (size_t)i * N, ACC, N * 4, cudaMemcpyDeviceToHost, s));
    }
    CK(cudaStreamSynchronize(s));
    CK(cudaDeviceSynchronize());
    CK(cudaGetLastError());

    std::vector<unsigned> acc(N, 0u);
    for (int i = 0; i < ITERS; ++i) {
        unsigned ui = (unsigned)i;
        unsigned w2 = (ui & 0xffu) * 0x01010101u;
        for (int j = 0; j < N; ++j) {
            unsigned x = hsh(ui, (unsigned)j);
            unsigned y = x * 3u + ui * 3u + 1u;
            unsigned y2 = y ^ 0x55555555u;
            unsigned z = y + y2 * 2u;
            acc[j] = acc[j] * 3u + z + ui;
            unsigned w = (acc[j] ^ (ui * 7u)) + w2;
            acc[j] = acc[j] + w * 5u;
        }
        const unsigned *got = ring + (size_t)i * N;
        check_acc(i, got, acc.data(), N);
    }

    CK(cudaGraphExecDestroy(Gx));
    CK(cudaGraphDestroy(G));
    CK(cudaStreamDestroy(s)); CK(cudaStreamDestroy(sc));
    CK(cudaFreeHost(ring));
    return finish("own_graph");
}
