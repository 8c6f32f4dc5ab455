/* Scenario, loops of one kernel as samples write them: one of 500 launches
 * between two syncs, run once (a timed loop); 9 of 100 between syncs, each
 * with other arguments (a sweep over lengths); and a time step of 40
 * launches and a read-back, 30 steps (a part repeating inside an
 * iteration, which is to replay whole). */
#include "common.h"
int main(void)
{
    float *y, *r;
    cudaStream_t s = start_y_r(&y, &r);
    CK(cudaDeviceSynchronize());
    for (int k = 0; k < 500; k++)
        axpb(s, y, 0.999f, 0.001f, 64);
    CK(cudaDeviceSynchronize());
    for (int len = 0; len < 9; len++) {
        for (int k = 0; k < 100; k++)
            axpb(s, y, 0.998f, 0.0001f * (float)len, 128);
        CK(cudaDeviceSynchronize());
    }
    float res = 0, sum = 0;
    for (int it = 0; it < 30; it++) {
        for (int k = 0; k < 40; k++)
            sq(s, y, 64);
        reduce(s, r, y, 64);
        CK(cudaMemcpyAsync(&res, r, sizeof res, cudaMemcpyDeviceToHost, s));
        CK(cudaStreamSynchronize(s));
        sum += res;
    }
    printf("sum %a\n", sum);
    print_dev("y", y, 128);
    return 0;
}
