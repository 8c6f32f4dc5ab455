/* Scenario, the shape of a language model's decoding step: a token copied
 * in, 200 kernels with one in the middle whose grid grows every other step
 * (over a growing sequence), a reduction read back into pageable memory.
 * The stretches around the growing kernel replay, each step. */
#include "common.h"
int main(void)
{
    float *y, *r;
    cudaStream_t s = start_y_r(&y, &r);
    float res = 0, tok = 1;
    for (int it = 0; it < 60; it++) {
        tok = (float)(it % 7);
        CK(cudaMemcpyAsync(y, &tok, sizeof tok, cudaMemcpyHostToDevice, s));
        for (int k = 0; k < 100; k++)
            axpb(s, y, 0.99f, 0.001f * (float)(k % 5), 64);
        axpb(s, y, 0.99f, 0.002f, 64 + 32 * it); /* grows */
        for (int k = 0; k < 100; k++)
            sq(s, y, 64);
        reduce(s, r, y, 64);
        CK(cudaMemcpyAsync(&res, r, sizeof res, cudaMemcpyDeviceToHost, s));
        CK(cudaStreamSynchronize(s));
    }
    printf("res %a\n", res);
    print_dev("y", y, 64);
    return 0;
}
