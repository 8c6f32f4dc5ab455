/* Scenario: libraries push the current context around their work and pop it
 * after (cuFFT, cuRAND): those pops change nothing, and the iteration stays
 * one segment. With an argument, every iteration also works in a second
 * context between a push of it and the pop back: the work recorded there
 * must go out there, though the pop that ends its segment has already made
 * the first context current (a kernel on a stream of a context that is not
 * current is refused). */
#include <string.h>

#include "common.h"

int main(int argc, char **argv)
{
    enum { N = 64, ITERS = 30 };
    int other = argc > 1 && strcmp(argv[1], "other") == 0;
    register_kernels();
    CUresult (*get_ctx)(CUcontext *) = driver_fn("cuCtxGetCurrent");
    CUresult (*push)(CUcontext) = driver_fn("cuCtxPushCurrent");
    CUresult (*pop)(CUcontext *) = driver_fn("cuCtxPopCurrent");
    CUresult (*create)(CUcontext *, CUctxCreateParams *, unsigned int, CUdevice) =
        driver_fn("cuCtxCreate");

    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *x = dev_alloc_init(N, 0.5f), *y = dev_alloc_init(N, 1.5f);
    CUcontext a, b = NULL, popped;
    if (get_ctx(&a) != CUDA_SUCCESS || !a)
        FAIL("no current context");
    cudaStream_t sb = NULL;
    float *z = NULL;
    if (other) {
        if (create(&b, NULL, 0, 0) != CUDA_SUCCESS) /* made current, over a */
            FAIL("cuCtxCreate failed");
        CK(cudaStreamCreateWithFlags(&sb, cudaStreamNonBlocking));
        z = dev_alloc_init(N, 0.75f);
        if (pop(&popped) != CUDA_SUCCESS || popped != b)
            FAIL("cuCtxPopCurrent did not pop the new context");
    }
    for (int it = 0; it < ITERS; it++) {
        axpb(s, x, 0.9f, 0.01f * (float)(it % 3), N);
        if (push(a) != CUDA_SUCCESS)
            FAIL("cuCtxPushCurrent failed");
        acc(s, y, x, 0.5f, N);
        sq(s, y, N);
        if (pop(&popped) != CUDA_SUCCESS || popped != a)
            FAIL("cuCtxPopCurrent popped another context");
        mix(s, x, x, y, N);
        if (other) {
            if (push(b) != CUDA_SUCCESS)
                FAIL("cuCtxPushCurrent failed");
            axpb(sb, z, 0.95f, 0.05f, N);
            sq(sb, z, N);
            if (pop(&popped) != CUDA_SUCCESS || popped != b)
                FAIL("cuCtxPopCurrent popped another context");
            acc(s, x, y, 0.25f, N);
            if (push(b) != CUDA_SUCCESS)
                FAIL("cuCtxPushCurrent failed");
            CK(cudaStreamSynchronize(sb));
            if (pop(&popped) != CUDA_SUCCESS)
                FAIL("cuCtxPopCurrent failed");
        }
        axpb(s, x, 1.01f, -0.01f, N);
        CK(cudaStreamSynchronize(s));
    }
    print_dev("x", x, N);
    print_dev("y", y, N);
    if (other)
        print_dev("z", z, N);
    return 0;
}
