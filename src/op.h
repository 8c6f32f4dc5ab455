/* The normalised op: one piece of stream work, whichever face and entry point
 * it came in through, with what must be equal for two ops to share a graph
 * node (the shape) and what a node update may change (the values). */
#ifndef CG_OP_H
#define CG_OP_H

#include <errno.h>
#include <string.h>

#include "api.h"
#include "backend.h"
#include "base.h"
#include "stats.h"

enum cg_op_kind { CG_OP_KERNEL, CG_OP_COPY, CG_OP_MEMSET, CG_OP_HOST, CG_OP_RECORD, CG_OP_WAIT, CG_OP_NCCL };

/* The kinds a held op of may be implicit, the template's op with its
 * values standing for it until written out (engine.c's fast path): a
 * kernel, an event record, a stream wait. Other kinds are always written. */
static inline int cg_op_kind_implicit(unsigned kind)
{
	return kind < 32 && ((1u << CG_OP_KERNEL | 1u << CG_OP_RECORD | 1u << CG_OP_WAIT) >> kind & 1);
}

/* The NCCL calls an op may be (CGRAFT_NCCL=1). */
enum cg_nccl_fn {
	CG_NC_ALLREDUCE, CG_NC_BROADCAST, CG_NC_REDUCE, CG_NC_ALLGATHER, CG_NC_REDUCESCATTER,
	CG_NC_ALLTOALL, CG_NC_GATHER, CG_NC_SCATTER, CG_NC_SEND, CG_NC_RECV, CG_NC_COUNT
};

enum cg_op_flag {
	CG_F_HOST_WAITS = 1 << 0, /* the call returns once the op has run (a read-back) */
	CG_F_SRC_PAGEABLE = 1 << 1, /* copy source in pageable memory: read at call time */
	CG_F_DST_PAGEABLE = 1 << 2, /* copy destination in pageable memory */
	CG_F_PACKED = 1 << 3,       /* kernel parameters came as one "extra" buffer */
	/* A read-back into pageable memory a graph lands in pinned memory of
	 * cgraft's, copied out once the host has waited (replay.c): a graph's
	 * copy into pageable memory is slower. */
	CG_F_LANDS_PINNED = 1 << 4,
	/* A read-back's destination host memory a kernel may write at its
	 * address (pinned, mapped into the device's address space). */
	CG_F_DST_MAPPED = 1 << 5,
};
/* Read-backs up to this size go into graphs as cgraft's copy kernel where
 * their destination is mapped or the landing: a kernel holds no allocation. */
#define CG_COPY_HOST_KERNEL_MAX ((size_t)64 << 10)

/* Kernel parameter layout, learnt once per handle. */
enum cg_khandle { CG_KH_FUNCTION, CG_KH_KERNEL };
struct cg_kinfo {
	const void *key;       /* what the program passes: stub, CUkernel or CUfunction */
	const void *handle;    /* the driver handle a node names */
	uint32_t nparams;
	uint32_t total;        /* packed bytes */
	uint32_t *size;        /* per parameter */
	uint32_t *off;         /* per parameter, where the kernel's parameter buffer has it */
	uint32_t gen;          /* kinfo generation it was learnt in */
	/* For the held-launch path: every parameter 4 or 8 bytes (and at most
	 * 32), bit i set where parameter i has 8. */
	uint32_t wide;
	uint8_t simple;
	/* The buffer has the parameters one after another, no padding between
	 * them: cgraft's bytes are the buffer's. */
	uint8_t dense;
	uint8_t hkind;         /* enum cg_khandle */
	uint8_t nccl;          /* an NCCL kernel: never held */
	/* Its grid must be a multiple of a cluster it was compiled with (or the
	 * driver did not tell): a grid is shape, not a value. */
	uint8_t grid_fixed;
	char name[96];         /* the kernel's name (cut), where the driver tells it */
	struct cg_kinfo *retired; /* forgotten entries, kept for readers */
};

#define CG_MAX_PARAMS 1024
#define CG_MAX_ATTRS 8

/* Stream handles are explicit: NULL becomes CU_STREAM_LEGACY or, through a
 * per-thread entry point, CU_STREAM_PER_THREAD. */
struct cg_op {
	uint8_t kind;
	uint8_t flags;
	uint16_t entry;        /* enum cg_entry it came in through */
	uint32_t nbytes;       /* kernel parameter bytes */
	uint64_t shape;        /* cg_op_shape_hash(), set by cg_op_finish() */
	/* The call in flight, for the engine: when it entered, which run it
	 * belongs to, and for a held read-back the result of the wait. */
	uint64_t t0, run_id;
	int status;
	CUcontext ctx;
	CUstream stream;
	union {
		struct {
			/* What the program names the kernel by, and how; its
			 * layout is found by the engine (cg_op_kernel_info), or
			 * taken from the op it matches. */
			const void *key;
			void **args;                   /* caller's, valid during the call */
			uint32_t grid[3], block[3];
			uint32_t shmem;
			/* after shmem, read with grid, block and shmem as 32
			 * bytes (engine.c): zero kept 0 */
			uint8_t nattr, how;
			uint16_t zero;
			const struct cg_kinfo *ki;
			const CUlaunchAttribute *attr; /* caller's, then cgraft's copy */
			void **extra_opts;             /* caller's driver "extra" options */
			const void *extra;             /* caller's packed buffer */
			const uint8_t *params;         /* cgraft's copy */
		} k;
		struct {
			/* A linear 3D copy: width bytes by height rows by depth slices. */
			void *dst;
			const void *src;
			size_t dpitch, spitch, dheight, sheight;
			size_t width, height, depth;
			uint8_t dst_host, src_host; /* host memory, pinned or not */
		} cp;
		struct {
			void *dst;
			size_t pitch, width, height; /* width in elements */
			uint32_t value;
			uint8_t elem;                /* 1, 2 or 4 bytes */
		} ms;
		struct {
			CUhostFn fn;
			void *data;
		} host;
		struct {
			CUevent event;
		} ev;
		/* An NCCL call: everything is shape, nothing is updated (a
		 * captured collective is replayed as it was captured). */
		struct {
			const void *send;
			void *recv;
			size_t count;
			void *comm;
			int32_t dtype, redop, root; /* root, or the peer of a send or receive */
			uint8_t fn;                 /* enum cg_nccl_fn */
		} nc;
	} u;
};

/* ---- kernel layouts (kinfo.c) ------------------------------------------ */
enum cg_kkey { CG_KEY_STUB, CG_KEY_KERNEL, CG_KEY_DRIVER };
/* The layout of a kernel the program names by key, or NULL when it cannot be
 * learnt safely (the launch is then a segment end). */
const struct cg_kinfo *cg_kinfo_get(const void *key, enum cg_kkey how) CG_HIDDEN;
/* Modules, libraries or contexts went away: handles may come back as other
 * kernels. */
void cg_kinfo_forget_all(void) CG_HIDDEN;

/* ---- host memory a kernel can reach (hostmem.c) ------------------------- */
void cg_hostmem_add(const void *p, size_t n) CG_HIDDEN;
/* Forgets the range starting at p: 1 with its size, else 0. */
int cg_hostmem_remove(const void *p, size_t *n) CG_HIDDEN;
/* Whether p lies in host memory noted so. */
int cg_hostmem_has(const void *p) CG_HIDDEN;
/* Whether a kernel op's parameters (cgraft's copy) hold an address in it. */
int cg_hostmem_hit(const struct cg_op *op) CG_HIDDEN;
/* Whether a kernel op's parameters hold an address in [p, p + n). */
int cg_params_reach(const struct cg_op *op, const void *p, size_t n) CG_HIDDEN;
/* The ranges a copy or memset op reads or writes (p[i], n[i]): how many,
 * up to 2 (none for other ops). */
int cg_op_memory(const struct cg_op *op, const void **p, size_t *n) CG_HIDDEN;
/* Whether a copy or memset op reads or writes memory in [p, p + n). */
int cg_op_names_memory(const struct cg_op *op, const void *p, size_t n) CG_HIDDEN;
/* Whether CUDA knows p as host memory (pinned or registered). */
int cg_mem_is_host(const void *p) CG_HIDDEN;
/* The allocation CUDA knows p by: 0 with its start and size, else -1. */
int cg_mem_range(const void *p, const void **start, size_t *size) CG_HIDDEN;
/* The same for device memory whose allocation starts at p only: 0 with its
 * size, else -1. */
int cg_mem_device_range(const void *p, const void **start, size_t *size) CG_HIDDEN;

/* ---- normalisers (op.c) -------------------------------------------------- */
/* A stream handle made explicit: NULL is the legacy stream or, through a
 * per-thread entry point (pt), the calling thread's per-thread stream. */
static inline CUstream cg_stream_explicit(CUstream s, int pt)
{
	return s ? s : pt ? CU_STREAM_PER_THREAD : CU_STREAM_LEGACY;
}

/* Whether a stream so made names the current context's legacy stream or
 * the calling thread's per-thread one, not one stream everywhere. */
static inline int cg_stream_implicit(CUstream s)
{
	return s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD;
}

/* Each fills op and returns 0, or a negative errno with *why set when the
 * call cannot be held. The caller's kernel arguments are not copied yet. */
#define CG_OPFROM(family, ...) \
	int cg_op_from_##family(struct cg_op *op, int pt, enum cg_reason *why, __VA_ARGS__) CG_HIDDEN
/* The two launches nvcc's code and most programs make: inline, as every held
 * launch pays for them. */
static inline int cg_op_rt_plain_launch(struct cg_op *op, int pt, const void *key, int how, dim3 grid, dim3 block,
					void **args, size_t shmem, cudaStream_t s)
{
	op->kind = CG_OP_KERNEL;
	op->flags = 0;
	op->nbytes = 0;
	op->stream = cg_stream_explicit((CUstream)s, pt);
	op->u.k.key = key;
	op->u.k.how = (uint8_t)how;
	op->u.k.ki = NULL;
	_Static_assert(sizeof(dim3) == 12, "dim3 is three unsigned ints");
	memcpy(op->u.k.grid, &grid, 12);
	memcpy(op->u.k.block, &block, 12);
	op->u.k.shmem = (uint32_t)shmem;
	op->u.k.nattr = 0;
	op->u.k.zero = 0;
	op->u.k.attr = NULL;
	op->u.k.args = args;
	op->u.k.extra_opts = NULL;
	op->u.k.extra = NULL;
	op->u.k.params = NULL;
	return key ? 0 : -EINVAL;
}

static inline int cg_op_from_rt_launch_handle(struct cg_op *op, int pt, enum cg_reason *why, cudaKernel_t kernel,
					      dim3 grid, dim3 block, void **args, size_t shmem, cudaStream_t s)
{
	*why = CG_WHY_PARAM_INFO;
	return cg_op_rt_plain_launch(op, pt, kernel, CG_KEY_KERNEL, grid, block, args, shmem, s);
}

static inline int cg_op_from_rt_launch(struct cg_op *op, int pt, enum cg_reason *why, const void *func, dim3 grid,
				       dim3 block, void **args, size_t shmem, cudaStream_t s)
{
	*why = CG_WHY_PARAM_INFO;
	return cg_op_rt_plain_launch(op, pt, func, CG_KEY_STUB, grid, block, args, shmem, s);
}
CG_OPFROM(rt_launch_ex, const cudaLaunchConfig_t *config, const void *func, void **args);
CG_OPFROM(rt_launch_coop, const void *func, dim3 grid, dim3 block, void **args, size_t shmem, cudaStream_t s);
CG_OPFROM(rt_memcpy_async, void *dst, const void *src, size_t n, enum cudaMemcpyKind kind, cudaStream_t s);
CG_OPFROM(rt_memcpy, void *dst, const void *src, size_t n, enum cudaMemcpyKind kind);
CG_OPFROM(rt_memcpy2d_async, void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
	  size_t height, enum cudaMemcpyKind kind, cudaStream_t s);
CG_OPFROM(rt_memcpy2d, void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
	  enum cudaMemcpyKind kind);
CG_OPFROM(rt_memcpy3d_async, const struct cudaMemcpy3DParms *p, cudaStream_t s);
CG_OPFROM(rt_memcpy3d, const struct cudaMemcpy3DParms *p);
CG_OPFROM(rt_memcpy_peer_async, void *dst, int ddev, const void *src, int sdev, size_t n, cudaStream_t s);
CG_OPFROM(rt_memcpy_peer, void *dst, int ddev, const void *src, int sdev, size_t n);
CG_OPFROM(rt_memcpy_to_symbol_async, const void *symbol, const void *src, size_t n, size_t offset,
	  enum cudaMemcpyKind kind, cudaStream_t s);
CG_OPFROM(rt_memcpy_to_symbol, const void *symbol, const void *src, size_t n, size_t offset,
	  enum cudaMemcpyKind kind);
CG_OPFROM(rt_memcpy_from_symbol_async, void *dst, const void *symbol, size_t n, size_t offset,
	  enum cudaMemcpyKind kind, cudaStream_t s);
CG_OPFROM(rt_memcpy_from_symbol, void *dst, const void *symbol, size_t n, size_t offset,
	  enum cudaMemcpyKind kind);
CG_OPFROM(rt_memset_async, void *dst, int value, size_t n, cudaStream_t s);
CG_OPFROM(rt_memset, void *dst, int value, size_t n);
CG_OPFROM(rt_memset2d_async, void *dst, size_t pitch, int value, size_t width, size_t height, cudaStream_t s);
CG_OPFROM(rt_memset2d, void *dst, size_t pitch, int value, size_t width, size_t height);
CG_OPFROM(rt_memset3d_async, struct cudaPitchedPtr p, int value, struct cudaExtent e, cudaStream_t s);
CG_OPFROM(rt_memset3d, struct cudaPitchedPtr p, int value, struct cudaExtent e);
CG_OPFROM(rt_event_record, cudaEvent_t e, cudaStream_t s);
CG_OPFROM(rt_event_record_flags, cudaEvent_t e, cudaStream_t s, unsigned int flags);
CG_OPFROM(rt_stream_wait, cudaStream_t s, cudaEvent_t e, unsigned int flags);
CG_OPFROM(rt_host_func, cudaStream_t s, cudaHostFn_t fn, void *data);
CG_OPFROM(rt_stream_callback, cudaStream_t s, cudaStreamCallback_t cb, void *data, unsigned int flags);

CG_OPFROM(cuLaunchKernel, CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
	  unsigned bz, unsigned shmem, CUstream s, void **params, void **extra);
CG_OPFROM(cuLaunchKernelEx, const CUlaunchConfig *config, CUfunction f, void **params, void **extra);
CG_OPFROM(cuLaunchCooperativeKernel, CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
	  unsigned by, unsigned bz, unsigned shmem, CUstream s, void **params);
CG_OPFROM(cuMemcpyAsync, CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s);
CG_OPFROM(cuMemcpyHtoDAsync_v2, CUdeviceptr dst, const void *src, size_t n, CUstream s);
CG_OPFROM(cuMemcpyDtoHAsync_v2, void *dst, CUdeviceptr src, size_t n, CUstream s);
CG_OPFROM(cuMemcpyDtoDAsync_v2, CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s);
CG_OPFROM(cuMemcpy2DAsync_v2, const CUDA_MEMCPY2D *p, CUstream s);
CG_OPFROM(cuMemcpy3DAsync_v2, const CUDA_MEMCPY3D *p, CUstream s);
CG_OPFROM(cuMemcpyPeerAsync, CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n,
	  CUstream s);
CG_OPFROM(cuMemcpy, CUdeviceptr dst, CUdeviceptr src, size_t n);
CG_OPFROM(cuMemcpyHtoD_v2, CUdeviceptr dst, const void *src, size_t n);
CG_OPFROM(cuMemcpyDtoH_v2, void *dst, CUdeviceptr src, size_t n);
CG_OPFROM(cuMemcpyDtoD_v2, CUdeviceptr dst, CUdeviceptr src, size_t n);
CG_OPFROM(cuMemcpy2D_v2, const CUDA_MEMCPY2D *p);
CG_OPFROM(cuMemcpy2DUnaligned_v2, const CUDA_MEMCPY2D *p);
CG_OPFROM(cuMemcpy3D_v2, const CUDA_MEMCPY3D *p);
CG_OPFROM(cuMemcpyPeer, CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n);
CG_OPFROM(cuMemsetD8Async, CUdeviceptr dst, unsigned char v, size_t n, CUstream s);
CG_OPFROM(cuMemsetD16Async, CUdeviceptr dst, unsigned short v, size_t n, CUstream s);
CG_OPFROM(cuMemsetD32Async, CUdeviceptr dst, unsigned int v, size_t n, CUstream s);
CG_OPFROM(cuMemsetD2D8Async, CUdeviceptr dst, size_t pitch, unsigned char v, size_t w, size_t h, CUstream s);
CG_OPFROM(cuMemsetD2D16Async, CUdeviceptr dst, size_t pitch, unsigned short v, size_t w, size_t h, CUstream s);
CG_OPFROM(cuMemsetD2D32Async, CUdeviceptr dst, size_t pitch, unsigned int v, size_t w, size_t h, CUstream s);
CG_OPFROM(cuMemsetD8_v2, CUdeviceptr dst, unsigned char v, size_t n);
CG_OPFROM(cuMemsetD16_v2, CUdeviceptr dst, unsigned short v, size_t n);
CG_OPFROM(cuMemsetD32_v2, CUdeviceptr dst, unsigned int v, size_t n);
CG_OPFROM(cuMemsetD2D8_v2, CUdeviceptr dst, size_t pitch, unsigned char v, size_t w, size_t h);
CG_OPFROM(cuMemsetD2D16_v2, CUdeviceptr dst, size_t pitch, unsigned short v, size_t w, size_t h);
CG_OPFROM(cuMemsetD2D32_v2, CUdeviceptr dst, size_t pitch, unsigned int v, size_t w, size_t h);
CG_OPFROM(cuEventRecord, CUevent e, CUstream s);
CG_OPFROM(cuEventRecordWithFlags, CUevent e, CUstream s, unsigned int flags);
CG_OPFROM(cuStreamWaitEvent, CUstream s, CUevent e, unsigned int flags);
CG_OPFROM(cuLaunchHostFunc, CUstream s, CUhostFn fn, void *data);
CG_OPFROM(cuStreamAddCallback, CUstream s, CUstreamCallback cb, void *data, unsigned int flags);
/* Communicators went away: their handles may come back as others. */
void cg_op_nccl_forget(void) CG_HIDDEN;
/* Whether a communicator's calls are not held (CGRAFT_NCCL=1): used from
 * several streams. */
int cg_op_nccl_comm_bad(void *comm) CG_HIDDEN;
/* NCCL's calls, with its enums as ints and its communicator as a pointer. */
CG_OPFROM(nccl_allreduce, const void *send, void *recv, size_t count, int dtype, int redop, void *comm,
	  cudaStream_t s);
CG_OPFROM(nccl_broadcast, const void *send, void *recv, size_t count, int dtype, int root, void *comm,
	  cudaStream_t s);
CG_OPFROM(nccl_bcast, void *buff, size_t count, int dtype, int root, void *comm, cudaStream_t s);
CG_OPFROM(nccl_reduce, const void *send, void *recv, size_t count, int dtype, int redop, int root, void *comm,
	  cudaStream_t s);
CG_OPFROM(nccl_allgather, const void *send, void *recv, size_t count, int dtype, void *comm, cudaStream_t s);
CG_OPFROM(nccl_reducescatter, const void *send, void *recv, size_t count, int dtype, int redop, void *comm,
	  cudaStream_t s);
CG_OPFROM(nccl_alltoall, const void *send, void *recv, size_t count, int dtype, void *comm, cudaStream_t s);
CG_OPFROM(nccl_gather, const void *send, void *recv, size_t count, int dtype, int root, void *comm,
	  cudaStream_t s);
CG_OPFROM(nccl_scatter, const void *send, void *recv, size_t count, int dtype, int root, void *comm,
	  cudaStream_t s);
CG_OPFROM(nccl_send, const void *send, size_t count, int dtype, int peer, void *comm, cudaStream_t s);
CG_OPFROM(nccl_recv, void *recv, size_t count, int dtype, int peer, void *comm, cudaStream_t s);

/* A set of up to CG_EVSET events; past that, *n counts on and every event
 * is in it (too many to tell). */
#define CG_EVSET 64
static inline void cg_evset_add(CUevent *set, int *n, CUevent e)
{
	if (*n < CG_EVSET)
		set[*n] = e;
	(*n)++;
}

static inline int cg_evset_has(const CUevent *set, int n, CUevent e)
{
	if (n > CG_EVSET)
		return 1;
	for (int i = 0; i < n; i++)
		if (set[i] == e)
			return 1;
	return 0;
}

/* Events another process may record or wait on at any time: made with the
 * interprocess flag, or opened from another process's handle. Their
 * records and waits are never held, so that each is made when the program
 * makes it (what the other process then sees, and what a wait waits for,
 * is the event's state at that call). shared 1 notes e, 0 forgets it. */
void cg_op_event_shared(CUevent e, int shared) CG_HIDDEN;

/* A kernel op's layout: 0, or a negative errno with *why set when it cannot
 * be learnt (an NCCL kernel, a layout the driver does not tell, a packed
 * buffer cgraft cannot read). */
int cg_op_kernel_info(struct cg_op *op, enum cg_reason *why) CG_HIDDEN;

/* ---- shapes, values, submission (op.c) ----------------------------------- */
/* Names the op's context once the normaliser filled it (the engine hashes
 * its shape where it needs it). The driver calls nothing back for this: no
 * need to mark the call cgraft's. */
static inline __attribute__((always_inline)) int cg_op_finish(struct cg_op *op, enum cg_reason *why)
{
	CUcontext ctx = NULL;
	PFN_cuCtxGetCurrent_v4000 get = (PFN_cuCtxGetCurrent_v4000)cg_hot.ctx_get_current;
	if (cg_unlikely(get(&ctx) != CUDA_SUCCESS || !ctx)) {
		*why = CG_WHY_DEVICE;
		return -ENOTSUP;
	}
	op->ctx = ctx;
	op->shape = 0;
	return 0;
}
uint64_t cg_op_shape_hash(const struct cg_op *op) CG_HIDDEN;
/* Shape: everything that must be equal for two ops to share a graph node. */
int cg_op_same_shape(const struct cg_op *a, const struct cg_op *b) CG_HIDDEN;
/* A kernel's grid is a value, as its parameters are, where a launch with
 * any valid grid succeeds as well: no launch attributes (a cooperative
 * grid must fit the device, a cluster's divide it) and no cluster the
 * kernel was compiled with. Block and shared memory are shape: a launch
 * the kernel's limits refuse is no op. */
static inline int cg_op_grid_is_value(const struct cg_op *op)
{
	return !op->u.k.nattr && !op->u.k.ki->grid_fixed;
}
/* A grid every launch takes (CUDA's limits since compute capability 3.0):
 * another is a launch error, which no held op may hide. */
static inline int cg_op_grid_valid(const struct cg_op *op)
{
	const uint32_t *g = op->u.k.grid;
	return g[0] && g[1] && g[2] && g[0] <= 0x7fffffffu && g[1] <= 65535 && g[2] <= 65535;
}
/* A kernel's function, block and shared memory are values too where its
 * grid is (a node update sets them all), among kernels of one parameter
 * size: one place of a loop that launches PyTorch's vectorised kernel of 4
 * or of 2 as a pointer's alignment changes is one node. The parameter size
 * stays shape: kernels of other layouts are other work (a solver's own
 * kernels beside cuBLAS's), which as values would let stretches of other
 * work pass for one. The launch must be one seen to succeed (the engine's
 * table of launches): a node takes no launch its kernel's limits refuse. */
static inline int cg_op_kernel_is_value(const struct cg_op *op)
{
	return cg_op_grid_is_value(op);
}
/* Whether two kernel ops launch the same function the same way (grid
 * aside), parameters of one size. */
static inline int cg_op_same_kernel(const struct cg_op *a, const struct cg_op *b)
{
	return a->u.k.ki->handle == b->u.k.ki->handle && a->nbytes == b->nbytes &&
	       !memcmp(a->u.k.block, b->u.k.block, sizeof a->u.k.block) && a->u.k.shmem == b->u.k.shmem;
}
/* Whether two kernel ops have the same grid. */
static inline int cg_op_same_grid(const struct cg_op *a, const struct cg_op *b)
{
	return !memcmp(a->u.k.grid, b->u.k.grid, sizeof a->u.k.grid);
}
/* Whether op's grid may stand where kernel op t's is, as shape: any valid
 * one where the grid is a value, else t's own. */
static inline int cg_op_grid_fits(const struct cg_op *t, const struct cg_op *op)
{
	return cg_op_grid_is_value(t) ? cg_op_grid_valid(t) && cg_op_grid_valid(op) : cg_op_same_grid(t, op);
}
/* Gives d the grid of s. */
static inline void cg_op_copy_grid(struct cg_op *d, const struct cg_op *s)
{
	memcpy(d->u.k.grid, s->u.k.grid, sizeof d->u.k.grid);
}
/* A hash of a kernel op's function, block and shared memory. */
static inline uint64_t cg_op_launch_hash(const struct cg_op *op)
{
	uint64_t h = (uintptr_t)op->u.k.ki->handle * 0x9E3779B97F4A7C15ull;
	h = (h ^ ((uint64_t)op->u.k.block[0] << 32 | op->u.k.block[1])) * 0x100000001b3ull;
	h = (h ^ ((uint64_t)op->u.k.block[2] << 32 | op->u.k.shmem)) * 0x100000001b3ull;
	return h ^ h >> 31;
}
/* Gives kernel op d the launch of s, its parameters' bytes aside: function,
 * grid, block, shared memory and parameter size. */
static inline void cg_op_copy_launch(struct cg_op *d, const struct cg_op *s)
{
	d->u.k.key = s->u.k.key;
	d->u.k.how = s->u.k.how;
	d->u.k.ki = s->u.k.ki;
	d->nbytes = s->nbytes;
	memcpy(d->u.k.block, s->u.k.block, sizeof d->u.k.block);
	d->u.k.shmem = s->u.k.shmem;
	cg_op_copy_grid(d, s);
}
/* A linear copy between device memory: its size is a value, as its
 * addresses are (a copy node of one dimension takes another through an
 * update: a tensor growing by a token). Other copies' extents are shape:
 * the driver updates no node of more dimensions, nor what copies host
 * memory through staging or a landing buffer of cgraft's size. */
static inline int cg_op_extent_is_value(const struct cg_op *op)
{
	return op->kind == CG_OP_COPY && op->u.cp.height == 1 && op->u.cp.depth == 1 && !op->u.cp.dst_host &&
	       !op->u.cp.src_host;
}
/* Values: what a node update can change (parameters, addresses). */
int cg_op_same_values(const struct cg_op *a, const struct cg_op *b) CG_HIDDEN;
uint64_t cg_op_values_hash(const struct cg_op *op) CG_HIDDEN;
void cg_op_describe(char *buf, size_t size, const struct cg_op *op) CG_HIDDEN;
void cg_op_describe_change(char *buf, size_t size, const struct cg_op *was, const struct cg_op *now) CG_HIDDEN;
/* Kernel arguments from cgraft's copy: argv for parameters, or extra. */
void cg_kernel_args(const struct cg_op *op, void **argv, void **extra, size_t *extra_size) CG_HIDDEN;
/* The copy as the driver's descriptor. */
void cg_copy_desc(const struct cg_op *op, const void *src, void *dst, CUDA_MEMCPY3D *d) CG_HIDDEN;
/* Submits a held op eagerly through the driver, on stream (the op's, or the
 * legacy stream in place of another thread's per-thread stream). */
CUresult cg_op_submit(const struct cg_op *op, CUstream stream) CG_HIDDEN;

#endif
