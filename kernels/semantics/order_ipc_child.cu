// ipc_child: a producer/consumer pipeline over two processes that share device
// memory and events through CUDA IPC.  Before any CUDA call the program makes
// two pipes and forks; the child execs this binary (/proc/self/exe) with
// "child", so it inherits no CUDA state and the interposer is preloaded into
// both.  The parent cudaMallocs A and B (2 MiB each, as the guide advises for
// shared allocations), creates EA and EB with cudaEventInterprocess |
// cudaEventDisableTiming and sends their IPC handles.  Per iteration:
//  - parent: cudaMemsetAsync of A (a per-iteration byte), a slow kernel that
//    xors a per-iteration hash into it, cudaEventRecord(EA), and only THEN the
//    iteration and a salt over the pipe;
//  - child: cudaStreamWaitEvent on the opened EA, a D2D copy of A into the
//    iteration's slot of its own ring, a kernel that reads A directly and the
//    copy, then (slowly) writes B with the salt, cudaEventRecord(EB), a byte
//    back over the pipe;
//  - parent, after that byte: cudaStreamWaitEvent(EB), a kernel folding B
//    into ACC, a D2H copy of ACC into the iteration's row of a pinned ring.
// Every 8th iteration one side also polls cudaEventQuery on the event the
// OTHER process recorded and reads the buffer with a synchronous cudaMemcpy.
// The pipe is the only thing that orders one process's record before the
// other's wait; an interposer cannot see it.  One that holds the record (or
// the work before it) back past the pipe write lets the other side wait on
// the previous, completed record: the child reads last iteration's A, or the
// parent last iteration's B.  Salts, seeds, ring slots and copy destinations
// change every iteration on both sides, so a stale replay shows.  The child
// checks every A it read against its own reference and sends back a digest
// and a count (also its exit status); the parent checks every B it read,
// every ACC row and the child's digest.  Pipe reads, host waits and the final
// waitpid are all bounded; only the parent prints to stdout.
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cuda_runtime.h>
#include "order_common.cuh"

static const int N = 4096, TPB = 256, GRID = N / TPB, ITERS = 64;
static const size_t BUF_BYTES = (size_t)2 << 20;          // each shared buffer, whole
static const long long SLOW = 40000;                      // ~20 us of spinning
static const double PIPE_LIMIT_S = 20.0, START_LIMIT_S = 40.0, GPU_LIMIT_S = 10.0;
static const uint32_t MAGIC = 0x1BC0C41Du;

struct Header {
    uint32_t magic, iters, n, ok;
    cudaIpcMemHandle_t memA, memB;
    cudaIpcEventHandle_t evA, evB;
};
struct Msg { int32_t iter; uint32_t salt; };                // iter < 0: the end
struct Report { uint32_t nbad, seen; uint64_t digest; };

// The pipeline's values, known to both processes.
static unsigned fillA(int i) { return (unsigned)(i * 29 + 5) & 0xffu; }
static unsigned seedA(int i) { return hsh(0xA11CE5u, (unsigned)i); }
static unsigned saltB(int i) { return hsh(0x5A17u, (unsigned)i * 3u + 1u); }
static unsigned refA(int i, int j) { return fillA(i) * 0x01010101u ^ hsh(seedA(i), (unsigned)j); }
static unsigned refB(int i, int j) {
    return hsh(refA(i, j), saltB(i)) + 3u * refA(i, (j * 7 + 1) & (N - 1)) + (unsigned)j;
}
static unsigned char reply_byte(int i) { return (unsigned char)(i * 13 + 7); }
static void fnv(uint64_t &h, uint64_t v) {
    for (int b = 0; b < 8; ++b) { h ^= (v >> (8 * b)) & 0xff; h *= 1099511628211ull; }
}

__global__ void kGen(unsigned *a, unsigned seed, long long slow) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned v = a[j];                                     // the memset's bytes
    spin_cycles(slow);
    a[j] = v ^ hsh(seed, (unsigned)j);
}
__global__ void kChild(unsigned *b, const unsigned *a, const unsigned *snap, unsigned salt, long long slow) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned v = a[j], s = snap[(j * 7 + 1) & (N - 1)];
    spin_cycles(slow);
    b[j] = hsh(v, salt) + 3u * s + (unsigned)j;
}
__global__ void kConsume(unsigned *acc, const unsigned *b, unsigned i) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    acc[j] = acc[j] * 3u + b[j] + i;
}

static double now_s() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
// 0: n bytes read; -1: none came within limit seconds; -2: end of file or error.
static int read_full(int fd, void *p, size_t n, double limit) {
    char *c = (char *)p;
    double t0 = now_s();
    while (n > 0) {
        int ms = (int)((limit - (now_s() - t0)) * 1000.0);
        if (ms <= 0) return -1;
        pollfd pf = {fd, POLLIN, 0};
        int r = poll(&pf, 1, ms);
        if (r < 0) { if (errno == EINTR) continue; return -2; }
        if (r == 0) return -1;
        ssize_t k = read(fd, c, n);
        if (k < 0) { if (errno == EINTR || errno == EAGAIN) continue; return -2; }
        if (k == 0) return -2;
        c += k; n -= (size_t)k;
    }
    return 0;
}
static bool write_full(int fd, const void *p, size_t n) {
    const char *c = (const char *)p;
    while (n > 0) {
        ssize_t k = write(fd, c, n);
        if (k < 0) { if (errno == EINTR) continue; return false; }
        c += k; n -= (size_t)k;
    }
    return true;
}
// Polls query() (cudaStreamQuery / cudaEventQuery) until cudaSuccess; false
// after limit seconds.
template <class Q> static bool poll_ready(Q query, double limit) {
    double t0 = now_s();
    cudaError_t r;
    while ((r = query()) == cudaErrorNotReady && now_s() - t0 < limit) usleep(20);
    // cudaErrorNotReady "is not an error"; tolerate it in the last-error slot either way
    cudaError_t le = cudaGetLastError();
    if (le != cudaErrorNotReady) CK(le);
    if (r == cudaErrorNotReady) return false;
    CK(r);
    return true;
}

// ---------------------------------------------------------------- child --
[[noreturn]] static void child_die(const char *what, int it) {
    fprintf(stderr, "ipc_child (child): %s at iteration %d\n", what, it);
    fflush(stderr);
    _exit(3);
}

static int child_main(int rfd, int wfd) {
    dup2(2, 1);                                            // CK and failures go to stderr
    signal(SIGPIPE, SIG_IGN);
    CK(cudaSetDevice(0));
    CK(cudaFree(0));
    cudaFuncAttributes fa;
    CK(cudaFuncGetAttributes(&fa, kChild));                // loaded now, not at its first launch
    Header h;
    if (read_full(rfd, &h, sizeof h, START_LIMIT_S) != 0) child_die("no header from the parent", -1);
    if (h.magic != MAGIC || h.iters != (uint32_t)ITERS || h.n != (uint32_t)N) child_die("bad header", -1);
    if (!h.ok) return 0;

    unsigned *A, *B;
    CK(cudaIpcOpenMemHandle((void **)&A, h.memA, cudaIpcMemLazyEnablePeerAccess));
    CK(cudaIpcOpenMemHandle((void **)&B, h.memB, cudaIpcMemLazyEnablePeerAccess));
    cudaEvent_t EA, EB;
    CK(cudaIpcOpenEventHandle(&EA, h.evA));
    CK(cudaIpcOpenEventHandle(&EB, h.evB));
    cudaStream_t sc;
    CK(cudaStreamCreateWithFlags(&sc, cudaStreamNonBlocking));
    const size_t ringBytes = (size_t)ITERS * N * 4;
    unsigned *snap, *hA, *hSnap;
    CK(cudaMalloc(&snap, ringBytes));
    CK(cudaMallocHost(&hA, N * 4));
    CK(cudaMallocHost(&hSnap, ringBytes));
    CK(cudaMemsetAsync(snap, 0xFF, ringBytes, sc));
    if (!poll_ready([&] { return cudaStreamQuery(sc); }, GPU_LIMIT_S)) child_die("memset never finished", -1);
    unsigned char ready = 'R';
    if (!write_full(wfd, &ready, 1)) child_die("cannot write to the parent", -1);

    uint64_t digest = 1469598103934665603ull;
    unsigned nbad = 0;
    int it = 0;
    for (;; ++it) {
        Msg m;
        if (read_full(rfd, &m, sizeof m, PIPE_LIMIT_S) != 0) child_die("no message from the parent", it);
        if (m.iter < 0) break;
        if (m.iter != it || it >= ITERS) child_die("message out of sequence", it);
        if (it % 8 == 2) {
            // The parent issued its record of EA before it wrote the message:
            // the query (in the importing process) follows that record.
            if (!poll_ready([&] { return cudaEventQuery(EA); }, GPU_LIMIT_S)) child_die("EA never completed", it);
            CK(cudaMemcpy(hA, A, N * 4, cudaMemcpyDeviceToHost));
            int bad = 0;
            for (int j = 0; j < N; ++j) { if (hA[j] != refA(it, j)) ++bad; fnv(digest, hA[j]); }
            if (bad) { ++nbad; fprintf(stderr, "child: iter %d: %d words of A differ after cudaEventQuery(EA)\n", it, bad); }
        }
        unsigned *slot = snap + (size_t)it * N;
        CK(cudaStreamWaitEvent(sc, EA, 0));
        CK(cudaMemcpyAsync(slot, A, N * 4, cudaMemcpyDeviceToDevice, sc));
        kChild<<<GRID, TPB, 0, sc>>>(B, A, slot, m.salt, SLOW);
        CK(cudaGetLastError());
        CK(cudaEventRecord(EB, sc));
        unsigned char r = reply_byte(it);
        if (!write_full(wfd, &r, 1)) child_die("cannot write to the parent", it);
    }
    if (it != ITERS) child_die("the parent ended early", it);
    CK(cudaMemcpyAsync(hSnap, snap, ringBytes, cudaMemcpyDeviceToHost, sc));
    if (!poll_ready([&] { return cudaStreamQuery(sc); }, GPU_LIMIT_S)) child_die("stream never drained", it);
    for (int i = 0; i < ITERS; ++i) {
        int bad = 0;
        for (int j = 0; j < N; ++j) {
            unsigned v = hSnap[(size_t)i * N + j];
            if (v != refA(i, j)) ++bad;
            fnv(digest, v);
        }
        if (bad) { ++nbad; fprintf(stderr, "child: iter %d: %d words of the copy of A differ\n", i, bad); }
    }
    // Close everything imported before the parent may free or destroy it.
    CK(cudaIpcCloseMemHandle(A));
    CK(cudaIpcCloseMemHandle(B));
    CK(cudaEventDestroy(EA));
    CK(cudaEventDestroy(EB));
    CK(cudaStreamDestroy(sc));
    CK(cudaFree(snap));
    CK(cudaFreeHost(hA));
    CK(cudaFreeHost(hSnap));
    Report rep = {nbad, (uint32_t)it, digest};
    if (!write_full(wfd, &rep, sizeof rep)) child_die("cannot write to the parent", it);
    return nbad ? 1 : 0;
}

// --------------------------------------------------------------- parent --
static pid_t g_child = -1;
[[noreturn]] static void parent_abort(const char *what, int it) {
    failf("%s (iteration %d)", what, it);
    if (g_child > 0) { kill(g_child, SIGKILL); waitpid(g_child, nullptr, 0); g_child = -1; }
    finish("ipc_child");
    fflush(stdout);
    _exit(1);                                              // no teardown behind a stuck wait
}
// The child's exit, waited for at most PIPE_LIMIT_S.
static void reap_child() {
    int st = 0;
    pid_t w;
    double t0 = now_s();
    while (((w = waitpid(g_child, &st, WNOHANG)) == 0 || (w < 0 && errno == EINTR)) && now_s() - t0 < PIPE_LIMIT_S)
        usleep(1000);
    if (w == 0) parent_abort("the child did not exit", ITERS);
    g_child = -1;
    if (w < 0) failf("waitpid failed");
    else if (!WIFEXITED(st)) failf("the child was killed by signal %d", WIFSIGNALED(st) ? WTERMSIG(st) : -1);
    else if (WEXITSTATUS(st) != 0) failf("the child exited with status %d", WEXITSTATUS(st));
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "child") == 0) return child_main(atoi(argv[2]), atoi(argv[3]));
    signal(SIGPIPE, SIG_IGN);
    // Before any CUDA call: the pipes, and the child running this binary afresh.
    int p2c[2], c2p[2];
    if (pipe2(p2c, O_CLOEXEC) != 0 || pipe2(c2p, O_CLOEXEC) != 0) { printf("pipe2 failed\n"); return 2; }
    char aRead[16], aWrite[16], aChild[] = "child";
    snprintf(aRead, sizeof aRead, "%d", p2c[0]);
    snprintf(aWrite, sizeof aWrite, "%d", c2p[1]);
    char *cargv[] = {argv[0], aChild, aRead, aWrite, nullptr};
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) { printf("fork failed\n"); return 2; }
    if (pid == 0) {                                        // only async-signal-safe calls until exec
        fcntl(p2c[0], F_SETFD, 0);
        fcntl(c2p[1], F_SETFD, 0);
        execv("/proc/self/exe", cargv);
        _exit(127);
    }
    g_child = pid;
    close(p2c[0]);
    close(c2p[1]);
    const int wfd = p2c[1], rfd = c2p[0];

    CK(cudaSetDevice(0));
    CK(cudaFree(0));
    int ipcEvents = 0;
    CK(cudaDeviceGetAttribute(&ipcEvents, cudaDevAttrIpcEventSupport, 0));
    Header h;
    memset(&h, 0, sizeof h);
    h.magic = MAGIC; h.iters = ITERS; h.n = N; h.ok = ipcEvents ? 1u : 0u;
    if (!h.ok) {
        if (!write_full(wfd, &h, sizeof h)) parent_abort("cannot write to the child", -1);
        reap_child();
        printf("device 0 does not support IPC events: nothing to check\n");
        return finish("ipc_child");
    }
    cudaFuncAttributes fa;
    CK(cudaFuncGetAttributes(&fa, kGen));
    CK(cudaFuncGetAttributes(&fa, kConsume));
    cudaStream_t sp;
    CK(cudaStreamCreateWithFlags(&sp, cudaStreamNonBlocking));
    unsigned *A, *B, *ACC, *ring, *hB;
    CK(cudaMalloc(&A, BUF_BYTES));
    CK(cudaMalloc(&B, BUF_BYTES));
    CK(cudaMalloc(&ACC, N * 4));
    CK(cudaMallocHost(&ring, (size_t)ITERS * N * 4));
    CK(cudaMallocHost(&hB, N * 4));
    memset(ring, 0xAB, (size_t)ITERS * N * 4);
    CK(cudaMemsetAsync(A, 0, BUF_BYTES, sp));
    CK(cudaMemsetAsync(B, 0, BUF_BYTES, sp));
    CK(cudaMemsetAsync(ACC, 0, N * 4, sp));
    cudaEvent_t EA, EB;
    CK(cudaEventCreateWithFlags(&EA, cudaEventInterprocess | cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&EB, cudaEventInterprocess | cudaEventDisableTiming));
    CK(cudaIpcGetMemHandle(&h.memA, A));
    CK(cudaIpcGetMemHandle(&h.memB, B));
    CK(cudaIpcGetEventHandle(&h.evA, EA));
    CK(cudaIpcGetEventHandle(&h.evB, EB));
    if (!poll_ready([&] { return cudaStreamQuery(sp); }, GPU_LIMIT_S)) parent_abort("memsets never finished", -1);
    if (!write_full(wfd, &h, sizeof h)) parent_abort("cannot write to the child", -1);
    unsigned char ready = 0;
    int rc = read_full(rfd, &ready, 1, START_LIMIT_S);
    if (rc != 0 || ready != 'R') parent_abort(rc == -1 ? "timed out waiting for the child to start" : "the child did not start", -1);

    for (int i = 0; i < ITERS; ++i) {
        CK(cudaMemsetAsync(A, (int)fillA(i), N * 4, sp));
        kGen<<<GRID, TPB, 0, sp>>>(A, seedA(i), SLOW);
        CK(cudaGetLastError());
        CK(cudaEventRecord(EA, sp));
        Msg m = {i, saltB(i)};                             // after the record was issued
        if (!write_full(wfd, &m, sizeof m)) parent_abort("cannot write to the child", i);
        unsigned char r = 0;
        rc = read_full(rfd, &r, 1, PIPE_LIMIT_S);
        if (rc == -1) parent_abort("timed out waiting for the child", i);
        if (rc != 0) parent_abort("the child went away", i);
        if (r != reply_byte(i)) failf("iter %d: child answered %02x, want %02x", i, r, reply_byte(i));
        if (i % 8 == 5) {
            // The child issued its record of EB before its byte: the query (in
            // the exporting process) follows that record.
            if (!poll_ready([&] { return cudaEventQuery(EB); }, GPU_LIMIT_S)) parent_abort("EB never completed", i);
            CK(cudaMemcpy(hB, B, N * 4, cudaMemcpyDeviceToHost));
            for (int j = 0; j < N; ++j)
                if (hB[j] != refB(i, j)) { failf("iter %d: after cudaEventQuery(EB), B[%d] = %08x, want %08x", i, j, hB[j], refB(i, j)); break; }
            for (int j = 0; j < N; ++j) mix(hB[j]);
        }
        CK(cudaStreamWaitEvent(sp, EB, 0));
        kConsume<<<GRID, TPB, 0, sp>>>(ACC, B, (unsigned)i);
        CK(cudaGetLastError());
        CK(cudaMemcpyAsync(ring + (size_t)i * N, ACC, N * 4, cudaMemcpyDeviceToHost, sp));
    }
    // All of the parent's work (the last wait on EB included) done before the
    // child may destroy what it imported.
    if (!poll_ready([&] { return cudaStreamQuery(sp); }, GPU_LIMIT_S)) parent_abort("stream never drained", ITERS);
    Msg end = {-1, 0};
    if (!write_full(wfd, &end, sizeof end)) parent_abort("cannot write to the child", ITERS);
    Report rep;
    rc = read_full(rfd, &rep, sizeof rep, PIPE_LIMIT_S);
    if (rc == -1) parent_abort("timed out waiting for the child's report", ITERS);
    if (rc != 0) parent_abort("the child went away before its report", ITERS);
    reap_child();

    // The whole pipeline on the host.
    std::vector<unsigned> acc(N, 0u);
    for (int i = 0; i < ITERS; ++i) {
        for (int j = 0; j < N; ++j) acc[j] = acc[j] * 3u + refB(i, j) + (unsigned)i;
        check_acc(i, ring + (size_t)i * N, acc.data(), N);
    }
    uint64_t want = 1469598103934665603ull;                // what the child should have hashed
    for (int i = 2; i < ITERS; i += 8)
        for (int j = 0; j < N; ++j) fnv(want, refA(i, j));
    for (int i = 0; i < ITERS; ++i)
        for (int j = 0; j < N; ++j) fnv(want, refA(i, j));
    if (rep.seen != (uint32_t)ITERS) failf("the child saw %u iterations, want %d", rep.seen, ITERS);
    if (rep.nbad != 0) failf("the child found %u reads of A wrong", rep.nbad);
    if (rep.digest != want) failf("the child's digest of A is %016llx, want %016llx",
                                  (unsigned long long)rep.digest, (unsigned long long)want);
    mix(rep.seen); mix(rep.nbad); mix(rep.digest);

    CK(cudaEventDestroy(EA));
    CK(cudaEventDestroy(EB));
    CK(cudaStreamDestroy(sp));
    CK(cudaFree(A)); CK(cudaFree(B)); CK(cudaFree(ACC));
    CK(cudaFreeHost(ring)); CK(cudaFreeHost(hB));
    close(wfd);
    close(rfd);
    return finish("ipc_child");
}
