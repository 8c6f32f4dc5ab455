/* Scenario: the program switches cgraft off for a stretch (in the middle of
 * an iteration, while calls are held back) and on again. */
#include <dlfcn.h>

#include "common.h"

int main(void)
{
    enum { N = 128, ITERS = 30, OFF = 10, ON = 20 };
    int (*set)(int) = (int (*)(int))dlsym(RTLD_DEFAULT, "cgraft_set_enabled");
    register_kernels();
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *x = dev_alloc_init(N, 0.5f), *y = dev_alloc_init(N, 1.5f);
    for (int it = 0; it < ITERS; it++) {
        axpb(s, x, 0.9f, 0.01f, N);
        acc(s, y, x, 0.5f, N);
        if (it == OFF && set) {
            int was = set(0); /* -1: cgraft is off for the process */
            if (was != 1 && was != -1)
                FAIL("cgraft_set_enabled(0) returned %d, not 1", was);
        }
        mix(s, x, x, y, N);
        sq(s, y, N);
        CK(cudaStreamSynchronize(s));
        if (it + 1 == ON && set) {
            int was = set(1);
            if (was != 0 && was != -1)
                FAIL("cgraft_set_enabled(1) returned %d, not 0", was);
        }
    }
    print_dev("x", x, N);
    print_dev("y", y, N);
    return 0;
}
