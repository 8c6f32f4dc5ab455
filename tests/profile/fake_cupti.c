/* A stand-in libcupti.so.13 for the profile tests: the functions cgraft looks
 * up, and a fixed set of records, half from a thread of its own, half at the flush. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cupti_activity.h>
#include <cupti_result.h>
#include <cupti_version.h>

#define FAKE_EXPORT __attribute__((visibility("default")))

static CUpti_BuffersCallbackRequestFunc fake_request;
static CUpti_BuffersCallbackCompleteFunc fake_complete;
static pthread_t fake_worker;
static int fake_worker_started, fake_flushes;

/* FAKE_CUPTI_FAIL=NAME: that function fails (register, enable, flush). */
static int fake_fails(const char *name)
{
	const char *f = getenv("FAKE_CUPTI_FAIL");
	return f && !strcmp(f, name);
}

/* FAKE_CUPTI_MARK=PATH: written when the library is loaded. */
__attribute__((constructor)) static void fake_loaded(void)
{
	const char *mark = getenv("FAKE_CUPTI_MARK");
	FILE *f = mark ? fopen(mark, "w") : NULL;
	if (f)
		fclose(f);
}

static size_t fake_kernel(uint8_t *p, uint64_t start, uint64_t end, uint32_t stream, uint32_t graph,
			  const char *name)
{
	CUpti_ActivityKernel10 k;
	memset(&k, 0, sizeof k);
	k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	k.start = start;
	k.end = end;
	k.streamId = stream;
	k.graphId = graph;
	k.name = name;
	memcpy(p, &k, sizeof k);
	return sizeof k;
}

/* The first half: a host-to-device copy and ten eager kernels, 60 ns long
 * every 100 ns (gaps of 40 ns), the record of one kernel without times. */
static size_t fake_first_half(uint8_t *p)
{
	size_t n = 0;
	CUpti_ActivityMemcpy6 m;
	memset(&m, 0, sizeof m);
	m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
	m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
	m.start = 500;
	m.end = 600;
	m.streamId = 1;
	memcpy(p + n, &m, sizeof m);
	n += sizeof m;
	for (int i = 0; i < 10; i++)
		n += fake_kernel(p + n, 1000 + 100 * (uint64_t)i, 1060 + 100 * (uint64_t)i, 1, 0, "_Z6k_axpbPfPKfiff");
	n += fake_kernel(p + n, 0, 0, 1, 0, "untimed");
	return n;
}

/* The second half: ten kernels in a graph on stream 2, 40 ns every 50 ns,
 * and a memset in the graph on stream 3 under the first of them. */
static size_t fake_second_half(uint8_t *p)
{
	size_t n = 0;
	for (int i = 0; i < 10; i++)
		n += fake_kernel(p + n, 3000 + 50 * (uint64_t)i, 3040 + 50 * (uint64_t)i, 2, 5, "void k<int>(int)");
	CUpti_ActivityMemset4 s;
	memset(&s, 0, sizeof s);
	s.kind = CUPTI_ACTIVITY_KIND_MEMSET;
	s.start = 3000;
	s.end = 3010;
	s.streamId = 3;
	s.graphId = 5;
	memcpy(p + n, &s, sizeof s);
	n += sizeof s;
	return n;
}

static void fake_deliver(size_t (*fill)(uint8_t *))
{
	uint8_t *buf = NULL;
	size_t size = 0, max = 0;
	fake_request(&buf, &size, &max);
	if (!buf || size < 8192)
		return;
	size_t valid = fill(buf);
	fake_complete(NULL, 0, buf, size, valid);
}

/* FAKE_CUPTI_MANY=N: N more eager kernels of 10 ns every 20 ns after the
 * rest, for the cap on intervals kept. */
static void fake_deliver_many(void)
{
	const char *e = getenv("FAKE_CUPTI_MANY");
	long n = e ? atol(e) : 0;
	for (long i = 0; i < n;) {
		uint8_t *buf = NULL;
		size_t size = 0, max = 0, valid = 0;
		fake_request(&buf, &size, &max);
		if (!buf)
			return;
		for (; i < n && valid + sizeof(CUpti_ActivityKernel10) <= size; i++)
			valid += fake_kernel(buf + valid, 10000 + 20 * (uint64_t)i, 10010 + 20 * (uint64_t)i, 4, 0, "many");
		fake_complete(NULL, 0, buf, size, valid);
	}
}

static void *fake_worker_main(void *arg)
{
	(void)arg;
	fake_deliver(fake_first_half);
	return NULL;
}

FAKE_EXPORT CUptiResult cuptiGetVersion(uint32_t *version)
{
	*version = CUPTI_API_VERSION;
	return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiGetResultString(CUptiResult result, const char **str)
{
	*str = result == CUPTI_SUCCESS ? "CUPTI_SUCCESS" : "CUPTI_ERROR_FAKE";
	return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
						       CUpti_BuffersCallbackCompleteFunc complete)
{
	if (fake_fails("register"))
		return CUPTI_ERROR_UNKNOWN;
	fake_request = request;
	fake_complete = complete;
	return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind)
{
	if (fake_fails("enable") && kind == CUPTI_ACTIVITY_KIND_MEMSET)
		return CUPTI_ERROR_NOT_COMPATIBLE;
	if (kind == CUPTI_ACTIVITY_KIND_MEMSET && fake_request && !fake_worker_started)
		fake_worker_started = pthread_create(&fake_worker, NULL, fake_worker_main, NULL) == 0;
	return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind)
{
	(void)kind;
	return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityFlushAll(uint32_t flag)
{
	if (!fake_request)
		return CUPTI_ERROR_INVALID_OPERATION;
	/* What the worker delivers comes whether the flush fails or not. */
	if (fake_worker_started) {
		pthread_join(fake_worker, NULL);
		fake_worker_started = 0;
	}
	if (fake_fails("flush"))
		return CUPTI_ERROR_UNKNOWN;
	if (fake_flushes++ == 0 && (flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED)) {
		fake_deliver(fake_second_half);
		fake_deliver_many();
	}
	return CUPTI_SUCCESS;
}

static size_t fake_record_size(const CUpti_Activity *r)
{
	switch (r->kind) {
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return sizeof(CUpti_ActivityKernel10);
	case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
	case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(CUpti_ActivityMemset4);
	default: return 0;
	}
}

FAKE_EXPORT CUptiResult cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid, CUpti_Activity **record)
{
	uint8_t *p = *record ? (uint8_t *)*record + fake_record_size(*record) : buffer;
	if (p >= buffer + valid)
		return CUPTI_ERROR_MAX_LIMIT_REACHED;
	if (!fake_record_size((CUpti_Activity *)p))
		return CUPTI_ERROR_INVALID_KIND;
	*record = (CUpti_Activity *)p;
	return CUPTI_SUCCESS;
}

/* Two records dropped, reported with the first buffer. */
FAKE_EXPORT CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext context, uint32_t stream, size_t *dropped)
{
	static int asked;
	(void)context, (void)stream;
	*dropped = asked++ ? 0 : 2;
	return CUPTI_SUCCESS;
}
