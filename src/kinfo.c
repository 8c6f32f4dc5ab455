/* Kernel parameter layouts, learnt from the driver once per handle the
 * program names, and forgotten all at once when modules, libraries or
 * contexts go away (their handles may come back as other kernels). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "op.h"

#define CG_KINFO_SLOTS 4096 /* power of two; open addressing */

static struct cg_kinfo *cg_kinfo_tab[CG_KINFO_SLOTS];
static pthread_mutex_t cg_kinfo_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_uint cg_kinfo_gen = 1;

static size_t cg_slot(const void *p)
{
	uint64_t h = (uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15ull;
	return (size_t)(h >> 52) & (CG_KINFO_SLOTS - 1);
}

/* NCCL kernels carry host-side proxy work that must meet them in time: they
 * are never held. NCCL declares them in C++ (ncclDevKernel_..., ncclKernel_...),
 * so the driver reports mangled names: look for the identifier anywhere. */
static int cg_is_nccl_name(const char *name)
{
	return name && (strstr(name, "ncclDevKernel") || strstr(name, "ncclKernel") ||
			!strncmp(name, "nccl", 4));
}

/* Asks the driver for each parameter's size until it says there is none:
 * CUDA_ERROR_INVALID_VALUE past the last parameter (at index 0 for a kernel
 * without parameters). Any other answer means the layout is unknown. */
static int cg_learn_sizes(const void *h, int kernel, uint32_t *sizes, uint32_t *offs, uint32_t *n)
{
	for (uint32_t i = 0;; i++) {
		size_t off, size;
		if (i == CG_MAX_PARAMS)
			return -E2BIG;
		CUresult rc = kernel ? CG_BK(kernel_param_info, (CUkernel)h, i, &off, &size)
				     : CG_BK(func_param_info, (CUfunction)h, i, &off, &size);
		if (rc == CUDA_ERROR_INVALID_VALUE) {
			*n = i;
			return 0;
		}
		if (rc != CUDA_SUCCESS)
			return -ENOENT;
		sizes[i] = (uint32_t)size;
		offs[i] = (uint32_t)off;
	}
}

/* Whether a launch of h takes any valid grid: it was compiled with no
 * cluster its grid must divide into. Unknown is no. */
static int cg_grid_free(const void *h, int kernel)
{
	CUfunction f = (CUfunction)h;
	if (kernel && CG_BK(kernel_get_function, &f, (CUkernel)h) != CUDA_SUCCESS)
		return 0;
	static const CUfunction_attribute attrs[] = { CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET,
						      CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH,
						      CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT,
						      CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH };
	for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
		int v = -1;
		if (CG_BK(func_attr, &v, attrs[i], f) != CUDA_SUCCESS || v != 0)
			return 0;
	}
	return 1;
}

/* The driver handle behind what the program passes: a runtime stub's kernel
 * comes from the runtime; a driver handle is a CUfunction or a CUkernel. */
static struct cg_kinfo *cg_kinfo_learn(const void *key, enum cg_kkey how)
{
	static uint32_t sizes[CG_MAX_PARAMS], offs[CG_MAX_PARAMS]; /* under cg_kinfo_lock */
	const void *h = key;
	int kernel = how != CG_KEY_DRIVER;
	uint32_t n = 0;
	if (cg_backend_ready())
		return NULL;
	if (how == CG_KEY_STUB && !(h = cg_backend_stub_kernel(key)))
		return NULL;
	if (how == CG_KEY_DRIVER) {
		/* A CUkernel may come cast to a CUfunction: asked as the wrong
		 * kind, a handle may look like one without parameters. */
		uint32_t nk = 0;
		int fok = cg_learn_sizes(h, 0, sizes, offs, &n) == 0;
		if (!fok || n == 0) {
			if (cg_learn_sizes(h, 1, sizes, offs, &nk) == 0 && (nk > 0 || !fok)) {
				kernel = 1;
				n = nk;
			} else if (!fok) {
				return NULL;
			} else {
				n = 0;
			}
		}
	} else if (cg_learn_sizes(h, 1, sizes, offs, &n)) {
		return NULL;
	}
	struct cg_kinfo *ki = calloc(1, sizeof *ki + 2 * n * sizeof(uint32_t));
	if (!ki)
		return NULL;
	ki->key = key;
	ki->handle = h;
	ki->nparams = n;
	ki->size = (uint32_t *)(ki + 1);
	ki->off = ki->size + n;
	ki->hkind = kernel ? CG_KH_KERNEL : CG_KH_FUNCTION;
	ki->grid_fixed = !cg_grid_free(h, kernel);
	ki->gen = atomic_load(&cg_kinfo_gen);
	ki->simple = n <= 32;
	ki->dense = 1;
	for (uint32_t i = 0; i < n; i++) {
		ki->size[i] = sizes[i];
		ki->off[i] = offs[i];
		ki->dense &= offs[i] == ki->total;
		ki->total += sizes[i];
		ki->simple &= sizes[i] == 4 || sizes[i] == 8;
		if (sizes[i] == 8 && i < 32)
			ki->wide |= 1u << i;
	}
	const char *name = NULL;
	CUresult rc = kernel ? CG_BK(kernel_name, &name, (CUkernel)h) : CG_BK(func_name, &name, (CUfunction)h);
	if (rc == CUDA_SUCCESS && name) {
		snprintf(ki->name, sizeof ki->name, "%s", name);
		ki->nccl = (uint8_t)cg_is_nccl_name(name);
	}
	return ki;
}

const struct cg_kinfo *cg_kinfo_get(const void *key, enum cg_kkey how)
{
	size_t i = cg_slot(key);
	unsigned gen = atomic_load_explicit(&cg_kinfo_gen, memory_order_acquire);
	/* Entries are only ever added: a lock-free read finds a published one. */
	for (size_t probe = 0; probe < CG_KINFO_SLOTS; probe++, i = (i + 1) & (CG_KINFO_SLOTS - 1)) {
		struct cg_kinfo *ki = __atomic_load_n(&cg_kinfo_tab[i], __ATOMIC_ACQUIRE);
		if (!ki)
			break;
		if (ki->key == key && ki->gen == gen)
			return ki;
	}
	pthread_mutex_lock(&cg_kinfo_lock);
	struct cg_kinfo *found = NULL;
	i = cg_slot(key);
	for (size_t probe = 0; probe < CG_KINFO_SLOTS; probe++, i = (i + 1) & (CG_KINFO_SLOTS - 1)) {
		struct cg_kinfo *ki = cg_kinfo_tab[i];
		if (!ki) {
			found = cg_kinfo_learn(key, how);
			if (found)
				__atomic_store_n(&cg_kinfo_tab[i], found, __ATOMIC_RELEASE);
			break;
		}
		if (ki->key == key && ki->gen == gen) {
			found = ki;
			break;
		}
	}
	pthread_mutex_unlock(&cg_kinfo_lock);
	return found;
}

/* Old entries are kept aside, not freed: a thread may still read one. The
 * table is emptied so that lookups stay short. */
static struct cg_kinfo *cg_kinfo_retired;

void cg_kinfo_forget_all(void)
{
	pthread_mutex_lock(&cg_kinfo_lock);
	atomic_fetch_add(&cg_kinfo_gen, 1);
	for (size_t i = 0; i < CG_KINFO_SLOTS; i++) {
		struct cg_kinfo *ki = cg_kinfo_tab[i];
		if (ki) {
			ki->retired = cg_kinfo_retired;
			cg_kinfo_retired = ki;
		}
		__atomic_store_n(&cg_kinfo_tab[i], NULL, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&cg_kinfo_lock);
}
