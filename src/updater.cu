/* cgraft's node updater: the first node of a graph whose kernel nodes change
 * between launches. Its parameters carry the changes (records, then their
 * bytes); it applies them to the graph's device-updatable kernel nodes before
 * any of them runs, so that a launch costs one host update of its
 * parameters instead of one for each node changed. */
#include <cuda_runtime.h>

struct cg_upd_rec {
	unsigned long long node; /* cudaGraphDeviceNode_t */
	unsigned off;            /* where in the node's parameters (kind 0) */
	unsigned size;           /* bytes (kind 0) */
	unsigned data;           /* where its bytes lie, from the records' start (on 8 bytes) */
	unsigned kind;           /* bit 0: a grid (three u32), else parameter bytes; bit 1: its node's first */
};

template <int N> struct cg_upd_blob {
	unsigned n, pad;
	unsigned char b[N - 8];
};

/* One thread per node: the records of a node follow each other, the first
 * flagged; a node's records are applied in order by one thread. */
template <int N> __device__ void cg_apply(const cg_upd_blob<N> &u)
{
	const cg_upd_rec *r = (const cg_upd_rec *)u.b;
	for (unsigned k = threadIdx.x; k < u.n; k += blockDim.x) {
		if (!(r[k].kind & 2))
			continue;
		cudaGraphDeviceNode_t node = (cudaGraphDeviceNode_t)r[k].node;
		for (unsigned j = k; j < u.n && (j == k || !(r[j].kind & 2)); j++) {
			const unsigned char *d = u.b + r[j].data;
			if (r[j].kind & 1) {
				const unsigned *gd = (const unsigned *)d;
				cudaGraphKernelNodeSetGridDim(node, dim3(gd[0], gd[1], gd[2]));
			} else {
				cudaGraphKernelNodeSetParam(node, r[j].off, d, r[j].size);
			}
		}
	}
}

/* cgraft's copy kernel: a linear copy between device memory that changes
 * at most launches, as a kernel node the updater can change (a copy node
 * is updated from the host only). The two ranges never overlap: cgraft
 * keeps such a copy a copy node. Each thread copies 16 bytes a step where
 * both addresses allow it, else single bytes; the grid strides over the
 * whole, whatever its size. */
struct cg_copy_args {
	unsigned char *dst;
	const unsigned char *src;
	unsigned long long n;
};

/* The first n / sizeof(W) words of a; returns the bytes they hold. */
template <typename W>
__device__ unsigned long long cg_copy_words(const cg_copy_args &a, unsigned long long i, unsigned long long step)
{
	unsigned long long w = a.n / sizeof(W);
	for (unsigned long long k = i; k < w; k += step)
		((W *)a.dst)[k] = ((const W *)a.src)[k];
	return w * sizeof(W);
}

/* Words of the widest size both addresses lie on, then the bytes left. */
extern "C" __global__ void cg_copy(const __grid_constant__ cg_copy_args a)
{
	unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
	unsigned long long step = (unsigned long long)gridDim.x * blockDim.x, done = 0;
	unsigned long long al = (unsigned long long)a.dst | (unsigned long long)a.src;
	if (!(al & 15))
		done = cg_copy_words<uint4>(a, i, step);
	else if (!(al & 7))
		done = cg_copy_words<unsigned long long>(a, i, step);
	else if (!(al & 3))
		done = cg_copy_words<unsigned int>(a, i, step);
	else if (!(al & 1))
		done = cg_copy_words<unsigned short>(a, i, step);
	for (unsigned long long k = done + i; k < a.n; k += step)
		a.dst[k] = a.src[k];
}

#define CG_UPDATER(name, n)                                                                  \
	extern "C" __global__ void name(const __grid_constant__ cg_upd_blob<n> u) { cg_apply(u); }
CG_UPDATER(cg_updater_1k, 1024)
CG_UPDATER(cg_updater_2k, 2048)
CG_UPDATER(cg_updater_4k, 4096)
CG_UPDATER(cg_updater_8k, 8192)
CG_UPDATER(cg_updater_12k, 12288)
CG_UPDATER(cg_updater_16k, 16384)
CG_UPDATER(cg_updater_24k, 24576)
CG_UPDATER(cg_updater_32k, 32000)
