/* The exported CUDA runtime entry points: each one counts itself and hands the
 * call to the engine or to the real runtime. Generated from cuda_api.def. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>

#include "cgraft_i.h"

#define CG_EXPORT __attribute__((visibility("default")))
#define CG_UNPAREN(...) __VA_ARGS__

struct cg_real_table cg_real;
atomic_int cg_resolved;
CG_TLS int cg_busy;

const char *const cg_api_names[CG_API_COUNT] = {
#define CG_RT(kind, name, family, pt, params, args) [CG_API_##name] = #name,
#include "cuda_api.def"
#undef CG_RT
};

/* The program's own runtime: next after us in the global scope, or, when the
 * program opened it RTLD_LOCAL (Python extension modules), by soname. */
static void *cg_lookup(void *handle, const char *name)
{
	cg_dlsym_fn real_dlsym = cg_dlsym_next();
	return real_dlsym ? real_dlsym(handle, name) : NULL;
}

static pthread_mutex_t cg_resolve_lock = PTHREAD_MUTEX_INITIALIZER;

int cg_resolve(int load)
{
	if (atomic_load_explicit(&cg_resolved, memory_order_acquire))
		return 0;
	pthread_mutex_lock(&cg_resolve_lock);
	cg_busy++;
	void *h = RTLD_NEXT;
	if (!cg_lookup(h, "cudaLaunchKernel"))
		h = dlopen("libcudart.so.13", RTLD_LAZY | RTLD_NOLOAD);
	/* A program with a static runtime has none to find: cgraft then
	 * builds its graphs through a runtime of its own. */
	if (!h && load)
		h = dlopen("libcudart.so.13", RTLD_NOW | RTLD_LOCAL);
	if (h) {
#define CG_RT(kind, name, family, pt, params, args) \
	cg_real.name = (cudaError_t(*) params)cg_lookup(h, #name);
#include "cuda_api.def"
#undef CG_RT
	}
	cg_busy--;
	if (h && cg_real.cudaLaunchKernel)
		atomic_store_explicit(&cg_resolved, 1, memory_order_release);
	pthread_mutex_unlock(&cg_resolve_lock);
	cg_init();
	return atomic_load(&cg_resolved) ? 0 : -ENOENT;
}

/* A real entry point the runtime does not have: say so, never crash. */
static cudaError_t cg_missing(enum cg_api api)
{
	cg_log_capped(CG_LOG_ERROR, CG_FAULT_PROGRAM,
		      "%s: not found in the CUDA runtime the program loaded", cg_api_names[api]);
	return cudaErrorNotSupported;
}

#define CG_ENTER(name)                                                         \
	cg_count_call(CG_API_##name);                                          \
	if (cg_unlikely(!atomic_load_explicit(&cg_resolved, memory_order_acquire))) \
		cg_resolve(0);                                                 \
	if (cg_unlikely(!cg_real.name))                                        \
		return cg_missing(CG_API_##name)

#define CG_CALL_REAL(name, args)                                               \
	({                                                                     \
		cg_busy++;                                                     \
		cudaError_t rc_ = cg_real.name args;                           \
		cg_busy--;                                                     \
		rc_;                                                           \
	})

#define CG_WRAP_OP(name, family, pt, params, args)                             \
	CG_EXPORT cudaError_t name params                                      \
	{                                                                      \
		CG_ENTER(name);                                                \
		if (cg_engine_on && !cg_busy) {                                \
			struct cg_op op;                                       \
			enum cg_reason why = CG_WHY_UNSUPPORTED_API;           \
			op.api = CG_API_##name;                                \
			if (cg_op_from_##family(&op, pt, &why, CG_UNPAREN args) == 0) { \
				if (cg_engine_submit(&op) == CG_DEFERRED)      \
					return cudaSuccess;                    \
				cudaError_t rc = CG_CALL_REAL(name, args);     \
				cg_engine_submitted(&op, rc);                  \
				return rc;                                     \
			}                                                      \
			cg_engine_boundary(CG_API_##name, why, 1);             \
		}                                                              \
		return CG_CALL_REAL(name, args);                               \
	}

#define CG_WRAP_BOUNDARY(name, unsupported, args)                              \
	{                                                                      \
		if (cg_engine_on && !cg_busy)                                  \
			cg_engine_boundary(CG_API_##name, CG_WHY_UNSUPPORTED_API, unsupported); \
		return CG_CALL_REAL(name, args);                               \
	}

#define CG_WRAP_SYNC(name, family, pt, params, args)                           \
	CG_EXPORT cudaError_t name params                                      \
	{                                                                      \
		CG_ENTER(name);                                                \
		CG_WRAP_BOUNDARY(name, 0, args)                                \
	}
#define CG_WRAP_BND(name, family, pt, params, args)                            \
	CG_EXPORT cudaError_t name params                                      \
	{                                                                      \
		CG_ENTER(name);                                                \
		CG_WRAP_BOUNDARY(name, 1, args)                                \
	}
#define CG_WRAP_SPC(name, family, pt, params, args)                            \
	CG_EXPORT cudaError_t name params                                      \
	{                                                                      \
		CG_ENTER(name);                                                \
		if (cg_busy)                                                   \
			return cg_real.name args;                              \
		return cg_special_##family(CG_API_##name, pt, CG_UNPAREN args); \
	}
#define CG_WRAP_PASS(name, family, pt, params, args)                           \
	CG_EXPORT cudaError_t name params                                      \
	{                                                                      \
		CG_ENTER(name);                                                \
		return CG_CALL_REAL(name, args);                               \
	}
#define CG_WRAP_INT(name, family, pt, params, args)

#define CG_RT(kind, name, family, pt, params, args) CG_WRAP_##kind(name, family, pt, params, args)
#include "cuda_api.def"
#undef CG_RT
