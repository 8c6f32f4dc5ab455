/* Normalising intercepted calls into ops: stream handles made explicit, kernel
 * parameter layout, copy kinds resolved; and submitting an op again eagerly. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgraft_i.h"

/* ---- kernel parameter layout ----------------------------------------- */
#define CG_KINFO_SLOTS 4096 /* power of two; open addressing */
static struct cg_kinfo *cg_kinfo_tab[CG_KINFO_SLOTS];
static pthread_mutex_t cg_kinfo_lock = PTHREAD_MUTEX_INITIALIZER;

static size_t cg_ptr_slot(const void *p)
{
	uint64_t h = (uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15ull;
	return (size_t)(h >> 52) & (CG_KINFO_SLOTS - 1);
}

/* NCCL kernels carry host-side proxy work that must meet them in time: they
 * are never deferred. Every NCCL device kernel is named nccl* (ncclKernel_*,
 * ncclDevKernel_*), so the name tells reliably. */
static int cg_is_nccl_name(const char *name)
{
	return name && !strncmp(name, "nccl", 4);
}

static struct cg_kinfo *cg_kinfo_new(const void *func, const uint32_t *sizes, uint32_t n)
{
	struct cg_kinfo *ki = calloc(1, sizeof *ki + n * sizeof(uint32_t));
	if (!ki)
		return NULL;
	ki->func = func;
	ki->nparams = n;
	ki->size = (uint32_t *)(ki + 1);
	for (uint32_t i = 0; i < n; i++) {
		ki->size[i] = sizes[i];
		ki->total += sizes[i];
	}
	return ki;
}

/* Asks the runtime for each parameter's size until it says there is none.
 * A failed query sets the runtime's sticky last error, which the program may
 * read (PyTorch does after every launch): learn only when none is pending,
 * and clear what the probe left. */
static struct cg_kinfo *cg_kinfo_learn_runtime(const void *func)
{
	if (!cg_real.cudaFuncGetParamInfo || !cg_real.cudaPeekAtLastError || !cg_real.cudaGetLastError)
		return NULL;
	cg_busy++;
	struct cg_kinfo *ki = NULL;
	if (cg_real.cudaPeekAtLastError() != cudaSuccess)
		goto out;
	uint32_t sizes[CG_MAX_PARAMS];
	uint32_t n = 0;
	for (;; n++) {
		size_t off, size;
		if (n == CG_MAX_PARAMS)
			goto out_clear;
		if (cg_real.cudaFuncGetParamInfo(func, n, &off, &size) != cudaSuccess)
			break;
		sizes[n] = (uint32_t)size;
	}
	ki = cg_kinfo_new(func, sizes, n);
	if (ki) {
		const char *name = NULL;
		if (cg_real.cudaFuncGetName && cg_real.cudaFuncGetName(&name, func) == cudaSuccess) {
			snprintf(ki->name, sizeof ki->name, "%s", name ? name : "");
			ki->nccl = (uint8_t)cg_is_nccl_name(name);
		}
	}
out_clear:
	cg_real.cudaGetLastError();
out:
	cg_busy--;
	return ki;
}

/* A driver handle is a CUfunction or, since CUDA 12, a CUkernel: ask as one,
 * then as the other. The driver keeps no sticky error. */
static struct cg_kinfo *cg_kinfo_learn_driver(const void *func)
{
	if (cg_drv_resolve_internal())
		return NULL;
	uint32_t sizes[CG_MAX_PARAMS] = { 0 };
	size_t off, size;
	uint8_t handle = CG_K_FUNCTION;
	cg_busy++;
	CUresult rc = cg_drv.cuFuncGetParamInfo((CUfunction)func, 0, &off, &size);
	if (rc != CUDA_SUCCESS && cg_drv.cuKernelGetParamInfo &&
	    cg_drv.cuKernelGetParamInfo((CUkernel)func, 0, &off, &size) == CUDA_SUCCESS) {
		handle = CG_K_KERNEL;
		rc = CUDA_SUCCESS;
	}
	uint32_t n = 0;
	struct cg_kinfo *ki = NULL;
	if (rc == CUDA_SUCCESS) {
		for (;; n++) {
			if (n == CG_MAX_PARAMS)
				goto out;
			rc = handle == CG_K_KERNEL
				     ? cg_drv.cuKernelGetParamInfo((CUkernel)func, n, &off, &size)
				     : cg_drv.cuFuncGetParamInfo((CUfunction)func, n, &off, &size);
			if (rc != CUDA_SUCCESS)
				break;
			sizes[n] = (uint32_t)size;
		}
	} else if (rc != CUDA_ERROR_INVALID_VALUE) {
		goto out; /* not a handle the driver knows: leave it eager */
	}
	ki = cg_kinfo_new(func, sizes, n);
	if (ki) {
		ki->handle = handle;
		const char *name = NULL;
		if (handle == CG_K_FUNCTION && cg_drv.cuFuncGetName &&
		    cg_drv.cuFuncGetName(&name, (CUfunction)func) == CUDA_SUCCESS) {
			snprintf(ki->name, sizeof ki->name, "%s", name ? name : "");
			ki->nccl = (uint8_t)cg_is_nccl_name(name);
		}
	}
out:
	cg_busy--;
	return ki;
}

const struct cg_kinfo *cg_kinfo_get(const void *func, int drv)
{
	size_t i = cg_ptr_slot(func);
	/* Entries are never removed: a lock-free read finds a published one. */
	for (size_t probe = 0; probe < CG_KINFO_SLOTS; probe++, i = (i + 1) & (CG_KINFO_SLOTS - 1)) {
		struct cg_kinfo *ki = __atomic_load_n(&cg_kinfo_tab[i], __ATOMIC_ACQUIRE);
		if (!ki)
			break;
		if (ki->func == func)
			return ki;
	}
	pthread_mutex_lock(&cg_kinfo_lock);
	i = cg_ptr_slot(func);
	size_t probe;
	for (probe = 0; probe < CG_KINFO_SLOTS; probe++, i = (i + 1) & (CG_KINFO_SLOTS - 1)) {
		if (!cg_kinfo_tab[i] || cg_kinfo_tab[i]->func == func)
			break;
	}
	struct cg_kinfo *ki = probe < CG_KINFO_SLOTS ? cg_kinfo_tab[i] : NULL;
	if (!ki && probe < CG_KINFO_SLOTS) {
		ki = drv ? cg_kinfo_learn_driver(func) : cg_kinfo_learn_runtime(func);
		if (ki)
			__atomic_store_n(&cg_kinfo_tab[i], ki, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&cg_kinfo_lock);
	return ki;
}

/* ---- normalisers ------------------------------------------------------ */
static cudaStream_t cg_stream_explicit(cudaStream_t s, int pt)
{
	if (s)
		return s;
	return pt ? cudaStreamPerThread : cudaStreamLegacy;
}

static void cg_op_init(struct cg_op *op, enum cg_op_kind kind, int pt, cudaStream_t s)
{
	op->kind = (uint8_t)kind;
	op->api_pt = (uint8_t)pt;
	op->unrecorded = 0;
	op->nbytes = 0;
	op->stream = cg_stream_explicit(s, pt);
}

/* A kernel launch through either face: the layout is learnt from the
 * runtime for runtime handles and from the driver for driver ones. */
static int cg_op_kernel(struct cg_op *op, int pt, enum cg_reason *why, const void *func, int drv,
			dim3 grid, dim3 block, size_t shmem, cudaStream_t s, void **args)
{
	cg_op_init(op, CG_OP_KERNEL, pt, s);
	op->u.k.func = func;
	op->u.k.grid = grid;
	op->u.k.block = block;
	op->u.k.shmem = shmem;
	op->u.k.args = args;
	op->u.k.extra = NULL;
	op->u.k.params = NULL;
	op->u.k.drv = (uint8_t)drv;
	op->u.k.packed = 0;
	op->u.k.ki = cg_kinfo_get(func, drv);
	if (!op->u.k.ki) {
		*why = CG_WHY_PARAM_INFO;
		return -ENOENT;
	}
	if (op->u.k.ki->nccl) {
		*why = CG_WHY_NCCL;
		return -ENOTSUP;
	}
	op->nbytes = op->u.k.ki->total;
	return 0;
}

int cg_op_from_cudaLaunchKernel(struct cg_op *op, int pt, enum cg_reason *why, const void *func,
				dim3 grid, dim3 block, void **args, size_t shmem, cudaStream_t s)
{
	return cg_op_kernel(op, pt, why, func, 0, grid, block, shmem, s, args);
}

/* A driver launch: parameters as pointers, or one packed buffer in extra. */
int cg_op_from_drv_cuLaunchKernel(struct cg_op *op, int pt, enum cg_reason *why, CUfunction f,
				  unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
				  unsigned bz, unsigned shmem, CUstream s, void **params, void **extra)
{
	int rc = cg_op_kernel(op, pt, why, f, 1, (dim3){ gx, gy, gz }, (dim3){ bx, by, bz }, shmem,
			      (cudaStream_t)s, params);
	if (rc)
		return rc;
	if (!params && extra) {
		const void *buf = NULL;
		size_t size = 0;
		for (void **e = extra; *e != CU_LAUNCH_PARAM_END; e += 2) {
			if (e[0] == CU_LAUNCH_PARAM_BUFFER_POINTER)
				buf = e[1];
			else if (e[0] == CU_LAUNCH_PARAM_BUFFER_SIZE)
				size = *(const size_t *)e[1];
			else
				return -ENOTSUP;
		}
		if (!buf || size > 65536)
			return -ENOTSUP;
		op->u.k.extra = buf;
		op->u.k.packed = 1;
		op->nbytes = (uint32_t)size;
	}
	return 0;
}

int cg_op_from_drv_cuLaunchKernelEx(struct cg_op *op, int pt, enum cg_reason *why,
				    const CUlaunchConfig *c, CUfunction f, void **params, void **extra)
{
	if (!c)
		return -EINVAL;
	if (c->numAttrs) {
		*why = CG_WHY_LAUNCH_ATTRIBUTE;
		return -ENOTSUP;
	}
	return cg_op_from_drv_cuLaunchKernel(op, pt, why, f, c->gridDimX, c->gridDimY, c->gridDimZ,
					     c->blockDimX, c->blockDimY, c->blockDimZ,
					     c->sharedMemBytes, c->hStream, params, extra);
}

int cg_op_from_drv_cuMemcpyAsync(struct cg_op *op, int pt, enum cg_reason *why, CUdeviceptr dst,
				  CUdeviceptr src, size_t n, CUstream s)
{
	return cg_op_from_cudaMemcpyAsync(op, pt, why, (void *)dst, (const void *)src, n,
					  cudaMemcpyDefault, (cudaStream_t)s);
}

int cg_op_from_drv_cuMemcpyHtoDAsync_v2(struct cg_op *op, int pt, enum cg_reason *why,
					 CUdeviceptr dst, const void *src, size_t n, CUstream s)
{
	return cg_op_from_cudaMemcpyAsync(op, pt, why, (void *)dst, src, n, cudaMemcpyHostToDevice,
					  (cudaStream_t)s);
}

int cg_op_from_drv_cuMemcpyDtoHAsync_v2(struct cg_op *op, int pt, enum cg_reason *why, void *dst,
					 CUdeviceptr src, size_t n, CUstream s)
{
	return cg_op_from_cudaMemcpyAsync(op, pt, why, dst, (const void *)src, n, cudaMemcpyDeviceToHost,
					  (cudaStream_t)s);
}

int cg_op_from_drv_cuMemcpyDtoDAsync_v2(struct cg_op *op, int pt, enum cg_reason *why,
					 CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
	return cg_op_from_cudaMemcpyAsync(op, pt, why, (void *)dst, (const void *)src, n,
					  cudaMemcpyDeviceToDevice, (cudaStream_t)s);
}

int cg_op_from_drv_cuMemsetD8Async(struct cg_op *op, int pt, enum cg_reason *why, CUdeviceptr dst,
				   unsigned char v, size_t n, CUstream s)
{
	return cg_op_from_cudaMemsetAsync(op, pt, why, (void *)dst, v, n, (cudaStream_t)s);
}

int cg_op_from_drv_cuEventRecord(struct cg_op *op, int pt, enum cg_reason *why, CUevent e, CUstream s)
{
	return cg_op_from_cudaEventRecord(op, pt, why, (cudaEvent_t)e, (cudaStream_t)s);
}

int cg_op_from_drv_cuEventRecordWithFlags(struct cg_op *op, int pt, enum cg_reason *why, CUevent e,
					  CUstream s, unsigned int flags)
{
	return cg_op_from_cudaEventRecordWithFlags(op, pt, why, (cudaEvent_t)e, (cudaStream_t)s, flags);
}

int cg_op_from_drv_cuStreamWaitEvent(struct cg_op *op, int pt, enum cg_reason *why, CUstream s,
				     CUevent e, unsigned int flags)
{
	return cg_op_from_cudaStreamWaitEvent(op, pt, why, (cudaStream_t)s, (cudaEvent_t)e, flags);
}

int cg_op_from_drv_cuLaunchHostFunc(struct cg_op *op, int pt, enum cg_reason *why, CUstream s,
				    CUhostFn fn, void *data)
{
	return cg_op_from_cudaLaunchHostFunc(op, pt, why, (cudaStream_t)s, fn, data);
}

void cg_kernel_args(const struct cg_op *op, void **argv, void **extra, size_t *extra_size)
{
	if (op->u.k.packed) {
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

int cg_op_from_cudaLaunchKernelExC(struct cg_op *op, int pt, enum cg_reason *why,
				   const cudaLaunchConfig_t *config, const void *func, void **args)
{
	if (!config)
		return -EINVAL;
	if (config->numAttrs) {
		*why = CG_WHY_LAUNCH_ATTRIBUTE;
		return -ENOTSUP;
	}
	return cg_op_from_cudaLaunchKernel(op, pt, why, func, config->gridDim, config->blockDim, args,
					   config->dynamicSmemBytes, config->stream);
}

enum cg_mem { CG_MEM_DEVICE, CG_MEM_PINNED, CG_MEM_PAGEABLE, CG_MEM_UNKNOWN };

static enum cg_mem cg_mem_type(const void *p)
{
	struct cudaPointerAttributes a;
	if (!cg_real.cudaPointerGetAttributes)
		return CG_MEM_UNKNOWN;
	cg_busy++;
	cudaError_t rc = cg_real.cudaPointerGetAttributes(&a, p);
	if (rc != cudaSuccess)
		cg_real.cudaGetLastError();
	cg_busy--;
	if (rc != cudaSuccess)
		return CG_MEM_UNKNOWN;
	switch (a.type) {
	case cudaMemoryTypeDevice: return CG_MEM_DEVICE;
	case cudaMemoryTypeHost: return CG_MEM_PINNED;
	case cudaMemoryTypeUnregistered: return CG_MEM_PAGEABLE;
	default: return CG_MEM_UNKNOWN; /* managed memory: leave it eager */
	}
}

/* Pageable sources above this size stay eager: the snapshot is a host copy. */
#define CG_SNAPSHOT_MAX (1u << 20)

int cg_op_from_cudaMemcpyAsync(struct cg_op *op, int pt, enum cg_reason *why, void *dst,
			       const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t s)
{
	cg_op_init(op, CG_OP_MEMCPY, pt, s);
	op->u.cp.dst = dst;
	op->u.cp.src = src;
	op->u.cp.count = count;
	op->u.cp.src_pageable = 0;
	*why = CG_WHY_MEMCPY_KIND;
	if (count == 0)
		return -EINVAL;
	enum cg_mem ms = cg_mem_type(src), md = cg_mem_type(dst);
	if (ms == CG_MEM_UNKNOWN || md == CG_MEM_UNKNOWN)
		return -ENOTSUP;
	int src_host = ms != CG_MEM_DEVICE, dst_host = md != CG_MEM_DEVICE;
	enum cudaMemcpyKind k = src_host ? (dst_host ? cudaMemcpyHostToHost : cudaMemcpyHostToDevice)
					 : (dst_host ? cudaMemcpyDeviceToHost : cudaMemcpyDeviceToDevice);
	if (kind != cudaMemcpyDefault && kind != k)
		return -ENOTSUP; /* let the runtime judge a kind that disagrees */
	/* Into pageable memory the copy is host-synchronous: a segment end. */
	if (k == cudaMemcpyHostToHost || md == CG_MEM_PAGEABLE)
		return -ENOTSUP;
	if (ms == CG_MEM_PAGEABLE) {
		if (count > CG_SNAPSHOT_MAX)
			return -ENOTSUP;
		op->u.cp.src_pageable = 1;
	}
	op->u.cp.kind = k;
	return 0;
}

int cg_op_from_cudaMemsetAsync(struct cg_op *op, int pt, enum cg_reason *why, void *dst, int value,
			       size_t count, cudaStream_t s)
{
	(void)why;
	cg_op_init(op, CG_OP_MEMSET, pt, s);
	op->u.ms.dst = dst;
	op->u.ms.value = value;
	op->u.ms.count = count;
	return count ? 0 : -EINVAL;
}

int cg_op_from_cudaEventRecord(struct cg_op *op, int pt, enum cg_reason *why, cudaEvent_t event,
			       cudaStream_t s)
{
	(void)why;
	cg_op_init(op, CG_OP_RECORD, pt, s);
	op->u.ev.event = event;
	return event ? 0 : -EINVAL;
}

int cg_op_from_cudaEventRecordWithFlags(struct cg_op *op, int pt, enum cg_reason *why,
					cudaEvent_t event, cudaStream_t s, unsigned int flags)
{
	if (flags != cudaEventRecordDefault) {
		*why = CG_WHY_EVENT_FLAGS;
		return -ENOTSUP;
	}
	return cg_op_from_cudaEventRecord(op, pt, why, event, s);
}

int cg_op_from_cudaStreamWaitEvent(struct cg_op *op, int pt, enum cg_reason *why, cudaStream_t s,
				   cudaEvent_t event, unsigned int flags)
{
	cg_op_init(op, CG_OP_WAIT, pt, s);
	op->u.ev.event = event;
	if (flags != cudaEventWaitDefault) {
		*why = CG_WHY_EVENT_FLAGS;
		return -ENOTSUP;
	}
	return event ? 0 : -EINVAL;
}

int cg_op_from_cudaLaunchHostFunc(struct cg_op *op, int pt, enum cg_reason *why, cudaStream_t s,
				  cudaHostFn_t fn, void *data)
{
	(void)why;
	cg_op_init(op, CG_OP_HOST, pt, s);
	op->u.host.fn = fn;
	op->u.host.data = data;
	return fn ? 0 : -EINVAL;
}

/* ---- eager submission ------------------------------------------------- */
int cg_op_submit(const struct cg_op *op)
{
	cudaError_t rc = cudaErrorNotSupported;
	cg_busy++;
	switch (op->kind) {
	case CG_OP_KERNEL: {
		void *argv[CG_MAX_PARAMS], *extra[5];
		size_t size;
		cg_kernel_args(op, argv, extra, &size);
		if (op->u.k.drv) {
			/* Streams are explicit handles: either variant will do. */
			CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
					   unsigned, unsigned, CUstream, void **, void **) =
				cg_drv.cuLaunchKernel ? cg_drv.cuLaunchKernel : cg_drv.cuLaunchKernel_ptsz;
			if (!launch) {
				rc = cudaErrorNotSupported;
				break;
			}
			rc = (cudaError_t)launch((CUfunction)op->u.k.func, op->u.k.grid.x, op->u.k.grid.y,
						 op->u.k.grid.z, op->u.k.block.x, op->u.k.block.y,
						 op->u.k.block.z, (unsigned)op->u.k.shmem,
						 (CUstream)op->stream, op->u.k.packed ? NULL : argv,
						 op->u.k.packed ? extra : NULL);
			break;
		}
		rc = cg_real.cudaLaunchKernel(op->u.k.func, op->u.k.grid, op->u.k.block, argv,
					      op->u.k.shmem, op->stream);
		break;
	}
	case CG_OP_MEMCPY:
		rc = cg_real.cudaMemcpyAsync(op->u.cp.dst, op->u.cp.src, op->u.cp.count, op->u.cp.kind,
					     op->stream);
		break;
	case CG_OP_MEMSET:
		rc = cg_real.cudaMemsetAsync(op->u.ms.dst, op->u.ms.value, op->u.ms.count, op->stream);
		break;
	case CG_OP_HOST:
		rc = cg_real.cudaLaunchHostFunc(op->stream, op->u.host.fn, op->u.host.data);
		break;
	case CG_OP_RECORD:
		rc = cg_real.cudaEventRecord(op->u.ev.event, op->stream);
		break;
	case CG_OP_WAIT:
		rc = cg_real.cudaStreamWaitEvent(op->stream, op->u.ev.event, 0);
		break;
	}
	cg_busy--;
	return (int)rc;
}

/* ---- shape and values ------------------------------------------------- */
static int cg_dim3_eq(dim3 a, dim3 b)
{
	return a.x == b.x && a.y == b.y && a.z == b.z;
}

int cg_op_same_shape(const struct cg_op *a, const struct cg_op *b)
{
	if (a->kind != b->kind || a->stream != b->stream)
		return 0;
	switch (a->kind) {
	case CG_OP_KERNEL:
		return a->u.k.func == b->u.k.func && a->u.k.drv == b->u.k.drv &&
		       a->u.k.packed == b->u.k.packed && a->nbytes == b->nbytes && cg_dim3_eq(a->u.k.grid, b->u.k.grid) &&
		       cg_dim3_eq(a->u.k.block, b->u.k.block) && a->u.k.shmem == b->u.k.shmem;
	case CG_OP_MEMCPY:
		return a->u.cp.kind == b->u.cp.kind && a->u.cp.count == b->u.cp.count &&
		       a->u.cp.src_pageable == b->u.cp.src_pageable;
	case CG_OP_MEMSET:
		return a->u.ms.count == b->u.ms.count;
	case CG_OP_HOST:
		return a->u.host.fn == b->u.host.fn;
	case CG_OP_RECORD:
	case CG_OP_WAIT:
		return a->u.ev.event == b->u.ev.event;
	}
	return 0;
}

uint64_t cg_op_shape_hash(const struct cg_op *op)
{
	uint64_t h = 1469598103934665603ull;
#define MIX(v) (h = (h ^ (uint64_t)(v)) * 1099511628211ull)
	MIX(op->kind);
	MIX((uintptr_t)op->stream);
	switch (op->kind) {
	case CG_OP_KERNEL:
		MIX((uintptr_t)op->u.k.func);
		MIX(op->u.k.drv);
		MIX(op->nbytes);
		MIX(op->u.k.grid.x); MIX(op->u.k.grid.y); MIX(op->u.k.grid.z);
		MIX(op->u.k.block.x); MIX(op->u.k.block.y); MIX(op->u.k.block.z);
		MIX(op->u.k.shmem);
		break;
	case CG_OP_MEMCPY:
		MIX(op->u.cp.kind); MIX(op->u.cp.count); MIX(op->u.cp.src_pageable);
		break;
	case CG_OP_MEMSET:
		MIX(op->u.ms.count);
		break;
	case CG_OP_HOST:
		MIX((uintptr_t)op->u.host.fn);
		break;
	case CG_OP_RECORD:
	case CG_OP_WAIT:
		MIX((uintptr_t)op->u.ev.event);
		break;
	}
#undef MIX
	return h;
}

/* Names what differs between the values of two ops of one shape, for the
 * debug log: which parameters of a kernel, which addresses of a copy. */
void cg_op_describe_change(char *buf, size_t size, const struct cg_op *was, const struct cg_op *now)
{
	int n = 0;
	switch (now->kind) {
	case CG_OP_KERNEL: {
		const struct cg_kinfo *ki = now->u.k.ki;
		n = snprintf(buf, size, "kernel %s:", ki->name[0] ? ki->name : "(unnamed)");
		uint32_t off = 0, shown = 0;
		uint32_t np = now->u.k.packed ? 1 : ki->nparams;
		for (uint32_t j = 0; j < np && n >= 0 && (size_t)n < size; j++) {
			uint32_t sz = now->u.k.packed ? now->nbytes : ki->size[j];
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
			n += snprintf(buf + n, size - (size_t)n, " param %u (%u bytes) bytes %u-%u %#llx -> %#llx",
				      j, sz, lo, hi - 1, (unsigned long long)wa, (unsigned long long)wb);
		}
		break;
	}
	case CG_OP_MEMCPY:
		snprintf(buf, size, "memcpy dst %p -> %p, src %p -> %p", was->u.cp.dst, now->u.cp.dst,
			 was->u.cp.src, now->u.cp.src);
		break;
	case CG_OP_MEMSET:
		snprintf(buf, size, "memset dst %p -> %p, value %d -> %d", was->u.ms.dst, now->u.ms.dst,
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

int cg_op_same_values(const struct cg_op *a, const struct cg_op *b)
{
	switch (a->kind) {
	case CG_OP_KERNEL:
		return !memcmp(a->u.k.params, b->u.k.params, a->nbytes);
	case CG_OP_MEMCPY:
		/* A pageable source is read from cgraft's snapshot: its bytes
		 * are copied at every replay, the address never matters. */
		return a->u.cp.dst == b->u.cp.dst &&
		       (a->u.cp.src_pageable || a->u.cp.src == b->u.cp.src);
	case CG_OP_MEMSET:
		return a->u.ms.dst == b->u.ms.dst && a->u.ms.value == b->u.ms.value;
	case CG_OP_HOST:
		return a->u.host.data == b->u.host.data;
	default:
		return 1;
	}
}
