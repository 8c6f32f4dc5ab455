/* Guard scenario: events made with the interprocess flag, through the
 * runtime and the driver, which another process may record or wait on at
 * any time: their records and waits are made when the program makes them,
 * never held (fallbacks.event_flags counts each). Two streams pass work
 * through them; then the events go, plain ones take their place, and the
 * same loop replays whole. */
#include <cuda.h>

#include "common.h"

enum { N = 256, ITERS = 40 };

static void step(cudaStream_t a, cudaStream_t b, cudaEvent_t ea, cudaEvent_t eb, float *x, float *y, float *z,
                 int it)
{
    axpb(a, x, 0.5f, 0.1f * (float)(it % 5), N);
    acc(a, y, x, 0.25f, N);
    CK(cudaEventRecord(ea, a));
    CK(cudaStreamWaitEvent(b, ea, 0));
    mix(b, z, x, y, N);
    CK(cudaEventRecord(eb, b));
    CK(cudaStreamWaitEvent(a, eb, 0));
    sq(a, y, N);
    CK(cudaStreamSynchronize(a));
}

int main(void)
{
    register_kernels();
    cudaStream_t a, b;
    CK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
    float *x = dev_alloc_init(N, 1.0f), *y = dev_alloc_init(N, 0.5f), *z = dev_alloc_init(N, 0.25f);
    cudaEvent_t ea;
    CUevent eb;
    CK(cudaEventCreateWithFlags(&ea, cudaEventInterprocess | cudaEventDisableTiming));
    if (cuEventCreate(&eb, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
        FAIL("cuEventCreate failed");
    for (int it = 0; it < ITERS; it++)
        step(a, b, ea, (cudaEvent_t)eb, x, y, z, it);
    CK(cudaEventDestroy(ea));
    if (cuEventDestroy(eb) != CUDA_SUCCESS)
        FAIL("cuEventDestroy failed");
    CK(cudaEventCreateWithFlags(&ea, cudaEventDisableTiming));
    if (cuEventCreate(&eb, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
        FAIL("cuEventCreate failed");
    for (int it = 0; it < ITERS; it++)
        step(a, b, ea, (cudaEvent_t)eb, x, y, z, it);
    print_dev("y", y, N);
    print_dev("z", z, N);
    return 0;
}
