#include "mem_common.cuh"

// batch_ops: the stream-ordered batch memory calls of CUDA 12.8-13.0 in a loop,
// between kernels that produce and consume their data. cudaMemcpyBatchAsync
// with D2D, pinned H2D, D2H to pinned memory and three source access orders:
// Stream (a pinned bounce buffer written by one batch's D2H is read by the
// next batch's H2D: the source must be read when the copy runs, not when it
// was called), Any (a pageable source left alone until the stream is synced)
// and DuringApiCall (pageable, pinned and stack sources the host overwrites
// the moment the call returns: a copy held back without its data reads the
// scribble). cudaMemcpy3DBatchAsync with strided pointer operands (D2D, H2D,
// D2H, and a stack source read during the call). The argument arrays are
// scribbled after each call. cudaMemcpyAsync(cudaMemcpyDefault) between two
// sub-ranges of one buffer, cudaMemset2DAsync of 1, 2 and 4 byte columns,
// cudaMemcpyPeerAsync to the same device. Managed memory goes through
// cudaMemDiscardAndPrefetchBatchAsync, cudaMemPrefetchBatchAsync (to the device
// and to the host) and cudaMemDiscardBatchAsync, and is always rewritten in
// full before it is read. Offsets and sizes change in some iterations and
// stay in others; the host keeps an exact model of every device buffer.
constexpr int ITERS = 60;
constexpr int NW = 8192;         // words per device buffer (A, B, C, D in one allocation)
constexpr size_t NB = NW * 4;    // bytes per device buffer
constexpr int MW = 65536;        // words per managed allocation
constexpr int NMIX = 1024;       // words k_mix touches
enum { BA, BB, BC, BD };

__host__ __device__ inline uint32_t hx(uint32_t a, uint32_t b)
{
	return mix32(a * 0x9e3779b9u ^ (b * 0x85ebca6bu + 0x68e31da4u));
}
__global__ void k_gen(uint32_t *p, int n, uint32_t seed)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		p[i] = hx(seed, (uint32_t)i);
}
__global__ void k_step(uint32_t *dst, const uint32_t *src, int n, uint32_t s)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		dst[i] = dst[i] * 3u + (src[i] ^ s);
}
__global__ void k_acc(uint32_t *d, const uint32_t *c, int n, uint32_t it)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		d[i] = d[i] * 5u + (c[i] ^ c[i + n]) + it;
}
__global__ void k_mix(uint32_t *d, const uint32_t *m0, const uint32_t *m1, const uint32_t *m2, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		d[i] ^= m0[i] + 3u * m1[i] + 7u * m2[i];
}

static uint32_t mdl[4 * NW];   // the host's model of A, B, C, D
static uint32_t &mw(int b, long w)
{
	return mdl[b * NW + w];
}
static uint8_t *mby(int b, size_t off)
{
	return (uint8_t *)mdl + b * NB + off;
}
static uint32_t expOut[512], expBn[512];
static uint8_t exp3[512];

int main()
{
	g_name = "batch_ops";
	int dev = 0;
	CK(cudaSetDevice(dev));
	// The managed batch calls need cudaDevAttrConcurrentManagedAccess on every
	// device; without it they are skipped (they change no value the program reads).
	int ndev = 0, cma = 1;
	CK(cudaGetDeviceCount(&ndev));
	for (int d = 0; d < ndev; d++) {
		int v = 0;
		CK(cudaDeviceGetAttribute(&v, cudaDevAttrConcurrentManagedAccess, d));
		if (!v)
			cma = 0;
	}
	uint32_t *dA;
	CK(cudaMalloc((void **)&dA, 4 * NB));
	uint32_t *dB = dA + NW, *dC = dA + 2 * NW, *dD = dA + 3 * NW;
	for (int i = 0; i < 4 * NW; i++)
		mdl[i] = val(1000, (uint32_t)i, 0);
	CK(cudaMemcpy(dA, mdl, 4 * NB, cudaMemcpyHostToDevice));
	uint32_t *M[3];
	for (int k = 0; k < 3; k++)
		CK(cudaMallocManaged((void **)&M[k], (size_t)MW * 4));
	uint32_t *hIn[2], *hOut, *hBn, *hDur, *hAll;
	uint8_t *h3in, *h3out;
	for (int k = 0; k < 2; k++)
		CK(cudaMallocHost((void **)&hIn[k], 512 * 4));
	CK(cudaMallocHost((void **)&hOut, 512 * 4));
	CK(cudaMallocHost((void **)&hBn, 512 * 4));
	CK(cudaMallocHost((void **)&hDur, 256 * 4));
	CK(cudaMallocHost((void **)&hAll, 4 * NB));
	CK(cudaMallocHost((void **)&h3in, 1024));
	CK(cudaMallocHost((void **)&h3out, 512));
	uint32_t *pg = (uint32_t *)malloc(512 * 4), *pgAny = (uint32_t *)malloc(512 * 4);
	if (!pg || !pgAny)
		return 3;
	cudaStream_t s;
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));   // batch calls refuse the legacy stream
	CK(cudaDeviceSynchronize());
	const cudaMemLocation onDev = {cudaMemLocationTypeDevice, dev};
	const cudaMemLocation onHost = {cudaMemLocationTypeHost, 0};

	for (int it = 0; it < ITERS; it++) {
		const uint32_t u = (uint32_t)it;
		const int e4 = it / 4, e7 = it / 7;   // parameters that hold for 4 / 7 iterations
		// 0: host inputs; the stream is idle (synced at the end of the last iteration).
		uint32_t *hi = hIn[(it / 5) % 2];
		const int nIn = 256 + 64 * (e7 % 4), nAny = 300 + 10 * (e4 % 3);
		const int nPg = 200 + 50 * (e7 % 3), nDur = 128 + 16 * (it % 4);
		for (int i = 0; i < nIn; i++)
			hi[i] = val(u, i, 1);
		for (int i = 0; i < nAny; i++)
			pgAny[i] = val(u, i, 4);
		for (int i = 0; i < nPg; i++)
			pg[i] = val(u, i, 2);
		for (int i = 0; i < nDur; i++)
			hDur[i] = val(u, i, 5);
		for (int i = 0; i < 1024; i++)
			h3in[i] = (uint8_t)val(u, i, 6);
		for (int i = 0; i < MW; i++)
			M[2][i] = val(u, i, 7);
		memset(hOut, 0x5a, 512 * 4);
		memset(hBn, 0x5b, 512 * 4);
		memset(h3out, 0x5c, 512);
		memset(hAll, 0x5d, 4 * NB);

		// 1: A[oG, oG+nG) generated.
		const int oG = 64 * (e4 % 5), nG = 1024 + 128 * (e7 % 3);
		const uint32_t sG = val(u, 0, 10);
		k_gen<<<blocks(nG, 256), 256, 0, s>>>(dA + oG, nG, sG);
		CKL();
		for (int i = 0; i < nG; i++)
			mw(BA, oG + i) = hx(sG, i);
		// 2: cudaMemcpyDefault from inside that range to a disjoint range of A.
		const int oX1 = oG + 16 * (it % 3), nX = 512 + 32 * (e4 % 4), oX2 = 2048 + 8 * (e7 % 5) + it % 2;
		CK(cudaMemcpyAsync(dA + oX2, dA + oX1, (size_t)nX * 4, cudaMemcpyDefault, s));
		memcpy(&mw(BA, oX2), &mw(BA, oX1), (size_t)nX * 4);
		// 3: 1, 2 and 4 byte columns of B set by 2D memsets, one plain unaligned memset.
		const struct { size_t off, pitch, width, height; } ms[3] = {
			{(size_t)4 * (100 + 8 * (e4 % 6)) + 1, 4, 1, (size_t)300 + 50 * (e7 % 4)},
			{(size_t)4 * (600 + 4 * (it % 5)) + 2, 4, 2, 256},
			{(size_t)4 * (900 + 2 * (e4 % 3)), 8, 4, (size_t)200 + 10 * (it % 2)}};
		for (int k = 0; k < 3; k++) {
			const uint8_t v = (uint8_t)val(u, k, 20);
			CK(cudaMemset2DAsync((char *)dB + ms[k].off, ms[k].pitch, (it % 2) ? (int)v - 256 : (int)v,
					     ms[k].width, ms[k].height, s));
			for (size_t r = 0; r < ms[k].height; r++)
				memset(mby(BB, ms[k].off + r * ms[k].pitch), v, ms[k].width);
		}
		const size_t mo = 4 * 1400 + e7 % 3, mc = 777 + e4 % 2;
		const uint8_t mv = (uint8_t)val(u, 3, 20);
		CK(cudaMemsetAsync((char *)dB + mo, mv, mc, s));
		memset(mby(BB, mo), mv, mc);
		// 4: B[oK, oK+nX) consumes the memsets and the copy of step 2.
		const int oK = 128 + 32 * (e4 % 4);
		const uint32_t sK = val(u, 0, 11);
		k_step<<<blocks(nX, 256), 256, 0, s>>>(dB + oK, dA + oX2, nX, sK);
		CKL();
		for (int i = 0; i < nX; i++)
			mw(BB, oK + i) = mw(BB, oK + i) * 3u + (mw(BA, oX2 + i) ^ sK);

		// 5: one batch, eight copies, three attribute sets (Stream, Any, DuringApiCall).
		uint32_t stk[32];
		for (int i = 0; i < 32; i++)
			stk[i] = val(u, i, 3);
		const int oc0 = 16 * (e4 % 4), oc1 = 1024 + 8 * (it % 7), oc4 = 4096 + 4 * (e7 % 3);
		const int oc5 = 5120 + it % 9, oc6 = 6144 + 32 * (e4 % 2), oc7 = 7168 + 3 * (it % 5);
		const int oOut = oG + 8 * (it % 4), nOut = 512, oBn = oK + 4 * (e4 % 2), nB = 384 + 32 * (it % 3);
		{
			void *dsts[8] = {dC + oc0, dC + oc1, hOut, hBn, dC + oc4, dC + oc5, dC + oc6, dC + oc7};
			const void *srcs[8] = {dB + oK, hi, dA + oOut, dB + oBn, pgAny, pg, hDur, stk};
			size_t sizes[8] = {(size_t)nX * 4, (size_t)nIn * 4, (size_t)nOut * 4, (size_t)nB * 4,
					   (size_t)nAny * 4, (size_t)nPg * 4, (size_t)nDur * 4, sizeof stk};
			cudaMemcpyAttributes at[3] = {};
			at[0].srcAccessOrder = cudaMemcpySrcAccessOrderStream;
			at[1].srcAccessOrder = cudaMemcpySrcAccessOrderAny;
			at[2].srcAccessOrder = cudaMemcpySrcAccessOrderDuringApiCall;
			at[2].flags = (it % 3 == 0) ? cudaMemcpyFlagPreferOverlapWithCompute : cudaMemcpyFlagDefault;
			size_t ai[3] = {0, 4, 5};
			CK(cudaMemcpyBatchAsync(dsts, srcs, sizes, 8, at, ai, 3, s));
			// DuringApiCall: every access to these sources completed before the
			// call returned, so they may be reused at once. The argument arrays too.
			for (int i = 0; i < nPg; i++)
				pg[i] = 0xdead0000u ^ (uint32_t)i;
			for (int i = 0; i < nDur; i++)
				hDur[i] = 0xbeef0000u ^ (uint32_t)i;
			for (int i = 0; i < 32; i++)
				((volatile uint32_t *)stk)[i] = 0xf00d0000u ^ (uint32_t)i;
			memset(dsts, 0, sizeof dsts);
			memset((void *)srcs, 0, sizeof srcs);
			memset(sizes, 0, sizeof sizes);
			memset(at, 0, sizeof at);
			memset(ai, 0, sizeof ai);
		}
		memcpy(&mw(BC, oc0), &mw(BB, oK), (size_t)nX * 4);
		for (int i = 0; i < nIn; i++)
			mw(BC, oc1 + i) = val(u, i, 1);
		memcpy(expOut, &mw(BA, oOut), (size_t)nOut * 4);
		memcpy(expBn, &mw(BB, oBn), (size_t)nB * 4);
		for (int i = 0; i < nAny; i++)
			mw(BC, oc4 + i) = val(u, i, 4);
		for (int i = 0; i < nPg; i++)
			mw(BC, oc5 + i) = val(u, i, 2);
		for (int i = 0; i < nDur; i++)
			mw(BC, oc6 + i) = val(u, i, 5);
		for (int i = 0; i < 32; i++)
			mw(BC, oc7 + i) = val(u, i, 3);

		// 6: a second batch reads the pinned bounce buffer the first one filled
		// (stream order) and the DuringApiCall copy's result; a same-device peer copy.
		const int od0 = 16 * (e4 % 3), od1 = 1024 + it % 5, op = 2048 + 8 * (e7 % 4);
		{
			void *dsts[2] = {dD + od0, dD + od1};
			const void *srcs[2] = {hBn, dC + oc5};
			size_t sizes[2] = {(size_t)nB * 4, (size_t)nPg * 4};
			cudaMemcpyAttributes at = {};
			at.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
			size_t ai = 0;
			CK(cudaMemcpyBatchAsync(dsts, srcs, sizes, 2, &at, &ai, 1, s));
		}
		memcpy(&mw(BD, od0), expBn, (size_t)nB * 4);
		memcpy(&mw(BD, od1), &mw(BC, oc5), (size_t)nPg * 4);
		CK(cudaMemcpyPeerAsync(dD + op, dev, dC + oc1, dev, (size_t)nIn * 4, s));
		memcpy(&mw(BD, op), &mw(BC, oc1), (size_t)nIn * 4);
		// 7: D[0, 4096) folds in all of C.
		k_acc<<<4096 / 256, 256, 0, s>>>(dD, dC, 4096, u);
		CKL();
		for (int i = 0; i < 4096; i++)
			mw(BD, i) = mw(BD, i) * 5u + (mw(BC, i) ^ mw(BC, i + 4096)) + u;

		// 8: 3D batch, byte extents, pairwise disjoint destinations.
		const size_t W0 = 40 + 4 * (e4 % 3) + it % 2, H0 = 5 + e7 % 2, D0 = 3;
		const size_t sa = (e7 % 2) * 4096 + (e4 % 3) * 512 + (it * 13) % 64, db = 16384 + 8 * (e4 % 5) + it % 3;
		const size_t W1 = 60 + it % 3, H1 = 4, D1 = 2 + e7 % 2, dd = 4 * (it % 4) + 256 * (e7 % 3) + 16384;
		const size_t W2 = 48 + 4 * (e4 % 2), H2 = 3, D2 = 2, so = 8 * (it % 16) + 1024 * (e7 % 2);
		const size_t de = 24576 + it % 7;
		uint8_t stk3[96];
		for (int i = 0; i < 96; i++)
			stk3[i] = (uint8_t)val(u, i, 8);
		{
			cudaMemcpy3DBatchOp ops[4] = {};
			for (int k = 0; k < 4; k++) {
				ops[k].src.type = ops[k].dst.type = cudaMemcpyOperandTypePointer;
				ops[k].srcAccessOrder = cudaMemcpySrcAccessOrderStream;
			}
			ops[0].src.op.ptr.ptr = (char *)dA + sa;   // D2D, both strided
			ops[0].src.op.ptr.rowLength = 512;
			ops[0].src.op.ptr.layerHeight = 8;
			ops[0].dst.op.ptr.ptr = (char *)dB + db;
			ops[0].dst.op.ptr.rowLength = 384;
			ops[0].dst.op.ptr.layerHeight = 6;
			ops[0].extent = make_cudaExtent(W0, H0, D0);
			ops[1].src.op.ptr.ptr = h3in;              // H2D, packed source
			ops[1].dst.op.ptr.ptr = (char *)dD + dd;
			ops[1].dst.op.ptr.rowLength = 256;
			ops[1].dst.op.ptr.layerHeight = 5;
			ops[1].extent = make_cudaExtent(W1, H1, D1);
			ops[2].src.op.ptr.ptr = (char *)dD + so;   // D2H, packed destination
			ops[2].src.op.ptr.rowLength = 1024;
			ops[2].src.op.ptr.layerHeight = 4;
			ops[2].dst.op.ptr.ptr = h3out;
			ops[2].extent = make_cudaExtent(W2, H2, D2);
			ops[3].src.op.ptr.ptr = stk3;              // stack source, read during the call
			ops[3].dst.op.ptr.ptr = (char *)dB + de;
			ops[3].dst.op.ptr.rowLength = 64;
			ops[3].extent = make_cudaExtent(24, 4, 1);
			ops[3].srcAccessOrder = cudaMemcpySrcAccessOrderDuringApiCall;
			CK(cudaMemcpy3DBatchAsync(4, ops, 0, s));
			for (int i = 0; i < 96; i++)
				((volatile uint8_t *)stk3)[i] = (uint8_t)(0xa5 ^ i);
			memset((void *)ops, 0, sizeof ops);
		}
		for (size_t z = 0; z < D0; z++)
			for (size_t y = 0; y < H0; y++)
				memcpy(mby(BB, db + z * 384 * 6 + y * 384), mby(BA, sa + z * 512 * 8 + y * 512), W0);
		for (size_t z = 0; z < D2; z++)   // reads D below 16384, op 1 writes at or above it
			for (size_t y = 0; y < H2; y++)
				memcpy(exp3 + (z * H2 + y) * W2, mby(BD, so + z * 1024 * 4 + y * 1024), W2);
		for (size_t z = 0; z < D1; z++)
			for (size_t y = 0; y < H1; y++)
				for (size_t x = 0; x < W1; x++)
					*mby(BD, dd + z * 256 * 5 + y * 256 + x) = (uint8_t)val(u, (uint32_t)((z * H1 + y) * W1 + x), 6);
		for (size_t y = 0; y < 4; y++)
			for (size_t x = 0; x < 24; x++)
				*mby(BB, de + y * 64 + x) = (uint8_t)val(u, (uint32_t)(y * 24 + x), 8);

		// 9: managed memory. M0 is discarded (and prefetched) then rewritten in
		// full; M1 was discarded last iteration, is prefetched and rewritten in
		// full; M2 was written by the host in step 0. After k_mix reads them, M0
		// goes to the host (checked there), M1 is discarded again.
		const size_t cut = (size_t)65536 * (1 + e4 % 3), pf2 = (size_t)4 * (16384 + 4096 * (e4 % 3));
		const int p0 = 256 * (it % 5), p1 = 1024 * (e7 % 3), p2 = 64 * (e4 % 6), oMx = 5000 + 16 * (e4 % 4);
		const uint32_t s0 = val(u, 0, 12), s1 = val(u, 0, 13);
		if (cma) {
			void *dp[2] = {M[0], (char *)M[0] + cut};
			size_t dz[2] = {cut, (size_t)MW * 4 - cut};
			cudaMemLocation loc[1] = {onDev};
			size_t li[1] = {0};
			CK(cudaMemDiscardAndPrefetchBatchAsync(dp, dz, 2, loc, li, 1, 0, s));
			void *pp[2] = {M[2], M[1]};
			size_t pz[2] = {pf2, (size_t)MW * 4};
			CK(cudaMemPrefetchBatchAsync(pp, pz, 2, loc, li, 1, 0, s));
		}
		k_gen<<<MW / 256, 256, 0, s>>>(M[0], MW, s0);
		CKL();
		k_gen<<<MW / 256, 256, 0, s>>>(M[1], MW, s1);
		CKL();
		k_mix<<<NMIX / 256, 256, 0, s>>>(dD + oMx, M[0] + p0, M[1] + p1, M[2] + p2, NMIX);
		CKL();
		for (int i = 0; i < NMIX; i++)
			mw(BD, oMx + i) ^= hx(s0, p0 + i) + 3u * hx(s1, p1 + i) + 7u * val(u, p2 + i, 7);
		if (cma) {
			void *pp[2] = {M[0], M[2] + MW / 2};
			size_t pz[2] = {(size_t)MW * 4, (size_t)MW * 2};
			cudaMemLocation loc[2] = {onHost, onDev};
			size_t li[2] = {0, 1};
			CK(cudaMemPrefetchBatchAsync(pp, pz, 2, loc, li, 2, 0, s));
			void *xp[1] = {M[1]};
			size_t xz[1] = {(size_t)MW * 4};
			CK(cudaMemDiscardBatchAsync(xp, xz, 1, 0, s));
		}

		// 10: read everything back and compare with the model.
		CK(cudaMemcpyAsync(hAll, dA, 4 * NB, cudaMemcpyDeviceToHost, s));
		CK(cudaStreamSynchronize(s));
		expect_u32("batch_d2h", it, hOut, expOut, nOut);
		expect_u32("bounce", it, hBn, expBn, nB);
		expect_u8("batch3d_d2h", it, h3out, exp3, (long)(W2 * H2 * D2));
		static const char *names[4] = {"bufA", "bufB", "bufC", "bufD"};
		for (int b = 0; b < 4; b++)
			expect_u32(names[b], it, hAll + b * NW, &mw(b, 0), NW);
		for (int i = 0; i < MW; i++)
			expect("managed_m0", it, i, M[0][i], hx(s0, i));
	}
	return finish();
}
