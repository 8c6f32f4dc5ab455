/* Scenario: queries of events that are complete and not recorded in the
 * current iteration: the previous iteration's end, asked mid-iteration, and
 * an event polled from another thread all along (as a watchdog thread does).
 * Neither touches what is held back: one launch per iteration, and no
 * divergence. */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "common.h"

static cudaEvent_t ready;
static atomic_int stop;

static void *watchdog(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop)) {
        if (cudaEventQuery(ready) != cudaSuccess)
            FAIL("a complete event reported not ready");
        struct timespec ts = { 0, 20000 };
        nanosleep(&ts, NULL);
    }
    return NULL;
}

int main(void)
{
    enum { N = 64, ITERS = 30 };
    register_kernels();
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    cudaEvent_t done;
    CK(cudaEventCreate(&done));
    CK(cudaEventCreate(&ready));
    float *x = dev_alloc_init(N, 0.5f), *y = dev_alloc_init(N, 1.5f);
    CK(cudaEventRecord(ready, s));
    CK(cudaEventRecord(done, s));
    CK(cudaStreamSynchronize(s));
    pthread_t th;
    if (pthread_create(&th, NULL, watchdog, NULL))
        FAIL("pthread_create");
    for (int it = 0; it < ITERS; it++) {
        axpb(s, x, 0.9f, 0.01f, N);
        acc(s, y, x, 0.5f, N);
        sq(s, y, N);
        if (cudaEventQuery(done) != cudaSuccess)
            FAIL("the previous iteration's event is not complete");
        CK(cudaEventSynchronize(done));
        float ms;
        CK(cudaEventElapsedTime(&ms, ready, done));
        axpb(s, y, 0.8f, 0.02f, N);
        mix(s, x, x, y, N);
        CK(cudaEventRecord(done, s));
        CK(cudaStreamSynchronize(s));
    }
    atomic_store(&stop, 1);
    pthread_join(th, NULL);
    print_dev("x", x, N);
    print_dev("y", y, N);
    return 0;
}
