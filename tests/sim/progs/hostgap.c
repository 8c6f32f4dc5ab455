/* Scenario: the host computes for a while after issuing each iteration,
 * with no CUDA call, and synchronises every fourth iteration. */
#include "common.h"
#include <time.h>

static void host_work(long us)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do clock_gettime(CLOCK_MONOTONIC, &t);
    while ((t.tv_sec - t0.tv_sec) * 1000000L + (t.tv_nsec - t0.tv_nsec) / 1000 < us);
}

int main(int argc, char **argv)
{
    enum { N = 300 };
    int iters = argc > 1 ? atoi(argv[1]) : 40;
    long gap = argc > 2 ? atol(argv[2]) : 3000;
    register_kernels();
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *y = dev_alloc_init(N, 0.25f);
    for (int it = 0; it < iters; it++) {
        for (int k = 0; k < 12; k++) {
            if (k % 5 == 3)
                sq(s, y, N);
            else
                axpb(s, y, 0.5f + 0.03f * (float)k, 0.1f * (float)(k % 5), N);
        }
        host_work(gap);
        if (it % 4 == 3)
            CK(cudaStreamSynchronize(s));
    }
    print_dev("y", y, N);
    CK(cudaFree(y));
    CK(cudaStreamDestroy(s));
    return 0;
}
