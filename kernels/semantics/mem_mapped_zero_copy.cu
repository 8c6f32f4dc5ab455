#include "mem_common.cuh"

// mapped_zero_copy: zero-copy host memory (cudaHostAlloc Mapped, one of them
// also WriteCombined) that kernels read and write, directly (pointer in the
// arguments) and indirectly (pointer read from a device-side table, so the
// arguments name no host memory). The host rewrites inputs and a parameter
// block between iterations, after a wait. Per iteration a kernel raises a flag
// in mapped memory through the table and the host spins on it with no CUDA
// call (then syncs before reading data); the second half runs on the legacy
// stream with a blocking D2H cudaMemcpy as the only barrier before the host
// rewrites the inputs again.
constexpr int N = 8192;
constexpr int ITERS = 64;
constexpr int TB = 256;

struct Ptrs {
	const uint32_t *in;
	uint32_t *out2;
	const uint32_t *param;
	volatile uint32_t *flag;
};

__global__ void k_direct(const uint32_t *in, const uint32_t *wc, uint32_t *a, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		a[i] = in[i] * 3u + wc[((uint32_t)i * 5u) & (N - 1)];
}
__global__ void k_ind_read(const Ptrs *P, const uint32_t *a, uint32_t *b, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		b[i] = (a[i] ^ (P->in[(i + 1) & (N - 1)] * P->param[0])) + P->param[1];
}
__global__ void k_ind_write(const Ptrs *P, const uint32_t *b, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		P->out2[i] = b[i] + 0x1234567u;
}
__global__ void k_flag(const Ptrs *P, uint32_t v)
{
	__threadfence_system();
	*P->flag = v;
	__threadfence_system();
}
__global__ void k_direct_write(uint32_t *out, const uint32_t *c, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = c[i] * 7u;
}

static uint32_t rA[N], rB[N], rC[N], rin[N], rwc[N];

int main()
{
	g_name = "mapped_zero_copy";
	CK(cudaSetDeviceFlags(cudaDeviceMapHost));
	uint32_t *hin, *hwc, *hout, *hout2, *hparam, *hflag, *hsmall;
	CK(cudaHostAlloc((void **)&hin, N * 4, cudaHostAllocMapped));
	CK(cudaHostAlloc((void **)&hwc, N * 4, cudaHostAllocMapped | cudaHostAllocWriteCombined));
	CK(cudaHostAlloc((void **)&hout, N * 4, cudaHostAllocMapped));
	CK(cudaHostAlloc((void **)&hout2, N * 4, cudaHostAllocMapped));
	CK(cudaHostAlloc((void **)&hparam, 64, cudaHostAllocMapped));
	CK(cudaHostAlloc((void **)&hflag, 64, cudaHostAllocMapped));
	CK(cudaMallocHost((void **)&hsmall, 64));
	uint32_t *d_in, *d_wc, *d_out;
	Ptrs p;
	CK(cudaHostGetDevicePointer((void **)&d_in, hin, 0));
	CK(cudaHostGetDevicePointer((void **)&d_wc, hwc, 0));
	CK(cudaHostGetDevicePointer((void **)&d_out, hout, 0));
	CK(cudaHostGetDevicePointer((void **)&p.in, hin, 0));
	CK(cudaHostGetDevicePointer((void **)&p.out2, hout2, 0));
	CK(cudaHostGetDevicePointer((void **)&p.param, hparam, 0));
	CK(cudaHostGetDevicePointer((void **)&p.flag, hflag, 0));
	memset(hparam, 0, 64);
	memset(hflag, 0, 64);
	uint32_t *dA, *dB, *dC;
	Ptrs *dPtrs;
	CK(cudaMalloc((void **)&dA, N * 4));
	CK(cudaMalloc((void **)&dB, N * 4));
	CK(cudaMalloc((void **)&dC, N * 4));
	CK(cudaMalloc((void **)&dPtrs, sizeof(Ptrs)));
	CK(cudaMemcpy(dPtrs, &p, sizeof p, cudaMemcpyHostToDevice));
	cudaStream_t s;
	CK(cudaStreamCreate(&s));
	const unsigned G = blocks(N, TB);
	volatile uint32_t *flag = hflag;

	for (int it = 0; it < ITERS; it++) {
		// Segment 1, stream s.
		for (int i = 0; i < N; i++) {
			hin[i] = rin[i] = val(it, i, 1);
			hwc[i] = rwc[i] = val(it, i, 2);
		}
		uint32_t p0 = val(it, 0, 3) | 1u, p1 = (uint32_t)it;
		hparam[0] = p0;
		hparam[1] = p1;
		k_direct<<<G, TB, 0, s>>>(d_in, d_wc, dA, N);
		CKL();
		k_ind_read<<<G, TB, 0, s>>>(dPtrs, dA, dB, N);
		CKL();
		k_ind_write<<<G, TB, 0, s>>>(dPtrs, dB, N);
		CKL();
		CK(cudaMemcpyAsync(hout, dB, N * 4, cudaMemcpyDeviceToHost, s));
		k_flag<<<1, 1, 0, s>>>(dPtrs, (uint32_t)it + 1u);
		CKL();
		{
			double t0 = now_s();
			while (*flag != (uint32_t)it + 1u)
				if (now_s() - t0 > 10)
					hang("flag-spin", it);
		}
		CK(cudaStreamSynchronize(s));
		for (uint32_t i = 0; i < (uint32_t)N; i++) {
			rA[i] = rin[i] * 3u + rwc[(i * 5u) & (N - 1)];
			rB[i] = (rA[i] ^ (rin[(i + 1) & (N - 1)] * p0)) + p1;
		}
		expect_u32("s:d2h-into-mapped", it, hout, rB, N);
		for (int i = 0; i < N; i++)
			expect("s:indirect-mapped-write", it, i, hout2[i], rB[i] + 0x1234567u);
		expect("s:flag", it, 0, *flag, (uint32_t)it + 1u);

		// Segment 2, legacy stream; the blocking D2H is the barrier.
		p0 = val(it, 1, 3) | 1u;
		hparam[0] = p0;
		for (int i = 0; i < N; i++)
			hin[i] = rin[i] = val(it, i, 4);
		k_ind_read<<<G, TB>>>(dPtrs, dB, dC, N);
		CKL();
		k_direct_write<<<G, TB>>>(d_out, dC, N);
		CKL();
		CK(cudaMemcpy(hsmall, dC, 64, cudaMemcpyDeviceToHost));
		for (int i = 0; i < N; i++)
			rC[i] = (rB[i] ^ (rin[(i + 1) & (N - 1)] * p0)) + p1;
		expect_u32("legacy:d2h", it, hsmall, rC, 16);
		for (int i = 0; i < N; i++)
			expect("legacy:direct-mapped-write", it, i, hout[i], rC[i] * 7u);
		// All done: scribble over what the GPU writes next time.
		memset(hout, 0xcd, N * 4);
		memset(hout2, 0xce, N * 4);
		memset(hsmall, 0xcf, 64);
	}
	return finish();
}
