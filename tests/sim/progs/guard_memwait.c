/* Guard scenario: a stream waits, on the device, for a value another stream
 * writes later (cuStreamWaitValue32, or a wait in cuStreamBatchMemOp), with
 * work on both streams between the wait and the write and nothing else
 * ordering them. Eagerly the writer's work runs while the waiter waits. A
 * graph over both streams is launched on one of them after the other's
 * earlier work (the waiting one's: its wait), and the other's later work
 * (the write) goes after all of it: the write never comes, and the run
 * times out.
 *
 * Phase 1 runs the same two-stream stretch first with no memory wait (s_b
 * reads another buffer, cut by queries of an idle stream), so that graphs
 * over both streams are built and replayed; phase 2's stretch has their
 * shape. Each iteration's tail on s_a alone replays in both phases. */
#include <cuda.h>

#include "common.h"

enum { N = 96, ITERS = 16 };

static void chain_a(cudaStream_t s, float *u, const float *w, int it)
{
    axpb(s, u, 0.75f, (float)it * 0.125f, N);
    acc(s, u, w, 0.25f, N);
    sq(s, u, N);
}

static void wait_flag(cudaStream_t s, unsigned *flag, unsigned v, int batch)
{
    CUresult r;
    if (batch) {
        CUstreamBatchMemOpParams p;
        memset(&p, 0, sizeof p);
        p.waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
        p.waitValue.address = (CUdeviceptr)(uintptr_t)flag;
        p.waitValue.value = v;
        p.waitValue.flags = CU_STREAM_WAIT_VALUE_GEQ;
        r = cuStreamBatchMemOp((CUstream)s, 1, &p, 0);
    } else {
        r = cuStreamWaitValue32((CUstream)s, (CUdeviceptr)(uintptr_t)flag, v, CU_STREAM_WAIT_VALUE_GEQ);
    }
    if (r != CUDA_SUCCESS)
        FAIL("wait for %u failed: %d", v, (int)r);
}

int main(void)
{
    register_kernels();
    cudaStream_t s_a, s_b, idle;
    CK(cudaStreamCreateWithFlags(&s_a, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s_b, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&idle, cudaStreamNonBlocking));
    unsigned *flag;
    CK(cudaMalloc((void **)&flag, sizeof *flag));
    CK(cudaMemset(flag, 0, sizeof *flag));
    float *v = dev_alloc_init(N, 0.25f), *w = dev_alloc_init(N, 0.5f), *w2 = dev_alloc_init(N, 1.0f);
    float *u = dev_alloc_init(N, 0.125f);
    for (int it = 0; it < ITERS; it++) {
        CK(cudaStreamQuery(idle));
        acc(s_b, v, w2, 0.5f, N);
        sq(s_b, v, N);
        axpb(s_a, w, 0.5f, (float)it * 0.0625f, N);
        sq(s_a, w, N);
        CK(cudaStreamQuery(idle));
        chain_a(s_a, u, w, it);
        if (it % 4 == 3)
            CK(cudaDeviceSynchronize());
    }
    CK(cudaDeviceSynchronize());
    print_dev("v1", v, N);
    print_dev("w1", w, N);
    /* s_b reads w only once s_a wrote it and raised the flag. */
    for (int it = 0; it < ITERS; it++) {
        unsigned f = (unsigned)it + 1;
        wait_flag(s_b, flag, f, it % 3 == 2);
        acc(s_b, v, w, 0.5f, N);
        sq(s_b, v, N);
        axpb(s_a, w, 0.5f, (float)it * 0.0625f, N);
        sq(s_a, w, N);
        CUresult r = cuStreamWriteValue32((CUstream)s_a, (CUdeviceptr)(uintptr_t)flag, f, 0);
        if (r != CUDA_SUCCESS)
            FAIL("write of %u failed: %d", f, (int)r);
        /* s_b reads w before the next write to it. */
        CK(cudaStreamSynchronize(s_b));
        chain_a(s_a, u, w, it);
        if (it % 4 == 3)
            CK(cudaDeviceSynchronize());
    }
    CK(cudaDeviceSynchronize());
    print_dev("v2", v, N);
    print_dev("w2", w, N);
    print_dev("u", u, N);
    CK(cudaFree(flag));
    return 0;
}
