/* Scenario: the legacy default stream mixed with a blocking and a
 * non-blocking stream; only the blocking one is ordered by the legacy barrier. */
#include "common.h"

int main(void)
{
    enum { N = 200, ITERS = 13 };
    register_kernels();
    cudaStream_t blk, nb;
    cudaEvent_t e;
    CK(cudaStreamCreate(&blk));
    CK(cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking));
    CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    float *a = dev_alloc_init(N, 1.0f), *b = dev_alloc_init(N, 0.5f), *c = dev_alloc_init(N, 3.0f);
    for (int it = 0; it < ITERS; it++) {
        axpb(blk, a, 0.75f, 0.125f * (float)(it % 3), N);   /* ordered before the next legacy op */
        acc(0, b, a, 0.5f, N);                              /* legacy: waits for blk */
        axpb(blk, b, 1.01f, 0.0f, N);                       /* blocking: waits for legacy */
        CK(cudaEventRecord(e, blk));
        CK(cudaStreamWaitEvent(nb, e, 0));                  /* non-blocking needs an explicit wait */
        acc(nb, c, b, 0.25f, N);
        sq(nb, c, N);
        CK(cudaEventRecord(e, nb));
        CK(cudaStreamWaitEvent(cudaStreamLegacy, e, 0));
        acc(cudaStreamLegacy, a, c, 0.01f, N);
        if (it % 4 == 3)
            CK(cudaDeviceSynchronize());
    }
    CK(cudaDeviceSynchronize());
    print_dev("a", a, N);
    print_dev("b", b, N);
    print_dev("c", c, N);
    return 0;
}
