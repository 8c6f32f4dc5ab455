/* Unit tests of the updater's blobs (src/devupd.h): applied as the updater
 * applies them (src/updater.cu), they take each node's parameter buffer,
 * the kernel's layout with its padding, from the old values to the new, and
 * no byte else; a blob too large for the updater is refused whole. A
 * node's records, applied to cgraft's own bytes (cg_upd_apply), take them
 * to the new ones, writing where they differ and nowhere else. */
#include <stdlib.h>
#include <string.h>

#include "devupd.h"
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

/* cg_upd_add, and its records applied to cgraft's bytes as the pick keeps
 * them: old becomes new, and bytes in no record are not written (a buffer
 * of junk keeps them). */
static int add_checked(uint64_t node, const uint8_t *old, const uint8_t *new, const struct cg_kinfo *k, size_t n,
		       const uint32_t *grid)
{
	uint8_t kept[4096], junk[4096], mask[4096] = { 0 };
	assert_true(n <= sizeof kept);
	uint32_t from = u.nrec;
	int rc = cg_upd_add(&u, node, old, new, k, n, grid);
	if (rc)
		return rc;
	memcpy(kept, old, n);
	cg_upd_apply(&u, from, u.nrec, kept, new);
	assert_memory_equal(kept, new, n);
	for (size_t b = 0; b < n; b++)
		junk[b] = (uint8_t)(b * 131 + 7);
	memcpy(kept, junk, n);
	cg_upd_apply(&u, from, u.nrec, kept, new);
	for (uint32_t r = from; r < u.nrec; r++)
		if (!(u.rec[r].kind & CG_UPD_GRID)) {
			assert_true(u.at[r] + u.rec[r].size <= n);
			memset(mask + u.at[r], 1, u.rec[r].size);
		}
	for (size_t b = 0; b < n; b++)
		assert_int_equal(kept[b], mask[b] ? new[b] : junk[b]);
	return 0;
}

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
			assert_int_equal(add_checked((uint64_t)k + 1, old[k], new[k], &ki, COMPACT, grid ? g : NULL), 0);
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
 * the new bytes in runs of its 8-byte words, and equal stretches make no
 * record. */
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
		assert_int_equal(add_checked(1, old, new, k, W, NULL), 0);
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
			assert_int_equal(r.off % 8, 0); /* runs of the parameter's words */
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
	assert_int_equal(add_checked(1, old, new, &dki, D, NULL), 0);
	assert_int_equal(u.nrec, 1);
	assert_int_equal(u.at[0], 8);
	assert_int_equal(u.rec[0].size, 8);
	srand(13);
	for (int round = 0; round < 2000; round++) {
		for (int b = 0; b < D; b++)
			old[b] = new[b] = (uint8_t)rand();
		int changes = rand() % 5;
		for (int c = 0; c < changes; c++)
			new[rand() % D] ^= (uint8_t)(1 + rand() % 255);
		memcpy(dev, old, D);
		cg_upd_clear(&u);
		assert_int_equal(add_checked(1, old, new, &dki, D, NULL), 0);
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
	assert_int_equal(add_checked(1, a, b, &ki, COMPACT, g), 0);
	assert_int_equal(add_checked(2, a, b, NULL, COMPACT, NULL), 0);
	uint32_t nrec = u.nrec;
	assert_int_equal(add_checked(3, a, a, &ki, COMPACT, NULL), 0);
	assert_int_equal(u.nrec, nrec); /* nothing changed: no record */
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
	while (add_checked((uint64_t)k + 1, a, b, NULL, sizeof a, NULL) == 0)
		k++;
	assert_true(k >= 6);
	uint32_t nrec = u.nrec, ndata = u.ndata;
	assert_int_equal(cg_upd_add(&u, 99, a, b, NULL, sizeof a, NULL), -ENOSPC);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_wide),
		cmocka_unit_test(test_dense),
		cmocka_unit_test(test_first_flags),
		cmocka_unit_test(test_full),
		cmocka_unit_test(test_classes),
	};
	return cmocka_run_group_tests_name("devupd", tests, NULL, NULL);
}
