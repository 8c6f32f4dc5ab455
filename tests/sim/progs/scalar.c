/* Scenario: a scalar kernel argument that changes every iteration. Its
 * arguments: how many times the three kernels run in an iteration (1), and
 * the iterations (24). */
#include <stdlib.h>

#include "common.h"

int main(int argc, char **argv)
{
    enum { N = 128 };
    int groups = argc > 1 ? atoi(argv[1]) : 1, iters = argc > 2 ? atoi(argv[2]) : 24;
    register_kernels();
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *y = dev_alloc_init(N, 0.5f), *z = dev_alloc_init(N, 1.5f);
    for (int it = 0; it < iters; it++) {
        for (int g = 0; g < groups; g++) {
            axpb(s, y, 0.9f + 0.005f * (float)it, 0.01f * (float)(it + g), N);
            acc(s, z, y, 1.0f / (float)(it + 1 + g), N);
            axpb_h(s, z, 0.97f, -0.001f * (float)it, N);
        }
        CK(cudaStreamSynchronize(s));
    }
    print_dev("y", y, N);
    print_dev("z", z, N);
    return 0;
}
