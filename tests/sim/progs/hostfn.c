/* Scenario: a host function in each iteration appends the current iteration
 * and a value the host computes to a log printed at the end. */
#include "common.h"

enum { N = 64, ITERS = 15 };
static int logv[ITERS * 2];
static int nlog;
static int tags[ITERS];

static void note(void *p)
{
    logv[nlog++] = *(int *)p;
}

static void CUDART_CB cb(cudaStream_t s, cudaError_t st, void *p)
{
    (void)s;
    logv[nlog++] = st == cudaSuccess ? 1000 + *(int *)p : -1;
}

int main(void)
{
    register_kernels();
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *y = dev_alloc_init(N, 0.5f);
    for (int it = 0; it < ITERS; it++) {
        tags[it] = it * it;
        axpb(s, y, 0.5f, 0.5f, N);
        sq(s, y, N);
        CK(cudaLaunchHostFunc(s, note, &tags[it]));
        axpb(s, y, 0.25f, 0.75f, N);
        if (it % 4 == 3)
            CK(cudaStreamAddCallback(s, cb, &tags[it], 0));
        if (it % 3 == 2)
            CK(cudaStreamSynchronize(s));
    }
    CK(cudaStreamSynchronize(s));
    printf("log n=%d:", nlog);
    for (int i = 0; i < nlog; i++)
        printf(" %d", logv[i]);
    printf("\n");
    print_dev("y", y, N);
    return 0;
}
