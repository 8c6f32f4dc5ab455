// Common to the memory programs of kernels/semantics (mem_*.cu): results checked
// exactly against the host's, a digest of all of them printed at the end.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

static const char *g_name;
static uint64_t g_hash = 0xcbf29ce484222325ull;
static long g_fail = 0;

static int finish()
{
	printf("RESULT %s checksum=%016llx %s\n", g_name, (unsigned long long)g_hash, g_fail ? "FAIL" : "ok");
	fflush(stdout);
	return g_fail ? 1 : 0;
}

#define CK(x) ck_((x), #x, __LINE__)
static void ck_(cudaError_t e, const char *what, int line)
{
	if (e != cudaSuccess) {
		printf("CUDA_ERROR line %d: %s: %s (%s)\n", line, what, cudaGetErrorName(e), cudaGetErrorString(e));
		fflush(stdout);
		exit(2);
	}
}
#define CKL() CK(cudaGetLastError())

static void hadd(uint64_t v)
{
	g_hash = (g_hash ^ v) * 0x100000001b3ull;
	g_hash ^= g_hash >> 29;
}

static void expect(const char *what, int it, long idx, uint64_t got, uint64_t want)
{
	hadd(got);
	if (got != want) {
		if (g_fail < 10)
			printf("MISMATCH %s it=%d idx=%ld got=0x%llx want=0x%llx\n", what, it, idx,
			       (unsigned long long)got, (unsigned long long)want);
		g_fail++;
	}
}

[[maybe_unused]] static void expect_u32(const char *what, int it, const uint32_t *got, const uint32_t *want, long n)
{
	for (long i = 0; i < n; i++)
		expect(what, it, i, got[i], want[i]);
}

[[maybe_unused]] static void expect_u8(const char *what, int it, const uint8_t *got, const uint8_t *want, long n)
{
	for (long i = 0; i < n; i++)
		expect(what, it, i, got[i], want[i]);
}

// A wait that never ends is a failure, not a hang of the test.
[[maybe_unused]] static void hang(const char *what, int it)
{
	printf("MISMATCH %s it=%d: no completion after 10 s\n", what, it);
	g_fail++;
	exit(finish());
}

[[maybe_unused]] static double now_s()
{
	return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// cudaErrorNotReady from a query is not an error; make sure it is not left
// behind as the last error either.
[[maybe_unused]] static void clear_not_ready()
{
	cudaError_t e = cudaGetLastError();
	if (e != cudaSuccess && e != cudaErrorNotReady)
		CK(e);
}

[[maybe_unused]] static __host__ __device__ uint32_t mix32(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352du;
	x ^= x >> 15;
	x *= 0x846ca68bu;
	x ^= x >> 16;
	return x;
}

// The value the host writes at (iteration, index, purpose).
[[maybe_unused]] static uint32_t val(uint32_t it, uint32_t i, uint32_t salt)
{
	return mix32(mix32(it * 0x9e3779b9u + salt * 0x27d4eb2fu) ^ (i * 0x85ebca6bu + 0x632be5abu));
}

[[maybe_unused]] static unsigned blocks(long n, int b)
{
	return (unsigned)((n + b - 1) / b);
}
