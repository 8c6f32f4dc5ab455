/* Class scenario: a kernel's dynamic shared memory limit raised, lowered and
 * refused in the middle of a loop. Launches and kernel nodes over the current
 * limit fail with cudaErrorInvalidValue at that very call; the error codes and
 * the cudaPeekAtLastError / cudaGetLastError sequences are printed. */
#include "common.h"

enum { N = 64, ITERS = 30, KIB = 1024 };

int main(void)
{
    register_kernels();
    register_shm_kernel();
    const void *f = (const void *)k_shm;
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *y = dev_alloc_init(N, 1.0f);
    int n = N;
    void *args[] = { &y, &n };
    static const size_t shm[] = { 0, 32 * KIB, 44 * KIB, 64 * KIB, 96 * KIB, 100 * KIB };
    struct cudaFuncAttributes fa;
    for (int it = 0; it < ITERS; it++) {
        int set = it == 8 ? 96 * KIB : it == 16 ? 40 * KIB : it == 24 ? 227 * KIB + 1 : it == 27 ? 227 * KIB : -1;
        if (set >= 0) {
            cudaError_t e = cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, set);
            cudaError_t peek = cudaPeekAtLastError(), get = cudaGetLastError(), again = cudaGetLastError();
            CK(cudaFuncGetAttributes(&fa, f));
            printf("it=%d set %d -> %d (%s) peek=%d get=%d get=%d limit=%d\n", it, set, (int)e, cudaGetErrorName(e),
                   (int)peek, (int)get, (int)again, fa.maxDynamicSharedSizeBytes);
        }
        printf("it=%d launches", it);
        for (size_t k = 0; k < sizeof(shm) / sizeof(shm[0]); k++) {
            cudaError_t e = cudaLaunchKernel(f, d1(1), d1(N), args, shm[k], s);
            printf(" %d", (int)e);
            if (e != cudaSuccess) {
                cudaError_t peek = cudaPeekAtLastError(), get = cudaGetLastError(), again = cudaGetLastError();
                printf("[%d,%d,%d]", (int)peek, (int)get, (int)again);
            }
        }
        /* the same limit holds for kernel nodes, when they are created */
        cudaGraph_t g;
        cudaGraphNode_t kn;
        CK(cudaGraphCreate(&g, 0));
        struct cudaKernelNodeParams kp = { .func = (void *)f, .gridDim = d1(1), .blockDim = d1(N),
                                           .sharedMemBytes = 64 * KIB, .kernelParams = args };
        cudaError_t e = cudaGraphAddKernelNode(&kn, g, NULL, 0, &kp);
        cudaError_t get = cudaGetLastError();
        printf(" node %d[%d]", (int)e, (int)get);
        if (e == cudaSuccess) {
            cudaGraphExec_t ge;
            CK(cudaGraphInstantiate(&ge, g, 0));
            CK(cudaGraphLaunch(ge, s));
            CK(cudaGraphExecDestroy(ge));
        }
        CK(cudaGraphDestroy(g));
        printf(" last=%d\n", (int)cudaGetLastError());
        if (it % 5 == 4)
            CK(cudaStreamSynchronize(s));
    }
    CK(cudaStreamSynchronize(s));
    print_dev("y", y, N);
    return 0;
}
