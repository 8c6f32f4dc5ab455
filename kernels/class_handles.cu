// kernels/class_handles.cu: handles the driver hands out again. The same loop runs on a stream
// and event pair; on new ones made right after the old ones were destroyed, with other flags
// and a priority; after cudaDeviceReset (with work still queued before it); in a second context
// from cuCtxCreate, then alternating with the primary context iteration by iteration; and on
// the primary context's objects again once the second context is gone. Last, a module's
// function handle is unloaded and a later module's kernel, with another parameter layout,
// may come back under the same handle. Whether a handle was reused goes to stderr only.
#include <cuda.h>

#include "class_common.cuh"
#include "class_modules_fatbin.h"  // class_modules_fatbin[], from nvcc -fatbin and bin2c
#include "class_modules_ptx.h"     // class_modules_ptx[], NUL-terminated

#define CKD(call)                                                                           \
    do {                                                                                    \
        CUresult ckd_r_ = (call);                                                           \
        if (ckd_r_ != CUDA_SUCCESS) {                                                       \
            const char *ckd_n_ = nullptr;                                                   \
            cuGetErrorName(ckd_r_, &ckd_n_);                                                \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, ckd_n_ ? ckd_n_ : "?"); \
            exit(2);                                                                        \
        }                                                                                   \
    } while (0)

static const int N = 4096;

struct Set {
    cudaStream_t s, t;
    cudaEvent_t e;
    float *y, *z;
};

static void make(Set &k, unsigned sflags, unsigned tflags, float base) {
    CK(cudaStreamCreateWithFlags(&k.s, sflags));
    CK(cudaStreamCreateWithFlags(&k.t, tflags));
    CK(cudaEventCreateWithFlags(&k.e, cudaEventDisableTiming));
    k.y = dev_init(N, base);
    k.z = dev_init(N, 1.0f - base);
}

// One iteration: s updates y, t folds y into z, each waiting for the other by event.
static void step(Set &k, long it) {
    axpb(k.s, k.y, 0.9f, 0.05f * (float)(it % 3), N);
    sq(k.s, k.y, N);
    CK(cudaEventRecord(k.e, k.s));
    CK(cudaStreamWaitEvent(k.t, k.e, 0));
    acc(k.t, k.z, k.y, 0.5f, N);
    CK(cudaEventRecord(k.e, k.t));
    CK(cudaStreamWaitEvent(k.s, k.e, 0));
    if (it % 7 == 6) CK(cudaStreamSynchronize(k.s));
}

static void print_set(const char *tag, Set &k) {
    CK(cudaStreamSynchronize(k.s));
    char name[48];
    snprintf(name, sizeof name, "%s-y", tag);
    print_dev(name, k.y, N);
    snprintf(name, sizeof name, "%s-z", tag);
    print_dev(name, k.z, N);
}

static void loop(const char *tag, Set &k, long iters) {
    for (long it = 0; it < iters; it++) step(k, it);
    print_set(tag, k);
}

static void drop(Set &k) {
    CK(cudaStreamDestroy(k.s));
    CK(cudaStreamDestroy(k.t));
    CK(cudaEventDestroy(k.e));
    CK(cudaFree(k.y));
    CK(cudaFree(k.z));
}

static void reused(const char *what, const void *a, const void *b) {
    fprintf(stderr, "handles: %s %s\n", what, a == b ? "reused" : "new");
}

int main(int argc, char **argv) {
    long iters = class_start(argc, argv, 30, 7);
    Set k, k2, kc, kd;
    make(k, cudaStreamDefault, cudaStreamNonBlocking, 0.25f);
    loop("first", k, iters);
    cudaStream_t old_s = k.s, old_t = k.t;
    cudaEvent_t old_e = k.e;
    drop(k);

    // The last destroyed tends to come back first: here with the other's flags,
    // a priority, and an event that blocks its waiter.
    int least = 0, greatest = 0;
    CK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    CK(cudaStreamCreateWithFlags(&k2.s, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithPriority(&k2.t, cudaStreamDefault, greatest));
    CK(cudaEventCreateWithFlags(&k2.e, cudaEventBlockingSync | cudaEventDisableTiming));
    reused("stream", k2.s, old_t);
    reused("stream", k2.t, old_s);
    reused("event", k2.e, old_e);
    k2.y = dev_init(N, 0.25f);
    k2.z = dev_init(N, 0.75f);
    loop("recreated", k2, iters);

    // A reset ends everything, queued work included; the objects made after it
    // may come back at the same addresses.
    for (long it = 0; it < 6; it++) step(k2, it);
    cudaStream_t before = k2.s;
    CK(cudaDeviceReset());
    make(kc, cudaStreamNonBlocking, cudaStreamDefault, 0.25f);
    reused("stream after reset", kc.s, before);
    loop("reset", kc, iters);

    // A second context: used alone, then alternating with the primary one.
    CUcontext prim, c2, cur;
    CUdevice dev;
    CKD(cuCtxGetCurrent(&prim));
    CKD(cuCtxGetDevice(&dev));
    CKD(cuCtxCreate(&c2, nullptr, 0, dev));  // CUDA 13: cuCtxCreate_v4, with a (null) params argument
    make(kd, cudaStreamDefault, cudaStreamNonBlocking, 0.25f);
    loop("context", kd, iters);
    for (long it = 0; it < iters; it++) {
        CUcontext popped;
        CKD(cuCtxPopCurrent(&popped));
        if (popped != c2) FAIL("popped a context that is not the second one");
        step(kc, it);
        CKD(cuCtxPushCurrent(c2));
        step(kd, it);
    }
    print_set("alternate-context", kd);
    {
        CUcontext popped;
        CKD(cuCtxPopCurrent(&popped));
    }
    print_set("alternate-primary", kc);
    CKD(cuCtxDestroy(c2));
    CKD(cuCtxGetCurrent(&cur));
    if (cur != prim) FAIL("the primary context is not current again");
    loop("primary-again", kc, iters);

    // A function handle that may come back as another kernel: k_axpb from the
    // fatbin, unloaded, then k_sq from PTX the driver compiles.
    CUmodule m1, m2;
    CUfunction f1, f2;
    CKD(cuModuleLoadData(&m1, class_modules_fatbin));
    CKD(cuModuleGetFunction(&f1, m1, "k_axpb"));
    int n = N;
    const unsigned grid = cl_grid(N);
    for (long it = 0; it < iters; it++) {
        float m = 0.95f, b = 0.01f * (float)it;
        void *args[] = {&kc.y, &m, &b, &n};
        CKD(cuLaunchKernel(f1, grid, 1, 1, CL_T, 1, 1, 0, kc.s, args, nullptr));
    }
    CK(cudaStreamSynchronize(kc.s));
    CKD(cuModuleUnload(m1));
    CKD(cuModuleLoadData(&m2, class_modules_ptx));
    CKD(cuModuleGetFunction(&f2, m2, "k_sq"));
    reused("function", f2, f1);
    size_t off = 0, size = 0;
    CKD(cuFuncGetParamInfo(f2, 1, &off, &size));
    printf("function params: [1] at %zu size %zu\n", off, size);
    for (long it = 0; it < iters; it++) {
        void *args[] = {&kc.y, &n};
        CKD(cuLaunchKernel(f2, grid, 1, 1, CL_T, 1, 1, 0, kc.s, args, nullptr));
        if (it % 10 == 9) acc(kc.s, kc.z, kc.y, 0.25f, N);
    }
    CK(cudaStreamSynchronize(kc.s));
    print_dev("module-y", kc.y, N);
    print_dev("module-z", kc.z, N);
    CKD(cuModuleUnload(m2));
    drop(kc);
    return 0;
}
