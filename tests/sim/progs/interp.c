/* Scenario: an interpreter's loop. A step of 200 launches on one stream,
 * the host working W microseconds on its own before each (Python between
 * kernels), ends in a read-back of one value into pageable memory that the
 * host waits for. Each launch of a step has a grid of its own, so that no
 * stretch inside a step repeats. From step F on only (0: from the first) the host works
 * between launches; before, the step runs as a C loop would. Arguments:
 * steps, W, F. */
#include "common.h"

int main(int argc, char **argv)
{
    enum { OPS = 200, N = 64 * OPS };
    int steps = argc > 1 ? atoi(argv[1]) : 30;
    long work = argc > 2 ? atol(argv[2]) : 20;
    int from = argc > 3 ? atoi(argv[3]) : 0;
    register_kernels();
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *x = dev_alloc_init(N, 0.5f), *w = dev_alloc_init(N, 0.25f), *r = dev_alloc_init(1, 0.0f);
    float sum = 0.0f;
    for (int it = 0; it < steps; it++) {
        for (int k = 0; k < OPS - 1; k++) {
            if (it >= from)
                host_work(work);
            if (k % 2)
                mix(s, x, x, w, 64 * (k + 1));
            else
                axpb(s, x, 0.5f + 0.001f * (float)(k % 7), 0.125f, 64 * (k + 1));
        }
        reduce(s, r, x, N);
        float h;
        CK(cudaMemcpy(&h, r, sizeof h, cudaMemcpyDeviceToHost));
        sum += h;
    }
    printf("sum %.6f\n", (double)sum);
    print_dev("x", x, N);
    CK(cudaFree(x));
    CK(cudaFree(w));
    CK(cudaFree(r));
    return 0;
}
