/* libsimblas: a cuBLAS-like library for the simulated device. It links neither
 * runtime nor driver: it finds the driver by dlopen and cuGetProcAddress, as vendor libraries do. */
#define _GNU_SOURCE
/* Exports stay exported even if the parent project builds with -fvisibility=hidden. */
#pragma GCC visibility push(default)
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "sim.h"
#include "simblas.h"

static struct {
    __typeof__(&cuLaunchKernel) launch;
    __typeof__(&cuLaunchKernelEx) launch_ex;
    int ok;
} B;

static pthread_once_t b_once = PTHREAD_ONCE_INIT;

static void k_axpy(const sim_launch *l, void **a)
{
    int n = *(int *)a[0];
    float alpha = *(float *)a[1];
    const float *x = *(const float **)a[2];
    float *y = *(float **)a[3];
    (void)l;
    for (int i = 0; i < n; i++)
        y[i] += alpha * x[i];
}

static void k_scal(const sim_launch *l, void **a)
{
    int n = *(int *)a[0];
    float alpha = *(float *)a[1];
    float *x = *(float **)a[2];
    (void)l;
    for (int i = 0; i < n; i++)
        x[i] *= alpha;
}

static void k_dot(const sim_launch *l, void **a)
{
    int n = *(int *)a[0];
    const float *x = *(const float **)a[1], *y = *(const float **)a[2];
    float *r = *(float **)a[3];
    (void)l;
    float s = 0;
    for (int i = 0; i < n; i++)
        s += x[i] * y[i];
    *r = s;
}

static void b_load(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!h)
        return;
    __typeof__(&cuGetProcAddress_v2) gpa = (__typeof__(&cuGetProcAddress_v2))dlsym(h, "cuGetProcAddress_v2");
    int (*reg)(sim_kernel_fn, const char *, int, const size_t *) =
        (int (*)(sim_kernel_fn, const char *, int, const size_t *))dlsym(h, "simRegisterKernel");
    if (!gpa || !reg)
        return;
    void *p1 = NULL, *p2 = NULL;
    CUdriverProcAddressQueryResult st;
    /* Like cuBLAS, ask for the version each entry point appeared in. */
    if (gpa("cuLaunchKernel", &p1, 4000, CU_GET_PROC_ADDRESS_DEFAULT, &st) != CUDA_SUCCESS ||
        gpa("cuLaunchKernelEx", &p2, 11060, CU_GET_PROC_ADDRESS_DEFAULT, &st) != CUDA_SUCCESS)
        return;
    B.launch = (__typeof__(&cuLaunchKernel))p1;
    B.launch_ex = (__typeof__(&cuLaunchKernelEx))p2;
    static const size_t axpy[] = { sizeof(int), sizeof(float), sizeof(void *), sizeof(void *) };
    static const size_t scal[] = { sizeof(int), sizeof(float), sizeof(void *) };
    static const size_t dot[] = { sizeof(int), sizeof(void *), sizeof(void *), sizeof(void *) };
    if (reg(k_axpy, "simblas_axpy", 4, axpy) || reg(k_scal, "simblas_scal", 3, scal) ||
        reg(k_dot, "simblas_dot", 4, dot))
        return;
    B.ok = 1;
}

static int ready(void)
{
    pthread_once(&b_once, b_load);
    return B.ok;
}

/* A host function pointer is a valid CUfunction for the simulated driver. */
static CUfunction fn(sim_kernel_fn k)
{
    CUfunction f;
    void *p = (void *)k;
    memcpy(&f, &p, sizeof(f));
    return f;
}

int simblas_axpy(CUstream s, int n, float alpha, const float *x, float *y)
{
    if (!ready())
        return -ENOSYS;
    void *args[] = { &n, &alpha, &x, &y };
    return B.launch(fn(k_axpy), 1, 1, 1, 1, 1, 1, 0, s, args, NULL) == CUDA_SUCCESS ? 0 : -EIO;
}

/* Packed at natural alignment: int at 0, float at 4, pointer at 8. */
int simblas_scal(CUstream s, int n, float alpha, float *x)
{
    if (!ready())
        return -ENOSYS;
    unsigned char buf[16];
    size_t size = sizeof(buf);
    memcpy(buf, &n, 4);
    memcpy(buf + 4, &alpha, 4);
    memcpy(buf + 8, &x, 8);
    void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                      CU_LAUNCH_PARAM_END };
    return B.launch(fn(k_scal), 1, 1, 1, 1, 1, 1, 0, s, NULL, extra) == CUDA_SUCCESS ? 0 : -EIO;
}

int simblas_dot(CUstream s, int n, const float *x, const float *y, float *result)
{
    if (!ready())
        return -ENOSYS;
    CUlaunchAttribute attr[1];
    memset(attr, 0, sizeof(attr));
    attr[0].id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
    attr[0].value.priority = 0;
    CUlaunchConfig cfg = { .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 32, .blockDimY = 1,
                           .blockDimZ = 1, .sharedMemBytes = 0, .hStream = s, .attrs = attr, .numAttrs = 1 };
    void *args[] = { &n, &x, &y, &result };
    return B.launch_ex(&cfg, fn(k_dot), args, NULL) == CUDA_SUCCESS ? 0 : -EIO;
}
