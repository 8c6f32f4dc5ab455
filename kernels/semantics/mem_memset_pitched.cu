#include "mem_common.cuh"

// memset_pitched: memsets whose value, offset and byte count change every
// iteration (values given as negative ints too, as in cudaMemset(p, -1, n)),
// including unaligned partial ones; cudaMemset2DAsync and cudaMemset3DAsync on
// sub-blocks that move; cudaMemcpy2DAsync and cudaMemcpy3DAsync device-to-
// device sub-block copies whose offsets move; a blocking cudaMemset on the
// legacy stream in between; kernels on the same buffers; 1D, 2D and 3D
// read-backs. The host keeps a byte-exact model of all three buffers.
constexpr int ITERS = 64;
constexpr int L = 16384;                     // linear buffer, bytes
constexpr int W2 = 256, H2 = 64;             // pitched 2D buffer, bytes x rows
constexpr int W3 = 128, H3 = 16, D3 = 8;     // 3D buffer, bytes x rows x slices

__global__ void k1(uint32_t *w, int n, uint32_t it)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		w[i] = w[i] * 3u + (uint32_t)i + it;
}
__global__ void k2(char *p2, size_t pitch, uint32_t it)
{
	uint32_t y = blockIdx.x, x = threadIdx.x;   // W2 / 4 threads
	uint32_t *row = (uint32_t *)(p2 + y * pitch);
	row[x] ^= y * 0x01010101u + it;
}
__global__ void k3(char *p3, size_t pitch, uint32_t it)
{
	uint32_t b = blockIdx.x, z = b / H3, y = b % H3, x = threadIdx.x;   // W3 / 4 threads
	uint32_t *row = (uint32_t *)(p3 + (z * H3 + y) * pitch);
	row[x] = row[x] * 5u + (z << 8) + y + it;
}

static uint8_t m1[L], m2[H2 * W2], m3[D3 * H3 * W3];
static uint32_t get32(const uint8_t *m, size_t o)
{
	uint32_t v;
	memcpy(&v, m + o, 4);
	return v;
}
static void put32(uint8_t *m, size_t o, uint32_t v)
{
	memcpy(m + o, &v, 4);
}
// A memset value as a program might pass it: sometimes as a negative int.
static int as_int(uint8_t v, int it)
{
	return (it % 2) ? (int)v - 256 : (int)v;
}

int main()
{
	g_name = "memset_pitched";
	char *d1, *p2;
	size_t pitch2;
	cudaPitchedPtr pp3;
	CK(cudaMalloc((void **)&d1, L));
	CK(cudaMallocPitch((void **)&p2, &pitch2, W2, H2));
	CK(cudaMalloc3D(&pp3, make_cudaExtent(W3, H3, D3)));
	const size_t pitch3 = pp3.pitch;
	uint8_t *h1, *h2, *h3;
	CK(cudaMallocHost((void **)&h1, L));
	CK(cudaMallocHost((void **)&h2, H2 * W2));
	CK(cudaMallocHost((void **)&h3, D3 * H3 * W3));
	CK(cudaMemset(d1, 0, L));
	CK(cudaMemset2D(p2, pitch2, 0, W2, H2));
	CK(cudaMemset3D(pp3, 0, make_cudaExtent(W3, H3, D3)));
	CK(cudaDeviceSynchronize());
	cudaStream_t s;
	CK(cudaStreamCreate(&s));   // blocking: ordered with the legacy stream

	for (int it = 0; it < ITERS; it++) {
		const uint32_t uit = (uint32_t)it;
		// 1-3: whole, partial (unaligned, moving), partial (moving count).
		const uint8_t v1 = (uint8_t)(it * 37 + 11);
		CK(cudaMemsetAsync(d1, as_int(v1, it), L, s));
		memset(m1, v1, L);
		const int o2 = (it * 52 + it % 3) % (L - 1000);
		const uint8_t v2 = (uint8_t)val(it, 0, 2);
		CK(cudaMemsetAsync(d1 + o2, as_int(v2, it + 1), 1000, s));
		memset(m1 + o2, v2, 1000);
		const int cnt3 = 100 + (it * 13) % 900;
		const uint8_t v3 = (uint8_t)val(it, 0, 3);
		CK(cudaMemsetAsync(d1 + 8000, v3, cnt3, s));
		memset(m1 + 8000, v3, cnt3);
		// 4
		k1<<<L / 4 / 256, 256, 0, s>>>((uint32_t *)d1, L / 4, uit);
		CKL();
		for (uint32_t i = 0; i < (uint32_t)L / 4; i++)
			put32(m1, 4 * i, get32(m1, 4 * i) * 3u + i + uit);
		// 5: 2D memset of a moving 160 x 40 block.
		const int r0 = it % 25, c0 = (it * 7) % 97;
		const uint8_t v4 = (uint8_t)val(it, 0, 4);
		CK(cudaMemset2DAsync(p2 + r0 * pitch2 + c0, pitch2, as_int(v4, it), 160, 40, s));
		for (int y = 0; y < 40; y++)
			memset(m2 + (r0 + y) * W2 + c0, v4, 160);
		// 6: 2D copy linear -> pitched, both ends moving.
		const int r1 = (it * 3) % 45, c1 = (it * 11) % 193, so = (it * 29) % (L - 19 * 100 - 64);
		CK(cudaMemcpy2DAsync(p2 + r1 * pitch2 + c1, pitch2, d1 + so, 100, 64, 20, cudaMemcpyDeviceToDevice, s));
		for (int y = 0; y < 20; y++)
			memcpy(m2 + (r1 + y) * W2 + c1, m1 + so + y * 100, 64);
		// 7
		k2<<<H2, W2 / 4, 0, s>>>(p2, pitch2, uit);
		CKL();
		for (uint32_t y = 0; y < (uint32_t)H2; y++)
			for (uint32_t x = 0; x < (uint32_t)W2 / 4; x++)
				put32(m2, y * W2 + 4 * x, get32(m2, y * W2 + 4 * x) ^ (y * 0x01010101u + uit));
		// 8: 3D memset of a moving 40 x 10 x 5 block.
		const int x0 = it % 89, y0 = it % 7, z0 = it % 4;
		const uint8_t v5 = (uint8_t)val(it, 0, 5);
		CK(cudaMemset3DAsync(make_cudaPitchedPtr((char *)pp3.ptr + (z0 * H3 + y0) * pitch3 + x0, pitch3, W3, H3),
				     as_int(v5, it + 1), make_cudaExtent(40, 10, 5), s));
		for (int z = 0; z < 5; z++)
			for (int y = 0; y < 10; y++)
				memset(m3 + ((z0 + z) * H3 + y0 + y) * W3 + x0, v5, 40);
		// 9: 3D copy, the 2D buffer seen as 4 slices of 16 rows -> 3D buffer.
		const int sx = (it * 5) % 225, sy = it % 11, sz = it % 2;
		const int dx = (it * 3) % 97, dy = (it * 7) % 11, dz = it % 6;
		cudaMemcpy3DParms p = {};
		p.srcPtr = make_cudaPitchedPtr(p2, pitch2, W2, 16);
		p.srcPos = make_cudaPos(sx, sy, sz);
		p.dstPtr = pp3;
		p.dstPos = make_cudaPos(dx, dy, dz);
		p.extent = make_cudaExtent(32, 6, 3);
		p.kind = cudaMemcpyDeviceToDevice;
		CK(cudaMemcpy3DAsync(&p, s));
		for (int z = 0; z < 3; z++)
			for (int y = 0; y < 6; y++)
				memcpy(m3 + ((dz + z) * H3 + dy + y) * W3 + dx, m2 + ((sz + z) * 16 + sy + y) * W2 + sx, 32);
		// 10
		k3<<<D3 * H3, W3 / 4, 0, s>>>((char *)pp3.ptr, pitch3, uit);
		CKL();
		for (uint32_t z = 0; z < (uint32_t)D3; z++)
			for (uint32_t y = 0; y < (uint32_t)H3; y++)
				for (uint32_t x = 0; x < (uint32_t)W3 / 4; x++) {
					size_t o = (z * H3 + y) * W3 + 4 * x;
					put32(m3, o, get32(m3, o) * 5u + (z << 8) + y + uit);
				}
		// 11: blocking memset, legacy stream, moving offset.
		const uint8_t v6 = (uint8_t)val(it, 0, 6);
		CK(cudaMemset(d1 + 3000 + it % 50, as_int(v6, it), 64));
		memset(m1 + 3000 + it % 50, v6, 64);
		// 12: read everything back.
		CK(cudaMemcpyAsync(h1, d1, L, cudaMemcpyDeviceToHost, s));
		CK(cudaMemcpy2DAsync(h2, W2, p2, pitch2, W2, H2, cudaMemcpyDeviceToHost, s));
		cudaMemcpy3DParms q = {};
		q.srcPtr = pp3;
		q.dstPtr = make_cudaPitchedPtr(h3, W3, W3, H3);
		q.extent = make_cudaExtent(W3, H3, D3);
		q.kind = cudaMemcpyDeviceToHost;
		CK(cudaMemcpy3DAsync(&q, s));
		CK(cudaStreamSynchronize(s));
		expect_u8("linear", it, h1, m1, L);
		expect_u8("pitched2d", it, h2, m2, H2 * W2);
		expect_u8("pitched3d", it, h3, m3, D3 * H3 * W3);
		memset(h1, 0x5c, L);
		memset(h2, 0x5d, H2 * W2);
		memset(h3, 0x5e, D3 * H3 * W3);
	}
	return finish();
}
