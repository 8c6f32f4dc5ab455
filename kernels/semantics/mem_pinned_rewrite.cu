#include "mem_common.cuh"

// pinned_rewrite: a pinned (cudaMallocHost) input the host rewrites before every
// H2D copy, and pinned read-backs the host reads after five different kinds of
// host wait: cudaStreamSynchronize, cudaEventSynchronize, a cudaStreamQuery
// spin (the copy on a second stream, joined by an event), a cudaEventQuery
// spin, and blocking cudaMemcpy (synchronous for pinned memory, so the source
// may be rewritten as soon as it returns). Device state chains through all
// phases and iterations, so one stale or reordered op shows in every later check.
constexpr int N = 4096;     // elements per buffer
constexpr int PAD = 1024;   // the H2D source of phase A moves inside hin
constexpr int ITERS = 80;
constexpr int TB = 256;

__global__ void k_add2(const uint32_t *a, const uint32_t *b, uint32_t *c, int n, uint32_t k)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		c[i] = a[i] + (b[i] << 1) + k;
}
__global__ void k_affine(const uint32_t *a, uint32_t *b, int n, uint32_t m, uint32_t c)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		b[i] = a[i] * m + c;
}
__global__ void k_rev(const uint32_t *a, uint32_t *b, int n, uint32_t x)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		b[i] = a[n - 1 - i] ^ ((uint32_t)i * x);
}

static uint32_t rA[N], rB[N], rC[N], rD[N], tmp[N];
static void r_add2(const uint32_t *a, const uint32_t *b, uint32_t *c, uint32_t k)
{
	for (int i = 0; i < N; i++)
		tmp[i] = a[i] + (b[i] << 1) + k;
	memcpy(c, tmp, sizeof tmp);
}
static void r_affine(const uint32_t *a, uint32_t *b, uint32_t m, uint32_t c)
{
	for (int i = 0; i < N; i++)
		tmp[i] = a[i] * m + c;
	memcpy(b, tmp, sizeof tmp);
}
static void r_rev(const uint32_t *a, uint32_t *b, uint32_t x)
{
	for (int i = 0; i < N; i++)
		tmp[i] = a[N - 1 - i] ^ ((uint32_t)i * x);
	memcpy(b, tmp, sizeof tmp);
}

int main()
{
	g_name = "pinned_rewrite";
	const size_t NB = N * sizeof(uint32_t);
	uint32_t *hin, *hout, *dA, *dB, *dC, *dD;
	CK(cudaMallocHost((void **)&hin, (N + PAD) * sizeof(uint32_t)));
	CK(cudaMallocHost((void **)&hout, NB));
	CK(cudaMalloc((void **)&dA, NB));
	CK(cudaMalloc((void **)&dB, NB));
	CK(cudaMalloc((void **)&dC, NB));
	CK(cudaMalloc((void **)&dD, NB));
	cudaStream_t s1, s2;
	CK(cudaStreamCreate(&s1));
	CK(cudaStreamCreate(&s2));
	cudaEvent_t evB, evD, e2;
	CK(cudaEventCreate(&evB));
	CK(cudaEventCreate(&evD));
	CK(cudaEventCreateWithFlags(&e2, cudaEventDisableTiming));
	for (uint32_t *d : { dA, dB, dC, dD })
		CK(cudaMemset(d, 0, NB));
	CK(cudaDeviceSynchronize());
	memset(rA, 0, sizeof rA);
	memset(rB, 0, sizeof rB);
	memset(rC, 0, sizeof rC);
	memset(rD, 0, sizeof rD);
	const unsigned G = blocks(N, TB);

	for (int it = 0; it < ITERS; it++) {
		// Phase A: moving source inside pinned hin; cudaStreamSynchronize.
		const uint32_t off = (uint32_t)(it * 97) % PAD;
		for (int i = 0; i < N + PAD; i++)
			hin[i] = val(it, i, 1);
		CK(cudaMemcpyAsync(dA, hin + off, NB, cudaMemcpyHostToDevice, s1));
		k_add2<<<G, TB, 0, s1>>>(dA, dC, dB, N, val(it, 0, 11));
		CKL();
		k_rev<<<G, TB, 0, s1>>>(dB, dD, N, (uint32_t)it | 1u);
		CKL();
		CK(cudaMemcpyAsync(hout, dD, NB, cudaMemcpyDeviceToHost, s1));
		CK(cudaStreamSynchronize(s1));
		memcpy(rA, hin + off, NB);
		r_add2(rA, rC, rB, val(it, 0, 11));
		r_rev(rB, rD, (uint32_t)it | 1u);
		expect_u32("A:streamsync", it, hout, rD, N);

		// Phase B: cudaEventSynchronize on an event recorded after the read-back.
		for (int i = 0; i < N; i++)
			hin[i] = val(it, i, 2);
		CK(cudaMemcpyAsync(dA, hin, NB, cudaMemcpyHostToDevice, s1));
		k_add2<<<G, TB, 0, s1>>>(dA, dD, dB, N, (uint32_t)it * 7u);
		CKL();
		k_rev<<<G, TB, 0, s1>>>(dB, dC, N, val(it, 0, 12));
		CKL();
		CK(cudaMemcpyAsync(hout, dC, NB, cudaMemcpyDeviceToHost, s1));
		CK(cudaEventRecord(evB, s1));
		CK(cudaEventSynchronize(evB));
		memcpy(rA, hin, NB);
		r_add2(rA, rD, rB, (uint32_t)it * 7u);
		r_rev(rB, rC, val(it, 0, 12));
		expect_u32("B:eventsync", it, hout, rC, N);

		// Phase C: the H2D and a kernel on s2, joined into s1 by an event;
		// the host spins on cudaStreamQuery(s1), which covers s2's copy too.
		for (int i = 0; i < N; i++)
			hin[i] = val(it, i, 3);
		CK(cudaMemcpyAsync(dA, hin, NB, cudaMemcpyHostToDevice, s2));
		k_affine<<<G, TB, 0, s2>>>(dA, dA, N, 5u, (uint32_t)it);
		CKL();
		CK(cudaEventRecord(e2, s2));
		CK(cudaStreamWaitEvent(s1, e2, 0));
		k_add2<<<G, TB, 0, s1>>>(dA, dC, dB, N, val(it, 0, 13));
		CKL();
		CK(cudaMemcpyAsync(hout, dB, NB, cudaMemcpyDeviceToHost, s1));
		{
			double t0 = now_s();
			cudaError_t e;
			while ((e = cudaStreamQuery(s1)) == cudaErrorNotReady)
				if (now_s() - t0 > 10)
					hang("C:streamquery", it);
			CK(e);
			clear_not_ready();
		}
		memcpy(rA, hin, NB);
		r_affine(rA, rA, 5u, (uint32_t)it);
		r_add2(rA, rC, rB, val(it, 0, 13));
		expect_u32("C:streamquery", it, hout, rB, N);

		// Phase D: cudaEventQuery spin.
		for (int i = 0; i < N; i++)
			hin[i] = val(it, i, 4);
		CK(cudaMemcpyAsync(dA, hin, NB, cudaMemcpyHostToDevice, s1));
		k_rev<<<G, TB, 0, s1>>>(dA, dD, N, val(it, 0, 14));
		CKL();
		CK(cudaMemcpyAsync(hout, dD, NB, cudaMemcpyDeviceToHost, s1));
		CK(cudaEventRecord(evD, s1));
		{
			double t0 = now_s();
			cudaError_t e;
			while ((e = cudaEventQuery(evD)) == cudaErrorNotReady)
				if (now_s() - t0 > 10)
					hang("D:eventquery", it);
			CK(e);
			clear_not_ready();
		}
		memcpy(rA, hin, NB);
		r_rev(rA, rD, val(it, 0, 14));
		expect_u32("D:eventquery", it, hout, rD, N);

		// Phase E: blocking cudaMemcpy from pinned memory returns when the
		// copy is done: hin is rewritten at once and copied again. Legacy
		// stream throughout (s1 and s2 are blocking streams, idle here).
		for (int i = 0; i < N; i++)
			hin[i] = val(it, i, 5);
		CK(cudaMemcpy(dA, hin, NB, cudaMemcpyHostToDevice));
		memcpy(rA, hin, NB);
		for (int i = 0; i < N; i++)
			hin[i] = val(it, i, 6);
		CK(cudaMemcpy(dB, hin, NB, cudaMemcpyHostToDevice));
		memcpy(rB, hin, NB);
		k_add2<<<G, TB>>>(dA, dB, dC, N, (uint32_t)it);
		CKL();
		k_add2<<<G, TB>>>(dC, dD, dC, N, 1u);
		CKL();
		CK(cudaMemcpy(hout, dC, NB, cudaMemcpyDeviceToHost));
		r_add2(rA, rB, rC, (uint32_t)it);
		r_add2(rC, rD, rC, 1u);
		expect_u32("E:memcpy", it, hout, rC, N);
		// Everything is complete: scribble over the pinned buffers.
		for (int i = 0; i < N + PAD; i++)
			hin[i] = 0xdead0000u + (uint32_t)i;
		memset(hout, 0xee, NB);
	}
	return finish();
}
