#include "mem_common.cuh"

// copy_kinds: the other ways to spell a copy or a memset. Runtime:
// cudaMemcpyAsync with cudaMemcpyDefault for pageable and pinned host
// sources and destinations and for device-to-device, cudaMemcpyPeerAsync and
// blocking cudaMemcpyPeer within one device, blocking cudaMemcpy
// (cudaMemcpyDefault) into pageable memory. Driver (-lcuda): cuMemsetD32Async
// and cuMemsetD16Async with new values and offsets, cuMemcpyDtoDAsync at a
// moving offset, cuMemcpyHtoDAsync from a pageable buffer rewritten as soon as
// it returns, cuMemcpyDtoHAsync into pageable memory read as soon as it
// returns, cuMemcpy2DAsync between pitched allocations at moving offsets,
// cuStreamSynchronize. All on one blocking stream with kernels in between.
#include <cuda.h>

#define CKD(x) ckd_((x), #x, __LINE__)
static void ckd_(CUresult r, const char *what, int line)
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

constexpr int N = 8192;
constexpr int H = N / 2;
constexpr int ITERS = 64;
constexpr int TB = 256;
constexpr int PW = 512, PH = 32;   // pitched buffers: bytes x rows

__global__ void k_mix(const uint32_t *a, const uint32_t *b, uint32_t *c, int n, uint32_t it)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		c[i] = ((a[i] * 3u) ^ b[i]) + it;
}
__global__ void k_fin(uint32_t *f, int n, uint32_t it)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		f[i] = f[i] * 0x01000193u + (uint32_t)i + it;
}
__global__ void k_pfill(char *p, size_t pitch, uint32_t it)
{
	uint32_t y = blockIdx.x, x = threadIdx.x;   // PW / 4 threads
	((uint32_t *)(p + y * pitch))[x] = (y * (PW / 4) + x) * 0x9e3779b1u + it;
}

static uint32_t rA[N], rB[N], rC[N], rD[H], rE[H], rF[N];
static uint8_t rS[PH * PW], rT[PH * PW];
static uint32_t hq[N], hq2[1024], hr[N], hr2[N];   // pageable

int main()
{
	g_name = "copy_kinds";
	int dev = 0;
	CK(cudaGetDevice(&dev));
	CK(cudaFree(0));   // the runtime's context is current for the driver calls
	uint32_t *dA, *dB, *dC, *dD, *dE, *dF, *dH;
	CK(cudaMalloc((void **)&dA, N * 4));
	CK(cudaMalloc((void **)&dB, N * 4));
	CK(cudaMalloc((void **)&dC, N * 4));
	CK(cudaMalloc((void **)&dD, H * 4));
	CK(cudaMalloc((void **)&dE, H * 4));
	CK(cudaMalloc((void **)&dF, N * 4));
	CK(cudaMalloc((void **)&dH, H * 4));
	char *pS, *pT;
	size_t pitchS, pitchT;
	CK(cudaMallocPitch((void **)&pS, &pitchS, PW, PH));
	CK(cudaMallocPitch((void **)&pT, &pitchT, PW, PH));
	CK(cudaMemset2D(pT, pitchT, 0, PW, PH));
	uint32_t *hp, *hpo, *hpH;
	uint8_t *hpT;
	CK(cudaMallocHost((void **)&hp, N * 4));
	CK(cudaMallocHost((void **)&hpo, H * 4));
	CK(cudaMallocHost((void **)&hpH, H * 4));
	CK(cudaMallocHost((void **)&hpT, PH * PW));
	cudaStream_t s;
	CK(cudaStreamCreate(&s));
	const CUstream cs = (CUstream)s;
	CK(cudaDeviceSynchronize());
	const unsigned G = blocks(N, TB);

	for (int it = 0; it < ITERS; it++) {
		const uint32_t uit = (uint32_t)it;
		const uint8_t junk = (uint8_t)(it * 7 + 9);
		// 1, 2: H2D with cudaMemcpyDefault from pageable and pinned memory.
		for (int i = 0; i < N; i++)
			hq[i] = rA[i] = val(it, i, 1);
		CK(cudaMemcpyAsync(dA, hq, N * 4, cudaMemcpyDefault, s));
		memset(hq, junk, sizeof hq);   // pageable: staged at return
		for (int i = 0; i < N; i++)
			hp[i] = rB[i] = val(it, i, 2);
		CK(cudaMemcpyAsync(dB, hp, N * 4, cudaMemcpyDefault, s));
		// 3
		k_mix<<<G, TB, 0, s>>>(dA, dB, dC, N, uit);
		CKL();
		for (int i = 0; i < N; i++)
			rC[i] = ((rA[i] * 3u) ^ rB[i]) + uit;
		// 4, 5: peer copy within the device, D2D with cudaMemcpyDefault.
		const int off = (it * 41) % H;
		CK(cudaMemcpyPeerAsync(dD, dev, dC + off, dev, H * 4, s));
		memcpy(rD, rC + off, H * 4);
		CK(cudaMemcpyAsync(dE, dD, H * 4, cudaMemcpyDefault, s));
		memcpy(rE, rD, H * 4);
		// 6, 7: driver memsets, new values and offsets.
		const uint32_t v32 = val(it, 0, 3);
		CKD(cuMemsetD32Async((CUdeviceptr)dF, v32, N, cs));
		for (int i = 0; i < N; i++)
			rF[i] = v32;
		const int off16 = (it * 3) % 2000;
		const uint16_t v16 = (uint16_t)val(it, 0, 4);
		CKD(cuMemsetD16Async((CUdeviceptr)dF + 2 * off16, v16, 1000, cs));
		for (int j = 0; j < 1000; j++)
			memcpy((uint8_t *)rF + 2 * (off16 + j), &v16, 2);
		// 8: driver D2D at a moving offset.
		const int o8 = it % 100;
		CKD(cuMemcpyDtoDAsync((CUdeviceptr)(dF + o8), (CUdeviceptr)dE, 256 * 4, cs));
		memcpy(rF + o8, rE, 256 * 4);
		// 9: driver H2D from pageable memory, rewritten at once.
		for (int i = 0; i < 1024; i++)
			hq2[i] = rF[4096 + i] = val(it, i, 5);
		CKD(cuMemcpyHtoDAsync((CUdeviceptr)(dF + 4096), hq2, sizeof hq2, cs));
		memset(hq2, junk, sizeof hq2);
		// 10
		k_fin<<<G, TB, 0, s>>>(dF, N, uit);
		CKL();
		for (int i = 0; i < N; i++)
			rF[i] = rF[i] * 0x01000193u + (uint32_t)i + uit;
		// 11: driver D2H into pageable memory: complete at return.
		CKD(cuMemcpyDtoHAsync(hr, (CUdeviceptr)dF, N * 4, cs));
		expect_u32("cuDtoH-pageable-at-return", it, hr, rF, N);
		memset(hr, junk, sizeof hr);
		// 12: D2H into pinned memory with cudaMemcpyDefault.
		CK(cudaMemcpyAsync(hpo, dE, H * 4, cudaMemcpyDefault, s));
		// 13: pitched source filled by a kernel, driver 2D copy at moving offsets.
		k_pfill<<<PH, PW / 4, 0, s>>>(pS, pitchS, uit);
		CKL();
		for (uint32_t y = 0; y < (uint32_t)PH; y++)
			for (uint32_t x = 0; x < (uint32_t)PW / 4; x++) {
				uint32_t w = (y * (PW / 4) + x) * 0x9e3779b1u + uit;
				memcpy(rS + y * PW + 4 * x, &w, 4);
			}
		CUDA_MEMCPY2D c2 = {};
		c2.srcXInBytes = 16 * (it % 8);
		c2.srcY = it % 8;
		c2.srcMemoryType = CU_MEMORYTYPE_DEVICE;
		c2.srcDevice = (CUdeviceptr)pS;
		c2.srcPitch = pitchS;
		c2.dstXInBytes = 16 * ((it * 3) % 8);
		c2.dstY = (it * 5) % 8;
		c2.dstMemoryType = CU_MEMORYTYPE_DEVICE;
		c2.dstDevice = (CUdeviceptr)pT;
		c2.dstPitch = pitchT;
		c2.WidthInBytes = 256;
		c2.Height = 20;
		CKD(cuMemcpy2DAsync(&c2, cs));
		for (size_t y = 0; y < c2.Height; y++)
			memcpy(rT + (c2.dstY + y) * PW + c2.dstXInBytes, rS + (c2.srcY + y) * PW + c2.srcXInBytes, 256);
		// 14: blocking peer copy within the device, then read-backs.
		CK(cudaMemcpyPeer(dH, dev, dE, dev, H * 4));
		CK(cudaMemcpy2DAsync(hpT, PW, pT, pitchT, PW, PH, cudaMemcpyDeviceToHost, s));
		CK(cudaMemcpyAsync(hpH, dH, H * 4, cudaMemcpyDefault, s));
		// 15
		CKD(cuStreamSynchronize(cs));
		expect_u32("d2h-pinned-default", it, hpo, rE, H);
		expect_u8("cuMemcpy2D-pitched", it, hpT, rT, PH * PW);
		expect_u32("memcpyPeer", it, hpH, rE, H);
		memset(hpo, junk, H * 4);
		memset(hpT, junk, PH * PW);
		memset(hpH, junk, H * 4);
		memset(hp, junk, N * 4);
		// 16: blocking D2H into pageable memory with cudaMemcpyDefault.
		CK(cudaMemcpy(hr2, dC, N * 4, cudaMemcpyDefault));
		expect_u32("memcpy-default-pageable", it, hr2, rC, N);
		memset(hr2, junk, sizeof hr2);
	}
	return finish();
}
