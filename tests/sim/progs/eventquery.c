/* Scenario: cudaEventQuery polled on an event recorded in the current
 * iteration until it reports ready, then the host reads pinned output. */
#include "common.h"

int main(void)
{
    enum { N = 64, ITERS = 14 };
    register_kernels();
    cudaStream_t s;
    cudaEvent_t e;
    CK(cudaStreamCreate(&s));
    CK(cudaEventCreate(&e));
    float *out, sums[ITERS];
    CK(cudaMallocHost((void **)&out, N * sizeof(float)));
    float *y = dev_alloc_init(N, 0.25f);
    for (int it = 0; it < ITERS; it++) {
        axpb(s, y, 1.1f, -0.05f, N);
        sq(s, y, N);
        CK(cudaMemcpyAsync(out, y, N * sizeof(float), cudaMemcpyDeviceToHost, s));
        CK(cudaEventRecord(e, s));
        cudaError_t q;
        while ((q = cudaEventQuery(e)) == cudaErrorNotReady)
            ;
        CK(q);
        if (cudaGetLastError() != cudaSuccess)
            FAIL("cudaErrorNotReady must not be sticky");
        float sum = 0;
        for (int i = 0; i < N; i++)
            sum += out[i];
        sums[it] = sum;
    }
    print_floats("sums", sums, ITERS);
    return 0;
}
