#include "mem_common.cuh"

// pool_bounded: a pool whose size is bounded (cudaMemPoolProps::maxSize) at
// what the work holds at most. Per iteration, on one stream: temporaries a
// and b allocated from the pool and filled, a freed in stream order, then c
// allocated: the pool can give c only a's memory, freed before it on the
// same stream (three temporaries do not fit). Kernels combine them into out,
// which is read back and checked; every allocation must succeed, and the
// runtime must be left with no error.
constexpr int ITERS = 64;
constexpr int TB = 256;
constexpr size_t POOL = 64ull << 20;
constexpr size_t NT = (POOL * 3 / 8) / 4; // a temporary's elements: three exceed the pool
constexpr int NOUT = 8192;
constexpr int GRID = 264;

__global__ void kfill(uint32_t *p, size_t n, uint32_t seed)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		p[i] = ((uint32_t)i ^ seed) * 2654435761u;
}

// out[i] = f(x[i * stride], y[n - 1 - i * stride]) over NOUT samples.
__global__ void kcomb(uint32_t *out, const uint32_t *x, const uint32_t *y, size_t n, uint32_t m)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	size_t stride = n / NOUT;
	if (i < NOUT)
		out[i] = out[i] * m + x[i * stride] + (y[n - 1 - i * stride] ^ (uint32_t)i);
}

static uint32_t fill_at(size_t i, uint32_t seed)
{
	return ((uint32_t)i ^ seed) * 2654435761u;
}

static uint32_t rOut[NOUT];

int main()
{
	g_name = "pool_bounded";
	int dev = 0;
	CK(cudaGetDevice(&dev));
	cudaStream_t s;
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	cudaMemPoolProps props = {};
	props.allocType = cudaMemAllocationTypePinned;
	props.handleTypes = cudaMemHandleTypeNone;
	props.location.type = cudaMemLocationTypeDevice;
	props.location.id = dev;
	props.maxSize = POOL;
	cudaMemPool_t pool;
	CK(cudaMemPoolCreate(&pool, &props));
	uint32_t *dOut, *hOut;
	CK(cudaMalloc((void **)&dOut, NOUT * 4));
	CK(cudaMemset(dOut, 0, NOUT * 4));
	CK(cudaMallocHost((void **)&hOut, NOUT * 4));
	CK(cudaDeviceSynchronize());
	const size_t stride = NT / NOUT;
	for (int it = 0; it < ITERS; it++) {
		const uint32_t sa = 3u * it + 1u, sb = 3u * it + 2u, sc = 3u * it + 3u;
		uint32_t *a, *b, *c;
		CK(cudaMallocFromPoolAsync((void **)&a, NT * 4, pool, s));
		kfill<<<GRID, TB, 0, s>>>(a, NT, sa);
		CKL();
		CK(cudaMallocFromPoolAsync((void **)&b, NT * 4, pool, s));
		kfill<<<GRID, TB, 0, s>>>(b, NT, sb);
		CKL();
		kcomb<<<blocks(NOUT, TB), TB, 0, s>>>(dOut, a, b, NT, 3u);
		CKL();
		CK(cudaFreeAsync(a, s));
		CK(cudaMallocFromPoolAsync((void **)&c, NT * 4, pool, s));
		kfill<<<GRID, TB, 0, s>>>(c, NT, sc);
		CKL();
		kcomb<<<blocks(NOUT, TB), TB, 0, s>>>(dOut, b, c, NT, 5u);
		CKL();
		CK(cudaFreeAsync(b, s));
		CK(cudaFreeAsync(c, s));
		CK(cudaMemcpyAsync(hOut, dOut, NOUT * 4, cudaMemcpyDeviceToHost, s));
		CK(cudaStreamSynchronize(s));
		for (int i = 0; i < NOUT; i++) {
			size_t x = (size_t)i * stride, y = NT - 1 - (size_t)i * stride;
			rOut[i] = rOut[i] * 3u + fill_at(x, sa) + (fill_at(y, sb) ^ (uint32_t)i);
			rOut[i] = rOut[i] * 5u + fill_at(x, sb) + (fill_at(y, sc) ^ (uint32_t)i);
		}
		expect_u32("out", it, hOut, rOut, NOUT);
		CK(cudaGetLastError());
	}
	CK(cudaMemPoolDestroy(pool));
	return finish();
}
