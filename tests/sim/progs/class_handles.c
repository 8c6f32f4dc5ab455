/* Class scenario: handles the driver hands out again. The same loop runs on
 * a stream and event pair, on new ones that take the destroyed ones'
 * addresses with other flags, after cudaDeviceReset (everything allocated
 * again), in a second context from cuCtxCreate, then on the primary
 * context's objects again once that is destroyed; a module's function handle
 * goes to another module's kernel with another parameter layout. Whether an
 * address was reused goes to stderr: it is the simulator's business. */
#include <cuda.h>

#include "common.h"

#define CKD(x) do { \
    CUresult r_ = (x); \
    if (r_ != CUDA_SUCCESS) \
        FAIL("%s:%d: %s failed: %d", __FILE__, __LINE__, #x, (int)r_); \
} while (0)

enum { N = 96, ITERS = 20 };

struct set {
    cudaStream_t s, t;
    cudaEvent_t e;
    float *y, *z;
};

static void make(struct set *k, unsigned sflags, unsigned tflags, float base)
{
    CK(cudaStreamCreateWithFlags(&k->s, sflags));
    CK(cudaStreamCreateWithFlags(&k->t, tflags));
    CK(cudaEventCreateWithFlags(&k->e, cudaEventDisableTiming));
    k->y = dev_alloc_init(N, base);
    k->z = dev_alloc_init(N, 1.0f - base);
}

static void loop(const char *tag, struct set *k)
{
    for (int it = 0; it < ITERS; it++) {
        axpb(k->s, k->y, 0.9f, 0.05f * (float)(it % 3), N);
        sq(k->s, k->y, N);
        CK(cudaEventRecord(k->e, k->s));
        CK(cudaStreamWaitEvent(k->t, k->e, 0));
        acc(k->t, k->z, k->y, 0.5f, N);
        CK(cudaEventRecord(k->e, k->t));
        CK(cudaStreamWaitEvent(k->s, k->e, 0));
        if (it % 7 == 6)
            CK(cudaStreamSynchronize(k->s));
    }
    CK(cudaStreamSynchronize(k->s));
    char name[32];
    snprintf(name, sizeof(name), "%s-y", tag);
    print_dev(name, k->y, N);
    snprintf(name, sizeof(name), "%s-z", tag);
    print_dev(name, k->z, N);
}

static void drop(struct set *k)
{
    CK(cudaStreamDestroy(k->s));
    CK(cudaStreamDestroy(k->t));
    CK(cudaEventDestroy(k->e));
    CK(cudaFree(k->y));
    CK(cudaFree(k->z));
}

static void reused(const char *what, const void *a, const void *b)
{
    fprintf(stderr, "handles: %s %s\n", what, a == b ? "reused" : "new");
}

int main(void)
{
    register_kernels();
    struct set k, k2, kc, kd;
    make(&k, cudaStreamDefault, cudaStreamNonBlocking, 0.25f);
    loop("first", &k);
    cudaStream_t old_s = k.s, old_t = k.t;
    cudaEvent_t old_e = k.e;
    drop(&k);
    /* the last destroyed comes back first, with the other's flags */
    CK(cudaStreamCreateWithFlags(&k2.s, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&k2.t, cudaStreamDefault));
    CK(cudaEventCreateWithFlags(&k2.e, cudaEventDisableTiming));
    reused("stream", k2.s, old_t);
    reused("stream", k2.t, old_s);
    reused("event", k2.e, old_e);
    k2.y = dev_alloc_init(N, 0.25f);
    k2.z = dev_alloc_init(N, 0.75f);
    loop("recreated", &k2);

    /* a reset ends everything; the same objects come back at the same addresses */
    cudaStream_t before = k2.s;
    CK(cudaDeviceReset());
    make(&kc, cudaStreamNonBlocking, cudaStreamDefault, 0.25f);
    reused("stream after reset", kc.s, before);
    loop("reset", &kc);

    /* a second context, used and destroyed; then the primary one's objects */
    CUcontext prim, c2, cur;
    CKD(cuCtxGetCurrent(&prim));
    CKD(cuCtxCreate(&c2, NULL, 0, 0));
    make(&kd, cudaStreamDefault, cudaStreamNonBlocking, 0.25f);
    loop("context", &kd);
    CKD(cuCtxDestroy(c2));
    CKD(cuCtxGetCurrent(&cur));
    if (cur != prim)
        FAIL("the primary context is not current again");
    loop("primary-again", &kc);

    /* a function handle that comes back as another kernel */
    CUmodule m1, m2;
    CUfunction f1, f2;
    CKD(cuModuleLoadData(&m1, "sim:k_axpb"));
    CKD(cuModuleGetFunction(&f1, m1, "k_axpb"));
    int n = N;
    for (int it = 0; it < ITERS; it++) {
        float m = 0.95f, b = 0.01f * (float)it;
        void *args[] = { &kc.y, &m, &b, &n };
        CKD(cuLaunchKernel(f1, grid_for(N), 1, 1, BLOCK, 1, 1, 0, kc.s, args, NULL));
    }
    CK(cudaStreamSynchronize(kc.s));
    CKD(cuModuleUnload(m1));
    CKD(cuModuleLoadData(&m2, "sim:k_sq"));
    CKD(cuModuleGetFunction(&f2, m2, "k_sq"));
    reused("function", f2, f1);
    size_t off = 0, size = 0;
    CKD(cuFuncGetParamInfo(f2, 1, &off, &size));
    printf("function params: [1] at %zu size %zu\n", off, size);
    for (int it = 0; it < ITERS; it++) {
        void *args[] = { &kc.y, &n };
        CKD(cuLaunchKernel(f2, grid_for(N), 1, 1, BLOCK, 1, 1, 0, kc.s, args, NULL));
    }
    CK(cudaStreamSynchronize(kc.s));
    print_dev("module-y", kc.y, N);
    CKD(cuModuleUnload(m2));
    drop(&kc);
    return 0;
}
