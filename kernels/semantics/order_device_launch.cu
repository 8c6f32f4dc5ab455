// device_launch: CUDA dynamic parallelism (CDP2) inside a host loop.  A
// host-launched parent kernel reads a control table that the PREVIOUS host
// kernel (kGen) computed, and from it decides how many child blocks to launch
// and with which scalars, different every iteration:
//  - two children into the block's device NULL stream (the second reads what
//    the first wrote: device stream order);
//  - 1..8 fire-and-forget children per block, launched by different threads;
//  - one tail launch per block, which reads every block's children (incl. a
//    neighbour block's fire-and-forget output) and what the parent wrote AFTER
//    launching it; it launches two grandchildren (depth 2), one fire-and-forget
//    and one into its own tail stream, the latter reading the former.
// The next host kernel on the same host stream (kConsume) reads the outputs of
// children, tail and grandchildren: the parent grid is complete only when all
// of them are, so the host stream's order covers them.  Every output buffer is
// memset to an iteration-dependent poison byte before the parent, so a child
// that did not run, ran late (after kConsume) or ran twice shows up as a
// wrong word.  An interposer that treats the parent's completion as the end of
// its work, reorders the memset, or replays a stale argument fails the exact
// check of the D2H result against a host model, done every iteration.
// Phase 2 runs two lanes on two streams forked and joined by events; lane 1's
// generator reads lane 0's input, a cross kernel after the join mixes lane 1's
// result into lane 0's.  A device-side counter of child blocks that ran and a
// device launch error flag are checked at the end.
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>
#include "order_common.cuh"

static const int P = 16, CT = 64, NN = P * CT;  // parent blocks x threads
static const int MAXC = 8, MAXE = MAXC * CT;     // child blocks at most, words per block region
static const int ITERS1 = 60, ITERS2 = 40;
// layout of the poisoned work area, in words
static const int O_PRE = 0, O_A = O_PRE + NN, O_B = O_A + P * MAXE, O_F = O_B + P * MAXE,
                 O_T = O_F + P * MAXE, O_G = O_T + NN, O_H = O_G + NN, O_POST = O_H + NN,
                 WORK = O_POST + NN;

struct Lane {
    unsigned *in, *ctl, *acc, *work, *misc;  // misc[0]: error bits, misc[1]: child blocks run
};

__device__ __forceinline__ void note_launch(const Lane &L, unsigned bit) {
    if (cudaGetLastError() != cudaSuccess) atomicOr(L.misc, bit);
}
__device__ __forceinline__ void count_block(const Lane &L) {
    if (threadIdx.x == 0) atomicAdd(L.misc + 1, 1u);
}

__global__ void kGen(Lane L, unsigned seed, const unsigned *xin) {
    int b = blockIdx.x, x = threadIdx.x, j = b * CT + x;
    L.in[j] = hsh(seed, (unsigned)j) ^ L.acc[b * CT + (x * 7) % CT] ^ xin[j];
    if (x < 8) {
        unsigned h = hsh(seed ^ L.acc[b * CT + x], (unsigned)(b * 8 + x)) + xin[b * CT + x];
        L.ctl[b * 8 + x] = x < 3 ? 1u + h % MAXC : h;
    }
}
__global__ void kChildA(Lane L, int b, unsigned sA) {
    count_block(L);
    unsigned k = blockIdx.x * CT + threadIdx.x;
    L.work[O_A + b * MAXE + k] = hsh(L.work[O_PRE + b * CT + threadIdx.x] ^ sA, k);
}
__global__ void kChildB(Lane L, int b, unsigned sB) {  // after kChildA: same device NULL stream
    count_block(L);
    unsigned k = blockIdx.x * CT + threadIdx.x;
    L.work[O_B + b * MAXE + k] = L.work[O_A + b * MAXE + k] * 3u + (sB ^ k);
}
__global__ void kChildF(Lane L, int b, unsigned t, unsigned sF) {
    count_block(L);
    L.work[O_F + b * MAXE + t * CT + threadIdx.x] = hsh(L.work[O_PRE + b * CT + threadIdx.x] + t, sF);
}
__global__ void kGrandF(Lane L, int b, unsigned sT) {
    count_block(L);
    int x = threadIdx.x;
    L.work[O_G + b * CT + x] = hsh(L.work[O_T + b * CT + (x + 3) % CT], sT);
}
__global__ void kGrandT(Lane L, int b, unsigned sT) {  // after kGrandF: tail of kTail
    count_block(L);
    int j = b * CT + threadIdx.x;
    L.work[O_H + j] = L.work[O_G + j] ^ hsh(L.work[O_T + j], sT + 1u);
}
__global__ void kTail(Lane L, int b, unsigned sT) {  // after the whole parent grid and its children
    count_block(L);
    int x = threadIdx.x, nb = (b + 1) % P;
    unsigned v = L.work[O_POST + b * CT + x];
    for (int k = 0; k < MAXC; ++k) {
        v = v * 31u + L.work[O_B + b * MAXE + k * CT + x];
        v = v * 37u + L.work[O_F + nb * MAXE + k * CT + x];
    }
    L.work[O_T + b * CT + x] = v;
    __syncthreads();
    if (x == 0) {
        kGrandF<<<1, CT, 0, cudaStreamFireAndForget>>>(L, b, sT);
        note_launch(L, 16u);
        kGrandT<<<1, CT, 0, cudaStreamTailLaunch>>>(L, b, sT);
        note_launch(L, 32u);
    }
}
__global__ void kParent(Lane L, unsigned pS) {
    int b = blockIdx.x, x = threadIdx.x, j = b * CT + x;
    const unsigned *c = L.ctl + b * 8;
    unsigned nA = min(max(c[0], 1u), (unsigned)MAXC), nB = min(max(c[1], 1u), (unsigned)MAXC);
    unsigned nF = min(max(c[2], 1u), (unsigned)MAXC);
    L.work[O_PRE + j] = hsh(L.in[j], pS);
    __syncthreads();  // the whole block's pre[] is visible to children launched below
    if (x == 0) {
        kChildA<<<nA, CT>>>(L, b, c[3]);
        note_launch(L, 1u);
        kChildB<<<nB, CT>>>(L, b, c[4]);
        note_launch(L, 2u);
        kTail<<<1, CT, 0, cudaStreamTailLaunch>>>(L, b, c[6]);
        note_launch(L, 4u);
    }
    if ((unsigned)x < nF) {
        kChildF<<<1, CT, 0, cudaStreamFireAndForget>>>(L, b, (unsigned)x, c[5]);
        note_launch(L, 8u);
    }
    // written after the tail launch: the tail still sees it (it runs after the grid)
    L.work[O_POST + j] = hsh(L.work[O_PRE + b * CT + (x + 1) % CT], pS + 1u);
}
__global__ void kConsume(Lane L) {
    int b = blockIdx.x, x = threadIdx.x, j = b * CT + x;
    const unsigned *w = L.work;
    unsigned v = hsh(L.acc[j], w[O_H + j]) + w[O_T + j] * 3u;
    for (int k = 0; k < MAXC; ++k) v = v * 5u + w[O_A + b * MAXE + k * CT + x];
    v += w[O_F + b * MAXE + (MAXC - 1) * CT + x];
    L.acc[j] = v ^ w[O_G + (j + 1) % NN];
}
__global__ void kCross(unsigned *acc0, const unsigned *acc1) {
    int j = blockIdx.x * CT + threadIdx.x;
    acc0[j] = acc0[j] * 9u + acc1[(j * 5 + 3) % NN];
}

// ---- host model ----
struct Model {
    std::vector<unsigned> in, ctl, acc, work;
    unsigned blocks = 0;
    Model() : in(NN, 0u), ctl(P * 8, 0u), acc(NN, 0u), work(WORK, 0u) {}
};
static void model_iter(Model &m, unsigned seed, unsigned pS, unsigned poison, const unsigned *xin) {
    for (int b = 0; b < P; ++b)
        for (int x = 0; x < CT; ++x) {
            int j = b * CT + x;
            m.in[j] = hsh(seed, (unsigned)j) ^ m.acc[b * CT + (x * 7) % CT] ^ xin[j];
            if (x < 8) {
                unsigned h = hsh(seed ^ m.acc[b * CT + x], (unsigned)(b * 8 + x)) + xin[b * CT + x];
                m.ctl[b * 8 + x] = x < 3 ? 1u + h % MAXC : h;
            }
        }
    unsigned *w = m.work.data();
    for (int k = 0; k < WORK; ++k) w[k] = poison;
    for (int j = 0; j < NN; ++j) w[O_PRE + j] = hsh(m.in[j], pS);
    for (int b = 0; b < P; ++b) {
        const unsigned *c = &m.ctl[b * 8];
        for (unsigned k = 0; k < c[0] * CT; ++k) w[O_A + b * MAXE + k] = hsh(w[O_PRE + b * CT + k % CT] ^ c[3], k);
        for (unsigned k = 0; k < c[1] * CT; ++k) w[O_B + b * MAXE + k] = w[O_A + b * MAXE + k] * 3u + (c[4] ^ k);
        for (unsigned t = 0; t < c[2]; ++t)
            for (int x = 0; x < CT; ++x) w[O_F + b * MAXE + t * CT + x] = hsh(w[O_PRE + b * CT + x] + t, c[5]);
        for (int x = 0; x < CT; ++x) w[O_POST + b * CT + x] = hsh(w[O_PRE + b * CT + (x + 1) % CT], pS + 1u);
        m.blocks += c[0] + c[1] + c[2] + 3u;  // + tail + two grandchildren
    }
    for (int b = 0; b < P; ++b)
        for (int x = 0; x < CT; ++x) {
            unsigned v = w[O_POST + b * CT + x];
            for (int k = 0; k < MAXC; ++k) {
                v = v * 31u + w[O_B + b * MAXE + k * CT + x];
                v = v * 37u + w[O_F + ((b + 1) % P) * MAXE + k * CT + x];
            }
            w[O_T + b * CT + x] = v;
        }
    for (int b = 0; b < P; ++b) {
        unsigned sT = m.ctl[b * 8 + 6];
        for (int x = 0; x < CT; ++x) w[O_G + b * CT + x] = hsh(w[O_T + b * CT + (x + 3) % CT], sT);
        for (int x = 0; x < CT; ++x) w[O_H + b * CT + x] = w[O_G + b * CT + x] ^ hsh(w[O_T + b * CT + x], sT + 1u);
    }
    for (int b = 0; b < P; ++b)
        for (int x = 0; x < CT; ++x) {
            int j = b * CT + x;
            unsigned v = hsh(m.acc[j], w[O_H + j]) + w[O_T + j] * 3u;
            for (int k = 0; k < MAXC; ++k) v = v * 5u + w[O_A + b * MAXE + k * CT + x];
            v += w[O_F + b * MAXE + (MAXC - 1) * CT + x];
            m.acc[j] = v ^ w[O_G + (j + 1) % NN];
        }
}

static Lane make_lane() {
    Lane L;
    CK(cudaMalloc(&L.in, NN * 4)); CK(cudaMalloc(&L.ctl, P * 8 * 4)); CK(cudaMalloc(&L.acc, NN * 4));
    CK(cudaMalloc(&L.work, (size_t)WORK * 4)); CK(cudaMalloc(&L.misc, 2 * 4));
    CK(cudaMemset(L.in, 0, NN * 4)); CK(cudaMemset(L.ctl, 0, P * 8 * 4)); CK(cudaMemset(L.acc, 0, NN * 4));
    CK(cudaMemset(L.work, 0, (size_t)WORK * 4)); CK(cudaMemset(L.misc, 0, 2 * 4));
    return L;
}
static void free_lane(Lane &L) {
    CK(cudaFree(L.in)); CK(cudaFree(L.ctl)); CK(cudaFree(L.acc)); CK(cudaFree(L.work)); CK(cudaFree(L.misc));
}
// One lane's iteration on stream s (the memset and kGen are separate so phase 2 can fork between them).
static void enqueue_gen(const Lane &L, cudaStream_t s, unsigned seed, unsigned poison, const unsigned *xin) {
    CK(cudaMemsetAsync(L.work, (int)poison, (size_t)WORK * 4, s));
    kGen<<<P, CT, 0, s>>>(L, seed, xin);
    CK(cudaGetLastError());
}
static void enqueue_rest(const Lane &L, cudaStream_t s, unsigned pS) {
    kParent<<<P, CT, 0, s>>>(L, pS);
    CK(cudaGetLastError());
    kConsume<<<P, CT, 0, s>>>(L);
    CK(cudaGetLastError());
}

int main() {
    CK(cudaSetDevice(0));
    CK(cudaFree(0));
    cudaStream_t s1, s2;
    CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    cudaEvent_t evFork, evJoin;
    CK(cudaEventCreateWithFlags(&evFork, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&evJoin, cudaEventDisableTiming));
    Lane L0 = make_lane(), L1 = make_lane();
    unsigned *dZero;
    CK(cudaMalloc(&dZero, NN * 4));
    CK(cudaMemset(dZero, 0, NN * 4));
    unsigned *hAcc;
    CK(cudaMallocHost(&hAcc, 2 * NN * 4));
    CK(cudaDeviceSynchronize());
    Model m0, m1;
    const std::vector<unsigned> zero(NN, 0u);

    // Phase 1: one lane, one stream.
    for (int i = 0; i < ITERS1; ++i) {
        unsigned seed = hsh(1000u + (unsigned)i, 17u), pS = hsh((unsigned)i, 99u);
        unsigned pb = ((unsigned)i * 37u + 0x5Au) & 0xFFu;
        memset(hAcc, 0xEE, NN * 4);
        enqueue_gen(L0, s1, seed, pb, dZero);
        enqueue_rest(L0, s1, pS);
        CK(cudaMemcpyAsync(hAcc, L0.acc, NN * 4, cudaMemcpyDeviceToHost, s1));
        CK(cudaStreamSynchronize(s1));
        model_iter(m0, seed, pS, pb * 0x01010101u, zero.data());
        check_acc(i, hAcc, m0.acc.data(), NN);
    }
    printf("phase 1: %d iterations, one stream\n", ITERS1);

    // Phase 2: lane 0 on s1, lane 1 on s2, forked after lane 0's generator, joined before kCross.
    for (int i = 0; i < ITERS2; ++i) {
        unsigned seed0 = hsh(5000u + (unsigned)i, 23u), seed1 = hsh(7000u + (unsigned)i, 29u);
        unsigned pS0 = hsh((unsigned)i, 55u), pS1 = hsh((unsigned)i, 77u);
        unsigned pb0 = ((unsigned)i * 53u + 0x11u) & 0xFFu, pb1 = ((unsigned)i * 71u + 0xC3u) & 0xFFu;
        memset(hAcc, 0xEE, 2 * NN * 4);
        enqueue_gen(L0, s1, seed0, pb0, dZero);
        CK(cudaEventRecord(evFork, s1));
        CK(cudaStreamWaitEvent(s2, evFork, 0));
        enqueue_gen(L1, s2, seed1, pb1, L0.in);  // reads lane 0's fresh input
        enqueue_rest(L1, s2, pS1);
        CK(cudaEventRecord(evJoin, s2));
        enqueue_rest(L0, s1, pS0);
        CK(cudaStreamWaitEvent(s1, evJoin, 0));
        kCross<<<P, CT, 0, s1>>>(L0.acc, L1.acc);
        CK(cudaGetLastError());
        CK(cudaMemcpyAsync(hAcc, L0.acc, NN * 4, cudaMemcpyDeviceToHost, s1));
        CK(cudaMemcpyAsync(hAcc + NN, L1.acc, NN * 4, cudaMemcpyDeviceToHost, s1));
        CK(cudaStreamSynchronize(s1));
        model_iter(m0, seed0, pS0, pb0 * 0x01010101u, zero.data());
        model_iter(m1, seed1, pS1, pb1 * 0x01010101u, m0.in.data());
        for (int j = 0; j < NN; ++j) m0.acc[j] = m0.acc[j] * 9u + m1.acc[(j * 5 + 3) % NN];
        check_acc(ITERS1 + i, hAcc, m0.acc.data(), NN);
        check_acc(ITERS1 + i, hAcc + NN, m1.acc.data(), NN);
    }
    CK(cudaDeviceSynchronize());
    CK(cudaGetLastError());
    printf("phase 2: %d iterations, two streams joined by events\n", ITERS2);

    unsigned misc[2][2];
    CK(cudaMemcpy(misc[0], L0.misc, 8, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(misc[1], L1.misc, 8, cudaMemcpyDeviceToHost));
    const unsigned want_blocks[2] = {m0.blocks, m1.blocks};
    for (int l = 0; l < 2; ++l) {
        if (misc[l][0] != 0) failf("lane %d: device-side launch errors, bits %x", l, misc[l][0]);
        if (misc[l][1] != want_blocks[l])
            failf("lane %d: %u child blocks ran, want %u", l, misc[l][1], want_blocks[l]);
        mix(misc[l][0]); mix(misc[l][1]);
    }
    printf("child blocks: lane0 %u, lane1 %u\n", want_blocks[0], want_blocks[1]);

    CK(cudaEventDestroy(evFork)); CK(cudaEventDestroy(evJoin));
    CK(cudaStreamDestroy(s1)); CK(cudaStreamDestroy(s2));
    free_lane(L0); free_lane(L1);
    CK(cudaFree(dZero)); CK(cudaFreeHost(hAcc));
    return finish("device_launch");
}
