/* Scenario: the host computes for a while after issuing each iteration,
 * with no CUDA call. One stream, synchronised every fourth iteration; or
 * ("streams") two that swap roles each iteration, forked and joined by
 * events, with a value that changes each iteration and a read-back into
 * pinned memory every fourth, waited for after the host's work; or
 * ("sporadic") a step synchronised at its end, the host pausing in every
 * third step from the 20th (or the first with gaps), each time at another
 * op; or ("everystep") so in every step; or ("same") an iteration of 16
 * launches alike, arguments and all, so that only the host's gaps tell
 * where an iteration ends. Arguments: iterations, the gap in
 * microseconds, the mode, the first iteration with gaps. */
#include "common.h"
#include <string.h>

int main(int argc, char **argv)
{
    enum { N = 300 };
    int iters = argc > 1 ? atoi(argv[1]) : 40;
    long gap = argc > 2 ? atol(argv[2]) : 3000;
    int streams = argc > 3 && !strcmp(argv[3], "streams");
    int every = argc > 3 && !strcmp(argv[3], "everystep");
    int sporadic = every || (argc > 3 && !strcmp(argv[3], "sporadic"));
    int same = argc > 3 && !strcmp(argv[3], "same");
    int gaps_from = argc > 4 ? atoi(argv[4]) : sporadic ? 20 : 0; /* the first iteration with gaps */
    register_kernels();
    cudaStream_t s[2];
    cudaEvent_t fork, join, end;
    CK(cudaStreamCreate(&s[0]));
    CK(cudaStreamCreate(&s[1]));
    CK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&end, cudaEventDisableTiming));
    float *y = dev_alloc_init(N, 0.25f), *z = dev_alloc_init(N, 0.5f), *u = dev_alloc_init(N, 0.125f), *h;
    CK(cudaMallocHost((void **)&h, N * sizeof *h));
    for (int it = 0; it < iters; it++) {
        if (sporadic) { /* a pause now and then, each at another op */
            for (int k = 0; k < 24; k++) {
                if (it >= gaps_from && (every || it % 3 == 2) && k == (it * 7) % 23 + 1)
                    host_work(gap);
                axpb(s[0], y, 0.5f + 0.01f * (float)k, 0.05f * (float)(k % 3), N);
            }
            CK(cudaStreamSynchronize(s[0]));
            continue;
        }
        if (!streams) {
            for (int k = 0; k < (same ? 16 : 12); k++) {
                if (same)
                    axpb(s[0], y, 0.999f, 0.001f, N);
                else if (k % 5 == 3)
                    sq(s[0], y, N);
                else
                    axpb(s[0], y, 0.5f + 0.03f * (float)k, 0.1f * (float)(k % 5), N);
            }
            host_work(it >= gaps_from ? gap : 0);
            if (it % 4 == 3)
                CK(cudaStreamSynchronize(s[0]));
            continue;
        }
        cudaStream_t x = s[it & 1], w = s[(it & 1) ^ 1];
        CK(cudaStreamWaitEvent(x, end, 0));
        axpb(x, y, 0.5f, 0.01f * (float)(it % 7), N);
        CK(cudaEventRecord(fork, x));
        CK(cudaStreamWaitEvent(w, fork, 0));
        acc(w, z, y, 0.25f, N);
        sq(w, z, N);
        for (int k = 0; k < 4; k++)
            axpb(x, u, 0.75f, 0.02f * (float)k, N);
        CK(cudaEventRecord(join, x));
        CK(cudaStreamWaitEvent(w, join, 0));
        mix(w, y, u, z, N);
        int rb = it % 4 == 3;
        if (rb)
            CK(cudaMemcpyAsync(h, y, N * sizeof *h, cudaMemcpyDeviceToHost, w));
        CK(cudaEventRecord(end, w));
        host_work(it >= gaps_from ? gap : 0);
        if (rb) {
            CK(cudaStreamSynchronize(w));
            print_floats("h", h, 8);
        }
    }
    print_dev("y", y, N);
    print_dev("z", z, N);
    CK(cudaFreeHost(h));
    CK(cudaFree(y));
    CK(cudaFree(z));
    CK(cudaFree(u));
    return 0;
}
