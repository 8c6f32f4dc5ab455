/* Guard scenario: an event query in the middle of a stretch cgraft holds.
 * Each iteration: two kernels, a copy into pinned memory and an event record
 * on s, then two more kernels and a sync. Every third iteration the host polls
 * cudaEventQuery on that event between the record and the rest, and once it
 * reports ready reads the pinned copy. The stretch learnt from the other
 * iterations runs past the query, so at the query the record is held: the
 * query must see this record, not the last one that went out. */
#include "common.h"

enum { N = 64, ITERS = 30 };

int main(void)
{
    register_kernels();
    cudaStream_t s;
    cudaEvent_t e;
    CK(cudaStreamCreate(&s));
    CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    float *out, sums[ITERS / 3];
    CK(cudaMallocHost((void **)&out, N * sizeof(float)));
    float *y = dev_alloc_init(N, 0.25f), *z = dev_alloc_init(N, 0.5f);
    for (int it = 0; it < ITERS; it++) {
        axpb(s, y, 1.1f, -0.05f * (float)(it % 5), N);
        sq(s, y, N);
        CK(cudaMemcpyAsync(out, y, N * sizeof(float), cudaMemcpyDeviceToHost, s));
        CK(cudaEventRecord(e, s));
        if (it % 3 == 2) {
            cudaError_t q;
            while ((q = cudaEventQuery(e)) == cudaErrorNotReady)
                ;
            CK(q);
            float sum = 0;
            for (int i = 0; i < N; i++)
                sum += out[i] * (float)(i + 1);
            sums[it / 3] = sum;
        }
        acc(s, z, y, 0.5f, N);
        axpb(s, z, 0.9f, 0.01f, N);
        CK(cudaStreamSynchronize(s));
    }
    print_floats("sums", sums, ITERS / 3);
    print_dev("y", y, N);
    print_dev("z", z, N);
    CK(cudaFreeHost(out));
    return 0;
}
