/* Guard scenario: a loop that allocates device scratch memory and frees it
 * at every iteration, as Thrust's temporary storage is, named by kernels
 * only, with a memset and copies on memory that stays (one into pinned
 * memory); and pinned memory no copy names, freed. A free forgets only the
 * graphs whose copies or memsets name the freed allocation: the loop
 * replays. With ASYNC_FREE, the scratch memory comes from cudaMallocAsync
 * and goes back with cudaFreeAsync, made after the held work before it,
 * with a second allocation in stream order amid the iteration's work
 * (passed through: the stretch around it replays whole); with FROM_POOL as
 * well, that one from a pool of the program's. With NAMED, a memset names
 * the scratch memory, so each graph of the stretch goes at the free before
 * its first launch: the stretch is built again less and less often, and
 * from the second such loss the ops between the memset and the free
 * replay as a piece of their own, the memset eager before it. */
#include "common.h"

enum { N = 512, ITERS = 24 };

int main(void)
{
    float *y, *r, *keep, *tmp, *hkeep, sum = 0.0f;
    cudaStream_t s = start_y_r(&y, &r);
    CK(cudaMalloc((void **)&keep, N * sizeof(float)));
    CK(cudaMallocHost((void **)&hkeep, 64 * sizeof(float)));
#ifdef FROM_POOL
    cudaMemPool_t pool = pool_at(cudaMemLocationTypeDevice);
#endif
    for (int it = 0; it < ITERS; it++) {
#ifdef ASYNC_FREE
        CK(cudaMallocAsync((void **)&tmp, N * sizeof(float), s));
#else
        CK(cudaMalloc((void **)&tmp, N * sizeof(float)));
#endif
#ifdef NAMED
        /* A memset names the scratch memory: every graph of the stretch
         * goes at its free, before it could launch. */
        CK(cudaMemsetAsync(tmp, 0, N / 2 * sizeof(float), s));
#endif
        CK(cudaMemsetAsync(keep, 0, N * sizeof(float), s));
#if defined(FROM_POOL)
        float *tmp2;
        CK(cudaMallocFromPoolAsync((void **)&tmp2, N * sizeof(float), pool, s));
#elif defined(ASYNC_FREE)
        float *tmp2;
        CK(cudaMallocAsync((void **)&tmp2, N * sizeof(float), s));
#endif
        CK(cudaMemcpyAsync(keep + N / 4, y, N / 2 * sizeof(float), cudaMemcpyDeviceToDevice, s));
        mix(s, tmp, y, keep, N);
#ifdef ASYNC_FREE
        mix(s, tmp2, tmp, y, N);
        acc(s, y, tmp2, 0.125f, N);
        CK(cudaFreeAsync(tmp2, s));
#endif
        acc(s, y, tmp, 0.25f, N);
        axpb(s, y, 0.5f, 0.01f, N);
        CK(cudaMemcpyAsync(hkeep, y, 64 * sizeof(float), cudaMemcpyDeviceToHost, s));
#ifdef ASYNC_FREE
        CK(cudaFreeAsync(tmp, s));
        CK(cudaStreamSynchronize(s));
#else
        CK(cudaFree(tmp));
#endif
        sum += hkeep[it % 64];
        /* Pinned memory no copy names, freed: the graphs stay too. */
        float *ph;
        CK(cudaMallocHost((void **)&ph, 64 * sizeof(float)));
        ph[0] = (float)it;
        CK(cudaFreeHost(ph));
    }
    CK(cudaFree(keep));
    printf("sum %.9g\n", (double)sum);
    print_dev("y", y, N);
    return 0;
}
