// kernels/class_unlisted.cu: calls an interposer may not know, mixed with kernels on the same
// stream in a repeating loop: synchronous memsets and 2D/3D/peer copies, pitched 2D/3D memsets,
// the CUDA 13 batch copy, 3D peer copies, symbol copies, driver entry points from
// cudaGetDriverEntryPointByVersion (cuStreamWriteValue32, cuMemsetD2D32Async) and from
// cuGetProcAddress (cuStreamWaitValue32); then the program's own captures, into an existing
// graph and through the driver, each between held-looking kernels and checked against eager runs.
#include <cuda.h>

#include "class_common.cuh"

#define CKD(call)                                                                           \
    do {                                                                                    \
        CUresult ckd_r_ = (call);                                                           \
        if (ckd_r_ != CUDA_SUCCESS) {                                                       \
            const char *ckd_n_ = nullptr;                                                   \
            cuGetErrorName(ckd_r_, &ckd_n_);                                                \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, ckd_n_ ? ckd_n_ : "?"); \
            exit(2);                                                                        \
        }                                                                                   \
    } while (0)

// W x H floats a slice, D slices, rows P floats apart in the pitched block.
static const int W = 64, H = 16, D = 2, P = 80, N = W * H * D, REPS = 5;
static const size_t fs = sizeof(float);

__device__ float sym_scale[N];

typedef CUresult (*write32_fn)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
typedef CUresult (*wait32_fn)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
typedef CUresult (*memset2d32_fn)(CUdeviceptr, size_t, unsigned int, size_t, size_t, CUstream);

static unsigned fbits(float f) {
    unsigned u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static void *entry(const char *name, unsigned version) {
    void *p = nullptr;
    cudaDriverEntryPointQueryResult st = cudaDriverEntryPointSymbolNotFound;
    CK(cudaGetDriverEntryPointByVersion(name, &p, version, cudaEnableDefault, &st));
    if (!p || st != cudaDriverEntryPointSuccess) FAIL("no driver entry point %s (status %d)", name, (int)st);
    return p;
}

static bool same_dev(const float *x, const float *y, size_t n) {
    std::vector<float> a(n), b(n);
    CK(cudaMemcpy(a.data(), x, n * fs, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(b.data(), y, n * fs, cudaMemcpyDeviceToHost));
    return memcmp(a.data(), b.data(), n * fs) == 0;
}

static CUdeviceptr dptr(const void *p) { return (CUdeviceptr)(uintptr_t)p; }

int main(int argc, char **argv) {
    long iters = class_start(argc, argv, 36, 6);
    cudaStream_t s;
    CK(cudaStreamCreate(&s));  // blocking: the legacy-stream calls below order with it
    float *a = dev_init(N, 0.5f), *b = dev_init(N, 1.0f), *c, *pitched, *lin, *lin2, *pin, *symp;
    unsigned *flag;
    CK(cudaMalloc(&c, N * fs));
    CK(cudaMalloc(&pitched, (size_t)P * H * D * fs));
    CK(cudaMalloc(&lin, N * fs));
    CK(cudaMalloc(&lin2, (size_t)W * H * fs));
    CK(cudaMalloc(&flag, 4 * sizeof(unsigned)));
    CK(cudaMemset(flag, 0, 4 * sizeof(unsigned)));
    CK(cudaMemset(lin2, 0, (size_t)W * H * fs));
    CK(cudaMallocHost(&pin, N * fs));
    CK(cudaGetSymbolAddress((void **)&symp, sym_scale));
    write32_fn write32 = (write32_fn)entry("cuStreamWriteValue32", 12000);
    memset2d32_fn memset2d32 = (memset2d32_fn)entry("cuMemsetD2D32Async", 12000);
    wait32_fn wait32 = nullptr;
    CUdriverProcAddressQueryResult qr = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CKD(cuGetProcAddress("cuStreamWaitValue32", (void **)&wait32, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &qr));
    if (!wait32 || qr != CU_GET_PROC_ADDRESS_SUCCESS) FAIL("cuGetProcAddress(cuStreamWaitValue32): status %d", (int)qr);

    std::vector<float> hsym(N), hout(N), log;
    const cudaPitchedPtr slice0 = make_cudaPitchedPtr(pitched, P * fs, P * fs, H);
    const cudaPitchedPtr slice1 = make_cudaPitchedPtr(pitched + P * H, P * fs, P * fs, H);
    for (long it = 0; it < iters; it++) {
        axpb(s, a, 0.9f, 0.1f * (float)(it % 3), N);
        CK(cudaMemset(c, 0, N * fs));
        // slice 0 of the pitched block: W x H floats of a, zero padding
        CK(cudaMemcpy2D(pitched, P * fs, a, W * fs, W * fs, H, cudaMemcpyDeviceToDevice));
        CK(cudaMemset2D(pitched + W, P * fs, 0, (P - W) * fs, H));
        // slice 1: zero, then slice 0 shifted right by one float
        CK(cudaMemset3D(slice1, 0, make_cudaExtent(P * fs, H, 1)));
        cudaMemcpy3DPeerParms pp = {};
        pp.srcPtr = slice0;
        pp.srcDevice = 0;
        pp.dstPtr = slice1;
        pp.dstDevice = 0;
        pp.dstPos = make_cudaPos(fs, 0, 0);
        pp.extent = make_cudaExtent((W - 1) * fs, H, 1);
        CK(cudaMemcpy3DPeerAsync(&pp, s));
        axpb(s, pitched, 1.0f, 0.5f, P * H * D);
        cudaMemcpy3DParms p3 = {};
        p3.srcPtr = slice0;
        p3.dstPtr = make_cudaPitchedPtr(lin, W * fs, W * fs, H);
        p3.extent = make_cudaExtent(W * fs, H, D);
        p3.kind = cudaMemcpyDeviceToDevice;
        CK(cudaMemcpy3D(&p3));
        CK(cudaMemcpyPeer(c, 0, lin, 0, N * fs));
        acc(s, b, c, 0.25f, N);
        // CUDA 13 signature: no failIdx argument any more.
        void *dsts[] = {pin, c + N / 2};
        const void *srcs[] = {b, a};
        size_t sizes[] = {N * fs, N / 2 * fs};
        cudaMemcpyAttributes at = {};
        at.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
        size_t idx = 0;
        CK(cudaMemcpyBatchAsync(dsts, srcs, sizes, 2, &at, &idx, 1, s));
        for (int i = 0; i < N; i++) hsym[i] = 0.01f * (float)((i + it) % 7);
        CK(cudaMemcpyToSymbol(sym_scale, hsym.data(), N * fs, 0, cudaMemcpyHostToDevice));
        acc(s, b, symp, 0.5f, N);
        CKD(write32(s, dptr(&flag[it % 4]), (cuuint32_t)(it + 1), 0));
        CKD(memset2d32(dptr(c), 4 * fs, fbits(1.5f), 2, N / 4, s));
        // Already true in stream order: the write just before it set this value.
        CKD(wait32(s, dptr(&flag[it % 4]), (cuuint32_t)(it + 1), CU_STREAM_WAIT_VALUE_GEQ));
        acc(s, a, c, 0.125f, N);
        // The synchronous 3D peer copy: slice 1 into a W x H block, folded into a.
        cudaMemcpy3DPeerParms pq = {};
        pq.srcPtr = slice1;
        pq.dstPtr = make_cudaPitchedPtr(lin2, W * fs, W * fs, H);
        pq.extent = make_cudaExtent(W * fs, H, 1);
        CK(cudaMemcpy3DPeer(&pq));
        acc(s, a, lin2, 0.0625f, W * H);
        if (it % 6 == 5) {
            // Blocking on the legacy stream: everything on s before it has landed, pin too.
            CK(cudaMemcpyFromSymbol(hout.data(), sym_scale, N * fs, 0, cudaMemcpyDeviceToHost));
            log.push_back(pin[it] + pin[N - 1] + hout[3]);
        }
    }
    CK(cudaStreamSynchronize(s));
    print_dev("a", a, N);
    print_dev("b", b, N);
    print_dev("c", c, N);
    print_dev("pitched", pitched, (size_t)P * H * D);
    print_dev("lin2", lin2, (size_t)W * H);
    unsigned hflag[4];
    CK(cudaMemcpy(hflag, flag, sizeof hflag, cudaMemcpyDeviceToHost));
    printf("flags %u %u %u %u\n", hflag[0], hflag[1], hflag[2], hflag[3]);
    print_host("log", log.data(), log.size());

    // Capture into an existing graph after its memset node, with repeating
    // kernels queued on the same stream just before and just after.
    float *e;
    CK(cudaMalloc(&e, N * fs));
    for (int j = 0; j < 4; j++) axpb(s, a, 0.95f, 0.01f * (float)j, N);
    cudaGraph_t g, got = nullptr;
    cudaGraphNode_t m;
    CK(cudaGraphCreate(&g, 0));
    cudaMemsetParams mp = {};
    mp.dst = c;
    mp.value = 0;
    mp.elementSize = 4;
    mp.width = N;
    mp.height = 1;
    CK(cudaGraphAddMemsetNode(&m, g, nullptr, 0, &mp));
    CK(cudaStreamBeginCaptureToGraph(s, g, &m, nullptr, 1, cudaStreamCaptureModeGlobal));
    acc(s, c, a, 0.5f, N);
    sq(s, c, N);
    CK(cudaStreamEndCapture(s, &got));
    for (int j = 0; j < 4; j++) axpb(s, b, 0.9f, 0.02f * (float)j, N);
    size_t nodes = 0;
    CK(cudaGraphGetNodes(g, nullptr, &nodes));
    cudaGraphExec_t ge;
    CK(cudaGraphInstantiate(&ge, g, 0));
    for (int r = 0; r < REPS; r++) CK(cudaGraphLaunch(ge, s));
    for (int r = 0; r < REPS; r++) {
        CK(cudaMemsetAsync(e, 0, N * fs, s));
        acc(s, e, a, 0.5f, N);
        sq(s, e, N);
    }
    CK(cudaStreamSynchronize(s));
    printf("capture-to-graph same=%d nodes=%zu matches-eager=%d\n", got == g, nodes, (int)same_dev(c, e, N));
    print_dev("c-graph", c, N);

    // The driver's capture, again between queued kernels.
    float *bb, *cc;
    CK(cudaMalloc(&bb, N * fs));
    CK(cudaMalloc(&cc, N * fs));
    CK(cudaMemcpy(bb, b, N * fs, cudaMemcpyDeviceToDevice));
    for (int j = 0; j < 4; j++) axpb(s, a, 0.95f, 0.03f * (float)j, N);
    CUgraph dg;
    CKD(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    axpb(s, b, 0.5f, 0.5f, N);
    CKD(cuMemsetD32Async(dptr(c), fbits(0.75f), N, s));
    acc(s, b, c, 0.5f, N);
    CKD(cuStreamEndCapture(s, &dg));
    for (int j = 0; j < 4; j++) axpb(s, a, 0.95f, 0.04f * (float)j, N);
    CK(cudaGraphGetNodes(dg, nullptr, &nodes));
    cudaGraphExec_t dge;
    CK(cudaGraphInstantiate(&dge, dg, 0));
    for (int r = 0; r < REPS; r++) CK(cudaGraphLaunch(dge, s));
    for (int r = 0; r < REPS; r++) {
        axpb(s, bb, 0.5f, 0.5f, N);
        CKD(cuMemsetD32Async(dptr(cc), fbits(0.75f), N, s));
        acc(s, bb, cc, 0.5f, N);
    }
    CK(cudaStreamSynchronize(s));
    printf("driver capture nodes=%zu matches-eager=%d\n", nodes, (int)same_dev(b, bb, N));
    print_dev("b-graph", b, N);
    print_dev("a-end", a, N);
    CK(cudaGraphExecDestroy(ge));
    CK(cudaGraphExecDestroy(dge));
    CK(cudaGraphDestroy(g));
    CK(cudaGraphDestroy(dg));
    CK(cudaFreeHost(pin));
    for (void *p : {(void *)a, (void *)b, (void *)c, (void *)pitched, (void *)lin, (void *)lin2, (void *)flag,
                    (void *)e, (void *)bb, (void *)cc})
        CK(cudaFree(p));
    CK(cudaStreamDestroy(s));
    return 0;
}
