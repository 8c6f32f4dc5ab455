/* Guard scenario: two host-to-device copies from pageable memory rewritten
 * at every step, replayed through staging buffers a graph's copy nodes read
 * in turn, with node updates the driver refuses now and then
 * (SIM_EXEC_UPDATE_FAIL): after a refused update the nodes still read the
 * buffer they read before, and the next replay must not take them as
 * switched. */
#include "common.h"

int main(void)
{
    enum { N = 64, ITERS = 160 };
    register_kernels();
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *host = malloc(N * sizeof(float));
    float *a = dev_alloc_init(N, 0.0f), *b = dev_alloc_init(N, 0.0f), *acc_d = dev_alloc_init(N, 0.0f);
    for (int it = 0; it < ITERS; it++) {
        for (int i = 0; i < N; i++)
            host[i] = (float)(it * 5 + i) * 0.0625f;
        CK(cudaMemcpyAsync(a, host, N * sizeof(float), cudaMemcpyHostToDevice, s));
        for (int i = 0; i < N; i++)
            host[i] = -(float)(it * 3 + i) * 0.25f;
        CK(cudaMemcpyAsync(b, host, N * sizeof(float), cudaMemcpyHostToDevice, s));
        mix(s, a, a, b, N);
        acc(s, acc_d, a, 0.5f, N);
        CK(cudaStreamSynchronize(s));
    }
    print_dev("acc", acc_d, N);
    free(host);
    return 0;
}
