// kernels/readback.cu: a solver loop of the shape many samples have: each
// iteration resets a device scalar, sweeps, reduces the residual into the
// scalar and copies it into a pageable host variable the host reads before it
// goes on. Eager, or each iteration as a hand-written graph (the copy into
// pinned memory, read after the launch's synchronisation). --graph-into
// pageable makes the graph's copy land in the pageable variable itself;
// --graph-wait event (an event recorded after the launch and waited for) or
// event-sync (that, then the stream's synchronisation too) waits otherwise:
// what a read-back's parts cost, on the device.
#include "common.cuh"

__global__ void k_sweep(float *xn, const float *x, const float *b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float l = i > 0 ? x[i - 1] : 0.0f, r = i < n - 1 ? x[i + 1] : 0.0f;
        xn[i] = 0.5f * (b[i] + 0.5f * (l + r));
    }
}

// One block, a fixed order of additions: the same sum every run.
__global__ void k_resid(float *res, const float *xn, const float *x, int n) {
    __shared__ float part[256];
    float s = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) s += fabsf(xn[i] - x[i]);
    part[threadIdx.x] = s;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
        if (threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) *res += part[0];
}

int main(int argc, char **argv) {
    Args a(argc, argv);
    Mode mode = parse_mode(a, true);
    int n = (int)a.num("--n", 4096);
    const char *into = a.str("--graph-into", "pinned"), *wait = a.str("--graph-wait", "sync");
    TimingPlan plan = TimingPlan::from(a, 20, 7, 200);
    a.finish();
    bool pageable = strcmp(into, "pageable") == 0, by_event = strncmp(wait, "event", 5) == 0,
         also_sync = strcmp(wait, "event-sync") == 0;
    if (n < 2 || (!pageable && strcmp(into, "pinned")) || (!by_event && strcmp(wait, "sync")) ||
        (by_event && !also_sync && strcmp(wait, "event"))) {
        fprintf(stderr, "usage: readback [--mode eager|graph] [--graph-into pinned|pageable] "
                        "[--graph-wait sync|event|event-sync] [--n N] [--iters I] [--repeats R] [--warmup W]\n");
        return 64;
    }
    float *x = upload_random(n, 1, -1.0f, 1.0f), *xn = upload_random(n, 2, -1.0f, 1.0f);
    float *b = upload_random(n, 3, -1.0f, 1.0f), *d_res = nullptr, *h_pin = nullptr;
    CK(cudaMalloc((void **)&d_res, sizeof(float)));
    CK(cudaMallocHost((void **)&h_pin, sizeof(float)));
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    const int threads = 256, grid = blocks_for(n, threads);
    float res = 0.0f; // pageable: the eager copy returns with the value in it
    std::vector<float> hist;

    auto enqueue = [&](float *from, float *to, float *dst) {
        CK(cudaMemsetAsync(d_res, 0, sizeof(float), s));
        k_sweep<<<grid, threads, 0, s>>>(to, from, b, n);
        CK_LAUNCH();
        k_resid<<<1, threads, 0, s>>>(d_res, to, from, n);
        CK_LAUNCH();
        CK(cudaMemcpyAsync(dst, d_res, sizeof(float), cudaMemcpyDeviceToHost, s));
    };
    // The two directions of the ping-pong, as two graphs. A copy into pageable
    // memory cannot be captured: that node is added to the captured rest.
    cudaGraphExec_t exec[2] = {nullptr, nullptr};
    cudaEvent_t done = nullptr;
    if (mode == Mode::graph) {
        for (int k = 0; k < 2; k++) {
            cudaGraph_t g;
            CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
            if (pageable) {
                CK(cudaMemsetAsync(d_res, 0, sizeof(float), s));
                k_sweep<<<grid, threads, 0, s>>>(k ? x : xn, k ? xn : x, b, n);
                k_resid<<<1, threads, 0, s>>>(d_res, k ? x : xn, k ? xn : x, n);
            } else {
                enqueue(k ? xn : x, k ? x : xn, h_pin);
            }
            CK(cudaStreamEndCapture(s, &g));
            if (pageable) {
                size_t nn = 0;
                CK(cudaGraphGetNodes(g, nullptr, &nn));
                std::vector<cudaGraphNode_t> nodes(nn);
                CK(cudaGraphGetNodes(g, nodes.data(), &nn));
                cudaGraphNode_t leaf = nullptr, cp;
                for (auto nd : nodes) {
                    size_t out = 0;
                    CK(cudaGraphNodeGetDependentNodes(nd, nullptr, nullptr, &out));
                    if (!out) leaf = nd;
                }
                CK(cudaGraphAddMemcpyNode1D(&cp, g, &leaf, 1, &res, d_res, sizeof(float), cudaMemcpyDeviceToHost));
            }
            CK(cudaGraphInstantiate(&exec[k], g, 0));
            CK(cudaGraphDestroy(g));
        }
        CK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    }
    auto body = [&](long it) {
        int k = (int)(it & 1);
        if (mode == Mode::eager) {
            enqueue(k ? xn : x, k ? x : xn, &res);
            CK(cudaStreamSynchronize(s));
        } else {
            CK(cudaGraphLaunch(exec[k], s));
            if (by_event) {
                CK(cudaEventRecord(done, s));
                CK(cudaEventSynchronize(done));
            }
            if (!by_event || also_sync) CK(cudaStreamSynchronize(s));
            if (!pageable) res = *h_pin;
        }
        hist.push_back(res); // the host looks at it: a solver would test for convergence
    };
    run_timed(plan, body);
    CK(cudaStreamSynchronize(s));

    Digest d;
    d.add_device(plan.total() & 1 ? xn : x, n * sizeof(float));
    d.add_vec(hist);
    char name[64];
    snprintf(name, sizeof name, "readback n=%d iters=%ld", n, plan.total());
    print_result(name, d, {hist.front(), hist.back()});
    for (int k = 0; k < 2; k++)
        if (exec[k]) CK(cudaGraphExecDestroy(exec[k]));
    if (done) CK(cudaEventDestroy(done));
    CK(cudaStreamDestroy(s));
    CK(cudaFreeHost(h_pin));
    CK(cudaFree(d_res));
    CK(cudaFree(b));
    CK(cudaFree(xn));
    CK(cudaFree(x));
    return 0;
}
