/* Guard: a kernel's grid is a value. The same axpb over 4096 elements is
 * launched with grids of 1, 2 or 3 blocks in turn, once the first steps
 * (all alike) made a template (its arguments the same: only the grid
 * tells how much of the array it covers), amid kernels that
 * never change; every seventh step ends in another kernel halfway, so that
 * held launches go out eagerly, each with its own grid. A replay that keeps
 * a graph's grid, or a held launch written out with the template's, covers
 * another part of the array.
 *
 * Built with CHURN, eight more kernels take other scalars at every step:
 * the graph is built again with an updater, which then gives the grid
 * kernels their grids (their parameters the same: only the grid differs). */
#include "common.h"
static void axpb_grid(cudaStream_t s, float *y, unsigned grid)
{
    float m = 0.99f, b = 0.01f;
    int n = 4096;
    void *args[] = { &y, &m, &b, &n };
    CK(cudaLaunchKernel((const void *)k_axpb, d1(grid), d1(BLOCK), args, 0, s));
}

int main(void)
{
    float *y, *r;
    cudaStream_t s = start_y_r(&y, &r);
#ifdef CHURN
    float *w = dev_alloc_init(256, 0.5f);
#endif
    float res = 0;
    for (int it = 0; it < 60; it++) {
        for (int k = 0; k < 6; k++)
            sq(s, y, 256);
#ifdef CHURN
        for (int k = 0; k < 8; k++)
            axpb(s, w, 0.99f, 1e-3f * (float)((it + k) % 50), 256);
#endif
        /* The first steps alike: a template learnt; then other grids. */
        axpb_grid(s, y, it < 3 ? 1 : 1 + (unsigned)(it % 3));
        for (int k = 0; k < 3; k++)
            axpb_grid(s, y, it < 3 ? 2 : 1 + (unsigned)((it + k) % 3));
        if (it % 7 == 6)
            reduce(s, r, y, 256);
        for (int k = 0; k < 4; k++)
            sq(s, y, 256);
        CK(cudaMemcpyAsync(&res, r, sizeof res, cudaMemcpyDeviceToHost, s));
        CK(cudaStreamSynchronize(s));
        printf("it=%d res %a\n", it, res);
    }
    print_dev("y", y, 4096);
#ifdef CHURN
    print_dev("w", w, 256);
#endif
    return 0;
}
