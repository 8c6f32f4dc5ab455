/* Scenario: twelve kernels an iteration, each taking a 3.2 KB struct by
 * value of which one stretch of 50 words changes at every iteration, a
 * different stretch each time round: about 2.4 KB of changes a launch, but
 * after 16 launches every word differs from what was recorded. The graph
 * built again with an updater holds the values of the launch it was built
 * at, so its updater takes every later launch's changes. */
#include "common.h"

enum { WORDS = 800, STRETCH = 50 };

struct drift {
    float *y;
    int n, pad;
    float c[WORDS];
};

static void k_drift(const sim_launch *l, void **a)
{
    const struct drift *p = (const struct drift *)a[0];
    int n = cover(l, p->n);
    float s = 0.0f;
    for (int j = 0; j < WORDS; j++)
        s += p->c[j] * (float)(j % 7 + 1);
    for (int i = 0; i < n; i++)
        p->y[i] = p->y[i] * 0.5f + s * 1e-6f;
}

int main(void)
{
    enum { N = 128, ITERS = 60, K = 12 };
    static const size_t sz[] = { sizeof(struct drift) };
    register_kernels();
    if (simRegisterKernel(k_drift, "k_drift", 1, sz))
        FAIL("simRegisterKernel failed");
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *y = dev_alloc_init(N, 0.5f);
    static struct drift p[K];
    for (int k = 0; k < K; k++) {
        p[k].y = y;
        p[k].n = N;
    }
    for (int it = 0; it < ITERS; it++) {
        for (int k = 0; k < K; k++) {
            for (int j = 0; j < STRETCH; j++)
                p[k].c[(it * STRETCH + j) % WORDS] = (float)(it * 64 + k);
            void *args[] = { &p[k] };
            CK(cudaLaunchKernel((const void *)k_drift, d1(grid_for(N)), d1(BLOCK), args, 0, s));
        }
        CK(cudaStreamSynchronize(s));
    }
    print_dev("y", y, N);
    return 0;
}
