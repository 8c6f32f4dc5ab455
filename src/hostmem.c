/* Host memory a kernel can reach (pinned, mapped, registered, managed): a
 * kernel given an address in it may write what the host then waits for
 * without calling CUDA, so it is never held. A sorted table of ranges, with
 * a filter of the 1 GiB granules they touch for the common miss. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "op.h"

struct cg_range {
	uintptr_t lo, hi;
};

#define CG_GRANULE_SHIFT 30
#define CG_FILTER_BITS 1024

static pthread_rwlock_t cg_hm_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct cg_range *cg_hm;
static size_t cg_hm_n, cg_hm_cap;
static uint64_t cg_hm_filter[CG_FILTER_BITS / 64];
static atomic_int cg_hm_any;

static size_t cg_granule_bit(uintptr_t a)
{
	return (size_t)(((uint64_t)(a >> CG_GRANULE_SHIFT) * 0x9E3779B97F4A7C15ull) >> 54) & (CG_FILTER_BITS - 1);
}

/* Under the write lock. The filter is read without the lock too
 * (cg_filter_may): each word goes from its old value to its new one at
 * once, so a granule of memory noted before and after never reads clear. */
static void cg_filter_rebuild(void)
{
	uint64_t f[CG_FILTER_BITS / 64];
	memset(f, 0, sizeof f);
	for (size_t i = 0; i < cg_hm_n; i++)
		for (uintptr_t g = cg_hm[i].lo >> CG_GRANULE_SHIFT; g <= (cg_hm[i].hi - 1) >> CG_GRANULE_SHIFT; g++) {
			size_t b = cg_granule_bit(g << CG_GRANULE_SHIFT);
			f[b / 64] |= 1ull << (b % 64);
		}
	for (size_t i = 0; i < CG_FILTER_BITS / 64; i++)
		__atomic_store_n(&cg_hm_filter[i], f[i], __ATOMIC_RELEASE);
	atomic_store(&cg_hm_any, cg_hm_n > 0);
}

/* Whether w may lie in host memory noted, without the lock: the frees and
 * kernels of a program with pinned memory (PyTorch's) mostly name device
 * memory, whose granules the filter does not hold. Memory noted by
 * another thread is seen here once the program learnt its address from
 * that thread (after the noting call returned). */
static int cg_filter_may(uint64_t w, const void *c)
{
	(void)c;
	size_t bit = cg_granule_bit((uintptr_t)w);
	return __atomic_load_n(&cg_hm_filter[bit / 64], __ATOMIC_ACQUIRE) >> (bit % 64) & 1;
}

void cg_hostmem_add(const void *p, size_t n)
{
	if (!p || !n)
		return;
	uintptr_t lo = (uintptr_t)p;
	pthread_rwlock_wrlock(&cg_hm_lock);
	if (cg_hm_n == cg_hm_cap) {
		size_t cap = cg_hm_cap ? 2 * cg_hm_cap : 64;
		struct cg_range *r = realloc(cg_hm, cap * sizeof *r);
		if (!r) {
			pthread_rwlock_unlock(&cg_hm_lock);
			return;
		}
		cg_hm = r;
		cg_hm_cap = cap;
	}
	size_t i = cg_hm_n;
	while (i > 0 && cg_hm[i - 1].lo > lo) {
		cg_hm[i] = cg_hm[i - 1];
		i--;
	}
	cg_hm[i] = (struct cg_range){ lo, lo + n };
	cg_hm_n++;
	cg_filter_rebuild();
	pthread_rwlock_unlock(&cg_hm_lock);
}

int cg_hostmem_remove(const void *p, size_t *n)
{
	uintptr_t lo = (uintptr_t)p;
	int found = 0;
	pthread_rwlock_wrlock(&cg_hm_lock);
	for (size_t i = 0; i < cg_hm_n && !found; i++)
		if (cg_hm[i].lo == lo) {
			*n = cg_hm[i].hi - cg_hm[i].lo;
			memmove(cg_hm + i, cg_hm + i + 1, (cg_hm_n - i - 1) * sizeof *cg_hm);
			cg_hm_n--;
			cg_filter_rebuild();
			found = 1;
		}
	pthread_rwlock_unlock(&cg_hm_lock);
	return found;
}

static int cg_in_ranges(uintptr_t a)
{
	size_t lo = 0, hi = cg_hm_n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (cg_hm[mid].hi <= a)
			lo = mid + 1;
		else if (cg_hm[mid].lo > a)
			hi = mid;
		else
			return 1;
	}
	return 0;
}

/* The 8 bytes of a kernel op's parameters that may hold an address, each
 * given to f until it returns non-zero. cgraft packs parameters without
 * padding (segment.c), so a parameter starts at any offset; an address is a
 * parameter of 8 bytes, or lies 8-aligned inside a parameter whose size is
 * a multiple of 8 (a struct holding one is 8-aligned). A packed buffer is
 * the driver's layout: addresses 8-aligned in it. Without a layout, every
 * offset is read. */
static inline int cg_each_word(const struct cg_op *op, int (*f)(uint64_t w, const void *c), const void *c)
{
	const uint8_t *p = op->u.k.params;
	const struct cg_kinfo *ki = op->u.k.ki;
	uint64_t w;
	if (!p)
		return 0;
	if ((op->flags & CG_F_PACKED) || !ki) {
		size_t step = ki ? 8 : 1;
		for (size_t b = 0; b + 8 <= op->nbytes; b += step)
			if (memcpy(&w, p + b, 8), f(w, c))
				return 1;
		return 0;
	}
	for (uint32_t i = 0, off = 0; i < ki->nparams && off < op->nbytes; off += ki->size[i], i++)
		if (ki->size[i] % 8 == 0)
			for (uint32_t b = 0; b < ki->size[i] && off + b + 8 <= op->nbytes; b += 8)
				if (memcpy(&w, p + off + b, 8), f(w, c))
					return 1;
	return 0;
}

static int cg_word_host(uint64_t w, const void *c)
{
	(void)c;
	size_t bit = cg_granule_bit((uintptr_t)w);
	return (cg_hm_filter[bit / 64] >> (bit % 64) & 1) && cg_in_ranges((uintptr_t)w);
}

/* For the debug log: the word that hit, and the range it lies in. */
static int cg_word_host_note(uint64_t w, const void *c)
{
	if (!cg_word_host(w, NULL))
		return 0;
	uintptr_t *out = (uintptr_t *)c;
	out[0] = (uintptr_t)w;
	for (size_t i = 0; i < cg_hm_n; i++)
		if (w >= cg_hm[i].lo && w < cg_hm[i].hi)
			out[1] = cg_hm[i].lo, out[2] = cg_hm[i].hi - cg_hm[i].lo;
	return 1;
}

int cg_hostmem_has(const void *p)
{
	if (!atomic_load_explicit(&cg_hm_any, memory_order_relaxed) || !cg_filter_may((uintptr_t)p, NULL))
		return 0;
	pthread_rwlock_rdlock(&cg_hm_lock);
	int hit = cg_word_host((uintptr_t)p, NULL);
	pthread_rwlock_unlock(&cg_hm_lock);
	return hit;
}

int cg_hostmem_hit(const struct cg_op *op)
{
	if (op->kind != CG_OP_KERNEL || !atomic_load_explicit(&cg_hm_any, memory_order_relaxed) ||
	    !cg_each_word(op, cg_filter_may, NULL))
		return 0;
	pthread_rwlock_rdlock(&cg_hm_lock);
	int hit = cg_each_word(op, cg_word_host, NULL);
	if (hit && cg_unlikely(cg_log_level >= CG_LOG_DEBUG)) {
		uintptr_t at[3] = { 0 };
		char what[200];
		cg_each_word(op, cg_word_host_note, at);
		cg_op_describe(what, sizeof what, op);
		cg_debug("%s is given %#lx, in host memory [%#lx, +%lu): it runs eagerly", what, (unsigned long)at[0],
			 (unsigned long)at[1], (unsigned long)at[2]);
	}
	pthread_rwlock_unlock(&cg_hm_lock);
	return hit;
}

static int cg_word_in(uint64_t w, const void *c)
{
	const uintptr_t *r = c;
	return w >= r[0] && w < r[1];
}

int cg_params_reach(const struct cg_op *op, const void *p, size_t n)
{
	const uintptr_t r[2] = { (uintptr_t)p, (uintptr_t)p + n };
	return op->kind == CG_OP_KERNEL && cg_each_word(op, cg_word_in, r);
}
