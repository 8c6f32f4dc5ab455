/* The driver face: dlsym() and cuGetProcAddress() hand out cgraft's wrappers
 * for the driver entry points in cuda_api.def, so work that never passes
 * through a runtime symbol (cuBLAS, static runtimes) reaches the engine. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <errno.h>
#include <string.h>

#include "cgraft_i.h"

#define CG_EXPORT __attribute__((visibility("default")))
#define CG_UNPAREN(...) __VA_ARGS__

struct cg_drv_table cg_drv;

const char *const cg_drv_names[CG_DRV_COUNT] = {
#define CG_DRV(kind, name, query, pt, params, args) [CG_DRV_##name] = #name,
#include "cuda_api.def"
};

/* ---- wrappers --------------------------------------------------------- */
/* Called by the runtime under one of cgraft's runtime hooks (or by cgraft
 * itself) the call is already handled: straight through, not counted. */
#define CG_DRV_ENTER(name, args)                                                   \
	if (cg_busy || !cg_engine_on)                                          \
		return cg_drv.name args;                                       \
	cg_count_drv(CG_DRV_##name)

#define CG_DRV_CALL(name, args)                                                \
	({                                                                     \
		cg_busy++;                                                     \
		CUresult rc_ = cg_drv.name args;                               \
		cg_busy--;                                                     \
		rc_;                                                           \
	})

#define CG_DWRAP_BND(name, args)                                               \
	{                                                                      \
		CG_DRV_ENTER(name, args);                                            \
		cg_engine_boundary(CG_API_COUNT, CG_WHY_DRIVER_CALL, 1);       \
		return CG_DRV_CALL(name, args);                                \
	}
#define CG_DWRAP_SYNC(name, args)                                              \
	{                                                                      \
		CG_DRV_ENTER(name, args);                                            \
		cg_engine_boundary(CG_API_COUNT, CG_WHY_DRIVER_CALL, 0);       \
		return CG_DRV_CALL(name, args);                                \
	}
/* Making the current context current again changes nothing: no segment end. */
static int cg_ctx_is_current(CUcontext c)
{
	CUcontext cur;
	return cg_drv_resolve_internal() == 0 && cg_drv.cuCtxGetCurrent &&
	       cg_drv.cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == c;
}
#define CG_DWRAP_CTX(name, args)                                               \
	{                                                                      \
		CG_DRV_ENTER(name, args);                                      \
		if (!cg_ctx_is_current args)                                   \
			cg_engine_boundary(CG_API_COUNT, CG_WHY_DRIVER_CALL, 0); \
		return CG_DRV_CALL(name, args);                                \
	}
/* Capture through the driver: stand aside like the runtime's. */
#define CG_DWRAP_SPC(name, args)                                               \
	{                                                                      \
		CUresult rc;                                                   \
		if (cg_busy)                                                   \
			return cg_drv.name args;                               \
		if (cg_drv_is_begin(CG_DRV_##name)) {                          \
			if (cg_engine_on)                                      \
				cg_engine_boundary(CG_API_COUNT, CG_WHY_CAPTURE, 1); \
			rc = CG_DRV_CALL(name, args);                          \
			if (rc == CUDA_SUCCESS)                                \
				cg_capture_begin();                            \
		} else {                                                       \
			rc = CG_DRV_CALL(name, args);                          \
			cg_capture_end();                                      \
		}                                                              \
		return rc;                                                     \
	}

/* Driver work the engine can model joins the same segments; both stream
 * variants share one normaliser. Normalising may ask the runtime (about
 * memory), so one is found, or opened for a static-runtime program, first. */
#define cg_op_from_drv_cuLaunchKernel_ptsz cg_op_from_drv_cuLaunchKernel
#define cg_op_from_drv_cuLaunchKernelEx_ptsz cg_op_from_drv_cuLaunchKernelEx
#define cg_op_from_drv_cuMemcpyAsync_ptsz cg_op_from_drv_cuMemcpyAsync
#define cg_op_from_drv_cuMemcpyHtoDAsync_v2_ptsz cg_op_from_drv_cuMemcpyHtoDAsync_v2
#define cg_op_from_drv_cuMemcpyDtoHAsync_v2_ptsz cg_op_from_drv_cuMemcpyDtoHAsync_v2
#define cg_op_from_drv_cuMemcpyDtoDAsync_v2_ptsz cg_op_from_drv_cuMemcpyDtoDAsync_v2
#define cg_op_from_drv_cuMemsetD8Async_ptsz cg_op_from_drv_cuMemsetD8Async
#define cg_op_from_drv_cuEventRecord_ptsz cg_op_from_drv_cuEventRecord
#define cg_op_from_drv_cuEventRecordWithFlags_ptsz cg_op_from_drv_cuEventRecordWithFlags
#define cg_op_from_drv_cuStreamWaitEvent_ptsz cg_op_from_drv_cuStreamWaitEvent
#define cg_op_from_drv_cuLaunchHostFunc_ptsz cg_op_from_drv_cuLaunchHostFunc
#define CG_DWRAP_OP(name, query, pt, args)                                     \
	{                                                                      \
		CG_DRV_ENTER(name, args);                                      \
		struct cg_op op;                                               \
		enum cg_reason why = CG_WHY_DRIVER_CALL;                       \
		op.api = CG_API_COUNT;                                         \
		if (cg_opt.driver_ops && cg_resolve(1) == 0 &&                \
		    cg_op_from_drv_##name(&op, pt, &why, CG_UNPAREN args) == 0) { \
			if (cg_engine_submit(&op) == CG_DEFERRED)              \
				return CUDA_SUCCESS;                           \
			CUresult rc = CG_DRV_CALL(name, args);                 \
			cg_engine_submitted(&op, (int)rc);                     \
			return rc;                                             \
		}                                                              \
		cg_engine_boundary(CG_API_COUNT, why, 1);                      \
		return CG_DRV_CALL(name, args);                                \
	}

static int cg_drv_is_begin(enum cg_drv_api api)
{
	return api == CG_DRV_cuStreamBeginCapture_v2 || api == CG_DRV_cuStreamBeginCapture_v2_ptsz;
}

#define CG_DWRAP_SYNC_(name, query, pt, args) CG_DWRAP_SYNC(name, args)
#define CG_DWRAP_CTX_(name, query, pt, args) CG_DWRAP_CTX(name, args)
#define CG_DWRAP_BND_(name, query, pt, args) CG_DWRAP_BND(name, args)
#define CG_DWRAP_SPC_(name, query, pt, args) CG_DWRAP_SPC(name, args)
#define CG_DWRAP_OP_(name, query, pt, args) CG_DWRAP_OP(name, query, pt, args)
#define CG_DEFINE_INT(name, params, args)
#define CG_DEFINE_SYNC(name, params, args) static CUresult cg_dw_##name params
#define CG_DEFINE_BND CG_DEFINE_SYNC
#define CG_DEFINE_CTX CG_DEFINE_SYNC
#define CG_DEFINE_SPC CG_DEFINE_SYNC
#define CG_DEFINE_OP CG_DEFINE_SYNC
#define CG_DBODY_INT(name, query, pt, args)
#define CG_DBODY_SYNC CG_DWRAP_SYNC_
#define CG_DBODY_BND CG_DWRAP_BND_
#define CG_DBODY_CTX CG_DWRAP_CTX_
#define CG_DBODY_SPC CG_DWRAP_SPC_
#define CG_DBODY_OP CG_DWRAP_OP_
#define CG_DRV(kind, name, query, pt, params, args) \
	CG_DEFINE_##kind(name, params, args) CG_DBODY_##kind(name, query, pt, args)
#include "cuda_api.def"

/* ---- lookup tables ---------------------------------------------------- */
struct cg_drv_entry {
	const char *name, *query;
	int pt;
	void *wrapper;
	void **real;
};

#define CG_ENTRY_INT(name, query, pt)
#define CG_ENTRY_SYNC(name, query, pt) { #name, query, pt, (void *)cg_dw_##name, (void **)&cg_drv.name },
#define CG_ENTRY_BND CG_ENTRY_SYNC
#define CG_ENTRY_CTX CG_ENTRY_SYNC
#define CG_ENTRY_SPC CG_ENTRY_SYNC
#define CG_ENTRY_OP CG_ENTRY_SYNC
static const struct cg_drv_entry cg_drv_entries[] = {
#define CG_DRV(kind, name, query, pt, params, args) CG_ENTRY_##kind(name, query, pt)
#include "cuda_api.def"
};
#define CG_NDRV (sizeof cg_drv_entries / sizeof cg_drv_entries[0])

/* Remembers the driver's function in *slot (the first one seen) and returns
 * the wrapper in its place. */
static void *cg_keep_real(void **slot, void *real, void *wrapper)
{
	void *seen = NULL;
	__atomic_compare_exchange_n(slot, &seen, real, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	/* Another driver behind the same name: leave it alone. */
	return __atomic_load_n(slot, __ATOMIC_ACQUIRE) == real ? wrapper : real;
}

static void *cg_drv_wrap(const struct cg_drv_entry *e, void *real)
{
	return cg_keep_real(e->real, real, e->wrapper);
}

static void *cg_proc_wrap(const char *name, void *real);

/* ---- dlsym ------------------------------------------------------------ */
static cg_dlsym_fn cg_real_dlsym;

cg_dlsym_fn cg_dlsym_next(void)
{
	cg_dlsym_fn f = __atomic_load_n(&cg_real_dlsym, __ATOMIC_ACQUIRE);
	if (!f) {
		f = (cg_dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
		if (!f)
			f = (cg_dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
		__atomic_store_n(&cg_real_dlsym, f, __ATOMIC_RELEASE);
	}
	return f;
}

/* dlsym(RTLD_NEXT) is relative to its caller: the real dlsym would take
 * cgraft for the caller. Search the objects loaded after the caller's. */
static void *cg_dlsym_next_of(const void *caller, const char *name)
{
	Dl_info info;
	struct link_map *lm = NULL;
	cg_dlsym_fn real = cg_dlsym_next();
	if (!dladdr1(caller, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm)
		return real(RTLD_NEXT, name);
	for (struct link_map *o = lm->l_next; o; o = o->l_next) {
		if (!o->l_name || !o->l_name[0])
			continue;
		void *h = dlopen(o->l_name, RTLD_LAZY | RTLD_NOLOAD);
		if (!h)
			continue;
		void *p = real(h, name);
		dlclose(h);
		struct link_map *def = NULL;
		if (p && dladdr1(p, &info, (void **)&def, RTLD_DL_LINKMAP) && def == o)
			return p;
	}
	return NULL;
}

static void *cg_dlsym_impl(void *handle, const char *name, const void *caller)
{
	cg_dlsym_fn real = cg_dlsym_next();
	if (!real)
		return NULL;
	void *p = handle == RTLD_NEXT ? cg_dlsym_next_of(caller, name) : real(handle, name);
	if (!p || !name || name[0] != 'c' || name[1] != 'u')
		return p;
	cg_stat_add(lookups, 1);
	if (!strcmp(name, "cuGetProcAddress_v2") || !strcmp(name, "cuGetProcAddress"))
		return cg_proc_wrap(name, p);
	for (size_t i = 0; i < CG_NDRV; i++)
		if (!strcmp(cg_drv_entries[i].name, name))
			return cg_drv_wrap(&cg_drv_entries[i], p);
	return p;
}

/* Both glibc versions of dlsym: binaries built before glibc 2.34 bind to
 * the old one (PyTorch's wheels), newer ones to the new. */
__asm__(".symver cg_dlsym_v234, dlsym@@GLIBC_2.34");
__asm__(".symver cg_dlsym_v225, dlsym@GLIBC_2.2.5");
CG_EXPORT void *cg_dlsym_v234(void *handle, const char *name)
{
	return cg_dlsym_impl(handle, name, __builtin_return_address(0));
}
CG_EXPORT void *cg_dlsym_v225(void *handle, const char *name)
{
	return cg_dlsym_impl(handle, name, __builtin_return_address(0));
}

/* ---- cuGetProcAddress ------------------------------------------------- */
typedef CUresult (*cg_gpa2_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
typedef CUresult (*cg_gpa1_fn)(const char *, void **, int, cuuint64_t);
static cg_gpa2_fn cg_real_gpa2;
static cg_gpa1_fn cg_real_gpa1;

/* The CUDA version from which a lookup of an entry's query name returns
 * that entry's ABI (cudaTypedefs.h names them PFN_<query>_v<version>); an
 * older version gets an older ABI, which cgraft leaves alone. */
static int cg_drv_since(const char *name)
{
	static const struct {
		const char *name;
		int since;
	} abi[] = {
		{ "cuMemcpyHtoDAsync_v2", 3020 }, { "cuMemcpyDtoHAsync_v2", 3020 },
		{ "cuMemcpyDtoDAsync_v2", 3020 }, { "cuMemcpy2DAsync_v2", 3020 },
		{ "cuMemcpy3DAsync_v2", 3020 },   { "cuMemcpyHtoD_v2", 3020 },
		{ "cuMemcpyDtoH_v2", 3020 },      { "cuMemcpyDtoD_v2", 3020 },
		{ "cuMemFree_v2", 3020 },         { "cuStreamDestroy_v2", 4000 },
		{ "cuEventDestroy_v2", 4000 },    { "cuCtxPushCurrent_v2", 4000 },
		{ "cuCtxPopCurrent_v2", 4000 },
		{ "cuStreamBeginCapture_v2", 10010 }, { "cuCtxSynchronize_v2", 13000 },
	};
	size_t n = strlen(name);
	/* The per-thread variants share their plain entry's ABI. */
	if (n > 5 && (!strcmp(name + n - 5, "_ptsz") || !strcmp(name + n - 5, "_ptds")))
		n -= 5;
	for (size_t i = 0; i < sizeof abi / sizeof abi[0]; i++)
		if (strlen(abi[i].name) == n && !strncmp(abi[i].name, name, n))
			return abi[i].since;
	return 0;
}

/* Libraries often ask for the version an entry point appeared in (cuBLAS
 * does), not the one they were built with: every lookup is wrapped, with the
 * wrapper of the ABI that version gets. cuGetProcAddress itself took its
 * status argument in 12.0. */
static void cg_proc_result(const char *symbol, void **pfn, int version, cuuint64_t flags)
{
	cg_stat_add(lookups, 1);
	if (!*pfn)
		return;
	if (!strcmp(symbol, "cuGetProcAddress")) {
		*pfn = cg_proc_wrap(version >= 12000 ? "cuGetProcAddress_v2" : "cuGetProcAddress", *pfn);
		return;
	}
	int pt = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
	const struct cg_drv_entry *best = NULL;
	for (size_t i = 0; i < CG_NDRV; i++) {
		const struct cg_drv_entry *e = &cg_drv_entries[i];
		if (e->pt != pt || strcmp(e->query, symbol) || cg_drv_since(e->name) > version)
			continue;
		if (!best || cg_drv_since(e->name) > cg_drv_since(best->name))
			best = e;
	}
	if (best)
		*pfn = cg_drv_wrap(best, *pfn);
}

static CUresult cg_gpa2(const char *symbol, void **pfn, int version, cuuint64_t flags,
			CUdriverProcAddressQueryResult *status)
{
	CUresult rc = cg_real_gpa2(symbol, pfn, version, flags, status);
	if (rc == CUDA_SUCCESS && pfn && symbol)
		cg_proc_result(symbol, pfn, version, flags);
	return rc;
}

static CUresult cg_gpa1(const char *symbol, void **pfn, int version, cuuint64_t flags)
{
	CUresult rc = cg_real_gpa1(symbol, pfn, version, flags);
	if (rc == CUDA_SUCCESS && pfn && symbol)
		cg_proc_result(symbol, pfn, version, flags);
	return rc;
}

/* cuGetProcAddress itself: the 12.0 ABI (with status) or the one before. */
static void *cg_proc_wrap(const char *name, void *real)
{
	if (!strcmp(name, "cuGetProcAddress_v2"))
		return cg_keep_real((void **)&cg_real_gpa2, real, (void *)cg_gpa2);
	return cg_keep_real((void **)&cg_real_gpa1, real, (void *)cg_gpa1);
}

/* ---- entry points cgraft calls itself --------------------------------- */
int cg_drv_resolve_internal(void)
{
	static int done; /* 1 found, -1 not */
	if (__atomic_load_n(&done, __ATOMIC_ACQUIRE))
		return done > 0 ? 0 : -ENOENT;
	void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
	cg_dlsym_fn real = cg_dlsym_next();
	cg_gpa2_fn gpa = h && real ? (cg_gpa2_fn)real(h, "cuGetProcAddress_v2") : NULL;
	int found = gpa != NULL;
	if (gpa) {
		CUdriverProcAddressQueryResult st;
#define CG_RESOLVE_INT(name, query) \
		if (!cg_drv.name && (gpa(query, (void **)&cg_drv.name, CUDA_VERSION, 0, &st) != CUDA_SUCCESS)) \
			cg_drv.name = NULL;
#define CG_RESOLVE_SYNC(name, query)
#define CG_RESOLVE_BND CG_RESOLVE_SYNC
#define CG_RESOLVE_CTX CG_RESOLVE_SYNC
#define CG_RESOLVE_SPC CG_RESOLVE_SYNC
#define CG_RESOLVE_OP CG_RESOLVE_SYNC
#define CG_DRV(kind, name, query, pt, params, args) CG_RESOLVE_##kind(name, query)
#include "cuda_api.def"
		found = cg_drv.cuFuncGetParamInfo != NULL;
	}
	if (h)
		dlclose(h);
	__atomic_store_n(&done, found ? 1 : -1, __ATOMIC_RELEASE);
	return found ? 0 : -ENOENT;
}
