/* Shared helpers of the scenario programs: error checks, the simulated kernels,
 * launch wrappers and the result printer (FNV-1a hash plus exact float values). */
#ifndef SIM_PROGS_COMMON_H
#define SIM_PROGS_COMMON_H

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "sim.h"

#define CK(x) do { \
    cudaError_t e_ = (x); \
    if (e_ != cudaSuccess) { \
        fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #x, cudaGetErrorName(e_)); \
        exit(1); \
    } \
} while (0)

#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

/* The host's own work: a spin of us microseconds with no call. */
static inline void host_work(long us)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do
        clock_gettime(CLOCK_MONOTONIC, &t);
    while ((t.tv_sec - t0.tv_sec) * 1000000L + (t.tv_nsec - t0.tv_nsec) / 1000 < us);
}

/* A driver entry point as libraries find one: through cuGetProcAddress
 * (CUDA 13's), from libcuda.so.1 loaded at run time. */
static inline void *driver_fn(const char *name)
{
    typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
    static gpa_fn gpa;
    if (!gpa) {
        void *h = dlopen("libcuda.so.1", RTLD_NOW);
        gpa = h ? (gpa_fn)dlsym(h, "cuGetProcAddress_v2") : NULL;
        if (!gpa)
            FAIL("no cuGetProcAddress_v2");
    }
    void *f = NULL;
    CUdriverProcAddressQueryResult st;
    if (gpa(name, &f, 13000, 0, &st) != CUDA_SUCCESS || !f)
        FAIL("no %s", name);
    return f;
}

/* What nvcc-generated launch code calls; C headers do not declare them. */
cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *func);
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,
                               cudaStream_t stream);
cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
                                    size_t sharedMem, cudaStream_t stream);
#ifdef CUDA_API_PER_THREAD_DEFAULT_STREAM
#define LAUNCH_BY_HANDLE __cudaLaunchKernel_ptsz
#else
#define LAUNCH_BY_HANDLE __cudaLaunchKernel
#endif

/* Kernels cover grid.x * block.x elements (clipped to n), like a real
 * one-thread-per-element kernel, so the launch shape matters. */
static inline int cover(const sim_launch *l, int n)
{
    long c = (long)l->grid.x * l->block.x;
    return c < n ? (int)c : n;
}

/* y = y * a + b */
static void k_axpb(const sim_launch *l, void **a)
{
    float *y = *(float **)a[0];
    float m = *(float *)a[1], b = *(float *)a[2];
    int n = cover(l, *(int *)a[3]);
    for (int i = 0; i < n; i++)
        y[i] = y[i] * m + b;
}

/* dst = dst * 0.5 + src * s */
static void k_acc(const sim_launch *l, void **a)
{
    float *d = *(float **)a[0];
    const float *s = *(const float **)a[1];
    float m = *(float *)a[2];
    int n = cover(l, *(int *)a[3]);
    for (int i = 0; i < n; i++)
        d[i] = d[i] * 0.5f + s[i] * m;
}

/* dst = a * 0.75 + b * 1.25 + i * 1e-3 */
static void k_mix(const sim_launch *l, void **a)
{
    float *d = *(float **)a[0];
    const float *x = *(const float **)a[1], *y = *(const float **)a[2];
    int n = cover(l, *(int *)a[3]);
    for (int i = 0; i < n; i++)
        d[i] = x[i] * 0.75f + y[i] * 1.25f + (float)i * 1e-3f;
}

/* out[0] = out[0] * 0.9 + sum(x[i] * (i+1)) / n, summed in order */
static void k_reduce(const sim_launch *l, void **a)
{
    float *out = *(float **)a[0];
    const float *x = *(const float **)a[1];
    int n = *(int *)a[2];
    (void)l;
    float s = 0;
    for (int i = 0; i < n; i++)
        s += x[i] * (float)(i + 1);
    out[0] = out[0] * 0.9f + s / (float)n;
}

/* A bounded expanding map onto [0, 1): values stay finite and keep their
 * history, so any reordering around it shows up in the output. */
static void k_sq(const sim_launch *l, void **a)
{
    float *y = *(float **)a[0];
    int n = cover(l, *(int *)a[1]);
    for (int i = 0; i < n; i++) {
        float v = y[i] * y[i] * 0.25f + y[i] * 1.7f + 0.3f;
        v -= (float)(long long)v;
        y[i] = v < 0 ? v + 1.0f : v;
    }
}

/* y = y * 0.5 + shmem in KiB / 1000: a launch's dynamic shared memory shows
 * (for the programs that change its limit; register_shm_kernel). */
static inline void k_shm(const sim_launch *l, void **a)
{
    float *y = *(float **)a[0];
    int n = cover(l, *(int *)a[1]);
    for (int i = 0; i < n; i++)
        y[i] = y[i] * 0.5f + (float)(l->shmem / 1024) * 0.001f;
}

static inline void register_shm_kernel(void)
{
    static const size_t sz[] = { sizeof(float *), sizeof(int) };
    if (simRegisterKernel(k_shm, "k_shm", 2, sz))
        FAIL("simRegisterKernel failed");
}

static void register_kernels(void)
{
    static const size_t axpb[] = { sizeof(float *), sizeof(float), sizeof(float), sizeof(int) };
    static const size_t acc[] = { sizeof(float *), sizeof(float *), sizeof(float), sizeof(int) };
    static const size_t mix[] = { sizeof(float *), sizeof(float *), sizeof(float *), sizeof(int) };
    static const size_t red[] = { sizeof(float *), sizeof(float *), sizeof(int) };
    static const size_t sq[] = { sizeof(float *), sizeof(int) };
    if (simRegisterKernel(k_axpb, "k_axpb", 4, axpb) || simRegisterKernel(k_acc, "k_acc", 4, acc) ||
        simRegisterKernel(k_mix, "k_mix", 4, mix) || simRegisterKernel(k_reduce, "k_reduce", 3, red) ||
        simRegisterKernel(k_sq, "k_sq", 2, sq))
        FAIL("simRegisterKernel failed");
}

static inline dim3 d1(unsigned x)
{
    dim3 d = { x, 1, 1 };
    return d;
}

#define BLOCK 64u
static inline unsigned grid_for(int n)
{
    return (unsigned)((n + (int)BLOCK - 1) / (int)BLOCK);
}

static inline void axpb(cudaStream_t s, float *y, float m, float b, int n)
{
    void *args[] = { &y, &m, &b, &n };
    CK(cudaLaunchKernel((const void *)k_axpb, d1(grid_for(n)), d1(BLOCK), args, 0, s));
}

static inline void acc(cudaStream_t s, float *d, const float *src, float m, int n)
{
    void *args[] = { &d, &src, &m, &n };
    CK(cudaLaunchKernel((const void *)k_acc, d1(grid_for(n)), d1(BLOCK), args, 0, s));
}

static inline void mix(cudaStream_t s, float *d, const float *x, const float *y, int n)
{
    void *args[] = { &d, &x, &y, &n };
    CK(cudaLaunchKernel((const void *)k_mix, d1(grid_for(n)), d1(BLOCK), args, 0, s));
}

static inline void reduce(cudaStream_t s, float *out, const float *x, int n)
{
    void *args[] = { &out, &x, &n };
    CK(cudaLaunchKernel((const void *)k_reduce, d1(1), d1(1), args, 0, s));
}

static inline void sq(cudaStream_t s, float *y, int n)
{
    void *args[] = { &y, &n };
    CK(cudaLaunchKernel((const void *)k_sq, d1(grid_for(n)), d1(BLOCK), args, 0, s));
}

/* A memory pool of the program's, on the device or in pinned host memory
 * (a host-located pool). */
static inline cudaMemPool_t pool_at(enum cudaMemLocationType where)
{
    cudaMemPool_t pool;
    struct cudaMemPoolProps pp;
    memset(&pp, 0, sizeof pp);
    pp.allocType = cudaMemAllocationTypePinned;
    pp.location.type = where;
    CK(cudaMemPoolCreate(&pool, &pp));
    return pool;
}

static inline cudaMemPool_t host_pool(void)
{
    return pool_at(cudaMemLocationTypeHost);
}

/* A solver step that reads its residual back into pageable memory: the
 * copy returns with the value in it. */
static inline float residual_step(cudaStream_t s, float *x, float *r, int n, float b)
{
    float res = 0.0f;
    axpb(s, x, 0.9f, b, n);
    sq(s, x, n);
    reduce(s, r, x, n);
    CK(cudaMemcpyAsync(&res, r, sizeof(float), cudaMemcpyDeviceToHost, s));
    return res;
}

/* The same launches through the kernel handle, as nvcc 13 code does. */
static inline cudaKernel_t handle_of(const void *fn)
{
    cudaKernel_t k;
    CK(__cudaGetKernel(&k, fn));
    return k;
}

static inline void axpb_h(cudaStream_t s, float *y, float m, float b, int n)
{
    static cudaKernel_t k;
    if (!k)
        k = handle_of((const void *)k_axpb);
    void *args[] = { &y, &m, &b, &n };
    CK(LAUNCH_BY_HANDLE(k, d1(grid_for(n)), d1(BLOCK), args, 0, s));
}

static inline void acc_h(cudaStream_t s, float *d, const float *src, float m, int n)
{
    static cudaKernel_t k;
    if (!k)
        k = handle_of((const void *)k_acc);
    void *args[] = { &d, &src, &m, &n };
    CK(LAUNCH_BY_HANDLE(k, d1(grid_for(n)), d1(BLOCK), args, 0, s));
}

static inline uint64_t fnv1a(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static inline void print_floats(const char *name, const float *h, size_t n)
{
    printf("%s fnv=%016llx n=%zu", name, (unsigned long long)fnv1a(h, n * sizeof(float)), n);
    size_t show[] = { 0, 1, n / 2, n - 1 };
    for (size_t i = 0; i < 4; i++)
        if (show[i] < n)
            printf(" [%zu]=%a", show[i], (double)h[show[i]]);
    printf("\n");
}

/* Copies a device buffer back (blocking) and prints it. */
static inline void print_dev(const char *name, const float *d, size_t n)
{
    float *h = malloc(n * sizeof(float));
    if (!h)
        FAIL("out of host memory");
    CK(cudaMemcpy(h, d, n * sizeof(float), cudaMemcpyDeviceToHost));
    print_floats(name, h, n);
    free(h);
}

static inline float *dev_alloc_init(size_t n, float base)
{
    float *d, *h = malloc(n * sizeof(float));
    if (!h)
        FAIL("out of host memory");
    for (size_t i = 0; i < n; i++)
        h[i] = base + (float)i * 0.01f;
    CK(cudaMalloc((void **)&d, n * sizeof(float)));
    CK(cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice));
    free(h);
    return d;
}

/* The usual start of a scenario: the kernels registered, a stream, 4096
 * floats y from 0.5 and a device scalar r. */
static inline cudaStream_t start_y_r(float **y, float **r)
{
    register_kernels();
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    *y = dev_alloc_init(4096, 0.5f);
    CK(cudaMalloc((void **)r, sizeof(float)));
    return s;
}

/* One step of a loop around k_shm's launch with 40 KiB of dynamic shared
 * memory, which fails where the kernel's limit is lower: the launch's and
 * the last error's codes are printed, so a replay that hides a failure or
 * invents one shows. */
static inline void shm_step(cudaStream_t s, float *y, int n, int it)
{
    void *args[] = { &y, &n };
    axpb(s, y, 0.9f, 0.01f * (float)(it % 3), n);
    cudaError_t e = cudaLaunchKernel((const void *)k_shm, d1(1), d1((unsigned)n), args, 40 * 1024, s);
    cudaError_t get = cudaGetLastError();
    sq(s, y, n);
    printf("it=%d launch %d [%d]\n", it, (int)e, (int)get);
    CK(cudaStreamSynchronize(s));
}

#endif
