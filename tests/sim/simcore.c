/* Simulated CUDA device core: memory table, kernels registry, streams, events,
 * the pending-op scheduler that runs work in a random valid order, capture and graphs. */
#define _GNU_SOURCE
/* Exports stay exported even if the parent project builds with -fvisibility=hidden. */
#pragma GCC visibility push(default)
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim_i.h"

#define MAGIC_KERN 0x4b45524eu
#define MAGIC_STREAM 0x5354524du
#define MAGIC_EVENT 0x4556454eu
#define MAGIC_GRAPH 0x47524150u
#define MAGIC_NODE 0x4e4f4445u
#define MAGIC_EXEC 0x45584543u

enum { STREAM_USER, STREAM_LEGACY, STREAM_PTDS };

typedef struct sim_capture {
    CUgraph graph;
    CUstream origin;
    unsigned long long id;
} sim_capture;

struct CUstream_st {
    uint32_t magic;
    int device, kind, prio;
    unsigned flags;
    uint64_t last;                  /* last op submitted, 0 when none */
    uint64_t *waits;                /* ops the next op must also wait for */
    size_t nwaits, capwaits;
    sim_capture *cap;
    CUgraphNode *cdeps;             /* capture frontier */
    size_t ncdeps, capcdeps;
    struct CUstream_st *next;
};

struct CUevent_st {
    uint32_t magic;
    int device;
    unsigned flags;
    uint64_t rec;                   /* op of the latest record, 0 when never */
    sim_capture *cap;               /* set while recorded inside a capture */
    CUgraphNode *cnodes;
    size_t ncnodes;
    struct CUevent_st *next;
};

struct CUgraphNode_st {
    uint32_t magic;
    CUgraph graph;
    size_t index;
    sim_work w;
    CUgraphNode *deps;
    size_t ndeps, capdeps;
};

struct CUgraph_st {
    uint32_t magic;
    CUgraphNode *nodes;
    size_t n, cap;
};

struct CUgraphExec_st {
    uint32_t magic;
    size_t n;
    sim_work *w;                    /* by node index */
    size_t **deps;                  /* by node index: indices */
    size_t *ndeps;
    size_t *order;                  /* a topological order */
};

typedef struct sim_op {
    uint64_t id;
    int device, running;
    uint64_t *deps;
    size_t ndeps;
    sim_work w;
} sim_op;

typedef struct sim_alloc {
    char *base;
    size_t size;
    int kind, device;
} sim_alloc;

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int inited, ndev, trace;
    unsigned eager;                 /* 0..3: how often API calls run ready work */
    uint64_t rng;
    uint64_t next_id, clock;
    uint64_t *tick;                 /* completion clock by op id, 0 while pending */
    size_t ntick;
    sim_op **pending;
    size_t npending, cappending;
    int running;
    struct CUstream_st *streams;    /* live user and per-thread streams */
    struct CUstream_st legacy[SIM_MAXDEV];
    struct CUevent_st *events;
    struct CUkern_st *kernels;
    sim_alloc *allocs;
    size_t nallocs, capallocs;
    unsigned long long capture_ids;
} G = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

static __thread int tls_dev;
static __thread int tls_in_op;
static __thread CUstream tls_ptds[SIM_MAXDEV];
static __thread int tls_capmode;

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        fprintf(stderr, "sim: out of host memory\n");
        abort();
    }
    return q;
}

#define GROW(arr, n, cap) do { \
    if ((n) >= (cap)) { (cap) = (cap) ? 2 * (cap) : 16; (arr) = xrealloc((arr), (cap) * sizeof(*(arr))); } \
} while (0)

static unsigned env_uint(const char *name, unsigned dflt)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return dflt;
    char *end;
    unsigned long x = strtoul(v, &end, 10);
    if (*end) {
        fprintf(stderr, "sim: %s=%s is not a number, using %u\n", name, v, dflt);
        return dflt;
    }
    return (unsigned)x;
}

/* Called with the mutex held. */
static void init_locked(void)
{
    if (G.inited)
        return;
    G.inited = 1;
    G.ndev = (int)env_uint("SIM_DEVICES", 1);
    G.trace = (int)env_uint("SIM_TRACE", 0);
    if (G.ndev < 1)
        G.ndev = 1;
    if (G.ndev > SIM_MAXDEV)
        G.ndev = SIM_MAXDEV;
    unsigned seed = env_uint("SIM_SEED", 1);
    G.rng = 0x9E3779B97F4A7C15ull ^ ((uint64_t)seed * 0x2545F4914F6CDD1Dull);
    /* Lazy seeds let work pile up so missing waits meet a random order at the
     * next sync; eager seeds run work soon so missing host-side waits show. */
    G.eager = env_uint("SIM_EAGER", (seed + 3) % 4);
    if (G.eager > 3)
        G.eager = 3;
    if (!G.rng)
        G.rng = 1;
    G.next_id = 1;
    G.ntick = 1024;
    G.tick = calloc(G.ntick, sizeof(uint64_t));
    G.tick[0] = 1;
    for (int d = 0; d < SIM_MAXDEV; d++) {
        G.legacy[d].magic = MAGIC_STREAM;
        G.legacy[d].device = d;
        G.legacy[d].kind = STREAM_LEGACY;
    }
}

static void lock(void)
{
    pthread_mutex_lock(&G.mu);
    init_locked();
}

static void unlock(void)
{
    pthread_mutex_unlock(&G.mu);
}

static uint64_t rnd(void)
{
    uint64_t x = G.rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    G.rng = x;
    return x;
}

static int done(uint64_t id)
{
    return id < G.ntick && G.tick[id] != 0;
}

/* ------------------------------------------------------------------ work */

SIM_API void simc_work_free(sim_work *w)
{
    free(w->args);
    free(w->snap);
    w->args = NULL;
    w->snap = NULL;
}

SIM_API CUresult simc_work_copy(sim_work *to, const sim_work *from)
{
    *to = *from;
    to->args = NULL;
    to->snap = NULL;
    if (from->args && from->k) {
        to->args = xrealloc(NULL, from->k->argsz);
        memcpy(to->args, from->args, from->k->argsz);
    }
    if (from->snap) {
        size_t n = from->width * from->height;
        to->snap = xrealloc(NULL, n);
        memcpy(to->snap, from->snap, n);
        to->src = to->snap;
    }
    return CUDA_SUCCESS;
}

static void work_run(sim_work *w)
{
    switch (w->kind) {
    case SIM_W_KERNEL: {
        void *ptrs[SIM_MAXPARAMS];
        for (int i = 0; i < w->k->nparams; i++)
            ptrs[i] = w->args + w->k->off[i];
        w->k->fn(&w->launch, ptrs);
        break;
    }
    case SIM_W_COPY:
        for (size_t r = 0; r < w->height; r++)
            memmove((char *)w->dst + r * w->dpitch, (const char *)w->src + r * w->spitch, w->width);
        break;
    case SIM_W_SET:
        for (size_t r = 0; r < w->height; r++) {
            char *row = (char *)w->dst + r * w->dpitch;
            for (size_t i = 0; i < w->width; i++) {
                if (w->elem == 1)
                    ((uint8_t *)row)[i] = (uint8_t)w->value;
                else if (w->elem == 2)
                    ((uint16_t *)row)[i] = (uint16_t)w->value;
                else
                    ((uint32_t *)row)[i] = w->value;
            }
        }
        break;
    case SIM_W_HOST:
        w->hostfn(w->user);
        break;
    case SIM_W_CALLBACK:
        w->cb(w->cbstream, CUDA_SUCCESS, w->user);
        break;
    case SIM_W_FREE:
        free(w->freeptr);
        break;
    default:
        break;
    }
}

/* ------------------------------------------------------------- scheduler */

static void set_tick(uint64_t id, uint64_t v)
{
    if (id >= G.ntick) {
        size_t n = G.ntick;
        while (n <= id)
            n *= 2;
        G.tick = xrealloc(G.tick, n * sizeof(uint64_t));
        memset(G.tick + G.ntick, 0, (n - G.ntick) * sizeof(uint64_t));
        G.ntick = n;
    }
    G.tick[id] = v;
}

static int op_ready(const sim_op *op)
{
    if (op->running)
        return 0;
    for (size_t i = 0; i < op->ndeps; i++)
        if (!done(op->deps[i]))
            return 0;
    return 1;
}

static void alloc_forget_locked(void *p);

/* Runs one randomly chosen ready op; the mutex is released meanwhile so that
 * host functions and other threads make progress. Returns 0 when none was ready. */
static int run_one_locked(void)
{
    if (tls_in_op || !G.npending)
        return 0;
    size_t nready = 0;
    for (size_t i = 0; i < G.npending; i++)
        if (op_ready(G.pending[i]))
            nready++;
    if (!nready)
        return 0;
    size_t pick = (size_t)(rnd() % nready);
    sim_op *op = NULL;
    for (size_t i = 0; i < G.npending; i++)
        if (op_ready(G.pending[i]) && pick-- == 0) {
            op = G.pending[i];
            break;
        }
    op->running = 1;
    G.running++;
    if (op->w.kind == SIM_W_FREE)
        alloc_forget_locked(op->w.freeptr);
    if (G.trace)
        fprintf(stderr, "sim: run op %llu kind %d %s\n", (unsigned long long)op->id, op->w.kind,
                op->w.kind == SIM_W_KERNEL ? op->w.k->name : "");
    unlock();
    tls_in_op = 1;
    work_run(&op->w);
    tls_in_op = 0;
    lock();
    G.running--;
    set_tick(op->id, ++G.clock);
    for (size_t i = 0; i < G.npending; i++)
        if (G.pending[i] == op) {
            G.pending[i] = G.pending[--G.npending];
            break;
        }
    simc_work_free(&op->w);
    free(op->deps);
    free(op);
    pthread_cond_broadcast(&G.cv);
    return 1;
}

/* Queries pass always=1: a polling loop must make progress on every seed. */
static void run_some_always_locked(int always)
{
    if (!always && rnd() % 4 >= G.eager)
        return;
    unsigned n = (unsigned)(rnd() % 4);
    while (n-- && run_one_locked())
        ;
}

static void run_some_locked(void)
{
    run_some_always_locked(0);
}

enum { WAIT_OP, WAIT_DEVICE, WAIT_ALL };

static int wait_pred(int what, uint64_t arg)
{
    if (what == WAIT_OP)
        return done(arg);
    for (size_t i = 0; i < G.npending; i++)
        if (what == WAIT_ALL || G.pending[i]->device == (int)arg)
            return 0;
    return 1;
}

static CUresult wait_locked(int what, uint64_t arg)
{
    while (!wait_pred(what, arg)) {
        if (tls_in_op)
            return CUDA_ERROR_NOT_PERMITTED;
        if (run_one_locked())
            continue;
        if (!G.running) {
            fprintf(stderr, "sim: wait can never finish: no op is ready\n");
            return CUDA_ERROR_UNKNOWN;
        }
        pthread_cond_wait(&G.cv, &G.mu);
    }
    return CUDA_SUCCESS;
}

SIM_API void simc_tick(void)
{
    lock();
    run_some_locked();
    unlock();
}

typedef struct depvec {
    uint64_t *v;
    size_t n, cap;
} depvec;

static void dv_add(depvec *d, uint64_t id)
{
    if (done(id))
        return;
    for (size_t i = 0; i < d->n; i++)
        if (d->v[i] == id)
            return;
    GROW(d->v, d->n, d->cap);
    d->v[d->n++] = id;
}

static uint64_t op_create(int device, sim_work *w, depvec *deps)
{
    sim_op *op = xrealloc(NULL, sizeof(*op));
    op->id = G.next_id++;
    op->device = device;
    op->running = 0;
    op->deps = deps->v;
    op->ndeps = deps->n;
    op->w = *w;
    deps->v = NULL;
    deps->n = deps->cap = 0;
    set_tick(op->id, 0);
    GROW(G.pending, G.npending, G.cappending);
    G.pending[G.npending++] = op;
    return op->id;
}

/* ---------------------------------------------------------------- streams */

static int stream_blocking(const struct CUstream_st *s)
{
    return !(s->flags & CU_STREAM_NON_BLOCKING);
}

static CUstream resolve_locked(CUstream h, int ptsz, CUresult *err)
{
    *err = CUDA_SUCCESS;
    if ((h == NULL && !ptsz) || h == CU_STREAM_LEGACY)
        return &G.legacy[tls_dev];
    if (h == NULL || h == CU_STREAM_PER_THREAD) {
        if (!tls_ptds[tls_dev]) {
            struct CUstream_st *s = xrealloc(NULL, sizeof(*s));
            memset(s, 0, sizeof(*s));
            s->magic = MAGIC_STREAM;
            s->device = tls_dev;
            s->kind = STREAM_PTDS;
            s->next = G.streams;
            G.streams = s;
            tls_ptds[tls_dev] = s;
        }
        return tls_ptds[tls_dev];
    }
    for (struct CUstream_st *s = G.streams; s; s = s->next)
        if (s == h)
            return s;
    *err = CUDA_ERROR_INVALID_HANDLE;
    return NULL;
}

/* Dependencies of the next op on s, by the legacy-stream rules. */
static void stream_deps_locked(CUstream s, depvec *d)
{
    dv_add(d, s->last);
    for (size_t i = 0; i < s->nwaits; i++)
        dv_add(d, s->waits[i]);
    if (s->kind == STREAM_LEGACY) {
        for (struct CUstream_st *t = G.streams; t; t = t->next)
            if (t->device == s->device && stream_blocking(t))
                dv_add(d, t->last);
    } else if (stream_blocking(s)) {
        dv_add(d, G.legacy[s->device].last);
    }
}

static void stream_advance_locked(CUstream s, uint64_t id)
{
    s->last = id;
    s->nwaits = 0;
}

static CUresult graph_add_locked(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n,
                                 sim_work *w);

/* Consumes w: either a pending op after the stream's work, or a node of the
 * stream's capture. Returns the op id through id (0 when captured). */
static CUresult submit_locked(CUstream s, sim_work *w, uint64_t *id)
{
    *id = 0;
    if (s->cap) {
        CUgraphNode node;
        CUresult r = graph_add_locked(&node, s->cap->graph, s->cdeps, s->ncdeps, w);
        if (r != CUDA_SUCCESS)
            return r;
        GROW(s->cdeps, 0, s->capcdeps);
        s->cdeps[0] = node;
        s->ncdeps = 1;
        return CUDA_SUCCESS;
    }
    depvec d = {0};
    stream_deps_locked(s, &d);
    *id = op_create(s->device, w, &d);
    stream_advance_locked(s, *id);
    return CUDA_SUCCESS;
}

SIM_API CUresult simc_submit(CUstream h, int ptsz, sim_work *w)
{
    CUresult r;
    uint64_t id;
    lock();
    run_some_locked();
    CUstream s = resolve_locked(h, ptsz, &r);
    if (s)
        r = submit_locked(s, w, &id);
    if (r != CUDA_SUCCESS)
        simc_work_free(w);
    unlock();
    return r;
}

SIM_API CUresult simc_stream_create(CUstream *out, unsigned flags, int prio)
{
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    if (flags & ~(unsigned)CU_STREAM_NON_BLOCKING)
        return CUDA_ERROR_INVALID_VALUE;
    lock();
    run_some_locked();
    struct CUstream_st *s = xrealloc(NULL, sizeof(*s));
    memset(s, 0, sizeof(*s));
    s->magic = MAGIC_STREAM;
    s->device = tls_dev;
    s->kind = STREAM_USER;
    s->flags = flags;
    s->prio = prio;
    s->next = G.streams;
    G.streams = s;
    *out = s;
    unlock();
    return CUDA_SUCCESS;
}

SIM_API CUresult simc_stream_destroy(CUstream h)
{
    CUresult r = CUDA_ERROR_INVALID_HANDLE;
    lock();
    run_some_locked();
    for (struct CUstream_st **pp = &G.streams; *pp; pp = &(*pp)->next) {
        struct CUstream_st *s = *pp;
        if (s == h && s->kind == STREAM_USER) {
            /* Pending ops hold ids, not the stream, so it can go at once;
             * a legacy-stream op submitted later no longer waits on it, as with the real one. */
            *pp = s->next;
            s->magic = 0;
            free(s->waits);
            free(s->cdeps);
            free(s);
            r = CUDA_SUCCESS;
            break;
        }
    }
    unlock();
    return r;
}

SIM_API CUresult simc_stream_get_flags(CUstream h, int ptsz, unsigned *flags)
{
    CUresult r;
    if (!flags)
        return CUDA_ERROR_INVALID_VALUE;
    lock();
    CUstream s = resolve_locked(h, ptsz, &r);
    if (s)
        *flags = s->flags;
    unlock();
    return r;
}

SIM_API CUresult simc_stream_get_priority(CUstream h, int ptsz, int *prio)
{
    CUresult r;
    if (!prio)
        return CUDA_ERROR_INVALID_VALUE;
    lock();
    CUstream s = resolve_locked(h, ptsz, &r);
    if (s)
        *prio = s->prio;
    unlock();
    return r;
}

SIM_API CUresult simc_stream_sync(CUstream h, int ptsz)
{
    CUresult r;
    lock();
    CUstream s = resolve_locked(h, ptsz, &r);
    if (s && s->cap)
        r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    else if (s) {
        /* The legacy stream also waits for every blocking stream. */
        depvec d = {0};
        stream_deps_locked(s, &d);
        for (size_t i = 0; i < d.n && r == CUDA_SUCCESS; i++)
            r = wait_locked(WAIT_OP, d.v[i]);
        free(d.v);
    }
    unlock();
    return r;
}

SIM_API CUresult simc_stream_query(CUstream h, int ptsz)
{
    CUresult r;
    lock();
    run_some_always_locked(1);
    CUstream s = resolve_locked(h, ptsz, &r);
    if (s && s->cap)
        r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    else if (s) {
        depvec d = {0};
        stream_deps_locked(s, &d);
        if (d.n)
            r = CUDA_ERROR_NOT_READY;
        free(d.v);
    }
    unlock();
    return r;
}

SIM_API CUresult simc_ctx_sync(void)
{
    lock();
    CUresult r = wait_locked(WAIT_DEVICE, (uint64_t)tls_dev);
    unlock();
    return r;
}

SIM_API CUresult simc_sync_all(void)
{
    lock();
    CUresult r = wait_locked(WAIT_ALL, 0);
    unlock();
    return r;
}

/* ---------------------------------------------------------------- devices */

SIM_API int simc_device_count(void)
{
    lock();
    int n = G.ndev;
    unlock();
    return n;
}

SIM_API int simc_get_device(void)
{
    return tls_dev;
}

SIM_API CUresult simc_set_device(int dev)
{
    lock();
    CUresult r = (dev < 0 || dev >= G.ndev) ? CUDA_ERROR_INVALID_DEVICE : CUDA_SUCCESS;
    if (r == CUDA_SUCCESS)
        tls_dev = dev;
    unlock();
    return r;
}

/* ---------------------------------------------------------------- kernels */

SIM_API int simRegisterKernel(sim_kernel_fn fn, const char *name, int nparams, const size_t *param_sizes)
{
    if (!fn || nparams < 0 || nparams > SIM_MAXPARAMS || (nparams && !param_sizes))
        return -EINVAL;
    lock();
    for (struct CUkern_st *k = G.kernels; k; k = k->next)
        if (k->fn == fn) {
            unlock();
            return 0;
        }
    struct CUkern_st *k = xrealloc(NULL, sizeof(*k));
    memset(k, 0, sizeof(*k));
    k->magic = MAGIC_KERN;
    k->fn = fn;
    snprintf(k->name, sizeof(k->name), "%s", name ? name : "?");
    k->nparams = nparams;
    size_t off = 0;
    for (int i = 0; i < nparams; i++) {
        size_t a = param_sizes[i] < 8 ? param_sizes[i] : 8;
        if (a == 0)
            a = 1;
        off = (off + a - 1) / a * a;
        k->size[i] = param_sizes[i];
        k->off[i] = off;
        off += param_sizes[i];
    }
    k->argsz = off;
    k->next = G.kernels;
    G.kernels = k;
    unlock();
    return 0;
}

SIM_API struct CUkern_st *simc_kernel_lookup(const void *f)
{
    if (!f)
        return NULL;
    lock();
    struct CUkern_st *k;
    for (k = G.kernels; k; k = k->next)
        if ((const void *)k == f || (const void *)k->fn == f)
            break;
    unlock();
    return k;
}

SIM_API CUresult simc_param_info(const void *f, size_t idx, size_t *off, size_t *size)
{
    struct CUkern_st *k = simc_kernel_lookup(f);
    if (!k)
        return CUDA_ERROR_INVALID_HANDLE;
    if (idx >= (size_t)k->nparams)
        return CUDA_ERROR_INVALID_VALUE;
    if (off)
        *off = k->off[idx];
    if (size)
        *size = k->size[idx];
    return CUDA_SUCCESS;
}

/* Copies the argument bytes now, as a launch or node creation must. */
SIM_API CUresult simc_work_kernel(sim_work *w, const void *f, sim_launch l, void **params, void **extra)
{
    memset(w, 0, sizeof(*w));
    struct CUkern_st *k = simc_kernel_lookup(f);
    if (!k)
        return CUDA_ERROR_INVALID_HANDLE;
    if (l.grid.x == 0 || l.grid.y == 0 || l.grid.z == 0 || l.block.x == 0 || l.block.y == 0 ||
        l.block.z == 0 || (uint64_t)l.block.x * l.block.y * l.block.z > 1024)
        return CUDA_ERROR_INVALID_VALUE;
    w->kind = SIM_W_KERNEL;
    w->k = k;
    w->launch = l;
    w->args = xrealloc(NULL, k->argsz);
    memset(w->args, 0, k->argsz);
    if (params) {
        for (int i = 0; i < k->nparams; i++)
            memcpy(w->args + k->off[i], params[i], k->size[i]);
    } else if (extra) {
        void *buf = NULL;
        size_t bufsz = 0;
        int have_size = 0;
        for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
            if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
                buf = extra[i + 1];
            else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) {
                bufsz = *(size_t *)extra[i + 1];
                have_size = 1;
            } else {
                simc_work_free(w);
                return CUDA_ERROR_INVALID_VALUE;
            }
        }
        if (!buf || !have_size || bufsz < k->argsz) {
            simc_work_free(w);
            return CUDA_ERROR_INVALID_VALUE;
        }
        memcpy(w->args, buf, k->argsz);
    } else if (k->nparams) {
        simc_work_free(w);
        return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

/* ----------------------------------------------------------------- memory */

static sim_alloc *alloc_find_locked(const void *p)
{
    for (size_t i = 0; i < G.nallocs; i++) {
        sim_alloc *a = &G.allocs[i];
        if ((const char *)p >= a->base && (const char *)p < a->base + (a->size ? a->size : 1))
            return a;
    }
    return NULL;
}

static void alloc_forget_locked(void *p)
{
    for (size_t i = 0; i < G.nallocs; i++)
        if (G.allocs[i].base == p) {
            G.allocs[i] = G.allocs[--G.nallocs];
            return;
        }
}

static void *alloc_new_locked(size_t n, int kind)
{
    void *p = NULL;
    if (posix_memalign(&p, 256, n ? n : 1))
        return NULL;
    GROW(G.allocs, G.nallocs, G.capallocs);
    G.allocs[G.nallocs++] = (sim_alloc){ .base = p, .size = n, .kind = kind, .device = tls_dev };
    return p;
}

SIM_API int simc_mem_kind(const void *p, int *device)
{
    lock();
    sim_alloc *a = alloc_find_locked(p);
    int k = a ? a->kind : SIM_MEM_PAGEABLE;
    if (device)
        *device = a ? a->device : -1;
    unlock();
    return k;
}

SIM_API CUresult simc_malloc(void **p, size_t n, int kind)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    lock();
    run_some_locked();
    *p = alloc_new_locked(n, kind);
    unlock();
    return *p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

/* Freeing synchronises like the real one: nothing pending may still touch it. */
SIM_API CUresult simc_free(void *p, int kind)
{
    if (!p)
        return CUDA_SUCCESS;
    lock();
    sim_alloc *a = alloc_find_locked(p);
    CUresult r = CUDA_SUCCESS;
    if (!a || a->base != p || a->kind != kind)
        r = CUDA_ERROR_INVALID_VALUE;
    else
        r = wait_locked(WAIT_ALL, 0);
    if (r == CUDA_SUCCESS) {
        alloc_forget_locked(p);
        free(p);
    }
    unlock();
    return r;
}

SIM_API CUresult simc_malloc_async(void **p, size_t n, CUstream h, int ptsz)
{
    CUresult r;
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    lock();
    run_some_locked();
    CUstream s = resolve_locked(h, ptsz, &r);
    if (s) {
        *p = alloc_new_locked(n, SIM_MEM_DEVICE);
        if (!*p)
            r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    unlock();
    return r;
}

SIM_API CUresult simc_free_async(void *p, CUstream h, int ptsz)
{
    CUresult r;
    lock();
    run_some_locked();
    CUstream s = resolve_locked(h, ptsz, &r);
    sim_alloc *a = p ? alloc_find_locked(p) : NULL;
    if (s && (!a || a->base != p || a->kind != SIM_MEM_DEVICE))
        r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) {
        uint64_t id;
        sim_work w = { .kind = s->cap ? SIM_W_NOP : SIM_W_FREE, .freeptr = p };
        r = submit_locked(s, &w, &id);
    }
    unlock();
    return r;
}

/* Pageable sources are staged now and pageable destinations make the call
 * host-synchronous, which is what the real copy engine path does. */
SIM_API CUresult simc_memcpy(CUstream h, int ptsz, void *dst, size_t dpitch, const void *src,
                             size_t spitch, size_t width, size_t height, int blocking)
{
    CUresult r;
    if (width && height && (!dst || !src || dpitch < width || spitch < width))
        return CUDA_ERROR_INVALID_VALUE;
    lock();
    run_some_locked();
    CUstream s = resolve_locked(h, ptsz, &r);
    if (!s) {
        unlock();
        return r;
    }
    sim_alloc *sa = alloc_find_locked(src), *da = alloc_find_locked(dst);
    sim_work w = { .kind = SIM_W_COPY, .dst = dst, .src = src, .dpitch = dpitch, .spitch = spitch,
                   .width = width, .height = height };
    if (!sa && !s->cap && width && height) {
        w.snap = xrealloc(NULL, width * height);
        for (size_t i = 0; i < height; i++)
            memcpy((char *)w.snap + i * width, (const char *)src + i * spitch, width);
        w.src = w.snap;
        w.spitch = width;
    }
    if (!da && !s->cap)
        blocking = 1;
    if (blocking && s->cap) {
        simc_work_free(&w);
        unlock();
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    uint64_t id;
    r = submit_locked(s, &w, &id);
    if (r == CUDA_SUCCESS && blocking)
        r = wait_locked(WAIT_OP, id);
    unlock();
    return r;
}

SIM_API CUresult simc_memset(CUstream h, int ptsz, void *dst, size_t pitch, unsigned value,
                             unsigned elem, size_t width, size_t height, int blocking)
{
    CUresult r;
    if (!dst || (elem != 1 && elem != 2 && elem != 4))
        return CUDA_ERROR_INVALID_VALUE;
    lock();
    run_some_locked();
    CUstream s = resolve_locked(h, ptsz, &r);
    if (s && blocking && s->cap)
        r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (s && r == CUDA_SUCCESS) {
        uint64_t id;
        sim_work w = { .kind = SIM_W_SET, .dst = dst, .dpitch = pitch ? pitch : width * elem,
                       .value = value, .elem = elem, .width = width, .height = height };
        r = submit_locked(s, &w, &id);
        if (r == CUDA_SUCCESS && blocking)
            r = wait_locked(WAIT_OP, id);
    }
    unlock();
    return r;
}

/* ----------------------------------------------------------------- events */

static struct CUevent_st *event_find_locked(CUevent e)
{
    for (struct CUevent_st *x = G.events; x; x = x->next)
        if (x == e)
            return x;
    return NULL;
}

SIM_API CUresult simc_event_create(CUevent *out, unsigned flags)
{
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    if (flags & ~(unsigned)(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS))
        return CUDA_ERROR_INVALID_VALUE;
    lock();
    run_some_locked();
    struct CUevent_st *e = xrealloc(NULL, sizeof(*e));
    memset(e, 0, sizeof(*e));
    e->magic = MAGIC_EVENT;
    e->device = tls_dev;
    e->flags = flags;
    e->next = G.events;
    G.events = e;
    *out = e;
    unlock();
    return CUDA_SUCCESS;
}

SIM_API CUresult simc_event_destroy(CUevent h)
{
    CUresult r = CUDA_ERROR_INVALID_HANDLE;
    lock();
    run_some_locked();
    for (struct CUevent_st **pp = &G.events; *pp; pp = &(*pp)->next)
        if (*pp == h) {
            struct CUevent_st *e = *pp;
            *pp = e->next;
            e->magic = 0;
            free(e->cnodes);
            free(e);
            r = CUDA_SUCCESS;
            break;
        }
    unlock();
    return r;
}

SIM_API CUresult simc_event_record(CUevent h, CUstream sh, int ptsz)
{
    CUresult r;
    lock();
    run_some_locked();
    struct CUevent_st *e = event_find_locked(h);
    CUstream s = resolve_locked(sh, ptsz, &r);
    if (!e)
        r = CUDA_ERROR_INVALID_HANDLE;
    if (r == CUDA_SUCCESS && e->device != s->device)
        r = CUDA_ERROR_INVALID_HANDLE;
    if (r == CUDA_SUCCESS) {
        if (s->cap) {
            /* Inside a capture a record only names the capture frontier. */
            e->cap = s->cap;
            e->cnodes = xrealloc(e->cnodes, (s->ncdeps + 1) * sizeof(CUgraphNode));
            memcpy(e->cnodes, s->cdeps, s->ncdeps * sizeof(CUgraphNode));
            e->ncnodes = s->ncdeps;
        } else {
            uint64_t id;
            sim_work w = { .kind = SIM_W_EVREC, .ev = e };
            submit_locked(s, &w, &id);
            e->rec = id;
            e->cap = NULL;
        }
    }
    unlock();
    return r;
}

SIM_API CUresult simc_stream_wait_event(CUstream sh, int ptsz, CUevent h)
{
    CUresult r;
    lock();
    run_some_locked();
    struct CUevent_st *e = event_find_locked(h);
    CUstream s = resolve_locked(sh, ptsz, &r);
    if (!e)
        r = CUDA_ERROR_INVALID_HANDLE;
    if (r == CUDA_SUCCESS && e->cap) {
        /* Waiting on a captured event joins the stream into that capture. */
        if (s->cap && s->cap != e->cap)
            r = CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
        else {
            if (!s->cap) {
                s->cap = e->cap;
                s->ncdeps = 0;
            }
            for (size_t i = 0; i < e->ncnodes; i++) {
                size_t j;
                for (j = 0; j < s->ncdeps; j++)
                    if (s->cdeps[j] == e->cnodes[i])
                        break;
                if (j == s->ncdeps) {
                    GROW(s->cdeps, s->ncdeps, s->capcdeps);
                    s->cdeps[s->ncdeps++] = e->cnodes[i];
                }
            }
        }
    } else if (r == CUDA_SUCCESS && !s->cap && e->rec && !done(e->rec)) {
        GROW(s->waits, s->nwaits, s->capwaits);
        s->waits[s->nwaits++] = e->rec;
    }
    unlock();
    return r;
}

SIM_API CUresult simc_event_query(CUevent h)
{
    lock();
    run_some_always_locked(1);
    struct CUevent_st *e = event_find_locked(h);
    CUresult r = !e ? CUDA_ERROR_INVALID_HANDLE : done(e->rec) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
    unlock();
    return r;
}

SIM_API CUresult simc_event_sync(CUevent h)
{
    lock();
    struct CUevent_st *e = event_find_locked(h);
    CUresult r = !e ? CUDA_ERROR_INVALID_HANDLE : wait_locked(WAIT_OP, e->rec);
    unlock();
    return r;
}

/* Elapsed time is the distance in completed ops, so it is reproducible. */
SIM_API CUresult simc_event_elapsed(float *ms, CUevent a, CUevent b)
{
    if (!ms)
        return CUDA_ERROR_INVALID_VALUE;
    lock();
    run_some_locked();
    struct CUevent_st *ea = event_find_locked(a), *eb = event_find_locked(b);
    CUresult r = CUDA_SUCCESS;
    if (!ea || !eb || (ea->flags & CU_EVENT_DISABLE_TIMING) || (eb->flags & CU_EVENT_DISABLE_TIMING) ||
        !ea->rec || !eb->rec)
        r = CUDA_ERROR_INVALID_HANDLE;
    else if (!done(ea->rec) || !done(eb->rec))
        r = CUDA_ERROR_NOT_READY;
    else {
        uint64_t ta = G.tick[ea->rec], tb = G.tick[eb->rec];
        *ms = tb > ta ? (float)(tb - ta) * 0.001f : 0.0f;
    }
    unlock();
    return r;
}

/* ----------------------------------------------------------------- graphs */

static int graph_ok(CUgraph g)
{
    return g && g->magic == MAGIC_GRAPH;
}

static int node_ok(CUgraphNode n)
{
    return n && n->magic == MAGIC_NODE;
}

static CUresult graph_add_locked(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n,
                                 sim_work *w)
{
    if (!graph_ok(g) || (n && !deps))
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < n; i++)
        if (!node_ok(deps[i]) || deps[i]->graph != g)
            return CUDA_ERROR_INVALID_VALUE;
    struct CUgraphNode_st *node = xrealloc(NULL, sizeof(*node));
    memset(node, 0, sizeof(*node));
    node->magic = MAGIC_NODE;
    node->graph = g;
    node->index = g->n;
    node->w = *w;
    node->deps = xrealloc(NULL, (n + 1) * sizeof(CUgraphNode));
    memcpy(node->deps, deps, n * sizeof(CUgraphNode));
    node->ndeps = n;
    node->capdeps = n + 1;
    GROW(g->nodes, g->n, g->cap);
    g->nodes[g->n++] = node;
    if (out)
        *out = node;
    return CUDA_SUCCESS;
}

SIM_API CUresult simc_graph_create(CUgraph *out)
{
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUgraph_st *g = xrealloc(NULL, sizeof(*g));
    memset(g, 0, sizeof(*g));
    g->magic = MAGIC_GRAPH;
    *out = g;
    return CUDA_SUCCESS;
}

SIM_API CUresult simc_graph_destroy(CUgraph g)
{
    if (!graph_ok(g))
        return CUDA_ERROR_INVALID_VALUE;
    lock();
    for (size_t i = 0; i < g->n; i++) {
        simc_work_free(&g->nodes[i]->w);
        free(g->nodes[i]->deps);
        g->nodes[i]->magic = 0;
        free(g->nodes[i]);
    }
    free(g->nodes);
    g->magic = 0;
    free(g);
    unlock();
    return CUDA_SUCCESS;
}

SIM_API CUresult simc_graph_add(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n, sim_work *w)
{
    if (!out) {
        simc_work_free(w);
        return CUDA_ERROR_INVALID_VALUE;
    }
    lock();
    CUresult r = graph_add_locked(out, g, deps, n, w);
    if (r != CUDA_SUCCESS)
        simc_work_free(w);
    unlock();
    return r;
}

SIM_API CUresult simc_graph_add_deps(CUgraph g, const CUgraphNode *from, const CUgraphNode *to, size_t n)
{
    if (!graph_ok(g) || (n && (!from || !to)))
        return CUDA_ERROR_INVALID_VALUE;
    lock();
    CUresult r = CUDA_SUCCESS;
    for (size_t i = 0; i < n && r == CUDA_SUCCESS; i++) {
        if (!node_ok(from[i]) || !node_ok(to[i]) || from[i]->graph != g || to[i]->graph != g ||
            from[i] == to[i]) {
            r = CUDA_ERROR_INVALID_VALUE;
            break;
        }
        struct CUgraphNode_st *t = to[i];
        for (size_t j = 0; j < t->ndeps; j++)
            if (t->deps[j] == from[i])
                r = CUDA_ERROR_INVALID_VALUE;
        if (r != CUDA_SUCCESS)
            break;
        GROW(t->deps, t->ndeps, t->capdeps);
        t->deps[t->ndeps++] = from[i];
    }
    unlock();
    return r;
}

SIM_API CUresult simc_graph_get_nodes(CUgraph g, CUgraphNode *nodes, size_t *n)
{
    if (!graph_ok(g) || !n)
        return CUDA_ERROR_INVALID_VALUE;
    lock();
    if (nodes) {
        size_t k = *n < g->n ? *n : g->n;
        for (size_t i = 0; i < k; i++)
            nodes[i] = g->nodes[i];
        for (size_t i = k; i < *n; i++)
            nodes[i] = NULL;
        *n = k;
    } else {
        *n = g->n;
    }
    unlock();
    return CUDA_SUCCESS;
}

SIM_API int simc_node_kind(CUgraphNode n)
{
    return node_ok(n) ? n->w.kind : -1;
}

static void exec_free(CUgraphExec e)
{
    for (size_t i = 0; i < e->n; i++) {
        simc_work_free(&e->w[i]);
        free(e->deps[i]);
    }
    free(e->w);
    free(e->deps);
    free(e->ndeps);
    free(e->order);
    e->magic = 0;
    free(e);
}

SIM_API CUresult simc_graph_instantiate(CUgraphExec *out, CUgraph g)
{
    if (!out || !graph_ok(g))
        return CUDA_ERROR_INVALID_VALUE;
    lock();
    struct CUgraphExec_st *e = xrealloc(NULL, sizeof(*e));
    size_t n = g->n;
    e->magic = MAGIC_EXEC;
    e->n = n;
    e->w = xrealloc(NULL, (n + 1) * sizeof(sim_work));
    e->deps = xrealloc(NULL, (n + 1) * sizeof(size_t *));
    e->ndeps = xrealloc(NULL, (n + 1) * sizeof(size_t));
    e->order = xrealloc(NULL, (n + 1) * sizeof(size_t));
    for (size_t i = 0; i < n; i++) {
        struct CUgraphNode_st *node = g->nodes[i];
        simc_work_copy(&e->w[i], &node->w);
        e->ndeps[i] = node->ndeps;
        e->deps[i] = xrealloc(NULL, (node->ndeps + 1) * sizeof(size_t));
        for (size_t j = 0; j < node->ndeps; j++)
            e->deps[i][j] = node->deps[j]->index;
    }
    /* Kahn's algorithm; a cycle is refused as the real instantiate does. */
    char *placed = calloc(n + 1, 1);
    size_t k = 0;
    int progress = 1;
    while (k < n && progress) {
        progress = 0;
        for (size_t i = 0; i < n; i++) {
            if (placed[i])
                continue;
            size_t j;
            for (j = 0; j < e->ndeps[i]; j++)
                if (!placed[e->deps[i][j]])
                    break;
            if (j == e->ndeps[i]) {
                placed[i] = 1;
                e->order[k++] = i;
                progress = 1;
            }
        }
    }
    free(placed);
    CUresult r = CUDA_SUCCESS;
    if (k < n) {
        exec_free(e);
        r = CUDA_ERROR_INVALID_VALUE;
    } else {
        *out = e;
    }
    unlock();
    return r;
}

SIM_API CUresult simc_exec_destroy(CUgraphExec e)
{
    if (!e || e->magic != MAGIC_EXEC)
        return CUDA_ERROR_INVALID_VALUE;
    lock();
    exec_free(e);
    unlock();
    return CUDA_SUCCESS;
}

/* Consumes w. Ops already launched hold their own copies, so this cannot
 * reach back into submitted work. */
SIM_API CUresult simc_exec_set(CUgraphExec e, CUgraphNode node, int kind, sim_work *w)
{
    CUresult r = CUDA_SUCCESS;
    lock();
    if (!e || e->magic != MAGIC_EXEC || !node_ok(node) || node->index >= e->n ||
        e->w[node->index].kind != kind || w->kind != kind)
        r = CUDA_ERROR_INVALID_VALUE;
    else if (kind == SIM_W_KERNEL && e->w[node->index].k != w->k)
        r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) {
        simc_work_free(&e->w[node->index]);
        e->w[node->index] = *w;
    } else {
        simc_work_free(w);
    }
    unlock();
    return r;
}

SIM_API CUresult simc_exec_update(CUgraphExec e, CUgraph g, CUgraphNode *err)
{
    if (err)
        *err = NULL;
    if (!e || e->magic != MAGIC_EXEC || !graph_ok(g))
        return CUDA_ERROR_INVALID_VALUE;
    lock();
    CUresult r = CUDA_SUCCESS;
    if (g->n != e->n)
        r = CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
    for (size_t i = 0; i < g->n && r == CUDA_SUCCESS; i++) {
        struct CUgraphNode_st *node = g->nodes[i];
        int same = node->w.kind == e->w[i].kind && node->ndeps == e->ndeps[i];
        for (size_t j = 0; same && j < node->ndeps; j++)
            same = node->deps[j]->index == e->deps[i][j];
        if (same && node->w.kind == SIM_W_KERNEL)
            same = node->w.k == e->w[i].k;
        if (!same) {
            r = CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
            if (err)
                *err = node;
        }
    }
    for (size_t i = 0; i < g->n && r == CUDA_SUCCESS; i++) {
        simc_work_free(&e->w[i]);
        simc_work_copy(&e->w[i], &g->nodes[i]->w);
    }
    unlock();
    return r;
}

/* SIM_GRAPH_LAUNCH_US makes each graph launch cost that much host time, so
 * tests can see what a replay that saves nothing does. */
static void simc_graph_launch_delay(void)
{
    static long us = -1;
    if (us < 0) {
        const char *v = getenv("SIM_GRAPH_LAUNCH_US");
        us = v ? strtol(v, NULL, 10) : 0;
    }
    if (us > 0) {
        struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };
        nanosleep(&ts, NULL);
    }
}

SIM_API CUresult simc_graph_launch(CUgraphExec e, CUstream h, int ptsz)
{
    CUresult r;
    if (!e || e->magic != MAGIC_EXEC)
        return CUDA_ERROR_INVALID_VALUE;
    simc_graph_launch_delay();
    lock();
    run_some_locked();
    CUstream s = resolve_locked(h, ptsz, &r);
    if (s && s->cap)
        r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (r != CUDA_SUCCESS) {
        unlock();
        return r;
    }
    depvec sd = {0};
    stream_deps_locked(s, &sd);
    uint64_t *ids = xrealloc(NULL, (e->n + 1) * sizeof(uint64_t));
    depvec all = {0};
    for (size_t k = 0; k < e->n; k++) {
        size_t i = e->order[k];
        sim_work w;
        simc_work_copy(&w, &e->w[i]);
        depvec d = {0};
        if (!e->ndeps[i])
            for (size_t j = 0; j < sd.n; j++)
                dv_add(&d, sd.v[j]);
        for (size_t j = 0; j < e->ndeps[i]; j++)
            dv_add(&d, ids[e->deps[i][j]]);
        struct CUevent_st *ev = w.ev ? event_find_locked(w.ev) : NULL;
        if (w.kind == SIM_W_EVWAIT && ev && ev->rec)
            dv_add(&d, ev->rec);
        ids[i] = op_create(s->device, &w, &d);
        if (w.kind == SIM_W_EVREC && ev) {
            ev->rec = ids[i];
            ev->cap = NULL;
        }
        dv_add(&all, ids[i]);
    }
    if (!e->n)
        for (size_t j = 0; j < sd.n; j++)
            dv_add(&all, sd.v[j]);
    sim_work join = { .kind = SIM_W_NOP };
    stream_advance_locked(s, op_create(s->device, &join, &all));
    free(sd.v);
    free(ids);
    unlock();
    return CUDA_SUCCESS;
}

/* ---------------------------------------------------------------- capture */

SIM_API CUresult simc_capture_begin(CUstream h, int ptsz, int mode)
{
    CUresult r;
    (void)mode;
    lock();
    run_some_locked();
    CUstream s = resolve_locked(h, ptsz, &r);
    if (s && s->kind == STREAM_LEGACY)
        r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    else if (s && s->cap)
        r = CUDA_ERROR_ILLEGAL_STATE;
    if (r == CUDA_SUCCESS) {
        sim_capture *c = xrealloc(NULL, sizeof(*c));
        simc_graph_create(&c->graph);
        c->origin = s;
        c->id = ++G.capture_ids;
        s->cap = c;
        s->ncdeps = 0;
    }
    unlock();
    return r;
}

SIM_API CUresult simc_capture_end(CUstream h, int ptsz, CUgraph *g)
{
    CUresult r;
    if (!g)
        return CUDA_ERROR_INVALID_VALUE;
    lock();
    run_some_locked();
    CUstream s = resolve_locked(h, ptsz, &r);
    if (s && !s->cap)
        r = CUDA_ERROR_ILLEGAL_STATE;
    else if (s && s->cap->origin != s)
        r = CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
    if (r == CUDA_SUCCESS) {
        sim_capture *c = s->cap;
        for (struct CUstream_st *t = G.streams; t; t = t->next)
            if (t->cap == c) {
                t->cap = NULL;
                t->ncdeps = 0;
            }
        for (struct CUevent_st *e = G.events; e; e = e->next)
            if (e->cap == c)
                e->cap = NULL;
        *g = c->graph;
        free(c);
    }
    unlock();
    return r;
}

SIM_API CUresult simc_capture_info(CUstream h, int ptsz, CUstreamCaptureStatus *st, cuuint64_t *id,
                                   CUgraph *g, const CUgraphNode **deps, size_t *ndeps)
{
    CUresult r;
    if (!st)
        return CUDA_ERROR_INVALID_VALUE;
    lock();
    CUstream s = resolve_locked(h, ptsz, &r);
    if (s) {
        *st = s->cap ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
        if (id && s->cap)
            *id = s->cap->id;
        if (g)
            *g = s->cap ? s->cap->graph : NULL;
        if (deps)
            *deps = s->cap ? s->cdeps : NULL;
        if (ndeps)
            *ndeps = s->cap ? s->ncdeps : 0;
    }
    unlock();
    return r;
}

SIM_API CUresult simc_capture_exchange_mode(int *mode)
{
    if (!mode)
        return CUDA_ERROR_INVALID_VALUE;
    int old = tls_capmode;
    tls_capmode = *mode;
    *mode = old;
    return CUDA_SUCCESS;
}
