/* Scenario: the launch shape changes every iteration (grid, and dynamic
 * shared memory that never repeats): no segment recurs, cgraft backs off. */
#include "common.h"

int main(void)
{
    enum { N = 512, ITERS = 160 };
    register_kernels();
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *y = dev_alloc_init(N, 0.5f);
    int n = N;
    for (int it = 0; it < ITERS; it++) {
        float m = 0.9f, b = 0.1f;
        void *args[] = { &y, &m, &b, &n };
        unsigned grid = 1 + (unsigned)(it * 5) % 8;
        CK(cudaLaunchKernel((const void *)k_axpb, d1(grid), d1(BLOCK), args, 16u * (unsigned)it, s));
        sq(s, y, N);
        axpb(s, y, 1.01f, -0.01f, N);
        CK(cudaStreamSynchronize(s));
    }
    print_dev("y", y, N);
    return 0;
}
