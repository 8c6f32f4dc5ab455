/* Scenario: ten kernels an iteration, each taking a 4 KB struct by value
 * whose every word changes at every iteration (as PyTorch's tensor lists
 * hold what the host stack held): 40 KB of changes a launch, more than one
 * updater takes (devupd.h). The graph is built again with two updaters at
 * once, which take them. With the argument "huge", 40 kernels of 16 KB
 * structs: any eight of them change more than CG_UPD_CHAIN updaters take,
 * and their graphs stay without. With "alternate" as well, nine such
 * kernels an iteration, their values as phase() says: the graph, built
 * again with one updater and then more as its changes grow, then without
 * at a launch of new values, later gets a variant for the recording's,
 * which its exec must be brought to. */
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

/* The "alternate" values: those of the recording for three iterations,
 * new ones at each of the next 37, in their first 50 words only up to the
 * 24th (the graph is built again with one updater, which takes them), then
 * in every word (built again with more updaters, then without), then the
 * recording's and another in turn. */
static int phase(int it)
{
    return it < 3 ? 0 : it < 40 ? it + 100 : it % 2;
}

static int phase_words(int it, int words)
{
    return it >= 3 && it < 24 ? 50 : words;
}

static void k_huge(const sim_launch *l, void **a)
{
    k_wide(l, a);
}

int main(int argc, char **argv)
{
    enum { N = 128 };
    const int huge = argc > 1 && !strcmp(argv[1], "huge");
    const int alternate = argc > 2 && !strcmp(argv[2], "alternate");
    const int K = alternate ? 9 : huge ? 40 : 10, words = huge ? 4000 : 1000;
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
    for (int it = 0; it < (alternate ? 120 : 40); it++) {
        for (int k = 0; k < K; k++) {
            int v = alternate ? phase(it) : it, changed = alternate ? phase_words(it, words) : words;
            for (int j = 0; j < words; j++)
                p.c[j] = (float)(((j < changed ? v : 0) * 31 + k * 7 + j) % 97);
            void *args[] = { &p };
            CK(cudaLaunchKernel(huge ? (const void *)k_huge : (const void *)k_wide, d1(grid_for(N)), d1(BLOCK), args, 0, s));
        }
        CK(cudaStreamSynchronize(s));
    }
    print_dev("y", y, N);
    return 0;
}
