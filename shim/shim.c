/* The exported runtime entry points with hand-written wrappers, generated
 * from cuda_api.def, and the entry of every generated trampoline: each
 * counts itself, runs its kind (hold, boundary, special, pass), and calls the
 * real function. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>

#include "shim.h"

#define CG_UNPAREN(...) __VA_ARGS__

CG_TLS int cg_busy;
struct cg_rt_table cg_real;
void *cg_tramp_real[CG_E_COUNT];

/* ---- finding the real functions ---------------------------------------------- */
/* The program's own runtime: next after cgraft in the global scope, or, when
 * the program opened it RTLD_LOCAL (Python extension modules), by soname. */
static void *cg_rt_handle(void)
{
	static void *h;
	void *cur = __atomic_load_n(&h, __ATOMIC_ACQUIRE);
	if (cur)
		return cur;
	cur = cg_dlsym_real(RTLD_NEXT, "cudaGetLastError") ? RTLD_NEXT : dlopen("libcudart.so.13", RTLD_LAZY | RTLD_NOLOAD);
	if (cur)
		__atomic_store_n(&h, cur, __ATOMIC_RELEASE);
	return cur;
}

void *cg_drv_handle(void)
{
	static void *h;
	void *cur = __atomic_load_n(&h, __ATOMIC_ACQUIRE);
	if (!cur && (cur = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD)))
		__atomic_store_n(&h, cur, __ATOMIC_RELEASE);
	return cur;
}

void *cg_nccl_handle(void)
{
	static void *h;
	void *cur = __atomic_load_n(&h, __ATOMIC_ACQUIRE);
	if (cur)
		return cur;
	cur = cg_dlsym_real(RTLD_NEXT, "ncclGetVersion") ? RTLD_NEXT : dlopen("libnccl.so.2", RTLD_LAZY | RTLD_NOLOAD);
	if (cur)
		__atomic_store_n(&h, cur, __ATOMIC_RELEASE);
	return cur;
}

/* Resolves a hand-written runtime wrapper's real function on first use. */
void *cg_rt_real(void **slot, const char *name)
{
	void *p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
	if (cg_likely(p))
		return p;
	cg_init();
	void *h = cg_rt_handle();
	cg_busy++;
	p = h ? cg_dlsym_real(h, name) : NULL;
	cg_busy--;
	if (p)
		__atomic_store_n(slot, p, __ATOMIC_RELEASE);
	return p;
}

/* A real entry point the library the program loaded does not have: say so,
 * never crash. Every CUDA entry point returns an int-sized status. */
static int cg_tramp_missing(void)
{
	return 801; /* cudaErrorNotSupported, CUDA_ERROR_NOT_SUPPORTED */
}

static void *cg_tramp_resolve(unsigned id)
{
	const struct cg_entry_info *e = &cg_entries[id];
	void *h = e->layer == CG_L_RT	? cg_rt_handle()
		  : e->layer == CG_L_DRV ? cg_drv_handle()
		  : e->layer == CG_L_NCCL ? cg_nccl_handle()
					  : NULL;
	cg_busy++;
	void *p = h ? cg_dlsym_real(h, e->name) : NULL;
	cg_busy--;
	if (p)
		__atomic_store_n(&cg_tramp_real[id], p, __ATOMIC_RELEASE);
	else
		cg_log_capped(CG_LOG_ERROR, CG_FAULT_PROGRAM, "%s: not found in the CUDA library the program loaded",
			      e->name);
	return p;
}

void *cg_entry_real(int entry)
{
	if (entry < CG_E_HAND_COUNT) {
		const struct cg_entry_info *e = &cg_entries[entry];
		void **slot = cg_hand_slot_of(entry);
		if (e->layer == CG_L_RT)
			return cg_rt_real(slot, e->name);
		if (e->layer == CG_L_NCCL)
			return cg_nccl_real_of(slot, e->name);
		return __atomic_load_n(slot, __ATOMIC_ACQUIRE);
	}
	void *p = __atomic_load_n(&cg_tramp_real[entry], __ATOMIC_ACQUIRE);
	return p ? p : cg_tramp_resolve((unsigned)entry);
}

/* The generated PURE trampolines count into cg_stats.calls[id] at 8 * id. */
_Static_assert(offsetof(struct cg_stats, calls) == 0 && sizeof(cg_stats.calls[0]) == 8,
	       "cg_tramp_gen.S counts at cg_stats + 8 * entry");

/* Called by cg_tramp_common with the caller's arguments kept aside. */
void *cg_tramp_enter(unsigned id) CG_HIDDEN;
void *cg_tramp_enter(unsigned id)
{
	void *real = __atomic_load_n(&cg_tramp_real[id], __ATOMIC_ACQUIRE);
	if (cg_unlikely(!real)) {
		cg_init();
		if (!(real = cg_tramp_resolve(id)))
			return (void *)cg_tramp_missing;
	}
	if (cg_busy)
		return real;
	cg_count(id);
	enum cg_kind k = (enum cg_kind)cg_entries[id].kind;
	/* A trampoline jumps to the real function and cannot tell the driver
	 * calls a runtime call makes underneath from the program's own next
	 * ones: each is a boundary (after the runtime call's, nothing is held).
	 * A reset, a free or a memory wait is seen even while the engine
	 * stands aside: what it takes away is forgotten. */
	int on = atomic_load_explicit(&cg_hot.engine_on, memory_order_relaxed);
	if (k != CG_K_PURE && (on || k == CG_K_RESET || k == CG_K_FREE || k == CG_K_MWAIT)) {
		uint64_t t0 = cg_cost_start(); /* the real call after it is not timed */
		cg_engine_boundary((int)id, k, CG_WHY_UNSUPPORTED_API);
		if (cg_unlikely(t0))
			cg_call_cost_stop((int)id, t0);
	}
	return real;
}

/* ---- timing the program's calls ------------------------------------------------- */
atomic_ullong cg_timed_ns;

uint64_t cg_time_stop(int entry, uint64_t t0)
{
	uint64_t d = cg_now_ns() - t0;
	if (atomic_load_explicit(&cg_hot.timing, memory_order_relaxed) == 2)
		return atomic_fetch_add_explicit(&cg_stats.real_ns[entry], d, memory_order_relaxed);
	atomic_fetch_add_explicit(&cg_stats.real1_ns[entry], d, memory_order_relaxed);
	atomic_fetch_add_explicit(&cg_stats.real1_n[entry], 1, memory_order_relaxed);
	return atomic_fetch_add_explicit(&cg_timed_ns, d, memory_order_relaxed);
}

CG_EXPORT unsigned long long cgraft_call_time_ns(int on)
{
	atomic_store(&cg_hot.timing, on == 2 ? 2 : on != 0);
	return atomic_load(&cg_timed_ns) + atomic_load(&cg_stats.cost_ns[CG_COST_CALLS]);
}

/* ---- the hand-written runtime wrappers ------------------------------------------ */
#define CG_REAL(name) ((__typeof__(cg_real.name))cg_rt_real((void **)&cg_real.name, #name))

#define CG_CALL_REAL(name, args)                                                \
	({                                                                      \
		cg_busy++;                                                      \
		cudaError_t rc_ = CG_TIMED(CG_E_##name, CG_REAL(name) args);    \
		cg_busy--;                                                      \
		rc_;                                                            \
	})

#define CG_RT_ENTER(name, args)                                                 \
	if (cg_unlikely(!CG_REAL(name)))                                        \
		return cudaErrorNotSupported;                                   \
	if (cg_busy)                                                            \
		return cg_real.name args;                                       \
	cg_count(CG_E_##name);                                                  \
	CG_WHOLE_TIMED(CG_E_##name)

#define CG_WRAP_OP(name, family, pt, params, args)                              \
	CG_EXPORT cudaError_t name params                                       \
	{                                                                       \
		CG_RT_ENTER(name, args);                                        \
		if (atomic_load_explicit(&cg_hot.engine_on, memory_order_relaxed)) { \
			struct cg_op op;                                        \
			enum cg_reason why = CG_WHY_UNSUPPORTED_API;            \
			op.entry = CG_E_##name;                                 \
			if (cg_backend_ready() == 0 &&                          \
			    cg_op_from_##family(&op, pt, &why, CG_UNPAREN args) == 0 && \
			    cg_op_finish(&op, &why) == 0) {                     \
				int r_ = cg_engine_op(&op);                     \
				if (r_ == CG_DEFERRED)                          \
					return (cudaError_t)op.status;          \
				cudaError_t rc_ = CG_CALL_REAL(name, args);     \
				if (r_ == CG_EAGER)                             \
					cg_engine_op_done(&op, rc_ == cudaSuccess); \
				return rc_;                                     \
			}                                                       \
			cg_engine_boundary(CG_E_##name, CG_K_BND, why);         \
		}                                                               \
		return CG_CALL_REAL(name, args);                                \
	}

#define CG_WRAP_SPC(name, family, pt, params, args)                             \
	CG_EXPORT cudaError_t name params                                       \
	{                                                                       \
		CG_RT_ENTER(name, args);                                        \
		cg_pre_##family(CG_E_##name, pt, CG_UNPAREN args);              \
		cudaError_t rc = CG_CALL_REAL(name, args);                      \
		cg_post_##family(CG_E_##name, pt, (int)rc, CG_UNPAREN args);    \
		return rc;                                                      \
	}

/* The runtime's last error around an allocation that may be made again
 * (CG_WRAP_ALLOC): -1 where no frees are held back (nothing would be made
 * again), else whether the program had no error before the call, so that
 * the failed call's error is cleared once the call made again succeeded. */
static int cg_rt_error_kept(void)
{
	if (cg_likely(!cg_engine_frees_held()))
		return -1;
	cudaError_t (*peek)(void) = (cudaError_t (*)(void))cg_entry_real(CG_E_cudaPeekAtLastError);
	return peek && peek() == cudaSuccess;
}

static void cg_rt_error_clear(void)
{
	cudaError_t (*get)(void) = (cudaError_t (*)(void))cg_entry_real(CG_E_cudaGetLastError);
	if (get)
		(void)get();
}

/* An allocation in stream order: made again where it failed for want of
 * memory that the frees held back behind held work give back once they
 * went out (eagerly they came before it). */
#define CG_WRAP_ALLOC(name, family, pt, params, args)                           \
	CG_EXPORT cudaError_t name params                                       \
	{                                                                       \
		CG_RT_ENTER(name, args);                                        \
		int clean_ = cg_rt_error_kept();                                \
		cudaError_t rc = CG_CALL_REAL(name, args);                      \
		if (cg_unlikely(rc == cudaErrorMemoryAllocation) && clean_ >= 0 && \
		    cg_engine_alloc_failed(CG_E_##name) &&                      \
		    (rc = CG_CALL_REAL(name, args)) == cudaSuccess && clean_)   \
			cg_rt_error_clear();                                    \
		cg_post_##family(CG_E_##name, pt, (int)rc, CG_UNPAREN args);    \
		return rc;                                                      \
	}

/* The host's wait is no cost of a call: a synchronisation's real call is
 * not timed (cgraft_call_time_ns), as the SYNC kind's trampolines are not;
 * cgraft's own work before it is. A free's is (CG_WAIT_UNTIMED_<family>). */
#define CG_WRAP_WAIT(name, family, pt, params, args)                            \
	CG_EXPORT cudaError_t name params                                       \
	{                                                                       \
		CG_RT_ENTER(name, args);                                        \
		if (cg_wait_##family(CG_E_##name, pt, CG_UNPAREN args))         \
			return cudaSuccess;                                     \
		if (!CG_WAIT_UNTIMED_##family)                                  \
			return CG_CALL_REAL(name, args);                        \
		cg_whole_stop(&cg_whole_);                                      \
		cg_busy++;                                                      \
		cudaError_t rc_ = cg_real.name args;                            \
		cg_busy--;                                                      \
		return rc_;                                                     \
	}

#define CG_RT(kind, name, family, pt, params, args) CG_WRAP_##kind(name, family, pt, params, args)
#include "cuda_api.def"
#undef CG_RT
