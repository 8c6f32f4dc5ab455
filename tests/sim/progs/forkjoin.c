/* Scenario: fork/join over three streams with events each iteration;
 * the joining kernel reads what both branches wrote. Its argument: the
 * iterations (14). */
#include "common.h"

int main(int argc, char **argv)
{
    enum { N = 256 };
    const int ITERS = argc > 1 ? atoi(argv[1]) : 14;
    register_kernels();
    cudaStream_t s0, s1, s2;
    cudaEvent_t fork, j1, j2;
    CK(cudaStreamCreate(&s0));
    CK(cudaStreamCreate(&s1));
    CK(cudaStreamCreate(&s2));
    CK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&j1, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&j2, cudaEventDisableTiming));
    float *a = dev_alloc_init(N, 1.0f), *b = dev_alloc_init(N, 2.0f), *c = dev_alloc_init(N, 0.0f);
    for (int it = 0; it < ITERS; it++) {
        axpb_h(s0, c, 0.5f, 0.25f, N);
        CK(cudaEventRecord(fork, s0));
        CK(cudaStreamWaitEvent(s1, fork, 0));
        CK(cudaStreamWaitEvent(s2, fork, 0));
        acc_h(s1, a, c, 0.3f, N);
        axpb_h(s1, a, 0.9f, 0.01f, N);
        acc_h(s2, b, c, -0.2f, N);
        sq(s2, b, N);
        CK(cudaEventRecord(j1, s1));
        CK(cudaEventRecord(j2, s2));
        CK(cudaStreamWaitEvent(s0, j1, 0));
        CK(cudaStreamWaitEvent(s0, j2, 0));
        mix(s0, c, a, b, N);
        CK(cudaStreamSynchronize(s0));
    }
    print_dev("a", a, N);
    print_dev("b", b, N);
    print_dev("c", c, N);
    return 0;
}
