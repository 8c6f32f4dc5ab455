/* Scenario: a memset of pinned host memory among kernels, every iteration.
 * cgraft models memsets but takes none of memory that is not the device's
 * as a node: the call ends held work, and the report lists it among the
 * calls that ended segments. */
#include "common.h"

int main(int argc, char **argv)
{
    enum { N = 256 };
    int iters = argc > 1 ? atoi(argv[1]) : 30;
    register_kernels();
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *y = dev_alloc_init(N, 0.5f), *h;
    CK(cudaMallocHost((void **)&h, N * sizeof(float)));
    for (int it = 0; it < iters; it++) {
        axpb(s, y, 0.99f, 0.01f * (float)it, N);
        CK(cudaMemsetAsync(h, it & 0xff, N * sizeof(float), s));
        axpb(s, y, 1.01f, -0.005f, N);
        CK(cudaStreamSynchronize(s));
        if (((unsigned char *)h)[N * sizeof(float) - 1] != (unsigned char)(it & 0xff))
            FAIL("iteration %d: the host memset did not land", it);
    }
    print_dev("y", y, N);
    CK(cudaFreeHost(h));
    return 0;
}
