/* Scenario: ping-pong buffers, iteration i reads A and writes B, i+1 the
 * reverse, launched through kernel handles as nvcc 13 code does. */
#include "common.h"

int main(void)
{
    enum { N = 160, ITERS = 20 };
    register_kernels();
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *buf[2] = { dev_alloc_init(N, 1.0f), dev_alloc_init(N, -1.0f) };
    for (int it = 0; it < ITERS; it++) {
        float *src = buf[it & 1], *dst = buf[(it + 1) & 1];
        acc_h(s, dst, src, 0.6f, N);
        axpb_h(s, dst, 0.95f, 0.05f, N);
        if (it % 2 == 1)
            CK(cudaStreamSynchronize(s));
    }
    CK(cudaStreamSynchronize(s));
    print_dev("a", buf[0], N);
    print_dev("b", buf[1], N);
    return 0;
}
