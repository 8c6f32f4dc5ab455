/* Scenario, a step whose kernels change at two places as pointers do
 * (PyTorch's vectorised kernel of 4 or of 2 as an address's alignment
 * changes, one layout for both): fourteen kernels a step,
 * the fifth one of two functions of one layout, the tenth one of two
 * kernels of one parameter size but another block and shared memory, a
 * sync. The function is a value of its node, as its parameters are: each
 * step replays as one graph (a variant for each pair of kernels, or with one
 * exec those nodes given the other kernel from the host).
 *
 * Once, at step 90, the tenth asks for more shared memory than its kernel
 * allows: that launch was never seen to succeed, so it is not held, and the
 * program's own call returns the error, as it does bare.
 *
 * With "churn", eight kernels take other scalars at every step: the graph is
 * built again with an updater; the fifth kernel, another function from step
 * 40 on, makes it built again with that node left to the host, which the
 * updater's writes by the old function's layout would not suit. */
#include "common.h"

/* y = y * m + b * 2: the other function of axpb's layout */
static void k_axpb2(const sim_launch *l, void **a)
{
    float *y = *(float **)a[0];
    float m = *(float *)a[1], b = *(float *)a[2];
    int n = cover(l, *(int *)a[3]);
    for (int i = 0; i < n; i++)
        y[i] = y[i] * m + b * 2.0f;
}

int main(int argc, char **argv)
{
    enum { N = 256, ITERS = 120 };
    int churn = argc > 1 && !strcmp(argv[1], "churn");
    register_kernels();
    register_shm_kernel();
    static const size_t axpb_sz[] = { sizeof(float *), sizeof(float), sizeof(float), sizeof(int) };
    if (simRegisterKernel(k_axpb2, "k_axpb2", 4, axpb_sz))
        FAIL("simRegisterKernel failed");
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *y = dev_alloc_init(N, 0.5f), *z = dev_alloc_init(N, 0.25f);
    int n = N;
    cudaError_t bad = cudaSuccess;
    for (int it = 0; it < ITERS; it++) {
        for (int k = 0; k < 4; k++)
            axpb(s, y, 0.99f, 0.001f * (float)(k + 1 + (churn ? it % 50 : 0)), N);
        float m = 0.98f, b = 0.002f;
        void *ab[] = { &y, &m, &b, &n };
        /* with churn, from step 40 on: once the graph has its updater */
        const void *f5 = it % 3 == 0 && (!churn || it >= 40) ? (const void *)k_axpb2 : (const void *)k_axpb;
        CK(cudaLaunchKernel(f5, d1(grid_for(N)), d1(BLOCK), ab, 0, s));
        for (int k = 0; k < 4; k++)
            acc(s, z, y, 0.125f + (churn ? 1e-4f * (float)(it % 40) : 0.0f), N);
        void *sa[] = { &z, &n };
        if (it == 90) {
            bad = cudaLaunchKernel((const void *)k_shm, d1(N / 32), d1(32), sa, 64 * 1024, s);
            (void)cudaGetLastError();
        } else if (it % 7 < 3) {
            CK(cudaLaunchKernel((const void *)k_shm, d1(N / 32), d1(32), sa, 2048, s));
        } else {
            sq(s, z, N);
        }
        for (int k = 0; k < 4; k++)
            mix(s, y, y, z, N);
        CK(cudaStreamSynchronize(s));
    }
    printf("bad launch %s\n", cudaGetErrorName(bad));
    print_dev("y", y, N);
    print_dev("z", z, N);
    return 0;
}
