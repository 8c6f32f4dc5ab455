/* Public test API of the simulated CUDA device: kernel and symbol registration,
 * the device thread. Exported from the simulated libcuda.so.1; used by scenario
 * programs and libsimblas. */
#ifndef SIM_H
#define SIM_H

#include <stddef.h>
#include <vector_types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sim_launch {
    dim3 grid, block;
    size_t shmem;
} sim_launch;

/* There is no device code: a kernel is a host function that runs the whole grid
 * in one call; args[i] points to the i-th parameter value. */
typedef void (*sim_kernel_fn)(const sim_launch *l, void **args);

/* Registers fn (idempotent). Parameters are packed at natural alignment
 * (min(size, 8)). Returns 0 or a negative errno. */
int simRegisterKernel(sim_kernel_fn fn, const char *name, int nparams, const size_t *param_sizes);

/* Registers a "__device__ variable" of size bytes named by the address of its
 * host shadow, as nvcc's registration code does for cudaMemcpyToSymbol and
 * friends. Each context gets its own device copy, created on first use from
 * the bytes hostVar holds at registration (idempotent). Returns 0 or a negative errno. */
int simRegisterSymbol(const void *hostVar, size_t size);

/* on != 0: a device thread runs ready work continuously, so the host may spin
 * on memory a kernel writes with no CUDA call in the loop, as on a real GPU.
 * on == 0 stops it (the default; SIM_DEVICE_THREAD=1 starts it at the first call).
 * Without it work only runs inside API calls, in an order fixed by SIM_SEED. */
void simSetDeviceThread(int on);

#ifdef __cplusplus
}
#endif

#endif
