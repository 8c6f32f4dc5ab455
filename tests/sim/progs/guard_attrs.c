/* Guard scenario: one kernel's dynamic shared memory limit set through two
 * kinds of handle, the runtime's host stub and its CUkernel. A loop of
 * three launches, one with 40 KiB of dynamic shared memory, replays; the
 * limit goes down to 32 KiB through the stub (the 40 KiB launch fails), up
 * to 48 KiB through the CUkernel (it succeeds), and down to 32 KiB through
 * the stub again: the last is a change, though the stub was given that
 * value before, and the launch fails again at its call. */
#include <cuda.h>

#include "common.h"

enum { N = 64, ITERS = 40, KIB = 1024 };

int main(void)
{
    register_kernels();
    register_shm_kernel();
    const void *f = (const void *)k_shm;
    cudaKernel_t kern;
    CK(cudaGetKernel(&kern, f));
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *y = dev_alloc_init(N, 1.0f);
    for (int it = 0; it < ITERS; it++) {
        if (it == 10 || it == 30)
            CK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, 32 * KIB));
        if (it == 20 && cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 48 * KIB,
                                             (CUkernel)kern, 0) != CUDA_SUCCESS)
            FAIL("cuKernelSetAttribute failed");
        shm_step(s, y, N, it);
    }
    print_dev("y", y, N);
    return 0;
}
