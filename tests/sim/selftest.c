/* Self-tests of the simulated device: that its scheduler really randomises and
 * really keeps the ordering rules the scenario tests rely on. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda.h>

#include "progs/common.h"

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
    if (!strcmp(t, "legacy-barrier"))
        return t_legacy_barrier();
    if (!strcmp(t, "capture"))
        return t_capture();
    if (!strcmp(t, "graph-order"))
        return t_graph_order();
    if (!strcmp(t, "graph-exec-params"))
        return t_graph_exec_params();
    if (!strcmp(t, "pageable-staging"))
        return t_pageable_staging();
    if (!strcmp(t, "errors"))
        return t_errors();
    if (!strcmp(t, "procaddress"))
        return t_procaddress();
    if (!strcmp(t, "symbols"))
        return t_symbols();
    FAIL("unknown test %s", t);
}
