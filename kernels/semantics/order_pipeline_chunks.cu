// pipeline_chunks: the overlap pipeline of the CUDA programming guide ("overlapping
// data transfer and kernel execution") on four non-blocking streams, 60 iterations.
// Each iteration cuts N = 1M words into C chunks (C = 4, 6 or 8, changing every ten
// iterations and recurring); chunk c goes to stream c % 4 as an H2D copy from a
// pinned input slot, two kernels (the second reads the first's output reversed
// within the chunk; iteration and chunk are scalar arguments of both), a D2H copy
// into a pinned output slot and cudaEventRecord of the chunk's event.
//  - Two slots of pinned input and output, one for even iterations, one for odd.
//    Once iteration i is enqueued, the host consumes iteration i-1 chunk by chunk:
//    cudaEventSynchronize on the chunk's event (a cudaEventQuery spin for one chunk
//    in every third iteration), the chunk's output checked exactly and folded into
//    the digest, and at once the chunk's region of the input slot rewritten with
//    iteration i+1's input (legal: the event follows the H2D that read it), while
//    the later chunks of i-1 and all of i may still be in flight.
//  - An output slot is filled with 0xFF bytes before its D2H copies are enqueued.
//  - Every fourth iteration a kernel on stream 0 waits (cudaStreamWaitEvent) on the
//    events of the last chunk of each other stream and combines the four streams'
//    last outputs in device memory; its own D2H into poisoned pinned memory, then
//    cudaStreamSynchronize of stream 0 alone before the host reads it.
//  - Every fifth iteration ends with cudaDeviceSynchronize; the others leave their
//    work in flight, and the next iteration's event waits are its only sync.
// A broken interposer shows as: a copy held past the event that follows it reads
// the input the host wrote afterwards, or lands after the host read the slot (0xFF
// left); an event answered early, or a wait bound to a stale record, the same; a
// kernel replayed with an earlier iteration's scalars, length or chunk offsets,
// wrong values; the second kernel run before the first, or the join before the
// other streams' chunks, values from the slot's previous use (iteration i-2).
#include <chrono>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>
#include "order_common.cuh"

static const char *const NAME = "pipeline_chunks";
static const int N = 1 << 20, S = 4, CMAX = 8, TPB = 256, ITERS = 60;
static const int CSEQ[ITERS / 10] = {4, 6, 8, 4, 6, 8};  // chunks per iteration, by tens
static const long long SLOW = 20000;                     // ~10 us in the first kernel
static const double POLL_LIMIT = 5.0;

struct JoinArgs { int off[S]; };  // first word of each stream's last chunk

__global__ void kScale(const unsigned *in, unsigned *mid, int len, unsigned it, unsigned c, long long slow) {
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= len) return;
    unsigned v = in[k] * (2u * c + 3u) + ((it << 8) | c);
    spin_cycles(slow);
    mid[k] = v;
}
__global__ void kMirror(const unsigned *mid, unsigned *out, int len, unsigned it, unsigned c) {
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= len) return;
    out[k] = (mid[k] ^ (mid[len - 1 - k] >> 5)) + (unsigned)k * (it | 1u) + c;
}
__global__ void kJoin(const unsigned *out, unsigned *jn, JoinArgs a, int len, unsigned it) {
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= len) return;
    unsigned v = it;
    for (int s = 0; s < S; ++s) v += (2u * (unsigned)s + 1u) * out[a.off[s] + k];
    jn[k] = v;
}

static double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
static int chunks_of(int it) { return CSEQ[it / 10]; }
static int chunk_off(int C, int c) { return (int)((long long)N * c / C); }
static int last_chunk(int C, int s) { return s + (C - 1 - s) / S * S; }  // the last chunk on stream s
static unsigned in_val(int it, int e) { return hsh(0x51u + (unsigned)it, (unsigned)e); }
// What kScale then kMirror leave in chunk c of iteration it.
static void ref_chunk(int it, int C, int c, unsigned *mid, unsigned *want) {
    const int off = chunk_off(C, c), len = chunk_off(C, c + 1) - off;
    const unsigned ui = (unsigned)it, uc = (unsigned)c;
    for (int k = 0; k < len; ++k) mid[k] = in_val(it, off + k) * (2u * uc + 3u) + ((ui << 8) | uc);
    for (int k = 0; k < len; ++k) want[k] = (mid[k] ^ (mid[len - 1 - k] >> 5)) + (unsigned)k * (ui | 1u) + uc;
}

static long long g_checked = 0;
// Stops at the first wrong word: a wrong chunk makes every later one suspect.
static void expect_words(int it, const char *where, int base, const unsigned *got, const unsigned *want, int len) {
    uint64_t f = 0;
    for (int k = 0; k < len; ++k) {
        if (got[k] != want[k]) {
            failf("iter %d, %s[%d] = %08x, want %08x%s", it, where, base + k, got[k], want[k],
                  got[k] == 0xFFFFFFFFu ? " (the poison: no copy landed)" : "");
            exit(finish(NAME));
        }
        f = f * 1099511628211ull + got[k];
    }
    g_checked += len;
    mix(f);
}
static void wait_event(cudaEvent_t e, bool poll, int it, int c) {
    if (!poll) { CK(cudaEventSynchronize(e)); return; }
    double t0 = now_s();
    cudaError_t r;
    while ((r = cudaEventQuery(e)) == cudaErrorNotReady) {
        if (now_s() - t0 > POLL_LIMIT) break;
    }
    if (r == cudaErrorNotReady) {
        failf("iter %d, chunk %d: cudaEventQuery still not ready after %.0f s", it, c, POLL_LIMIT);
        exit(finish(NAME));
    }
    CK(r);
    // cudaErrorNotReady "is not an error"; tolerate it in the last-error slot either way
    cudaError_t le = cudaGetLastError();
    if (le != cudaErrorNotReady) CK(le);
}

int main() {
    CK(cudaSetDevice(0));
    CK(cudaFree(0));
    cudaStream_t st[S];
    for (int s = 0; s < S; ++s) CK(cudaStreamCreateWithFlags(&st[s], cudaStreamNonBlocking));
    cudaEvent_t ev[2][CMAX];  // [slot][chunk]
    for (int c = 0; c < CMAX; ++c) {
        CK(cudaEventCreateWithFlags(&ev[0][c], cudaEventDisableTiming));
        CK(cudaEventCreate(&ev[1][c]));  // timing enabled
    }
    const size_t NB = (size_t)N * 4, JB = (size_t)(N / S) * 4;  // no chunk is longer than N / S
    unsigned *dIn[2], *dMid[2], *dOut[2], *dJoin, *hIn[2], *hOut[2], *hJoin;
    for (int p = 0; p < 2; ++p) {
        CK(cudaMalloc(&dIn[p], NB)); CK(cudaMalloc(&dMid[p], NB)); CK(cudaMalloc(&dOut[p], NB));
        CK(cudaMemset(dIn[p], 0, NB)); CK(cudaMemset(dMid[p], 0, NB)); CK(cudaMemset(dOut[p], 0, NB));
        CK(cudaMallocHost(&hIn[p], NB)); CK(cudaMallocHost(&hOut[p], NB));
        for (int e = 0; e < N; ++e) hIn[p][e] = in_val(p, e);  // iterations 0 and 1
    }
    CK(cudaMalloc(&dJoin, JB)); CK(cudaMemset(dJoin, 0, JB));
    CK(cudaMallocHost(&hJoin, JB));
    CK(cudaDeviceSynchronize());
    std::vector<unsigned> rMid(N / S), rWant(N / S), rJoin(N / S);
    printf("%s: N=%d, %d streams, %d iterations, chunks per ten iterations:", NAME, N, S, ITERS);
    for (int b = 0; b < ITERS / 10; ++b) printf(" %d", CSEQ[b]);
    printf("\n");

    int njoin = 0, npoll = 0, ndev = 0;
    for (int i = 0; i <= ITERS; ++i) {  // i == ITERS only consumes the last iteration
        const int p = i & 1;
        bool join = false;
        int jlen = 0;
        if (i < ITERS) {
            const int C = chunks_of(i);
            memset(hOut[p], 0xFF, NB);  // the slot's last reader (iteration i-2) is done
            for (int c = 0; c < C; ++c) {
                const int off = chunk_off(C, c), len = chunk_off(C, c + 1) - off, grid = (len + TPB - 1) / TPB;
                cudaStream_t s = st[c % S];
                CK(cudaMemcpyAsync(dIn[p] + off, hIn[p] + off, (size_t)len * 4, cudaMemcpyHostToDevice, s));
                kScale<<<grid, TPB, 0, s>>>(dIn[p] + off, dMid[p] + off, len, (unsigned)i, (unsigned)c, SLOW);
                CK(cudaGetLastError());
                kMirror<<<grid, TPB, 0, s>>>(dMid[p] + off, dOut[p] + off, len, (unsigned)i, (unsigned)c);
                CK(cudaGetLastError());
                CK(cudaMemcpyAsync(hOut[p] + off, dOut[p] + off, (size_t)len * 4, cudaMemcpyDeviceToHost, s));
                CK(cudaEventRecord(ev[p][c], s));
            }
            if (i % 4 == 2) {
                join = true;
                JoinArgs ja;
                jlen = N;
                for (int s = 0; s < S; ++s) {
                    const int last = last_chunk(C, s);
                    ja.off[s] = chunk_off(C, last);
                    if (chunk_off(C, last + 1) - ja.off[s] < jlen) jlen = chunk_off(C, last + 1) - ja.off[s];
                    if (s) CK(cudaStreamWaitEvent(st[0], ev[p][last], 0));
                }
                memset(hJoin, 0xFF, JB);
                kJoin<<<(jlen + TPB - 1) / TPB, TPB, 0, st[0]>>>(dOut[p], dJoin, ja, jlen, (unsigned)i);
                CK(cudaGetLastError());
                CK(cudaMemcpyAsync(hJoin, dJoin, (size_t)jlen * 4, cudaMemcpyDeviceToHost, st[0]));
            }
        }
        if (i >= 1) {
            const int j = i - 1, q = j & 1, C = chunks_of(j);
            const int poll = j % 3 == 1 ? (j / 3) % C : -1;
            for (int c = 0; c < C; ++c) {
                const int off = chunk_off(C, c), len = chunk_off(C, c + 1) - off;
                wait_event(ev[q][c], c == poll, j, c);
                npoll += c == poll;
                ref_chunk(j, C, c, rMid.data(), rWant.data());
                char where[48];
                snprintf(where, sizeof where, "chunk %d (stream %d): out", c, c % S);
                expect_words(j, where, off, hOut[q] + off, rWant.data(), len);
                // The chunk's H2D is done: its region now takes the input of the
                // slot's next iteration, j+2 (unused past the end, but written all the same).
                for (int e = off; e < off + len; ++e) hIn[q][e] = in_val(j + 2, e);
            }
            if (j % 10 == 9)
                printf("iters %2d-%2d C=%d: digest %016llx, %lld words checked\n", j - 9, j, C,
                       (unsigned long long)g_hash, g_checked);
        }
        if (join) {
            CK(cudaStreamSynchronize(st[0]));
            const int C = chunks_of(i);
            for (int k = 0; k < jlen; ++k) rJoin[k] = (unsigned)i;
            for (int s = 0; s < S; ++s) {
                ref_chunk(i, C, last_chunk(C, s), rMid.data(), rWant.data());
                for (int k = 0; k < jlen; ++k) rJoin[k] += (2u * (unsigned)s + 1u) * rWant[k];
            }
            expect_words(i, "join of the streams' last chunks on stream 0: J", 0, hJoin, rJoin.data(), jlen);
            ++njoin;
        }
        if (i % 5 == 4) { CK(cudaDeviceSynchronize()); ++ndev; }
    }
    CK(cudaDeviceSynchronize());
    CK(cudaGetLastError());
    printf("%d joins, %d polled chunks, %d device syncs, %lld words checked\n", njoin, npoll, ndev, g_checked);

    for (int s = 0; s < S; ++s) CK(cudaStreamDestroy(st[s]));
    for (int p = 0; p < 2; ++p) {
        for (int c = 0; c < CMAX; ++c) CK(cudaEventDestroy(ev[p][c]));
        CK(cudaFree(dIn[p])); CK(cudaFree(dMid[p])); CK(cudaFree(dOut[p]));
        CK(cudaFreeHost(hIn[p])); CK(cudaFreeHost(hOut[p]));
    }
    CK(cudaFree(dJoin));
    CK(cudaFreeHost(hJoin));
    return finish(NAME);
}
