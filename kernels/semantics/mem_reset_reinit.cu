#include "mem_common.cuh"

// reset_reinit: the context goes away and comes back inside one program.
// Three phases, each: cudaSetDevice(0) + cudaFree(0) (re-init), in phase 1 a
// cudaDeviceSetLimit(cudaLimitMallocHeapSize) before any kernel; a check that
// the __device__ counter is back at its initializer (a new context loads the
// module afresh); streams, events, cudaMalloc buffers, two cudaMallocAsync
// buffers from the default pool (phase 2: cudaMallocFromPoolAsync on the pool
// from cudaDeviceGetDefaultMemPool), pinned buffers, a __device__ table written
// with cudaMemcpyToSymbol; then 40 iterations of the same work on 2 streams
// (H2D from a pinned ring, cudaMemcpyToSymbolAsync into __constant__, memset,
// a kernel using device malloc/free, kernels, D2D copy, event record/wait both
// ways, D2H read-back checked exactly); then cudaDeviceReset() with everything
// still allocated except the cudaMallocAsync buffers (the reset does not free
// those, so they are freed first; see cudaDeviceReset in cuda_runtime_api.h).
// Nothing from before a reset is touched after it. The next phase very likely
// gets the SAME device addresses, pinned addresses and stream/event handles,
// and every kernel gets the same scalar arguments as in the previous phase;
// only the data differs (pinned input, constants, table, initial fill). An
// interposer that replays a graph learned in a previous context, keeps
// held-back work across the reset, or keys anything on handle values alone
// gives the previous phase's results, an error, or a crash.
constexpr int PHASES = 3;
constexpr int ITERS = 40;
constexpr int N = 4096;                 // words per buffer
constexpr int TPB = 256;
constexpr int HB = 8, HT = 128;         // heap kernel: blocks x threads
constexpr uint32_t CNT0 = 0x13579bdfu;  // initializer of g_count
constexpr size_t HEAP = 32u << 20;

__constant__ uint32_t c_k[4];
__device__ uint32_t g_tab[256];
__device__ uint32_t g_count = CNT0;

__host__ __device__ inline uint32_t hh(uint32_t a, uint32_t b)
{
	return mix32(a * 0x9e3779b9u ^ (b + 0x7f4a7c15u) * 0x85ebca6bu);
}

// Each block mallocs a scratch row, fills it, reads it back mirrored into b.
__global__ void k_heap(uint32_t *b, uint32_t it)
{
	__shared__ uint32_t *buf;
	const uint32_t t = threadIdx.x, g = blockIdx.x * HT + t;
	if (t == 0)
		buf = (uint32_t *)malloc(HT * sizeof(uint32_t));
	__syncthreads();
	if (buf == nullptr) {   // uniform across the block
		b[g] = 0xdead0000u + g;
		return;
	}
	buf[t] = hh(it, g);
	__syncthreads();
	b[g] += buf[HT - 1 - t];
	__syncthreads();
	if (t == 0)
		free(buf);
}
__global__ void k_gen(uint32_t *b, const uint32_t *a, uint32_t it)
{
	const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
	b[i] = (b[i] ^ g_tab[i & 255]) + a[i] * c_k[i & 3] + hh(it, i);
}
__global__ void k_mix(uint32_t *c, const uint32_t *b, uint32_t it)
{
	const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
	c[i] = c[i] * 3u + (b[i] ^ c_k[(i + 1) & 3]) + it;
}
__global__ void k_count(uint32_t it)
{
	g_count = g_count * 5u + c_k[0] + it;
}
__global__ void k_fin(uint32_t *a, const uint32_t *d, const uint32_t *b, uint32_t it)
{
	const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
	a[i] = d[(i * 7u) & (N - 1)] + b[i] * 7u + (c_k[3] ^ it);
}

// Host model of the device buffers.
static uint32_t mA[N], mB[N], mC[N], mD[N], mK[4], mTab[256], mCnt;

static void run_phase(int p)
{
	const uint32_t up = (uint32_t)p;
	// Re-initialisation (after the previous phase's reset).
	CK(cudaSetDevice(0));
	CK(cudaFree(0));
	if (p == 1) {
		CK(cudaDeviceSetLimit(cudaLimitMallocHeapSize, HEAP));
		size_t got = 0;
		CK(cudaDeviceGetLimit(&got, cudaLimitMallocHeapSize));
		expect("heap_limit", p, 0, got >= HEAP ? 1 : 0, 1);
	}
	uint32_t cnt = 0;
	CK(cudaMemcpyFromSymbol(&cnt, g_count, sizeof(cnt)));
	expect("count_initial", p, 0, cnt, CNT0);
	mCnt = CNT0;

	// Creation.
	const unsigned sflags = p == 1 ? cudaStreamDefault : cudaStreamNonBlocking;
	cudaStream_t sA, sB;
	CK(cudaStreamCreateWithFlags(&sA, sflags));
	CK(cudaStreamCreateWithFlags(&sB, sflags));
	cudaEvent_t evA, evB, evDone;
	CK(cudaEventCreateWithFlags(&evA, cudaEventDisableTiming));
	CK(cudaEventCreateWithFlags(&evB, cudaEventDisableTiming));
	CK(cudaEventCreateWithFlags(&evDone, cudaEventDisableTiming));
	uint32_t *dA, *dB, *dC, *dD;
	CK(cudaMalloc((void **)&dA, N * 4));
	CK(cudaMalloc((void **)&dB, N * 4));
	if (p == 2) {   // the same default pool, named explicitly (handle queried anew)
		cudaMemPool_t pool;
		CK(cudaDeviceGetDefaultMemPool(&pool, 0));
		CK(cudaMallocFromPoolAsync((void **)&dC, N * 4, pool, sB));
	} else {
		CK(cudaMallocAsync((void **)&dC, N * 4, sB));
	}
	CK(cudaMallocAsync((void **)&dD, N * 4, sA));
	uint32_t *hIn, *hSym, *hOutA, *hOutC, *hCnt;
	CK(cudaMallocHost((void **)&hIn, (size_t)ITERS * N * 4));
	CK(cudaMallocHost((void **)&hSym, ITERS * 4 * 4));
	CK(cudaMallocHost((void **)&hOutA, N * 4));
	CK(cudaMallocHost((void **)&hOutC, N * 4));
	CK(cudaMallocHost((void **)&hCnt, 4));
	// Fresh pinned memory may well be the previous phase's, old values included.
	memset(hOutA, 0x5a, N * 4);
	memset(hOutC, 0x5b, N * 4);
	*hCnt = 0x5c5c5c5cu;

	for (int i = 0; i < 256; i++)
		mTab[i] = val(up, (uint32_t)i, 3);
	CK(cudaMemcpyToSymbol(g_tab, mTab, sizeof(mTab)));
	const uint8_t fill = (uint8_t)(0x10 + 0x31 * p);
	CK(cudaMemsetAsync(dC, fill, N * 4, sB));
	for (int i = 0; i < N; i++)
		mC[i] = fill * 0x01010101u;
	CK(cudaDeviceSynchronize());

	for (int it = 0; it < ITERS; it++) {
		const uint32_t uit = (uint32_t)it, seed = up * 1000u + uit;
		uint32_t *in = hIn + (size_t)it * N, *sym = hSym + it * 4;
		for (int i = 0; i < N; i++)
			in[i] = val(seed, (uint32_t)i, 1);
		for (int j = 0; j < 4; j++)
			sym[j] = val(seed, (uint32_t)j, 7) | 1u;

		// Stream A: input, constants, memset, heap kernel, generator.
		CK(cudaMemcpyAsync(dA, in, N * 4, cudaMemcpyHostToDevice, sA));
		memcpy(mA, in, N * 4);
		CK(cudaMemcpyToSymbolAsync(c_k, sym, 16, 0, cudaMemcpyHostToDevice, sA));
		memcpy(mK, sym, 16);
		const uint8_t v = (uint8_t)(it * 37 + 5);
		CK(cudaMemsetAsync(dB, v, N * 4, sA));
		for (int i = 0; i < N; i++)
			mB[i] = v * 0x01010101u;
		k_heap<<<HB, HT, 0, sA>>>(dB, uit);
		CKL();
		for (uint32_t g = 0; g < (uint32_t)(HB * HT); g++)
			mB[g] += hh(uit, (g & ~(uint32_t)(HT - 1)) | (HT - 1 - (g & (HT - 1))));
		k_gen<<<N / TPB, TPB, 0, sA>>>(dB, dA, uit);
		CKL();
		for (uint32_t i = 0; i < (uint32_t)N; i++)
			mB[i] = (mB[i] ^ mTab[i & 255]) + mA[i] * mK[i & 3] + hh(uit, i);
		CK(cudaEventRecord(evA, sA));

		// Stream B, after A: accumulate, count, copy out to D.
		CK(cudaStreamWaitEvent(sB, evA, 0));
		k_mix<<<N / TPB, TPB, 0, sB>>>(dC, dB, uit);
		CKL();
		for (uint32_t i = 0; i < (uint32_t)N; i++)
			mC[i] = mC[i] * 3u + (mB[i] ^ mK[(i + 1) & 3]) + uit;
		k_count<<<1, 1, 0, sB>>>(uit);
		CKL();
		mCnt = mCnt * 5u + mK[0] + uit;
		CK(cudaMemcpyAsync(dD, dC, N * 4, cudaMemcpyDeviceToDevice, sB));
		memcpy(mD, mC, N * 4);
		CK(cudaEventRecord(evB, sB));

		// Stream A, after B: final kernel reads D; both streams read back.
		CK(cudaStreamWaitEvent(sA, evB, 0));
		k_fin<<<N / TPB, TPB, 0, sA>>>(dA, dD, dB, uit);
		CKL();
		for (uint32_t i = 0; i < (uint32_t)N; i++)
			mA[i] = mD[(i * 7u) & (N - 1)] + mB[i] * 7u + (mK[3] ^ uit);
		CK(cudaMemcpyAsync(hOutA, dA, N * 4, cudaMemcpyDeviceToHost, sA));
		CK(cudaMemcpyAsync(hOutC, dC, N * 4, cudaMemcpyDeviceToHost, sB));
		CK(cudaMemcpyFromSymbolAsync(hCnt, g_count, 4, 0, cudaMemcpyDeviceToHost, sB));
		CK(cudaEventRecord(evDone, sB));
		CK(cudaEventSynchronize(evDone));
		CK(cudaStreamSynchronize(sA));

		const int tag = p * 1000 + it;
		expect_u32("final_A", tag, hOutA, mA, N);
		expect_u32("accum_C", tag, hOutC, mC, N);
		expect("count", tag, 0, *hCnt, mCnt);
		memset(hOutA, 0x5a, N * 4);
		memset(hOutC, 0x5b, N * 4);
		*hCnt = 0x5c5c5c5cu;
	}

	// Read the symbols back synchronously once more, then tear down.
	uint32_t k[4], tab[256];
	CK(cudaMemcpyFromSymbol(k, c_k, sizeof(k)));
	CK(cudaMemcpyFromSymbol(tab, g_tab, sizeof(tab)));
	CK(cudaMemcpyFromSymbol(&cnt, g_count, sizeof(cnt)));
	expect_u32("const_end", p, k, mK, 4);
	expect_u32("tab_end", p, tab, mTab, 256);
	expect("count_end", p, 0, cnt, mCnt);

	// cudaMallocAsync memory survives a reset: free it explicitly first.
	CK(cudaFreeAsync(dC, sB));
	CK(cudaFreeAsync(dD, sB));
	CK(cudaStreamSynchronize(sB));
	// Everything else (streams, events, cudaMalloc and cudaMallocHost memory)
	// is left to the reset; none of those handles is used after it.
	CK(cudaDeviceReset());
	CK(cudaGetLastError());
	printf("phase %d: %d iterations, reset done\n", p, ITERS);
}

int main()
{
	g_name = "reset_reinit";
	for (int p = 0; p < PHASES; p++)
		run_phase(p);
	return finish();
}
