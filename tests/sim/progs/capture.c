/* Scenario: the program's own stream capture (with an event fork/join into a
 * second stream), graph launched several times, mixed with eager iterations. */
#include "common.h"

int main(void)
{
    enum { N = 128, ITERS = 16 };
    register_kernels();
    cudaStream_t s, side;
    cudaEvent_t fork, join;
    CK(cudaStreamCreate(&s));
    CK(cudaStreamCreate(&side));
    CK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
    float *a = dev_alloc_init(N, 0.5f), *b = dev_alloc_init(N, 1.0f), *c = dev_alloc_init(N, 2.0f);

    cudaGraph_t g;
    cudaGraphExec_t ge;
    enum cudaStreamCaptureStatus st;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CK(cudaStreamIsCapturing(s, &st));
    if (st != cudaStreamCaptureStatusActive)
        FAIL("stream should be capturing");
    axpb(s, a, 0.9f, 0.1f, N);
    CK(cudaEventRecord(fork, s));
    CK(cudaStreamWaitEvent(side, fork, 0));
    acc(side, b, a, 0.5f, N);
    sq(side, b, N);
    CK(cudaEventRecord(join, side));
    axpb(s, c, 1.02f, -0.01f, N);   /* not a: the side stream reads a meanwhile */
    CK(cudaStreamWaitEvent(s, join, 0));
    mix(s, a, c, b, N);
    CK(cudaStreamEndCapture(s, &g));
    CK(cudaStreamIsCapturing(s, &st));
    if (st != cudaStreamCaptureStatusNone)
        FAIL("capture should have ended");
    size_t nn = 0;
    CK(cudaGraphGetNodes(g, NULL, &nn));
    if (nn != 5)
        FAIL("captured %zu nodes, expected 5", nn);
    CK(cudaGraphInstantiate(&ge, g, 0));

    if (cudaStreamBeginCapture(0, cudaStreamCaptureModeGlobal) != cudaErrorStreamCaptureUnsupported)
        FAIL("capturing the legacy stream must be refused");
    (void)cudaGetLastError();

    for (int it = 0; it < ITERS; it++) {
        if (it % 3 == 1) {
            /* the same work eagerly */
            axpb(s, a, 0.9f, 0.1f, N);
            CK(cudaEventRecord(fork, s));
            CK(cudaStreamWaitEvent(side, fork, 0));
            acc(side, b, a, 0.5f, N);
            sq(side, b, N);
            CK(cudaEventRecord(join, side));
            axpb(s, c, 1.02f, -0.01f, N);   /* not a: the side stream reads a meanwhile */
            CK(cudaStreamWaitEvent(s, join, 0));
            mix(s, a, c, b, N);
        } else {
            CK(cudaGraphLaunch(ge, s));
        }
        axpb(s, b, 0.5f, 0.5f, N);
        if (it % 2)
            CK(cudaStreamSynchronize(s));
    }
    CK(cudaStreamSynchronize(s));
    print_dev("a", a, N);
    print_dev("b", b, N);
    print_dev("c", c, N);
    CK(cudaGraphExecDestroy(ge));
    CK(cudaGraphDestroy(g));
    return 0;
}
