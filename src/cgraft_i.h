/* Internal interface of cgraft: the API list, the table of real entry points,
 * the normalised op, and the entry points of the engine that shim/ calls. */
#ifndef CGRAFT_I_H
#define CGRAFT_I_H

#include <stdatomic.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include <cuda.h>
#include <cuda_runtime_api.h>

#define CG_HIDDEN __attribute__((visibility("hidden")))
#define CG_EXPORT __attribute__((visibility("default")))
#define cg_likely(x) __builtin_expect(!!(x), 1)
#define cg_unlikely(x) __builtin_expect(!!(x), 0)
#define CG_TLS __thread __attribute__((tls_model("initial-exec")))

/* ---- the API list ---------------------------------------------------- */
enum cg_api {
#define CG_RT(kind, name, family, pt, params, args) CG_API_##name,
#include "cuda_api.def"
#undef CG_RT
	CG_API_COUNT
};

enum cg_drv_api {
#define CG_DRV(kind, name, query, pt, params, args) CG_DRV_##name,
#include "cuda_api.def"
#undef CG_DRV
	CG_DRV_COUNT
};

struct cg_drv_table {
#define CG_DRV(kind, name, query, pt, params, args) CUresult (*name) params;
#include "cuda_api.def"
#undef CG_DRV
};
extern struct cg_drv_table cg_drv CG_HIDDEN;
extern const char *const cg_drv_names[CG_DRV_COUNT] CG_HIDDEN;

struct cg_real_table {
#define CG_RT(kind, name, family, pt, params, args) cudaError_t (*name) params;
#include "cuda_api.def"
#undef CG_RT
};

extern struct cg_real_table cg_real CG_HIDDEN;
extern const char *const cg_api_names[CG_API_COUNT] CG_HIDDEN;
/* glibc's own dlsym: cgraft's exported one answers the program. */
typedef void *(*cg_dlsym_fn)(void *, const char *);
cg_dlsym_fn cg_dlsym_next(void) CG_HIDDEN;
/* Finds the real entry points; 0 when the runtime was found, -ENOENT if not.
 * With load, opens libcudart.so.13 when the program has none of its own. */
int cg_resolve(int load) CG_HIDDEN;
extern atomic_int cg_resolved CG_HIDDEN;

/* Depth of cgraft's own calls into CUDA on this thread: work cgraft submits
 * itself (graph launches, flushed ops) must not be seen as program work. */
extern CG_TLS int cg_busy CG_HIDDEN;
/* A real runtime call made by cgraft: its own hooks let it through. */
#define CG_CALL(name, ...)                                                      \
	({                                                                      \
		cg_busy++;                                                      \
		cudaError_t rc_ = cg_real.name(__VA_ARGS__);                    \
		cg_busy--;                                                      \
		rc_;                                                            \
	})

/* ---- options ---------------------------------------------------------- */
struct cg_options {
	int enable;
	int log_level;
	const char *stats_path;
	int report;
	long min_repeats;
	long warmup;
	long window_lo, window_hi;
	long min_ops;
	long max_graphs;
	long max_segment_ops;
	long max_variants;
	int backoff_slow;
	int driver_ops;
};
extern struct cg_options cg_opt CG_HIDDEN;
/* Reads CGRAFT_* once; returns 0, or -EINVAL after printing what was wrong
 * (cgraft then runs in pass-through). */
int cg_options_load(void) CG_HIDDEN;
void cg_options_describe(FILE *f) CG_HIDDEN;

/* ---- log -------------------------------------------------------------- */
enum cg_level { CG_LOG_ERROR, CG_LOG_WARN, CG_LOG_INFO, CG_LOG_DEBUG };
/* Whose fault a message reports. */
enum cg_fault { CG_FAULT_NONE, CG_FAULT_PROGRAM, CG_FAULT_CGRAFT, CG_FAULT_DRIVER };
void cg_log(enum cg_level level, enum cg_fault fault, const char *fmt, ...)
	__attribute__((format(printf, 3, 4))) CG_HIDDEN;
/* A message from one call site is printed at most CG_LOG_REPEATS times. */
#define CG_LOG_REPEATS 5
#define cg_log_capped(level, fault, ...)                                        \
	do {                                                                    \
		static atomic_int cg_log_seen_;                                 \
		int n_ = atomic_fetch_add_explicit(&cg_log_seen_, 1,            \
						   memory_order_relaxed);        \
		if (n_ < CG_LOG_REPEATS)                                        \
			cg_log(level, fault, __VA_ARGS__);                      \
	} while (0)
#define cg_debug(...)                                                           \
	do {                                                                    \
		if (cg_unlikely(cg_opt.log_level >= CG_LOG_DEBUG))              \
			cg_log(CG_LOG_DEBUG, CG_FAULT_NONE, __VA_ARGS__);       \
	} while (0)

/* ---- stats ------------------------------------------------------------ */
enum cg_reason {
	CG_WHY_UNSUPPORTED_API,   /* an entry point cgraft does not model */
	CG_WHY_LAUNCH_ATTRIBUTE,  /* launch attributes a graph node cannot carry */
	CG_WHY_PARAM_INFO,        /* kernel parameter layout unknown */
	CG_WHY_MEMCPY_KIND,       /* copy cgraft cannot put in a node */
	CG_WHY_EVENT_FLAGS,       /* external event record or wait */
	CG_WHY_CAPTURE,           /* the program's own stream capture */
	CG_WHY_THREADS,           /* work from another host thread */
	CG_WHY_DEVICE,            /* another device */
	CG_WHY_PER_THREAD_STREAM, /* per-thread stream with several host threads */
	CG_WHY_BUILD_FAILED,      /* graph construction or instantiation failed */
	CG_WHY_LAUNCH_FAILED,     /* graph launch or update failed */
	CG_WHY_BACKOFF_DIVERGE,   /* shape kept diverging */
	CG_WHY_BACKOFF_SLOW,      /* replay did not save host time */
	CG_WHY_BACKOFF_NOREPEAT,  /* the op stream did not repeat */
	CG_WHY_DRIVER_CALL,       /* driver-level work outside a runtime call */
	CG_WHY_NCCL,              /* NCCL kernels carry host-side proxy work */
	CG_WHY_COUNT
};
struct cg_stats {
	atomic_ullong calls[CG_API_COUNT];
	atomic_ullong drv_calls[CG_DRV_COUNT]; /* outside any runtime call */
	atomic_ullong segments, graphs_built, graph_launches, ops_total,
		ops_replayed, divergences, node_updates, variants;
	atomic_ullong fallbacks[CG_WHY_COUNT];
	atomic_ullong record_ns, instantiate_ns, backoffs;
	atomic_ullong lookups; /* dlsym and cuGetProcAddress calls answered */
};
extern struct cg_stats cg_stats CG_HIDDEN;
extern const char *const cg_reason_names[CG_WHY_COUNT] CG_HIDDEN;
#define cg_stat_add(field, n) atomic_fetch_add_explicit(&cg_stats.field, (n), memory_order_relaxed)
static inline void cg_count_call(enum cg_api api)
{
	atomic_fetch_add_explicit(&cg_stats.calls[api], 1, memory_order_relaxed);
}
static inline void cg_count_fallback(enum cg_reason why)
{
	atomic_fetch_add_explicit(&cg_stats.fallbacks[why], 1, memory_order_relaxed);
}
static inline void cg_count_drv(enum cg_drv_api api)
{
	atomic_fetch_add_explicit(&cg_stats.drv_calls[api], 1, memory_order_relaxed);
}
/* Writes the JSON object to f. */
void cg_stats_write_json(FILE *f) CG_HIDDEN;
void cg_stats_write_report(FILE *f) CG_HIDDEN;
/* Expands %p in a CGRAFT_STATS path; returns 0 or -ENAMETOOLONG. */
int cg_stats_expand_path(const char *pattern, long pid, char *out, size_t size) CG_HIDDEN;

/* ---- ops -------------------------------------------------------------- */
enum cg_op_kind { CG_OP_KERNEL, CG_OP_MEMCPY, CG_OP_MEMSET, CG_OP_HOST, CG_OP_RECORD, CG_OP_WAIT };

/* Stream handles as given: NULL is made explicit (cudaStreamLegacy or
 * cudaStreamPerThread) so that a deferred op can be submitted again through
 * the plain entry point. */
struct cg_op {
	uint8_t kind;
	uint8_t api_pt;        /* came in through a _ptsz entry point */
	uint8_t unrecorded;    /* passes through without being recorded */
	uint16_t api;          /* enum cg_api it came in through */
	uint32_t nbytes;       /* parameter bytes (kernels) */
	uint64_t shape;        /* cg_op_shape_hash(), once the engine has it */
	cudaStream_t stream;
	union {
		struct {
			const void *func;
			dim3 grid, block;
			size_t shmem;
			void **args;        /* the caller's, valid during the call */
			const void *extra;  /* the caller's packed buffer, if any */
			const uint8_t *params; /* cgraft's copy: packed, or the buffer */
			const struct cg_kinfo *ki;
			uint8_t drv;        /* launched through the driver */
			uint8_t packed;     /* params is an "extra" buffer of nbytes */
		} k;
		struct {
			void *dst;
			const void *src;
			size_t count;
			enum cudaMemcpyKind kind; /* resolved: never Default */
			uint8_t src_pageable;
		} cp;
		struct {
			void *dst;
			int value;
			size_t count;
		} ms;
		struct {
			cudaHostFn_t fn;
			void *data;
		} host;
		struct {
			cudaEvent_t event;
		} ev;
	} u;
};

/* Kernel parameter layout, learnt once per function handle. */
enum cg_khandle { CG_K_RUNTIME, CG_K_FUNCTION, CG_K_KERNEL };
struct cg_kinfo {
	const void *func;
	uint32_t nparams;
	uint32_t total;          /* packed bytes */
	uint32_t *size;          /* per parameter */
	char name[96];           /* the kernel's name (cut) where CUDA tells it */
	uint8_t handle;          /* enum cg_khandle */
	uint8_t nccl;            /* an NCCL kernel: never deferred */
};
/* Returns the layout of func (a runtime handle, or a driver CUfunction or
 * CUkernel when drv), or NULL when it cannot be learnt safely. */
const struct cg_kinfo *cg_kinfo_get(const void *func, int drv) CG_HIDDEN;
/* Resolves the driver entry points cgraft uses itself; 0 or -ENOENT. */
int cg_drv_resolve_internal(void) CG_HIDDEN;
/* Fills argv (nparams pointers into op's copy), or extra for a packed
 * buffer; returns the pointer to give as kernelParams or extra. */
void cg_kernel_args(const struct cg_op *op, void **argv, void **extra, size_t *extra_size) CG_HIDDEN;
#define CG_MAX_PARAMS 1024

/* Normalisers, one per modelled family: 0 with op filled, or a negative
 * errno with *why set when the call cannot be modelled. */
#define CG_OPFROM(family, ...) \
	int cg_op_from_##family(struct cg_op *op, int pt, enum cg_reason *why, __VA_ARGS__) CG_HIDDEN
CG_OPFROM(cudaLaunchKernel, const void *func, dim3 grid, dim3 block, void **args, size_t shmem, cudaStream_t s);
CG_OPFROM(cudaLaunchKernelExC, const cudaLaunchConfig_t *config, const void *func, void **args);
CG_OPFROM(cudaMemcpyAsync, void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t s);
CG_OPFROM(cudaMemsetAsync, void *dst, int value, size_t count, cudaStream_t s);
CG_OPFROM(cudaEventRecord, cudaEvent_t event, cudaStream_t s);
CG_OPFROM(cudaEventRecordWithFlags, cudaEvent_t event, cudaStream_t s, unsigned int flags);
CG_OPFROM(cudaStreamWaitEvent, cudaStream_t s, cudaEvent_t event, unsigned int flags);
CG_OPFROM(cudaLaunchHostFunc, cudaStream_t s, cudaHostFn_t fn, void *data);
CG_OPFROM(drv_cuLaunchKernel, CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
	  unsigned by, unsigned bz, unsigned shmem, CUstream s, void **params, void **extra);
CG_OPFROM(drv_cuLaunchKernelEx, const CUlaunchConfig *config, CUfunction f, void **params, void **extra);
/* The driver's copies, memsets, events and host functions: the same ops as
 * the runtime's, with driver types. */
CG_OPFROM(drv_cuMemcpyAsync, CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s);
CG_OPFROM(drv_cuMemcpyHtoDAsync_v2, CUdeviceptr dst, const void *src, size_t n, CUstream s);
CG_OPFROM(drv_cuMemcpyDtoHAsync_v2, void *dst, CUdeviceptr src, size_t n, CUstream s);
CG_OPFROM(drv_cuMemcpyDtoDAsync_v2, CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s);
CG_OPFROM(drv_cuMemsetD8Async, CUdeviceptr dst, unsigned char v, size_t n, CUstream s);
CG_OPFROM(drv_cuEventRecord, CUevent e, CUstream s);
CG_OPFROM(drv_cuEventRecordWithFlags, CUevent e, CUstream s, unsigned int flags);
CG_OPFROM(drv_cuStreamWaitEvent, CUstream s, CUevent e, unsigned int flags);
CG_OPFROM(drv_cuLaunchHostFunc, CUstream s, CUhostFn fn, void *data);

/* Submits an op through the real runtime, in the form it was recorded in
 * (params from cgraft's copy). Returns the runtime's status. */
int cg_op_submit(const struct cg_op *op) CG_HIDDEN;
/* Shape: everything that must be equal for two ops to share a graph node. */
int cg_op_same_shape(const struct cg_op *a, const struct cg_op *b) CG_HIDDEN;
uint64_t cg_op_shape_hash(const struct cg_op *op) CG_HIDDEN;
/* Values: what a node update can change (parameters, addresses). */
int cg_op_same_values(const struct cg_op *a, const struct cg_op *b) CG_HIDDEN;
void cg_op_describe_change(char *buf, size_t size, const struct cg_op *was, const struct cg_op *now) CG_HIDDEN;

/* ---- engine ----------------------------------------------------------- */
enum { CG_EAGER = 0, CG_DEFERRED = 1 };
extern int cg_engine_on CG_HIDDEN;
void cg_init(void) CG_HIDDEN;
/* An op arrives. Returns CG_DEFERRED (the call returns success now), or
 * CG_EAGER: the caller submits it and reports with cg_engine_submitted(). */
int cg_engine_submit(struct cg_op *op) CG_HIDDEN;
void cg_engine_submitted(struct cg_op *op, int status) CG_HIDDEN;
/* A call after which the host may observe device state, or that enqueues
 * work cgraft does not model: deferred work goes out first. */
void cg_engine_boundary(enum cg_api api, enum cg_reason why, int unsupported) CG_HIDDEN;
/* Specials. */
#define CG_SPECIAL(family, ...) cudaError_t cg_special_##family(enum cg_api api, int pt, __VA_ARGS__) CG_HIDDEN
CG_SPECIAL(cudaStreamBeginCapture, cudaStream_t stream, enum cudaStreamCaptureMode mode);
CG_SPECIAL(cudaStreamEndCapture, cudaStream_t stream, cudaGraph_t *pGraph);
CG_SPECIAL(cudaStreamDestroy, cudaStream_t stream);
CG_SPECIAL(cudaEventDestroy, cudaEvent_t event);
CG_SPECIAL(cudaSetDevice, int device);
CG_SPECIAL(cudaEventSynchronize, cudaEvent_t event);
CG_SPECIAL(cudaEventQuery, cudaEvent_t event);
CG_SPECIAL(cudaEventElapsedTime, float *ms, cudaEvent_t start, cudaEvent_t end);
/* The program's own capture through the runtime or the driver. */
void cg_capture_begin(void) CG_HIDDEN;
void cg_capture_end(void) CG_HIDDEN;

#endif
