/* Guard scenario: a synchronisation of the legacy stream after a replayed
 * read-back on device 0's legacy stream, with device 1 current again. The
 * legacy stream is the current context's: eagerly the call waits for device
 * 1's work, a copy into pinned memory behind a stream wait on a host flag
 * that the host sets, without a call, before it synchronises. Answered as
 * idle, the call would return before the copy (SIM_DEVICES=2). */
#include "common.h"

enum { N = 64, ITERS = 40 };

int main(void)
{
    register_kernels();
    float *y1, *pin, *x, *r;
    unsigned *gate;
    CK(cudaSetDevice(1));
    y1 = dev_alloc_init(N, 2.0f);
    CK(cudaMallocHost((void **)&pin, N * sizeof(float)));
    CK(cudaMallocHost((void **)&gate, sizeof(unsigned)));
    for (int i = 0; i < N; i++)
        pin[i] = -1.0f;
    *gate = 0;
    if (cuStreamWaitValue32(CU_STREAM_LEGACY, (CUdeviceptr)(uintptr_t)gate, 1, CU_STREAM_WAIT_VALUE_EQ))
        FAIL("cuStreamWaitValue32");
    axpb(0, y1, 0.5f, 3.0f, N);
    CK(cudaMemcpyAsync(pin, y1, N * sizeof(float), cudaMemcpyDeviceToHost, 0));
    CK(cudaSetDevice(0));
    x = dev_alloc_init(N, 1.0f);
    CK(cudaMalloc((void **)&r, sizeof(float)));
    CK(cudaMemset(r, 0, sizeof(float)));
    float res = 1.0f;
    for (int it = 0; it < ITERS; it++)
        res = residual_step(0, x, r, N, res * 0.01f);
    *(volatile unsigned *)gate = 1;
    CK(cudaSetDevice(1));
    CK(cudaStreamSynchronize(0));
    printf("res %a pin[0] %a pin[%d] %a\n", res, pin[0], N - 1, pin[N - 1]);
    return 0;
}
