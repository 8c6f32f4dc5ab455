// launch_ex: launch forms whose meaning lives outside the kernel's arguments,
// plus launches that fail, in one stream:
//  - cudaLaunchKernelEx with cudaLaunchAttributeClusterDimension on a kernel
//    without __cluster_dims__; the cluster size changes every iteration (2,4,8)
//    and the kernel's output says which size it ran with (distributed shared
//    memory read of the next block of its cluster);
//  - cudaLaunchAttributePriority, changing every iteration;
//  - cooperative kernels with grid.sync(): cudaLaunchCooperativeKernel and
//    cudaLaunchKernelEx + cudaLaunchAttributeCooperative, alternately, with the
//    grid changing;
//  - programmatic dependent launch (cudaLaunchAttributeProgrammaticStreamSerialization
//    + cudaGridDependencySynchronize in the secondary);
//  - cudaLaunchKernel with one args array whose referents change after each launch;
//  - error semantics: every 10th iteration a launch with 2048 threads a block
//    (<<<>>>, seen only through cudaPeekAtLastError/cudaGetLastError), a cluster
//    size that does not divide the grid, a cooperative grid too large; each
//    returns an error, sets the last error exactly once, and must not run.
#include <cooperative_groups.h>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>
#include "order_common.cuh"

namespace cg = cooperative_groups;

static const int N = 1024, ITERS = 80;
static const int CL_GRID = 16, CL_TPB = 64;  // 16 * 64 = N
static const int CO_TPB = 128;

__global__ void kCluster(unsigned *out, unsigned salt) {
    __shared__ unsigned sm[CL_TPB];
    cg::cluster_group cl = cg::this_cluster();
    unsigned rank = cl.block_rank();
    unsigned nb = cl.num_blocks();
    sm[threadIdx.x] = blockIdx.x * 1000u + threadIdx.x + salt;
    cl.sync();
    unsigned *remote = cl.map_shared_rank(sm, (rank + 1) % nb);
    unsigned v = remote[(threadIdx.x + 1) % blockDim.x];
    cl.sync();
    out[blockIdx.x * blockDim.x + threadIdx.x] = v * 16u + nb;
}
__global__ void kCoop(unsigned *buf, unsigned *out, unsigned salt, unsigned k) {
    cg::grid_group g = cg::this_grid();
    unsigned n = gridDim.x * blockDim.x;
    unsigned t = (unsigned)g.thread_rank();
    buf[t] = hsh(salt, t);
    g.sync();
    unsigned v = buf[(t + 97u * k + 1u) % n] ^ buf[n - 1 - t];
    if (t < (unsigned)N) out[t] = v;
}
__global__ void kPrimary(unsigned *x, unsigned v) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    spin_cycles(10000);
    x[j] = hsh(v, (unsigned)j);
    cudaTriggerProgrammaticLaunchCompletion();
}
__global__ void kSecondary(unsigned *y, const unsigned *x, unsigned i) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    cudaGridDependencySynchronize();
    y[j] = x[j] + i;
}
__global__ void kAddScalar(unsigned *z, unsigned a) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    z[j] = z[j] * 2u + a;
}
__global__ void kBad(unsigned *acc) {  // must never run
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j < N) acc[j] += 1000000u;
}
__global__ void kBadCoop(unsigned *acc) {  // must never run
    cg::grid_group g = cg::this_grid();
    int j = (int)g.thread_rank();
    if (j < N) acc[j] += 3000000u;
    g.sync();
}
__global__ void kAcc(unsigned *acc, const unsigned *c1, const unsigned *c2, const unsigned *y, const unsigned *z,
                     const unsigned *z2) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    acc[j] = acc[j] * 3u + c1[j] + (c2[j] ^ y[j]) + z[j] * 5u + z2[j];
}

int main() {
    CK(cudaSetDevice(0));
    CK(cudaFree(0));
    int least = 0, greatest = 0;
    CK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

    unsigned *C1, *CB, *C2, *X, *Y, *Z, *Z2, *ACC;
    CK(cudaMalloc(&C1, N * 4)); CK(cudaMalloc(&CB, 4096 * 4)); CK(cudaMalloc(&C2, N * 4));
    CK(cudaMalloc(&X, N * 4)); CK(cudaMalloc(&Y, N * 4)); CK(cudaMalloc(&Z, N * 4)); CK(cudaMalloc(&Z2, N * 4));
    CK(cudaMalloc(&ACC, N * 4));
    CK(cudaMemset(Z, 0, N * 4)); CK(cudaMemset(Z2, 0, N * 4)); CK(cudaMemset(ACC, 0, N * 4));
    unsigned *ring;
    CK(cudaMallocHost(&ring, (size_t)ITERS * N * 4));
    memset(ring, 0xAB, (size_t)ITERS * N * 4);
    CK(cudaDeviceSynchronize());

    std::vector<unsigned> rZ(N, 0u), rZ2(N, 0u), rAcc(N, 0u), ref((size_t)ITERS * N);
    std::vector<unsigned> buf(4096);
    unsigned *argp = nullptr;
    unsigned arga = 0;
    void *args[] = {&argp, &arga};

    for (int i = 0; i < ITERS; ++i) {
        unsigned clsz = (i % 3 == 0) ? 2u : (i % 3 == 1) ? 4u : 8u;
        unsigned salt = (unsigned)i * 13u;
        int prio = (i & 1) ? least : greatest;

        // 1. cluster launch with priority
        {
            cudaLaunchConfig_t cfg = {};
            cfg.gridDim = dim3(CL_GRID); cfg.blockDim = dim3(CL_TPB); cfg.dynamicSmemBytes = 0; cfg.stream = s;
            cudaLaunchAttribute at[2];
            at[0].id = cudaLaunchAttributeClusterDimension;
            at[0].val.clusterDim.x = clsz; at[0].val.clusterDim.y = 1; at[0].val.clusterDim.z = 1;
            at[1].id = cudaLaunchAttributePriority;
            at[1].val.priority = prio;
            cfg.attrs = at; cfg.numAttrs = 2;
            CK(cudaLaunchKernelEx(&cfg, kCluster, C1, salt));
        }
        // 2. cooperative launch, two forms, grid changing
        unsigned cgrid = (i & 1) ? 12u : 8u;
        unsigned csalt = hsh(77u, (unsigned)i), ck = (unsigned)i;
        if (i & 1) {
            cudaLaunchConfig_t cfg = {};
            cfg.gridDim = dim3(cgrid); cfg.blockDim = dim3(CO_TPB); cfg.stream = s;
            cudaLaunchAttribute at[1];
            at[0].id = cudaLaunchAttributeCooperative; at[0].val.cooperative = 1;
            cfg.attrs = at; cfg.numAttrs = 1;
            CK(cudaLaunchKernelEx(&cfg, kCoop, CB, C2, csalt, ck));
        } else {
            void *cargs[] = {&CB, &C2, &csalt, &ck};
            CK(cudaLaunchCooperativeKernel((const void *)kCoop, dim3(cgrid), dim3(CO_TPB), cargs, 0, s));
        }
        // error A: too many threads a block, through <<<>>>
        if (i % 10 == 5) {
            kBad<<<1, 2048, 0, s>>>(ACC);
            cudaError_t p1 = cudaPeekAtLastError(), p2 = cudaPeekAtLastError();
            cudaError_t g1 = cudaGetLastError(), g2 = cudaGetLastError();
            // (CUDA 13 reports cudaErrorInvalidValue here; any error will do, the same one each time)
            if (p1 == cudaSuccess || p2 != p1 || g1 != p1 || g2 != cudaSuccess)
                failf("iter %d: bad <<<>>> launch: peek %d, peek %d, get %d, get %d; want E E E 0 with E != 0", i,
                      (int)p1, (int)p2, (int)g1, (int)g2);
            mix((uint64_t)p1); mix((uint64_t)g2);
        }
        // 3. programmatic dependent launch pair
        kPrimary<<<N / 256, 256, 0, s>>>(X, salt + 1u);
        CK(cudaGetLastError());
        {
            cudaLaunchConfig_t cfg = {};
            cfg.gridDim = dim3(N / 256); cfg.blockDim = dim3(256); cfg.stream = s;
            cudaLaunchAttribute at[1];
            at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
            at[0].val.programmaticStreamSerializationAllowed = 1;
            cfg.attrs = at; cfg.numAttrs = 1;
            CK(cudaLaunchKernelEx(&cfg, kSecondary, Y, (const unsigned *)X, (unsigned)i));
        }
        // error B: a cluster size that does not divide the grid
        if (i % 10 == 7) {
            cudaLaunchConfig_t cfg = {};
            cfg.gridDim = dim3(CL_GRID); cfg.blockDim = dim3(CL_TPB); cfg.stream = s;
            cudaLaunchAttribute at[1];
            at[0].id = cudaLaunchAttributeClusterDimension;
            at[0].val.clusterDim.x = 3; at[0].val.clusterDim.y = 1; at[0].val.clusterDim.z = 1;
            cfg.attrs = at; cfg.numAttrs = 1;
            cudaError_t r = cudaLaunchKernelEx(&cfg, kCluster, ACC, 5000000u);  // would overwrite ACC
            cudaError_t g1 = cudaGetLastError(), g2 = cudaGetLastError();
            if (r == cudaSuccess || g1 != r || g2 != cudaSuccess)
                failf("iter %d: cluster 3 of 16: returned %d, get %d, get %d", i, (int)r, (int)g1, (int)g2);
            mix((uint64_t)r);
        }
        // 4. cudaLaunchKernel with one args array, changed after each launch
        argp = Z; arga = (unsigned)i;
        CK(cudaLaunchKernel((const void *)kAddScalar, dim3(N / 128), dim3(128), args, 0, s));
        argp = Z2; arga = (unsigned)i * 3u + 7u;
        CK(cudaLaunchKernel((const void *)kAddScalar, dim3(N / 128), dim3(128), args, 0, s));
        argp = ACC; arga = 0xFFFFFFFFu;  // never launched with these
        // error C: cooperative grid far too large
        if (i % 10 == 3) {
            void *bargs[] = {&ACC};
            cudaError_t r = cudaLaunchCooperativeKernel((const void *)kBadCoop, dim3(100000), dim3(1024), bargs, 0, s);
            cudaError_t g1 = cudaGetLastError(), g2 = cudaGetLastError();
            if (r == cudaSuccess || g1 != r || g2 != cudaSuccess)
                failf("iter %d: oversized cooperative launch: returned %d, get %d, get %d", i, (int)r, (int)g1, (int)g2);
            mix((uint64_t)r);
        }
        // 5. accumulate, with a priority attribute; copy out
        {
            cudaLaunchConfig_t cfg = {};
            cfg.gridDim = dim3(N / 256); cfg.blockDim = dim3(256); cfg.stream = s;
            cudaLaunchAttribute at[1];
            at[0].id = cudaLaunchAttributePriority; at[0].val.priority = (i & 1) ? greatest : least;
            cfg.attrs = at; cfg.numAttrs = 1;
            CK(cudaLaunchKernelEx(&cfg, kAcc, ACC, (const unsigned *)C1, (const unsigned *)C2, (const unsigned *)Y,
                                  (const unsigned *)Z, (const unsigned *)Z2));
        }
        CK(cudaMemcpyAsync(ring + (size_t)i * N, ACC, N * 4, cudaMemcpyDeviceToHost, s));
        {
            cudaError_t pe = cudaPeekAtLastError();
            if (pe != cudaSuccess) failf("iter %d: last error %d at the end of the iteration", i, (int)pe);
        }

        // reference
        unsigned n = cgrid * CO_TPB;
        for (unsigned t = 0; t < n; ++t) buf[t] = hsh(csalt, t);
        for (int j = 0; j < N; ++j) {
            unsigned b = (unsigned)j / CL_TPB, t = (unsigned)j % CL_TPB;
            unsigned rank = b % clsz, base = b - rank, peer = base + (rank + 1) % clsz;
            unsigned c1 = (peer * 1000u + (t + 1) % CL_TPB + salt) * 16u + clsz;
            unsigned c2 = buf[((unsigned)j + 97u * ck + 1u) % n] ^ buf[n - 1 - (unsigned)j];
            unsigned y = hsh(salt + 1u, (unsigned)j) + (unsigned)i;
            rZ[j] = rZ[j] * 2u + (unsigned)i;
            rZ2[j] = rZ2[j] * 2u + (unsigned)i * 3u + 7u;
            rAcc[j] = rAcc[j] * 3u + c1 + (c2 ^ y) + rZ[j] * 5u + rZ2[j];
        }
        memcpy(&ref[(size_t)i * N], rAcc.data(), N * 4);
    }
    CK(cudaStreamSynchronize(s));
    CK(cudaGetLastError());

    for (int i = 0; i < ITERS; ++i) {
        const unsigned *got = ring + (size_t)i * N, *want = &ref[(size_t)i * N];
        check_acc(i, got, want, N);
    }
    CK(cudaStreamDestroy(s));
    CK(cudaFreeHost(ring));
    return finish("launch_ex");
}
