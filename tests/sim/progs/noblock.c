/* Scenario: 200 iterations with no blocking point until the very end. */
#include "common.h"

int main(void)
{
    enum { N = 64, ITERS = 200 };
    register_kernels();
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *y = dev_alloc_init(N, 0.5f), *z = dev_alloc_init(N, 0.0f);
    for (int it = 0; it < ITERS; it++) {
        axpb(s, y, 0.99f, 0.01f * (float)(it % 10), N);
        acc_h(s, z, y, 0.1f, N);
    }
    CK(cudaStreamSynchronize(s));
    print_dev("y", y, N);
    print_dev("z", z, N);
    return 0;
}
