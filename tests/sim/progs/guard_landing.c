/* Guard scenario: a replayed read-back into pageable memory lands in
 * cgraft's pinned memory and is copied out once the host has waited. While
 * the main thread waits (the simulated event synchronisation starts late,
 * SIM_SYNC_DELAY_US), a helper thread makes the same calls on the same
 * stream with another scalar and reads back into its own variable: its
 * replay would land in the same memory before the main thread copies its
 * value out. Each thread must get the value of its own calls. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#include "common.h"

enum { N = 128, ITERS = 36, EVERY = 6 };

static atomic_int phase; /* 1: the main thread reads back; 2: the helper read back; 3: stop */
static cudaStream_t s;
static float *x, *r;

static float helper_hist[ITERS / EVERY];

static void *helper_main(void *p)
{
    (void)p;
    for (int k = 0;; k++) {
        int ph;
        while ((ph = atomic_load(&phase)) != 1 && ph != 3)
            sched_yield();
        if (ph == 3)
            return NULL;
        struct timespec ts = { 0, 2 * 1000 * 1000 };
        nanosleep(&ts, NULL);
        helper_hist[k] = residual_step(s, x, r, N, 0.5f + (float)k);
        atomic_store(&phase, 2);
    }
}

int main(void)
{
    register_kernels();
    CK(cudaStreamCreate(&s));
    x = dev_alloc_init(N, 1.0f);
    CK(cudaMalloc((void **)&r, sizeof(float)));
    CK(cudaMemsetAsync(r, 0, sizeof(float), s));
    pthread_t th;
    if (pthread_create(&th, NULL, helper_main, NULL))
        FAIL("pthread_create failed");
    float res = 1.0f, hist[ITERS];
    for (int it = 0; it < ITERS; it++) {
        int race = it % EVERY == EVERY - 1;
        axpb(s, x, 0.9f, res * 0.01f, N);
        sq(s, x, N);
        reduce(s, r, x, N);
        if (race)
            atomic_store(&phase, 1);
        CK(cudaMemcpyAsync(&res, r, sizeof(float), cudaMemcpyDeviceToHost, s));
        hist[it] = res;
        if (race) {
            while (atomic_load(&phase) != 2)
                sched_yield();
            atomic_store(&phase, 0);
        }
    }
    atomic_store(&phase, 3);
    pthread_join(th, NULL);
    print_floats("hist", hist, ITERS);
    print_floats("helper", helper_hist, ITERS / EVERY);
    print_dev("x", x, N);
    return 0;
}
