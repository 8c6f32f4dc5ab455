/* Guard scenario, with the simulator's device thread on and the hold timer
 * out of reach (CGRAFT_MAX_HOLD_US): a kernel of a replayed stretch that is
 * given mapped pinned memory where it was learnt with device memory. Each
 * iteration sets a flag with a kernel between two others on s; the flag is
 * in device memory, except every fourth iteration, when it is the mapped
 * flag the host then spins on, making no CUDA call, until the kernel has
 * set it. That launch must not be held: the spin would never end. Then the
 * same with a host-located pool's memory as the flag. */
#include <time.h>

#include "common.h"

enum { N = 96, ITERS = 24 };

static void k_flag(const sim_launch *l, void **a)
{
    int *f = *(int **)a[0];
    (void)l;
    __atomic_store_n(f, *(int *)a[1], __ATOMIC_RELEASE);
}

static void set_flag(cudaStream_t s, int *f, int v)
{
    void *args[] = { &f, &v };
    CK(cudaLaunchKernel((const void *)k_flag, d1(1), d1(1), args, 0, s));
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void spin(const int *p, int v, int it)
{
    double t0 = now_s();
    while (__atomic_load_n(p, __ATOMIC_ACQUIRE) != v)
        if (now_s() - t0 > 3.0)
            FAIL("iteration %d: the flag never became %d (is %d)", it, v, __atomic_load_n(p, __ATOMIC_ACQUIRE));
}

static void run(cudaStream_t s, int *mapped, int *dmapped, int *dflag, float *y, float *z)
{
    int seen = 0;
    for (int it = 0; it < ITERS; it++) {
        int host = it % 4 == 3;
        axpb(s, y, 0.9f, 0.1f, N);
        set_flag(s, host ? dmapped : dflag, it + 1);
        if (host) {
            spin(mapped, it + 1, it);
            seen++;
        }
        sq(s, y, N);
        acc(s, z, y, 0.5f, N);
        CK(cudaStreamSynchronize(s));
    }
    int last;
    CK(cudaMemcpy(&last, dflag, sizeof(int), cudaMemcpyDeviceToHost));
    printf("flags mapped=%d device=%d seen=%d\n", *mapped, last, seen);
    print_dev("y", y, N);
    print_dev("z", z, N);
}

int main(void)
{
    simSetDeviceThread(1);
    register_kernels();
    static const size_t fsz[] = { sizeof(int *), sizeof(int) };
    if (simRegisterKernel(k_flag, "k_flag", 2, fsz))
        FAIL("simRegisterKernel failed");
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    int *mapped, *dmapped, *dflag;
    CK(cudaHostAlloc((void **)&mapped, sizeof(int), cudaHostAllocMapped));
    CK(cudaHostGetDevicePointer((void **)&dmapped, mapped, 0));
    *mapped = 0;
    CK(cudaMalloc((void **)&dflag, sizeof(int)));
    float *y = dev_alloc_init(N, 0.5f), *z = dev_alloc_init(N, 0.0f);
    run(s, mapped, dmapped, dflag, y, z);
    CK(cudaFreeHost(mapped));
    /* The same with memory from a host-located pool, which only the pool
     * says is host memory. */
    cudaMemPool_t pool = host_pool();
    int *pflag;
    CK(cudaMallocFromPoolAsync((void **)&pflag, sizeof(int), pool, s));
    CK(cudaStreamSynchronize(s));
    *pflag = 0;
    run(s, pflag, pflag, dflag, y, z);
    CK(cudaFreeAsync(pflag, s));
    CK(cudaStreamSynchronize(s));
    CK(cudaMemPoolDestroy(pool));
    simSetDeviceThread(0);
    return 0;
}
