/* Steps of 24 launches with no sync between them (a training loop's steps
 * within a block), with cgraft paused mid-step and resumed mid-step twice,
 * as the governor's probes pause it: the step resumes at another op than
 * the one its graphs start at. Its graphs are to be found again where the
 * step comes to their first op, not learnt and built anew at the phase the
 * run resumed at. Op 12 is the step's first op again, values and all: where
 * the phase is lost, it starts a replay that diverges at once. Between the
 * two pauses, a sync, after which the step's first op has another value:
 * the graphs start there as after any sync (the phase is known again) and
 * take the new value. With a step given, that step's op 5 is another
 * kernel: the replay diverges there, in a run no sync ends, and the steps
 * after it are to replay again, not run eagerly till the next sync.
 * Usage: phase_aside [pause 0|1] [step] */
#include <dlfcn.h>

#include "common.h"

enum { P = 24, ITERS = 160 };

/* The step's kernels, in no order a shift of the step would repeat. */
static const int kernel_of[P] = { 0, 1, 2, 2, 0, 1, 1, 2, 0, 2, 1, 0, 0, 2, 1, 1, 0, 2, 0, 1, 2, 2, 1, 0 };

static void op(cudaStream_t s, float *y, float *x, int k, int it, int odd)
{
    int n = 32 + 8 * k; /* each op of the step its own size */
    if (k == 12) /* the step's first op again, as it is */
        k = 0, n = 32;
    switch (odd && k == 5 ? 3 : kernel_of[k]) {
    case 3: sq(s, y, n); break;
    case 0: axpb(s, y, 0.5f, (float)k + (k == 0 && it >= 100 ? 1.0f : 0.0f), n); break;
    case 1: acc(s, x, y, 0.25f, n); break;
    default: mix(s, y, x, y, n); break;
    }
}

int main(int argc, char **argv)
{
    int pause = argc > 1 ? atoi(argv[1]) : 1, odd_step = argc > 2 ? atoi(argv[2]) : -1;
    register_kernels();
    int (*set)(int) = (int (*)(int))dlsym(RTLD_DEFAULT, "cgraft_set_enabled");
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *y = dev_alloc_init(32 + 8 * P, 1.0f), *x = dev_alloc_init(32 + 8 * P, 2.0f);
    for (int it = 0; it < ITERS; it++) {
        for (int k = 0; k < P; k++) {
            if (pause && set && ((it == 60 && k == 7) || (it == 110 && k == 11)))
                set(0);
            if (pause && set && ((it == 62 && k == 13) || (it == 112 && k == 2)))
                set(1);
            op(s, y, x, k, it, it == odd_step);
        }
        if (it == 99)
            CK(cudaStreamSynchronize(s));
    }
    CK(cudaStreamSynchronize(s));
    print_dev("y", y, 32 + 8 * P);
    print_dev("x", x, 32 + 8 * P);
    return 0;
}
