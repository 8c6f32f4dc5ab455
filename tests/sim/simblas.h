/* Public API of libsimblas, a stand-in for a vendor library (like cuBLAS) that
 * carries its own kernels and reaches the driver only through cuGetProcAddress. */
#ifndef SIMBLAS_H
#define SIMBLAS_H

#include <cuda.h>

/* All return 0 or a negative errno; work is queued on s. */
int simblas_axpy(CUstream s, int n, float alpha, const float *x, float *y);   /* y += alpha*x; kernelParams */
int simblas_scal(CUstream s, int n, float alpha, float *x);                   /* x *= alpha; extra buffer */
int simblas_dot(CUstream s, int n, const float *x, const float *y, float *result); /* device scalar; cuLaunchKernelEx */

#endif
