// arrays_textures: CUDA arrays, texture objects and surface objects in a
// training-like loop on two non-blocking streams plus the legacy stream.
// A 2D array A (surface load/store) gets a moving sub-rectangle from pinned
// host memory (rewritten by the host every iteration after the sync), then an
// overlapping one from pitched device memory that a kernel just wrote; a
// kernel reads A through a texture object, another rewrites a moving part of
// A through a surface object (surf2Dread + surf2Dwrite), then copies FROM the
// array read what that kernel wrote (to pitched device memory and to pinned
// host).  On the legacy stream, after an event wait, cudaMemcpy2DArrayToArray
// copies a moving part of A into array B; every 5th iteration a blocking
// pageable cudaMemcpy2DToArray also writes B, its host buffer poisoned right
// after it returns.  Stream 2 waits for the legacy stream, then
// cudaMemcpy3DAsync moves sub-boxes between a 3D array C and pinned host /
// pitched device memory (srcArray and dstArray, offsets moving every
// iteration); kernels read C with tex3D and A/B with tex2D through a texture
// object that is recreated every 4th iteration (over another array with
// another address mode) so the by-value handle argument changes.  The host
// keeps an exact model of A, B, C and every buffer.  An op held back past the
// host's rewrite, replayed with stale offsets, handles or contents, or
// reordered across the surface write / the event chain gives a wrong value.
// Note: when an array takes part in a 3D copy, the runtime (13.0) scales
// pos.x on the POINTER side by the array's element size, although the
// cudaMemcpy3D text calls a pointer's element unsigned char; to stay clear of
// that, pointer-side x offsets are folded into the pointer (pos.x = 0 there).
#include "mem_common.cuh"

constexpr int ITERS = 60;
constexpr int W = 64, H = 48;               // 2D arrays A, B (uint32 elements)
constexpr int W3 = 32, H3 = 16, D3 = 8;     // 3D array C
constexpr int SL = 12;                      // dP seen as 4 slices of SL rows
constexpr int QW = 32, QH = 24;             // pitched device buffer Q
constexpr int RW = 16, RH = 8, RD = 4;      // linear device box R
constexpr int OW = W + 4, OH = H + 2;       // tex2D read window (out of range too)
constexpr int N2 = W * H, N3 = W3 * H3 * D3, NO = OW * OH, NR = RW * RH * RD;

__host__ __device__ inline uint32_t h32(uint32_t a, uint32_t b)
{
	return mix32((a * 0x9e3779b9u) ^ (b + 0x7f4a7c15u));
}
// What kFillP writes at (x, y) of the pitched buffer P in iteration it.
__host__ __device__ inline uint32_t fillP(uint32_t it, uint32_t x, uint32_t y)
{
	return h32(it * 977u + 3u, y * W + x);
}

__global__ void kFillP(char *p, size_t pitch, uint32_t it)
{
	uint32_t x = threadIdx.x, y = blockIdx.x;
	((uint32_t *)(p + y * pitch))[x] = fillP(it, x, y);
}
__global__ void kTexA(cudaTextureObject_t t, uint32_t *out, uint32_t it)
{
	int x = threadIdx.x, y = blockIdx.x;
	out[y * W + x] = tex2D<unsigned>(t, x + 0.5f, y + 0.5f) * 5u + it;
}
__global__ void kSurf(cudaSurfaceObject_t s, int x0, int y0, uint32_t it)
{
	int x = x0 + (int)threadIdx.x, y = y0 + (int)blockIdx.x;
	unsigned v = surf2Dread<unsigned>(s, x * 4, y);
	surf2Dwrite<unsigned>(v * 3u + h32(it, (uint32_t)(y * W + x)), s, x * 4, y);
}
__global__ void kTex3(cudaTextureObject_t t, uint32_t *out, uint32_t it)
{
	int x = threadIdx.x, y = blockIdx.x % H3, z = blockIdx.x / H3;
	out[(z * H3 + y) * W3 + x] = tex3D<unsigned>(t, x + 0.5f, y + 0.5f, z + 0.5f) ^ (it * 0x2545f491u);
}
// Reads a window reaching 2 columns / 1 row outside the array (clamp or border).
__global__ void kTex2(cudaTextureObject_t rot, cudaTextureObject_t tb, uint32_t *out, uint32_t it)
{
	int x = threadIdx.x, y = blockIdx.x;
	float u = x - 2 + 0.5f, v = y - 1 + 0.5f;
	out[y * OW + x] = tex2D<unsigned>(rot, u, v) * 0x9e3779b1u + tex2D<unsigned>(tb, u, v) + it;
}

static uint32_t mA[N2], mB[N2], mC[N3], mQ[QH * QW], mR[NR];
// A point-filtered, unnormalised tex2D read of model m at integer (x, y).
static uint32_t tex_m(const uint32_t *m, int x, int y, bool border)
{
	if (border && (x < 0 || x >= W || y < 0 || y >= H))
		return 0;
	x = x < 0 ? 0 : (x >= W ? W - 1 : x);
	y = y < 0 ? 0 : (y >= H ? H - 1 : y);
	return m[y * W + x];
}
static cudaTextureObject_t make_tex(cudaArray_t a, cudaTextureAddressMode am)
{
	cudaResourceDesc rd = {};
	rd.resType = cudaResourceTypeArray;
	rd.res.array.array = a;
	cudaTextureDesc td = {};
	td.addressMode[0] = td.addressMode[1] = td.addressMode[2] = am;
	td.filterMode = cudaFilterModePoint;
	td.readMode = cudaReadModeElementType;
	td.normalizedCoords = 0;
	cudaTextureObject_t t;
	CK(cudaCreateTextureObject(&t, &rd, &td, nullptr));
	return t;
}

int main()
{
	g_name = "arrays_textures";
	CK(cudaSetDevice(0));
	const cudaChannelFormatDesc cf = cudaCreateChannelDesc<unsigned>();
	cudaArray_t A, B, C;
	CK(cudaMallocArray(&A, &cf, W, H, cudaArraySurfaceLoadStore));
	CK(cudaMallocArray(&B, &cf, W, H));
	CK(cudaMalloc3DArray(&C, &cf, make_cudaExtent(W3, H3, D3)));
	char *dP, *dQ;
	size_t pP, pQ;
	CK(cudaMallocPitch((void **)&dP, &pP, W * 4, H));
	CK(cudaMallocPitch((void **)&dQ, &pQ, QW * 4, QH));
	uint32_t *dTA, *dO2, *dO3, *dR;
	CK(cudaMalloc((void **)&dTA, N2 * 4));
	CK(cudaMalloc((void **)&dO2, NO * 4));
	CK(cudaMalloc((void **)&dO3, N3 * 4));
	CK(cudaMalloc((void **)&dR, NR * 4));
	// Pinned: sources (src2, src3) and read-backs.
	uint32_t *src2, *src3, *hA, *hB, *hC, *hQ, *hR, *hTA, *hO2, *hO3;
	CK(cudaMallocHost((void **)&src2, N2 * 4));
	CK(cudaMallocHost((void **)&src3, N3 * 4));
	CK(cudaMallocHost((void **)&hA, N2 * 4));
	CK(cudaMallocHost((void **)&hB, N2 * 4));
	CK(cudaMallocHost((void **)&hC, N3 * 4));
	CK(cudaMallocHost((void **)&hQ, QW * QH * 4));
	CK(cudaMallocHost((void **)&hR, NR * 4));
	CK(cudaMallocHost((void **)&hTA, N2 * 4));
	CK(cudaMallocHost((void **)&hO2, NO * 4));
	CK(cudaMallocHost((void **)&hO3, N3 * 4));
	// Known zero start for everything the loop only partly writes.
	memset(src2, 0, N2 * 4);
	memset(src3, 0, N3 * 4);
	CK(cudaMemcpy2DToArray(A, 0, 0, src2, W * 4, W * 4, H, cudaMemcpyHostToDevice));
	CK(cudaMemcpy2DToArray(B, 0, 0, src2, W * 4, W * 4, H, cudaMemcpyHostToDevice));
	{
		cudaMemcpy3DParms z = {};
		z.srcPtr = make_cudaPitchedPtr(src3, W3 * 4, W3, H3);
		z.dstArray = C;
		z.extent = make_cudaExtent(W3, H3, D3);
		z.kind = cudaMemcpyHostToDevice;
		CK(cudaMemcpy3D(&z));
	}
	CK(cudaMemset2D(dQ, pQ, 0, QW * 4, QH));
	CK(cudaMemset(dR, 0, NR * 4));
	CK(cudaDeviceSynchronize());

	cudaStream_t s0, s1;
	CK(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking));
	CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
	cudaEvent_t evA, evB;
	CK(cudaEventCreateWithFlags(&evA, cudaEventDisableTiming));
	CK(cudaEventCreateWithFlags(&evB, cudaEventDisableTiming));
	cudaSurfaceObject_t sA;
	{
		cudaResourceDesc rd = {};
		rd.resType = cudaResourceTypeArray;
		rd.res.array.array = A;
		CK(cudaCreateSurfaceObject(&sA, &rd));
	}
	const cudaTextureObject_t tA = make_tex(A, cudaAddressModeClamp);
	const cudaTextureObject_t tB = make_tex(B, cudaAddressModeClamp);
	const cudaTextureObject_t tC = make_tex(C, cudaAddressModeClamp);
	cudaTextureObject_t tRot = 0;
	bool rotB = false;   // tRot: over B with border, or over A with clamp
	uint32_t *pg = (uint32_t *)malloc(20 * 16 * 4);   // pageable source
	static uint32_t pm[N2], tmp[N2];

	for (int it = 0; it < ITERS; it++) {
		const uint32_t uit = (uint32_t)it;
		// 0. Host side, both streams idle: new pinned contents, maybe a new texture.
		for (int i = 0; i < N2; i++)
			src2[i] = val(uit, i, 1);
		for (int i = 0; i < N3; i++)
			src3[i] = val(uit, i, 2);
		if (it % 4 == 0) {
			rotB = (it / 4) % 2 == 0;
			cudaTextureObject_t t = rotB ? make_tex(B, cudaAddressModeBorder) : make_tex(A, cudaAddressModeClamp);
			if (tRot)
				CK(cudaDestroyTextureObject(tRot));   // the work that used it is finished
			tRot = t;
		}
		// 0b. Every 5th iteration: blocking pageable copy into B (legacy stream);
		// the source is staged before the call returns, so poisoning it is fine.
		if (it % 5 == 3) {
			const int bx = (it * 11) % (W - 20 + 1), by = (it * 2) % (H - 16 + 1);
			for (int i = 0; i < 20 * 16; i++)
				pg[i] = val(uit, i, 5);
			CK(cudaMemcpy2DToArray(B, bx * 4, by, pg, 20 * 4, 20 * 4, 16, cudaMemcpyHostToDevice));
			memset(pg, 0xa7, 20 * 16 * 4);
			for (int y = 0; y < 16; y++)
				for (int x = 0; x < 20; x++)
					mB[(by + y) * W + bx + x] = val(uit, y * 20 + x, 5);
		}

		// 1. s0: pinned host -> A, moving 40 x 30 rectangle, moving source offset.
		{
			const int ox = (it * 5) % (W - 40 + 1), oy = (it * 3) % (H - 30 + 1);
			const int sx = it % 7, sy = it % 5;
			CK(cudaMemcpy2DToArrayAsync(A, ox * 4, oy, src2 + sy * W + sx, W * 4, 40 * 4, 30,
						    cudaMemcpyHostToDevice, s0));
			for (int y = 0; y < 30; y++)
				memcpy(mA + (oy + y) * W + ox, src2 + (sy + y) * W + sx, 40 * 4);
		}
		// 2. s0: kernel fills P, then P -> A (24 x 20, overlapping step 1).
		kFillP<<<H, W, 0, s0>>>(dP, pP, uit);
		CKL();
		for (int y = 0; y < H; y++)
			for (int x = 0; x < W; x++)
				pm[y * W + x] = fillP(uit, x, y);
		{
			const int ox = (it * 7) % (W - 24 + 1), oy = (it * 11) % (H - 20 + 1);
			const int px = (it * 3) % (W - 24 + 1), py = it % (H - 20 + 1);
			CK(cudaMemcpy2DToArrayAsync(A, ox * 4, oy, dP + py * pP + px * 4, pP, 24 * 4, 20,
						    cudaMemcpyDeviceToDevice, s0));
			for (int y = 0; y < 20; y++)
				memcpy(mA + (oy + y) * W + ox, pm + (py + y) * W + px, 24 * 4);
		}
		// 3. s0: texture read of all of A (before the surface write below).
		kTexA<<<H, W, 0, s0>>>(tA, dTA, uit);
		CKL();
		for (int i = 0; i < N2; i++)
			tmp[i] = mA[i] * 5u + uit;
		// 4. s0: surface read-modify-write of a moving 32 x 24 part of A.
		{
			const int x0 = (it * 9) % (W - 32 + 1), y0 = (it * 5) % (H - 24 + 1);
			kSurf<<<24, 32, 0, s0>>>(sA, x0, y0, uit);
			CKL();
			for (int y = y0; y < y0 + 24; y++)
				for (int x = x0; x < x0 + 32; x++)
					mA[y * W + x] = mA[y * W + x] * 3u + h32(uit, (uint32_t)(y * W + x));
		}
		// 5. s0: copies from A see the surface writes: moving 20 x 14 part of A
		// to a moving place in pitched Q, all of A to pinned host.
		{
			const int ox = (it * 13) % (W - 20 + 1), oy = (it * 7) % (H - 14 + 1);
			const int qx = it % (QW - 20 + 1), qy = (it * 3) % (QH - 14 + 1);
			CK(cudaMemcpy2DFromArrayAsync(dQ + qy * pQ + qx * 4, pQ, A, ox * 4, oy, 20 * 4, 14,
						      cudaMemcpyDeviceToDevice, s0));
			for (int y = 0; y < 14; y++)
				memcpy(mQ + (qy + y) * QW + qx, mA + (oy + y) * W + ox, 20 * 4);
		}
		CK(cudaMemcpy2DFromArrayAsync(hA, W * 4, A, 0, 0, W * 4, H, cudaMemcpyDeviceToHost, s0));
		CK(cudaMemcpy2DAsync(hQ, QW * 4, dQ, pQ, QW * 4, QH, cudaMemcpyDeviceToHost, s0));
		CK(cudaMemcpyAsync(hTA, dTA, N2 * 4, cudaMemcpyDeviceToHost, s0));
		CK(cudaEventRecord(evA, s0));

		// 6. Legacy stream, after s0's work: moving 28 x 22 part of A -> B.
		CK(cudaStreamWaitEvent(0, evA, 0));
		{
			const int ax = (it * 17) % (W - 28 + 1), ay = (it * 5) % (H - 22 + 1);
			const int bx = (it * 3) % (W - 28 + 1), by = (it * 7) % (H - 22 + 1);
			CK(cudaMemcpy2DArrayToArray(B, bx * 4, by, A, ax * 4, ay, 28 * 4, 22, cudaMemcpyDeviceToDevice));
			for (int y = 0; y < 22; y++)
				memcpy(mB + (by + y) * W + bx, mA + (ay + y) * W + ax, 28 * 4);
		}
		CK(cudaEventRecord(evB, 0));

		// 7. s1, after the legacy stream (and so after s0): 3D copies into C.
		CK(cudaStreamWaitEvent(s1, evB, 0));
		{
			// pinned host box -> C.  The x offset on the pointer side goes into
			// the pointer itself (pos.x = 0): see the note at the top.
			const int sx = it % (W3 - 20 + 1), sy = (it * 3) % (H3 - 10 + 1), sz = it % (D3 - 5 + 1);
			const int dx = (it * 5) % (W3 - 20 + 1), dy = (it * 2) % (H3 - 10 + 1), dz = (it * 3) % (D3 - 5 + 1);
			cudaMemcpy3DParms p = {};
			p.srcPtr = make_cudaPitchedPtr(src3 + sx, W3 * 4, W3 * 4, H3);
			p.srcPos = make_cudaPos(0, sy, sz);
			p.dstArray = C;
			p.dstPos = make_cudaPos(dx, dy, dz);
			p.extent = make_cudaExtent(20, 10, 5);   // array elements
			p.kind = cudaMemcpyHostToDevice;
			CK(cudaMemcpy3DAsync(&p, s1));
			for (int z = 0; z < 5; z++)
				for (int y = 0; y < 10; y++)
					memcpy(mC + ((dz + z) * H3 + dy + y) * W3 + dx,
					       src3 + ((sz + z) * H3 + sy + y) * W3 + sx, 20 * 4);
		}
		{
			// P (written by s0's kernel) seen as 4 slices of SL rows -> C
			const int sx = (it * 7) % (W - 16 + 1), sy = it % (SL - 8 + 1), sz = it % 2;
			const int dx = (it * 3) % (W3 - 16 + 1), dy = (it * 5) % (H3 - 8 + 1), dz = (it * 3) % (D3 - 3 + 1);
			cudaMemcpy3DParms p = {};
			p.srcPtr = make_cudaPitchedPtr(dP + sx * 4, pP, W * 4, SL);
			p.srcPos = make_cudaPos(0, sy, sz);
			p.dstArray = C;
			p.dstPos = make_cudaPos(dx, dy, dz);
			p.extent = make_cudaExtent(16, 8, 3);
			p.kind = cudaMemcpyDeviceToDevice;
			CK(cudaMemcpy3DAsync(&p, s1));
			for (int z = 0; z < 3; z++)
				for (int y = 0; y < 8; y++)
					memcpy(mC + ((dz + z) * H3 + dy + y) * W3 + dx,
					       pm + ((sz + z) * SL + sy + y) * W + sx, 16 * 4);
		}
		// 8. s1: textures over C, over A or B (recreated handle) and over B.
		kTex3<<<H3 * D3, W3, 0, s1>>>(tC, dO3, uit);
		CKL();
		kTex2<<<OH, OW, 0, s1>>>(tRot, tB, dO2, uit);
		CKL();
		// 9. s1: moving 12 x 6 x 3 box of C -> moving place in linear R; all of C
		// and B to pinned host.
		{
			const int ax = (it * 7) % (W3 - 12 + 1), ay = (it * 3) % (H3 - 6 + 1), az = (it * 5) % (D3 - 3 + 1);
			const int rx = it % (RW - 12 + 1), ry = (it * 2) % (RH - 6 + 1), rz = it % (RD - 3 + 1);
			cudaMemcpy3DParms p = {};
			p.srcArray = C;
			p.srcPos = make_cudaPos(ax, ay, az);
			p.dstPtr = make_cudaPitchedPtr(dR + rx, RW * 4, RW * 4, RH);
			p.dstPos = make_cudaPos(0, ry, rz);
			p.extent = make_cudaExtent(12, 6, 3);
			p.kind = cudaMemcpyDeviceToDevice;
			CK(cudaMemcpy3DAsync(&p, s1));
			for (int z = 0; z < 3; z++)
				for (int y = 0; y < 6; y++)
					memcpy(mR + ((rz + z) * RH + ry + y) * RW + rx,
					       mC + ((az + z) * H3 + ay + y) * W3 + ax, 12 * 4);
		}
		{
			cudaMemcpy3DParms p = {};
			p.srcArray = C;
			p.dstPtr = make_cudaPitchedPtr(hC, W3 * 4, W3 * 4, H3);
			p.extent = make_cudaExtent(W3, H3, D3);
			p.kind = cudaMemcpyDeviceToHost;
			CK(cudaMemcpy3DAsync(&p, s1));
		}
		CK(cudaMemcpy2DFromArrayAsync(hB, W * 4, B, 0, 0, W * 4, H, cudaMemcpyDeviceToHost, s1));
		CK(cudaMemcpyAsync(hR, dR, NR * 4, cudaMemcpyDeviceToHost, s1));
		CK(cudaMemcpyAsync(hO3, dO3, N3 * 4, cudaMemcpyDeviceToHost, s1));
		CK(cudaMemcpyAsync(hO2, dO2, NO * 4, cudaMemcpyDeviceToHost, s1));

		// 10. Wait (s1 waited for the legacy stream, which waited for s0) and check.
		CK(cudaStreamSynchronize(s1));
		CK(cudaStreamSynchronize(s0));
		expect_u32("texA", it, hTA, tmp, N2);
		expect_u32("arrayA", it, hA, mA, N2);
		expect_u32("pitchQ", it, hQ, mQ, QW * QH);
		expect_u32("arrayB", it, hB, mB, N2);
		expect_u32("array3C", it, hC, mC, N3);
		expect_u32("boxR", it, hR, mR, NR);
		for (int z = 0; z < D3; z++)
			for (int y = 0; y < H3; y++)
				for (int x = 0; x < W3; x++) {
					const int i = (z * H3 + y) * W3 + x;
					expect("tex3C", it, i, hO3[i], mC[i] ^ (uit * 0x2545f491u));
				}
		for (int y = 0; y < OH; y++)
			for (int x = 0; x < OW; x++) {
				const uint32_t r = rotB ? tex_m(mB, x - 2, y - 1, true) : tex_m(mA, x - 2, y - 1, false);
				const uint32_t want = r * 0x9e3779b1u + tex_m(mB, x - 2, y - 1, false) + uit;
				expect(rotB ? "tex2rotB" : "tex2rotA", it, y * OW + x, hO2[y * OW + x], want);
			}
		// Poison the read-backs so a copy that did not happen is seen.
		memset(hA, 0x11, N2 * 4);
		memset(hB, 0x22, N2 * 4);
		memset(hC, 0x33, N3 * 4);
		memset(hQ, 0x44, QW * QH * 4);
		memset(hR, 0x55, NR * 4);
		memset(hTA, 0x66, N2 * 4);
		memset(hO2, 0x77, NO * 4);
		memset(hO3, 0x88, N3 * 4);
	}

	CK(cudaDeviceSynchronize());
	CK(cudaDestroyTextureObject(tRot));
	CK(cudaDestroyTextureObject(tA));
	CK(cudaDestroyTextureObject(tB));
	CK(cudaDestroyTextureObject(tC));
	CK(cudaDestroySurfaceObject(sA));
	CK(cudaFreeArray(A));
	CK(cudaFreeArray(B));
	CK(cudaFreeArray(C));
	free(pg);
	return finish();
}
