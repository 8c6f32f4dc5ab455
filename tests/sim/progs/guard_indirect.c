/* Guard scenario, with the simulator's device thread on: the host spins,
 * making no CUDA call, on a flag in mapped pinned memory that a kernel
 * writes through a pointer it reads from device memory. No parameter of the
 * kernel is host memory and no call follows it before the spin, so nothing
 * tells cgraft the host waits; the kernel sits in the middle of a stretch
 * it replays (in the iterations without a spin, every other one). Only the
 * hold timer sends the held work out: without it the spin times out. */
#include <time.h>

#include "common.h"

enum { N = 96, ITERS = 20 };

/* **slot = v: the flag's address is in device memory. */
static void k_flag_via(const sim_launch *l, void **a)
{
    int *const *slot = *(int *const **)a[0];
    (void)l;
    __atomic_store_n(*slot, *(int *)a[1], __ATOMIC_RELEASE);
}

static void set_flag_via(cudaStream_t s, int **slot, int v)
{
    void *args[] = { &slot, &v };
    CK(cudaLaunchKernel((const void *)k_flag_via, d1(1), d1(1), args, 0, s));
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

int main(void)
{
    simSetDeviceThread(1);
    register_kernels();
    static const size_t fsz[] = { sizeof(int **), sizeof(int) };
    if (simRegisterKernel(k_flag_via, "k_flag_via", 2, fsz))
        FAIL("simRegisterKernel failed");
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    int *flag, *dflag, **slot;
    CK(cudaHostAlloc((void **)&flag, sizeof(int), cudaHostAllocMapped));
    CK(cudaHostGetDevicePointer((void **)&dflag, flag, 0));
    *flag = 0;
    CK(cudaMalloc((void **)&slot, sizeof(int *)));
    CK(cudaMemcpy(slot, &dflag, sizeof(int *), cudaMemcpyHostToDevice));
    float *y = dev_alloc_init(N, 0.5f), *z = dev_alloc_init(N, 0.0f);
    for (int it = 0; it < ITERS; it++) {
        axpb(s, y, 0.9f, 0.1f, N);
        set_flag_via(s, slot, it + 1);
        if (it % 2)
            spin(flag, it + 1, it);
        sq(s, y, N);
        acc(s, z, y, 0.5f, N);
        CK(cudaStreamSynchronize(s));
    }
    printf("flag=%d\n", *flag);
    print_dev("y", y, N);
    print_dev("z", z, N);
    CK(cudaFreeHost(flag));
    simSetDeviceThread(0);
    return 0;
}
