/* Host memory a kernel can reach (pinned, mapped, registered, managed): a
 * kernel given an address in it may write what the host then waits for
 * without calling CUDA, so it is never held. A sorted table of ranges, with
 * a filter of the 1 GiB granules they touch for the common miss. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

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

static void cg_filter_rebuild(void)
{
	memset(cg_hm_filter, 0, sizeof cg_hm_filter);
	for (size_t i = 0; i < cg_hm_n; i++)
		for (uintptr_t g = cg_hm[i].lo >> CG_GRANULE_SHIFT; g <= (cg_hm[i].hi - 1) >> CG_GRANULE_SHIFT; g++) {
			size_t b = cg_granule_bit(g << CG_GRANULE_SHIFT);
			cg_hm_filter[b / 64] |= 1ull << (b % 64);
		}
	atomic_store(&cg_hm_any, cg_hm_n > 0);
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

void cg_hostmem_remove(const void *p)
{
	uintptr_t lo = (uintptr_t)p;
	pthread_rwlock_wrlock(&cg_hm_lock);
	for (size_t i = 0; i < cg_hm_n; i++)
		if (cg_hm[i].lo == lo) {
			memmove(cg_hm + i, cg_hm + i + 1, (cg_hm_n - i - 1) * sizeof *cg_hm);
			cg_hm_n--;
			cg_filter_rebuild();
			break;
		}
	pthread_rwlock_unlock(&cg_hm_lock);
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

/* cgraft packs a kernel's parameters without padding (segment.c): after a
 * 4-, 2- or 1-byte parameter a pointer sits at any offset, so every 8 bytes
 * are read, at every offset. */
int cg_hostmem_hit(const uint8_t *params, size_t nbytes)
{
	if (!atomic_load_explicit(&cg_hm_any, memory_order_relaxed))
		return 0;
	int hit = 0;
	pthread_rwlock_rdlock(&cg_hm_lock);
	for (size_t b = 0; b + 8 <= nbytes && !hit; b++) {
		uint64_t w;
		memcpy(&w, params + b, 8);
		size_t bit = cg_granule_bit((uintptr_t)w);
		if (cg_hm_filter[bit / 64] >> (bit % 64) & 1)
			hit = cg_in_ranges((uintptr_t)w);
	}
	pthread_rwlock_unlock(&cg_hm_lock);
	return hit;
}

int cg_params_reach(const uint8_t *params, size_t nbytes, const void *p, size_t n)
{
	uintptr_t lo = (uintptr_t)p, hi = lo + n;
	for (size_t b = 0; b + 8 <= nbytes; b++) {
		uint64_t w;
		memcpy(&w, params + b, 8);
		if (w >= lo && w < hi)
			return 1;
	}
	return 0;
}
