/* Guard scenario: a graph over three explicit streams, whose launch owes its
 * second and third streams their waits on its join (cg_graph_settle). Each
 * iteration, on s1: wait e2 and e3 (the last iteration's branches), k1 on
 * x, record e1; s2 and s3 wait e1 and update a and b
 * from x; each records its own event (e2, e3), no node after them: records
 * made after the launch. Then, by iteration, the host looks at one branch's
 * result, or puts eager work behind it, in a way that orders only through
 * the stream or the event named:
 *   0: nothing (the next launch comes right after this one);
 *   1: an eager kernel on s2 (it reads mapped memory, so it is never held)
 *      adds a into c: after the graph's s2 branch;
 *   2: cudaStreamSynchronize(s3), then a copy of b on s4;
 *   3: cudaEventSynchronize(e3), then a copy of b on s4;
 *   4: cudaStreamQuery(s2) until done, then a copy of a on s4;
 *   5: cudaStreamWaitEvent(s4, e2), then a copy of a on s4.
 * The copies land in host memory the digest reads each iteration. s1 is
 * synchronised only every 6 iterations: launches are in flight meanwhile. */
#include "common.h"

enum { N = 128, M = 16, ITERS = 36 };

/* c = c * 0.5 + a + m[i % M]: reads the mapped buffer m. */
static void k_host_add(const sim_launch *l, void **a)
{
    const float *m = *(const float **)a[0];
    float *c = *(float **)a[1];
    const float *s = *(const float **)a[2];
    int n = cover(l, N);
    for (int i = 0; i < n; i++)
        c[i] = c[i] * 0.5f + s[i] + m[i % M];
}

static void host_add(cudaStream_t st, const float *m, float *c, const float *s)
{
    void *args[] = { &m, &c, &s };
    CK(cudaLaunchKernel((const void *)k_host_add, d1(grid_for(N)), d1(BLOCK), args, 0, st));
}

int main(void)
{
    register_kernels();
    static const size_t hsz[] = { sizeof(float *), sizeof(float *), sizeof(float *) };
    if (simRegisterKernel(k_host_add, "k_host_add", 3, hsz))
        FAIL("simRegisterKernel failed");
    cudaStream_t s1, s2, s3, s4;
    cudaEvent_t e1, e2, e3;
    CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s3, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s4, cudaStreamNonBlocking));
    CK(cudaEventCreateWithFlags(&e1, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&e2, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&e3, cudaEventDisableTiming));
    float *m, *dm, *got;
    CK(cudaHostAlloc((void **)&m, M * sizeof(float), cudaHostAllocMapped));
    CK(cudaHostGetDevicePointer((void **)&dm, m, 0));
    CK(cudaMallocHost((void **)&got, N * sizeof(float)));
    for (int i = 0; i < M; i++)
        m[i] = (float)i * 0.03125f;
    float *x = dev_alloc_init(N, 0.25f), *a = dev_alloc_init(N, 0.5f), *b = dev_alloc_init(N, 0.75f),
          *c = dev_alloc_init(N, 0.0f);
    uint64_t digest = 1469598103934665603ull;
    for (int it = 0; it < ITERS; it++) {
        /* x is written after the branches of the last iteration read it. */
        CK(cudaStreamWaitEvent(s1, e2, 0));
        CK(cudaStreamWaitEvent(s1, e3, 0));
        axpb(s1, x, 0.9f, 0.1f, N);
        CK(cudaEventRecord(e1, s1));
        CK(cudaStreamWaitEvent(s2, e1, 0));
        CK(cudaStreamWaitEvent(s3, e1, 0));
        mix(s2, a, a, x, N);
        sq(s2, a, N);
        CK(cudaEventRecord(e2, s2));
        acc(s3, b, x, 0.25f, N);
        sq(s3, b, N);
        CK(cudaEventRecord(e3, s3));
        const float *look = NULL;
        switch (it % 6) {
        case 1:
            host_add(s2, dm, c, a);
            break;
        case 2:
            CK(cudaStreamSynchronize(s3));
            look = b;
            break;
        case 3:
            CK(cudaEventSynchronize(e3));
            look = b;
            break;
        case 4:
            while (cudaStreamQuery(s2) == cudaErrorNotReady)
                ;
            look = a;
            break;
        case 5:
            CK(cudaStreamWaitEvent(s4, e2, 0));
            look = a;
            break;
        default:
            break;
        }
        if (look) {
            CK(cudaMemcpyAsync(got, look, N * sizeof(float), cudaMemcpyDeviceToHost, s4));
            CK(cudaStreamSynchronize(s4));
            digest = (digest ^ fnv1a(got, N * sizeof(float))) * 1099511628211ull;
        }
        if (it % 6 == 5)
            CK(cudaStreamSynchronize(s1));
    }
    CK(cudaDeviceSynchronize());
    printf("looked fnv=%016llx\n", (unsigned long long)digest);
    print_dev("x", x, N);
    print_dev("a", a, N);
    print_dev("b", b, N);
    print_dev("c", c, N);
    CK(cudaFreeHost(m));
    CK(cudaFreeHost(got));
    return 0;
}
