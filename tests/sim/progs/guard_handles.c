/* Guard scenario: a stream destroyed and created again with other flags, at
 * the same address. First a non-blocking stream s: each iteration a kernel on
 * s, one on the legacy stream on a buffer s never touches, another on s, and
 * a device sync; the legacy stream and s do not order against each other.
 * Then s is destroyed and a blocking stream takes its address; the same
 * launches follow, but the legacy-stream kernel now works on s's buffer: the
 * legacy stream orders it between the two kernels on s. What was learnt of
 * the old stream must not be replayed on the new one. */
#include "common.h"

enum { N = 96, ITERS = 12 };

static void loop(cudaStream_t s, float *a, float *b)
{
    for (int it = 0; it < ITERS; it++) {
        axpb(s, a, 0.9f, 0.05f * (float)(it % 3), N);
        sq(0, b, N);
        axpb(s, a, 0.7f, 0.1f, N);
        CK(cudaDeviceSynchronize());
    }
}

int main(void)
{
    register_kernels();
    float *a = dev_alloc_init(N, 0.25f), *b = dev_alloc_init(N, 0.5f);
    cudaStream_t s, t;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    loop(s, a, b);
    print_dev("a", a, N);
    print_dev("b", b, N);
    CK(cudaStreamDestroy(s));
    CK(cudaStreamCreateWithFlags(&t, cudaStreamDefault));
    fprintf(stderr, "handles: stream %s\n", t == s ? "reused" : "new");
    loop(t, a, a);
    print_dev("a", a, N);
    CK(cudaStreamDestroy(t));
    return 0;
}
