#include "mem_common.cuh"

// host_register: the same malloc'ed buffers change kind under the program:
// registered (cudaHostRegister, Mapped) for iterations 0-29, plain pageable
// for 30-59 (cudaHostUnregister), registered again for 60-89, and switched
// every iteration for 90-119. Segment X makes the same calls in every mode;
// only the host differs: while pageable it rewrites the H2D source right
// after cudaMemcpyAsync returns and reads the D2H destinations with no sync
// (both documented for pageable memory, both wrong for pinned), so a graph
// that still treats the buffers as pinned reads the rewritten source or
// leaves the read-back late. While registered, segment Y also has kernels
// read and write the buffers through cudaHostGetDevicePointer, and copies
// from host memory that a kernel wrote. Iterations 120-149 alternate a
// cudaMallocHost buffer (freed with cudaFreeHost) and a malloc'ed one of the
// same size (which may land at the same address), used the same way.
constexpr int N = 16384;
constexpr int NB2 = 65536;   // 256 KiB, above malloc's mmap threshold
constexpr int ITERS = 150;
constexpr int TB = 256;

__global__ void k1(const uint32_t *a, uint32_t *b, int n, uint32_t it)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		b[i] = a[i] * 0x9e3779b1u + it;
}
__global__ void k2(const uint32_t *b, uint32_t *c, int n, uint32_t x)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		c[i] = b[((uint32_t)i * 3u) & (N - 1)] ^ x;
}
__global__ void k3(const uint32_t *hin, const uint32_t *c, uint32_t *hout, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		hout[i] = hin[i] + c[i];
}
__global__ void k4(const uint32_t *d, uint32_t *hout_hi, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		hout_hi[i] = d[i] * 5u;
}
__global__ void kbig(uint32_t *b, int n, uint32_t it)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		b[i] = b[i] * 3u + it;
}

static uint32_t rin[N], rB[N], rC[N], rbig[NB2];
static uint32_t *hin, *hout, *d_hin, *d_hout;
static bool reg = false;

static void set_registered(bool want)
{
	if (want == reg)
		return;
	CK(cudaDeviceSynchronize());
	if (want) {
		CK(cudaHostRegister(hin, N * 4, cudaHostRegisterMapped | cudaHostRegisterPortable));
		CK(cudaHostRegister(hout, 2 * N * 4, cudaHostRegisterMapped | cudaHostRegisterPortable));
		CK(cudaHostGetDevicePointer((void **)&d_hin, hin, 0));
		CK(cudaHostGetDevicePointer((void **)&d_hout, hout, 0));
	} else {
		CK(cudaHostUnregister(hin));
		CK(cudaHostUnregister(hout));
		d_hin = d_hout = nullptr;
	}
	reg = want;
}

int main()
{
	g_name = "host_register";
	hin = (uint32_t *)aligned_alloc(4096, N * 4);
	hout = (uint32_t *)aligned_alloc(4096, 2 * N * 4);
	if (!hin || !hout) {
		printf("malloc failed\n");
		return 2;
	}
	memset(hin, 0, N * 4);
	memset(hout, 0, 2 * N * 4);
	uint32_t *dA, *dB, *dC, *dD, *dBig;
	CK(cudaMalloc((void **)&dA, N * 4));
	CK(cudaMalloc((void **)&dB, N * 4));
	CK(cudaMalloc((void **)&dC, N * 4));
	CK(cudaMalloc((void **)&dD, N * 4));
	CK(cudaMalloc((void **)&dBig, NB2 * 4));
	cudaStream_t s;
	CK(cudaStreamCreate(&s));
	const unsigned G = blocks(N, TB);

	for (int it = 0; it < ITERS; it++) {
		const uint8_t junk = (uint8_t)(it * 29 + 5);
		if (it < 120) {
			const bool want = it < 30 ? true : it < 60 ? false : it < 90 ? true : (it % 2 == 0);
			set_registered(want);
			const char *m = reg ? "X-registered" : "X-pageable";
			// Segment X: the same calls whatever the buffers are.
			for (int i = 0; i < N; i++)
				hin[i] = rin[i] = val(it, i, 1);
			CK(cudaMemcpyAsync(dA, hin, N * 4, cudaMemcpyHostToDevice, s));
			if (!reg)
				memset(hin, junk, N * 4);   // pageable: staged at return
			k1<<<G, TB, 0, s>>>(dA, dB, N, (uint32_t)it);
			CKL();
			const uint32_t x = val(it, 0, 2);
			k2<<<G, TB, 0, s>>>(dB, dC, N, x);
			CKL();
			for (uint32_t i = 0; i < (uint32_t)N; i++)
				rB[i] = rin[i] * 0x9e3779b1u + (uint32_t)it;
			for (uint32_t i = 0; i < (uint32_t)N; i++)
				rC[i] = rB[(i * 3u) & (N - 1)] ^ x;
			CK(cudaMemcpyAsync(hout, dC, N * 4, cudaMemcpyDeviceToHost, s));
			if (!reg)   // pageable: complete at return
				expect_u32("X-pageable:lo-at-return", it, hout, rC, N);
			CK(cudaMemcpyAsync(hout + N, dB, N * 4, cudaMemcpyDeviceToHost, s));
			if (!reg)
				expect_u32("X-pageable:hi-at-return", it, hout + N, rB, N);
			CK(cudaStreamSynchronize(s));
			expect_u32(m, it, hout, rC, N);
			expect_u32(m, it, hout + N, rB, N);
			memset(hin, junk ^ 0x33, N * 4);
			memset(hout, junk ^ 0x44, 2 * N * 4);

			if (reg) {
				// Segment Y: kernels on the registered buffers themselves.
				for (int i = 0; i < N; i++)
					hin[i] = rin[i] = val(it, i, 3);
				k3<<<G, TB, 0, s>>>(d_hin, dC, d_hout, N);
				CKL();
				CK(cudaMemcpyAsync(dD, hout, N * 4, cudaMemcpyHostToDevice, s));
				k4<<<G, TB, 0, s>>>(dD, d_hout + N, N);
				CKL();
				CK(cudaStreamSynchronize(s));
				for (int i = 0; i < N; i++) {
					expect("Y:kernel-into-registered", it, i, hout[i], rin[i] + rC[i]);
					expect("Y:via-copy-from-registered", it, i, hout[N + i], (rin[i] + rC[i]) * 5u);
				}
				memset(hin, junk ^ 0x55, N * 4);
				memset(hout, junk ^ 0x66, 2 * N * 4);
			}
			continue;
		}
		// Iterations 120-149: a fresh buffer every time, pinned or pageable.
		const bool pinned = it % 2 == 0;
		uint32_t *p;
		if (pinned) {
			CK(cudaMallocHost((void **)&p, NB2 * 4));
		} else {
			p = (uint32_t *)malloc(NB2 * 4);
			if (!p) {
				printf("malloc failed\n");
				return 2;
			}
		}
		for (int i = 0; i < NB2; i++)
			p[i] = val(it, i, 5);
		for (int i = 0; i < NB2; i++)
			rbig[i] = p[i] * 3u + (uint32_t)it;
		CK(cudaMemcpyAsync(dBig, p, NB2 * 4, cudaMemcpyHostToDevice, s));
		if (!pinned)
			memset(p, junk, NB2 * 4);
		kbig<<<blocks(NB2, TB), TB, 0, s>>>(dBig, NB2, (uint32_t)it);
		CKL();
		CK(cudaMemcpyAsync(p, dBig, NB2 * 4, cudaMemcpyDeviceToHost, s));
		if (!pinned)
			expect_u32("fresh-pageable:at-return", it, p, rbig, NB2);
		CK(cudaStreamSynchronize(s));
		expect_u32(pinned ? "fresh-pinned" : "fresh-pageable", it, p, rbig, NB2);
		if (pinned)
			CK(cudaFreeHost(p));
		else
			free(p);
	}
	set_registered(false);
	return finish();
}
