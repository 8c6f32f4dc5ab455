// device_printf: device-side effects that reach the host only at documented
// points, and context-wide settings changed between iterations, all on one
// non-blocking stream.
//  - printf: every iteration ends with kPrint, one thread printing 3-5 lines
//    whose text depends on the iteration's scalars and on values earlier
//    kernels computed.  The Programming Guide (Formatted Output) flushes the
//    device printf buffer only at a kernel launch, cudaDeviceSynchronize /
//    cudaStreamSynchronize / cudaEventSynchronize, a blocking memcpy, module
//    load/unload and context destruction; not at program exit.  Every 4th
//    iteration the results are read back with cudaMemcpyAsync into pinned
//    memory and one of those three syncs (in turn) covers every printf kernel
//    so far; the host prints its lines (fflush) right after it, before any
//    other flush point, so the interleaving of device and host lines on
//    stdout is fixed bare.  A sync answered without synchronizing (polled: a
//    copy of this program with cudaStreamQuery in its place prints the
//    device lines after the host's), or a printf kernel held past it, moves
//    or loses device lines; a stale replay prints stale numbers.  kPrint also
//    logs a digest of what it printed and printf's return values (checked).
//  - device malloc/free: kAlloc mallocs per block (size changes every
//    iteration, pointer left in global memory) and per thread (freed at
//    once); kFree, the NEXT kernel, sums and frees the block's memory.
//  - cudaLimitStackSize changed 4 times mid-stretch (cudaDeviceGetLimit
//    checked), a recursive kernel (depth 6..20) right after.
//  - per 32-iteration phase: cudaFuncSetCacheConfig, the shared-memory
//    carveout (set again with the same value every iteration; dynamic shared
//    memory 16..64 KiB), cudaCtxResetPersistingL2Cache; within it the
//    access-policy window set and cleared on the stream and the stream's
//    synchronization policy cycled: none may change a result or the order.
//    The settings move rarely enough that the 4-iteration stretches recur.
// Everything is checked exactly against a host model.
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>
#include "order_common.cuh"

static const int N = 4096, TPB = 256, GRID = N / TPB, NB = GRID, ITERS = 128, PHASE = 32;
static const size_t FIFO = 4u << 20, HEAP = 16u << 20;
static const int NSTK = 4;
static const int STK_IT[NSTK] = {33, 66, 97, 117};
static const size_t STK_SZ[NSTK] = {2048, 6144, 3072, 5120};

__host__ __device__ inline unsigned blk_words(unsigned it, unsigned b) { return 128u + (it * 37u + b * 11u) % 640u; }
__host__ __device__ inline unsigned thr_words(unsigned it, unsigned t) { return 1u + (t + it) % 5u; }
static unsigned depth_of(int it) { return 6u + (unsigned)(it * 7) % 15u; }      // 6..20
static unsigned dyn_of(int it) { return 16384u * (1u + (unsigned)it % 4u); }   // 16..64 KiB
static unsigned lines_of(int it) { return 1u + (unsigned)it % 3u; }
static bool boundary(int it) { return it % 4 == 3 || it == ITERS - 1; }

// Recursive, with a dynamically indexed local array: its stack use cannot be
// determined statically, so it runs within cudaLimitStackSize (20 levels fit in
// the smallest limit used, 2 KiB).
__host__ __device__ unsigned rec(unsigned d, unsigned x) {
    unsigned loc[6];
    for (unsigned k = 0; k < 6; ++k) loc[k] = hsh(x, d * 8u + k);
    if (d == 0) return loc[x % 6u];
    unsigned r = rec(d - 1, loc[(x >> 3) % 6u]);
    return r ^ (loc[r % 6u] + d);
}

__global__ void kSmem(unsigned *S, unsigned seed, unsigned nw) {
    extern __shared__ unsigned sm[];
    unsigned t = threadIdx.x;
    for (unsigned k = t; k < nw; k += blockDim.x) sm[k] = hsh(seed + blockIdx.x, k);
    __syncthreads();
    unsigned acc = 0;
    for (unsigned k = t; k < nw; k += blockDim.x) acc += sm[nw - 1 - k] * (k | 1u);
    S[blockIdx.x * blockDim.x + t] = acc ^ nw;
}
__global__ void kAlloc(unsigned **ptrs, unsigned *T, unsigned *err, const unsigned *ACC, const unsigned *S,
                       unsigned seed, unsigned it) {
    __shared__ unsigned *blk;
    unsigned b = blockIdx.x, t = threadIdx.x, j = b * TPB + t, nw = blk_words(it, b);
    if (t == 0) {
        blk = (unsigned *)malloc(nw * sizeof(unsigned));
        ptrs[b] = blk;
        if (!blk) atomicAdd(err, 1u);
    }
    __syncthreads();
    unsigned *p = blk;
    if (p)
        for (unsigned k = t; k < nw; k += TPB) p[k] = hsh(seed ^ b, k) + ACC[(b * 131u + k) % N];
    unsigned m = thr_words(it, t), tv = 0;
    unsigned *q = (unsigned *)malloc(m * sizeof(unsigned));
    if (!q) {
        atomicAdd(err, 1u);
    } else {
        for (unsigned r = 0; r < m; ++r) q[r] = S[j] + r * it + seed;
        for (unsigned r = 0; r < m; ++r) tv = tv * 7u + q[r];
        free(q);
    }
    T[j] = tv;
}
__global__ void kFree(unsigned **ptrs, unsigned *H, unsigned it) {
    __shared__ unsigned red[TPB];
    unsigned b = blockIdx.x, t = threadIdx.x, nw = blk_words(it, b);
    unsigned *p = ptrs[b];
    unsigned acc = 0;
    if (p)
        for (unsigned k = t; k < nw; k += TPB) acc += p[k] * (k | 1u);
    red[t] = acc;
    __syncthreads();
    for (unsigned w = TPB / 2; w > 0; w >>= 1) {
        if (t < w) red[t] += red[t + w];
        __syncthreads();
    }
    if (t == 0) {
        H[b] = red[0];
        free(p);  // every thread of the block has read p (barriers above)
        ptrs[b] = nullptr;
    }
}
__global__ void kRec(unsigned *R, const unsigned *ACC, unsigned seed, unsigned depth) {
    unsigned j = blockIdx.x * blockDim.x + threadIdx.x;
    R[j] = rec(depth, ACC[j] ^ seed);
}
__global__ void kAcc(unsigned *ACC, const unsigned *S, const unsigned *T, const unsigned *R, const unsigned *H) {
    unsigned j = blockIdx.x * blockDim.x + threadIdx.x;
    ACC[j] = ACC[j] * 3u + S[j] + (T[j] ^ R[j]) + H[j % NB];
}
__global__ void kSum(unsigned *stat, const unsigned *ACC) {  // one block of TPB
    __shared__ unsigned rs[TPB], rx[TPB];
    unsigned t = threadIdx.x, s = 0, x = 0;
    for (unsigned j = t; j < (unsigned)N; j += TPB) { s += hsh(ACC[j], j); x ^= ACC[j]; }
    rs[t] = s; rx[t] = x;
    __syncthreads();
    for (unsigned w = TPB / 2; w > 0; w >>= 1) {
        if (t < w) { rs[t] += rs[t + w]; rx[t] ^= rx[t + w]; }
        __syncthreads();
    }
    if (t == 0) { stat[0] = rs[0]; stat[1] = rx[0]; stat[2] = ACC[0]; stat[3] = ACC[N - 1]; }
}
// One thread prints, so the lines of one kernel are in program order, and the
// kernels of the stream in stream order.
__global__ void kPrint(unsigned *log, const unsigned *stat, const unsigned *H, const unsigned *R, const unsigned *ACC,
                       int it, unsigned seed, unsigned depth, unsigned dyn, unsigned nl) {
    if (threadIdx.x != 0) return;
    int args = 0;
    args += printf("dev it=%d seed=%08x sum=%08x xor=%08x acc0=%08x\n", it, seed, stat[0], stat[1], stat[2]);
    unsigned hb = H[(unsigned)it % NB], rv = R[((unsigned)it * 97u) % N];
    args += printf("dev it=%d heap=%08x rec=%08x depth=%u smem=%u\n", it, hb, rv, depth, dyn);
    unsigned hv = hsh(hsh(hsh(stat[0], stat[1]), hb), rv);
    for (unsigned l = 0; l < nl; ++l) {
        unsigned v = ACC[(l * 977u + (unsigned)it * 31u) % N];
        args += printf("dev it=%d line=%u v=%08x\n", it, l, v);
        hv = hsh(hv, v);
    }
    log[0] = hv;
    log[1] = (unsigned)args;
}

int main() {
    printf("device_printf: N=%d iters=%d\n", N, ITERS);
    fflush(stdout);
    CK(cudaSetDevice(0));
    // Context-wide limits first: printf FIFO and malloc heap must be set before
    // any kernel using them is launched.
    CK(cudaDeviceSetLimit(cudaLimitPrintfFifoSize, FIFO));
    CK(cudaDeviceSetLimit(cudaLimitMallocHeapSize, HEAP));
    CK(cudaDeviceSetLimit(cudaLimitStackSize, 4096));
    size_t got = 0;
    CK(cudaDeviceGetLimit(&got, cudaLimitPrintfFifoSize));
    if (got < FIFO) failf("printf FIFO limit %zu < %zu", got, FIFO);
    CK(cudaDeviceGetLimit(&got, cudaLimitMallocHeapSize));
    if (got < HEAP) failf("malloc heap limit %zu < %zu", got, HEAP);
    CK(cudaFuncSetAttribute(kSmem, cudaFuncAttributeMaxDynamicSharedMemorySize, 65536));
    int maxPersist = 0, maxWin = 0;
    CK(cudaDeviceGetAttribute(&maxPersist, cudaDevAttrMaxPersistingL2CacheSize, 0));
    CK(cudaDeviceGetAttribute(&maxWin, cudaDevAttrMaxAccessPolicyWindowSize, 0));
    if (maxPersist > 0) CK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, (size_t)(maxPersist < (2 << 20) ? maxPersist : (2 << 20))));

    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaEvent_t ev;
    CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    unsigned *ACC, *S, *T, *R, *H, *err, *dStat, *dLog;
    unsigned **ptrs;
    CK(cudaMalloc(&ACC, N * 4)); CK(cudaMalloc(&S, N * 4)); CK(cudaMalloc(&T, N * 4)); CK(cudaMalloc(&R, N * 4));
    CK(cudaMalloc(&H, NB * 4)); CK(cudaMalloc(&err, 4)); CK(cudaMalloc(&ptrs, NB * sizeof(unsigned *)));
    CK(cudaMalloc(&dStat, ITERS * 4 * 4)); CK(cudaMalloc(&dLog, ITERS * 2 * 4));
    CK(cudaMemset(ACC, 0, N * 4)); CK(cudaMemset(err, 0, 4)); CK(cudaMemset(ptrs, 0, NB * sizeof(unsigned *)));
    CK(cudaMemset(dStat, 0xEE, ITERS * 4 * 4)); CK(cudaMemset(dLog, 0xEE, ITERS * 2 * 4));
    CK(cudaDeviceSynchronize());

    unsigned *pStat, *pLog, *pAcc;  // pinned read-back
    CK(cudaMallocHost(&pStat, ITERS * 4 * 4)); CK(cudaMallocHost(&pLog, ITERS * 2 * 4)); CK(cudaMallocHost(&pAcc, N * 4));
    memset(pStat, 0xAB, ITERS * 4 * 4); memset(pLog, 0xAB, ITERS * 2 * 4); memset(pAcc, 0xAB, N * 4);
    std::vector<unsigned> acc(N, 0u), rS(N), rT(N), rR(N), rH(NB);
    std::vector<unsigned> rStat(ITERS * 4), rLog(ITERS * 2), rHb(ITERS), rRv(ITERS);
    const cudaFuncCache cfg[4] = {cudaFuncCachePreferNone, cudaFuncCachePreferShared, cudaFuncCachePreferL1,
                                  cudaFuncCachePreferEqual};
    const int carve[5] = {cudaSharedmemCarveoutDefault, cudaSharedmemCarveoutMaxL1, 25, 50,
                          cudaSharedmemCarveoutMaxShared};
    char notes[NSTK][96];
    int nnotes = 0, first = 0, nsync = 0, stk = 0;

    for (int i = 0; i < ITERS; ++i) {
        const unsigned seed = hsh(0xD1CEu, (unsigned)i), depth = depth_of(i), dyn = dyn_of(i), nl = lines_of(i);
        // --- context / stream / function settings between iterations ---
        // (at the start of a 4-iteration stretch, right after a sync, so the
        // stretches between syncs have the same shape; the stack limit moves
        // mid-stretch)
        if (stk < NSTK && i == STK_IT[stk]) {
            CK(cudaDeviceSetLimit(cudaLimitStackSize, STK_SZ[stk]));
            CK(cudaDeviceGetLimit(&got, cudaLimitStackSize));
            if (got < STK_SZ[stk]) failf("iter %d: stack limit %zu < %zu", i, got, STK_SZ[stk]);
            mix(STK_SZ[stk]);
            snprintf(notes[nnotes++], sizeof notes[0], "host it=%d stack limit set to %zu", i, STK_SZ[stk]);
            ++stk;
        }
        const int ph = i / PHASE, pi = i % PHASE;
        if (pi == 0) {
            CK(cudaFuncSetCacheConfig(kSmem, cfg[ph % 4]));
            CK(cudaFuncSetCacheConfig(kRec, cfg[(ph + 1) % 4]));
            CK(cudaCtxResetPersistingL2Cache());
        }
        // the same carveout every iteration of a phase, another in the next
        CK(cudaFuncSetAttribute(kSmem, cudaFuncAttributePreferredSharedMemoryCarveout, carve[ph % 5]));
        if (maxWin > 0 && (pi % 16 == 4 || pi % 16 == 12)) {
            cudaStreamAttrValue v;
            memset(&v, 0, sizeof v);
            if (pi % 16 == 4) {  // set: window over ACC
                v.accessPolicyWindow.base_ptr = ACC;
                v.accessPolicyWindow.num_bytes = (size_t)(N * 4 < maxWin ? N * 4 : maxWin);
                v.accessPolicyWindow.hitRatio = 0.75f;
                v.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
                v.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
            } else {  // clear: a window of 0 bytes
                v.accessPolicyWindow.hitProp = cudaAccessPropertyNormal;
                v.accessPolicyWindow.missProp = cudaAccessPropertyNormal;
            }
            CK(cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &v));
        }
        if (pi % 16 == 8) {
            cudaStreamAttrValue v, g;
            memset(&v, 0, sizeof v); memset(&g, 0, sizeof g);
            v.syncPolicy = (cudaSynchronizationPolicy)(1 + (i / 16 + 1) % 4);
            CK(cudaStreamSetAttribute(s, cudaStreamAttributeSynchronizationPolicy, &v));
            CK(cudaStreamGetAttribute(s, cudaStreamAttributeSynchronizationPolicy, &g));
            if (g.syncPolicy != v.syncPolicy) failf("iter %d: sync policy %d, set %d", i, (int)g.syncPolicy, (int)v.syncPolicy);
        }

        // --- the iteration's stream work ---
        kSmem<<<GRID, TPB, dyn, s>>>(S, seed, dyn / 4);
        CK(cudaGetLastError());
        kAlloc<<<NB, TPB, 0, s>>>(ptrs, T, err, ACC, S, seed, (unsigned)i);
        CK(cudaGetLastError());
        kFree<<<NB, TPB, 0, s>>>(ptrs, H, (unsigned)i);
        CK(cudaGetLastError());
        kRec<<<GRID, TPB, 0, s>>>(R, ACC, seed, depth);
        CK(cudaGetLastError());
        kAcc<<<GRID, TPB, 0, s>>>(ACC, S, T, R, H);
        CK(cudaGetLastError());
        kSum<<<1, TPB, 0, s>>>(dStat + i * 4, ACC);
        CK(cudaGetLastError());
        kPrint<<<1, 32, 0, s>>>(dLog + i * 2, dStat + i * 4, H, R, ACC, i, seed, depth, dyn, nl);
        CK(cudaGetLastError());

        // --- host model of the iteration ---
        const unsigned nw = dyn / 4;
        for (int b = 0; b < GRID; ++b)
            for (unsigned t = 0; t < (unsigned)TPB; ++t) {
                unsigned a = 0;
                for (unsigned k = t; k < nw; k += TPB) a += hsh(seed + (unsigned)b, nw - 1 - k) * (k | 1u);
                rS[b * TPB + t] = a ^ nw;
            }
        for (int j = 0; j < N; ++j) {
            unsigned m = thr_words((unsigned)i, (unsigned)(j % TPB)), tv = 0;
            for (unsigned r = 0; r < m; ++r) tv = tv * 7u + (rS[j] + r * (unsigned)i + seed);
            rT[j] = tv;
            rR[j] = rec(depth, acc[j] ^ seed);
        }
        for (unsigned b = 0; b < (unsigned)NB; ++b) {
            unsigned a = 0, bw = blk_words((unsigned)i, b);
            for (unsigned k = 0; k < bw; ++k) a += (hsh(seed ^ b, k) + acc[(b * 131u + k) % N]) * (k | 1u);
            rH[b] = a;
        }
        unsigned ss = 0, sx = 0;
        for (int j = 0; j < N; ++j) {
            acc[j] = acc[j] * 3u + rS[j] + (rT[j] ^ rR[j]) + rH[j % NB];
            ss += hsh(acc[j], (unsigned)j); sx ^= acc[j];
        }
        unsigned *st = &rStat[i * 4];
        st[0] = ss; st[1] = sx; st[2] = acc[0]; st[3] = acc[N - 1];
        rHb[i] = rH[(unsigned)i % NB]; rRv[i] = rR[((unsigned)i * 97u) % N];
        unsigned hv = hsh(hsh(hsh(st[0], st[1]), rHb[i]), rRv[i]);
        for (unsigned l = 0; l < nl; ++l) hv = hsh(hv, acc[(l * 977u + (unsigned)i * 31u) % N]);
        rLog[i * 2] = hv;
        rLog[i * 2 + 1] = 5u + 5u + 3u * nl;  // device printf returns the number of arguments

        if (!boundary(i)) continue;
        // --- read-back in stream order, then a documented flush point that
        // covers every printf kernel so far (and the copies) ---
        const int nit = i - first + 1;
        CK(cudaMemcpyAsync(pStat + first * 4, dStat + first * 4, nit * 4 * 4, cudaMemcpyDeviceToHost, s));
        CK(cudaMemcpyAsync(pLog + first * 2, dLog + first * 2, nit * 2 * 4, cudaMemcpyDeviceToHost, s));
        CK(cudaMemcpyAsync(pAcc, ACC, N * 4, cudaMemcpyDeviceToHost, s));
        const int kind = nsync++ % 3;
        if (kind == 0) {
            CK(cudaStreamSynchronize(s));
        } else if (kind == 1) {
            CK(cudaDeviceSynchronize());
        } else {
            CK(cudaEventRecord(ev, s));
            CK(cudaEventSynchronize(ev));
        }
        // Only now may the host print: the device lines of iterations
        // first..i are out, and no other flush point comes before these lines.
        static const char *kname[3] = {"cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize"};
        printf("host sync %d (%s) covers it %d..%d\n", nsync - 1, kname[kind], first, i);
        for (int k = 0; k < nnotes; ++k) printf("%s\n", notes[k]);
        nnotes = 0;
        for (int it = first; it <= i; ++it)
            printf("host it=%d sum=%08x heap=%08x rec=%08x digest=%08x args=%u\n", it, rStat[it * 4], rHb[it],
                   rRv[it], rLog[it * 2], rLog[it * 2 + 1]);
        fflush(stdout);
        for (int it = first; it <= i; ++it) {
            for (int k = 0; k < 4; ++k)
                if (pStat[it * 4 + k] != rStat[it * 4 + k]) {
                    failf("iter %d: stat[%d] = %08x, want %08x", it, k, pStat[it * 4 + k], rStat[it * 4 + k]);
                    break;
                }
            if (pLog[it * 2] != rLog[it * 2])
                failf("iter %d: kPrint printed values with digest %08x, want %08x", it, pLog[it * 2], rLog[it * 2]);
            if (pLog[it * 2 + 1] != rLog[it * 2 + 1])
                failf("iter %d: device printf returned %u arguments in all, want %u", it, pLog[it * 2 + 1], rLog[it * 2 + 1]);
            for (int k = 0; k < 4; ++k) mix(pStat[it * 4 + k]);
            mix(pLog[it * 2]); mix(pLog[it * 2 + 1]);
        }
        check_acc(i, pAcc, acc.data(), N);
        fflush(stdout);
        first = i + 1;
    }
    unsigned herr = 0;
    CK(cudaMemcpy(&herr, err, 4, cudaMemcpyDeviceToHost));  // blocking: a flush point, nothing left to flush
    if (herr != 0) failf("device malloc returned NULL %u times", herr);
    mix(herr);
    CK(cudaDeviceGetLimit(&got, cudaLimitStackSize));
    if (got < STK_SZ[NSTK - 1]) failf("final stack limit %zu < %zu", got, STK_SZ[NSTK - 1]);
    CK(cudaGetLastError());
    CK(cudaEventDestroy(ev));
    CK(cudaStreamDestroy(s));
    CK(cudaFree(ACC)); CK(cudaFree(S)); CK(cudaFree(T)); CK(cudaFree(R)); CK(cudaFree(H));
    CK(cudaFree(err)); CK(cudaFree(ptrs)); CK(cudaFree(dStat)); CK(cudaFree(dLog));
    CK(cudaFreeHost(pStat)); CK(cudaFreeHost(pLog)); CK(cudaFreeHost(pAcc));
    return finish("device_printf");
}
