// Node updates from the host against updates applied on the device by a kernel
// at the head of the graph (device-updatable kernel nodes, CUDA 12.4+).
//
//   nvcc -O2 -arch=sm_90 -rdc=true -DWORDS_=81 -o devupdate scripts/probes/devupdate.cu -lcudadevrt -lcuda
//   ./devupdate [nodes]
// So linked (the device runtime's library), mode dev's head kernel sets a node
// wrong now and then, as docs/architecture.md records; cgraft's updater is
// built as a whole program (src/gen_updater.py).
// With DEVUPD_CUBIN=file, the head kernel of mode dev is devupdate_kernel.cuh's,
// loaded through the driver from a cubin built on its own (-cubin -rdc=true,
// then nvlink with -lcudadevrt, or not).
//
// A graph of `nodes` kernels in a chain, each taking a struct of `words` 8-byte
// words and writing a checksum of it. Each launch changes k nodes' first word.
// Modes, host time per launch (updates included), median of blocks:
//   host   cudaGraphExecKernelNodeSetParams for each changed node, then launch
//   dev    one host update of the head kernel's parameters (the changed words,
//          where they go), which sets them on the device, then launch
//   mail   the head kernel reads the changed words from a pinned ring the host
//          wrote: no update at all, a memcpy and the launch
// Every mode's results are checked against the host's checksums.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda.h>
#include <cuda_runtime.h>
#include "devupdate_kernel.cuh"
#define CK(x)                                                                                      \
	do {                                                                                       \
		cudaError_t e_ = (x);                                                              \
		if (e_ != cudaSuccess) {                                                           \
			fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

#ifndef WORDS_
#define WORDS_ 81
#endif
enum { MAXW = WORDS_, MAXR = MAXR_, RING = 64 };

struct P {
	unsigned long long w[MAXW];
};

__device__ unsigned long long sum(const unsigned long long *w, int n)
{
	unsigned long long s = 0;
	for (int k = 0; k < n; k++)
		s = s * 1000003ull + w[k];
	return s;
}

// The target's parameters: the words, then out, i and the count summed.
__global__ void target(const __grid_constant__ P p, unsigned long long *out, int i, int n)
{
	if (threadIdx.x == 0 && blockIdx.x == 0)
		out[i] = sum(p.w, n);
}


struct Slot {
	unsigned long long seq;
	int n;
	Rec r[MAXR];
};
__global__ void mailer(const Slot *ring, unsigned long long *dev_seq, volatile unsigned long long *consumed)
{
	__shared__ unsigned long long s;
	if (threadIdx.x == 0)
		s = *dev_seq;
	__syncthreads();
	const volatile Slot *sl = ring + s % RING;
	int n = sl->n;
	for (int k = threadIdx.x; k < n; k += blockDim.x) {
		Rec r;
		r.node = sl->r[k].node;
		r.off = sl->r[k].off;
		r.val = sl->r[k].val;
		cudaGraphKernelNodeSetParam(r.node, r.off, &r.val, 8);
	}
	__syncthreads();
	if (threadIdx.x == 0) {
		*dev_seq = s + 1;
		__threadfence_system();
		*consumed = s + 1;
	}
}

static double now_us()
{
	return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

static unsigned long long hsum(const unsigned long long *w, int n)
{
	unsigned long long s = 0;
	for (int k = 0; k < n; k++)
		s = s * 1000003ull + w[k];
	return s;
}

struct G {
	cudaGraph_t g;
	cudaGraphExec_t x;
	cudaGraphNode_t head;
	std::vector<cudaGraphNode_t> nodes;
	std::vector<cudaGraphDeviceNode_t> dev;
	std::vector<P> vals; // what the nodes hold now
};

static int NODES = 64, WORDS = MAXW;
static unsigned long long *d_out, *d_seq, *h_consumed;
static Slot *h_ring;
static U hu;
static CUfunction loaded; // the updater from a cubin of its own (DEVUPD_CUBIN)

static void kparams(G &g, int i, cudaKernelNodeParams &kp, void **args, int *ip, int *np)
{
	*ip = i;
	*np = WORDS;
	args[0] = &g.vals[i];
	args[1] = &d_out;
	args[2] = ip;
	args[3] = np;
	kp = {};
	kp.func = (void *)target;
	kp.gridDim = dim3(1);
	kp.blockDim = dim3(32);
	kp.kernelParams = args;
}

// The head kernel's node parameters, hu its blob.
static cudaKernelNodeParams head_params(void **a, unsigned threads)
{
	a[0] = &hu;
	cudaKernelNodeParams kp = {};
	kp.func = (void *)updater;
	kp.gridDim = dim3(1);
	kp.blockDim = dim3(threads);
	kp.kernelParams = a;
	return kp;
}

// The same through the driver, for the head kernel loaded from a cubin.
static CUDA_KERNEL_NODE_PARAMS loaded_params(void **a)
{
	a[0] = &hu;
	CUDA_KERNEL_NODE_PARAMS kp = {};
	kp.func = loaded;
	kp.gridDimX = kp.gridDimY = kp.gridDimZ = 1;
	kp.blockDimX = 128;
	kp.blockDimY = kp.blockDimZ = 1;
	kp.kernelParams = a;
	return kp;
}

// Makes n device-updatable: its device handle.
static cudaGraphDeviceNode_t devupdatable(cudaGraphNode_t n)
{
	cudaLaunchAttributeValue v = {};
	v.deviceUpdatableKernelNode.deviceUpdatable = 1;
	CK(cudaGraphKernelNodeSetAttribute(n, cudaLaunchAttributeDeviceUpdatableKernelNode, &v));
	CK(cudaGraphKernelNodeGetAttribute(n, cudaLaunchAttributeDeviceUpdatableKernelNode, &v));
	return v.deviceUpdatableKernelNode.devNode;
}

// mode 0 plain, 1 head kernel with parameters, 2 head kernel reading the ring
static G build(int mode)
{
	G g;
	g.vals.assign(NODES, P{});
	for (int i = 0; i < NODES; i++)
		for (int k = 0; k < WORDS; k++)
			g.vals[i].w[k] = 1000 * i + k;
	CK(cudaGraphCreate(&g.g, 0));
	cudaGraphNode_t prev = nullptr;
	if (mode == 1 && loaded) {
		hu.n = 0;
		void *a[1];
		CUDA_KERNEL_NODE_PARAMS kp = loaded_params(a);
		if (cuGraphAddKernelNode((CUgraphNode *)&g.head, (CUgraph)g.g, nullptr, 0, &kp) != CUDA_SUCCESS) {
			printf("adding the loaded updater failed\n");
			exit(1);
		}
		prev = g.head;
	} else if (mode == 1) {
		hu.n = 0;
		void *a[1];
		cudaKernelNodeParams kp = head_params(a, 128);
		CK(cudaGraphAddKernelNode(&g.head, g.g, nullptr, 0, &kp));
		prev = g.head;
	} else if (mode == 2) {
		void *a[] = { &h_ring, &d_seq, &h_consumed };
		cudaKernelNodeParams kp = {};
		kp.func = (void *)mailer;
		kp.gridDim = dim3(1);
		kp.blockDim = dim3(128);
		kp.kernelParams = a;
		CK(cudaGraphAddKernelNode(&g.head, g.g, nullptr, 0, &kp));
		prev = g.head;
	}
	for (int i = 0; i < NODES; i++) {
		cudaKernelNodeParams kp;
		void *args[4];
		int ii, nn;
		kparams(g, i, kp, args, &ii, &nn);
		cudaGraphNode_t n;
		CK(cudaGraphAddKernelNode(&n, g.g, prev ? &prev : nullptr, prev ? 1 : 0, &kp));
		g.nodes.push_back(n);
		g.dev.push_back(mode ? devupdatable(n) : nullptr);
		prev = n;
	}
	CK(cudaGraphInstantiate(&g.x, g.g, 0));
	return g;
}

static unsigned long long launches;

// One launch whose k changed nodes get new first words; returns host µs.
static double step(G &g, int mode, int k, cudaStream_t s, unsigned long long salt)
{
	double t0 = now_us();
	if (mode == 0) {
		for (int j = 0; j < k; j++) {
			int i = (int)((salt * 7 + j * 13) % NODES);
			g.vals[i].w[0] = salt * 131 + j;
			cudaKernelNodeParams kp;
			void *args[4];
			int ii, nn;
			kparams(g, i, kp, args, &ii, &nn);
			CK(cudaGraphExecKernelNodeSetParams(g.x, g.nodes[i], &kp));
		}
	} else if (mode == 1) {
		if (k) {
			hu.n = k;
			for (int j = 0; j < k; j++) {
				int i = (int)((salt * 7 + j * 13) % NODES);
				g.vals[i].w[0] = salt * 131 + j;
				hu.r[j].node = g.dev[i];
				hu.r[j].off = 0;
				hu.r[j].val = g.vals[i].w[0];
			}
			void *a[1];
			if (loaded) {
				CUDA_KERNEL_NODE_PARAMS kp = loaded_params(a);
				if (cuGraphExecKernelNodeSetParams((CUgraphExec)g.x, (CUgraphNode)g.head, &kp) != CUDA_SUCCESS)
					exit(1);
			} else {
				cudaKernelNodeParams kp = head_params(a, 128);
				CK(cudaGraphExecKernelNodeSetParams(g.x, g.head, &kp));
			}
		}
	} else {
		while (launches - *(volatile unsigned long long *)h_consumed >= RING - 1)
			;
		Slot *sl = h_ring + launches % RING;
		sl->n = k;
		for (int j = 0; j < k; j++) {
			int i = (int)((salt * 7 + j * 13) % NODES);
			g.vals[i].w[0] = salt * 131 + j;
			sl->r[j].node = g.dev[i];
			sl->r[j].off = 0;
			sl->r[j].val = g.vals[i].w[0];
		}
	}
	CK(cudaGraphLaunch(g.x, s));
	if (mode == 2)
		launches++;
	return now_us() - t0;
}

static int check(G &g, const char *what)
{
	std::vector<unsigned long long> out(NODES);
	CK(cudaMemcpy(out.data(), d_out, NODES * 8, cudaMemcpyDeviceToHost));
	int bad = 0;
	for (int i = 0; i < NODES; i++)
		bad += out[i] != hsum(g.vals[i].w, WORDS);
	if (bad)
		printf("  %s: %d of %d nodes wrong\n", what, bad, NODES);
	return bad;
}

// Whether values set on the device survive host updates of the graph's other
// nodes: U -> T0 (device-updatable) -> T1 (plain) -> M (memset). U sets T0's
// first word; then U is emptied, and T1, M or U alone updated from the host;
// T0 must keep the word U gave it.
static int survive()
{
	int bad = 0;
	const char *what[] = { "head emptied", "head emptied, plain kernel updated", "head emptied, memset updated",
			       "head emptied, upload", "head unchanged, plain kernel updated" };
	unsigned *d_m;
	CK(cudaMalloc(&d_m, 64));
	for (int c = 0; c < 5; c++) {
		G g;
		g.vals.assign(2, P{});
		CK(cudaGraphCreate(&g.g, 0));
		hu.n = 0;
		void *a[1];
		cudaKernelNodeParams up = head_params(a, 32);
		CK(cudaGraphAddKernelNode(&g.head, g.g, nullptr, 0, &up));
		cudaGraphNode_t prev = g.head, n;
		for (int i = 0; i < 2; i++) {
			cudaKernelNodeParams kp;
			void *args[4];
			int ii, nn;
			kparams(g, i, kp, args, &ii, &nn);
			CK(cudaGraphAddKernelNode(&n, g.g, &prev, 1, &kp));
			g.nodes.push_back(n);
			g.dev.push_back(i == 0 ? devupdatable(n) : nullptr);
			prev = n;
		}
		cudaMemsetParams mp = {};
		mp.dst = d_m;
		mp.elementSize = 4;
		mp.width = 16;
		mp.height = 1;
		mp.value = 7;
		cudaGraphNode_t m;
		CK(cudaGraphAddMemsetNode(&m, g.g, &prev, 1, &mp));
		CK(cudaGraphInstantiate(&g.x, g.g, 0));
		cudaStream_t s;
		CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
		CK(cudaGraphUpload(g.x, s));
		hu.n = 1;
		hu.r[0].node = g.dev[0];
		hu.r[0].off = 0;
		hu.r[0].val = g.vals[0].w[0] = 4242;
		CK(cudaGraphExecKernelNodeSetParams(g.x, g.head, &up));
		CK(cudaGraphLaunch(g.x, s));
		CK(cudaStreamSynchronize(s));
		NODES = 2;
		bad += check(g, "set on the device");
		if (c != 4) {
			hu.n = 0;
			CK(cudaGraphExecKernelNodeSetParams(g.x, g.head, &up));
		}
		if (c == 1 || c == 4) {
			cudaKernelNodeParams kp;
			void *args[4];
			int ii, nn;
			g.vals[1].w[0] = 99;
			kparams(g, 1, kp, args, &ii, &nn);
			CK(cudaGraphExecKernelNodeSetParams(g.x, g.nodes[1], &kp));
		}
		if (c == 2) {
			mp.value = 9;
			CK(cudaGraphExecMemsetNodeSetParams(g.x, m, &mp));
		}
		if (c == 3)
			CK(cudaGraphUpload(g.x, s));
		CK(cudaGraphLaunch(g.x, s));
		CK(cudaStreamSynchronize(s));
		int b = check(g, what[c]);
		printf("survive, %s: %s\n", what[c], b ? "the word set on the device is LOST" : "kept");
		bad += b;
		CK(cudaGraphExecDestroy(g.x));
		CK(cudaGraphDestroy(g.g));
		CK(cudaStreamDestroy(s));
	}
	return bad;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		NODES = atoi(argv[1]);
	cudaStream_t s;
	CK(cudaFree(0));
	if (getenv("DEVUPD_FATBIN")) {
		CUmodule m;
		CUresult r = cuModuleLoad(&m, getenv("DEVUPD_FATBIN"));
		printf("loading %s: error %d\n", getenv("DEVUPD_FATBIN"), (int)r);
		const char *fn[] = { "cg_updater_1k", "cg_updater_4k", "cg_updater_16k", "cg_updater_32k" };
		for (int i = 0; r == CUDA_SUCCESS && i < 4; i++) {
			CUfunction f;
			int nreg = -1;
			CUresult e = cuModuleGetFunction(&f, m, fn[i]);
			if (e == CUDA_SUCCESS)
				cuFuncGetAttribute(&nreg, CU_FUNC_ATTRIBUTE_NUM_REGS, f);
			printf("  %s: error %d, %d registers\n", fn[i], (int)e, nreg);
		}
		return 0;
	}
	if (getenv("DEVUPD_CUBIN")) {
		CUmodule m;
		CUresult r = cuModuleLoad(&m, getenv("DEVUPD_CUBIN"));
		if (r == CUDA_SUCCESS)
			r = cuModuleGetFunction(&loaded, m, "cg_probe_updater");
		printf("loading %s: error %d\n", getenv("DEVUPD_CUBIN"), (int)r);
		if (r != CUDA_SUCCESS)
			return 2;
	}
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CK(cudaMalloc(&d_out, NODES * 8));
	CK(cudaMalloc(&d_seq, 8));
	CK(cudaMemset(d_seq, 0, 8));
	CK(cudaHostAlloc(&h_consumed, 8, cudaHostAllocMapped));
	*h_consumed = 0;
	CK(cudaHostAlloc(&h_ring, sizeof(Slot) * RING, cudaHostAllocMapped));
	printf("nodes %d, %d-byte parameters each\n", NODES, WORDS * 8 + 20);
	const char *names[] = { "host", "dev", "mail" };
	int bad = 0;
	G gs[3];
	for (int m = 0; m < 3; m++)
		gs[m] = build(m);
	unsigned long long salt = 1;
	// correctness: each launch checked
	for (int m = 0; m < 3; m++) {
		for (int it = 0; it < 40; it++) {
			step(gs[m], m, 1 + it % 9, s, salt++);
			CK(cudaStreamSynchronize(s));
			bad += check(gs[m], names[m]);
		}
		// many launches back to back, then the last one checked
		for (int it = 0; it < 300; it++)
			step(gs[m], m, it % 5, s, salt++);
		CK(cudaStreamSynchronize(s));
		bad += check(gs[m], names[m]);
	}
	printf("correctness: %s\n", bad ? "WRONG" : "every launch's results as the host computed");
	int nodes = NODES;
	survive();
	NODES = nodes;
	int ks[] = { 0, 1, 8, 35, 64 };
	// (k is at most MAXR)
	for (int rep = 0; rep < 2; rep++)
		for (int ki = 0; ki < 5; ki++) {
			int k = ks[ki];
			if (k > NODES)
				continue;
			printf("k=%2d changed:", k);
			for (int m = 0; m < 3; m++) {
				std::vector<double> blk;
				for (int b = 0; b < 30; b++) {
					double t = 0;
					for (int it = 0; it < 20; it++)
						t += step(gs[m], m, k, s, salt++);
					CK(cudaStreamSynchronize(s));
					blk.push_back(t / 20);
				}
				std::sort(blk.begin(), blk.end());
				// GPU time of 50 launches back to back
				cudaEvent_t e0, e1;
				CK(cudaEventCreate(&e0));
				CK(cudaEventCreate(&e1));
				CK(cudaEventRecord(e0, s));
				for (int it = 0; it < 50; it++)
					step(gs[m], m, k, s, salt++);
				CK(cudaEventRecord(e1, s));
				CK(cudaEventSynchronize(e1));
				float ms;
				CK(cudaEventElapsedTime(&ms, e0, e1));
				bad += check(gs[m], names[m]);
				printf("  %s %7.2f us host (q1 %.2f q3 %.2f), %7.2f us/launch GPU;", names[m], blk[15], blk[7],
				       blk[22], ms * 1000 / 50);
			}
			printf("\n");
		}
	// The head kernel disabled: what a graph with device-updatable nodes
	// costs when nothing changes.
	CK(cudaGraphNodeSetEnabled(gs[1].x, gs[1].head, 0));
	for (int rep = 0; rep < 2; rep++) {
		std::vector<double> a[2];
		for (int b = 0; b < 30; b++)
			for (int m = 0; m < 2; m++) {
				double t = 0;
				for (int it = 0; it < 20; it++)
					t += step(gs[m], m, 0, s, salt++);
				CK(cudaStreamSynchronize(s));
				a[m].push_back(t / 20);
			}
		for (int m = 0; m < 2; m++)
			std::sort(a[m].begin(), a[m].end());
		double gpu[2];
		for (int m = 0; m < 2; m++) {
			cudaEvent_t e0, e1;
			CK(cudaEventCreate(&e0));
			CK(cudaEventCreate(&e1));
			CK(cudaEventRecord(e0, s));
			for (int it = 0; it < 50; it++)
				step(gs[m], m, 0, s, salt++);
			CK(cudaEventRecord(e1, s));
			CK(cudaEventSynchronize(e1));
			float ms;
			CK(cudaEventElapsedTime(&ms, e0, e1));
			gpu[m] = ms * 1000 / 50;
		}
		printf("nothing changed: plain %.2f us host %.2f GPU; head disabled %.2f us host %.2f GPU\n", a[0][15], gpu[0],
		       a[1][15], gpu[1]);
	}
	bad += check(gs[1], "head disabled");
	printf("after timing: %s\n", bad ? "WRONG" : "all results as computed");
	return bad != 0;
}
