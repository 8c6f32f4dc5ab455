/* Guard scenario: a replay whose graph launch the driver refuses
 * (SIM_GRAPH_LAUNCH_FAIL) runs eagerly, with the host's waits kept. Each
 * iteration sweeps, reduces into a device scalar and reads it back with a
 * blocking cudaMemcpy into pinned memory, then uploads the next step's
 * input with a blocking cudaMemcpy from pinned memory it rewrites at once:
 * both calls return only once their copy is done, whether the graph ran
 * or not. */
#include "common.h"

int main(void)
{
    enum { N = 256, ITERS = 24 };
    float *y, *r, *in, *h_res, *h_in, hist[ITERS];
    cudaStream_t s = start_y_r(&y, &r);
    (void)s;
    CK(cudaMalloc((void **)&in, N * sizeof(float)));
    CK(cudaMallocHost((void **)&h_res, sizeof(float)));
    CK(cudaMallocHost((void **)&h_in, N * sizeof(float)));
    for (int i = 0; i < N; i++)
        h_in[i] = 0.001f * (float)i;
    for (int it = 0; it < ITERS; it++) {
        CK(cudaMemcpy(in, h_in, N * sizeof(float), cudaMemcpyHostToDevice));
        for (int i = 0; i < N; i++)
            h_in[i] = -1.0f; /* the copy is done: this must not reach the device */
        acc(0, y, in, 0.5f, N);
        axpb(0, y, 0.75f, 0.001f * (float)it, N);
        reduce(0, r, y, N);
        CK(cudaMemcpy(h_res, r, sizeof(float), cudaMemcpyDeviceToHost));
        hist[it] = *h_res;
        for (int i = 0; i < N; i++)
            h_in[i] = 0.001f * (float)((i + it) % 17) - hist[it] * 1e-6f;
    }
    print_floats("hist", hist, ITERS);
    print_dev("y", y, N);
    return 0;
}
