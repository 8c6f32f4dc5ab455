/* Guard scenario: a loop whose copies read and write pinned host memory,
 * which the program then frees and allocates again, of the same size (the
 * same address, as allocators hand it out), before the same loop once more;
 * then its device scratch memory freed and allocated again; then the same
 * with cudaMallocAsync and cudaFreeAsync; then with pinned memory from a
 * host-located pool. A graph's copy and memset nodes hold the memory they
 * name as they found it: replayed after the free they would name memory
 * that is gone. */
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
    print_dev("y", y, N);
    return 0;
}
