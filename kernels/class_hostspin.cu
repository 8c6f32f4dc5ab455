// kernels/class_hostspin.cu: the host waits for the device without any CUDA call. Each
// iteration it spins on a flag a kernel writes into mapped pinned memory (cudaHostAlloc),
// into cudaHostRegister'ed memory and into host-located virtual memory (cuMemCreate and
// cuMemMap through cudaGetDriverEntryPointByVersion, where the driver has it), launches a host function that waits for a condition the
// host signals right after the launch, and spins on a flag a second host function sets.
// Work held back by an interposer never arrives: every wait gives up after 10 s, and a spin
// that gives up prints TIMEOUT and exits 1.
#include <chrono>
#include <condition_variable>
#include <mutex>

#include <cudaTypedefs.h>

#include "class_common.cuh"

static const int N = 4096;
static const double WAIT_S = 10.0;

__global__ void k_flag(volatile int *f, int v) {
    __threadfence_system();
    *f = v;
    __threadfence_system();
}

static void set_flag(cudaStream_t s, int *f, int v) {
    k_flag<<<1, 1, 0, s>>>(f, v);
    CK_LAUNCH();
}

static double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

static void spin(const int *p, int v, const char *what, long it) {
    auto t0 = std::chrono::steady_clock::now();
    while (__atomic_load_n(p, __ATOMIC_ACQUIRE) != v)
        if (seconds_since(t0) > WAIT_S) {
            printf("TIMEOUT iteration %ld: %s never became %d (is %d)\n", it, what, v,
                   __atomic_load_n(p, __ATOMIC_ACQUIRE));
            fflush(stdout);
            fprintf(stderr, "hostspin: TIMEOUT at iteration %ld waiting for %s\n", it, what);
            exit(1);
        }
}

template <typename F> static F entry(const char *name) {
    void *p = nullptr;
    cudaDriverEntryPointQueryResult st = cudaDriverEntryPointSymbolNotFound;
    CK(cudaGetDriverEntryPointByVersion(name, &p, 10020, cudaEnableDefault, &st));
    if (!p || st != cudaDriverEntryPointSuccess) FAIL("no driver entry point %s (status %d)", name, (int)st);
    return (F)p;
}

// One granule of host memory mapped into a reserved range, read and written by the device
// and the host; null where the driver refuses such memory (then on every run alike).
static int *vmm_host(size_t *size) {
    auto granularity = entry<PFN_cuMemGetAllocationGranularity_v10020>("cuMemGetAllocationGranularity");
    auto reserve = entry<PFN_cuMemAddressReserve_v10020>("cuMemAddressReserve");
    auto create = entry<PFN_cuMemCreate_v10020>("cuMemCreate");
    auto map = entry<PFN_cuMemMap_v10020>("cuMemMap");
    auto release = entry<PFN_cuMemRelease_v10020>("cuMemRelease");
    auto set_access = entry<PFN_cuMemSetAccess_v10020>("cuMemSetAccess");
    auto unmap = entry<PFN_cuMemUnmap_v10020>("cuMemUnmap");
    auto address_free = entry<PFN_cuMemAddressFree_v10020>("cuMemAddressFree");
    CUmemAllocationProp prop = {};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_HOST;
    CUdeviceptr p = 0;
    CUmemGenericAllocationHandle h = 0;
    if (granularity(size, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) != CUDA_SUCCESS) return nullptr;
    if (reserve(&p, *size, 0, 0, 0) != CUDA_SUCCESS) return nullptr;
    if (create(&h, *size, &prop, 0) != CUDA_SUCCESS) {
        address_free(p, *size);
        return nullptr;
    }
    CUresult r = map(p, *size, 0, h, 0);
    release(h);
    CUmemAccessDesc access[2] = {};
    access[0].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access[0].location.id = 0;
    access[0].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    access[1].location.type = CU_MEM_LOCATION_TYPE_HOST;
    access[1].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    if (r == CUDA_SUCCESS && (r = set_access(p, *size, access, 2)) != CUDA_SUCCESS) unmap(p, *size);
    if (r != CUDA_SUCCESS) {
        address_free(p, *size);
        return nullptr;
    }
    int *f = (int *)(uintptr_t)p;
    *f = 0;
    return f;
}

static void vmm_free(int *f, size_t size) {
    CUdeviceptr p = (CUdeviceptr)(uintptr_t)f;
    if (entry<PFN_cuMemUnmap_v10020>("cuMemUnmap")(p, size) != CUDA_SUCCESS ||
        entry<PFN_cuMemAddressFree_v10020>("cuMemAddressFree")(p, size) != CUDA_SUCCESS)
        FAIL("host-located virtual memory not given back");
}

static std::mutex mu;
static std::condition_variable cv;
static long go;          // the iteration the host has signalled, plus one
static int timeouts;     // host functions that gave up waiting
static int host_done;    // set by mark_done, read by the spinning host
static std::vector<long> seen;

// Runs in the driver's callback thread: waits for the host's signal of this iteration.
static void CUDART_CB wait_go(void *p) {
    long it = *(long *)p;
    std::unique_lock<std::mutex> l(mu);
    if (!cv.wait_for(l, std::chrono::duration<double>(WAIT_S), [&] { return go >= it + 1; })) timeouts++;
    seen[it] = go;
}

static void CUDART_CB mark_done(void *p) {
    __atomic_store_n(&host_done, (int)(*(long *)p + 1), __ATOMIC_RELEASE);
}

int main(int argc, char **argv) {
    long iters = class_start(argc, argv, 40, 6);
    seen.assign(iters, -1);
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    int *mapped, *dmapped, *dreg;
    const size_t page = 4096;
    int *reg = (int *)aligned_alloc(page, page);
    if (!reg) FAIL("out of host memory");
    memset(reg, 0, page);
    CK(cudaHostAlloc(&mapped, sizeof(int), cudaHostAllocMapped));
    CK(cudaHostGetDevicePointer((void **)&dmapped, mapped, 0));
    CK(cudaHostRegister(reg, page, cudaHostRegisterMapped));
    CK(cudaHostGetDevicePointer((void **)&dreg, reg, 0));
    *mapped = 0;
    size_t vsize = 0;
    int *vmm = vmm_host(&vsize);
    float *y = dev_init(N, 0.5f), *z = dev_init(N, 0.0f);
    std::vector<float> log, h(N);
    std::vector<long> its(iters);
    for (long it = 0; it < iters; it++) {
        its[it] = it;
        axpb(s, y, 0.9f, 0.1f, N);
        sq(s, y, N);
        set_flag(s, dmapped, (int)it + 1);
        spin(mapped, (int)it + 1, "the flag in mapped pinned memory", it);
        acc(s, z, y, 0.5f, N);
        set_flag(s, dreg, (int)it + 1);
        spin(reg, (int)it + 1, "the flag in registered memory", it);
        if (vmm) {
            set_flag(s, vmm, (int)it + 1);
            spin(vmm, (int)it + 1, "the flag in host-located virtual memory", it);
        }
        CK(cudaLaunchHostFunc(s, wait_go, &its[it]));
        {
            std::lock_guard<std::mutex> l(mu);
            go = it + 1;
        }
        cv.notify_all();
        axpb(s, z, 1.0f, 0.01f, N);
        CK(cudaLaunchHostFunc(s, mark_done, &its[it]));
        spin(&host_done, (int)it + 1, "the host function's flag", it);
        if (it % 6 == 5) {
            CK(cudaMemcpyAsync(h.data(), z, N * sizeof(float), cudaMemcpyDeviceToHost, s));
            CK(cudaStreamSynchronize(s));
            log.push_back(h[it] + h[N - 1]);
        }
    }
    CK(cudaStreamSynchronize(s));
    bool ok = true;
    for (long it = 0; it < iters; it++) ok &= seen[it] == it + 1;
    if (vmm)
        printf("virtual=%d\n", *vmm);
    else
        printf("virtual=refused\n");
    printf("flags mapped=%d registered=%d host=%d waits-ok=%d timeouts=%d\n", *mapped, *reg, host_done, (int)ok,
           timeouts);
    print_host("log", log.data(), log.size());
    print_dev("y", y, N);
    print_dev("z", z, N);
    CK(cudaHostUnregister(reg));
    CK(cudaFreeHost(mapped));
    free(reg);
    if (vmm) vmm_free(vmm, vsize);
    CK(cudaFree(y));
    CK(cudaFree(z));
    CK(cudaStreamDestroy(s));
    return 0;
}
