/* Public test API of the simulated CUDA device: kernel registration.
 * Exported from the simulated libcuda.so.1; used by scenario programs and libsimblas. */
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

#ifdef __cplusplus
}
#endif

#endif
