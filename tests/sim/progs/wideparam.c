/* Scenario: ten kernels an iteration, each taking a 4 KB struct by value
 * whose every word changes at every iteration (as PyTorch's tensor lists
 * hold what the host stack held): 40 KB of changes a launch, more than the
 * updater takes (devupd.h). The graph built again with an updater is built
 * once more without it, and stays so. */
#include "common.h"

struct wide {
    float *y;
    int n, pad;
    float c[1000];
};

static void k_wide(const sim_launch *l, void **a)
{
    const struct wide *p = (const struct wide *)a[0];
    int n = cover(l, p->n);
    float s = 0.0f;
    for (int j = 0; j < 1000; j++)
        s += p->c[j] * (float)(j % 7 + 1);
    for (int i = 0; i < n; i++)
        p->y[i] = p->y[i] * 0.5f + s * 1e-6f;
}

int main(void)
{
    enum { N = 128, ITERS = 40, K = 10 };
    static const size_t sz[] = { sizeof(struct wide) };
    register_kernels();
    if (simRegisterKernel(k_wide, "k_wide", 1, sz))
        FAIL("simRegisterKernel failed");
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *y = dev_alloc_init(N, 0.5f);
    static struct wide p;
    p.y = y;
    p.n = N;
    for (int it = 0; it < ITERS; it++) {
        for (int k = 0; k < K; k++) {
            for (int j = 0; j < 1000; j++)
                p.c[j] = (float)((it * 31 + k * 7 + j) % 97);
            void *args[] = { &p };
            CK(cudaLaunchKernel((const void *)k_wide, d1(grid_for(N)), d1(BLOCK), args, 0, s));
        }
        CK(cudaStreamSynchronize(s));
    }
    print_dev("y", y, N);
    return 0;
}
