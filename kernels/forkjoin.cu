// kernels/forkjoin.cu: a fork/join DAG over four streams joined by events every
// iteration, eager or hand-captured across the streams as one graph.
#include "common.cuh"

__global__ void k_axpb(float *y, const float *x, int n, float a, float b) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = y[i] * a + b * x[i];
}

// The join reads every branch: a missing edge lets it read a stale branch.
__global__ void k_join(float *root, const float *b1, const float *b2, const float *b3, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) root[i] = 0.5f * root[i] + 0.25f * b1[i] - 0.125f * b2[i] + 0.0625f * b3[i];
}

int main(int argc, char **argv) {
    Args a(argc, argv);
    Mode mode = parse_mode(a, true);
    int k = (int)a.num("--k", 4);  // kernels per branch
    int n = (int)a.num("--n", 4096);
    long sync_every = a.num("--sync-every", 1);
    TimingPlan plan = TimingPlan::from(a, 20, 7, 100);
    a.finish();
    if (k < 1 || n < 1 || sync_every < 0) {
        fprintf(stderr, "usage: forkjoin [--mode eager|graph] [--k K] [--n N] [--sync-every S] "
                        "[--iters I] [--repeats R] [--warmup W]\n");
        return 64;
    }

    const int nb = 3;
    float *root = upload_random(n, 10, -1.0f, 1.0f);
    float *br[nb];
    for (int j = 0; j < nb; j++) br[j] = upload_random(n, 11 + j, -1.0f, 1.0f);
    std::vector<float> as(nb * k), bs(nb * k);
    Rng r(7);
    for (int j = 0; j < nb * k; j++) {
        as[j] = r.uni(0.5f, 0.99f);
        bs[j] = r.uni(-1.0f, 1.0f);
    }

    cudaStream_t s0, sb[nb];
    CK(cudaStreamCreate(&s0));
    for (int j = 0; j < nb; j++) CK(cudaStreamCreate(&sb[j]));
    cudaEvent_t fork, join[nb];
    CK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
    for (int j = 0; j < nb; j++) CK(cudaEventCreateWithFlags(&join[j], cudaEventDisableTiming));
    const int threads = 256, grid = blocks_for(n, threads);

    auto submit = [&]() {
        k_axpb<<<grid, threads, 0, s0>>>(root, root, n, 0.9f, 0.05f);
        CK_LAUNCH();
        CK(cudaEventRecord(fork, s0));
        for (int j = 0; j < nb; j++) {
            CK(cudaStreamWaitEvent(sb[j], fork, 0));
            for (int q = 0; q < k; q++) {
                k_axpb<<<grid, threads, 0, sb[j]>>>(br[j], root, n, as[j * k + q], bs[j * k + q]);
                CK_LAUNCH();
            }
            CK(cudaEventRecord(join[j], sb[j]));
            CK(cudaStreamWaitEvent(s0, join[j], 0));
        }
        k_join<<<grid, threads, 0, s0>>>(root, br[0], br[1], br[2], n);
        CK_LAUNCH();
    };

    cudaGraphExec_t exec = nullptr;
    if (mode == Mode::graph) {
        cudaGraph_t g;
        CK(cudaStreamBeginCapture(s0, cudaStreamCaptureModeGlobal));
        submit();
        CK(cudaStreamEndCapture(s0, &g));
        CK(cudaGraphInstantiate(&exec, g, 0));
        CK(cudaGraphDestroy(g));
    }

    run_timed(plan, [&](long it) {
        if (mode == Mode::eager)
            submit();
        else
            CK(cudaGraphLaunch(exec, s0));
        if (sync_every > 0 && (it + 1) % sync_every == 0) CK(cudaStreamSynchronize(s0));
    });
    CK(cudaDeviceSynchronize());

    Digest d;
    d.add_device(root, n * sizeof(float));
    for (int j = 0; j < nb; j++) d.add_device(br[j], n * sizeof(float));
    char name[64];
    snprintf(name, sizeof name, "forkjoin k=%d n=%d iters=%ld", k, n, plan.total());
    print_result(name, d, {read_device_float(root, 0), read_device_float(br[2], n - 1)});

    if (exec) CK(cudaGraphExecDestroy(exec));
    CK(cudaEventDestroy(fork));
    for (int j = 0; j < nb; j++) {
        CK(cudaEventDestroy(join[j]));
        CK(cudaStreamDestroy(sb[j]));
        CK(cudaFree(br[j]));
    }
    CK(cudaStreamDestroy(s0));
    CK(cudaFree(root));
    return 0;
}
