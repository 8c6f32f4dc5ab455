/* Scenario: stream callbacks (cudaStreamAddCallback, and cuStreamAddCallback
 * found as libraries find it) after each iteration's work. The runtime's
 * callback logs the first element of a read-back into pinned memory made
 * just before it, and the stream and status it was given; the driver's,
 * one of two tags. The log is printed at the end. */
#include "common.h"

enum { N = 96, ITERS = 60 };
static unsigned logv[ITERS * 2];
static int nlog;
static float *pin;
static cudaStream_t stream;
static int tags[2] = { 7, 11 };

static void CUDART_CB rt_cb(cudaStream_t s, cudaError_t st, void *p)
{
    unsigned u;
    memcpy(&u, &pin[*(int *)p], sizeof u);
    logv[nlog++] = s == stream && st == cudaSuccess ? u : 0xdeadu;
}

static void CUDA_CB drv_cb(CUstream s, CUresult st, void *p)
{
    logv[nlog++] = (CUstream)stream == s && st == CUDA_SUCCESS ? (unsigned)*(int *)p : 0xbeefu;
}

int main(void)
{
    register_kernels();
    CUresult (*add_cb)(CUstream, CUstreamCallback, void *, unsigned) =
        (CUresult(*)(CUstream, CUstreamCallback, void *, unsigned))driver_fn("cuStreamAddCallback");
    if (!add_cb)
        FAIL("cuStreamAddCallback not found");
    CK(cudaStreamCreate(&stream));
    CK(cudaMallocHost((void **)&pin, 2 * sizeof(float)));
    float *y = dev_alloc_init(N, 0.25f);
    static int slot[2] = { 0, 1 };
    for (int it = 0; it < ITERS; it++) {
        axpb(stream, y, 0.5f, 0.125f * (float)(it % 2), N);
        sq(stream, y, N);
        CK(cudaMemcpyAsync(&pin[it % 2], y + it % N, sizeof(float), cudaMemcpyDeviceToHost, stream));
        CK(cudaStreamAddCallback(stream, rt_cb, &slot[it % 2], 0));
        axpb(stream, y, 0.75f, 0.25f, N);
        if (add_cb((CUstream)stream, drv_cb, &tags[it % 2], 0) != CUDA_SUCCESS)
            FAIL("cuStreamAddCallback failed");
        if (it % 10 == 9)
            CK(cudaStreamSynchronize(stream));
    }
    CK(cudaStreamSynchronize(stream));
    if (cudaStreamAddCallback(stream, rt_cb, &slot[0], 1) == cudaSuccess)
        FAIL("a callback with flags was taken");
    printf("log n=%d:", nlog);
    for (int i = 0; i < nlog; i++)
        printf(" %08x", logv[i]);
    printf("\n");
    print_dev("y", y, N);
    return 0;
}
