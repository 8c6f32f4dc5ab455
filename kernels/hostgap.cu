// kernels/hostgap.cu: a loop that issues an iteration's kernels and then
// works on the host for a while before its next CUDA call, synchronising
// every fourth iteration only (a program that checks or logs on the host
// while the device computes). Eagerly the device runs during the host's
// work; a tool that held the iteration's kernels through that work would
// start them late and fall behind by the difference each iteration. Eager,
// the iteration as a hand-written graph (--mode graph), or, under cgraft,
// --ab: blocks of iterations with cgraft switched off and on in one process
// (off, on, on, off, ...), medians of each and their ratio.
#include <dlfcn.h>

#include "common.cuh"

// One block; each thread spins for about `cycles` clocks, then steps x.
__global__ void k_spin(float *x, int n, long long cycles) {
    long long t0 = clock64();
    while (clock64() - t0 < cycles) {
    }
    for (int i = threadIdx.x; i < n; i += blockDim.x) x[i] = x[i] * 0.999f + 1.0f;
}

static void host_work(double us) {
    double t0 = now_us();
    while (now_us() - t0 < us) {
    }
}

int main(int argc, char **argv) {
    Args a(argc, argv);
    Mode mode = parse_mode(a, true);
    bool ab = a.flag("--ab");
    int k = (int)a.num("--kernels", 16), n = 4096;
    long long kernel_us = a.num("--kernel-us", 60), host_us = a.num("--host-us", 1500);
    long long cycles = kernel_us * 1700; // the H200's SM clock is 1.5-2 GHz: about kernel_us
    TimingPlan plan = TimingPlan::from(a, 20, 8, 40);
    a.finish();
    if (k < 1 || kernel_us < 0 || host_us < 0 || (ab && mode == Mode::graph)) {
        fprintf(stderr, "usage: hostgap [--mode eager|graph | --ab] [--kernels K] [--kernel-us U] [--host-us H] "
                        "[--iters I] [--repeats R] [--warmup W]\n");
        return 64;
    }
    int (*set_enabled)(int) = nullptr;
    if (ab && !(set_enabled = (int (*)(int))dlsym(RTLD_DEFAULT, "cgraft_set_enabled"))) {
        fprintf(stderr, "hostgap: --ab needs cgraft preloaded\n");
        return 64;
    }
    float *x = upload_random(n, 1, -1.0f, 1.0f);
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaGraphExec_t exec = nullptr;
    if (mode == Mode::graph) {
        cudaGraph_t g;
        CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
        for (int j = 0; j < k; j++) k_spin<<<1, 256, 0, s>>>(x, n, cycles);
        CK(cudaStreamEndCapture(s, &g));
        CK(cudaGraphInstantiate(&exec, g, 0));
        CK(cudaGraphDestroy(g));
    }
    auto iteration = [&](long it) {
        if (exec) {
            CK(cudaGraphLaunch(exec, s));
        } else {
            for (int j = 0; j < k; j++) k_spin<<<1, 256, 0, s>>>(x, n, cycles);
            CK_LAUNCH();
        }
        host_work((double)host_us);
        if (it % 4 == 3) CK(cudaStreamSynchronize(s));
    };
    long it = 0;
    if (!ab) {
        run_timed(plan, [&](long) { iteration(it++); });
    } else {
        for (long i = 0; i < plan.warmup; i++) iteration(it++);
        std::vector<double> by[2];
        for (long r = 0; r < 4 * plan.repeats; r++) {
            int on = (0x6 >> (r % 4)) & 1; // off, on, on, off
            set_enabled(on);
            CK(cudaStreamSynchronize(s));
            double t0 = now_us();
            for (long i = 0; i < plan.iters; i++) iteration(it++);
            CK(cudaStreamSynchronize(s));
            by[on].push_back((now_us() - t0) / (double)plan.iters);
        }
        set_enabled(1);
        double off = median(by[0]), onv = median(by[1]);
        fprintf(stderr, "TIME ab_eager_us=%.3f ab_cgraft_us=%.3f ab_ratio=%.3f blocks=%zu iters=%ld\n", off, onv,
                off / onv, by[0].size() + by[1].size(), plan.iters);
    }
    CK(cudaStreamSynchronize(s));
    std::vector<float> h(n);
    CK(cudaMemcpy(h.data(), x, n * sizeof(float), cudaMemcpyDeviceToHost));
    Digest d;
    d.add(h.data(), h.size() * sizeof(float));
    print_result("hostgap", d, {h[0], h[n - 1]});
    if (exec) CK(cudaGraphExecDestroy(exec));
    CK(cudaFree(x));
    CK(cudaStreamDestroy(s));
    return 0;
}
