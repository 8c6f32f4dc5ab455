// stream_memops: driver stream memory operations (cuStreamWriteValue32/64,
// cuStreamWaitValue32/64, cuStreamBatchMemOp) as the ONLY ordering between
// two streams, and as the signal that tells the host an iteration is done.
//  W: on sA, cuStreamWriteValue32 + cuStreamWriteValue64 to device scalars, a
//     kernel reading them, a second write32 to the same word, the kernel again.
//     A write held back past (or replayed ahead of) the kernel, or a value
//     baked in at record time, shows in the kernel's output.
//  H: seven producer/consumer handshakes per iteration, no events anywhere:
//     A (sA): kProd (slow) fills a fresh slot of a poisoned ring, then writes a
//     flag; B (sB): waits on the flag, then kCons reads the slot and the flag
//     words.  Waits: GEQ32 (values wrap past 2^32: the comparison is cyclic),
//     EQ32, AND32, NOR32, GEQ64 and EQ64 (the low word of the EQ64 value never
//     changes: a 32-bit wait would pass at once), and one cuStreamBatchMemOp per
//     side (A: barrier + write64 + 2 x write32; B: 3 waits + an ack write),
//     whose parameter array is a stack temporary, gone after the call.
//     Every flag gets a new value every iteration, so a stale wait passes early
//     and reads poison; a stale write leaves the wait (and the run) stuck, which
//     the bounded host waits report.  A's write is issued before B's wait for
//     half of the handshakes and after it for the other half, swapped every
//     iteration (both are valid: nothing the host does waits on sB before A's
//     write is issued).  An interposer that serializes held-back work in call
//     order deadlocks on the "wait issued first" ones.
//  D: B writes a done word; A waits on it and on the batch's ack (a batch of
//     two waits), kFin folds the iteration's outputs into F and writes them to
//     mapped pinned memory too, F is copied D2H, then write32 + write64 go to a
//     cuMemHostAlloc(DEVICEMAP) word.  The host spins on that word with NO CUDA
//     call (bounded), then checks the D2H'd F and the zero-copy output.
// Relied on (documented): a write-value is ordered after earlier work in its
// stream and fences before the write (CUstreamWriteValue_flags: "similar
// semantics to __threadfence_system() but scoped to the stream"), so data
// written before it, even to host memory, is visible once the value is.
// Relied on (not promised by the docs, true of the Linux driver and of every
// program that polls a GPU-written host flag): work is submitted to the GPU when
// the call is made, so it starts without a later CUDA call.  If the host spin
// sees nothing for 5 s it reports that, calls cuStreamQuery once and retries.
// Caveat: the driver docs advise that tasks ordered only by memory ops may be
// serialized badly by the scheduler; with two streams on separate hardware
// queues (the default CUDA_DEVICE_MAX_CONNECTIONS) they are not (with it set
// to 1 the run is stuck at iteration 0 even bare, and says so).  Every kernel
// is loaded up front, since lazy loading at a first launch behind a pending
// wait could otherwise wait on that wait.
// 64-bit ops and NOR are queried; if missing, a 64-bit op becomes two 32-bit
// writes (low, then high) and a wait on the high word, and NOR becomes EQ on the
// same flag values, so results and the checksum are the same either way.
#include <chrono>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>
#include <vector>
#include <cuda.h>
#include <cuda_runtime.h>
#include "order_common.cuh"

static const int N = 1024, TPB = 256, GRID = N / TPB, ITERS = 80, K = 7;
static const long long SPIN = 40000;   // ~20 us: a consumer that runs early reads poison
static const unsigned POISON_P = 0xDEADBEEFu, POISON_Q = 0xBAADF00Du, POISON_W = 0x0BADC0DEu;
// flag area (device): handshake k at 32*k (two u64 words); phase W scalars; done/ack words
static const unsigned OFF_S32 = 256, OFF_S64 = 264, OFF_DONE = 288, OFF_ACK = 292, FL_BYTES = 512;

__host__ __device__ inline unsigned fold(unsigned long long w0, unsigned long long w1) {
    return (unsigned)w0 ^ ((unsigned)(w0 >> 32) * 3u) ^ ((unsigned)w1 * 5u) ^ ((unsigned)(w1 >> 32) * 7u);
}
__global__ void kProd(unsigned *p, unsigned seed, long long slow) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    spin_cycles(slow);
    p[j] = hsh(seed, (unsigned)j);
}
__global__ void kCons(unsigned *q, const unsigned *p, const volatile unsigned long long *fl, unsigned salt) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    q[j] = p[(j * 37 + 11) & (N - 1)] * 3u + fold(fl[0], fl[1]) + hsh(salt, (unsigned)j);
}
__global__ void kScal(unsigned *w, const volatile unsigned *s32, const volatile unsigned long long *s64) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long b = *s64;
    w[j] = (hsh(*s32, (unsigned)j) ^ (unsigned)b) + (unsigned)(b >> 32) * (unsigned)(j + 1);
}
__global__ void kFin(unsigned *f, unsigned *hmap, const unsigned *qring, const unsigned *w, int i) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned v = w[j] + w[N + j] * 7u + hsh((unsigned)i + 0x1Fu, (unsigned)j);
    for (int k = 0; k < K; ++k) v += qring[((size_t)k * ITERS + i) * N + j] * (2u * k + 1u);
    f[j] = v;
    hmap[j] = v ^ (0x5A5A5A5Au + (unsigned)i);
}

// Flag values written in iteration i (each differs from the previous iteration's).
static unsigned v0(int i) { return 0xFFFFFFC0u + (unsigned)i + 1u; }                  // GEQ32, wraps at i = 63
static unsigned v1(int i) { return (unsigned)(i + 1) * 0x01000193u; }                 // EQ32
static unsigned v2(int i) { return 1u << ((5 * i + 3) & 31); }                        // AND32
static unsigned v3(int i) { return ~(1u << ((7 * i + 1) & 31)); }                     // NOR32: bit clears
static uint64_t v4(int i) { return ((uint64_t)(i + 1) << 32) | hsh(0x64u, (unsigned)i); }            // GEQ64
static uint64_t v5(int i) { return ((uint64_t)((unsigned)(i + 1) * 0x9E3779B1u) << 32) | 0xC0FFEEu; } // EQ64
static unsigned v6a(int i) { return (unsigned)i + 1u; }                               // batch GEQ32
static uint64_t v6b(int i) { return ((uint64_t)((unsigned)(i + 1) * 0x85EBCA6Bu) << 32) | (unsigned)(3 * i); }
static unsigned v6c(int i) { return 1u << ((3 * i) & 31); }                           // batch AND32
static void flags_of(int k, int i, uint64_t &w0, uint64_t &w1) {
    static unsigned (*const f32[4])(int) = {v0, v1, v2, v3};
    w1 = 0;
    if (k < 4) w0 = f32[k](i);
    else if (k == 4) w0 = v4(i);
    else if (k == 5) w0 = v5(i);
    else { w0 = v6b(i); w1 = ((uint64_t)v6c(i) << 32) | v6a(i); }
}

static bool g64 = false, gNor = false;
static void wr32(CUstream s, CUdeviceptr a, unsigned v) { CU(cuStreamWriteValue32(s, a, v, 0)); }
static void wr64(CUstream s, CUdeviceptr a, uint64_t v) {
    if (g64) { CU(cuStreamWriteValue64(s, a, v, 0)); return; }
    wr32(s, a, (unsigned)v); wr32(s, a + 4, (unsigned)(v >> 32));   // high word last
}
static void wt32(CUstream s, CUdeviceptr a, unsigned v, unsigned fl) { CU(cuStreamWaitValue32(s, a, v, fl)); }
static void wt64(CUstream s, CUdeviceptr a, uint64_t v, unsigned fl) {
    if (g64) CU(cuStreamWaitValue64(s, a, v, fl));
    else wt32(s, a + 4, (unsigned)(v >> 32), fl);   // the high word is written last and changes every time
}
struct Batch {
    CUstreamBatchMemOpParams op[8];
    unsigned n = 0;
    Batch() { memset(op, 0, sizeof op); }
    void write32(CUdeviceptr a, unsigned v) {
        op[n].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32; op[n].writeValue.address = a;
        op[n].writeValue.value = v; op[n].writeValue.flags = 0; ++n;
    }
    void write64(CUdeviceptr a, uint64_t v) {
        if (!g64) { write32(a, (unsigned)v); write32(a + 4, (unsigned)(v >> 32)); return; }
        op[n].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64; op[n].writeValue.address = a;
        op[n].writeValue.value64 = v; op[n].writeValue.flags = 0; ++n;
    }
    void wait32(CUdeviceptr a, unsigned v, unsigned fl) {
        op[n].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32; op[n].waitValue.address = a;
        op[n].waitValue.value = v; op[n].waitValue.flags = fl; ++n;
    }
    void wait64(CUdeviceptr a, uint64_t v, unsigned fl) {
        if (!g64) { wait32(a + 4, (unsigned)(v >> 32), fl); return; }
        op[n].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_64; op[n].waitValue.address = a;
        op[n].waitValue.value64 = v; op[n].waitValue.flags = fl; ++n;
    }
    void barrier() {
        op[n].memoryBarrier.operation = CU_STREAM_MEM_OP_BARRIER;
        op[n].memoryBarrier.flags = CU_STREAM_MEMORY_BARRIER_TYPE_GPU; ++n;
    }
    void issue(CUstream s) { CU(cuStreamBatchMemOp(s, n, op, 0)); }
};

static double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
[[noreturn]] static void bail() {   // device work is stuck: report and leave without waiting on it
    finish("stream_memops");
    fflush(stdout);
    _exit(1);
}
static void drain(CUstream s, const char *what) {
    double t0 = now_s();
    for (;;) {
        CUresult r = cuStreamQuery(s);
        if (r == CUDA_SUCCESS) return;
        if (r != CUDA_ERROR_NOT_READY) CU(r);
        if (now_s() - t0 > 10.0) { failf("%s still busy after 10 s: a stream memory wait never satisfied", what); bail(); }
    }
}
static uint64_t ld64(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
// spin (no CUDA call) until *p == want; true if seen within `limit` seconds
static bool spin_for(const uint64_t *p, uint64_t want, double limit) {
    double t0 = now_s();
    for (long n = 0;; ++n) {
        if (ld64(p) == want) return true;
        if ((n & 255) == 0 && now_s() - t0 > limit) return ld64(p) == want;
    }
}

int main() {
    CK(cudaSetDevice(0));
    CK(cudaFree(0));
    CUdevice dev;
    CU(cuDeviceGet(&dev, 0));
    int a64 = 0, anor = 0;
    CU(cuDeviceGetAttribute(&a64, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, dev));
    CU(cuDeviceGetAttribute(&anor, CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR, dev));
    g64 = a64 != 0; gNor = anor != 0;
    printf("stream_memops: 64-bit ops %s, NOR wait %s\n", g64 ? "native" : "as two 32-bit ops",
           gNor ? "native" : "as EQ");
    {   // load every kernel now (lazy loading at a launch queued behind a pending wait could wait on it)
        cudaFuncAttributes fa;
        CK(cudaFuncGetAttributes(&fa, (const void *)kProd)); CK(cudaFuncGetAttributes(&fa, (const void *)kCons));
        CK(cudaFuncGetAttributes(&fa, (const void *)kScal)); CK(cudaFuncGetAttributes(&fa, (const void *)kFin));
    }
    CUstream sA;
    CU(cuStreamCreate(&sA, CU_STREAM_NON_BLOCKING));
    cudaStream_t sBr;
    CK(cudaStreamCreateWithFlags(&sBr, cudaStreamNonBlocking));
    CUstream sB = (CUstream)sBr;

    unsigned *Pring, *Qring, *Wring, *F, *FL;
    const size_t RING = (size_t)K * ITERS * N;
    CK(cudaMalloc(&Pring, RING * 4)); CK(cudaMalloc(&Qring, RING * 4));
    CK(cudaMalloc(&Wring, (size_t)ITERS * 2 * N * 4)); CK(cudaMalloc(&F, N * 4)); CK(cudaMalloc(&FL, FL_BYTES));
    CU(cuMemsetD32((CUdeviceptr)Pring, POISON_P, RING)); CU(cuMemsetD32((CUdeviceptr)Qring, POISON_Q, RING));
    CU(cuMemsetD32((CUdeviceptr)Wring, POISON_W, (size_t)ITERS * 2 * N)); CU(cuMemsetD32((CUdeviceptr)F, 0, N));
    CU(cuMemsetD32((CUdeviceptr)FL, 0, FL_BYTES / 4));
    const CUdeviceptr fl = (CUdeviceptr)FL;
    CU(cuMemsetD32(fl + 0, 0xFFFFFFC0u, 1));    // GEQ32 flag starts just below the wrap
    CU(cuMemsetD32(fl + 96, 0xFFFFFFFFu, 1));   // NOR32 flag starts with every bit set
    void *hFlagV = nullptr;
    CU(cuMemHostAlloc(&hFlagV, 64, CU_MEMHOSTALLOC_DEVICEMAP));
    uint64_t *hFlag = (uint64_t *)hFlagV;
    memset(hFlag, 0, 64);
    CUdeviceptr dFlag;
    CU(cuMemHostGetDevicePointer(&dFlag, hFlagV, 0));
    unsigned *hMap, *dMap, *hOut;
    CK(cudaHostAlloc(&hMap, N * 4, cudaHostAllocMapped));
    CK(cudaHostGetDevicePointer((void **)&dMap, hMap, 0));
    CK(cudaMallocHost(&hOut, N * 4));
    memset(hMap, 0, N * 4); memset(hOut, 0, N * 4);
    CK(cudaDeviceSynchronize());

    std::vector<unsigned> qref(RING), wref((size_t)ITERS * 2 * N), fref(N);
    auto Pslot = [&](int k, int i) { return Pring + ((size_t)k * ITERS + i) * N; };
    auto Qslot = [&](int k, int i) { return Qring + ((size_t)k * ITERS + i) * N; };

    for (int i = 0; i < ITERS; ++i) {
        // W: write values, kernel reads them (same stream)
        unsigned a1 = hsh(0x51u, (unsigned)i), a2 = hsh(0x54u, (unsigned)i);
        uint64_t b = ((uint64_t)hsh(0x52u, (unsigned)i) << 32) | hsh(0x53u, (unsigned)i);
        unsigned *w = Wring + (size_t)i * 2 * N;
        wr32(sA, fl + OFF_S32, a1);
        wr64(sA, fl + OFF_S64, b);
        kScal<<<GRID, TPB, 0, (cudaStream_t)sA>>>(w, FL + OFF_S32 / 4, (const unsigned long long *)(FL + OFF_S64 / 4));
        CK(cudaGetLastError());
        wr32(sA, fl + OFF_S32, a2);
        kScal<<<GRID, TPB, 0, (cudaStream_t)sA>>>(w + N, FL + OFF_S32 / 4, (const unsigned long long *)(FL + OFF_S64 / 4));
        CK(cudaGetLastError());

        // H: handshakes A -> B through memory ops only
        auto sideA = [&](int k) {
            kProd<<<GRID, TPB, 0, (cudaStream_t)sA>>>(Pslot(k, i), hsh(16u + k, (unsigned)i), SPIN);
            CK(cudaGetLastError());
            CUdeviceptr f = fl + 32 * k;
            switch (k) {
            case 0: wr32(sA, f, v0(i)); break;
            case 1: wr32(sA, f, v1(i)); break;
            case 2: wr32(sA, f, v2(i)); break;
            case 3: wr32(sA, f, v3(i)); break;
            case 4: wr64(sA, f, v4(i)); break;
            case 5: wr64(sA, f, v5(i)); break;
            default: { Batch bt; bt.barrier(); bt.write64(f, v6b(i)); bt.write32(f + 12, v6c(i)); bt.write32(f + 8, v6a(i)); bt.issue(sA); }
            }
        };
        auto sideB = [&](int k) {
            CUdeviceptr f = fl + 32 * k;
            switch (k) {
            case 0: wt32(sB, f, v0(i), CU_STREAM_WAIT_VALUE_GEQ); break;
            case 1: wt32(sB, f, v1(i), CU_STREAM_WAIT_VALUE_EQ); break;
            case 2: wt32(sB, f, v2(i), CU_STREAM_WAIT_VALUE_AND); break;
            case 3: wt32(sB, f, v3(i), gNor ? CU_STREAM_WAIT_VALUE_NOR : CU_STREAM_WAIT_VALUE_EQ); break;
            case 4: wt64(sB, f, v4(i), CU_STREAM_WAIT_VALUE_GEQ); break;
            case 5: wt64(sB, f, v5(i), CU_STREAM_WAIT_VALUE_EQ); break;
            default: {
                Batch bt;
                bt.wait32(f + 8, v6a(i), CU_STREAM_WAIT_VALUE_GEQ);
                bt.wait64(f, v6b(i), CU_STREAM_WAIT_VALUE_EQ);
                bt.wait32(f + 12, v6c(i), CU_STREAM_WAIT_VALUE_AND);
                bt.write32(fl + OFF_ACK, (unsigned)i + 1u);
                bt.issue(sB);
            }
            }
            kCons<<<GRID, TPB, 0, (cudaStream_t)sB>>>(Qslot(k, i), Pslot(k, i), (const unsigned long long *)(FL + 8 * k),
                                                       hsh(32u + k, (unsigned)i));
            CK(cudaGetLastError());
        };
        for (int k = 0; k < K; ++k) {
            if ((k + i) % 2 == 0) { sideB(k); sideA(k); }   // B's wait issued before A's write
            else { sideA(k); sideB(k); }
        }

        // D: B -> A done, A folds, D2H, write values to mapped host memory, host spins
        wr32(sB, fl + OFF_DONE, (unsigned)i + 1u);
        {
            Batch bt;
            bt.wait32(fl + OFF_DONE, (unsigned)i + 1u, CU_STREAM_WAIT_VALUE_GEQ);
            bt.wait32(fl + OFF_ACK, (unsigned)i + 1u, CU_STREAM_WAIT_VALUE_EQ);
            bt.issue(sA);
        }
        kFin<<<GRID, TPB, 0, (cudaStream_t)sA>>>(F, dMap, Qring, w, i);
        CK(cudaGetLastError());
        CU(cuMemcpyDtoHAsync(hOut, (CUdeviceptr)F, N * 4, sA));
        unsigned tag32 = hsh(0x7Bu, (unsigned)i);
        uint64_t tag64 = ((uint64_t)((unsigned)(i + 1) * 0x9E3779B1u) << 32) | hsh(0x7Au, (unsigned)i);
        wr32(sA, dFlag + 8, tag32);
        wr64(sA, dFlag, tag64);
        if (!spin_for(hFlag, tag64, 5.0)) {
            failf("iter %d: the value written to mapped host memory did not appear in 5 s of polling with no CUDA "
                  "call (work held back, or a wait never satisfied)", i);
            CUresult q = cuStreamQuery(sA);
            if (q != CUDA_ERROR_NOT_READY) CU(q);
            if (!spin_for(hFlag, tag64, 5.0)) { failf("iter %d: ... nor after cuStreamQuery", i); bail(); }
        }
        unsigned seen32 = __atomic_load_n((const unsigned *)(hFlag + 1), __ATOMIC_ACQUIRE);
        if (seen32 != tag32) failf("iter %d: earlier write32 to host memory = %08x, want %08x", i, seen32, tag32);

        // host reference for this iteration
        unsigned *wr = &wref[(size_t)i * 2 * N];
        for (int j = 0; j < N; ++j) {
            wr[j] = (hsh(a1, (unsigned)j) ^ (unsigned)b) + (unsigned)(b >> 32) * (unsigned)(j + 1);
            wr[N + j] = (hsh(a2, (unsigned)j) ^ (unsigned)b) + (unsigned)(b >> 32) * (unsigned)(j + 1);
            fref[j] = wr[j] + wr[N + j] * 7u + hsh((unsigned)i + 0x1Fu, (unsigned)j);
        }
        for (int k = 0; k < K; ++k) {
            uint64_t w0, w1;
            flags_of(k, i, w0, w1);
            unsigned fv = fold(w0, w1), ps = hsh(16u + k, (unsigned)i), qs = hsh(32u + k, (unsigned)i);
            unsigned *q = &qref[((size_t)k * ITERS + i) * N];
            for (int j = 0; j < N; ++j) {
                q[j] = hsh(ps, (unsigned)((j * 37 + 11) & (N - 1))) * 3u + fv + hsh(qs, (unsigned)j);
                fref[j] += q[j] * (2u * k + 1u);
            }
        }
        for (int j = 0; j < N; ++j)
            if (hOut[j] != fref[j]) { failf("iter %d: F[%d] (D2H after the host saw the flag) = %08x, want %08x", i, j, hOut[j], fref[j]); break; }
        for (int j = 0; j < N; ++j)
            if (hMap[j] != (fref[j] ^ (0x5A5A5A5Au + (unsigned)i))) {
                failf("iter %d: mapped output[%d] = %08x, want %08x", i, j, hMap[j], fref[j] ^ (0x5A5A5A5Au + (unsigned)i));
                break;
            }
        for (int j = 0; j < N; ++j) mix(hOut[j]);
        mix(hMap[N - 1]); mix(ld64(hFlag)); mix(seen32);
    }
    drain(sA, "stream A");
    drain(sB, "stream B");
    CK(cudaGetLastError());

    // every ring slot, read back at the end, and the final flag words
    std::vector<unsigned> got(RING);
    CU(cuMemcpyDtoH(got.data(), (CUdeviceptr)Qring, RING * 4));
    for (int k = 0; k < K; ++k)
        for (int i = 0; i < ITERS; ++i) {
            size_t o = ((size_t)k * ITERS + i) * N;
            for (int j = 0; j < N; ++j)
                if (got[o + j] != qref[o + j]) {
                    failf("handshake %d iter %d: consumer output[%d] = %08x, want %08x%s", k, i, j, got[o + j], qref[o + j],
                          got[o + j] == POISON_Q ? " (consumer never ran)" : "");
                    break;
                }
        }
    for (size_t x = 0; x < RING; x += 61) mix(got[x]);
    std::vector<unsigned> gw((size_t)ITERS * 2 * N);
    CU(cuMemcpyDtoH(gw.data(), (CUdeviceptr)Wring, gw.size() * 4));
    for (int i = 0; i < ITERS; ++i)
        for (int h = 0; h < 2; ++h) {
            size_t o = ((size_t)i * 2 + h) * N;
            for (int j = 0; j < N; ++j)
                if (gw[o + j] != wref[o + j]) { failf("iter %d: kScal #%d output[%d] = %08x, want %08x", i, h, j, gw[o + j], wref[o + j]); break; }
        }
    for (size_t x = 0; x < gw.size(); x += 17) mix(gw[x]);
    uint64_t hfl[FL_BYTES / 8];
    CU(cuMemcpyDtoH(hfl, fl, FL_BYTES));
    for (int k = 0; k < K; ++k) {
        uint64_t w0, w1;
        flags_of(k, ITERS - 1, w0, w1);
        if (hfl[4 * k] != w0 || hfl[4 * k + 1] != w1)
            failf("handshake %d: final flag words %016llx %016llx, want %016llx %016llx", k, (unsigned long long)hfl[4 * k],
                  (unsigned long long)hfl[4 * k + 1], (unsigned long long)w0, (unsigned long long)w1);
    }
    for (int x = 0; x < (int)(FL_BYTES / 8); ++x) mix(hfl[x]);

    CU(cuStreamDestroy(sA));
    CK(cudaStreamDestroy(sBr));
    CK(cudaFree(Pring)); CK(cudaFree(Qring)); CK(cudaFree(Wring)); CK(cudaFree(F)); CK(cudaFree(FL));
    CU(cuMemFreeHost(hFlagV));
    CK(cudaFreeHost(hMap)); CK(cudaFreeHost(hOut));
    return finish("stream_memops");
}
