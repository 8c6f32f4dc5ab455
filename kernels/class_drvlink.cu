// kernels/class_drvlink.cu: a program linked against libcuda alone (built as host C++ with
// -cudart none, so no runtime call exists to intercept): the class kernels come from an
// embedded fatbin (cuModuleLoadData) and from PTX the driver compiles (cuLibraryLoadData),
// and a repeating loop launches them with cuLaunchKernel (argument array, CUkernel handle,
// packed parameter buffer) and cuLaunchKernelEx next to cuMemsetD32Async, device copies,
// copies into pinned memory, events across two streams and syncs, all called by symbol.
#include <cuda.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "class_modules_fatbin.h"  // class_modules_fatbin[], from nvcc -fatbin and bin2c
#include "class_modules_ptx.h"     // class_modules_ptx[], NUL-terminated

#define CKD(call)                                                                         \
    do {                                                                                  \
        CUresult ckd_r_ = (call);                                                         \
        if (ckd_r_ != CUDA_SUCCESS) {                                                     \
            const char *ckd_n_ = nullptr, *ckd_s_ = nullptr;                              \
            cuGetErrorName(ckd_r_, &ckd_n_);                                              \
            cuGetErrorString(ckd_r_, &ckd_s_);                                            \
            fprintf(stderr, "%s:%d: %s: %s (%s)\n", __FILE__, __LINE__, #call,            \
                    ckd_n_ ? ckd_n_ : "?", ckd_s_ ? ckd_s_ : "unknown error");            \
            exit(2);                                                                      \
        }                                                                                 \
    } while (0)

static const int N = 4096, T = 128;
static const unsigned G = (N + T - 1) / T;

static unsigned fbits(float f) {
    unsigned u;
    memcpy(&u, &f, sizeof u);
    return u;
}

// The digest and line format of common.cuh's Digest and print_result, which
// this program cannot include: they call the runtime.
static uint64_t fnv1a(const void *p, size_t n) {
    const unsigned char *b = (const unsigned char *)p;
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

static void print_floats(const char *name, const float *h, size_t n) {
    printf("%s hash=%016" PRIx64, name, fnv1a(h, n * sizeof(float)));
    if (n) printf(" v0=%a v1=%a v2=%a", (double)h[0], (double)h[n / 2], (double)h[n - 1]);
    printf("\n");
    fflush(stdout);
}

static void print_dev(const char *name, CUdeviceptr d, size_t n) {
    std::vector<float> h(n);
    CKD(cuMemcpyDtoH(h.data(), d, n * sizeof(float)));
    print_floats(name, h.data(), n);
}

static void launch(CUfunction f, CUstream s, void **args) {
    CKD(cuLaunchKernel(f, G, 1, 1, T, 1, 1, 0, s, args, nullptr));
}

int main(int argc, char **argv) {
    long iters = 40;
    if (argc == 3 && strcmp(argv[1], "--iters") == 0) {
        char *end = nullptr;
        iters = strtol(argv[2], &end, 0);
        if (end == argv[2] || *end != '\0') iters = -1;
    } else if (argc != 1) {
        iters = -1;
    }
    if (iters < 6) {
        fprintf(stderr, "usage: %s [--iters N], N >= 6\n", argv[0]);
        return 64;
    }
    // A hang ends as a failure that says so (class_common.cuh's watchdog, which this
    // program cannot include).
    const char *prog = argv[0];
    std::thread([prog] {
        std::this_thread::sleep_for(std::chrono::seconds(60));
        fprintf(stderr, "TIMEOUT: %s still running after 60 s\n", prog);
        _exit(1);
    }).detach();

    CKD(cuInit(0));
    CUdevice dev;
    CUcontext ctx;
    CKD(cuDeviceGet(&dev, 0));
    CKD(cuDevicePrimaryCtxRetain(&ctx, dev));
    CKD(cuCtxSetCurrent(ctx));

    CUmodule mod;
    CUfunction f_axpb, f_sq, f_mix, f_reduce;
    CKD(cuModuleLoadData(&mod, class_modules_fatbin));
    CKD(cuModuleGetFunction(&f_axpb, mod, "k_axpb"));
    CKD(cuModuleGetFunction(&f_sq, mod, "k_sq"));
    CKD(cuModuleGetFunction(&f_mix, mod, "k_mix"));
    CKD(cuModuleGetFunction(&f_reduce, mod, "k_reduce"));
    // A context-free CUkernel from PTX, launched through cuLaunchKernel as a CUfunction.
    CUlibrary lib;
    CUkernel k_acc;
    CKD(cuLibraryLoadData(&lib, class_modules_ptx, nullptr, nullptr, 0, nullptr, nullptr, 0));
    CKD(cuLibraryGetKernel(&k_acc, lib, "k_acc"));

    // k_axpb's parameter layout, for the launch that packs its arguments into one buffer.
    size_t off[4], size[4];
    for (int i = 0; i < 4; i++) CKD(cuFuncGetParamInfo(f_axpb, (size_t)i, &off[i], &size[i]));
    size_t packed_size = off[3] + size[3];
    if (packed_size > 64 || size[0] != sizeof(CUdeviceptr) || size[1] != 4 || size[2] != 4 || size[3] != 4) {
        fprintf(stderr, "k_axpb: unexpected parameter layout\n");
        return 1;
    }

    CUstream s, t;
    CKD(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CKD(cuStreamCreate(&t, CU_STREAM_NON_BLOCKING));
    CUevent ev_mix, ev_copy, ev_read;
    CKD(cuEventCreate(&ev_mix, CU_EVENT_DISABLE_TIMING));
    CKD(cuEventCreate(&ev_copy, CU_EVENT_DISABLE_TIMING));
    CKD(cuEventCreate(&ev_read, CU_EVENT_DISABLE_TIMING));

    CUdeviceptr y, z, w, shadow, r;
    for (CUdeviceptr *p : {&y, &z, &w, &shadow}) {
        CKD(cuMemAlloc(p, N * sizeof(float)));
        CKD(cuMemsetD32(*p, 0, N));
    }
    CKD(cuMemAlloc(&r, sizeof(float)));
    CKD(cuMemsetD32(r, 0, 1));
    float *pin;
    CKD(cuMemAllocHost((void **)&pin, (N + 1) * sizeof(float)));
    {
        std::vector<float> host(N);
        for (int i = 0; i < N; i++) host[i] = 0.125f + (float)i / (float)N;
        CKD(cuMemcpyHtoD(y, host.data(), N * sizeof(float)));
    }
    // The memsets and a copy from pageable memory may return before they are done, and
    // the non-blocking streams below are not ordered after them: wait for them.
    CKD(cuCtxSynchronize());

    int n = N;
    std::vector<float> log;
    for (long it = 0; it < iters; it++) {
        float m = 0.9f, b = 0.05f * (float)(it % 3), half = 0.25f;
        void *a1[] = {&y, &m, &b, &n};
        launch(f_axpb, s, a1);
        void *a2[] = {&y, &n};
        launch(f_sq, s, a2);
        CKD(cuMemsetD32Async(z, fbits(0.25f * (float)(it % 3)), N, s));
        // w is read by the copy on t from the last iteration: wait for it.
        if (it > 0) CKD(cuStreamWaitEvent(s, ev_copy, 0));
        void *a3[] = {&w, &y, &z, &n};
        launch(f_mix, s, a3);
        void *a4[] = {&w, &n};
        launch(f_sq, s, a4);
        CKD(cuEventRecord(ev_mix, s));
        // A copy of w on the second stream, joined back next iteration.
        CKD(cuStreamWaitEvent(t, ev_mix, 0));
        CKD(cuMemcpyDtoDAsync(shadow, w, N * sizeof(float), t));
        CKD(cuEventRecord(ev_copy, t));
        CKD(cuMemcpyDtoDAsync(z, w, N * sizeof(float), s));
        void *a5[] = {&y, &z, &half, &n};
        launch((CUfunction)k_acc, s, a5);
        // y = y * 1.0 + 0.01 * (it % 5), from a packed parameter buffer.
        {
            alignas(16) unsigned char buf[64] = {0};
            float pm = 1.0f, pb = 0.01f * (float)(it % 5);
            memcpy(buf + off[0], &y, size[0]);
            memcpy(buf + off[1], &pm, size[1]);
            memcpy(buf + off[2], &pb, size[2]);
            memcpy(buf + off[3], &n, size[3]);
            void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &packed_size,
                             CU_LAUNCH_PARAM_END};
            CKD(cuLaunchKernel(f_axpb, G, 1, 1, T, 1, 1, 0, s, nullptr, extra));
        }
        {
            CUlaunchConfig cfg = {};
            cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
            cfg.blockDimX = 256;  // k_reduce's fixed block
            cfg.blockDimY = cfg.blockDimZ = 1;
            cfg.hStream = s;
            void *a6[] = {&r, &w, &n};
            CKD(cuLaunchKernelEx(&cfg, f_reduce, a6, nullptr));
        }
        if (it % 3 == 2) {
            CKD(cuMemcpyDtoHAsync(pin, w, N * sizeof(float), s));
            CKD(cuMemcpyDtoHAsync(pin + N, r, sizeof(float), s));
            if (it % 6 == 5) {
                CKD(cuEventRecord(ev_read, s));
                CKD(cuEventSynchronize(ev_read));
            } else {
                CKD(cuStreamSynchronize(s));
            }
            log.push_back(pin[it % N] + pin[N - 1]);
            log.push_back(pin[N]);
        }
    }
    CKD(cuStreamSynchronize(s));
    CKD(cuStreamSynchronize(t));
    print_dev("y", y, N);
    print_dev("z", z, N);
    print_dev("w", w, N);
    print_dev("shadow", shadow, N);
    print_dev("r", r, 1);
    print_floats("log", log.data(), log.size());

    CKD(cuLibraryUnload(lib));
    CKD(cuModuleUnload(mod));
    CKD(cuMemFreeHost(pin));
    for (CUdeviceptr p : {y, z, w, shadow, r}) CKD(cuMemFree(p));
    for (CUevent e : {ev_mix, ev_copy, ev_read}) CKD(cuEventDestroy(e));
    CKD(cuStreamDestroy(s));
    CKD(cuStreamDestroy(t));
    CKD(cuDevicePrimaryCtxRelease(dev));
    return 0;
}
