/* Scenario: a kernel named like NCCL's (they carry host-side proxy work) in
 * every iteration, between the program's own kernels: cgraft must never hold
 * it back, and may replay the work around it. */
#include "common.h"

/* Stands in for a collective: mixes the buffer with itself in place. */
static void ncclDevKernel_AllReduce_Sum_f32(const sim_launch *l, void **a)
{
    float *y = *(float **)a[0];
    int n = *(int *)a[1];
    (void)l;
    float s = 0;
    for (int i = 0; i < n; i++)
        s += y[i];
    for (int i = 0; i < n; i++)
        y[i] = y[i] * 0.5f + s / (float)(2 * n);
}

int main(void)
{
    enum { N = 128, ITERS = 16 };
    register_kernels();
    static const size_t sz[] = { sizeof(float *), sizeof(int) };
    if (simRegisterKernel(ncclDevKernel_AllReduce_Sum_f32, "ncclDevKernel_AllReduce_Sum_f32", 2, sz))
        FAIL("register failed");
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *y = dev_alloc_init(N, 0.5f);
    int n = N;
    for (int it = 0; it < ITERS; it++) {
        axpb(s, y, 0.9f, 0.1f, N);
        sq(s, y, N);
        axpb(s, y, 1.1f, -0.05f, N);
        void *args[] = { &y, &n };
        CK(cudaLaunchKernel((const void *)ncclDevKernel_AllReduce_Sum_f32, d1(1), d1(BLOCK), args, 0, s));
        axpb(s, y, 0.8f, 0.2f, N);
        sq(s, y, N);
        axpb(s, y, 1.2f, -0.1f, N);
        CK(cudaStreamSynchronize(s));
    }
    print_dev("y", y, N);
    return 0;
}
