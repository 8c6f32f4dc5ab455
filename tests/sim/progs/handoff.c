/* Scenario: a step that two host threads take turns at, as PyTorch's
 * training step does (the forward pass on the program's thread, the backward
 * pass on a thread of the autograd engine, the optimiser's step back on the
 * first): the main thread makes part A of each step on a stream and hands
 * over to a worker, which makes part B on the same stream and hands back;
 * the main thread makes part C. Blocks of eight steps end in a sync. Each
 * thread's stretch is learnt as a piece; the pieces launch one right after
 * the other, from either thread, and become one graph of the whole step.
 * With "ptds", every part is on the per-thread default stream of the thread
 * that makes it (each its own stream, ordered by the hand-over's sync): the
 * pieces stay apart. */
#include <pthread.h>
#include <semaphore.h>

#include "common.h"

enum { N = 64, STEPS = 80, A = 4, B = 12, C = 3 };

static cudaStream_t s;
static float *x, *w;
static sem_t go, done;
static int ptds;

static cudaStream_t stream(void)
{
    return ptds ? cudaStreamPerThread : s;
}

static void *worker(void *p)
{
    (void)p;
    for (int it = 0; it < STEPS; it++) {
        sem_wait(&go);
        for (int k = 0; k < B; k++)
            axpb(stream(), w, 0.999f, 0.0001f * (float)k, N);
        if (ptds)
            CK(cudaStreamSynchronize(stream()));
        sem_post(&done);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    ptds = argc > 1 && !strcmp(argv[1], "ptds");
    register_kernels();
    CK(cudaStreamCreate(&s));
    x = dev_alloc_init(N, 0.5f);
    w = dev_alloc_init(N, 0.25f);
    sem_init(&go, 0, 0);
    sem_init(&done, 0, 0);
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL))
        FAIL("pthread_create");
    for (int it = 0; it < STEPS; it++) {
        for (int k = 0; k < A; k++) {
            mix(stream(), x, x, w, N);
            sq(stream(), x, N);
        }
        if (ptds)
            CK(cudaStreamSynchronize(stream()));
        sem_post(&go);
        sem_wait(&done);
        for (int k = 0; k < C; k++)
            mix(stream(), w, w, x, N);
        if (it % 8 == 7)
            CK(cudaStreamSynchronize(stream()));
    }
    pthread_join(t, NULL);
    CK(cudaDeviceSynchronize());
    print_dev("x", x, N);
    print_dev("w", w, N);
    return 0;
}
