// kernels/class_errors.cu: launches that fail, inside a repeating loop. A kernel's dynamic
// shared memory limit is raised, lowered and refused (cudaFuncSetAttribute) in the middle of
// the loop, so launches over the current limit (cudaLaunchKernel and <<<>>>) and kernel nodes
// fail at that very call; launches with bad configurations and the cudaPeekAtLastError /
// cudaGetLastError sequences around them. Every code goes to stdout, which must not change.
#include "class_common.cuh"

static const int N = 64, KIB = 1024;

// y = y * 0.5 + (dynamic shared memory in KiB) / 1000, through shared memory where
// there is room: the launch's shared memory size shows in the result.
__global__ void k_shm(float *y, int n) {
    extern __shared__ float sh[];
    unsigned dyn;
    asm volatile("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dyn));
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    bool room = (threadIdx.x + 1) * sizeof(float) <= dyn;
    float v = i < n ? y[i] : 0.0f;
    if (room) sh[threadIdx.x] = v;
    __syncthreads();
    if (room) v = sh[threadIdx.x];
    if (i < n) y[i] = v * 0.5f + (float)(dyn / KIB) * 0.001f;
}

// "[peek,get,get]" after a failed call: the error is seen, taken, and gone.
static void print_last() {
    cudaError_t peek = cudaPeekAtLastError(), get = cudaGetLastError(), again = cudaGetLastError();
    printf("[%d,%d,%d]", (int)peek, (int)get, (int)again);
}

static void print_launch(cudaError_t e) {
    printf(" %d", (int)e);
    if (e != cudaSuccess) print_last();
}

int main(int argc, char **argv) {
    long iters = class_start(argc, argv, 36, 30);
    int dev = 0, optin = 0;
    CK(cudaGetDevice(&dev));
    CK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    if (optin <= 100 * KIB) FAIL("the device allows only %d bytes of shared memory per block", optin);
    const void *f = (const void *)k_shm;
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *y = dev_init(N, 1.0f), *w = dev_init(CL_N, 0.25f), *x = dev_init(CL_N, 0.5f);
    int n = N;
    void *args[] = {&y, &n};
    static const size_t shm[] = {0, 32 * KIB, 44 * KIB, 64 * KIB, 96 * KIB, 100 * KIB};
    const int nshm = (int)(sizeof shm / sizeof shm[0]);
    cudaFuncAttributes fa;
    CK(cudaFuncGetAttributes(&fa, f));
    printf("start limit=%d\n", fa.maxDynamicSharedSizeBytes);
    for (long it = 0; it < iters; it++) {
        // The loop's steady work, around everything that fails.
        acc(s, w, x, 0.75f, CL_N);
        sq(s, w, CL_N);
        int set = it == 8 ? 96 * KIB : it == 16 ? 40 * KIB : it == 24 ? optin + 1 : it == 27 ? optin : -1;
        if (set >= 0) {
            cudaError_t e = cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, set);
            cudaError_t peek = cudaPeekAtLastError(), get = cudaGetLastError(), again = cudaGetLastError();
            CK(cudaFuncGetAttributes(&fa, f));
            printf("it=%ld set %s -> %d (%s) peek=%d get=%d get=%d limit=%s\n", it,
                   set == optin + 1 ? "optin+1" : set == optin ? "optin" : std::to_string(set).c_str(), (int)e,
                   cudaGetErrorName(e), (int)peek, (int)get, (int)again,
                   fa.maxDynamicSharedSizeBytes == optin ? "optin" : std::to_string(fa.maxDynamicSharedSizeBytes).c_str());
        }
        printf("it=%ld launch", it);
        for (int k = 0; k < nshm; k++) print_launch(cudaLaunchKernel(f, dim3(1), dim3(N), args, shm[k], s));
        printf(" chevron");
        for (int k = 0; k < nshm; k++) {
            k_shm<<<1, N, shm[k], s>>>(y, n);
            print_launch(cudaGetLastError());
        }
        // Bad configurations: an empty grid, too many threads per block, grid.y too large.
        printf(" config");
        k_shm<<<0, N, 0, s>>>(y, n);
        print_launch(cudaGetLastError());
        k_shm<<<1, 2048, 0, s>>>(y, n);
        print_launch(cudaGetLastError());
        k_shm<<<dim3(1, 65536), 1, 0, s>>>(y, n);
        print_launch(cudaGetLastError());
        // A failed launch, then good ones: the error waits to be read.
        k_shm<<<1, 2048, 0, s>>>(y, n);
        k_axpb<<<cl_grid(CL_N), CL_T, 0, s>>>(w, 0.5f, 0.25f, CL_N);
        k_acc<<<cl_grid(CL_N), CL_T, 0, s>>>(x, w, 0.5f, CL_N);
        printf(" stale");
        print_last();
        // The same limit holds for kernel nodes.
        cudaGraph_t g;
        cudaGraphNode_t kn;
        CK(cudaGraphCreate(&g, 0));
        cudaKernelNodeParams kp = {};
        kp.func = (void *)f;
        kp.gridDim = dim3(1);
        kp.blockDim = dim3(N);
        kp.sharedMemBytes = 64 * KIB;
        kp.kernelParams = args;
        cudaError_t e = cudaGraphAddKernelNode(&kn, g, nullptr, 0, &kp);
        printf(" node %d", (int)e);
        print_last();
        if (e == cudaSuccess) {
            cudaGraphExec_t ge;
            cudaError_t ei = cudaGraphInstantiate(&ge, g, 0);
            printf(" inst %d", (int)ei);
            print_last();
            if (ei == cudaSuccess) {
                cudaError_t el = cudaGraphLaunch(ge, s);
                printf(" glaunch %d", (int)el);
                print_last();
                CK(cudaGraphExecDestroy(ge));
            }
        }
        CK(cudaGraphDestroy(g));
        printf(" last=%d\n", (int)cudaGetLastError());
        if (it % 5 == 4) CK(cudaStreamSynchronize(s));
    }
    CK(cudaStreamSynchronize(s));
    fflush(stdout);
    print_dev("y", y, N);
    print_dev("w", w, CL_N);
    print_dev("x", x, CL_N);
    for (float *p : {y, w, x}) CK(cudaFree(p));
    CK(cudaStreamDestroy(s));
    return 0;
}
