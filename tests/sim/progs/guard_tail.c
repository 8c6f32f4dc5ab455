/* Guard: what a deferral's end leaves replays as whole templates only where
 * every op has the template's shape, and with the held ops' own values.
 * First a step of (axpb, shm) pairs is learnt, longer than the loop's period
 * below and starting as it does, shm taking sq's arguments; then loops of
 * (axpb, sq) pairs, axpb's offset a counter, long enough to be cut early and
 * grouped, each ending in a tail shorter than a group. A tail given a
 * template that shares only its first op runs shm for sq; given values of
 * other held ops, other offsets. */
#include "common.h"
static void shm(cudaStream_t s, float *y, int n)
{
    void *args[] = { &y, &n };
    CK(cudaLaunchKernel((const void *)k_shm, d1(grid_for(n)), d1(BLOCK), args, 0, s));
}

int main(void)
{
    register_kernels();
    register_shm_kernel();
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *y = dev_alloc_init(256, 0.5f);
    CK(cudaDeviceSynchronize());
    for (int it = 0; it < 6; it++) {
        for (int k = 0; k < 10; k++) {
            axpb(s, y, 0.97f, 0.01f, 64);
            shm(s, y, 64);
        }
        CK(cudaDeviceSynchronize());
    }
    for (int round = 0; round < 4; round++) {
        int pairs = 100 + 13 * round; /* tails of other lengths */
        for (int k = 0; k < pairs; k++) {
            axpb(s, y, 0.99f, 0.001f * (float)(round + 1) + 1e-5f * (float)k, 64);
            sq(s, y, 64);
        }
        CK(cudaDeviceSynchronize());
    }
    print_dev("y", y, 64);
    return 0;
}
