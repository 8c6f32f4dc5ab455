/* Class scenario: two devices (SIM_DEVICES=2): each iteration selects each
 * device in turn and launches the same kernels on its legacy stream 0 with
 * that device's buffers, then synchronises each device. With one device it
 * runs the same work on device 0. */
#include "common.h"

enum { N = 112, ITERS = 24 };

int main(void)
{
    register_kernels();
    int ndev = 0;
    CK(cudaGetDeviceCount(&ndev));
    int nd = ndev >= 2 ? 2 : 1;
    float *y[2], *z[2], log[ITERS / 6][2];
    for (int d = 0; d < 2; d++) {
        CK(cudaSetDevice(d % nd));
        y[d] = dev_alloc_init(N, 0.25f + 0.5f * (float)d);
        z[d] = dev_alloc_init(N, 1.0f);
    }
    for (int it = 0; it < ITERS; it++) {
        for (int d = 0; d < 2; d++) {
            CK(cudaSetDevice(d % nd));
            axpb(0, y[d], 0.9f + 0.02f * (float)d, 0.05f * (float)(it % 3), N);
            sq(0, y[d], N);
            acc(0, z[d], y[d], 0.5f, N);
            reduce(0, z[d] + N - 1, y[d], N - 1);
        }
        for (int d = 0; d < 2; d++) {
            CK(cudaSetDevice(d % nd));
            CK(cudaDeviceSynchronize());
        }
        if (it % 6 == 5)
            for (int d = 0; d < 2; d++) {
                CK(cudaSetDevice(d % nd));
                float h[N];
                CK(cudaMemcpy(h, z[d], sizeof(h), cudaMemcpyDeviceToHost));
                log[it / 6][d] = h[it] + h[N - 1];
            }
    }
    for (int d = 0; d < 2; d++) {
        CK(cudaSetDevice(d % nd));
        char name[8];
        snprintf(name, sizeof(name), "y%d", d);
        print_dev(name, y[d], N);
        snprintf(name, sizeof(name), "z%d", d);
        print_dev(name, z[d], N);
    }
    print_floats("log", &log[0][0], 2 * (ITERS / 6));
    return 0;
}
