// How fast a kernel with 32,000 bytes of __grid_constant__ parameters runs
// eagerly and as graph nodes made in several ways (LargeKernelParameter's
// kernel: one thread sums its parameters). Prints microseconds a kernel over
// N launches, timed with events, for each way in turn, three times.
// "legacy" runs them on the legacy stream, "upload" uploads each graph on
// another stream first; "first" runs LargeKernelParameter's first loop before
// (a copy to a __constant__ array and a kernel of 4 KB of parameters, 1,000
// times), "nocopy" that loop without its copies, "once" with one iteration;
// "trivial" launches a kernel of one parameter once before.
//   nvcc -O2 -arch=native -o bigparam bigparam.cu -lcuda && ./bigparam [legacy] [upload]
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

#define TOTAL 8000
#define N 640
#define PER_GRAPH 64

struct big {
	int v[TOTAL];
};

struct small {
	int v[1024];
};

__constant__ int excess[TOTAL - 1024];

__global__ void sum_small(__grid_constant__ const small p, int *out)
{
	int t = 0;
	for (int i = 0; i < 1024; i++)
		t += p.v[i];
	for (int i = 0; i < TOTAL - 1024; i++)
		t += excess[i];
	*out = t;
}

__global__ void triv(int *out)
{
	*out = 0;
}

__global__ void sum_big(__grid_constant__ const big p, int *out)
{
	int t = 0;
	for (int i = 0; i < TOTAL; i++)
		t += p.v[i];
	*out = t;
}

#define CK(x)                                                                                  \
	do {                                                                                   \
		int e_ = (int)(x);                                                             \
		if (e_) {                                                                      \
			fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #x, e_); \
			return 1;                                                              \
		}                                                                              \
	} while (0)

static big P;
static int *d_out;

enum way { EAGER, CAPTURE, RT_NODE, DRV_KERNEL, DRV_FUNC, DRV_EXTRA, NWAYS };
static const char *names[] = { "eager", "captured", "runtime node", "driver CUkernel+ctx", "driver CUfunction",
			       "driver CUkernel, extra" };

static int make_graph(enum way w, cudaStream_t s, cudaGraphExec_t *ge)
{
	cudaGraph_t g;
	if (w == CAPTURE) {
		CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
		for (int i = 0; i < PER_GRAPH; i++)
			sum_big<<<1, 1, 0, s>>>(P, d_out);
		CK(cudaStreamEndCapture(s, &g));
		CK(cudaGraphInstantiate(ge, g, 0));
		return 0;
	}
	CK(cudaGraphCreate(&g, 0));
	void *argv[2] = { &P, &d_out };
	CUgraphNode prev = NULL;
	CUkernel k;
	CUfunction f;
	CUcontext ctx;
	CK(cudaGetKernel((cudaKernel_t *)&k, (const void *)sum_big));
	CK(cuCtxGetCurrent(&ctx));
	CK(cuKernelGetFunction(&f, k));
	struct {
		big p;
		int pad;
		int *out;
	} packed;
	size_t psize = 32008;
	memcpy(&packed.p, &P, sizeof P);
	char buf[32016];
	memcpy(buf, &P, sizeof P);
	memcpy(buf + 32000, &d_out, sizeof d_out);
	void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &psize, CU_LAUNCH_PARAM_END };
	for (int i = 0; i < PER_GRAPH; i++) {
		CUgraphNode n;
		if (w == RT_NODE) {
			cudaKernelNodeParams kp = {};
			kp.func = (void *)sum_big;
			kp.gridDim = dim3(1);
			kp.blockDim = dim3(1);
			kp.kernelParams = argv;
			CK(cudaGraphAddKernelNode((cudaGraphNode_t *)&n, g, (cudaGraphNode_t *)(prev ? &prev : NULL),
						  prev ? 1 : 0, &kp));
		} else {
			CUDA_KERNEL_NODE_PARAMS kp;
			memset(&kp, 0, sizeof kp);
			if (w == DRV_FUNC) {
				kp.func = f;
			} else {
				kp.kern = k;
				kp.ctx = ctx;
			}
			kp.gridDimX = kp.gridDimY = kp.gridDimZ = 1;
			kp.blockDimX = kp.blockDimY = kp.blockDimZ = 1;
			if (w == DRV_EXTRA)
				kp.extra = extra;
			else
				kp.kernelParams = argv;
			CK(cuGraphAddKernelNode(&n, (CUgraph)g, prev ? &prev : NULL, prev ? 1 : 0, &kp));
		}
		prev = n;
	}
	(void)packed;
	CK(cudaGraphInstantiate(ge, g, 0));
	return 0;
}

int main(int argc, char **argv)
{
	int legacy = 0, upload = 0, first = 0, nocopy = 0, once = 0, trivial = 0;
	for (int i = 1; i < argc; i++) {
		first |= !strcmp(argv[i], "first");
		nocopy |= !strcmp(argv[i], "nocopy");
		once |= !strcmp(argv[i], "once");
		trivial |= !strcmp(argv[i], "trivial");
		legacy |= !strcmp(argv[i], "legacy");
		upload |= !strcmp(argv[i], "upload");
	}
	for (int i = 0; i < TOTAL; i++)
		P.v[i] = i & 0xff;
	CK(cudaMalloc(&d_out, sizeof(int)));
	cudaStream_t s;
	cudaStream_t other;
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CK(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
	cudaStream_t capture = s;
	cudaEvent_t a, b;
	CK(cudaEventCreate(&a));
	CK(cudaEventCreate(&b));
	if (first || nocopy) {
		static small sp;
		static int host_excess[TOTAL - 1024];
		for (int i = 0; i < 1024; i++)
			sp.v[i] = i & 0xff;
		for (int i = 0; i < TOTAL - 1024; i++)
			host_excess[i] = (i + 1024) & 0xff;
		for (int i = 0; i < (once ? 1 : 1000); i++) {
			if (!nocopy)
				CK(cudaMemcpyToSymbol(excess, host_excess, sizeof host_excess, 0, cudaMemcpyHostToDevice));
			sum_small<<<1, 1>>>(sp, d_out);
		}
		CK(cudaDeviceSynchronize());
	}
	if (trivial) {
		triv<<<1, 1>>>(d_out);
		CK(cudaDeviceSynchronize());
	}
	cudaGraphExec_t ge[NWAYS] = {};
	for (int w = CAPTURE; w < NWAYS; w++)
		if (make_graph((enum way)w, capture, &ge[w]) || (upload && cudaGraphUpload(ge[w], other)))
			return 1;
	CK(cudaDeviceSynchronize());
	if (legacy)
		s = 0;
	for (int rep = 0; rep < 3; rep++) {
		for (int w = 0; w < NWAYS; w++) {
			CK(cudaStreamSynchronize(s));
			CK(cudaEventRecord(a, s));
			if (w == EAGER)
				for (int i = 0; i < N; i++)
					sum_big<<<1, 1, 0, s>>>(P, d_out);
			else
				for (int i = 0; i < N / PER_GRAPH; i++)
					CK(cudaGraphLaunch(ge[w], s));
			CK(cudaEventRecord(b, s));
			CK(cudaEventSynchronize(b));
			float ms;
			CK(cudaEventElapsedTime(&ms, a, b));
			int h;
			CK(cudaMemcpy(&h, d_out, sizeof h, cudaMemcpyDeviceToHost));
			printf("%-24s %7.2f us a kernel (sum %d)\n", names[w], ms * 1000 / N, h);
		}
	}
	return 0;
}
