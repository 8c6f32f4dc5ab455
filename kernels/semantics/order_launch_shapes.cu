// launch_shapes: kernel launches whose shape or by-value contents change every
// iteration, on the legacy default stream:
//  - a 4000-byte struct by value and a 16000-byte one (large kernel parameters,
//    CUDA 12.1+), their contents different every iteration;
//  - templated kernels (three instantiations, integer and float);
//  - dynamic shared memory whose size changes every iteration (up to 96 KiB,
//    cudaFuncSetAttribute once); the kernel reads %dynamic_smem_size and reports it;
//  - one kernel whose grid changes every iteration, one whose block changes;
//  - kernels without parameters that work on __device__ globals, fed by
//    cudaMemcpyToSymbolAsync from pinned memory and read back with
//    cudaMemcpyFromSymbolAsync;
//  - output pointers that move every iteration (one slice of a ring each).
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>
#include "order_common.cuh"

static const int ITERS = 70;
static const int BIGN = 1000, HUGEN = 4000, TN = 1024, DYN_BLOCKS = 4, DYN_TPB = 128, GMAX = 13, GTPB = 64;
static const int BLKMAX = 256, NP = 256;
static const int BIGSL = 1024, HUGESL = 4096, DYNSL = DYN_BLOCKS * DYN_TPB, GRIDSL = GMAX * GTPB, BLKSL = 2 * BLKMAX;

struct Big { unsigned v[BIGN]; };     // 4000 bytes
struct Huge { unsigned v[HUGEN]; };   // 16000 bytes

__device__ unsigned gA[NP], gB[NP], gParam;

__global__ void kBig(Big b, unsigned *out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < BIGN) out[t] = b.v[t] * 3u + b.v[BIGN - 1 - t];
}
__global__ void kHuge(unsigned *out, Huge h) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < HUGEN) out[t] = h.v[t] ^ h.v[(t * 7 + 3) % HUGEN];
}
template <int K, typename T>
__global__ void kT(T *out, T a) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (K == 0) out[j] = a + (T)j;
    else out[j] = out[j] * (T)K + a + (T)j;
}
__global__ void kDyn(unsigned *out, unsigned i, unsigned nArg) {
    extern __shared__ unsigned sm[];
    unsigned bytes;
    asm volatile("mov.u32 %0, %%dynamic_smem_size;" : "=r"(bytes));
    unsigned n = bytes / 4u;
    if (nArg < n) n = nArg;
    for (unsigned k = threadIdx.x; k < n; k += blockDim.x) sm[k] = hsh(i + blockIdx.x, k);
    __syncthreads();
    unsigned s = 0;
    for (unsigned k = threadIdx.x; k < n; k += blockDim.x) s += sm[(k * 5u + 1u) % n];
    unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    out[t] = s;
    if (t == 0) out[0] = bytes;  // the size the launch really had
}
__global__ void kGrid(unsigned *out, unsigned i) {
    unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    out[t] = gridDim.x * 100000u + t + i;
}
__global__ void kBlk(unsigned *out, unsigned i) {
    out[blockIdx.x * BLKMAX + threadIdx.x] = blockDim.x * 100000u + threadIdx.x * 3u + blockIdx.x + i;
}
__global__ void kNP1() { int t = threadIdx.x; gA[t] = gA[t] * 7u + gParam + (unsigned)t; }
__global__ void kNP2() { int t = threadIdx.x; gB[t] = (gB[t] ^ gA[t]) + gParam * 3u; }

static unsigned dyn_bytes(int i) { return 4096u * (1u + (unsigned)((i * 5) % 24)); }  // 4 KiB .. 96 KiB
static unsigned grid_of(int i) { return 1u + (unsigned)((i * 7) % GMAX); }
static unsigned blk_of(int i) { return 32u * (1u + (unsigned)((i * 3) % 8)); }

int main() {
    CK(cudaSetDevice(0));
    CK(cudaFree(0));
    CK(cudaFuncSetAttribute((const void *)kDyn, cudaFuncAttributeMaxDynamicSharedMemorySize, 96 * 1024));

    unsigned *dBig, *dHuge, *dDyn, *dGrid, *dBlk, *dNP, *tU;
    unsigned long long *tL;
    float *tF;
    CK(cudaMalloc(&dBig, (size_t)ITERS * BIGSL * 4)); CK(cudaMalloc(&dHuge, (size_t)ITERS * HUGESL * 4));
    CK(cudaMalloc(&dDyn, (size_t)ITERS * DYNSL * 4)); CK(cudaMalloc(&dGrid, (size_t)ITERS * GRIDSL * 4));
    CK(cudaMalloc(&dBlk, (size_t)ITERS * BLKSL * 4)); CK(cudaMalloc(&dNP, (size_t)ITERS * NP * 4));
    CK(cudaMalloc(&tU, TN * 4)); CK(cudaMalloc(&tL, TN * 8)); CK(cudaMalloc(&tF, TN * 4));
    CK(cudaMemset(dBig, 0, (size_t)ITERS * BIGSL * 4)); CK(cudaMemset(dHuge, 0, (size_t)ITERS * HUGESL * 4));
    CK(cudaMemset(dDyn, 0, (size_t)ITERS * DYNSL * 4)); CK(cudaMemset(dGrid, 0, (size_t)ITERS * GRIDSL * 4));
    CK(cudaMemset(dBlk, 0, (size_t)ITERS * BLKSL * 4)); CK(cudaMemset(dNP, 0, (size_t)ITERS * NP * 4));
    CK(cudaMemset(tU, 0, TN * 4)); CK(cudaMemset(tL, 0, TN * 8)); CK(cudaMemset(tF, 0, TN * 4));
    std::vector<unsigned> zeros(NP, 0u);
    CK(cudaMemcpyToSymbol(gA, zeros.data(), NP * 4));
    CK(cudaMemcpyToSymbol(gB, zeros.data(), NP * 4));
    unsigned *hParam;
    CK(cudaMallocHost(&hParam, ITERS * 4));
    for (int i = 0; i < ITERS; ++i) hParam[i] = (unsigned)i * 11u + 3u;
    unsigned *hNP;
    CK(cudaMallocHost(&hNP, (size_t)ITERS * NP * 4));
    memset(hNP, 0xAB, (size_t)ITERS * NP * 4);
    CK(cudaDeviceSynchronize());

    Big big;
    static Huge huge;
    std::vector<unsigned> qA(NP, 0u), qB(NP, 0u);
    for (int i = 0; i < ITERS; ++i) {
        for (int k = 0; k < BIGN; ++k) big.v[k] = hsh(2u * i + 1u, (unsigned)k);
        for (int k = 0; k < HUGEN; ++k) huge.v[k] = hsh(3u * i + 2u, (unsigned)k);
        kBig<<<4, 256>>>(big, dBig + (size_t)i * BIGSL);
        CK(cudaGetLastError());
        kHuge<<<HUGESL / 256, 256>>>(dHuge + (size_t)i * HUGESL, huge);
        CK(cudaGetLastError());
        kT<1, unsigned><<<TN / 256, 256>>>(tU, (unsigned)i * 5u + 1u);
        CK(cudaGetLastError());
        kT<3, unsigned long long><<<TN / 128, 128>>>(tL, (unsigned long long)i * 0x100000001ull);
        CK(cudaGetLastError());
        kT<0, float><<<TN / 64, 64>>>(tF, (float)(i % 1000));
        CK(cudaGetLastError());
        unsigned db = dyn_bytes(i);
        kDyn<<<DYN_BLOCKS, DYN_TPB, db>>>(dDyn + (size_t)i * DYNSL, (unsigned)i, db / 4u);
        CK(cudaGetLastError());
        CK(cudaMemsetAsync(dGrid + (size_t)i * GRIDSL, 0x5A, GRIDSL * 4, 0));
        kGrid<<<grid_of(i), GTPB>>>(dGrid + (size_t)i * GRIDSL, (unsigned)i);
        CK(cudaGetLastError());
        kBlk<<<2, blk_of(i)>>>(dBlk + (size_t)i * BLKSL, (unsigned)i);
        CK(cudaGetLastError());
        CK(cudaMemcpyToSymbolAsync(gParam, hParam + i, 4, 0, cudaMemcpyHostToDevice, 0));
        kNP1<<<1, NP>>>();
        CK(cudaGetLastError());
        kNP2<<<1, NP>>>();
        CK(cudaGetLastError());
        CK(cudaMemcpyFromSymbolAsync(hNP + (size_t)i * NP, gB, NP * 4, 0, cudaMemcpyDeviceToHost, 0));
        // end of the iteration: the host waits and looks at the globals' state at once
        CK(cudaStreamSynchronize(0));
        {
            unsigned prm = (unsigned)i * 11u + 3u;
            for (int t = 0; t < NP; ++t) { qA[t] = qA[t] * 7u + prm + t; qB[t] = (qB[t] ^ qA[t]) + prm * 3u; }
            for (int t = 0; t < NP; ++t)
                if (hNP[(size_t)i * NP + t] != qB[t]) {
                    failf("iter %d (right after the sync): gB[%d] = %08x, want %08x", i, t, hNP[(size_t)i * NP + t], qB[t]);
                    break;
                }
        }
    }
    CK(cudaDeviceSynchronize());
    CK(cudaGetLastError());

    std::vector<unsigned> hBig((size_t)ITERS * BIGSL), hHuge((size_t)ITERS * HUGESL), hDyn((size_t)ITERS * DYNSL);
    std::vector<unsigned> hGrid((size_t)ITERS * GRIDSL), hBlk((size_t)ITERS * BLKSL), hU(TN);
    std::vector<unsigned long long> hL(TN);
    std::vector<float> hF(TN);
    CK(cudaMemcpy(hBig.data(), dBig, hBig.size() * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hHuge.data(), dHuge, hHuge.size() * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hDyn.data(), dDyn, hDyn.size() * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hGrid.data(), dGrid, hGrid.size() * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hBlk.data(), dBlk, hBlk.size() * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hU.data(), tU, TN * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hL.data(), tL, TN * 8, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hF.data(), tF, TN * 4, cudaMemcpyDeviceToHost));

    std::vector<unsigned> rA(NP, 0u), rB(NP, 0u), sm(96 * 1024 / 4);
    std::vector<unsigned> rU(TN, 0u);
    std::vector<unsigned long long> rL(TN, 0ull);
    for (int i = 0; i < ITERS; ++i) {
        // big
        std::vector<unsigned> bv(BIGN), hv(HUGEN);
        for (int k = 0; k < BIGN; ++k) bv[k] = hsh(2u * i + 1u, (unsigned)k);
        for (int k = 0; k < HUGEN; ++k) hv[k] = hsh(3u * i + 2u, (unsigned)k);
        for (int t = 0; t < BIGSL; ++t) {
            unsigned want = t < BIGN ? bv[t] * 3u + bv[BIGN - 1 - t] : 0u;
            unsigned got = hBig[(size_t)i * BIGSL + t];
            if (got != want) { failf("iter %d: 4000-byte struct kernel [%d] = %08x, want %08x", i, t, got, want); break; }
        }
        for (int t = 0; t < HUGESL; ++t) {
            unsigned want = t < HUGEN ? hv[t] ^ hv[(t * 7 + 3) % HUGEN] : 0u;
            unsigned got = hHuge[(size_t)i * HUGESL + t];
            if (got != want) { failf("iter %d: 16000-byte struct kernel [%d] = %08x, want %08x", i, t, got, want); break; }
        }
        // dynamic shared memory
        unsigned db = dyn_bytes(i), n = db / 4u;
        for (int b = 0; b < DYN_BLOCKS; ++b) {
            for (unsigned k = 0; k < n; ++k) sm[k] = hsh((unsigned)i + b, k);
            for (int t = 0; t < DYN_TPB; ++t) {
                unsigned s = 0;
                for (unsigned k = t; k < n; k += DYN_TPB) s += sm[(k * 5u + 1u) % n];
                unsigned want = (b == 0 && t == 0) ? db : s;
                unsigned got = hDyn[(size_t)i * DYNSL + b * DYN_TPB + t];
                if (got != want) {
                    failf("iter %d: dynamic smem (%u bytes) kernel [%d,%d] = %08x, want %08x", i, db, b, t, got, want);
                    b = DYN_BLOCKS; break;
                }
            }
        }
        // grid and block
        unsigned g = grid_of(i), bk = blk_of(i);
        for (int t = 0; t < GRIDSL; ++t) {
            unsigned want = (unsigned)t < g * GTPB ? g * 100000u + t + i : 0x5A5A5A5Au;
            unsigned got = hGrid[(size_t)i * GRIDSL + t];
            if (got != want) { failf("iter %d: grid-%u kernel [%d] = %08x, want %08x", i, g, t, got, want); break; }
        }
        for (int b = 0; b < 2; ++b)
            for (int t = 0; t < BLKMAX; ++t) {
                unsigned want = (unsigned)t < bk ? bk * 100000u + t * 3u + b + i : 0u;
                unsigned got = hBlk[(size_t)i * BLKSL + b * BLKMAX + t];
                if (got != want) {
                    failf("iter %d: block-%u kernel [%d,%d] = %08x, want %08x", i, bk, b, t, got, want);
                    b = 2; break;
                }
            }
        // __device__ globals
        unsigned prm = (unsigned)i * 11u + 3u;
        for (int t = 0; t < NP; ++t) { rA[t] = rA[t] * 7u + prm + t; rB[t] = (rB[t] ^ rA[t]) + prm * 3u; }
        for (int t = 0; t < NP; ++t)
            if (hNP[(size_t)i * NP + t] != rB[t]) {
                failf("iter %d: gB[%d] = %08x, want %08x", i, t, hNP[(size_t)i * NP + t], rB[t]);
                break;
            }
        for (int t = 0; t < TN; ++t) {
            rU[t] = rU[t] * 1u + ((unsigned)i * 5u + 1u) + (unsigned)t;
            rL[t] = rL[t] * 3ull + (unsigned long long)i * 0x100000001ull + (unsigned long long)t;
        }
    }
    for (int t = 0; t < TN; ++t) {
        if (hU[t] != rU[t]) { failf("kT<1,unsigned>[%d] = %08x, want %08x", t, hU[t], rU[t]); break; }
    }
    for (int t = 0; t < TN; ++t) {
        if (hL[t] != rL[t]) { failf("kT<3,u64>[%d] = %016llx, want %016llx", t, hL[t], rL[t]); break; }
    }
    for (int t = 0; t < TN; ++t) {
        float want = (float)((ITERS - 1) % 1000) + (float)t;
        if (hF[t] != want) { failf("kT<0,float>[%d] = %g, want %g", t, (double)hF[t], (double)want); break; }
    }
    for (unsigned v : hBig) mix(v);
    for (unsigned v : hHuge) mix(v);
    for (unsigned v : hDyn) mix(v);
    for (unsigned v : hGrid) mix(v);
    for (unsigned v : hBlk) mix(v);
    for (int k = 0; k < ITERS * NP; ++k) mix(hNP[k]);
    for (unsigned v : hU) mix(v);
    for (unsigned long long v : hL) mix(v);
    for (float v : hF) { uint32_t b; memcpy(&b, &v, 4); mix(b); }

    CK(cudaFreeHost(hParam)); CK(cudaFreeHost(hNP));
    return finish("launch_shapes");
}
