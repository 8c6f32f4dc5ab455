// kernels/nodeupdate.cu: host cost of updating one kernel node of an instantiated
// graph, through the runtime and the driver, against an eager launch, for kernel
// parameters of 32, 648 and 3368 bytes (a scalar kernel, PyTorch's elementwise
// kernels and its multi-tensor-apply kernels). Each launch of a 64-node graph
// updates k nodes first; the cost of an update is the slope over k.
#include <cuda.h>

#include "common.cuh"

template <int S> struct Blob { unsigned char b[S]; };

template <int S> __global__ void k_blob(Blob<S> p, int *out) {
    if (threadIdx.x == 0) out[blockIdx.x] += p.b[0] + p.b[S - 1];
}

typedef CUresult (*SetParams)(CUgraphExec, CUgraphNode, const CUDA_KERNEL_NODE_PARAMS *);

template <int S> static void measure(SetParams drv_set, int repeats) {
    const int nodes = 64, launches = 100;
    int *out;
    CK(cudaMalloc(&out, 4096));
    CK(cudaMemset(out, 0, 4096));
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    Blob<S> p;
    memset(&p, 1, sizeof p);
    void *args[2] = {&p, &out};
    std::vector<double> eager;
    for (int r = 0; r < repeats; r++) {
        CK(cudaStreamSynchronize(s));
        double t0 = now_us();
        for (int i = 0; i < launches; i++) {
            k_blob<S><<<1, 32, 0, s>>>(p, out);
            CK_LAUNCH();
        }
        eager.push_back((now_us() - t0) * 1e3 / launches);
    }
    fprintf(stderr, "TIME size=%d api=eager_launch ns=%.1f\n", S, median(eager));
    cudaGraph_t g;
    CK(cudaGraphCreate(&g, 0));
    std::vector<cudaGraphNode_t> node(nodes);
    cudaKernelNodeParams kp = {};
    kp.func = (void *)k_blob<S>;
    kp.gridDim = dim3(1);
    kp.blockDim = dim3(32);
    kp.kernelParams = args;
    for (int i = 0; i < nodes; i++)
        CK(cudaGraphAddKernelNode(&node[i], g, i ? &node[i - 1] : nullptr, i ? 1 : 0, &kp));
    cudaGraphExec_t exec;
    CK(cudaGraphInstantiate(&exec, g, 0));
    CUfunction f;
    CK(cudaGetFuncBySymbol(&f, (const void *)k_blob<S>));
    CUDA_KERNEL_NODE_PARAMS dp = {};
    dp.func = f;
    dp.gridDimX = dp.gridDimY = dp.gridDimZ = 1;
    dp.blockDimX = 32;
    dp.blockDimY = dp.blockDimZ = 1;
    dp.kernelParams = args;
    for (int api = 0; api < 2; api++) {
        double per_k[2];
        const int ks[2] = {0, nodes};
        for (int ki = 0; ki < 2; ki++) {
            std::vector<double> t;
            for (int r = 0; r < repeats; r++) {
                CK(cudaStreamSynchronize(s));
                double t0 = now_us();
                for (int it = 0; it < launches; it++) {
                    p.b[1] = (unsigned char)it;
                    for (int j = 0; j < ks[ki]; j++) {
                        if (api == 0)
                            CK(cudaGraphExecKernelNodeSetParams(exec, node[j], &kp));
                        else if (drv_set((CUgraphExec)exec, (CUgraphNode)node[j], &dp) != CUDA_SUCCESS)
                            CK(cudaErrorUnknown);
                    }
                    CK(cudaGraphLaunch(exec, s));
                }
                t.push_back((now_us() - t0) * 1e3 / launches);
            }
            per_k[ki] = median(t);
        }
        fprintf(stderr, "TIME size=%d api=%s ns=%.1f graph_launch_ns=%.1f\n", S, api ? "driver_update" : "runtime_update",
               (per_k[1] - per_k[0]) / nodes, per_k[0]);
    }
    CK(cudaStreamSynchronize(s));
    CK(cudaGraphExecDestroy(exec));
    CK(cudaGraphDestroy(g));
    CK(cudaStreamDestroy(s));
    CK(cudaFree(out));
}

int main(int argc, char **argv) {
    Args a(argc, argv);
    int repeats = (int)a.num("--repeats", 7);
    a.finish();
    if (repeats < 1) {
        fprintf(stderr, "usage: nodeupdate [--repeats R]\n");
        return 64;
    }
    void *fn = nullptr;
    cudaDriverEntryPointQueryResult q;
    CK(cudaGetDriverEntryPointByVersion("cuGraphExecKernelNodeSetParams", &fn, 12000, cudaEnableDefault, &q));
    if (!fn || q != cudaDriverEntryPointSuccess) {
        fprintf(stderr, "nodeupdate: cuGraphExecKernelNodeSetParams not found\n");
        return 1;
    }
    measure<32>((SetParams)fn, repeats);
    measure<648>((SetParams)fn, repeats);
    measure<3368>((SetParams)fn, repeats);
    return 0;
}
