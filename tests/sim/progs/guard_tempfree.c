/* Guard scenario: a loop that allocates scratch memory and frees it at every
 * iteration, as Thrust's temporary storage is, with a memset and a copy on
 * memory that stays and kernels on the scratch. Only copy and memset nodes
 * hold the memory they name: a free of memory none of them names keeps the
 * graphs, and the loop replays. */
#include "common.h"

enum { N = 512, ITERS = 24 };

int main(void)
{
    float *y, *r, *keep, *tmp;
    cudaStream_t s = start_y_r(&y, &r);
    CK(cudaMalloc((void **)&keep, N * sizeof(float)));
    for (int it = 0; it < ITERS; it++) {
        CK(cudaMalloc((void **)&tmp, N * sizeof(float)));
        CK(cudaMemsetAsync(keep, 0, N * sizeof(float), s));
        CK(cudaMemcpyAsync(keep + N / 4, y, N / 2 * sizeof(float), cudaMemcpyDeviceToDevice, s));
        mix(s, tmp, y, keep, N);
        acc(s, y, tmp, 0.25f, N);
        axpb(s, y, 0.5f, 0.01f, N);
        CK(cudaFree(tmp));
    }
    CK(cudaFree(keep));
    print_dev("y", y, N);
    return 0;
}
