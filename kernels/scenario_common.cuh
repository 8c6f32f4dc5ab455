// kernels/scenario_common.cuh: kernels and the name->function registry shared by
// the correctness scenario programs (scenarios.cu, scenarios_ptds.cu).
#pragma once

#include <functional>

#include "common.cuh"

static const int SC_N = 4096;  // floats per buffer: big enough for several blocks
static const int SC_T = 256;
static const int SC_G = (SC_N + SC_T - 1) / SC_T;

// Non-commuting affine update: any reordering of two of these changes the result.
__global__ void k_affine(float *y, const float *x, int n, float a, float b) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = y[i] * a + b * x[i];
}

// Same, with the coefficient read from device memory at run time, so a stale
// or early copy into that memory shows in the result.
__global__ void k_affine_dev(float *y, const float *x, int n, const float *a) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = y[i] * 0.75f + 0.25f * a[0] * x[i];
}

__global__ void k_other(float *y, int n, float c) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = fabsf(y[i]) * 0.9f - c;
}

// Neighbour reads make in-place use wrong, so ping-pong buffers are required.
__global__ void k_smooth(float *out, const float *in, int n, float c) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 0.5f * in[i] + 0.25f * in[(i + 1) % n] + 0.25f * in[(i + n - 1) % n] + c;
}

// One block, fixed summation order: bit-reproducible, unlike atomics.
__global__ void k_sum(float *out, const float *x, int n) {
    __shared__ float sh[256];
    float acc = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) acc += x[i];
    sh[threadIdx.x] = acc;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
        if (threadIdx.x < w) sh[threadIdx.x] += sh[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[0] = sh[0];
}

// Host feedback: the next iteration's scalar depends on a value read back, so
// a read that returns before the work is done changes everything after it.
static inline float feedback(float v) { return 0.6f + 0.3f * (fabsf(v) / (1.0f + fabsf(v))); }

// The affine kernel over the whole scenario buffer, on stream s.
static void launch_affine(cudaStream_t s, float *y, const float *x, float a, float b) {
    k_affine<<<SC_G, SC_T, 0, s>>>(y, x, SC_N, a, b);
    CK_LAUNCH();
}

// Digest of the scenario's buffers and host values, printed as its result.
static void finish(const char *name, std::initializer_list<const float *> bufs, const std::vector<float> &host = {}) {
    CK(cudaDeviceSynchronize());
    Digest d;
    std::vector<double> vals;
    for (const float *b : bufs) {
        d.add_device(b, SC_N * sizeof(float));
        vals.push_back(read_device_float(b, 0));
    }
    d.add_vec(host);
    if (!host.empty()) vals.push_back(host.back());
    print_result(name, d, vals);
}

struct Scenario {
    const char *name;
    const char *what;
    std::function<void(long iters)> run;
};

static inline int scenario_main(int argc, char **argv, const std::vector<Scenario> &all) {
    Args a(argc, argv);
    if (a.flag("--list")) {
        for (const Scenario &s : all) printf("%s\n", s.name);
        return 0;
    }
    long iters = a.num("--iters", 40);
    const char *name = a.positional(nullptr);
    a.finish();
    if (name && iters >= 1)
        for (const Scenario &s : all)
            if (strcmp(s.name, name) == 0) {
                s.run(iters);
                CK(cudaDeviceSynchronize());
                return 0;
            }
    fprintf(stderr, "usage: %s NAME [--iters N] | --list\n", argv[0]);
    for (const Scenario &s : all) fprintf(stderr, "  %-18s %s\n", s.name, s.what);
    return 64;
}
