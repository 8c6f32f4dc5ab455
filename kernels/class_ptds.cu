// kernels/class_ptds.cu: the per-thread default stream (built with --default-stream per-thread),
// two threads. Each iteration the main thread queues kernels on its own stream 0 without a
// sync and wakes a second thread, whose calls come while that work is still queued: first a
// thread made for the iteration, whose first CUDA calls copy and update an unrelated buffer;
// then one long-lived thread that also reads the main thread's result through the legacy
// stream, which orders after every blocking stream's earlier work, the main thread's included.
#include <condition_variable>
#include <mutex>
#include <thread>

#include "class_common.cuh"

#if !defined(CUDA_API_PER_THREAD_DEFAULT_STREAM)
#error "build with nvcc --default-stream per-thread"
#endif

static const int N = 4096, M = 1024;

// The helper's own work on its own stream 0: upload, update, read back, sum in order.
static float helper_work(float *other, long it) {
    std::vector<float> buf(M);
    for (int i = 0; i < M; i++) buf[i] = (float)(i + it) * 0.5f;
    CK(cudaMemcpy(other, buf.data(), M * sizeof(float), cudaMemcpyHostToDevice));
    axpb(0, other, 2.0f, 1.0f, M);
    CK(cudaMemcpy(buf.data(), other, M * sizeof(float), cudaMemcpyDeviceToHost));
    float s = 0.0f;
    for (int i = 0; i < M; i++) s += buf[i];
    return s;
}

// The main thread's iteration: queued on its per-thread stream, not synchronised.
static void main_work(float *y, float *z, long it) {
    axpb(0, y, 0.9f, 0.05f * (float)(it % 4), N);
    sq(cudaStreamPerThread, y, N);
    // Also through cudaLaunchKernel, which the header maps to its _ptsz entry point.
    float m = 0.5f;
    int n = N;
    void *args[] = {&z, &y, &m, &n};
    CK(cudaLaunchKernel((const void *)k_acc, dim3(cl_grid(N)), dim3(CL_T), args, 0, 0));
}

int main(int argc, char **argv) {
    long iters = class_start(argc, argv, 40, 2);
    float *y = dev_init(N, 0.25f), *z = dev_init(N, 1.0f), *other, *snap;
    CK(cudaMalloc(&other, M * sizeof(float)));
    snap = dev_init(N, 0.0f);
    CK(cudaDeviceSynchronize());
    std::vector<float> log, sums, host(N);

    // A new thread per iteration: its first calls come while the main thread's work is queued.
    for (long it = 0; it < iters; it++) {
        main_work(y, z, it);
        std::mutex mu;
        std::condition_variable cv;
        bool go = false;
        float sum = 0.0f;
        std::thread t([&] {
            {
                std::unique_lock<std::mutex> l(mu);
                cv.wait(l, [&] { return go; });
            }
            sum = helper_work(other, it);
        });
        {
            std::lock_guard<std::mutex> l(mu);
            go = true;
        }
        cv.notify_one();
        t.join();
        sums.push_back(sum);
        CK(cudaStreamSynchronize(0));
        CK(cudaMemcpy(host.data(), z, N * sizeof(float), cudaMemcpyDeviceToHost));
        log.push_back(host[it % N] + host[N - 1]);
    }

    // One long-lived helper, woken once per iteration. Besides its own work it folds the
    // main thread's z into snap on the legacy stream: that must see this iteration's
    // queued update of z.
    {
        std::vector<float> snap_sums, h(N);
        {
            Turns helper([&](long it) {
                float s = helper_work(other, it);
                acc(cudaStreamLegacy, snap, z, 0.5f, N);
                CK(cudaStreamSynchronize(cudaStreamLegacy));
                CK(cudaMemcpy(h.data(), snap, N * sizeof(float), cudaMemcpyDeviceToHost));
                sums.push_back(s);
                snap_sums.push_back(h[it % N] + h[N - 1]);
            });
            for (long it = 0; it < iters; it++) {
                main_work(y, z, it + iters);
                helper.run(it);
                CK(cudaStreamSynchronize(0));
                CK(cudaMemcpy(host.data(), z, N * sizeof(float), cudaMemcpyDeviceToHost));
                log.push_back(host[it % N] + host[N - 1]);
            }
        }
        print_host("snap-log", snap_sums.data(), snap_sums.size());
    }
    CK(cudaDeviceSynchronize());
    print_host("log", log.data(), log.size());
    print_host("helper-sums", sums.data(), sums.size());
    print_dev("y", y, N);
    print_dev("z", z, N);
    print_dev("snap", snap, N);
    for (float *p : {y, z, other, snap}) CK(cudaFree(p));
    return 0;
}
