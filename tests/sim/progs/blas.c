/* Scenario: the program's own runtime launches mixed with libsimblas launches
 * (which go straight to the driver) on the same stream in every iteration. */
#include "common.h"
#include "simblas.h"

int main(void)
{
    enum { N = 128, ITERS = 16 };
    register_kernels();
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *x = dev_alloc_init(N, 0.5f), *y = dev_alloc_init(N, 1.0f), *dots;
    CK(cudaMalloc((void **)&dots, ITERS * sizeof(float)));
    for (int it = 0; it < ITERS; it++) {
        axpb(s, x, 0.95f, 0.02f, N);
        if (simblas_axpy(s, N, 0.5f, x, y))
            FAIL("simblas_axpy failed");
        sq(s, y, N);
        if (simblas_scal(s, N, 0.9f, y))
            FAIL("simblas_scal failed");
        acc(s, x, y, 0.1f, N);
        if (simblas_dot(s, N, x, y, dots + it))
            FAIL("simblas_dot failed");
        axpb(s, x, 1.0f, -0.01f, N);
        if (it % 4 == 3)
            CK(cudaStreamSynchronize(s));
    }
    CK(cudaStreamSynchronize(s));
    print_dev("x", x, N);
    print_dev("y", y, N);
    print_dev("dots", dots, ITERS);
    return 0;
}
