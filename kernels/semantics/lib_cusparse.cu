// cusparse: a conjugate-gradient solver written the way a user writes one
// with cuSPARSE's generic API and cuBLAS, both handles bound (cusparseSetStream,
// cublasSetStream) to one non-blocking stream.  A 256 x 256 five-point
// Laplacian L plus a shift s (CSR, double, n = 65536) is solved 8 times; the
// CG's q = A p is a cusparseSpMV with CUSPARSE_SPMV_CSR_ALG2.  Between solves
// the program changes what a replay must notice:
//  - our kernel rewrites the values array in place as c (L + s I), s and the
//    power-of-two c new for most solves; the SpMVs take alpha = 1/c for
//    q = A p and alpha = -1/c, beta = 1 for r = b - A x0, so the operator is
//    L + s I exactly whatever c is;
//  - a new right-hand side, written by our kernel into the other of two
//    buffers;
//  - cusparseDnVecSetValues moves the descriptors of x and p to the other of
//    two buffers; the ones left behind are filled with NaN bytes (after a
//    warm start has copied the previous solution out);
//  - before 5 of the solves, a new matrix descriptor and a new SpMV buffer
//    (cusparseSpMV_bufferSize, cudaMalloc, cusparseSpMV_preprocess); the old
//    buffer is filled with NaN bytes and freed with cudaFree.
// Solves alternate between two ways of keeping CG's scalars:
//  - CUBLAS_POINTER_MODE_HOST: each cublasDdot returns its scalar to the host
//    (the call returns once it is there); the host computes alpha and beta,
//    passes them by value to Daxpy and Dscal, and tests convergence after
//    every iteration;
//  - CUBLAS_POINTER_MODE_DEVICE: the dots write device memory, our one-thread
//    kernels compute alpha, -alpha and beta there and log r.r into the
//    iteration's slot of a history (the slot is a kernel argument); only r.r
//    comes back, every 4 iterations, by cudaMemcpyAsync into pinned memory
//    the host poisoned first, then cudaStreamSynchronize.
// Either way the host's test on values read back decides when to stop.
// Three solves end with a probe on integer data, exact in any summation
// order: y = alpha A^T z + beta y (cusparseSpMV, CUSPARSE_OPERATION_TRANSPOSE)
// and C = alpha A Z + beta C (cusparseSpMM, 4 columns), each on a descriptor
// and buffer of its own, checked exactly.  Every solve is checked by its true
// residual ||b - (L + s I) x|| / ||b||, computed on the host from the x
// copied back; its iteration count and a digest of x's bits are printed
// (CSR_ALG2 with a non-transposed A and cuBLAS's level-1 routines give the
// same bits every run).  A read-back that returns before its data reads the
// poison and fails; a stale one stops at another iteration; a replay with
// stale scalars, a descriptor's old pointer, the old matrix values, the freed
// buffer or a stale history slot gives another x, NaN or a hole in the
// history; a dropped dependency races the values kernel, the copies and the
// SpMVs: each shows as a failed check, another iteration count or digest.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>
#include <cublas_v2.h>
#include <cusparse.h>
#include "order_common.cuh"

#define CSP(x) do { cusparseStatus_t s_ = (x); if (s_ != CUSPARSE_STATUS_SUCCESS) { \
    printf("cuSPARSE error line %d: %d: %s\n", __LINE__, (int)s_, cusparseGetErrorName(s_)); \
    fflush(stdout); exit(2); } } while (0)

static const int G = 256, N = G * G, NNZ = 5 * N - 4 * G;  // grid side, rows, nonzeros
static const int NC = 4;                                   // SpMM columns
static const int TPB = 256;
static const int SOLVES = 8, MAXIT = 600, EVERY = 4;       // EVERY: device-mode read-back interval
static const double TOL = 1e-8;                            // stop: ||r|| <= TOL ||b|| (recurrence)
static const double CHECK = 1e-7;                          // pass: true residual below this
static const cusparseSpMVAlg_t CG_ALG = CUSPARSE_SPMV_CSR_ALG2;  // bit-wise deterministic for op N
static_assert(N % TPB == 0, "grid of whole blocks");

struct Solve {
    bool dev;            // CUBLAS_POINTER_MODE_DEVICE (else HOST)
    double shift, scale; // A = L + shift I, stored as scale * A
    unsigned rhs;        // right-hand side seed
    bool warm;           // start from the previous solution (else 0)
    int pbuf;            // which of the two p buffers
    bool rebuf;          // new matrix descriptor and SpMV buffer
    bool probe;          // transposed SpMV and SpMM on integers afterwards
    double pa, pb;       // the probe's alpha and beta
};
// Shifts and scales are powers of two: c (4 + s) and the probes' sums are exact.
static const Solve PLAN[SOLVES] = {
    {false, 0.25,     1.0, 11u, false, 0, true,  false, 0.0, 0.0},
    {true,  0.25,     1.0, 12u, true,  1, false, false, 0.0, 0.0},
    {false, 0.125,    2.0, 13u, false, 0, true,  true,  3.0, -1.0},
    {true,  0.125,    2.0, 14u, true,  1, false, false, 0.0, 0.0},
    {false, 0.0625,   0.5, 15u, true,  1, true,  false, 0.0, 0.0},
    {true,  0.5,      0.5, 16u, false, 0, false, true,  -2.0, 0.25},
    {false, 0.03125,  1.0, 17u, false, 1, true,  false, 0.0, 0.0},
    {true,  0.015625, 2.0, 18u, true,  0, true,  true,  0.5, 2.0},
};

// Right-hand side: multiples of 1/1024 in [-1000/1024, 1000/1024].
__host__ __device__ inline double rhs_val(unsigned seed, int i) {
    return (double)((int)(hsh(seed, (unsigned)i) % 2001u) - 1000) / 1024.0;
}
// Probe data: integers in [-(range/2), range/2].
__host__ __device__ inline double ival(unsigned seed, unsigned tag, int i, unsigned range) {
    return (double)((int)(hsh(seed + tag * 0x9E3779B9u, (unsigned)i) % range) - (int)(range / 2));
}

// The values of c (L + s I) in place: diag = c (4 + s), off = -c; one thread a row.
__global__ void kValues(double *val, const int *rowPtr, const int *colInd, double diag, double off) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N) return;
    for (int k = rowPtr[i]; k < rowPtr[i + 1]; ++k) val[k] = colInd[k] == i ? diag : off;
}
__global__ void kRhs(double *b, unsigned seed) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) b[i] = rhs_val(seed, i);
}
__global__ void kProbe(double *z, double *y, double *Z, double *C, unsigned seed) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= NC * N) return;
    Z[i] = ival(seed, 3u, i, 17u);
    C[i] = ival(seed, 4u, i, 9u);
    if (i < N) { z[i] = ival(seed, 1u, i, 17u); y[i] = ival(seed, 2u, i, 9u); }
}
// Device-mode scalars S: [0] r.r, [1] p.q, [2] alpha, [3] -alpha, [4] new r.r, [5] beta, [6] 1.
__global__ void kOne(double *S) { S[6] = 1.0; }
__global__ void kAlpha(double *S) {
    const double a = S[0] / S[1];
    S[2] = a;
    S[3] = -a;
}
__global__ void kBeta(double *S, double *hist, int it) {
    const double rn = S[4];
    S[5] = rn / S[0];
    S[0] = rn;
    hist[it] = rn;
}

static void build_csr(std::vector<int> &rp, std::vector<int> &ci) {
    rp.assign(N + 1, 0);
    ci.clear();
    ci.reserve(NNZ);
    for (int i = 0; i < N; ++i) {
        const int r = i / G, c = i % G;  // columns in increasing order
        if (r > 0) ci.push_back(i - G);
        if (c > 0) ci.push_back(i - 1);
        ci.push_back(i);
        if (c < G - 1) ci.push_back(i + 1);
        if (r < G - 1) ci.push_back(i + G);
        rp[i + 1] = (int)ci.size();
    }
}
static uint64_t bits(double d) { uint64_t v; memcpy(&v, &d, sizeof v); return v; }
// ||b - (L + s I) x|| / ||b||, in double on the host (NaN if x holds NaN).
static double true_residual(const std::vector<int> &rp, const std::vector<int> &ci, double s,
                            const std::vector<double> &b, const double *x) {
    double e = 0.0, bb = 0.0;
    for (int i = 0; i < N; ++i) {
        double ax = 0.0;
        for (int k = rp[i]; k < rp[i + 1]; ++k) ax += (ci[k] == i ? 4.0 + s : -1.0) * x[ci[k]];
        const double d = b[i] - ax;
        e += d * d;
        bb += b[i] * b[i];
    }
    return std::sqrt(e) / std::sqrt(bb);
}
static size_t at_least(size_t sz) { return sz < 256 ? 256 : sz; }

int main() {
    CK(cudaSetDevice(0));
    CK(cudaFree(0));
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    cusparseHandle_t sp;
    cublasHandle_t bl;
    CSP(cusparseCreate(&sp));
    CSP(cusparseSetStream(sp, st));
    CB(cublasCreate(&bl));
    CB(cublasSetStream(bl, st));

    std::vector<int> rp, ci;
    build_csr(rp, ci);
    if ((int)ci.size() != NNZ) { printf("CSR has %d nonzeros, want %d\n", (int)ci.size(), NNZ); exit(2); }

    const size_t VB = (size_t)N * sizeof(double);
    int *dRow, *dCol;
    double *dVal, *dB[2], *dX[2], *dP[2], *dR, *dQ, *dS, *dHist, *dz, *dy, *dZ, *dC;
    CK(cudaMalloc(&dRow, (N + 1) * sizeof(int)));
    CK(cudaMalloc(&dCol, NNZ * sizeof(int)));
    CK(cudaMalloc(&dVal, NNZ * sizeof(double)));
    for (int k = 0; k < 2; ++k) {
        CK(cudaMalloc(&dB[k], VB)); CK(cudaMalloc(&dX[k], VB)); CK(cudaMalloc(&dP[k], VB));
        CK(cudaMemset(dB[k], 0, VB)); CK(cudaMemset(dX[k], 0, VB)); CK(cudaMemset(dP[k], 0, VB));
    }
    CK(cudaMalloc(&dR, VB)); CK(cudaMalloc(&dQ, VB));
    CK(cudaMalloc(&dz, VB)); CK(cudaMalloc(&dy, VB));
    CK(cudaMalloc(&dZ, NC * VB)); CK(cudaMalloc(&dC, NC * VB));
    CK(cudaMalloc(&dS, 8 * sizeof(double)));
    CK(cudaMalloc(&dHist, MAXIT * sizeof(double)));
    CK(cudaMemset(dR, 0, VB)); CK(cudaMemset(dQ, 0, VB));
    CK(cudaMemset(dz, 0, VB)); CK(cudaMemset(dy, 0, VB));
    CK(cudaMemset(dZ, 0, NC * VB)); CK(cudaMemset(dC, 0, NC * VB));
    CK(cudaMemset(dS, 0, 8 * sizeof(double)));
    CK(cudaMemset(dVal, 0, NNZ * sizeof(double)));
    CK(cudaMemcpy(dRow, rp.data(), (N + 1) * sizeof(int), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dCol, ci.data(), NNZ * sizeof(int), cudaMemcpyHostToDevice));

    double *hX, *hY, *hC, *hHist, *hRes;
    CK(cudaMallocHost(&hX, VB));
    CK(cudaMallocHost(&hY, VB));
    CK(cudaMallocHost(&hC, NC * VB));
    CK(cudaMallocHost(&hHist, MAXIT * sizeof(double)));
    CK(cudaMallocHost(&hRes, sizeof(double)));

    // Vector descriptors: made once, pointed at this solve's buffers.
    cusparseDnVecDescr_t vX, vP, vQ, vR, vz, vy;
    CSP(cusparseCreateDnVec(&vX, N, dX[0], CUDA_R_64F));
    CSP(cusparseCreateDnVec(&vP, N, dP[0], CUDA_R_64F));
    CSP(cusparseCreateDnVec(&vQ, N, dQ, CUDA_R_64F));
    CSP(cusparseCreateDnVec(&vR, N, dR, CUDA_R_64F));
    CSP(cusparseCreateDnVec(&vz, N, dz, CUDA_R_64F));
    CSP(cusparseCreateDnVec(&vy, N, dy, CUDA_R_64F));
    cusparseDnMatDescr_t mZ, mC;
    CSP(cusparseCreateDnMat(&mZ, N, NC, N, dZ, CUDA_R_64F, CUSPARSE_ORDER_COL));
    CSP(cusparseCreateDnMat(&mC, N, NC, N, dC, CUDA_R_64F, CUSPARSE_ORDER_COL));
    // The probes' matrices: descriptors of their own on the same arrays, each
    // with a buffer of its own (a buffer serves one matrix and one operation).
    cusparseSpMatDescr_t mA = nullptr, mT, mM;
    CSP(cusparseCreateCsr(&mT, N, N, NNZ, dRow, dCol, dVal, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                          CUSPARSE_INDEX_BASE_ZERO, CUDA_R_64F));
    CSP(cusparseCreateCsr(&mM, N, N, NNZ, dRow, dCol, dVal, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                          CUSPARSE_INDEX_BASE_ZERO, CUDA_R_64F));
    const double one = 1.0, zero = 0.0;
    size_t szT = 0, szM = 0, szA = 0;
    CSP(cusparseSpMV_bufferSize(sp, CUSPARSE_OPERATION_TRANSPOSE, &one, mT, vz, &one, vy, CUDA_R_64F,
                                CUSPARSE_SPMV_ALG_DEFAULT, &szT));
    CSP(cusparseSpMM_bufferSize(sp, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, mM,
                                mZ, &one, mC, CUDA_R_64F, CUSPARSE_SPMM_ALG_DEFAULT, &szM));
    void *bufT, *bufM, *bufA = nullptr;
    CK(cudaMalloc(&bufT, at_least(szT)));
    CK(cudaMalloc(&bufM, at_least(szM)));
    CK(cudaDeviceSynchronize());

    printf("cusparse: CG on a %dx%d five-point Laplacian + shift, n = %d, nnz = %d, %d solves\n",
           G, G, N, NNZ, SOLVES);
    std::vector<double> hb(N), yt(N), cm((size_t)NC * N);
    int itHost = 0, itDev = 0, reads = 0, buffers = 0;
    for (int k = 0; k < SOLVES; ++k) {
        const Solve &P = PLAN[k];
        const int xi = k & 1, bi = k & 1, pi = P.pbuf;
        double *X = dX[xi], *B = dB[bi], *Pv = dP[pi];
        const double diag = P.scale * (4.0 + P.shift), off = -P.scale;
        const double ainv = 1.0 / P.scale, mainv = -ainv;
        const unsigned rseed = hsh(P.rhs, 0x5EEDu);

        // The system: values in place, right-hand side, the starting x.
        kValues<<<N / TPB, TPB, 0, st>>>(dVal, dRow, dCol, diag, off);
        CK(cudaGetLastError());
        kRhs<<<N / TPB, TPB, 0, st>>>(B, rseed);
        CK(cudaGetLastError());
        CK(cudaMemsetAsync(dB[bi ^ 1], 0xFF, VB, st));
        if (P.warm) CK(cudaMemcpyAsync(X, dX[xi ^ 1], VB, cudaMemcpyDeviceToDevice, st));
        else CK(cudaMemsetAsync(X, 0, VB, st));
        CK(cudaMemsetAsync(dX[xi ^ 1], 0xFF, VB, st));  // NaN from here on
        CK(cudaMemsetAsync(dP[pi ^ 1], 0xFF, VB, st));
        CSP(cusparseDnVecSetValues(vX, X));
        CSP(cusparseDnVecSetValues(vP, Pv));
        CK(cudaMemcpyAsync(dR, B, VB, cudaMemcpyDeviceToDevice, st));
        CK(cudaMemsetAsync(dQ, 0, VB, st));

        if (P.rebuf) {  // new descriptor and buffer first, then the old ones go
            cusparseSpMatDescr_t nA;
            CSP(cusparseCreateCsr(&nA, N, N, NNZ, dRow, dCol, dVal, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                                  CUSPARSE_INDEX_BASE_ZERO, CUDA_R_64F));
            size_t sz = 0;
            CSP(cusparseSpMV_bufferSize(sp, CUSPARSE_OPERATION_NON_TRANSPOSE, &ainv, nA, vX, &zero, vQ, CUDA_R_64F,
                                        CG_ALG, &sz));
            void *nb = nullptr;
            CK(cudaMalloc(&nb, at_least(sz)));
            // x is finite (0 or the previous solution) and q is scratch, should it be written.
            CSP(cusparseSpMV_preprocess(sp, CUSPARSE_OPERATION_NON_TRANSPOSE, &ainv, nA, vX, &zero, vQ, CUDA_R_64F,
                                        CG_ALG, nb));
            if (mA) {
                CK(cudaMemsetAsync(bufA, 0xFF, at_least(szA), st));
                CK(cudaStreamSynchronize(st));
                CSP(cusparseDestroySpMat(mA));
                CK(cudaFree(bufA));
            }
            mA = nA;
            bufA = nb;
            szA = sz;
            ++buffers;
        }
        // r = b - A x0 (alpha = -1/c, beta = 1), p = r.
        CSP(cusparseSpMV(sp, CUSPARSE_OPERATION_NON_TRANSPOSE, &mainv, mA, vX, &one, vR, CUDA_R_64F, CG_ALG, bufA));
        CK(cudaMemcpyAsync(Pv, dR, VB, cudaMemcpyDeviceToDevice, st));

        CB(cublasSetPointerMode(bl, CUBLAS_POINTER_MODE_HOST));
        double bn = NAN;
        CB(cublasDnrm2(bl, N, B, 1, &bn));
        const double thr = TOL * bn;
        int it = 0;
        bool conv = false;
        double last = NAN;
        if (!P.dev) {
            double rr = NAN;
            CB(cublasDdot(bl, N, dR, 1, dR, 1, &rr));
            while (it < MAXIT) {
                CSP(cusparseSpMV(sp, CUSPARSE_OPERATION_NON_TRANSPOSE, &ainv, mA, vP, &zero, vQ, CUDA_R_64F, CG_ALG,
                                 bufA));
                double pq = NAN;
                CB(cublasDdot(bl, N, Pv, 1, dQ, 1, &pq));
                const double a = rr / pq, ma = -a;
                CB(cublasDaxpy(bl, N, &a, Pv, 1, X, 1));
                CB(cublasDaxpy(bl, N, &ma, dQ, 1, dR, 1));
                double rn = NAN;
                CB(cublasDdot(bl, N, dR, 1, dR, 1, &rn));
                ++it;
                mix(bits(rn));
                last = rn;
                if (!(rn >= 0.0)) { failf("solve %d: host-mode r.r = %g at iteration %d", k, rn, it); break; }
                if (std::sqrt(rn) <= thr) { conv = true; break; }
                const double beta = rn / rr;
                CB(cublasDscal(bl, N, &beta, Pv, 1));
                CB(cublasDaxpy(bl, N, &one, dR, 1, Pv, 1));
                rr = rn;
            }
            itHost += it;
        } else {
            CK(cudaMemsetAsync(dHist, 0xFF, MAXIT * sizeof(double), st));
            CB(cublasSetPointerMode(bl, CUBLAS_POINTER_MODE_DEVICE));
            CB(cublasDdot(bl, N, dR, 1, dR, 1, dS + 0));
            kOne<<<1, 1, 0, st>>>(dS);
            CK(cudaGetLastError());
            while (it < MAXIT) {
                CSP(cusparseSpMV(sp, CUSPARSE_OPERATION_NON_TRANSPOSE, &ainv, mA, vP, &zero, vQ, CUDA_R_64F, CG_ALG,
                                 bufA));
                CB(cublasDdot(bl, N, Pv, 1, dQ, 1, dS + 1));
                kAlpha<<<1, 1, 0, st>>>(dS);
                CK(cudaGetLastError());
                CB(cublasDaxpy(bl, N, dS + 2, Pv, 1, X, 1));
                CB(cublasDaxpy(bl, N, dS + 3, dQ, 1, dR, 1));
                CB(cublasDdot(bl, N, dR, 1, dR, 1, dS + 4));
                kBeta<<<1, 1, 0, st>>>(dS, dHist, it);
                CK(cudaGetLastError());
                CB(cublasDscal(bl, N, dS + 5, Pv, 1));
                CB(cublasDaxpy(bl, N, dS + 6, dR, 1, Pv, 1));
                ++it;
                if (it % EVERY != 0 && it != MAXIT) continue;
                *(volatile double *)hRes = NAN;
                CK(cudaMemcpyAsync(hRes, dS + 0, sizeof(double), cudaMemcpyDeviceToHost, st));
                CK(cudaStreamSynchronize(st));
                last = *(volatile double *)hRes;
                ++reads;
                if (!(last >= 0.0)) { failf("solve %d: r.r read back after iteration %d = %g", k, it, last); break; }
                if (std::sqrt(last) <= thr) { conv = true; break; }
            }
            CB(cublasSetPointerMode(bl, CUBLAS_POINTER_MODE_HOST));
            itDev += it;
        }

        memset(hX, 0xFF, VB);
        memset(hHist, 0x5C, MAXIT * sizeof(double));
        CK(cudaMemcpyAsync(hX, X, VB, cudaMemcpyDeviceToHost, st));
        if (P.dev) CK(cudaMemcpyAsync(hHist, dHist, MAXIT * sizeof(double), cudaMemcpyDeviceToHost, st));
        CK(cudaStreamSynchronize(st));

        if (P.dev) {
            // One slot per iteration run, each written once; the rest as poisoned.
            for (int t = 0; t < MAXIT; ++t) {
                const bool ok = t < it ? hHist[t] >= 0.0 : bits(hHist[t]) == ~0ull;
                if (!ok) { failf("solve %d: history slot %d = %016llx after %d iterations", k, t,
                                 (unsigned long long)bits(hHist[t]), it); break; }
            }
            if (conv && bits(hHist[it - 1]) != bits(last))
                failf("solve %d: r.r read back %.17g, history has %.17g", k, last, hHist[it - 1]);
            for (int t = 0; t < it; ++t) mix(bits(hHist[t]));
        }
        for (int i = 0; i < N; ++i) hb[i] = rhs_val(rseed, i);
        const double res = true_residual(rp, ci, P.shift, hb, hX);
        const bool pass = conv && res < CHECK;
        if (!conv) failf("solve %d: not converged after %d iterations (r.r %g)", k, it, last);
        else if (!pass) failf("solve %d: true residual %.3e, want below %.0e", k, res, CHECK);
        const uint64_t dg = fnv_bytes(hX, N * sizeof(double));
        mix((uint64_t)it);
        mix(bits(res));
        mix(dg);
        printf("solve %d: %s scalars, shift %g, scale %g, %s start%s: %d iterations, residual %.2e %s, x %016llx\n",
               k, P.dev ? "device" : "host", P.shift, P.scale, P.warm ? "warm" : "cold",
               P.rebuf ? ", new SpMV buffer" : "", it, res, pass ? "PASS" : "FAIL", (unsigned long long)dg);

        if (P.probe) {
            // On this solve's values: y = pa A^T z + pb y, C = pb A Z + pa C; integers, exact.
            const unsigned ps = hsh(P.rhs, 0xB0B0u);
            kProbe<<<NC * N / TPB, TPB, 0, st>>>(dz, dy, dZ, dC, ps);
            CK(cudaGetLastError());
            CSP(cusparseSpMV(sp, CUSPARSE_OPERATION_TRANSPOSE, &P.pa, mT, vz, &P.pb, vy, CUDA_R_64F,
                             CUSPARSE_SPMV_ALG_DEFAULT, bufT));
            CSP(cusparseSpMM(sp, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &P.pb, mM, mZ,
                             &P.pa, mC, CUDA_R_64F, CUSPARSE_SPMM_ALG_DEFAULT, bufM));
            memset(hY, 0xFF, VB);
            memset(hC, 0xFF, NC * VB);
            CK(cudaMemcpyAsync(hY, dy, VB, cudaMemcpyDeviceToHost, st));
            CK(cudaMemcpyAsync(hC, dC, NC * VB, cudaMemcpyDeviceToHost, st));
            CK(cudaStreamSynchronize(st));

            std::fill(yt.begin(), yt.end(), 0.0);
            std::fill(cm.begin(), cm.end(), 0.0);
            for (int r = 0; r < N; ++r)
                for (int e = rp[r]; e < rp[r + 1]; ++e) {
                    const double v = ci[e] == r ? diag : off;
                    yt[ci[e]] += v * ival(ps, 1u, r, 17u);
                    for (int j = 0; j < NC; ++j) cm[r + (size_t)j * N] += v * ival(ps, 3u, ci[e] + j * N, 17u);
                }
            int bad = 0;
            for (int i = 0; i < N; ++i) {
                const double want = P.pa * yt[i] + P.pb * ival(ps, 2u, i, 9u);
                if (!(hY[i] == want) && !bad++)
                    failf("solve %d: transposed SpMV y[%d] = %.17g, want %.17g", k, i, hY[i], want);
                mix(bits(hY[i] + 0.0));  // -0 and +0 alike
            }
            for (int i = 0; i < NC * N; ++i) {
                const double want = P.pb * cm[i] + P.pa * ival(ps, 4u, i, 9u);
                if (!(hC[i] == want) && !bad++)
                    failf("solve %d: SpMM C[%d][%d] = %.17g, want %.17g", k, i % N, i / N, hC[i], want);
                mix(bits(hC[i] + 0.0));
            }
            printf("solve %d probe: transposed SpMV (alpha %g, beta %g), SpMM (alpha %g, beta %g, %d columns): %s\n",
                   k, P.pa, P.pb, P.pb, P.pa, NC, bad ? "FAIL" : "exact");
        }
    }
    printf("cusparse: %d iterations with host scalars, %d with device scalars, %d read-backs of r.r, "
           "%d SpMV buffers\n", itHost, itDev, reads, buffers);
    mix((uint64_t)itHost); mix((uint64_t)itDev); mix((uint64_t)reads);

    CSP(cusparseDestroySpMat(mA)); CSP(cusparseDestroySpMat(mT)); CSP(cusparseDestroySpMat(mM));
    cusparseDnVecDescr_t vecs[] = {vX, vP, vQ, vR, vz, vy};
    for (cusparseDnVecDescr_t v : vecs) CSP(cusparseDestroyDnVec(v));
    CSP(cusparseDestroyDnMat(mZ)); CSP(cusparseDestroyDnMat(mC));
    CSP(cusparseDestroy(sp));
    CB(cublasDestroy(bl));
    CK(cudaStreamDestroy(st));
    CK(cudaFree(bufA)); CK(cudaFree(bufT)); CK(cudaFree(bufM));
    double *dfree[] = {dVal, dB[0], dB[1], dX[0], dX[1], dP[0], dP[1], dR, dQ, dS, dHist, dz, dy, dZ, dC};
    for (double *q : dfree) CK(cudaFree(q));
    CK(cudaFree(dRow)); CK(cudaFree(dCol));
    CK(cudaFreeHost(hX)); CK(cudaFreeHost(hY)); CK(cudaFreeHost(hC)); CK(cudaFreeHost(hHist)); CK(cudaFreeHost(hRes));
    return finish("cusparse");
}
