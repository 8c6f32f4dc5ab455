/* Scenario: two devices (SIM_DEVICES=2) used alternately with cudaSetDevice;
 * with one device it runs the same work on device 0. */
#include "common.h"

int main(void)
{
    enum { N = 96, ITERS = 14 };
    register_kernels();
    int ndev = 0;
    CK(cudaGetDeviceCount(&ndev));
    int nd = ndev >= 2 ? 2 : 1;
    cudaStream_t s[2];
    float *y[2];
    for (int d = 0; d < 2; d++) {
        CK(cudaSetDevice(d % nd));
        CK(cudaStreamCreate(&s[d]));
        y[d] = dev_alloc_init(N, 0.5f + (float)d);
    }
    for (int it = 0; it < ITERS; it++) {
        for (int d = 0; d < 2; d++) {
            CK(cudaSetDevice(d % nd));
            axpb(s[d], y[d], 0.9f + 0.01f * (float)d, 0.1f, N);
            sq(s[d], y[d], N);
            acc(0, y[d], y[d], 0.25f, N);   /* legacy stream of this device */
        }
        for (int d = 0; d < 2; d++) {
            CK(cudaSetDevice(d % nd));
            CK(cudaDeviceSynchronize());
        }
    }
    for (int d = 0; d < 2; d++) {
        CK(cudaSetDevice(d % nd));
        char name[8];
        snprintf(name, sizeof(name), "y%d", d);
        print_dev(name, y[d], N);
    }
    return 0;
}
