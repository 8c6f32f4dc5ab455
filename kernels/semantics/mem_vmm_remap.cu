#include "mem_common.cuh"

// vmm_remap: the same virtual address backed by different physical memory over
// time (driver VMM, -lcuda), and a stream-ordered pool trimmed between
// iterations. One VA reservation holds VA1 (remapped again and again) and
// W0..W3, fixed mappings of handles P0..P3; P4 and P5 are only ever mapped at
// VA1, so their contents live in the handle alone while unmapped. VA2 = W0
// aliases P0, so whenever VA1 maps P0 the two VAs name the same memory.
//  1. remap: per iteration, kernels update VA1, VA2 and (one kernel) W1..W3,
//     a D2D copy snapshots VA1; a synchronize (cuStreamSynchronize,
//     cudaStreamSynchronize or cudaEventSynchronize, taking turns); every 3rd
//     iteration VA1 is unmapped and a DIFFERENT handle mapped there; then a
//     kernel on VA1 (the same pointer args) that reads VA2, a second snapshot,
//     and read-backs, one of them through VA2 of the window VA1 wrote. The
//     newly mapped handle must hold what was written to it earlier, through
//     W1..W3 or through VA1 at an earlier time.
//  2. replay: 30 identical iterations on VA1, a remap, 30 more, a remap to P0
//     (the alias of VA2), 30 more: a loop learned and replayed with the same
//     kernel args must follow the new backing after each remap.
//  3. pool: cudaMallocAsync (device pool set to an explicit pool) and
//     cudaMallocFromPoolAsync of sizes that change every iteration, a free in
//     stream order followed by an allocation that may reuse its memory,
//     cudaMemPoolTrimTo and a changing release threshold between iterations.
// The host models every handle's contents; all read-backs are checked exactly.
// An interposer that lets work issued before an unmap touch the new backing
// (or work issued after it the old one), that keeps stale contents for a
// mapping, or that reorders pool allocations and frees, gives a wrong value.
// cuMemUnmap's documentation (cuda.h): "The range must be the entire
// contiguous address range that was mapped to. [...] When cuMemUnmap returns
// successfully the address range is converted to an address reservation and
// can be used for a future calls to cuMemMap. Any new mapping to this virtual
// address will need to have access granted through cuMemSetAccess", with
// \note_sync; it promises nothing about work still in flight on the range, so
// the program synchronizes the stream before every unmap.
#include <cuda.h>
#include <vector>

#define CU(x) cu_((x), #x, __LINE__)
static void cu_(CUresult r, const char *what, int line)
{
	if (r != CUDA_SUCCESS) {
		const char *n = "?", *m = "?";
		cuGetErrorName(r, &n);
		cuGetErrorString(r, &m);
		printf("CUDA_ERROR line %d: %s: %s (%s)\n", line, what, n, m);
		fflush(stdout);
		exit(2);
	}
}

constexpr int TB = 256;
constexpr int NH = 6;          // physical handles P0..P5
constexpr int NWM = 4;         // P0..P3 also have fixed mappings W0..W3
constexpr int NW = 32768;      // window, elements
constexpr int IT1 = 60, IT2 = 30, IT3 = 48;
constexpr int NO = 65536;      // pool phase output, elements
constexpr int PGRID = 256;

__host__ __device__ inline uint32_t hh(uint32_t a, uint32_t b)
{
	return mix32((a * 0x9e3779b9u) ^ ((b + 0x7f4a7c15u) * 0x85ebca6bu));
}

__global__ void kInit(uint32_t *p, long n, uint32_t seed)
{
	for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
		p[i] = hh(seed, (uint32_t)i);
}
__global__ void kUpd(uint32_t *x, uint32_t seed, uint32_t mul)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	x[i] = x[i] * mul + hh(seed, i);
}
__global__ void kSide(uint32_t *w1, uint32_t *w2, uint32_t *w3, uint32_t seed)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	w1[i] = w1[i] * 7u + hh(seed + 1u, i);
	w2[i] = w2[i] * 7u + hh(seed + 2u, i);
	w3[i] = w3[i] * 7u + hh(seed + 3u, i);
}
// y and z are disjoint memory (different handles, or different halves of P0).
__global__ void kMix(uint32_t *y, const uint32_t *z, uint32_t seed)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	y[i] = (y[i] ^ (z[i] * 9u)) + hh(seed, i);
}
__global__ void kFill(uint32_t *p, long n, uint32_t seed)
{
	for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
		p[i] = hh(seed, (uint32_t)i);
}
__global__ void kDerive(uint32_t *b, long nb, const uint32_t *a, long na, uint32_t seed)
{
	for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < nb; i += (long)gridDim.x * blockDim.x)
		b[i] = a[i % na] * 7u + hh(seed, (uint32_t)i);
}
__global__ void kComb(uint32_t *out, const uint32_t *b, long nb, const uint32_t *c, long nc)
{
	long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
	if (i < NO)
		out[i] = b[i % nb] ^ c[(i * 7) % nc];
}

static std::vector<uint32_t> phys[NH];   // host model of every handle
static uint32_t R1[NW], R2[NW];

static void m_upd(int h, long off, uint32_t seed, uint32_t mul)
{
	for (int i = 0; i < NW; i++)
		phys[h][off + i] = phys[h][off + i] * mul + hh(seed, i);
}
static void m_mix(int hy, long offy, int hz, long offz, uint32_t seed)
{
	for (int i = 0; i < NW; i++)
		phys[hy][offy + i] = (phys[hy][offy + i] ^ (phys[hz][offz + i] * 9u)) + hh(seed, i);
}

static size_t S;                         // one mapping's bytes
static CUmemGenericAllocationHandle P[NH];
static CUmemAccessDesc acc;

static void map_at(CUdeviceptr va, int h)
{
	CU(cuMemMap(va, S, 0, P[h], 0));
	CU(cuMemSetAccess(va, S, &acc, 1));
}

int main()
{
	g_name = "vmm_remap";
	int dev = 0;
	CK(cudaGetDevice(&dev));
	CK(cudaFree(0));   // the primary context, current for the driver calls too
	cudaStream_t s;
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	cudaEvent_t ev;
	CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));

	CUmemAllocationProp prop = {};
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = dev;
	size_t g = 0;
	CU(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
	S = ((size_t(1) << 20) + g - 1) / g * g;   // >= 1 MiB, a multiple of the granularity
	const long E = (long)(S / 4);              // elements per handle
	const long offA = 4096, offC = E / 2 + 8192;   // VA1's window; VA2's own window (other half)
	acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	acc.location.id = dev;
	acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;

	CUdeviceptr base;
	CU(cuMemAddressReserve(&base, S * (1 + NWM), g, 0, 0));
	const CUdeviceptr VA1 = base;
	CUdeviceptr W[NWM];
	for (int k = 0; k < NWM; k++)
		W[k] = base + S * (1 + k);
	const CUdeviceptr VA2 = W[0];
	for (int h = 0; h < NH; h++)
		CU(cuMemCreate(&P[h], S, &prop, 0));
	for (int k = 0; k < NWM; k++)
		map_at(W[k], k);

	// Fill every handle; P4 and P5 through VA1, mapped one after the other.
	for (int h = 0; h < NH; h++) {
		phys[h].resize(E);
		for (long i = 0; i < E; i++)
			phys[h][i] = hh(0x1000u + h, (uint32_t)i);
		if (h >= NWM)
			map_at(VA1, h);
		kInit<<<PGRID, TB, 0, s>>>((uint32_t *)(h < NWM ? W[h] : VA1), E, 0x1000u + h);
		CKL();
		if (h >= NWM) {
			CK(cudaStreamSynchronize(s));
			CU(cuMemUnmap(VA1, S));
		}
	}
	int cur = 4;
	map_at(VA1, cur);

	uint32_t *dRes, *dRes2, *h1, *h2, *h3;
	CK(cudaMalloc((void **)&dRes, NW * 4));
	CK(cudaMalloc((void **)&dRes2, NW * 4));
	CK(cudaMallocHost((void **)&h1, NW * 4));
	CK(cudaMallocHost((void **)&h2, NW * 4));
	CK(cudaMallocHost((void **)&h3, NW * 4));
	uint32_t *v1 = (uint32_t *)VA1, *v2 = (uint32_t *)VA2;

	// 1. remap every 3rd iteration, between two halves of the iteration.
	int remaps = 0;
	for (int it = 0; it < IT1; it++) {
		const uint32_t sA = val(it, 0, 1), sC = val(it, 0, 2), sS = val(it, 0, 3), sB = val(it, 0, 4);
		kUpd<<<NW / TB, TB, 0, s>>>(v1 + offA, sA, 3u);
		CKL();
		m_upd(cur, offA, sA, 3u);
		kUpd<<<NW / TB, TB, 0, s>>>(v2 + offC, sC, 5u);
		CKL();
		m_upd(0, offC, sC, 5u);
		kSide<<<NW / TB, TB, 0, s>>>((uint32_t *)W[1] + offA, (uint32_t *)W[2] + offA, (uint32_t *)W[3] + offA, sS);
		CKL();
		for (int k = 1; k <= 3; k++)
			m_upd(k, offA, sS + (uint32_t)k, 7u);
		CK(cudaMemcpyAsync(dRes, v1 + offA, NW * 4, cudaMemcpyDeviceToDevice, s));
		memcpy(R1, &phys[cur][offA], NW * 4);
		switch (it % 3) {
		case 0: CU(cuStreamSynchronize((CUstream)s)); break;
		case 1: CK(cudaStreamSynchronize(s)); break;
		default:
			CK(cudaEventRecord(ev, s));
			CK(cudaEventSynchronize(ev));
			break;
		}
		if (it % 3 == 2) {   // all work on VA1 is complete: give it another handle
			CU(cuMemUnmap(VA1, S));
			cur = (cur + 5) % NH;
			map_at(VA1, cur);
			remaps++;
		}
		kMix<<<NW / TB, TB, 0, s>>>(v1 + offA, v2 + offC, sB);
		CKL();
		m_mix(cur, offA, 0, offC, sB);
		CK(cudaMemcpyAsync(dRes2, v1 + offA, NW * 4, cudaMemcpyDeviceToDevice, s));
		memcpy(R2, &phys[cur][offA], NW * 4);
		CK(cudaMemcpyAsync(h1, dRes, NW * 4, cudaMemcpyDeviceToHost, s));
		CK(cudaMemcpyAsync(h2, dRes2, NW * 4, cudaMemcpyDeviceToHost, s));
		CK(cudaMemcpyAsync(h3, v2 + offA, NW * 4, cudaMemcpyDeviceToHost, s));   // P0 where VA1 writes when aliased
		CK(cudaStreamSynchronize(s));
		expect_u32("remap.before", it, h1, R1, NW);
		expect_u32("remap.after", it, h2, R2, NW);
		expect_u32("remap.alias", it, h3, &phys[0][offA], NW);
		memset(h1, 0x5a, NW * 4);
		memset(h2, 0x5b, NW * 4);
		memset(h3, 0x5c, NW * 4);
	}
	expect("remap.count", 0, 0, (uint64_t)remaps, IT1 / 3);

	// 2. a loop learned on one backing, then replayed on another.
	const int seg[3] = {5, 3, 0};   // phase 1 leaves VA1 on P2
	for (int sg = 0; sg < 3; sg++) {
		CK(cudaStreamSynchronize(s));
		CU(cuMemUnmap(VA1, S));
		cur = seg[sg];
		map_at(VA1, cur);
		for (int j = 0; j < IT2; j++) {
			const int it = sg * IT2 + j;
			const uint32_t s1 = val(it, 0, 5), s2 = val(it, 0, 6);
			kUpd<<<NW / TB, TB, 0, s>>>(v1 + offA, s1, 11u);
			CKL();
			m_upd(cur, offA, s1, 11u);
			kMix<<<NW / TB, TB, 0, s>>>(v1 + offA, v2 + offC, s2);
			CKL();
			m_mix(cur, offA, 0, offC, s2);
			CK(cudaMemcpyAsync(h1, v1 + offA, NW * 4, cudaMemcpyDeviceToHost, s));
			CK(cudaMemcpyAsync(h3, v2 + offA, NW * 4, cudaMemcpyDeviceToHost, s));
			CK(cudaStreamSynchronize(s));
			expect_u32("replay.va1", it, h1, &phys[cur][offA], NW);
			expect_u32("replay.va2", it, h3, &phys[0][offA], NW);
			memset(h1, 0x5d, NW * 4);
			memset(h3, 0x5e, NW * 4);
		}
	}
	// Every handle's two windows, read through whatever maps it now or later.
	for (int h = 0; h < NH; h++) {
		CUdeviceptr va = h < NWM ? W[h] : VA1;
		if (h >= NWM) {
			CK(cudaStreamSynchronize(s));
			CU(cuMemUnmap(VA1, S));
			map_at(VA1, h);
		}
		CK(cudaMemcpyAsync(h1, (uint32_t *)va + offA, NW * 4, cudaMemcpyDeviceToHost, s));
		CK(cudaMemcpyAsync(h2, (uint32_t *)va + offC, NW * 4, cudaMemcpyDeviceToHost, s));
		CK(cudaStreamSynchronize(s));
		expect_u32("final.a", h, h1, &phys[h][offA], NW);
		expect_u32("final.c", h, h2, &phys[h][offC], NW);
	}

	// 3. stream-ordered pool, trimmed between iterations.
	cudaMemPoolProps pp = {};
	pp.allocType = cudaMemAllocationTypePinned;
	pp.handleTypes = cudaMemHandleTypeNone;
	pp.location.type = cudaMemLocationTypeDevice;
	pp.location.id = dev;
	cudaMemPool_t pool, defpool;
	CK(cudaMemPoolCreate(&pool, &pp));
	CK(cudaDeviceGetDefaultMemPool(&defpool, dev));
	CK(cudaDeviceSetMemPool(dev, pool));   // cudaMallocAsync now draws from it
	uint32_t *dOut, *hOut;
	CK(cudaMalloc((void **)&dOut, NO * 4));
	CK(cudaMallocHost((void **)&hOut, NO * 4));
	std::vector<uint32_t> ref(NO);
	for (int it = 0; it < IT3; it++) {
		if (it % 8 == 0) {
			cuuint64_t thr = (it % 16 == 0) ? 0 : (cuuint64_t)4 << 20;
			CK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &thr));
		}
		const long na = 65536 + val(it, 0, 7) % 983040, nb = 65536 + val(it, 0, 8) % 983040,
			   nc = 65536 + val(it, 0, 9) % 983040;
		const uint32_t s1 = val(it, 0, 10), s2 = val(it, 0, 11), s3 = val(it, 0, 12);
		uint32_t *a, *b, *c;
		CK(cudaMallocAsync((void **)&a, na * 4, s));
		kFill<<<PGRID, TB, 0, s>>>(a, na, s1);
		CKL();
		CK(cudaMallocFromPoolAsync((void **)&b, nb * 4, pool, s));
		kDerive<<<PGRID, TB, 0, s>>>(b, nb, a, na, s2);
		CKL();
		CK(cudaFreeAsync(a, s));
		CK(cudaMallocAsync((void **)&c, nc * 4, s));   // may be a's memory, freed before it in stream order
		kFill<<<PGRID, TB, 0, s>>>(c, nc, s3);
		CKL();
		kComb<<<NO / TB, TB, 0, s>>>(dOut, b, nb, c, nc);
		CKL();
		CK(cudaFreeAsync(b, s));
		CK(cudaFreeAsync(c, s));
		CK(cudaMemcpyAsync(hOut, dOut, NO * 4, cudaMemcpyDeviceToHost, s));
		CK(cudaStreamSynchronize(s));
		for (long i = 0; i < NO; i++) {
			const long j = i % nb;
			ref[i] = (hh(s1, (uint32_t)(j % na)) * 7u + hh(s2, (uint32_t)j)) ^ hh(s3, (uint32_t)((i * 7) % nc));
		}
		expect_u32("pool.out", it, hOut, ref.data(), NO);
		memset(hOut, 0x5f, NO * 4);
		// Queried, not printed: an interposer that holds frees may see other values.
		cuuint64_t reserved = 0, used = 0;
		CK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved));
		CK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used));
		(void)reserved;
		(void)used;
		CK(cudaMemPoolTrimTo(pool, (it % 3 == 0) ? 0 : (size_t)1 << 20));
	}
	CK(cudaDeviceSetMemPool(dev, defpool));
	CK(cudaMemPoolDestroy(pool));

	// Clean up: every mapping, every handle, the reservation.
	CK(cudaStreamSynchronize(s));
	CU(cuMemUnmap(VA1, S));
	for (int k = 0; k < NWM; k++)
		CU(cuMemUnmap(W[k], S));
	for (int h = 0; h < NH; h++)
		CU(cuMemRelease(P[h]));
	CU(cuMemAddressFree(base, S * (1 + NWM)));
	CK(cudaFree(dRes));
	CK(cudaFree(dRes2));
	CK(cudaFree(dOut));
	CK(cudaFreeHost(h1));
	CK(cudaFreeHost(h2));
	CK(cudaFreeHost(h3));
	CK(cudaFreeHost(hOut));
	CK(cudaEventDestroy(ev));
	CK(cudaStreamDestroy(s));
	CK(cudaGetLastError());
	return finish();
}
