/* Scenario: each iteration ends with a device-to-pageable copy of a residual
 * (host-synchronous), and the host uses it to steer the next iteration. */
#include "common.h"

int main(void)
{
    enum { N = 128, ITERS = 16 };
    register_kernels();
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *x = dev_alloc_init(N, 1.0f), *r;
    CK(cudaMalloc((void **)&r, sizeof(float)));
    CK(cudaMemsetAsync(r, 0, sizeof(float), s));
    float res = 1.0f, hist[ITERS];
    for (int it = 0; it < ITERS; it++) {
        axpb(s, x, 0.9f, res * 0.01f, N);
        sq(s, x, N);
        reduce(s, r, x, N);
        CK(cudaMemcpyAsync(&res, r, sizeof(float), cudaMemcpyDeviceToHost, s));
        hist[it] = res;   /* the copy into pageable memory returned with the value */
    }
    print_floats("hist", hist, ITERS);
    print_dev("x", x, N);
    return 0;
}
