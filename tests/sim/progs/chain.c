/* Scenario: one stream, a chain of 20 dependent kernels per iteration.
 * Any reordering inside the chain changes the printed values. */
#include "common.h"

int main(void)
{
    enum { N = 300, ITERS = 16 };
    register_kernels();
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *y = dev_alloc_init(N, 0.25f);
    for (int it = 0; it < ITERS; it++) {
        for (int k = 0; k < 20; k++) {
            if (k % 7 == 3)
                sq(s, y, N);
            else
                axpb(s, y, 0.5f + 0.03f * (float)k, 0.1f * (float)(k % 5), N);
        }
        CK(cudaStreamSynchronize(s));
    }
    print_dev("y", y, N);
    CK(cudaFree(y));
    CK(cudaStreamDestroy(s));
    return 0;
}
