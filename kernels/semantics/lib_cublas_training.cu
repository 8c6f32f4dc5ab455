// cublas_training: a two-layer MLP (512 -> 1024 ReLU -> 10, softmax
// cross-entropy, batch 256, float32) trained for 100 steps the way a C++ user
// writes a training loop without a framework: cuBLAS for the matrix products,
// kernels of our own for the rest, one cuBLAS handle bound (cublasSetStream)
// to one non-blocking stream, a workspace the program owns (cublasSetWorkspace).
// Parameters, gradients and momentum each live in one flat buffer.  Every step:
//  - our kernel writes the step's inputs and labels from hsh(step, k) (each
//    class a fixed +-0.08 pattern under uniform noise: learnable, new every step);
//  - forward: cublasGemmEx (CUBLAS_COMPUTE_32F) for layer 1, bias + ReLU
//    kernel, cublasSgemm for layer 2, a softmax + cross-entropy kernel writing
//    per-sample losses and the logits' gradient;
//  - our kernel reduces the losses to their mean (fixed-order tree, no
//    atomics) into a device scalar, updates an EMA of it there and logs both in
//    the step's slot of a history (the step is a kernel argument);
//  - every 5th step (and the last) both come back to a pageable host variable
//    poisoned with NaN: cudaStreamSynchronize + cudaMemcpy, or cudaMemcpyAsync
//    on the stream alone (pageable: it returns once the copy is done),
//    alternately; if the EMA rose since the previous read-back the host halves
//    the learning rate's scale, which this very step's update already uses;
//  - backward: cublasSgemm with transposes for both weight gradients and for
//    the hidden layer's input gradient, cublasSgemv against a ones vector for
//    the bias gradients, a ReLU-backward kernel;
//  - SGD with momentum over the flat buffer; the learning rate, a kernel
//    argument, changes every step (linear warm-up, then cosine decay);
//  - every 20th step a host-mode cublasSdot of the parameters with themselves,
//    printed and checked against the host's sum over the parameters copied back.
// CUBLAS_TF32_TENSOR_OP_MATH from step 40 to 59; at step 50 the workspace is
// freed and another one given, and a trap buffer allocated after the free
// (likely at the old address) gets a sentinel that must survive.  At four
// steps the weights, inputs and layer-1 output are copied to pinned memory
// right after the layer-1 GEMM (before the update is queued) and the host
// recomputes 8 rows of it in double.  cuBLAS gives the same bits every run on
// one GPU, stream and workspace size (atomics mode left NOT_ALLOWED), so every
// value printed is bit-exact.  A replay with last step's learning rate, step
// or history slot, a read-back returning before its data (NaN) or stale (other
// halvings), work reordered around the snapshot (weights that did not give
// the layer-1 output), a GEMM kept from the other math mode or the freed
// workspace, a dropped dependency: each prints other bits or fails a check
// (EMA chain, history, host GEMM, dot, trap, loss drop).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>
#include <cublas_v2.h>
#include "order_common.cuh"


static const int B = 256, D = 512, H = 1024, C = 10;   // batch, input, hidden, classes
static const int OW1 = 0, OB1 = OW1 + H * D, OW2 = OB1 + H, OB2 = OW2 + C * H, NP = OB2 + C;  // flat parameters
static const int STEPS = 100, WARM = 10, EVERY = 5, DOT_EVERY = 20;
static const int TF32_ON = 40, TF32_OFF = 60, WS_SWAP = 50;
static const int CHECKS[] = {0, 45, 55, 88};            // host recomputes the layer-1 GEMM there
static const int ROWS = 8;                              // hidden units sampled per check
static const double PEAK = 0.1, FLOOR = 0.05;           // learning rate: peak, cosine floor (fraction of peak)
static const float MU = 0.9f, SIG = 0.08f;              // momentum, class pattern amplitude
static const float EMA_KEEP = 0.9f, EMA_NEW = 0.1f;
static const double LIM_FP32 = 4e-5, LIM_TF32 = 4e-3;   // |z - ref| / sum |w x|: above K eps; TF32 rounds inputs
static const double LIM_DOT = 1e-4, DROP = 0.5;         // Sdot vs host; last loss below DROP x the first
static const size_t WS = 32u << 20;                     // workspace: 32 MiB, the size documented for Hopper
static const int TPB = 256;
static_assert(B == TPB, "one block reduces the batch");
static_assert(OW2 % 4 == 0 && OB1 % 4 == 0, "16-byte aligned parameter blocks");

// Uniform in [-1, 1), exact in float.
__host__ __device__ inline float unif(unsigned h) { return (float)(h >> 8) * (1.0f / 8388608.0f) - 1.0f; }

// X (D x B, column-major: one sample a column) and labels of the step.
__global__ void kData(float *X, int *y, unsigned step) {
    const int b = blockIdx.x;
    const int cls = (int)(hsh(step, 0x40000000u + (unsigned)b) % (unsigned)C);
    if (threadIdx.x == 0) y[b] = cls;
    for (int d = threadIdx.x; d < D; d += blockDim.x) {
        const float c = (hsh(0xCE47E4u + (unsigned)cls, (unsigned)d) & 1u) ? SIG : -SIG;
        X[d + b * D] = c + unif(hsh(step, (unsigned)(b * D + d)));
    }
}
__global__ void kBiasRelu(const float *Z, const float *bias, float *A) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < H * B) A[i] = fmaxf(Z[i] + bias[i % H], 0.f);
}
// One thread a sample: loss = logsumexp(z) - z[y], dL = (softmax(z) - onehot(y)) / B.
__global__ void kSoftmaxXent(const float *logits, const float *bias, const int *y, float *loss, float *dL) {
    const int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= B) return;
    float z[C], m = -INFINITY;
    for (int c = 0; c < C; ++c) { z[c] = logits[c + b * C] + bias[c]; m = fmaxf(m, z[c]); }
    float se = 0.f;
    for (int c = 0; c < C; ++c) se += expf(z[c] - m);
    const float lse = m + logf(se);
    loss[b] = lse - z[y[b]];
    for (int c = 0; c < C; ++c) dL[c + b * C] = (expf(z[c] - lse) - (c == y[b] ? 1.f : 0.f)) * (1.f / B);
}
// stat = {mean loss, EMA of it}; hist[2 step], hist[2 step + 1] the same.
__global__ void kMeanLoss(const float *loss, float *stat, float *hist, int step) {
    __shared__ float s[TPB];
    const int t = threadIdx.x;
    s[t] = loss[t];
    for (int w = TPB / 2; w > 0; w >>= 1) {
        __syncthreads();
        if (t < w) s[t] += s[t + w];
    }
    if (t == 0) {
        const float mean = s[0] * (1.f / B);
        const float ema = step == 0 ? mean : __fmaf_rn(EMA_KEEP, stat[1], __fmul_rn(EMA_NEW, mean));
        stat[0] = mean;
        stat[1] = ema;
        hist[2 * step] = mean;
        hist[2 * step + 1] = ema;
    }
}
__global__ void kReluBack(float *dA, const float *A) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < H * B && !(A[i] > 0.f)) dA[i] = 0.f;
}
__global__ void kSgd(float *w, float *v, const float *g, int n, float lr, float mu) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const float nv = mu * v[i] + g[i];
        v[i] = nv;
        w[i] -= lr * nv;
    }
}
__global__ void kFill(float *p, int n, float v) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = v;
}

static uint32_t fbits(float f) { uint32_t u; memcpy(&u, &f, sizeof u); return u; }
// Warm-up to the peak, then cosine down to FLOOR x peak at the last step.
static float lr_at(int s, double scale) {
    const double f = s < WARM ? (s + 1.0) / WARM
                              : FLOOR + (1.0 - FLOOR) * 0.5 * (1.0 + cos(M_PI * (s - WARM) / (STEPS - 1 - WARM)));
    return (float)(PEAK * scale * f);
}
static bool is_check(int s) {
    for (int c : CHECKS) if (c == s) return true;
    return false;
}
static bool in_tf32(int s) { return s >= TF32_ON && s < TF32_OFF; }
static void set_math(cublasHandle_t h, cublasMath_t m, int s, const char *what) {
    CB(cublasSetMathMode(h, m));
    cublasMath_t got = CUBLAS_DEFAULT_MATH;
    CB(cublasGetMathMode(h, &got));
    if (got != m) failf("step %d: cublasGetMathMode = %d, want %d", s, (int)got, (int)m);
    printf("step %3d: math mode %s\n", s, what);
}

int main() {
    CK(cudaSetDevice(0));
    CK(cudaFree(0));
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    cublasHandle_t h;
    CB(cublasCreate(&h));
    CB(cublasSetStream(h, st));

    float *dP, *dG, *dV, *dX, *dZ1, *dA1, *dLog, *dDL, *dDA1, *dLoss, *dStat, *dHist, *dOnes;
    int *dY;
    void *dWs[2], *dTrap = nullptr;
    CK(cudaMalloc(&dP, NP * sizeof(float))); CK(cudaMalloc(&dG, NP * sizeof(float)));
    CK(cudaMalloc(&dV, NP * sizeof(float)));
    CK(cudaMalloc(&dX, D * B * sizeof(float))); CK(cudaMalloc(&dY, B * sizeof(int)));
    CK(cudaMalloc(&dZ1, H * B * sizeof(float))); CK(cudaMalloc(&dA1, H * B * sizeof(float)));
    CK(cudaMalloc(&dDA1, H * B * sizeof(float)));
    CK(cudaMalloc(&dLog, C * B * sizeof(float))); CK(cudaMalloc(&dDL, C * B * sizeof(float)));
    CK(cudaMalloc(&dLoss, B * sizeof(float))); CK(cudaMalloc(&dStat, 2 * sizeof(float)));
    CK(cudaMalloc(&dHist, 2 * STEPS * sizeof(float))); CK(cudaMalloc(&dOnes, B * sizeof(float)));
    CK(cudaMalloc(&dWs[0], WS)); CK(cudaMalloc(&dWs[1], WS));   // cudaMalloc: 256-byte aligned, as required
    CK(cudaMemset(dV, 0, NP * sizeof(float))); CK(cudaMemset(dG, 0, NP * sizeof(float)));
    CK(cudaMemset(dStat, 0, 2 * sizeof(float)));
    CK(cudaMemset(dHist, 0xFF, 2 * STEPS * sizeof(float)));     // NaN until written
    CK(cudaMemset(dWs[0], 0, WS)); CK(cudaMemset(dWs[1], 0, WS));

    // Weights uniform in +-sqrt(6 / fan), biases 0.
    std::vector<float> params(NP, 0.f);
    const float a1 = sqrtf(6.f / D), a2 = sqrtf(6.f / (H + C));
    for (int i = 0; i < H * D; ++i) params[OW1 + i] = a1 * unif(hsh(0x3E16u, (unsigned)i));
    for (int i = 0; i < C * H; ++i) params[OW2 + i] = a2 * unif(hsh(0x3E17u, (unsigned)i));
    CK(cudaMemcpy(dP, params.data(), NP * sizeof(float), cudaMemcpyHostToDevice));
    kFill<<<1, B>>>(dOnes, B, 1.f);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());

    // The snapshot the host checks the layer-1 GEMM against.
    float *hW1, *hX, *hZ1;
    CK(cudaMallocHost(&hW1, (size_t)H * D * sizeof(float)));
    CK(cudaMallocHost(&hX, (size_t)D * B * sizeof(float)));
    CK(cudaMallocHost(&hZ1, (size_t)H * B * sizeof(float)));

    CB(cublasSetWorkspace(h, dWs[0], WS));   // after cublasSetStream, which resets it
    CB(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST));
    CB(cublasSetAtomicsMode(h, CUBLAS_ATOMICS_NOT_ALLOWED));
    CB(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));
    const float one = 1.f, zero = 0.f;

    printf("cublas_training: MLP %d-%d-%d (ReLU, softmax cross-entropy), batch %d, %d steps, SGD momentum %.2f, "
           "peak lr %g\n", D, H, C, B, STEPS, (double)MU, PEAK);
    std::vector<float> rbLoss, rbEma;
    std::vector<int> rbStep;
    float stat[2];                           // the read-back's pageable destination
    double scale = 1.0;
    float prevEma = NAN;
    int halvings = 0, reads = 0, checks = 0;
    for (int s = 0; s < STEPS; ++s) {
        if (s == TF32_ON) set_math(h, CUBLAS_TF32_TENSOR_OP_MATH, s, "TF32 tensor op");
        if (s == TF32_OFF) set_math(h, CUBLAS_DEFAULT_MATH, s, "default");
        if (s == WS_SWAP) {  // the old workspace goes first, then the handle gets the other one
            CK(cudaStreamSynchronize(st));
            CK(cudaFree(dWs[0]));
            dWs[0] = nullptr;
            CB(cublasSetWorkspace(h, dWs[1], WS));
            CK(cudaMalloc(&dTrap, WS));
            CK(cudaMemsetAsync(dTrap, 0xA5, WS, st));
            printf("step %3d: workspace freed and replaced\n", s);
        }
        const bool check = is_check(s);
        if (check) {
            memset(hW1, 0xFF, (size_t)H * D * sizeof(float));
            memset(hX, 0xFF, (size_t)D * B * sizeof(float));
            memset(hZ1, 0xFF, (size_t)H * B * sizeof(float));
        }
        // ---- forward ----
        kData<<<B, TPB, 0, st>>>(dX, dY, (unsigned)s);
        CK(cudaGetLastError());
        CB(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, H, B, D, &one, dP + OW1, CUDA_R_32F, H, dX, CUDA_R_32F, D,
                        &zero, dZ1, CUDA_R_32F, H, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        if (check) {
            CK(cudaMemcpyAsync(hW1, dP + OW1, (size_t)H * D * sizeof(float), cudaMemcpyDeviceToHost, st));
            CK(cudaMemcpyAsync(hX, dX, (size_t)D * B * sizeof(float), cudaMemcpyDeviceToHost, st));
            CK(cudaMemcpyAsync(hZ1, dZ1, (size_t)H * B * sizeof(float), cudaMemcpyDeviceToHost, st));
        }
        kBiasRelu<<<H * B / TPB, TPB, 0, st>>>(dZ1, dP + OB1, dA1);
        CK(cudaGetLastError());
        CB(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, C, B, H, &one, dP + OW2, C, dA1, H, &zero, dLog, C));
        kSoftmaxXent<<<B / 64, 64, 0, st>>>(dLog, dP + OB2, dY, dLoss, dDL);
        CK(cudaGetLastError());
        kMeanLoss<<<1, TPB, 0, st>>>(dLoss, dStat, dHist, s);
        CK(cudaGetLastError());

        // ---- read-back; the host's decision goes into this step's update ----
        if (s % EVERY == 0 || s == STEPS - 1) {
            *(volatile float *)&stat[0] = NAN;
            *(volatile float *)&stat[1] = NAN;
            if (reads % 2 == 0) {
                CK(cudaStreamSynchronize(st));
                CK(cudaMemcpy(stat, dStat, 2 * sizeof(float), cudaMemcpyDeviceToHost));
            } else {
                CK(cudaMemcpyAsync(stat, dStat, 2 * sizeof(float), cudaMemcpyDeviceToHost, st));
            }
            ++reads;
            const float loss = *(volatile float *)&stat[0], ema = *(volatile float *)&stat[1];
            if (!std::isfinite(loss) || !std::isfinite(ema))
                failf("step %d: loss read back = %a, EMA %a: not finite", s, (double)loss, (double)ema);
            const bool rose = ema > prevEma;   // false on the first read (NaN)
            if (rose) { scale *= 0.5; ++halvings; }
            prevEma = ema;
            rbLoss.push_back(loss); rbEma.push_back(ema); rbStep.push_back(s);
            mix(fbits(loss)); mix(fbits(ema));
            printf("step %3d: loss %a (%.5f) ema %a (%.5f) lr %.6g%s\n", s, (double)loss, (double)loss, (double)ema,
                   (double)ema, (double)lr_at(s, scale), rose ? ", ema rose: schedule scale halved" : "");
        }
        const float lr = lr_at(s, scale);

        // ---- backward ----
        CB(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_T, C, H, B, &one, dDL, C, dA1, H, &zero, dG + OW2, C));
        CB(cublasSgemv(h, CUBLAS_OP_N, C, B, &one, dDL, C, dOnes, 1, &zero, dG + OB2, 1));
        CB(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, H, B, C, &one, dP + OW2, C, dDL, C, &zero, dDA1, H));
        kReluBack<<<H * B / TPB, TPB, 0, st>>>(dDA1, dA1);
        CK(cudaGetLastError());
        CB(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_T, H, D, B, &one, dDA1, H, dX, D, &zero, dG + OW1, H));
        CB(cublasSgemv(h, CUBLAS_OP_N, H, B, &one, dDA1, H, dOnes, 1, &zero, dG + OB1, 1));
        kSgd<<<264, TPB, 0, st>>>(dP, dV, dG, NP, lr, MU);
        CK(cudaGetLastError());

        if (s % DOT_EVERY == DOT_EVERY - 1) {
            float dot = NAN;
            CB(cublasSdot(h, NP, dP, 1, dP, 1, &dot));   // host mode: written when the call returns
            std::fill(params.begin(), params.end(), NAN);
            CK(cudaMemcpyAsync(params.data(), dP, NP * sizeof(float), cudaMemcpyDeviceToHost, st));  // pageable
            double ss = 0.0;
            for (int i = 0; i < NP; ++i) ss += (double)params[i] * params[i];
            const double rel = fabs((double)dot - ss) / ss;
            if (!(rel <= LIM_DOT))
                failf("step %d: Sdot(params) = %.9g, host %.9g, rel err %.2e", s, (double)dot, ss, rel);
            mix(fbits(dot));
            printf("step %3d: |params|^2 = %a (%.6f), host %.6f, rel err %.1e\n", s, (double)dot, (double)dot, ss, rel);
        }
        if (check) {
            CK(cudaStreamSynchronize(st));
            const double lim = in_tf32(s) ? LIM_TF32 : LIM_FP32;
            double worst = 0.0;
            int bad = 0;
            for (int r = 0; r < ROWS; ++r) {
                const int u = (int)(hsh((unsigned)s, 0x5A3Bu + (unsigned)r) % (unsigned)H);
                for (int b = 0; b < B; ++b) {
                    double ref = 0.0, mag = 0.0;
                    for (int d = 0; d < D; ++d) {
                        const double t = (double)hW1[u + (size_t)d * H] * hX[d + (size_t)b * D];
                        ref += t;
                        mag += fabs(t);
                    }
                    const float z = hZ1[u + (size_t)b * H];
                    const double rel = fabs((double)z - ref) / mag;
                    if (!(rel <= lim)) {
                        if (!bad++) failf("step %d: layer-1 Z[%d][%d] = %.9g, host %.9g (rel err %.2e, limit %.0e)",
                                          s, u, b, (double)z, ref, rel, lim);
                        worst = INFINITY;
                    } else if (rel > worst) {
                        worst = rel;
                    }
                    mix(fbits(z));
                }
            }
            ++checks;
            printf("step %3d: layer-1 GEMM on the host, %d rows x %d columns, %s math: max rel err %.1e "
                   "(limit %.0e) %s\n", s, ROWS, B, in_tf32(s) ? "TF32" : "default", worst, lim, bad ? "FAIL" : "ok");
        }
    }
    CK(cudaStreamSynchronize(st));
    CK(cudaGetLastError());

    // History: every slot written, the EMA chain exact, the read-backs in it.
    std::vector<float> hist(2 * STEPS);
    CK(cudaMemcpy(hist.data(), dHist, 2 * STEPS * sizeof(float), cudaMemcpyDeviceToHost));
    for (int s = 0; s < STEPS; ++s) {
        const float m = hist[2 * s], e = hist[2 * s + 1];
        if (!(std::isfinite(m) && m > 0.f)) { failf("history: step %d loss %a", s, (double)m); break; }
        const float want = s == 0 ? m : std::fma(EMA_KEEP, hist[2 * s - 1], EMA_NEW * m);
        if (fbits(e) != fbits(want)) { failf("history: step %d EMA %a, want %a", s, (double)e, (double)want); break; }
    }
    for (size_t k = 0; k < rbStep.size(); ++k) {
        const int s = rbStep[k];
        if (fbits(rbLoss[k]) != fbits(hist[2 * s]) || fbits(rbEma[k]) != fbits(hist[2 * s + 1]))
            failf("step %d: read back loss %a ema %a, history has %a %a", s, (double)rbLoss[k], (double)rbEma[k],
                  (double)hist[2 * s], (double)hist[2 * s + 1]);
    }
    const float first = rbLoss.front(), last = rbLoss.back();
    if (!(last < DROP * first)) failf("loss %.5f at step 0, %.5f at step %d: did not drop below %.2f of it",
                                      (double)first, (double)last, STEPS - 1, DROP);
    // Final parameters, finite; the trap allocated after the workspace switch, untouched.
    CK(cudaMemcpy(params.data(), dP, NP * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < NP; ++i)
        if (!std::isfinite(params[i])) { failf("final parameter %d = %a", i, (double)params[i]); break; }
    std::vector<uint32_t> trap(WS / 4);
    CK(cudaMemcpy(trap.data(), dTrap, WS, cudaMemcpyDeviceToHost));
    long touched = 0, firstHit = -1;
    for (size_t k = 0; k < trap.size(); ++k)
        if (trap[k] != 0xA5A5A5A5u) { if (firstHit < 0) firstHit = (long)k; ++touched; }
    if (touched) failf("buffer allocated after the old workspace was freed written: %ld words, first at %ld",
                       touched, firstHit);
    const uint64_t hd = fnv_bytes(hist.data(), hist.size() * sizeof(float)),
                   pd = fnv_bytes(params.data(), params.size() * sizeof(float));
    mix(hd); mix(pd); mix((uint64_t)halvings); mix((uint64_t)touched);
    printf("cublas_training: loss %.5f -> %.5f, %d read-backs, %d halvings, %d host GEMM checks, "
           "history %016llx, parameters %016llx\n", (double)first, (double)last, reads, halvings, checks,
           (unsigned long long)hd, (unsigned long long)pd);

    CB(cublasDestroy(h));
    CK(cudaStreamDestroy(st));
    float *fr[] = {dP, dG, dV, dX, dZ1, dA1, dLog, dDL, dDA1, dLoss, dStat, dHist, dOnes};
    for (float *q : fr) CK(cudaFree(q));
    CK(cudaFree(dY)); CK(cudaFree(dWs[1])); CK(cudaFree(dTrap));
    CK(cudaFreeHost(hW1)); CK(cudaFreeHost(hX)); CK(cudaFreeHost(hZ1));
    return finish("cublas_training");
}
