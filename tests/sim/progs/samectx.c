/* Scenario: naming the current device or context again, as libraries do
 * before their calls (cudaSetDevice, cuCtxSetCurrent), changes nothing:
 * the iteration stays one segment, one graph launch. */
#include <dlfcn.h>

#include <cuda.h>

#include "common.h"

int main(void)
{
    enum { N = 64, ITERS = 30 };
    register_kernels();
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    CUresult (*gpa)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *) =
        h ? (CUresult(*)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *))
                dlsym(h, "cuGetProcAddress_v2")
          : NULL;
    CUresult (*get_ctx)(CUcontext *) = NULL, (*set_ctx)(CUcontext) = NULL;
    CUdriverProcAddressQueryResult st;
    if (!gpa || gpa("cuCtxGetCurrent", (void **)&get_ctx, 13000, 0, &st) != CUDA_SUCCESS ||
        gpa("cuCtxSetCurrent", (void **)&set_ctx, 13000, 0, &st) != CUDA_SUCCESS)
        FAIL("no cuCtxGetCurrent/cuCtxSetCurrent");
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
