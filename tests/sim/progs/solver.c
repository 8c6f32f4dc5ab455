/* Scenario: a solver's loop, shaped as kernels/solver.cu's: each step the
 * program's kernels among a library's (simblas, whose launches go straight
 * to the driver) on one stream; the residual read back into pageable memory
 * every CHECK steps, and every few checks the host restarts the solve with
 * setup work of its own. The stretches between read-backs recur; stretches
 * of other kernels with launches alike must not pass for them. */
#include "common.h"
#include "simblas.h"

int main(void)
{
    enum { N = 128, CHECK = 10, STEPS = 300, RESTART = 3 };
    register_kernels();
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *x = dev_alloc_init(N, 0.5f), *r = dev_alloc_init(N, 0.25f), *p = dev_alloc_init(N, 0.75f);
    float *q = dev_alloc_init(N, 0.125f), *b = dev_alloc_init(N, 0.375f), *sc = dev_alloc_init(8, 0.0f);
    float trace[STEPS / CHECK * 2];
    int nt = 0, checks = 0;
    for (int it = 1; it <= STEPS; it++) {
        if (simblas_axpy(s, N, 0.5f, p, q) || simblas_dot(s, N, p, q, sc + 0))
            FAIL("simblas failed");
        reduce(s, sc + 1, q, N);
        if (simblas_axpy(s, N, 0.01f, p, x) || simblas_axpy(s, N, -0.01f, q, r) ||
            simblas_dot(s, N, r, r, sc + 2))
            FAIL("simblas failed");
        reduce(s, sc + 3, r, N);
        acc(s, p, r, 0.5f, N);
        axpb(s, r, 0.999f, 0.0f, N);
        if (it % CHECK)
            continue;
        float cur = 0.0f;
        CK(cudaMemcpyAsync(&cur, sc + 2, sizeof cur, cudaMemcpyDeviceToHost, s));
        CK(cudaStreamSynchronize(s));
        trace[nt++] = cur;
        if (++checks % RESTART == 0) {
            /* A new solve: the host's own setup, then its first residual. */
            mix(s, x, b, r, N);
            sq(s, q, N);
            sq(s, r, N);
            if (simblas_dot(s, N, b, b, sc + 4))
                FAIL("simblas failed");
            float r0 = 0.0f;
            CK(cudaMemcpyAsync(&r0, sc + 4, sizeof r0, cudaMemcpyDeviceToHost, s));
            CK(cudaStreamSynchronize(s));
            trace[nt++] = r0;
        }
    }
    CK(cudaStreamSynchronize(s));
    print_floats("trace", trace, (size_t)nt);
    print_dev("x", x, N);
    print_dev("p", p, N);
    return 0;
}
