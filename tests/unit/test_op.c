/* Unit tests of op shapes and values: what may differ between two replays
 * of one graph node, and what may not. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "cgraft_i.h"

static uint32_t sizes[] = { 8, 4 };
static const struct cg_kinfo ki = { .func = (void *)0x1000, .nparams = 2, .total = 12, .size = sizes };

static struct cg_op kernel(const void *func, unsigned grid, const uint8_t *params)
{
	struct cg_op op;
	memset(&op, 0, sizeof op);
	op.kind = CG_OP_KERNEL;
	op.stream = (cudaStream_t)0x10;
	op.nbytes = 12;
	op.u.k.func = func;
	op.u.k.grid = (dim3){ grid, 1, 1 };
	op.u.k.block = (dim3){ 128, 1, 1 };
	op.u.k.params = params;
	op.u.k.ki = &ki;
	return op;
}

static void test_kernel_shape(void **state)
{
	(void)state;
	uint8_t p1[12] = { 1 }, p2[12] = { 2 };
	struct cg_op a = kernel((void *)0x1000, 4, p1), b = kernel((void *)0x1000, 4, p2);
	assert_true(cg_op_same_shape(&a, &b));
	assert_int_equal(cg_op_shape_hash(&a), cg_op_shape_hash(&b));
	assert_false(cg_op_same_values(&a, &b)); /* parameters differ: a node update */
	struct cg_op c = kernel((void *)0x1000, 8, p1);
	assert_false(cg_op_same_shape(&a, &c)); /* grid differs: another graph */
	struct cg_op d = kernel((void *)0x2000, 4, p1);
	assert_false(cg_op_same_shape(&a, &d));
	struct cg_op e = a;
	e.stream = (cudaStream_t)0x20;
	assert_false(cg_op_same_shape(&a, &e)); /* streams make the edges */
	struct cg_op f = a;
	f.u.k.shmem = 256;
	assert_false(cg_op_same_shape(&a, &f));
}

static void test_memcpy_values(void **state)
{
	(void)state;
	struct cg_op a, b;
	memset(&a, 0, sizeof a);
	a.kind = CG_OP_MEMCPY;
	a.u.cp.kind = cudaMemcpyHostToDevice;
	a.u.cp.count = 64;
	a.u.cp.dst = (void *)0x100;
	a.u.cp.src = (void *)0x200;
	b = a;
	b.u.cp.src = (void *)0x300;
	assert_true(cg_op_same_shape(&a, &b));
	assert_false(cg_op_same_values(&a, &b));
	/* A pageable source is copied into staging at every replay. */
	a.u.cp.src_pageable = b.u.cp.src_pageable = 1;
	assert_true(cg_op_same_values(&a, &b));
	b.u.cp.count = 128;
	assert_false(cg_op_same_shape(&a, &b));
	b = a;
	b.u.cp.src_pageable = 0;
	assert_false(cg_op_same_shape(&a, &b));
}

static void test_events_are_shape(void **state)
{
	(void)state;
	struct cg_op a, b;
	memset(&a, 0, sizeof a);
	a.kind = CG_OP_RECORD;
	a.u.ev.event = (cudaEvent_t)0x1;
	b = a;
	b.u.ev.event = (cudaEvent_t)0x2;
	assert_false(cg_op_same_shape(&a, &b));
	b = a;
	b.kind = CG_OP_WAIT;
	assert_false(cg_op_same_shape(&a, &b));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kernel_shape),
		cmocka_unit_test(test_memcpy_values),
		cmocka_unit_test(test_events_are_shape),
	};
	return cmocka_run_group_tests_name("op", tests, NULL, NULL);
}
