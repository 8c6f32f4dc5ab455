// kernels/solver.cu: conjugate gradient on a small dense SPD system, cuBLAS
// (device pointer mode) interleaved with the program's own kernels on one stream.
#include <cublas_v2.h>

#include "common.cuh"

#define CKB(call)                                                                        \
    do {                                                                                 \
        cublasStatus_t ckb_st_ = (call);                                                 \
        if (ckb_st_ != CUBLAS_STATUS_SUCCESS) {                                          \
            fprintf(stderr, "%s:%d: %s: cublas status %d\n", __FILE__, __LINE__, #call, \
                    (int)ckb_st_);                                                       \
            exit(2);                                                                     \
        }                                                                                \
    } while (0)

// Guards keep a converged solve finite (0/0) until the host notices and restarts.
__global__ void k_alpha(float *alpha, float *nalpha, const float *rr, const float *pq) {
    float al = (*pq != 0.0f) ? *rr / *pq : 0.0f;
    *alpha = al;
    *nalpha = -al;
}

__global__ void k_beta(float *beta, float *rr, const float *rr_new) {
    *beta = (*rr != 0.0f) ? *rr_new / *rr : 0.0f;
    *rr = *rr_new;
}

__global__ void k_xpby(float *p, const float *r, const float *beta, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = r[i] + *beta * p[i];
}

__global__ void k_add_diag(float *A, int n, float d) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) A[(size_t)i * n + i] += d;
}

__global__ void k_restart(float *x, float *r, float *p, const float *b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        x[i] = 0.0f;
        r[i] = b[i];
        p[i] = b[i];
    }
}

int main(int argc, char **argv) {
    Args a(argc, argv);
    Mode mode = parse_mode(a, true);
    int n = (int)a.num("--n", 512);
    long check = a.num("--check-every", 10);
    long max_steps = a.num("--max-steps", 200);
    TimingPlan plan = TimingPlan::from(a, 20, 7, 100);
    a.finish();
    if (n < 2 || check < 1 || max_steps < check) {
        fprintf(stderr, "usage: solver [--mode eager|graph] [--n N] [--check-every C] [--max-steps M] "
                        "[--iters I] [--repeats R] [--warmup W]\n");
        return 64;
    }
    const float tol2 = 1e-10f;  // relative squared residual that ends a solve

    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    cublasHandle_t h;
    CKB(cublasCreate(&h));
    CKB(cublasSetStream(h, s));
    // A workspace of our own keeps cuBLAS from allocating during a capture.
    const size_t ws_bytes = 32u << 20;
    void *ws = nullptr;
    CK(cudaMalloc(&ws, ws_bytes));
    CKB(cublasSetWorkspace(h, ws, ws_bytes));

    // A = B^T B / n + I: SPD with a condition number that takes CG tens of steps.
    float *B = upload_random((size_t)n * n, 30, -1.0f, 1.0f);
    float *A = nullptr;
    CK(cudaMalloc(&A, (size_t)n * n * sizeof(float)));
    {
        const float al = 1.0f / (float)n, be = 0.0f;
        CKB(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, n, n, n, &al, B, n, B, n, &be, A, n));
        k_add_diag<<<blocks_for(n, 256), 256, 0, s>>>(A, n, 0.05f);
        CK_LAUNCH();
    }
    CKB(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_DEVICE));

    float *x, *r, *p, *q, *b, *sc;
    for (float **v : {&x, &r, &p, &q, &b}) CK(cudaMalloc(v, n * sizeof(float)));
    // Device scalars: one, zero, rr, pq, alpha, -alpha, rr_new, beta.
    CK(cudaMalloc(&sc, 8 * sizeof(float)));
    float *one = sc, *zero = sc + 1, *rr = sc + 2, *pq = sc + 3, *alpha = sc + 4, *nalpha = sc + 5,
          *rr_new = sc + 6, *beta = sc + 7;
    const float init_sc[2] = {1.0f, 0.0f};
    CK(cudaMemcpy(sc, init_sc, sizeof init_sc, cudaMemcpyHostToDevice));
    const int threads = 256, grid = blocks_for(n, threads);

    auto cg_step = [&]() {
        CKB(cublasSgemv(h, CUBLAS_OP_N, n, n, one, A, n, p, 1, zero, q, 1));
        CKB(cublasSdot(h, n, p, 1, q, 1, pq));
        k_alpha<<<1, 1, 0, s>>>(alpha, nalpha, rr, pq);
        CK_LAUNCH();
        CKB(cublasSaxpy(h, n, alpha, p, 1, x, 1));
        CKB(cublasSaxpy(h, n, nalpha, q, 1, r, 1));
        CKB(cublasSdot(h, n, r, 1, r, 1, rr_new));
        k_beta<<<1, 1, 0, s>>>(beta, rr, rr_new);
        CK_LAUNCH();
        k_xpby<<<grid, threads, 0, s>>>(p, r, beta, n);
        CK_LAUNCH();
    };

    cudaGraphExec_t exec = nullptr;
    if (mode == Mode::graph) {
        cudaGraph_t g;
        CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
        cg_step();
        CK(cudaStreamEndCapture(s, &g));
        CK(cudaGraphInstantiate(&exec, g, 0));
        CK(cudaGraphDestroy(g));
    }

    // Each solve has its own right-hand side; the host restarts when the
    // residual read every `check` steps is small enough, as a real solver loop does.
    long solve = 0, steps_in_solve = 0;
    float rr0 = 0.0f;
    std::vector<float> trace;  // residual at every check, and solve lengths
    auto restart = [&]() {
        fill_random_device(b, n, 1000 + solve, s);
        k_restart<<<grid, threads, 0, s>>>(x, r, p, b, n);
        CK_LAUNCH();
        CKB(cublasSdot(h, n, b, 1, b, 1, rr));
        CK(cudaMemcpyAsync(&rr0, rr, sizeof(float), cudaMemcpyDeviceToHost, s));
        CK(cudaStreamSynchronize(s));
        steps_in_solve = 0;
    };
    restart();

    run_timed(plan, [&](long) {
        if (mode == Mode::eager)
            cg_step();
        else
            CK(cudaGraphLaunch(exec, s));
        if (++steps_in_solve % check == 0) {
            float cur = 0.0f;
            CK(cudaMemcpyAsync(&cur, rr, sizeof(float), cudaMemcpyDeviceToHost, s));
            CK(cudaStreamSynchronize(s));
            trace.push_back(cur);
            if (cur <= tol2 * rr0 || steps_in_solve >= max_steps) {
                trace.push_back((float)steps_in_solve);
                solve++;
                restart();
            }
        }
    });
    CK(cudaStreamSynchronize(s));

    Digest d;
    d.add_device(x, n * sizeof(float));
    d.add_vec(trace);
    char name[80];
    snprintf(name, sizeof name, "solver n=%d iters=%ld solves=%ld", n, plan.total(), solve);
    print_result(name, d, {read_device_float(x, 0), trace.empty() ? 0.0 : trace.back(), (double)rr0});

    if (exec) CK(cudaGraphExecDestroy(exec));
    CKB(cublasDestroy(h));
    for (float *v : {x, r, p, q, b, sc, A, B}) CK(cudaFree(v));
    CK(cudaFree(ws));
    CK(cudaStreamDestroy(s));
    return 0;
}
