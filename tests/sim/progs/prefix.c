/* Scenario: stretches that start alike and then part, each ended by a sync.
 * A (4 kernels on one stream) recurs most; B (3 kernels) shares A's first
 * and third but runs its second, the same kernel on another buffer, on a
 * second stream, unordered with the others; then C, A's first three kernels,
 * which is neither: held work that matches A must not be taken for B, though
 * B ends where C does and in the same kernel (B's graph would run C's second
 * kernel beside the first and third, on the buffer they share). Then a loop
 * of one launch, cut into groups with a shorter remainder at each sync: both
 * are candidates at every group's start. */
#include "common.h"

int main(void)
{
    enum { N = 96, M = 64 };
    register_kernels();
    cudaStream_t s, s2;
    CK(cudaStreamCreate(&s));
    CK(cudaStreamCreate(&s2));
    float *y = dev_alloc_init(N, 0.25f), *z = dev_alloc_init(N, 1.0f), *v = dev_alloc_init(N, 0.5f),
          *w = dev_alloc_init(M, 0.5f);
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 5; i++) { /* A */
            axpb(s, y, 0.9f, 0.1f, N);
            sq(s, y, N);
            acc(s, z, y, 0.5f, N);
            axpb(s, z, 0.7f, 0.2f, N);
            CK(cudaStreamSynchronize(s));
        }
        for (int i = 0; i < 3; i++) { /* B */
            axpb(s, y, 0.9f, 0.1f, N);
            sq(s2, v, N);
            acc(s, z, y, 0.5f, N);
            CK(cudaDeviceSynchronize());
        }
        for (int i = 0; i < 2; i++) { /* C */
            axpb(s, y, 0.9f, 0.1f, N);
            sq(s, y, N);
            acc(s, z, y, 0.5f, N);
            CK(cudaStreamSynchronize(s));
        }
    }
    for (int r = 0; r < 6; r++) {
        CK(cudaDeviceSynchronize());
        for (int i = 0; i < 300; i++)
            axpb(s, w, 0.999f, 0.001f, M);
    }
    CK(cudaStreamSynchronize(s));
    print_dev("y", y, N);
    print_dev("z", z, N);
    print_dev("v", v, N);
    print_dev("w", w, M);
    return 0;
}
