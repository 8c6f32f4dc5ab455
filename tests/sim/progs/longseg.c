/* Scenario: a long single-stream iteration ending in a blocking read, which
 * cgraft replays as a chain of graphs. It holds a pageable copy late in the
 * iteration, an event recorded early and waited on late, every fifth
 * iteration a kernel over half the array (another grid: a node update),
 * and every seventh another kernel in the middle (of other parameters), every
 * eleventh a memset in place of a kernel: the chain stops there and the rest
 * runs eagerly, in order. */
#include "common.h"

int main(void)
{
    enum { N = 128, K = 40, ITERS = 36 };
    register_kernels();
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    cudaEvent_t ev;
    CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    float *host = malloc(N * sizeof(float)), *out = malloc(N * sizeof(float));
    float *y = dev_alloc_init(N, 0.5f), *z = dev_alloc_init(N, 1.0f), *in = dev_alloc_init(N, 0.0f);
    for (int it = 0; it < ITERS; it++) {
        for (int k = 0; k < K; k++) {
            int n = (k == 10 && it % 5 == 4) ? N / 2 : N;
            if (k == 20 && it % 7 == 6)
                sq(s, y, N);
            else if (k == 25 && it % 11 == 10)
                CK(cudaMemsetAsync(y + 7, 0, 9 * sizeof(float), s));
            else
                axpb(s, y, 0.97f, 0.001f * (float)k, n);
            if (k == 5)
                CK(cudaEventRecord(ev, s));
            if (k == 30) {
                for (int i = 0; i < N; i++)
                    host[i] = (float)((it * 7 + i) % 13) * 0.0625f;
                CK(cudaMemcpyAsync(in, host, N * sizeof(float), cudaMemcpyHostToDevice, s));
            }
            if (k == 35)
                CK(cudaStreamWaitEvent(s, ev, 0));
            acc(s, z, k > 30 ? in : y, 0.01f + 0.0001f * (float)k, N);
        }
        for (int i = 0; i < N; i++)
            host[i] = 1e6f; /* must not reach the copy above */
        CK(cudaMemcpy(out, z, N * sizeof(float), cudaMemcpyDeviceToHost));
        print_floats("z", out, 4);
    }
    print_dev("y", y, N);
    print_dev("z", z, N);
    free(host);
    free(out);
    return 0;
}
