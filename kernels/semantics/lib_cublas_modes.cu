// cublas_modes: cuBLAS used the way an iterative solver uses it, so that the
// library's own calls (kernels, copies, syncs it makes inside each entry
// point) sit between the program's.  Each iteration the handle moves between
// two non-blocking streams: stream A, then B (event recorded on A, waited on
// by B; B's event waited on by the next iteration's A), with
// cublasSetWorkspace given again after every cublasSetStream (which resets the
// workspace to the default pool); the workspace is a user buffer, switched to
// a second one half-way.  On A, CUBLAS_POINTER_MODE_HOST: Isamax, Sdot and
// Sasum return to host variables, which the documented semantics say are
// written when the call returns (the call blocks); the program uses each at
// once: the dot picks the alpha of an Saxpy, the asum the beta of an Sgemm,
// the index its alpha and the vector offset of the later Sgemv.  A result that
// is stale or not yet written, or work held back past the library's own sync,
// takes a different path and fails the exact host reference.  On B,
// CUBLAS_POINTER_MODE_DEVICE: the program's kernel rewrites alpha/beta in
// device memory just before Saxpy, Sscal and Sgemv, which read them when they
// execute (a value snapshotted at call time, or a kernel replayed with an old
// seed, is wrong); a device-mode Sdot writes device memory that the next
// kernel consumes into a state that seeds the next iteration's scalars.  After
// the workspace switch the old buffer is filled with a sentinel and must stay
// untouched: a replayed cuBLAS kernel that still carries the old workspace
// pointer would scribble on it.  Every value is a small integer held in fp32
// (all sums < 2^24, exact in any summation order); the handle keeps
// CUBLAS_DEFAULT_MATH, which does not use TF32 for Sgemm (and the inputs,
// |v| <= 3, would be exact in TF32 anyway).
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>
#include <cublas_v2.h>
#include "order_common.cuh"


static const int ITERS = 80, HALF = ITERS / 2;
static const int N = 4096;                       // level-1 vectors
static const int GM = 64, GN = 64, GK = 1024;    // Sgemm C(GM x GN) += A(GM x GK) B(GK x GN)
static const int VR = 256, VC = 256, OFFMOD = 1024;  // Sgemv w(VR) = G(VR x VC) z[off .. off+VC)
static const size_t WS = 32u << 20;              // workspace: 32 MiB, the size documented for Hopper
static const unsigned ST0 = 0x13579BDFu;         // device state seed
static const long long BAD = -(1LL << 62);

// Small signed integers of a given odd range, the same on host and device.
__host__ __device__ inline int gval(unsigned seed, unsigned tag, unsigned j, unsigned range) {
    return (int)(hsh(seed + tag * 0x9E3779B9u, j) % range) - (int)(range / 2);
}
// {-2, -1, 1, 2}: never zero, so no call degenerates.
__host__ __device__ inline int pick4(unsigned k) { int v = (int)(k & 3u) - 2; return v >= 0 ? v + 1 : v; }
static int alpha_tab(long long d) { static const int T[5] = {-2, -1, 1, 2, 3}; return T[(int)(((d % 5) + 5) % 5)]; }
static unsigned seed_of(int i) { return hsh(0xB1A5u, (unsigned)i); }
static int spike_pos(unsigned seed) { return (int)(hsh(seed, 0x7777u) % (unsigned)N); }
static int spike_val(unsigned seed, int i) { return ((seed >> 7) & 1u ? -1 : 1) * (9 + i % 4); }
// A float that must hold an integer, as an integer (-0.0 reads as 0); BAD otherwise.
static long long fint(float f) {
    if (!(fabsf(f) < 3.0e7f)) return BAD;
    long long v = (long long)f;
    return (float)v == f ? v : BAD;
}

// blockIdx.y picks the array: x, y, z (range 9), A, B (range 7), G (range 3).
__global__ void kGen(float *x, float *y, float *z, float *Am, float *Bm, float *G, unsigned seed, int p, float spike) {
    float *dst; int n; unsigned range;
    switch (blockIdx.y) {
    case 0: dst = x; n = N; range = 9; break;
    case 1: dst = y; n = N; range = 9; break;
    case 2: dst = z; n = N; range = 9; break;
    case 3: dst = Am; n = GM * GK; range = 7; break;
    case 4: dst = Bm; n = GK * GN; range = 7; break;
    default: dst = G; n = VR * VC; range = 3; break;
    }
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < n; j += gridDim.x * blockDim.x) {
        float v = (float)gval(seed, blockIdx.y + 1u, (unsigned)j, range);
        if (blockIdx.y == 0 && j == p) v = spike;
        dst[j] = v;
    }
}
// The device-mode scalars of this iteration, from the device state and the seed.
__global__ void kParams(float *P, const unsigned *st, unsigned seed) {
    unsigned h = hsh(*st, seed);
    P[0] = (float)pick4(h);          // Saxpy alpha
    P[1] = (float)pick4(h >> 4);     // Sscal alpha
    P[2] = (float)pick4(h >> 8);     // Sgemv alpha
    P[3] = (h >> 12) & 1u ? 1.f : -1.f;  // Sgemv beta
}
// Consumes the device-mode dot: logs it and w, folds it into the state.
__global__ void kConsume(const float *dot, unsigned *st, const float *w, float *ringW, float *ringDot, unsigned it) {
    int t = threadIdx.x;
    ringW[t] = w[t];
    if (t == 0) {
        float d = *dot;
        *ringDot = d;
        *st = hsh(*st ^ (unsigned)(int)d, it);
    }
}

static void check_f(const char *what, int it, long k, float got, long long want) {
    long long g = fint(got);
    if (g != want) failf("iter %d: %s[%ld] = %.1f, want %lld", it, what, k, (double)got, want);
    mix((uint64_t)g);
}

int main() {
    CK(cudaSetDevice(0));
    CK(cudaFree(0));
    cudaStream_t A, B;
    CK(cudaStreamCreateWithFlags(&A, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&B, cudaStreamNonBlocking));
    cudaEvent_t eA, eB;
    CK(cudaEventCreateWithFlags(&eA, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&eB, cudaEventDisableTiming));

    float *dx, *dy, *dz, *dAm, *dBm, *dC, *dG, *dw, *dP, *dDot, *dRingW, *dRingDot;
    unsigned *dState;
    void *dWs[2];
    CK(cudaMalloc(&dx, N * 4)); CK(cudaMalloc(&dy, N * 4)); CK(cudaMalloc(&dz, N * 4));
    CK(cudaMalloc(&dAm, GM * GK * 4)); CK(cudaMalloc(&dBm, GK * GN * 4)); CK(cudaMalloc(&dC, GM * GN * 4));
    CK(cudaMalloc(&dG, VR * VC * 4)); CK(cudaMalloc(&dw, VR * 4));
    CK(cudaMalloc(&dP, 4 * 4)); CK(cudaMalloc(&dDot, 4)); CK(cudaMalloc(&dState, 4));
    CK(cudaMalloc(&dRingW, (size_t)ITERS * VR * 4)); CK(cudaMalloc(&dRingDot, ITERS * 4));
    CK(cudaMalloc(&dWs[0], WS)); CK(cudaMalloc(&dWs[1], WS));   // cudaMalloc: 256-byte aligned, as required
    float *hRingC;
    CK(cudaMallocHost(&hRingC, (size_t)ITERS * GM * GN * 4));
    memset(hRingC, 0xFF, (size_t)ITERS * GM * GN * 4);          // NaN until written
    CK(cudaMemset(dC, 0, GM * GN * 4)); CK(cudaMemset(dw, 0, VR * 4));
    CK(cudaMemset(dRingW, 0xFF, (size_t)ITERS * VR * 4)); CK(cudaMemset(dRingDot, 0xFF, ITERS * 4));
    CK(cudaMemset(dWs[0], 0, WS)); CK(cudaMemset(dWs[1], 0, WS));
    CK(cudaMemcpy(dState, &ST0, 4, cudaMemcpyHostToDevice));
    CK(cudaDeviceSynchronize());

    cublasHandle_t h;
    CB(cublasCreate(&h));
    // Default math: no TF32 down-conversion for Sgemm (cuBLAS docs, cublasMath_t).
    CB(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));
    CK(cudaEventRecord(eB, B));   // so that every iteration, the first included, waits on it

    std::vector<int> gotIdx(ITERS);
    std::vector<float> gotDot(ITERS), gotAsum(ITERS);
    for (int i = 0; i < ITERS; ++i) {
        const unsigned seed = seed_of(i);
        void *ws = dWs[i < HALF ? 0 : 1];
        // ---- stream A, host pointer mode ----
        CK(cudaStreamWaitEvent(A, eB, 0));
        CB(cublasSetStream(h, A));
        CB(cublasSetWorkspace(h, ws, WS));   // after cublasSetStream, which reset it
        CB(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST));
        if (i == HALF) CK(cudaMemsetAsync(dWs[0], 0xA5, WS, A));   // old workspace: ours again, sentinel
        kGen<<<dim3(64, 6), 256, 0, A>>>(dx, dy, dz, dAm, dBm, dG, seed, spike_pos(seed), (float)spike_val(seed, i));
        CK(cudaGetLastError());
        int idx = -7;
        CB(cublasIsamax(h, N, dx, 1, &idx));
        gotIdx[i] = idx;
        float d = NAN;
        CB(cublasSdot(h, N, dx, 1, dy, 1, &d));
        gotDot[i] = d;
        long long di = fint(d);
        const float ah = (float)alpha_tab(di == BAD ? 0 : di);   // chosen by the host result
        CB(cublasSaxpy(h, N, &ah, dx, 1, dy, 1));                // y += ah * x
        float as = NAN;
        CB(cublasSasum(h, N, dy, 1, &as));
        gotAsum[i] = as;
        long long ai = fint(as);
        const float ag = (float)(1 + (unsigned)idx % 3u);
        const float bg = ((ai == BAD ? 0 : ai) & 1) ? -1.f : 1.f;
        CB(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, GM, GN, GK, &ag, dAm, GM, dBm, GK, &bg, dC, GM));
        CK(cudaMemcpyAsync(hRingC + (size_t)i * GM * GN, dC, GM * GN * 4, cudaMemcpyDeviceToHost, A));
        CK(cudaEventRecord(eA, A));
        // ---- stream B, device pointer mode ----
        CK(cudaStreamWaitEvent(B, eA, 0));
        CB(cublasSetStream(h, B));
        CB(cublasSetWorkspace(h, ws, WS));
        CB(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_DEVICE));
        kParams<<<1, 1, 0, B>>>(dP, dState, seed);
        CK(cudaGetLastError());
        CB(cublasSaxpy(h, N, dP + 0, dy, 1, dz, 1));             // z += P0 * y
        CB(cublasSscal(h, N, dP + 1, dz, 1));                    // z *= P1
        const int off = (int)((unsigned)idx % (unsigned)OFFMOD);  // offset chosen by the host result
        CB(cublasSgemv(h, CUBLAS_OP_N, VR, VC, dP + 2, dG, VR, dz + off, 1, dP + 3, dw, 1));
        CB(cublasSdot(h, N, dz, 1, dx, 1, dDot));               // result in device memory
        kConsume<<<1, VR, 0, B>>>(dDot, dState, dw, dRingW + (size_t)i * VR, dRingDot + i, (unsigned)i);
        CK(cudaGetLastError());
        CK(cudaEventRecord(eB, B));
    }
    CK(cudaStreamSynchronize(B));
    CK(cudaStreamSynchronize(A));
    CK(cudaDeviceSynchronize());
    CK(cudaGetLastError());

    std::vector<float> ringW((size_t)ITERS * VR), ringDot(ITERS), fx(N), fy(N), fz(N);
    CK(cudaMemcpy(ringW.data(), dRingW, (size_t)ITERS * VR * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(ringDot.data(), dRingDot, ITERS * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(fx.data(), dx, N * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(fy.data(), dy, N * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(fz.data(), dz, N * 4, cudaMemcpyDeviceToHost));
    std::vector<uint32_t> ws0(WS / 4);
    CK(cudaMemcpy(ws0.data(), dWs[0], WS, cudaMemcpyDeviceToHost));

    // ---- host reference, integers ----
    std::vector<long long> x(N), y(N), z(N), Am(GM * GK), Bm(GK * GN), G(VR * VC), C(GM * GN, 0), w(VR, 0);
    unsigned st = ST0;
    for (int i = 0; i < ITERS; ++i) {
        const unsigned seed = seed_of(i);
        for (int j = 0; j < N; ++j) {
            x[j] = gval(seed, 1, j, 9); y[j] = gval(seed, 2, j, 9); z[j] = gval(seed, 3, j, 9);
        }
        const int p = spike_pos(seed);
        x[p] = spike_val(seed, i);
        for (int j = 0; j < GM * GK; ++j) Am[j] = gval(seed, 4, j, 7);
        for (int j = 0; j < GK * GN; ++j) Bm[j] = gval(seed, 5, j, 7);
        for (int j = 0; j < VR * VC; ++j) G[j] = gval(seed, 6, j, 3);
        // A: Isamax (1-based, the spike is the unique largest magnitude)
        const int idx = p + 1;
        if (gotIdx[i] != idx) failf("iter %d: host-mode Isamax = %d, want %d", i, gotIdx[i], idx);
        mix((uint64_t)(int64_t)gotIdx[i]);
        long long d = 0;
        for (int j = 0; j < N; ++j) d += x[j] * y[j];
        check_f("host-mode Sdot", i, 0, gotDot[i], d);
        const long long ah = alpha_tab(d);
        long long as = 0;
        for (int j = 0; j < N; ++j) { y[j] += ah * x[j]; as += y[j] < 0 ? -y[j] : y[j]; }
        check_f("host-mode Sasum", i, 0, gotAsum[i], as);
        const long long ag = 1 + idx % 3, bg = (as & 1) ? -1 : 1;
        std::vector<long long> AB(GM * GN, 0);
        for (int c = 0; c < GN; ++c)
            for (int k = 0; k < GK; ++k) {
                const long long b = Bm[k + (size_t)c * GK];
                if (b == 0) continue;
                const long long *acol = &Am[(size_t)k * GM];
                for (int r = 0; r < GM; ++r) AB[r + c * GM] += acol[r] * b;
            }
        const float *gc = hRingC + (size_t)i * GM * GN;
        bool bad = false;
        for (int e = 0; e < GM * GN; ++e) {
            C[e] = ag * AB[e] + bg * C[e];
            long long g = fint(gc[e]);
            if (g != C[e] && !bad) { bad = true; failf("iter %d: Sgemm C[%d] = %.1f, want %lld", i, e, (double)gc[e], C[e]); }
            mix((uint64_t)g);
        }
        // B: device-mode scalars from the state chain
        const unsigned hh = hsh(st, seed);
        const long long a0 = pick4(hh), s3 = pick4(hh >> 4), a1 = pick4(hh >> 8), b1 = (hh >> 12) & 1u ? 1 : -1;
        for (int j = 0; j < N; ++j) z[j] = (z[j] + a0 * y[j]) * s3;
        const int off = idx % OFFMOD;
        bad = false;
        for (int r = 0; r < VR; ++r) {
            long long s = 0;
            for (int c = 0; c < VC; ++c) s += G[r + (size_t)c * VR] * z[off + c];
            w[r] = a1 * s + b1 * w[r];
            const float gw = ringW[(size_t)i * VR + r];
            long long g = fint(gw);
            if (g != w[r] && !bad) { bad = true; failf("iter %d: device-mode Sgemv w[%d] = %.1f, want %lld", i, r, (double)gw, w[r]); }
            mix((uint64_t)g);
        }
        long long dot = 0;
        for (int j = 0; j < N; ++j) dot += z[j] * x[j];
        check_f("device-mode Sdot", i, 0, ringDot[i], dot);
        st = hsh(st ^ (unsigned)(int)dot, (unsigned)i);
    }
    // The vectors as the last iteration left them.
    for (int j = 0; j < N; ++j) {
        if (fint(fx[j]) != x[j] || fint(fy[j]) != y[j] || fint(fz[j]) != z[j]) {
            failf("final vectors differ at %d: x %.1f/%lld y %.1f/%lld z %.1f/%lld", j, (double)fx[j], x[j],
                  (double)fy[j], y[j], (double)fz[j], z[j]);
            break;
        }
    }
    for (int j = 0; j < N; ++j) { mix((uint64_t)fint(fx[j])); mix((uint64_t)fint(fy[j])); mix((uint64_t)fint(fz[j])); }
    // The first workspace, given up half-way, still holds the sentinel.
    long touched = 0, first = -1;
    for (size_t k = 0; k < ws0.size(); ++k)
        if (ws0[k] != 0xA5A5A5A5u) { if (first < 0) first = (long)k; ++touched; }
    if (touched) failf("old workspace written after the switch: %ld words, first at word %ld", touched, first);
    mix((uint64_t)touched);

    CB(cublasDestroy(h));
    CK(cudaEventDestroy(eA)); CK(cudaEventDestroy(eB));
    CK(cudaStreamDestroy(A)); CK(cudaStreamDestroy(B));
    float *fr[] = {dx, dy, dz, dAm, dBm, dC, dG, dw, dP, dDot, dRingW, dRingDot};
    for (float *q : fr) CK(cudaFree(q));
    CK(cudaFree(dState)); CK(cudaFree(dWs[0])); CK(cudaFree(dWs[1]));
    CK(cudaFreeHost(hRingC));
    return finish("cublas_modes");
}
