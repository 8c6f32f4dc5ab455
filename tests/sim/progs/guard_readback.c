/* Guard scenario: a replayed read-back's host waits on an event of the
 * graph while another thread's call takes every graph away (a kernel's
 * attribute changed: a reset). The simulated event synchronisation starts
 * late (SIM_SYNC_DELAY_US), so the other thread's call lands between the
 * launch and the wait: the graph and its event must outlive the wait.
 * Each iteration: three kernels on a stream and a copy of the residual
 * into pageable memory, which returns with the value; every sixth, the
 * helper thread changes k_sq's dynamic shared memory limit while the main
 * thread reads back, and the main thread waits for it before going on. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#include "common.h"

enum { N = 128, ITERS = 42, EVERY = 6 };

static atomic_int phase; /* 1: the main thread reads back; 2: the helper called; 3: stop */

static void *helper_main(void *p)
{
    (void)p;
    int limit = 1024;
    for (;;) {
        int ph;
        while ((ph = atomic_load(&phase)) != 1 && ph != 3)
            sched_yield();
        if (ph == 3)
            return NULL;
        struct timespec ts = { 0, 2 * 1000 * 1000 };
        nanosleep(&ts, NULL);
        CK(cudaFuncSetAttribute((const void *)k_sq, cudaFuncAttributeMaxDynamicSharedMemorySize, limit));
        limit = limit == 1024 ? 2048 : 1024;
        atomic_store(&phase, 2);
    }
}

int main(void)
{
    register_kernels();
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *x = dev_alloc_init(N, 1.0f), *r;
    CK(cudaMalloc((void **)&r, sizeof(float)));
    CK(cudaMemsetAsync(r, 0, sizeof(float), s));
    pthread_t th;
    if (pthread_create(&th, NULL, helper_main, NULL))
        FAIL("pthread_create failed");
    float res = 1.0f, hist[ITERS];
    for (int it = 0; it < ITERS; it++) {
        axpb(s, x, 0.9f, res * 0.01f, N);
        sq(s, x, N);
        reduce(s, r, x, N);
        int reset = it % EVERY == EVERY - 1;
        if (reset)
            atomic_store(&phase, 1);
        CK(cudaMemcpyAsync(&res, r, sizeof(float), cudaMemcpyDeviceToHost, s));
        hist[it] = res;
        if (reset) {
            while (atomic_load(&phase) != 2)
                sched_yield();
            atomic_store(&phase, 0);
        }
    }
    atomic_store(&phase, 3);
    pthread_join(th, NULL);
    print_floats("hist", hist, ITERS);
    print_dev("x", x, N);
    return 0;
}
