// kernels/scenarios.cu: the correctness scenarios as real programs, one per name
// on the command line, each printing a digest of everything it computed.
#include <cublas_v2.h>

#include <thread>

#include "scenario_common.cuh"

#define CKB(call)                                                                        \
    do {                                                                                 \
        cublasStatus_t ckb_st_ = (call);                                                 \
        if (ckb_st_ != CUBLAS_STATUS_SUCCESS) {                                          \
            fprintf(stderr, "%s:%d: %s: cublas status %d\n", __FILE__, __LINE__, #call, \
                    (int)ckb_st_);                                                       \
            exit(2);                                                                     \
        }                                                                                \
    } while (0)

static float *dev_zero(size_t n) {
    float *d;
    CK(cudaMalloc(&d, n * sizeof(float)));
    CK(cudaMemset(d, 0, n * sizeof(float)));
    return d;
}

// Coefficients per (iteration, kernel), fixed by seed.
static float coef(long it, int j) {
    Rng r(1000003ULL * (uint64_t)it + (uint64_t)j);
    return r.uni(0.5f, 0.95f);
}

static void sc_chain(long iters) {
    float *y = upload_random(SC_N, 1, -1, 1), *x = upload_random(SC_N, 2, -1, 1);
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    for (long it = 0; it < iters; it++) {
        for (int j = 0; j < 20; j++) launch_affine(s, y, x, coef(0, j), 0.1f * (float)(j % 3) - 0.1f);
        CK(cudaStreamSynchronize(s));
    }
    finish("chain", {y});
}

static void sc_forkjoin3(long iters) {
    float *root = upload_random(SC_N, 3, -1, 1), *b1 = upload_random(SC_N, 4, -1, 1),
          *b2 = upload_random(SC_N, 5, -1, 1);
    cudaStream_t s0, s1, s2;
    CK(cudaStreamCreate(&s0));
    CK(cudaStreamCreate(&s1));
    CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    cudaEvent_t fork, j1, j2;
    for (cudaEvent_t *e : {&fork, &j1, &j2}) CK(cudaEventCreateWithFlags(e, cudaEventDisableTiming));
    for (long it = 0; it < iters; it++) {
        launch_affine(s0, root, b1, 0.9f, 0.05f);
        CK(cudaEventRecord(fork, s0));
        CK(cudaStreamWaitEvent(s1, fork, 0));
        CK(cudaStreamWaitEvent(s2, fork, 0));
        for (int j = 0; j < 3; j++) {
            launch_affine(s1, b1, root, coef(it, j), 0.5f);
            launch_affine(s2, b2, root, coef(it, j + 3), -0.5f);
        }
        CK(cudaEventRecord(j1, s1));
        CK(cudaEventRecord(j2, s2));
        CK(cudaStreamWaitEvent(s0, j1, 0));
        CK(cudaStreamWaitEvent(s0, j2, 0));
        launch_affine(s0, root, b2, 0.5f, 0.25f);
        CK(cudaStreamSynchronize(s0));
    }
    finish("forkjoin3", {root, b1, b2});
}

// Stream 0 (legacy) orders against blocking streams implicitly; the
// non-blocking stream only through the explicit event.
static void sc_legacy_mix(long iters) {
    float *A = upload_random(SC_N, 6, -1, 1), *B = upload_random(SC_N, 7, -1, 1),
          *C = upload_random(SC_N, 8, -1, 1), *X = upload_random(SC_N, 9, -1, 1);
    cudaStream_t sb, snb;
    CK(cudaStreamCreate(&sb));
    CK(cudaStreamCreateWithFlags(&snb, cudaStreamNonBlocking));
    cudaEvent_t ev;
    CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    for (long it = 0; it < iters; it++) {
        launch_affine(sb, A, X, coef(it, 0), 0.5f);
        launch_affine(0, B, A, 0.5f, 0.5f);  // must see sb's write of A
        launch_affine(sb, A, B, 0.75f, 0.25f);  // must see the legacy write of B
        launch_affine(snb, C, X, coef(it, 1), -0.25f);
        CK(cudaEventRecord(ev, snb));
        CK(cudaStreamWaitEvent(sb, ev, 0));
        launch_affine(sb, A, C, 0.9f, 0.1f);
        launch_affine(cudaStreamLegacy, B, C, 0.5f, 0.125f);
        CK(cudaStreamSynchronize(sb));
        CK(cudaStreamSynchronize(0));
    }
    finish("legacy_mix", {A, B, C});
}

static void sc_pingpong(long iters) {
    float *A = upload_random(SC_N, 10, -1, 1), *B = dev_zero(SC_N);
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    for (long it = 0; it < iters; it++) {
        for (int j = 0; j < 3; j++) {
            k_smooth<<<SC_G, SC_T, 0, s>>>(B, A, SC_N, 0.01f * (float)j);
            CK_LAUNCH();
            std::swap(A, B);
        }
        CK(cudaStreamSynchronize(s));
    }
    finish("pingpong", {A, B});
}

static void sc_scalar(long iters) {
    float *y = upload_random(SC_N, 11, -1, 1), *x = upload_random(SC_N, 12, -1, 1);
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    for (long it = 0; it < iters; it++) {
        for (int j = 0; j < 8; j++) launch_affine(s, y, x, coef(0, j), j == 3 ? 0.001f * (float)it : 0.1f);
        CK(cudaStreamSynchronize(s));
    }
    finish("scalar", {y});
}

static void sc_diverge(long iters) {
    float *y = upload_random(SC_N, 13, -1, 1), *x = upload_random(SC_N, 14, -1, 1);
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    for (long it = 0; it < iters; it++) {
        for (int j = 0; j < 8; j++) {
            if (j == 4 && it % 5 == 4) {
                k_other<<<SC_G, SC_T, 0, s>>>(y, SC_N, 0.3f);
                CK_LAUNCH();
            } else {
                launch_affine(s, y, x, coef(0, j), 0.2f);
            }
        }
        CK(cudaStreamSynchronize(s));
    }
    finish("diverge", {y});
}

// A pageable source is read when the copy is issued; rewriting it before the
// second copy of the same segment must not leak into the first.
static void sc_pageable_rewrite(long iters) {
    float *y = upload_random(SC_N, 15, -1, 1), *d1 = dev_zero(SC_N), *d2 = dev_zero(SC_N);
    std::vector<float> h(SC_N);
    Rng r(16);
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    for (long it = 0; it < iters; it++) {
        r.fill(h.data(), SC_N, -1, 1);
        CK(cudaMemcpyAsync(d1, h.data(), SC_N * sizeof(float), cudaMemcpyHostToDevice, s));
        r.fill(h.data(), SC_N, -1, 1);
        CK(cudaMemcpyAsync(d2, h.data(), SC_N * sizeof(float), cudaMemcpyHostToDevice, s));
        launch_affine(s, y, d1, 0.5f, 1.0f);
        launch_affine(s, y, d2, 0.5f, -1.0f);
        r.fill(h.data(), SC_N, -1, 1);  // also after the last copy, before the sync
        CK(cudaStreamSynchronize(s));
    }
    finish("pageable_rewrite", {y, d1, d2});
}

static void sc_pinned(long iters) {
    float *y = upload_random(SC_N, 17, -1, 1), *d = dev_zero(SC_N), *sum = dev_zero(1);
    float *hin, *hout;
    CK(cudaMallocHost(&hin, SC_N * sizeof(float)));
    CK(cudaMallocHost(&hout, sizeof(float)));
    Rng r(18);
    std::vector<float> seen;
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    for (long it = 0; it < iters; it++) {
        r.fill(hin, SC_N, -1, 1);
        CK(cudaMemcpyAsync(d, hin, SC_N * sizeof(float), cudaMemcpyHostToDevice, s));
        launch_affine(s, y, d, 0.7f, 0.3f);
        k_sum<<<1, 256, 0, s>>>(sum, y, SC_N);
        CK_LAUNCH();
        CK(cudaMemcpyAsync(hout, sum, sizeof(float), cudaMemcpyDeviceToHost, s));
        CK(cudaStreamSynchronize(s));
        seen.push_back(*hout);
    }
    finish("pinned", {y}, seen);
    CK(cudaFreeHost(hin));
    CK(cudaFreeHost(hout));
}

// A device-to-pageable copy returns only once done, so the host may use the
// value at once: the iteration's only blocking point is that copy.
static void sc_d2h_pageable(long iters) {
    float *y = upload_random(SC_N, 19, -1, 1), *x = upload_random(SC_N, 20, -1, 1), *sum = dev_zero(1);
    std::vector<float> seen;
    float a = 0.8f;
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    for (long it = 0; it < iters; it++) {
        for (int j = 0; j < 4; j++) launch_affine(s, y, x, a, 0.1f * (float)j);
        k_sum<<<1, 256, 0, s>>>(sum, y, SC_N);
        CK_LAUNCH();
        float host_sum;
        CK(cudaMemcpyAsync(&host_sum, sum, sizeof(float), cudaMemcpyDeviceToHost, s));
        seen.push_back(host_sum);
        a = feedback(host_sum);
    }
    finish("d2h_pageable", {y}, seen);
}

static void sc_memcpy_blocking(long iters) {
    float *y = upload_random(SC_N, 21, -1, 1), *d = dev_zero(SC_N), *sum = dev_zero(1);
    std::vector<float> h(SC_N), seen;
    Rng r(22);
    float a = 0.8f;
    for (long it = 0; it < iters; it++) {
        r.fill(h.data(), SC_N, -1, 1);
        CK(cudaMemcpy(d, h.data(), SC_N * sizeof(float), cudaMemcpyHostToDevice));
        launch_affine(0, y, d, a, 0.5f);
        k_sum<<<1, 256>>>(sum, y, SC_N);
        CK_LAUNCH();
        float host_sum;
        CK(cudaMemcpy(&host_sum, sum, sizeof(float), cudaMemcpyDeviceToHost));
        seen.push_back(host_sum);
        a = feedback(host_sum);
    }
    finish("memcpy_blocking", {y}, seen);
}

struct HostFnCtx {
    float *hin, *hout;
    std::vector<float> seen;
};

// Runs in the driver's callback thread, in stream order: it reads what the
// copy before it wrote and sets what the copy after it reads.
static void CUDART_CB host_step(void *p) {
    HostFnCtx *c = (HostFnCtx *)p;
    c->seen.push_back(*c->hout);
    *c->hin = feedback(*c->hout);
}

static void sc_hostfn(long iters) {
    float *y = upload_random(SC_N, 23, -1, 1), *x = upload_random(SC_N, 24, -1, 1), *sum = dev_zero(1),
          *da = dev_zero(1);
    HostFnCtx ctx;
    CK(cudaMallocHost(&ctx.hin, sizeof(float)));
    CK(cudaMallocHost(&ctx.hout, sizeof(float)));
    *ctx.hin = 1.0f;
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    for (long it = 0; it < iters; it++) {
        CK(cudaMemcpyAsync(da, ctx.hin, sizeof(float), cudaMemcpyHostToDevice, s));
        k_affine_dev<<<SC_G, SC_T, 0, s>>>(y, x, SC_N, da);
        CK_LAUNCH();
        k_sum<<<1, 256, 0, s>>>(sum, y, SC_N);
        CK_LAUNCH();
        CK(cudaMemcpyAsync(ctx.hout, sum, sizeof(float), cudaMemcpyDeviceToHost, s));
        CK(cudaLaunchHostFunc(s, host_step, &ctx));
        if (it % 4 == 3) CK(cudaStreamSynchronize(s));
    }
    CK(cudaStreamSynchronize(s));
    finish("hostfn", {y}, ctx.seen);
    CK(cudaFreeHost(ctx.hin));
    CK(cudaFreeHost(ctx.hout));
}

static void sc_memset(long iters) {
    float *y = upload_random(SC_N, 25, -1, 1), *z = dev_zero(SC_N);
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    for (long it = 0; it < iters; it++) {
        // A byte pattern that changes every iteration: the memset's value is a parameter too.
        CK(cudaMemsetAsync(z, (int)((it * 7) & 0x3f), SC_N * sizeof(float), s));
        launch_affine(s, y, z, 0.5f, 0.5f);
        CK(cudaMemsetAsync(z + SC_N / 2, 0x3e, SC_N / 4 * sizeof(float), s));
        launch_affine(s, y, z, 0.9f, -0.25f);
        CK(cudaStreamSynchronize(s));
    }
    finish("memset", {y, z});
}

// Spin on a query of work submitted this iteration, then trust the result:
// "ready" must mean the copy into pinned memory has landed.
static void query_loop(long iters, bool use_event, const char *name) {
    float *y = upload_random(SC_N, 26, -1, 1), *x = upload_random(SC_N, 27, -1, 1), *sum = dev_zero(1);
    float *h;
    CK(cudaMallocHost(&h, sizeof(float)));
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    cudaEvent_t ev;
    CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    std::vector<float> seen;
    float a = 0.8f;
    for (long it = 0; it < iters; it++) {
        for (int j = 0; j < 4; j++) launch_affine(s, y, x, a, 0.05f * (float)j);
        k_sum<<<1, 256, 0, s>>>(sum, y, SC_N);
        CK_LAUNCH();
        CK(cudaMemcpyAsync(h, sum, sizeof(float), cudaMemcpyDeviceToHost, s));
        if (use_event) CK(cudaEventRecord(ev, s));
        cudaError_t e;
        while ((e = use_event ? cudaEventQuery(ev) : cudaStreamQuery(s)) == cudaErrorNotReady) {
        }
        CK(e);
        seen.push_back(*h);
        a = feedback(*h);
    }
    finish(name, {y}, seen);
    CK(cudaFreeHost(h));
}

static void sc_own_capture(long iters) {
    float *y = upload_random(SC_N, 28, -1, 1), *z = upload_random(SC_N, 29, -1, 1),
          *x = upload_random(SC_N, 30, -1, 1);
    cudaStream_t s, sc;
    CK(cudaStreamCreate(&s));
    CK(cudaStreamCreateWithFlags(&sc, cudaStreamNonBlocking));
    cudaEvent_t e1, e2;
    CK(cudaEventCreateWithFlags(&e1, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&e2, cudaEventDisableTiming));
    auto capture = [&](float c) {
        cudaGraph_t g;
        CK(cudaStreamBeginCapture(sc, cudaStreamCaptureModeThreadLocal));
        for (int j = 0; j < 3; j++) {
            k_affine<<<SC_G, SC_T, 0, sc>>>(z, y, SC_N, 0.8f, c + 0.1f * (float)j);
            CK_LAUNCH();
        }
        CK(cudaStreamEndCapture(sc, &g));
        return g;
    };
    cudaGraphExec_t exec;
    {
        cudaGraph_t g = capture(0.2f);
        CK(cudaGraphInstantiate(&exec, g, 0));
        CK(cudaGraphDestroy(g));
    }
    for (long it = 0; it < iters; it++) {
        launch_affine(s, y, x, coef(it, 0), 0.3f);
        CK(cudaEventRecord(e1, s));
        CK(cudaStreamWaitEvent(sc, e1, 0));
        CK(cudaGraphLaunch(exec, sc));
        CK(cudaEventRecord(e2, sc));
        CK(cudaStreamWaitEvent(s, e2, 0));
        launch_affine(s, y, z, 0.5f, 0.5f);
        CK(cudaStreamSynchronize(s));
        if (it % 10 == 5) {  // the program re-captures and updates its own graph
            cudaGraph_t g = capture(0.01f * (float)it);
            cudaGraphExecUpdateResultInfo info;
            if (cudaGraphExecUpdate(exec, g, &info) != cudaSuccess) {
                (void)cudaGetLastError();
                CK(cudaGraphExecDestroy(exec));
                CK(cudaGraphInstantiate(&exec, g, 0));
            }
            CK(cudaGraphDestroy(g));
        }
    }
    CK(cudaGraphExecDestroy(exec));
    finish("own_capture", {y, z});
}

// No blocking point until the end; the final blocking cudaMemcpy on the legacy
// stream must wait for everything queued on the blocking stream.
static void sc_nosync(long iters) {
    float *y = upload_random(SC_N, 31, -1, 1), *x = upload_random(SC_N, 32, -1, 1), *z = dev_zero(SC_N);
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    cudaEvent_t ev;
    CK(cudaEventCreate(&ev));
    for (long it = 0; it < iters; it++) {
        for (int j = 0; j < 5; j++) launch_affine(s, y, x, coef(0, j), 0.1f);
        CK(cudaMemcpyAsync(z, y, SC_N * sizeof(float), cudaMemcpyDeviceToDevice, s));
        launch_affine(s, x, z, 0.5f, 0.25f);
        CK(cudaEventRecord(ev, s));
    }
    std::vector<float> h(SC_N);
    CK(cudaMemcpy(h.data(), y, SC_N * sizeof(float), cudaMemcpyDeviceToHost));
    finish("nosync", {x, z}, h);
}

static void sc_threads(long iters) {
    const int nt = 2;
    float *y[nt], *x[nt];
    for (int t = 0; t < nt; t++) {
        y[t] = upload_random(SC_N, 33 + t, -1, 1);
        x[t] = upload_random(SC_N, 35 + t, -1, 1);
    }
    std::vector<std::thread> th;
    for (int t = 0; t < nt; t++)
        th.emplace_back([&, t] {
            cudaStream_t s;
            CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
            for (long it = 0; it < iters; it++) {
                for (int j = 0; j < 10; j++) launch_affine(s, y[t], x[t], coef(t, j), 0.1f * (float)t);
                CK(cudaStreamSynchronize(s));
            }
            CK(cudaStreamDestroy(s));
        });
    for (auto &t : th) t.join();
    finish("threads", {y[0], y[1]});
}

// Sizes change every iteration: grid, kernel argument and copy size differ.
static void sc_shape(long iters) {
    float *y = upload_random(SC_N, 37, -1, 1), *x = upload_random(SC_N, 38, -1, 1), *z = dev_zero(SC_N);
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    for (long it = 0; it < iters; it++) {
        int n = 1000 + (int)((it * 613) % (SC_N - 1000));
        k_affine<<<blocks_for(n, SC_T), SC_T, 0, s>>>(y, x, n, 0.8f, 0.2f);
        CK_LAUNCH();
        CK(cudaMemcpyAsync(z, y, n * sizeof(float), cudaMemcpyDeviceToDevice, s));
        k_affine<<<blocks_for(SC_N - n, SC_T), SC_T, 0, s>>>(x + n, z, SC_N - n, 0.9f, 0.1f);
        CK_LAUNCH();
        CK(cudaStreamSynchronize(s));
    }
    finish("shape", {y, x, z});
}

// A decoding step's shape: a device-to-device copy one element longer every
// iteration (a sequence growing by a token) among twenty kernels.
static void sc_grow_copy(long iters) {
    float *y = upload_random(SC_N, 39, -1, 1), *z = dev_zero(SC_N);
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    for (long it = 0; it < iters; it++) {
        for (int k = 0; k < 10; k++)
            launch_affine(s, y, y, 0.99f, coef(it, k) * 1e-3f);
        size_t len = 16 + (size_t)it % (SC_N - 16);
        CK(cudaMemcpyAsync(z, y, len * sizeof(float), cudaMemcpyDeviceToDevice, s));
        for (int k = 0; k < 10; k++)
            launch_affine(s, y, z, 0.5f, 0.25f);
        CK(cudaStreamSynchronize(s));
    }
    finish("grow_copy", {y, z});
}

// cuBLAS launches reach the driver on their own; they must stay in order with
// the program's kernels around them on the same stream.
static void sc_cublas(long iters) {
    const int m = 128;
    const size_t mm = (size_t)m * m;
    float *A = upload_random(mm, 39, -1, 1), *B = upload_random(mm, 40, -1, 1), *C = upload_random(mm, 41, -1, 1);
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    cublasHandle_t h;
    CKB(cublasCreate(&h));
    CKB(cublasSetStream(h, s));
    const float al = 1.0f / (float)m, zero = 0.0f, one = 1.0f;
    for (long it = 0; it < iters; it++) {
        k_affine<<<blocks_for(mm, 256), 256, 0, s>>>(A, B, (int)mm, 0.9f, 0.1f * coef(it, 0));
        CK_LAUNCH();
        CKB(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, m, m, &al, A, m, B, m, &zero, C, m));
        k_affine<<<blocks_for(mm, 256), 256, 0, s>>>(A, C, (int)mm, 0.5f, 0.5f);
        CK_LAUNCH();
        CKB(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, m, m, m, &al, C, m, A, m, &one, B, m));
        k_other<<<blocks_for(mm, 256), 256, 0, s>>>(B, (int)mm, 0.01f);
        CK_LAUNCH();
        CK(cudaStreamSynchronize(s));
    }
    CKB(cublasDestroy(h));
    CK(cudaDeviceSynchronize());
    Digest d;
    for (const float *b : {A, B, C}) d.add_device(b, mm * sizeof(float));
    print_result("cublas", d, {read_device_float(A, 0), read_device_float(B, mm - 1), read_device_float(C, 7)});
}

// A launch that fails must fail at the same call, with the same error, and
// leave the surrounding work intact.
static void sc_launch_error(long iters) {
    float *y = upload_random(SC_N, 42, -1, 1), *x = upload_random(SC_N, 43, -1, 1);
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    std::vector<float> codes;
    for (long it = 0; it < iters; it++) {
        launch_affine(s, y, x, 0.8f, 0.1f);
        if (it % 3 == 0) {
            k_affine<<<1, 2048, 0, s>>>(y, x, SC_N, 0.0f, 0.0f);  // too many threads per block
            // The code (CUDA 13 says cudaErrorInvalidValue) goes into the
            // output, which must be the same bare and under cgraft.
            cudaError_t e = cudaGetLastError();
            codes.push_back((float)e);
            if (e == cudaSuccess) {
                fprintf(stderr, "launch_error: a block of 2048 threads was accepted\n");
                exit(1);
            }
            // An invalid direction is refused on the host, before anything is queued.
            e = cudaMemcpyAsync(y, x, 4, (cudaMemcpyKind)42, s);
            codes.push_back((float)e);
            if (e == cudaSuccess) {
                fprintf(stderr, "launch_error: a copy with an invalid direction succeeded\n");
                exit(1);
            }
            (void)cudaGetLastError();
        }
        launch_affine(s, y, x, 0.7f, -0.1f);
        CK(cudaStreamSynchronize(s));
    }
    finish("launch_error", {y}, codes);
}

// Cross-stream event dependency; the host waits on the event only.
static void sc_event_sync(long iters) {
    float *y = upload_random(SC_N, 44, -1, 1), *z = upload_random(SC_N, 45, -1, 1), *sum = dev_zero(1);
    float *h;
    CK(cudaMallocHost(&h, sizeof(float)));
    cudaStream_t s1, s2;
    CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    cudaEvent_t e1, e2;
    CK(cudaEventCreate(&e1));
    CK(cudaEventCreate(&e2));
    std::vector<float> seen;
    for (long it = 0; it < iters; it++) {
        for (int j = 0; j < 3; j++) launch_affine(s1, y, z, coef(it, j), 0.1f);
        CK(cudaEventRecord(e1, s1));
        CK(cudaStreamWaitEvent(s2, e1, 0));
        launch_affine(s2, z, y, 0.6f, 0.4f);
        k_sum<<<1, 256, 0, s2>>>(sum, z, SC_N);
        CK_LAUNCH();
        CK(cudaMemcpyAsync(h, sum, sizeof(float), cudaMemcpyDeviceToHost, s2));
        CK(cudaEventRecord(e2, s2));
        CK(cudaEventSynchronize(e2));
        float ms = -1.0f;
        CK(cudaEventElapsedTime(&ms, e1, e2));  // both recorded for real: must succeed
        if (!(ms >= 0.0f)) {
            fprintf(stderr, "event_sync: elapsed time %f\n", ms);
            exit(1);
        }
        seen.push_back(*h);
        // s1 reads z next iteration: it must wait for s2 too.
        CK(cudaStreamWaitEvent(s1, e2, 0));
    }
    finish("event_sync", {y, z}, seen);
    CK(cudaFreeHost(h));
}

static void sc_device_sync(long iters) {
    float *y[3], *x = upload_random(SC_N, 46, -1, 1);
    cudaStream_t s[3];
    for (int j = 0; j < 3; j++) {
        y[j] = upload_random(SC_N, 47 + j, -1, 1);
        CK(cudaStreamCreateWithFlags(&s[j], cudaStreamNonBlocking));
    }
    for (long it = 0; it < iters; it++) {
        for (int j = 0; j < 3; j++)
            for (int q = 0; q < 3; q++) launch_affine(s[j], y[j], x, coef(j, q), 0.2f);
        CK(cudaDeviceSynchronize());
        // Reads all three results: only correct if the device sync covered every stream.
        launch_affine(s[0], x, y[1], 0.5f, 0.25f);
        launch_affine(s[0], x, y[2], 1.0f, 0.25f);
        CK(cudaDeviceSynchronize());
    }
    finish("device_sync", {y[0], y[1], y[2], x});
}

// Allocation inside the loop: addresses may repeat or move between iterations.
static void sc_malloc_free(long iters) {
    float *y = upload_random(SC_N, 50, -1, 1), *x = upload_random(SC_N, 51, -1, 1);
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    for (long it = 0; it < iters; it++) {
        float *tmp;
        CK(cudaMalloc(&tmp, SC_N * sizeof(float)));
        CK(cudaMemcpyAsync(tmp, x, SC_N * sizeof(float), cudaMemcpyDeviceToDevice, s));
        launch_affine(s, tmp, y, 0.5f, coef(it, 0));
        launch_affine(s, y, tmp, 0.5f, 0.5f);
        CK(cudaFree(tmp));
    }
    finish("malloc_free", {y});
}

static void sc_malloc_async(long iters) {
    float *y = upload_random(SC_N, 52, -1, 1), *x = upload_random(SC_N, 53, -1, 1);
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    for (long it = 0; it < iters; it++) {
        float *tmp;
        CK(cudaMallocAsync((void **)&tmp, SC_N * sizeof(float), s));
        CK(cudaMemcpyAsync(tmp, x, SC_N * sizeof(float), cudaMemcpyDeviceToDevice, s));
        launch_affine(s, tmp, y, 0.5f, coef(it, 1));
        launch_affine(s, y, tmp, 0.5f, 0.5f);
        CK(cudaFreeAsync(tmp, s));
        if (it % 2) CK(cudaStreamSynchronize(s));
    }
    finish("malloc_async", {y});
}

// y = b * x, reading nothing of y: a kernel may start on fresh memory.
__global__ void k_scaled(float *y, const float *x, int n, float b) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = b * x[i];
}

// Scratch memory allocated and freed at every iteration, as Thrust's temporary
// storage is, named by kernels only, beside a memset and a copy on memory that
// stays: graphs stay (only copy and memset nodes hold the memory they name).
static void sc_scratch_free(long iters) {
    float *y = upload_random(SC_N, 54, -1, 1), *x = upload_random(SC_N, 55, -1, 1), *keep = dev_zero(SC_N);
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    for (long it = 0; it < iters; it++) {
        float *tmp;
        CK(cudaMalloc(&tmp, SC_N * sizeof(float)));
        CK(cudaMemsetAsync(keep, 0, SC_N / 2 * sizeof(float), s));
        CK(cudaMemcpyAsync(keep + SC_N / 2, x, SC_N / 2 * sizeof(float), cudaMemcpyDeviceToDevice, s));
        k_scaled<<<SC_G, SC_T, 0, s>>>(tmp, keep, SC_N, coef(it, 3));
        CK_LAUNCH();
        launch_affine(s, tmp, y, 0.5f, 0.25f);
        launch_affine(s, y, tmp, 0.5f, 0.5f);
        CK(cudaFree(tmp));
    }
    finish("scratch_free", {y, keep});
}

// A loop's memset and copy name scratch memory (inside it, not at its start),
// which is then freed and allocated again, of the same size (the same address,
// as the allocator hands it out), before the loop runs once more: a graph made
// for the first allocation must not be launched on the second.
static void sc_free_realloc(long iters) {
    float *y = upload_random(SC_N, 56, -1, 1), *scratch;
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    for (int round = 0; round < 3; round++) {
        CK(cudaMalloc(&scratch, 2 * SC_N * sizeof(float)));
        for (long it = 0; it < iters; it++) {
            CK(cudaMemsetAsync(scratch + 64, 0, (2 * SC_N - 64) * sizeof(float), s));
            CK(cudaMemcpyAsync(scratch + SC_N, y, SC_N / 2 * sizeof(float), cudaMemcpyDeviceToDevice, s));
            launch_affine(s, y, scratch + SC_N, 0.5f, coef(it, round));
            launch_affine(s, y, y, 0.5f, 0.25f);
            CK(cudaStreamSynchronize(s));
        }
        CK(cudaFree(scratch));
    }
    finish("free_realloc", {y});
}

int main(int argc, char **argv) {
    std::vector<Scenario> all = {
        {"chain", "single stream, 20 kernels, sync per iteration", sc_chain},
        {"forkjoin3", "fork/join over three streams with events", sc_forkjoin3},
        {"legacy_mix", "legacy default stream with blocking and non-blocking streams", sc_legacy_mix},
        {"pingpong", "buffers swapped between kernels", sc_pingpong},
        {"scalar", "one scalar argument changes every iteration", sc_scalar},
        {"diverge", "every 5th iteration one kernel in the middle differs", sc_diverge},
        {"pageable_rewrite", "pageable buffer rewritten between two H2D copies", sc_pageable_rewrite},
        {"pinned", "pinned H2D and D2H async copies", sc_pinned},
        {"d2h_pageable", "device-to-pageable async copy ends each iteration", sc_d2h_pageable},
        {"memcpy_blocking", "blocking cudaMemcpy both ways on the legacy stream", sc_memcpy_blocking},
        {"hostfn", "host function per iteration between pinned copies", sc_hostfn},
        {"memset", "memsets with a value changing every iteration", sc_memset},
        {"event_query", "spin on cudaEventQuery of this iteration's event", [](long n) { query_loop(n, true, "event_query"); }},
        {"stream_query", "spin on cudaStreamQuery", [](long n) { query_loop(n, false, "stream_query"); }},
        {"own_capture", "the program's own stream capture and graph update", sc_own_capture},
        {"nosync", "no blocking point until the end", sc_nosync},
        {"threads", "two host threads with their own streams", sc_threads},
        {"shape", "sizes change every iteration", sc_shape},
        {"grow_copy", "a device copy one element longer every iteration", sc_grow_copy},
        {"cublas", "own kernels interleaved with cuBLAS GEMMs on one stream", sc_cublas},
        {"launch_error", "invalid launches and copies fail the same way", sc_launch_error},
        {"event_sync", "cross-stream events, cudaEventSynchronize, elapsed time", sc_event_sync},
        {"device_sync", "three streams joined by cudaDeviceSynchronize", sc_device_sync},
        {"malloc_free", "cudaMalloc/cudaFree inside the loop", sc_malloc_free},
        {"malloc_async", "stream-ordered allocation inside the loop", sc_malloc_async},
        {"scratch_free", "scratch allocated and freed every iteration, kernels only on it", sc_scratch_free},
        {"free_realloc", "copy and memset memory freed and allocated again between loops", sc_free_realloc},
    };
    return scenario_main(argc, argv, all);
}
