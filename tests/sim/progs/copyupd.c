/* Scenario: a step of twelve kernels whose arguments change at every step
 * (its graph is built again with an updater) and three device-to-device
 * copies whose addresses rotate over three buffers and whose sizes grow.
 * The copies run as cgraft's copy kernel, changed by the updater with the
 * kernels: no copy node updated from the host a launch. From step 70 the
 * third copy's ranges overlap (in one buffer, its destination three
 * elements past its source): that node is a copy node again, its graph
 * built once more, and the output stays the eager one's. */
#include "common.h"

int main(void)
{
    enum { N = 512, ITERS = 100, K = 6, OVERLAP_AT = 70 };
    register_kernels();
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *y = dev_alloc_init(N, 0.5f), *b[3];
    for (int j = 0; j < 3; j++)
        b[j] = dev_alloc_init(N, 0.1f * (float)(j + 1));
    for (int it = 0; it < ITERS; it++) {
        for (int k = 0; k < K; k++)
            axpb(s, y, 0.99f, 0.001f * (float)(it + k), N);
        size_t len = 16 + (size_t)it % (N / 2);
        float *x0 = b[it % 3], *x1 = b[(it + 1) % 3], *x2 = b[(it + 2) % 3];
        CK(cudaMemcpyAsync(x0, y, len * sizeof(float), cudaMemcpyDeviceToDevice, s));
        CK(cudaMemcpyAsync(x1 + it % 5, x0, len * sizeof(float), cudaMemcpyDeviceToDevice, s));
        float *d3 = it < OVERLAP_AT ? x0 + N / 2 : x2 + 3;
        CK(cudaMemcpyAsync(d3, x2, 64 * sizeof(float), cudaMemcpyDeviceToDevice, s));
        for (int k = 0; k < K; k++)
            acc(s, y, b[(it + k) % 3], 0.25f, N);
        CK(cudaStreamSynchronize(s));
    }
    print_dev("y", y, N);
    for (int j = 0; j < 3; j++)
        print_dev("b", b[j], N);
    return 0;
}
