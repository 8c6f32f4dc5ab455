/* Scenario: pinned host memory copied asynchronously both ways each iteration;
 * the host rewrites the pinned input only after syncing. */
#include "common.h"

int main(void)
{
    enum { N = 128, ITERS = 14 };
    register_kernels();
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *in, *out, *log;
    CK(cudaMallocHost((void **)&in, N * sizeof(float)));
    CK(cudaHostAlloc((void **)&out, N * sizeof(float), cudaHostAllocDefault));
    log = calloc(ITERS, sizeof(float));
    float *d = dev_alloc_init(N, 0.0f);
    for (int it = 0; it < ITERS; it++) {
        for (int i = 0; i < N; i++)
            in[i] = (float)(i % 7) + (float)it * 0.25f;
        CK(cudaMemcpyAsync(d, in, N * sizeof(float), cudaMemcpyHostToDevice, s));
        axpb(s, d, 0.5f, 1.0f, N);
        sq(s, d, N);
        CK(cudaMemcpyAsync(out, d, N * sizeof(float), cudaMemcpyDeviceToHost, s));
        CK(cudaStreamSynchronize(s));
        log[it] = out[it % N] + out[N - 1];
    }
    print_floats("out", out, N);
    print_floats("log", log, ITERS);
    CK(cudaFreeHost(in));
    CK(cudaFreeHost(out));
    free(log);
    return 0;
}
