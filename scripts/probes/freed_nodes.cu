// scripts/probes/freed_nodes.cu: what the driver does with a graph whose copy or
// memset node names memory that was freed and allocated again, by kind of memory;
// and what one cudaGetDevice costs (bare, or under cgraft with LD_PRELOAD).
//   nvcc -O2 -cudart shared -o freed_nodes scripts/probes/freed_nodes.cu
//   for m in 0 1 2 3 4; do for node in 0 1; do ./freed_nodes $m $node; done; done
//   ./freed_nodes get
//   ./freed_nodes walk dmd 0     (one address through kinds of memory in turn)
// Each trial runs in a process of its own: one of them faults. m: 0 device,
// 1 pinned, 2 registered, 3 managed, 4 stream-ordered; node: 0 copy, 1 memset
// (not on pinned or registered memory). A walk's letters are kinds (d device,
// p pinned, r registered, m managed, a stream-ordered), each optionally followed
// by a digit k for an allocation of 2^k times the size: the graph is made on the
// first, then each is allocated after the one before it is freed, filled, and the
// unchanged graph launched, as a replay would where the program names that address
// (a capital letter: allocated and filled, the graph not launched; a 'u' after a
// step: the node updated first, naming the memory as now and its other side
// switched to another buffer, or another value set); node 2: a copy into the walked memory.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <chrono>
#include <cuda_runtime.h>
static const size_t N = 1 << 18, B = N * sizeof(float);
// Memory of kind m, of b bytes.
static void *alloc_sized(int m, void **keep, size_t b) {
    void *p = nullptr;
    if (m == 0) cudaMalloc(&p, b);
    if (m == 1) cudaMallocHost(&p, b);
    if (m == 2) { p = aligned_alloc(4096, b); cudaHostRegister(p, b, 0); *keep = p; }
    if (m == 3) cudaMallocManaged(&p, b);
    if (m == 4) { cudaMallocAsync(&p, b, 0); cudaStreamSynchronize(0); }
    return p;
}
static void *alloc_of(int m, void **keep) { return alloc_sized(m, keep, B); }
__global__ void fill_kernel(float *a, float v) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < N) a[i] = v;
}
static void free_of(int m, void *p) {
    if (m == 0) cudaFree(p);
    if (m == 1) cudaFreeHost(p);
    if (m == 2) { cudaHostUnregister(p); free(p); }
    if (m == 3) cudaFree(p);
    if (m == 4) { cudaFreeAsync(p, 0); cudaStreamSynchronize(0); }
}
// A copy node from memory of kind m into device memory, or a memset node on it;
// the graph launched, the memory freed and allocated again, the graph launched
// again unchanged, as a replay would where the program names the same address.
static void trial(int m, int node) {
    static const char *names[] = {"device", "pinned", "registered", "managed", "async"};
    float *d; cudaMalloc(&d, B); cudaMemset(d, 0, B);
    void *keep = nullptr; float *a = (float *)alloc_of(m, &keep);
    cudaMemset(a, 0, B); cudaDeviceSynchronize();
    cudaGraph_t g; cudaGraphCreate(&g, 0);
    cudaGraphNode_t n;
    cudaError_t ra;
    if (node == 0) ra = cudaGraphAddMemcpyNode1D(&n, g, nullptr, 0, d, a, B, cudaMemcpyDefault);
    else { cudaMemsetParams p = {}; p.dst = a; p.value = 0x3f800000; p.elementSize = 4; p.width = N; p.height = 1;
           ra = cudaGraphAddMemsetNode(&n, g, nullptr, 0, &p); }
    cudaGraphExec_t e; cudaError_t ri = cudaGraphInstantiate(&e, g, 0);
    cudaError_t r1 = cudaGraphLaunch(e, 0); cudaError_t s1 = cudaDeviceSynchronize();
    free_of(m, a);
    void *keep2 = nullptr; float *b = (float *)alloc_of(m, &keep2);
    if (node == 0) { if (m == 1 || m == 2 || m == 3) for (size_t i = 0; i < N; i++) b[i] = 2.0f; else cudaMemset(b, 0x40, B); }
    else cudaMemset(b, 0, B);
    cudaDeviceSynchronize();
    cudaError_t r2 = cudaGraphLaunch(e, 0); cudaError_t s2 = cudaDeviceSynchronize();
    float h = -1; cudaMemcpy(&h, node == 0 ? (const float *)d : b, 4, cudaMemcpyDefault);
    printf("%-10s %-6s add=%d inst=%d launch1=%d sync1=%d same_addr=%d launch2=%s sync2=%s value=%g\n", names[m],
           node == 0 ? "memcpy" : "memset", ra, ri, r1, s1, b == a, cudaGetErrorName(r2), cudaGetErrorName(s2), h);
    cudaGetLastError();
    cudaGraphExecDestroy(e); cudaGraphDestroy(g); cudaFree(d); free_of(m, b);
}
// The walk: one line a step, flushed before the launch (a step may fault).
static void walk(const char *kinds, int node) {
    float *o[2];  // the copy's other side, switched by an update ('u')
    cudaMalloc(&o[0], B); cudaMemset(o[0], 0, B);
    cudaMalloc(&o[1], B); fill_kernel<<<(N + 255) / 256, 256>>>(o[1], 7.0f);
    float *d = o[0];
    int oi = 0;
    void *keep = nullptr, *first = nullptr, *a = nullptr;
    int prev = -1;
    cudaGraphExec_t e = nullptr;
    cudaGraphNode_t n = nullptr;
    for (int step = 0; kinds[step]; step++) {
        char c = kinds[step];
        bool launch = c >= 'a';  // a capital letter: allocated and filled, the graph not launched
        const char *at = strchr("dprma", launch ? c : c - 'A' + 'a');
        if (!at) continue;
        int m = (int)(at - "dprma"), k = 0, after = step + 1;  // after: past the step's digit
        if (kinds[after] >= '0' && kinds[after] <= '9') k = kinds[after++] - '0';
        if (a) free_of(prev, a);
        a = alloc_sized(m, &keep, B << k);
        prev = m;
        float v = (float)(step + 1);
        if (m == 1 || m == 2 || m == 3) for (size_t i = 0; i < N; i++) ((float *)a)[i] = v;
        else { fill_kernel<<<(N + 255) / 256, 256>>>((float *)a, v); }
        cudaDeviceSynchronize();
        if (!e) {
            first = a;
            cudaGraph_t g; cudaGraphCreate(&g, 0);
            if (node == 0) cudaGraphAddMemcpyNode1D(&n, g, nullptr, 0, d, a, B, cudaMemcpyDefault);
            else if (node == 2) cudaGraphAddMemcpyNode1D(&n, g, nullptr, 0, a, d, B, cudaMemcpyDefault);
            else { cudaMemsetParams p = {}; p.dst = a; p.value = 0x3f800000u; p.elementSize = 4;
                   p.width = N; p.height = 1; cudaGraphAddMemsetNode(&n, g, nullptr, 0, &p); }
            cudaError_t ri = cudaGraphInstantiate(&e, g, 0);
            printf("step %d %c%d made graph inst=%s\n", step, kinds[step], k, cudaGetErrorName(ri));
            cudaGraphDestroy(g);
        }
        if (!launch) { printf("step %d %c%d same_addr=%d not launched\n", step, c, k, a == first); continue; }
        cudaError_t ru = cudaSuccess;
        if (kinds[after] == 'u') {  // the node updated first, its other side switched
            oi ^= 1;
            d = o[oi];
            if (node == 0) ru = cudaGraphExecMemcpyNodeSetParams1D(e, n, d, a, B, cudaMemcpyDefault);
            else if (node == 2) ru = cudaGraphExecMemcpyNodeSetParams1D(e, n, a, d, B, cudaMemcpyDefault);
            else { cudaMemsetParams p = {}; p.dst = a; p.value = oi ? 0x40000000u : 0x3f800000u; p.elementSize = 4;
                   p.width = N; p.height = 1; ru = cudaGraphExecMemsetNodeSetParams(e, n, &p); }
            printf("step %d %c%d updated: %s\n", step, c, k, cudaGetErrorName(ru));
        }
        printf("step %d %c%d same_addr=%d launching\n", step, kinds[step], k, a == first); fflush(stdout);
        cudaError_t r = cudaGraphLaunch(e, 0), s2 = cudaDeviceSynchronize();
        float h = -1; cudaMemcpy(&h, node == 0 ? (const float *)d : (const float *)a, 4, cudaMemcpyDefault);
        float eager = node == 0 ? (a == first || ru == cudaSuccess ? v : -2.0f) : node == 2 ? (oi ? 7.0f : 0.0f)
                                                                              : (oi ? 2.0f : 1.0f);
        printf("step %d %c%d launch=%s sync=%s value=%g (eager %g)\n", step, kinds[step], k, cudaGetErrorName(r),
               cudaGetErrorName(s2), h, eager);
        fflush(stdout);
        if (r != cudaSuccess || s2 != cudaSuccess) { cudaGetLastError(); break; }
    }
}
int main(int argc, char **argv) {
    cudaFree(0);
    if (argc == 4 && !strcmp(argv[1], "walk")) { walk(argv[2], atoi(argv[3])); return 0; }
    if (argc == 3) { trial(atoi(argv[1]), atoi(argv[2])); return 0; }
    if (argc == 2) {
        int d; for (int i = 0; i < 1000; i++) cudaGetDevice(&d);
        double best = 1e9;
        for (int r = 0; r < 5; r++) {
            auto t0 = std::chrono::steady_clock::now();
            for (int i = 0; i < 1000000; i++) cudaGetDevice(&d);
            double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / 1e6;
            best = ns < best ? ns : best;
        }
        printf("cudaGetDevice %.1f ns a call (best of 5 x 1e6)\n", best);
        return 0;
    }
    return 0;
}
