/* Guard scenario: a library's habit (cuSOLVER's, PyTorch's for some
 * kernels) of setting kernels' attributes before each use, to the values
 * they already have: two attributes of one kernel, through its host stub
 * and its CUkernel, and one of three others, every iteration. None is a
 * change, and the loop replays. At iteration 25 the dynamic shared memory
 * limit goes down (the 40 KiB launch fails at its call), at 30 back up:
 * those two are changes. */
#include <cuda.h>

#include "common.h"

enum { N = 64, ITERS = 60, KIB = 1024 };

static void set_all(cudaKernel_t kern, int limit_kib)
{
    CK(cudaFuncSetAttribute((const void *)k_shm, cudaFuncAttributeMaxDynamicSharedMemorySize, limit_kib * KIB));
    CK(cudaFuncSetAttribute((const void *)k_shm, cudaFuncAttributePreferredSharedMemoryCarveout, 50));
    if (cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, limit_kib * KIB, (CUkernel)kern, 0) !=
        CUDA_SUCCESS)
        FAIL("cuKernelSetAttribute failed");
    CK(cudaFuncSetAttribute((const void *)k_axpb, cudaFuncAttributePreferredSharedMemoryCarveout, 25));
    CK(cudaFuncSetAttribute((const void *)k_sq, cudaFuncAttributePreferredSharedMemoryCarveout, 75));
    CK(cudaFuncSetAttribute((const void *)k_mix, cudaFuncAttributePreferredSharedMemoryCarveout, 100));
}

int main(void)
{
    register_kernels();
    register_shm_kernel();
    cudaKernel_t kern;
    CK(cudaGetKernel(&kern, (const void *)k_shm));
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *y = dev_alloc_init(N, 1.0f), *x = dev_alloc_init(N, 2.0f), *z = dev_alloc_init(N, 0.5f);
    int n = N;
    void *args[] = { &y, &n };
    for (int it = 0; it < ITERS; it++) {
        set_all(kern, it >= 25 && it < 30 ? 32 : 48);
        axpb(s, y, 0.9f, 0.01f * (float)(it % 3), N);
        cudaError_t e = cudaLaunchKernel((const void *)k_shm, d1(1), d1((unsigned)N), args, 40 * KIB, s);
        cudaError_t get = cudaGetLastError();
        acc(s, x, y, 0.5f, N);
        mix(s, z, x, y, N);
        sq(s, y, N);
        printf("it=%d launch %d [%d]\n", it, (int)e, (int)get);
        CK(cudaStreamSynchronize(s));
    }
    print_dev("y", y, N);
    print_dev("z", z, N);
    return 0;
}
