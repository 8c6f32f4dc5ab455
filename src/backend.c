/* Finds the real driver for cgraft's own calls, once: libcuda.so.1's
 * cuGetProcAddress_v2 asked for the current ABI of each entry point. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>

#include "backend.h"
#include "log.h"

static struct cg_backend cg_real_bk;
struct cg_hot cg_hot __attribute__((aligned(64))) = { .bk = &cg_real_bk };
static pthread_once_t cg_bk_once = PTHREAD_ONCE_INIT;
static int cg_bk_state; /* 1 found, -1 not */

/* cg_hot's copy of the table's cuCtxGetCurrent. */
static void cg_hot_ctx_from(const struct cg_backend *bk)
{
	_Static_assert(sizeof(struct cg_hot) <= 64, "cg_hot is one cache line");
	cg_hot.ctx_get_current = (void *)bk->ctx_get_current;
}

/* glibc's own dlsym: the exported one is cgraft's. */
void *(*cg_real_dlsym_v234)(void *, const char *) CG_HIDDEN;
void *(*cg_real_dlsym_v225)(void *, const char *) CG_HIDDEN;

/* Finds them. It may run before anything else of the process is set up (a
 * sanitizer's runtime looks up what it wraps before its own start-up is
 * done): it and the lookups of names not CUDA's are built unchecked. */
void cg_dlsym_resolve(void) CG_HIDDEN CG_NO_SANITIZE;
void cg_dlsym_resolve(void)
{
	if (__atomic_load_n(&cg_real_dlsym_v234, __ATOMIC_ACQUIRE))
		return;
	void *(*f)(void *, const char *) = (void *(*)(void *, const char *))dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
	void *(*old)(void *, const char *) = (void *(*)(void *, const char *))dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
	if (!f)
		f = old;
	__atomic_store_n(&cg_real_dlsym_v225, old ? old : f, __ATOMIC_RELEASE);
	__atomic_store_n(&cg_real_dlsym_v234, f, __ATOMIC_RELEASE);
}

void *cg_dlsym_real(void *handle, const char *name)
{
	cg_dlsym_resolve();
	void *(*f)(void *, const char *) = __atomic_load_n(&cg_real_dlsym_v234, __ATOMIC_ACQUIRE);
	return f ? f(handle, name) : NULL;
}

CUkernel cg_backend_stub_kernel(const void *stub)
{
	cudaKernel_t k = NULL;
	if (cg_backend_runtime() || CG_BK(rt_get_kernel, &k, stub) != CUDA_SUCCESS)
		return NULL;
	return (CUkernel)k;
}

/* The runtime is optional: a program with a static one has none cgraft
 * could reach, and launches no runtime stubs through cgraft. It may also be
 * loaded after the driver (Python imports), so a miss is asked again. */
int cg_backend_runtime(void)
{
	if (cg_hot.bk != &cg_real_bk)
		return 0;
	if (__atomic_load_n(&cg_real_bk.rt_get_kernel, __ATOMIC_ACQUIRE))
		return 0;
	void *rt = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
#define CG_BK_RT(field, query, decl)                                               \
	__atomic_store_n(&cg_real_bk.field,                                     \
			 (__typeof__(cg_real_bk.field))cg_dlsym_real(rt ? rt : RTLD_NEXT, query), \
			 __ATOMIC_RELEASE);
	CG_BACKEND_RUNTIME(CG_BK_RT)
#undef CG_BK_RT
	if (rt)
		dlclose(rt);
	return cg_real_bk.rt_get_kernel ? 0 : -ENOENT;
}

static void cg_backend_find(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	if (!h)
		h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	CUresult (*gpa)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *) =
		h ? (__typeof__(gpa))cg_dlsym_real(h, "cuGetProcAddress_v2") : NULL;
	int missing = !gpa;
	if (gpa) {
		CUdriverProcAddressQueryResult st;
#define CG_BK_FIND(field, name, version, req)                                    \
		if (gpa(#name, (void **)&cg_real_bk.field, version, 0, &st) != CUDA_SUCCESS || \
		    !cg_real_bk.field) {                                            \
			cg_real_bk.field = NULL;                                    \
			missing |= req;                                             \
		}
		CG_BACKEND_DRIVER(CG_BK_FIND)
#undef CG_BK_FIND
	}
	cg_backend_runtime();
	if (missing) {
		cg_log(CG_LOG_WARN, CG_FAULT_DRIVER,
		       "%s: cgraft cannot build graphs and passes every call through",
		       h ? "the CUDA driver lacks entry points cgraft needs (driver older than CUDA 12.4?)"
			 : "libcuda.so.1 cannot be opened");
	}
	cg_bk_state = missing ? -1 : 1;
}

int cg_backend_ready_slow(void)
{
	if (cg_hot.bk != &cg_real_bk)
		return 0;
	pthread_once(&cg_bk_once, cg_backend_find);
	if (cg_bk_state > 0) {
		cg_hot_ctx_from(&cg_real_bk);
		atomic_store(&cg_hot.backend_ok, 1);
	}
	return cg_bk_state > 0 ? 0 : -ENOENT;
}

void cg_backend_set(const struct cg_backend *bk)
{
	cg_hot.bk = bk ? bk : &cg_real_bk;
	cg_hot_ctx_from(cg_hot.bk);
	atomic_store(&cg_hot.backend_ok, bk != NULL);
}

/* ---- NCCL ------------------------------------------------------------------------ */
struct cg_nccl_backend cg_nccl_bk;
static atomic_int cg_nccl_state; /* 0 not looked for, 1 found, -1 missing */

int cg_nccl_ready(void)
{
	int st = atomic_load_explicit(&cg_nccl_state, memory_order_acquire);
	if (st)
		return st > 0 ? 0 : -ENOENT;
	/* Next after cgraft in the global scope, or where the program opened
	 * it locally (a Python extension's dependency). */
	void *h = cg_dlsym_real(RTLD_NEXT, "ncclAllReduce") ? RTLD_NEXT : dlopen("libnccl.so.2", RTLD_LAZY | RTLD_NOLOAD);
	struct cg_nccl_backend b = { 0 };
	int ok = h != NULL;
	/* The newer collectives (NCCL 2.28) are optional: without them, their
	 * calls stay boundaries. */
#define CG_NCCL_FIND(field, name, req)                                          \
	if (h && !(*(void **)&b.field = cg_dlsym_real(h, name)) && req)         \
		ok = 0;
	CG_NCCL_FIND(allreduce, "ncclAllReduce", 1)
	CG_NCCL_FIND(broadcast, "ncclBroadcast", 1)
	CG_NCCL_FIND(reduce, "ncclReduce", 1)
	CG_NCCL_FIND(allgather, "ncclAllGather", 1)
	CG_NCCL_FIND(reducescatter, "ncclReduceScatter", 1)
	CG_NCCL_FIND(send, "ncclSend", 1)
	CG_NCCL_FIND(recv, "ncclRecv", 1)
	CG_NCCL_FIND(alltoall, "ncclAlltoAll", 0)
	CG_NCCL_FIND(gather, "ncclGather", 0)
	CG_NCCL_FIND(scatter, "ncclScatter", 0)
#undef CG_NCCL_FIND
	if (h && h != RTLD_NEXT)
		dlclose(h);
	if (ok)
		cg_nccl_bk = b;
	else
		cg_log_capped(CG_LOG_WARN, CG_FAULT_PROGRAM,
			      "the program's libnccl.so.2 lacks calls cgraft replays: "
			      "its calls stay boundaries");
	atomic_store_explicit(&cg_nccl_state, ok ? 1 : -1, memory_order_release);
	return ok ? 0 : -ENOENT;
}
