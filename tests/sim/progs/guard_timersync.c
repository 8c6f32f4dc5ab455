/* Guard scenario: the host waits on an event while the hold timer is sending
 * out the held work that records it. Even iterations: kernels on s, a record
 * of e, one more kernel, a sync; the template learnt from them runs past the
 * record. Odd iterations from the fortieth on stop after the record (were the
 * host away from the start, the gap would end the recorded runs there, and
 * nothing would be held through it): the host makes no call for a
 * little longer than the hold, so the timer sends the held work out (every
 * simulated call jittered, so that takes a while), then the host waits on e
 * and asks whether s is idle. Eagerly the wait saw this iteration's record,
 * so s is idle: a wait that looked at the engine while the timer was still
 * submitting, saw nothing held and waited on the previous record, finds s
 * busy. */
#include <time.h>

#include "common.h"

enum { N = 96, ITERS = 88, FIRST_GAP = 40 };

static void sleep_us(long us)
{
    struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };
    nanosleep(&ts, NULL);
}

int main(void)
{
    register_kernels();
    cudaStream_t s;
    cudaEvent_t e;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    float *y = dev_alloc_init(N, 0.25f), *w = dev_alloc_init(N, 0.5f);
    int busy = 0;
    for (int it = 0; it < ITERS; it++) {
        axpb(s, y, 0.5f, (float)it * 0.0625f, N);
        acc(s, w, y, 0.5f, N);
        sq(s, w, N);
        axpb(s, y, 0.75f, 0.125f, N);
        CK(cudaEventRecord(e, s));
        if (it % 2 == 1 && it >= FIRST_GAP) {
            /* The first gap is far past the hold, so that the timer sends
             * at least once however late its thread wakes on a loaded host
             * (after that gap, runs may end there and hold nothing). With
             * 2 ms to spare, a loaded run now and then saw the program's
             * wait send the held work first, and the timer none. It comes
             * late enough that the template is built on a loaded host
             * under the sanitizers: a gap met before it replays is learnt
             * as the host's, and nothing is held through the later ones. */
            sleep_us(it == FIRST_GAP + 1 ? 20000 : 3100 + (it % 8) * 150);
            CK(cudaEventSynchronize(e));
            cudaError_t q = cudaStreamQuery(s);
            if (q == cudaErrorNotReady)
                busy++;
            else if (q != cudaSuccess)
                FAIL("cudaStreamQuery: %d", (int)q);
        }
        acc(s, y, w, 0.25f, N);
        CK(cudaStreamSynchronize(s));
    }
    printf("stream busy after its last event completed: %d of %d\n", busy, (ITERS - FIRST_GAP) / 2);
    print_dev("y", y, N);
    print_dev("w", w, N);
    return 0;
}
