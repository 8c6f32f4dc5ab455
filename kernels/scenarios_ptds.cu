// kernels/scenarios_ptds.cu: scenarios built with --default-stream per-thread, where
// stream 0 names the calling thread's own stream and launches go through the _ptsz entry points.
#include <thread>

#include "scenario_common.cuh"

#if !defined(CUDA_API_PER_THREAD_DEFAULT_STREAM)
#error "build with nvcc --default-stream per-thread"
#endif

// Stream 0, cudaStreamPerThread and async copies on both all name one stream.
static void ptds_chain(long iters) {
    float *y = upload_random(SC_N, 60, -1, 1), *x = upload_random(SC_N, 61, -1, 1), *sum;
    CK(cudaMalloc(&sum, sizeof(float)));
    std::vector<float> seen;
    float a = 0.8f;
    for (long it = 0; it < iters; it++) {
        for (int j = 0; j < 6; j++) launch_affine(j % 2 ? cudaStreamPerThread : 0, y, x, a, 0.1f * (float)j);
        k_sum<<<1, 256>>>(sum, y, SC_N);
        CK_LAUNCH();
        float h;
        CK(cudaMemcpyAsync(&h, sum, sizeof h, cudaMemcpyDeviceToHost, 0));
        CK(cudaStreamSynchronize(0));
        seen.push_back(h);
        a = feedback(h);
    }
    finish("ptds_chain", {y}, seen);
}

// Two threads each on their own default stream: independent, never ordered
// against each other, each ordered within itself.
static void ptds_threads(long iters) {
    float *y[2], *x[2];
    for (int t = 0; t < 2; t++) {
        y[t] = upload_random(SC_N, 62 + t, -1, 1);
        x[t] = upload_random(SC_N, 64 + t, -1, 1);
    }
    std::vector<std::thread> th;
    for (int t = 0; t < 2; t++)
        th.emplace_back([&, t] {
            for (long it = 0; it < iters; it++) {
                for (int j = 0; j < 8; j++) launch_affine(0, y[t], x[t], 0.6f + 0.04f * (float)j, 0.1f * (float)(t + 1));
                CK(cudaStreamSynchronize(cudaStreamPerThread));
            }
        });
    for (auto &t : th) t.join();
    finish("ptds_threads", {y[0], y[1]});
}

// The legacy stream, named explicitly, still synchronises with the per-thread
// stream (which is a blocking stream); a non-blocking stream joins by event.
static void ptds_legacy(long iters) {
    float *A = upload_random(SC_N, 66, -1, 1), *B = upload_random(SC_N, 67, -1, 1), *C = upload_random(SC_N, 68, -1, 1);
    cudaStream_t nb;
    CK(cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking));
    cudaEvent_t ev;
    CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    for (long it = 0; it < iters; it++) {
        launch_affine(0, A, C, 0.7f, 0.3f);
        launch_affine(cudaStreamLegacy, B, A, 0.5f, 0.5f);  // after the per-thread write of A
        launch_affine(0, A, B, 0.8f, -0.2f);                // after the legacy write of B
        // The non-blocking stream must be told to wait: it reads B and rewrites C.
        CK(cudaEventRecord(ev, 0));
        CK(cudaStreamWaitEvent(nb, ev, 0));
        launch_affine(nb, C, B, 0.5f, 0.25f);
        CK(cudaEventRecord(ev, nb));
        CK(cudaStreamWaitEvent(0, ev, 0));
        launch_affine(0, B, C, 0.9f, 0.1f);
        CK(cudaStreamSynchronize(0));
    }
    finish("ptds_legacy", {A, B, C});
}

int main(int argc, char **argv) {
    std::vector<Scenario> all = {
        {"ptds_chain", "stream 0 and cudaStreamPerThread as one stream, pageable readback", ptds_chain},
        {"ptds_threads", "two threads on their own per-thread default streams", ptds_threads},
        {"ptds_legacy", "explicit cudaStreamLegacy against the per-thread stream", ptds_legacy},
    };
    return scenario_main(argc, argv, all);
}
