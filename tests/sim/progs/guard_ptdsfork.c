/* Guard scenario: one two-stream stretch replayed by two host threads in
 * turn, its second stream each thread's per-thread stream. Each iteration:
 * the second thread launches a kernel on its per-thread stream (x), then
 * the first thread runs the stretch, then the second: a kernel on a shared
 * stream s1, an event recorded there and waited for by the per-thread
 * stream, and a kernel there reading the thread's x. The second thread's
 * stretch comes right after the first thread's replay of the same graph,
 * with nothing else enqueued in between, yet its per-thread stream is not
 * the one that replay joined: the launch must still wait for its x. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "common.h"

enum { N = 128, ITERS = 40 };

/* 3 * it: the second thread's x; 3 * it + 1: the first thread's stretch;
 * 3 * it + 2: the second thread's stretch. */
static atomic_int turn;

static void wait_turn(int t)
{
    while (atomic_load(&turn) != t)
        sched_yield();
}

static cudaStream_t s1;
static cudaEvent_t e;

struct side {
    float *a, *x, *out, hist[ITERS];
};

static void stretch(struct side *d, int it)
{
    axpb(s1, d->a, 0.9f, 0.05f * (float)(it % 3), N);
    CK(cudaEventRecord(e, s1));
    CK(cudaStreamWaitEvent(cudaStreamPerThread, e, 0));
    mix(cudaStreamPerThread, d->out, d->a, d->x, N);
}

static void *second_main(void *p)
{
    struct side *d = p;
    for (int it = 0; it < ITERS; it++) {
        wait_turn(3 * it);
        axpb(cudaStreamPerThread, d->x, 0.5f, (float)it, N);
        atomic_store(&turn, 3 * it + 1);
        wait_turn(3 * it + 2);
        stretch(d, it);
        CK(cudaMemcpyAsync(&d->hist[it], d->out + it % N, sizeof(float), cudaMemcpyDeviceToHost,
                           cudaStreamPerThread));
        CK(cudaStreamSynchronize(cudaStreamPerThread));
        atomic_store(&turn, 3 * it + 3);
    }
    return NULL;
}

int main(void)
{
    register_kernels();
    CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    struct side first = { dev_alloc_init(N, 1.0f), dev_alloc_init(N, 0.25f), dev_alloc_init(N, 0.0f), { 0 } };
    struct side second = { dev_alloc_init(N, 2.0f), dev_alloc_init(N, 0.75f), dev_alloc_init(N, 0.0f), { 0 } };
    CK(cudaDeviceSynchronize());
    pthread_t th;
    if (pthread_create(&th, NULL, second_main, &second))
        FAIL("pthread_create failed");
    for (int it = 0; it < ITERS; it++) {
        wait_turn(3 * it + 1);
        stretch(&first, it);
        atomic_store(&turn, 3 * it + 2);
    }
    pthread_join(th, NULL);
    CK(cudaDeviceSynchronize());
    print_floats("hist", second.hist, ITERS);
    print_dev("first.a", first.a, N);
    print_dev("first.out", first.out, N);
    print_dev("second.a", second.a, N);
    print_dev("second.x", second.x, N);
    print_dev("second.out", second.out, N);
    return 0;
}
