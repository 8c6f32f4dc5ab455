// kernels/class_fork.cu: fork() in the middle of a loop that synchronises now and then, each
// time with kernels queued since the last sync. One child does CUDA-free work, sends its
// result through a pipe and leaves with _exit; another execs a shell; the parent waits for
// each, prints what it got, and goes on with its loop.
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "class_common.cuh"

static const int N = 4096;

static void print_status(long it, const char *what, int status) {
    printf("it=%ld %s exited=%d status=%d signalled=%d\n", it, what, (int)WIFEXITED(status),
           WIFEXITED(status) ? WEXITSTATUS(status) : -1, (int)WIFSIGNALED(status));
    fflush(stdout);
}

static pid_t fork_checked() {
    fflush(NULL);  // nothing buffered may be written twice
    pid_t pid = fork();
    if (pid < 0) FAIL("fork failed: %s", strerror(errno));
    return pid;
}

static int wait_checked(pid_t pid) {
    int status = 0;
    while (waitpid(pid, &status, 0) != pid)
        if (errno != EINTR) FAIL("waitpid failed: %s", strerror(errno));
    return status;
}

// The child's CUDA-free work: a digest of what the parent had read back before the fork.
static void child_work(const std::vector<float> &log, int fd) {
    Digest d;
    d.add_vec(log);
    double s = 0.0;
    for (float v : log) s += (double)v;
    char line[128];
    int len = snprintf(line, sizeof line, "hash=%016" PRIx64 " sum=%a n=%zu", d.h, s, log.size());
    if (len < 0 || write(fd, line, (size_t)len) != len) _exit(9);
    close(fd);
    _exit(3);
}

int main(int argc, char **argv) {
    long iters = class_start(argc, argv, 40, 36);
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *y = dev_init(N, 0.5f), *z = dev_init(N, 0.0f), *r = dev_init(1, 0.0f);
    std::vector<float> log, h(N);
    for (long it = 0; it < iters; it++) {
        axpb(s, y, 0.9f, 0.05f * (float)(it % 4), N);
        sq(s, y, N);
        acc(s, z, y, 0.5f, N);
        reduce(s, r, z, N);
        // Syncs every fourth iteration, except the ones after a fork: the forks
        // come with three iterations' work queued.
        if (it % 4 == 3 && it != 11 && it != 23 && it != 35) {
            CK(cudaStreamSynchronize(s));
            CK(cudaMemcpy(h.data(), z, N * sizeof(float), cudaMemcpyDeviceToHost));
            log.push_back(h[it % N] + h[N - 1]);
        }
        if (it == 10 || it == 34) {
            int fds[2];
            if (pipe(fds) != 0) FAIL("pipe failed: %s", strerror(errno));
            pid_t pid = fork_checked();
            if (pid == 0) {
                close(fds[0]);
                child_work(log, fds[1]);
            }
            close(fds[1]);
            std::string got;
            char buf[256];
            ssize_t k;
            while ((k = read(fds[0], buf, sizeof buf)) != 0) {
                if (k < 0) {
                    if (errno == EINTR) continue;
                    FAIL("read from the child failed: %s", strerror(errno));
                }
                got.append(buf, (size_t)k);
            }
            close(fds[0]);
            int status = wait_checked(pid);
            print_status(it, "child", status);
            printf("it=%ld child says %s\n", it, got.c_str());
        }
        if (it == 22) {
            pid_t pid = fork_checked();
            if (pid == 0) {
                execl("/bin/sh", "sh", "-c", "echo exec child; exit 4", (char *)nullptr);
                _exit(127);
            }
            print_status(it, "exec child", wait_checked(pid));
        }
    }
    CK(cudaStreamSynchronize(s));
    print_host("log", log.data(), log.size());
    print_dev("y", y, N);
    print_dev("z", z, N);
    print_dev("r", r, 1);
    for (float *p : {y, z, r}) CK(cudaFree(p));
    CK(cudaStreamDestroy(s));
    return 0;
}
