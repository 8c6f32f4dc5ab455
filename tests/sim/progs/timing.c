/* Scenario: the program times its calls (cgraft_call_time_ns): eagerly with
 * cgraft switched off, the real calls (1); under cgraft, the calls whole (2),
 * its graph launches among them; nothing while timing is off (0). */
#include <dlfcn.h>

#include "common.h"

int main(void)
{
    enum { N = 128, ITERS = 40, EAGER = 10 };
    int (*set)(int) = (int (*)(int))dlsym(RTLD_DEFAULT, "cgraft_set_enabled");
    unsigned long long (*timed)(int) = (unsigned long long (*)(int))dlsym(RTLD_DEFAULT, "cgraft_call_time_ns");
    float *y, *r;
    cudaStream_t s = start_y_r(&y, &r);
    float res = 0.0f, hist[ITERS];
    unsigned long long t0 = 0, eager = 0;
    for (int it = 0; it < ITERS; it++) {
        if (timed && it == 0) {
            set(0);
            t0 = timed(1);
        } else if (timed && it == EAGER) {
            eager = timed(0) - t0;
            if (timed(0) != t0 + eager)
                FAIL("time was counted with timing off");
            set(1);
            t0 = timed(2);
        }
        res = residual_step(s, y, r, N, res * 0.001f);
        hist[it] = res;
    }
    if (timed) {
        unsigned long long whole = timed(0) - t0;
        if (!eager || !whole)
            FAIL("no time counted: eager calls %llu ns, calls under cgraft %llu ns", eager, whole);
    }
    print_floats("hist", hist, ITERS);
    print_dev("y", y, N);
    return 0;
}
