/* Snippet library: exercises one intercepted API family (chosen with -DSNIP_<FAMILY>)
 * from a constructor, before main and before any interposer init may have run. */
/* Exported even if the parent project builds with -fvisibility=hidden. */
#pragma GCC visibility push(default)
#include <cuda.h>

#include "common.h"

double snip_ctor_result = -1;
double snip_run(void);

__attribute__((unused)) static void hostfn(void *p)
{
    *(double *)p += 1.5;
}

double snip_run(void)
{
    enum { N = 64 };
    register_kernels();
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *y = dev_alloc_init(N, 0.5f);
    double extra = 0;
#if defined(SNIP_LAUNCH)
    for (int i = 0; i < 4; i++)
        axpb(s, y, 0.5f, 0.25f * (float)i, N);
#elif defined(SNIP_HANDLE)
    for (int i = 0; i < 4; i++)
        axpb_h(s, y, 0.5f, 0.25f * (float)i, N);
#elif defined(SNIP_LAUNCHEX)
    cudaLaunchAttribute attr = { .id = cudaLaunchAttributePriority, .val = { .priority = 0 } };
    cudaLaunchConfig_t cfg = { .gridDim = d1(1), .blockDim = d1(N), .dynamicSmemBytes = 0, .stream = s,
                               .attrs = &attr, .numAttrs = 1 };
    for (int i = 0; i < 4; i++) {
        float m = 0.5f, b = 0.25f * (float)i;
        int n = N;
        void *args[] = { &y, &m, &b, &n };
        CK(cudaLaunchKernelExC(&cfg, (const void *)k_axpb, args));
        CK(cudaLaunchCooperativeKernel((const void *)k_sq, d1(1), d1(N), (void *[]){ &y, &n }, 0, s));
    }
#elif defined(SNIP_MEMCPY)
    float hh[N], *z;
    CK(cudaMalloc((void **)&z, N * sizeof(float)));
    for (int i = 0; i < N; i++)
        hh[i] = (float)i;
    CK(cudaMemcpyAsync(z, hh, sizeof(hh), cudaMemcpyHostToDevice, s));
    CK(cudaMemcpyAsync(y, z, sizeof(hh), cudaMemcpyDeviceToDevice, s));
    CK(cudaMemcpy2DAsync(y, 8, z, 4, 4, N / 2, cudaMemcpyDefault, s));
    CK(cudaMemcpyAsync(hh, y, sizeof(hh), cudaMemcpyDefault, s));
    extra = hh[N - 2];
#elif defined(SNIP_MEMSET)
    CK(cudaMemsetAsync(y, 0x40, N * sizeof(float), s));
    axpb(s, y, 0.5f, 1.0f, N);
    CK(cudaMemset(y, 0, 4));
#elif defined(SNIP_EVENT)
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    CK(cudaEventRecord(a, s));
    axpb(s, y, 0.5f, 1.0f, N);
    CK(cudaEventRecordWithFlags(b, s, 0));
    CK(cudaEventSynchronize(b));
    CK(cudaEventQuery(b));
    float ms = -1;
    CK(cudaEventElapsedTime(&ms, a, b));
    extra = ms >= 0;
#elif defined(SNIP_HOSTFN)
    axpb(s, y, 0.5f, 1.0f, N);
    CK(cudaLaunchHostFunc(s, hostfn, &extra));
    CK(cudaStreamSynchronize(s));
#elif defined(SNIP_SYNC)
    axpb(s, y, 0.5f, 1.0f, N);
    while (cudaStreamQuery(s) == cudaErrorNotReady)
        ;
    axpb(s, y, 0.5f, 1.0f, N);
    CK(cudaDeviceSynchronize());
#elif defined(SNIP_GRAPH)
    cudaGraph_t g;
    cudaGraphExec_t ge;
    cudaGraphNode_t n1, n2;
    float m = 0.5f, b = 1.0f;
    int n = N;
    void *args[] = { &y, &m, &b, &n };
    struct cudaKernelNodeParams kp = { .func = (void *)k_axpb, .gridDim = d1(1), .blockDim = d1(N),
                                       .sharedMemBytes = 0, .kernelParams = args, .extra = NULL };
    void *sargs[] = { &y, &n };
    struct cudaKernelNodeParams sp = { .func = (void *)k_sq, .gridDim = d1(1), .blockDim = d1(N),
                                       .kernelParams = sargs };
    CK(cudaGraphCreate(&g, 0));
    CK(cudaGraphAddKernelNode(&n1, g, NULL, 0, &kp));
    CK(cudaGraphAddKernelNode(&n2, g, &n1, 1, &sp));
    CK(cudaGraphInstantiate(&ge, g, 0));
    CK(cudaGraphUpload(ge, s));
    for (int i = 0; i < 3; i++) {
        b = (float)i;
        CK(cudaGraphExecKernelNodeSetParams(ge, n1, &kp));
        CK(cudaGraphLaunch(ge, s));
    }
#elif defined(SNIP_CAPTURE)
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    axpb(s, y, 0.5f, 1.0f, N);
    sq(s, y, N);
    CK(cudaStreamEndCapture(s, &g));
    CK(cudaGraphInstantiateWithFlags(&ge, g, 0));
    CK(cudaGraphLaunch(ge, s));
    CK(cudaGraphLaunch(ge, s));
#elif defined(SNIP_DRIVER)
    CUfunction f;
    CK(cudaGetKernel((cudaKernel_t *)&f, (const void *)k_axpb));
    float m = 0.5f, b = 1.0f;
    int n = N;
    void *args[] = { &y, &m, &b, &n };
    if (cuLaunchKernel(f, 1, 1, 1, N, 1, 1, 0, s, args, NULL) != CUDA_SUCCESS)
        FAIL("cuLaunchKernel failed");
    size_t off = 0, size = 0;
    CK(cudaFuncGetParamInfo((const void *)k_axpb, 3, &off, &size));
    extra = (double)(off * 100 + size);
#elif defined(SNIP_ALLOC)
    float *t;
    CK(cudaMallocAsync((void **)&t, N * sizeof(float), s));
    CK(cudaMemcpyAsync(t, y, N * sizeof(float), cudaMemcpyDeviceToDevice, s));
    acc(s, y, t, 2.0f, N);
    CK(cudaFreeAsync(t, s));
#else
#error "define one SNIP_<FAMILY>"
#endif
    CK(cudaStreamSynchronize(s));
    float h[N];
    CK(cudaMemcpy(h, y, sizeof(h), cudaMemcpyDeviceToHost));
    CK(cudaFree(y));
    CK(cudaStreamDestroy(s));
    double r = extra;
    for (int i = 0; i < N; i++)
        r += h[i] * (double)(i + 1);
    return r;
}

__attribute__((constructor)) static void snip_ctor(void)
{
    snip_ctor_result = snip_run();
}
