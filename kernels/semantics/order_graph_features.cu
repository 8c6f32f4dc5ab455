// graph_features: the program's own CUDA graphs built from the newer node
// types, launched every iteration between eager work on the streams that feed
// them and read their results (order_own_graph covers plain kernel nodes,
// exec kernel node updates and per-iteration captures; this one does not):
//  - C: a kernel node calls cudaGraphSetConditional from data an EAGER kernel
//    wrote just before the launch; an IF node and a WHILE node (whose body
//    counts down and re-sets the condition) follow.  A launch that sees stale
//    inputs takes the wrong branch or the wrong trip count;
//  - M: alloc node -> kernels -> free node, launched on s or on a third stream
//    s3 (joined with events); cudaDeviceGraphMemTrim every 8th iteration after
//    a device sync, so the next launch maps fresh physical memory;
//  - F: an alloc node whose memory outlives the graph: eager kernels read it
//    after the launch, then cudaFreeAsync frees it in stream order, and the
//    next launch hands back the same fixed address (documented);
//  - E: event wait node on an event recorded EAGERLY on s2 just before the
//    launch, memset node, kernel, child graph node, event record node that s2
//    waits for eagerly afterwards, memcpy node to pinned memory and a host
//    node reading it; launched on s or s3; every 4th iteration
//    cudaGraphExecUpdate swaps in a rebuilt, topologically identical graph
//    whose memset value and child kernel scalar changed;
//  - every graph is uploaded (cudaGraphUpload) before its first launch.
// A held-back, reordered or stale replay of any eager op or graph launch, an
// event record/wait resolved against the wrong record, or an update applied
// to the wrong launch shows up in ACC, Z2 or the host node's sums.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>
#include "order_common.cuh"

static const int N = 2048, TPB = 256, GRID = N / TPB, ITERS = 64;
typedef cudaGraphConditionalHandle CH;

__global__ void kGen(unsigned *x, unsigned i) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    spin_cycles(20000);
    x[j] = hsh(i, (unsigned)j);
}
__global__ void kCtl(unsigned *ctl, unsigned i) {   // <<<1,1>>>: the graph's branch data
    spin_cycles(30000);
    ctl[0] = hsh(i, 7u) & 1u;
    ctl[1] = hsh(i, 99u) % 5u;
}
// graph C
__global__ void kSet(const unsigned *ctl, unsigned *cnt, CH hIf, CH hWh) {   // <<<1,1>>>
    unsigned f = ctl[0], t = ctl[1];
    *cnt = t;
    cudaGraphSetConditional(hIf, f);
    cudaGraphSetConditional(hWh, t != 0u ? 1u : 0u);
}
__global__ void kIfBody(unsigned *acc, const unsigned *x) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    acc[j] = acc[j] * 7u + x[j];
}
__global__ void kWBody(unsigned *acc, const unsigned *cnt) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    spin_cycles(2000);
    acc[j] = (acc[j] ^ hsh(*cnt, (unsigned)j)) + 1u;
}
__global__ void kWStep(unsigned *cnt, CH hWh) {   // <<<1,1>>>
    unsigned c = *cnt - 1u;
    *cnt = c;
    cudaGraphSetConditional(hWh, c != 0u ? 1u : 0u);
}
__global__ void kFin(unsigned *acc, const unsigned *x, const unsigned *cnt) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    acc[j] += (x[j] >> 3) + *cnt * 1000u;
}
// graph M
__global__ void kM1(unsigned *t, const unsigned *x, const unsigned *acc) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    t[j] = (x[j] * 2654435761u) ^ acc[j];
}
__global__ void kM2(unsigned *acc, const unsigned *t) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    acc[j] = acc[j] * 3u + t[j] + t[(j + 1) & (N - 1)];
}
// graph F and the eager kernel reading its allocation
__global__ void kF(unsigned *p, const unsigned *acc, const unsigned *x) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    p[j] = hsh(acc[j], x[j]);
}
__global__ void kUseP(unsigned *acc, const unsigned *p) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned v = p[(j * 7) & (N - 1)];
    spin_cycles(5000);
    acc[j] = acc[j] * 5u + v;
}
// graph E and stream s2
__global__ void kB2(unsigned *b2, unsigned i) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    spin_cycles(40000);
    b2[j] = hsh(i ^ 0xB2B2u, (unsigned)j);
}
__global__ void kE1(unsigned *acc, const unsigned *b2, const unsigned *m) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    acc[j] = acc[j] * 11u + b2[j] + m[j];
}
__global__ void kC1(unsigned *y, const unsigned *acc, unsigned kc) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    y[j] = acc[j] ^ kc;
}
__global__ void kC2(unsigned *y) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    spin_cycles(3000);
    y[j] = y[j] * 3u + 1u;
}
__global__ void kS2(unsigned *z2, const unsigned *y, unsigned i) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    z2[j] = y[j] * 13u + i;
}

struct HostCtx { const unsigned *hY; unsigned sums[ITERS]; int n; };
static unsigned fold(const unsigned *v) {
    unsigned s = 0x811C9DC5u;
    for (int j = 0; j < N; ++j) s = (s ^ v[j]) * 16777619u;
    return s;
}
static void CUDART_CB hostSum(void *p) {   // host node: reads what the memcpy node wrote
    HostCtx *c = (HostCtx *)p;
    unsigned s = fold(c->hY);
    if (c->n < ITERS) c->sums[c->n] = s;
    c->n++;
}

static cudaGraphNode_t addK(cudaGraph_t g, const cudaGraphNode_t *deps, size_t nd, void *fn, int grid, int tpb, void **args) {
    cudaKernelNodeParams p = {};
    p.func = fn; p.gridDim = dim3(grid); p.blockDim = dim3(tpb); p.sharedMemBytes = 0;
    p.kernelParams = args; p.extra = nullptr;
    cudaGraphNode_t n;
    CK(cudaGraphAddKernelNode(&n, g, deps, nd, &p));
    return n;
}
static cudaGraph_t condBody(cudaGraph_t g, const cudaGraphNode_t *deps, size_t nd, CH h,
                            cudaGraphConditionalNodeType type, cudaGraphNode_t *node) {
    cudaGraphNodeParams cp = {};
    cp.type = cudaGraphNodeTypeConditional;
    cp.conditional.handle = h; cp.conditional.type = type; cp.conditional.size = 1;
    CK(cudaGraphAddNode(node, g, deps, nullptr, nd, &cp));
    return cp.conditional.phGraph_out[0];
}
static void *allocNode(cudaGraph_t g, const cudaGraphNode_t *deps, size_t nd, cudaGraphNode_t *node) {
    cudaMemAllocNodeParams ap = {};
    ap.poolProps.allocType = cudaMemAllocationTypePinned;
    ap.poolProps.handleTypes = cudaMemHandleTypeNone;
    ap.poolProps.location.type = cudaMemLocationTypeDevice;
    ap.poolProps.location.id = 0;
    ap.bytesize = (size_t)N * 4;
    CK(cudaGraphAddMemAllocNode(node, g, deps, nd, &ap));
    return ap.dptr;
}

struct Bufs { unsigned *X, *CTL, *CNT, *ACC, *B2, *M, *Y, *Z2, *hY; cudaEvent_t evW, evR; HostCtx *hctx; };
static unsigned memsetVal(int e) { return hsh((unsigned)e, 0x111u); }
static unsigned childK(int e) { return hsh((unsigned)e, 0x222u); }

// E: wait(evW) + memset(M) -> kE1 -> child{kC1 -> kC2} -> {record(evR), memcpy(hY <- Y) -> host}
static cudaGraph_t buildE(const Bufs &b, unsigned mval, unsigned kc) {
    cudaGraph_t g, child;
    CK(cudaGraphCreate(&g, 0));
    CK(cudaGraphCreate(&child, 0));
    void *a1[] = {(void *)&b.Y, (void *)&b.ACC, &kc};
    cudaGraphNode_t c1 = addK(child, nullptr, 0, (void *)kC1, GRID, TPB, a1);
    void *a2[] = {(void *)&b.Y};
    addK(child, &c1, 1, (void *)kC2, GRID, TPB, a2);
    cudaGraphNode_t nWait, nMs, nK1, nChild, nRec, nCpy, nHost;
    CK(cudaGraphAddEventWaitNode(&nWait, g, nullptr, 0, b.evW));
    cudaMemsetParams mp = {};
    mp.dst = b.M; mp.pitch = 0; mp.value = mval; mp.elementSize = 4; mp.width = N; mp.height = 1;
    CK(cudaGraphAddMemsetNode(&nMs, g, nullptr, 0, &mp));
    void *ak[] = {(void *)&b.ACC, (void *)&b.B2, (void *)&b.M};
    cudaGraphNode_t d1[2] = {nWait, nMs};
    nK1 = addK(g, d1, 2, (void *)kE1, GRID, TPB, ak);
    CK(cudaGraphAddChildGraphNode(&nChild, g, &nK1, 1, child));
    CK(cudaGraphAddEventRecordNode(&nRec, g, &nChild, 1, b.evR));
    CK(cudaGraphAddMemcpyNode1D(&nCpy, g, &nChild, 1, b.hY, b.Y, (size_t)N * 4, cudaMemcpyDeviceToHost));
    cudaHostNodeParams hp = {};
    hp.fn = hostSum; hp.userData = b.hctx;
    CK(cudaGraphAddHostNode(&nHost, g, &nCpy, 1, &hp));
    CK(cudaGraphDestroy(child));   // the child node holds its own clone
    return g;
}

// launch on s, or on s3 joined to s by events both ways
static void launchOn(cudaGraphExec_t gx, bool alt, cudaStream_t s, cudaStream_t s3, cudaEvent_t evF, cudaEvent_t evJ) {
    if (!alt) { CK(cudaGraphLaunch(gx, s)); return; }
    CK(cudaEventRecord(evF, s));
    CK(cudaStreamWaitEvent(s3, evF, 0));
    CK(cudaGraphLaunch(gx, s3));
    CK(cudaEventRecord(evJ, s3));
    CK(cudaStreamWaitEvent(s, evJ, 0));
}

int main() {
    CK(cudaSetDevice(0));
    CK(cudaFree(0));
    int pools = 0;
    CK(cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, 0));
    if (!pools) { failf("memory pools (graph memory nodes) not supported"); return finish("graph_features"); }
    cudaStream_t s, s2, s3;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s3, cudaStreamNonBlocking));
    cudaEvent_t evW, evR, evF, evJ;
    CK(cudaEventCreateWithFlags(&evW, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&evR, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&evF, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&evJ, cudaEventDisableTiming));

    Bufs b = {};
    unsigned **dev[] = {&b.X, &b.CTL, &b.CNT, &b.ACC, &b.B2, &b.M, &b.Y, &b.Z2};
    for (unsigned **p : dev) { CK(cudaMalloc(p, (size_t)N * 4)); CK(cudaMemset(*p, 0, (size_t)N * 4)); }
    unsigned *ring, *ring2;
    CK(cudaMallocHost(&b.hY, (size_t)N * 4));
    CK(cudaMallocHost(&ring, (size_t)ITERS * N * 4));
    CK(cudaMallocHost(&ring2, (size_t)ITERS * N * 4));
    memset(b.hY, 0, (size_t)N * 4);
    memset(ring, 0xAB, (size_t)ITERS * N * 4);
    memset(ring2, 0xCD, (size_t)ITERS * N * 4);
    static HostCtx hctx;
    hctx.hY = b.hY; hctx.n = 0;
    b.evW = evW; b.evR = evR; b.hctx = &hctx;
    CK(cudaDeviceSynchronize());

    // C: kSet -> IF{kIfBody} -> WHILE{kWBody -> kWStep} -> kFin
    cudaGraph_t gC;
    CK(cudaGraphCreate(&gC, 0));
    CH hIf, hWh;
    CK(cudaGraphConditionalHandleCreate(&hIf, gC, 0, cudaGraphCondAssignDefault));
    CK(cudaGraphConditionalHandleCreate(&hWh, gC, 0, cudaGraphCondAssignDefault));
    {
        void *aS[] = {&b.CTL, &b.CNT, &hIf, &hWh};
        cudaGraphNode_t nS = addK(gC, nullptr, 0, (void *)kSet, 1, 1, aS), nIf, nWh;
        cudaGraph_t bIf = condBody(gC, &nS, 1, hIf, cudaGraphCondTypeIf, &nIf);
        void *aI[] = {&b.ACC, &b.X};
        addK(bIf, nullptr, 0, (void *)kIfBody, GRID, TPB, aI);
        cudaGraph_t bWh = condBody(gC, &nIf, 1, hWh, cudaGraphCondTypeWhile, &nWh);
        void *aW[] = {&b.ACC, &b.CNT};
        cudaGraphNode_t w1 = addK(bWh, nullptr, 0, (void *)kWBody, GRID, TPB, aW);
        void *aT[] = {&b.CNT, &hWh};
        addK(bWh, &w1, 1, (void *)kWStep, 1, 1, aT);
        void *aF[] = {&b.ACC, &b.X, &b.CNT};
        addK(gC, &nWh, 1, (void *)kFin, GRID, TPB, aF);
    }
    // M: alloc T -> kM1 -> kM2 -> free T
    cudaGraph_t gM;
    CK(cudaGraphCreate(&gM, 0));
    {
        cudaGraphNode_t nA, nFree;
        unsigned *T = (unsigned *)allocNode(gM, nullptr, 0, &nA);
        void *a1[] = {&T, &b.X, &b.ACC};
        cudaGraphNode_t m1 = addK(gM, &nA, 1, (void *)kM1, GRID, TPB, a1);
        void *a2[] = {&b.ACC, &T};
        cudaGraphNode_t m2 = addK(gM, &m1, 1, (void *)kM2, GRID, TPB, a2);
        CK(cudaGraphAddMemFreeNode(&nFree, gM, &m2, 1, T));
    }
    // F: alloc P -> kF; P is freed eagerly after the launch
    cudaGraph_t gF;
    unsigned *P;
    CK(cudaGraphCreate(&gF, 0));
    {
        cudaGraphNode_t nA;
        P = (unsigned *)allocNode(gF, nullptr, 0, &nA);
        void *a1[] = {&P, &b.ACC, &b.X};
        addK(gF, &nA, 1, (void *)kF, GRID, TPB, a1);
    }
    cudaGraph_t gE = buildE(b, memsetVal(0), childK(0));
    cudaGraphExec_t xC, xM, xF, xE;
    CK(cudaGraphInstantiate(&xC, gC, 0));
    CK(cudaGraphInstantiate(&xM, gM, 0));
    CK(cudaGraphInstantiate(&xF, gF, 0));
    CK(cudaGraphInstantiate(&xE, gE, 0));
    CK(cudaGraphUpload(xC, s)); CK(cudaGraphUpload(xM, s));
    CK(cudaGraphUpload(xF, s)); CK(cudaGraphUpload(xE, s));

    int updates = 0;
    for (int i = 0; i < ITERS; ++i) {
        unsigned ui = (unsigned)i;
        // eager feed of C (and M, F): the branch data is written just before the launch
        kGen<<<GRID, TPB, 0, s>>>(b.X, ui);
        kCtl<<<1, 1, 0, s>>>(b.CTL, ui);
        CK(cudaGetLastError());
        CK(cudaGraphLaunch(xC, s));
        launchOn(xM, i % 3 == 1, s, s3, evF, evJ);
        CK(cudaGraphLaunch(xF, s));
        kUseP<<<GRID, TPB, 0, s>>>(b.ACC, P);   // the graph's allocation, read eagerly
        CK(cudaGetLastError());
        CK(cudaFreeAsync(P, s));                // freed in stream order; next launch reallocates it
        if (i % 4 == 0 && i > 0) {
            cudaGraph_t g2 = buildE(b, memsetVal(i), childK(i));
            cudaGraphExecUpdateResultInfo info = {};
            cudaError_t e = cudaGraphExecUpdate(xE, g2, &info);
            if (e != cudaSuccess) { printf("cudaGraphExecUpdate failed at iter %d: %s (result %d)\n", i, cudaGetErrorName(e), (int)info.result); exit(2); }
            CK(cudaGraphDestroy(g2));
            ++updates;
        }
        // s2: data the graph's wait node must see, then wait for its record node
        kB2<<<GRID, TPB, 0, s2>>>(b.B2, ui);
        CK(cudaGetLastError());
        CK(cudaEventRecord(evW, s2));
        launchOn(xE, i % 2 == 1, s, s3, evF, evJ);
        CK(cudaStreamWaitEvent(s2, evR, 0));
        kS2<<<GRID, TPB, 0, s2>>>(b.Z2, b.Y, ui);
        CK(cudaGetLastError());
        CK(cudaMemcpyAsync(ring2 + (size_t)i * N, b.Z2, (size_t)N * 4, cudaMemcpyDeviceToHost, s2));
        CK(cudaMemcpyAsync(ring + (size_t)i * N, b.ACC, (size_t)N * 4, cudaMemcpyDeviceToHost, s));
        if (i % 8 == 7) {
            CK(cudaDeviceSynchronize());
            CK(cudaDeviceGraphMemTrim(0));
        }
    }
    CK(cudaStreamSynchronize(s));
    CK(cudaStreamSynchronize(s2));
    CK(cudaDeviceSynchronize());
    CK(cudaGetLastError());

    // reference
    std::vector<unsigned> acc(N, 0u), x(N), t(N), p(N), y(N);
    for (int i = 0; i < ITERS; ++i) {
        unsigned ui = (unsigned)i;
        int e = i - i % 4;
        unsigned f = hsh(ui, 7u) & 1u, trips = hsh(ui, 99u) % 5u;
        for (int j = 0; j < N; ++j) x[j] = hsh(ui, (unsigned)j);
        for (int j = 0; j < N; ++j) {                                  // C
            unsigned a = acc[j];
            if (f) a = a * 7u + x[j];
            for (unsigned c = trips; c >= 1u; --c) a = (a ^ hsh(c, (unsigned)j)) + 1u;
            acc[j] = a + (x[j] >> 3);
        }
        for (int j = 0; j < N; ++j) t[j] = (x[j] * 2654435761u) ^ acc[j];   // M
        for (int j = 0; j < N; ++j) acc[j] = acc[j] * 3u + t[j] + t[(j + 1) & (N - 1)];
        for (int j = 0; j < N; ++j) p[j] = hsh(acc[j], x[j]);             // F + eager read
        for (int j = 0; j < N; ++j) acc[j] = acc[j] * 5u + p[(j * 7) & (N - 1)];
        unsigned mval = memsetVal(e), kc = childK(e);                     // E
        for (int j = 0; j < N; ++j) {
            acc[j] = acc[j] * 11u + hsh(ui ^ 0xB2B2u, (unsigned)j) + mval;
            y[j] = (acc[j] ^ kc) * 3u + 1u;
        }
        check_acc(i, ring + (size_t)i * N, acc.data(), N);
        const unsigned *z2 = ring2 + (size_t)i * N;
        for (int j = 0; j < N; ++j)
            if (z2[j] != y[j] * 13u + ui) { failf("iter %d: Z2[%d] = %08x, want %08x (s2 read Y before the graph's record node)", i, j, z2[j], y[j] * 13u + ui); break; }
        for (int j = 0; j < N; ++j) mix(z2[j]);
        unsigned ws = fold(y.data());
        if (i < hctx.n && hctx.sums[i] != ws) failf("iter %d: host node saw sum %08x, want %08x", i, hctx.sums[i], ws);
        mix(i < hctx.n ? hctx.sums[i] : 0u);
    }
    if (hctx.n != ITERS) failf("host node ran %d times, want %d", hctx.n, ITERS);
    if (updates != (ITERS - 1) / 4) failf("%d exec updates, want %d", updates, (ITERS - 1) / 4);
    mix((uint64_t)hctx.n);
    printf("graph_features: %d iterations, %d whole-graph updates\n", ITERS, updates);

    CK(cudaGraphExecDestroy(xC)); CK(cudaGraphExecDestroy(xM));
    CK(cudaGraphExecDestroy(xF)); CK(cudaGraphExecDestroy(xE));
    CK(cudaGraphDestroy(gC)); CK(cudaGraphDestroy(gM)); CK(cudaGraphDestroy(gF)); CK(cudaGraphDestroy(gE));
    for (unsigned **q : dev) CK(cudaFree(*q));
    CK(cudaFreeHost(b.hY)); CK(cudaFreeHost(ring)); CK(cudaFreeHost(ring2));
    CK(cudaEventDestroy(evW)); CK(cudaEventDestroy(evR)); CK(cudaEventDestroy(evF)); CK(cudaEventDestroy(evJ));
    CK(cudaStreamDestroy(s)); CK(cudaStreamDestroy(s2)); CK(cudaStreamDestroy(s3));
    return finish("graph_features");
}
