/* Scenario: a step learnt in two pieces that later launch back to back. For
 * its first WARM steps a query of the stream (a call after which the host
 * may look at the work, as a warm-up's progress check) comes between the
 * step's first part A and its second part B, and a sync after B, so A and B
 * are learnt as two stretches; then the queries stop, and blocks of eight
 * steps end in a sync. From there the two pieces launch one right after the
 * other at every step, with nothing between: they
 * become one graph of both, one launch a step rather than two. With "gap",
 * the host works on its own for 3 ms after A, and every step ends in a sync:
 * the pieces stay apart, A's graph launched before the host's gap rather
 * than held through it with B's ops. With "turn", B has another kernel in
 * its middle from step 40 on: the graph of both no longer matches past A,
 * and goes, so that B's new form is learnt and replayed after A's graph. */
#include "common.h"

int main(int argc, char **argv)
{
    enum { N = 64, STEPS = 80, WARM = 16, A = 5, B = 20 };
    int gap = argc > 1 && !strcmp(argv[1], "gap"), turn = argc > 1 && !strcmp(argv[1], "turn");
    register_kernels();
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *x = dev_alloc_init(N, 0.5f), *w = dev_alloc_init(N, 0.25f);
    for (int it = 0; it < STEPS; it++) {
        for (int k = 0; k < A; k++) {
            mix(s, x, x, w, N);
            sq(s, x, N);
        }
        if (it < WARM)
            (void)cudaStreamQuery(s); /* ready or not: either ends held work */
        else if (gap)
            host_work(3000);
        for (int k = 0; k < B; k++) {
            if (turn && it >= 40 && k == B / 2)
                sq(s, w, N);
            else
                axpb(s, w, 0.999f, 0.0001f * (float)k, N);
        }
        if (it < WARM || gap || it % 8 == 7)
            CK(cudaStreamSynchronize(s));
    }
    CK(cudaStreamSynchronize(s));
    print_dev("x", x, N);
    print_dev("w", w, N);
    return 0;
}
