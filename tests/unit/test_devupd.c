/* Unit tests of the updater's blobs (src/devupd.h): applied as the updater
 * applies them (src/updater.cu), they take each node's parameter buffer,
 * the kernel's layout with its padding, from the old values to the new, and
 * no byte else; a blob too large for the updater is refused whole. What a
 * held launch's parameters change is known by 64-byte stretches (CG_DIFF
 * bits, segment.h), found as they are copied: the blob and the variant's
 * copy then look at those stretches only. */
#include <stdlib.h>
#include <string.h>

#include "devupd.h"
#include "segment.h"
#include "unit.h"

/* A kernel of five parameters, the buffer's padding between them. */
static uint32_t sizes[] = { 8, 1, 2, 8, 4 };
static uint32_t offs[] = { 0, 8, 10, 16, 24 };
static struct cg_kinfo ki = { .nparams = 5, .size = sizes, .off = offs };
#define COMPACT 23
#define BUF 28

/* cgraft's bytes (parameters one after another) into the kernel's buffer. */
static void to_buffer(const uint8_t *compact, uint8_t *buf)
{
	size_t at = 0;
	for (uint32_t i = 0; i < ki.nparams; i++) {
		memcpy(buf + offs[i], compact + at, sizes[i]);
		at += sizes[i];
	}
}

struct node {
	uint8_t buf[BUF];
	uint32_t grid[3];
};

/* What the updater does with a blob, node handles being indices + 1. */
static void apply(const uint8_t *blob, struct node *nodes, int nnodes)
{
	uint32_t n;
	memcpy(&n, blob, 4);
	const uint8_t *recs = blob + 8;
	for (uint32_t i = 0; i < n; i++) {
		struct cg_upd_rec r;
		memcpy(&r, recs + i * sizeof r, sizeof r);
		assert_true(r.node >= 1 && r.node <= (uint64_t)nnodes);
		struct node *x = &nodes[r.node - 1];
		assert_int_equal(r.data % 8, 0); /* the device reads the bytes so */
		if (r.kind & CG_UPD_GRID) {
			memcpy(x->grid, recs + r.data, 12);
		} else {
			assert_true(r.off + r.size <= BUF);
			memcpy(x->buf + r.off, recs + r.data, r.size);
		}
	}
}

static struct cg_upd u;

static void test_roundtrip(void **state)
{
	(void)state;
	srand(7);
	for (int round = 0; round < 500; round++) {
		enum { NN = 6 };
		uint8_t old[NN][COMPACT], new[NN][COMPACT];
		struct node dev[NN], want[NN];
		cg_upd_clear(&u);
		for (int k = 0; k < NN; k++) {
			for (int b = 0; b < COMPACT; b++)
				old[k][b] = new[k][b] = (uint8_t)rand();
			int changes = rand() % 4;
			for (int c = 0; c < changes; c++)
				new[k][rand() % COMPACT] ^= (uint8_t)(1 + rand() % 255);
			/* The padding holds what it holds: the updater leaves it. */
			memset(dev[k].buf, 0xA5, BUF);
			to_buffer(old[k], dev[k].buf);
			memcpy(&want[k], &dev[k], sizeof want[k]);
			to_buffer(new[k], want[k].buf);
			uint32_t g[3] = { (uint32_t)rand(), 1, 1 };
			memset(dev[k].grid, 0, 12);
			memcpy(want[k].grid, dev[k].grid, 12);
			int grid = rand() % 5 == 0;
			if (grid)
				memcpy(want[k].grid, g, 12);
			assert_int_equal(cg_upd_add(&u, (uint64_t)k + 1, old[k], new[k], &ki, COMPACT, grid ? g : NULL, CG_DIFF_ALL), 0);
		}
		uint8_t blob[CG_UPD_MAX];
		int c = cg_upd_finish(&u, blob);
		assert_true(c >= 0 && c < CG_UPD_CLASSES);
		size_t need = 8 + u.nrec * sizeof(struct cg_upd_rec) + u.ndata;
		assert_true(cg_upd_class_size(c) >= need);
		assert_true(c == 0 || cg_upd_class_size(c - 1) < need);
		apply(blob, dev, NN);
		for (int k = 0; k < NN; k++)
			assert_memory_equal(&dev[k], &want[k], sizeof dev[k]);
	}
}

/* A wide parameter (PyTorch's 648-byte structs), changed in a few places
 * anywhere, its last bytes short of a word included: the blob takes it to
 * the new bytes, and equal stretches make no record. */
static void test_wide(void **state)
{
	(void)state;
	enum { W = 653 };
	static uint32_t wsize[] = { W }, woff[] = { 0 };
	static const struct cg_kinfo wki = { .nparams = 1, .size = wsize, .off = woff };
	srand(11);
	for (int round = 0; round < 2000; round++) {
		uint8_t old[W], new[W], dev[W];
		for (int b = 0; b < W; b++)
			old[b] = new[b] = (uint8_t)rand();
		int changes = rand() % 6;
		for (int c = 0; c < changes; c++) {
			int at = rand() % 3 ? rand() % W : W - 1 - rand() % 8;
			new[at] ^= (uint8_t)(1 + rand() % 255);
		}
		int changed = memcmp(old, new, W) != 0; /* two changes may undo each other */
		memcpy(dev, old, W);
		cg_upd_clear(&u);
		const struct cg_kinfo *k = round % 2 ? &wki : NULL;
		assert_int_equal(cg_upd_add(&u, 1, old, new, k, W, NULL, CG_DIFF_ALL), 0);
		assert_int_equal(u.nrec > 0, changed);
		assert_true(u.nrec <= (uint32_t)changes);
		uint8_t blob[CG_UPD_MAX];
		cg_upd_finish(&u, blob);
		uint32_t n;
		memcpy(&n, blob, 4);
		for (uint32_t i = 0; i < n; i++) {
			struct cg_upd_rec r;
			memcpy(&r, blob + 8 + i * sizeof r, sizeof r);
			assert_true(r.off + r.size <= W && r.size <= 8 * (uint32_t)changes);
			memcpy(dev + r.off, blob + 8 + r.data, r.size);
		}
		assert_memory_equal(dev, new, W);
	}
}

/* A layout without padding (ki->dense): cgraft's bytes are the buffer's, and
 * a changed word that spans two parameters is one record, not one for each. */
static void test_dense(void **state)
{
	(void)state;
	static uint32_t dsize[] = { 8, 4, 4, 4, 8, 2 }, doff[] = { 0, 8, 12, 16, 20, 28 };
	static const struct cg_kinfo dki = { .nparams = 6, .size = dsize, .off = doff, .total = 30, .dense = 1 };
	enum { D = 30 };
	uint8_t old[D], new[D], dev[D];
	for (int b = 0; b < D; b++)
		old[b] = new[b] = (uint8_t)(b * 37 + 1);
	new[9] ^= 0x5A;  /* the second parameter */
	new[13] ^= 0x3C; /* the third: the same 8-byte word */
	cg_upd_clear(&u);
	assert_int_equal(cg_upd_add(&u, 1, old, new, &dki, D, NULL, CG_DIFF_ALL), 0);
	assert_int_equal(u.nrec, 1);
	srand(13);
	for (int round = 0; round < 2000; round++) {
		for (int b = 0; b < D; b++)
			old[b] = new[b] = (uint8_t)rand();
		int changes = rand() % 5;
		for (int c = 0; c < changes; c++)
			new[rand() % D] ^= (uint8_t)(1 + rand() % 255);
		memcpy(dev, old, D);
		cg_upd_clear(&u);
		assert_int_equal(cg_upd_add(&u, 1, old, new, &dki, D, NULL, CG_DIFF_ALL), 0);
		assert_true(u.nrec <= (uint32_t)changes);
		uint8_t blob[CG_UPD_MAX];
		cg_upd_finish(&u, blob);
		for (uint32_t i = 0; i < u.nrec; i++) {
			struct cg_upd_rec r;
			memcpy(&r, blob + 8 + i * sizeof r, sizeof r);
			assert_true(r.off + r.size <= D);
			memcpy(dev + r.off, blob + 8 + r.data, r.size);
		}
		assert_memory_equal(dev, new, D);
	}
}

/* A node's first record is flagged, and only it: the updater gives each
 * node to one thread. */
static void test_first_flags(void **state)
{
	(void)state;
	uint8_t a[COMPACT] = { 0 }, b[COMPACT];
	memset(b, 1, sizeof b);
	cg_upd_clear(&u);
	uint32_t g[3] = { 2, 1, 1 };
	assert_int_equal(cg_upd_add(&u, 1, a, b, &ki, COMPACT, g, CG_DIFF_ALL), 0);
	assert_int_equal(cg_upd_add(&u, 2, a, b, NULL, COMPACT, NULL, CG_DIFF_ALL), 0);
	assert_int_equal(cg_upd_add(&u, 3, a, a, &ki, COMPACT, NULL, CG_DIFF_ALL), 0);
	/* node 1: five parameters and a grid; node 2: one run of the buffer */
	assert_int_equal(u.nrec, 7);
	for (uint32_t i = 0; i < u.nrec; i++)
		assert_int_equal(!!(u.rec[i].kind & CG_UPD_FIRST), i == 0 || i == 6);
	assert_true(u.rec[5].kind & CG_UPD_GRID);
	assert_int_equal(u.rec[6].off, 0);
	assert_int_equal(u.rec[6].size, COMPACT);
}

/* Past the largest blob, a node's changes are refused whole. */
static void test_full(void **state)
{
	(void)state;
	static uint8_t a[4096], b[4096];
	memset(b, 0xff, sizeof b);
	cg_upd_clear(&u);
	int k = 0;
	while (cg_upd_add(&u, (uint64_t)k + 1, a, b, NULL, sizeof a, NULL, CG_DIFF_ALL) == 0)
		k++;
	assert_true(k >= 6);
	uint32_t nrec = u.nrec, ndata = u.ndata;
	assert_int_equal(cg_upd_add(&u, 99, a, b, NULL, sizeof a, NULL, CG_DIFF_ALL), -ENOSPC);
	assert_int_equal(u.nrec, nrec);
	assert_int_equal(u.ndata, ndata);
	uint8_t blob[CG_UPD_MAX];
	assert_int_equal(cg_upd_finish(&u, blob), CG_UPD_CLASSES - 1);
}

/* A blob's class: the smallest that holds it, at each class's edge; each
 * class at most twice the one below. */
static void test_classes(void **state)
{
	(void)state;
	static uint8_t blob[CG_UPD_MAX];
	for (int c = 0; c < CG_UPD_CLASSES; c++) {
		size_t edge = cg_upd_class_size(c);
		assert_true(c == 0 || edge > cg_upd_class_size(c - 1));
		assert_true(c == 0 || edge <= 2 * cg_upd_class_size(c - 1));
		size_t needs[] = { edge - 1, edge, edge + 1 };
		for (int k = 0; k < 3; k++) {
			size_t need = needs[k];
			if (need < 8 || need > CG_UPD_MAX)
				continue;
			cg_upd_clear(&u);
			u.ndata = (uint32_t)(need - 8);
			int got = cg_upd_finish(&u, blob);
			assert_true(cg_upd_class_size(got) >= need);
			assert_true(got == 0 || cg_upd_class_size(got - 1) < need);
		}
	}
}

/* A kernel of eleven parameters whose cgraft bytes run past the last
 * stretch's start (3,968): a 4-byte and an 8-byte parameter across a
 * stretch's edge, a 700-byte one across eleven stretches, bytes of every
 * stretch. */
static uint32_t xsize[] = { 4, 8, 4, 46, 4, 8, 50, 8, 700, 3400, 4 };
static uint32_t xoff[] = { 0, 4, 12, 16, 62, 66, 74, 124, 132, 832, 4232 };
static struct cg_kinfo xki = { .handle = &xki, .nparams = 11, .size = xsize, .off = xoff, .total = 4236 };
#define XN 4236
#define XP 11

/* The bits a and b must have: a parameter of 4 or 8 bytes that differs
 * names every stretch it lies in, a larger one those where its bytes
 * differ (the last stretch: every byte from it on). */
static uint64_t want_bits(const uint8_t *a, const uint8_t *b)
{
	uint64_t d = 0;
	for (uint32_t i = 0; i < XP; i++) {
		uint32_t o = xoff[i], n = xsize[i];
		for (uint32_t j = o; j < o + n; j++) {
			if (a[j] == b[j])
				continue;
			uint32_t c = j / CG_DIFF_CHUNK;
			d |= n <= 8 ? cg_diff_bits(o, n) : 1ull << (c < CG_DIFF_CHUNKS - 1 ? c : CG_DIFF_CHUNKS - 1);
		}
	}
	return d;
}

/* What cg_seg_push finds: a bit for each stretch whose bytes differ (with a
 * small parameter's, each stretch it lies in), and for no other;
 * CG_DIFF_OTHER where the grid differs, everything for another kernel. The blob made from those bits alone and the variant's copy made
 * from them take the old bytes to the new. */
static void test_diff_bits(void **state)
{
	(void)state;
	static uint8_t old[XN], new[XN], dev[XN], par[XP][3400];
	srand(17);
	for (int round = 0; round < 400; round++) {
		for (int b = 0; b < XN; b++)
			old[b] = new[b] = (uint8_t)rand();
		int changes = rand() % 6;
		for (int c = 0; c < changes; c++) {
			/* near a stretch's edge half the time */
			int at = rand() % 2 ? rand() % XN : (int)(CG_DIFF_CHUNK * (1 + rand() % 64)) - 1 + rand() % 2;
			if (at >= 0 && at < XN)
				new[at] ^= (uint8_t)(1 + rand() % 255);
		}
		struct cg_op op, exp;
		void *argv[XP];
		memset(&op, 0, sizeof op);
		op.kind = CG_OP_KERNEL;
		op.nbytes = XN;
		op.u.k.ki = &xki;
		op.u.k.grid[0] = op.u.k.grid[1] = op.u.k.grid[2] = 1;
		op.u.k.block[0] = 32;
		op.u.k.block[1] = op.u.k.block[2] = 1;
		for (uint32_t i = 0, at = 0; i < XP; at += xsize[i], i++) {
			memcpy(par[i], new + at, xsize[i]);
			argv[i] = par[i];
		}
		op.u.k.args = argv;
		exp = op;
		exp.u.k.args = NULL;
		exp.u.k.params = old;
		int regrid = round % 5 == 0, other = round % 23 == 0;
		if (regrid)
			op.u.k.grid[0] = 2;
		if (other)
			op.u.k.block[0] = 64;
		struct cg_seg seg;
		memset(&seg, 0, sizeof seg);
		uint64_t d = 0;
		assert_int_equal(cg_seg_push(&seg, &op, 0, &exp, &d), 0);
		assert_memory_equal(seg.ops[0].u.k.params, new, XN);
		if (other) {
			assert_true(d == CG_DIFF_ALL);
		} else {
			assert_true((d & ~CG_DIFF_OTHER) == want_bits(old, new));
			assert_int_equal(!!(d & CG_DIFF_OTHER), regrid);
		}
		/* The blob from these bits. */
		cg_upd_clear(&u);
		assert_int_equal(cg_upd_add(&u, 1, old, new, round % 2 ? &xki : NULL, XN, NULL, d), 0);
		assert_true(u.nrec <= (uint32_t)changes);
		static uint8_t blob[CG_UPD_MAX];
		cg_upd_finish(&u, blob);
		memcpy(dev, old, XN);
		for (uint32_t i = 0; i < u.nrec; i++) {
			struct cg_upd_rec r;
			memcpy(&r, blob + 8 + i * sizeof r, sizeof r);
			memcpy(dev + r.off, blob + 8 + r.data, r.size); /* xki is dense: the offsets are the same */
		}
		assert_memory_equal(dev, new, XN);
		/* The variant's copy from these bits. */
		memcpy(dev, old, XN);
		cg_diff_copy(dev, new, XN, d);
		assert_memory_equal(dev, new, XN);
		cg_seg_free(&seg);
	}
}

/* The bits are all that is looked at: a stretch they leave out makes no
 * record and is not copied, however its bytes differ. */
static void test_diff_only(void **state)
{
	(void)state;
	static uint8_t old[XN], new[XN], dev[XN];
	memset(old, 1, sizeof old);
	memcpy(new, old, sizeof new);
	new[5] = 2;          /* stretch 0 */
	new[64 * 7 + 3] = 2; /* stretch 7 */
	new[XN - 1] = 2;     /* the last */
	uint64_t d = cg_diff_bytes(old, new, 0, XN);
	assert_true(d == (1ull | 1ull << 7 | 1ull << (CG_DIFF_CHUNKS - 1)));
	cg_upd_clear(&u);
	assert_int_equal(cg_upd_add(&u, 1, old, new, NULL, XN, NULL, 1ull << 7), 0);
	assert_int_equal(u.nrec, 1);
	assert_int_equal(u.rec[0].off, 64 * 7);
	memcpy(dev, old, XN);
	cg_diff_copy(dev, new, XN, 1ull << 7 | 1ull << (CG_DIFF_CHUNKS - 1));
	assert_int_equal(dev[5], 1);
	assert_int_equal(dev[64 * 7 + 3], 2);
	assert_int_equal(dev[XN - 1], 2);
	/* Stretch 62 and on are one bit: bytes past it are looked at with it. */
	assert_int_equal(cg_diff_next(1ull << (CG_DIFF_CHUNKS - 1), 0, 0, XN), 64 * (CG_DIFF_CHUNKS - 1));
	assert_int_equal(cg_diff_next(1ull << 7, 100, 0, XN), 64 * 7 - 100);
	assert_int_equal(cg_diff_next(1ull << 7, 0, 64 * 8, XN), XN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_wide),
		cmocka_unit_test(test_dense),
		cmocka_unit_test(test_first_flags),
		cmocka_unit_test(test_full),
		cmocka_unit_test(test_classes),
		cmocka_unit_test(test_diff_bits),
		cmocka_unit_test(test_diff_only),
	};
	return cmocka_run_group_tests_name("devupd", tests, NULL, NULL);
}
