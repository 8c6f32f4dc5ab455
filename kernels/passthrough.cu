// kernels/passthrough.cu: per-call cost of cheap intercepted CUDA calls, timed
// with a host clock; run bare and preloaded to see what interception adds.
#include "common.cuh"

__global__ void k_tick(unsigned *c) {
    if (threadIdx.x == 0 && blockIdx.x == 0) *c += 1;
}

__global__ void k_empty() {}

// Keeps the GPU busy for about `ns` so launches behind it queue up instead of running.
__global__ void k_spin(long long ns) {
    long long t0 = clock64();
    // clock64 counts SM cycles; 2 GHz is close enough for "a few milliseconds".
    while (clock64() - t0 < ns * 2) {
    }
}

struct Result {
    const char *api;
    double ns;
};

int main(int argc, char **argv) {
    Args a(argc, argv);
    long calls = a.num("--calls", 100000);
    long repeats = a.num("--repeats", 5);
    const char *only = a.str("--only", nullptr);
    a.finish();
    if (calls < 1000 || repeats < 1) {
        fprintf(stderr, "usage: passthrough [--calls N>=1000] [--repeats R] [--only API]\n");
        return 64;
    }

    cudaStream_t s, busy;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&busy, cudaStreamNonBlocking));
    cudaEvent_t ev;
    CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    CK(cudaEventRecord(ev, s));
    unsigned *counter;
    CK(cudaMalloc(&counter, sizeof(unsigned)));
    CK(cudaMemset(counter, 0, sizeof(unsigned)));
    CK(cudaDeviceSynchronize());
    unsigned expected = 0;

    // Each API gets repeats loops of `calls` calls; the median loop is reported.
    // body(n) issues n calls and returns the host time they took in microseconds.
    auto measure_n = [&](const char *api, long n, auto body) {
        if (only && strcmp(only, api) != 0) return;
        body(1000);  // warm caches and lazy lookups
        CK(cudaDeviceSynchronize());
        std::vector<double> ns;
        for (long r = 0; r < repeats; r++) {
            double us = body(n);
            CK(cudaDeviceSynchronize());
            ns.push_back(us * 1000.0 / (double)n);
        }
        fprintf(stderr, "TIME api=%s ns_per_call=%.2f min=%.2f calls=%ld repeats=%ld\n", api, median(ns),
                *std::min_element(ns.begin(), ns.end()), n, repeats);
    };
    auto measure = [&](const char *api, auto body) { measure_n(api, calls, body); };

    measure("cudaEventRecord", [&](long m) {
        double t0 = now_us();
        for (long i = 0; i < m; i++) CK(cudaEventRecord(ev, s));
        return now_us() - t0;
    });
    measure("cudaStreamQuery", [&](long m) {
        double t0 = now_us();
        for (long i = 0; i < m; i++) CK(cudaStreamQuery(s));
        return now_us() - t0;
    });
    measure("cudaEventQuery", [&](long m) {
        double t0 = now_us();
        for (long i = 0; i < m; i++) CK(cudaEventQuery(ev));
        return now_us() - t0;
    });
    measure("cudaStreamWaitEvent", [&](long m) {
        double t0 = now_us();
        for (long i = 0; i < m; i++) CK(cudaStreamWaitEvent(s, ev, 0));
        return now_us() - t0;
    });
    measure("cudaGetLastError", [&](long m) {
        double t0 = now_us();
        for (long i = 0; i < m; i++) CK(cudaGetLastError());
        return now_us() - t0;
    });
    // An idle GPU drains launches about as fast as they come; a sync every 4096
    // launches keeps the queue short without timing the drain.
    measure("launch_idle", [&](long m) {
        double spent = 0;
        for (long done = 0; done < m;) {
            long batch = std::min(4096L, m - done);
            double t0 = now_us();
            for (long i = 0; i < batch; i++) {
                k_tick<<<1, 32, 0, s>>>(counter);
                CK_LAUNCH();
            }
            spent += now_us() - t0;
            expected += (unsigned)batch;
            done += batch;
            CK(cudaStreamSynchronize(s));
        }
        return spent;
    });
    measure("launch_empty", [&](long m) {
        double spent = 0;
        for (long done = 0; done < m;) {
            long batch = std::min(4096L, m - done);
            double t0 = now_us();
            for (long i = 0; i < batch; i++) {
                k_empty<<<1, 32, 0, s>>>();
                CK_LAUNCH();
            }
            spent += now_us() - t0;
            done += batch;
            CK(cudaStreamSynchronize(s));
        }
        return spent;
    });
    // Launches queued behind a spinning kernel on the same stream: the
    // submission path alone, without the GPU pulling work as it comes. Batches
    // stay below the driver's queue depth so no launch blocks.
    // The GPU time behind each batch is fixed per launch, so this one runs a fifth of the calls.
    measure_n("launch_busy", std::max(1000L, calls / 5), [&](long m) {
        double spent = 0;
        for (long done = 0; done < m;) {
            long batch = std::min(512L, m - done);
            k_spin<<<1, 1, 0, busy>>>(batch * 6000LL);
            CK_LAUNCH();
            CK(cudaEventRecord(ev, busy));
            CK(cudaStreamWaitEvent(s, ev, 0));
            double t0 = now_us();
            for (long i = 0; i < batch; i++) {
                k_tick<<<1, 32, 0, s>>>(counter);
                CK_LAUNCH();
            }
            spent += now_us() - t0;
            expected += (unsigned)batch;
            done += batch;
            CK(cudaStreamSynchronize(s));
        }
        return spent;
    });

    unsigned got = 0;
    CK(cudaMemcpy(&got, counter, sizeof got, cudaMemcpyDeviceToHost));
    if (got != expected) {
        fprintf(stderr, "counter %u, expected %u: launches were lost or repeated\n", got, expected);
        return 1;
    }
    Digest d;
    d.add(&got, sizeof got);
    print_result("passthrough", d, {(double)got});

    CK(cudaFree(counter));
    CK(cudaEventDestroy(ev));
    CK(cudaStreamDestroy(s));
    CK(cudaStreamDestroy(busy));
    return 0;
}
