/* A fake driver table for the unit suite: every call cgraft makes through
 * struct cg_backend is recorded, in order, in a log the tests inspect; handles
 * (graphs, nodes, execs, events, pinned buffers) are made up; queries are
 * answered from what the test declared (kernels and their parameter sizes,
 * device and pinned address ranges, non-blocking streams, pending events,
 * the current context). Thread-safe: the engine's hold timer and the tests'
 * own threads call it too. */
#ifndef FAKE_BACKEND_H
#define FAKE_BACKEND_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "op.h"

enum fk_fn {
	FK_CTX_GET_CURRENT,
	FK_CTX_SET_CURRENT,
	FK_CTX_PUSH,
	FK_CTX_POP,
	FK_CTX_GET_DEVICE,
	FK_FUNC_PARAM_INFO,
	FK_KERNEL_PARAM_INFO,
	FK_FUNC_NAME,
	FK_KERNEL_NAME,
	FK_FUNC_ATTR,
	FK_POINTER_ATTRS,
	FK_MEM_ALLOC_HOST,
	FK_MEM_FREE_HOST,
	FK_STREAM_FLAGS,
	FK_STREAM_SYNC,
	FK_EVENT_CREATE,
	FK_EVENT_DESTROY,
	FK_EVENT_RECORD,
	FK_EVENT_QUERY,
	FK_EVENT_SYNC,
	FK_STREAM_WAIT,
	FK_GRAPH_CREATE,
	FK_GRAPH_DESTROY,
	FK_GRAPH_ADD_KERNEL,
	FK_GRAPH_KERNEL_ATTR,
	FK_GRAPH_ADD_MEMCPY,
	FK_GRAPH_ADD_MEMSET,
	FK_GRAPH_ADD_HOST,
	FK_GRAPH_ADD_RECORD,
	FK_GRAPH_INSTANTIATE,
	FK_EXEC_DESTROY,
	FK_EXEC_SET_KERNEL,
	FK_EXEC_SET_MEMCPY,
	FK_EXEC_SET_MEMSET,
	FK_EXEC_SET_HOST,
	FK_GRAPH_LAUNCH,
	FK_LAUNCH_KERNEL,
	FK_LAUNCH_KERNEL_EX,
	FK_MEMCPY_ASYNC,
	FK_MEMCPY3D_ASYNC,
	FK_MEMSET_ASYNC, /* every memset entry: elem and height tell which */
	FK_HOST_FUNC,
	FK_RT_GET_KERNEL,
	FK_RT_SYMBOL_ADDRESS,
	FK_APP, /* not cgraft's: the program's own eager call, logged by a test */
	FK_COUNT
};

#define FK_MAX_PARAM_BYTES 256
#define FK_MAX_DEPS 16

struct fk_call {
	enum fk_fn fn;
	pthread_t thread;
	CUresult rc;          /* what the fake answered */
	CUstream stream;
	const void *kernel;   /* launches and kernel nodes: the handle */
	uint32_t nbytes;      /* parameter bytes recorded in params */
	uint8_t params[FK_MAX_PARAM_BYTES];
	CUgraph graph;
	CUgraphNode node;     /* the node added or updated */
	CUgraphNode deps[FK_MAX_DEPS];
	size_t ndeps;
	CUgraphExec exec;     /* instantiated, updated, launched, destroyed */
	CUevent event;
	uintptr_t dst, src;   /* copies and memsets */
	size_t bytes;
	uint32_t value;
	int tag;              /* FK_APP: the test's mark */
};

/* The table; install with cg_backend_set(&fk_backend) (fk_install does). */
extern const struct cg_backend fk_backend;
#define FK_CTX ((CUcontext)(uintptr_t)0xc0de0000u)

/* Installs the table, forgets every declaration and the log. */
void fk_install(void);
void fk_reset(void);

/* ---- declarations ---------------------------------------------------- */
/* A kernel handle (CUfunction or CUkernel) with its parameter sizes. */
void fk_kernel(const void *handle, uint32_t nparams, const uint32_t *sizes, const char *name);
/* The cluster width a declared kernel was compiled with (0: none). */
void fk_kernel_cluster(const void *handle, int width);
/* Addresses [lo, lo+n) are device memory (ordinal 0) or pinned host memory;
 * anything else is pageable. */
void fk_device_range(uintptr_t lo, size_t n);
void fk_host_range(uintptr_t lo, size_t n);
void fk_stream_nonblocking(CUstream s);
/* cuEventQuery answers CUDA_ERROR_NOT_READY for e while pending. */
void fk_event_pending(CUevent e, int pending);
/* The context cuCtxGetCurrent answers (FK_CTX by default; NULL: none). */
void fk_set_ctx(CUcontext c);
/* The next n calls of fn fail with rc; with skip, after skip more succeed. */
void fk_fail(enum fk_fn fn, CUresult rc, int n);
void fk_fail_after(enum fk_fn fn, CUresult rc, int skip, int n);

/* ---- the program's own calls ------------------------------------------ */
/* Logs the real call the shim would make for an op the engine left eager. */
void fk_app(const struct cg_op *op, int tag);

/* ---- the log ------------------------------------------------------------ */
size_t fk_mark(void);                     /* entries so far */
void fk_clear(void);                      /* forgets the entries */
struct fk_call fk_at(size_t i);           /* a copy of entry i */
size_t fk_count(enum fk_fn fn, size_t from);
/* Index of the k-th (0-based) entry of fn at or after from, or -1. */
long fk_nth(enum fk_fn fn, size_t from, size_t k);
/* The k-th entry of fn at or after from; fails the test when there is none. */
struct fk_call fk_get(enum fk_fn fn, size_t from, size_t k);
/* Entries that put work on a stream: kernels, copies, memsets, host
 * functions, records, waits, graph launches, FK_APP. */
int fk_is_work(enum fk_fn fn);
const char *fk_name(enum fk_fn fn);
/* Prints the log from an index on (for a failing test). */
void fk_dump(size_t from);

#endif
