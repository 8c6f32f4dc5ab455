#include "mem_common.cuh"

// alloc_free: allocation inside the repeating work. Per iteration: a
// cudaMallocAsync scratch (size cycling through three values) memset, filled
// and read by kernels, then cudaFreeAsync; a cudaMallocFromPoolAsync buffer
// from an explicit pool; a second cudaMallocAsync that the stream-ordered
// allocator may place at the first one's address; a cudaMalloc'ed temporary
// that a kernel fills and a D2D copy reads, freed with cudaFree right after
// (no sync: cudaFree of cudaMalloc memory may synchronize, and the work
// queued before it must still see the buffer). Every 4th iteration a
// long-lived buffer is read, freed with cudaFree and replaced by a new
// cudaMalloc of the same size (likely the same address) with new contents.
constexpr int ITERS = 72;
constexpr int TB = 256;
constexpr int NOUT = 8192;   // dOut, dOut2 elements
constexpr int NX = 4096;     // long-lived buffer
constexpr int NT = 16384;    // temporary

__global__ void kfill(uint32_t *sc, int n, uint32_t it)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n && (i & 1) == 0)
		sc[i] = (uint32_t)i * it + 1u;
}
__global__ void kuse(const uint32_t *sc, uint32_t *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = sc[i] + sc[n - 1 - i];
}
__global__ void kfill2(uint32_t *p, int n, uint32_t it)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		p[i] = ((uint32_t)i ^ it) * 2654435761u;
}
__global__ void kuse2(const uint32_t *p, uint32_t *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = p[i] + p[(i + 1) % n];
}
__global__ void kadd(const uint32_t *p, uint32_t *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] += p[i];
}
__global__ void kscale(const uint32_t *x, uint32_t *out, int n, uint32_t m)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = x[i] * m;
}
__global__ void kstep(uint32_t *x, int n, uint32_t it)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] += it ^ (uint32_t)i;
}

static uint32_t rOut[NOUT], rOut2[NOUT], rOut3[NX], rOut4[NT], rX[NX], rsc[8192];

int main()
{
	g_name = "alloc_free";
	int dev = 0;
	CK(cudaGetDevice(&dev));
	cudaStream_t s;
	CK(cudaStreamCreate(&s));
	cudaMemPoolProps props = {};
	props.allocType = cudaMemAllocationTypePinned;
	props.handleTypes = cudaMemHandleTypeNone;
	props.location.type = cudaMemLocationTypeDevice;
	props.location.id = dev;
	cudaMemPool_t pool;
	CK(cudaMemPoolCreate(&pool, &props));
	uint64_t thresh = 1ull << 30;
	CK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &thresh));
	uint32_t *dOut, *dOut2, *dOut3, *dOut4, *bufX;
	CK(cudaMalloc((void **)&dOut, NOUT * 4));
	CK(cudaMalloc((void **)&dOut2, NOUT * 4));
	CK(cudaMalloc((void **)&dOut3, NX * 4));
	CK(cudaMalloc((void **)&dOut4, NT * 4));
	CK(cudaMalloc((void **)&bufX, NX * 4));
	CK(cudaMemset(dOut, 0, NOUT * 4));
	CK(cudaMemset(dOut2, 0, NOUT * 4));
	CK(cudaMemset(dOut3, 0, NX * 4));
	CK(cudaMemset(dOut4, 0, NT * 4));
	CK(cudaMemset(bufX, 0, NX * 4));
	CK(cudaDeviceSynchronize());
	uint32_t *hOut, *hOut2, *hOut3, *hOut4;
	CK(cudaMallocHost((void **)&hOut, NOUT * 4));
	CK(cudaMallocHost((void **)&hOut2, NOUT * 4));
	CK(cudaMallocHost((void **)&hOut3, NX * 4));
	CK(cudaMallocHost((void **)&hOut4, NT * 4));

	for (int it = 0; it < ITERS; it++) {
		const uint32_t uit = (uint32_t)it;
		// A: stream-ordered scratch, size cycling.
		const int nA = 4096 + (it % 3) * 1024;
		uint32_t *sc;
		CK(cudaMallocAsync((void **)&sc, nA * 4, s));
		const uint8_t v = (uint8_t)(it & 0x7f);
		CK(cudaMemsetAsync(sc, v, nA * 4, s));
		kfill<<<blocks(nA, TB), TB, 0, s>>>(sc, nA, uit);
		CKL();
		kuse<<<blocks(nA, TB), TB, 0, s>>>(sc, dOut, nA);
		CKL();
		CK(cudaFreeAsync(sc, s));
		for (int i = 0; i < nA; i++)
			rsc[i] = (i & 1) ? 0x01010101u * v : (uint32_t)i * uit + 1u;
		for (int i = 0; i < nA; i++)
			rOut[i] = rsc[i] + rsc[nA - 1 - i];
		// B: explicit pool.
		uint32_t *pp;
		CK(cudaMallocFromPoolAsync((void **)&pp, 8192 * 4, pool, s));
		kfill2<<<blocks(8192, TB), TB, 0, s>>>(pp, 8192, uit);
		CKL();
		kuse2<<<blocks(8192, TB), TB, 0, s>>>(pp, dOut2, 8192);
		CKL();
		CK(cudaFreeAsync(pp, s));
		for (uint32_t i = 0; i < 8192; i++)
			rsc[i] = (i ^ uit) * 2654435761u;
		for (int i = 0; i < 8192; i++)
			rOut2[i] = rsc[i] + rsc[(i + 1) % 8192];
		// C: a second scratch, perhaps at the first one's address.
		uint32_t *sc2;
		CK(cudaMallocAsync((void **)&sc2, 4096 * 4, s));
		kfill2<<<blocks(4096, TB), TB, 0, s>>>(sc2, 4096, uit + 7u);
		CKL();
		kadd<<<blocks(4096, TB), TB, 0, s>>>(sc2, dOut, 4096);
		CKL();
		CK(cudaFreeAsync(sc2, s));
		for (uint32_t i = 0; i < 4096; i++)
			rOut[i] += (i ^ (uit + 7u)) * 2654435761u;
		// D: a cudaMalloc'ed temporary, freed with work on it still queued.
		uint32_t *tmp;
		CK(cudaMalloc((void **)&tmp, NT * 4));
		kfill2<<<blocks(NT, TB), TB, 0, s>>>(tmp, NT, uit * 3u);
		CKL();
		CK(cudaMemcpyAsync(dOut4, tmp, NT * 4, cudaMemcpyDeviceToDevice, s));
		CK(cudaFree(tmp));
		for (uint32_t i = 0; i < (uint32_t)NT; i++)
			rOut4[i] = (i ^ (uit * 3u)) * 2654435761u;
		// E: the long-lived buffer; replaced every 4th iteration.
		if (it % 4 == 3) {
			kscale<<<blocks(NX, TB), TB, 0, s>>>(bufX, dOut3, NX, 3u);
			CKL();
			for (int i = 0; i < NX; i++)
				rOut3[i] = rX[i] * 3u;
			CK(cudaFree(bufX));
			CK(cudaMalloc((void **)&bufX, NX * 4));
			const uint8_t w = (uint8_t)(0x11 * (it & 7));
			CK(cudaMemsetAsync(bufX, w, NX * 4, s));
			for (int i = 0; i < NX; i++)
				rX[i] = 0x01010101u * w;
		}
		kstep<<<blocks(NX, TB), TB, 0, s>>>(bufX, NX, uit);
		CKL();
		for (uint32_t i = 0; i < (uint32_t)NX; i++)
			rX[i] += uit ^ i;
		// F: read back and check.
		CK(cudaMemcpyAsync(hOut, dOut, NOUT * 4, cudaMemcpyDeviceToHost, s));
		CK(cudaMemcpyAsync(hOut2, dOut2, NOUT * 4, cudaMemcpyDeviceToHost, s));
		CK(cudaMemcpyAsync(hOut3, dOut3, NX * 4, cudaMemcpyDeviceToHost, s));
		CK(cudaMemcpyAsync(hOut4, dOut4, NT * 4, cudaMemcpyDeviceToHost, s));
		CK(cudaStreamSynchronize(s));
		expect_u32("out(mallocasync)", it, hOut, rOut, NOUT);
		expect_u32("out2(pool)", it, hOut2, rOut2, NOUT);
		expect_u32("out3(freed-buffer)", it, hOut3, rOut3, NX);
		expect_u32("out4(freed-temp)", it, hOut4, rOut4, NT);
		memset(hOut, 0x71, NOUT * 4);
		memset(hOut2, 0x72, NOUT * 4);
		memset(hOut3, 0x73, NX * 4);
		memset(hOut4, 0x74, NT * 4);
	}
	// The long-lived buffer's final contents.
	CK(cudaMemcpy(hOut3, bufX, NX * 4, cudaMemcpyDeviceToHost));
	expect_u32("bufX-final", ITERS, hOut3, rX, NX);
	CK(cudaFree(bufX));
	CK(cudaMemPoolDestroy(pool));
	return finish();
}
