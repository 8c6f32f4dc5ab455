// The head kernel of scripts/probes/devupdate.cu: sets 8-byte words of
// device-updatable kernel nodes' parameters from its own.
#pragma once
#include <cuda_runtime.h>
#ifndef MAXR_
#define MAXR_ 64
#endif
struct Rec {
	cudaGraphDeviceNode_t node;
	unsigned off;
	unsigned long long val;
};
struct U {
	int n;
	Rec r[MAXR_];
};

extern "C" __global__ void cg_probe_updater(const __grid_constant__ U u)
{
	for (int k = threadIdx.x; k < u.n; k += blockDim.x)
		cudaGraphKernelNodeSetParam(u.r[k].node, u.r[k].off, &u.r[k].val, 8);
}
#define updater cg_probe_updater
