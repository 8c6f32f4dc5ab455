/* CGRAFT_PROFILE: CUPTI's activity records of kernels, copies and memsets
 * (libcupti.so.13 opened at run time), their busy time and gaps, the trace. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "log.h"
#include "options.h"
#include "profile.h"
#include "stats.h"

/* The headers give the record layouts and the functions' types; every
 * function is looked up in the library at run time. */
#if __has_include(<cupti_activity.h>)
#include <cupti_activity.h>
#include <cupti_result.h>
#include <cupti_version.h>
#define CG_HAVE_CUPTI 1
#else
#define CG_HAVE_CUPTI 0
#endif

#define CG_PROF_CAP (4u << 20)    /* intervals kept: 96 MiB at most */
#define CG_PROF_BUF (4u << 20)    /* bytes of one activity buffer */
#define CG_PROF_NAMES 65535       /* kernel names kept for the trace */

const char *const cg_prof_kind_names[CG_PROF_KINDS] = { "kernel", "memcpy", "memset" };

/* ---- the figures: a pure function of intervals ---------------------------------- */
static int cg_iv_cmp(const void *a, const void *b)
{
	const struct cg_prof_iv *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	return (int)x->graph - (int)y->graph;
}

static int cg_u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Nearest rank: the 0-based index of the pct-th percentile of n values. */
static uint64_t cg_rank(uint64_t n, unsigned pct)
{
	uint64_t r = (n * pct + 99) / 100;
	return r ? r - 1 : 0;
}

static void cg_add_gap(struct cg_prof_gaps *g, uint64_t ns)
{
	g->count++;
	g->total_ns += ns;
}

/* The union of intervals sorted by start, one at a time. */
struct cg_sweep {
	int any;
	uint64_t end, busy;
};

/* Adds [a, b); returns the gap before it (0: none). */
static uint64_t cg_sweep_add(struct cg_sweep *w, uint64_t a, uint64_t b)
{
	uint64_t gap = 0;
	if (!w->any || a >= w->end) {
		gap = w->any ? a - w->end : 0;
		w->busy += b - a;
		w->end = b;
		w->any = 1;
	} else if (b > w->end) {
		w->busy += b - w->end;
		w->end = b;
	}
	return gap;
}

void cg_prof_analyse(struct cg_prof_iv *iv, size_t n, struct cg_prof_summary *s)
{
	memset(s, 0, sizeof *s);
	if (!n)
		return;
	qsort(iv, n, sizeof *iv, cg_iv_cmp);
	/* Each gap as value << 1 | part: sorted, the values come in order and
	 * each part's k-th is its k-th smallest. */
	uint64_t *keys = malloc(n * sizeof *keys);
	size_t nk = 0;
	struct cg_sweep all = { 0 }, part[2] = { { 0 }, { 0 } };
	s->first_ns = iv[0].start;
	for (size_t i = 0; i < n; i++) {
		uint64_t a = iv[i].start, b = iv[i].end > a ? iv[i].end : a;
		int p = iv[i].graph ? CG_PROF_REPLAYED : CG_PROF_EAGER;
		s->ops++;
		s->part[p].ops++;
		uint64_t gap = cg_sweep_add(&all, a, b);
		cg_sweep_add(&part[p], a, b);
		if (!gap)
			continue;
		cg_add_gap(&s->gaps, gap);
		cg_add_gap(&s->part[p].gaps, gap);
		if (keys)
			keys[nk++] = (gap > UINT64_MAX >> 1 ? UINT64_MAX >> 1 : gap) << 1 | (uint64_t)p;
	}
	s->last_ns = all.end;
	s->window_ns = s->last_ns - s->first_ns;
	s->busy_ns = all.busy;
	for (int p = 0; p < 2; p++)
		s->part[p].busy_ns = part[p].busy;
	if (!keys) {
		s->gaps_partial = 1;
		return;
	}
	if (nk) {
		qsort(keys, nk, sizeof *keys, cg_u64_cmp);
		s->gaps.median_ns = keys[cg_rank(nk, 50)] >> 1;
		s->gaps.p90_ns = keys[cg_rank(nk, 90)] >> 1;
		uint64_t seen[2] = { 0, 0 };
		for (size_t i = 0; i < nk; i++) {
			int p = (int)(keys[i] & 1);
			struct cg_prof_gaps *g = &s->part[p].gaps;
			if (seen[p] == cg_rank(g->count, 50))
				g->median_ns = keys[i] >> 1;
			if (seen[p] == cg_rank(g->count, 90))
				g->p90_ns = keys[i] >> 1;
			seen[p]++;
		}
	}
	free(keys);
}

/* ---- writing what was found ------------------------------------------------------ */
static double cg_share(uint64_t part, uint64_t whole)
{
	return whole ? (double)part / (double)whole : 0.0;
}

static void cg_json_gaps(FILE *f, const struct cg_prof_gaps *g, uint64_t window)
{
	fprintf(f, "{\"count\": %llu, \"total_ns\": %llu, \"median_ns\": %llu, \"p90_ns\": %llu, \"share\": %.6f}",
		(unsigned long long)g->count, (unsigned long long)g->total_ns, (unsigned long long)g->median_ns,
		(unsigned long long)g->p90_ns, cg_share(g->total_ns, window));
}

void cg_prof_write_json(FILE *f, const struct cg_prof_result *r)
{
	if (!r->available) {
		fprintf(f, "  \"profile\": {\"available\": false, \"why\": \"");
		for (const char *p = r->why; *p; p++)
			if (*p == '"' || *p == '\\')
				fprintf(f, "\\%c", *p);
			else if ((unsigned char)*p >= 0x20)
				fputc(*p, f);
		fprintf(f, "\"},\n");
		return;
	}
	const struct cg_prof_summary *s = &r->sum;
	fprintf(f, "  \"profile\": {\n    \"available\": true,\n    \"ops\": %llu,\n    \"window_ns\": %llu,\n"
		   "    \"busy_ns\": %llu,\n    \"busy_share\": %.6f,\n    \"gaps\": ",
		(unsigned long long)s->ops, (unsigned long long)s->window_ns, (unsigned long long)s->busy_ns,
		cg_share(s->busy_ns, s->window_ns));
	cg_json_gaps(f, &s->gaps, s->window_ns);
	static const char *const parts[2] = { "eager", "replayed" };
	for (int p = 0; p < 2; p++) {
		const struct cg_prof_part *q = &s->part[p];
		fprintf(f, ",\n    \"%s\": {\"ops\": %llu, \"busy_ns\": %llu, \"busy_share\": %.6f, \"gaps\": ", parts[p],
			(unsigned long long)q->ops, (unsigned long long)q->busy_ns, cg_share(q->busy_ns, s->window_ns));
		cg_json_gaps(f, &q->gaps, s->window_ns);
		fprintf(f, "}");
	}
	fprintf(f, ",\n    \"gaps_partial\": %s,\n    \"devices\": %u,\n", s->gaps_partial ? "true" : "false",
		r->devices);
	fprintf(f, "    \"cost\": {\"records\": %llu, \"stored\": %llu, \"over_cap\": %llu, \"cap\": %llu, "
		   "\"untimed\": %llu, \"dropped\": %llu, \"other_records\": %llu, \"buffers\": %llu, "
		   "\"buffer_bytes\": %llu, \"buffer_ns\": %llu, \"flush_ns\": %llu, \"analyse_ns\": %llu}\n  },\n",
		(unsigned long long)r->records, (unsigned long long)r->stored, (unsigned long long)r->over_cap,
		(unsigned long long)r->cap, (unsigned long long)r->untimed, (unsigned long long)r->dropped,
		(unsigned long long)r->other, (unsigned long long)r->buffers, (unsigned long long)r->buffer_bytes,
		(unsigned long long)r->buffer_ns, (unsigned long long)r->flush_ns, (unsigned long long)r->analyse_ns);
}

static const char *cg_fmt_ns(char *buf, size_t size, uint64_t ns)
{
	if (ns < 1000)
		snprintf(buf, size, "%llu ns", (unsigned long long)ns);
	else if (ns < 1000000)
		snprintf(buf, size, "%.1f us", (double)ns / 1e3);
	else if (ns < 1000000000)
		snprintf(buf, size, "%.3f ms", (double)ns / 1e6);
	else
		snprintf(buf, size, "%.3f s", (double)ns / 1e9);
	return buf;
}

static void cg_report_gaps(FILE *f, const struct cg_prof_gaps *g)
{
	char a[32], b[32], c[32];
	fprintf(f, "gaps %llu (median %s, p90 %s, total %s)", (unsigned long long)g->count,
		cg_fmt_ns(a, sizeof a, g->median_ns), cg_fmt_ns(b, sizeof b, g->p90_ns),
		cg_fmt_ns(c, sizeof c, g->total_ns));
}

void cg_prof_write_report(FILE *f, const struct cg_prof_result *r)
{
	if (!r->available) {
		fprintf(f, "cgraft:   profile: unavailable (%s)\n", r->why);
		return;
	}
	const struct cg_prof_summary *s = &r->sum;
	char a[32], b[32];
	if (!s->ops) {
		fprintf(f, "cgraft:   profile: no timed GPU operation recorded (%llu records)\n",
			(unsigned long long)r->records);
	} else {
		fprintf(f, "cgraft:   profile: GPU busy %.1f%% of %s (%s, %llu ops", 100.0 * cg_share(s->busy_ns, s->window_ns),
			cg_fmt_ns(a, sizeof a, s->window_ns), cg_fmt_ns(b, sizeof b, s->busy_ns),
			(unsigned long long)s->ops);
		if (r->devices > 1)
			fprintf(f, ", %u devices together", r->devices);
		fprintf(f, "), idle ");
		cg_report_gaps(f, &s->gaps);
		fprintf(f, "\n");
		static const char *const parts[2] = { "eager", "replayed (in graphs)" };
		for (int p = 0; p < 2; p++) {
			const struct cg_prof_part *q = &s->part[p];
			fprintf(f, "cgraft:   profile: %s: %llu ops, busy %.1f%% (%s), ", parts[p], (unsigned long long)q->ops,
				100.0 * cg_share(q->busy_ns, s->window_ns), cg_fmt_ns(a, sizeof a, q->busy_ns));
			cg_report_gaps(f, &q->gaps);
			fprintf(f, "\n");
		}
		if (s->gaps_partial)
			fprintf(f, "cgraft:   profile: no memory for the gap percentiles\n");
	}
	if (r->over_cap)
		fprintf(f, "cgraft:   profile: %llu ops past the cap of %llu were counted, not analysed: the figures "
			   "cover the first ones\n", (unsigned long long)r->over_cap, (unsigned long long)r->cap);
	if (r->untimed || r->dropped)
		fprintf(f, "cgraft:   profile: %llu records without timestamps, %llu dropped by CUPTI\n",
			(unsigned long long)r->untimed, (unsigned long long)r->dropped);
	char c[32];
	fprintf(f, "cgraft:   profile cost: %llu records in %llu buffers of %llu KiB, %s in cgraft's buffer handling, "
		   "flush %s, analysis %s (CUPTI's own overhead is not measurable from inside)\n",
		(unsigned long long)r->records, (unsigned long long)r->buffers,
		(unsigned long long)(r->buffers ? r->buffer_bytes / r->buffers / 1024 : 0),
		cg_fmt_ns(a, sizeof a, r->buffer_ns), cg_fmt_ns(b, sizeof b, r->flush_ns),
		cg_fmt_ns(c, sizeof c, r->analyse_ns));
}

static const char *const cg_copy_names[] = { "unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
					      "AtoD", "DtoA", "DtoD", "HtoH", "PtoP" };

void cg_prof_write_trace(FILE *f, const struct cg_prof_iv *iv, size_t n, const char *const *names, size_t nnames)
{
	fprintf(f, "# cgraft profile trace: start_ns end_ns kind graph stream name\n");
	for (size_t i = 0; i < n; i++) {
		const struct cg_prof_iv *v = &iv[i];
		const char *name = "?";
		if (v->kind == CG_PROF_MEMCPY)
			name = v->name < sizeof cg_copy_names / sizeof *cg_copy_names ? cg_copy_names[v->name] : "unknown";
		else if (v->kind == CG_PROF_MEMSET)
			name = "memset";
		else if (v->name && v->name < nnames && names[v->name])
			name = names[v->name];
		fprintf(f, "%llu %llu %s %d %u ", (unsigned long long)v->start, (unsigned long long)v->end,
			v->kind < CG_PROF_KINDS ? cg_prof_kind_names[v->kind] : "other", v->graph ? 1 : 0, v->stream);
		/* One field: a name never breaks the line apart. */
		for (const char *p = name; *p; p++)
			fputc((unsigned char)*p <= ' ' ? '_' : *p, f);
		fputc('\n', f);
	}
}

/* ---- CUPTI's records --------------------------------------------------------------- */
int cg_prof_from_record(const void *record, struct cg_prof_iv *iv, const char **name, unsigned *device)
{
	memset(iv, 0, sizeof *iv);
	*name = NULL;
	*device = 0;
#if CG_HAVE_CUPTI
	uint64_t start, end;
	uint32_t stream, graph;
	if (!record)
		return -1;
	/* The kinds this library enables come in the newest layouts of CUPTI
	 * 13's headers: the library is the one of that soname. KERNEL records
	 * (serialising kernels, which cgraft does not ask for) share the layout. */
	switch (((const CUpti_Activity *)record)->kind) {
	case CUPTI_ACTIVITY_KIND_KERNEL:
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
		const CUpti_ActivityKernel10 *k = record;
		start = k->start, end = k->end, stream = k->streamId, graph = k->graphId;
		*device = k->deviceId;
		*name = k->name;
		iv->kind = CG_PROF_KERNEL;
		break;
	}
	case CUPTI_ACTIVITY_KIND_MEMCPY: {
		const CUpti_ActivityMemcpy6 *m = record;
		start = m->start, end = m->end, stream = m->streamId, graph = m->graphId;
		*device = m->deviceId;
		iv->kind = CG_PROF_MEMCPY;
		iv->name = m->copyKind;
		break;
	}
	case CUPTI_ACTIVITY_KIND_MEMCPY2: {
		const CUpti_ActivityMemcpyPtoP4 *m = record;
		start = m->start, end = m->end, stream = m->streamId, graph = m->graphId;
		*device = m->deviceId;
		iv->kind = CG_PROF_MEMCPY;
		iv->name = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
		break;
	}
	case CUPTI_ACTIVITY_KIND_MEMSET: {
		const CUpti_ActivityMemset4 *m = record;
		start = m->start, end = m->end, stream = m->streamId, graph = m->graphId;
		*device = m->deviceId;
		iv->kind = CG_PROF_MEMSET;
		break;
	}
	default:
		return -1;
	}
	/* 0: CUPTI had no memory to time it. */
	if (!start || !end || end < start)
		return 0;
	iv->start = start;
	iv->end = end;
	iv->stream = stream;
	iv->graph = graph != 0;
	return 1;
#else
	(void)record;
	return -1;
#endif
}

/* ---- the collector ------------------------------------------------------------------ */
enum {
	CG_PS_OFF,      /* not started */
	CG_PS_STARTING, /* being started (calls from inside CUPTI find this) */
	CG_PS_WAITING,  /* not found, and the program has no runtime yet to look beside */
	CG_PS_RUNNING,
	CG_PS_FAILED,
	CG_PS_DONE,     /* flushed and analysed */
	CG_PS_CHILD,    /* a forked child: nothing of its own */
};
static atomic_int cg_prof_state;

struct cg_name_slot {
	const char *key; /* CUPTI's pointer, shared by the records of one kernel */
	uint16_t idx;
};

static struct {
	pthread_mutex_t mu;
	struct cg_prof_iv *iv;
	size_t n, size;
	struct cg_prof_result res;
	uint64_t device_mask;
	char **names;            /* [0] unused */
	size_t nnames;
	struct cg_name_slot *slots;
	char tried[640];         /* where libcupti.so.13 was looked for */
	char load_error[160];    /* why one that is there did not load */
#if CG_HAVE_CUPTI
	__typeof__(&cuptiGetVersion) get_version;
	__typeof__(&cuptiGetResultString) result_string;
	__typeof__(&cuptiActivityRegisterCallbacks) register_callbacks;
	__typeof__(&cuptiActivityEnable) enable;
	__typeof__(&cuptiActivityDisable) disable;
	__typeof__(&cuptiActivityFlushAll) flush_all;
	__typeof__(&cuptiActivityGetNextRecord) next_record;
	__typeof__(&cuptiActivityGetNumDroppedRecords) dropped;
#endif
} P = { .mu = PTHREAD_MUTEX_INITIALIZER, .res = { .cap = CG_PROF_CAP } };

#define CG_NAME_SLOTS (1u << 17) /* twice the names kept */

/* The trace's copy of a kernel name; 0 when no more are kept. */
static uint16_t cg_prof_intern(const char *name)
{
	if (!P.slots) {
		P.slots = calloc(CG_NAME_SLOTS, sizeof *P.slots);
		P.names = calloc(CG_PROF_NAMES + 1, sizeof *P.names);
		if (!P.slots || !P.names) {
			free(P.slots);
			free(P.names);
			P.slots = NULL;
			P.names = NULL;
			return 0;
		}
		P.nnames = 1;
	}
	uintptr_t h = (uintptr_t)name;
	h ^= h >> 17;
	h *= 0x9e3779b97f4a7c15ull;
	for (size_t i = (h >> 40) & (CG_NAME_SLOTS - 1);; i = (i + 1) & (CG_NAME_SLOTS - 1)) {
		struct cg_name_slot *s = &P.slots[i];
		if (s->key == name && !strcmp(P.names[s->idx], name))
			return s->idx;
		if (s->key && s->key != name)
			continue;
		/* Empty, or the pointer now names another kernel. */
		if (P.nnames > CG_PROF_NAMES)
			return 0;
		char *copy = strdup(name);
		if (!copy)
			return 0;
		s->key = name;
		s->idx = (uint16_t)P.nnames;
		P.names[P.nnames++] = copy;
		return s->idx;
	}
}

static int cg_prof_grow(void)
{
	if (P.size >= CG_PROF_CAP)
		return -ENOSPC;
	size_t size = P.size ? 2 * P.size : 65536;
	if (size > CG_PROF_CAP)
		size = CG_PROF_CAP;
	struct cg_prof_iv *iv = realloc(P.iv, size * sizeof *iv);
	if (!iv)
		return -ENOMEM;
	P.iv = iv;
	P.size = size;
	return 0;
}

/* One record, under P.mu. */
static void cg_prof_take(const void *record)
{
	struct cg_prof_iv iv;
	const char *name;
	unsigned dev;
	int k = cg_prof_from_record(record, &iv, &name, &dev);
	if (k < 0) {
		P.res.other++;
		return;
	}
	P.res.records++;
	if (!k) {
		P.res.untimed++;
		return;
	}
	if (dev < 64)
		P.device_mask |= 1ull << dev;
	if (P.n == P.size && cg_prof_grow()) {
		P.res.over_cap++;
		return;
	}
	if (name && cg_opt.profile_trace)
		iv.name = cg_prof_intern(name);
	P.iv[P.n++] = iv;
	P.res.stored++;
}

#define CG_PROF_NOT_FOUND                                                       \
	"libcupti.so.13 not found (tried %s%s): add the directory that holds it (the toolkit's " \
	"extras/CUPTI/lib64 or lib64) to LD_LIBRARY_PATH"

/* The warning waits until the process is seen to use CUDA (the first use of
 * an entry point, or calls counted at exit): the tools a program runs under
 * the same environment (timeout, a shell) say nothing. */
static atomic_int cg_prof_warn_pending;
static enum cg_fault cg_prof_warn_fault;

static void cg_prof_fail(enum cg_fault fault, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void cg_prof_fail(enum cg_fault fault, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(P.res.why, sizeof P.res.why, fmt, ap);
	va_end(ap);
	cg_prof_warn_fault = fault;
	atomic_store(&cg_prof_warn_pending, 1);
	atomic_store(&cg_prof_state, CG_PS_FAILED);
}

static void cg_prof_warn(void)
{
	if (atomic_exchange(&cg_prof_warn_pending, 0))
		cg_log(CG_LOG_WARN, cg_prof_warn_fault, "CGRAFT_PROFILE: %s; profiling is off", P.res.why);
}

#if CG_HAVE_CUPTI
static void CUPTIAPI cg_prof_buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	uint64_t t0 = cg_now_ns();
	void *p = NULL;
	int st = atomic_load(&cg_prof_state);
	if (st != CG_PS_RUNNING && st != CG_PS_STARTING)
		p = NULL;
	else if (posix_memalign(&p, 8, CG_PROF_BUF))
		p = NULL;
	*buffer = p; /* NULL: CUPTI drops the records, and counts them */
	*size = p ? CG_PROF_BUF : 0;
	*max_records = 0;
	pthread_mutex_lock(&P.mu);
	if (p) {
		P.res.buffers++;
		P.res.buffer_bytes += CG_PROF_BUF;
	}
	P.res.buffer_ns += cg_now_ns() - t0;
	pthread_mutex_unlock(&P.mu);
}

static void CUPTIAPI cg_prof_buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
					      size_t valid)
{
	(void)size;
	uint64_t t0 = cg_now_ns();
	pthread_mutex_lock(&P.mu);
	int st = atomic_load(&cg_prof_state);
	int taking = st == CG_PS_RUNNING || st == CG_PS_STARTING;
	if (buffer && valid && taking) {
		CUpti_Activity *rec = NULL;
		/* CUPTI_ERROR_MAX_LIMIT_REACHED ends the buffer; any other
		 * error (an incomplete record) ends it too. */
		while (P.next_record(buffer, valid, &rec) == CUPTI_SUCCESS && rec)
			cg_prof_take(rec);
	}
	size_t dropped = 0;
	if (taking && P.dropped(ctx, stream, &dropped) == CUPTI_SUCCESS)
		P.res.dropped += dropped;
	free(buffer);
	P.res.buffer_ns += cg_now_ns() - t0;
	pthread_mutex_unlock(&P.mu);
}

static const char *cg_cupti_error(CUptiResult rc)
{
	const char *s = NULL;
	if (!P.result_string || P.result_string(rc, &s) != CUPTI_SUCCESS || !s)
		s = "unknown error";
	return s;
}

/* Appends to the tried list. */
static void cg_prof_tried(const char *path)
{
	size_t n = strlen(P.tried);
	if (strstr(P.tried, path))
		return;
	snprintf(P.tried + n, sizeof P.tried - n, "%s%s", n ? ", " : "", path);
}

static void *cg_prof_dlopen(const char *path)
{
	cg_prof_tried(path);
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	const char *e = h ? NULL : dlerror();
	if (e && !P.load_error[0] && !strstr(e, "No such file"))
		snprintf(P.load_error, sizeof P.load_error, "; %s", e);
	return h;
}

/* The directory of the CUDA runtime the program loaded: 0, or -1 when it
 * has none (yet: Python loads it late; or a static one). */
static int cg_runtime_dir(char *out, size_t size)
{
	void *h = dlopen("libcudart.so.13", RTLD_LAZY | RTLD_NOLOAD);
	void *sym = h ? cg_dlsym_real(h, "cudaRuntimeGetVersion") : NULL;
	if (!sym)
		sym = cg_dlsym_real(RTLD_NEXT, "cudaRuntimeGetVersion");
	Dl_info info;
	int ok = sym && dladdr(sym, &info) && info.dli_fname && strchr(info.dli_fname, '/');
	char real[PATH_MAX];
	if (ok && realpath(info.dli_fname, real)) {
		char *slash = strrchr(real, '/');
		*slash = 0;
		ok = (size_t)snprintf(out, size, "%s", real[0] ? real : "/") < size;
	} else {
		ok = 0;
	}
	if (h)
		dlclose(h);
	return ok ? 0 : -1;
}

/* libcupti.so.13: by soname, beside the program's runtime (a toolkit's
 * lib64 or a wheel's lib), under $CUDA_HOME and /usr/local/cuda. *has_rt:
 * whether the program's runtime was there to look beside. */
static void *cg_cupti_open(int *has_rt)
{
	static const char *const under[] = { "/extras/CUPTI/lib64", "/lib64", "/lib" };
	char path[PATH_MAX + 64], dir[PATH_MAX];
	P.tried[0] = 0;
	P.load_error[0] = 0;
	void *h = cg_prof_dlopen("libcupti.so.13");
	*has_rt = cg_runtime_dir(dir, sizeof dir) == 0;
	if (!h && *has_rt) {
		/* lib64 itself; the toolkit's extras from lib64; a wheel's
		 * per-component lib directories. */
		static const char *const beside[] = { "", "/../extras/CUPTI/lib64", "/../../cuda_cupti/lib" };
		for (size_t i = 0; !h && i < sizeof beside / sizeof *beside; i++) {
			snprintf(path, sizeof path, "%s%s/libcupti.so.13", dir, beside[i]);
			char real[PATH_MAX];
			if (realpath(path, real))
				h = cg_prof_dlopen(real);
			else if (!i)
				cg_prof_tried(path);
		}
	}
	const char *roots[] = { getenv("CUDA_HOME"), getenv("CUDA_PATH"), "/usr/local/cuda" };
	for (size_t r = 0; !h && r < sizeof roots / sizeof *roots; r++) {
		if (!roots[r] || !roots[r][0])
			continue;
		for (size_t i = 0; !h && i < sizeof under / sizeof *under; i++) {
			snprintf(path, sizeof path, "%s%s/libcupti.so.13", roots[r], under[i]);
			if (!access(path, F_OK))
				h = cg_prof_dlopen(path);
			else if (i < 2)
				cg_prof_tried(path);
		}
	}
	return h;
}

static void cg_profile_atexit(void)
{
	cg_profile_finish();
}

/* final: no later look (beside a runtime loaded later) is possible. */
static void cg_profile_try(int final)
{
	int has_rt;
	void *h = cg_cupti_open(&has_rt);
	if (!h) {
		if (!final && !has_rt) {
			atomic_store(&cg_prof_state, CG_PS_WAITING);
			return;
		}
		cg_prof_fail(CG_FAULT_NONE, CG_PROF_NOT_FOUND, P.tried, P.load_error);
		return;
	}
	struct {
		const char *name;
		void **slot;
	} syms[] = {
		{ "cuptiGetVersion", (void **)&P.get_version },
		{ "cuptiGetResultString", (void **)&P.result_string },
		{ "cuptiActivityRegisterCallbacks", (void **)&P.register_callbacks },
		{ "cuptiActivityEnable", (void **)&P.enable },
		{ "cuptiActivityDisable", (void **)&P.disable },
		{ "cuptiActivityFlushAll", (void **)&P.flush_all },
		{ "cuptiActivityGetNextRecord", (void **)&P.next_record },
		{ "cuptiActivityGetNumDroppedRecords", (void **)&P.dropped },
	};
	for (size_t i = 0; i < sizeof syms / sizeof *syms; i++)
		if (!(*syms[i].slot = cg_dlsym_real(h, syms[i].name))) {
			cg_prof_fail(CG_FAULT_DRIVER, "libcupti.so.13 has no %s", syms[i].name);
			return;
		}
	Dl_info info;
	const char *where = dladdr((void *)P.enable, &info) && info.dli_fname ? info.dli_fname : "libcupti.so.13";
	uint32_t version = 0;
	CUptiResult rc;
	cg_busy++;
	if ((rc = P.get_version(&version)) != CUPTI_SUCCESS || version < 130000) {
		cg_busy--;
		cg_prof_fail(CG_FAULT_DRIVER, "%s: CUPTI API version %u, 13.0 (130000) or later needed", where,
			     (unsigned)version);
		return;
	}
	if ((rc = P.register_callbacks(cg_prof_buffer_requested, cg_prof_buffer_completed)) != CUPTI_SUCCESS) {
		cg_busy--;
		cg_prof_fail(CG_FAULT_DRIVER, "cuptiActivityRegisterCallbacks failed: %s (%d)", cg_cupti_error(rc),
			     (int)rc);
		return;
	}
	/* Concurrent kernels, not KERNEL: that one serialises the kernels. */
	static const CUpti_ActivityKind kinds[] = { CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
						    CUPTI_ACTIVITY_KIND_MEMSET };
	static const char *const kind_names[] = { "CONCURRENT_KERNEL", "MEMCPY", "MEMSET" };
	for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++) {
		if ((rc = P.enable(kinds[i])) == CUPTI_SUCCESS)
			continue;
		for (size_t k = 0; k < i; k++)
			P.disable(kinds[k]);
		cg_busy--;
		cg_prof_fail(CG_FAULT_DRIVER, "cuptiActivityEnable(CUPTI_ACTIVITY_KIND_%s) failed: %s (%d)",
			     kind_names[i], cg_cupti_error(rc), (int)rc);
		return;
	}
	/* Peer copies where the device has them: not needed. */
	(void)P.enable(CUPTI_ACTIVITY_KIND_MEMCPY2);
	cg_busy--;
	/* Before the runtime's own exit handlers are registered (its first
	 * call comes later), so they run first: CUPTI then has the records of
	 * contexts torn down at exit. */
	if (atexit(cg_profile_atexit)) {
		cg_busy++;
		for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
			P.disable(kinds[i]);
		P.disable(CUPTI_ACTIVITY_KIND_MEMCPY2);
		cg_busy--;
		cg_prof_fail(CG_FAULT_CGRAFT, "no exit handler could be registered");
		return;
	}
	cg_log(CG_LOG_INFO, CG_FAULT_NONE, "CGRAFT_PROFILE: CUPTI %u from %s", (unsigned)version, where);
	atomic_store(&cg_prof_state, CG_PS_RUNNING);
}
#else
static void cg_profile_try(int final)
{
	(void)final;
	cg_prof_fail(CG_FAULT_CGRAFT, "cgraft was built without CUPTI's headers (cupti_activity.h)");
}
#endif

void cg_profile_start(void)
{
	if (!cg_opt.profile)
		return;
	int st = atomic_load(&cg_prof_state);
	if (st == CG_PS_OFF) {
		if (atomic_compare_exchange_strong(&cg_prof_state, &st, CG_PS_STARTING))
			cg_profile_try(0);
		return;
	}
	if (st == CG_PS_FAILED)
		cg_prof_warn();
#if CG_HAVE_CUPTI
	/* Another look once the program's runtime is there (called from the
	 * first use of each entry point, before its real call). */
	char dir[PATH_MAX];
	if (st == CG_PS_WAITING && !cg_runtime_dir(dir, sizeof dir) &&
	    atomic_compare_exchange_strong(&cg_prof_state, &st, CG_PS_STARTING))
		cg_profile_try(1);
#endif
}

void cg_profile_forked_child(void)
{
	atomic_store(&cg_prof_state, CG_PS_CHILD);
}

static void cg_prof_write_trace_file(void)
{
	char path[PATH_MAX];
	if (cg_stats_expand_path(cg_opt.profile_trace, (long)getpid(), path, sizeof path)) {
		cg_log(CG_LOG_ERROR, CG_FAULT_PROGRAM, "CGRAFT_PROFILE_TRACE: path too long");
		return;
	}
	FILE *f = fopen(path, "w");
	if (!f) {
		cg_log(CG_LOG_ERROR, CG_FAULT_PROGRAM, "CGRAFT_PROFILE_TRACE: cannot write %s", path);
		return;
	}
	cg_prof_write_trace(f, P.iv, P.n, (const char *const *)P.names, P.nnames);
	if (fclose(f))
		cg_log(CG_LOG_ERROR, CG_FAULT_PROGRAM, "CGRAFT_PROFILE_TRACE: cannot write %s", path);
}

void cg_profile_finish(void)
{
	static atomic_int done;
	if (!cg_opt.profile || atomic_load(&cg_prof_state) == CG_PS_CHILD || atomic_exchange(&done, 1))
		return;
	int st = atomic_load(&cg_prof_state);
	if (st == CG_PS_WAITING) {
		cg_prof_fail(CG_FAULT_NONE, CG_PROF_NOT_FOUND, P.tried, P.load_error);
		st = CG_PS_FAILED;
	}
	/* Said only by a process that used CUDA (not by the tools it ran). */
	if (st == CG_PS_FAILED && cg_stats_any_calls())
		cg_prof_warn();
	if (st != CG_PS_RUNNING)
		return;
#if CG_HAVE_CUPTI
	uint64_t t0 = cg_now_ns();
	cg_busy++;
	/* Forced: buffers with records still incomplete come too. */
	CUptiResult rc = P.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	cg_busy--;
	if (rc != CUPTI_SUCCESS)
		cg_log(CG_LOG_WARN, CG_FAULT_DRIVER, "CGRAFT_PROFILE: cuptiActivityFlushAll failed: %s (%d); the "
		       "figures cover the records delivered before", cg_cupti_error(rc), (int)rc);
	uint64_t t1 = cg_now_ns();
	pthread_mutex_lock(&P.mu);
	atomic_store(&cg_prof_state, CG_PS_DONE);
	pthread_mutex_unlock(&P.mu);
	P.res.flush_ns = t1 - t0;
	cg_prof_analyse(P.iv, P.n, &P.res.sum);
	P.res.analyse_ns = cg_now_ns() - t1;
	P.res.devices = (unsigned)__builtin_popcountll(P.device_mask);
	P.res.available = 1;
	if (cg_opt.profile_trace && (P.n || cg_stats_any_calls()))
		cg_prof_write_trace_file();
#endif
}

/* What the report and the stats file say: finished first where the exit
 * handler did not run. */
static const struct cg_prof_result *cg_profile_result(void)
{
	if (!cg_opt.profile || atomic_load(&cg_prof_state) == CG_PS_CHILD)
		return NULL;
	cg_profile_finish();
	if (!P.res.available && !P.res.why[0])
		snprintf(P.res.why, sizeof P.res.why, "profiling did not start");
	return &P.res;
}

void cg_profile_write_json(FILE *f)
{
	const struct cg_prof_result *r = cg_profile_result();
	if (r)
		cg_prof_write_json(f, r);
}

void cg_profile_write_report(FILE *f)
{
	const struct cg_prof_result *r = cg_profile_result();
	if (r)
		cg_prof_write_report(f, r);
}
