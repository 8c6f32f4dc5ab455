/* Class scenario, with the simulator's device thread on: the host spins,
 * making no CUDA call, on flags kernels write into mapped pinned memory,
 * into host-registered memory and into host-located virtual memory; a host function waits for a condition the host
 * signals right after launching it; the host spins on a flag a host function
 * sets. Work an interposer holds back never arrives, so the spins time out. */
#include <pthread.h>
#include <time.h>

#include <cuda.h>

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

static void spin(const int *p, int v, const char *what, int it)
{
    double t0 = now_s();
    while (__atomic_load_n(p, __ATOMIC_ACQUIRE) != v)
        if (now_s() - t0 > 10.0)
            FAIL("iteration %d: %s never became %d (is %d)", it, what, v, __atomic_load_n(p, __ATOMIC_ACQUIRE));
}

#define CKD(x) do { \
        CUresult r_ = (x); \
        if (r_ != CUDA_SUCCESS) \
            FAIL("%s failed: %d", #x, (int)r_); \
    } while (0)

/* Memory of the host's, mapped into a reserved range of the device's
 * address space (cuMemCreate with a host location): one granule. */
static int *vmm_host(size_t *size)
{
    CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                 .location = { .type = CU_MEM_LOCATION_TYPE_HOST } };
    CKD(cuMemGetAllocationGranularity(size, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CUdeviceptr p;
    CUmemGenericAllocationHandle h;
    CKD(cuMemAddressReserve(&p, *size, 0, 0, 0));
    CKD(cuMemCreate(&h, *size, &prop, 0));
    CKD(cuMemMap(p, *size, 0, h, 0));
    CKD(cuMemRelease(h));
    CUmemAccessDesc access[2] = {
        { .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 }, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE },
        { .location = { .type = CU_MEM_LOCATION_TYPE_HOST }, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE },
    };
    CKD(cuMemSetAccess(p, *size, access, 2));
    int *f = (int *)(uintptr_t)p;
    *f = 0;
    return f;
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int go, timeouts, host_done;
static int seen[ITERS];

/* Runs on the device; waits for the host's signal of this iteration. */
static void wait_go(void *p)
{
    int it = *(int *)p;
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += 10;
    pthread_mutex_lock(&mu);
    while (go != it + 1)
        if (pthread_cond_timedwait(&cv, &mu, &dl)) {
            timeouts++;
            break;
        }
    seen[it] = go;
    pthread_mutex_unlock(&mu);
}

static void mark_done(void *p)
{
    __atomic_store_n(&host_done, *(int *)p + 1, __ATOMIC_RELEASE);
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
    int *mapped, *dmapped, *reg = aligned_alloc(64, 64);
    if (!reg)
        FAIL("out of host memory");
    memset(reg, 0, 64);
    CK(cudaHostAlloc((void **)&mapped, sizeof(int), cudaHostAllocMapped));
    CK(cudaHostGetDevicePointer((void **)&dmapped, mapped, 0));
    CK(cudaHostRegister(reg, 64, cudaHostRegisterMapped));
    *mapped = 0;
    size_t vsize;
    int *vmm = vmm_host(&vsize);
    float *y = dev_alloc_init(N, 0.5f), *z = dev_alloc_init(N, 0.0f), log[ITERS / 6];
    int its[ITERS];
    for (int it = 0; it < ITERS; it++) {
        its[it] = it;
        axpb(s, y, 0.9f, 0.1f, N);
        sq(s, y, N);
        set_flag(s, dmapped, it + 1);
        spin(mapped, it + 1, "the flag in mapped pinned memory", it);
        acc(s, z, y, 0.5f, N);
        set_flag(s, reg, it + 1);
        spin(reg, it + 1, "the flag in registered memory", it);
        set_flag(s, vmm, it + 1);
        spin(vmm, it + 1, "the flag in host-located virtual memory", it);
        CK(cudaLaunchHostFunc(s, wait_go, &its[it]));
        pthread_mutex_lock(&mu);
        go = it + 1;
        pthread_cond_broadcast(&cv);
        pthread_mutex_unlock(&mu);
        CK(cudaLaunchHostFunc(s, mark_done, &its[it]));
        spin(&host_done, it + 1, "the host function's flag", it);
        if (it % 6 == 5) {
            float h[N];
            CK(cudaMemcpyAsync(h, z, sizeof(h), cudaMemcpyDeviceToHost, s));
            CK(cudaStreamSynchronize(s));
            log[it / 6] = h[it] + h[N - 1];
        }
    }
    CK(cudaStreamSynchronize(s));
    int ok = 1;
    for (int it = 0; it < ITERS; it++)
        ok &= seen[it] == it + 1;
    printf("flags mapped=%d registered=%d virtual=%d host=%d waits-ok=%d timeouts=%d\n", *mapped, *reg, *vmm,
           host_done, ok, timeouts);
    print_floats("log", log, ITERS / 6);
    print_dev("y", y, N);
    print_dev("z", z, N);
    CK(cudaHostUnregister(reg));
    CK(cudaFreeHost(mapped));
    free(reg);
    CKD(cuMemUnmap((CUdeviceptr)(uintptr_t)vmm, vsize));
    CKD(cuMemAddressFree((CUdeviceptr)(uintptr_t)vmm, vsize));
    simSetDeviceThread(0);
    return 0;
}
