/* Scenario: a kernel whose one by-value parameter is a 64-byte struct, as
 * library kernels pass theirs; every iteration changes one word of it, at
 * an offset that moves through the whole struct, and every other one
 * brings back the values of two iterations before. A node update must see
 * a change wherever it lies. */
#include "common.h"

struct coefs {
    float *y;
    int n, pad;
    float c[12];
};

static void k_coefs(const sim_launch *l, void **a)
{
    const struct coefs *p = (const struct coefs *)a[0];
    int n = cover(l, p->n);
    float s = 0.0f;
    for (int j = 0; j < 12; j++)
        s += p->c[j] * (float)(j + 1);
    for (int i = 0; i < n; i++)
        p->y[i] = p->y[i] * 0.5f + s * 0.001f;
}

int main(void)
{
    enum { N = 128, ITERS = 60 };
    static const size_t sz[] = { sizeof(struct coefs) };
    register_kernels();
    if (simRegisterKernel(k_coefs, "k_coefs", 1, sz))
        FAIL("simRegisterKernel failed");
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *y = dev_alloc_init(N, 0.5f), *x = dev_alloc_init(N, 1.5f);
    struct coefs p = { y, N, 0, { 0 } }, saved[2];
    for (int it = 0; it < ITERS; it++) {
        if (it % 2 && it > 2)
            p = saved[(it / 2) % 2]; /* values seen before: a variant's */
        else
            p.c[(it * 5) % 12] += 1.0f;
        saved[(it / 2) % 2] = p;
        void *args[] = { &p };
        axpb(s, x, 0.9f, 0.01f, N);
        CK(cudaLaunchKernel((const void *)k_coefs, d1(grid_for(N)), d1(BLOCK), args, 0, s));
        acc(s, y, x, 0.5f, N);
        CK(cudaStreamSynchronize(s));
    }
    print_dev("y", y, N);
    print_dev("x", x, N);
    return 0;
}
