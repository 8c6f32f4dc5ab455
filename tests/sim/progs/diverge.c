/* Scenario: every 5th iteration the op in the middle of the segment differs,
 * a memset where a kernel was; every 7th, a kernel of other parameters
 * (another of the same parameter size is a node update: swapkernel). */
#include "common.h"

int main(void)
{
    enum { N = 128, ITERS = 25 };
    register_kernels();
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *y = dev_alloc_init(N, 0.5f), *z = dev_alloc_init(N, 0.75f);
    for (int it = 0; it < ITERS; it++) {
        axpb(s, y, 0.8f, 0.2f, N);
        acc(s, z, y, 0.5f, N);
        if (it % 5 == 4)
            CK(cudaMemsetAsync(z + 5, 0, 11 * sizeof(float), s));
        else if (it % 7 == 6)
            sq(s, z, N);
        else
            axpb(s, z, 0.9f, 0.05f, N);
        acc(s, y, z, 0.25f, N);
        axpb(s, y, 1.05f, -0.1f, N);
        CK(cudaStreamSynchronize(s));
    }
    print_dev("y", y, N);
    print_dev("z", z, N);
    return 0;
}
