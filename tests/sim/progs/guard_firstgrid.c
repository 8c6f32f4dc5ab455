/* Guard: a match starts only on the grid its template starts with. Each
 * step is a stretch that recurs (axpb over 64 floats, three sq) and one that
 * never does (axpb over 1024, then a kernel with another block every step).
 * Started on the second stretch's axpb, the first's template would diverge
 * there every step, and back off. */
#include "common.h"
int main(void)
{
    float *y, *r;
    cudaStream_t s = start_y_r(&y, &r);
    float *z = dev_alloc_init(1024, 0.25f);
    for (int it = 0; it < 40; it++) {
        axpb(s, y, 0.99f, 0.01f, 64);
        for (int k = 0; k < 3; k++)
            sq(s, y, 64);
        CK(cudaStreamSynchronize(s));
        axpb(s, z, 0.98f, 0.02f, 1024);
        int n = 1024;
        void *args[] = { &z, &n };
        CK(cudaLaunchKernel((const void *)k_sq, d1(1), d1(32 + (unsigned)it), args, 0, s));
        CK(cudaStreamSynchronize(s));
    }
    print_dev("y", y, 64);
    print_dev("z", z, 1024);
    return 0;
}
