// cusolver: cuSOLVER's dense API in a solver loop in which a value the host
// reads back decides what it queues next.  One handle, bound with
// cusolverDnSetStream to a non-blocking stream s1, switched half-way to s2
// (s2 first waits on an event recorded on s1: work of s1 still in flight then
// reads buffers that s2's first iteration rewrites).  Every iteration:
//  - our kernel builds, from the iteration's seed, A = L*L^T (L integer lower
//    triangular, diagonal 128 or 256, off-diagonal -1/0/1: A is integer and
//    well conditioned) into one of two buffers, and b = A*X for an integer X
//    (two right-hand sides); the fill mode flips every 10 iterations;
//  - devInfo poisoned by a memset, cusolverDnDpotrf (workspace sized once by
//    cusolverDnDpotrf_bufferSize), devInfo copied to pinned memory (poisoned
//    by the host) and waited for (stream sync in the first half, an event
//    sync in the second); the host checks it exactly and branches on it;
//  - every 7th matrix has A[p][p] = -delta written after the rest is built:
//    its leading minors of order <= p are untouched and positive definite,
//    the one of order p+1 is not, so devInfo must be exactly p+1.  The host
//    then skips potrs and instead builds a row-permuted, diagonally dominant
//    integer matrix G, cusolverDnDgetrf (pivoting on) + cusolverDnDgetrs
//    (N and T alternately) with the same kind of known integer solution; the
//    pivots are exactly those of partial pivoting on G (the dominant entry
//    of each column is the pivot) and are read back and checked;
//  - otherwise cusolverDnDpotrs; either way our kernel folds the rounded
//    solution into a running device digest (order-sensitive, across streams)
//    and the solution, the four devInfo words and the pivots go to pinned
//    ring slots (one per iteration) that are checked only at the end.
// The next seed depends on the devInfo read back.  A potrf held back past the
// read gives a poisoned devInfo, a stale replay another matrix's index, a
// stale argument (buffer, fill mode, trans, seed) a wrong solution, and a
// dropped event a race on A, B and devInfo: each is a wrong value here.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>
#include <cuda_runtime.h>
#include <cusolverDn.h>
#include "order_common.cuh"

#define CS(x) do { cusolverStatus_t s_ = (x); if (s_ != CUSOLVER_STATUS_SUCCESS) { \
    printf("cuSOLVER error line %d: %d\n", __LINE__, (int)s_); fflush(stdout); exit(2); } } while (0)

static const int N = 96, NRHS = 2, NB = N * NRHS;  // matrix order, right-hand sides
static const int ITERS = 80, K = 7, SWITCH = ITERS / 2;
static const int POISON = 0x7A7A7A7A;              // host-side poison of the devInfo read

// L(r, k), k <= r: diagonal 128 or 256, below it -1, 0 or 1.  Each row's
// off-diagonal sum is at most 95 < 128, so L (and A = L L^T) is well conditioned.
__host__ __device__ inline int lval(unsigned s, int r, int k) {
    if (k == r) return (hsh(s, 0x10000u + (unsigned)r) & 1u) ? 256 : 128;
    return (int)(hsh(s, (unsigned)(r * N + k)) % 3u) - 1;
}
// M(r, k): diagonal +-128 or +-256, elsewhere -1, 0 or 1 (rows diagonally dominant).
__host__ __device__ inline int mval(unsigned s, int r, int k) {
    unsigned h = hsh(s, (unsigned)(r * N + k));
    if (k == r) return ((h & 1u) ? 256 : 128) * ((h & 2u) ? -1 : 1);
    return (int)(h % 3u) - 1;
}
// Solution X(j, c) in [-8, 8].
__host__ __device__ inline int xval(unsigned s, int j, int c) {
    return (int)(hsh(s, (unsigned)(c * N + j)) % 17u) - 8;
}

// A (column-major, lda = N) = L L^T, every entry an exact integer; A[bad][bad] = -delta.
__global__ void kBuildSPD(double *A, unsigned s, int bad, int delta) {
    int i = threadIdx.x, j = blockIdx.x, m = i < j ? i : j;
    long long sum = 0;
    for (int k = 0; k <= m; ++k) sum += (long long)lval(s, i, k) * lval(s, j, k);
    if (i == j && i == bad) sum = -delta;
    A[i + j * N] = (double)sum;
}
// G row i = M row (pa*i + pc) mod N (pa odd and not a multiple of 3: a permutation).
__global__ void kBuildGen(double *G, unsigned s, int pa, int pc) {
    int i = threadIdx.x, j = blockIdx.x;
    G[i + j * N] = (double)mval(s, (pa * i + pc) % N, j);
}
// B(:, c) = op(A) X(:, c), exactly (integers well below 2^40).
__global__ void kRhs(const double *A, double *B, unsigned xs, int trans) {
    int i = threadIdx.x, c = blockIdx.x;
    long long sum = 0;
    for (int j = 0; j < N; ++j) {
        double a = trans ? A[j + i * N] : A[i + j * N];
        sum += (long long)a * xval(xs, j, c);
    }
    B[i + c * N] = (double)sum;
}
// Running digest of the rounded solutions: order-sensitive.
__global__ void kAccum(unsigned *acc, const double *B, unsigned it) {
    int t = threadIdx.x;
    acc[t] = acc[t] * 0x9E3779B1u + (unsigned)__double2ll_rn(B[t]) + it;
}

struct Iter {
    unsigned seed;
    int want;       // potrf devInfo expected: 0, or bad + 1
    int bad, delta; // non-positive-definite diagonal index (-1: none)
    int pa, pc, tr; // LU branch: row permutation, transpose
    bool upper;
};

static Iter plan(unsigned chain, int i) {
    Iter it;
    it.seed = hsh(chain, (unsigned)i);
    it.bad = (i % K == K - 1) ? (int)(hsh(it.seed, 4u) % (unsigned)N) : -1;
    it.delta = 1 + (int)(hsh(it.seed, 5u) % 50u);
    it.want = it.bad + 1;
    it.pa = 1 + 2 * (int)(hsh(it.seed, 6u) % 48u);
    if (it.pa % 3 == 0) it.pa += 2;
    it.pc = (int)(hsh(it.seed, 7u) % (unsigned)N);
    it.tr = (i / K) % 2;
    it.upper = (i / 10) % 2 == 1;
    return it;
}

int main() {
    CK(cudaSetDevice(0));
    CK(cudaFree(0));
    cudaStream_t s1, s2;
    CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    cudaEvent_t evSwitch, evInfo;
    CK(cudaEventCreateWithFlags(&evSwitch, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&evInfo, cudaEventDisableTiming));
    cusolverDnHandle_t h;
    CS(cusolverDnCreate(&h));
    CS(cusolverDnSetStream(h, s1));

    double *dA[2], *dB[2], *dG, *dWork;
    int *dInfo, *dIpiv;  // dInfo: [0] potrf, [1] getrf, [2] potrs, [3] getrs
    unsigned *dAcc;
    for (int k = 0; k < 2; ++k) {
        CK(cudaMalloc(&dA[k], (size_t)N * N * sizeof(double)));
        CK(cudaMalloc(&dB[k], (size_t)NB * sizeof(double)));
    }
    CK(cudaMalloc(&dG, (size_t)N * N * sizeof(double)));
    CK(cudaMalloc(&dInfo, 4 * sizeof(int)));
    CK(cudaMalloc(&dIpiv, N * sizeof(int)));
    CK(cudaMalloc(&dAcc, NB * sizeof(unsigned)));
    CK(cudaMemset(dAcc, 0, NB * sizeof(unsigned)));
    CK(cudaMemset(dIpiv, 0, N * sizeof(int)));
    CK(cudaMemset(dInfo, 0, 4 * sizeof(int)));

    int lwL = 0, lwU = 0, lwLU = 0;  // queried once, reused every iteration
    CS(cusolverDnDpotrf_bufferSize(h, CUBLAS_FILL_MODE_LOWER, N, dA[0], N, &lwL));
    CS(cusolverDnDpotrf_bufferSize(h, CUBLAS_FILL_MODE_UPPER, N, dA[0], N, &lwU));
    CS(cusolverDnDgetrf_bufferSize(h, N, N, dG, N, &lwLU));
    int lwMax = lwL > lwU ? lwL : lwU;
    if (lwLU > lwMax) lwMax = lwLU;
    if (lwMax < 1) lwMax = 1;
    CK(cudaMalloc(&dWork, (size_t)lwMax * sizeof(double)));

    int *hInfoNow, *hRing, *hPiv;
    double *hX;
    unsigned *hAcc;
    CK(cudaMallocHost(&hInfoNow, sizeof(int)));
    CK(cudaMallocHost(&hRing, (size_t)ITERS * 4 * sizeof(int)));
    CK(cudaMallocHost(&hPiv, (size_t)ITERS * N * sizeof(int)));
    CK(cudaMallocHost(&hX, (size_t)ITERS * NB * sizeof(double)));
    CK(cudaMallocHost(&hAcc, NB * sizeof(unsigned)));
    memset(hRing, 0x5C, (size_t)ITERS * 4 * sizeof(int));
    memset(hPiv, 0x5C, (size_t)ITERS * N * sizeof(int));
    memset(hX, 0xFF, (size_t)ITERS * NB * sizeof(double));  // NaN
    memset(hAcc, 0x5C, NB * sizeof(unsigned));
    CK(cudaDeviceSynchronize());

    std::vector<Iter> its(ITERS);
    std::vector<int> lu(ITERS, 0);
    unsigned chain = 0x5EEDC0DEu;
    cudaStream_t cur = s1;
    int nChol = 0, nLU = 0, nT = 0;
    for (int i = 0; i < ITERS; ++i) {
        if (i == SWITCH) {
            CK(cudaEventRecord(evSwitch, s1));
            CK(cudaStreamWaitEvent(s2, evSwitch, 0));
            CS(cusolverDnSetStream(h, s2));
            cudaStream_t got = nullptr;
            CS(cusolverDnGetStream(h, &got));
            if (got != s2) failf("iter %d: cusolverDnGetStream does not give the stream just set", i);
            cur = s2;
        }
        const Iter it = plan(chain, i);
        its[i] = it;
        const cublasFillMode_t uplo = it.upper ? CUBLAS_FILL_MODE_UPPER : CUBLAS_FILL_MODE_LOWER;
        double *A = dA[i % 2], *B = dB[i % 2];
        CK(cudaMemsetAsync(dInfo, 0xFF, 2 * sizeof(int), cur));     // potrf, getrf: -1 until written
        CK(cudaMemsetAsync(dInfo + 2, 0, 2 * sizeof(int), cur));    // potrs, getrs: 0
        kBuildSPD<<<N, N, 0, cur>>>(A, hsh(it.seed, 0u), it.bad, it.delta);
        CK(cudaGetLastError());
        kRhs<<<NRHS, N, 0, cur>>>(A, B, hsh(it.seed, 1u), 0);
        CK(cudaGetLastError());
        CS(cusolverDnDpotrf(h, uplo, N, A, N, dWork, it.upper ? lwU : lwL, dInfo));
        *(volatile int *)hInfoNow = POISON;
        CK(cudaMemcpyAsync(hInfoNow, dInfo, sizeof(int), cudaMemcpyDeviceToHost, cur));
        if (i < SWITCH) {
            CK(cudaStreamSynchronize(cur));
        } else {
            CK(cudaEventRecord(evInfo, cur));
            CK(cudaEventSynchronize(evInfo));
        }
        const int info = *(volatile int *)hInfoNow;
        if (info != it.want) failf("iter %d: potrf devInfo = %d, want %d", i, info, it.want);
        mix((uint64_t)(int64_t)info);

        if (info == 0) {  // positive definite: solve with the Cholesky factor
            CS(cusolverDnDpotrs(h, uplo, N, NRHS, A, N, B, N, dInfo + 2));
            ++nChol;
        } else {          // not: an LU solve of another system instead
            lu[i] = 1;
            kBuildGen<<<N, N, 0, cur>>>(dG, hsh(it.seed, 3u), it.pa, it.pc);
            CK(cudaGetLastError());
            kRhs<<<NRHS, N, 0, cur>>>(dG, B, hsh(it.seed, 2u), it.tr);
            CK(cudaGetLastError());
            CS(cusolverDnDgetrf(h, N, N, dG, N, dWork, dIpiv, dInfo + 1));
            CS(cusolverDnDgetrs(h, it.tr ? CUBLAS_OP_T : CUBLAS_OP_N, N, NRHS, dG, N, dIpiv, B, N, dInfo + 3));
            CK(cudaMemcpyAsync(hPiv + (size_t)i * N, dIpiv, N * sizeof(int), cudaMemcpyDeviceToHost, cur));
            ++nLU;
            nT += it.tr;
        }
        kAccum<<<1, NB, 0, cur>>>(dAcc, B, (unsigned)i);
        CK(cudaGetLastError());
        CK(cudaMemcpyAsync(hX + (size_t)i * NB, B, NB * sizeof(double), cudaMemcpyDeviceToHost, cur));
        CK(cudaMemcpyAsync(hRing + (size_t)i * 4, dInfo, 4 * sizeof(int), cudaMemcpyDeviceToHost, cur));
        chain = hsh(chain ^ (unsigned)info, 1000u + (unsigned)i);  // what comes next depends on devInfo
    }
    CK(cudaMemcpyAsync(hAcc, dAcc, NB * sizeof(unsigned), cudaMemcpyDeviceToHost, cur));
    CK(cudaStreamSynchronize(s2));
    CK(cudaStreamSynchronize(s1));
    CK(cudaGetLastError());

    // Reference: every solution, devInfo word and pivot, and the running digest.
    std::vector<unsigned> acc(NB, 0u);
    std::vector<int> order(N);
    for (int i = 0; i < ITERS; ++i) {
        const Iter &it = its[i];
        const bool wantLU = it.want != 0;
        if (lu[i] != (int)wantLU) failf("iter %d: took the %s branch", i, lu[i] ? "LU" : "Cholesky");
        const unsigned xs = hsh(it.seed, wantLU ? 2u : 1u);
        const double *x = hX + (size_t)i * NB;
        int bad = 0;
        for (int t = 0; t < NB; ++t) {
            const int want = xval(xs, t % N, t / N);
            const double v = x[t];
            const long long r = (fabs(v) < 1e9) ? llround(v) : -999999999LL;
            if (!(fabs(v - (double)want) < 1e-6) || r != want) {
                if (!bad++) failf("iter %d (%s): x[%d][%d] = %.9g, want %d", i, wantLU ? "getrs" : "potrs",
                                  t % N, t / N, v, want);
            }
            mix((uint64_t)r);
            acc[t] = acc[t] * 0x9E3779B1u + (unsigned)want + (unsigned)i;
        }
        const int *ring = hRing + (size_t)i * 4;
        const int wantRing[4] = { it.want, wantLU ? 0 : -1, 0, 0 };
        static const char *const what[4] = { "potrf", "getrf", "potrs", "getrs" };
        for (int k = 0; k < 4; ++k) {
            if (ring[k] != wantRing[k]) failf("iter %d: %s devInfo (ring) = %d, want %d", i, what[k], ring[k], wantRing[k]);
            mix((uint64_t)(int64_t)ring[k]);
        }
        if (wantLU) {
            // Partial pivoting on G: at step k the pivot is the row holding M's row k.
            for (int r = 0; r < N; ++r) order[r] = (it.pa * r + it.pc) % N;
            const int *piv = hPiv + (size_t)i * N;
            for (int k = 0; k < N; ++k) {
                int r = k;
                while (r < N && order[r] != k) ++r;  // always found: order is a permutation
                if (r == N) r = k;
                std::swap(order[k], order[r]);
                if (piv[k] != r + 1) { failf("iter %d: ipiv[%d] = %d, want %d", i, k, piv[k], r + 1); break; }
            }
            for (int k = 0; k < N; ++k) mix((uint64_t)(int64_t)piv[k]);
        }
    }
    for (int t = 0; t < NB; ++t) {
        if (hAcc[t] != acc[t]) { failf("device digest of the solutions [%d] = %08x, want %08x", t, hAcc[t], acc[t]); break; }
    }
    for (int t = 0; t < NB; ++t) mix(hAcc[t]);
    printf("cusolver: %d Cholesky solves, %d LU solves (%d transposed), stream switched at iteration %d\n",
           nChol, nLU, nT, SWITCH);

    CS(cusolverDnDestroy(h));
    CK(cudaEventDestroy(evSwitch)); CK(cudaEventDestroy(evInfo));
    CK(cudaStreamDestroy(s1)); CK(cudaStreamDestroy(s2));
    for (int k = 0; k < 2; ++k) { CK(cudaFree(dA[k])); CK(cudaFree(dB[k])); }
    CK(cudaFree(dG)); CK(cudaFree(dWork)); CK(cudaFree(dInfo)); CK(cudaFree(dIpiv)); CK(cudaFree(dAcc));
    CK(cudaFreeHost(hInfoNow)); CK(cudaFreeHost(hRing)); CK(cudaFreeHost(hPiv));
    CK(cudaFreeHost(hX)); CK(cudaFreeHost(hAcc));
    return finish("cusolver");
}
