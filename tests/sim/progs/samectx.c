/* Scenario: naming the current device or context again, as libraries do
 * before their calls (cudaSetDevice, cuCtxSetCurrent), changes nothing:
 * the iteration stays one segment, one graph launch. */
#include "common.h"

int main(void)
{
    enum { N = 64, ITERS = 30 };
    register_kernels();
    CUresult (*get_ctx)(CUcontext *) = driver_fn("cuCtxGetCurrent");
    CUresult (*set_ctx)(CUcontext) = driver_fn("cuCtxSetCurrent");
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *x = dev_alloc_init(N, 0.5f), *y = dev_alloc_init(N, 1.5f);
    int dev;
    CK(cudaGetDevice(&dev));
    for (int it = 0; it < ITERS; it++) {
        axpb(s, x, 0.9f, 0.01f, N);
        acc(s, y, x, 0.5f, N);
        sq(s, y, N);
        CK(cudaSetDevice(dev));
        axpb(s, y, 0.8f, 0.02f, N);
        mix(s, x, x, y, N);
        sq(s, x, N);
        CUcontext c;
        if (get_ctx(&c) != CUDA_SUCCESS || set_ctx(c) != CUDA_SUCCESS)
            FAIL("cuCtxSetCurrent failed");
        acc(s, x, y, 0.25f, N);
        sq(s, y, N);
        axpb(s, x, 1.01f, -0.01f, N);
        CK(cudaStreamSynchronize(s));
    }
    print_dev("x", x, N);
    print_dev("y", y, N);
    return 0;
}
