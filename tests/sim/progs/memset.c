/* Scenario: memset in each iteration between kernels that read and write the buffer. */
#include "common.h"

int main(void)
{
    enum { N = 128, ITERS = 14 };
    register_kernels();
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *t = dev_alloc_init(N, 0.0f), *y = dev_alloc_init(N, 1.0f);
    for (int it = 0; it < ITERS; it++) {
        acc(s, y, t, 0.5f, N);
        CK(cudaMemsetAsync(t, it % 2 ? 0x3f : 0, N * sizeof(float), s));   /* 0x3f3f3f3f or 0 */
        acc(s, y, t, 0.125f, N);
        axpb(s, t, 0.25f, (float)it, N);
        if (it % 4 == 0)
            CK(cudaMemset(y + N / 2, 0, sizeof(float)));
        CK(cudaStreamSynchronize(s));
    }
    print_dev("y", y, N);
    print_dev("t", t, N);
    return 0;
}
