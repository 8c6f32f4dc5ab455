/* Workload of scripts/host-cost's second count: steps of K launches through
 * __cudaLaunchKernel of a kernel whose one parameter is a struct of B bytes
 * (648: PyTorch's elementwise kernels; 3,368: its multi-tensor-apply
 * kernels), two of its words changing at every step, far apart: a tensor's
 * address near its start, and a slot of three taken in turn near its end,
 * then a reduction read back into pageable memory and a sync: the shape of
 * a decoding step whose graphs have an updater. Usage: steps K B. */
#include "common.h"

struct head {
    float *y, *x;
    int n, k;
};
struct small_args {
    struct head h;
    unsigned char rest[632];
};
struct wide_args {
    struct head h;
    unsigned char rest[3352];
};

/* The slot's word lies this far from the struct's end. */
#define SLOT_FROM_END 40

static void apply(const sim_launch *l, const struct head *p, const unsigned char *end)
{
    int n = cover(l, p->n), slot;
    memcpy(&slot, end - SLOT_FROM_END, sizeof slot);
    for (int i = 0; i < n; i++)
        p->y[i] = p->y[i] * 0.5f + p->x[i] * 0.25f + (float)p->k * 0.001f + (float)slot * 0.01f;
}

static void k_small(const sim_launch *l, void **a)
{
    const struct small_args *p = a[0];
    apply(l, &p->h, (const unsigned char *)(p + 1));
}

static void k_wide(const sim_launch *l, void **a)
{
    const struct wide_args *p = a[0];
    apply(l, &p->h, (const unsigned char *)(p + 1));
}

int main(int argc, char **argv)
{
    long steps = argc > 1 ? strtol(argv[1], NULL, 10) : 20, K = argc > 2 ? strtol(argv[2], NULL, 10) : 200;
    long bytes = argc > 3 ? strtol(argv[3], NULL, 10) : 648;
    static const size_t small_sz[] = { sizeof(struct small_args) }, wide_sz[] = { sizeof(struct wide_args) };
    register_kernels();
    if (simRegisterKernel(k_small, "k_small", 1, small_sz) || simRegisterKernel(k_wide, "k_wide", 1, wide_sz))
        FAIL("simRegisterKernel failed");
    int wide = bytes > (long)sizeof(struct small_args);
    cudaKernel_t h = handle_of(wide ? (const void *)k_wide : (const void *)k_small);
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *pool[8], *r, res = 0;
    /* Every step's result: a node left with an earlier step's values shows
     * here even where later steps wash it out of the pool. */
    uint64_t steps_seen = 0;
    for (int i = 0; i < 8; i++)
        pool[i] = dev_alloc_init(64, 0.5f + (float)i);
    CK(cudaMalloc((void **)&r, sizeof *r));
    struct wide_args p; /* k_small reads its first bytes */
    memset(&p, 0, sizeof p);
    p.h.n = 64;
    size_t size = wide ? sizeof(struct wide_args) : sizeof(struct small_args);
    for (long it = 0; it < steps; it++) {
        int slot = (int)(it % 3);
        memcpy((unsigned char *)&p + size - SLOT_FROM_END, &slot, sizeof slot);
        for (long k = 0; k < K; k++) {
            p.h.y = pool[k % 4];
            p.h.x = pool[4 + (k + it) % 4];
            p.h.k = (int)k;
            void *args[] = { &p };
            CK(LAUNCH_BY_HANDLE(h, d1(1), d1(BLOCK), args, 0, s));
        }
        reduce(s, r, pool[0], 64);
        CK(cudaMemcpyAsync(&res, r, sizeof res, cudaMemcpyDeviceToHost, s));
        CK(cudaStreamSynchronize(s));
        uint32_t bits;
        memcpy(&bits, &res, sizeof bits);
        steps_seen = (steps_seen ^ bits) * 1099511628211ull;
    }
    printf("res %a steps %016llx\n", res, (unsigned long long)steps_seen);
    for (int i = 0; i < 8; i++)
        print_dev("pool", pool[i], 64);
    return 0;
}
