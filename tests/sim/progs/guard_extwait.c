/* Guard scenario: a replayed stretch that begins with a wait on an event
 * recorded outside it. Each iteration a kernel on s4 reads mapped pinned
 * memory (never held: it runs as called) and writes that iteration's slice
 * of w; an event is recorded on s4 after it, and a query of an idle stream
 * ends the recorded run there, so the record goes out eagerly too. Then s5
 * waits on that event and two kernels on s5 read the slice into v. The graph
 * of the wait and the kernels, launched on s5, must still wait on the event.
 * s5 is synchronised every 4 iterations. */
#include "common.h"

enum { N = 128, M = 16, ITERS = 24 };

/* w = w * 0.5 + m[i % M] + it / 64: reads the mapped buffer m. */
static void k_host_read(const sim_launch *l, void **a)
{
    const float *m = *(const float **)a[0];
    float *w = *(float **)a[1];
    int it = *(int *)a[2];
    int n = cover(l, N);
    for (int i = 0; i < n; i++)
        w[i] = w[i] * 0.5f + m[i % M] + (float)it * 0.015625f;
}

static void host_read(cudaStream_t s, const float *m, float *w, int it)
{
    void *args[] = { &m, &w, &it };
    CK(cudaLaunchKernel((const void *)k_host_read, d1(grid_for(N)), d1(BLOCK), args, 0, s));
}

int main(void)
{
    register_kernels();
    static const size_t hsz[] = { sizeof(float *), sizeof(float *), sizeof(int) };
    if (simRegisterKernel(k_host_read, "k_host_read", 3, hsz))
        FAIL("simRegisterKernel failed");
    cudaStream_t s4, s5, idle;
    cudaEvent_t eh;
    CK(cudaStreamCreateWithFlags(&s4, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s5, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&idle, cudaStreamNonBlocking));
    CK(cudaEventCreateWithFlags(&eh, cudaEventDisableTiming));
    float *m, *dm;
    CK(cudaHostAlloc((void **)&m, M * sizeof(float), cudaHostAllocMapped));
    CK(cudaHostGetDevicePointer((void **)&dm, m, 0));
    for (int i = 0; i < M; i++)
        m[i] = (float)i * 0.03125f;
    float *w = dev_alloc_init(ITERS * N, 0.5f), *v = dev_alloc_init(N, 0.25f);
    for (int it = 0; it < ITERS; it++) {
        float *wi = w + it * N;
        host_read(s4, dm, wi, it);
        CK(cudaEventRecord(eh, s4));
        CK(cudaStreamQuery(idle));
        CK(cudaStreamWaitEvent(s5, eh, 0));
        acc(s5, v, wi, 0.5f, N);
        sq(s5, v, N);
        if (it % 4 == 3)
            CK(cudaStreamSynchronize(s5));
    }
    CK(cudaDeviceSynchronize());
    print_dev("v", v, N);
    print_dev("w", w, ITERS * N);
    CK(cudaFreeHost(m));
    return 0;
}
