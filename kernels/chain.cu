// kernels/chain.cu: the launch-bound workload: K tiny order-dependent kernels per
// iteration on one stream, eager or hand-captured as a graph (built twice: shared and static cudart).
#include "common.cuh"

// Affine maps do not commute when a and b vary, so any reordering of the chain
// changes the result.
__global__ void k_axpb(float *y, const float *x, int n, float a, float b) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = y[i] * a + b * x[i];
}

static void usage() {
    fprintf(stderr,
            "usage: chain [--mode eager|graph] [--k K] [--n N] [--iters I] [--repeats R]\n"
            "             [--warmup W] [--sync-every S] [--scalar-changes] [--identical]\n"
            "  --sync-every S: cudaStreamSynchronize after every S-th iteration (0: only at the end)\n"
            "  --identical: the K kernels all take the same arguments (a loop of one launch)\n");
}

int main(int argc, char **argv) {
    Args a(argc, argv);
    if (a.flag("--help")) {
        usage();
        return 0;
    }
    Mode mode = parse_mode(a, true);
    int k = (int)a.num("--k", 100);
    int n = (int)a.num("--n", 4096);
    long sync_every = a.num("--sync-every", 1);
    bool scalar_changes = a.flag("--scalar-changes");
    bool identical = a.flag("--identical");
    TimingPlan plan = TimingPlan::from(a, 20, 7, 50);
    a.finish();
    if (k < 1 || n < 1 || sync_every < 0) {
        usage();
        return 64;
    }

    std::vector<float> as(k), bs(k);
    Rng r(42);
    for (int j = 0; j < k; j++) {
        as[j] = r.uni(0.5f, 0.99f);
        bs[j] = r.uni(-1.0f, 1.0f);
        if (identical && j > 0) {
            as[j] = as[0];
            bs[j] = bs[0];
        }
    }
    float *y = upload_random(n, 1, -1.0f, 1.0f);
    float *x = upload_random(n, 2, -1.0f, 1.0f);
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    const int threads = 256, grid = blocks_for(n, threads);

    // The changing scalar goes to the first kernel; its value never repeats
    // within a run, so a replayer cannot just memoise one graph per value.
    auto b0_of = [&](long it) { return scalar_changes ? bs[0] + 1e-4f * (float)(it % 100003) : bs[0]; };

    cudaGraphExec_t exec = nullptr;
    cudaGraphNode_t first = nullptr;
    cudaGraph_t g = nullptr;
    if (mode == Mode::graph) {
        CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
        for (int j = 0; j < k; j++) {
            k_axpb<<<grid, threads, 0, s>>>(y, x, n, as[j], bs[j]);
            CK_LAUNCH();
        }
        CK(cudaStreamEndCapture(s, &g));
        // A chain has one root: the first kernel, the one whose scalar changes.
        size_t nroots = 1;
        CK(cudaGraphGetRootNodes(g, &first, &nroots));
        if (nroots != 1) {
            fprintf(stderr, "captured chain has %zu roots\n", nroots);
            return 1;
        }
        // The graph stays alive: its nodes name the exec's nodes in updates.
        CK(cudaGraphInstantiate(&exec, g, 0));
    }

    auto body = [&](long it) {
        if (mode == Mode::eager) {
            for (int j = 0; j < k; j++) {
                k_axpb<<<grid, threads, 0, s>>>(y, x, n, as[j], j == 0 ? b0_of(it) : bs[j]);
                CK_LAUNCH();
            }
        } else {
            if (scalar_changes) {
                // Per-node parameter update is the cheapest way a graph takes a new scalar.
                float a0 = as[0], b0 = b0_of(it);
                void *args[] = {&y, &x, &n, &a0, &b0};
                cudaKernelNodeParams p = {};
                p.func = (void *)k_axpb;
                p.gridDim = dim3(grid);
                p.blockDim = dim3(threads);
                p.kernelParams = args;
                CK(cudaGraphExecKernelNodeSetParams(exec, first, &p));
            }
            CK(cudaGraphLaunch(exec, s));
        }
        if (sync_every > 0 && (it + 1) % sync_every == 0) CK(cudaStreamSynchronize(s));
    };
    run_timed(plan, body);
    CK(cudaStreamSynchronize(s));

    Digest d;
    d.add_device(y, n * sizeof(float));
    char name[64];
    snprintf(name, sizeof name, "chain k=%d n=%d iters=%ld%s%s", k, n, plan.total(),
             scalar_changes ? " scalar" : "", identical ? " identical" : "");
    print_result(name, d, {read_device_float(y, 0), read_device_float(y, n - 1)});

    if (exec) CK(cudaGraphExecDestroy(exec));
    if (g) CK(cudaGraphDestroy(g));
    CK(cudaStreamDestroy(s));
    CK(cudaFree(y));
    CK(cudaFree(x));
    return 0;
}
