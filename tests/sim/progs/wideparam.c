/* Scenario: ten kernels an iteration, each taking a 4 KB struct by value
 * whose every word changes at every iteration (as PyTorch's tensor lists
 * hold what the host stack held): 40 KB of changes a launch, more than one
 * updater takes (devupd.h). The graph built again with an updater is built
 * once more with two, which take them. With the argument "huge", 40 kernels
 * of 16 KB structs: any eight of them change more than CG_UPD_CHAIN
 * updaters take, and their graphs end without. */
#include <stddef.h>
#include <string.h>

#include "common.h"

/* k_wide takes the first 1,000 words of c, k_huge all of them. */
struct wide {
    float *y;
    int n, words;
    float c[4000];
};

static void k_wide(const sim_launch *l, void **a)
{
    const struct wide *p = (const struct wide *)a[0];
    int n = cover(l, p->n);
    float s = 0.0f;
    for (int j = 0; j < p->words; j++)
        s += p->c[j] * (float)(j % 7 + 1);
    for (int i = 0; i < n; i++)
        p->y[i] = p->y[i] * 0.5f + s * 1e-6f;
}

static void k_huge(const sim_launch *l, void **a)
{
    k_wide(l, a);
}

int main(int argc, char **argv)
{
    enum { N = 128, ITERS = 40 };
    const int huge = argc > 1 && !strcmp(argv[1], "huge");
    const int K = huge ? 40 : 10, words = huge ? 4000 : 1000;
    static const size_t wide_sz[] = { offsetof(struct wide, c) + 1000 * sizeof(float) };
    static const size_t huge_sz[] = { sizeof(struct wide) };
    register_kernels();
    if (simRegisterKernel(k_wide, "k_wide", 1, wide_sz) || simRegisterKernel(k_huge, "k_huge", 1, huge_sz))
        FAIL("simRegisterKernel failed");
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *y = dev_alloc_init(N, 0.5f);
    static struct wide p;
    p.y = y;
    p.n = N;
    p.words = words;
    for (int it = 0; it < ITERS; it++) {
        for (int k = 0; k < K; k++) {
            for (int j = 0; j < words; j++)
                p.c[j] = (float)((it * 31 + k * 7 + j) % 97);
            void *args[] = { &p };
            CK(cudaLaunchKernel(huge ? (const void *)k_huge : (const void *)k_wide, d1(grid_for(N)), d1(BLOCK), args, 0, s));
        }
        CK(cudaStreamSynchronize(s));
    }
    print_dev("y", y, N);
    return 0;
}
