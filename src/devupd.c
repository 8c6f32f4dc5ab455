/* Device updates: the updater's image, loaded once, and its parameter
 * blobs. */
#include <errno.h>
#include <pthread.h>
#include <string.h>
/* CG_UPD_SCALAR: the compare without the vector unit, as where there is
 * none (the unit test devupd-scalar builds it so). */
#if defined(__SSE2__) && !defined(CG_UPD_SCALAR)
#define CG_UPD_SSE2 1
#include <emmintrin.h>
#endif

#include "backend.h"
#include "devupd.h"
#include "log.h"

extern const unsigned char cg_updater_image[] CG_HIDDEN;
extern const size_t cg_updater_image_size CG_HIDDEN;

/* The driver copies a kernel's whole parameter buffer at each update of its
 * node, about 0.4 ns a byte (docs/bench.md, kernels/nodeupdate): the classes
 * double up to 8 KiB and grow by half or less beyond. */
static const size_t cg_upd_sizes[CG_UPD_CLASSES] = { 1024, 2048, 4096, 8192, 12288, 16384, 24576, CG_UPD_MAX };
static const char *const cg_upd_names[CG_UPD_CLASSES] = { "cg_updater_1k",  "cg_updater_2k",  "cg_updater_4k",
							  "cg_updater_8k",  "cg_updater_12k", "cg_updater_16k",
							  "cg_updater_24k", "cg_updater_32k" };

size_t cg_upd_class_size(int c)
{
	return cg_upd_sizes[c];
}

static pthread_once_t cg_upd_once = PTHREAD_ONCE_INIT;
static CUkernel cg_upd_k[CG_UPD_CLASSES], cg_copy_k;

static void cg_upd_load(void)
{
	CUlibrary lib = NULL;
	if (!cg_updater_image_size ||
	    CG_BK(library_load, &lib, cg_updater_image, NULL, NULL, 0, NULL, NULL, 0) != CUDA_SUCCESS) {
		cg_debug("no updater: graph nodes are updated from the host");
		return;
	}
	CUkernel k[CG_UPD_CLASSES];
	for (int c = 0; c < CG_UPD_CLASSES; c++)
		if (CG_BK(library_kernel, &k[c], lib, cg_upd_names[c]) != CUDA_SUCCESS)
			return;
	memcpy(cg_upd_k, k, sizeof k);
	if (CG_BK(library_kernel, &cg_copy_k, lib, "cg_copy") != CUDA_SUCCESS)
		cg_copy_k = NULL;
}

CUkernel cg_upd_kernel(int c)
{
	pthread_once(&cg_upd_once, cg_upd_load);
	return cg_upd_k[c];
}

CUkernel cg_copy_kernel(void)
{
	pthread_once(&cg_upd_once, cg_upd_load);
	return cg_copy_k; /* set only where the updaters are */
}

/* Whether w bytes (8 but at a parameter's end) are the same: a word's
 * compare inlined, not a call, and so is a 4-byte parameter's. */
static inline int cg_upd_same(const uint8_t *a, const uint8_t *b, size_t w)
{
	if (cg_likely(w == 8)) {
		uint64_t x, y;
		memcpy(&x, a, 8);
		memcpy(&y, b, 8);
		return x == y;
	}
	if (w == 4) {
		uint32_t x, y;
		memcpy(&x, a, 4);
		memcpy(&y, b, 4);
		return x == y;
	}
	return !memcmp(a, b, w);
}

#ifdef CG_UPD_SSE2
/* Byte by byte, whether 16 bytes of a and b are the same. */
static inline __m128i cg_upd_eq16(const uint8_t *a, const uint8_t *b)
{
	return _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)a), _mm_loadu_si128((const __m128i *)b));
}

/* The word of the first differing byte of a block at i, m the block's
 * compares' masks (bit k set: byte i + k the same). */
static inline size_t cg_upd_first_word(size_t i, uint64_t m)
{
	return i + ((size_t)__builtin_ctzll(~m) & ~(size_t)7);
}
#endif

/* From i, past the blocks where a and b are the same: equal stretches,
 * most of a PyTorch kernel's parameters, are passed over with the vector
 * unit's compares where there is one (SSE2, x86-64's own: 64 bytes a turn
 * and then 32, a block that differs left at its first differing word; i
 * a multiple of 8 from the parameter's start). */
static inline size_t cg_upd_skip_same(const uint8_t *a, const uint8_t *b, size_t i, size_t n)
{
#ifdef CG_UPD_SSE2
	for (size_t end = i + ((n - i) & ~(size_t)63); i < end; i += 64) {
		__m128i e0 = cg_upd_eq16(a + i, b + i), e1 = cg_upd_eq16(a + i + 16, b + i + 16);
		__m128i e2 = cg_upd_eq16(a + i + 32, b + i + 32), e3 = cg_upd_eq16(a + i + 48, b + i + 48);
		if (_mm_movemask_epi8(_mm_and_si128(_mm_and_si128(e0, e1), _mm_and_si128(e2, e3))) != 0xffff)
			return cg_upd_first_word(i, (uint64_t)_mm_movemask_epi8(e0) |
							    (uint64_t)_mm_movemask_epi8(e1) << 16 |
							    (uint64_t)_mm_movemask_epi8(e2) << 32 |
							    (uint64_t)_mm_movemask_epi8(e3) << 48);
	}
	if (n - i >= 32) {
		uint64_t m = (uint64_t)_mm_movemask_epi8(cg_upd_eq16(a + i, b + i)) |
			     (uint64_t)_mm_movemask_epi8(cg_upd_eq16(a + i + 16, b + i + 16)) << 16;
		if (m != 0xffffffff)
			return cg_upd_first_word(i, m);
		i += 32;
	}
#else
	for (; n - i >= 32; i += 32) {
		uint64_t d = 0;
		for (int k = 0; k < 32; k += 8) {
			uint64_t x, y;
			memcpy(&x, a + i + k, 8);
			memcpy(&y, b + i + k, 8);
			d |= x ^ y;
		}
		if (d)
			break;
	}
#endif
	return i;
}

/* Records for the differing 8-byte-word runs of n bytes that lie at off in
 * the kernel's parameter buffer and at at_bytes in cgraft's bytes. */
static int cg_upd_runs(struct cg_upd *u, uint64_t node, const uint8_t *old, const uint8_t *new, size_t n,
		       uint32_t off, size_t at_bytes, uint32_t *first)
{
	const size_t maxrec = sizeof u->rec / sizeof u->rec[0];
	for (size_t i = 0; i < n;) {
		i = cg_upd_skip_same(old, new, i, n);
		/* The next differing word, where there is one. */
		size_t w = 0;
		while (i < n) {
			w = n - i < 8 ? n - i : 8;
			if (!cg_upd_same(old + i, new + i, w))
				break;
			i += w;
		}
		if (i == n)
			break;
		size_t j = i + w;
		while (j < n) {
			size_t x = n - j < 8 ? n - j : 8;
			if (cg_upd_same(old + j, new + j, x))
				break;
			j += x;
		}
		/* Each record's bytes start on 8 bytes: the device reads them so. */
		uint32_t at = (u->ndata + 7) & ~7u;
		if (u->nrec == maxrec || 8 + (u->nrec + 1) * sizeof(struct cg_upd_rec) + at + (j - i) > CG_UPD_MAX)
			return -ENOSPC;
		u->ndata = at;
		u->at[u->nrec] = (uint32_t)(at_bytes + i);
		u->rec[u->nrec++] = (struct cg_upd_rec){ .node = node, .off = off + (uint32_t)i,
							 .size = (uint32_t)(j - i), .data = u->ndata, .kind = *first };
		if (j - i == 8) /* a word, most runs: copied inline, not by a call */
			memcpy(u->data + u->ndata, new + i, 8);
		else
			memcpy(u->data + u->ndata, new + i, j - i);
		u->ndata += (uint32_t)(j - i);
		*first = 0;
		i = j;
	}
	return 0;
}

int cg_upd_add(struct cg_upd *u, uint64_t node, const uint8_t *old, const uint8_t *new, const struct cg_kinfo *ki,
	       size_t n, const uint32_t *grid)
{
	uint32_t nrec = u->nrec, ndata = u->ndata, first = CG_UPD_FIRST;
	int rc = 0;
	if (!ki || ki->dense) {
		rc = cg_upd_runs(u, node, old, new, n, 0, 0, &first);
	} else {
		size_t at = 0;
		for (uint32_t i = 0; i < ki->nparams && !rc; i++) {
			rc = cg_upd_runs(u, node, old + at, new + at, ki->size[i], ki->off[i], at, &first);
			at += ki->size[i];
		}
	}
	if (!rc && grid) {
		uint32_t at = (u->ndata + 7) & ~7u;
		if (u->nrec == sizeof u->rec / sizeof u->rec[0] ||
		    8 + (u->nrec + 1) * sizeof(struct cg_upd_rec) + at + 12 > CG_UPD_MAX) {
			rc = -ENOSPC;
		} else {
			u->ndata = at;
			u->at[u->nrec] = UINT32_MAX; /* not cgraft's bytes */
			u->rec[u->nrec++] = (struct cg_upd_rec){ .node = node, .data = u->ndata, .kind = first | CG_UPD_GRID };
			memcpy(u->data + u->ndata, grid, 12);
			u->ndata += 12;
		}
	}
	if (rc) {
		u->nrec = nrec;
		u->ndata = ndata;
	}
	return rc;
}

void cg_upd_apply(const struct cg_upd *u, uint32_t from, uint32_t to, uint8_t *old, const uint8_t *new)
{
	for (uint32_t r = from; r < to; r++)
		if (!(u->rec[r].kind & CG_UPD_GRID))
			memcpy(old + u->at[r], new + u->at[r], u->rec[r].size);
}

int cg_upd_finish(const struct cg_upd *u, uint8_t *out)
{
	size_t recs = u->nrec * sizeof(struct cg_upd_rec), need = 8 + recs + u->ndata;
	int c = 0;
	while (cg_upd_sizes[c] < need)
		c++;
	uint32_t head[2] = { u->nrec, 0 };
	memcpy(out, head, 8);
	/* Data offsets count from the records' start. */
	for (uint32_t i = 0; i < u->nrec; i++) {
		struct cg_upd_rec r = u->rec[i];
		r.data += (uint32_t)recs;
		memcpy(out + 8 + i * sizeof r, &r, sizeof r);
	}
	memcpy(out + 8 + recs, u->data, u->ndata);
	return c;
}
