/* Scenario: two host threads, each running its own stream loop concurrently. */
#include <pthread.h>

#include "common.h"

enum { N = 96, ITERS = 20 };

struct job {
    cudaStream_t s;
    float *y, *z, m;
};

static void *worker(void *p)
{
    struct job *j = p;
    for (int it = 0; it < ITERS; it++) {
        axpb(j->s, j->y, j->m, 0.05f * (float)(it % 4), N);
        acc_h(j->s, j->z, j->y, 0.5f, N);
        sq(j->s, j->z, N);
        if (it % 3 == 0)
            CK(cudaStreamSynchronize(j->s));
    }
    CK(cudaStreamSynchronize(j->s));
    return NULL;
}

int main(void)
{
    register_kernels();
    struct job jobs[2];
    for (int i = 0; i < 2; i++) {
        CK(cudaStreamCreateWithFlags(&jobs[i].s, cudaStreamNonBlocking));
        jobs[i].y = dev_alloc_init(N, 0.5f * (float)(i + 1));
        jobs[i].z = dev_alloc_init(N, 0.0f);
        jobs[i].m = 0.9f - 0.1f * (float)i;
    }
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        if (pthread_create(&t[i], NULL, worker, &jobs[i]))
            FAIL("pthread_create failed");
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    print_dev("y0", jobs[0].y, N);
    print_dev("z0", jobs[0].z, N);
    print_dev("y1", jobs[1].y, N);
    print_dev("z1", jobs[1].z, N);
    return 0;
}
