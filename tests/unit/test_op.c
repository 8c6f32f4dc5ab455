/* Unit tests of normalised ops (src/op.h): what must be equal for two ops to
 * share a graph node (the shape, and its hash), what a node update may change
 * (the values), how the normalisers classify calls, and the eager submission
 * of a held op through the backend. */
#include <errno.h>
#include <stdlib.h>

#include "unit.h"
#include "options.h"

#define DEV_LO 0x10000000u /* fake device memory */
#define PIN_LO 0x20000000u /* fake pinned host memory */
#define RANGE (1u << 24)

static uint8_t pageable[1 << 12];

static int setup(void **state)
{
	(void)state;
	fk_install();
	fk_device_range(DEV_LO, RANGE);
	fk_host_range(PIN_LO, RANGE);
	return 0;
}

static const uint32_t sz_pi[] = { 8, 4 }; /* a pointer and an int */

/* Two launches of one kernel with other arguments share a node; anything of
 * the launch configuration, the stream or the context makes another node. */
static void test_kernel_shape(void **state)
{
	(void)state;
	struct ut_kernel k1, k2;
	ut_kernel_init(&k1, 0x1000, 2, sz_pi);
	ut_kernel_init(&k2, 0x2000, 2, sz_pi);
	struct cg_seg seg = { 0 };
	struct ut_kop a, b;
	/* Values are compared on cgraft's copy: push them into a segment. */
	cg_seg_push(&seg, ut_shaped(ut_kop(&a, &k1, UT_STREAM(1), 4, (uint64_t[]){ DEV_LO, 1 })), 0, NULL, NULL);
	cg_seg_push(&seg, ut_shaped(ut_kop(&b, &k1, UT_STREAM(1), 4, (uint64_t[]){ DEV_LO + 64, 1 })), 0, NULL,
		    NULL);
	cg_seg_push(&seg, ut_shaped(ut_kop(&b, &k1, UT_STREAM(1), 4, (uint64_t[]){ DEV_LO, 1 })), 0, NULL, NULL);
	const struct cg_op *o = seg.ops;
	assert_true(cg_op_same_shape(&o[0], &o[1]));
	assert_int_equal(cg_op_shape_hash(&o[0]), cg_op_shape_hash(&o[1]));
	assert_false(cg_op_same_values(&o[0], &o[1]));         /* a node update */
	assert_true(cg_op_same_values(&o[0], &o[2]));
	assert_int_not_equal(cg_op_values_hash(&o[0]), cg_op_values_hash(&o[1]));
	assert_int_equal(cg_op_values_hash(&o[0]), cg_op_values_hash(&o[2]));

	struct cg_op c;
	/* A grid is a value (a node update), but for launch attributes; an
	 * invalid one no shape: its launch fails. */
	c = o[0];
	c.u.k.grid[0] = 8;
	c.shape = cg_op_shape_hash(&c);
	assert_true(cg_op_same_shape(&o[0], &c));
	assert_int_equal(c.shape, o[0].shape);
	assert_false(cg_op_same_values(&o[0], &c));
	assert_int_not_equal(cg_op_values_hash(&o[0]), cg_op_values_hash(&c));
	c.u.k.grid[1] = 65536;
	assert_false(cg_op_same_shape(&o[0], &c));
	c.u.k.grid[1] = 1;
	c.u.k.grid[0] = 0;
	assert_false(cg_op_same_shape(&o[0], &c));
	c = o[0];
	c.u.k.grid[0] = 8;
	c.u.k.nattr = 1;
	c.u.k.attr = &(CUlaunchAttribute){ .id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE, .value.cooperative = 1 };
	struct cg_op d = c;
	d.u.k.grid[0] = 4;
	assert_false(cg_op_same_shape(&c, &d));
	assert_int_not_equal(cg_op_shape_hash(&c), cg_op_shape_hash(&d));
	/* So are the block, the shared memory and the function (a node update
	 * gives the node another kernel), where the grid is. */
	c = o[0];
	c.u.k.block[2] = 2;
	c.shape = cg_op_shape_hash(&c);
	assert_true(cg_op_same_shape(&o[0], &c));
	assert_false(cg_op_same_kernel(&o[0], &c));
	assert_false(cg_op_same_values(&o[0], &c));
	assert_int_not_equal(cg_op_values_hash(&o[0]), cg_op_values_hash(&c));
	c = o[0];
	c.u.k.shmem = 256;
	c.shape = cg_op_shape_hash(&c);
	assert_true(cg_op_same_shape(&o[0], &c));
	assert_false(cg_op_same_values(&o[0], &c));
	assert_int_not_equal(cg_op_values_hash(&o[0]), cg_op_values_hash(&c));
	c = o[0];
	c.u.k.ki = &k2.ki;
	c.shape = cg_op_shape_hash(&c);
	assert_true(cg_op_same_shape(&o[0], &c));
	assert_false(cg_op_same_values(&o[0], &c));
	assert_int_not_equal(cg_op_values_hash(&o[0]), cg_op_values_hash(&c));
	/* Another parameter size is other work: shape. */
	struct ut_kernel k3;
	ut_kernel_init(&k3, 0x3000, 1, sz_pi);
	c = o[0];
	c.u.k.ki = &k3.ki;
	c.nbytes = k3.ki.total;
	c.shape = cg_op_shape_hash(&c);
	assert_false(cg_op_same_shape(&o[0], &c));
	assert_int_not_equal(c.shape, o[0].shape);
	c = o[0];
	c.u.k.ki = &k2.ki;
	c.shape = cg_op_shape_hash(&c);
	/* Not for a kernel compiled with a cluster: its grid, its block and
	 * its function are shape. */
	k2.ki.grid_fixed = 1;
	struct cg_op e = c;
	e.u.k.block[2] = 2;
	assert_false(cg_op_same_shape(&c, &e));
	assert_int_not_equal(cg_op_shape_hash(&c), cg_op_shape_hash(&e));
	assert_false(cg_op_same_shape(&o[0], &c));
	k2.ki.grid_fixed = 0;
	c = o[0];
	c.stream = UT_STREAM(2); /* streams make the edges */
	c.shape = cg_op_shape_hash(&c);
	assert_false(cg_op_same_shape(&o[0], &c));
	c = o[0];
	c.ctx = (CUcontext)(uintptr_t)0x1234;
	c.shape = cg_op_shape_hash(&c);
	assert_false(cg_op_same_shape(&o[0], &c));
	c = o[0];
	c.flags |= CG_F_PACKED;
	c.shape = cg_op_shape_hash(&c);
	assert_false(cg_op_same_shape(&o[0], &c));
	/* A stale hash alone does not make two ops alike. */
	c = o[0];
	c.u.k.grid[1] = 70000;
	assert_int_equal(c.shape, o[0].shape);
	assert_false(cg_op_same_shape(&o[0], &c));
	cg_seg_free(&seg);
}

/* Launch attributes are part of the shape, compared by value. */
static void test_kernel_attributes(void **state)
{
	(void)state;
	struct ut_kernel k;
	ut_kernel_init(&k, 0x1100, 2, sz_pi);
	CUlaunchAttribute pri1 = { .id = CU_LAUNCH_ATTRIBUTE_PRIORITY, .value = { .priority = 1 } };
	CUlaunchAttribute pri2 = { .id = CU_LAUNCH_ATTRIBUTE_PRIORITY, .value = { .priority = 2 } };
	struct ut_kop a, b;
	ut_kop(&a, &k, UT_STREAM(1), 1, NULL);
	ut_kop(&b, &k, UT_STREAM(1), 1, NULL);
	a.op.u.k.nattr = b.op.u.k.nattr = 1;
	a.op.u.k.attr = &pri1;
	b.op.u.k.attr = &pri1;
	a.op.shape = cg_op_shape_hash(&a.op);
	b.op.shape = cg_op_shape_hash(&b.op);
	assert_true(cg_op_same_shape(&a.op, &b.op));
	b.op.u.k.attr = &pri2;
	assert_false(cg_op_same_shape(&a.op, &b.op));
}

/* 1D copies: the addresses are values, and between device memory the size.
 * 2D copies cannot be updated: their addresses are part of the shape. */
static void test_copy_shape_and_values(void **state)
{
	(void)state;
	struct cg_op a, b;
	enum cg_reason why;
	assert_int_equal(cg_op_from_rt_memcpy_async(&a, 0, &why, (void *)(uintptr_t)DEV_LO,
						    (void *)(uintptr_t)(DEV_LO + 4096), 256, cudaMemcpyDefault,
						    (cudaStream_t)UT_STREAM(1)), 0);
	ut_shaped(ut_finish(&a));
	assert_int_equal(cg_op_from_rt_memcpy_async(&b, 0, &why, (void *)(uintptr_t)(DEV_LO + 8192),
						    (void *)(uintptr_t)(DEV_LO + 4096), 256, cudaMemcpyDeviceToDevice,
						    (cudaStream_t)UT_STREAM(1)), 0);
	ut_shaped(ut_finish(&b));
	assert_int_equal(a.kind, CG_OP_COPY);
	assert_int_equal(a.flags, 0);
	assert_true(cg_op_same_shape(&a, &b));
	assert_false(cg_op_same_values(&a, &b));
	b.u.cp.dst = a.u.cp.dst;
	assert_true(cg_op_same_values(&a, &b));
	/* Between device memory, the size is a value too: one node of one
	 * dimension takes any. */
	struct cg_op c = a;
	c.u.cp.width = 512;
	c.u.cp.dpitch = c.u.cp.spitch = 512;
	c.shape = cg_op_shape_hash(&c);
	assert_true(cg_op_same_shape(&a, &c));
	assert_int_equal(a.shape, c.shape);
	assert_false(cg_op_same_values(&a, &c));
	assert_int_not_equal(cg_op_values_hash(&a), cg_op_values_hash(&c));
	/* From or to host memory (staged, or landing in cgraft's buffer) it
	 * is shape. */
	struct cg_op h, h2;
	assert_int_equal(cg_op_from_rt_memcpy_async(&h, 0, &why, (void *)(uintptr_t)DEV_LO, (void *)(uintptr_t)PIN_LO,
						    256, cudaMemcpyDefault, (cudaStream_t)UT_STREAM(1)), 0);
	ut_shaped(ut_finish(&h));
	h2 = h;
	h2.u.cp.width = h2.u.cp.dpitch = h2.u.cp.spitch = 512;
	h2.shape = cg_op_shape_hash(&h2);
	assert_false(cg_op_same_shape(&h, &h2));
	assert_int_not_equal(h.shape, h2.shape);

	/* 2D: same extent, other addresses: another node. */
	struct cg_op d, e;
	assert_int_equal(cg_op_from_rt_memcpy2d_async(&d, 0, &why, (void *)(uintptr_t)DEV_LO, 512,
						      (void *)(uintptr_t)(DEV_LO + 65536), 512, 256, 4,
						      cudaMemcpyDefault, (cudaStream_t)UT_STREAM(1)), 0);
	ut_shaped(ut_finish(&d));
	assert_int_equal(cg_op_from_rt_memcpy2d_async(&e, 0, &why, (void *)(uintptr_t)(DEV_LO + 4096), 512,
						      (void *)(uintptr_t)(DEV_LO + 65536), 512, 256, 4,
						      cudaMemcpyDefault, (cudaStream_t)UT_STREAM(1)), 0);
	ut_shaped(ut_finish(&e));
	assert_false(cg_op_same_shape(&d, &e));
	assert_int_not_equal(d.shape, e.shape);
	e.u.cp.dst = d.u.cp.dst;
	e.shape = cg_op_shape_hash(&e);
	assert_true(cg_op_same_shape(&d, &e));
}

/* The copy's sides and its host synchronisation come from where the memory
 * lives (the fake's pointer attributes). */
static void test_copy_classification(void **state)
{
	(void)state;
	struct cg_op op;
	enum cg_reason why;
	void *dev = (void *)(uintptr_t)DEV_LO, *pin = (void *)(uintptr_t)PIN_LO;

	/* Async from pageable memory: read at the call, a snapshot when held. */
	assert_int_equal(cg_op_from_rt_memcpy_async(&op, 0, &why, dev, pageable, 128, cudaMemcpyHostToDevice,
						    (cudaStream_t)UT_STREAM(1)), 0);
	assert_int_equal(op.flags, CG_F_SRC_PAGEABLE);
	assert_true(op.u.cp.src_host);
	assert_false(op.u.cp.dst_host);
	/* Its address is no value: the bytes are staged at every replay. */
	ut_shaped(ut_finish(&op));
	struct cg_op other = op;
	other.u.cp.src = pageable + 256;
	assert_true(cg_op_same_values(&op, &other));
	assert_int_equal(cg_op_values_hash(&op), cg_op_values_hash(&other));

	/* A blocking copy to pageable memory: the host waits for it. A graph
	 * lands it in pinned memory, copied out after the wait: its address is
	 * no value either. */
	assert_int_equal(cg_op_from_rt_memcpy(&op, 0, &why, pageable, dev, 128, cudaMemcpyDeviceToHost), 0);
	assert_int_equal(op.flags, CG_F_DST_PAGEABLE | CG_F_HOST_WAITS | CG_F_LANDS_PINNED);
	assert_ptr_equal(op.stream, CU_STREAM_LEGACY);
	ut_shaped(ut_finish(&op));
	other = op;
	other.u.cp.dst = pageable + 256;
	assert_true(cg_op_same_values(&op, &other));
	assert_int_equal(cg_op_values_hash(&op), cg_op_values_hash(&other));
	other.u.cp.src = (char *)dev + 256;
	assert_false(cg_op_same_values(&op, &other));
	/* A 2D one lands in place. */
	assert_int_equal(cg_op_from_rt_memcpy2d(&op, 0, &why, pageable, 64, dev, 64, 32, 2, cudaMemcpyDeviceToHost), 0);
	assert_int_equal(op.flags, CG_F_DST_PAGEABLE | CG_F_HOST_WAITS);
	/* A pageable source the host waits on is read by the graph itself: its
	 * address is a value again. */
	assert_int_equal(cg_op_from_rt_memcpy(&op, 0, &why, dev, pageable, 128, cudaMemcpyHostToDevice), 0);
	assert_int_equal(op.flags, CG_F_SRC_PAGEABLE | CG_F_HOST_WAITS);
	ut_shaped(ut_finish(&op));
	other = op;
	other.u.cp.src = pageable + 256;
	assert_false(cg_op_same_values(&op, &other));

	/* Pinned memory: no pageable flags, async stays async. */
	assert_int_equal(cg_op_from_rt_memcpy_async(&op, 1, &why, pin, dev, 128, cudaMemcpyDeviceToHost, NULL), 0);
	assert_int_equal(op.flags, 0);
	assert_true(op.u.cp.dst_host);
	assert_ptr_equal(op.stream, CU_STREAM_PER_THREAD); /* NULL through a per-thread entry */
	/* A blocking device-to-device copy does not wait. */
	assert_int_equal(cg_op_from_rt_memcpy(&op, 0, &why, dev, (char *)dev + 4096, 128, cudaMemcpyDefault), 0);
	assert_int_equal(op.flags, 0);

	/* Refused: a kind that disagrees, host to host, a large pageable source. */
	why = CG_WHY_COUNT;
	assert_int_equal(cg_op_from_rt_memcpy_async(&op, 0, &why, dev, (char *)dev + 64, 64, cudaMemcpyHostToDevice,
						    NULL), -ENOTSUP);
	assert_int_equal(why, CG_WHY_MEMCPY_KIND);
	assert_int_equal(cg_op_from_rt_memcpy_async(&op, 0, &why, pin, pageable, 64, cudaMemcpyDefault, NULL),
			 -ENOTSUP);
	static uint8_t big[(1 << 20) + 1];
	assert_int_equal(cg_op_from_rt_memcpy_async(&op, 0, &why, dev, big, sizeof big, cudaMemcpyDefault, NULL),
			 -ENOTSUP);
	assert_int_equal(cg_op_from_rt_memcpy_async(&op, 0, &why, dev, pageable, 0, cudaMemcpyDefault, NULL),
			 -EINVAL);
}

/* A 1D memset's address and value are values; a 2D memset's are shape. */
static void test_memset(void **state)
{
	(void)state;
	struct cg_op a, b;
	enum cg_reason why;
	void *dev = (void *)(uintptr_t)DEV_LO;
	assert_int_equal(cg_op_from_rt_memset_async(&a, 0, &why, dev, 0, 1024, (cudaStream_t)UT_STREAM(1)), 0);
	ut_shaped(ut_finish(&a));
	assert_int_equal(cg_op_from_rt_memset_async(&b, 0, &why, (char *)dev + 4096, 7, 1024,
						    (cudaStream_t)UT_STREAM(1)), 0);
	ut_shaped(ut_finish(&b));
	assert_true(cg_op_same_shape(&a, &b));
	assert_false(cg_op_same_values(&a, &b));
	b.u.ms.dst = a.u.ms.dst;
	assert_false(cg_op_same_values(&a, &b)); /* the value still differs */
	b.u.ms.value = a.u.ms.value;
	assert_true(cg_op_same_values(&a, &b));

	assert_int_equal(cg_op_from_rt_memset2d_async(&a, 0, &why, dev, 512, 1, 256, 4, (cudaStream_t)UT_STREAM(1)),
			 0);
	ut_shaped(ut_finish(&a));
	assert_int_equal(cg_op_from_rt_memset2d_async(&b, 0, &why, dev, 512, 2, 256, 4, (cudaStream_t)UT_STREAM(1)),
			 0);
	ut_shaped(ut_finish(&b));
	assert_int_not_equal(a.shape, b.shape);
	assert_false(cg_op_same_shape(&a, &b));
	/* Only device memory. */
	assert_int_equal(cg_op_from_rt_memset_async(&a, 0, &why, pageable, 0, 64, NULL), -ENOTSUP);
	assert_int_equal(why, CG_WHY_MEMCPY_KIND);
}

/* Events name the node: they are shape; host functions' data is a value. */
static void test_events_and_host(void **state)
{
	(void)state;
	struct cg_op a, b, w;
	ut_evop(&a, CG_OP_RECORD, UT_STREAM(1), UT_EVENT(1));
	ut_evop(&b, CG_OP_RECORD, UT_STREAM(1), UT_EVENT(2));
	ut_evop(&w, CG_OP_WAIT, UT_STREAM(1), UT_EVENT(1));
	assert_false(cg_op_same_shape(&a, &b));
	assert_false(cg_op_same_shape(&a, &w));
	assert_true(cg_op_same_values(&a, &b));
	ut_evop(&b, CG_OP_RECORD, UT_STREAM(1), UT_EVENT(1));
	assert_true(cg_op_same_shape(&a, &b));

	enum cg_reason why;
	struct cg_op h1, h2;
	CUhostFn fn = (CUhostFn)(uintptr_t)0x4242;
	assert_int_equal(cg_op_from_cuLaunchHostFunc(&h1, 0, &why, UT_STREAM(1), fn, (void *)1), 0);
	ut_shaped(ut_finish(&h1));
	assert_int_equal(cg_op_from_cuLaunchHostFunc(&h2, 0, &why, UT_STREAM(1), fn, (void *)2), 0);
	ut_shaped(ut_finish(&h2));
	assert_true(cg_op_same_shape(&h1, &h2));
	assert_false(cg_op_same_values(&h1, &h2));
	/* Flags cgraft cannot hold. */
	assert_int_equal(cg_op_from_rt_event_record_flags(&a, 0, &why, (cudaEvent_t)UT_EVENT(1), NULL,
							  cudaEventRecordExternal), -ENOTSUP);
	assert_int_equal(why, CG_WHY_EVENT_FLAGS);
	assert_int_equal(cg_op_from_rt_stream_wait(&a, 0, &why, NULL, (cudaEvent_t)UT_EVENT(1),
						   cudaEventWaitExternal), -ENOTSUP);
	assert_int_equal(why, CG_WHY_EVENT_FLAGS);
}

static void ut_rt_cb(cudaStream_t s, cudaError_t st, void *p)
{
	(void)s, (void)st, (void)p;
}

static void ut_drv_cb(CUstream s, CUresult st, void *p)
{
	(void)s, (void)st, (void)p;
}

/* A stream callback is a host op whose data is kept once for each
 * callback, stream and data: the same call is the same op at every
 * iteration, another one another op; past the table, not held. */
static void test_stream_callback(void **state)
{
	(void)state;
	enum cg_reason why = CG_WHY_COUNT;
	struct cg_op a, b, c, d;
	/* Not held unless asked for (CGRAFT_CALLBACKS). */
	assert_int_equal(cg_opt.callbacks, 0);
	assert_int_equal(cg_op_from_rt_stream_callback(&a, 0, &why, (cudaStream_t)UT_STREAM(1), ut_rt_cb,
							(void *)1, 0), -ENOTSUP);
	assert_int_equal(why, CG_WHY_CALLBACKS);
	cg_opt.callbacks = 1;
	assert_int_equal(cg_op_from_rt_stream_callback(&a, 0, &why, (cudaStream_t)UT_STREAM(1), ut_rt_cb,
							(void *)1, 0), 0);
	ut_shaped(ut_finish(&a));
	assert_int_equal(cg_op_from_rt_stream_callback(&b, 0, &why, (cudaStream_t)UT_STREAM(1), ut_rt_cb,
							(void *)1, 0), 0);
	ut_shaped(ut_finish(&b));
	assert_int_equal(a.kind, CG_OP_HOST);
	assert_true(cg_op_same_shape(&a, &b));
	assert_true(cg_op_same_values(&a, &b));
	assert_ptr_equal(a.u.host.data, b.u.host.data);
	assert_int_equal(cg_op_from_rt_stream_callback(&c, 0, &why, (cudaStream_t)UT_STREAM(1), ut_rt_cb,
							(void *)2, 0), 0);
	ut_shaped(ut_finish(&c));
	assert_false(cg_op_same_values(&a, &c));
	assert_int_equal(cg_op_from_cuStreamAddCallback(&d, 0, &why, UT_STREAM(1), ut_drv_cb, (void *)1, 0), 0);
	ut_shaped(ut_finish(&d));
	assert_false(cg_op_same_values(&a, &d));
	/* On another stream: the callback is given that stream. */
	assert_int_equal(cg_op_from_cuStreamAddCallback(&c, 0, &why, UT_STREAM(2), ut_drv_cb, (void *)1, 0), 0);
	assert_ptr_not_equal(c.u.host.data, d.u.host.data);
	/* Flags the call refuses, and no callback. */
	assert_int_equal(cg_op_from_rt_stream_callback(&d, 0, &why, NULL, ut_rt_cb, NULL, 1), -EINVAL);
	assert_int_equal(cg_op_from_cuStreamAddCallback(&d, 0, &why, NULL, NULL, NULL, 0), -EINVAL);
	/* The table full: the kept ones still are, new ones are not held. */
	int full = 0;
	for (uintptr_t i = 3; i < 40000 && !full; i++)
		full = cg_op_from_rt_stream_callback(&d, 0, &why, NULL, ut_rt_cb, (void *)i, 0) != 0;
	assert_true(full);
	assert_int_equal(why, CG_WHY_CALLBACKS);
	assert_int_equal(cg_op_from_rt_stream_callback(&b, 0, &why, (cudaStream_t)UT_STREAM(1), ut_rt_cb,
							(void *)1, 0), 0);
	assert_ptr_equal(a.u.host.data, b.u.host.data);
	cg_opt.callbacks = 0;
}

/* Without a current context an op is not held. */
static void test_finish_needs_context(void **state)
{
	(void)state;
	struct cg_op op;
	memset(&op, 0, sizeof op);
	op.kind = CG_OP_RECORD;
	op.stream = UT_STREAM(1);
	op.u.ev.event = UT_EVENT(1);
	fk_set_ctx(NULL);
	enum cg_reason why = CG_WHY_COUNT;
	assert_int_equal(cg_op_finish(&op, &why), -ENOTSUP);
	assert_int_equal(why, CG_WHY_DEVICE);
	fk_set_ctx(FK_CTX);
	assert_int_equal(cg_op_finish(&op, &why), 0);
	assert_ptr_equal(op.ctx, FK_CTX);
}

/* A driver launch: NULL streams become explicit; the layout is learnt from
 * the driver once per handle (cg_op_kernel_info, which the engine calls);
 * parameters come as pointers or packed. */
static void test_driver_launch(void **state)
{
	(void)state;
	const uint32_t sizes[] = { 8, 4, 4 };
	CUfunction f = (CUfunction)(uintptr_t)0x3000;
	fk_kernel(f, 3, sizes, "my_kernel");
	struct cg_op op;
	enum cg_reason why;
	uint64_t p = DEV_LO;
	uint32_t x = 5, y = 6;
	void *args[] = { &p, &x, &y };
	size_t mark = fk_mark();
	assert_int_equal(cg_op_from_cuLaunchKernel(&op, 0, &why, f, 2, 1, 1, 64, 1, 1, 0, NULL, args, NULL), 0);
	assert_int_equal(op.kind, CG_OP_KERNEL);
	assert_ptr_equal(op.stream, CU_STREAM_LEGACY);
	assert_int_equal(cg_op_kernel_info(&op, &why), 0);
	assert_int_equal(op.nbytes, 16);
	assert_int_equal(op.u.k.ki->nparams, 3);
	assert_true(op.u.k.ki->dense); /* the fake driver's offsets: one parameter after another */
	assert_ptr_equal(op.u.k.ki->handle, f);
	assert_string_equal(op.u.k.ki->name, "my_kernel");
	assert_true(fk_count(FK_FUNC_PARAM_INFO, mark) >= 4); /* three sizes, then the end */
	mark = fk_mark();
	assert_int_equal(cg_op_from_cuLaunchKernel(&op, 1, &why, f, 2, 1, 1, 64, 1, 1, 0, NULL, args, NULL), 0);
	assert_ptr_equal(op.stream, CU_STREAM_PER_THREAD);
	assert_int_equal(cg_op_kernel_info(&op, &why), 0);
	assert_int_equal(fk_count(FK_FUNC_PARAM_INFO, mark), 0); /* learnt once */

	/* Packed parameters. */
	uint8_t buf[16] = { 1, 2, 3 };
	size_t bsize = sizeof buf;
	void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &bsize,
			  CU_LAUNCH_PARAM_END };
	assert_int_equal(cg_op_from_cuLaunchKernel(&op, 0, &why, f, 2, 1, 1, 64, 1, 1, 0, UT_STREAM(1), NULL, extra),
			 0);
	assert_int_equal(cg_op_kernel_info(&op, &why), 0);
	assert_true(op.flags & CG_F_PACKED);
	assert_int_equal(op.nbytes, 16);
	/* A packed buffer shorter than the layout is not read. */
	bsize = 8;
	assert_int_equal(cg_op_from_cuLaunchKernel(&op, 0, &why, f, 2, 1, 1, 64, 1, 1, 0, UT_STREAM(1), NULL, extra),
			 0);
	assert_int_not_equal(cg_op_kernel_info(&op, &why), 0);
	assert_int_equal(why, CG_WHY_PARAM_INFO);

	/* Unknown kernels, NCCL kernels and odd attributes stay eager. */
	why = CG_WHY_COUNT;
	CUfunction unknown = (CUfunction)(uintptr_t)0x3999;
	if (cg_op_from_cuLaunchKernel(&op, 0, &why, unknown, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL) == 0)
		assert_int_equal(cg_op_kernel_info(&op, &why), -ENOENT);
	assert_int_equal(why, CG_WHY_PARAM_INFO);
	CUfunction nccl = (CUfunction)(uintptr_t)0x3100;
	fk_kernel(nccl, 3, sizes, "_Z23ncclDevKernel_AllReduce");
	assert_int_equal(cg_op_from_cuLaunchKernel(&op, 0, &why, nccl, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL), 0);
	assert_int_equal(cg_op_kernel_info(&op, &why), -ENOTSUP);
	assert_int_equal(why, CG_WHY_NCCL);
	CUlaunchAttribute at = { .id = CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN, .value = { .memSyncDomain = 0 } };
	CUlaunchAttribute bad = { .id = (CUlaunchAttributeID)1000 };
	CUlaunchConfig cfg = { .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 32, .blockDimY = 1,
			       .blockDimZ = 1, .hStream = UT_STREAM(1), .attrs = &at, .numAttrs = 1 };
	assert_int_equal(cg_op_from_cuLaunchKernelEx(&op, 0, &why, &cfg, f, args, NULL), 0);
	assert_int_equal(op.u.k.nattr, 1);
	cfg.attrs = &bad;
	assert_int_equal(cg_op_from_cuLaunchKernelEx(&op, 0, &why, &cfg, f, args, NULL), -ENOTSUP);
	assert_int_equal(why, CG_WHY_LAUNCH_ATTRIBUTE);
}

/* A held op submitted eagerly goes out through the backend as the call it
 * came from would, from cgraft's copy of its parameters. */
static void test_submit(void **state)
{
	(void)state;
	struct ut_kernel k;
	ut_kernel_init(&k, 0x4000, 2, sz_pi);
	struct cg_seg seg = { 0 };
	struct ut_kop a;
	cg_seg_push(&seg, ut_kop(&a, &k, UT_STREAM(1), 4, (uint64_t[]){ DEV_LO + 8, 77 }), 0, NULL, NULL);
	a.val[1] = 99; /* the caller's arguments change after the call: cgraft's copy does not */
	struct cg_op ms, rec, w;
	enum cg_reason why;
	assert_int_equal(cg_op_from_cuMemsetD2D32Async(&ms, 0, &why, DEV_LO, 1024, 9, 64, 4, UT_STREAM(2)), 0);
	ut_shaped(ut_finish(&ms));
	cg_seg_push(&seg, &ms, 0, NULL, NULL);
	cg_seg_push(&seg, ut_evop(&rec, CG_OP_RECORD, UT_STREAM(2), UT_EVENT(1)), 0, NULL, NULL);
	cg_seg_push(&seg, ut_evop(&w, CG_OP_WAIT, UT_STREAM(1), UT_EVENT(1)), 0, NULL, NULL);
	size_t mark = fk_mark();
	for (size_t i = 0; i < seg.n; i++)
		assert_int_equal(cg_op_submit(&seg.ops[i], seg.ops[i].stream), CUDA_SUCCESS);
	struct fk_call c = fk_get(FK_LAUNCH_KERNEL, mark, 0);
	assert_ptr_equal(c.kernel, k.ki.handle);
	assert_ptr_equal(c.stream, UT_STREAM(1));
	assert_int_equal(c.nbytes, 12);
	uint64_t p;
	uint32_t x;
	memcpy(&p, c.params, 8);
	memcpy(&x, c.params + 8, 4);
	assert_int_equal(p, DEV_LO + 8);
	assert_int_equal(x, 77);
	c = fk_get(FK_MEMSET_ASYNC, mark, 0);
	assert_int_equal(c.bytes, 64 * 4 * 4);
	assert_int_equal(c.value, 9);
	assert_ptr_equal(c.stream, UT_STREAM(2));
	c = fk_get(FK_EVENT_RECORD, mark, 0);
	assert_ptr_equal(c.event, UT_EVENT(1));
	c = fk_get(FK_STREAM_WAIT, mark, 0);
	assert_ptr_equal(c.stream, UT_STREAM(1));
	/* In order. */
	assert_true(fk_nth(FK_LAUNCH_KERNEL, mark, 0) < fk_nth(FK_MEMSET_ASYNC, mark, 0));
	assert_true(fk_nth(FK_EVENT_RECORD, mark, 0) < fk_nth(FK_STREAM_WAIT, mark, 0));
	cg_seg_free(&seg);
}

/* cgraft packs parameters without padding: an address after a 4-, 2- or
 * 1-byte parameter is found at that offset; inside a struct, 8-aligned from
 * the struct's start; in a packed buffer, 8-aligned. */
static void test_host_memory_at_any_offset(void **state)
{
	(void)state;
	static char host[256];
	const void *a = host + 100, *dev = (const void *)(uintptr_t)0x7f0000001000ull;
	cg_hostmem_add(host, sizeof host);
	static const uint32_t lead[] = { 4, 2, 1 };
	for (int l = 0; l < 3; l++) {
		/* (lead) (pointer) (struct of 24: int pair, pointer, pointer) */
		uint32_t size[3] = { lead[l], 8, 24 };
		struct cg_kinfo ki = { .nparams = 3, .size = size };
		uint8_t p[64] = { 0 };
		uint32_t off = lead[l];
		struct cg_op op = { .kind = CG_OP_KERNEL, .nbytes = off + 8 + 24 };
		op.u.k.ki = &ki;
		op.u.k.params = p;
		memcpy(p + off, &dev, 8);
		memcpy(p + off + 8 + 16, &dev, 8);
		assert_false(cg_hostmem_hit(&op));
		memcpy(p + off, &a, 8);
		assert_true(cg_hostmem_hit(&op));
		assert_true(cg_params_reach(&op, host, sizeof host));
		assert_false(cg_params_reach(&op, host, 100));
		memcpy(p + off, &dev, 8);
		memcpy(p + off + 8 + 16, &a, 8); /* in the struct, at its offset 16 */
		assert_true(cg_hostmem_hit(&op));
		memcpy(p + off + 8 + 16, &dev, 8);
		memcpy(p + off + 8 + 8, &a, 8);
		assert_true(cg_hostmem_hit(&op));
	}
	/* A packed buffer, the driver's layout. */
	uint8_t p[32] = { 0 };
	memcpy(p + 16, &a, 8);
	struct cg_kinfo ki = { .nparams = 1, .size = (uint32_t[]){ 32 } };
	struct cg_op op = { .kind = CG_OP_KERNEL, .flags = CG_F_PACKED, .nbytes = 32 };
	op.u.k.ki = &ki;
	op.u.k.params = p;
	assert_true(cg_hostmem_hit(&op));
	size_t n = 0;
	assert_true(cg_hostmem_remove(host, &n));
	assert_int_equal(n, sizeof host);
	assert_false(cg_hostmem_hit(&op));
	assert_false(cg_hostmem_remove(host, &n));
}

/* Graphics interop's calls end the segment (mapping and unmapping are
 * ordered on a stream), though the program's own graphs' calls, whose names
 * share the prefix, pass through. */
static void test_graphics_interop_ends_segments(void **state)
{
	(void)state;
	int seen = 0, graph_pure = 0;
	for (int e = 0; e < CG_E_COUNT; e++) {
		const char *n = cg_entries[e].name;
		if (!strncmp(n, "cudaGraphics", 12) || !strncmp(n, "cuGraphics", 10)) {
			assert_int_equal(cg_entries[e].kind, CG_K_BND);
			seen++;
		}
		graph_pure += !strcmp(n, "cudaGraphInstantiate") && cg_entries[e].kind == CG_K_PURE;
	}
	assert_true(seen >= 10);
	assert_int_equal(graph_pure, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_kernel_shape, setup),
		cmocka_unit_test_setup(test_kernel_attributes, setup),
		cmocka_unit_test_setup(test_copy_shape_and_values, setup),
		cmocka_unit_test_setup(test_copy_classification, setup),
		cmocka_unit_test_setup(test_memset, setup),
		cmocka_unit_test_setup(test_events_and_host, setup),
		cmocka_unit_test_setup(test_finish_needs_context, setup),
		cmocka_unit_test_setup(test_driver_launch, setup),
		cmocka_unit_test_setup(test_submit, setup),
		cmocka_unit_test(test_host_memory_at_any_offset),
		cmocka_unit_test(test_stream_callback),
		cmocka_unit_test(test_graphics_interop_ends_segments),
	};
	return cmocka_run_group_tests_name("op", tests, NULL, NULL);
}
