/* Scenario: a program with a static runtime. It links no libcudart: like
 * nvcc's default -cudart static, it reaches the driver through dlopen and
 * cuGetProcAddress, so cgraft sees its work at the driver level only.
 * STATIC_CUDA_VERSION sets the version its runtime asks for (13000 by
 * default): a toolkit newer than cgraft's headers asks for a newer one. */
#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda.h>

#include "sim.h"

#define CKD(x)                                                                  \
    do {                                                                        \
        CUresult r_ = (x);                                                      \
        if (r_ != CUDA_SUCCESS) {                                               \
            fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #x, (int)r_); \
            exit(1);                                                            \
        }                                                                       \
    } while (0)

static CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                          unsigned, CUstream, void **, void **);
static CUresult (*h2d)(CUdeviceptr, const void *, size_t, CUstream);
static CUresult (*d2h)(void *, CUdeviceptr, size_t, CUstream);
static CUresult (*ssync)(CUstream);
static CUresult (*screate)(CUstream *, unsigned);
static CUresult (*alloc)(CUdeviceptr *, size_t);
static CUresult (*ecreate)(CUevent *, unsigned);
static CUresult (*erecord)(CUevent, CUstream);
static CUresult (*swait)(CUstream, CUevent, unsigned);
static CUresult (*memset8)(CUdeviceptr, unsigned char, size_t, CUstream);
static CUresult (*d2d)(CUdeviceptr, CUdeviceptr, size_t, CUstream);

static void k_axpb(const sim_launch *l, void **a)
{
    float *y = *(float **)a[0];
    float m = *(float *)a[1], b = *(float *)a[2];
    int n = *(int *)a[3];
    (void)l;
    for (int i = 0; i < n; i++)
        y[i] = y[i] * m + b;
}

static void k_sq(const sim_launch *l, void **a)
{
    float *y = *(float **)a[0];
    int n = *(int *)a[1];
    (void)l;
    for (int i = 0; i < n; i++) {
        float v = y[i] * y[i] * 0.25f + y[i] * 1.7f + 0.3f;
        v -= (float)(long long)v;
        y[i] = v < 0 ? v + 1.0f : v;
    }
}

static void axpb(CUstream s, CUdeviceptr y, float m, float b, int n)
{
    void *args[] = { &y, &m, &b, &n };
    CKD(launch((CUfunction)(void *)k_axpb, 1, 1, 1, 64, 1, 1, 0, s, args, NULL));
}

static void sq(CUstream s, CUdeviceptr y, int n)
{
    void *args[] = { &y, &n };
    CKD(launch((CUfunction)(void *)k_sq, 1, 1, 1, 64, 1, 1, 0, s, args, NULL));
}

int main(void)
{
    enum { N = 96, ITERS = 30 };
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    if (!h) {
        fprintf(stderr, "no libcuda.so.1\n");
        return 1;
    }
    CUresult (*gpa)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *) =
        (CUresult(*)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *))
            dlsym(h, "cuGetProcAddress_v2");
    CUresult (*init)(unsigned) = (CUresult(*)(unsigned))dlsym(h, "cuInit");
    if (!gpa || !init)
        return 1;
    CUdriverProcAddressQueryResult st;
    const char *ver = getenv("STATIC_CUDA_VERSION");
    int v = ver ? atoi(ver) : 13000;
    CKD(gpa("cuLaunchKernel", (void **)&launch, v, 0, &st));
    CKD(gpa("cuMemcpyHtoDAsync", (void **)&h2d, v, 0, &st));
    CKD(gpa("cuMemcpyDtoHAsync", (void **)&d2h, v, 0, &st));
    CKD(gpa("cuStreamSynchronize", (void **)&ssync, v, 0, &st));
    CKD(gpa("cuStreamCreate", (void **)&screate, v, 0, &st));
    CKD(gpa("cuMemAlloc", (void **)&alloc, v, 0, &st));
    /* Asked, like vendor libraries do, for the version each appeared in. */
    CKD(gpa("cuEventCreate", (void **)&ecreate, 2000, 0, &st));
    CKD(gpa("cuEventRecord", (void **)&erecord, 2000, 0, &st));
    CKD(gpa("cuStreamWaitEvent", (void **)&swait, 3020, 0, &st));
    CKD(gpa("cuMemsetD8Async", (void **)&memset8, 3020, 0, &st));
    CKD(gpa("cuMemcpyDtoDAsync", (void **)&d2d, 3020, 0, &st));
    CKD(init(0));
    static const size_t axpb_sz[] = { sizeof(float *), sizeof(float), sizeof(float), sizeof(int) };
    static const size_t sq_sz[] = { sizeof(float *), sizeof(int) };
    if (simRegisterKernel(k_axpb, "k_axpb", 4, axpb_sz) || simRegisterKernel(k_sq, "k_sq", 2, sq_sz))
        return 1;
    CUstream s, s2;
    CKD(screate(&s, 0));
    CKD(screate(&s2, 0));
    CUevent fork, join;
    CKD(ecreate(&fork, 0));
    CKD(ecreate(&join, 0));
    CUdeviceptr y, z;
    CKD(alloc(&y, N * sizeof(float)));
    CKD(alloc(&z, N * sizeof(float)));
    float host[N];
    for (int i = 0; i < N; i++)
        host[i] = 0.25f + (float)i / N;
    CKD(h2d(y, host, sizeof host, s));
    for (int it = 0; it < ITERS; it++) {
        axpb(s, y, 0.9f, 0.1f * (float)(it % 4), N);
        sq(s, y, N);
        axpb(s, y, 1.1f, -0.05f, N);
        /* A side stream copies y after a fork, works on the copy, joins. */
        CKD(erecord(fork, s));
        CKD(swait(s2, fork, 0));
        CKD(memset8(z, 0, N * sizeof(float), s2));
        CKD(d2d(z, y, N * sizeof(float) / 2, s2));
        axpb(s2, z, 0.5f, 0.25f, N);
        CKD(erecord(join, s2));
        CKD(swait(s, join, 0));
        sq(s, y, N);
        if (it % 3 == 2)
            CKD(ssync(s));
    }
    uint64_t f = 1469598103934665603ull;
    const CUdeviceptr outs[] = { y, z };
    for (int b = 0; b < 2; b++) {
        CKD(d2h(host, outs[b], sizeof host, s));
        CKD(ssync(s));
        for (size_t i = 0; i < sizeof host; i++)
            f = (f ^ ((unsigned char *)host)[i]) * 1099511628211ull;
    }
    printf("y,z fnv=%016" PRIx64 " z[0]=%a z[%d]=%a\n", f, host[0], N - 1, host[N - 1]);
    return 0;
}
