// kernels/class_multidev.cu: two devices in one thread. Each iteration selects each device in
// turn and queues the same kernels on its legacy stream 0 with that device's buffers, then
// synchronises each device; every sixth iteration a peer copy carries one device's result to
// the other. With a single device both halves run on device 0: the same work and the same
// output, after a line saying so.
#include "class_common.cuh"

static const int N = 4096;

int main(int argc, char **argv) {
    long iters = class_start(argc, argv, 36, 6);
    int ndev = 0;
    CK(cudaGetDeviceCount(&ndev));
    if (ndev < 1) FAIL("no CUDA device");
    const int nd = ndev >= 2 ? 2 : 1;
    if (nd == 1)
        printf("multidev: one device: the two-device part runs both halves on device 0\n");
    else
        printf("multidev: two devices\n");
    float *y[2], *z[2], *r[2], *peer[2];
    for (int d = 0; d < 2; d++) {
        CK(cudaSetDevice(d % nd));
        y[d] = dev_init(N, 0.25f + 0.5f * (float)d);
        z[d] = dev_init(N, 1.0f);
        r[d] = dev_init(1, 0.0f);
        CK(cudaMalloc(&peer[d], N * sizeof(float)));
        CK(cudaMemset(peer[d], 0, N * sizeof(float)));
    }
    std::vector<float> log, h(N);
    for (long it = 0; it < iters; it++) {
        for (int d = 0; d < 2; d++) {
            CK(cudaSetDevice(d % nd));
            axpb(0, y[d], 0.9f + 0.02f * (float)d, 0.05f * (float)(it % 3), N);
            sq(0, y[d], N);
            acc(0, z[d], y[d], 0.5f, N);
            reduce(0, r[d], y[d], N);
        }
        for (int d = 0; d < 2; d++) {
            CK(cudaSetDevice(d % nd));
            CK(cudaDeviceSynchronize());
        }
        if (it % 6 == 5) {
            // Each half takes the other's z, from the device it lives on.
            for (int d = 0; d < 2; d++) {
                CK(cudaSetDevice(d % nd));
                CK(cudaMemcpyPeer(peer[d], d % nd, z[1 - d], (1 - d) % nd, N * sizeof(float)));
                acc(0, z[d], peer[d], 0.125f, N);
            }
            for (int d = 0; d < 2; d++) {
                CK(cudaSetDevice(d % nd));
                CK(cudaMemcpy(h.data(), z[d], N * sizeof(float), cudaMemcpyDeviceToHost));
                log.push_back(h[it % N] + h[N - 1]);
            }
        }
    }
    for (int d = 0; d < 2; d++) {
        CK(cudaSetDevice(d % nd));
        CK(cudaDeviceSynchronize());
        char name[16];
        snprintf(name, sizeof name, "y%d", d);
        print_dev(name, y[d], N);
        snprintf(name, sizeof name, "z%d", d);
        print_dev(name, z[d], N);
        snprintf(name, sizeof name, "r%d", d);
        print_dev(name, r[d], 1);
    }
    print_host("log", log.data(), log.size());
    for (int d = 0; d < 2; d++) {
        CK(cudaSetDevice(d % nd));
        for (float *p : {y[d], z[d], r[d], peer[d]}) CK(cudaFree(p));
    }
    return 0;
}
