/* Class scenario: per-thread default stream (built with
 * CUDA_API_PER_THREAD_DEFAULT_STREAM). Each iteration the main thread
 * launches on its per-thread stream without a sync and signals a new thread,
 * whose first CUDA call copies an unrelated buffer on its own per-thread
 * stream; only then does the main thread synchronise and read back. */
#include <pthread.h>

#include "common.h"

enum { N = 128, M = 64, ITERS = 24 };

struct helper {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int go;
    int it;
    float *other;                   /* device buffer only helpers touch */
    float sum;
};

static void *helper_main(void *p)
{
    struct helper *h = p;
    pthread_mutex_lock(&h->mu);
    while (!h->go)
        pthread_cond_wait(&h->cv, &h->mu);
    pthread_mutex_unlock(&h->mu);
    /* this thread's first CUDA calls */
    float buf[M];
    for (int i = 0; i < M; i++)
        buf[i] = (float)(i + h->it) * 0.5f;
    CK(cudaMemcpy(h->other, buf, sizeof(buf), cudaMemcpyHostToDevice));
    axpb(0, h->other, 2.0f, 1.0f, M);
    CK(cudaMemcpy(buf, h->other, sizeof(buf), cudaMemcpyDeviceToHost));
    float s = 0;
    for (int i = 0; i < M; i++)
        s += buf[i];
    h->sum = s;
    return NULL;
}

int main(void)
{
    register_kernels();
    float *y = dev_alloc_init(N, 0.25f), *z = dev_alloc_init(N, 1.0f), *other;
    CK(cudaMalloc((void **)&other, M * sizeof(float)));
    float log[ITERS], sums[ITERS], host[N];
    for (int it = 0; it < ITERS; it++) {
        axpb_h(0, y, 0.9f, 0.05f * (float)(it % 4), N);
        sq(0, y, N);
        acc_h(cudaStreamPerThread, z, y, 0.5f, N);
        struct helper h = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER, .it = it,
                            .other = other };
        pthread_t t;
        if (pthread_create(&t, NULL, helper_main, &h))
            FAIL("pthread_create failed");
        pthread_mutex_lock(&h.mu);
        h.go = 1;
        pthread_cond_signal(&h.cv);
        pthread_mutex_unlock(&h.mu);
        pthread_join(t, NULL);
        sums[it] = h.sum;
        CK(cudaStreamSynchronize(0));
        CK(cudaMemcpy(host, z, sizeof(host), cudaMemcpyDeviceToHost));
        log[it] = host[it % N] + host[N - 1];
    }
    print_floats("log", log, ITERS);
    print_floats("helper-sums", sums, ITERS);
    print_dev("y", y, N);
    print_dev("z", z, N);
    return 0;
}
