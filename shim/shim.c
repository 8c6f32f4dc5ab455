/* The exported CUDA runtime entry points: each one counts itself and hands the
 * call to the engine or to the real runtime. Generated from cuda_api.def. */
#include <dlfcn.h>
#include <errno.h>

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
static void *cg_lookup(const char *name)
{
	cg_dlsym_fn real_dlsym = cg_dlsym_next();
	if (!real_dlsym)
		return NULL;
	void *p = real_dlsym(RTLD_NEXT, name);
	if (!p) {
		void *h = dlopen("libcudart.so.13", RTLD_LAZY | RTLD_NOLOAD);
		if (h) {
			p = real_dlsym(h, name);
			dlclose(h);
		}
	}
	return p;
}

int cg_resolve(void)
{
	if (atomic_load_explicit(&cg_resolved, memory_order_acquire))
		return 0;
	cg_busy++;
#define CG_RT(kind, name, family, pt, params, args) \
	cg_real.name = (cudaError_t(*) params)cg_lookup(#name);
#include "cuda_api.def"
#undef CG_RT
	cg_busy--;
	cg_init();
	if (!cg_real.cudaLaunchKernel)
		return -ENOENT;
	atomic_store_explicit(&cg_resolved, 1, memory_order_release);
	return 0;
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
		cg_resolve();                                                  \
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
