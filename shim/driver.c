/* The driver face: the exported driver entry points with hand-written
 * wrappers, and the three ways a program reaches the driver, all answered
 * with cgraft's wrappers: dlsym() on libcuda.so.1, cuGetProcAddress() (and
 * the runtime's cudaGetDriverEntryPoint()), and direct symbols of -lcuda
 * programs. A name no header declares gets a boundary trampoline. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"

#define CG_UNPAREN(...) __VA_ARGS__

struct cg_drv_table cg_drv;

/* The real-function slot of each hand-written wrapper. */
static void **const cg_hand_slot[CG_E_COUNT] = {
#define CG_RT(kind, name, family, pt, params, args) [CG_E_##name] = (void **)&cg_real.name,
#define CG_DRV(kind, name, family, query, since, pt, params, args) [CG_E_##name] = (void **)&cg_drv.name,
#if CG_HAVE_NCCL
#define CG_NCCL(kind, name, family, params, args) [CG_E_##name] = (void **)&cg_nccl_real.name,
#endif
#include "cuda_api.def"
#undef CG_RT
#undef CG_DRV
#undef CG_NCCL
};

void **cg_hand_slot_of(int entry) CG_HIDDEN;
void **cg_hand_slot_of(int entry)
{
	return cg_hand_slot[entry];
}

static void **cg_slot_of(int entry)
{
	return entry < CG_E_HAND_COUNT ? cg_hand_slot[entry] : &cg_tramp_real[entry];
}

static void *cg_drv_real(void **slot, const char *name)
{
	void *p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
	if (cg_likely(p))
		return p;
	cg_init();
	void *h = cg_drv_handle();
	cg_busy++;
	p = h ? cg_dlsym_real(h, name) : NULL;
	cg_busy--;
	if (p) {
		void *seen = NULL;
		__atomic_compare_exchange_n(slot, &seen, p, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
		p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
	}
	return p;
}

/* ---- the hand-written driver wrappers ----------------------------------------- */
#define CG_DREAL(name) ((__typeof__(cg_drv.name))cg_drv_real((void **)&cg_drv.name, #name))

#define CG_DCALL(name, args)                                                    \
	({                                                                      \
		cg_busy++;                                                      \
		CUresult rc_ = CG_TIMED(CG_E_##name, CG_DREAL(name) args);      \
		cg_busy--;                                                      \
		rc_;                                                            \
	})

/* Called by the runtime under one of cgraft's runtime wrappers (or by cgraft
 * itself) the call is already handled: straight through, not counted. */
#define CG_DRV_ENTER(name, args)                                                \
	if (cg_unlikely(!CG_DREAL(name)))                                       \
		return CUDA_ERROR_NOT_SUPPORTED;                                \
	if (cg_busy)                                                            \
		return cg_drv.name args;                                        \
	cg_count(CG_E_##name);                                                  \
	CG_WHOLE_TIMED(CG_E_##name)

#define CG_DWRAP_OP(name, family, pt, params, args)                             \
	CG_EXPORT CUresult name params                                          \
	{                                                                       \
		CG_DRV_ENTER(name, args);                                       \
		if (atomic_load_explicit(&cg_hot.engine_on, memory_order_relaxed)) { \
			struct cg_op op;                                        \
			enum cg_reason why = CG_WHY_UNSUPPORTED_API;            \
			op.entry = CG_E_##name;                                 \
			if (cg_opt.driver_ops && cg_backend_ready() == 0 &&     \
			    cg_op_from_##family(&op, pt, &why, CG_UNPAREN args) == 0 && \
			    cg_op_finish(&op, &why) == 0) {                     \
				int r_ = cg_engine_op(&op);                     \
				if (r_ == CG_DEFERRED)                          \
					return (CUresult)op.status;             \
				CUresult rc_ = CG_DCALL(name, args);            \
				if (r_ == CG_EAGER)                             \
					cg_engine_op_done(&op, rc_ == CUDA_SUCCESS); \
				return rc_;                                     \
			}                                                       \
			cg_engine_boundary(CG_E_##name, CG_K_BND, why);         \
		}                                                               \
		return CG_DCALL(name, args);                                    \
	}

#define CG_DWRAP_SPC(name, family, pt, params, args)                            \
	CG_EXPORT CUresult name params                                          \
	{                                                                       \
		CG_DRV_ENTER(name, args);                                       \
		cg_pre_##family(CG_E_##name, pt, CG_UNPAREN args);              \
		CUresult rc = CG_DCALL(name, args);                             \
		cg_post_##family(CG_E_##name, pt, (int)rc, CG_UNPAREN args);    \
		return rc;                                                      \
	}

/* An allocation in stream order, made again as the runtime's (shim.c). */
#define CG_DWRAP_ALLOC(name, family, pt, params, args)                          \
	CG_EXPORT CUresult name params                                          \
	{                                                                       \
		CG_DRV_ENTER(name, args);                                       \
		CUresult rc = CG_DCALL(name, args);                             \
		if (cg_unlikely(rc == CUDA_ERROR_OUT_OF_MEMORY) && cg_engine_alloc_failed(CG_E_##name)) \
			rc = CG_DCALL(name, args);                              \
		cg_post_##family(CG_E_##name, pt, (int)rc, CG_UNPAREN args);    \
		return rc;                                                      \
	}

/* The wait untimed, as the runtime's (shim.c). */
#define CG_DWRAP_WAIT(name, family, pt, params, args)                           \
	CG_EXPORT CUresult name params                                          \
	{                                                                       \
		CG_DRV_ENTER(name, args);                                       \
		if (cg_wait_##family(CG_E_##name, pt, CG_UNPAREN args))         \
			return CUDA_SUCCESS;                                    \
		if (!CG_WAIT_UNTIMED_##family)                                  \
			return CG_DCALL(name, args);                            \
		cg_whole_stop(&cg_whole_);                                      \
		cg_busy++;                                                      \
		CUresult rc_ = cg_drv.name args;                                \
		cg_busy--;                                                      \
		return rc_;                                                     \
	}

/* ---- handing out wrappers ------------------------------------------------------- */
static pthread_mutex_t cg_dyn_lock = PTHREAD_MUTEX_INITIALIZER;
static int cg_ndyn;

/* A boundary trampoline for a real function cgraft has no wrapper of: a
 * name no header declares, or another function behind a known name. */
static void *cg_dyn_wrap(void *real)
{
	pthread_mutex_lock(&cg_dyn_lock);
	void *out = NULL;
	for (int i = 0; i < cg_ndyn && !out; i++)
		if (cg_tramp_real[CG_E_FIRST_DYN + i] == real)
			out = cg_entry_addr[CG_E_FIRST_DYN + i];
	if (!out && cg_ndyn < CG_DYN_SLOTS) {
		int e = CG_E_FIRST_DYN + cg_ndyn++;
		__atomic_store_n(&cg_tramp_real[e], real, __ATOMIC_RELEASE);
		out = cg_entry_addr[e];
	}
	pthread_mutex_unlock(&cg_dyn_lock);
	if (!out) {
		cg_log_capped(CG_LOG_WARN, CG_FAULT_CGRAFT, "too many unknown driver entry points: one passes unwatched");
		out = real;
	}
	return out;
}

/* The wrapper of entry for real: the slot keeps the first real function
 * seen; another one behind the same entry gets a boundary trampoline. */
static void *cg_wrap_entry(int entry, void *real)
{
	void **slot = cg_slot_of(entry);
	void *seen = NULL;
	__atomic_compare_exchange_n(slot, &seen, real, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	if (__atomic_load_n(slot, __ATOMIC_ACQUIRE) == real)
		return cg_entry_addr[entry];
	return cg_dyn_wrap(real);
}

/* Whether a lookup at a version newer than cgraft's headers got the function
 * the driver hands out at cgraft's own version: then the ABI is one cgraft
 * knows. */
static int cg_proc_known_abi(const char *symbol, void *real, cuuint64_t flags)
{
	void *p = NULL;
	CUdriverProcAddressQueryResult st;
	if (!CG_DREAL(cuGetProcAddress_v2))
		return 0;
	cg_busy++;
	CUresult rc = cg_drv.cuGetProcAddress_v2(symbol, &p, CUDA_VERSION, flags, &st);
	cg_busy--;
	return rc == CUDA_SUCCESS && p == real;
}

/* What cuGetProcAddress hands out for symbol at version: the wrapper of the
 * ABI that version gets (cudaTypedefs.h's highest PFN_<symbol>_v<n> with n
 * <= version), the hand-written one where cgraft models it. A version newer
 * than the headers cgraft was built with gets the hand-written wrapper only
 * where the driver hands out the same function at cgraft's version; an ABI
 * cgraft does not know gets a boundary trampoline, whatever the call. */
static void *cg_proc_wrap(const char *symbol, void *real, int version, cuuint64_t flags)
{
	int pt = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
	size_t lo = 0, hi = CG_PROC_COUNT;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (strcmp(cg_procs[mid].query, symbol) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	const struct cg_proc *best = NULL;
	int has_pt = 0;
	for (size_t i = lo; i < CG_PROC_COUNT && !strcmp(cg_procs[i].query, symbol); i++)
		has_pt |= cg_procs[i].pt;
	for (size_t i = lo; i < CG_PROC_COUNT && !strcmp(cg_procs[i].query, symbol); i++) {
		const struct cg_proc *p = &cg_procs[i];
		if (p->pt == (pt && has_pt) && p->version <= version && (!best || p->version > best->version))
			best = p;
	}
	cg_stat_add(lookups, 1);
	if (!best)
		return cg_dyn_wrap(real);
	int hand = best->hand >= 0 && (version <= CUDA_VERSION || cg_proc_known_abi(symbol, real, flags));
	return cg_wrap_entry(hand ? best->hand : best->tramp, real);
}

static int cg_same_object(const void *a, const void *b);

/* cgraft's own mapping, from its program headers, found once: dladdr()
 * walks an object's symbols at each call (microseconds), and the runtimes
 * look up hundreds of entry points as they start. */
static uintptr_t cg_self_lo, cg_self_hi;

static int cg_self_phdr(struct dl_phdr_info *info, size_t size, void *here)
{
	(void)size;
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t a = (uintptr_t)info->dlpi_addr + ph->p_vaddr;
		lo = a < lo ? a : lo;
		hi = a + ph->p_memsz > hi ? a + ph->p_memsz : hi;
	}
	if ((uintptr_t)here < lo || (uintptr_t)here >= hi)
		return 0;
	cg_self_lo = lo;
	cg_self_hi = hi;
	return 1;
}

static void cg_self_find(void)
{
	static char here;
	dl_iterate_phdr(cg_self_phdr, &here);
}

/* A driver whose lookup goes through dlsym (as the simulated one does) hands
 * out cgraft's wrappers already. */
static int cg_is_mine(const void *p)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, cg_self_find);
	return (uintptr_t)p >= cg_self_lo && (uintptr_t)p < cg_self_hi;
}

static void cg_proc_result(const char *symbol, void **pfn, int version, cuuint64_t flags)
{
	if (symbol && pfn && *pfn && !cg_is_mine(*pfn))
		*pfn = cg_proc_wrap(symbol, *pfn, version, flags);
}

/* cuGetProcAddress in both ABIs, and the runtime's lookups. */
static inline void cg_pre_cuGetProcAddress(int entry, int pt, const char *symbol, void **pfn, int version,
					   cuuint64_t flags)
{
	(void)entry, (void)pt, (void)symbol, (void)pfn, (void)version, (void)flags;
}

static inline void cg_post_cuGetProcAddress(int entry, int pt, int rc, const char *symbol, void **pfn,
					    int version, cuuint64_t flags)
{
	(void)entry, (void)pt;
	if (rc == 0)
		cg_proc_result(symbol, pfn, version, flags);
}

static inline void cg_pre_cuGetProcAddress_v2(int entry, int pt, const char *symbol, void **pfn, int version,
					      cuuint64_t flags, CUdriverProcAddressQueryResult *status)
{
	(void)entry, (void)pt, (void)symbol, (void)pfn, (void)version, (void)flags, (void)status;
}

static inline void cg_post_cuGetProcAddress_v2(int entry, int pt, int rc, const char *symbol, void **pfn,
					       int version, cuuint64_t flags, CUdriverProcAddressQueryResult *status)
{
	(void)entry, (void)pt, (void)status;
	if (rc == 0)
		cg_proc_result(symbol, pfn, version, flags);
}

/* The runtime hands out the ABI of its own version; its per-thread entry
 * point's default is the per-thread stream. */
void cg_post_rt_driver_entry(int entry, int pt, int rc, const char *symbol, void **pfn,
			     unsigned long long flags, enum cudaDriverEntryPointQueryResult *status)
{
	(void)entry, (void)status;
	if (rc == 0)
		cg_proc_result(symbol, pfn, CUDART_VERSION, flags | (pt && !flags ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : 0));
}

void cg_post_rt_driver_entry_version(int entry, int pt, int rc, const char *symbol, void **pfn,
				     unsigned int version, unsigned long long flags,
				     enum cudaDriverEntryPointQueryResult *status)
{
	(void)entry, (void)status;
	if (rc == 0)
		cg_proc_result(symbol, pfn, (int)version,
			       flags | (pt && !flags ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : 0));
}

#define CG_DRV(kind, name, family, query, since, pt, params, args) CG_DWRAP_##kind(name, family, pt, params, args)
#include "cuda_api.def"
#undef CG_DRV

/* ---- dlsym ----------------------------------------------------------------------- */
static int cg_link_entry(const char *name)
{
	size_t lo = 0, hi = CG_LINK_COUNT;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(cg_links[mid].name, name);
		if (!c)
			return cg_links[mid].entry;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

static int cg_same_object(const void *a, const void *b)
{
	Dl_info ia, ib;
	return dladdr(a, &ia) && dladdr(b, &ib) && ia.dli_fbase == ib.dli_fbase;
}

/* What dlsym answers for a CUDA name: cgraft's wrapper where the symbol is
 * the library cgraft wraps (another runtime's functions stay its own: their
 * driver calls still come through cgraft). */
static void *cg_wrap_symbol(const char *name, void *p)
{
	if (cg_is_mine(p))
		return p;
	int e = cg_link_entry(name);
	cg_stat_add(lookups, 1);
	if (e >= 0 && cg_entries[e].layer == CG_L_RT)
		return cg_entry_real(e) == p ? cg_entry_addr[e] : p;
	void *drv = cg_drv_handle();
	if (e >= 0)
		return cg_wrap_entry(e, p);
	if (drv && !strncmp(name, "cu", 2) && name[2] >= 'A' && name[2] <= 'Z') {
		void *any = cg_dlsym_real(drv, "cuInit");
		if (any && cg_same_object(any, p))
			return cg_dyn_wrap(p);
	}
	return p;
}

/* dlsym(RTLD_NEXT) from a caller, when glibc's own could not be found first:
 * search the objects loaded after the caller's. */
static CG_NO_SANITIZE void *cg_dlsym_next_of(const void *caller, const char *name)
{
	Dl_info info;
	struct link_map *lm = NULL;
	if (!dladdr1(caller, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm)
		return cg_dlsym_real(RTLD_NEXT, name);
	for (struct link_map *o = lm->l_next; o; o = o->l_next) {
		if (!o->l_name || !o->l_name[0])
			continue;
		void *h = dlopen(o->l_name, RTLD_LAZY | RTLD_NOLOAD);
		if (!h)
			continue;
		void *p = cg_dlsym_real(h, name);
		dlclose(h);
		struct link_map *def = NULL;
		if (p && dladdr1(p, &info, (void **)&def, RTLD_DL_LINKMAP) && def == o)
			return p;
	}
	return NULL;
}

/* Reached from cg_dlsym_v234/v225 (tramp.S) for every handle but RTLD_NEXT,
 * whose lookup glibc makes itself. The lookups cgraft makes for itself come
 * before the program's, so that dlerror() reads as the program's left it. */
void *cg_dlsym_lookup(void *handle, const char *name) CG_HIDDEN CG_NO_SANITIZE;
void *cg_dlsym_lookup(void *handle, const char *name)
{
	if (handle == RTLD_NEXT)
		return cg_dlsym_next_of(__builtin_return_address(0), name);
	int cuda = name && name[0] == 'c' && name[1] == 'u';
	if (cuda)
		cg_drv_handle();
	void *p = cg_dlsym_real(handle, name);
	return p && cuda ? cg_wrap_symbol(name, p) : p;
}
