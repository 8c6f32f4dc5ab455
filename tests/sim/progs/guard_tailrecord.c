/* Guard scenario: the host waits on the event recorded last on a stream,
 * then asks whether the stream is idle. Each iteration kernels on s, then a
 * record of e, which a replayed graph carries last. Eagerly the event
 * completes once all of s's work did, so s is idle: an event record node
 * completes before its graph launch does, and s can be found busy. Before
 * the wait, a pause longer than the hold (every call jittered). The
 * iteration also clears a buffer that is freed and allocated again every
 * fourth, so that its graph is forgotten and built again ten times a run:
 * each build at a run's end is a chance for work of cgraft's to be left on
 * s behind the record. */
#include <time.h>

#include "common.h"

enum { N = 96, ITERS = 40 };

static void sleep_us(long us)
{
    struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };
    nanosleep(&ts, NULL);
}

int main(void)
{
    register_kernels();
    cudaStream_t s;
    cudaEvent_t e;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    float *y = dev_alloc_init(N, 0.25f), *w = dev_alloc_init(N, 0.5f), *t;
    CK(cudaMalloc((void **)&t, N * sizeof *t));
    int busy = 0;
    for (int it = 0; it < ITERS; it++) {
        axpb(s, y, 0.5f, (float)it * 0.0625f, N);
        acc(s, w, y, 0.5f, N);
        sq(s, w, N);
        axpb(s, y, 0.75f, 0.125f, N);
        CK(cudaMemsetAsync(t, 0, N * sizeof *t, s));
        acc(s, t, y, 0.5f, N);
        CK(cudaEventRecord(e, s));
        sleep_us(2000 + (it % 4) * 500);
        CK(cudaEventSynchronize(e));
        cudaError_t q = cudaStreamQuery(s);
        if (q == cudaErrorNotReady)
            busy++;
        else if (q != cudaSuccess)
            FAIL("cudaStreamQuery: %d", (int)q);
        if (it % 4 == 3) {
            CK(cudaFree(t));
            CK(cudaMalloc((void **)&t, N * sizeof *t));
        }
    }
    printf("stream busy after its last event completed: %d of %d\n", busy, ITERS);
    print_dev("y", y, N);
    print_dev("w", w, N);
    return 0;
}
