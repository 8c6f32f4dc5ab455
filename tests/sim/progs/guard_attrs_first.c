/* Guard scenario: two stretches a step, each ended by a synchronisation:
 * one of four kernels, and one around k_shm's launch with 40 KiB of dynamic
 * shared memory. k_shm's limit is set for the first time at step 20, lowered
 * at 30 (the launch fails at its call) and raised at 40: each is a change
 * of that kernel, after which the graphs that launch it go; the other
 * stretch's graph, which does not, stays. */
#include "common.h"

enum { N = 64, ITERS = 60, KIB = 1024 };

int main(void)
{
    register_kernels();
    register_shm_kernel();
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *y = dev_alloc_init(N, 1.0f), *x = dev_alloc_init(N, 2.0f), *z = dev_alloc_init(N, 0.5f);
    for (int it = 0; it < ITERS; it++) {
        if (it == 20 || it == 40)
            CK(cudaFuncSetAttribute((const void *)k_shm, cudaFuncAttributeMaxDynamicSharedMemorySize, 48 * KIB));
        if (it == 30)
            CK(cudaFuncSetAttribute((const void *)k_shm, cudaFuncAttributeMaxDynamicSharedMemorySize, 32 * KIB));
        axpb(s, x, 0.9f, 0.01f * (float)(it % 3), N);
        acc(s, z, x, 0.5f, N);
        mix(s, x, z, y, N);
        sq(s, z, N);
        CK(cudaStreamSynchronize(s));
        shm_step(s, y, N, it);
    }
    print_dev("x", x, N);
    print_dev("y", y, N);
    print_dev("z", z, N);
    return 0;
}
