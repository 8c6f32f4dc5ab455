/* Class scenario: calls an interposer seldom intercepts, mixed with kernels on
 * the same streams in a loop: synchronous memsets and 2D/3D/peer copies,
 * pitched 2D/3D memsets, the CUDA 13 batch copy, a 3D peer copy, symbol
 * copies, driver entry points from cudaGetDriverEntryPointByVersion
 * (cuStreamWriteValue32, cuMemsetD2D32Async) and one only cuGetProcAddress
 * knows (cuSimFutureMemset); then the program's own captures, into an
 * existing graph and through the driver, checked against eager runs. */
#include <cuda.h>

#include "common.h"

#define CKD(x) do { \
    CUresult r_ = (x); \
    if (r_ != CUDA_SUCCESS) \
        FAIL("%s:%d: %s failed: %d", __FILE__, __LINE__, #x, (int)r_); \
} while (0)

/* W x H floats a slice, D slices, rows P floats apart in the pitched block. */
enum { W = 16, H = 8, D = 2, P = 24, N = W * H * D, ITERS = 24, REPS = 5 };

static float sym_scale[N];          /* stands for "__device__ float sym_scale[N]" */

typedef CUresult (*write32_fn)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
typedef CUresult (*memset2d32_fn)(CUdeviceptr, size_t, unsigned int, size_t, size_t, CUstream);
typedef CUresult (*future_fn)(CUdeviceptr, unsigned char, size_t, CUstream);

static unsigned fbits(float f)
{
    unsigned u;
    memcpy(&u, &f, sizeof(u));
    return u;
}

static struct cudaPitchedPtr pitched_ptr(void *p, size_t pitch, size_t xsize, size_t ysize)
{
    struct cudaPitchedPtr r = { .ptr = p, .pitch = pitch, .xsize = xsize, .ysize = ysize };
    return r;
}

static struct cudaExtent extent(size_t w, size_t h, size_t d)
{
    struct cudaExtent e = { .width = w, .height = h, .depth = d };
    return e;
}

static void *entry(const char *name, unsigned version)
{
    void *p = NULL;
    enum cudaDriverEntryPointQueryResult st;
    CK(cudaGetDriverEntryPointByVersion(name, &p, version, cudaEnableDefault, &st));
    if (!p || st != cudaDriverEntryPointSuccess)
        FAIL("no driver entry point %s", name);
    return p;
}

static void print_dev_bytes(const char *name, const void *d, size_t n)
{
    unsigned char *h = malloc(n);
    if (!h)
        FAIL("out of host memory");
    CK(cudaMemcpy(h, d, n, cudaMemcpyDeviceToHost));
    printf("%s fnv=%016llx n=%zu\n", name, (unsigned long long)fnv1a(h, n), n);
    free(h);
}

static int same_dev(const void *x, const void *y, size_t n)
{
    unsigned char *a = malloc(n), *b = malloc(n);
    if (!a || !b)
        FAIL("out of host memory");
    CK(cudaMemcpy(a, x, n, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(b, y, n, cudaMemcpyDeviceToHost));
    int r = !memcmp(a, b, n);
    free(a);
    free(b);
    return r;
}

int main(void)
{
    register_kernels();
    if (simRegisterSymbol(sym_scale, sizeof(sym_scale)))
        FAIL("simRegisterSymbol failed");
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *a = dev_alloc_init(N, 0.5f), *b = dev_alloc_init(N, 1.0f), *c, *pitched, *lin, *pin, *symp;
    unsigned *flag;
    CK(cudaMalloc((void **)&c, N * sizeof(float)));
    CK(cudaMalloc((void **)&pitched, P * H * D * sizeof(float)));
    CK(cudaMalloc((void **)&lin, N * sizeof(float)));
    CK(cudaMalloc((void **)&flag, 4 * sizeof(unsigned)));
    CK(cudaMallocHost((void **)&pin, N * sizeof(float)));
    CK(cudaGetSymbolAddress((void **)&symp, sym_scale));
    write32_fn write32 = (write32_fn)entry("cuStreamWriteValue32", 12000);
    memset2d32_fn memset2d32 = (memset2d32_fn)entry("cuMemsetD2D32Async", 12000);
    future_fn future = NULL;
    CUdriverProcAddressQueryResult qr;
    CKD(cuGetProcAddress("cuSimFutureMemset", (void **)&future, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &qr));
    float hsym[N], hout[N], log[ITERS / 6];
    const size_t fs = sizeof(float);
    for (int it = 0; it < ITERS; it++) {
        axpb(s, a, 0.9f, 0.1f * (float)(it % 3), N);
        CK(cudaMemset(c, 0, N * fs));
        /* slice 0 of the pitched block: W x H floats of a, zero padding */
        CK(cudaMemcpy2D(pitched, P * fs, a, W * fs, W * fs, H, cudaMemcpyDeviceToDevice));
        CK(cudaMemset2D(pitched + W, P * fs, 0, (P - W) * fs, H));
        /* slice 1: zero, then slice 0 shifted right by one float */
        CK(cudaMemset3D(pitched_ptr(pitched + P * H, P * fs, P * fs, H), 0, extent(P * fs, H, 1)));
        struct cudaMemcpy3DPeerParms pp = { 0 };
        pp.srcPtr = pitched_ptr(pitched, P * fs, P * fs, H);
        pp.dstPtr = pitched_ptr(pitched + P * H, P * fs, P * fs, H);
        pp.dstPos.x = fs;
        pp.extent = extent((W - 1) * fs, H, 1);
        CK(cudaMemcpy3DPeerAsync(&pp, s));
        axpb(s, pitched, 1.0f, 0.5f, P * H * D);
        struct cudaMemcpy3DParms p3 = { 0 };
        p3.srcPtr = pitched_ptr(pitched, P * fs, P * fs, H);
        p3.dstPtr = pitched_ptr(lin, W * fs, W * fs, H);
        p3.extent = extent(W * fs, H, D);
        p3.kind = cudaMemcpyDeviceToDevice;
        CK(cudaMemcpy3D(&p3));
        CK(cudaMemcpyPeer(c, 0, lin, 0, N * fs));
        acc(s, b, c, 0.25f, N);
        void *dsts[] = { pin, c + N / 2 };
        const void *srcs[] = { b, a };
        size_t sizes[] = { N * fs, N / 2 * fs };
        struct cudaMemcpyAttributes at = { .srcAccessOrder = cudaMemcpySrcAccessOrderStream };
        size_t idx = 0;
        CK(cudaMemcpyBatchAsync(dsts, srcs, sizes, 2, &at, &idx, 1, s));
        for (int i = 0; i < N; i++)
            hsym[i] = 0.01f * (float)((i + it) % 7);
        CK(cudaMemcpyToSymbol(sym_scale, hsym, sizeof(hsym), 0, cudaMemcpyHostToDevice));
        acc(s, b, symp, 0.5f, N);
        CKD(write32(s, (CUdeviceptr)(uintptr_t)&flag[it % 4], (unsigned)(it + 1), 0));
        CKD(memset2d32((CUdeviceptr)(uintptr_t)c, 4 * fs, fbits(1.5f), 2, N / 4, s));
        CKD(future((CUdeviceptr)(uintptr_t)(a + N - 4), 0x3f, 4 * fs, s));
        acc(s, a, c, 0.125f, N);
        if (it % 6 == 5) {
            CK(cudaMemcpyFromSymbol(hout, sym_scale, sizeof(hout), 0, cudaMemcpyDeviceToHost));
            log[it / 6] = pin[it] + pin[N - 1] + hout[3];
        }
    }
    CK(cudaStreamSynchronize(s));
    print_dev("a", a, N);
    print_dev("b", b, N);
    print_dev("c", c, N);
    print_dev_bytes("pitched", pitched, P * H * D * fs);
    unsigned hflag[4];
    CK(cudaMemcpy(hflag, flag, sizeof(hflag), cudaMemcpyDeviceToHost));
    printf("flags %u %u %u %u\n", hflag[0], hflag[1], hflag[2], hflag[3]);
    print_floats("log", log, ITERS / 6);

    /* capture into an existing graph after its memset node */
    float *e;
    CK(cudaMalloc((void **)&e, N * fs));
    cudaGraph_t g, got = NULL;
    cudaGraphNode_t m;
    CK(cudaGraphCreate(&g, 0));
    struct cudaMemsetParams mp = { .dst = c, .value = 0, .elementSize = 4, .width = N, .height = 1 };
    CK(cudaGraphAddMemsetNode(&m, g, NULL, 0, &mp));
    CK(cudaStreamBeginCaptureToGraph(s, g, &m, NULL, 1, cudaStreamCaptureModeGlobal));
    acc(s, c, a, 0.5f, N);
    sq(s, c, N);
    CK(cudaStreamEndCapture(s, &got));
    size_t nodes = 0;
    CK(cudaGraphGetNodes(g, NULL, &nodes));
    cudaGraphExec_t ge;
    CK(cudaGraphInstantiate(&ge, g, 0));
    for (int r = 0; r < REPS; r++)
        CK(cudaGraphLaunch(ge, s));
    for (int r = 0; r < REPS; r++) {
        CK(cudaMemsetAsync(e, 0, N * fs, s));
        acc(s, e, a, 0.5f, N);
        sq(s, e, N);
    }
    CK(cudaStreamSynchronize(s));
    printf("capture-to-graph same=%d nodes=%zu matches-eager=%d\n", got == g, nodes, same_dev(c, e, N * fs));
    print_dev("c-graph", c, N);

    /* the driver's capture */
    float *bb, *cc;
    CK(cudaMalloc((void **)&bb, N * fs));
    CK(cudaMalloc((void **)&cc, N * fs));
    CK(cudaMemcpy(bb, b, N * fs, cudaMemcpyDeviceToDevice));
    CUgraph dg;
    CKD(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    axpb(s, b, 0.5f, 0.5f, N);
    CKD(cuMemsetD32Async((CUdeviceptr)(uintptr_t)c, fbits(0.75f), N, s));
    acc(s, b, c, 0.5f, N);
    CKD(cuStreamEndCapture(s, &dg));
    CK(cudaGraphGetNodes(dg, NULL, &nodes));
    cudaGraphExec_t dge;
    CK(cudaGraphInstantiate(&dge, dg, 0));
    for (int r = 0; r < REPS; r++)
        CK(cudaGraphLaunch(dge, s));
    for (int r = 0; r < REPS; r++) {
        axpb(s, bb, 0.5f, 0.5f, N);
        CKD(cuMemsetD32Async((CUdeviceptr)(uintptr_t)cc, fbits(0.75f), N, s));
        acc(s, bb, cc, 0.5f, N);
    }
    CK(cudaStreamSynchronize(s));
    printf("driver capture nodes=%zu matches-eager=%d\n", nodes, same_dev(b, bb, N * fs));
    print_dev("b-graph", b, N);
    CK(cudaGraphExecDestroy(ge));
    CK(cudaGraphExecDestroy(dge));
    CK(cudaGraphDestroy(g));
    CK(cudaGraphDestroy(dg));
    CK(cudaFreeHost(pin));
    return 0;
}
