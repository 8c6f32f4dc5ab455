// kernels/class_kernels.cuh: the kernels of the fail-closed class programs (class_*.cu),
// with C names: the runtime programs launch them directly, and class_modules.cu builds
// the same code into the fatbin and PTX that the driver-only programs load by name.
#pragma once

// y = y * m + b
extern "C" __global__ void k_axpb(float *y, float m, float b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = y[i] * m + b;
}

// d = d * 0.5 + s * m
extern "C" __global__ void k_acc(float *d, const float *s, float m, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) d[i] = d[i] * 0.5f + s[i] * m;
}

// d = x * 0.75 + y * 1.25 + i * 1e-3
extern "C" __global__ void k_mix(float *d, const float *x, const float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) d[i] = x[i] * 0.75f + y[i] * 1.25f + (float)i * 1e-3f;
}

// A bounded expanding map onto [0, 1): values stay finite and keep their
// history, so any reordering around it shows in the output.
extern "C" __global__ void k_sq(float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = y[i] * y[i] * 0.25f + y[i] * 1.7f + 0.3f;
        v -= truncf(v);
        y[i] = v < 0.0f ? v + 1.0f : v;
    }
}

// out[0] = out[0] * 0.9 + sum(x[i] * (i + 1)) / n. One block of 256 threads and
// a fixed tree: the same bits every run, unlike atomics.
extern "C" __global__ void k_reduce(float *out, const float *x, int n) {
    __shared__ float sh[256];
    float acc = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) acc += x[i] * (float)(i + 1);
    sh[threadIdx.x] = acc;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
        if (threadIdx.x < w) sh[threadIdx.x] += sh[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[0] = out[0] * 0.9f + sh[0] / (float)n;
}
