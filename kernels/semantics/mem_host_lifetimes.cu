#include "mem_common.cuh"
#include <atomic>
#include <sys/mman.h>

// host_lifetimes: host buffers whose allocation or kind changes under a loop
// that otherwise makes the same calls every iteration. Four phases, each with
// its own period, all on one stream:
// A: cudaMallocHost input/output freed with cudaFreeHost and re-allocated
//    every 4 iterations (mostly the same size, so likely the same address;
//    every third time 12 KiB or 1.5 MiB). A kernel writes half of the pinned
//    input through its device pointer, an async H2D copies it, kernels
//    transform it on both sides of two async D2H copies into the pinned output.
// B: an aligned_alloc'ed buffer registered (cudaHostRegister) for 3
//    iterations, then unregistered and free()d, and a NEW allocation (likely
//    at the same address) left pageable for 3 iterations, then freed and a new
//    one registered... The calls are the same in both modes. Registered: a
//    host function enqueued before the H2D writes half of its source (so the
//    copy must read it when it runs). Pageable: the host overwrites the source
//    right after cudaMemcpyAsync returns (documented: staged at return) and
//    reads the D2H result right after that call returns (complete at return).
//    A graph that still treats the address as pinned copies the junk (or
//    leaves the read-back late); one that treats it as pageable after it was
//    registered again misses what the host function wrote.
// C: anonymous mmap'ed memory registered with cudaHostRegisterDefault, used
//    by async copies and by kernels through its device pointer (read and
//    zero-copy write), then unregistered and munmap'ed every 5 iterations and
//    mapped again at the old address as hint (new kernel arguments if it moves).
// D: a cudaHostAllocWriteCombined buffer (re-allocated every 8 iterations, two
//    sizes) that the host only writes: the source of a 4 KiB copy that is
//    rewritten and copied again after an event wait in the middle of the
//    iteration, while a later large copy from it and a kernel are still queued.
// Device state (an accumulator fed by phase A after its event) chains across
// iterations and is read back in phase D. Every result is checked exactly.
constexpr int ITERS = 72;
constexpr int TB = 256;
constexpr int NAMAX = 393216;   // phase A words (1.5 MiB max)
constexpr int NBW = 131072;     // phase B words per region (512 KiB)
constexpr int NC = 262144;      // phase C words per region (1 MiB)
constexpr int NDMAX = 262144;   // phase D large region words (1 MiB max)
constexpr int NS = 1024;        // small regions / accumulator (4 KiB)

__host__ __device__ static uint32_t gen(uint32_t it, uint32_t i)
{
	return mix32(it * 0x9e3779b9u ^ (i * 0x85ebca6bu + 0x165667b1u));
}

__global__ void kAgen(uint32_t *p, int n, int base, uint32_t it)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		p[i] = gen(it, (uint32_t)(base + i));
}
__global__ void kA1(const uint32_t *a, uint32_t *b, int n, uint32_t it)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		b[i] = a[i] * 0x9e3779b1u + (a[n - 1 - i] ^ it);
}
__global__ void kA2(uint32_t *b, int n, uint32_t it)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		b[i] = (b[i] ^ ((uint32_t)i * 0x85ebca6bu)) + it * 3u + 1u;
}
__global__ void kAcc(uint32_t *acc, const uint32_t *b)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < NS)
		acc[i] = acc[i] * 3u + b[i];
}
__global__ void kB(const uint32_t *in, uint32_t *out, uint32_t x)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < NBW)
		out[i] = (in[i] + (in[((uint32_t)i * 3u) & (NBW - 1)] << 1)) ^ x;
}
__global__ void kC1(const uint32_t *mapped_in, const uint32_t *in, uint32_t *tmp, uint32_t it)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < NC)
		tmp[i] = mapped_in[NC - 1 - i] * 3u + (in[i] ^ it);
}
__global__ void kC2(const uint32_t *tmp, uint32_t *mapped_out, uint32_t x)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < NC / 2)
		mapped_out[i] = (tmp[i] ^ x) + (uint32_t)i;
}
__global__ void kD1(uint32_t *l, const uint32_t *s, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		l[i] = l[i] * 0x2545f491u + s[i & (NS - 1)];
}
__global__ void kD2(const uint32_t *l, const uint32_t *s, uint32_t *out, int n, uint32_t x)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = l[i] ^ (s[((uint32_t)i * 5u) & (NS - 1)] + x);
}

static uint32_t rin[NAMAX], r1[NAMAX], r2[NAMAX], rAcc[NS], rs0[NS], rs1[NS];

// Phase B's host function: while the buffer is registered it writes the
// second half of the H2D source, ahead of the copy in stream order.
struct CtxB {
	uint32_t *in;
	int it;
	bool write;
};
static CtxB ctxB;
static void CUDART_CB hfB(void *p)
{
	const CtxB *c = (const CtxB *)p;
	if (c->write)
		for (int i = NBW / 2; i < NBW; i++)
			c->in[i] = val((uint32_t)c->it, (uint32_t)i, 3);
}

static uint32_t *new_malloc(size_t bytes)
{
	uint32_t *p = (uint32_t *)aligned_alloc(4096, bytes);
	if (!p) {
		printf("malloc failed\n");
		exit(2);
	}
	return p;
}

static void wait_query(cudaStream_t s, const char *what, int it)
{
	const double t0 = now_s();
	cudaError_t e;
	while ((e = cudaStreamQuery(s)) == cudaErrorNotReady)
		if (now_s() - t0 > 10)
			hang(what, it);
	CK(e);
	clear_not_ready();
}

int main()
{
	g_name = "host_lifetimes";
	int uva = 0, regok = 0, hostpt = 0;
	CK(cudaDeviceGetAttribute(&uva, cudaDevAttrUnifiedAddressing, 0));
	CK(cudaDeviceGetAttribute(&regok, cudaDevAttrHostRegisterSupported, 0));
	CK(cudaDeviceGetAttribute(&hostpt, cudaDevAttrPageableMemoryAccessUsesHostPageTables, 0));
	if (!uva || !regok) {
		printf("SKIP: needs unified addressing and cudaHostRegister\n");
		return finish();
	}
	// Where registration does not pin (host page tables), B's host writes
	// the whole source itself rather than leave half to the host function.
	const bool hf_writes = hostpt == 0;

	uint32_t *dA, *dB, *dAccum, *dBin, *dBout, *dCin, *dCtmp, *dS, *dL, *dOutD, *hD;
	CK(cudaMalloc((void **)&dA, NAMAX * 4));
	CK(cudaMalloc((void **)&dB, NAMAX * 4));
	CK(cudaMalloc((void **)&dAccum, NS * 4));
	CK(cudaMalloc((void **)&dBin, NBW * 4));
	CK(cudaMalloc((void **)&dBout, NBW * 4));
	CK(cudaMalloc((void **)&dCin, NC * 4));
	CK(cudaMalloc((void **)&dCtmp, NC * 4));
	CK(cudaMalloc((void **)&dS, NS * 4));
	CK(cudaMalloc((void **)&dL, NDMAX * 4));
	CK(cudaMalloc((void **)&dOutD, NDMAX * 4));
	CK(cudaMallocHost((void **)&hD, (NDMAX + NS) * 4));
	CK(cudaMemset(dAccum, 0, NS * 4));
	CK(cudaDeviceSynchronize());
	memset(rAcc, 0, sizeof rAcc);
	cudaStream_t s;
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	cudaEvent_t evA, evD;
	CK(cudaEventCreateWithFlags(&evA, cudaEventDisableTiming));
	CK(cudaEventCreateWithFlags(&evD, cudaEventDisableTiming));

	uint32_t *hAin = nullptr, *hAout = nullptr, *dpAin = nullptr;   // phase A
	int nA = 0;
	uint32_t *pB = nullptr;   // phase B: [in NBW | out NBW]
	bool regB = false;
	uint32_t *pC = nullptr, *dpC = nullptr;   // phase C: [in NC | out NC]
	const size_t CBYTES = (size_t)2 * NC * 4;
	uint32_t *pD = nullptr;   // phase D (write-combined): [small NS | large nD]
	int nD = 0;

	for (int it = 0; it < ITERS; it++) {
		const uint32_t uit = (uint32_t)it;
		const uint8_t junk = (uint8_t)(it * 41 + 7);

		// ---- Phase A: cudaMallocHost / cudaFreeHost every 4 iterations.
		// All work on the old buffers completed at the last iteration's waits.
		if (it % 4 == 0) {
			if (hAin) {
				CK(cudaFreeHost(hAin));
				CK(cudaFreeHost(hAout));
			}
			const int g = it / 4;
			nA = g % 3 != 2 ? 65536 : g % 2 == 0 ? 3072 : NAMAX;
			CK(cudaMallocHost((void **)&hAin, (size_t)nA * 4));
			CK(cudaMallocHost((void **)&hAout, (size_t)2 * nA * 4));
			CK(cudaHostGetDevicePointer((void **)&dpAin, hAin, 0));
		}
		{
			const int h = nA / 2;
			for (int i = 0; i < h; i++)
				hAin[i] = rin[i] = val(uit, (uint32_t)i, 1);
			for (int i = h; i < nA; i++)
				rin[i] = gen(uit, (uint32_t)i);
			kAgen<<<blocks(nA - h, TB), TB, 0, s>>>(dpAin + h, nA - h, h, uit);
			CKL();
			CK(cudaMemcpyAsync(dA, hAin, (size_t)nA * 4, cudaMemcpyHostToDevice, s));
			kA1<<<blocks(nA, TB), TB, 0, s>>>(dA, dB, nA, uit);
			CKL();
			CK(cudaMemcpyAsync(hAout, dB, (size_t)nA * 4, cudaMemcpyDeviceToHost, s));
			kA2<<<blocks(nA, TB), TB, 0, s>>>(dB, nA, uit);
			CKL();
			CK(cudaMemcpyAsync(hAout + nA, dB, (size_t)nA * 4, cudaMemcpyDeviceToHost, s));
			CK(cudaEventRecord(evA, s));
			kAcc<<<blocks(NS, TB), TB, 0, s>>>(dAccum, dB);   // after the event: still queued
			CKL();
			for (int i = 0; i < nA; i++)
				r1[i] = rin[i] * 0x9e3779b1u + (rin[nA - 1 - i] ^ uit);
			for (int i = 0; i < nA; i++)
				r2[i] = (r1[i] ^ ((uint32_t)i * 0x85ebca6bu)) + uit * 3u + 1u;
			for (int i = 0; i < NS; i++)
				rAcc[i] = rAcc[i] * 3u + r2[i];
			CK(cudaEventSynchronize(evA));
			expect_u32("A:kernel-wrote-pinned", it, hAin + h, rin + h, nA - h);
			expect_u32("A:d2h-first", it, hAout, r1, nA);
			expect_u32("A:d2h-second", it, hAout + nA, r2, nA);
			memset(hAin, junk, (size_t)nA * 4);
			memset(hAout, junk ^ 0x11, (size_t)2 * nA * 4);
		}

		// ---- Phase B: registered malloc memory, then a new pageable one.
		if (it % 6 == 0) {
			if (pB)
				free(pB);   // the pageable one
			pB = new_malloc((size_t)2 * NBW * 4);
			CK(cudaHostRegister(pB, (size_t)2 * NBW * 4, cudaHostRegisterPortable));
			regB = true;
		} else if (it % 6 == 3) {
			CK(cudaHostUnregister(pB));
			free(pB);
			pB = new_malloc((size_t)2 * NBW * 4);   // likely the same address, NOT registered
			regB = false;
		}
		{
			uint32_t *in = pB, *out = pB + NBW;
			const bool hf = regB && hf_writes;
			for (int i = 0; i < NBW; i++)
				rin[i] = val(uit, (uint32_t)i, 3);
			memcpy(in, rin, (size_t)(hf ? NBW / 2 : NBW) * 4);
			ctxB.in = in;
			ctxB.it = it;
			ctxB.write = hf;
			CK(cudaLaunchHostFunc(s, hfB, &ctxB));
			CK(cudaMemcpyAsync(dBin, in, NBW * 4, cudaMemcpyHostToDevice, s));
			if (!regB)
				memset(in, junk, NBW * 4);   // pageable: the source was staged at return
			const uint32_t x = val(uit, 0, 4);
			kB<<<blocks(NBW, TB), TB, 0, s>>>(dBin, dBout, x);
			CKL();
			for (uint32_t i = 0; i < (uint32_t)NBW; i++)
				r1[i] = (rin[i] + (rin[(i * 3u) & (NBW - 1)] << 1)) ^ x;
			CK(cudaMemcpyAsync(out, dBout, NBW * 4, cudaMemcpyDeviceToHost, s));
			if (!regB)   // pageable destination: complete at return
				expect_u32("B:pageable-at-return", it, out, r1, NBW);
			CK(cudaStreamSynchronize(s));
			expect_u32(regB ? "B:registered" : "B:pageable", it, out, r1, NBW);
			memset(pB, junk ^ 0x22, (size_t)2 * NBW * 4);
		}

		// ---- Phase C: mmap + cudaHostRegisterDefault, remapped every 5.
		if (it % 5 == 0) {
			void *hint = pC;
			if (pC) {
				CK(cudaHostUnregister(pC));
				if (munmap(pC, CBYTES) != 0) {
					printf("munmap failed\n");
					return 2;
				}
			}
			void *m = mmap(hint, CBYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (m == MAP_FAILED) {
				printf("mmap failed\n");
				return 2;
			}
			pC = (uint32_t *)m;
			CK(cudaHostRegister(pC, CBYTES, cudaHostRegisterDefault));
			CK(cudaHostGetDevicePointer((void **)&dpC, pC, 0));
		}
		{
			for (int i = 0; i < NC; i++)
				pC[i] = rin[i] = val(uit, (uint32_t)i, 5);
			CK(cudaMemcpyAsync(dCin, pC, NC * 4, cudaMemcpyHostToDevice, s));
			kC1<<<blocks(NC, TB), TB, 0, s>>>(dpC, dCin, dCtmp, uit);
			CKL();
			const uint32_t x = val(uit, 0, 6);
			kC2<<<blocks(NC / 2, TB), TB, 0, s>>>(dCtmp, dpC + NC, x);
			CKL();
			CK(cudaMemcpyAsync(pC + NC + NC / 2, dCtmp + NC / 2, NC / 2 * 4, cudaMemcpyDeviceToHost, s));
			for (int i = 0; i < NC; i++)
				r1[i] = rin[NC - 1 - i] * 3u + (rin[i] ^ uit);
			for (int i = 0; i < NC / 2; i++)
				r1[i] = (r1[i] ^ x) + (uint32_t)i;
			wait_query(s, "C:streamquery", it);
			expect_u32("C:mmap-registered", it, pC + NC, r1, NC);
			memset(pC, junk ^ 0x33, CBYTES);
		}

		// ---- Phase D: write-combined copy source, re-allocated every 8.
		if (it % 8 == 0) {
			if (pD)
				CK(cudaFreeHost(pD));
			nD = (it / 8) % 2 == 0 ? NDMAX : 196608;
			CK(cudaHostAlloc((void **)&pD, (size_t)(NS + nD) * 4, cudaHostAllocWriteCombined));
		}
		{
			// The host only stores to pD (never loads); the fences drain the
			// write-combining buffers before the copies are issued.
			for (int i = 0; i < NS; i++)
				pD[i] = rs0[i] = val(uit, (uint32_t)i, 7);
			std::atomic_thread_fence(std::memory_order_seq_cst);
			CK(cudaMemcpyAsync(dS, pD, NS * 4, cudaMemcpyHostToDevice, s));
			CK(cudaEventRecord(evD, s));
			for (int i = 0; i < nD; i++)
				pD[NS + i] = rin[i] = val(uit, (uint32_t)i, 8);
			std::atomic_thread_fence(std::memory_order_seq_cst);
			CK(cudaMemcpyAsync(dL, pD + NS, (size_t)nD * 4, cudaMemcpyHostToDevice, s));
			kD1<<<blocks(nD, TB), TB, 0, s>>>(dL, dS, nD);
			CKL();
			CK(cudaEventSynchronize(evD));   // the small copy is done: its source is free
			for (int i = 0; i < NS; i++)
				pD[i] = rs1[i] = val(uit, (uint32_t)i, 9);
			std::atomic_thread_fence(std::memory_order_seq_cst);
			CK(cudaMemcpyAsync(dS, pD, NS * 4, cudaMemcpyHostToDevice, s));   // after kD1 read dS
			const uint32_t x = val(uit, 0, 10);
			kD2<<<blocks(nD, TB), TB, 0, s>>>(dL, dS, dOutD, nD, x);
			CKL();
			CK(cudaMemcpyAsync(hD, dOutD, (size_t)nD * 4, cudaMemcpyDeviceToHost, s));
			CK(cudaMemcpyAsync(hD + NDMAX, dAccum, NS * 4, cudaMemcpyDeviceToHost, s));
			for (uint32_t i = 0; i < (uint32_t)nD; i++)
				r1[i] = (rin[i] * 0x2545f491u + rs0[i & (NS - 1)]) ^ (rs1[(i * 5u) & (NS - 1)] + x);
			CK(cudaStreamSynchronize(s));
			expect_u32("D:write-combined", it, hD, r1, nD);
			expect_u32("D:accumulator", it, hD + NDMAX, rAcc, NS);
			memset(hD, junk ^ 0x44, (size_t)(NDMAX + NS) * 4);
		}
	}

	CK(cudaStreamSynchronize(s));
	CK(cudaFreeHost(hAin));
	CK(cudaFreeHost(hAout));
	if (regB)
		CK(cudaHostUnregister(pB));
	free(pB);
	CK(cudaHostUnregister(pC));
	munmap(pC, CBYTES);
	CK(cudaFreeHost(pD));
	CK(cudaFreeHost(hD));
	return finish();
}
