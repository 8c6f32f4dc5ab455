/* Scenario: graphs built on cgraft's thread while the program goes on (run
 * with CGRAFT_BUILD_THREAD=1 and SIM_INSTANTIATE_US, so that a build lasts
 * several iterations). A time step of six launches and a read-back, whose
 * template matches nothing till its graph is there; a timed loop of one
 * kernel, whose period is cut early while its graph is built; a step over
 * two streams joined by an event, whose second stream and event are
 * destroyed and made again while a build naming them may be under way; the
 * program's own capture begun while one may be; a reset (a kernel's limit
 * raised) while one may be. */
#include <unistd.h>

#include "common.h"

static float step(cudaStream_t s, float *y, float *r, int n)
{
    float res = 0;
    for (int k = 0; k < 3; k++) {
        axpb(s, y, 0.999f, 0.001f * (float)(k + 1), n);
        sq(s, y, n);
    }
    reduce(s, r, y, n);
    CK(cudaMemcpyAsync(&res, r, sizeof res, cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));
    return res;
}

static void joined(cudaStream_t s, cudaStream_t s2, cudaEvent_t e, float *y, float *z, int n)
{
    axpb(s, y, 0.998f, 0.002f, n);
    CK(cudaEventRecord(e, s));
    CK(cudaStreamWaitEvent(s2, e, 0));
    acc(s2, z, y, 0.5f, n);
    sq(s2, z, n);
    CK(cudaStreamSynchronize(s2));
}

/* With the argument "loop", the timed loop alone. */
int main(int argc, char **argv)
{
    int loop_only = argc > 1 && !strcmp(argv[1], "loop");
    enum { N = 256 };
    float *y, *r;
    cudaStream_t s = start_y_r(&y, &r);
    float *z = dev_alloc_init(N, 0.25f);
    register_shm_kernel();
    float sum = 0;
    for (int it = 0; it < 40 && !loop_only; it++) {
        sum += step(s, y, r, N);
        usleep(200);
    }
    /* The timed loop: a kernel launch every 20 us, 400 times. */
    for (int k = 0; k < 400; k++) {
        axpb(s, y, 0.9995f, 0.0005f, 64);
        usleep(20);
    }
    CK(cudaDeviceSynchronize());
    if (loop_only) {
        print_dev("y", y, N);
        return 0;
    }
    cudaStream_t s2;
    cudaEvent_t e;
    CK(cudaStreamCreate(&s2));
    CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    for (int it = 0; it < 40; it++) {
        if (it == 3 || it == 20) {
            CK(cudaEventDestroy(e));
            CK(cudaStreamDestroy(s2));
            CK(cudaStreamCreate(&s2));
            CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
        }
        if (it == 25) {
            cudaStream_t cs;
            cudaGraph_t g;
            cudaGraphExec_t ge;
            CK(cudaStreamCreate(&cs));
            CK(cudaStreamBeginCapture(cs, cudaStreamCaptureModeGlobal));
            usleep(2000);
            axpb(cs, z, 1.001f, -0.001f, N);
            CK(cudaStreamEndCapture(cs, &g));
            CK(cudaGraphInstantiate(&ge, g, 0));
            CK(cudaGraphLaunch(ge, cs));
            CK(cudaStreamSynchronize(cs));
            CK(cudaGraphExecDestroy(ge));
            CK(cudaGraphDestroy(g));
            CK(cudaStreamDestroy(cs));
        }
        if (it == 30) {
            CK(cudaFuncSetAttribute((const void *)k_shm, cudaFuncAttributeMaxDynamicSharedMemorySize, 48 * 1024));
        }
        joined(s, s2, e, y, z, N);
        usleep(200);
    }
    for (int it = 0; it < 20; it++) {
        sum += step(s, y, r, N);
        usleep(200);
    }
    printf("sum %a\n", sum);
    print_dev("y", y, N);
    print_dev("z", z, N);
    return 0;
}
