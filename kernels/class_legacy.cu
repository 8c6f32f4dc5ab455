// kernels/class_legacy.cu: the legacy stream's rule with event waits. A wait is an action in
// its stream: an op on the legacy stream waits for a wait a blocking stream made before it,
// with nothing queued after the wait, and a blocking stream's next op waits for a wait made
// on the legacy stream. The simulator orders streams by this rule, and cgraft's graphs
// leave a stream's tail as a wait. First the program checks that the device keeps the rule
// (a kernel made late on a non-blocking stream, read through the waits; exit 1 where the
// rule does not hold), then it runs loops that lean on it: work on a non-blocking stream
// joined into a blocking one by a wait alone and read on the legacy stream; the same with
// the per-thread stream, read from a second host thread.
#include <cstdlib>
#include <cstring>

#include "class_common.cuh"

static const int N = 4096;

// d = s * 0.5 + 1, after every thread has spun for ns nanoseconds of the device's clock.
__global__ void k_late(float *d, const float *s, int n, unsigned long long ns) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while (t - t0 < ns);
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) d[i] = s[i] * 0.5f + 1.0f;
}

static void late(cudaStream_t s, float *d, const float *src, int n, unsigned long long ns) {
    k_late<<<cl_grid(n), CL_T, 0, s>>>(d, src, n, ns);
    CK_LAUNCH();
}

static float first(const float *d) {
    float v;
    CK(cudaMemcpy(&v, d, sizeof v, cudaMemcpyDeviceToHost));
    return v;
}

// w = w * m + b on home; then, on the non-blocking stream nb, out = late(w) squared; home
// waits for that, a wait being its last action.
static void through(cudaStream_t home, cudaStream_t nb, cudaEvent_t e, float *w, float *out, float m, float b) {
    axpb(home, w, m, b, N);
    CK(cudaEventRecord(e, home));
    CK(cudaStreamWaitEvent(nb, e, 0));
    late(nb, out, w, N, 20000);
    sq(nb, out, N);
    CK(cudaEventRecord(e, nb));
    CK(cudaStreamWaitEvent(home, e, 0));
}

// One round of the check: `late` on the non-blocking stream nb writes x, an event recorded
// after it is waited on by `waiter`, and `reader` then copies x into y (acc from zero). True
// when the reader saw the late value.
static bool ordered(cudaStream_t nb, cudaStream_t waiter, cudaStream_t reader, float *x, float *y,
                    const float *src, float want) {
    CK(cudaMemset(x, 0, sizeof(float)));
    CK(cudaMemset(y, 0, sizeof(float)));
    CK(cudaDeviceSynchronize());
    cudaEvent_t e;
    CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    late(nb, x, src, 1, 2000000);
    CK(cudaEventRecord(e, nb));
    CK(cudaStreamWaitEvent(waiter, e, 0));
    acc(reader, y, x, 2.0f, 1);  // y = 0 * 0.5 + x * 2
    CK(cudaDeviceSynchronize());
    CK(cudaEventDestroy(e));
    return first(y) == want * 2.0f;
}

int main(int argc, char **argv) {
    long iters = class_start(argc, argv, 40, 2);
    cudaStream_t nb, nb2, blk;
    CK(cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&nb2, cudaStreamNonBlocking));
    CK(cudaStreamCreate(&blk));
    float *src = dev_init(N, 3.0f), *x = dev_init(N, 0.0f), *y = dev_init(N, 0.0f);
    const float want = 3.0f * 0.5f + 1.0f;

    // The rule, on the device: four ways it orders, and a control where nothing does (a
    // non-blocking stream's wait), which shows the late kernel is late enough to tell.
    const int rounds = 6;
    int unordered = 0;
    for (int r = 0; r < rounds; r++) {
        if (!ordered(nb, blk, 0, x, y, src, want))
            FAIL("legacy: the legacy stream ran ahead of a blocking stream's wait (round %d)", r);
        if (!ordered(nb, 0, blk, x, y, src, want))
            FAIL("legacy: a blocking stream ran ahead of the legacy stream's wait (round %d)", r);
        if (!ordered(nb, cudaStreamPerThread, 0, x, y, src, want))
            FAIL("legacy: the legacy stream ran ahead of the per-thread stream's wait (round %d)", r);
        if (!ordered(nb, 0, cudaStreamPerThread, x, y, src, want))
            FAIL("legacy: the per-thread stream ran ahead of the legacy stream's wait (round %d)", r);
        unordered += !ordered(nb, nb2, 0, x, y, src, want);
    }
    // Bare only: cgraft may order more than CUDA does, never less.
    const char *pre = getenv("LD_PRELOAD");
    if ((!pre || !strstr(pre, "cgraft")) && unordered == 0)
        FAIL("legacy: the control never ran ahead: the late kernel is not late enough to tell");
    printf("legacy: the rule holds (%d rounds of 4 checks)\n", rounds);

    // A non-blocking stream's work joined into a blocking stream by a wait alone, then
    // read on the legacy stream, every iteration without a sync.
    float *w = dev_init(N, 0.5f), *z = dev_init(N, 1.0f), *r = dev_init(1, 0.0f);
    cudaEvent_t e;
    CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    std::vector<float> log, h(N);
    for (long it = 0; it < iters; it++) {
        through(blk, nb, e, w, x, 0.95f, 0.02f * (float)(it % 5));
        acc(0, z, x, 0.25f, N);
        reduce(0, r, z, N);
        if (it % 8 == 7) {
            CK(cudaMemcpy(h.data(), z, N * sizeof(float), cudaMemcpyDeviceToHost));
            log.push_back(h[it % N] + h[N - 1]);
        }
    }
    CK(cudaDeviceSynchronize());
    print_host("join-log", log.data(), log.size());
    print_dev("z", z, N);
    print_dev("r", r, 1);

    // The per-thread stream waits for the non-blocking stream's work; a second host thread,
    // woken each iteration, folds its result into snap on the legacy stream.
    float *snap = dev_init(N, 0.0f);
    std::vector<float> snap_log;
    {
        Turns helper([&](long it) {
            acc(0, snap, y, 0.5f, N);
            CK(cudaStreamSynchronize(0));
            if (it % 4 == 3) {
                CK(cudaMemcpy(h.data(), snap, N * sizeof(float), cudaMemcpyDeviceToHost));
                snap_log.push_back(h[it % N] + h[N - 1]);
            }
        });
        for (long it = 0; it < iters; it++) {
            through(cudaStreamPerThread, nb, e, w, y, 0.9f, 0.01f * (float)(it % 3));
            helper.run(it);
        }
    }
    CK(cudaDeviceSynchronize());
    print_host("snap-log", snap_log.data(), snap_log.size());
    print_dev("snap", snap, N);
    print_dev("y", y, N);
    CK(cudaEventDestroy(e));
    for (cudaStream_t s : {nb, nb2, blk}) CK(cudaStreamDestroy(s));
    for (float *p : {src, x, y, w, z, r, snap}) CK(cudaFree(p));
    return 0;
}
