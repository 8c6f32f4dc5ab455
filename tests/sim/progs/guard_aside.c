/* Guard scenario: a reset while cgraft stands aside. A loop of three
 * launches, one with 40 KiB of dynamic shared memory, replays; twice, with
 * cgraft paused around it (as the governor's probes pause it), the
 * kernel's limit goes down to 32 KiB, and the 40 KiB launch must fail at
 * its call when cgraft stands in again; in between it goes back up to
 * 48 KiB, unpaused. The first time through the host stub (a change of that
 * kernel), the second through its function handle (a reset). What the
 * change took away is forgotten even though it was not seen standing in. */
#include <cuda.h>
#include <dlfcn.h>

#include "common.h"

enum { N = 64, ITERS = 40, KIB = 1024 };

int main(void)
{
    register_kernels();
    register_shm_kernel();
    int (*set)(int) = (int (*)(int))dlsym(RTLD_DEFAULT, "cgraft_set_enabled");
    const void *f = (const void *)k_shm;
    cudaKernel_t kern;
    CUfunction fn;
    CK(cudaGetKernel(&kern, f));
    if (cuKernelGetFunction(&fn, (CUkernel)kern) != CUDA_SUCCESS)
        FAIL("cuKernelGetFunction failed");
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *y = dev_alloc_init(N, 1.0f);
    for (int it = 0; it < ITERS; it++) {
        if (it == 10 || it == 30) {
            int was = set ? set(0) : 1;
            if (it == 10)
                CK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, 32 * KIB));
            else if (cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 32 * KIB) != CUDA_SUCCESS)
                FAIL("cuFuncSetAttribute failed");
            if (set)
                set(was);
        }
        if (it == 20)
            CK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, 48 * KIB));
        shm_step(s, y, N, it);
    }
    print_dev("y", y, N);
    return 0;
}
