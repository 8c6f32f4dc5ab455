#include "mem_common.cuh"

// pageable_rewrite: pageable (malloc) host memory on both sides of copies.
// Documented (CUDA "API synchronization behavior"): cudaMemcpyAsync from
// pageable memory has staged the source when it returns, so the host
// rewrites each source right after the call (the same 4 KiB buffer feeds two
// copies of one iteration); a copy into pageable memory returns only once it
// is complete, so the host reads it right after the call, with no stream sync.
// Sizes: 4 KiB, 256 KiB, a 2D copy, and 1.5 MiB / 2 MiB (above 1 MiB, where a
// recorder might treat them differently from the small ones that are
// interleaved with them). A blocking cudaMemcpy from pageable memory too.
constexpr int SMALL = 1024;    // 4 KiB
constexpr int MID = 65536;     // 256 KiB
constexpr int BIG = 393216;    // 1.5 MiB
constexpr int BIGBUF = 524288; // 2 MiB
constexpr int ITERS = 64;
constexpr int TB = 256;
// 2D H2D: rows of 64 words from a pageable source of pitch 100 words into dM
// at pitch 256 words; 2D D2H: rows of 64 words from dBig at pitch 512 words
// into a pageable destination of pitch 80 words (its padding must survive).
constexpr int R2 = 16, W2 = 64, SP2 = 100, DP2 = 256, BP2 = 512, HP2 = 80;

__global__ void k_mid(uint32_t *m, const uint32_t *s1, const uint32_t *s2, int n, uint32_t it)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		m[i] = (m[i] + s1[i & (SMALL - 1)] * 3u) ^ (s2[((uint32_t)i * 7u) & (SMALL - 1)] + it);
}
__global__ void k_bigpre(uint32_t *b, int n, uint32_t it)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		b[i] = (uint32_t)i * 5u + it;
}
__global__ void k_bigmix(uint32_t *b, const uint32_t *m, int n, uint32_t it)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		b[i] ^= m[i & (MID - 1)] + it;
}
__global__ void k_small(const uint32_t *s, uint32_t *b, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		b[i] += s[i];
}
__global__ void k_mid2(uint32_t *m, const uint32_t *s2, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		m[i] += s2[i & (SMALL - 1)] ^ 0x9e3779b9u;
}

static uint32_t rS1[SMALL], rS2[SMALL], rM[MID], rBig[BIGBUF];

int main()
{
	g_name = "pageable_rewrite";
	uint32_t *hs = (uint32_t *)malloc(SMALL * 4), *hm = (uint32_t *)malloc(MID * 4);
	uint32_t *hb = (uint32_t *)malloc(BIG * 4), *h2s = (uint32_t *)malloc(R2 * SP2 * 4);
	uint32_t *hds = (uint32_t *)malloc(SMALL * 4), *h2d = (uint32_t *)malloc(R2 * HP2 * 4);
	uint32_t *hdb = (uint32_t *)malloc(BIGBUF * 4), *hdm = (uint32_t *)malloc(MID * 4);
	if (!hs || !hm || !hb || !h2s || !hds || !h2d || !hdb || !hdm) {
		printf("malloc failed\n");
		return 2;
	}
	uint32_t *dS1, *dS2, *dM, *dBig;
	CK(cudaMalloc((void **)&dS1, SMALL * 4));
	CK(cudaMalloc((void **)&dS2, SMALL * 4));
	CK(cudaMalloc((void **)&dM, MID * 4));
	CK(cudaMalloc((void **)&dBig, BIGBUF * 4));
	cudaStream_t s;
	CK(cudaStreamCreate(&s));
	for (int i = 0; i < R2 * HP2; i++)
		h2d[i] = 0x77777777u;

	for (int it = 0; it < ITERS; it++) {
		const uint8_t junk = (uint8_t)(it * 17 + 3);
		// 1, 2: the same pageable buffer is the source of two copies.
		for (int i = 0; i < SMALL; i++)
			hs[i] = rS1[i] = val(it, i, 1);
		CK(cudaMemcpyAsync(dS1, hs, SMALL * 4, cudaMemcpyHostToDevice, s));
		memset(hs, junk, SMALL * 4);
		for (int i = 0; i < SMALL; i++)
			hs[i] = rS2[i] = val(it, i, 2);
		CK(cudaMemcpyAsync(dS2, hs, SMALL * 4, cudaMemcpyHostToDevice, s));
		memset(hs, junk ^ 0x5a, SMALL * 4);
		// 3: 256 KiB.
		for (int i = 0; i < MID; i++)
			hm[i] = rM[i] = val(it, i, 3);
		CK(cudaMemcpyAsync(dM, hm, MID * 4, cudaMemcpyHostToDevice, s));
		memset(hm, junk, MID * 4);
		// 4: 2D from pageable, into dM at a moving offset.
		const int X = (it * 1031) % (MID - R2 * DP2);
		for (int i = 0; i < R2 * SP2; i++)
			h2s[i] = val(it, i, 4);
		for (int r = 0; r < R2; r++)
			for (int c = 0; c < W2; c++)
				rM[X + r * DP2 + c] = h2s[r * SP2 + c];
		CK(cudaMemcpy2DAsync(dM + X, DP2 * 4, h2s, SP2 * 4, W2 * 4, R2, cudaMemcpyHostToDevice, s));
		memset(h2s, junk, R2 * SP2 * 4);
		// 5
		k_mid<<<blocks(MID, TB), TB, 0, s>>>(dM, dS1, dS2, MID, (uint32_t)it);
		CKL();
		for (uint32_t i = 0; i < (uint32_t)MID; i++)
			rM[i] = (rM[i] + rS1[i & (SMALL - 1)] * 3u) ^ (rS2[(i * 7u) & (SMALL - 1)] + (uint32_t)it);
		// 6, 7, 8: a kernel writes dBig, a 1.5 MiB pageable copy overwrites
		// part of it, another kernel reads it all: their order matters.
		k_bigpre<<<blocks(BIGBUF, TB), TB, 0, s>>>(dBig, BIGBUF, (uint32_t)it);
		CKL();
		for (uint32_t i = 0; i < (uint32_t)BIGBUF; i++)
			rBig[i] = i * 5u + (uint32_t)it;
		const int boff = (it * 4099) % (BIGBUF - BIG);
		for (int i = 0; i < BIG; i++)
			hb[i] = rBig[boff + i] = val(it, i, 5);
		CK(cudaMemcpyAsync(dBig + boff, hb, BIG * 4, cudaMemcpyHostToDevice, s));
		memset(hb, junk, BIG * 4);
		k_bigmix<<<blocks(BIGBUF, TB), TB, 0, s>>>(dBig, dM, BIGBUF, (uint32_t)it);
		CKL();
		for (int i = 0; i < BIGBUF; i++)
			rBig[i] ^= rM[i & (MID - 1)] + (uint32_t)it;
		// 9: 4 KiB read-back into pageable memory, read with no sync.
		const int soff = (it * 131) % (BIGBUF - SMALL);
		CK(cudaMemcpyAsync(hds, dBig + soff, SMALL * 4, cudaMemcpyDeviceToHost, s));
		expect_u32("small-d2h-pageable", it, hds, rBig + soff, SMALL);
		memset(hds, junk, SMALL * 4);
		// 10, 11: the host's next input depends on what it read.
		for (int i = 0; i < SMALL; i++)
			hs[i] = rS1[i] = rBig[soff + i] ^ val(it, i, 6);
		CK(cudaMemcpyAsync(dS1, hs, SMALL * 4, cudaMemcpyHostToDevice, s));
		memset(hs, junk, SMALL * 4);
		const int soff2 = (it * 517) % (BIGBUF - SMALL);
		k_small<<<blocks(SMALL, TB), TB, 0, s>>>(dS1, dBig + soff2, SMALL);
		CKL();
		for (int i = 0; i < SMALL; i++)
			rBig[soff2 + i] += rS1[i];
		// 12: 2D read-back into pageable memory, read with no sync.
		const int y0 = (it * 211) % (BIGBUF - ((R2 - 1) * BP2 + W2));
		CK(cudaMemcpy2DAsync(h2d, HP2 * 4, dBig + y0, BP2 * 4, W2 * 4, R2, cudaMemcpyDeviceToHost, s));
		for (int r = 0; r < R2; r++)
			for (int c = 0; c < HP2; c++)
				expect("2d-d2h-pageable", it, r * HP2 + c, h2d[r * HP2 + c],
				       c < W2 ? rBig[y0 + r * BP2 + c] : 0x77777777u);
		for (int r = 0; r < R2; r++)
			for (int c = 0; c < W2; c++)
				h2d[r * HP2 + c] = 0xabababab;
		// 13, 14: blocking cudaMemcpy from pageable memory (legacy stream;
		// s is a blocking stream, so k_mid2 runs after it).
		for (int i = 0; i < SMALL; i++)
			hs[i] = rS2[i] = val(it, i, 7);
		CK(cudaMemcpy(dS2, hs, SMALL * 4, cudaMemcpyHostToDevice));
		memset(hs, junk, SMALL * 4);
		k_mid2<<<blocks(MID, TB), TB, 0, s>>>(dM, dS2, MID);
		CKL();
		for (int i = 0; i < MID; i++)
			rM[i] += rS2[i & (SMALL - 1)] ^ 0x9e3779b9u;
		// 15: 2 MiB read-back into pageable memory, read with no sync.
		CK(cudaMemcpyAsync(hdb, dBig, BIGBUF * 4, cudaMemcpyDeviceToHost, s));
		expect_u32("big-d2h-pageable", it, hdb, rBig, BIGBUF);
		memset(hdb, junk, BIGBUF * 4);
		// 16: 256 KiB read-back, read after a stream sync.
		CK(cudaMemcpyAsync(hdm, dM, MID * 4, cudaMemcpyDeviceToHost, s));
		CK(cudaStreamSynchronize(s));
		expect_u32("mid-d2h-pageable", it, hdm, rM, MID);
		memset(hdm, junk, MID * 4);
	}
	return finish();
}
