/* Scenario: the shape of a training loop timed in blocks. A step is a short
 * part F, a query of the stream (a call that ends held work, as the switch
 * to PyTorch's backward thread ends a segment), then a long part O; every fifth step a sync
 * follows O. So a long segment O+F and, at each block's end, O alone: O
 * must not become a chain of graphs whose first piece loses every match to
 * the longer O+F. */
#include "common.h"

int main(void)
{
    enum { N = 64, STEPS = 60, O = 36 };
    register_kernels();
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *x = dev_alloc_init(N, 0.5f), *w = dev_alloc_init(N, 0.25f);
    for (int it = 0; it < STEPS; it++) {
        for (int k = 0; k < 3; k++) {
            mix(s, x, x, w, N);
            sq(s, x, N);
        }
        (void)cudaStreamQuery(s); /* ready or not: either ends held work */
        for (int k = 0; k < O; k++)
            axpb(s, w, 0.999f, 0.0001f * (float)k, N);
        if (it % 5 == 4)
            CK(cudaStreamSynchronize(s));
    }
    CK(cudaStreamSynchronize(s));
    print_dev("x", x, N);
    print_dev("w", w, N);
    return 0;
}
