/* A one-rank NCCL (libnccl.so.2) on the simulated device: each collective is
 * a kernel on the caller's stream, so stream order, events and capture
 * apply to it as to NCCL's own. Every collective also appends its element
 * count to a log in device memory when it runs: simNcclLog() reads it, and
 * a replay that reorders collectives or runs one twice shows there (the
 * programs give each call its own count). Groups queue their calls until
 * ncclGroupEnd, as NCCL does. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "sim.h"
#include "simnccl.h"

#define LOG_MAX 4096

struct ncclComm {
	int *dlog;      /* device: [0] entries, then counts in the order the calls ran */
	int dev;
	/* A communicator's calls run in the order they are made, whatever
	 * their streams: each waits for the one before (not while captured:
	 * in a graph, its edges order them). */
	cudaEvent_t last;
	int has_last;
};

static size_t elem_size(ncclDataType_t t)
{
	switch (t) {
	case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2:
		return 1;
	case ncclFloat16: case ncclBfloat16:
		return 2;
	case ncclInt32: case ncclUint32: case ncclFloat32:
		return 4;
	default:
		return 8;
	}
}

/* One rank: every collective copies what it is sent to where it receives
 * (a reduction over one rank is its input), then logs its number. */
static void k_collective(const sim_launch *l, void **a)
{
	const void *send = *(const void **)a[0];
	void *recv = *(void **)a[1];
	size_t bytes = *(size_t *)a[2];
	int *log = *(int **)a[3];
	int tag = *(int *)a[4];
	(void)l;
	if (send && recv && send != recv)
		memmove(recv, send, bytes);
	if (log[0] < LOG_MAX - 1)
		log[1 + log[0]++] = tag;
}

static pthread_once_t once = PTHREAD_ONCE_INIT;
static void register_kernels(void)
{
	static const size_t sz[] = { sizeof(void *), sizeof(void *), sizeof(size_t), sizeof(int *), sizeof(int) };
	simRegisterKernel(k_collective, "ncclDevKernel_Generic_1rank", 5, sz);
}

/* ---- groups ----------------------------------------------------------------------- */
struct pending {
	const void *send;
	void *recv;
	size_t bytes;
	ncclComm_t comm;
	cudaStream_t s;
	int tag;
};
static __thread int group_depth;
static __thread struct pending *queued;
static __thread int nqueued, capqueued;

static ncclResult_t launch(const struct pending *p)
{
	struct ncclComm *c = p->comm;
	enum cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
	if (cudaStreamIsCapturing(p->s, &cap) != cudaSuccess)
		return ncclUnhandledCudaError;
	int order = cap == cudaStreamCaptureStatusNone;
	if (order && c->has_last && cudaStreamWaitEvent(p->s, c->last, 0) != cudaSuccess)
		return ncclUnhandledCudaError;
	void *args[] = { (void *)&p->send, (void *)&p->recv, (void *)&p->bytes, &c->dlog, (void *)&p->tag };
	if (cudaLaunchKernel((const void *)k_collective, (dim3){ 1, 1, 1 }, (dim3){ 1, 1, 1 }, args, 0, p->s) !=
	    cudaSuccess)
		return ncclUnhandledCudaError;
	if (order) {
		if (cudaEventRecord(c->last, p->s) != cudaSuccess)
			return ncclUnhandledCudaError;
		c->has_last = 1;
	}
	return ncclSuccess;
}

static ncclResult_t collective(const void *send, void *recv, size_t count, ncclDataType_t t, ncclComm_t comm,
			       cudaStream_t s)
{
	if (!comm)
		return ncclInvalidArgument;
	struct pending p = { send, recv, count * elem_size(t), comm, s, (int)count };
	if (!group_depth)
		return launch(&p);
	if (nqueued == capqueued) {
		capqueued = capqueued ? 2 * capqueued : 16;
		queued = realloc(queued, (size_t)capqueued * sizeof *queued);
		if (!queued)
			return ncclSystemError;
	}
	queued[nqueued++] = p;
	return ncclSuccess;
}

ncclResult_t ncclGroupStart(void)
{
	group_depth++;
	return ncclSuccess;
}

ncclResult_t ncclGroupEnd(void)
{
	if (!group_depth)
		return ncclInvalidUsage;
	if (--group_depth)
		return ncclSuccess;
	ncclResult_t rc = ncclSuccess;
	for (int i = 0; i < nqueued && rc == ncclSuccess; i++)
		rc = launch(&queued[i]);
	nqueued = 0;
	return rc;
}

/* ---- communicators ------------------------------------------------------------------ */
ncclResult_t ncclGetVersion(int *version)
{
	*version = NCCL_VERSION_CODE;
	return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
	memset(id, 0, sizeof *id);
	return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
	(void)id;
	pthread_once(&once, register_kernels);
	if (nranks != 1 || rank != 0)
		return ncclInvalidUsage;
	struct ncclComm *c = calloc(1, sizeof *c);
	if (!c || cudaMalloc((void **)&c->dlog, LOG_MAX * sizeof(int)) != cudaSuccess ||
	    cudaMemset(c->dlog, 0, LOG_MAX * sizeof(int)) != cudaSuccess ||
	    cudaEventCreateWithFlags(&c->last, cudaEventDisableTiming) != cudaSuccess) {
		free(c);
		return ncclSystemError;
	}
	cudaGetDevice(&c->dev);
	*comm = c;
	return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
	if (!comm)
		return ncclInvalidArgument;
	cudaEventDestroy(comm->last);
	cudaFree(comm->dlog);
	free(comm);
	return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int *count)
{
	(void)comm;
	*count = 1;
	return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank)
{
	(void)comm;
	*rank = 0;
	return ncclSuccess;
}

ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device)
{
	*device = comm->dev;
	return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *err)
{
	(void)comm;
	*err = ncclSuccess;
	return ncclSuccess;
}

/* ---- collectives --------------------------------------------------------------------- */
ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, ncclDataType_t t, ncclRedOp_t op,
			   ncclComm_t comm, cudaStream_t s)
{
	(void)op;
	return collective(send, recv, count, t, comm, s);
}

ncclResult_t ncclBroadcast(const void *send, void *recv, size_t count, ncclDataType_t t, int root, ncclComm_t comm,
			   cudaStream_t s)
{
	return root ? ncclInvalidArgument : collective(send, recv, count, t, comm, s);
}

ncclResult_t ncclBcast(void *buff, size_t count, ncclDataType_t t, int root, ncclComm_t comm, cudaStream_t s)
{
	return ncclBroadcast(buff, buff, count, t, root, comm, s);
}

ncclResult_t ncclReduce(const void *send, void *recv, size_t count, ncclDataType_t t, ncclRedOp_t op, int root,
			ncclComm_t comm, cudaStream_t s)
{
	(void)op;
	return root ? ncclInvalidArgument : collective(send, recv, count, t, comm, s);
}

ncclResult_t ncclAllGather(const void *send, void *recv, size_t count, ncclDataType_t t, ncclComm_t comm,
			   cudaStream_t s)
{
	return collective(send, recv, count, t, comm, s);
}

ncclResult_t ncclReduceScatter(const void *send, void *recv, size_t count, ncclDataType_t t, ncclRedOp_t op,
			       ncclComm_t comm, cudaStream_t s)
{
	(void)op;
	return collective(send, recv, count, t, comm, s);
}

ncclResult_t ncclSend(const void *send, size_t count, ncclDataType_t t, int peer, ncclComm_t comm, cudaStream_t s)
{
	(void)send, (void)count, (void)t, (void)peer, (void)comm, (void)s;
	return ncclInvalidUsage; /* one rank has no peer */
}

ncclResult_t ncclRecv(void *recv, size_t count, ncclDataType_t t, int peer, ncclComm_t comm, cudaStream_t s)
{
	(void)recv, (void)count, (void)t, (void)peer, (void)comm, (void)s;
	return ncclInvalidUsage;
}

int simNcclLog(ncclComm_t comm, int *out, int max)
{
	int n = 0;
	if (cudaMemcpy(&n, comm->dlog, sizeof n, cudaMemcpyDeviceToHost) != cudaSuccess)
		return -1;
	if (n > max)
		n = max;
	if (n && cudaMemcpy(out, comm->dlog + 1, (size_t)n * sizeof(int), cudaMemcpyDeviceToHost) != cudaSuccess)
		return -1;
	return n;
}
