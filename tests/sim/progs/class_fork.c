/* Class scenario: in the middle of a loop that syncs now and then, with
 * kernels launched and not synchronised, the program forks a child that makes
 * no CUDA call and exits; the parent waits for it, goes on and synchronises. */
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

enum { N = 128, ITERS = 30 };

int main(void)
{
    register_kernels();
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *y = dev_alloc_init(N, 0.5f), *z = dev_alloc_init(N, 0.0f);
    for (int it = 0; it < ITERS; it++) {
        axpb(s, y, 0.9f, 0.05f * (float)(it % 4), N);
        sq(s, y, N);
        acc(s, z, y, 0.5f, N);
        /* a fork three iterations after a sync: work an interposer may hold */
        if (it % 4 == 3 && it != 11 && it != 23)
            CK(cudaStreamSynchronize(s));
        if (it == 10 || it == 22) {
            fflush(NULL);
            pid_t pid = fork();
            if (pid < 0)
                FAIL("fork failed");
            if (pid == 0)
                exit(0);
            int status = 0;
            if (waitpid(pid, &status, 0) != pid)
                FAIL("waitpid failed");
            printf("it=%d child exited=%d status=%d\n", it, WIFEXITED(status),
                   WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        }
    }
    CK(cudaStreamSynchronize(s));
    print_dev("y", y, N);
    print_dev("z", z, N);
    return 0;
}
