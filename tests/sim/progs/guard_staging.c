/* Guard scenario: replays of pageable host-to-device copies in flight while
 * the host rewrites its buffer for the next ones. Each iteration s first
 * waits (cuStreamWaitValue32) for a gate in pinned memory, then two copies
 * from one pageable buffer, rewritten between and after them, feed two
 * kernels and a per-iteration log slot. The host opens iteration it's gate
 * only after making the calls of iteration it + 1, so it keeps one iteration
 * ahead of the device, with no sync until the end: each copy must still see
 * the buffer as it was at its call. */
#include <cuda.h>

#include "common.h"

enum { N = 96, ITERS = 24 };

int main(void)
{
    register_kernels();
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    unsigned *gate;
    CK(cudaHostAlloc((void **)&gate, sizeof(unsigned), cudaHostAllocDefault));
    __atomic_store_n(gate, 0u, __ATOMIC_RELEASE);
    float *host = malloc(N * sizeof(float));
    if (!host)
        FAIL("out of host memory");
    float *a = dev_alloc_init(N, 0.0f), *b = dev_alloc_init(N, 0.0f), *acc_d = dev_alloc_init(N, 0.0f);
    float *logd = dev_alloc_init(ITERS, 0.0f);
    for (int it = 0; it < ITERS; it++) {
        CUresult r = cuStreamWaitValue32((CUstream)s, (CUdeviceptr)(uintptr_t)gate, (unsigned)it + 1,
                                         CU_STREAM_WAIT_VALUE_GEQ);
        if (r != CUDA_SUCCESS)
            FAIL("cuStreamWaitValue32 failed: %d", (int)r);
        for (int i = 0; i < N; i++)
            host[i] = (float)(it * 3 + i) * 0.125f;
        CK(cudaMemcpyAsync(a, host, N * sizeof(float), cudaMemcpyHostToDevice, s));
        for (int i = 0; i < N; i++)
            host[i] = -(float)(it + i) * 0.5f;
        CK(cudaMemcpyAsync(b, host, N * sizeof(float), cudaMemcpyHostToDevice, s));
        mix(s, a, a, b, N);
        acc(s, acc_d, a, 0.5f, N);
        reduce(s, logd + it, a, N);
        for (int i = 0; i < N; i++)
            host[i] = 1e6f; /* must not reach the copies above */
        __atomic_store_n(gate, (unsigned)it, __ATOMIC_RELEASE); /* iteration it - 1 may run */
    }
    __atomic_store_n(gate, (unsigned)ITERS, __ATOMIC_RELEASE);
    CK(cudaStreamSynchronize(s));
    print_dev("acc", acc_d, N);
    print_dev("log", logd, ITERS);
    free(host);
    CK(cudaFreeHost(gate));
    return 0;
}
