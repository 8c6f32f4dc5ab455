// Common to the ordering programs of kernels/semantics (order_*.cu): every
// CUDA call checked, failures counted (the first ten printed), a digest of
// all results printed at the end with the verdict.
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <cuda.h>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    printf("CUDA error line %d: %s: %s\n", __LINE__, cudaGetErrorName(e_), cudaGetErrorString(e_)); \
    fflush(stdout); exit(2); } } while (0)
// A cuBLAS call checked (the programs that link cuBLAS; lib_cublaslt checks
// cuBLASLt's own status names with CLT).
#define CB(x) do { cublasStatus_t s_ = (x); if (s_ != CUBLAS_STATUS_SUCCESS) { \
    printf("cuBLAS error line %d: %d: %s\n", __LINE__, (int)s_, cublasGetStatusName(s_)); \
    fflush(stdout); exit(2); } } while (0)
#define CU(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { const char *s_ = "?"; cuGetErrorString(r_, &s_); \
    printf("CUDA driver error line %d: %d: %s\n", __LINE__, (int)r_, s_); fflush(stdout); exit(2); } } while (0)

static uint64_t g_hash = 1469598103934665603ull;
// FNV-1a over n bytes: a digest of a whole array, apart from the running one.
[[maybe_unused]] static uint64_t fnv_bytes(const void *p, size_t n) {
    const unsigned char *b = (const unsigned char *)p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; ++i) { h ^= b[i]; h *= 1099511628211ull; }
    return h;
}
[[maybe_unused]] static void mix(uint64_t v) { for (int b = 0; b < 8; ++b) { g_hash ^= (v >> (8 * b)) & 0xff; g_hash *= 1099511628211ull; } }
static std::mutex g_fail_mu;
static int g_fail = 0;
[[maybe_unused]] static void failf(const char *fmt, ...) {
    std::lock_guard<std::mutex> g(g_fail_mu);
    if (g_fail++ >= 10) return;
    va_list ap; va_start(ap, fmt); vprintf(fmt, ap); va_end(ap); printf("\n");
}
// One iteration's row of ACC against the host's: the first difference
// reported, every word in the digest.
[[maybe_unused]] static void check_acc(int it, const unsigned *got, const unsigned *want, int n) {
    for (int j = 0; j < n; ++j)
        if (got[j] != want[j]) { failf("iter %d: ACC[%d] = %08x, want %08x", it, j, got[j], want[j]); break; }
    for (int j = 0; j < n; ++j) mix(got[j]);
}
[[maybe_unused]] static int finish(const char *name) {
    printf("RESULT %s checksum=%016llx %s\n", name, (unsigned long long)g_hash, g_fail ? "FAIL" : "ok");
    return g_fail ? 1 : 0;
}
__host__ __device__ inline unsigned hsh(unsigned a, unsigned b) {
    unsigned x = a * 0x9E3779B1u ^ (b + 0x7F4A7C15u);
    x ^= x >> 15; x *= 0x2C1B3C6Du; x ^= x >> 12; x *= 0x297A2D39u; x ^= x >> 15;
    return x;
}
__device__ __forceinline__ void spin_cycles(long long c) {
    long long t0 = clock64();
    while (clock64() - t0 < c) { }
}
