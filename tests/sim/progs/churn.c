/* Scenario, a language model's decoding step as PyTorch launches it: 200
 * kernels a step, each taking a 648-byte struct by value (a TensorIterator's
 * offsets and pointers), three in four of them given tensors at other
 * addresses every step (the caching allocator's blocks shifted by a tensor
 * that grows), a copy one element longer, a sync. Every step replays as one
 * graph whose changed nodes are updated. */
#include "common.h"

enum { N = 64, K = 200, SLOTS = 40, OPAQUE = 624 };

struct iter {
    float *y;
    const float *x;
    int n, pad;
    unsigned char opaque[OPAQUE];
};

static void k_iter(const sim_launch *l, void **a)
{
    const struct iter *p = (const struct iter *)a[0];
    int n = cover(l, p->n);
    float c = (float)(p->opaque[0] % 7) * 0.01f;
    for (int i = 0; i < n; i++)
        p->y[i] = p->y[i] * 0.5f + p->x[i] * 0.25f + c;
}

int main(int argc, char **argv)
{
    int iters = argc > 1 ? atoi(argv[1]) : 80;
    static const size_t sz[] = { sizeof(struct iter) };
    register_kernels();
    if (simRegisterKernel(k_iter, "k_iter", 1, sz))
        FAIL("simRegisterKernel failed");
    cudaKernel_t kh = handle_of((const void *)k_iter);
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *pool = dev_alloc_init(N * (SLOTS + K), 0.5f), *z = dev_alloc_init(N, 0.0f);
    static struct iter p[K];
    for (int k = 0; k < K; k++) {
        p[k].n = N;
        for (int j = 0; j < OPAQUE; j++)
            p[k].opaque[j] = (unsigned char)(k * 31 + j);
    }
    for (int it = 0; it < iters; it++) {
        for (int k = 0; k < K; k++) {
            /* three in four move with the step, the rest stay */
            int shift = k % 4 ? it % SLOTS : 0;
            p[k].y = pool + N * (size_t)(k + shift);
            p[k].x = pool + N * (size_t)((k + 1) % K + shift);
            void *args[] = { &p[k] };
            CK(LAUNCH_BY_HANDLE(kh, d1(grid_for(N)), d1(BLOCK), args, 0, s));
            if (k == 100)
                CK(cudaMemcpyAsync(z, pool + N * (size_t)k, (size_t)(1 + it % N) * sizeof(float),
                                   cudaMemcpyDeviceToDevice, s));
        }
        CK(cudaStreamSynchronize(s));
    }
    print_dev("pool", pool, N * (SLOTS + K));
    print_dev("z", z, N);
    return 0;
}
