/* Workload of scripts/host-cost: one 4-parameter kernel launched N times on
 * one stream through __cudaLaunchKernel, as nvcc's <<<>>> does, arguments
 * unchanged, then a sync; with a second argument S, a sync after every S
 * launches too; with a third, K, K KiB of memory of its own written between
 * two launches, as a program's own work between its calls pushes cgraft out
 * of the caches. Under cgraft the launches are held and replayed. */
#include "common.h"

int main(int argc, char **argv)
{
    long n = argc > 1 ? strtol(argv[1], NULL, 10) : 4096, every = argc > 2 ? strtol(argv[2], NULL, 10) : 0;
    long kib = argc > 3 ? strtol(argv[3], NULL, 10) : 0;
    static volatile unsigned char own[16 << 20];
    if (kib < 0 || kib > (long)(sizeof own >> 10))
        kib = 0;
    register_kernels();
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *y = dev_alloc_init(64, 0.5f);
    for (long i = 0; i < n; i++) {
        if (every > 0 && i % every == 0)
            CK(cudaStreamSynchronize(s));
        for (long j = 0; j < kib << 10; j += 64)
            own[j]++;
        axpb_h(s, y, 0.999f, 0.001f, 64);
    }
    CK(cudaStreamSynchronize(s));
    print_dev("y", y, 64);
    return 0;
}
