#include "mem_common.cuh"

// symbols: __device__ and __constant__ variables written every iteration with
// a different value: blocking cudaMemcpyToSymbol from pageable memory (and
// from a stack variable, rewritten as soon as the call returns), a kernel that
// reads and modifies them, blocking cudaMemcpyFromSymbol into pageable memory;
// then, on a stream, cudaMemcpyToSymbolAsync into __constant__ memory from a
// pinned and (partially, at a moving offset) from a pageable buffer with a
// kernel reading the table after each, device-to-device copies to and from a
// symbol at moving offsets, a memset through cudaGetSymbolAddress, and
// cudaMemcpyFromSymbolAsync back.
constexpr int ITERS = 70;
constexpr int NC = 2048;   // outputs of k_const
constexpr int NSRC = 1024;

__constant__ uint32_t c_tab[64];
__device__ uint32_t g_dev[256];
__device__ unsigned long long g_scalar;

__global__ void k_dev(uint32_t *out)
{
	int i = threadIdx.x;
	unsigned long long sc = g_scalar;
	uint32_t g = g_dev[i];
	out[i] = g + (uint32_t)(sc >> (i & 31));
	g_dev[i] = g * 2u + 1u;
	__syncthreads();
	if (i == 0)
		g_scalar = sc + 7ull;
}
__global__ void k_const(uint32_t *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = c_tab[i & 63] * (uint32_t)(i + 1) + c_tab[(i * 5) & 63];
}

static uint32_t rdev[256], rctab[64], rsrc[NSRC], rout[NC];
static uint32_t pv[256], pg[16], pback[256], hOut2[256];   // pageable

static void ref_const(const uint32_t *tab)
{
	for (int i = 0; i < NC; i++)
		rout[i] = tab[i & 63] * (uint32_t)(i + 1) + tab[(i * 5) & 63];
}

int main()
{
	g_name = "symbols";
	uint32_t *dOut0, *dOut1, *dOut2, *dSrc, *dDst, *pin, *pinback, *hp0, *hp1, *hpD;
	CK(cudaMalloc((void **)&dOut0, NC * 4));
	CK(cudaMalloc((void **)&dOut1, NC * 4));
	CK(cudaMalloc((void **)&dOut2, 256 * 4));
	CK(cudaMalloc((void **)&dSrc, NSRC * 4));
	CK(cudaMalloc((void **)&dDst, 256 * 4));
	CK(cudaMallocHost((void **)&pin, 64 * 4));
	CK(cudaMallocHost((void **)&pinback, 64 * 4));
	CK(cudaMallocHost((void **)&hp0, NC * 4));
	CK(cudaMallocHost((void **)&hp1, NC * 4));
	CK(cudaMallocHost((void **)&hpD, 256 * 4));
	for (int i = 0; i < NSRC; i++)
		rsrc[i] = val(999, i, 9);
	CK(cudaMemcpy(dSrc, rsrc, NSRC * 4, cudaMemcpyHostToDevice));
	void *gp;
	CK(cudaGetSymbolAddress(&gp, g_dev));
	cudaStream_t s;
	CK(cudaStreamCreate(&s));

	for (int it = 0; it < ITERS; it++) {
		const uint8_t junk = (uint8_t)(it * 13 + 1);
		// Phase 1: blocking calls, legacy stream.
		for (int j = 0; j < 256; j++)
			pv[j] = rdev[j] = val(it, j, 1);
		CK(cudaMemcpyToSymbol(g_dev, pv, sizeof pv));
		memset(pv, junk, sizeof pv);
		unsigned long long sc = ((unsigned long long)val(it, 0, 2) << 32) | val(it, 1, 2);
		const unsigned long long rsc = sc;
		CK(cudaMemcpyToSymbol(g_scalar, &sc, sizeof sc));
		sc = 0x0101010101010101ull * junk;
		k_dev<<<1, 256>>>(dOut2);
		CKL();
		CK(cudaMemcpyFromSymbol(pback, g_dev, sizeof pback));
		for (int j = 0; j < 256; j++)
			expect("p1:from-symbol", it, j, pback[j], rdev[j] * 2u + 1u);
		unsigned long long sb = 0;
		CK(cudaMemcpyFromSymbol(&sb, g_scalar, sizeof sb));
		expect("p1:scalar", it, 0, sb, rsc + 7ull);
		CK(cudaMemcpy(hOut2, dOut2, sizeof hOut2, cudaMemcpyDeviceToHost));
		for (int j = 0; j < 256; j++)
			expect("p1:kernel-read", it, j, hOut2[j], rdev[j] + (uint32_t)(rsc >> (j & 31)));
		for (int j = 0; j < 256; j++)
			rdev[j] = rdev[j] * 2u + 1u;
		memset(pback, junk, sizeof pback);
		memset(hOut2, junk, sizeof hOut2);

		// Phase 2: stream s.
		for (int j = 0; j < 64; j++)
			pin[j] = rctab[j] = val(it, j, 3);
		CK(cudaMemcpyToSymbolAsync(c_tab, pin, 64 * 4, 0, cudaMemcpyHostToDevice, s));
		k_const<<<NC / 256, 256, 0, s>>>(dOut0, NC);
		CKL();
		ref_const(rctab);
		const int off = (it % 4) * 16;
		for (int j = 0; j < 16; j++)
			pg[j] = rctab[off + j] = val(it, j, 4);
		CK(cudaMemcpyToSymbolAsync(c_tab, pg, sizeof pg, off * 4, cudaMemcpyHostToDevice, s));
		memset(pg, junk, sizeof pg);   // pageable: staged at return
		k_const<<<NC / 256, 256, 0, s>>>(dOut1, NC);
		CKL();
		const int soff = (it * 37) % (NSRC - 64);
		CK(cudaMemcpyToSymbolAsync(g_dev, dSrc + soff, 64 * 4, 128 * 4, cudaMemcpyDeviceToDevice, s));
		for (int j = 0; j < 64; j++)
			rdev[128 + j] = rsrc[soff + j];
		const int mo = it % 200;
		CK(cudaMemsetAsync((char *)gp + 4 * mo, it & 0xff, 16, s));
		for (int j = 0; j < 4; j++)
			rdev[mo + j] = 0x01010101u * (uint32_t)(it & 0xff);
		CK(cudaMemcpyFromSymbolAsync(dDst, g_dev, 256 * 4, 0, cudaMemcpyDeviceToDevice, s));
		CK(cudaMemcpyFromSymbolAsync(pinback, c_tab, 64 * 4, 0, cudaMemcpyDeviceToHost, s));
		CK(cudaMemcpyAsync(hp0, dOut0, NC * 4, cudaMemcpyDeviceToHost, s));
		CK(cudaMemcpyAsync(hp1, dOut1, NC * 4, cudaMemcpyDeviceToHost, s));
		CK(cudaMemcpyAsync(hpD, dDst, 256 * 4, cudaMemcpyDeviceToHost, s));
		CK(cudaStreamSynchronize(s));
		expect_u32("p2:const-before", it, hp0, rout, NC);   // rout: table before the partial update
		ref_const(rctab);
		expect_u32("p2:const-after-partial", it, hp1, rout, NC);
		expect_u32("p2:const-readback", it, pinback, rctab, 64);
		expect_u32("p2:dev-symbol-d2d", it, hpD, rdev, 256);
		memset(pin, junk, 64 * 4);
		memset(pinback, junk, 64 * 4);
		memset(hp0, junk, NC * 4);
		memset(hp1, junk, NC * 4);
		memset(hpD, junk, 256 * 4);
	}
	return finish();
}
