/* Scenario, a decoding step whose sequence grows by a token: twenty kernels
 * around a device-to-device copy one element longer at every step (the new
 * token appended to what came before), a sync. The copy's size is a value
 * of its node, as its addresses are: each step replays as one graph, the
 * copy updated, none of it eager. */
#include "common.h"

int main(void)
{
    enum { N = 256, ITERS = 120 };
    register_kernels();
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *y = dev_alloc_init(N, 0.5f), *z = dev_alloc_init(N, 0.0f);
    for (int it = 0; it < ITERS; it++) {
        for (int k = 0; k < 10; k++)
            axpb(s, y, 0.99f, 0.001f * (float)(k + it % 3), N);
        size_t len = 16 + (size_t)it % (N - 16); /* grows */
        CK(cudaMemcpyAsync(z, y, len * sizeof(float), cudaMemcpyDeviceToDevice, s));
        for (int k = 0; k < 10; k++)
            acc(s, y, z, 0.25f, N);
        CK(cudaStreamSynchronize(s));
    }
    print_dev("y", y, N);
    print_dev("z", z, N);
    return 0;
}
