/* Building ops as the normalisers would, for the unit tests: kernels with
 * their layout (struct cg_kinfo) and argument storage, events, waits. Each
 * op is finished by cg_op_finish() through the fake backend, which names the
 * context (fk_install() first), as the shim does. Whether cg_op_finish()
 * also sets the shape hash is the engine's business: tests that hand ops to
 * the pure parts (segments, periods, dags, learning) hash them with
 * ut_shaped(), as the engine does before it keeps an op. */
#ifndef CG_UNIT_H
#define CG_UNIT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "fake_backend.h"
#include "op.h"
#include "segment.h"

#define UT_MAX_PARAMS 8

/* A kernel: its layout, declared to the fake backend too. */
struct ut_kernel {
	struct cg_kinfo ki;
	uint32_t size[UT_MAX_PARAMS];
};

static inline void ut_kernel_init(struct ut_kernel *k, uintptr_t handle, uint32_t nparams, const uint32_t *sizes)
{
	memset(k, 0, sizeof *k);
	assert_true(nparams <= UT_MAX_PARAMS);
	k->ki.key = k->ki.handle = (const void *)handle;
	k->ki.nparams = nparams;
	k->ki.size = k->size;
	k->ki.hkind = CG_KH_FUNCTION;
	for (uint32_t i = 0; i < nparams; i++) {
		k->size[i] = sizes[i];
		k->ki.total += sizes[i];
	}
	fk_kernel(k->ki.handle, nparams, sizes, NULL);
}

/* A kernel launch with its arguments: parameter i is vals[i] (its low bytes
 * for a parameter under 8 bytes). Not to be copied: args point into it. */
struct ut_kop {
	struct cg_op op;
	void *argv[UT_MAX_PARAMS];
	uint64_t val[UT_MAX_PARAMS];
};

static inline struct cg_op *ut_finish(struct cg_op *op)
{
	enum cg_reason why = CG_WHY_COUNT;
	assert_int_equal(cg_op_finish(op, &why), 0);
	return op;
}

static inline struct cg_op *ut_shaped(struct cg_op *op)
{
	op->shape = cg_op_shape_hash(op);
	return op;
}

/* A launch of kn on s with these argument values, grid 1, block (block,1,1):
 * ops of other blocks have other shapes (a grid is a value). */
static inline struct cg_op *ut_kop(struct ut_kop *k, const struct ut_kernel *kn, CUstream s, unsigned block,
				   const uint64_t *vals)
{
	memset(k, 0, sizeof *k);
	k->op.kind = CG_OP_KERNEL;
	k->op.entry = CG_E_cuLaunchKernel;
	k->op.stream = s;
	k->op.nbytes = kn->ki.total;
	k->op.u.k.ki = &kn->ki;
	k->op.u.k.grid[0] = k->op.u.k.grid[1] = k->op.u.k.grid[2] = 1;
	k->op.u.k.block[0] = block;
	k->op.u.k.block[1] = k->op.u.k.block[2] = 1;
	for (uint32_t i = 0; i < kn->ki.nparams; i++) {
		k->val[i] = vals ? vals[i] : 0;
		k->argv[i] = &k->val[i];
	}
	k->op.u.k.args = k->argv;
	ut_finish(&k->op);
	return &k->op;
}

/* An event record or a stream wait. */
static inline struct cg_op *ut_evop(struct cg_op *op, enum cg_op_kind kind, CUstream s, CUevent e)
{
	memset(op, 0, sizeof *op);
	op->kind = (uint8_t)kind;
	op->entry = kind == CG_OP_RECORD ? CG_E_cudaEventRecord : CG_E_cudaStreamWaitEvent;
	op->stream = s;
	op->u.ev.event = e;
	ut_finish(op);
	return op;
}

/* Handles the tests make up. */
#define UT_STREAM(n) ((CUstream)(uintptr_t)(0x5000u + 0x10u * (n)))
#define UT_EVENT(n) ((CUevent)(uintptr_t)(0xe000u + 0x10u * (n)))

#endif
