/* Scenario: buffers as a caching allocator hands them out, the way PyTorch
 * does. The intermediates of iteration i come from a pool that repeats
 * every two iterations, and each iteration writes its result into its own
 * slot of a history array: the values recur but for that one node. */
#include "common.h"

int main(void)
{
    enum { N = 96, ITERS = 40 };
    register_kernels();
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *w = dev_alloc_init(N, 0.25f), *x = dev_alloc_init(N, 1.0f);
    float *pool[2][2] = { { dev_alloc_init(N, 0.0f), dev_alloc_init(N, 0.0f) },
                          { dev_alloc_init(N, 0.0f), dev_alloc_init(N, 0.0f) } };
    float *hist = dev_alloc_init(ITERS, 0.0f);
    for (int it = 0; it < ITERS; it++) {
        float *h = pool[it & 1][0], *g = pool[it & 1][1];
        mix(s, h, x, w, N);
        axpb(s, h, 0.5f, 0.125f, N);
        acc(s, g, h, 0.75f, N);
        sq(s, g, N);
        acc(s, x, g, -0.01f, N);
        reduce(s, hist + it, x, N);
        CK(cudaStreamSynchronize(s));
    }
    print_dev("x", x, N);
    print_dev("hist", hist, ITERS);
    return 0;
}
