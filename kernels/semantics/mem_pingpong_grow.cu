#include "mem_common.cuh"

// pingpong_grow: arguments that move every iteration. Part A: buffers that
// alternate between two allocations (ping-pong) and one that cycles through
// five (more than a handful of graph variants), read 3 iterations after it
// was written. Part B: a size that grows every iteration: the kernels' grids,
// a D2D copy's byte count, a memset's offset and byte count, a second D2D
// copy's offsets and count all change. Part C: 64 iterations of 8 chained
// kernels with new scalar arguments and a new slot (pointer offset) each
// time, with no host wait in between (only a cudaStreamQuery that does not
// wait), the kernels slowed down so that many iterations are queued at once;
// every slot is checked at the end, so an update applied to the wrong
// (or a still-pending) launch shows.
constexpr int TB = 128;
constexpr int NA = 2048;
constexpr int ITERS_A = 70;
constexpr int CAP = 8192;
constexpr int ITERS_B = 64;
constexpr int ITERS_C = 64, S = 1024, KC = 8;

__global__ void kstep(const uint32_t *src, uint32_t *dst, int n, uint32_t it)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		dst[i] = src[((uint32_t)i * 5u + 1u) & (NA - 1)] * 3u + it;
}
__global__ void krot(const uint32_t *dst, uint32_t *p, int n, uint32_t it)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		p[i] = dst[i] ^ (it * 0x01000193u);
}
__global__ void kacc(const uint32_t *p, uint32_t *dst, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		dst[i] += p[i];
}
__global__ void kgrow(uint32_t *g, int n, uint32_t it)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		g[i] = (uint32_t)i * it + 7u;
}
__global__ void kgrow2(uint32_t *g, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		g[i] = g[i] * 2u + 1u;
}
__device__ void slow()
{
	long long t0 = clock64();
	while (clock64() - t0 < 20000) {
	}
}
__global__ void kc0(uint32_t *slot, uint32_t a, uint32_t b)
{
	slow();
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < S)
		slot[i] = (uint32_t)i * a + b;
}
__global__ void kck(uint32_t *slot, uint32_t a, uint32_t b, uint32_t k)
{
	slow();
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < S)
		slot[i] = slot[i] * a + b + k;
}

static uint32_t rQ[2][NA], rP[5][NA], rG[CAP], rG2[CAP], rSlots[ITERS_C * S];

int main()
{
	g_name = "pingpong_grow";
	cudaStream_t s;
	CK(cudaStreamCreate(&s));
	uint32_t *Q[2], *P[5], *hA;
	for (auto &q : Q) {
		CK(cudaMalloc((void **)&q, NA * 4));
		CK(cudaMemset(q, 0, NA * 4));
	}
	for (auto &p : P) {
		CK(cudaMalloc((void **)&p, NA * 4));
		CK(cudaMemset(p, 0, NA * 4));
	}
	CK(cudaMallocHost((void **)&hA, CAP * 4));
	CK(cudaDeviceSynchronize());

	// Part A: ping-pong and a five-way cycle.
	for (int it = 0; it < ITERS_A; it++) {
		const uint32_t uit = (uint32_t)it;
		const int a = it & 1, b = a ^ 1;
		uint32_t *src = Q[a], *dst = Q[b];
		uint32_t *pw = P[it % 5], *pr = P[(it + 2) % 5];
		kstep<<<blocks(NA, TB), TB, 0, s>>>(src, dst, NA, uit);
		CKL();
		krot<<<blocks(NA, TB), TB, 0, s>>>(dst, pw, NA, uit);
		CKL();
		kacc<<<blocks(NA, TB), TB, 0, s>>>(pr, dst, NA);
		CKL();
		CK(cudaMemcpyAsync(hA, dst, NA * 4, cudaMemcpyDeviceToHost, s));
		CK(cudaStreamSynchronize(s));
		for (uint32_t i = 0; i < (uint32_t)NA; i++)
			rQ[b][i] = rQ[a][(i * 5u + 1u) & (NA - 1)] * 3u + uit;
		for (int i = 0; i < NA; i++)
			rP[it % 5][i] = rQ[b][i] ^ (uit * 0x01000193u);
		for (int i = 0; i < NA; i++)
			rQ[b][i] += rP[(it + 2) % 5][i];
		expect_u32("A:pingpong", it, hA, rQ[b], NA);
		memset(hA, 0x3c, CAP * 4);
	}

	// Part B: growing sizes.
	uint32_t *G, *G2;
	CK(cudaMalloc((void **)&G, CAP * 4));
	CK(cudaMalloc((void **)&G2, CAP * 4));
	CK(cudaMemset(G, 0, CAP * 4));
	CK(cudaMemset(G2, 0, CAP * 4));
	CK(cudaDeviceSynchronize());
	for (int it = 0; it < ITERS_B; it++) {
		const uint32_t uit = (uint32_t)it;
		const int n = 512 + it * 97;   // up to 6623 < CAP
		kgrow<<<blocks(n, TB), TB, 0, s>>>(G, n, uit);
		CKL();
		for (int i = 0; i < n; i++)
			rG[i] = (uint32_t)i * uit + 7u;
		CK(cudaMemcpyAsync(G2, G, (size_t)n * 4, cudaMemcpyDeviceToDevice, s));
		memcpy(rG2, rG, (size_t)n * 4);
		const uint8_t v = (uint8_t)(0xa0 + (it & 15));
		CK(cudaMemsetAsync(G2 + n, v, (size_t)(CAP - n) * 4, s));
		for (int i = n; i < CAP; i++)
			rG2[i] = 0x01010101u * v;
		const int off = (it * 13) % 1000, off2 = (it * 31) % 1500, cnt = 100 + (it * 7) % 300;
		CK(cudaMemcpyAsync(G2 + off, G + off2, (size_t)cnt * 4, cudaMemcpyDeviceToDevice, s));
		memcpy(rG2 + off, rG + off2, (size_t)cnt * 4);   // off2 + cnt <= 512 + 97 * 0 ... see below
		kgrow2<<<blocks(n, TB), TB, 0, s>>>(G2, n);
		CKL();
		for (int i = 0; i < n; i++)
			rG2[i] = rG2[i] * 2u + 1u;
		CK(cudaMemcpyAsync(hA, G2, CAP * 4, cudaMemcpyDeviceToHost, s));
		CK(cudaStreamSynchronize(s));
		expect_u32("B:grow", it, hA, rG2, CAP);
		memset(hA, 0x3d, CAP * 4);
	}

	// Part C: a burst with no host wait.
	uint32_t *slots, *hslots;
	CK(cudaMalloc((void **)&slots, ITERS_C * S * 4));
	CK(cudaMemset(slots, 0, ITERS_C * S * 4));
	CK(cudaMallocHost((void **)&hslots, ITERS_C * S * 4));
	CK(cudaDeviceSynchronize());
	for (int it = 0; it < ITERS_C; it++) {
		uint32_t *slot = slots + it * S;
		uint32_t *r = rSlots + it * S;
		const uint32_t a0 = (uint32_t)it * 3u + 1u, b0 = val(it, 0, 9);
		kc0<<<S / TB, TB, 0, s>>>(slot, a0, b0);
		CKL();
		for (uint32_t i = 0; i < (uint32_t)S; i++)
			r[i] = i * a0 + b0;
		for (uint32_t k = 1; k < (uint32_t)KC; k++) {
			const uint32_t a = val(it, k, 10) | 1u, b = val(it, k, 11);
			kck<<<S / TB, TB, 0, s>>>(slot, a, b, k);
			CKL();
			for (int i = 0; i < S; i++)
				r[i] = r[i] * a + b + k;
		}
		cudaError_t e = cudaStreamQuery(s);
		if (e != cudaSuccess && e != cudaErrorNotReady)
			CK(e);
		clear_not_ready();
	}
	CK(cudaMemcpyAsync(hslots, slots, ITERS_C * S * 4, cudaMemcpyDeviceToHost, s));
	CK(cudaStreamSynchronize(s));
	for (int it = 0; it < ITERS_C; it++)
		expect_u32("C:slot", it, hslots + it * S, rSlots + it * S, S);
	return finish();
}
