#include "mem_common.cuh"

// copy_rotate: device-to-device copies whose addresses and sizes change at
// every iteration, among kernels whose arguments change too (a graph that
// gets an updater, its copies then kernels of cgraft's): a small copy at odd
// byte offsets that grows by 13 bytes an iteration, a large aligned one that
// shrinks by a word, one on 8 bytes that grows by 4, between three buffers
// in turn. The host repeats every
// step on its own arrays afterwards; every byte is checked at the end.
constexpr int TB = 256;
constexpr int NY = 16384; // words
constexpr int ITERS = 160, K = 6;

__global__ void kmul(uint32_t *y, int n, uint32_t c)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = y[i] * 3u + c;
}
__global__ void kmix(uint32_t *y, const uint32_t *b, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] ^= b[(i * 7) & (n - 1)];
}

static uint32_t hY[NY], hB[3][NY], got[NY];

int main()
{
	g_name = "copy_rotate";
	cudaStream_t s;
	CK(cudaStreamCreate(&s));
	uint32_t *Y, *B[3];
	CK(cudaMalloc(&Y, sizeof hY));
	for (int i = 0; i < NY; i++)
		hY[i] = val(0, i, 1);
	CK(cudaMemcpy(Y, hY, sizeof hY, cudaMemcpyHostToDevice));
	for (int j = 0; j < 3; j++) {
		CK(cudaMalloc(&B[j], sizeof hB[j]));
		for (int i = 0; i < NY; i++)
			hB[j][i] = val(j + 1, i, 2);
		CK(cudaMemcpy(B[j], hB[j], sizeof hB[j], cudaMemcpyHostToDevice));
	}
	for (int it = 0; it < ITERS; it++) {
		for (int k = 0; k < K; k++) {
			kmul<<<blocks(NY, TB), TB, 0, s>>>(Y, NY, (uint32_t)it * 7u + (uint32_t)k);
			CKL();
		}
		CK(cudaMemcpyAsync((char *)B[it % 3] + it % 7, (const char *)Y + it % 5, 1000 + (size_t)it * 13,
				   cudaMemcpyDeviceToDevice, s));
		CK(cudaMemcpyAsync(B[(it + 1) % 3], Y, (size_t)(NY - it) * 4, cudaMemcpyDeviceToDevice, s));
		CK(cudaMemcpyAsync((char *)B[(it + 2) % 3] + 4096 + 8 * (it % 3), (const char *)Y + 8 + 16 * (it % 4),
				   2000 + (size_t)it * 4, cudaMemcpyDeviceToDevice, s));
		kmix<<<blocks(NY, TB), TB, 0, s>>>(Y, B[(it + 2) % 3], NY);
		CKL();
		CK(cudaStreamSynchronize(s));
	}
	// The same steps on the host, once the device's are done.
	static uint32_t t[NY];
	for (int it = 0; it < ITERS; it++) {
		for (int k = 0; k < K; k++)
			for (int i = 0; i < NY; i++)
				hY[i] = hY[i] * 3u + (uint32_t)it * 7u + (uint32_t)k;
		memcpy((char *)hB[it % 3] + it % 7, (const char *)hY + it % 5, 1000 + (size_t)it * 13);
		memcpy(hB[(it + 1) % 3], hY, (size_t)(NY - it) * 4);
		memcpy((char *)hB[(it + 2) % 3] + 4096 + 8 * (it % 3), (const char *)hY + 8 + 16 * (it % 4),
		       2000 + (size_t)it * 4);
		for (int i = 0; i < NY; i++)
			t[i] = hY[i] ^ hB[(it + 2) % 3][(i * 7) & (NY - 1)];
		memcpy(hY, t, sizeof t);
	}
	CK(cudaMemcpy(got, Y, sizeof got, cudaMemcpyDeviceToHost));
	expect_u32("Y", ITERS, got, hY, NY);
	for (int j = 0; j < 3; j++) {
		CK(cudaMemcpy(got, B[j], sizeof got, cudaMemcpyDeviceToHost));
		expect_u32("B", ITERS, got, hB[j], NY);
	}
	return finish();
}
