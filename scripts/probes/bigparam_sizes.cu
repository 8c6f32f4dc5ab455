// Eager against graph for kernels of 4,000 to 32,000 bytes of
// __grid_constant__ parameters, one thread summing them, with a 28,000-byte
// __constant__ array in the module (none with -DNO_CONST; -DNO_CONST
// -DOTHER_KERNEL puts a kernel reading global memory in its place).
// Microseconds a kernel over 640 launches, eager and as a captured graph of
// 64, three times. -DOTHER_MODULE: see bigparam_other.cu. -DCONST_INTS=N sizes the __constant__ array (7,000 ints).
//   nvcc -O2 -arch=native -o bigparam_sizes bigparam_sizes.cu && ./bigparam_sizes
#include <cuda_runtime.h>
#include <stdio.h>

#define N 640
#define PER_GRAPH 64

#ifndef CONST_INTS
#define CONST_INTS 7000
#endif
#ifndef NO_CONST
__constant__ int excess[CONST_INTS];
__global__ void use_excess(int *out)
{
	int t = 0;
	for (int i = 0; i < CONST_INTS; i++)
		t += excess[i];
	*out = t;
}
#elif defined(OTHER_KERNEL)
__device__ int excess[7000];
__global__ void use_excess(int *out)
{
	int t = 0;
	for (int i = 0; i < 7000; i++)
		t += excess[i];
	*out = t;
}
#endif

template <int K> struct big {
	int v[K];
};

template <int K> __global__ void sum_big(__grid_constant__ const big<K> p, int *out)
{
	int t = 0;
	for (int i = 0; i < K; i++)
		t += p.v[i];
	*out = t;
}

template <int K> static int one(cudaStream_t s, int *d_out)
{
	static big<K> P;
	for (int i = 0; i < K; i++)
		P.v[i] = i & 0xff;
	cudaGraph_t g;
	cudaGraphExec_t ge;
	cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
	for (int i = 0; i < PER_GRAPH; i++)
		sum_big<K><<<1, 1, 0, s>>>(P, d_out);
	if (cudaStreamEndCapture(s, &g) || cudaGraphInstantiate(&ge, g, 0))
		return 1;
	cudaEvent_t a, b;
	cudaEventCreate(&a);
	cudaEventCreate(&b);
	for (int rep = 0; rep < 3; rep++) {
		float ms[2];
		for (int w = 0; w < 2; w++) {
			cudaStreamSynchronize(s);
			cudaEventRecord(a, s);
			if (!w)
				for (int i = 0; i < N; i++)
					sum_big<K><<<1, 1, 0, s>>>(P, d_out);
			else
				for (int i = 0; i < N / PER_GRAPH; i++)
					cudaGraphLaunch(ge, s);
			cudaEventRecord(b, s);
			cudaEventSynchronize(b);
			cudaEventElapsedTime(&ms[w], a, b);
		}
		printf("%6d bytes: eager %7.2f graph %7.2f us a kernel (graph/eager %.3f)\n", (int)sizeof P,
		       ms[0] * 1000 / N, ms[1] * 1000 / N, ms[1] / ms[0]);
	}
	return cudaGetLastError() != cudaSuccess;
}

#ifdef OTHER_MODULE
void other_launch(int *out);
#endif

int main()
{
	int *d_out;
	cudaStream_t s;
	cudaMalloc(&d_out, sizeof(int));
#ifdef OTHER_MODULE
	other_launch(d_out);
	cudaDeviceSynchronize();
#endif
	cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
	return one<1000>(s, d_out) | one<1020>(s, d_out) | one<1100>(s, d_out) | one<2000>(s, d_out) |
	       one<4000>(s, d_out) | one<8000>(s, d_out);
}
