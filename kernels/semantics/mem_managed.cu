#include "mem_common.cuh"

// managed: cudaMallocManaged buffers and a __managed__ array the host writes
// every iteration after cudaDeviceSynchronize and kernels consume;
// cudaMemPrefetchAsync (CUDA 13 form, cudaMemLocation) to the device before
// the kernels and to the host after them (skipped, identically each time,
// where the device lacks concurrentManagedAccess); copies with
// cudaMemcpyDefault from and to managed memory between held-looking device
// kernels (their order with the kernels matters), a memset of managed
// memory, kernels that write managed memory directly and through a pointer
// kept in device memory, and a kernel that reads the __managed__ array with
// no pointer in its arguments.
constexpr int N = 16384;
constexpr int ITERS = 64;
constexpr int TB = 256;

__managed__ uint32_t mv[64];

struct Ptrs {
	uint32_t *mo4;
};

__global__ void k1(const uint32_t *min, uint32_t *a, int n, uint32_t it)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		a[i] = min[i] * 5u + it;
}
__global__ void k2(const uint32_t *a, const uint32_t *b, uint32_t *mout, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		mout[i] = a[i] ^ b[(i + 1) & (N - 1)];
}
__global__ void k3(uint32_t *a, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		a[i] = a[i] * 7u + mv[i & 63];
}
__global__ void k4(const uint32_t *a, uint32_t *c, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		c[i] = a[((uint32_t)i * 3u) & (N - 1)] + 1u;
}
__global__ void k5(const Ptrs *P, const uint32_t *c, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		P->mo4[i] = c[i] ^ 0x55555555u;
}

static uint32_t rin[N], rA[N], rC[N], rmv[64];

int main()
{
	g_name = "managed";
	int dev = 0, cma = 0, mm = 0;
	CK(cudaGetDevice(&dev));
	CK(cudaDeviceGetAttribute(&mm, cudaDevAttrManagedMemory, dev));
	CK(cudaDeviceGetAttribute(&cma, cudaDevAttrConcurrentManagedAccess, dev));
	if (!mm) {
		printf("CUDA_ERROR: device has no managed memory\n");
		return 2;
	}
	uint32_t *m_in, *m_out, *m_out2, *m_out3, *m_out4;
	CK(cudaMallocManaged((void **)&m_in, N * 4, cudaMemAttachGlobal));
	CK(cudaMallocManaged((void **)&m_out, N * 4, cudaMemAttachGlobal));
	CK(cudaMallocManaged((void **)&m_out2, N * 4, cudaMemAttachGlobal));
	CK(cudaMallocManaged((void **)&m_out3, N * 4, cudaMemAttachGlobal));
	CK(cudaMallocManaged((void **)&m_out4, N * 4, cudaMemAttachGlobal));
	uint32_t *dA, *dB, *dC;
	Ptrs *dPtrs;
	CK(cudaMalloc((void **)&dA, N * 4));
	CK(cudaMalloc((void **)&dB, N * 4));
	CK(cudaMalloc((void **)&dC, N * 4));
	CK(cudaMalloc((void **)&dPtrs, sizeof(Ptrs)));
	Ptrs hp = { m_out4 };
	CK(cudaMemcpy(dPtrs, &hp, sizeof hp, cudaMemcpyHostToDevice));
	cudaMemLocation locDev = {}, locHost = {};
	locDev.type = cudaMemLocationTypeDevice;
	locDev.id = dev;
	locHost.type = cudaMemLocationTypeHost;
	locHost.id = 0;
	if (cma)
		CK(cudaMemAdvise(m_in, N * 4, cudaMemAdviseSetAccessedBy, locDev));
	cudaStream_t s;
	CK(cudaStreamCreate(&s));
	CK(cudaDeviceSynchronize());
	const unsigned G = blocks(N, TB);

	for (int it = 0; it < ITERS; it++) {
		const uint32_t uit = (uint32_t)it;
		// The host writes managed memory; the device is idle.
		for (int i = 0; i < N; i++)
			m_in[i] = rin[i] = val(it, i, 1);
		for (int j = 0; j < 64; j++)
			mv[j] = rmv[j] = val(it, j, 2);
		if (cma)
			CK(cudaMemPrefetchAsync(m_in, N * 4, locDev, 0, s));
		k1<<<G, TB, 0, s>>>(m_in, dA, N, uit);
		CKL();
		CK(cudaMemcpyAsync(dB, m_in, N * 4, cudaMemcpyDefault, s));      // managed -> device
		k2<<<G, TB, 0, s>>>(dA, dB, m_out, N);
		CKL();
		k3<<<G, TB, 0, s>>>(dA, N);                                         // reads mv
		CKL();
		CK(cudaMemcpyAsync(m_out2, dA, N * 4, cudaMemcpyDefault, s));    // device -> managed
		const uint8_t v = (uint8_t)val(it, 0, 3);
		CK(cudaMemsetAsync(m_out3, v, N * 2, s));                          // first half
		k4<<<G, TB, 0, s>>>(dA, dC, N);
		CKL();
		CK(cudaMemcpyAsync(m_out3 + N / 2, dC, N * 2, cudaMemcpyDefault, s));   // second half
		k5<<<G, TB, 0, s>>>(dPtrs, dC, N);                                 // managed via device table
		CKL();
		if (cma)
			CK(cudaMemPrefetchAsync(m_out, N * 4, locHost, 0, s));
		CK(cudaDeviceSynchronize());

		for (uint32_t i = 0; i < (uint32_t)N; i++)
			rA[i] = rin[i] * 5u + uit;
		for (uint32_t i = 0; i < (uint32_t)N; i++)
			expect("k2:managed-out", it, i, m_out[i], rA[i] ^ rin[(i + 1) & (N - 1)]);
		for (uint32_t i = 0; i < (uint32_t)N; i++)
			rA[i] = rA[i] * 7u + rmv[i & 63];
		expect_u32("copy-into-managed", it, m_out2, rA, N);
		for (uint32_t i = 0; i < (uint32_t)N; i++)
			rC[i] = rA[(i * 3u) & (N - 1)] + 1u;
		for (int i = 0; i < N / 2; i++)
			expect("memset-managed", it, i, m_out3[i], 0x01010101u * v);
		expect_u32("copy-into-managed-hi", it, m_out3 + N / 2, rC, N / 2);
		for (int i = 0; i < N; i++)
			expect("indirect-managed", it, i, m_out4[i], rC[i] ^ 0x55555555u);
		// Scribble over the outputs for the next iteration.
		memset(m_out, 0x11, N * 4);
		memset(m_out2, 0x22, N * 4);
		memset(m_out3, 0x33, N * 4);
		memset(m_out4, 0x44, N * 4);
	}
	return finish();
}
