/* Guard scenario: a graph over two streams ordered against eager work on its
 * second stream. Each iteration a kernel on s2 reads mapped pinned memory (so
 * it is never held: it runs as called and ends the recorded run) and updates
 * z; then on s1: k1 on x, record e1; s2 waits e1, reads z and x into w and
 * updates z from w; record e2; s1 waits e2, k3 reads w and writes x. The
 * stretch k1..k3 is replayed as one graph launched on s1: its s2 branch must
 * come after the eager kernel before it (the fork), and the next eager kernel
 * after that branch (the join). s1 is synchronised only every 4 iterations,
 * so several iterations are in flight at once. */
#include "common.h"

enum { N = 128, M = 16, ITERS = 24 };

/* z = z * 0.5 + m[i % M] + it / 64: reads the mapped buffer m. */
static void k_host_read(const sim_launch *l, void **a)
{
    const float *m = *(const float **)a[0];
    float *z = *(float **)a[1];
    int it = *(int *)a[2];
    int n = cover(l, N);
    for (int i = 0; i < n; i++)
        z[i] = z[i] * 0.5f + m[i % M] + (float)it * 0.015625f;
}

static void host_read(cudaStream_t s, const float *m, float *z, int it)
{
    void *args[] = { &m, &z, &it };
    CK(cudaLaunchKernel((const void *)k_host_read, d1(grid_for(N)), d1(BLOCK), args, 0, s));
}

int main(void)
{
    register_kernels();
    static const size_t hsz[] = { sizeof(float *), sizeof(float *), sizeof(int) };
    if (simRegisterKernel(k_host_read, "k_host_read", 3, hsz))
        FAIL("simRegisterKernel failed");
    cudaStream_t s1, s2;
    cudaEvent_t e1, e2;
    CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    CK(cudaEventCreateWithFlags(&e1, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&e2, cudaEventDisableTiming));
    float *m, *dm;
    CK(cudaHostAlloc((void **)&m, M * sizeof(float), cudaHostAllocMapped));
    CK(cudaHostGetDevicePointer((void **)&dm, m, 0));
    for (int i = 0; i < M; i++)
        m[i] = (float)i * 0.03125f;
    float *x = dev_alloc_init(N, 0.25f), *z = dev_alloc_init(N, 0.5f), *w = dev_alloc_init(N, 0.0f);
    for (int it = 0; it < ITERS; it++) {
        host_read(s2, dm, z, it);
        axpb(s1, x, 0.9f, 0.1f, N);
        CK(cudaEventRecord(e1, s1));
        CK(cudaStreamWaitEvent(s2, e1, 0));
        mix(s2, w, z, x, N);
        sq(s2, w, N);
        acc(s2, z, w, 0.25f, N);
        CK(cudaEventRecord(e2, s2));
        CK(cudaStreamWaitEvent(s1, e2, 0));
        acc(s1, x, w, 0.3f, N);
        if (it % 4 == 3)
            CK(cudaStreamSynchronize(s1));
    }
    CK(cudaDeviceSynchronize());
    print_dev("x", x, N);
    print_dev("z", z, N);
    print_dev("w", w, N);
    CK(cudaFreeHost(m));
    return 0;
}
