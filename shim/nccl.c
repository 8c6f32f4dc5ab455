/* The NCCL face: the exported NCCL calls with hand-written wrappers, from
 * cuda_api.def. A collective is an op (CGRAFT_NCCL=1) or a boundary; either
 * way its real call runs as cgraft's, so the kernels NCCL launches for it
 * are not seen again. */
#define _GNU_SOURCE
#include <dlfcn.h>

#include "shim.h"

#define CG_UNPAREN(...) __VA_ARGS__

/* The real function of a hand-written NCCL wrapper, on first use. */
void *cg_nccl_real_of(void **slot, const char *name)
{
	void *p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
	if (cg_likely(p))
		return p;
	cg_init();
	void *h = cg_nccl_handle();
	cg_busy++;
	p = h ? cg_dlsym_real(h, name) : NULL;
	cg_busy--;
	if (p)
		__atomic_store_n(slot, p, __ATOMIC_RELEASE);
	return p;
}

#if CG_HAVE_NCCL
struct cg_nccl_table cg_nccl_real;

#define CG_NREAL(name) ((__typeof__(cg_nccl_real.name))cg_nccl_real_of((void **)&cg_nccl_real.name, #name))

#define CG_NCALL(name, args)                                                    \
	({                                                                      \
		cg_busy++;                                                      \
		ncclResult_t rc_ = CG_TIMED(CG_E_##name, CG_NREAL(name) args);  \
		cg_busy--;                                                      \
		rc_;                                                            \
	})

#define CG_WRAP_NCCL(name, family, params, args)                                \
	CG_EXPORT ncclResult_t name params                                      \
	{                                                                       \
		if (cg_unlikely(!CG_NREAL(name)))                               \
			return ncclSystemError;                                 \
		if (cg_busy)                                                    \
			return cg_nccl_real.name args;                          \
		cg_count(CG_E_##name);                                          \
		CG_WHOLE_TIMED(CG_E_##name);                                    \
		if (atomic_load_explicit(&cg_hot.engine_on, memory_order_relaxed)) { \
			struct cg_op op;                                        \
			enum cg_reason why = CG_WHY_NCCL;                       \
			op.entry = CG_E_##name;                                 \
			if (cg_backend_ready() == 0 &&                          \
			    cg_op_from_##family(&op, 0, &why, CG_UNPAREN args) == 0 && \
			    cg_op_finish(&op, &why) == 0) {                     \
				int r_ = cg_engine_op(&op);                     \
				if (r_ == CG_DEFERRED)                          \
					return op.status ? ncclInternalError : ncclSuccess; \
				ncclResult_t rc_ = CG_NCALL(name, args);        \
				if (r_ == CG_EAGER)                             \
					cg_engine_op_done(&op, rc_ == ncclSuccess); \
				return rc_;                                     \
			}                                                       \
			if (cg_op_nccl_comm_bad(comm))                          \
				cg_engine_forget_comm(CG_E_##name, comm);       \
			else                                                    \
				cg_engine_boundary(CG_E_##name, CG_K_BND, why); \
		}                                                               \
		return CG_NCALL(name, args);                                    \
	}

#define CG_NCCL(kind, name, family, params, args) CG_WRAP_NCCL(name, family, params, args)
#include "cuda_api.def"
#undef CG_NCCL
#endif
