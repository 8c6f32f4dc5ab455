// kernels/large.cu: a few memory-bound kernels of about a millisecond each over
// gigabyte buffers, where launch cost is noise and an interposer must add nothing.
#include "common.cuh"

// Grid-stride loops over float4: bandwidth-bound, so time scales with bytes.
__global__ void k_triad(float4 *z, const float4 *x, const float4 *y, size_t n4, float a, float b, float c) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4; i += (size_t)gridDim.x * blockDim.x) {
        float4 u = x[i], v = y[i], w;
        w.x = a * u.x + b * v.x + c;
        w.y = a * u.y + b * v.y + c;
        w.z = a * u.z + b * v.z + c;
        w.w = a * u.w + b * v.w + c;
        z[i] = w;
    }
}

int main(int argc, char **argv) {
    Args a(argc, argv);
    Mode mode = parse_mode(a, true);
    long long n = a.num("--n", 1LL << 28);  // floats per buffer: 1 GiB
    TimingPlan plan = TimingPlan::from(a, 3, 5, 10);
    a.finish();
    if (n < 4 || n % 4) {
        fprintf(stderr, "usage: large [--mode eager|graph] [--n FLOATS (multiple of 4)] [--iters I] "
                        "[--repeats R] [--warmup W]\n");
        return 64;
    }
    const size_t n4 = (size_t)n / 4, bytes = (size_t)n * sizeof(float);
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *x, *y, *z;
    for (float **p : {&x, &y, &z}) CK(cudaMalloc(p, bytes));
    fill_random_device(x, n, 50, s);
    fill_random_device(y, n, 51, s);
    fill_random_device(z, n, 52, s);
    CK(cudaStreamSynchronize(s));

    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const int threads = 512, grid = sms * 4;

    // Coefficients keep every buffer bounded (contraction plus offset), so no
    // denormals or infinities creep in over many iterations.
    auto submit = [&]() {
        k_triad<<<grid, threads, 0, s>>>((float4 *)z, (float4 *)x, (float4 *)y, n4, 0.5f, 0.25f, 0.125f);
        CK_LAUNCH();
        k_triad<<<grid, threads, 0, s>>>((float4 *)y, (float4 *)z, (float4 *)x, n4, 0.375f, -0.25f, 0.5f);
        CK_LAUNCH();
        k_triad<<<grid, threads, 0, s>>>((float4 *)x, (float4 *)y, (float4 *)z, n4, 0.5f, 0.375f, -0.25f);
        CK_LAUNCH();
    };

    cudaGraphExec_t exec = nullptr;
    if (mode == Mode::graph) {
        cudaGraph_t g;
        CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
        submit();
        CK(cudaStreamEndCapture(s, &g));
        CK(cudaGraphInstantiate(&exec, g, 0));
        CK(cudaGraphDestroy(g));
    }

    run_timed(plan, [&](long) {
        if (mode == Mode::eager)
            submit();
        else
            CK(cudaGraphLaunch(exec, s));
        CK(cudaStreamSynchronize(s));
    });

    Digest d;
    for (float *p : {x, y, z}) d.add_device(p, bytes);
    char name[64];
    snprintf(name, sizeof name, "large n=%lld iters=%ld", n, plan.total());
    print_result(name, d, {read_device_float(x, 0), read_device_float(y, n - 1), read_device_float(z, n / 2)});

    if (exec) CK(cudaGraphExecDestroy(exec));
    for (float *p : {x, y, z}) CK(cudaFree(p));
    CK(cudaStreamDestroy(s));
    return 0;
}
