/* What every part of cgraft shares: visibility, the per-thread depth of
 * cgraft's own CUDA calls, and the clock. */
#ifndef CG_BASE_H
#define CG_BASE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define CG_HIDDEN __attribute__((visibility("hidden")))
/* Code that may run before a sanitizer's runtime is set up: unchecked. */
#define CG_NO_SANITIZE __attribute__((no_sanitize("address", "undefined")))
#define CG_EXPORT __attribute__((visibility("default")))
#define cg_likely(x) __builtin_expect(!!(x), 1)
#define cg_unlikely(x) __builtin_expect(!!(x), 0)
#define CG_TLS __thread __attribute__((tls_model("initial-exec")))

/* Depth of cgraft's own calls into CUDA on this thread: what cgraft submits
 * itself (graph launches, flushed ops), and what the program's real call does
 * underneath a wrapper, must not be taken for the program's work. */
extern CG_TLS int cg_busy CG_HIDDEN;

struct cg_backend;
/* What every call of the program reads, in one cache line: a program's own
 * work between its calls pushes cgraft out of the core's caches, and each
 * line a call reads comes back at tens of nanoseconds. */
struct cg_hot {
	/* Whether the engine looks at calls at all (off: pass-through,
	 * counted). Read without the lock by the wrappers, again under it by
	 * the engine. */
	atomic_int engine_on;
	/* The program's timing switch (cgraft_call_time_ns): 0 off, 1 its
	 * real calls, 2 whole calls with cgraft's work (enum cg_cost). */
	atomic_int timing;
	atomic_int backend_ok; /* cg_backend_ready() */
	/* The backend's table in use; valid once cg_backend_ready() returned 0. */
	const struct cg_backend *bk;
	/* Its cuCtxGetCurrent, which every held op calls (cg_op_finish): here,
	 * not a line of the table away. Set before backend_ok. */
	void *ctx_get_current; /* a PFN_cuCtxGetCurrent_v4000 */
};
extern struct cg_hot cg_hot CG_HIDDEN;

static inline uint64_t cg_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
