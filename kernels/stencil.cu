// kernels/stencil.cu: time-stepping 1D/2D Jacobi stencil with a small pageable
// host-to-device input and a device-to-host residual read back every step.
#include "common.cuh"

// The new boundary row comes from the host each step, as a sensor feed would.
__global__ void k_boundary(float *u, const float *in, int nin) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < nin) u[i] = in[i];
}

__global__ void k_jacobi2d(float *out, const float *u, int nx, int ny) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= nx || y >= ny) return;
    size_t i = (size_t)y * nx + x;
    if (x == 0 || y == 0 || x == nx - 1 || y == ny - 1) {
        out[i] = u[i];
        return;
    }
    out[i] = 0.25f * (u[i - 1] + u[i + 1] + u[i - nx] + u[i + nx]);
}

__global__ void k_jacobi1d(float *out, const float *u, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    out[i] = (i == 0 || i == n - 1) ? u[i] : 0.5f * u[i] + 0.25f * (u[i - 1] + u[i + 1]);
}

// Fixed-shape two-pass reduction: the sum order never changes, so the residual
// is bit-reproducible, unlike an atomicAdd reduction.
__global__ void k_absdiff_partial(float *part, const float *a, const float *b, size_t n) {
    __shared__ float sh[256];
    float acc = 0.0f;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        acc += fabsf(a[i] - b[i]);
    sh[threadIdx.x] = acc;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
        if (threadIdx.x < w) sh[threadIdx.x] += sh[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) part[blockIdx.x] = sh[0];
}

__global__ void k_sum_final(float *out, const float *part, int n) {
    __shared__ float sh[256];
    float acc = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) acc += part[i];
    sh[threadIdx.x] = acc;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
        if (threadIdx.x < w) sh[threadIdx.x] += sh[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[0] = sh[0];
}

int main(int argc, char **argv) {
    Args a(argc, argv);
    Mode mode = parse_mode(a, true);
    int dim = (int)a.num("--dim", 2);
    int nx = (int)a.num("--nx", 256);
    int ny = (int)a.num("--ny", dim == 2 ? 256 : 1);
    int sweeps = (int)a.num("--sweeps", 4);
    TimingPlan plan = TimingPlan::from(a, 20, 7, 100);
    a.finish();
    if ((dim != 1 && dim != 2) || nx < 3 || ny < 1 || sweeps < 1) {
        fprintf(stderr, "usage: stencil [--mode eager|graph] [--dim 1|2] [--nx X] [--ny Y] "
                        "[--sweeps S] [--iters I] [--repeats R] [--warmup W]\n");
        return 64;
    }
    if (dim == 1) ny = 1;
    if (sweeps % 2) sweeps++;
    const size_t n = (size_t)nx * ny;
    // 2D: the whole top row; 1D: a short stretch at the left end.
    const int nin = dim == 2 ? nx : std::min(nx, 16);
    const int nparts = 64;

    float *u = upload_random(n, 20, 0.0f, 1.0f);
    float *v = nullptr, *d_in = nullptr, *part = nullptr, *d_res = nullptr;
    CK(cudaMalloc(&v, n * sizeof(float)));
    CK(cudaMemcpy(v, u, n * sizeof(float), cudaMemcpyDeviceToDevice));
    CK(cudaMalloc(&d_in, nin * sizeof(float)));
    CK(cudaMalloc(&part, nparts * sizeof(float)));
    CK(cudaMalloc(&d_res, sizeof(float)));
    cudaStream_t s;
    CK(cudaStreamCreate(&s));

    // Eager reads and writes pageable memory, as most programs do; the graph
    // needs fixed addresses, so it gets pinned staging the host copies through.
    std::vector<float> h_in(nin);
    float h_res = 0.0f;
    float *pin_in = nullptr, *pin_res = nullptr;
    if (mode == Mode::graph) {
        CK(cudaMallocHost(&pin_in, nin * sizeof(float)));
        CK(cudaMallocHost(&pin_res, sizeof(float)));
    }
    Rng feed(21);
    std::vector<float> residuals;

    auto submit = [&](const float *src_in, float *dst_res) {
        CK(cudaMemcpyAsync(d_in, src_in, nin * sizeof(float), cudaMemcpyHostToDevice, s));
        k_boundary<<<blocks_for(nin, 256), 256, 0, s>>>(u, d_in, nin);
        CK_LAUNCH();
        // Even sweep count: u and v alternate and the step ends back in u.
        for (int q = 0; q < sweeps; q++) {
            float *src = (q % 2) ? v : u, *dst = (q % 2) ? u : v;
            if (dim == 2) {
                dim3 b(32, 8), g(blocks_for(nx, 32), blocks_for(ny, 8));
                k_jacobi2d<<<g, b, 0, s>>>(dst, src, nx, ny);
            } else {
                k_jacobi1d<<<blocks_for(nx, 256), 256, 0, s>>>(dst, src, nx);
            }
            CK_LAUNCH();
        }
        k_absdiff_partial<<<nparts, 256, 0, s>>>(part, u, v, n);
        CK_LAUNCH();
        k_sum_final<<<1, 256, 0, s>>>(d_res, part, nparts);
        CK_LAUNCH();
        CK(cudaMemcpyAsync(dst_res, d_res, sizeof(float), cudaMemcpyDeviceToHost, s));
    };
    cudaGraphExec_t exec = nullptr;
    if (mode == Mode::graph) {
        cudaGraph_t g;
        CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
        submit(pin_in, pin_res);
        CK(cudaStreamEndCapture(s, &g));
        CK(cudaGraphInstantiate(&exec, g, 0));
        CK(cudaGraphDestroy(g));
    }

    run_timed(plan, [&](long) {
        feed.fill(h_in.data(), nin, 0.0f, 1.0f);
        if (mode == Mode::eager) {
            submit(h_in.data(), &h_res);
            CK(cudaStreamSynchronize(s));
        } else {
            memcpy(pin_in, h_in.data(), nin * sizeof(float));
            CK(cudaGraphLaunch(exec, s));
            CK(cudaStreamSynchronize(s));
            h_res = *pin_res;
        }
        residuals.push_back(h_res);
    });

    Digest d;
    d.add_device(u, n * sizeof(float));
    d.add_vec(residuals);
    char name[80];
    snprintf(name, sizeof name, "stencil dim=%d nx=%d ny=%d sweeps=%d iters=%ld", dim, nx, ny, sweeps,
             plan.total());
    print_result(name, d, {residuals.front(), residuals.back(), read_device_float(u, n / 2)});

    if (exec) CK(cudaGraphExecDestroy(exec));
    if (pin_in) CK(cudaFreeHost(pin_in));
    if (pin_res) CK(cudaFreeHost(pin_res));
    CK(cudaStreamDestroy(s));
    for (float *p : {u, v, d_in, part, d_res}) CK(cudaFree(p));
    return 0;
}
