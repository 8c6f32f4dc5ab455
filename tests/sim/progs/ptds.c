/* Scenario: per-thread default stream (built with CUDA_API_PER_THREAD_DEFAULT_STREAM):
 * two host threads each loop on their own stream 0. */
#include <pthread.h>

#include "common.h"

enum { N = 128, ITERS = 15 };

struct job {
    float *y, *z;
    float m;
};

static void *worker(void *p)
{
    struct job *j = p;
    for (int it = 0; it < ITERS; it++) {
        axpb_h(0, j->y, j->m, 0.1f, N);
        acc(0, j->z, j->y, 0.5f, N);
        axpb(cudaStreamPerThread, j->z, 0.99f, 0.001f * (float)it, N);
        CK(cudaStreamSynchronize(0));
    }
    return NULL;
}

int main(int argc, char **argv)
{
    /* "1": one host thread does it all, so cgraft may hold per-thread
     * stream work; the default of two threads makes it pass that through. */
    int nthreads = argc > 1 && argv[1][0] == '1' ? 1 : 2;
    register_kernels();
    struct job jobs[2] = { { dev_alloc_init(N, 0.5f), dev_alloc_init(N, 1.0f), 0.9f },
                           { dev_alloc_init(N, 1.5f), dev_alloc_init(N, 2.0f), 0.8f } };
    pthread_t t[2];
    if (nthreads == 1) {
        worker(&jobs[0]);
        worker(&jobs[1]);
    } else {
        for (int i = 0; i < 2; i++)
            if (pthread_create(&t[i], NULL, worker, &jobs[i]))
                FAIL("pthread_create failed");
        for (int i = 0; i < 2; i++)
            pthread_join(t[i], NULL);
    }
    print_dev("y0", jobs[0].y, N);
    print_dev("z0", jobs[0].z, N);
    print_dev("y1", jobs[1].y, N);
    print_dev("z1", jobs[1].z, N);
    return 0;
}
