/* Guard scenario: another thread's work held when the main thread's own
 * capture begins. A worker replays a loop of two streams: a kernel on s6
 * writes a, an event recorded after it orders s7's kernel, which reads a,
 * and a read-back of s7's result. The main thread only captures, twice, on
 * a stream of its own (thread-local mode, so the worker may go on), while
 * the worker is inside an iteration:
 *  - A: the worker's first kernel is held before the capture begins; the
 *    rest of its iteration comes while the capture runs;
 *  - B: the worker's first kernel comes while the begin call is under way
 *    (the simulated call takes SIM_CAPTURE_DELAY_US), the rest after it.
 * Held work must go out before the capture, and nothing may be held from
 * the moment its call starts: the worker's calls during the capture pass
 * through, past anything still held. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#include "common.h"

enum { N = 64, ITERS = 40, A = 15, B = 30 };

/* In round r (A, then B), 4r + 1: the worker is where the main thread
 * captures; 4r + 2: the capture has begun; 4r + 3: the worker's iteration
 * is done; 4r + 4: so is the main thread's round. */
static atomic_int step;

static void wait_step(int want)
{
    while (atomic_load(&step) != want)
        sched_yield();
}

static void sleep_ms(long ms)
{
    struct timespec ts = { 0, ms * 1000 * 1000 };
    nanosleep(&ts, NULL);
}

struct worker {
    float *a, *b, hist[ITERS];
};

static void *worker_main(void *p)
{
    struct worker *w = p;
    cudaStream_t s6, s7;
    cudaEvent_t e;
    CK(cudaStreamCreateWithFlags(&s6, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s7, cudaStreamNonBlocking));
    CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    for (int it = 0; it < ITERS; it++) {
        int r = it == A ? 0 : it == B ? 1 : -1;
        if (it == B) {
            wait_step(4 * r);
            atomic_store(&step, 4 * r + 1);
            sleep_ms(5); /* inside the begin call */
        }
        axpb(s6, w->a, 0.9f, 0.1f * (float)(it % 5), N);
        if (it == A)
            atomic_store(&step, 4 * r + 1);
        if (r >= 0)
            wait_step(4 * r + 2);
        CK(cudaEventRecord(e, s6));
        CK(cudaStreamWaitEvent(s7, e, 0));
        acc(s7, w->b, w->a, 0.5f, N);
        CK(cudaMemcpyAsync(&w->hist[it], w->b + it % N, sizeof(float), cudaMemcpyDeviceToHost, s7));
        CK(cudaStreamSynchronize(s7));
        if (r >= 0)
            atomic_store(&step, 4 * r + 3);
    }
    CK(cudaEventDestroy(e));
    CK(cudaStreamDestroy(s7));
    CK(cudaStreamDestroy(s6));
    return NULL;
}

int main(void)
{
    register_kernels();
    struct worker w = { .a = dev_alloc_init(N, 1.0f), .b = dev_alloc_init(N, 0.5f) };
    float *m = dev_alloc_init(N, 2.0f);
    cudaStream_t sc;
    CK(cudaStreamCreateWithFlags(&sc, cudaStreamNonBlocking));
    CK(cudaDeviceSynchronize());
    pthread_t th;
    if (pthread_create(&th, NULL, worker_main, &w))
        FAIL("pthread_create failed");
    for (int r = 0; r < 2; r++) {
        wait_step(4 * r + 1);
        cudaGraph_t g;
        cudaGraphExec_t x;
        CK(cudaStreamBeginCapture(sc, cudaStreamCaptureModeThreadLocal));
        atomic_store(&step, 4 * r + 2);
        wait_step(4 * r + 3);
        sq(sc, m, N);
        CK(cudaStreamEndCapture(sc, &g));
        CK(cudaGraphInstantiate(&x, g, 0));
        CK(cudaGraphLaunch(x, sc));
        CK(cudaStreamSynchronize(sc));
        CK(cudaGraphExecDestroy(x));
        CK(cudaGraphDestroy(g));
        atomic_store(&step, 4 * r + 4);
    }
    pthread_join(th, NULL);
    CK(cudaDeviceSynchronize());
    print_floats("hist", w.hist, ITERS);
    print_dev("a", w.a, N);
    print_dev("b", w.b, N);
    print_dev("m", m, N);
    return 0;
}
