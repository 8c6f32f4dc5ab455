/* Scenario, HF decoding's step under a static cache: a token copied in, 200
 * kernels and a reduction read back into pageable memory, where two places
 * launch one of two kernels of other parameter layouts in turn, step by step
 * (PyTorch's unrolled or vectorised elementwise kernel as a position's
 * alignment alternates). Each form of the step recurs whole every other
 * step: each replays as one graph, not as three pieces around the two
 * places. With "third", a third form comes at every fifth step from step 30
 * on, which recurs too. With "lead", the first form comes four times before
 * they alternate (a round's first tokens): it is learnt first, the other
 * form beside it once it comes. */
#include "common.h"

int main(int argc, char **argv)
{
    int third = argc > 1 && !strcmp(argv[1], "third"), lead = argc > 1 && !strcmp(argv[1], "lead");
    float *y, *r;
    cudaStream_t s = start_y_r(&y, &r);
    float res = 0, tok = 1;
    for (int it = 0; it < 60; it++) {
        int form = third && it >= 30 && it % 5 == 0 ? 2 : lead && it < 4 ? 0 : it % 2;
        tok = (float)(it % 7);
        CK(cudaMemcpyAsync(y, &tok, sizeof tok, cudaMemcpyHostToDevice, s));
        for (int k = 0; k < 120; k++)
            axpb(s, y, 0.99f, 0.001f * (float)(k % 5), 64);
        if (form == 0)
            axpb(s, y, 0.98f, 0.002f, 64);
        else if (form == 1)
            sq(s, y, 64);
        else
            mix(s, y, y, y, 64);
        for (int k = 0; k < 60; k++)
            sq(s, y, 64);
        if (form == 1)
            axpb(s, y, 0.97f, 0.003f, 64);
        else
            sq(s, y, 64);
        for (int k = 0; k < 20; k++)
            axpb(s, y, 0.995f, 0.0005f, 64);
        reduce(s, r, y, 64);
        CK(cudaMemcpyAsync(&res, r, sizeof res, cudaMemcpyDeviceToHost, s));
        CK(cudaStreamSynchronize(s));
    }
    printf("res %a\n", res);
    print_dev("y", y, 64);
    return 0;
}
