/* Scenario: a scalar kernel argument that changes every iteration. */
#include "common.h"

int main(void)
{
    enum { N = 128, ITERS = 24 };
    register_kernels();
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *y = dev_alloc_init(N, 0.5f), *z = dev_alloc_init(N, 1.5f);
    for (int it = 0; it < ITERS; it++) {
        axpb(s, y, 0.9f + 0.005f * (float)it, 0.01f * (float)it, N);
        acc(s, z, y, 1.0f / (float)(it + 1), N);
        axpb_h(s, z, 0.97f, -0.001f * (float)it, N);
        CK(cudaStreamSynchronize(s));
    }
    print_dev("y", y, N);
    print_dev("z", z, N);
    return 0;
}
