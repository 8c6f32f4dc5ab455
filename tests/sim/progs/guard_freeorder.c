/* Guard scenario: frees in stream order amid a step's kernels, as PyTorch's
 * stream-ordered allocator makes them: on the legacy stream, each temporary
 * freed after its last kernel, a blocking read-back ending the step. Such a
 * free is held back behind the held work and made once it went out: the
 * step replays whole.
 * - NAMED: one temporary is also zeroed by a memset and freed amid the
 *   step. That free ends the segment, since a graph learnt from the step
 *   would name memory freed since (its copies and memsets hold the
 *   allocation); only the graphs naming it go, not the one with a memset of
 *   other memory after it.
 * - STREAMS: a stream of the program's reads y before a free on the legacy
 *   stream and another writes it after: the free orders the two (every
 *   blocking stream's work waits for it, and it for theirs), so it ends
 *   the segment.
 * - COPY: a temporary copied into another with cudaMemcpyAsync (as a
 *   tensor's clone), both freed amid the step: the copy is a node of
 *   cgraft's copy kernel, which holds only bytes, so neither free ends the
 *   segment nor makes a graph go (though the graph holds memory, a memset
 *   of memory that stays).
 * - READBACK: the step ends reading a temporary back (into pinned memory,
 *   or, with READBACK=hpage, pageable), then frees it: the read-back is a
 *   node of the copy kernel too, into the pinned memory at its address or
 *   the landing, and the free makes no graph go.
 * - COUNTS: the program reads a pool's counts after a free amid the step,
 *   as CuPy's pool does at every allocation: the frees held back go then,
 *   and every free ends the segment from then on (the step is learnt
 *   between them, not across, and replays so).
 * - CROSS: a temporary of one stream freed, and another stream's
 *   temporary allocated, amid the step: made at once, the free would let
 *   the pool hand its memory to the other stream while the held work that
 *   uses it has not run.
 * - Run with SIM_POOL_LIMIT at what the step holds at most eagerly (two
 *   temporaries), the allocation after a free held back fails for want of
 *   memory: made again once the frees held back went out, it succeeds as
 *   eagerly, and leaves the runtime no error (checked at every step). DRV
 *   makes that allocation with the driver's cuMemAllocAsync. */
#include <cuda.h>

#include "common.h"

enum { N = 512, ITERS = 30 };

int main(void)
{
    float *y, *r, host[64];
    double sum = 0.0;
    cudaStream_t s = start_y_r(&y, &r), s3;
    CK(cudaStreamCreate(&s3));
    float *z = dev_alloc_init(N, 0.25f), *w = dev_alloc_init(N, 2.0f);
#ifdef COUNTS
    cudaMemPool_t pool = pool_at(cudaMemLocationTypeDevice);
#endif
#ifdef READBACK
    float *hpin, hpage[64];
    CK(cudaMallocHost((void **)&hpin, sizeof hpage));
    (void)hpin, (void)hpage;
#endif
    for (int it = 0; it < ITERS; it++) {
        float *a, *b, *c;
#ifdef CROSS
        CK(cudaMallocAsync((void **)&a, N * sizeof(float), s));
        mix(s, a, y, y + N, N);
        acc(s, z, a, 0.5f, N);
        CK(cudaFreeAsync(a, s));
        CK(cudaMallocAsync((void **)&b, N * sizeof(float), s3));
        mix(s3, b, w, w, N);
        acc(s3, w, b, 0.25f, N);
        CK(cudaFreeAsync(b, s3));
        CK(cudaStreamSynchronize(s3));
        CK(cudaMemcpy(host, z, sizeof host, cudaMemcpyDeviceToHost));
        (void)c;
#else
        CK(cudaMallocAsync((void **)&a, N * sizeof(float), 0));
        mix(0, a, y, y + N, N);
        CK(cudaMallocAsync((void **)&b, N * sizeof(float), 0));
#ifdef NAMED
        CK(cudaMemsetAsync(b, 0, N * sizeof(float), 0));
        acc(0, b, a, 0.5f, N);
#elif defined(COPY)
        float *d;
        CK(cudaMallocAsync((void **)&d, N * sizeof(float), 0));
        CK(cudaMemcpyAsync(d, a, N * sizeof(float), cudaMemcpyDeviceToDevice, 0));
        CK(cudaMemsetAsync(r, 0, sizeof(float), 0));
        mix(0, b, d, y, N);
        CK(cudaFreeAsync(d, 0));
#else
        mix(0, b, a, y, N);
#endif
        CK(cudaFreeAsync(a, 0));
#ifdef COUNTS
        unsigned long long used;
        CK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used));
#endif
#ifdef DRV
        CUdeviceptr cp;
        if (cuMemAllocAsync(&cp, N * sizeof(float), 0) != CUDA_SUCCESS)
            FAIL("cuMemAllocAsync failed at step %d", it);
        c = (float *)(uintptr_t)cp;
#else
        CK(cudaMallocAsync((void **)&c, N * sizeof(float), 0));
#endif
        mix(0, c, b, y, N);
#ifdef NAMED
        CK(cudaFreeAsync(b, 0));
        CK(cudaMemsetAsync(r, 0, sizeof(float), 0));
#endif
        acc(0, y, c, 0.25f, N);
#ifdef STREAMS
        acc(s, z, y, 0.5f, N);
        CK(cudaFreeAsync(c, 0));
        axpb(s3, y, 0.5f, 0.01f, N);
#else
        CK(cudaFreeAsync(c, 0));
        axpb(0, y, 0.5f, 0.01f, N);
#endif
#if defined(READBACK)
        float *t;
        CK(cudaMallocAsync((void **)&t, N * sizeof(float), 0));
        mix(0, t, y, y + N, N);
        CK(cudaMemcpy(READBACK, t, sizeof host, cudaMemcpyDeviceToHost));
        CK(cudaFreeAsync(t, 0));
        memcpy(host, READBACK, sizeof host);
#else
        CK(cudaMemcpy(host, y, sizeof host, cudaMemcpyDeviceToHost));
#endif
#ifndef NAMED
        CK(cudaFreeAsync(b, 0));
#endif
#endif
        sum += host[it % 64];
        cudaError_t left = cudaGetLastError();
        if (left != cudaSuccess)
            printf("step %d left the runtime's error %d\n", it, (int)left);
    }
    CK(cudaDeviceSynchronize());
    printf("sum %.9g\n", sum);
    print_dev("y", y, N);
    print_dev("z", z, N);
    print_dev("w", w, N);
    (void)s;
    return 0;
}
