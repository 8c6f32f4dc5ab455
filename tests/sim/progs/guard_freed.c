/* Guard scenario: a loop whose copies read and write pinned host memory,
 * which the program then frees and allocates again, of the same size (the
 * same address, as allocators hand it out), before the same loop once more;
 * then its device scratch memory freed and allocated again; then the same
 * with cudaMallocAsync and cudaFreeAsync; then with pinned memory from a
 * host-located pool; then device memory of the program's own mapping
 * (cuMemCreate, cuMemMap), unmapped and another handle mapped at the same
 * address. A graph's copy and memset nodes hold the memory they name as they
 * found it: replayed after the free they would name memory that is gone. */
#include <cuda.h>

#include "common.h"

enum { N = 512, SCRATCH = 2048, HOST = 1024, ITERS = 12 };

static void loop(cudaStream_t s, float *y, float *scratch, float *host, float b)
{
    for (int i = 0; i < HOST; i++)
        host[i] = (float)(i % 7) * 0.125f + b;
    for (int it = 0; it < ITERS; it++) {
        /* Inside the allocations, not at their start. */
        CK(cudaMemsetAsync(scratch + 64, 0, (SCRATCH - 64) * sizeof(float), s));
        CK(cudaMemcpyAsync(scratch + N, host + 16, N / 2 * sizeof(float), cudaMemcpyHostToDevice, s));
        acc(s, y, scratch + N, 0.25f, N);
        axpb(s, y, 0.5f, b, N);
        CK(cudaMemcpyAsync(host + 16, y, N / 2 * sizeof(float), cudaMemcpyDeviceToHost, s));
        CK(cudaStreamSynchronize(s));
    }
}

#define CKD(x) do { \
        CUresult r_ = (x); \
        if (r_ != CUDA_SUCCESS) \
            FAIL("%s failed: %d", #x, (int)r_); \
    } while (0)

/* A new handle of device memory mapped at va, read and written by the device. */
static void map_new(CUdeviceptr va, size_t size, const CUmemAllocationProp *prop)
{
    CUmemGenericAllocationHandle h;
    CKD(cuMemCreate(&h, size, prop, 0));
    CKD(cuMemMap(va, size, 0, h, 0));
    CKD(cuMemRelease(h)); /* the mapping keeps it */
    CUmemAccessDesc access = { .location = prop->location, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
    CKD(cuMemSetAccess(va, size, &access, 1));
}

int main(void)
{
    float *y, *r, *scratch, *host;
    cudaStream_t s = start_y_r(&y, &r);
    CK(cudaMalloc((void **)&scratch, SCRATCH * sizeof(float)));
    CK(cudaMallocHost((void **)&host, HOST * sizeof(float)));
    loop(s, y, scratch, host, 0.01f);
    CK(cudaFreeHost(host));
    CK(cudaMallocHost((void **)&host, HOST * sizeof(float)));
    loop(s, y, scratch, host, 0.02f);
    CK(cudaFree(scratch));
    CK(cudaMalloc((void **)&scratch, SCRATCH * sizeof(float)));
    loop(s, y, scratch, host, 0.03f);
    /* The same with stream-ordered allocation, an entry point cgraft
     * passes through. */
    CK(cudaFree(scratch));
    CK(cudaMallocAsync((void **)&scratch, SCRATCH * sizeof(float), s));
    loop(s, y, scratch, host, 0.04f);
    CK(cudaFreeAsync(scratch, s));
    CK(cudaStreamSynchronize(s));
    CK(cudaMallocAsync((void **)&scratch, SCRATCH * sizeof(float), s));
    loop(s, y, scratch, host, 0.05f);
    CK(cudaFreeAsync(scratch, s));
    CK(cudaFreeHost(host));
    /* Pinned memory from a host-located pool, freed in stream order (a call
     * that does not say what it frees to cgraft) and handed out again. */
    CK(cudaMalloc((void **)&scratch, SCRATCH * sizeof(float)));
    cudaMemPool_t pool = host_pool();
    for (int round = 0; round < 2; round++) {
        CK(cudaMallocFromPoolAsync((void **)&host, HOST * sizeof(float), pool, s));
        CK(cudaStreamSynchronize(s));
        loop(s, y, scratch, host, 0.06f + 0.01f * (float)round);
        CK(cudaFreeAsync(host, s));
        CK(cudaStreamSynchronize(s));
    }
    CK(cudaMemPoolDestroy(pool));
    /* Virtual memory: the same range, another handle behind it each round. */
    CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                 .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 } };
    size_t grain, vsize;
    CKD(cuMemGetAllocationGranularity(&grain, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    vsize = (SCRATCH * sizeof(float) + grain - 1) / grain * grain;
    CUdeviceptr va;
    CKD(cuMemAddressReserve(&va, vsize, 0, 0, 0));
    CK(cudaMallocHost((void **)&host, HOST * sizeof(float)));
    for (int round = 0; round < 2; round++) {
        map_new(va, vsize, &prop);
        loop(s, y, (float *)(uintptr_t)va, host, 0.08f + 0.01f * (float)round);
        CKD(cuMemUnmap(va, vsize));
    }
    CKD(cuMemAddressFree(va, vsize));
    CK(cudaFreeHost(host));
    CK(cudaFree(scratch));
    print_dev("y", y, N);
    return 0;
}
