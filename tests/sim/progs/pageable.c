/* Scenario: a pageable host buffer rewritten between two host-to-device copies
 * of one segment, before any sync: each copy must see the value at its call.
 * An argument sets the number of steps (14). */
#include "common.h"

int main(int argc, char **argv)
{
    enum { N = 96 };
    const int ITERS = argc > 1 ? atoi(argv[1]) : 14;
    register_kernels();
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *host = malloc(N * sizeof(float));
    float *a = dev_alloc_init(N, 0.0f), *b = dev_alloc_init(N, 0.0f), *acc_d = dev_alloc_init(N, 0.0f);
    for (int it = 0; it < ITERS; it++) {
        for (int i = 0; i < N; i++)
            host[i] = (float)(it * 3 + i) * 0.125f;
        CK(cudaMemcpyAsync(a, host, N * sizeof(float), cudaMemcpyHostToDevice, s));
        for (int i = 0; i < N; i++)
            host[i] = -(float)(it + i) * 0.5f;
        CK(cudaMemcpyAsync(b, host, N * sizeof(float), cudaMemcpyHostToDevice, s));
        mix(s, a, a, b, N);
        acc(s, acc_d, a, 0.5f, N);
        for (int i = 0; i < N; i++)
            host[i] = 1e6f;   /* must not leak into the copies above */
        CK(cudaStreamSynchronize(s));
    }
    print_dev("acc", acc_d, N);
    free(host);
    return 0;
}
