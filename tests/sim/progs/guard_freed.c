/* Guard scenario: a loop of a memset, a copy and a kernel on a scratch
 * buffer, which the program then frees and allocates again, of the same
 * size (the same address, as allocators hand it out), before the same loop
 * once more. A graph's copy and memset nodes hold the allocation they were
 * made for, not an address: replayed after the free they would name memory
 * that is gone. */
#include "common.h"

enum { N = 512, SCRATCH = 2048, ITERS = 12 };

static void loop(cudaStream_t s, float *y, float *scratch, float b)
{
    for (int it = 0; it < ITERS; it++) {
        CK(cudaMemsetAsync(scratch, 0, SCRATCH * sizeof(float), s));
        CK(cudaMemcpyAsync(scratch, y, N / 2 * sizeof(float), cudaMemcpyDeviceToDevice, s));
        acc(s, y, scratch, 0.25f, N);
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
    print_dev("y", y, N);
    return 0;
}
