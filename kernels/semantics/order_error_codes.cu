// error_codes: the exact codes that calls return synchronously, and the
// runtime's per-thread last-error state, in the middle of a repeating loop of
// valid work (kernels through <<<>>>, cudaLaunchKernel, a cooperative launch
// and a cluster launch, a memset, copies, event records, a wait on an event
// never recorded).  Every 5th iteration, between the steps of that work:
//  - launches with an invalid configuration: 2048 threads a block and a grid
//    of 0 blocks through <<<>>> (seen only through cudaPeekAtLastError /
//    cudaGetLastError); one thread past cudaFuncAttributes::maxThreadsPerBlock,
//    one byte of dynamic shared memory past maxDynamicSharedSizeBytes, one
//    cooperative block past the occupancy limit (cudaErrorCooperativeLaunchTooLarge),
//    a cluster size that does not divide the grid and one past the portable
//    maximum, each next to the same launch exactly at the limit (valid);
//  - a copy with an invalid cudaMemcpyKind and a memset of a null pointer;
//  - after the iteration's sync: cudaEventElapsedTime on events created with
//    cudaEventDisableTiming and on events never recorded (both
//    cudaErrorInvalidResourceHandle), cudaEventQuery on an event never recorded
//    and cudaStreamQuery on an idle stream (both cudaSuccess).
// Each failing call must return its error at the call, set the last error
// (peek keeps it, get returns it once then cudaSuccess), keep it across later
// successful calls (launches, copies, syncs), be replaced by a later error, and
// must not be sticky: the valid work after it runs and is checked exactly.  The
// invalid launches target the accumulator, so one that ran shows.  An
// interposer that holds such a launch and answers cudaSuccess, clears or sets
// the last error itself, or turns the error sticky, changes the codes (all in
// the digest, the first of each printed) or the results.
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

static const int N = 4096, ITERS = 80;
static const int CL_GRID = 32, CL_TPB = 64, CL_N = CL_GRID * CL_TPB, CL_SIZE = 8;
static const int DYN_BYTES = 64 * 1024;

__global__ void kGen(unsigned *a, unsigned seed) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    a[j] = hsh(seed, (unsigned)j);
}
__global__ void kBad(unsigned *acc) {  // must never run
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < N; j += gridDim.x * blockDim.x) acc[j] += 1000000u;
}
__global__ void __launch_bounds__(384) kLB(unsigned *b, const unsigned *a, unsigned i) {
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < N; j += gridDim.x * blockDim.x) b[j] = b[j] * 3u + a[j] + i;
}
__global__ void kDyn(unsigned *c, unsigned seed) {
    extern __shared__ unsigned sm[];
    unsigned bytes;
    asm volatile("mov.u32 %0, %%dynamic_smem_size;" : "=r"(bytes));
    unsigned n = bytes / 4u;
    for (unsigned k = threadIdx.x; k < n; k += blockDim.x) sm[k] = hsh(seed, k);
    __syncthreads();
    if (n == 0) return;
    for (unsigned j = blockIdx.x * blockDim.x + threadIdx.x; j < (unsigned)N; j += gridDim.x * blockDim.x)
        c[j] = sm[(j * 7u + seed) % n] + bytes;
}
__global__ void kCoop(unsigned *x, unsigned *d, unsigned seed) {
    cg::grid_group g = cg::this_grid();
    unsigned m = gridDim.x * blockDim.x, t = (unsigned)g.thread_rank();
    for (unsigned j = t; j < (unsigned)N; j += m) x[j] = hsh(seed, j);
    g.sync();
    for (unsigned j = t; j < (unsigned)N; j += m) d[j] = x[(j * 13u + 1u) % N] ^ x[N - 1 - j];
}
__global__ void kCl(unsigned *out, unsigned salt) {
    __shared__ unsigned sm[CL_TPB];
    cg::cluster_group cl = cg::this_cluster();
    unsigned rank = cl.block_rank(), nb = cl.num_blocks();
    sm[threadIdx.x] = blockIdx.x * 1000u + threadIdx.x + salt;
    cl.sync();
    unsigned v = cl.map_shared_rank(sm, (rank + 1) % nb)[(threadIdx.x + 1) % blockDim.x];
    cl.sync();
    unsigned j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j < (unsigned)N) out[j] = v * 16u + nb;
}
__global__ void kAcc(unsigned *acc, const unsigned *b, const unsigned *f, const unsigned *d, const unsigned *e,
                     unsigned i) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    acc[j] = acc[j] * 5u + b[j] + (f[j] ^ d[j]) + e[j % CL_N] * 3u + i;
}

enum { S_BLOCK2048, S_GRID0, S_THREADS, S_DSMEM, S_COOP, S_CL3, S_CL16, S_KIND, S_MSNULL,
       S_ELAPSED_NT, S_QUERY_EV, S_QUERY_ST, S_ELAPSED_NR, NSLOT };
static const char *g_label[NSLOT] = {
    "<<<1,2048>>>", "<<<0,256>>>", "maxThreadsPerBlock+1", "maxDynamicSmem+1", "cooperative max+1",
    "cluster 3 of 32 (Ex)", "cluster 16 (ExC)", "cudaMemcpyKind 7", "cudaMemsetAsync(NULL)",
    "elapsed(DisableTiming)", "query(never recorded)", "query(idle stream)", "elapsed(never recorded)"};
static cudaError_t g_first[NSLOT];
static bool g_seen[NSLOT];
static const int ANY_ERROR = -1;

// A call's own return: the documented code where CUDA documents one, else any
// error, the same at every occurrence.
static void code(int it, int slot, cudaError_t r, int want) {
    mix((uint64_t)slot); mix((uint64_t)r);
    if (want == ANY_ERROR ? r == cudaSuccess : (int)r != want)
        failf("iter %d: %s returned %s, want %s", it, g_label[slot], cudaGetErrorName(r),
              want == ANY_ERROR ? "an error" : cudaGetErrorName((cudaError_t)want));
    if (!g_seen[slot]) { g_seen[slot] = true; g_first[slot] = r; }
    else if (r != g_first[slot])
        failf("iter %d: %s returned %s, earlier %s", it, g_label[slot], cudaGetErrorName(r), cudaGetErrorName(g_first[slot]));
}
// The last error: peek must say WANT (and not reset it); with CONSUME, get
// must return WANT once and then cudaSuccess.
static void last_is(int it, const char *where, cudaError_t want, bool consume) {
    cudaError_t p1 = cudaPeekAtLastError(), p2 = cudaPeekAtLastError();
    mix((uint64_t)p1);
    if (p1 != want || p2 != want)
        failf("iter %d: %s: peek %s, peek %s, want %s", it, where, cudaGetErrorName(p1), cudaGetErrorName(p2),
              cudaGetErrorName(want));
    if (!consume) return;
    cudaError_t g1 = cudaGetLastError(), g2 = cudaGetLastError();
    mix((uint64_t)g1); mix((uint64_t)g2);
    if (g1 != want || g2 != cudaSuccess)
        failf("iter %d: %s: get %s then %s, want %s then cudaSuccess", it, where, cudaGetErrorName(g1),
              cudaGetErrorName(g2), cudaGetErrorName(want));
}

int main() {
    CK(cudaSetDevice(0));
    CK(cudaFree(0));
    int nsm = 0, coopOk = 0;
    CK(cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, 0));
    CK(cudaDeviceGetAttribute(&coopOk, cudaDevAttrCooperativeLaunch, 0));
    if (!coopOk) { printf("no cooperative launch\n"); return 2; }

    // launch limits, from the function attributes and the occupancy calculator
    cudaFuncAttributes aLB, aDyn;
    CK(cudaFuncGetAttributes(&aLB, (const void *)kLB));
    const int T = aLB.maxThreadsPerBlock;
    CK(cudaFuncSetAttribute((const void *)kDyn, cudaFuncAttributeMaxDynamicSharedMemorySize, DYN_BYTES));
    CK(cudaFuncGetAttributes(&aDyn, (const void *)kDyn));
    const int dynMax = aDyn.maxDynamicSharedSizeBytes;
    if (dynMax != DYN_BYTES) failf("maxDynamicSharedSizeBytes %d, want %d", dynMax, DYN_BYTES);
    int nbDyn = 0, nbCoop = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nbDyn, kDyn, 256, (size_t)dynMax));
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nbCoop, kCoop, 256, 0));
    if (nbDyn < 1 || nbCoop < 1 || T < 32) { printf("occupancy %d %d, threads %d\n", nbDyn, nbCoop, T); return 2; }
    const int coopMax = nbCoop * nsm;
    int cmax = 0;
    {
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = dim3(CL_GRID); cfg.blockDim = dim3(CL_TPB);
        CK(cudaOccupancyMaxPotentialClusterSize(&cmax, (const void *)kCl, &cfg));
    }
    const bool clOk = (cmax == CL_SIZE);  // portable maximum: 8 at the limit, 16 past it

    cudaStream_t s, sIdle;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&sIdle, cudaStreamNonBlocking));
    cudaEvent_t eT0, eT1, eD0, eD1, eNever, eNever2;
    CK(cudaEventCreate(&eT0)); CK(cudaEventCreate(&eT1));
    CK(cudaEventCreateWithFlags(&eD0, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&eD1, cudaEventDisableTiming));
    CK(cudaEventCreate(&eNever)); CK(cudaEventCreate(&eNever2));

    unsigned *A, *B, *C, *F, *X, *D, *E, *ACC, *ring;
    CK(cudaMalloc(&A, N * 4)); CK(cudaMalloc(&B, N * 4)); CK(cudaMalloc(&C, N * 4)); CK(cudaMalloc(&F, N * 4));
    CK(cudaMalloc(&X, N * 4)); CK(cudaMalloc(&D, N * 4)); CK(cudaMalloc(&E, CL_N * 4)); CK(cudaMalloc(&ACC, N * 4));
    CK(cudaMemset(E, 0, CL_N * 4)); CK(cudaMemset(ACC, 0, N * 4));
    CK(cudaMallocHost(&ring, (size_t)ITERS * N * 4));
    memset(ring, 0xAB, (size_t)ITERS * N * 4);
    CK(cudaDeviceSynchronize());
    CK(cudaGetLastError());

    std::vector<unsigned> hA(N), hX(N), hE(CL_N, 0u), hAcc(N, 0u), ref((size_t)ITERS * N);
    unsigned zero = 0;
    unsigned *accp = ACC;
    for (int i = 0; i < ITERS; ++i) {
        const bool bad = (i % 5 == 4);
        unsigned iu = (unsigned)i, seedA = hsh(1u, iu), seedC = hsh(2u, iu), seedD = hsh(3u, iu), salt = iu * 13u;
        int mval = (i * 37 + 5) & 0xff;
        cudaError_t r = cudaSuccess, pending = cudaSuccess;

        CK(cudaEventRecord(eT0, s));
        CK(cudaStreamWaitEvent(s, eNever, 0));  // never recorded: an empty set of work, a no-op
        kGen<<<N / 256, 256, 0, s>>>(A, seedA);
        CK(cudaGetLastError());
        if (bad) {
            kBad<<<1, 2048, 0, s>>>(ACC);
            r = cudaPeekAtLastError();
        }
        CK(cudaMemsetAsync(B, mval, N * 4, s));
        if (bad) {  // the error outlived the successful memset
            code(i, S_BLOCK2048, r, ANY_ERROR);
            last_is(i, "after <<<1,2048>>> and a memset", r, true);
            kBad<<<0, 256, 0, s>>>(ACC);
            r = cudaGetLastError();
            code(i, S_GRID0, r, ANY_ERROR);
            last_is(i, "after <<<0,256>>>, get", cudaSuccess, true);
        }
        CK(cudaEventRecord(eD0, s));
        {
            void *args[] = {&B, &A, &iu};
            CK(cudaLaunchKernel((const void *)kLB, dim3(8), dim3(T), args, 0, s));  // exactly at the limit
        }
        if (bad) {
            void *args[] = {&accp, &accp, &zero};
            r = cudaLaunchKernel((const void *)kLB, dim3(8), dim3(T + 1), args, 0, s);
            code(i, S_THREADS, r, ANY_ERROR);
            last_is(i, g_label[S_THREADS], r, true);
        }
        {
            void *args[] = {&C, &seedC};
            CK(cudaLaunchKernel((const void *)kDyn, dim3(8), dim3(256), args, (size_t)dynMax, s));
        }
        if (bad) {
            void *args[] = {&accp, &zero};
            r = cudaLaunchKernel((const void *)kDyn, dim3(8), dim3(256), args, (size_t)dynMax + 1, s);
            code(i, S_DSMEM, r, ANY_ERROR);
            last_is(i, g_label[S_DSMEM], r, true);
        }
        {
            void *args[] = {&X, &D, &seedD};
            CK(cudaLaunchCooperativeKernel((const void *)kCoop, dim3(coopMax), dim3(256), args, 0, s));
        }
        if (bad) {
            void *args[] = {&accp, &accp, &zero};
            r = cudaLaunchCooperativeKernel((const void *)kCoop, dim3(coopMax + 1), dim3(256), args, 0, s);
            code(i, S_COOP, r, cudaErrorCooperativeLaunchTooLarge);
            last_is(i, g_label[S_COOP], r, true);
        }
        CK(cudaEventRecord(eD1, s));
        if (clOk) {
            cudaLaunchConfig_t cfg = {};
            cfg.gridDim = dim3(CL_GRID); cfg.blockDim = dim3(CL_TPB); cfg.stream = s;
            cudaLaunchAttribute at[1];
            at[0].id = cudaLaunchAttributeClusterDimension;
            at[0].val.clusterDim.x = CL_SIZE; at[0].val.clusterDim.y = 1; at[0].val.clusterDim.z = 1;
            cfg.attrs = at; cfg.numAttrs = 1;
            CK(cudaLaunchKernelEx(&cfg, kCl, E, salt));
            if (bad) {
                at[0].val.clusterDim.x = 3;  // does not divide the grid
                r = cudaLaunchKernelEx(&cfg, kCl, ACC, 0u);
                code(i, S_CL3, r, ANY_ERROR);
                last_is(i, g_label[S_CL3], r, true);
                at[0].val.clusterDim.x = 2 * CL_SIZE;  // past the portable maximum, no opt-in
                void *args[] = {&accp, &zero};
                r = cudaLaunchKernelExC(&cfg, (const void *)kCl, args);
                code(i, S_CL16, r, ANY_ERROR);
                last_is(i, g_label[S_CL16], r, true);
            }
        }
        CK(cudaMemcpyAsync(F, C, N * 4, cudaMemcpyDeviceToDevice, s));
        if (bad) {
            r = cudaMemcpyAsync(ACC, A, N * 4, static_cast<cudaMemcpyKind>(7), s);
            code(i, S_KIND, r, ANY_ERROR);
            last_is(i, g_label[S_KIND], r, true);
            pending = cudaMemsetAsync(nullptr, 0, N * 4, s);  // left pending on purpose
            code(i, S_MSNULL, pending, ANY_ERROR);
            last_is(i, g_label[S_MSNULL], pending, false);
        }
        kAcc<<<N / 256, 256, 0, s>>>(ACC, B, F, D, E, iu);
        last_is(i, "after kAcc", pending, false);  // a successful launch neither sets nor clears it
        CK(cudaMemcpyAsync(ring + (size_t)i * N, ACC, N * 4, cudaMemcpyDeviceToHost, s));
        CK(cudaEventRecord(eT1, s));
        CK(cudaEventSynchronize(eT1));
        float ms = -1.0f;
        CK(cudaEventElapsedTime(&ms, eT0, eT1));
        CK(cudaStreamQuery(s));  // all its work completed before eT1
        CK(cudaEventQuery(eD1));
        last_is(i, "after the sync", pending, false);
        if (bad) {
            r = cudaEventElapsedTime(&ms, eD0, eD1);  // both complete, timing disabled
            code(i, S_ELAPSED_NT, r, cudaErrorInvalidResourceHandle);
            last_is(i, "elapsed(DisableTiming) replaces the memset's error", r, false);
            cudaError_t q = cudaEventQuery(eNever);
            code(i, S_QUERY_EV, q, cudaSuccess);
            q = cudaStreamQuery(sIdle);
            code(i, S_QUERY_ST, q, cudaSuccess);
            last_is(i, "after the two queries", r, false);
            r = cudaEventElapsedTime(&ms, eNever, eNever2);
            code(i, S_ELAPSED_NR, r, cudaErrorInvalidResourceHandle);
            last_is(i, g_label[S_ELAPSED_NR], r, true);
        }
        last_is(i, "end of iteration", cudaSuccess, false);

        // reference
        unsigned n = (unsigned)dynMax / 4u;
        for (int j = 0; j < N; ++j) { hA[j] = hsh(seedA, (unsigned)j); hX[j] = hsh(seedD, (unsigned)j); }
        if (clOk)
            for (int j = 0; j < CL_N; ++j) {
                unsigned b = (unsigned)j / CL_TPB, t = (unsigned)j % CL_TPB;
                unsigned rank = b % CL_SIZE, peer = b - rank + (rank + 1) % CL_SIZE;
                hE[j] = (peer * 1000u + (t + 1) % CL_TPB + salt) * 16u + CL_SIZE;
            }
        for (int j = 0; j < N; ++j) {
            unsigned uj = (unsigned)j;
            unsigned b = (unsigned)mval * 0x01010101u * 3u + hA[j] + iu;
            unsigned c = hsh(seedC, (uj * 7u + seedC) % n) + (unsigned)dynMax;
            unsigned d = hX[(uj * 13u + 1u) % N] ^ hX[N - 1 - j];
            hAcc[j] = hAcc[j] * 5u + b + (c ^ d) + hE[j % CL_N] * 3u + iu;
        }
        memcpy(&ref[(size_t)i * N], hAcc.data(), N * 4);
    }
    CK(cudaStreamSynchronize(s));
    CK(cudaDeviceSynchronize());
    CK(cudaGetLastError());

    for (int i = 0; i < ITERS; ++i) check_acc(i, ring + (size_t)i * N, &ref[(size_t)i * N], N);
    for (int k = 0; k < NSLOT; ++k)
        printf("code %-24s %s\n", g_label[k], g_seen[k] ? cudaGetErrorName(g_first[k]) : "(not run)");

    CK(cudaEventDestroy(eT0)); CK(cudaEventDestroy(eT1)); CK(cudaEventDestroy(eD0)); CK(cudaEventDestroy(eD1));
    CK(cudaEventDestroy(eNever)); CK(cudaEventDestroy(eNever2));
    CK(cudaStreamDestroy(s)); CK(cudaStreamDestroy(sIdle));
    CK(cudaFree(A)); CK(cudaFree(B)); CK(cudaFree(C)); CK(cudaFree(F)); CK(cudaFree(X)); CK(cudaFree(D));
    CK(cudaFree(E)); CK(cudaFree(ACC)); CK(cudaFreeHost(ring));
    return finish("error_codes");
}
