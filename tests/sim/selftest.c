/* Self-tests of the simulated device: that its scheduler really randomises and
 * really keeps the ordering rules the scenario tests rely on. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>

#include "progs/common.h"
#include "sim_i.h"

#define CHECK(cond, ...) do { if (!(cond)) { fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } } while (0)

enum { N = 64 };

static void host_axpb(float *y, float m, float b, int n)
{
    for (int i = 0; i < n; i++)
        y[i] = y[i] * m + b;
}

static void host_acc(float *d, const float *s, float m, int n)
{
    for (int i = 0; i < n; i++)
        d[i] = d[i] * 0.5f + s[i] * m;
}

static void init(float *h, float base)
{
    for (int i = 0; i < N; i++)
        h[i] = base + (float)i * 0.01f;
}

/* Child of 'randomises': stream 2 reads what stream 1 writes, without a wait. */
static int racy_child(void)
{
    register_kernels();
    cudaStream_t s1, s2;
    CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    float *a = dev_alloc_init(N, 1.0f), *b = dev_alloc_init(N, 0.0f);
    for (int it = 0; it < 5; it++) {
        axpb(s1, a, 0.5f, 1.0f, N);
        acc(s2, b, a, 1.0f, N);   /* the missing cudaStreamWaitEvent */
    }
    CK(cudaDeviceSynchronize());
    float h[N];
    CK(cudaMemcpy(h, b, sizeof(h), cudaMemcpyDeviceToHost));
    printf("%016llx\n", (unsigned long long)fnv1a(h, sizeof(h)));
    return 0;
}

static int t_randomises(const char *self)
{
    char seen[20][32];
    int distinct = 0;
    for (int seed = 1; seed <= 20; seed++) {
        char cmd[4200];
        snprintf(cmd, sizeof(cmd), "SIM_SEED=%d '%s' racy-child", seed, self);
        FILE *p = popen(cmd, "r");
        CHECK(p, "popen failed");
        char line[32] = "";
        CHECK(fgets(line, sizeof(line), p), "child printed nothing");
        CHECK(pclose(p) == 0, "child failed");
        int j;
        for (j = 0; j < distinct; j++)
            if (!strcmp(seen[j], line))
                break;
        if (j == distinct)
            strcpy(seen[distinct++], line);
    }
    CHECK(distinct >= 2, "a missing event wait gave the same result for 20 seeds: no randomisation");
    printf("randomises: %d distinct results over 20 seeds\n", distinct);
    return 0;
}

static int t_legacy_barrier(void)
{
    register_kernels();
    cudaStream_t blk, nb;
    CK(cudaStreamCreate(&blk));
    CK(cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking));
    float ha[N], hb[N], got[N];
    init(ha, 1.0f);
    init(hb, 2.0f);
    float *a = dev_alloc_init(N, 1.0f), *b = dev_alloc_init(N, 2.0f);
    for (int it = 0; it < 40; it++) {
        axpb(blk, a, 0.9f, 0.1f, N);     /* legacy op below must wait for this */
        acc(0, b, a, 0.5f, N);
        axpb(blk, b, 1.1f, -0.2f, N);    /* and this must wait for the legacy op */
        acc(cudaStreamLegacy, a, b, 0.25f, N);
        host_axpb(ha, 0.9f, 0.1f, N);
        host_acc(hb, ha, 0.5f, N);
        host_axpb(hb, 1.1f, -0.2f, N);
        host_acc(ha, hb, 0.25f, N);
    }
    CK(cudaStreamSynchronize(0));
    CK(cudaMemcpyAsync(got, a, sizeof(got), cudaMemcpyDeviceToHost, nb));
    CHECK(!memcmp(got, ha, sizeof(got)), "legacy barrier broken (a)");
    CK(cudaMemcpy(got, b, sizeof(got), cudaMemcpyDeviceToHost));
    CHECK(!memcmp(got, hb, sizeof(got)), "legacy barrier broken (b)");
    unsigned flags = 7;
    CK(cudaStreamGetFlags(nb, &flags));
    CHECK(flags == cudaStreamNonBlocking, "flags %u", flags);
    return 0;
}

/* A wait is an action of its stream: a legacy op after a blocking stream's
 * wait on an event waits for that event's work, and a blocking stream's op
 * after a legacy wait does too, with no op of their own in between. */
static int t_legacy_waits(void)
{
    register_kernels();
    cudaStream_t blk, nb;
    cudaEvent_t e;
    CK(cudaStreamCreate(&blk));
    CK(cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking));
    CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    float ha[N], hb[N], got[N];
    init(ha, 1.0f);
    init(hb, 2.0f);
    float *a = dev_alloc_init(N, 1.0f), *b = dev_alloc_init(N, 2.0f);
    for (int it = 0; it < 40; it++) {
        axpb(nb, a, 0.9f, 0.1f, N);
        CK(cudaEventRecord(e, nb));
        CK(cudaStreamWaitEvent(blk, e, 0));
        acc(cudaStreamLegacy, b, a, 0.5f, N); /* after nb's kernel, through blk's wait */
        CK(cudaStreamSynchronize(cudaStreamLegacy));
        axpb(nb, a, 0.5f, 0.25f, N);
        CK(cudaEventRecord(e, nb));
        CK(cudaStreamWaitEvent(cudaStreamLegacy, e, 0));
        acc(blk, b, a, 0.25f, N);               /* after nb's kernel, through the legacy wait */
        CK(cudaStreamSynchronize(blk));
        host_axpb(ha, 0.9f, 0.1f, N);
        host_acc(hb, ha, 0.5f, N);
        host_axpb(ha, 0.5f, 0.25f, N);
        host_acc(hb, ha, 0.25f, N);
    }
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(got, b, sizeof(got), cudaMemcpyDeviceToHost));
    CHECK(!memcmp(got, hb, sizeof(got)), "a blocking stream's wait not seen by the legacy stream, or back");
    return 0;
}

static int t_capture(void)
{
    register_kernels();
    cudaStream_t s, side;
    cudaEvent_t f, j;
    CK(cudaStreamCreate(&s));
    CK(cudaStreamCreate(&side));
    CK(cudaEventCreate(&f));
    CK(cudaEventCreate(&j));
    float *a = dev_alloc_init(N, 1.0f), *b = dev_alloc_init(N, 2.0f);
    float ha[N], hb[N], got[N];
    init(ha, 1.0f);
    init(hb, 2.0f);
    cudaGraph_t g;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    axpb(s, a, 0.5f, 1.0f, N);
    CK(cudaEventRecord(f, s));
    CK(cudaStreamWaitEvent(side, f, 0));
    enum cudaStreamCaptureStatus st;
    CK(cudaStreamIsCapturing(side, &st));
    CHECK(st == cudaStreamCaptureStatusActive, "joined stream not capturing");
    acc(side, b, a, 0.5f, N);
    CK(cudaEventRecord(j, side));
    CK(cudaStreamWaitEvent(s, j, 0));
    acc(s, a, b, 0.25f, N);
    unsigned long long id = 0;
    size_t ndeps = 0;
    const cudaGraphNode_t *deps = NULL;
    cudaGraph_t cg = NULL;
    CK(cudaStreamGetCaptureInfo(s, &st, &id, &cg, &deps, NULL, &ndeps));
    CHECK(st == cudaStreamCaptureStatusActive && id && cg && ndeps == 1 && deps, "capture info");
    CHECK(cudaStreamSynchronize(s) == cudaErrorStreamCaptureUnsupported, "sync during capture must fail");
    (void)cudaGetLastError();
    CK(cudaStreamEndCapture(s, &g));
    CHECK(g == cg, "graph differs from capture info");
    size_t n = 0;
    CK(cudaGraphGetNodes(g, NULL, &n));
    CHECK(n == 3, "captured %zu nodes", n);
    CK(cudaStreamIsCapturing(side, &st));
    CHECK(st == cudaStreamCaptureStatusNone, "side stream still capturing");
    /* nothing ran while capturing */
    CK(cudaMemcpy(got, a, sizeof(got), cudaMemcpyDeviceToHost));
    CHECK(!memcmp(got, ha, sizeof(got)), "captured work ran eagerly");
    cudaGraphExec_t ge;
    CK(cudaGraphInstantiate(&ge, g, 0));
    for (int it = 0; it < 10; it++) {
        CK(cudaGraphLaunch(ge, s));
        host_axpb(ha, 0.5f, 1.0f, N);
        host_acc(hb, ha, 0.5f, N);
        host_acc(ha, hb, 0.25f, N);
    }
    CK(cudaStreamSynchronize(s));
    CK(cudaMemcpy(got, a, sizeof(got), cudaMemcpyDeviceToHost));
    CHECK(!memcmp(got, ha, sizeof(got)), "graph result differs");
    CHECK(cudaStreamBeginCapture(0, cudaStreamCaptureModeGlobal) == cudaErrorStreamCaptureUnsupported,
          "legacy capture must be refused");
    CHECK(cudaGetLastError() == cudaErrorStreamCaptureUnsupported, "last error");
    return 0;
}

static int order_log[16], order_n;

static void rec(void *p)
{
    order_log[order_n++] = (int)(intptr_t)p;
}

static int t_graph_order(void)
{
    /* 0 -> {1,2,3} -> 4, and 5 independent, 6 after 5 via AddDependencies */
    cudaGraph_t g;
    cudaGraphNode_t nd[7];
    CK(cudaGraphCreate(&g, 0));
    for (int i = 0; i < 7; i++) {
        struct cudaHostNodeParams hp = { .fn = rec, .userData = (void *)(intptr_t)i };
        const cudaGraphNode_t *dep = NULL;
        size_t nd_ = 0;
        if (i >= 1 && i <= 3) {
            dep = &nd[0];
            nd_ = 1;
        }
        CK(cudaGraphAddHostNode(&nd[i], g, dep, nd_, &hp));
    }
    cudaGraphNode_t from[] = { nd[1], nd[2], nd[3], nd[5] }, to[] = { nd[4], nd[4], nd[4], nd[6] };
    CK(cudaGraphAddDependencies(g, from, to, NULL, 4));
    cudaGraphExec_t ge;
    CK(cudaGraphInstantiate(&ge, g, 0));
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    int orders = 0;
    char seen[64][8];
    for (int rep = 0; rep < 64; rep++) {
        order_n = 0;
        CK(cudaGraphLaunch(ge, s));
        CK(cudaStreamSynchronize(s));
        CHECK(order_n == 7, "ran %d nodes", order_n);
        int pos[7];
        for (int i = 0; i < 7; i++)
            pos[order_log[i]] = i;
        for (int i = 1; i <= 3; i++)
            CHECK(pos[0] < pos[i] && pos[i] < pos[4], "edge violated");
        CHECK(pos[5] < pos[6], "added edge violated");
        char key[8];
        for (int i = 0; i < 7; i++)
            key[i] = (char)('0' + order_log[i]);
        key[7] = 0;
        int k;
        for (k = 0; k < orders; k++)
            if (!memcmp(seen[k], key, 8))
                break;
        if (k == orders)
            memcpy(seen[orders++], key, 8);
    }
    CHECK(orders >= 3, "only %d distinct orders: graph nodes are not randomised", orders);
    /* a cycle is refused */
    cudaGraphNode_t f2[] = { nd[4] }, t2[] = { nd[0] };
    CK(cudaGraphAddDependencies(g, f2, t2, NULL, 1));
    cudaGraphExec_t bad;
    CHECK(cudaGraphInstantiate(&bad, g, 0) != cudaSuccess, "cycle accepted");
    (void)cudaGetLastError();
    printf("graph-order: %d distinct valid orders\n", orders);
    return 0;
}

static int t_graph_exec_params(void)
{
    register_kernels();
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *y = dev_alloc_init(N, 1.0f);
    float h[N], got[N];
    init(h, 1.0f);
    cudaGraph_t g;
    cudaGraphNode_t kn, mn;
    CK(cudaGraphCreate(&g, 0));
    float m = 2.0f, b = 0.0f;
    int n = N;
    void *args[] = { &y, &m, &b, &n };
    struct cudaKernelNodeParams kp = { .func = (void *)k_axpb, .gridDim = d1(1), .blockDim = d1(N),
                                       .kernelParams = args };
    CK(cudaGraphAddKernelNode(&kn, g, NULL, 0, &kp));
    m = 100.0f;   /* node creation copied the arguments */
    struct cudaMemsetParams msp = { .dst = y, .value = 0, .elementSize = 4, .width = 1, .height = 1 };
    CK(cudaGraphAddMemsetNode(&mn, g, &kn, 1, &msp));
    cudaGraphExec_t ge;
    CK(cudaGraphInstantiate(&ge, g, 0));
    CK(cudaGraphLaunch(ge, s));           /* y = y*2 + 0, y[0] = 0 */
    m = 3.0f;
    b = 1.0f;
    CK(cudaGraphExecKernelNodeSetParams(ge, kn, &kp));   /* must not touch the launch above */
    msp.value = 0x3f800000u;                             /* 1.0f */
    CK(cudaGraphExecMemsetNodeSetParams(ge, mn, &msp));
    CK(cudaGraphLaunch(ge, s));           /* y = y*3 + 1, y[0] = 1 */
    CK(cudaStreamSynchronize(s));
    host_axpb(h, 2.0f, 0.0f, N);
    h[0] = 0;
    host_axpb(h, 3.0f, 1.0f, N);
    h[0] = 1.0f;
    CK(cudaMemcpy(got, y, sizeof(got), cudaMemcpyDeviceToHost));
    CHECK(!memcmp(got, h, sizeof(got)), "exec params leaked into an earlier launch");
    /* whole-graph update with the same topology */
    cudaGraph_t g2;
    cudaGraphNode_t kn2, mn2;
    CK(cudaGraphCreate(&g2, 0));
    m = 0.5f;
    b = 0.0f;
    CK(cudaGraphAddKernelNode(&kn2, g2, NULL, 0, &kp));
    msp.value = 0;
    CK(cudaGraphAddMemsetNode(&mn2, g2, &kn2, 1, &msp));
    cudaGraphExecUpdateResultInfo info;
    CK(cudaGraphExecUpdate(ge, g2, &info));
    CHECK(info.result == cudaGraphExecUpdateSuccess, "update result %d", (int)info.result);
    CK(cudaGraphLaunch(ge, s));
    CK(cudaStreamSynchronize(s));
    host_axpb(h, 0.5f, 0.0f, N);
    h[0] = 0;
    CK(cudaMemcpy(got, y, sizeof(got), cudaMemcpyDeviceToHost));
    CHECK(!memcmp(got, h, sizeof(got)), "exec update not applied");
    return 0;
}

static int t_pageable_staging(void)
{
    register_kernels();
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *d;
    CK(cudaMalloc((void **)&d, 3 * N * sizeof(float)));
    float page[N], *pin, got[3 * N];
    CK(cudaMallocHost((void **)&pin, N * sizeof(float)));
    /* keep the stream busy so nothing can run before the rewrites below */
    cudaEvent_t gate;
    CK(cudaEventCreate(&gate));
    for (int i = 0; i < N; i++)
        page[i] = pin[i] = 1.0f;
    CK(cudaMemcpyAsync(d, page, sizeof(page), cudaMemcpyHostToDevice, s));
    CK(cudaMemcpyAsync(d + N, pin, sizeof(page), cudaMemcpyHostToDevice, s));
    cudaGraph_t g;
    cudaGraphNode_t cn;
    CK(cudaGraphCreate(&g, 0));
    CK(cudaGraphAddMemcpyNode1D(&cn, g, NULL, 0, d + 2 * N, page, sizeof(page), cudaMemcpyHostToDevice));
    cudaGraphExec_t ge;
    CK(cudaGraphInstantiate(&ge, g, 0));
    CK(cudaGraphLaunch(ge, s));
    for (int i = 0; i < N; i++)
        page[i] = pin[i] = 2.0f;
    CK(cudaStreamSynchronize(s));
    CK(cudaMemcpy(got, d, sizeof(got), cudaMemcpyDeviceToHost));
    CHECK(got[0] == 1.0f && got[N - 1] == 1.0f, "pageable H2D was not staged at call time");
    /* pinned and graph copies read at execution time; they may have run
     * before the rewrite, since calls in between run ready work */
    CHECK(got[N] == 1.0f || got[N] == 2.0f, "pinned copy garbage");
    CHECK(got[2 * N] == 1.0f || got[2 * N] == 2.0f, "graph copy garbage");
    struct cudaPointerAttributes at;
    CK(cudaPointerGetAttributes(&at, d));
    CHECK(at.type == cudaMemoryTypeDevice, "device type");
    CK(cudaPointerGetAttributes(&at, pin));
    CHECK(at.type == cudaMemoryTypeHost, "pinned type");
    CK(cudaPointerGetAttributes(&at, page));
    CHECK(at.type == cudaMemoryTypeUnregistered, "pageable type");
    return 0;
}

static int t_errors(void)
{
    register_kernels();
    cudaEvent_t e1, e2;
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    CK(cudaEventCreateWithFlags(&e1, cudaEventDisableTiming));
    CK(cudaEventCreate(&e2));
    CK(cudaEventRecord(e1, s));
    CK(cudaEventRecord(e2, s));
    CK(cudaStreamSynchronize(s));
    float ms;
    CHECK(cudaEventElapsedTime(&ms, e1, e2) == cudaErrorInvalidResourceHandle, "timing disabled");
    CHECK(cudaPeekAtLastError() == cudaErrorInvalidResourceHandle, "peek");
    CHECK(cudaGetLastError() == cudaErrorInvalidResourceHandle, "get");
    CHECK(cudaGetLastError() == cudaSuccess, "get clears");
    size_t off, size;
    CK(cudaFuncGetParamInfo((const void *)k_axpb, 3, &off, &size));
    CHECK(off == 16 && size == 4, "param 3 at %zu size %zu", off, size);
    CHECK(cudaFuncGetParamInfo((const void *)k_axpb, 4, &off, &size) == cudaErrorInvalidValue, "index past end");
    CHECK(cudaLaunchKernel((const void *)t_errors, d1(1), d1(1), NULL, 0, s) == cudaErrorInvalidDeviceFunction,
          "unknown kernel");
    CHECK(cudaStreamSynchronize((cudaStream_t)(intptr_t)0x1234) == cudaErrorInvalidResourceHandle, "bad stream");
    CHECK(cudaSetDevice(99) == cudaErrorInvalidDevice, "bad device");
    CHECK(cudaEventQuery(e2) == cudaSuccess, "query done event");
    cudaEvent_t never;
    CK(cudaEventCreate(&never));
    CHECK(cudaEventQuery(never) == cudaSuccess, "never-recorded event is complete");
    CK(cudaStreamWaitEvent(s, never, 0));
    CK(cudaStreamSynchronize(s));
    (void)cudaGetLastError();
    CK(cudaEventDestroy(never));
    CHECK(strcmp(cudaGetErrorName(cudaErrorInvalidValue), "cudaErrorInvalidValue") == 0, "error name");
    return 0;
}

static int t_procaddress(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    CHECK(h, "libcuda.so.1 not loaded");
    __typeof__(&cuGetProcAddress_v2) gpa = (__typeof__(&cuGetProcAddress_v2))dlsym(h, "cuGetProcAddress_v2");
    CHECK(gpa, "no cuGetProcAddress_v2");
    void *p = NULL;
    CUdriverProcAddressQueryResult st;
    CHECK(gpa("cuMemcpyHtoDAsync", &p, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &st) == CUDA_SUCCESS &&
          p == dlsym(h, "cuMemcpyHtoDAsync_v2") && st == CU_GET_PROC_ADDRESS_SUCCESS, "HtoDAsync");
    CHECK(gpa("cuLaunchKernel", &p, 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st) == CUDA_SUCCESS &&
          p == dlsym(h, "cuLaunchKernel_ptsz"), "ptsz launch");
    CHECK(gpa("cuEventQuery", &p, 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st) == CUDA_SUCCESS &&
          p == dlsym(h, "cuEventQuery"), "no ptsz twin falls back to plain");
    CHECK(gpa("cuGetProcAddress", &p, 13000, 0, &st) == CUDA_SUCCESS && p == (void *)gpa, "self");
    CHECK(gpa("cuNoSuchThing", &p, 13000, 0, &st) == CUDA_ERROR_NOT_FOUND &&
          st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND, "not found");
    return 0;
}

static int t_symbols(void)
{
    void *h = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
    CHECK(h, "libcudart.so.13 not loaded");
    static const char *names[] = { "cudaMalloc", "cudaLaunchKernel", "__cudaLaunchKernel",
                                   "__cudaLaunchKernel_ptsz", "cudaMemcpyAsync_ptsz", "cudaGraphLaunch" };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        CHECK(dlvsym(h, names[i], "libcudart.so.13"), "%s has no version libcudart.so.13", names[i]);
    CHECK(!dlsym(h, "simc_tick") || dlsym(h, "simc_tick") == dlsym(RTLD_DEFAULT, "simc_tick"),
          "runtime leaks core symbols");
    return 0;
}


/* ------------------------------------------------ the simulator's newer parts */

#define CKD(x) do { CUresult r_ = (x); \
    CHECK(r_ == CUDA_SUCCESS, "%s failed: %d", #x, (int)r_); } while (0)
#define DPTR(p) ((CUdeviceptr)(uintptr_t)(p))

/* Lookups of cuGetProcAddress_v2 through dlsym: this dlsym stands in front of
 * libc's, as an interposer's would. */
static int gpa_dlsym_lookups;

/* It may be asked before a sanitizer's runtime is set up: unchecked, and
 * calling nothing the runtime wraps. */
__attribute__((no_sanitize("address", "undefined"))) void *dlsym(void *handle, const char *name)
{
    static void *(*real)(void *, const char *);
    if (!real)
        real = (void *(*)(void *, const char *))dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (!real)
        real = (void *(*)(void *, const char *))dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    static const char gpa[] = "cuGetProcAddress_v2";
    size_t i = 0;
    while (name[i] && name[i] == gpa[i])
        i++;
    if (!name[i] && !gpa[i])
        __atomic_add_fetch(&gpa_dlsym_lookups, 1, __ATOMIC_RELAXED);
    return real(handle, name);
}

/* driver_functions.h's helpers, which a C program cannot include alone. */
static struct cudaPitchedPtr make_cudaPitchedPtr(void *d, size_t p, size_t xsz, size_t ysz)
{
    struct cudaPitchedPtr s = { .ptr = d, .pitch = p, .xsize = xsz, .ysize = ysz };
    return s;
}

static struct cudaPos make_cudaPos(size_t x, size_t y, size_t z)
{
    struct cudaPos p = { .x = x, .y = y, .z = z };
    return p;
}

static struct cudaExtent make_cudaExtent(size_t w, size_t h, size_t d)
{
    struct cudaExtent e = { .width = w, .height = h, .depth = d };
    return e;
}

static void *drv_sym(const char *name)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    CHECK(h, "libcuda.so.1 not loaded");
    void *p = dlsym(h, name);
    dlclose(h);
    return p;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Spins, with no CUDA call, until *p == v; fails after a few seconds. */
static void spin_until(const volatile int *p, int v, const char *what)
{
    double t0 = now_s();
    while (__atomic_load_n(p, __ATOMIC_ACQUIRE) != v)
        CHECK(now_s() - t0 < 5.0, "spun 5 s on %s: nothing made progress", what);
}

static void k_flag(const sim_launch *l, void **a)
{
    int *f = *(int **)a[0];
    (void)l;
    __atomic_store_n(f, *(int *)a[1], __ATOMIC_RELEASE);
}

static void register_flag_kernel(void)
{
    static const size_t sz[] = { sizeof(int *), sizeof(int) };
    CHECK(simRegisterKernel(k_flag, "k_flag", 2, sz) == 0, "register k_flag");
}

static void set_flag(cudaStream_t s, int *f, int v)
{
    void *args[] = { &f, &v };
    CK(cudaLaunchKernel((const void *)k_flag, d1(1), d1(1), args, 0, s));
}

static pthread_mutex_t go_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t go_cv = PTHREAD_COND_INITIALIZER;
static int go, hostfn_done;

static void wait_for_go(void *p)
{
    (void)p;
    pthread_mutex_lock(&go_mu);
    while (!go)
        pthread_cond_wait(&go_cv, &go_mu);
    pthread_mutex_unlock(&go_mu);
    __atomic_store_n(&hostfn_done, 1, __ATOMIC_RELEASE);
}

static int t_device_thread(void)
{
    register_kernels();
    register_flag_kernel();
    simSetDeviceThread(1);
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    int *flag, *dflag;
    CK(cudaHostAlloc((void **)&flag, 2 * sizeof(int), cudaHostAllocMapped));
    CK(cudaHostGetDevicePointer((void **)&dflag, flag, 0));
    flag[0] = flag[1] = 0;
    float *y = dev_alloc_init(N, 1.0f);
    for (int it = 1; it <= 20; it++) {
        axpb(s, y, 0.5f, 1.0f, N);
        set_flag(s, dflag, it);
        spin_until(&flag[0], it, "a kernel's flag in mapped memory");
    }
    /* a host function waits for what the host does after launching it */
    CK(cudaLaunchHostFunc(s, wait_for_go, NULL));
    pthread_mutex_lock(&go_mu);
    go = 1;
    pthread_cond_signal(&go_cv);
    pthread_mutex_unlock(&go_mu);
    spin_until(&hostfn_done, 1, "a host function's flag");
    /* a wait op holds the stream until the host writes memory */
    CKD(cuStreamWaitValue32(s, DPTR(&flag[0]), 100, CU_STREAM_WAIT_VALUE_EQ));
    set_flag(s, &flag[1], 7);
    struct timespec ts = { 0, 20 * 1000 * 1000 };
    nanosleep(&ts, NULL);
    CHECK(__atomic_load_n(&flag[1], __ATOMIC_ACQUIRE) == 0, "work after an unsatisfied wait ran");
    __atomic_store_n(&flag[0], 100, __ATOMIC_RELEASE);
    spin_until(&flag[1], 7, "work after a satisfied wait");
    CK(cudaStreamSynchronize(s));
    simSetDeviceThread(0);
    float h[N], got[N];
    init(h, 1.0f);
    for (int it = 0; it < 20; it++)
        host_axpb(h, 0.5f, 1.0f, N);
    CK(cudaMemcpy(got, y, sizeof(got), cudaMemcpyDeviceToHost));
    CHECK(!memcmp(got, h, sizeof(got)), "device thread ran work out of order");
    return 0;
}

static int t_memkinds(void)
{
    register_kernels();
    float *dev, *pin, *mapped, *man, *reg = malloc(N * sizeof(float)), page[N];
    CHECK(reg, "malloc");
    CK(cudaMalloc((void **)&dev, N * sizeof(float)));
    CK(cudaMallocHost((void **)&pin, N * sizeof(float)));
    CK(cudaHostAlloc((void **)&mapped, N * sizeof(float), cudaHostAllocMapped | cudaHostAllocPortable));
    CK(cudaHostRegister(reg, N * sizeof(float), cudaHostRegisterDefault));
    CK(cudaMallocManaged((void **)&man, N * sizeof(float), cudaMemAttachGlobal));
    struct {
        float *p;
        enum cudaMemoryType rt;
        unsigned drv;
        int managed, hostptr;
    } want[] = {
        { dev, cudaMemoryTypeDevice, CU_MEMORYTYPE_DEVICE, 0, 0 },
        { pin, cudaMemoryTypeHost, CU_MEMORYTYPE_HOST, 0, 1 },
        { mapped, cudaMemoryTypeHost, CU_MEMORYTYPE_HOST, 0, 1 },
        { reg, cudaMemoryTypeHost, CU_MEMORYTYPE_HOST, 0, 1 },
        { man, cudaMemoryTypeManaged, CU_MEMORYTYPE_DEVICE, 1, 1 },
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        struct cudaPointerAttributes at;
        CK(cudaPointerGetAttributes(&at, want[i].p + 3));
        CHECK(at.type == want[i].rt, "kind %zu: runtime type %d", i, (int)at.type);
        CHECK(at.device == 0 && at.devicePointer == want[i].p + 3, "kind %zu: device pointer", i);
        CHECK(at.hostPointer == (want[i].hostptr ? want[i].p + 3 : NULL), "kind %zu: host pointer", i);
        unsigned type = 0;
        int managed = -1;
        CUdeviceptr base = 0;
        size_t size = 0;
        CKD(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, DPTR(want[i].p + 3)));
        CKD(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, DPTR(want[i].p + 3)));
        CKD(cuPointerGetAttribute(&base, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, DPTR(want[i].p + 3)));
        CKD(cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, DPTR(want[i].p + 3)));
        CHECK(type == want[i].drv && managed == want[i].managed, "kind %zu: driver type %u managed %d", i, type,
              managed);
        CHECK(base == DPTR(want[i].p) && size == N * sizeof(float), "kind %zu: range", i);
        if (want[i].hostptr) {
            void *d = NULL;
            CK(cudaHostGetDevicePointer(&d, want[i].p, 0));
            CHECK(d == want[i].p, "kind %zu: mapped at another address", i);
            CUdeviceptr dd = 0;
            CKD(cuMemHostGetDevicePointer(&dd, want[i].p, 0));
            CHECK(dd == DPTR(want[i].p), "kind %zu: driver device pointer", i);
        }
    }
    struct cudaPointerAttributes at;
    CK(cudaPointerGetAttributes(&at, page));
    CHECK(at.type == cudaMemoryTypeUnregistered, "pageable type");
    unsigned type = 7;
    CHECK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, DPTR(page)) == CUDA_ERROR_INVALID_VALUE,
          "pageable memory has no driver attributes");
    CUpointer_attribute which = CU_POINTER_ATTRIBUTE_MEMORY_TYPE;
    void *data = &type;
    CKD(cuPointerGetAttributes(1, &which, &data, DPTR(page)));
    CHECK(type == 0, "pageable memory type %u", type);
    void *d = NULL;
    CHECK(cudaHostGetDevicePointer(&d, page, 0) == cudaErrorInvalidValue, "pageable memory is not mapped");
    CHECK(cudaHostRegister(reg + 4, 8, 0) == cudaErrorHostMemoryAlreadyRegistered, "registered twice");
    CHECK(cudaHostUnregister(page) == cudaErrorHostMemoryNotRegistered, "unregistered what was not");
    CHECK(cudaFree(pin) == cudaErrorInvalidValue, "cudaFree of pinned memory");
    unsigned flags = 0;
    CK(cudaHostGetFlags(&flags, mapped));
    CHECK(flags == (cudaHostAllocMapped | cudaHostAllocPortable), "host alloc flags %u", flags);
    (void)cudaGetLastError();
    /* kernels read and write every kind */
    float h[N], got[N];
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        init(h, (float)i);
        CK(cudaMemcpy(want[i].p, h, sizeof(h), cudaMemcpyDefault));
        axpb(0, want[i].p, 1.5f, 0.25f, N);
        CK(cudaDeviceSynchronize());
        host_axpb(h, 1.5f, 0.25f, N);
        CK(cudaMemcpy(got, want[i].p, sizeof(got), cudaMemcpyDefault));
        CHECK(!memcmp(got, h, sizeof(h)), "kernel on memory kind %zu", i);
    }
    /* registered memory is read when the copy runs, pageable memory at the call */
    int *gate;
    CK(cudaMallocHost((void **)&gate, sizeof(int)));
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    float *both[] = { reg, page }, expect[] = { 2.0f, 1.0f };
    for (int k = 0; k < 2; k++) {
        *gate = 0;
        for (int i = 0; i < N; i++)
            both[k][i] = 1.0f;
        CKD(cuStreamWaitValue32(s, DPTR(gate), 1, CU_STREAM_WAIT_VALUE_EQ));
        CK(cudaMemcpyAsync(dev, both[k], N * sizeof(float), cudaMemcpyHostToDevice, s));
        for (int i = 0; i < N; i++)
            both[k][i] = 2.0f;
        __atomic_store_n(gate, 1, __ATOMIC_RELEASE);
        CK(cudaStreamSynchronize(s));
        CK(cudaMemcpy(got, dev, sizeof(got), cudaMemcpyDeviceToHost));
        CHECK(got[0] == expect[k] && got[N - 1] == expect[k], "%s source read at the wrong time: %g",
              k ? "pageable" : "registered", (double)got[0]);
    }
    CK(cudaHostUnregister(reg));
    CK(cudaPointerGetAttributes(&at, reg));
    CHECK(at.type == cudaMemoryTypeUnregistered, "unregistered memory still registered");
    CK(cudaFree(man));
    CK(cudaFreeHost(pin));
    CK(cudaFreeHost(mapped));
    CK(cudaFree(dev));
    free(reg);
    return 0;
}

static cudaStream_t sync_stream;
static cudaError_t sync_result;

static void *sync_thread(void *p)
{
    (void)p;
    sync_result = cudaStreamSynchronize(sync_stream);
    return NULL;
}

static int t_memops(void)
{
    register_kernels();
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    uint32_t *w;
    uint64_t *d64;
    CK(cudaMallocHost((void **)&w, 4 * sizeof(uint32_t)));
    CK(cudaMalloc((void **)&d64, sizeof(uint64_t)));
    memset(w, 0, 4 * sizeof(uint32_t));   /* pinned memory starts undefined, as with a real driver */
    CKD(cuStreamWriteValue32(s, DPTR(&w[0]), 5, 0));
    CKD(cuStreamWriteValue64(s, DPTR(d64), 1ull << 40, 0));
    CK(cudaStreamSynchronize(s));
    uint64_t v64 = 0;
    CK(cudaMemcpy(&v64, d64, sizeof(v64), cudaMemcpyDeviceToHost));
    CHECK(w[0] == 5 && v64 == 1ull << 40, "write values %u %llu", w[0], (unsigned long long)v64);
    /* each condition: not met, then met by the host */
    struct {
        unsigned flags;
        uint32_t value, before, after;
    } conds[] = {
        { CU_STREAM_WAIT_VALUE_GEQ, 10, 5, 12 },
        { CU_STREAM_WAIT_VALUE_GEQ, 5, 0xfffffff0u, 5 },   /* cyclic: far "below" */
        { CU_STREAM_WAIT_VALUE_EQ, 7, 6, 7 },
        { CU_STREAM_WAIT_VALUE_AND, 4, 3, 7 },
        { CU_STREAM_WAIT_VALUE_NOR, 0xffffff00u, 0xff, 0xfe },
    };
    for (size_t i = 0; i < sizeof(conds) / sizeof(conds[0]); i++) {
        w[0] = conds[i].before;
        w[1] = 0;
        CKD(cuStreamWaitValue32(s, DPTR(&w[0]), conds[i].value, conds[i].flags));
        CKD(cuStreamWriteValue32(s, DPTR(&w[1]), 1, 0));
        for (int q = 0; q < 8; q++)
            CHECK(cudaStreamQuery(s) == cudaErrorNotReady, "cond %zu: stream done before its wait", i);
        CHECK(w[1] == 0, "cond %zu: work after the wait ran", i);
        w[0] = conds[i].after;
        CK(cudaStreamSynchronize(s));
        CHECK(w[1] == 1, "cond %zu: work after the wait never ran", i);
    }
    /* 64-bit wait, met by another host thread's write while one is blocked in a sync */
    uint64_t *w64;
    CK(cudaMallocHost((void **)&w64, sizeof(uint64_t)));
    *w64 = 1;
    CKD(cuStreamWaitValue64(s, DPTR(w64), 3ull << 33, CU_STREAM_WAIT_VALUE_GEQ));
    CKD(cuStreamWriteValue32(s, DPTR(&w[2]), 9, 0));
    sync_stream = s;
    pthread_t t;
    CHECK(!pthread_create(&t, NULL, sync_thread, NULL), "pthread_create");
    struct timespec ts = { 0, 20 * 1000 * 1000 };
    nanosleep(&ts, NULL);
    CHECK(w[2] == 0, "64-bit wait let work pass");
    __atomic_store_n(w64, 4ull << 33, __ATOMIC_RELEASE);
    pthread_join(t, NULL);
    CHECK(sync_result == cudaSuccess && w[2] == 9, "sync across a satisfied wait: %d", (int)sync_result);
    /* a batch */
    CUstreamBatchMemOpParams ops[4];
    memset(ops, 0, sizeof(ops));
    ops[0].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
    ops[0].writeValue.address = DPTR(&w[3]);
    ops[0].writeValue.value = 11;
    ops[1].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
    ops[1].waitValue.address = DPTR(&w[3]);
    ops[1].waitValue.value = 11;
    ops[1].waitValue.flags = CU_STREAM_WAIT_VALUE_EQ;
    ops[2].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
    ops[2].writeValue.address = DPTR(d64);
    ops[2].writeValue.value64 = 77;
    ops[3].memoryBarrier.operation = CU_STREAM_MEM_OP_BARRIER;
    CKD(cuStreamBatchMemOp(s, 4, ops, 0));
    CK(cudaStreamSynchronize(s));
    CK(cudaMemcpy(&v64, d64, sizeof(v64), cudaMemcpyDeviceToHost));
    CHECK(w[3] == 11 && v64 == 77, "batch");
    /* what the real driver refuses */
    uint32_t page = 0;
    CHECK(cuStreamWaitValue32(s, DPTR(&page), 1, 0) == CUDA_ERROR_INVALID_VALUE, "wait on pageable memory");
    CHECK(cuStreamWaitValue32(s, DPTR(&w[0]), 1, 0x10) == CUDA_ERROR_INVALID_VALUE, "bad wait flags");
    CHECK(cuStreamWriteValue64(s, DPTR(&w[1]), 1, 0) == CUDA_ERROR_INVALID_VALUE, "misaligned 64-bit write");
    /* captured memory ops become nodes that run at each launch */
    cudaStream_t cs;
    CK(cudaStreamCreate(&cs));
    cudaGraph_t g;
    CK(cudaStreamBeginCapture(cs, cudaStreamCaptureModeGlobal));
    CKD(cuStreamWaitValue32(cs, DPTR(&w[0]), 50, CU_STREAM_WAIT_VALUE_GEQ));
    CKD(cuStreamWriteValue32(cs, DPTR(&w[1]), 21, 0));
    CK(cudaStreamEndCapture(cs, &g));
    size_t n = 0;
    CK(cudaGraphGetNodes(g, NULL, &n));
    CHECK(n == 2, "captured %zu memory ops", n);
    cudaGraphExec_t ge;
    CK(cudaGraphInstantiate(&ge, g, 0));
    w[0] = 0;
    w[1] = 0;
    CK(cudaGraphLaunch(ge, cs));
    CHECK(cudaStreamQuery(cs) == cudaErrorNotReady && w[1] == 0, "graph wait op did not wait");
    w[0] = 60;
    CK(cudaStreamSynchronize(cs));
    CHECK(w[1] == 21, "graph write op");
    return 0;
}

static int t_memsets(void)
{
    enum { W = 10, H = 5, P = 32, D = 3 };
    unsigned char *d;
    CK(cudaMalloc((void **)&d, P * H * D * 4));
    unsigned char got[P * H * D * 4], want[P * H * D * 4];
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    /* 1D, element sizes 2 and 4, sync and stream-ordered */
    CK(cudaMemset(d, 0, sizeof(got)));
    memset(want, 0, sizeof(want));
    CKD(cuMemsetD16(DPTR(d) + 2, 0xbeef, 5));
    CKD(cuMemsetD32Async(DPTR(d) + 16, 0x01020304u, 3, s));
    CKD(cuMemsetD16Async(DPTR(d) + 40, 0x1234, 2, s));
    CKD(cuMemsetD32(DPTR(d) + 48, 0xa0b0c0d0u, 1));
    CK(cudaStreamSynchronize(s));
    for (int i = 0; i < 5; i++)
        memcpy(want + 2 + 2 * i, &(uint16_t){ 0xbeef }, 2);
    for (int i = 0; i < 3; i++)
        memcpy(want + 16 + 4 * i, &(uint32_t){ 0x01020304u }, 4);
    for (int i = 0; i < 2; i++)
        memcpy(want + 40 + 2 * i, &(uint16_t){ 0x1234 }, 2);
    memcpy(want + 48, &(uint32_t){ 0xa0b0c0d0u }, 4);
    CK(cudaMemcpy(got, d, sizeof(got), cudaMemcpyDeviceToHost));
    CHECK(!memcmp(got, want, sizeof(got)), "1D memsets");
    /* 2D: W elements a row, rows P bytes apart; padding stays */
    CK(cudaMemset(d, 0x11, sizeof(got)));
    memset(want, 0x11, sizeof(want));
    CKD(cuMemsetD2D8(DPTR(d), P, 0x22, W, H));
    CKD(cuMemsetD2D16Async(DPTR(d) + P * H, P, 0x3344, W, H, s));
    CKD(cuMemsetD2D32Async(DPTR(d) + 2 * P * H, 2 * P, 0x55667788u, W / 2, 2, s));
    CK(cudaStreamSynchronize(s));
    for (int r = 0; r < H; r++) {
        memset(want + r * P, 0x22, W);
        for (int i = 0; i < W; i++)
            memcpy(want + P * H + r * P + 2 * i, &(uint16_t){ 0x3344 }, 2);
    }
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < W / 2; i++)
            memcpy(want + 2 * P * H + r * 2 * P + 4 * i, &(uint32_t){ 0x55667788u }, 4);
    CK(cudaMemcpy(got, d, sizeof(got), cudaMemcpyDeviceToHost));
    CHECK(!memcmp(got, want, sizeof(got)), "2D driver memsets");
    /* runtime 2D and 3D: width in bytes; slices pitch * ysize apart */
    CK(cudaMemset(d, 0, sizeof(got)));
    memset(want, 0, sizeof(want));
    CK(cudaMemset2D(d + 1, P, 0x7f, W, H));
    struct cudaPitchedPtr pp = make_cudaPitchedPtr(d + P * H * 2, P, W, H + 1);
    CK(cudaMemset3DAsync(pp, 0x5c, make_cudaExtent(W - 2, H, D), s));
    CK(cudaMemset2DAsync(d + P * H * 2 + P * (H + 1) * D, P, 0x33, 3, 1, s));
    CK(cudaStreamSynchronize(s));
    for (int r = 0; r < H; r++)
        memset(want + 1 + r * P, 0x7f, W);
    for (int z = 0; z < D; z++)
        for (int r = 0; r < H; r++)
            memset(want + P * H * 2 + z * P * (H + 1) + r * P, 0x5c, W - 2);
    memset(want + P * H * 2 + P * (H + 1) * D, 0x33, 3);
    CK(cudaMemcpy(got, d, sizeof(got), cudaMemcpyDeviceToHost));
    CHECK(!memcmp(got, want, sizeof(got)), "runtime 2D/3D memsets");
    CK(cudaMemset3D(make_cudaPitchedPtr(d, P, W, H), 0x01, make_cudaExtent(P, H, 1)));
    CK(cudaMemcpy(got, d, P * H, cudaMemcpyDeviceToHost));
    for (int i = 0; i < P * H; i++)
        CHECK(got[i] == 0x01, "3D memset of depth 1 at %d", i);
    CHECK(cudaMemset2D(d, 4, 0, 8, 2) == cudaErrorInvalidValue, "pitch below width accepted");
    (void)cudaGetLastError();
    return 0;
}

/* Reference for a pitched 3D copy of w bytes x h rows x n slices. */
static void ref3d(unsigned char *dst, size_t dp, size_t ds, const unsigned char *src, size_t sp, size_t ss,
                  size_t w, size_t h, size_t n)
{
    for (size_t z = 0; z < n; z++)
        for (size_t r = 0; r < h; r++)
            memcpy(dst + z * ds + r * dp, src + z * ss + r * sp, w);
}

static int t_copies(void)
{
    enum { SZ = 4096 };
    unsigned char *a, *b, host[SZ], want[SZ], got[SZ];
    CK(cudaMalloc((void **)&a, SZ));
    CK(cudaMalloc((void **)&b, SZ));
    for (int i = 0; i < SZ; i++)
        host[i] = (unsigned char)(i * 7 + 3);
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    /* cudaMemcpy2D: 12 bytes x 6 rows from pitch 20 to pitch 32 */
    CK(cudaMemset(a, 0, SZ));
    memset(want, 0, SZ);
    CK(cudaMemcpy2D(a + 3, 32, host + 5, 20, 12, 6, cudaMemcpyHostToDevice));
    ref3d(want + 3, 32, 0, host + 5, 20, 0, 12, 6, 1);
    CK(cudaMemcpy(got, a, SZ, cudaMemcpyDeviceToHost));
    CHECK(!memcmp(got, want, SZ), "cudaMemcpy2D");
    /* cudaMemcpy3D device to device with positions and ysize */
    CK(cudaMemcpy(a, host, SZ, cudaMemcpyHostToDevice));
    CK(cudaMemset(b, 0, SZ));
    memset(want, 0, SZ);
    struct cudaMemcpy3DParms p3 = { 0 };
    p3.srcPtr = make_cudaPitchedPtr(a, 40, 40, 9);
    p3.srcPos = make_cudaPos(2, 1, 1);
    p3.dstPtr = make_cudaPitchedPtr(b, 24, 24, 7);
    p3.dstPos = make_cudaPos(1, 2, 0);
    p3.extent = make_cudaExtent(16, 4, 3);
    p3.kind = cudaMemcpyDeviceToDevice;
    CK(cudaMemcpy3D(&p3));
    ref3d(want + 1 + 2 * 24, 24, 24 * 7, host + 2 + 40 + 40 * 9, 40, 40 * 9, 16, 4, 3);
    CK(cudaMemcpy(got, b, SZ, cudaMemcpyDeviceToHost));
    CHECK(!memcmp(got, want, SZ), "cudaMemcpy3D");
    /* cudaMemcpy3DAsync from pageable memory: read at the call */
    unsigned char page[SZ];
    memcpy(page, host, SZ);
    CK(cudaMemset(b, 0, SZ));
    p3.srcPtr = make_cudaPitchedPtr(page, 40, 40, 9);
    p3.kind = cudaMemcpyHostToDevice;
    CK(cudaMemcpy3DAsync(&p3, s));
    memset(page, 0xee, SZ);
    CK(cudaStreamSynchronize(s));
    CK(cudaMemcpy(got, b, SZ, cudaMemcpyDeviceToHost));
    CHECK(!memcmp(got, want, SZ), "cudaMemcpy3DAsync pageable staging");
    struct cudaMemcpy3DParms arr = p3;
    arr.srcArray = (cudaArray_t)(uintptr_t)0x10;
    CHECK(cudaMemcpy3D(&arr) == cudaErrorInvalidValue, "arrays accepted");
    /* peer copies on one device, and the 3D peer ones */
    CK(cudaMemset(b, 0, SZ));
    CK(cudaMemcpyPeer(b, 0, a + 100, 0, 200));
    CK(cudaMemcpyPeerAsync(b + 300, 0, a, 0, 50, s));
    struct cudaMemcpy3DPeerParms pp = { 0 };
    pp.srcPtr = make_cudaPitchedPtr(a, 64, 64, 4);
    pp.dstPtr = make_cudaPitchedPtr(b + 1024, 32, 32, 3);
    pp.extent = make_cudaExtent(8, 3, 2);
    CK(cudaMemcpy3DPeerAsync(&pp, s));
    pp.dstPtr = make_cudaPitchedPtr(b + 2048, 32, 32, 3);
    CK(cudaMemcpy3DPeer(&pp));
    CK(cudaStreamSynchronize(s));
    memset(want, 0, SZ);
    memcpy(want, host + 100, 200);
    memcpy(want + 300, host, 50);
    ref3d(want + 1024, 32, 96, host, 64, 256, 8, 3, 2);
    ref3d(want + 2048, 32, 96, host, 64, 256, 8, 3, 2);
    CK(cudaMemcpy(got, b, SZ, cudaMemcpyDeviceToHost));
    CHECK(!memcmp(got, want, SZ), "peer copies");
    CHECK(cudaMemcpyPeer(b, 5, a, 0, 8) == cudaErrorInvalidDevice, "peer copy to no device");
    (void)cudaGetLastError();
    /* the CUDA 13 batch: the legacy stream is refused; a source read during
     * the call may be rewritten at once */
    unsigned char *pin;
    CK(cudaMallocHost((void **)&pin, 64));
    memcpy(pin, host, 64);
    void *dsts[] = { b, b + 64, b + 128 };
    const void *srcs[] = { a + 1, pin, page };
    size_t sizes[] = { 10, 64, 20 };
    struct cudaMemcpyAttributes at[2];
    memset(at, 0, sizeof(at));
    at[0].srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    at[1].srcAccessOrder = cudaMemcpySrcAccessOrderDuringApiCall;
    size_t idx[] = { 0, 1 };
    CHECK(cudaMemcpyBatchAsync(dsts, srcs, sizes, 3, at, idx, 2, 0) == cudaErrorInvalidValue,
          "batch on the legacy stream");
    (void)cudaGetLastError();
    memcpy(page, host + 500, 20);
    CK(cudaMemset(b, 0, SZ));
    CK(cudaMemcpyBatchAsync(dsts, srcs, sizes, 3, at, idx, 2, s));
    memset(pin, 0, 64);
    memset(page, 0, 20);
    CK(cudaStreamSynchronize(s));
    memset(want, 0, SZ);
    memcpy(want, host + 1, 10);
    memcpy(want + 64, host, 64);
    memcpy(want + 128, host + 500, 20);
    CK(cudaMemcpy(got, b, SZ, cudaMemcpyDeviceToHost));
    CHECK(!memcmp(got, want, SZ), "batch copies");
    /* the driver's own forms */
    CK(cudaMemset(b, 0, SZ));
    memset(want, 0, SZ);
    CUDA_MEMCPY2D c2 = { 0 };
    c2.srcMemoryType = CU_MEMORYTYPE_HOST;
    c2.srcHost = host;
    c2.srcPitch = 33;
    c2.srcXInBytes = 1;
    c2.srcY = 2;
    c2.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c2.dstDevice = DPTR(b);
    c2.dstPitch = 17;
    c2.WidthInBytes = 9;
    c2.Height = 4;
    CKD(cuMemcpy2D(&c2));
    ref3d(want, 17, 0, host + 1 + 2 * 33, 33, 0, 9, 4, 1);
    c2.dstDevice = DPTR(b + 512);
    CKD(cuMemcpy2DUnaligned(&c2));
    ref3d(want + 512, 17, 0, host + 1 + 2 * 33, 33, 0, 9, 4, 1);
    CUDA_MEMCPY3D c3 = { 0 };
    c3.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
    c3.srcDevice = DPTR(a);
    c3.srcPitch = 50;
    c3.srcHeight = 6;
    c3.srcZ = 1;
    c3.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
    c3.dstDevice = DPTR(b + 1024);
    c3.dstPitch = 20;
    c3.dstHeight = 5;
    c3.WidthInBytes = 11;
    c3.Height = 5;
    c3.Depth = 2;
    CKD(cuMemcpy3DAsync(&c3, s));
    ref3d(want + 1024, 20, 100, host + 300, 50, 300, 11, 5, 2);
    c3.dstDevice = DPTR(b + 2048);
    CKD(cuMemcpy3D(&c3));
    ref3d(want + 2048, 20, 100, host + 300, 50, 300, 11, 5, 2);
    CKD(cuMemcpyHtoD(DPTR(b + 3000), host + 7, 30));
    CKD(cuMemcpyDtoD(DPTR(b + 3100), DPTR(a + 9), 30));
    memcpy(want + 3000, host + 7, 30);
    memcpy(want + 3100, host + 9, 30);
    CUcontext ctx;
    CKD(cuCtxGetCurrent(&ctx));
    CKD(cuMemcpyPeerAsync(DPTR(b + 3200), ctx, DPTR(a + 11), ctx, 30, s));
    memcpy(want + 3200, host + 11, 30);
    CUdeviceptr bd[] = { DPTR(b + 3300) }, bs[] = { DPTR(a + 13) };
    size_t bz[] = { 30 };
    CUmemcpyAttributes ca = { .srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM };
    size_t ci = 0;
    CKD(cuMemcpyBatchAsync(bd, bs, bz, 1, &ca, &ci, 1, s));
    memcpy(want + 3300, host + 13, 30);
    CK(cudaStreamSynchronize(s));
    CKD(cuMemcpyDtoH(got, DPTR(b), SZ));
    CHECK(!memcmp(got, want, SZ), "driver copies");
    CHECK(cuMemcpyPeer(DPTR(b), NULL, DPTR(a), ctx, 4) == CUDA_ERROR_INVALID_CONTEXT, "peer copy without context");
    return 0;
}

static float sym_var[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };

static int t_device_symbols(void)
{
    register_kernels();
    CHECK(simRegisterSymbol(sym_var, sizeof(sym_var)) == 0, "register");
    CHECK(simRegisterSymbol(sym_var, sizeof(sym_var)) == 0, "register again");
    size_t size = 0;
    CK(cudaGetSymbolSize(&size, sym_var));
    CHECK(size == sizeof(sym_var), "size %zu", size);
    float *p = NULL, got[16], src[16];
    CK(cudaGetSymbolAddress((void **)&p, sym_var));
    CHECK(p && p != sym_var && simc_mem_kind(p, NULL) == SIM_MEM_DEVICE, "symbol address");
    CK(cudaMemcpyFromSymbol(got, sym_var, sizeof(got), 0, cudaMemcpyDeviceToHost));
    CHECK(!memcmp(got, sym_var, sizeof(got)), "initial contents");
    for (int i = 0; i < 16; i++)
        src[i] = -(float)i;
    sym_var[0] = 99;   /* the host shadow is not the device copy */
    CK(cudaMemcpyToSymbol(sym_var, src, 8 * sizeof(float), 4 * sizeof(float), cudaMemcpyHostToDevice));
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    axpb(s, p, 2.0f, 1.0f, 16);
    float out[16];
    CK(cudaMemcpyFromSymbolAsync(out, sym_var, sizeof(out), 0, cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));
    for (int i = 0; i < 16; i++) {
        float v = i >= 4 && i < 12 ? -(float)(i - 4) : (float)(i + 1);
        CHECK(out[i] == v * 2.0f + 1.0f, "element %d: %g", i, (double)out[i]);
    }
    CK(cudaMemcpyToSymbolAsync(sym_var, p, 4, 60, cudaMemcpyDeviceToDevice, s));
    CK(cudaMemcpyFromSymbol(out, sym_var, 4, 60, cudaMemcpyDefault));
    CHECK(out[0] == 3.0f, "device to symbol: %g", (double)out[0]);
    static int unknown;
    CHECK(cudaGetSymbolAddress((void **)&p, &unknown) == cudaErrorInvalidSymbol, "unknown symbol");
    CHECK(cudaMemcpyToSymbol(sym_var, src, 8, 60, cudaMemcpyHostToDevice) == cudaErrorInvalidValue, "past the end");
    CHECK(cudaMemcpyToSymbol(sym_var, src, 4, 0, cudaMemcpyDeviceToHost) == cudaErrorInvalidMemcpyDirection,
          "wrong direction");
    (void)cudaGetLastError();
    /* another context has its own copy; a reset gives a fresh one */
    CUcontext c2;
    float *p2;
    CKD(cuCtxCreate(&c2, NULL, 0, 0));
    CK(cudaGetSymbolAddress((void **)&p2, sym_var));
    CK(cudaMemcpyFromSymbol(got, sym_var, 4, 0, cudaMemcpyDeviceToHost));
    CHECK(p2 != p && got[0] == 1.0f, "second context's copy");
    CKD(cuCtxDestroy(c2));
    CK(cudaDeviceReset());
    CK(cudaMemcpyFromSymbol(got, sym_var, 8 * 4, 0, cudaMemcpyDeviceToHost));
    CHECK(got[0] == 1.0f && got[7] == 8.0f, "symbol after reset: %g", (double)got[7]);
    return 0;
}

static int t_capture_to_graph(void)
{
    register_kernels();
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *y = dev_alloc_init(N, 3.0f), got[N];
    cudaGraph_t g, out = NULL;
    cudaGraphNode_t m;
    CK(cudaGraphCreate(&g, 0));
    struct cudaMemsetParams mp = { .dst = y, .value = 0, .elementSize = 4, .width = N, .height = 1 };
    CK(cudaGraphAddMemsetNode(&m, g, NULL, 0, &mp));
    CK(cudaStreamBeginCaptureToGraph(s, g, &m, NULL, 1, cudaStreamCaptureModeGlobal));
    enum cudaStreamCaptureStatus st;
    cudaGraph_t cg = NULL;
    const cudaGraphNode_t *deps = NULL;
    size_t nd = 0;
    CK(cudaStreamGetCaptureInfo(s, &st, NULL, &cg, &deps, NULL, &nd));
    CHECK(st == cudaStreamCaptureStatusActive && cg == g && nd == 1 && deps[0] == m, "capture starts after m");
    axpb(s, y, 2.0f, 1.0f, N);
    sq(s, y, N);
    CK(cudaStreamEndCapture(s, &out));
    CHECK(out == g, "capture returned another graph");
    size_t n = 0;
    CK(cudaGraphGetNodes(g, NULL, &n));
    CHECK(n == 3, "%zu nodes", n);
    cudaGraphExec_t ge;
    CK(cudaGraphInstantiate(&ge, g, 0));
    float h[N];
    for (int rep = 0; rep < 20; rep++) {
        CK(cudaGraphLaunch(ge, s));
        CK(cudaStreamSynchronize(s));
        for (int i = 0; i < N; i++)
            h[i] = 0;
        host_axpb(h, 2.0f, 1.0f, N);
        for (int i = 0; i < N; i++) {
            float v = h[i] * h[i] * 0.25f + h[i] * 1.7f + 0.3f;
            v -= (float)(long long)v;
            h[i] = v < 0 ? v + 1.0f : v;
        }
        CK(cudaMemcpy(got, y, sizeof(got), cudaMemcpyDeviceToHost));
        CHECK(!memcmp(got, h, sizeof(got)), "launch %d: captured nodes not after the graph's own", rep);
    }
    /* the driver's form, into a graph with a host node */
    cudaGraph_t g2;
    CUgraph o2 = NULL;
    CK(cudaGraphCreate(&g2, 0));
    order_n = 0;
    struct cudaHostNodeParams hp = { .fn = rec, .userData = (void *)(intptr_t)1 };
    cudaGraphNode_t hn;
    CK(cudaGraphAddHostNode(&hn, g2, NULL, 0, &hp));
    CKD(cuStreamBeginCaptureToGraph(s, g2, &hn, NULL, 1, CU_STREAM_CAPTURE_MODE_RELAXED));
    CK(cudaLaunchHostFunc(s, rec, (void *)(intptr_t)2));
    CKD(cuStreamEndCapture(s, &o2));
    CHECK(o2 == g2, "driver capture returned another graph");
    cudaGraphExec_t ge2;
    CK(cudaGraphInstantiate(&ge2, g2, 0));
    for (int rep = 0; rep < 10; rep++) {
        order_n = 0;
        CK(cudaGraphLaunch(ge2, s));
        CK(cudaStreamSynchronize(s));
        CHECK(order_n == 2 && order_log[0] == 1 && order_log[1] == 2, "driver capture order");
    }
    CHECK(cudaStreamBeginCaptureToGraph(s, g2, &m, NULL, 1, cudaStreamCaptureModeGlobal) == cudaErrorInvalidValue,
          "a dependency from another graph");
    (void)cudaGetLastError();
    return 0;
}

static int t_func_attrs(void)
{
    register_kernels();
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *y = dev_alloc_init(N, 1.0f);
    float m = 1.0f, b = 0.0f;
    int n = N;
    void *args[] = { &y, &m, &b, &n };
    const void *f = (const void *)k_axpb;
    struct cudaFuncAttributes fa;
    CK(cudaFuncGetAttributes(&fa, f));
    CHECK(fa.maxDynamicSharedSizeBytes == 48 * 1024 && fa.maxThreadsPerBlock == 1024, "default attributes");
    CK(cudaLaunchKernel(f, d1(1), d1(N), args, 48 * 1024, s));
    CHECK(cudaLaunchKernel(f, d1(1), d1(N), args, 48 * 1024 + 1, s) == cudaErrorInvalidValue, "over the default");
    CHECK(cudaPeekAtLastError() == cudaErrorInvalidValue && cudaGetLastError() == cudaErrorInvalidValue &&
          cudaGetLastError() == cudaSuccess, "last error");
    CK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, 100 * 1024));
    CK(cudaLaunchKernel(f, d1(1), d1(N), args, 100 * 1024, s));
    CHECK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, 227 * 1024 + 1) ==
          cudaErrorInvalidValue, "above the opt-in maximum");
    enum cudaFuncAttribute read_only = (enum cudaFuncAttribute)CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK;
    CHECK(cudaFuncSetAttribute(f, read_only, 1) == cudaErrorInvalidValue,
          "a read-only attribute");
    (void)cudaGetLastError();
    CK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, 16 * 1024));
    CHECK(cudaLaunchKernel(f, d1(1), d1(N), args, 32 * 1024, s) == cudaErrorInvalidValue,
          "a launch that worked before the limit was lowered");
    (void)cudaGetLastError();
    /* the driver sees the same limit, on launches and node creation */
    CUfunction cf = (CUfunction)(void *)handle_of(f);
    CHECK(cuLaunchKernel(cf, 1, 1, 1, N, 1, 1, 20 * 1024, s, args, NULL) == CUDA_ERROR_INVALID_VALUE, "driver launch");
    CKD(cuFuncSetAttribute(cf, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 64 * 1024));
    CKD(cuLaunchKernel(cf, 1, 1, 1, N, 1, 1, 64 * 1024, s, args, NULL));
    int v = 0;
    CKD(cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, cf));
    CHECK(v == 64 * 1024, "driver reads %d", v);
    CKD(cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 80 * 1024, (CUkernel)(void *)cf, 0));
    CKD(cuKernelGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (CUkernel)(void *)cf, 0));
    CK(cudaFuncGetAttributes(&fa, f));
    CHECK(v == 80 * 1024 && fa.maxDynamicSharedSizeBytes == 80 * 1024, "kernel attribute %d", v);
    cudaGraph_t g;
    cudaGraphNode_t kn;
    CK(cudaGraphCreate(&g, 0));
    struct cudaKernelNodeParams kp = { .func = (void *)f, .gridDim = d1(1), .blockDim = d1(N),
                                       .sharedMemBytes = 100 * 1024, .kernelParams = args };
    CHECK(cudaGraphAddKernelNode(&kn, g, NULL, 0, &kp) == cudaErrorInvalidValue, "runtime kernel node over the limit");
    CUDA_KERNEL_NODE_PARAMS dk = { .func = cf, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1, .blockDimX = N,
                                   .blockDimY = 1, .blockDimZ = 1, .sharedMemBytes = 100 * 1024,
                                   .kernelParams = args };
    CUgraphNode dn;
    CHECK(cuGraphAddKernelNode(&dn, g, NULL, 0, &dk) == CUDA_ERROR_INVALID_VALUE, "driver kernel node over the limit");
    dk.sharedMemBytes = 80 * 1024;
    CKD(cuGraphAddKernelNode(&dn, g, NULL, 0, &dk));
    (void)cudaGetLastError();
    /* module functions keep limits of their own */
    CUmodule mod;
    CUfunction mf;
    CKD(cuModuleLoadData(&mod, "sim:k_axpb"));
    CKD(cuModuleGetFunction(&mf, mod, "k_axpb"));
    CHECK(cuLaunchKernel(mf, 1, 1, 1, N, 1, 1, 64 * 1024, s, args, NULL) == CUDA_ERROR_INVALID_VALUE,
          "module function shares the runtime kernel's limit");
    CK(cudaStreamSynchronize(s));
    /* a reset puts the limit back */
    CK(cudaDeviceReset());
    CK(cudaFuncGetAttributes(&fa, f));
    CHECK(fa.maxDynamicSharedSizeBytes == 48 * 1024, "limit after reset %d", fa.maxDynamicSharedSizeBytes);
    return 0;
}

static CUcontext destroyed_ctx;
static CUresult destroyed_result;

static void *destroyed_thread(void *p)
{
    pthread_mutex_t *mu = p;
    CUstream st;
    cuCtxPushCurrent(destroyed_ctx);
    pthread_mutex_lock(mu);   /* main destroys it meanwhile */
    destroyed_result = cuStreamCreate(&st, 0);
    pthread_mutex_unlock(mu);
    return NULL;
}

static int t_contexts(void)
{
    setenv("SIM_DEVICES", "2", 1);
    register_kernels();
    CUcontext prim, p2, c2, cur;
    CKD(cuCtxGetCurrent(&prim));
    CKD(cuDevicePrimaryCtxRetain(&p2, 0));
    CHECK(p2 == prim, "primary context is the runtime's");
    CKD(cuCtxCreate(&c2, NULL, 0, 0));
    CKD(cuCtxGetCurrent(&cur));
    CHECK(cur == c2 && c2 != prim, "created context is current");
    unsigned long long id1 = 0, id2 = 0;
    CKD(cuCtxGetId(prim, &id1));
    CKD(cuCtxGetId(c2, &id2));
    CHECK(id1 != id2, "ids");
    cudaStream_t s2;
    CK(cudaStreamCreate(&s2));
    CUcontext sc;
    CKD(cuStreamGetCtx(s2, &sc));
    CHECK(sc == c2, "stream belongs to its creator's context");
    CKD(cuStreamGetCtx(CU_STREAM_LEGACY, &sc));
    CHECK(sc == c2, "legacy stream is the current context's");
    float *y = dev_alloc_init(N, 1.0f);
    axpb(s2, y, 2.0f, 0.0f, N);
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(s2, cudaStreamCaptureModeGlobal));
    axpb(s2, y, 1.0f, 1.0f, N);
    CK(cudaStreamEndCapture(s2, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    CKD(cuCtxPopCurrent(&cur));
    CHECK(cur == c2, "popped");
    CKD(cuCtxGetCurrent(&cur));
    CHECK(cur == prim, "back on the primary context");
    float m = 1.0f, b = 0.0f;
    int n = N;
    void *args[] = { &y, &m, &b, &n };
    CHECK(cudaLaunchKernel((const void *)k_axpb, d1(1), d1(N), args, 0, s2) == cudaErrorInvalidResourceHandle,
          "kernel on another context's stream");
    CHECK(cudaGraphLaunch(ge, 0) == cudaErrorInvalidResourceHandle, "exec on another context's stream");
    (void)cudaGetLastError();
    CK(cudaGraphLaunch(ge, s2));                          /* its own context's stream */
    float got[N];
    CK(cudaMemcpyAsync(got, y, sizeof(got), cudaMemcpyDeviceToHost, s2));   /* copies may use any stream */
    CK(cudaStreamSynchronize(s2));
    CHECK(got[0] == 3.0f, "work in the second context: %g", (double)got[0]);
    /* another device's primary context: execs are bound to theirs too */
    CK(cudaSetDevice(1));
    CHECK(simc_get_device() == 1, "device 1");
    cudaGraphExec_t ge0;
    CK(cudaSetDevice(0));
    CK(cudaGraphInstantiate(&ge0, g, 0));
    CK(cudaSetDevice(1));
    CHECK(cudaGraphLaunch(ge0, 0) == cudaErrorInvalidResourceHandle, "exec of device 0 on device 1");
    (void)cudaGetLastError();
    CK(cudaSetDevice(0));
    CK(cudaGraphLaunch(ge0, 0));
    CK(cudaDeviceSynchronize());
    /* destroying a context ends what it owns; a new one takes its address */
    cudaEvent_t e2;
    CKD(cuCtxPushCurrent(c2));
    CK(cudaEventCreate(&e2));
    CKD(cuCtxDestroy(c2));
    CKD(cuCtxGetCurrent(&cur));
    CHECK(cur == prim, "destroyed context popped");
    CHECK(cudaStreamSynchronize(s2) == cudaErrorInvalidResourceHandle, "stream of a destroyed context");
    CHECK(cudaEventQuery(e2) == cudaErrorInvalidResourceHandle, "event of a destroyed context");
    CHECK(cudaGraphLaunch(ge, s2) != cudaSuccess, "exec of a destroyed context");
    CHECK(cuCtxDestroy(c2) == CUDA_ERROR_INVALID_CONTEXT, "destroyed twice");
    CHECK(cuCtxDestroy(prim) == CUDA_ERROR_INVALID_CONTEXT, "primary destroyed");
    (void)cudaGetLastError();
    CUcontext c3;
    CKD(cuCtxCreate(&c3, NULL, 0, 1));
    CHECK(c3 == c2, "context handle not reused");
    int dev = -1;
    CKD(cuCtxGetDevice(&dev));
    CHECK(dev == 1 && simc_get_device() == 1, "new context's device %d", dev);
    CKD(cuCtxSetCurrent(prim));
    /* a thread that keeps a destroyed context current gets errors, no crash */
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&mu);
    destroyed_ctx = c3;
    pthread_t t;
    CHECK(!pthread_create(&t, NULL, destroyed_thread, &mu), "pthread_create");
    struct timespec ts = { 0, 10 * 1000 * 1000 };
    nanosleep(&ts, NULL);
    CKD(cuCtxDestroy(c3));
    pthread_mutex_unlock(&mu);
    pthread_join(t, NULL);
    CHECK(destroyed_result == CUDA_ERROR_CONTEXT_IS_DESTROYED, "use of a destroyed context: %d",
          (int)destroyed_result);
    unsigned flags;
    int active;
    CKD(cuDevicePrimaryCtxGetState(0, &flags, &active));
    CHECK(active == 1, "primary active");
    CKD(cuDevicePrimaryCtxRelease(0));
    CHECK(cuDevicePrimaryCtxRelease(0) == CUDA_ERROR_INVALID_CONTEXT, "released more than retained");
    /* CUDA 13 callers get the context-taking synchronize */
    void *p;
    CUdriverProcAddressQueryResult st;
    __typeof__(&cuGetProcAddress_v2) gpa = (__typeof__(&cuGetProcAddress_v2))drv_sym("cuGetProcAddress_v2");
    CKD(gpa("cuCtxSynchronize", &p, 13000, 0, &st));
    CHECK(p == drv_sym("cuCtxSynchronize_v2"), "cuCtxSynchronize for 13.0");
    CKD(((__typeof__(&cuCtxSynchronize_v2))p)(NULL));
    CKD(gpa("cuCtxSynchronize", &p, 12080, 0, &st));
    CHECK(p == drv_sym("cuCtxSynchronize"), "cuCtxSynchronize for 12.8");
    return 0;
}

static int t_reset(void)
{
    register_kernels();
    cudaStream_t s1, s2, t1, t2;
    cudaEvent_t e1, e2, f1, f2;
    CK(cudaStreamCreate(&s1));
    CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    CK(cudaEventCreate(&e1));
    CK(cudaEventCreateWithFlags(&e2, cudaEventDisableTiming));
    float *y = dev_alloc_init(N, 1.0f);
    cudaGraph_t g;
    cudaGraphExec_t ge, ge2;
    CK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
    axpb(s1, y, 0.5f, 0.5f, N);
    CK(cudaStreamEndCapture(s1, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    for (int i = 0; i < 5; i++) {
        CK(cudaGraphLaunch(ge, s1));
        CK(cudaEventRecord(e1, s1));
        CK(cudaStreamWaitEvent(s2, e1, 0));
        axpb(s2, y, 1.0f, 1.0f, N);
        axpb(cudaStreamPerThread, y, 1.0f, 0.0f, N);
    }
    CK(cudaDeviceReset());
    CHECK(cudaStreamSynchronize(s1) == cudaErrorInvalidResourceHandle, "old stream");
    CHECK(cudaStreamQuery(s2) == cudaErrorInvalidResourceHandle, "old stream query");
    CHECK(cudaEventQuery(e1) == cudaErrorInvalidResourceHandle, "old event");
    CHECK(cudaEventRecord(e2, 0) == cudaErrorInvalidResourceHandle, "old event record");
    CHECK(cudaGraphLaunch(ge, 0) != cudaSuccess, "old exec");
    CHECK(cudaGraphExecDestroy(ge) != cudaSuccess, "old exec destroy");
    CHECK(cudaFree(y) == cudaErrorInvalidValue, "old allocation");
    CHECK(cudaStreamDestroy(s1) == cudaErrorInvalidResourceHandle, "old stream destroy");
    (void)cudaGetLastError();
    /* created again in the same order, they get the same addresses */
    CK(cudaStreamCreateWithFlags(&t1, cudaStreamNonBlocking));
    CK(cudaStreamCreate(&t2));
    CK(cudaEventCreate(&f1));
    CK(cudaEventCreate(&f2));
    CK(cudaGraphInstantiate(&ge2, g, 0));
    CHECK(t1 == s1 && t2 == s2, "streams not reused: %p %p / %p %p", (void *)t1, (void *)t2, (void *)s1, (void *)s2);
    CHECK(f1 == e1 && f2 == e2, "events not reused");
    CHECK(ge2 == ge, "exec not reused");
    unsigned fl = 0;
    CK(cudaStreamGetFlags(t1, &fl));
    CHECK(fl == cudaStreamNonBlocking, "reused stream keeps old flags");
    y = dev_alloc_init(N, 2.0f);
    axpb(cudaStreamPerThread, y, 2.0f, 0.0f, N);   /* a new per-thread stream */
    CK(cudaStreamSynchronize(cudaStreamPerThread));
    float got[N];
    CK(cudaMemcpy(got, y, sizeof(got), cudaMemcpyDeviceToHost));
    CHECK(got[0] == 4.0f, "work after reset: %g", (double)got[0]);
    /* plain destroy and create reuse too, with the new flags */
    CK(cudaStreamDestroy(t2));
    cudaStream_t t3;
    CK(cudaStreamCreateWithFlags(&t3, cudaStreamNonBlocking));
    CHECK(t3 == t2, "destroyed stream not reused");
    CK(cudaStreamGetFlags(t3, &fl));
    CHECK(fl == cudaStreamNonBlocking, "flags of the reused stream");
    CK(cudaEventDestroy(f1));
    cudaEvent_t f3;
    CK(cudaEventCreateWithFlags(&f3, cudaEventDisableTiming));
    CHECK(f3 == f1, "destroyed event not reused");
    CK(cudaGraphExecDestroy(ge2));
    cudaGraphExec_t ge3;
    CK(cudaGraphInstantiate(&ge3, g, 0));
    CHECK(ge3 == ge2, "destroyed exec not reused");
    /* the driver's reset */
    CKD(cuDevicePrimaryCtxReset(0));
    CHECK(cudaStreamQuery(t3) == cudaErrorInvalidResourceHandle, "stream after driver reset");
    (void)cudaGetLastError();
    return 0;
}

static void k_axpb2(const sim_launch *l, void **a)
{
    k_axpb(l, a);
}

static int t_modules(void)
{
    register_kernels();
    static const size_t sz2[] = { sizeof(float *), sizeof(float), sizeof(float), sizeof(int) };
    CHECK(simRegisterKernel(k_axpb2, "k_axpb2", 4, sz2) == 0, "register");
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *y = dev_alloc_init(N, 1.0f), got[N], h[N];
    init(h, 1.0f);
    CUmodule m1, m2;
    CUfunction f1, f1b, f2;
    CKD(cuModuleLoadData(&m1, "sim:k_axpb,k_sq"));
    CKD(cuModuleGetFunction(&f1, m1, "k_axpb"));
    CKD(cuModuleGetFunction(&f1b, m1, "k_axpb"));
    CHECK(f1 == f1b && f1 != (CUfunction)(void *)handle_of((const void *)k_axpb), "function handles");
    const char *name = NULL;
    size_t off, size;
    CKD(cuFuncGetName(&name, f1));
    CKD(cuFuncGetParamInfo(f1, 3, &off, &size));
    CHECK(!strcmp(name, "k_axpb") && off == 16 && size == 4, "function info");
    float m = 2.0f, b = 1.0f;
    int n = N;
    void *args[] = { &y, &m, &b, &n };
    CKD(cuLaunchKernel(f1, 1, 1, 1, N, 1, 1, 0, s, args, NULL));
    host_axpb(h, 2.0f, 1.0f, N);
    CHECK(cuModuleGetFunction(&f2, m1, "nope") == CUDA_ERROR_NOT_FOUND, "unknown name");
    CHECK(cuModuleLoadData(&m2, "cubin?") == CUDA_ERROR_INVALID_IMAGE, "bad image");
    CHECK(cuModuleLoadData(&m2, "sim:k_nope") == CUDA_ERROR_INVALID_IMAGE, "unknown kernel");
    CKD(cuModuleUnload(m1));
    CHECK(cuLaunchKernel(f1, 1, 1, 1, N, 1, 1, 0, s, args, NULL) == CUDA_ERROR_INVALID_HANDLE, "unloaded function");
    CHECK(cuFuncGetName(&name, f1) != CUDA_SUCCESS, "name of an unloaded function");
    CHECK(cuModuleUnload(m1) == CUDA_ERROR_INVALID_HANDLE, "unloaded twice");
    /* the next module's function takes the handle, with another layout */
    CKD(cuModuleLoadData(&m2, "sim:k_sq"));
    CKD(cuModuleGetFunction(&f2, m2, "k_sq"));
    CHECK(m2 == m1 && f2 == f1, "handles not reused");
    CKD(cuFuncGetParamInfo(f2, 1, &off, &size));
    CHECK(off == 8 && size == 4, "new layout %zu %zu", off, size);
    CHECK(cuFuncGetParamInfo(f2, 3, &off, &size) == CUDA_ERROR_INVALID_VALUE, "old layout");
    void *sargs[] = { &y, &n };
    CKD(cuLaunchKernel(f2, 1, 1, 1, N, 1, 1, 0, s, sargs, NULL));
    for (int i = 0; i < N; i++) {
        float v = h[i] * h[i] * 0.25f + h[i] * 1.7f + 0.3f;
        v -= (float)(long long)v;
        h[i] = v < 0 ? v + 1.0f : v;
    }
    CK(cudaStreamSynchronize(s));
    CK(cudaMemcpy(got, y, sizeof(got), cudaMemcpyDeviceToHost));
    CHECK(!memcmp(got, h, sizeof(got)), "module launches");
    /* libraries */
    CUlibrary lib, lib2;
    CUkernel kk;
    CUfunction kf, rf;
    CKD(cuLibraryLoadData(&lib, "sim:k_axpb2", NULL, NULL, 0, NULL, NULL, 0));
    CKD(cuLibraryGetKernel(&kk, lib, "k_axpb2"));
    CKD(cuKernelGetName(&name, kk));
    CKD(cuKernelGetParamInfo(kk, 2, &off, &size));
    CHECK(!strcmp(name, "k_axpb2") && off == 12, "library kernel info");
    CKD(cuKernelGetFunction(&kf, kk));
    CHECK((void *)kf != (void *)kk, "library function is its own handle");
    CKD(cuKernelGetLibrary(&lib2, kk));
    CHECK(lib2 == lib, "kernel's library");
    CHECK(cuLaunchKernel(kf, 1, 1, 1, N, 1, 1, 60 * 1024, s, args, NULL) == CUDA_ERROR_INVALID_VALUE, "limit");
    CKD(cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 64 * 1024, kk, 0));
    CKD(cuLaunchKernel(kf, 1, 1, 1, N, 1, 1, 60 * 1024, s, args, NULL));
    host_axpb(h, 2.0f, 1.0f, N);
    CK(cudaStreamSynchronize(s));
    CK(cudaMemcpy(got, y, sizeof(got), cudaMemcpyDeviceToHost));
    CHECK(!memcmp(got, h, sizeof(got)), "library launch");
    CKD(cuKernelGetFunction(&rf, (CUkernel)(void *)handle_of((const void *)k_axpb)));
    CHECK((void *)rf == (void *)handle_of((const void *)k_axpb), "runtime kernel's function");
    CKD(cuLibraryUnload(lib));
    CHECK(cuLaunchKernel(kf, 1, 1, 1, N, 1, 1, 0, s, args, NULL) == CUDA_ERROR_INVALID_HANDLE, "unloaded library");
    /* modules go with their context */
    CUcontext c2;
    CUmodule m3;
    CUfunction f3;
    CKD(cuCtxCreate(&c2, NULL, 0, 0));
    CKD(cuModuleLoadData(&m3, "sim:k_axpb"));
    CKD(cuModuleGetFunction(&f3, m3, "k_axpb"));
    CKD(cuCtxDestroy(c2));
    CHECK(cuFuncGetName(&name, f3) != CUDA_SUCCESS && cuModuleUnload(m3) == CUDA_ERROR_INVALID_HANDLE,
          "module outlived its context");
    return 0;
}

/* The runtime's spellings: deprecated in 13.0 but still what programs call. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
cudaError_t cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr, unsigned long long flags,
                                         enum cudaDriverEntryPointQueryResult *driverStatus);

static int t_entry_points(void)
{
    void *p = NULL;
    enum cudaDriverEntryPointQueryResult st;
    int n0 = gpa_dlsym_lookups;
    CK(cudaGetDriverEntryPoint("cuLaunchKernel", &p, cudaEnableDefault, &st));
    CHECK(p == drv_sym("cuLaunchKernel") && st == cudaDriverEntryPointSuccess, "cuLaunchKernel");
    CHECK(gpa_dlsym_lookups > n0, "the runtime did not look cuGetProcAddress_v2 up through dlsym");
    CK(cudaGetDriverEntryPoint("cuLaunchKernel", &p, cudaEnablePerThreadDefaultStream, &st));
    CHECK(p == drv_sym("cuLaunchKernel_ptsz"), "per-thread flavour");
    CK(cudaGetDriverEntryPoint_ptsz("cuMemsetD8Async", &p, cudaEnableDefault, &st));
    CHECK(p == drv_sym("cuMemsetD8Async_ptsz"), "per-thread runtime's default");
    CK(cudaGetDriverEntryPointByVersion("cuStreamWriteValue32", &p, 12000, cudaEnableDefault, &st));
    CHECK(p == drv_sym("cuStreamWriteValue32_v2"), "by version");
    CK(cudaGetDriverEntryPointByVersion("cuMemsetD2D32Async", &p, 12000, cudaEnableDefault, &st));
    CHECK(p == drv_sym("cuMemsetD2D32Async"), "2D memset");
    CK(cudaGetDriverEntryPoint("cuNoSuchThing", &p, cudaEnableDefault, &st));
    CHECK(!p && st == cudaDriverEntryPointSymbolNotFound, "unknown name");
    CHECK(cudaGetDriverEntryPointByVersion("cuLaunchKernel", &p, 99000, cudaEnableDefault, &st) ==
          cudaErrorInvalidValue, "version above the driver's");
    CHECK(cudaGetDriverEntryPoint("cuLaunchKernel", &p, 8, &st) == cudaErrorInvalidValue, "bad flags");
    (void)cudaGetLastError();
    CK(cudaGetDriverEntryPoint("cuSimFutureMemset", &p, cudaEnableDefault, &st));
    CHECK(p && st == cudaDriverEntryPointSuccess, "future entry point through the runtime");
    CK(cudaGetDriverEntryPointByVersion("cuSimFutureMemset", &p, 12080, cudaEnableDefault, &st));
    CHECK(!p && st == cudaDriverEntryPointVersionNotSufficent, "future entry point for an old caller");
    return 0;
}
#pragma GCC diagnostic pop

static int t_future_proc(void)
{
    register_kernels();
    __typeof__(&cuGetProcAddress_v2) gpa = (__typeof__(&cuGetProcAddress_v2))drv_sym("cuGetProcAddress_v2");
    CUresult (*fut)(CUdeviceptr, unsigned char, size_t, CUstream) = NULL, (*fut_pt)(CUdeviceptr, unsigned char,
                                                                                     size_t, CUstream) = NULL;
    CUdriverProcAddressQueryResult st;
    CKD(gpa("cuSimFutureMemset", (void **)&fut, 13000, 0, &st));
    CKD(gpa("cuSimFutureMemset", (void **)&fut_pt, 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st));
    CHECK(fut && fut_pt && fut != fut_pt, "both flavours");
    CHECK(!drv_sym("cuSimFutureMemset") && !dlsym(RTLD_DEFAULT, "cuSimFutureMemset"), "exported by name");
    void *p = (void *)1;
    CHECK(gpa("cuSimFutureMemset", &p, 12000, 0, &st) == CUDA_ERROR_NOT_FOUND && !p &&
          st == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT, "old callers do not get it");
    /* stream-ordered: after a wait before it (the stream does not block the
     * legacy one, so the copy below may look) */
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    unsigned char *d, got[64];
    CK(cudaMalloc((void **)&d, 64));
    CK(cudaMemset(d, 1, 64));
    int *gate;
    CK(cudaMallocHost((void **)&gate, sizeof(int)));
    *gate = 0;
    CKD(cuStreamWaitValue32(s, DPTR(gate), 1, CU_STREAM_WAIT_VALUE_EQ));
    CKD(fut(DPTR(d), 0x42, 32, s));
    CHECK(cudaStreamQuery(s) == cudaErrorNotReady, "future memset ran before the wait");
    CK(cudaMemcpy(got, d, 64, cudaMemcpyDeviceToHost));
    CHECK(got[0] == 1, "future memset is not stream-ordered");
    *gate = 1;
    CKD(fut_pt(DPTR(d) + 32, 0x43, 32, NULL));
    CK(cudaStreamSynchronize(s));
    CK(cudaStreamSynchronize(cudaStreamPerThread));
    CK(cudaMemcpy(got, d, 64, cudaMemcpyDeviceToHost));
    CHECK(got[0] == 0x42 && got[31] == 0x42 && got[32] == 0x43 && got[63] == 0x43, "future memset result");
    return 0;
}

static int t_launch_attrs(void)
{
    register_kernels();
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *y = dev_alloc_init(N, 1.0f), h[N], got[N];
    init(h, 1.0f);
    float m = 2.0f, b = 1.0f;
    int n = N;
    void *args[] = { &y, &m, &b, &n };
    cudaLaunchAttribute at[3];
    memset(at, 0, sizeof(at));
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = 2;
    at[0].val.clusterDim.y = 1;
    at[0].val.clusterDim.z = 1;
    at[1].id = cudaLaunchAttributePriority;
    at[1].val.priority = -1;
    at[2].id = cudaLaunchAttributeCooperative;
    at[2].val.cooperative = 1;
    cudaLaunchConfig_t c = { .gridDim = d1(4), .blockDim = d1(16), .stream = s, .attrs = at, .numAttrs = 3 };
    CK(cudaLaunchKernelExC(&c, (const void *)k_axpb, args));
    host_axpb(h, 2.0f, 1.0f, N);
    c.gridDim = d1(3);
    CHECK(cudaLaunchKernelExC(&c, (const void *)k_axpb, args) == cudaErrorInvalidClusterSize, "partial cluster");
    (void)cudaGetLastError();
    CK(cudaLaunchCooperativeKernel((const void *)k_axpb, d1(1), d1(N), args, 0, s));
    host_axpb(h, 2.0f, 1.0f, N);
    CUfunction f = (CUfunction)(void *)handle_of((const void *)k_axpb);
    CUlaunchAttribute ca[2];
    memset(ca, 0, sizeof(ca));
    ca[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    ca[0].value.clusterDim.x = 1;
    ca[0].value.clusterDim.y = 1;
    ca[0].value.clusterDim.z = 1;
    ca[1].id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
    ca[1].value.priority = 0;
    CUlaunchConfig cc = { .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1, .blockDimX = N, .blockDimY = 1,
                          .blockDimZ = 1, .hStream = s, .attrs = ca, .numAttrs = 2 };
    CKD(cuLaunchKernelEx(&cc, f, args, NULL));
    host_axpb(h, 2.0f, 1.0f, N);
    CKD(cuLaunchCooperativeKernel(f, 1, 1, 1, N, 1, 1, 0, s, args));
    host_axpb(h, 2.0f, 1.0f, N);
    CK(cudaStreamSynchronize(s));
    CK(cudaMemcpy(got, y, sizeof(got), cudaMemcpyDeviceToHost));
    CHECK(!memcmp(got, h, sizeof(got)), "attributed launches");
    return 0;
}

static int host_node_hits;

static void host_node(void *p)
{
    host_node_hits += (int)(intptr_t)p;
}

/* Everything an interposer may build graphs with through the driver. */
static int t_driver_graph(void)
{
    enum { W = 12, H = 4, P = 16 };
    register_kernels();
    CKD(cuInit(0));
    CUcontext ctx;
    CKD(cuCtxGetCurrent(&ctx));
    CUstream s, s2;
    CKD(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CKD(cuStreamCreateWithPriority(&s2, 0, -1));
    unsigned fl = 0;
    CKD(cuStreamGetFlags(s, &fl));
    CUcontext sc;
    CKD(cuStreamGetCtx(s, &sc));
    CHECK(fl == CU_STREAM_NON_BLOCKING && sc == ctx, "stream queries");
    CUevent ev, side;
    CKD(cuEventCreate(&ev, 0));
    CKD(cuEventCreate(&side, CU_EVENT_DISABLE_TIMING));
    float *y, *z, *pinned, *hosted;
    CKD(cuMemAlloc((CUdeviceptr *)&y, N * sizeof(float)));
    CKD(cuMemAlloc((CUdeviceptr *)&z, N * sizeof(float)));
    CKD(cuMemAllocHost((void **)&pinned, N * sizeof(float)));
    CKD(cuMemHostAlloc((void **)&hosted, N * sizeof(float), CU_MEMHOSTALLOC_DEVICEMAP));
    float page[P * H];
    for (int i = 0; i < P * H; i++)
        page[i] = (float)i;
    for (int i = 0; i < N; i++)
        pinned[i] = 0.5f;
    CKD(cuMemsetD32Async(DPTR(y), 0, N, s));
    CKD(cuMemsetD32Async(DPTR(z), 0, N, s));
    CKD(cuStreamSynchronize(s));
    CUgraph g, child;
    CKD(cuGraphCreate(&g, 0));
    CKD(cuGraphCreate(&child, 0));
    /* child: z = z*0.5 + pinned*1 */
    float one = 1.0f;
    int n = N;
    const float *pp = pinned;
    void *cargs[] = { &z, &pp, &one, &n };
    CUfunction kacc = (CUfunction)(void *)handle_of((const void *)k_acc);
    CUDA_KERNEL_NODE_PARAMS kp = { .func = kacc, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1, .blockDimX = N,
                                   .blockDimY = 1, .blockDimZ = 1, .kernelParams = cargs, .ctx = ctx };
    CUgraphNode cn;
    CKD(cuGraphAddKernelNode(&cn, child, NULL, 0, &kp));
    /* g: copy a pitched block of pageable memory into y, set a 2D window
     * with 16-bit elements, axpb by .kern, host node, events, the child */
    CUDA_MEMCPY3D c3 = { 0 };
    c3.srcMemoryType = CU_MEMORYTYPE_HOST;
    c3.srcHost = page;
    c3.srcPitch = P * sizeof(float);
    c3.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c3.dstDevice = DPTR(y);
    c3.dstPitch = W * sizeof(float);
    c3.WidthInBytes = W * sizeof(float);
    c3.Height = H;
    c3.Depth = 1;
    CUgraphNode cp, ms, kn, hn, er, ew, en, ch;
    CKD(cuGraphAddMemcpyNode(&cp, g, NULL, 0, &c3, ctx));
    CUDA_MEMSET_NODE_PARAMS mp = { .dst = DPTR(y + W * H), .pitch = 8 * sizeof(float), .value = 0x3c00,
                                   .elementSize = 2, .width = 4, .height = 2 };
    CKD(cuGraphAddMemsetNode(&ms, g, &cp, 1, &mp, ctx));
    float m = 2.0f, b = 1.0f;
    void *kargs[] = { &y, &m, &b, &n };
    CUDA_KERNEL_NODE_PARAMS kp2 = { .kern = (CUkernel)(void *)handle_of((const void *)k_axpb), .gridDimX = 1,
                                    .gridDimY = 1, .gridDimZ = 1, .blockDimX = N, .blockDimY = 1, .blockDimZ = 1,
                                    .kernelParams = kargs };
    CKD(cuGraphAddKernelNode(&kn, g, &ms, 1, &kp2));
    CUkernelNodeAttrValue av;
    memset(&av, 0, sizeof(av));
    av.priority = -1;
    CKD(cuGraphKernelNodeSetAttribute(kn, CU_LAUNCH_ATTRIBUTE_PRIORITY, &av));
    av.clusterDim.x = 2;
    av.clusterDim.y = av.clusterDim.z = 1;
    CHECK(cuGraphKernelNodeSetAttribute(kn, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, &av) ==
          CUDA_ERROR_INVALID_CLUSTER_SIZE, "a cluster larger than the grid");
    CHECK(cuGraphKernelNodeSetAttribute(ms, CU_LAUNCH_ATTRIBUTE_PRIORITY, &av) == CUDA_ERROR_INVALID_VALUE,
          "a kernel attribute on a memset node");
    CUDA_HOST_NODE_PARAMS hp = { .fn = host_node, .userData = (void *)(intptr_t)1 };
    CKD(cuGraphAddHostNode(&hn, g, &kn, 1, &hp));
    CKD(cuGraphAddEventRecordNode(&er, g, &hn, 1, ev));
    CKD(cuGraphAddEventWaitNode(&ew, g, NULL, 0, side));
    CUgraphNode two[] = { er, ew };
    CKD(cuGraphAddEmptyNode(&en, g, two, 2));
    CKD(cuGraphAddChildGraphNode(&ch, g, &en, 1, child));
    CKD(cuGraphDestroy(child));                    /* the node holds its own copy */
    CUgraphExec ge;
    CKD(cuGraphInstantiateWithFlags(&ge, g, 0));
    float want_y[N], want_z[N], got[N];
    memset(want_y, 0, sizeof(want_y));
    memset(want_z, 0, sizeof(want_z));
    for (int rep = 0; rep < 3; rep++) {
        if (rep == 2) {
            /* new parameters for each kind of node */
            m = 3.0f;
            CKD(cuGraphExecKernelNodeSetParams(ge, kn, &kp2));
            /* the driver updates no copy of more than one dimension */
            c3.srcHost = page + 1;
            CHECK(cuGraphExecMemcpyNodeSetParams(ge, cp, &c3, ctx) == CUDA_ERROR_INVALID_VALUE,
                  "a 2D copy node's update");
            mp.value = 0x4000;
            CKD(cuGraphExecMemsetNodeSetParams(ge, ms, &mp, ctx));
            hp.userData = (void *)(intptr_t)10;
            CKD(cuGraphExecHostNodeSetParams(ge, hn, &hp));
        }
        for (int i = 0; i < P * H; i++)
            page[i] = (float)(i + 100 * rep);   /* pageable host sides are read when the node runs */
        CKD(cuEventRecordWithFlags(side, s2, 0));
        CKD(cuGraphLaunch(ge, s));
        CKD(cuStreamWaitEvent(s2, ev, 0));
        CKD(cuStreamSynchronize(s));
        CKD(cuCtxSynchronize());
        CHECK(cuEventQuery(ev) == CUDA_SUCCESS, "event record node");
        const float *src = page;
        for (int r = 0; r < H; r++)
            memcpy(want_y + r * W, src + r * P, W * sizeof(float));
        uint16_t hv = rep == 2 ? 0x4000 : 0x3c00;
        for (int r = 0; r < 2; r++)
            for (int i = 0; i < 4; i++)
                memcpy((char *)(want_y + W * H) + r * 8 * sizeof(float) + 2 * i, &hv, 2);
        host_axpb(want_y, rep == 2 ? 3.0f : 2.0f, 1.0f, N);
        host_acc(want_z, pinned, 1.0f, N);
        CKD(cuMemcpyDtoHAsync(got, DPTR(y), sizeof(got), s));
        CKD(cuStreamSynchronize(s));
        CHECK(!memcmp(got, want_y, sizeof(got)), "launch %d: y", rep);
        CKD(cuMemcpyDtoH(got, DPTR(z), sizeof(got)));
        CHECK(!memcmp(got, want_z, sizeof(got)), "launch %d: child graph", rep);
    }
    CHECK(host_node_hits == 12, "host node hits %d", host_node_hits);
    /* captured through the driver into an existing graph */
    CUgraph cg;
    CKD(cuGraphCreate(&cg, 0));
    CKD(cuStreamBeginCaptureToGraph(s, cg, NULL, NULL, 0, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUstreamCaptureStatus cst;
    CKD(cuStreamIsCapturing(s, &cst));
    CUgraph info_g = NULL;
    cuuint64_t cid = 0;
    CKD(cuStreamGetCaptureInfo(s, &cst, &cid, &info_g, NULL, NULL, NULL));
    CHECK(cst == CU_STREAM_CAPTURE_STATUS_ACTIVE && info_g == cg && cid, "capture info");
    CKD(cuMemsetD2D32Async(DPTR(z), 4 * sizeof(float), 0x3f800000u, 2, 3, s));
    CKD(cuMemcpy3DAsync(&c3, s));
    CKD(cuLaunchKernel(kacc, 1, 1, 1, N, 1, 1, 0, s, cargs, NULL));
    CKD(cuMemsetD8Async(DPTR(hosted), 0, N * sizeof(float), s));
    CKD(cuMemsetD16Async(DPTR(hosted), 0x3f80, 2, s));
    CKD(cuLaunchHostFunc(s, host_node, (void *)(intptr_t)100));
    CUgraph out;
    CKD(cuStreamEndCapture(s, &out));
    size_t nn = 0;
    CKD(cuGraphGetNodes(out, NULL, &nn));
    CHECK(out == cg && nn == 6, "driver capture: %zu nodes", nn);
    CKD(cuGraphExecDestroy(ge));
    CKD(cuGraphDestroy(g));
    CKD(cuGraphDestroy(cg));
    CKD(cuEventSynchronize(ev));
    CKD(cuEventDestroy(ev));
    CKD(cuEventDestroy(side));
    CKD(cuStreamQuery(s));
    CKD(cuStreamDestroy(s));
    CKD(cuStreamDestroy(s2));
    CKD(cuMemFreeHost(pinned));
    CKD(cuMemFreeHost(hosted));
    CKD(cuMemFree(DPTR(y)));
    CKD(cuMemFree(DPTR(z)));
    return 0;
}

/* Link names the real libcuda.so.1 exports, and the query names that must
 * reach them through cuGetProcAddress_v2 (plain, per-thread). */
static int t_exports(void)
{
    static const char *links[] = {
        "cuMemsetD16_v2", "cuMemsetD16_v2_ptds", "cuMemsetD32_v2", "cuMemsetD32_v2_ptds", "cuMemsetD16Async",
        "cuMemsetD16Async_ptsz", "cuMemsetD2D8_v2", "cuMemsetD2D8_v2_ptds", "cuMemsetD2D16_v2",
        "cuMemsetD2D16_v2_ptds", "cuMemsetD2D32_v2", "cuMemsetD2D32_v2_ptds", "cuMemsetD2D8Async",
        "cuMemsetD2D8Async_ptsz", "cuMemsetD2D16Async", "cuMemsetD2D16Async_ptsz", "cuMemsetD2D32Async",
        "cuMemsetD2D32Async_ptsz", "cuMemcpy2D_v2", "cuMemcpy2D_v2_ptds", "cuMemcpy2DUnaligned_v2",
        "cuMemcpy2DUnaligned_v2_ptds", "cuMemcpy3D_v2", "cuMemcpy3D_v2_ptds", "cuMemcpy3DAsync_v2",
        "cuMemcpy3DAsync_v2_ptsz", "cuMemcpyPeer", "cuMemcpyPeer_ptds", "cuMemcpyPeerAsync",
        "cuMemcpyPeerAsync_ptsz", "cuMemcpy3DPeer", "cuMemcpy3DPeer_ptds", "cuMemcpy3DPeerAsync",
        "cuMemcpy3DPeerAsync_ptsz", "cuMemcpyBatchAsync_v2", "cuMemcpyBatchAsync_v2_ptsz", "cuMemcpyHtoD_v2",
        "cuMemcpyHtoD_v2_ptds", "cuMemcpyDtoH_v2", "cuMemcpyDtoH_v2_ptds", "cuMemcpyDtoD_v2",
        "cuMemcpyDtoD_v2_ptds", "cuStreamWriteValue32_v2", "cuStreamWriteValue32_v2_ptsz",
        "cuStreamWriteValue64_v2", "cuStreamWriteValue64_v2_ptsz", "cuStreamWaitValue32_v2",
        "cuStreamWaitValue32_v2_ptsz", "cuStreamWaitValue64_v2", "cuStreamWaitValue64_v2_ptsz",
        "cuStreamBatchMemOp_v2", "cuStreamBatchMemOp_v2_ptsz", "cuCtxCreate_v4", "cuCtxDestroy_v2",
        "cuCtxPushCurrent_v2", "cuCtxPopCurrent_v2", "cuCtxGetCurrent", "cuCtxSetCurrent", "cuCtxGetDevice",
        "cuCtxGetDevice_v2", "cuCtxSynchronize", "cuCtxSynchronize_v2", "cuCtxGetId", "cuCtxGetFlags",
        "cuCtxGetApiVersion", "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRelease_v2",
        "cuDevicePrimaryCtxReset_v2", "cuDevicePrimaryCtxGetState", "cuDevicePrimaryCtxSetFlags_v2",
        "cuModuleLoadData", "cuModuleLoadDataEx", "cuModuleGetFunction", "cuModuleUnload", "cuLibraryLoadData",
        "cuLibraryGetKernel", "cuLibraryUnload", "cuKernelGetFunction", "cuKernelGetLibrary", "cuKernelGetName",
        "cuKernelGetParamInfo", "cuFuncGetParamInfo", "cuFuncGetName", "cuFuncGetModule", "cuFuncSetAttribute",
        "cuFuncGetAttribute", "cuKernelSetAttribute", "cuKernelGetAttribute", "cuMemHostAlloc",
        "cuMemHostGetDevicePointer_v2", "cuMemHostGetFlags", "cuMemHostRegister_v2", "cuMemHostUnregister",
        "cuMemAllocManaged", "cuMemAllocHost_v2", "cuMemFreeHost", "cuPointerGetAttribute",
        "cuPointerGetAttributes", "cuLaunchCooperativeKernel", "cuLaunchCooperativeKernel_ptsz",
        "cuStreamBeginCaptureToGraph", "cuStreamBeginCaptureToGraph_ptsz", "cuStreamGetCtx", "cuStreamGetCtx_ptsz",
        "cuStreamGetCtx_v2", "cuStreamGetCtx_v2_ptsz", "cuGraphAddChildGraphNode", "cuGraphClone",
        "cuGraphInstantiateWithFlags", "cuGraphAddKernelNode_v2", "cuGraphExecKernelNodeSetParams_v2",
        "cuGraphKernelNodeSetAttribute", "cuGraphAddMemcpyNode", "cuGraphAddMemsetNode", "cuGraphAddHostNode",
        "cuGraphAddEventRecordNode",
        "cuGraphAddEventWaitNode", "cuGraphAddEmptyNode", "cuGraphExecMemcpyNodeSetParams",
        "cuGraphExecMemsetNodeSetParams", "cuGraphExecHostNodeSetParams", "cuGraphLaunch", "cuGraphLaunch_ptsz",
        "cuGraphExecDestroy", "cuGraphDestroy", "cuEventCreate", "cuEventRecord", "cuEventRecord_ptsz",
        "cuEventRecordWithFlags", "cuEventRecordWithFlags_ptsz", "cuEventQuery", "cuEventSynchronize",
        "cuEventDestroy_v2", "cuStreamWaitEvent", "cuStreamWaitEvent_ptsz", "cuStreamGetFlags",
        "cuStreamGetFlags_ptsz", "cuStreamCreate", "cuStreamCreateWithPriority", "cuStreamDestroy_v2",
        "cuLaunchKernel", "cuLaunchKernel_ptsz", "cuLaunchKernelEx", "cuLaunchKernelEx_ptsz", "cuMemcpyAsync",
        "cuMemcpyAsync_ptsz", "cuMemsetD8Async", "cuMemsetD8Async_ptsz", "cuMemsetD32Async",
        "cuMemsetD32Async_ptsz", "cuLaunchHostFunc", "cuLaunchHostFunc_ptsz", "cuStreamSynchronize",
        "cuStreamSynchronize_ptsz", "cuStreamQuery", "cuStreamQuery_ptsz", "cuStreamGetCaptureInfo_v3",
        "cuStreamGetCaptureInfo_v3_ptsz", "cuStreamIsCapturing", "cuStreamIsCapturing_ptsz",
    };
    for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++)
        CHECK(drv_sym(links[i]), "libcuda.so.1 does not export %s", links[i]);
    static const char *q[][3] = {
        { "cuMemsetD16", "cuMemsetD16_v2", "cuMemsetD16_v2_ptds" },
        { "cuMemsetD32", "cuMemsetD32_v2", "cuMemsetD32_v2_ptds" },
        { "cuMemsetD16Async", "cuMemsetD16Async", "cuMemsetD16Async_ptsz" },
        { "cuMemsetD2D8", "cuMemsetD2D8_v2", "cuMemsetD2D8_v2_ptds" },
        { "cuMemsetD2D16", "cuMemsetD2D16_v2", "cuMemsetD2D16_v2_ptds" },
        { "cuMemsetD2D32", "cuMemsetD2D32_v2", "cuMemsetD2D32_v2_ptds" },
        { "cuMemsetD2D8Async", "cuMemsetD2D8Async", "cuMemsetD2D8Async_ptsz" },
        { "cuMemsetD2D16Async", "cuMemsetD2D16Async", "cuMemsetD2D16Async_ptsz" },
        { "cuMemsetD2D32Async", "cuMemsetD2D32Async", "cuMemsetD2D32Async_ptsz" },
        { "cuMemcpy2D", "cuMemcpy2D_v2", "cuMemcpy2D_v2_ptds" },
        { "cuMemcpy2DUnaligned", "cuMemcpy2DUnaligned_v2", "cuMemcpy2DUnaligned_v2_ptds" },
        { "cuMemcpy3D", "cuMemcpy3D_v2", "cuMemcpy3D_v2_ptds" },
        { "cuMemcpy3DAsync", "cuMemcpy3DAsync_v2", "cuMemcpy3DAsync_v2_ptsz" },
        { "cuMemcpyPeer", "cuMemcpyPeer", "cuMemcpyPeer_ptds" },
        { "cuMemcpyPeerAsync", "cuMemcpyPeerAsync", "cuMemcpyPeerAsync_ptsz" },
        { "cuMemcpy3DPeer", "cuMemcpy3DPeer", "cuMemcpy3DPeer_ptds" },
        { "cuMemcpy3DPeerAsync", "cuMemcpy3DPeerAsync", "cuMemcpy3DPeerAsync_ptsz" },
        { "cuMemcpyBatchAsync", "cuMemcpyBatchAsync_v2", "cuMemcpyBatchAsync_v2_ptsz" },
        { "cuMemcpyHtoD", "cuMemcpyHtoD_v2", "cuMemcpyHtoD_v2_ptds" },
        { "cuMemcpyDtoH", "cuMemcpyDtoH_v2", "cuMemcpyDtoH_v2_ptds" },
        { "cuMemcpyDtoD", "cuMemcpyDtoD_v2", "cuMemcpyDtoD_v2_ptds" },
        { "cuStreamWriteValue32", "cuStreamWriteValue32_v2", "cuStreamWriteValue32_v2_ptsz" },
        { "cuStreamWriteValue64", "cuStreamWriteValue64_v2", "cuStreamWriteValue64_v2_ptsz" },
        { "cuStreamWaitValue32", "cuStreamWaitValue32_v2", "cuStreamWaitValue32_v2_ptsz" },
        { "cuStreamWaitValue64", "cuStreamWaitValue64_v2", "cuStreamWaitValue64_v2_ptsz" },
        { "cuStreamBatchMemOp", "cuStreamBatchMemOp_v2", "cuStreamBatchMemOp_v2_ptsz" },
        { "cuCtxCreate", "cuCtxCreate_v4", "cuCtxCreate_v4" },
        { "cuCtxDestroy", "cuCtxDestroy_v2", "cuCtxDestroy_v2" },
        { "cuCtxPushCurrent", "cuCtxPushCurrent_v2", "cuCtxPushCurrent_v2" },
        { "cuCtxPopCurrent", "cuCtxPopCurrent_v2", "cuCtxPopCurrent_v2" },
        { "cuCtxGetDevice", "cuCtxGetDevice_v2", "cuCtxGetDevice_v2" },
        { "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRetain" },
        { "cuDevicePrimaryCtxRelease", "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease_v2" },
        { "cuDevicePrimaryCtxReset", "cuDevicePrimaryCtxReset_v2", "cuDevicePrimaryCtxReset_v2" },
        { "cuModuleLoadData", "cuModuleLoadData", "cuModuleLoadData" },
        { "cuModuleGetFunction", "cuModuleGetFunction", "cuModuleGetFunction" },
        { "cuModuleUnload", "cuModuleUnload", "cuModuleUnload" },
        { "cuLibraryLoadData", "cuLibraryLoadData", "cuLibraryLoadData" },
        { "cuLibraryGetKernel", "cuLibraryGetKernel", "cuLibraryGetKernel" },
        { "cuLibraryUnload", "cuLibraryUnload", "cuLibraryUnload" },
        { "cuKernelGetFunction", "cuKernelGetFunction", "cuKernelGetFunction" },
        { "cuKernelGetName", "cuKernelGetName", "cuKernelGetName" },
        { "cuFuncSetAttribute", "cuFuncSetAttribute", "cuFuncSetAttribute" },
        { "cuFuncGetAttribute", "cuFuncGetAttribute", "cuFuncGetAttribute" },
        { "cuKernelSetAttribute", "cuKernelSetAttribute", "cuKernelSetAttribute" },
        { "cuMemHostAlloc", "cuMemHostAlloc", "cuMemHostAlloc" },
        { "cuMemHostGetDevicePointer", "cuMemHostGetDevicePointer_v2", "cuMemHostGetDevicePointer_v2" },
        { "cuMemHostRegister", "cuMemHostRegister_v2", "cuMemHostRegister_v2" },
        { "cuMemHostUnregister", "cuMemHostUnregister", "cuMemHostUnregister" },
        { "cuMemAllocManaged", "cuMemAllocManaged", "cuMemAllocManaged" },
        { "cuPointerGetAttribute", "cuPointerGetAttribute", "cuPointerGetAttribute" },
        { "cuPointerGetAttributes", "cuPointerGetAttributes", "cuPointerGetAttributes" },
        { "cuLaunchCooperativeKernel", "cuLaunchCooperativeKernel", "cuLaunchCooperativeKernel_ptsz" },
        { "cuStreamBeginCaptureToGraph", "cuStreamBeginCaptureToGraph", "cuStreamBeginCaptureToGraph_ptsz" },
        { "cuStreamGetCtx", "cuStreamGetCtx_v2", "cuStreamGetCtx_v2_ptsz" },
        { "cuGraphAddChildGraphNode", "cuGraphAddChildGraphNode", "cuGraphAddChildGraphNode" },
        { "cuGraphInstantiate", "cuGraphInstantiateWithFlags", "cuGraphInstantiateWithFlags" },
        { "cuGraphInstantiateWithFlags", "cuGraphInstantiateWithFlags", "cuGraphInstantiateWithFlags" },
        { "cuMemAllocHost", "cuMemAllocHost_v2", "cuMemAllocHost_v2" },
        { "cuMemFreeHost", "cuMemFreeHost", "cuMemFreeHost" },
        { "cuStreamGetCaptureInfo", "cuStreamGetCaptureInfo_v3", "cuStreamGetCaptureInfo_v3_ptsz" },
        { "cuStreamIsCapturing", "cuStreamIsCapturing", "cuStreamIsCapturing_ptsz" },
        { "cuEventRecordWithFlags", "cuEventRecordWithFlags", "cuEventRecordWithFlags_ptsz" },
        { "cuGraphExecKernelNodeSetParams", "cuGraphExecKernelNodeSetParams_v2", "cuGraphExecKernelNodeSetParams_v2" },
        { "cuGraphAddKernelNode", "cuGraphAddKernelNode_v2", "cuGraphAddKernelNode_v2" },
        { "cuGraphKernelNodeSetAttribute", "cuGraphKernelNodeSetAttribute", "cuGraphKernelNodeSetAttribute" },
    };
    __typeof__(&cuGetProcAddress_v2) gpa = (__typeof__(&cuGetProcAddress_v2))drv_sym("cuGetProcAddress_v2");
    for (size_t i = 0; i < sizeof(q) / sizeof(q[0]); i++)
        for (int pt = 0; pt < 2; pt++) {
            void *p = NULL;
            CUdriverProcAddressQueryResult st;
            CUresult r = gpa(q[i][0], &p, 13000, pt ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : 0, &st);
            CHECK(r == CUDA_SUCCESS && p && p == drv_sym(q[i][1 + pt]), "cuGetProcAddress_v2(%s, %s) is not %s",
                  q[i][0], pt ? "ptsz" : "plain", q[i][1 + pt]);
        }
    /* and the runtime's, with their version node */
    static const char *rt[] = {
        "cudaMemcpy2D", "cudaMemcpy2D_ptds", "cudaMemcpy3D", "cudaMemcpy3D_ptds", "cudaMemcpy3DAsync",
        "cudaMemcpy3DAsync_ptsz", "cudaMemcpyPeer", "cudaMemcpyPeerAsync", "cudaMemcpy3DPeer",
        "cudaMemcpy3DPeer_ptds", "cudaMemcpy3DPeerAsync", "cudaMemcpy3DPeerAsync_ptsz", "cudaMemcpyBatchAsync",
        "cudaMemcpyBatchAsync_ptsz", "cudaMemset2D", "cudaMemset2D_ptds", "cudaMemset2DAsync",
        "cudaMemset2DAsync_ptsz", "cudaMemset3D", "cudaMemset3D_ptds", "cudaMemset3DAsync",
        "cudaMemset3DAsync_ptsz", "cudaMemcpyToSymbol", "cudaMemcpyToSymbol_ptds", "cudaMemcpyFromSymbol",
        "cudaMemcpyFromSymbol_ptds", "cudaMemcpyToSymbolAsync", "cudaMemcpyToSymbolAsync_ptsz",
        "cudaMemcpyFromSymbolAsync", "cudaMemcpyFromSymbolAsync_ptsz", "cudaGetSymbolAddress", "cudaGetSymbolSize",
        "cudaStreamBeginCaptureToGraph", "cudaStreamBeginCaptureToGraph_ptsz", "cudaFuncSetAttribute",
        "cudaFuncGetAttributes", "cudaGetDriverEntryPoint", "cudaGetDriverEntryPoint_ptsz",
        "cudaGetDriverEntryPointByVersion", "cudaGetDriverEntryPointByVersion_ptsz", "cudaMallocManaged",
        "cudaHostRegister", "cudaHostUnregister", "cudaHostGetDevicePointer", "cudaHostGetFlags",
        "cudaGraphAddChildGraphNode", "cudaGraphClone", "cudaDeviceReset", "cudaGraphKernelNodeSetAttribute",
    };
    void *h = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
    CHECK(h, "libcudart.so.13 not loaded");
    for (size_t i = 0; i < sizeof(rt) / sizeof(rt[0]); i++)
        CHECK(dlvsym(h, rt[i], "libcudart.so.13"), "libcudart.so.13 does not export %s", rt[i]);
    return 0;
}

static int t_fork(void)
{
    register_kernels();
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *y = dev_alloc_init(N, 1.0f);
    for (int i = 0; i < 10; i++)
        axpb(s, y, 0.5f, 1.0f, N);
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0) {
        /* the child may not use its parent's device: calls fail, nothing runs */
        float got[N];
        int ok = cudaStreamSynchronize(s) == cudaErrorInitializationError &&
                 cudaMemcpy(got, y, sizeof(got), cudaMemcpyDeviceToHost) == cudaErrorInitializationError &&
                 cudaMalloc((void **)&y, 4) == cudaErrorInitializationError &&
                 cudaEventQuery(NULL) == cudaErrorInitializationError;
        _exit(ok ? 0 : 3);
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child saw a usable device: status %d", status);
    CK(cudaStreamSynchronize(s));
    float h[N], got[N];
    init(h, 1.0f);
    for (int i = 0; i < 10; i++)
        host_axpb(h, 0.5f, 1.0f, N);
    CK(cudaMemcpy(got, y, sizeof(got), cudaMemcpyDeviceToHost));
    CHECK(!memcmp(got, h, sizeof(got)), "parent's work after the fork");
    return 0;
}

static const struct {
    const char *name;
    int (*fn)(void);
} tests[] = {
    { "legacy-barrier", t_legacy_barrier },
    { "legacy-waits", t_legacy_waits },
    { "capture", t_capture },
    { "graph-order", t_graph_order },
    { "graph-exec-params", t_graph_exec_params },
    { "pageable-staging", t_pageable_staging },
    { "errors", t_errors },
    { "procaddress", t_procaddress },
    { "symbols", t_symbols },
    { "device-thread", t_device_thread },
    { "memkinds", t_memkinds },
    { "memops", t_memops },
    { "memsets", t_memsets },
    { "copies", t_copies },
    { "device-symbols", t_device_symbols },
    { "capture-to-graph", t_capture_to_graph },
    { "func-attrs", t_func_attrs },
    { "contexts", t_contexts },
    { "reset", t_reset },
    { "modules", t_modules },
    { "entry-points", t_entry_points },
    { "future-proc", t_future_proc },
    { "launch-attrs", t_launch_attrs },
    { "driver-graph", t_driver_graph },
    { "exports", t_exports },
    { "fork", t_fork },
};

int main(int argc, char **argv)
{
    if (argc < 2)
        FAIL("usage: %s TEST", argv[0]);
    const char *t = argv[1];
    if (!strcmp(t, "racy-child"))
        return racy_child();
    if (!strcmp(t, "randomises")) {
        char self[4096];
        ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
        if (n <= 0)
            FAIL("cannot read /proc/self/exe");
        self[n] = 0;
        return t_randomises(self);
    }
    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
        if (!strcmp(t, tests[i].name))
            return tests[i].fn();
    FAIL("unknown test %s", t);
}
