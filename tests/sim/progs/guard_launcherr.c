/* Guard scenario, two devices (SIM_DEVICES=2): a launch that fails at its
 * call, in the middle of a loop. With device 1 current, each iteration
 * launches two kernels on a stream of device 1, one on a stream of device 0
 * (refused: cudaErrorInvalidResourceHandle), two more on device 1, then
 * synchronises. The error codes (the launch's, and cudaGetLastError's
 * after it) are printed. A graph can be made of those five launches, but
 * the failed one must never be held: the program would see it succeed. */
#include "common.h"

enum { N = 96, ITERS = 20 };

int main(void)
{
    register_kernels();
    int ndev = 0;
    CK(cudaGetDeviceCount(&ndev));
    if (ndev < 2)
        FAIL("needs two devices (SIM_DEVICES=2)");
    cudaStream_t s0, s1;
    CK(cudaSetDevice(0));
    CK(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking));
    float *y0 = dev_alloc_init(N, 0.75f);
    CK(cudaSetDevice(1));
    CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    float *y = dev_alloc_init(N, 0.25f), *z = dev_alloc_init(N, 0.5f);
    for (int it = 0; it < ITERS; it++) {
        axpb(s1, y, 0.9f, 0.05f * (float)(it % 3), N);
        sq(s1, y, N);
        float m = 0.5f, b = 1.0f;
        int n = N;
        void *args[] = { &y0, &m, &b, &n };
        cudaError_t e = cudaLaunchKernel((const void *)k_axpb, d1(grid_for(N)), d1(BLOCK), args, 0, s0);
        cudaError_t last = cudaGetLastError();
        printf("it=%d launch on device 0's stream: %d last=%d\n", it, (int)e, (int)last);
        acc(s1, z, y, 0.5f, N);
        axpb(s1, z, 0.8f, 0.1f, N);
        CK(cudaStreamSynchronize(s1));
    }
    print_dev("y", y, N);
    print_dev("z", z, N);
    CK(cudaSetDevice(0));
    print_dev("y0", y0, N);
    return 0;
}
