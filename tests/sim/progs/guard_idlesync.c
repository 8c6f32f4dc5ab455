/* Guard scenario: a stream synchronisation right after a replayed read-back
 * on that stream returns without the call only where nothing else came to
 * the stream since. Each iteration reads a residual back into pageable
 * memory, then synchronises, by turns:
 *   0  the read-back's stream, nothing since (answered);
 *   1  that stream, after a helper thread put work on it;
 *   2  that stream, after work put on it with cgraft switched off;
 *   3  another stream, whose work the helper put on it before;
 *   4  the per-thread stream: the read-back on the main thread's, the
 *      helper's own work before it, synchronised by the helper;
 *   5  that stream, after the helper put work on it while the main thread
 *      waited for its read-back (SIM_SYNC_DELAY_US makes the wait late).
 * Where work came, its copy into pinned memory is read after the call; the
 * simulator's lazy seeds leave such work pending till a real wait. */
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#include "common.h"

enum { N = 64, ITERS = 72, TURNS = 6 };

static cudaStream_t s, s2;
static float *x, *r, *y, *pin;
static atomic_int job; /* what the helper is to do; 0 when done */

static void put_work(cudaStream_t st, float b)
{
    axpb(st, y, 0.5f, b, N);
    CK(cudaMemcpyAsync(pin, y, N * sizeof(float), cudaMemcpyDeviceToHost, st));
}

static void *helper_main(void *p)
{
    (void)p;
    for (;;) {
        int j;
        while (!(j = atomic_load(&job)))
            sched_yield();
        if (j < 0)
            return NULL;
        if (j == 1)
            put_work(s, 1.0f);
        else if (j == 3)
            put_work(s2, 2.0f);
        else if (j == 4)
            put_work(cudaStreamPerThread, 3.0f);
        else if (j == 5)
            CK(cudaStreamSynchronize(cudaStreamPerThread));
        else if (j == 6) {
            struct timespec ts = { 0, 2 * 1000 * 1000 };
            nanosleep(&ts, NULL);
            put_work(s, 5.0f);
        }
        atomic_store(&job, 0);
    }
}

static void ask(int j)
{
    atomic_store(&job, j);
    while (atomic_load(&job) > 0)
        sched_yield();
}

int main(void)
{
    register_kernels();
    int (*set)(int) = (int (*)(int))dlsym(RTLD_DEFAULT, "cgraft_set_enabled");
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    x = dev_alloc_init(N, 1.0f);
    y = dev_alloc_init(N, 2.0f);
    CK(cudaMalloc((void **)&r, sizeof(float)));
    CK(cudaMallocHost((void **)&pin, N * sizeof(float)));
    CK(cudaMemset(r, 0, sizeof(float)));
    pthread_t th;
    if (pthread_create(&th, NULL, helper_main, NULL))
        FAIL("pthread_create failed");
    float res = 1.0f, hist[ITERS], seen[ITERS];
    for (int it = 0; it < ITERS; it++) {
        int turn = it % TURNS;
        if (turn == 3 || turn == 4)
            ask(turn);
        if (turn == 5)
            atomic_store(&job, 6); /* while the read-back waits */
        res = residual_step(turn == 4 ? cudaStreamPerThread : s, x, r, N, res * 0.01f);
        hist[it] = res;
        while (atomic_load(&job) > 0)
            sched_yield();
        if (turn == 1)
            ask(1);
        if (turn == 2) {
            if (set)
                set(0);
            put_work(s, 4.0f);
            if (set)
                set(1);
        }
        if (turn == 4)
            ask(5);
        else
            CK(cudaStreamSynchronize(turn == 3 ? s2 : s));
        seen[it] = turn ? pin[it % N] : 0.0f;
    }
    atomic_store(&job, -1);
    pthread_join(th, NULL);
    CK(cudaDeviceSynchronize());
    print_floats("hist", hist, ITERS);
    print_floats("seen", seen, ITERS);
    print_dev("y", y, N);
    return 0;
}
