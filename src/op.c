/* Normalising intercepted calls into ops (stream handles made explicit, copy
 * sides and kinds resolved, sync semantics as flags), their shapes and
 * values, and the eager submission of a held op through the driver. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "backend.h"
#include "log.h"
#include "op.h"
#include "options.h"

/* Pageable sources above this size stay eager: the snapshot is a host copy. */
#define CG_SNAPSHOT_MAX (1u << 20)

static void cg_op_init(struct cg_op *op, enum cg_op_kind kind, int pt, CUstream s)
{
	op->kind = (uint8_t)kind;
	op->flags = 0;
	op->nbytes = 0;
	op->stream = cg_stream_explicit(s, pt);
}

/* ---- kernels ------------------------------------------------------------ */
/* Launch attributes a kernel node carries. Programmatic stream serialization
 * only lets a kernel start before its predecessor ends; a node waits for it
 * fully, which orders more, never less. */
static int cg_attr_ok(const CUlaunchAttribute *a)
{
	switch (a->id) {
	case CU_LAUNCH_ATTRIBUTE_IGNORE:
	case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
	case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
	case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
	case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
	case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
	case CU_LAUNCH_ATTRIBUTE_PRIORITY:
	case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
	case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
		return 1;
	default:
		return 0;
	}
}

static const CUlaunchAttribute cg_coop_attr = {
	.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE, .value = { .cooperative = 1 },
};

static int cg_op_kernel(struct cg_op *op, int pt, enum cg_reason *why, const void *key, enum cg_kkey how,
			const unsigned grid[3], const unsigned block[3], unsigned shmem, CUstream s,
			void **args, const CUlaunchAttribute *attr, unsigned nattr)
{
	cg_op_init(op, CG_OP_KERNEL, pt, s);
	memcpy(op->u.k.grid, grid, sizeof op->u.k.grid);
	memcpy(op->u.k.block, block, sizeof op->u.k.block);
	op->u.k.shmem = shmem;
	op->u.k.args = args;
	op->u.k.extra_opts = NULL;
	op->u.k.extra = NULL;
	op->u.k.params = NULL;
	op->u.k.attr = attr;
	op->u.k.key = key;
	op->u.k.how = (uint8_t)how;
	op->u.k.zero = 0;
	op->u.k.ki = NULL;
	if (cg_unlikely(nattr)) {
		op->u.k.nattr = (uint8_t)nattr;
		if (nattr > CG_MAX_ATTRS || !attr) {
			*why = CG_WHY_LAUNCH_ATTRIBUTE;
			return -ENOTSUP;
		}
		for (unsigned i = 0; i < nattr; i++)
			if (!cg_attr_ok(&attr[i])) {
				*why = CG_WHY_LAUNCH_ATTRIBUTE;
				return -ENOTSUP;
			}
	} else {
		op->u.k.nattr = 0;
	}
	if (!key) {
		*why = CG_WHY_PARAM_INFO;
		return -EINVAL;
	}
	return 0;
}

static int cg_op_rt_kernel(struct cg_op *op, int pt, enum cg_reason *why, const void *key, enum cg_kkey how,
			   dim3 grid, dim3 block, size_t shmem, cudaStream_t s, void **args,
			   const CUlaunchAttribute *attr, unsigned nattr)
{
	const unsigned g[3] = { grid.x, grid.y, grid.z }, b[3] = { block.x, block.y, block.z };
	return cg_op_kernel(op, pt, why, key, how, g, b, (unsigned)shmem, (CUstream)s, args, attr, nattr);
}

int cg_op_from_rt_launch_coop(struct cg_op *op, int pt, enum cg_reason *why, const void *func, dim3 grid,
			      dim3 block, void **args, size_t shmem, cudaStream_t s)
{
	return cg_op_rt_kernel(op, pt, why, func, CG_KEY_STUB, grid, block, shmem, s, args, &cg_coop_attr, 1);
}

/* cudaLaunchAttribute and CUlaunchAttribute share their layout. */
_Static_assert(sizeof(cudaLaunchAttribute) == sizeof(CUlaunchAttribute), "launch attribute layouts");

int cg_op_from_rt_launch_ex(struct cg_op *op, int pt, enum cg_reason *why, const cudaLaunchConfig_t *c,
			    const void *func, void **args)
{
	if (!c)
		return -EINVAL;
	return cg_op_rt_kernel(op, pt, why, func, CG_KEY_STUB, c->gridDim, c->blockDim, c->dynamicSmemBytes,
			       c->stream, args, (const CUlaunchAttribute *)(const void *)c->attrs, c->numAttrs);
}

/* A driver launch: parameters as pointers, or one packed buffer in extra. */
static int cg_op_packed(struct cg_op *op, enum cg_reason *why, void **params, void **extra)
{
	if (params || !extra)
		return 0;
	const void *buf = NULL;
	size_t size = 0;
	int have_size = 0;
	for (void **e = extra; *e != CU_LAUNCH_PARAM_END; e += 2) {
		if (e[0] == CU_LAUNCH_PARAM_BUFFER_POINTER) {
			buf = e[1];
		} else if (e[0] == CU_LAUNCH_PARAM_BUFFER_SIZE) {
			size = *(const size_t *)e[1];
			have_size = 1;
		} else {
			*why = CG_WHY_PARAM_INFO;
			return -ENOTSUP;
		}
	}
	if (!buf || !have_size || size > 65536 || size < op->nbytes) {
		*why = CG_WHY_PARAM_INFO;
		return -ENOTSUP;
	}
	op->u.k.extra = buf;
	op->flags |= CG_F_PACKED;
	op->nbytes = (uint32_t)size;
	return 0;
}

static int cg_op_drv_kernel(struct cg_op *op, int pt, enum cg_reason *why, CUfunction f, const unsigned g[3],
			    const unsigned b[3], unsigned shmem, CUstream s, void **params, void **extra,
			    const CUlaunchAttribute *attr, unsigned nattr)
{
	int rc = cg_op_kernel(op, pt, why, f, CG_KEY_DRIVER, g, b, shmem, s, params, attr, nattr);
	op->u.k.extra_opts = params ? NULL : extra;
	return rc;
}

int cg_op_kernel_info(struct cg_op *op, enum cg_reason *why)
{
	const struct cg_kinfo *ki = op->u.k.ki = cg_kinfo_get(op->u.k.key, (enum cg_kkey)op->u.k.how);
	*why = CG_WHY_PARAM_INFO;
	if (!ki)
		return -ENOENT;
	if (ki->nccl) {
		*why = CG_WHY_NCCL;
		return -ENOTSUP;
	}
	op->nbytes = ki->total;
	/* Without parameters the real call fails, and cgraft lets it. */
	if (ki->nparams && !op->u.k.args && !op->u.k.extra_opts)
		return -EINVAL;
	return cg_op_packed(op, why, op->u.k.args, op->u.k.extra_opts);
}

int cg_op_from_cuLaunchKernel(struct cg_op *op, int pt, enum cg_reason *why, CUfunction f, unsigned gx,
			      unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned shmem,
			      CUstream s, void **params, void **extra)
{
	const unsigned g[3] = { gx, gy, gz }, b[3] = { bx, by, bz };
	return cg_op_drv_kernel(op, pt, why, f, g, b, shmem, s, params, extra, NULL, 0);
}

int cg_op_from_cuLaunchCooperativeKernel(struct cg_op *op, int pt, enum cg_reason *why, CUfunction f,
					 unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
					 unsigned bz, unsigned shmem, CUstream s, void **params)
{
	const unsigned g[3] = { gx, gy, gz }, b[3] = { bx, by, bz };
	return cg_op_drv_kernel(op, pt, why, f, g, b, shmem, s, params, NULL, &cg_coop_attr, 1);
}

int cg_op_from_cuLaunchKernelEx(struct cg_op *op, int pt, enum cg_reason *why, const CUlaunchConfig *c,
				CUfunction f, void **params, void **extra)
{
	if (!c)
		return -EINVAL;
	const unsigned g[3] = { c->gridDimX, c->gridDimY, c->gridDimZ };
	const unsigned b[3] = { c->blockDimX, c->blockDimY, c->blockDimZ };
	return cg_op_drv_kernel(op, pt, why, f, g, b, c->sharedMemBytes, c->hStream, params, extra, c->attrs,
				c->numAttrs);
}

void cg_kernel_args(const struct cg_op *op, void **argv, void **extra, size_t *extra_size)
{
	if (op->flags & CG_F_PACKED) {
		*extra_size = op->nbytes;
		extra[0] = CU_LAUNCH_PARAM_BUFFER_POINTER;
		extra[1] = (void *)op->u.k.params;
		extra[2] = CU_LAUNCH_PARAM_BUFFER_SIZE;
		extra[3] = extra_size;
		extra[4] = CU_LAUNCH_PARAM_END;
		return;
	}
	const uint8_t *p = op->u.k.params;
	for (uint32_t i = 0; i < op->u.k.ki->nparams; i++) {
		argv[i] = (void *)p;
		p += op->u.k.ki->size[i];
	}
}

/* ---- copies --------------------------------------------------------------- */
enum cg_mem { CG_MEM_DEVICE, CG_MEM_HOST, CG_MEM_PAGEABLE, CG_MEM_OTHER };

/* Where an address lives, as the copy engine sees it: device memory of the
 * current context's device, host memory CUDA knows (pinned, registered), or
 * pageable memory. Managed memory and other devices' memory stay eager. */
static enum cg_mem cg_mem_type(const void *p)
{
	CUpointer_attribute at[3] = { CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
				      CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL };
	unsigned type = 0, managed = 0;
	int ord = -1;
	void *data[3] = { &type, &managed, &ord };
	if (!p || CG_BK(pointer_attrs, 3, at, data, (CUdeviceptr)(uintptr_t)p) != CUDA_SUCCESS) {
		cg_debug("address %p: CUDA gives no attributes, it stays eager", p);
		return CG_MEM_OTHER;
	}
	if (managed || (type != 0 && type != CU_MEMORYTYPE_HOST && type != CU_MEMORYTYPE_DEVICE))
		cg_debug("address %p: memory type %u%s: it stays eager", p, type, managed ? ", managed" : "");
	if (managed)
		return CG_MEM_OTHER;
	switch (type) {
	case 0:
		return CG_MEM_PAGEABLE;
	case CU_MEMORYTYPE_HOST:
		return CG_MEM_HOST;
	case CU_MEMORYTYPE_DEVICE: {
		CUdevice dev;
		if (ord >= 0 && CG_BK(ctx_get_device, &dev) == CUDA_SUCCESS && dev != ord) {
			cg_debug("address %p: memory of device %d, not the current device %d: it stays eager", p, ord,
				 (int)dev);
			return CG_MEM_OTHER;
		}
		return CG_MEM_DEVICE;
	}
	default:
		return CG_MEM_OTHER;
	}
}

/* Host memory a kernel reaches at its own address. */
static int cg_mem_mapped(const void *p)
{
	CUdeviceptr d = 0;
	CUpointer_attribute at = CU_POINTER_ATTRIBUTE_DEVICE_POINTER;
	void *data = &d;
	return CG_BK(pointer_attrs, 1, &at, &data, (CUdeviceptr)(uintptr_t)p) == CUDA_SUCCESS &&
	       d == (CUdeviceptr)(uintptr_t)p;
}

int cg_mem_is_host(const void *p)
{
	return cg_mem_type(p) == CG_MEM_HOST;
}

/* The allocation CUDA knows p by, and the type of its memory. */
static int cg_mem_range_type(const void *p, const void **start, size_t *size, unsigned *type)
{
	CUpointer_attribute at[3] = { CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
				      CU_POINTER_ATTRIBUTE_MEMORY_TYPE };
	CUdeviceptr base = 0;
	size_t n = 0;
	void *data[3] = { &base, &n, type };
	if (!p || CG_BK(pointer_attrs, 3, at, data, (CUdeviceptr)(uintptr_t)p) != CUDA_SUCCESS || !base || !n)
		return -1;
	*start = (const void *)(uintptr_t)base;
	*size = n;
	return 0;
}

int cg_mem_range(const void *p, const void **start, size_t *size)
{
	unsigned type = 0;
	return cg_mem_range_type(p, start, size, &type);
}

int cg_mem_device_range(const void *p, const void **start, size_t *size)
{
	unsigned type = 0;
	return cg_mem_range_type(p, start, size, &type) || type != CU_MEMORYTYPE_DEVICE || *start != p ? -1 : 0;
}

/* Bytes from the first to past the last of a pitched block; a block of no
 * bytes still names its address. */
static size_t cg_extent(size_t pitch, size_t rows_per_slice, size_t width, size_t height, size_t depth)
{
	if (!width || !height || !depth)
		return 1;
	return pitch * rows_per_slice * (depth - 1) + pitch * (height - 1) + width;
}

static int cg_overlaps(const void *a, size_t an, const void *p, size_t n)
{
	uintptr_t x = (uintptr_t)a, y = (uintptr_t)p;
	return x < y + n && y < x + an;
}

int cg_op_memory(const struct cg_op *op, const void **p, size_t *n)
{
	if (op->kind == CG_OP_COPY) {
		const size_t w = op->u.cp.width, h = op->u.cp.height, d = op->u.cp.depth;
		p[0] = op->u.cp.dst;
		n[0] = cg_extent(op->u.cp.dpitch, op->u.cp.dheight, w, h, d);
		p[1] = op->u.cp.src;
		n[1] = cg_extent(op->u.cp.spitch, op->u.cp.sheight, w, h, d);
		return 2;
	}
	if (op->kind == CG_OP_MEMSET) {
		p[0] = op->u.ms.dst;
		n[0] = cg_extent(op->u.ms.pitch, 1, (size_t)op->u.ms.width * op->u.ms.elem, op->u.ms.height, 1);
		return 1;
	}
	return 0;
}

int cg_op_names_memory(const struct cg_op *op, const void *p, size_t n)
{
	const void *at[2];
	size_t len[2];
	int k = cg_op_memory(op, at, len);
	for (int i = 0; i < k; i++)
		if (cg_overlaps(at[i], len[i], p, n))
			return 1;
	return 0;
}

/* A linear copy, whatever call it came from. sync: the blocking form of the
 * call, whose host synchronisation the op keeps (CUDA's "API synchronization
 * behavior": a copy from or to host memory returns once it is done, a
 * device-to-device one does not wait). */
struct cg_copy {
	void *dst;
	const void *src;
	size_t dpitch, spitch, dheight, sheight, width, height, depth;
	enum cudaMemcpyKind kind;
	int sync;
};

static int cg_op_copy(struct cg_op *op, int pt, enum cg_reason *why, const struct cg_copy *c, CUstream s)
{
	cg_op_init(op, CG_OP_COPY, pt, s);
	*why = CG_WHY_MEMCPY_KIND;
	if (!c->width || !c->height || !c->depth || !c->dst || !c->src)
		return -EINVAL;
	if (c->dpitch < c->width || c->spitch < c->width || (c->depth > 1 && (c->dheight < c->height ||
									     c->sheight < c->height)))
		return -EINVAL;
	enum cg_mem ms = cg_mem_type(c->src), md = cg_mem_type(c->dst);
	if (ms == CG_MEM_OTHER || md == CG_MEM_OTHER)
		return -ENOTSUP;
	int src_host = ms != CG_MEM_DEVICE, dst_host = md != CG_MEM_DEVICE;
	enum cudaMemcpyKind k = src_host ? (dst_host ? cudaMemcpyHostToHost : cudaMemcpyHostToDevice)
					 : (dst_host ? cudaMemcpyDeviceToHost : cudaMemcpyDeviceToDevice);
	if (c->kind != cudaMemcpyDefault && c->kind != k)
		return -ENOTSUP; /* the runtime judges a kind that disagrees */
	if (k == cudaMemcpyHostToHost)
		return -ENOTSUP;
	op->u.cp.dst = c->dst;
	op->u.cp.src = c->src;
	op->u.cp.dpitch = c->dpitch;
	op->u.cp.spitch = c->spitch;
	op->u.cp.dheight = c->depth > 1 ? c->dheight : c->height;
	op->u.cp.sheight = c->depth > 1 ? c->sheight : c->height;
	op->u.cp.width = c->width;
	op->u.cp.height = c->height;
	op->u.cp.depth = c->depth;
	op->u.cp.dst_host = (uint8_t)dst_host;
	op->u.cp.src_host = (uint8_t)src_host;
	/* Into pageable memory a copy is host-synchronous even when async. */
	if (md == CG_MEM_PAGEABLE) {
		op->flags |= CG_F_DST_PAGEABLE | CG_F_HOST_WAITS;
		if (c->height == 1 && c->depth == 1 && c->width <= CG_SNAPSHOT_MAX)
			op->flags |= CG_F_LANDS_PINNED;
	}
	if (c->sync && k != cudaMemcpyDeviceToDevice)
		op->flags |= CG_F_HOST_WAITS;
	if (k == cudaMemcpyDeviceToHost && md == CG_MEM_HOST && c->height == 1 && c->depth == 1 &&
	    c->width <= CG_COPY_HOST_KERNEL_MAX && cg_mem_mapped(c->dst))
		op->flags |= CG_F_DST_MAPPED;
	if (ms == CG_MEM_PAGEABLE) {
		op->flags |= CG_F_SRC_PAGEABLE;
		/* Held, a pageable source is read at the call: a snapshot. A
		 * call the host waits in is the last of its segment, so the
		 * graph may read the buffer itself; held longer, it may not. */
		if (!(op->flags & CG_F_HOST_WAITS) && c->width * c->height * c->depth > CG_SNAPSHOT_MAX)
			return -ENOTSUP;
	}
	return 0;
}

static int cg_copy1d(struct cg_op *op, int pt, enum cg_reason *why, void *dst, const void *src, size_t n,
		     enum cudaMemcpyKind kind, CUstream s, int sync)
{
	const struct cg_copy c = { dst, src, n, n, 1, 1, n, 1, 1, kind, sync };
	return cg_op_copy(op, pt, why, &c, s);
}

static int cg_copy2d(struct cg_op *op, int pt, enum cg_reason *why, void *dst, size_t dpitch, const void *src,
		     size_t spitch, size_t width, size_t height, enum cudaMemcpyKind kind, CUstream s, int sync)
{
	const struct cg_copy c = { dst, src, dpitch, spitch, height, height, width, height, 1, kind, sync };
	return cg_op_copy(op, pt, why, &c, s);
}

int cg_op_from_rt_memcpy_async(struct cg_op *op, int pt, enum cg_reason *why, void *dst, const void *src,
			       size_t n, enum cudaMemcpyKind kind, cudaStream_t s)
{
	return cg_copy1d(op, pt, why, dst, src, n, kind, (CUstream)s, 0);
}

int cg_op_from_rt_memcpy(struct cg_op *op, int pt, enum cg_reason *why, void *dst, const void *src, size_t n,
			 enum cudaMemcpyKind kind)
{
	return cg_copy1d(op, pt, why, dst, src, n, kind, NULL, 1);
}

int cg_op_from_rt_memcpy2d_async(struct cg_op *op, int pt, enum cg_reason *why, void *dst, size_t dpitch,
				 const void *src, size_t spitch, size_t width, size_t height,
				 enum cudaMemcpyKind kind, cudaStream_t s)
{
	return cg_copy2d(op, pt, why, dst, dpitch, src, spitch, width, height, kind, (CUstream)s, 0);
}

int cg_op_from_rt_memcpy2d(struct cg_op *op, int pt, enum cg_reason *why, void *dst, size_t dpitch,
			   const void *src, size_t spitch, size_t width, size_t height, enum cudaMemcpyKind kind)
{
	return cg_copy2d(op, pt, why, dst, dpitch, src, spitch, width, height, kind, NULL, 1);
}

/* Linear memory only: in a cudaMemcpy3DParms its extent is in bytes. */
static int cg_copy3d_rt(struct cg_op *op, int pt, enum cg_reason *why, const struct cudaMemcpy3DParms *p,
			CUstream s, int sync)
{
	*why = CG_WHY_MEMCPY_KIND;
	if (!p)
		return -EINVAL;
	if (p->srcArray || p->dstArray)
		return -ENOTSUP;
	const struct cudaPitchedPtr *sp = &p->srcPtr, *dp = &p->dstPtr;
	const char *src = (const char *)sp->ptr + (p->srcPos.z * sp->ysize + p->srcPos.y) * sp->pitch + p->srcPos.x;
	char *dst = (char *)dp->ptr + (p->dstPos.z * dp->ysize + p->dstPos.y) * dp->pitch + p->dstPos.x;
	const struct cg_copy c = { dst, src, dp->pitch, sp->pitch, dp->ysize, sp->ysize,
				   p->extent.width, p->extent.height, p->extent.depth, p->kind, sync };
	return cg_op_copy(op, pt, why, &c, s);
}

int cg_op_from_rt_memcpy3d_async(struct cg_op *op, int pt, enum cg_reason *why,
				 const struct cudaMemcpy3DParms *p, cudaStream_t s)
{
	return cg_copy3d_rt(op, pt, why, p, (CUstream)s, 0);
}

int cg_op_from_rt_memcpy3d(struct cg_op *op, int pt, enum cg_reason *why, const struct cudaMemcpy3DParms *p)
{
	return cg_copy3d_rt(op, pt, why, p, NULL, 1);
}

/* A peer copy within the current device is a device-to-device copy. */
static int cg_same_device(int a, int b)
{
	CUdevice dev;
	return a == b && CG_BK(ctx_get_device, &dev) == CUDA_SUCCESS && dev == a;
}

int cg_op_from_rt_memcpy_peer_async(struct cg_op *op, int pt, enum cg_reason *why, void *dst, int ddev,
				    const void *src, int sdev, size_t n, cudaStream_t s)
{
	*why = CG_WHY_DEVICE;
	if (!cg_same_device(ddev, sdev))
		return -ENOTSUP;
	return cg_copy1d(op, pt, why, dst, src, n, cudaMemcpyDeviceToDevice, (CUstream)s, 0);
}

int cg_op_from_rt_memcpy_peer(struct cg_op *op, int pt, enum cg_reason *why, void *dst, int ddev,
			      const void *src, int sdev, size_t n)
{
	*why = CG_WHY_DEVICE;
	if (!cg_same_device(ddev, sdev))
		return -ENOTSUP;
	/* Peer copies synchronise with the host unlike other device copies. */
	int rc = cg_copy1d(op, pt, why, dst, src, n, cudaMemcpyDeviceToDevice, NULL, 1);
	op->flags |= CG_F_HOST_WAITS;
	return rc;
}

/* A __device__ variable's address, asked of the program's runtime. */
static int cg_symbol(const void *symbol, size_t offset, void **out)
{
	void *p = NULL;
	if (cg_backend_runtime() || !cg_hot.bk->rt_symbol_address ||
	    CG_BK(rt_symbol_address, &p, symbol) != CUDA_SUCCESS || !p)
		return -ENOTSUP;
	*out = (char *)p + offset;
	return 0;
}

int cg_op_from_rt_memcpy_to_symbol_async(struct cg_op *op, int pt, enum cg_reason *why, const void *symbol,
					 const void *src, size_t n, size_t offset, enum cudaMemcpyKind kind,
					 cudaStream_t s)
{
	void *dst;
	*why = CG_WHY_MEMCPY_KIND;
	if (cg_symbol(symbol, offset, &dst))
		return -ENOTSUP;
	return cg_copy1d(op, pt, why, dst, src, n, kind, (CUstream)s, 0);
}

int cg_op_from_rt_memcpy_to_symbol(struct cg_op *op, int pt, enum cg_reason *why, const void *symbol,
				   const void *src, size_t n, size_t offset, enum cudaMemcpyKind kind)
{
	void *dst;
	*why = CG_WHY_MEMCPY_KIND;
	if (cg_symbol(symbol, offset, &dst))
		return -ENOTSUP;
	return cg_copy1d(op, pt, why, dst, src, n, kind, NULL, 1);
}

int cg_op_from_rt_memcpy_from_symbol_async(struct cg_op *op, int pt, enum cg_reason *why, void *dst,
					   const void *symbol, size_t n, size_t offset,
					   enum cudaMemcpyKind kind, cudaStream_t s)
{
	void *src;
	*why = CG_WHY_MEMCPY_KIND;
	if (cg_symbol(symbol, offset, &src))
		return -ENOTSUP;
	return cg_copy1d(op, pt, why, dst, src, n, kind, (CUstream)s, 0);
}

int cg_op_from_rt_memcpy_from_symbol(struct cg_op *op, int pt, enum cg_reason *why, void *dst,
				     const void *symbol, size_t n, size_t offset, enum cudaMemcpyKind kind)
{
	void *src;
	*why = CG_WHY_MEMCPY_KIND;
	if (cg_symbol(symbol, offset, &src))
		return -ENOTSUP;
	return cg_copy1d(op, pt, why, dst, src, n, kind, NULL, 1);
}

#define DP(x) ((void *)(uintptr_t)(x))

int cg_op_from_cuMemcpyAsync(struct cg_op *op, int pt, enum cg_reason *why, CUdeviceptr dst, CUdeviceptr src,
			     size_t n, CUstream s)
{
	return cg_copy1d(op, pt, why, DP(dst), DP(src), n, cudaMemcpyDefault, s, 0);
}

int cg_op_from_cuMemcpyHtoDAsync_v2(struct cg_op *op, int pt, enum cg_reason *why, CUdeviceptr dst,
				    const void *src, size_t n, CUstream s)
{
	return cg_copy1d(op, pt, why, DP(dst), src, n, cudaMemcpyHostToDevice, s, 0);
}

int cg_op_from_cuMemcpyDtoHAsync_v2(struct cg_op *op, int pt, enum cg_reason *why, void *dst, CUdeviceptr src,
				    size_t n, CUstream s)
{
	return cg_copy1d(op, pt, why, dst, DP(src), n, cudaMemcpyDeviceToHost, s, 0);
}

int cg_op_from_cuMemcpyDtoDAsync_v2(struct cg_op *op, int pt, enum cg_reason *why, CUdeviceptr dst,
				    CUdeviceptr src, size_t n, CUstream s)
{
	return cg_copy1d(op, pt, why, DP(dst), DP(src), n, cudaMemcpyDeviceToDevice, s, 0);
}

int cg_op_from_cuMemcpy(struct cg_op *op, int pt, enum cg_reason *why, CUdeviceptr dst, CUdeviceptr src,
			size_t n)
{
	return cg_copy1d(op, pt, why, DP(dst), DP(src), n, cudaMemcpyDefault, NULL, 1);
}

int cg_op_from_cuMemcpyHtoD_v2(struct cg_op *op, int pt, enum cg_reason *why, CUdeviceptr dst, const void *src,
			       size_t n)
{
	return cg_copy1d(op, pt, why, DP(dst), src, n, cudaMemcpyHostToDevice, NULL, 1);
}

int cg_op_from_cuMemcpyDtoH_v2(struct cg_op *op, int pt, enum cg_reason *why, void *dst, CUdeviceptr src,
			       size_t n)
{
	return cg_copy1d(op, pt, why, dst, DP(src), n, cudaMemcpyDeviceToHost, NULL, 1);
}

int cg_op_from_cuMemcpyDtoD_v2(struct cg_op *op, int pt, enum cg_reason *why, CUdeviceptr dst, CUdeviceptr src,
			       size_t n)
{
	return cg_copy1d(op, pt, why, DP(dst), DP(src), n, cudaMemcpyDeviceToDevice, NULL, 1);
}

/* One side of a driver copy descriptor; arrays stay eager. */
static int cg_drv_side(CUmemorytype t, const void *host, CUdeviceptr dev, CUarray arr, size_t x, size_t y,
		       size_t z, size_t pitch, size_t height, const void **out)
{
	if (t == CU_MEMORYTYPE_ARRAY || arr)
		return -ENOTSUP;
	const char *base = t == CU_MEMORYTYPE_HOST ? (const char *)host : (const char *)DP(dev);
	if (!base)
		return -EINVAL;
	*out = base + (z * height + y) * pitch + x;
	return 0;
}

static int cg_copy_drv2d(struct cg_op *op, int pt, enum cg_reason *why, const CUDA_MEMCPY2D *p, CUstream s,
			 int sync)
{
	const void *src, *dst;
	*why = CG_WHY_MEMCPY_KIND;
	if (!p)
		return -EINVAL;
	if (cg_drv_side(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcArray, p->srcXInBytes, p->srcY, 0,
			p->srcPitch, 0, &src) ||
	    cg_drv_side(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstArray, p->dstXInBytes, p->dstY, 0,
			p->dstPitch, 0, &dst))
		return -ENOTSUP;
	return cg_copy2d(op, pt, why, (void *)dst, p->dstPitch, src, p->srcPitch, p->WidthInBytes, p->Height,
			 cudaMemcpyDefault, s, sync);
}

static int cg_copy_drv3d(struct cg_op *op, int pt, enum cg_reason *why, const CUDA_MEMCPY3D *p, CUstream s,
			 int sync)
{
	const void *src, *dst;
	*why = CG_WHY_MEMCPY_KIND;
	if (!p)
		return -EINVAL;
	if (p->srcLOD || p->dstLOD || p->reserved0 || p->reserved1)
		return -ENOTSUP;
	size_t sh = p->srcHeight ? p->srcHeight : p->Height, dh = p->dstHeight ? p->dstHeight : p->Height;
	if (cg_drv_side(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcArray, p->srcXInBytes, p->srcY,
			p->srcZ, p->srcPitch, sh, &src) ||
	    cg_drv_side(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstArray, p->dstXInBytes, p->dstY,
			p->dstZ, p->dstPitch, dh, &dst))
		return -ENOTSUP;
	const struct cg_copy c = { (void *)dst, src, p->dstPitch, p->srcPitch, dh, sh, p->WidthInBytes,
				   p->Height, p->Depth, cudaMemcpyDefault, sync };
	return cg_op_copy(op, pt, why, &c, s);
}

int cg_op_from_cuMemcpy2DAsync_v2(struct cg_op *op, int pt, enum cg_reason *why, const CUDA_MEMCPY2D *p,
				  CUstream s)
{
	return cg_copy_drv2d(op, pt, why, p, s, 0);
}

int cg_op_from_cuMemcpy2D_v2(struct cg_op *op, int pt, enum cg_reason *why, const CUDA_MEMCPY2D *p)
{
	return cg_copy_drv2d(op, pt, why, p, NULL, 1);
}

int cg_op_from_cuMemcpy2DUnaligned_v2(struct cg_op *op, int pt, enum cg_reason *why, const CUDA_MEMCPY2D *p)
{
	return cg_copy_drv2d(op, pt, why, p, NULL, 1);
}

int cg_op_from_cuMemcpy3DAsync_v2(struct cg_op *op, int pt, enum cg_reason *why, const CUDA_MEMCPY3D *p,
				  CUstream s)
{
	return cg_copy_drv3d(op, pt, why, p, s, 0);
}

int cg_op_from_cuMemcpy3D_v2(struct cg_op *op, int pt, enum cg_reason *why, const CUDA_MEMCPY3D *p)
{
	return cg_copy_drv3d(op, pt, why, p, NULL, 1);
}

static int cg_same_ctx(CUcontext a, CUcontext b)
{
	CUcontext cur;
	return a == b && CG_BK(ctx_get_current, &cur) == CUDA_SUCCESS && cur == a;
}

int cg_op_from_cuMemcpyPeerAsync(struct cg_op *op, int pt, enum cg_reason *why, CUdeviceptr dst,
				 CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n, CUstream s)
{
	*why = CG_WHY_DEVICE;
	if (!cg_same_ctx(dctx, sctx))
		return -ENOTSUP;
	return cg_copy1d(op, pt, why, DP(dst), DP(src), n, cudaMemcpyDeviceToDevice, s, 0);
}

int cg_op_from_cuMemcpyPeer(struct cg_op *op, int pt, enum cg_reason *why, CUdeviceptr dst, CUcontext dctx,
			    CUdeviceptr src, CUcontext sctx, size_t n)
{
	*why = CG_WHY_DEVICE;
	if (!cg_same_ctx(dctx, sctx))
		return -ENOTSUP;
	int rc = cg_copy1d(op, pt, why, DP(dst), DP(src), n, cudaMemcpyDeviceToDevice, NULL, 1);
	op->flags |= CG_F_HOST_WAITS;
	return rc;
}

/* The copy as the driver's descriptor, reading its source from src. */
void cg_copy_desc(const struct cg_op *op, const void *src, void *dst, CUDA_MEMCPY3D *d)
{
	memset(d, 0, sizeof *d);
	if (op->u.cp.src_host) {
		d->srcMemoryType = CU_MEMORYTYPE_HOST;
		d->srcHost = src;
	} else {
		d->srcMemoryType = CU_MEMORYTYPE_DEVICE;
		d->srcDevice = (CUdeviceptr)(uintptr_t)src;
	}
	if (op->u.cp.dst_host) {
		d->dstMemoryType = CU_MEMORYTYPE_HOST;
		d->dstHost = dst;
	} else {
		d->dstMemoryType = CU_MEMORYTYPE_DEVICE;
		d->dstDevice = (CUdeviceptr)(uintptr_t)dst;
	}
	d->srcPitch = op->u.cp.spitch;
	d->srcHeight = op->u.cp.sheight;
	d->dstPitch = op->u.cp.dpitch;
	d->dstHeight = op->u.cp.dheight;
	d->WidthInBytes = op->u.cp.width;
	d->Height = op->u.cp.height;
	d->Depth = op->u.cp.depth;
}

/* ---- memsets --------------------------------------------------------------- */
/* A memset of elem-byte values, width elements by height rows. The blocking
 * forms act on device memory asynchronously, as their documentation says. */
static int cg_op_memset(struct cg_op *op, int pt, enum cg_reason *why, CUdeviceptr dst, size_t pitch,
			uint32_t value, unsigned elem, size_t width, size_t height, CUstream s)
{
	cg_op_init(op, CG_OP_MEMSET, pt, s);
	*why = CG_WHY_MEMCPY_KIND;
	if (!dst || !width || !height)
		return -EINVAL;
	if (cg_mem_type(DP(dst)) != CG_MEM_DEVICE)
		return -ENOTSUP;
	op->u.ms.dst = DP(dst);
	op->u.ms.pitch = height > 1 ? pitch : width * elem;
	op->u.ms.value = value;
	op->u.ms.elem = (uint8_t)elem;
	op->u.ms.width = width;
	op->u.ms.height = height;
	if (height > 1 && pitch < width * elem)
		return -EINVAL;
	return 0;
}

int cg_op_from_rt_memset_async(struct cg_op *op, int pt, enum cg_reason *why, void *dst, int value, size_t n,
			       cudaStream_t s)
{
	return cg_op_memset(op, pt, why, (CUdeviceptr)(uintptr_t)dst, n, (uint8_t)value, 1, n, 1, (CUstream)s);
}

int cg_op_from_rt_memset(struct cg_op *op, int pt, enum cg_reason *why, void *dst, int value, size_t n)
{
	return cg_op_memset(op, pt, why, (CUdeviceptr)(uintptr_t)dst, n, (uint8_t)value, 1, n, 1, NULL);
}

int cg_op_from_rt_memset2d_async(struct cg_op *op, int pt, enum cg_reason *why, void *dst, size_t pitch,
				 int value, size_t width, size_t height, cudaStream_t s)
{
	return cg_op_memset(op, pt, why, (CUdeviceptr)(uintptr_t)dst, pitch, (uint8_t)value, 1, width, height,
			    (CUstream)s);
}

int cg_op_from_rt_memset2d(struct cg_op *op, int pt, enum cg_reason *why, void *dst, size_t pitch, int value,
			   size_t width, size_t height)
{
	return cg_op_memset(op, pt, why, (CUdeviceptr)(uintptr_t)dst, pitch, (uint8_t)value, 1, width, height, NULL);
}

/* A 3D memset of whole slices is a 2D one of height * depth rows. */
static int cg_memset3d(struct cg_op *op, int pt, enum cg_reason *why, struct cudaPitchedPtr p, int value,
		       struct cudaExtent e, CUstream s)
{
	*why = CG_WHY_MEMCPY_KIND;
	if (e.depth > 1 && e.height != p.ysize)
		return -ENOTSUP;
	return cg_op_memset(op, pt, why, (CUdeviceptr)(uintptr_t)p.ptr, p.pitch, (uint8_t)value, 1, e.width,
			    e.height * e.depth, s);
}

int cg_op_from_rt_memset3d_async(struct cg_op *op, int pt, enum cg_reason *why, struct cudaPitchedPtr p,
				 int value, struct cudaExtent e, cudaStream_t s)
{
	return cg_memset3d(op, pt, why, p, value, e, (CUstream)s);
}

int cg_op_from_rt_memset3d(struct cg_op *op, int pt, enum cg_reason *why, struct cudaPitchedPtr p, int value,
			   struct cudaExtent e)
{
	return cg_memset3d(op, pt, why, p, value, e, NULL);
}

#define CG_MEMSET_DRV(name, type, elem)                                                                   \
	int cg_op_from_##name##Async(struct cg_op *op, int pt, enum cg_reason *why, CUdeviceptr dst,      \
				     type v, size_t n, CUstream s)                                       \
	{                                                                                                 \
		return cg_op_memset(op, pt, why, dst, n * elem, v, elem, n, 1, s);                        \
	}                                                                                                 \
	int cg_op_from_##name##_v2(struct cg_op *op, int pt, enum cg_reason *why, CUdeviceptr dst, type v, \
				   size_t n)                                                             \
	{                                                                                                 \
		return cg_op_memset(op, pt, why, dst, n * elem, v, elem, n, 1, NULL);                     \
	}
#define CG_MEMSET2D_DRV(name, type, elem)                                                                 \
	int cg_op_from_##name##Async(struct cg_op *op, int pt, enum cg_reason *why, CUdeviceptr dst,      \
				     size_t pitch, type v, size_t w, size_t h, CUstream s)               \
	{                                                                                                 \
		return cg_op_memset(op, pt, why, dst, pitch, v, elem, w, h, s);                           \
	}                                                                                                 \
	int cg_op_from_##name##_v2(struct cg_op *op, int pt, enum cg_reason *why, CUdeviceptr dst,        \
				   size_t pitch, type v, size_t w, size_t h)                             \
	{                                                                                                 \
		return cg_op_memset(op, pt, why, dst, pitch, v, elem, w, h, NULL);                        \
	}
CG_MEMSET_DRV(cuMemsetD8, unsigned char, 1)
CG_MEMSET_DRV(cuMemsetD16, unsigned short, 2)
CG_MEMSET_DRV(cuMemsetD32, unsigned int, 4)
CG_MEMSET2D_DRV(cuMemsetD2D8, unsigned char, 1)
CG_MEMSET2D_DRV(cuMemsetD2D16, unsigned short, 2)
CG_MEMSET2D_DRV(cuMemsetD2D32, unsigned int, 4)

/* ---- events, waits, host functions ---------------------------------------- */
/* The events other processes share (cg_op_event_shared): few, if any; past
 * CG_EVSET, every event is taken as shared and none is forgotten. */
static struct {
	pthread_mutex_t mu;
	atomic_int any;
	int n;
	CUevent ev[CG_EVSET];
} cg_shared_events = { .mu = PTHREAD_MUTEX_INITIALIZER };

void cg_op_event_shared(CUevent e, int shared)
{
	pthread_mutex_lock(&cg_shared_events.mu);
	int *n = &cg_shared_events.n;
	if (shared && !cg_evset_has(cg_shared_events.ev, *n, e))
		cg_evset_add(cg_shared_events.ev, n, e);
	for (int i = 0; !shared && *n <= CG_EVSET && i < *n; i++)
		if (cg_shared_events.ev[i] == e) {
			cg_shared_events.ev[i] = cg_shared_events.ev[--*n];
			break;
		}
	atomic_store(&cg_shared_events.any, *n != 0);
	pthread_mutex_unlock(&cg_shared_events.mu);
}

static int cg_event_is_shared(CUevent e)
{
	if (cg_likely(!atomic_load_explicit(&cg_shared_events.any, memory_order_acquire)))
		return 0;
	pthread_mutex_lock(&cg_shared_events.mu);
	int found = cg_evset_has(cg_shared_events.ev, cg_shared_events.n, e);
	pthread_mutex_unlock(&cg_shared_events.mu);
	return found;
}

int cg_op_from_rt_event_record(struct cg_op *op, int pt, enum cg_reason *why, cudaEvent_t e, cudaStream_t s)
{
	cg_op_init(op, CG_OP_RECORD, pt, (CUstream)s);
	op->u.ev.event = (CUevent)e;
	if (e && cg_event_is_shared((CUevent)e)) {
		*why = CG_WHY_EVENT_FLAGS;
		return -ENOTSUP;
	}
	return e ? 0 : -EINVAL;
}

int cg_op_from_rt_event_record_flags(struct cg_op *op, int pt, enum cg_reason *why, cudaEvent_t e,
				     cudaStream_t s, unsigned int flags)
{
	if (flags != cudaEventRecordDefault) {
		*why = CG_WHY_EVENT_FLAGS;
		return -ENOTSUP;
	}
	return cg_op_from_rt_event_record(op, pt, why, e, s);
}

int cg_op_from_rt_stream_wait(struct cg_op *op, int pt, enum cg_reason *why, cudaStream_t s, cudaEvent_t e,
			      unsigned int flags)
{
	cg_op_init(op, CG_OP_WAIT, pt, (CUstream)s);
	op->u.ev.event = (CUevent)e;
	if (flags != cudaEventWaitDefault || (e && cg_event_is_shared((CUevent)e))) {
		*why = CG_WHY_EVENT_FLAGS;
		return -ENOTSUP;
	}
	return e ? 0 : -EINVAL;
}

int cg_op_from_rt_host_func(struct cg_op *op, int pt, enum cg_reason *why, cudaStream_t s, cudaHostFn_t fn,
			    void *data)
{
	(void)why;
	cg_op_init(op, CG_OP_HOST, pt, (CUstream)s);
	op->u.host.fn = fn;
	op->u.host.data = data;
	return fn ? 0 : -EINVAL;
}

/* A stream callback, with CGRAFT_CALLBACKS=1, is a host function:
 * cg_callback_run calls it with its stream and success, as a host node runs
 * where the callback would have (and, as a callback, before the stream's
 * later work). Not by default: after a fault on the device, eagerly every
 * callback is still called, with the error, and a graph's later nodes are
 * not run at all. The three values a node's function takes one pointer to
 * are kept for good, once each, so that the same callback is the same host
 * op at every iteration and a node may run it long after the call. */
#define CG_CALLBACKS_BITS 14
#define CG_CALLBACKS (1u << CG_CALLBACKS_BITS)
#define CG_CALLBACK_PROBES 32 /* a callback not kept in these slots is not held */
static struct cg_callback {
	void *cb; /* cudaStreamCallback_t (rt) or CUstreamCallback */
	CUstream s;
	void *data;
	int rt;
} cg_callbacks[CG_CALLBACKS];
static pthread_mutex_t cg_callbacks_lock = PTHREAD_MUTEX_INITIALIZER;

static void CUDA_CB cg_callback_run(void *p)
{
	const struct cg_callback *c = p;
	if (c->rt)
		((cudaStreamCallback_t)c->cb)((cudaStream_t)c->s, cudaSuccess, c->data);
	else
		((CUstreamCallback)c->cb)(c->s, CUDA_SUCCESS, c->data);
}

/* The kept entry of (cb, s, data, rt), made if new; NULL when the slots it
 * may take are all taken (a lookup costs at most CG_CALLBACK_PROBES). */
static struct cg_callback *cg_callback_keep(void *cb, CUstream s, void *data, int rt)
{
	uint64_t h = ((uint64_t)(uintptr_t)cb * 31 + (uint64_t)(uintptr_t)s) * 31 + (uint64_t)(uintptr_t)data;
	size_t i = (size_t)((h * 0x9E3779B97F4A7C15ull) >> (64 - CG_CALLBACKS_BITS));
	struct cg_callback *c = NULL;
	pthread_mutex_lock(&cg_callbacks_lock);
	for (size_t n = 0; n < CG_CALLBACK_PROBES; n++, i = (i + 1) & (CG_CALLBACKS - 1)) {
		struct cg_callback *e = &cg_callbacks[i];
		if (!e->cb)
			*e = (struct cg_callback){ cb, s, data, rt };
		if (e->cb == cb && e->s == s && e->data == data && e->rt == rt) {
			c = e;
			break;
		}
	}
	pthread_mutex_unlock(&cg_callbacks_lock);
	return c;
}

static int cg_op_callback(struct cg_op *op, int pt, enum cg_reason *why, CUstream s, void *cb, void *data,
			  unsigned int flags, int rt)
{
	cg_op_init(op, CG_OP_HOST, pt, s);
	if (!cb || flags)
		return -EINVAL; /* the call refuses them */
	*why = CG_WHY_CALLBACKS;
	if (!cg_opt.callbacks)
		return -ENOTSUP;
	struct cg_callback *c = cg_callback_keep(cb, s, data, rt);
	if (!c)
		return -ENOTSUP;
	op->u.host.fn = cg_callback_run;
	op->u.host.data = c;
	return 0;
}

int cg_op_from_rt_stream_callback(struct cg_op *op, int pt, enum cg_reason *why, cudaStream_t s,
				  cudaStreamCallback_t cb, void *data, unsigned int flags)
{
	return cg_op_callback(op, pt, why, (CUstream)s, (void *)cb, data, flags, 1);
}

int cg_op_from_cuStreamAddCallback(struct cg_op *op, int pt, enum cg_reason *why, CUstream s, CUstreamCallback cb,
				   void *data, unsigned int flags)
{
	return cg_op_callback(op, pt, why, s, (void *)cb, data, flags, 0);
}

int cg_op_from_cuEventRecord(struct cg_op *op, int pt, enum cg_reason *why, CUevent e, CUstream s)
{
	return cg_op_from_rt_event_record(op, pt, why, (cudaEvent_t)e, (cudaStream_t)s);
}

int cg_op_from_cuEventRecordWithFlags(struct cg_op *op, int pt, enum cg_reason *why, CUevent e, CUstream s,
				      unsigned int flags)
{
	return cg_op_from_rt_event_record_flags(op, pt, why, (cudaEvent_t)e, (cudaStream_t)s, flags);
}

int cg_op_from_cuStreamWaitEvent(struct cg_op *op, int pt, enum cg_reason *why, CUstream s, CUevent e,
				 unsigned int flags)
{
	return cg_op_from_rt_stream_wait(op, pt, why, (cudaStream_t)s, (cudaEvent_t)e, flags);
}

int cg_op_from_cuLaunchHostFunc(struct cg_op *op, int pt, enum cg_reason *why, CUstream s, CUhostFn fn,
				void *data)
{
	return cg_op_from_rt_host_func(op, pt, why, (cudaStream_t)s, fn, data);
}

/* ---- NCCL --------------------------------------------------------------------- */
/* The stream each communicator's calls go to: held calls of one
 * communicator are ordered by that stream, the way NCCL orders them. A
 * communicator used from a second stream (NCCL orders those calls itself,
 * which a captured call may not take part in) gets no call held again, and
 * its graphs are forgotten (cg_op_nccl_comm_bad). */
#define CG_NCCL_COMMS 64
#define CG_NCCL_SEVERAL ((CUstream)(uintptr_t)-1)
static struct {
	void *comm;
	CUstream stream;
} cg_comms[CG_NCCL_COMMS];
static pthread_mutex_t cg_comms_lock = PTHREAD_MUTEX_INITIALIZER;

static int cg_nccl_one_stream(void *comm, CUstream s)
{
	int ok = 0;
	pthread_mutex_lock(&cg_comms_lock);
	for (int i = 0; i < CG_NCCL_COMMS; i++)
		if (cg_comms[i].comm == comm || !cg_comms[i].comm) {
			if (!cg_comms[i].comm)
				cg_comms[i].comm = comm, cg_comms[i].stream = s;
			ok = cg_comms[i].stream == s;
			if (!ok)
				cg_comms[i].stream = CG_NCCL_SEVERAL;
			break;
		}
	pthread_mutex_unlock(&cg_comms_lock);
	return ok;
}

int cg_op_nccl_comm_bad(void *comm)
{
	int bad = 1; /* a full table holds nothing more */
	pthread_mutex_lock(&cg_comms_lock);
	for (int i = 0; i < CG_NCCL_COMMS; i++)
		if (cg_comms[i].comm == comm) {
			bad = cg_comms[i].stream == CG_NCCL_SEVERAL;
			break;
		}
	pthread_mutex_unlock(&cg_comms_lock);
	return bad && cg_opt.nccl;
}

void cg_op_nccl_forget(void)
{
	pthread_mutex_lock(&cg_comms_lock);
	memset(cg_comms, 0, sizeof cg_comms);
	pthread_mutex_unlock(&cg_comms_lock);
}

/* Held only with CGRAFT_NCCL=1 (else a boundary): whether a call runs inside
 * a graph must be the same on every rank, and each process decides alone. */
static int cg_op_nccl(struct cg_op *op, enum cg_reason *why, enum cg_nccl_fn fn, const void *send, void *recv,
		      size_t count, int dtype, int redop, int root, void *comm, cudaStream_t s)
{
	*why = CG_WHY_NCCL;
	void *const *calls = (void *const *)&cg_nccl_bk;
	_Static_assert(sizeof cg_nccl_bk == CG_NC_COUNT * sizeof(void *), "one call per enum cg_nccl_fn");
	if (!cg_opt.nccl || cg_nccl_ready() || !calls[fn] || !cg_nccl_one_stream(comm, cg_stream_explicit((CUstream)s, 0)))
		return -ENOTSUP;
	cg_op_init(op, CG_OP_NCCL, 0, (CUstream)s);
	op->u.nc.fn = (uint8_t)fn;
	op->u.nc.send = send;
	op->u.nc.recv = recv;
	op->u.nc.count = count;
	op->u.nc.dtype = dtype;
	op->u.nc.redop = redop;
	op->u.nc.root = root;
	op->u.nc.comm = comm;
	return 0;
}

#define CG_NCCL_FROM(family, fn, params, send, recv, count, dtype, redop, root, comm, s)     \
	int cg_op_from_##family(struct cg_op *op, int pt, enum cg_reason *why, CG_UNPAREN params) \
	{                                                                                 \
		(void)pt;                                                                 \
		return cg_op_nccl(op, why, fn, send, recv, count, dtype, redop, root, comm, s); \
	}
#define CG_UNPAREN(...) __VA_ARGS__
CG_NCCL_FROM(nccl_allreduce, CG_NC_ALLREDUCE,
	     (const void *send, void *recv, size_t count, int dtype, int redop, void *comm, cudaStream_t s),
	     send, recv, count, dtype, redop, 0, comm, s)
CG_NCCL_FROM(nccl_broadcast, CG_NC_BROADCAST,
	     (const void *send, void *recv, size_t count, int dtype, int root, void *comm, cudaStream_t s),
	     send, recv, count, dtype, 0, root, comm, s)
CG_NCCL_FROM(nccl_bcast, CG_NC_BROADCAST,
	     (void *buff, size_t count, int dtype, int root, void *comm, cudaStream_t s),
	     buff, buff, count, dtype, 0, root, comm, s)
CG_NCCL_FROM(nccl_reduce, CG_NC_REDUCE,
	     (const void *send, void *recv, size_t count, int dtype, int redop, int root, void *comm, cudaStream_t s),
	     send, recv, count, dtype, redop, root, comm, s)
CG_NCCL_FROM(nccl_allgather, CG_NC_ALLGATHER,
	     (const void *send, void *recv, size_t count, int dtype, void *comm, cudaStream_t s),
	     send, recv, count, dtype, 0, 0, comm, s)
CG_NCCL_FROM(nccl_reducescatter, CG_NC_REDUCESCATTER,
	     (const void *send, void *recv, size_t count, int dtype, int redop, void *comm, cudaStream_t s),
	     send, recv, count, dtype, redop, 0, comm, s)
CG_NCCL_FROM(nccl_alltoall, CG_NC_ALLTOALL,
	     (const void *send, void *recv, size_t count, int dtype, void *comm, cudaStream_t s),
	     send, recv, count, dtype, 0, 0, comm, s)
CG_NCCL_FROM(nccl_gather, CG_NC_GATHER,
	     (const void *send, void *recv, size_t count, int dtype, int root, void *comm, cudaStream_t s),
	     send, recv, count, dtype, 0, root, comm, s)
CG_NCCL_FROM(nccl_scatter, CG_NC_SCATTER,
	     (const void *send, void *recv, size_t count, int dtype, int root, void *comm, cudaStream_t s),
	     send, recv, count, dtype, 0, root, comm, s)
CG_NCCL_FROM(nccl_send, CG_NC_SEND,
	     (const void *send, size_t count, int dtype, int peer, void *comm, cudaStream_t s),
	     send, NULL, count, dtype, 0, peer, comm, s)
CG_NCCL_FROM(nccl_recv, CG_NC_RECV, (void *recv, size_t count, int dtype, int peer, void *comm, cudaStream_t s),
	     NULL, recv, count, dtype, 0, peer, comm, s)
#undef CG_NCCL_FROM
#undef CG_UNPAREN

/* The real call, on stream s. */
static CUresult cg_submit_nccl(const struct cg_op *op, CUstream s)
{
	const struct cg_nccl_backend *n = &cg_nccl_bk;
	const struct cg_op *o = op;
	int rc = 1;
	cg_busy++;
	switch (o->u.nc.fn) {
	case CG_NC_ALLREDUCE:
		rc = n->allreduce(o->u.nc.send, o->u.nc.recv, o->u.nc.count, o->u.nc.dtype, o->u.nc.redop,
				  o->u.nc.comm, s);
		break;
	case CG_NC_BROADCAST:
		rc = n->broadcast(o->u.nc.send, o->u.nc.recv, o->u.nc.count, o->u.nc.dtype, o->u.nc.root,
				  o->u.nc.comm, s);
		break;
	case CG_NC_REDUCE:
		rc = n->reduce(o->u.nc.send, o->u.nc.recv, o->u.nc.count, o->u.nc.dtype, o->u.nc.redop,
			       o->u.nc.root, o->u.nc.comm, s);
		break;
	case CG_NC_ALLGATHER:
		rc = n->allgather(o->u.nc.send, o->u.nc.recv, o->u.nc.count, o->u.nc.dtype, o->u.nc.comm, s);
		break;
	case CG_NC_REDUCESCATTER:
		rc = n->reducescatter(o->u.nc.send, o->u.nc.recv, o->u.nc.count, o->u.nc.dtype, o->u.nc.redop,
				      o->u.nc.comm, s);
		break;
	case CG_NC_ALLTOALL:
		rc = n->alltoall(o->u.nc.send, o->u.nc.recv, o->u.nc.count, o->u.nc.dtype, o->u.nc.comm, s);
		break;
	case CG_NC_GATHER:
		rc = n->gather(o->u.nc.send, o->u.nc.recv, o->u.nc.count, o->u.nc.dtype, o->u.nc.root,
			       o->u.nc.comm, s);
		break;
	case CG_NC_SCATTER:
		rc = n->scatter(o->u.nc.send, o->u.nc.recv, o->u.nc.count, o->u.nc.dtype, o->u.nc.root,
				o->u.nc.comm, s);
		break;
	case CG_NC_SEND:
		rc = n->send(o->u.nc.send, o->u.nc.count, o->u.nc.dtype, o->u.nc.root, o->u.nc.comm, s);
		break;
	case CG_NC_RECV:
		rc = n->recv(o->u.nc.recv, o->u.nc.count, o->u.nc.dtype, o->u.nc.root, o->u.nc.comm, s);
		break;
	}
	cg_busy--;
	return rc == 0 ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN;
}

/* ---- shape and values ------------------------------------------------------- */
/* 2D and 3D copy and memset nodes cannot be updated after instantiation:
 * their addresses are part of the shape. */
static int cg_op_fixed_addresses(const struct cg_op *op)
{
	if (op->kind == CG_OP_COPY)
		return op->u.cp.height > 1 || op->u.cp.depth > 1;
	return op->kind == CG_OP_MEMSET && op->u.ms.height > 1;
}

static inline uint64_t cg_mix(uint64_t h, uint64_t v)
{
	h ^= v;
	h *= 0x9E3779B97F4A7C15ull;
	return h ^ (h >> 32);
}

uint64_t cg_op_shape_hash(const struct cg_op *op)
{
	uint64_t h = cg_mix((uint64_t)op->kind << 8 | op->flags, (uintptr_t)op->stream);
	h = cg_mix(h, (uintptr_t)op->ctx);
	switch (op->kind) {
	case CG_OP_KERNEL:
		/* The launch is a value where a node's update may change it
		 * (cg_op_kernel_is_value). */
		if (cg_op_kernel_is_value(op))
			return cg_mix(h, 0x6b76 ^ (uint64_t)op->nbytes << 16);
		h = cg_mix(h, (uintptr_t)op->u.k.ki->handle);
		h = cg_mix(h, (uint64_t)op->u.k.grid[0] << 32 | op->u.k.grid[1]);
		h = cg_mix(h, op->u.k.grid[2]);
		h = cg_mix(h, (uint64_t)op->u.k.block[0] << 32 | op->u.k.block[1]);
		h = cg_mix(h, (uint64_t)op->u.k.block[2] << 32 | op->u.k.shmem);
		h = cg_mix(h, (uint64_t)op->nbytes << 8 | op->u.k.nattr);
		break;
	case CG_OP_COPY:
		h = cg_mix(h, (cg_op_extent_is_value(op) ? 0 : op->u.cp.width) ^ op->u.cp.height << 40 ^
				      op->u.cp.depth << 52);
		h = cg_mix(h, (uint64_t)(op->u.cp.dst_host | op->u.cp.src_host << 1));
		if (cg_op_fixed_addresses(op))
			h = cg_mix(cg_mix(h, (uintptr_t)op->u.cp.dst), (uintptr_t)op->u.cp.src);
		break;
	case CG_OP_MEMSET:
		h = cg_mix(h, op->u.ms.width ^ op->u.ms.height << 40 ^ (uint64_t)op->u.ms.elem << 60);
		if (cg_op_fixed_addresses(op))
			h = cg_mix(cg_mix(h, (uintptr_t)op->u.ms.dst), op->u.ms.value);
		break;
	case CG_OP_HOST:
		h = cg_mix(h, (uintptr_t)op->u.host.fn);
		break;
	case CG_OP_RECORD:
	case CG_OP_WAIT:
		h = cg_mix(h, (uintptr_t)op->u.ev.event);
		break;
	case CG_OP_NCCL:
		h = cg_mix(h, (uint64_t)op->u.nc.fn << 48 ^ (uint64_t)(uint32_t)op->u.nc.dtype << 16 ^
				      (uint32_t)op->u.nc.redop);
		h = cg_mix(cg_mix(h, (uintptr_t)op->u.nc.send), (uintptr_t)op->u.nc.recv);
		h = cg_mix(cg_mix(h, op->u.nc.count), (uintptr_t)op->u.nc.comm ^ (uint32_t)op->u.nc.root);
		break;
	}
	return h;
}

int cg_op_same_shape(const struct cg_op *a, const struct cg_op *b)
{
	if (a->kind != b->kind || a->flags != b->flags || a->stream != b->stream || a->ctx != b->ctx)
		return 0;
	switch (a->kind) {
	case CG_OP_KERNEL:
		if (cg_op_kernel_is_value(a) && cg_op_kernel_is_value(b))
			return a->nbytes == b->nbytes && cg_op_grid_valid(a) && cg_op_grid_valid(b);
		return cg_op_same_kernel(a, b) && a->u.k.nattr == b->u.k.nattr && cg_op_same_grid(a, b) &&
		       (!a->u.k.nattr || !memcmp(a->u.k.attr, b->u.k.attr, a->u.k.nattr * sizeof *a->u.k.attr));
	case CG_OP_COPY:
		/* A device copy's size (and pitches, one row) are values. */
		if (a->u.cp.height != b->u.cp.height || a->u.cp.depth != b->u.cp.depth ||
		    a->u.cp.dst_host != b->u.cp.dst_host || a->u.cp.src_host != b->u.cp.src_host)
			return 0;
		if (cg_op_extent_is_value(a))
			return 1;
		return a->u.cp.width == b->u.cp.width && a->u.cp.dpitch == b->u.cp.dpitch &&
		       a->u.cp.spitch == b->u.cp.spitch && a->u.cp.dheight == b->u.cp.dheight &&
		       a->u.cp.sheight == b->u.cp.sheight &&
		       (!cg_op_fixed_addresses(a) || (a->u.cp.dst == b->u.cp.dst && a->u.cp.src == b->u.cp.src));
	case CG_OP_MEMSET:
		return a->u.ms.width == b->u.ms.width && a->u.ms.height == b->u.ms.height &&
		       a->u.ms.elem == b->u.ms.elem && a->u.ms.pitch == b->u.ms.pitch &&
		       (!cg_op_fixed_addresses(a) ||
			(a->u.ms.dst == b->u.ms.dst && a->u.ms.value == b->u.ms.value));
	case CG_OP_HOST:
		return a->u.host.fn == b->u.host.fn;
	case CG_OP_RECORD:
	case CG_OP_WAIT:
		return a->u.ev.event == b->u.ev.event;
	case CG_OP_NCCL:
		return a->u.nc.fn == b->u.nc.fn && a->u.nc.send == b->u.nc.send && a->u.nc.recv == b->u.nc.recv &&
		       a->u.nc.count == b->u.nc.count && a->u.nc.comm == b->u.nc.comm &&
		       a->u.nc.dtype == b->u.nc.dtype && a->u.nc.redop == b->u.nc.redop &&
		       a->u.nc.root == b->u.nc.root;
	}
	return 0;
}

int cg_op_same_values(const struct cg_op *a, const struct cg_op *b)
{
	switch (a->kind) {
	case CG_OP_KERNEL:
		return cg_op_same_kernel(a, b) && cg_op_same_grid(a, b) && !memcmp(a->u.k.params, b->u.k.params, a->nbytes);
	case CG_OP_COPY:
		/* A held pageable source is read from cgraft's staging: its
		 * bytes are copied at every replay, the address never matters;
		 * nor does a destination a graph's copy lands in pinned memory
		 * for (copied out after the wait). */
		return a->u.cp.width == b->u.cp.width && a->u.cp.dpitch == b->u.cp.dpitch &&
		       a->u.cp.spitch == b->u.cp.spitch &&
		       (a->flags & CG_F_LANDS_PINNED || a->u.cp.dst == b->u.cp.dst) &&
		       ((a->flags & CG_F_SRC_PAGEABLE && !(a->flags & CG_F_HOST_WAITS)) ||
			a->u.cp.src == b->u.cp.src);
	case CG_OP_MEMSET:
		return a->u.ms.dst == b->u.ms.dst && a->u.ms.value == b->u.ms.value;
	case CG_OP_HOST:
		return a->u.host.data == b->u.host.data;
	default:
		return 1;
	}
}

/* Parameter bytes, hashed in four independent lanes of 8 bytes: a
 * PyTorch kernel's hundreds of bytes take a quarter of the dependent
 * multiplications. */
static uint64_t cg_params_hash(const uint8_t *p, uint32_t n, uint64_t h)
{
	const uint64_t k = 0x100000001b3ull;
	uint64_t a = h, b = h ^ 0x9E3779B97F4A7C15ull, c = h ^ 0xC2B2AE3D27D4EB4Full, d = h ^ 0x165667B19E3779F9ull;
	uint32_t i = 0;
	for (; i + 32 <= n; i += 32) {
		uint64_t w, x, y, z;
		memcpy(&w, p + i, 8);
		memcpy(&x, p + i + 8, 8);
		memcpy(&y, p + i + 16, 8);
		memcpy(&z, p + i + 24, 8);
		a = (a ^ w) * k;
		b = (b ^ x) * k;
		c = (c ^ y) * k;
		d = (d ^ z) * k;
	}
	for (; i + 8 <= n; i += 8) {
		uint64_t w;
		memcpy(&w, p + i, 8);
		a = (a ^ w) * k;
	}
	for (; i < n; i++)
		b = (b ^ p[i]) * k;
	a = (a ^ b ^ (b >> 29)) * k;
	a = (a ^ c ^ (c >> 29)) * k;
	return (a ^ d ^ (d >> 29)) * k;
}

uint64_t cg_op_values_hash(const struct cg_op *o)
{
	uint64_t h = 0xcbf29ce484222325ull ^ o->kind;
	switch (o->kind) {
	case CG_OP_KERNEL:
		h = (h ^ (uintptr_t)o->u.k.ki->handle) * 0x100000001b3ull;
		for (int i = 0; i < 3; i++)
			h = (h ^ o->u.k.grid[i] ^ (uint64_t)o->u.k.block[i] << 32) * 0x100000001b3ull;
		h = (h ^ o->u.k.shmem ^ (uint64_t)o->nbytes << 32) * 0x100000001b3ull;
		h = cg_params_hash(o->u.k.params, o->nbytes, h);
		break;
	case CG_OP_COPY:
		h = (h ^ o->u.cp.width) * 0x100000001b3ull;
		h = (h ^ (o->u.cp.dpitch << 32 ^ o->u.cp.spitch)) * 0x100000001b3ull;
		if (!(o->flags & CG_F_LANDS_PINNED))
			h = (h ^ (uintptr_t)o->u.cp.dst) * 0x100000001b3ull;
		if (!(o->flags & CG_F_SRC_PAGEABLE) || o->flags & CG_F_HOST_WAITS)
			h = (h ^ (uintptr_t)o->u.cp.src) * 0x100000001b3ull;
		break;
	case CG_OP_MEMSET:
		h = (h ^ (uintptr_t)o->u.ms.dst) * 0x100000001b3ull;
		h = (h ^ o->u.ms.value) * 0x100000001b3ull;
		break;
	case CG_OP_HOST:
		h = (h ^ (uintptr_t)o->u.host.data) * 0x100000001b3ull;
		break;
	default:
		break;
	}
	return h;
}

static const char *const cg_kind_names[] = { "kernel", "copy", "memset", "host function", "event record",
					     "stream wait", "NCCL call" };

void cg_op_describe(char *buf, size_t size, const struct cg_op *op)
{
	switch (op->kind) {
	case CG_OP_KERNEL: {
		const struct cg_kinfo *ki = op->u.k.ki;
		snprintf(buf, size, "kernel %s grid (%u,%u,%u) block (%u,%u,%u) shmem %u on stream %p",
			 ki->name[0] ? ki->name : "(unnamed)", op->u.k.grid[0], op->u.k.grid[1], op->u.k.grid[2],
			 op->u.k.block[0], op->u.k.block[1], op->u.k.block[2], op->u.k.shmem, (void *)op->stream);
		break;
	}
	case CG_OP_COPY:
		snprintf(buf, size, "copy %s to %s of %zux%zux%zu bytes on stream %p",
			 op->u.cp.src_host ? "host" : "device", op->u.cp.dst_host ? "host" : "device",
			 op->u.cp.width, op->u.cp.height, op->u.cp.depth, (void *)op->stream);
		break;
	case CG_OP_MEMSET:
		snprintf(buf, size, "memset of %zux%zu %u-byte values on stream %p", op->u.ms.width,
			 op->u.ms.height, op->u.ms.elem, (void *)op->stream);
		break;
	default:
		snprintf(buf, size, "%s on stream %p", cg_kind_names[op->kind], (void *)op->stream);
		break;
	}
}

/* Names what differs between the values of two ops of one shape, for the
 * debug log: which parameters of a kernel, which addresses of a copy. */
void cg_op_describe_change(char *buf, size_t size, const struct cg_op *was, const struct cg_op *now)
{
	int n = 0;
	switch (now->kind) {
	case CG_OP_KERNEL: {
		const struct cg_kinfo *ki = now->u.k.ki;
		if (!cg_op_same_kernel(was, now)) {
			const struct cg_kinfo *wi = was->u.k.ki;
			snprintf(buf, size, "kernel %s block (%u,%u,%u) shmem %u -> %s block (%u,%u,%u) shmem %u",
				 wi->name[0] ? wi->name : "(unnamed)", was->u.k.block[0], was->u.k.block[1],
				 was->u.k.block[2], was->u.k.shmem, ki->name[0] ? ki->name : "(unnamed)",
				 now->u.k.block[0], now->u.k.block[1], now->u.k.block[2], now->u.k.shmem);
			break;
		}
		n = snprintf(buf, size, "kernel %s:", ki->name[0] ? ki->name : "(unnamed)");
		if (!cg_op_same_grid(was, now) && n >= 0 && (size_t)n < size)
			n += snprintf(buf + n, size - (size_t)n, " grid (%u,%u,%u) -> (%u,%u,%u)", was->u.k.grid[0],
				      was->u.k.grid[1], was->u.k.grid[2], now->u.k.grid[0], now->u.k.grid[1],
				      now->u.k.grid[2]);
		uint32_t off = 0, shown = 0;
		uint32_t np = now->flags & CG_F_PACKED ? 1 : ki->nparams;
		for (uint32_t j = 0; j < np && n >= 0 && (size_t)n < size; j++) {
			uint32_t sz = now->flags & CG_F_PACKED ? now->nbytes : ki->size[j];
			const uint8_t *a = was->u.k.params + off, *b = now->u.k.params + off;
			off += sz;
			uint32_t lo = 0, hi = sz;
			while (lo < sz && a[lo] == b[lo])
				lo++;
			if (lo == sz)
				continue;
			while (hi > lo && a[hi - 1] == b[hi - 1])
				hi--;
			if (++shown > 4) {
				n += snprintf(buf + n, size - (size_t)n, " ...");
				break;
			}
			uint64_t wa = 0, wb = 0;
			uint32_t w = hi - lo < 8 ? hi - lo : 8;
			memcpy(&wa, a + lo, w);
			memcpy(&wb, b + lo, w);
			n += snprintf(buf + n, size - (size_t)n, " param %u (%u bytes) bytes %u-%u %#llx -> %#llx", j,
				      sz, lo, hi - 1, (unsigned long long)wa, (unsigned long long)wb);
		}
		break;
	}
	case CG_OP_COPY:
		snprintf(buf, size, "copy %s to %s, dst %p -> %p, src %p -> %p, %zu -> %zu bytes",
			 !now->u.cp.src_host ? "device" : now->flags & CG_F_SRC_PAGEABLE ? "pageable host" : "host",
			 !now->u.cp.dst_host ? "device" : now->flags & CG_F_DST_PAGEABLE ? "pageable host" : "host",
			 was->u.cp.dst, now->u.cp.dst, was->u.cp.src, now->u.cp.src, was->u.cp.width, now->u.cp.width);
		break;
	case CG_OP_MEMSET:
		snprintf(buf, size, "memset dst %p -> %p, value %u -> %u", was->u.ms.dst, now->u.ms.dst,
			 was->u.ms.value, now->u.ms.value);
		break;
	case CG_OP_HOST:
		snprintf(buf, size, "host function data %p -> %p", was->u.host.data, now->u.host.data);
		break;
	default:
		snprintf(buf, size, "no values");
		break;
	}
}

/* ---- eager submission -------------------------------------------------------- */
static CUresult cg_submit_kernel(const struct cg_op *op, CUstream s)
{
	void *argv[CG_MAX_PARAMS], *extra[5];
	size_t size;
	cg_kernel_args(op, argv, extra, &size);
	void **params = op->flags & CG_F_PACKED ? NULL : argv, **ex = op->flags & CG_F_PACKED ? extra : NULL;
	/* A CUkernel may be given where a CUfunction is asked for. */
	CUfunction f = (CUfunction)op->u.k.ki->handle;
	if (!op->u.k.nattr)
		return CG_BK(launch_kernel, f, op->u.k.grid[0], op->u.k.grid[1], op->u.k.grid[2], op->u.k.block[0],
			     op->u.k.block[1], op->u.k.block[2], op->u.k.shmem, s, params, ex);
	CUlaunchConfig c = {
		.gridDimX = op->u.k.grid[0], .gridDimY = op->u.k.grid[1], .gridDimZ = op->u.k.grid[2],
		.blockDimX = op->u.k.block[0], .blockDimY = op->u.k.block[1], .blockDimZ = op->u.k.block[2],
		.sharedMemBytes = op->u.k.shmem, .hStream = s,
		.attrs = (CUlaunchAttribute *)op->u.k.attr, .numAttrs = op->u.k.nattr,
	};
	return CG_BK(launch_kernel_ex, &c, f, params, ex);
}

static CUresult cg_submit_memset(const struct cg_op *op, CUstream s)
{
	CUdeviceptr d = (CUdeviceptr)(uintptr_t)op->u.ms.dst;
	size_t w = op->u.ms.width, h = op->u.ms.height, p = op->u.ms.pitch;
	uint32_t v = op->u.ms.value;
	switch (op->u.ms.elem) {
	case 1:
		return h > 1 ? CG_BK(memset2d8_async, d, p, (unsigned char)v, w, h, s)
			     : CG_BK(memset8_async, d, (unsigned char)v, w, s);
	case 2:
		return h > 1 ? CG_BK(memset2d16_async, d, p, (unsigned short)v, w, h, s)
			     : CG_BK(memset16_async, d, (unsigned short)v, w, s);
	default:
		return h > 1 ? CG_BK(memset2d32_async, d, p, v, w, h, s) : CG_BK(memset32_async, d, v, w, s);
	}
}

CUresult cg_op_submit(const struct cg_op *op, CUstream s)
{
	switch (op->kind) {
	case CG_OP_KERNEL:
		return cg_submit_kernel(op, s);
	case CG_OP_COPY:
		if (op->u.cp.height == 1 && op->u.cp.depth == 1)
			return CG_BK(memcpy_async, (CUdeviceptr)(uintptr_t)op->u.cp.dst,
				     (CUdeviceptr)(uintptr_t)op->u.cp.src, op->u.cp.width, s);
		{
			CUDA_MEMCPY3D d;
			cg_copy_desc(op, op->u.cp.src, op->u.cp.dst, &d);
			return CG_BK(memcpy3d_async, &d, s);
		}
	case CG_OP_MEMSET:
		return cg_submit_memset(op, s);
	case CG_OP_HOST:
		return CG_BK(host_func, s, op->u.host.fn, op->u.host.data);
	case CG_OP_RECORD:
		return CG_BK(event_record, op->u.ev.event, s);
	case CG_OP_WAIT:
		return CG_BK(stream_wait, s, op->u.ev.event, 0);
	case CG_OP_NCCL:
		return cg_submit_nccl(op, s);
	}
	return CUDA_ERROR_NOT_SUPPORTED;
}
