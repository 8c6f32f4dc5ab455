/* Guard scenario, built with CUDA_API_PER_THREAD_DEFAULT_STREAM: the main
 * thread's held work on its per-thread stream when another thread calls
 * CUDA. Each iteration the main thread launches four kernels on its
 * per-thread stream and synchronises it; every third iteration, after the
 * first two kernels, it starts a helper thread and waits for it. The
 * helper's one CUDA call is a launch on its own buffer on a stream of its
 * own, not waited for until the end. The stretch learnt from the other
 * iterations runs past that point, so the first two kernels are held when
 * the helper calls: they must go out first, still ordered before the main
 * thread's next two kernels. */
#include <pthread.h>

#include "common.h"

enum { N = 128, M = 64, ITERS = 30 };

struct helper {
    cudaStream_t s;
    float *other;
    int it;
};

/* Its only CUDA call: a launch on its own stream, not waited for here. */
static void *helper_main(void *p)
{
    struct helper *h = p;
    axpb(h->s, h->other, 0.5f, (float)h->it, M);
    return NULL;
}

int main(void)
{
    register_kernels();
    float *y = dev_alloc_init(N, 0.25f), *z = dev_alloc_init(N, 1.0f), *other;
    CK(cudaMalloc((void **)&other, M * sizeof(float)));
    CK(cudaMemset(other, 0, M * sizeof(float)));
    cudaStream_t hs;
    CK(cudaStreamCreateWithFlags(&hs, cudaStreamNonBlocking));
    float log[ITERS], host[N];
    for (int it = 0; it < ITERS; it++) {
        axpb_h(0, y, 0.9f, 0.05f * (float)(it % 4), N);
        sq(0, y, N);
        if (it % 3 == 2) {
            struct helper h = { .s = hs, .other = other, .it = it };
            pthread_t t;
            if (pthread_create(&t, NULL, helper_main, &h))
                FAIL("pthread_create failed");
            pthread_join(t, NULL);
        }
        acc_h(0, z, y, 0.5f, N);
        sq(cudaStreamPerThread, z, N);
        CK(cudaStreamSynchronize(0));
        CK(cudaMemcpy(host, z, sizeof(host), cudaMemcpyDeviceToHost));
        log[it] = host[it % N] + host[N - 1];
    }
    print_floats("log", log, ITERS);
    CK(cudaDeviceSynchronize());
    print_dev("other", other, M);
    print_dev("y", y, N);
    print_dev("z", z, N);
    return 0;
}
