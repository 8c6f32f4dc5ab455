/* What the two halves of the shim share: the real functions of the
 * hand-written wrappers, the trampolines' real pointers, and counting. */
#ifndef CG_SHIM_H
#define CG_SHIM_H

#include "api.h"
#include "backend.h"
#include "engine.h"
#include "log.h"
#include "options.h"
#include "special.h"
#include "stats.h"

/* The runtime's functions behind the hand-written runtime wrappers. */
struct cg_rt_table {
#define CG_RT(kind, name, family, pt, params, args) cudaError_t (*name) params;
#include "cuda_api.def"
#undef CG_RT
};
extern struct cg_rt_table cg_real CG_HIDDEN;

/* The driver's functions behind the hand-written driver wrappers. */
struct cg_drv_table {
#define CG_DRV(kind, name, family, query, since, pt, params, args) CUresult (*name) params;
#include "cuda_api.def"
#undef CG_DRV
};
extern struct cg_drv_table cg_drv CG_HIDDEN;

#if CG_HAVE_NCCL
#include <nccl.h>
/* NCCL's functions behind the hand-written NCCL wrappers (nccl.c). */
struct cg_nccl_table {
#define CG_NCCL(kind, name, family, params, args) ncclResult_t (*name) params;
#include "cuda_api.def"
#undef CG_NCCL
};
extern struct cg_nccl_table cg_nccl_real CG_HIDDEN;
#endif
/* The program's libnccl.so.2, where it loaded one, and a hand-written NCCL
 * wrapper's real function. */
void *cg_nccl_handle(void) CG_HIDDEN;
void *cg_nccl_real_of(void **slot, const char *name) CG_HIDDEN;

/* Real functions of the trampolines, by entry. */
extern void *cg_tramp_real[CG_E_COUNT] CG_HIDDEN;

void *cg_rt_real(void **slot, const char *name) CG_HIDDEN;
void *cg_drv_handle(void) CG_HIDDEN;
void **cg_hand_slot_of(int entry) CG_HIDDEN;
/* The real function behind an entry, resolved if it was not yet. */
void *cg_entry_real(int entry) CG_HIDDEN;

/* The runtime's lookups of driver functions hand out cgraft's wrappers. */
static inline void cg_pre_rt_driver_entry(int entry, int pt, const char *symbol, void **pfn,
					  unsigned long long flags, enum cudaDriverEntryPointQueryResult *status)
{
	(void)entry, (void)pt, (void)symbol, (void)pfn, (void)flags, (void)status;
}
static inline void cg_pre_rt_driver_entry_version(int entry, int pt, const char *symbol, void **pfn,
						  unsigned int version, unsigned long long flags,
						  enum cudaDriverEntryPointQueryResult *status)
{
	(void)entry, (void)pt, (void)symbol, (void)pfn, (void)version, (void)flags, (void)status;
}
void cg_post_rt_driver_entry(int entry, int pt, int rc, const char *symbol, void **pfn, unsigned long long flags,
			     enum cudaDriverEntryPointQueryResult *status) CG_HIDDEN;
void cg_post_rt_driver_entry_version(int entry, int pt, int rc, const char *symbol, void **pfn,
				     unsigned int version, unsigned long long flags,
				     enum cudaDriverEntryPointQueryResult *status) CG_HIDDEN;

/* cgraft_call_time_ns(): with timing 1, the host time inside the real
 * functions the wrappers call; with timing 2, whole calls as cgraft handles
 * them (cg_stats.cost_ns), the real functions' share counted apart. */
extern atomic_ullong cg_timed_ns CG_HIDDEN;
uint64_t cg_time_stop(int entry, uint64_t t0) CG_HIDDEN;
#define CG_TIMED(entry, expr)                                                   \
	({                                                                      \
		uint64_t t0_ = cg_unlikely(atomic_load_explicit(&cg_hot.timing, memory_order_relaxed)) ? cg_now_ns() : 0; \
		__auto_type r_ = (expr);                                        \
		if (cg_unlikely(t0_))                                           \
			cg_time_stop(entry, t0_);                               \
		r_;                                                             \
	})

/* A wrapper's whole call, timed with timing 2: from here to its return,
 * or to the real wait it ends in (cg_whole_stop, t0 then 0). */
struct cg_whole {
	uint64_t t0;
	int entry;
};
static inline void cg_whole_stop(struct cg_whole *w)
{
	if (cg_unlikely(w->t0)) {
		cg_call_cost_stop(w->entry, w->t0);
		w->t0 = 0;
	}
}
#define CG_WHOLE_TIMED(entry) \
	struct cg_whole cg_whole_ __attribute__((cleanup(cg_whole_stop))) = { cg_cost_start(), (entry) }

static inline void cg_count(int entry)
{
	atomic_fetch_add_explicit(&cg_stats.calls[entry], 1, memory_order_relaxed);
}

#endif
