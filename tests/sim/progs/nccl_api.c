/* Scenario: NCCL collectives (the one-rank stand-in) between the program's
 * kernels, on two streams ordered by events, a communicator each, with one
 * more collective every fourth iteration and a sync every other one; then
 * one communicator used from both streams. The buffers, and the order in
 * which each communicator's collectives ran on the device, must be eager's. */
#include "common.h"
#include "simnccl.h"

#define NC(call)                                                                \
    do {                                                                        \
        ncclResult_t r_ = (call);                                               \
        if (r_ != ncclSuccess)                                                  \
            FAIL("%s: NCCL error %d", #call, (int)r_);                          \
    } while (0)

int main(void)
{
    enum { N = 96, ITERS = 24 };
    register_kernels();
    ncclComm_t comm, comm2;
    ncclUniqueId id;
    NC(ncclGetUniqueId(&id));
    NC(ncclCommInitRank(&comm, 1, id, 0));
    NC(ncclCommInitRank(&comm2, 1, id, 0));
    cudaStream_t s1, s2;
    CK(cudaStreamCreate(&s1));
    CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    cudaEvent_t e1, e2;
    CK(cudaEventCreateWithFlags(&e1, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&e2, cudaEventDisableTiming));
    float *x = dev_alloc_init(N, 0.5f), *y = dev_alloc_init(N, 0.0f), *z = dev_alloc_init(N, 0.25f);
    float *w = dev_alloc_init(N, 0.0f);
    for (int it = 0; it < ITERS; it++) {
        axpb(s1, x, 0.9f, 0.1f, N);
        NC(ncclAllReduce(x, y, N, ncclFloat32, ncclSum, comm, s1));
        sq(s1, y, N);
        CK(cudaEventRecord(e1, s1));
        CK(cudaStreamWaitEvent(s2, e1, 0));
        NC(ncclBroadcast(y, z, N / 2, ncclFloat32, 0, comm2, s2));
        acc(s2, z, y, 0.5f, N);
        if (it % 4 == 3)
            NC(ncclAllGather(z, w, N / 4, ncclFloat32, comm2, s2));
        CK(cudaEventRecord(e2, s2));
        CK(cudaStreamWaitEvent(s1, e2, 0));
        mix(s1, x, x, z, N);
        if (it % 2)
            CK(cudaStreamSynchronize(s1));
    }
    /* One communicator from both streams, no event between: NCCL orders a
     * communicator's calls itself. */
    for (int it = 0; it < 12; it++) {
        NC(ncclAllReduce(x, y, N / 3, ncclFloat32, ncclSum, comm, s1));
        axpb(s1, y, 0.5f, 0.25f, N);
        NC(ncclAllReduce(z, w, N / 6, ncclFloat32, ncclSum, comm, s2));
        axpb(s2, w, 0.5f, 0.125f, N);
        if (it % 3 == 2)
            CK(cudaDeviceSynchronize());
    }
    CK(cudaDeviceSynchronize());
    ncclComm_t comms[] = { comm, comm2 };
    for (int c = 0; c < 2; c++) {
        int log[512];
        int n = simNcclLog(comms[c], log, 512);
        if (n < 0)
            FAIL("cannot read the collectives' log");
        printf("communicator %d: collectives ran %d:", c, n);
        for (int i = 0; i < n; i++)
            printf(" %d", log[i]);
        printf("\n");
    }
    print_dev("x", x, N);
    print_dev("z", z, N);
    print_dev("w", w, N);
    NC(ncclCommDestroy(comm));
    NC(ncclCommDestroy(comm2));
    return 0;
}
