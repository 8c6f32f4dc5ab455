/* Class scenario: a program linked against libcuda itself (-lcuda), no
 * runtime: a module's kernels launched with cuLaunchKernel, stream-ordered
 * memsets, copies into pinned memory, syncs by symbol. */
#include <cuda.h>

#include "common.h"

#define CKD(x) do { \
    CUresult r_ = (x); \
    if (r_ != CUDA_SUCCESS) \
        FAIL("%s:%d: %s failed: %d", __FILE__, __LINE__, #x, (int)r_); \
} while (0)

enum { N = 160, ITERS = 30 };

static unsigned fbits(float f)
{
    unsigned u;
    memcpy(&u, &f, sizeof(u));
    return u;
}

static void launch(CUfunction f, CUstream s, void **args, int n)
{
    CKD(cuLaunchKernel(f, grid_for(n), 1, 1, BLOCK, 1, 1, 0, s, args, NULL));
}

int main(void)
{
    CKD(cuInit(0));
    CUdevice dev;
    CUcontext ctx;
    CKD(cuDeviceGet(&dev, 0));
    CKD(cuDevicePrimaryCtxRetain(&ctx, dev));
    CKD(cuCtxSetCurrent(ctx));
    register_kernels();
    CUmodule mod;
    CUfunction f_axpb, f_sq, f_mix;
    CKD(cuModuleLoadData(&mod, "sim:k_axpb,k_sq,k_mix"));
    CKD(cuModuleGetFunction(&f_axpb, mod, "k_axpb"));
    CKD(cuModuleGetFunction(&f_sq, mod, "k_sq"));
    CKD(cuModuleGetFunction(&f_mix, mod, "k_mix"));
    CUstream s;
    CKD(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr y, z, w;
    CKD(cuMemAlloc(&y, N * sizeof(float)));
    CKD(cuMemAlloc(&z, N * sizeof(float)));
    CKD(cuMemAlloc(&w, N * sizeof(float)));
    float *pin, host[N], log[ITERS / 3];
    CKD(cuMemAllocHost((void **)&pin, N * sizeof(float)));
    for (int i = 0; i < N; i++)
        host[i] = 0.125f + (float)i / N;
    CKD(cuMemcpyHtoD(y, host, sizeof(host)));
    int n = N;
    for (int it = 0; it < ITERS; it++) {
        float m = 0.9f, b = 0.05f * (float)(it % 3);
        void *a1[] = { &y, &m, &b, &n };
        launch(f_axpb, s, a1, N);
        void *a2[] = { &y, &n };
        launch(f_sq, s, a2, N);
        CKD(cuMemsetD32Async(z, fbits(0.25f * (float)(it % 3)), N, s));
        void *a3[] = { &w, &y, &z, &n };
        launch(f_mix, s, a3, N);
        void *a4[] = { &w, &n };
        launch(f_sq, s, a4, N);
        CKD(cuMemcpyDtoDAsync(z, w, N * sizeof(float), s));
        if (it % 3 == 2) {
            CKD(cuMemcpyDtoHAsync(pin, w, N * sizeof(float), s));
            CKD(cuStreamSynchronize(s));
            log[it / 3] = pin[it % N] + pin[N - 1];
        }
    }
    CKD(cuMemcpyDtoHAsync(pin, y, N * sizeof(float), s));
    CKD(cuStreamSynchronize(s));
    print_floats("y", pin, N);
    CKD(cuMemcpyDtoHAsync(pin, z, N * sizeof(float), s));
    CKD(cuStreamSynchronize(s));
    print_floats("z", pin, N);
    print_floats("log", log, ITERS / 3);
    CKD(cuModuleUnload(mod));
    CKD(cuMemFreeHost(pin));
    CKD(cuMemFree(y));
    CKD(cuMemFree(z));
    CKD(cuMemFree(w));
    CKD(cuStreamDestroy(s));
    CKD(cuDevicePrimaryCtxRelease(dev));
    return 0;
}
