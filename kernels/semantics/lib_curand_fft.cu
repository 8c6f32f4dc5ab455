// curand_fft: cuRAND's host API and cuFFT in a simulation-style loop, two
// non-blocking streams that swap roles every iteration (A = st[i&1] makes the
// random numbers, B = st[~i&1] transforms them), ordered only by events:
//  - a device Philox4_32_10 generator: curandSetStream to this iteration's A,
//    curandSetPseudoRandomGeneratorSeed every 7th iteration, and
//    curandSetGeneratorOffset to a new absolute offset every iteration, then
//    curandGenerate.  The library reads seed/offset/stream when called, so a
//    replay with last iteration's kernel arguments or on the wrong stream
//    gives other numbers.  A host generator of the same type, given the same
//    calls, is the reference (cuRAND: "Generating random numbers on the device
//    will result in the same sequence as generating them on the host CPU");
//  - our kernel on A folds the numbers (slowly: it spins first), a second one
//    on B reads that fold only after a wait on an event recorded after it;
//  - on B, after a wait on an event recorded right after curandGenerate, a
//    kernel turns the numbers into small integers, and two batched C2C plans
//    (auto allocation off, work areas we own, switched every 5 iterations with
//    cufftSetWorkArea, cufftSetStream to B) run forward then inverse in place
//    on one of three buffers (rotating).  result/N must round to the input;
//  - D2H copies into pinned slots poisoned with NaN bytes, synchronized only
//    every 4 iterations, on B alone (it joined A through an event).
// Held-back work that runs out of event order reads numbers of another
// iteration, a stale argument (offset, seed, buffer, iteration) gives other
// values, and a dropped join leaves NaN in the slots: every value is checked.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>
#include <curand.h>
#include <cufft.h>
#include "order_common.cuh"

#define CR(x) do { curandStatus_t s_ = (x); if (s_ != CURAND_STATUS_SUCCESS) { \
    printf("cuRAND error line %d: %d\n", __LINE__, (int)s_); fflush(stdout); exit(2); } } while (0)
#define CF(x) do { cufftResult r_ = (x); if (r_ != CUFFT_SUCCESS) { \
    printf("cuFFT error line %d: %d\n", __LINE__, (int)r_); fflush(stdout); exit(2); } } while (0)

static const int ITERS = 80, K = 4;                // K iterations between synchronizations
static const int NR = 65536;                       // random words per iteration (power of two)
static const int G = 1024, TPB = 256;              // fold: G threads, NR / G words each
static const int NS = 256, BS = 256;               // small plan: 256 points x 256 batches
static const int NB = 1 << 17, BB = 2;             // big plan: 131072 points x 2 batches
static const int XS = NS * BS, NX = XS + NB * BB;  // complex elements per buffer
static const long long SPIN = 300000;              // cycles kFold waits before writing

static uint64_t seed_of(int i) { return ((uint64_t)hsh((unsigned)i, 0x5EEDu) << 32) | hsh((unsigned)i, 0x5EE0u); }
static uint64_t offset_of(int i) { return ((uint64_t)hsh((unsigned)i, 0x0FF5u) << 12) | ((uint64_t)i << 2); }
static bool reseeds(int i) { return i % 7 == 3; }

// Input value k of iteration i from the random words: re, im in [-8, 7].
__host__ __device__ inline unsigned in_word(const unsigned *r, int k, unsigned i) {
    return hsh(r[k & (NR - 1)], (unsigned)k + i * 0x9E37u);
}
__host__ __device__ inline int in_re(unsigned v) { return (int)(v & 15u) - 8; }
__host__ __device__ inline int in_im(unsigned v) { return (int)((v >> 4) & 15u) - 8; }

__global__ void kFold(unsigned *fold, const unsigned *r, unsigned i, long long slow) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned h = hsh(i, (unsigned)t);
    for (int m = 0; m < NR / G; ++m) h = hsh(h, r[t + m * G]);
    spin_cycles(slow);
    fold[t] = h;
}
__global__ void kTail(unsigned *tail, const unsigned *fold, unsigned i) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    tail[t] = fold[t] * 3u + hsh(i, (unsigned)t ^ 0x77u);
}
__global__ void kInput(cufftComplex *x, const unsigned *r, unsigned i) {
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= NX) return;
    unsigned v = in_word(r, k, i);
    x[k] = make_float2((float)in_re(v), (float)in_im(v));
}

// One component of the round trip: value/n must be within 0.25 of an integer
// equal to want.  Returns false (and leaves *got alone) when it is not.
static bool round_trip(float value, int n, int want, int *got) {
    double v = (double)value / (double)n, r = std::nearbyint(v);
    if (!(std::fabs(v - r) < 0.25) || !(std::fabs(r) < 1e6)) return false;  // NaN fails both
    *got = (int)r;
    return *got == want;
}

int main() {
    CK(cudaSetDevice(0));
    CK(cudaFree(0));
    cudaStream_t st[2];
    CK(cudaStreamCreateWithFlags(&st[0], cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&st[1], cudaStreamNonBlocking));
    cudaEvent_t evR, evA;  // after curandGenerate on A; after A's copies
    CK(cudaEventCreateWithFlags(&evR, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&evA, cudaEventDisableTiming));

    unsigned *dR, *dFold, *dTail;
    cufftComplex *dX[3];
    CK(cudaMalloc(&dR, NR * 4)); CK(cudaMalloc(&dFold, G * 4)); CK(cudaMalloc(&dTail, G * 4));
    for (int b = 0; b < 3; ++b) CK(cudaMalloc(&dX[b], (size_t)NX * sizeof(cufftComplex)));
    CK(cudaMemset(dR, 0, NR * 4)); CK(cudaMemset(dFold, 0, G * 4)); CK(cudaMemset(dTail, 0, G * 4));

    // Generators: same type, same initial seed (offset 0 by default on both).
    const uint64_t SEED0 = 0x0123456789ABCDEFull;
    curandGenerator_t gd, gh;
    CR(curandCreateGenerator(&gd, CURAND_RNG_PSEUDO_PHILOX4_32_10));
    CR(curandCreateGeneratorHost(&gh, CURAND_RNG_PSEUDO_PHILOX4_32_10));
    CR(curandSetPseudoRandomGeneratorSeed(gd, SEED0));
    CR(curandSetPseudoRandomGeneratorSeed(gh, SEED0));
    CR(curandSetGeneratorOffset(gd, 0));
    CR(curandSetGeneratorOffset(gh, 0));

    // Plans: no auto allocation; two work areas of our own per plan.
    cufftHandle plan[2];
    const int pn[2] = {NS, NB}, pb[2] = {BS, BB};
    const size_t poff[2] = {0, (size_t)XS};
    void *work[2][2];
    for (int p = 0; p < 2; ++p) {
        size_t ws = 0;
        CF(cufftCreate(&plan[p]));
        CF(cufftSetAutoAllocation(plan[p], 0));
        CF(cufftMakePlan1d(plan[p], pn[p], CUFFT_C2C, pb[p], &ws));
        if (ws < 256) ws = 256;
        for (int w = 0; w < 2; ++w) { CK(cudaMalloc(&work[p][w], ws)); CK(cudaMemset(work[p][w], 0xA5, ws)); }
        CF(cufftSetWorkArea(plan[p], work[p][0]));
    }

    unsigned *hR, *hFold, *hTail;
    cufftComplex *hX;
    CK(cudaMallocHost(&hR, (size_t)K * NR * 4));
    CK(cudaMallocHost(&hFold, (size_t)K * G * 4));
    CK(cudaMallocHost(&hTail, (size_t)K * G * 4));
    CK(cudaMallocHost(&hX, (size_t)K * NX * sizeof(cufftComplex)));
    CK(cudaDeviceSynchronize());

    std::vector<unsigned> ref(NR), rfold(G);
    int fft_ok = 0, reseed_n = 0;
    for (int g0 = 0; g0 < ITERS; g0 += K) {
        // Poison every slot (0xFF bytes: NaN floats, ~0 words); nothing is in flight.
        memset(hR, 0xFF, (size_t)K * NR * 4);
        memset(hFold, 0xFF, (size_t)K * G * 4);
        memset(hTail, 0xFF, (size_t)K * G * 4);
        memset(hX, 0xFF, (size_t)K * NX * sizeof(cufftComplex));
        for (int i = g0; i < g0 + K; ++i) {
            const int s = i - g0;
            cudaStream_t A = st[i & 1], B = st[(i + 1) & 1];
            cufftComplex *X = dX[i % 3];
            // A: the random numbers and their fold.  A's previous op is the
            // previous iteration's B tail, so everything before is done.
            if (reseeds(i)) { CR(curandSetPseudoRandomGeneratorSeed(gd, seed_of(i))); ++reseed_n; }
            CR(curandSetGeneratorOffset(gd, offset_of(i)));
            CR(curandSetStream(gd, A));
            CR(curandGenerate(gd, dR, NR));
            CK(cudaEventRecord(evR, A));
            kFold<<<G / TPB, TPB, 0, A>>>(dFold, dR, (unsigned)i, SPIN);
            CK(cudaGetLastError());
            CK(cudaMemcpyAsync(hFold + (size_t)s * G, dFold, G * 4, cudaMemcpyDeviceToHost, A));
            CK(cudaMemcpyAsync(hR + (size_t)s * NR, dR, NR * 4, cudaMemcpyDeviceToHost, A));
            CK(cudaEventRecord(evA, A));
            // B: inputs from the numbers, forward + inverse of both plans.
            CK(cudaStreamWaitEvent(B, evR, 0));
            kInput<<<(NX + TPB - 1) / TPB, TPB, 0, B>>>(X, dR, (unsigned)i);
            CK(cudaGetLastError());
            for (int p = 0; p < 2; ++p) {
                CF(cufftSetStream(plan[p], B));
                CF(cufftSetWorkArea(plan[p], work[p][(i / 5) & 1]));
                CF(cufftExecC2C(plan[p], X + poff[p], X + poff[p], CUFFT_FORWARD));
                CF(cufftExecC2C(plan[p], X + poff[p], X + poff[p], CUFFT_INVERSE));
            }
            // B joins A (kFold is still spinning when B gets here), reads the fold.
            CK(cudaStreamWaitEvent(B, evA, 0));
            kTail<<<G / TPB, TPB, 0, B>>>(dTail, dFold, (unsigned)i);
            CK(cudaGetLastError());
            CK(cudaMemcpyAsync(hTail + (size_t)s * G, dTail, G * 4, cudaMemcpyDeviceToHost, B));
            CK(cudaMemcpyAsync(hX + (size_t)s * NX, X, (size_t)NX * sizeof(cufftComplex), cudaMemcpyDeviceToHost, B));
        }
        // The last B follows every op of the group through the events.
        CK(cudaStreamSynchronize(st[(g0 + K) & 1]));
        CK(cudaGetLastError());

        for (int i = g0; i < g0 + K; ++i) {
            const int s = i - g0;
            // The host generator gets the same calls as the device one did.
            if (reseeds(i)) CR(curandSetPseudoRandomGeneratorSeed(gh, seed_of(i)));
            CR(curandSetGeneratorOffset(gh, offset_of(i)));
            CR(curandGenerate(gh, ref.data(), NR));
            const unsigned *gr = hR + (size_t)s * NR;
            for (int j = 0; j < NR; ++j)
                if (gr[j] != ref[j]) { failf("iter %d: random word %d = %08x, host generator %08x", i, j, gr[j], ref[j]); break; }
            for (int j = 0; j < NR; ++j) mix(gr[j]);

            const unsigned *gf = hFold + (size_t)s * G, *gt = hTail + (size_t)s * G;
            for (int t = 0; t < G; ++t) {
                unsigned h = hsh((unsigned)i, (unsigned)t);
                for (int m = 0; m < NR / G; ++m) h = hsh(h, ref[t + m * G]);
                rfold[t] = h;
            }
            for (int t = 0; t < G; ++t)
                if (gf[t] != rfold[t]) { failf("iter %d: fold[%d] = %08x, want %08x", i, t, gf[t], rfold[t]); break; }
            for (int t = 0; t < G; ++t) {
                unsigned want = rfold[t] * 3u + hsh((unsigned)i, (unsigned)t ^ 0x77u);
                if (gt[t] != want) { failf("iter %d: tail[%d] = %08x, want %08x (read the fold before it was written?)", i, t, gt[t], want); break; }
            }
            for (int t = 0; t < G; ++t) { mix(gf[t]); mix(gt[t]); }

            const cufftComplex *gx = hX + (size_t)s * NX;
            unsigned hx = 0;
            bool ok = true;
            for (int k = 0; k < NX; ++k) {
                unsigned v = in_word(ref.data(), k, (unsigned)i);
                int n = k < XS ? NS : NB, re = 0, im = 0;
                bool a = round_trip(gx[k].x, n, in_re(v), &re), b = round_trip(gx[k].y, n, in_im(v), &im);
                if (!(a && b) && ok) {
                    failf("iter %d: element %d after forward+inverse: (%g, %g)/%d, want (%d, %d) within 0.25",
                          i, k, (double)gx[k].x, (double)gx[k].y, n, in_re(v), in_im(v));
                    ok = false;
                }
                hx = hx * 31u + (unsigned)re;
                hx = hx * 31u + (unsigned)im;
            }
            mix(hx);
            fft_ok += ok ? 1 : 0;
        }
    }
    printf("curand: %d generations of %d words, %d reseeds; fft: %d of %d round trips exact\n",
           ITERS, NR, reseed_n, fft_ok, ITERS);
    mix((uint64_t)fft_ok); mix((uint64_t)reseed_n);

    CF(cufftDestroy(plan[0])); CF(cufftDestroy(plan[1]));
    CR(curandDestroyGenerator(gd)); CR(curandDestroyGenerator(gh));
    for (int p = 0; p < 2; ++p) for (int w = 0; w < 2; ++w) CK(cudaFree(work[p][w]));
    for (int b = 0; b < 3; ++b) CK(cudaFree(dX[b]));
    CK(cudaFree(dR)); CK(cudaFree(dFold)); CK(cudaFree(dTail));
    CK(cudaFreeHost(hR)); CK(cudaFreeHost(hFold)); CK(cudaFreeHost(hTail)); CK(cudaFreeHost(hX));
    CK(cudaEventDestroy(evR)); CK(cudaEventDestroy(evA));
    CK(cudaStreamDestroy(st[0])); CK(cudaStreamDestroy(st[1]));
    return finish("curand_fft");
}
