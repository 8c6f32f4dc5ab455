/* Device updates: a graph's kernel nodes that change between launches are
 * made device-updatable, and a kernel of cgraft's, the updater
 * (src/updater.cu), runs before every other node, applying the changes its
 * parameters carry. A launch whose kernel nodes changed then costs one host
 * update, of the updater, instead of one for each node changed. What the
 * updater's parameters hold (a blob): the record count, the records (the
 * node, where its bytes go, and where they lie in the blob), their bytes. */
#ifndef CG_DEVUPD_H
#define CG_DEVUPD_H

#include <cuda.h>

#include "base.h"
#include "op.h"

#define CG_UPD_CLASSES 8
/* The largest blob, the updater's parameters: CUDA's kernels take 32,764 bytes. */
#define CG_UPD_MAX 32000
/* The most updaters a graph gets, one after another, each with a blob of its
 * own: changes past CG_UPD_MAX a launch take more than one. */
#define CG_UPD_CHAIN 4

/* One change as the updater reads it (src/updater.cu's cg_upd_rec). */
struct cg_upd_rec {
	uint64_t node;  /* the node's device handle */
	uint32_t off;   /* where in its parameters */
	uint32_t size;  /* bytes */
	uint32_t data;  /* where they lie, from the records' start */
	uint32_t kind;  /* CG_UPD_GRID: three u32 of grid; CG_UPD_FIRST: first of its node */
};
#define CG_UPD_GRID 1u
#define CG_UPD_FIRST 2u

/* A blob being made; at, kept on the host only: where each record's
 * bytes lie in cgraft's bytes of its node (cg_upd_apply). */
struct cg_upd {
	struct cg_upd_rec rec[CG_UPD_MAX / sizeof(struct cg_upd_rec)];
	uint32_t at[CG_UPD_MAX / sizeof(struct cg_upd_rec)];
	uint8_t data[CG_UPD_MAX];
	uint32_t nrec, ndata;
};

/* Blob bytes of class c (0 to CG_UPD_CLASSES - 1). */
size_t cg_upd_class_size(int c) CG_HIDDEN;
/* The updater of class c, loaded once for the process (a library, in every
 * context); NULL where there is none: no image was built, or the driver
 * refused it. */
CUkernel cg_upd_kernel(int c) CG_HIDDEN;
/* cgraft's copy kernel (src/updater.cu): a linear copy between device
 * memory, as a node the updater changes; its one parameter is struct
 * cg_copy_args. NULL where there is no updater, or no such kernel. */
struct cg_copy_args {
	void *dst;
	const void *src;
	uint64_t n;
};
CUkernel cg_copy_kernel(void) CG_HIDDEN;

static inline void cg_upd_clear(struct cg_upd *u)
{
	u->nrec = u->ndata = 0;
}
/* Adds what takes a node from old to new parameter bytes and, where grid is
 * not NULL, to that grid: runs of differing 8-byte words of each parameter,
 * at the parameter's place in the kernel's buffer. The bytes are cgraft's
 * (op.h): the parameters one after another as ki sizes them, or, ki NULL,
 * the kernel's buffer itself (n bytes), as they are where ki is dense: then
 * the runs are the buffer's, across its parameters. The node's records are
 * u's from its nrec before the call to its nrec after (none: the same values
 * and grid). 0, or -ENOSPC when the largest blob cannot hold it: u is then
 * as before. */
int cg_upd_add(struct cg_upd *u, uint64_t node, const uint8_t *old, const uint8_t *new, const struct cg_kinfo *ki,
	       size_t n, const uint32_t *grid) CG_HIDDEN;
/* Copies the bytes of records from to to - 1, one node's (cg_upd_add), from
 * new to old, cgraft's bytes as cg_upd_add had them: old then holds new's
 * values, where they differed and nowhere else. */
void cg_upd_apply(const struct cg_upd *u, uint32_t from, uint32_t to, uint8_t *old, const uint8_t *new) CG_HIDDEN;
/* Writes the blob to out (what follows its data is left as it was: the
 * updater reads only its records) and returns its class, the smallest that
 * holds it; out has cg_upd_class_size(class) bytes. */
int cg_upd_finish(const struct cg_upd *u, uint8_t *out) CG_HIDDEN;

#endif
