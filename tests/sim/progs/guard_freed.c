/* Guard scenario: a loop of a memset, a copy and a kernel on a scratch
 * buffer, which the program then frees and allocates again, of the same
 * size (the same address, as allocators hand it out), before the same loop
 * once more; then the same with cudaMallocAsync and cudaFreeAsync. A graph's
 * copy and memset nodes hold the allocation they were made for, not an
 * address: replayed after the free they would name memory that is gone. */
#include "common.h"

enum { N = 512, SCRATCH = 2048, ITERS = 12 };

static void loop(cudaStream_t s, float *y, float *scratch, float b)
{
    for (int it = 0; it < ITERS; it++) {
        /* Inside the allocation, not at its start. */
        CK(cudaMemsetAsync(scratch + 64, 0, (SCRATCH - 64) * sizeof(float), s));
        CK(cudaMemcpyAsync(scratch + N, y, N / 2 * sizeof(float), cudaMemcpyDeviceToDevice, s));
        acc(s, y, scratch + N, 0.25f, N);
        axpb(s, y, 0.5f, b, N);
        CK(cudaStreamSynchronize(s));
    }
}

int main(void)
{
    float *y, *r, *scratch;
    cudaStream_t s = start_y_r(&y, &r);
    CK(cudaMalloc((void **)&scratch, SCRATCH * sizeof(float)));
    loop(s, y, scratch, 0.01f);
    CK(cudaFree(scratch));
    CK(cudaMalloc((void **)&scratch, SCRATCH * sizeof(float)));
    loop(s, y, scratch, 0.02f);
    /* The same with stream-ordered allocation, an entry point cgraft
     * passes through. */
    CK(cudaFree(scratch));
    CK(cudaMallocAsync((void **)&scratch, SCRATCH * sizeof(float), s));
    loop(s, y, scratch, 0.03f);
    CK(cudaFreeAsync(scratch, s));
    CK(cudaStreamSynchronize(s));
    CK(cudaMallocAsync((void **)&scratch, SCRATCH * sizeof(float), s));
    loop(s, y, scratch, 0.04f);
    CK(cudaFreeAsync(scratch, s));
    print_dev("y", y, N);
    return 0;
}
