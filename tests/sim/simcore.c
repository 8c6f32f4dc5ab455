/* Simulated CUDA device core: memory table, kernels registry, contexts, streams,
 * events, the pending-op scheduler that runs work in a random valid order (inside
 * API calls, or on an optional device thread), capture and graphs. */
#define _GNU_SOURCE
/* Exports stay exported even if the parent project builds with -fvisibility=hidden. */
#pragma GCC visibility push(default)
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
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
#define MAGIC_CTX 0x43545854u
#define MAGIC_FUNC 0x46554e43u
#define MAGIC_MOD 0x4d4f4455u
#define MAGIC_LIB 0x4c494252u

#define CTX_STACK 16                /* a thread's stack of current contexts */
#define PT_SLOTS 32                 /* a thread's per-thread streams, one per context */
#define POLL_NS 200000L             /* how often waits on memory look again */

enum { STREAM_USER, STREAM_LEGACY, STREAM_PTDS };
enum { FUNC_MODULE, FUNC_LIBKERNEL, FUNC_LIBFUNC };

typedef struct sim_capture {
    CUgraph graph;
    CUstream origin;
    unsigned long long id;
    int into;                       /* capturing into the program's own graph */
} sim_capture;

struct CUstream_st {
    uint32_t magic;
    int device, kind, prio;
    unsigned flags;
    struct CUctx_st *ctx;
    uint64_t last;                  /* last op submitted, 0 when none */
    uint64_t *waits;                /* ops the next op must also wait for */
    size_t nwaits, capwaits;
    sim_capture *cap;
    CUgraphNode *cdeps;             /* capture frontier */
    size_t ncdeps, capcdeps;
    struct CUstream_st *next;       /* live list, or the free list once destroyed */
};

/* Streams, events, allocations, graph execs and modules belong to the context
 * current at their creation; tearing one down ends them all. */
struct CUctx_st {
    uint32_t magic;
    int device, primary, alive;
    unsigned flags;
    unsigned long long id;
    uint32_t gen;                   /* bumped at every teardown: older per-thread streams are gone */
    int retains;
    struct CUstream_st legacy;
    struct CUctx_st *next;          /* free list */
    struct CUctx_st *all;           /* every context ever created, for handle checks */
};

struct CUevent_st {
    uint32_t magic;
    struct CUctx_st *ctx;
    unsigned flags;
    uint64_t rec;                   /* op of the latest record, 0 when never */
    sim_capture *cap;               /* set while recorded inside a capture */
    CUgraphNode *cnodes;
    size_t ncnodes;
    struct CUevent_st *next;        /* live list, or the free list */
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
    int instantiated;               /* with device-updatable nodes: once only */
};

/* Child graphs are flattened: slots 0..ntop-1 are the graph's own nodes (a
 * child graph node becomes a join of its nodes), its children's follow. */
struct CUgraphExec_st {
    uint32_t magic;
    struct CUctx_st *ctx;
    size_t n, ntop;
    sim_work *w;                    /* by slot */
    size_t **deps;                  /* by slot: slots */
    size_t *ndeps;
    size_t *order;                  /* a topological order */
    unsigned launches;              /* launches asked for (SIM_GRAPH_LAUNCH_FAIL) */
    unsigned updates;               /* node updates asked for (SIM_EXEC_UPDATE_FAIL) */
    CUgraph graph;                  /* instantiated from (device node handles name its nodes) */
    unsigned char *off;             /* by slot: disabled */
    int uploaded;
    struct CUgraphExec_st *next;    /* live list, or the free list */
};

/* A function of a module, or a kernel of a library and its function: handles
 * of their own, unlike the runtime's kernels, which are their registry entries. */
struct CUfunc_st {
    uint32_t magic;
    int kind;
    struct CUkern_st *k;
    struct CUmod_st *mod;
    struct CUlib_st *lib;
    struct CUfunc_st *kernel;       /* FUNC_LIBFUNC: its library kernel, which holds the attributes */
    struct CUfunc_st *func;         /* FUNC_LIBKERNEL: its function, made on demand */
    unsigned maxdyn;                /* dynamic shared memory limit + 1, 0: default */
    struct CUfunc_st *next;         /* live list, or the free list */
};

typedef struct sim_image {
    size_t n;
    struct CUkern_st **k;
    struct CUfunc_st **h;           /* handles by name, made on demand */
} sim_image;

struct CUmod_st {
    uint32_t magic;
    struct CUctx_st *ctx;
    sim_image img;
    struct CUmod_st *next;
};

struct CUlib_st {
    uint32_t magic;
    sim_image img;
    struct CUlib_st *next;
};

typedef struct sim_op {
    uint64_t id;
    struct CUctx_st *ctx;
    int running;
    uint64_t *deps;
    size_t ndeps;
    sim_work w;
} sim_op;

typedef struct sim_alloc {
    char *base;
    size_t size;
    int kind, device;
    struct CUctx_st *ctx;
    unsigned flags;
    int pooled;                     /* allocated in stream order, its free not yet called */
    unsigned long long id;
} sim_alloc;

typedef struct sim_symcopy {
    struct CUctx_st *ctx;
    uint32_t gen;
    void *dev;
} sim_symcopy;

typedef struct sim_symbol {
    const void *host;
    size_t size;
    unsigned char *init;
    sim_symcopy *copies;
    size_t ncopies, capcopies;
    struct sim_symbol *next;
} sim_symbol;

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int inited, ndev, trace, forked;
    unsigned eager;                 /* 0..3: how often API calls run ready work */
    uint64_t rng;
    uint64_t next_id, clock;
    uint64_t *tick;                 /* completion clock by op id, 0 while pending */
    size_t ntick;
    sim_op **pending;
    size_t npending, cappending;
    int running;
    size_t nvalwait;                /* pending ops that wait on a memory value */
    int dt_on;                      /* the device thread runs */
    pthread_t dt;
    struct CUstream_st *streams, *stream_free;   /* live user and per-thread streams */
    struct CUevent_st *events, *event_free;
    struct CUgraphExec_st *execs, *exec_free;
    struct CUfunc_st *funcs, *func_free;
    struct CUmod_st *mods, *mod_free;
    struct CUlib_st *libs, *lib_free;
    struct CUctx_st primary[SIM_MAXDEV];
    struct CUctx_st *ctx_all, *ctx_free;
    unsigned long long ctx_ids, alloc_ids;
    struct CUkern_st *kernels;
    sim_symbol *symbols;
    sim_alloc *allocs;
    size_t nallocs, capallocs;
    /* Device and pinned memory freed, kept to be handed out again at the
     * same address to an allocation of the same size and kind, as a
     * driver's allocator does. */
    struct { void *p; size_t n; int kind; } spare[16];
    int nspare;
    /* Bytes allocated in stream order whose free was not called yet: a free
     * in stream order gives its memory back at the call (the pool hands it
     * out again to work ordered after it), and SIM_POOL_LIMIT bounds them. */
    size_t pool_used;
    unsigned long long capture_ids;
} G = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

static __thread int tls_dev;        /* the device the runtime last selected */
static __thread int tls_in_op;
static __thread struct CUctx_st *tls_stack[CTX_STACK];
static __thread int tls_depth;
static __thread struct {
    struct CUctx_st *ctx;
    uint32_t gen;
    struct CUstream_st *s;
} tls_pt[PT_SLOTS];
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

/* env_uint(name, 0), read once into cache (UINT_MAX until then). */
static unsigned env_cached(atomic_uint *cache, const char *name)
{
    unsigned v = atomic_load_explicit(cache, memory_order_relaxed);
    if (v == UINT_MAX)
        atomic_store(cache, v = env_uint(name, 0));
    return v;
}

static void legacy_init(struct CUctx_st *c)
{
    memset(&c->legacy, 0, sizeof(c->legacy));
    c->legacy.magic = MAGIC_STREAM;
    c->legacy.device = c->device;
    c->legacy.kind = STREAM_LEGACY;
    c->legacy.ctx = c;
}

/* A forked child inherits the parent's device state but, as with a real
 * driver, may not use it: its calls fail and no inherited work runs there. */
static void fork_prepare(void)
{
    pthread_mutex_lock(&G.mu);
}

static void fork_parent(void)
{
    pthread_mutex_unlock(&G.mu);
}

static void fork_child(void)
{
    G.forked = 1;
    G.dt_on = 0;                    /* threads do not survive fork */
    pthread_cond_init(&G.cv, NULL);
    pthread_mutex_unlock(&G.mu);
}

static void dt_start_locked(void);

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
        struct CUctx_st *c = &G.primary[d];
        c->magic = MAGIC_CTX;
        c->device = d;
        c->primary = 1;
        c->alive = 1;
        c->id = ++G.ctx_ids;
        legacy_init(c);
    }
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    if (env_uint("SIM_DEVICE_THREAD", 0))
        dt_start_locked();
}

/* SIM_JITTER_US: every call first yields or sleeps up to that long, at
 * random (a per-thread generator, apart from the simulation's own), so two
 * host threads, the device thread and a program's timers meet in orders a
 * quiet machine rarely shows. Results must not change: the program's
 * ordering is all that orders its work. */
static void jitter(void)
{
    static atomic_uint max = UINT_MAX;
    static _Thread_local uint64_t r;
    unsigned us = env_cached(&max, "SIM_JITTER_US");
    if (!us)
        return;
    if (!r)
        r = 0x9E3779B97F4A7C15ull ^ (uint64_t)(uintptr_t)&r ^ (uint64_t)clock();
    r ^= r << 13;
    r ^= r >> 7;
    r ^= r << 17;
    if (r % 4 == 0) {
        long ns = (long)(r >> 8) % ((long)us * 1000 + 1);
        struct timespec ts = { ns / 1000000000, ns % 1000000000 };
        nanosleep(&ts, NULL);
    } else if (r % 4 == 1) {
        sched_yield();
    }
}

static void lock(void)
{
    jitter();
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

/* The calling thread's current context: the top of its stack, else the primary
 * context of the device it selected (what the runtime would make current). */
static struct CUctx_st *cur_locked(CUresult *err)
{
    if (G.forked) {
        *err = CUDA_ERROR_NOT_INITIALIZED;
        return NULL;
    }
    struct CUctx_st *c = tls_depth ? tls_stack[tls_depth - 1] : NULL;
    if (!c)
        c = &G.primary[tls_dev];
    if (!c->alive) {
        *err = CUDA_ERROR_CONTEXT_IS_DESTROYED;
        return NULL;
    }
    *err = CUDA_SUCCESS;
    return c;
}

static int ctx_ok_locked(const struct CUctx_st *c)
{
    if (!c)
        return 0;
    for (int d = 0; d < G.ndev; d++)
        if (c == &G.primary[d])
            return 1;
    for (struct CUctx_st *x = G.ctx_all; x; x = x->all)
        if (x == c)
            return x->alive;
    return 0;
}

/* ------------------------------------------------------------------ work */

static void graph_free_unlocked(CUgraph g);
static CUgraph graph_clone_unlocked(CUgraph g);

SIM_API void simc_work_free(sim_work *w)
{
    free(w->args);
    free(w->snap);
    if (w->child)
        graph_free_unlocked(w->child);
    w->args = NULL;
    w->snap = NULL;
    w->child = NULL;
}

static size_t work_depth(const sim_work *w)
{
    return w->depth ? w->depth : 1;
}

SIM_API CUresult simc_work_copy(sim_work *to, const sim_work *from)
{
    *to = *from;
    to->args = NULL;
    to->snap = NULL;
    to->child = NULL;
    if (from->args && from->k) {
        to->args = xrealloc(NULL, from->k->argsz);
        memcpy(to->args, from->args, from->k->argsz);
    }
    if (from->snap) {
        size_t n = from->width * from->height * work_depth(from);
        to->snap = xrealloc(NULL, n);
        memcpy(to->snap, from->snap, n);
        to->src = to->snap;
    }
    if (from->child)
        to->child = graph_clone_unlocked(from->child);
    return CUDA_SUCCESS;
}

/* Whether a wait op's condition holds now; the scheduler asks again each time
 * it looks for ready work, since any thread may change the memory. */
static int value_ready(const sim_work *w)
{
    uint64_t v, x = w->value64;
    int geq;
    if (w->elem == 8) {
        v = __atomic_load_n((const uint64_t *)w->dst, __ATOMIC_ACQUIRE);
        geq = (int64_t)(v - x) >= 0;
    } else {
        v = __atomic_load_n((const uint32_t *)w->dst, __ATOMIC_ACQUIRE);
        x = (uint32_t)x;
        geq = (int32_t)(uint32_t)(v - x) >= 0;
    }
    switch (w->memflags & 3u) {
    case CU_STREAM_WAIT_VALUE_GEQ:
        return geq;
    case CU_STREAM_WAIT_VALUE_EQ:
        return v == x;
    case CU_STREAM_WAIT_VALUE_AND:
        return (v & x) != 0;
    default: /* NOR */
        return w->elem == 8 ? ~(v | x) != 0 : (uint32_t) ~(v | x) != 0;
    }
}

static void work_run(sim_work *w)
{
    size_t nz = work_depth(w);
    switch (w->kind) {
    case SIM_W_KERNEL: {
        void *ptrs[SIM_MAXPARAMS];
        for (int i = 0; i < w->k->nparams; i++)
            ptrs[i] = w->args + w->k->off[i];
        w->k->fn(&w->launch, ptrs);
        break;
    }
    case SIM_W_COPY:
        for (size_t z = 0; z < nz; z++)
            for (size_t r = 0; r < w->height; r++)
                memmove((char *)w->dst + z * w->dslice + r * w->dpitch,
                        (const char *)w->src + z * w->sslice + r * w->spitch, w->width);
        break;
    case SIM_W_SET:
        for (size_t z = 0; z < nz; z++)
            for (size_t r = 0; r < w->height; r++) {
                char *row = (char *)w->dst + z * w->dslice + r * w->dpitch;
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
    case SIM_W_FREE: /* released as it started (alloc_release_locked) */
        break;
    case SIM_W_WRITEVAL:
        if (w->elem == 8)
            __atomic_store_n((uint64_t *)w->dst, w->value64, __ATOMIC_RELEASE);
        else
            __atomic_store_n((uint32_t *)w->dst, (uint32_t)w->value64, __ATOMIC_RELEASE);
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
    return op->w.kind != SIM_W_WAITVAL || value_ready(&op->w);
}

static void alloc_forget_locked(void *p);
static void alloc_release_locked(void *p);

/* Runs one randomly chosen ready op; the mutex is released meanwhile so that
 * host functions and other threads make progress. Returns 0 when none was ready. */
static int run_one_locked(void)
{
    if (tls_in_op || !G.npending || G.forked)
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
    if (!op)                        /* a value changed between the two passes */
        return 0;
    op->running = 1;
    G.running++;
    if (op->w.kind == SIM_W_FREE)
        alloc_release_locked(op->w.freeptr);
    if (G.trace)
        fprintf(stderr, "sim: run op %llu kind %d %s\n", (unsigned long long)op->id, op->w.kind,
                op->w.kind == SIM_W_KERNEL ? op->w.k->name : "");
    unlock();
    tls_in_op = 1;
    work_run(&op->w);
    tls_in_op = 0;
    lock();
    G.running--;
    if (op->w.kind == SIM_W_WAITVAL)
        G.nvalwait--;
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

/* Sleeps on the condition at most POLL_NS: memory a wait op reads may change
 * with no call into the simulator. */
static void poll_wait_locked(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += POLL_NS;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&G.cv, &G.mu, &ts);
}

enum { WAIT_OP, WAIT_CTX, WAIT_ALL };

static int wait_pred(int what, uint64_t arg)
{
    if (what == WAIT_OP)
        return done(arg);
    for (size_t i = 0; i < G.npending; i++)
        if (what == WAIT_ALL || (uintptr_t)G.pending[i]->ctx == arg)
            return 0;
    return 1;
}

static CUresult wait_locked(int what, uint64_t arg)
{
    while (!wait_pred(what, arg)) {
        if (tls_in_op)
            return CUDA_ERROR_NOT_PERMITTED;
        if (G.forked)
            return CUDA_ERROR_NOT_INITIALIZED;
        if (run_one_locked())
            continue;
        if (G.nvalwait) {
            poll_wait_locked();
            continue;
        }
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

/* The device thread: runs whatever is ready as soon as it is, like a GPU. */
static void *dt_main(void *arg)
{
    (void)arg;
    lock();
    while (G.dt_on) {
        if (run_one_locked())
            continue;
        if (G.nvalwait)
            poll_wait_locked();
        else
            pthread_cond_wait(&G.cv, &G.mu);
    }
    unlock();
    return NULL;
}

static void dt_start_locked(void)
{
    if (G.dt_on)
        return;
    G.dt_on = 1;
    if (pthread_create(&G.dt, NULL, dt_main, NULL)) {
        fprintf(stderr, "sim: cannot start the device thread\n");
        G.dt_on = 0;
    }
}

SIM_API void simSetDeviceThread(int on)
{
    lock();
    if (on) {
        dt_start_locked();
        unlock();
        return;
    }
    if (!G.dt_on) {
        unlock();
        return;
    }
    G.dt_on = 0;
    pthread_t t = G.dt;
    pthread_cond_broadcast(&G.cv);
    unlock();
    if (pthread_equal(t, pthread_self()))
        pthread_detach(t);          /* called from work the device thread runs */
    else
        pthread_join(t, NULL);
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

static uint64_t op_create(struct CUctx_st *ctx, sim_work *w, depvec *deps)
{
    sim_op *op = xrealloc(NULL, sizeof(*op));
    op->id = G.next_id++;
    op->ctx = ctx;
    op->running = 0;
    op->deps = deps->v;
    op->ndeps = deps->n;
    op->w = *w;
    deps->v = NULL;
    deps->n = deps->cap = 0;
    set_tick(op->id, 0);
    GROW(G.pending, G.npending, G.cappending);
    G.pending[G.npending++] = op;
    if (w->kind == SIM_W_WAITVAL)
        G.nvalwait++;
    if (G.dt_on)
        pthread_cond_broadcast(&G.cv);
    return op->id;
}

/* ---------------------------------------------------------------- streams */

static int stream_blocking(const struct CUstream_st *s)
{
    return !(s->flags & CU_STREAM_NON_BLOCKING);
}

/* Destroyed streams go to a free list and come back first: a new stream gets
 * the address of the last one destroyed, as with the real driver. */
static struct CUstream_st *stream_new_locked(struct CUctx_st *c, int kind, unsigned flags, int prio)
{
    struct CUstream_st *s = G.stream_free;
    if (s)
        G.stream_free = s->next;
    else
        s = xrealloc(NULL, sizeof(*s));
    memset(s, 0, sizeof(*s));
    s->magic = MAGIC_STREAM;
    s->ctx = c;
    s->device = c->device;
    s->kind = kind;
    s->flags = flags;
    s->prio = prio;
    s->next = G.streams;
    G.streams = s;
    return s;
}

static void capture_abandon_locked(sim_capture *c);

/* s is already off the live list. */
static void stream_kill_locked(struct CUstream_st *s)
{
    if (s->cap && s->cap->origin == s)
        capture_abandon_locked(s->cap);
    s->magic = 0;
    free(s->waits);
    free(s->cdeps);
    s->waits = NULL;
    s->cdeps = NULL;
    s->next = G.stream_free;
    G.stream_free = s;
}

static struct CUstream_st *ptds_locked(struct CUctx_st *c)
{
    int slot = -1;
    for (int i = 0; i < PT_SLOTS; i++) {
        if (tls_pt[i].s && tls_pt[i].ctx == c && tls_pt[i].gen == c->gen)
            return tls_pt[i].s;
        if (slot < 0 && (!tls_pt[i].s || tls_pt[i].gen != tls_pt[i].ctx->gen))
            slot = i;
    }
    if (slot < 0)
        slot = 0;
    tls_pt[slot].ctx = c;
    tls_pt[slot].gen = c->gen;
    tls_pt[slot].s = stream_new_locked(c, STREAM_PTDS, 0, 0);
    return tls_pt[slot].s;
}

static CUstream resolve_locked(CUstream h, int ptsz, CUresult *err)
{
    struct CUctx_st *c = cur_locked(err);
    if (!c)
        return NULL;
    if ((h == NULL && !ptsz) || h == CU_STREAM_LEGACY)
        return &c->legacy;
    if (h == NULL || h == CU_STREAM_PER_THREAD)
        return ptds_locked(c);
    for (struct CUstream_st *s = G.streams; s; s = s->next)
        if (s == h)
            return s;
    *err = CUDA_ERROR_INVALID_HANDLE;
    return NULL;
}

/* What a stream's next op waits for: its last op and the event waits made
 * since. */
static void stream_tail_locked(const struct CUstream_st *s, depvec *d)
{
    dv_add(d, s->last);
    for (size_t i = 0; i < s->nwaits; i++)
        dv_add(d, s->waits[i]);
}

/* The work a synchronisation or query of s covers: its own, and for the
 * legacy stream every blocking stream's (which it waits on first); not the
 * legacy stream's for a blocking one, whose later work only waits on it. */
static void stream_work_locked(CUstream s, depvec *d)
{
    stream_tail_locked(s, d);
    if (s->kind == STREAM_LEGACY)
        for (struct CUstream_st *t = G.streams; t; t = t->next)
            if (t->ctx == s->ctx && stream_blocking(t))
                stream_tail_locked(t, d);
}

/* Dependencies of the next op on s, by the legacy-stream rules of its
 * context: the legacy stream first waits on all blocking streams, then they
 * wait on it, event waits included (a wait is an action in its stream). */
static void stream_deps_locked(CUstream s, depvec *d)
{
    stream_work_locked(s, d);
    if (s->kind != STREAM_LEGACY && stream_blocking(s))
        stream_tail_locked(&s->ctx->legacy, d);
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
    *id = op_create(s->ctx, w, &d);
    stream_advance_locked(s, *id);
    return CUDA_SUCCESS;
}

/* A kernel runs in the current context: a stream of another one is not a
 * handle it can use, as the real driver answers. Copies and other work may go
 * to any context's stream. */
static CUresult check_kernel_stream_locked(CUstream s, const sim_work *w)
{
    CUresult r;
    struct CUctx_st *c = cur_locked(&r);
    if (!c)
        return r;
    return (w->kind == SIM_W_KERNEL && s->ctx != c) ? CUDA_ERROR_INVALID_HANDLE : CUDA_SUCCESS;
}

static void delay_by(atomic_uint *cache, const char *name);

/* SIM_SUBMIT_US: each eager submission costs that much host time more, as
 * a real launch's microseconds do (tests of the back-off that weighs
 * replay's host time against eager's). */
SIM_API CUresult simc_submit(CUstream h, int ptsz, sim_work *w)
{
    static atomic_uint delay = UINT_MAX;
    delay_by(&delay, "SIM_SUBMIT_US");
    CUresult r;
    uint64_t id;
    lock();
    run_some_locked();
    CUstream s = resolve_locked(h, ptsz, &r);
    if (s)
        r = check_kernel_stream_locked(s, w);
    if (r == CUDA_SUCCESS)
        r = submit_locked(s, w, &id);
    if (r != CUDA_SUCCESS)
        simc_work_free(w);
    unlock();
    return r;
}

SIM_API CUresult simc_stream_create(CUstream *out, unsigned flags, int prio)
{
    CUresult r;
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    if (flags & ~(unsigned)CU_STREAM_NON_BLOCKING)
        return CUDA_ERROR_INVALID_VALUE;
    lock();
    run_some_locked();
    struct CUctx_st *c = cur_locked(&r);
    if (c)
        *out = stream_new_locked(c, STREAM_USER, flags, prio);
    unlock();
    return r;
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
            stream_kill_locked(s);
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

SIM_API CUresult simc_stream_get_ctx(CUstream h, int ptsz, CUcontext *ctx)
{
    CUresult r;
    if (!ctx)
        return CUDA_ERROR_INVALID_VALUE;
    lock();
    CUstream s = resolve_locked(h, ptsz, &r);
    if (s)
        *ctx = s->ctx;
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
        stream_work_locked(s, &d);
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
        stream_work_locked(s, &d);
        if (d.n)
            r = CUDA_ERROR_NOT_READY;
        free(d.v);
    }
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
    lock();
    struct CUctx_st *c = tls_depth ? tls_stack[tls_depth - 1] : NULL;
    int d = c ? c->device : tls_dev;
    unlock();
    return d;
}

/* The runtime's cudaSetDevice: the device's primary context becomes current. */
SIM_API CUresult simc_set_device(int dev)
{
    lock();
    CUresult r = (dev < 0 || dev >= G.ndev) ? CUDA_ERROR_INVALID_DEVICE : CUDA_SUCCESS;
    if (r == CUDA_SUCCESS) {
        tls_dev = dev;
        if (tls_depth)
            tls_stack[tls_depth - 1] = &G.primary[dev];
    }
    unlock();
    return r;
}

/* --------------------------------------------------------------- contexts */

static struct CUevent_st *event_find_locked(CUevent e);
static void exec_kill_locked(struct CUgraphExec_st *e);
static void image_kill_locked(sim_image *img);

/* Ends everything c owns once its work is done: streams (per-thread ones
 * first), events, graph execs, modules, allocations and symbol copies. Handles
 * go to the free lists newest first, so objects created again in the same
 * order get the same addresses, as the real driver's often do. */
static CUresult ctx_teardown_locked(struct CUctx_st *c)
{
    CUresult r = wait_locked(WAIT_CTX, (uintptr_t)c);
    if (r != CUDA_SUCCESS)
        return r;
    for (int pass = 0; pass < 2; pass++) {
        int kind = pass ? STREAM_USER : STREAM_PTDS;
        for (struct CUstream_st **pp = &G.streams; *pp;) {
            struct CUstream_st *s = *pp;
            if (s->ctx == c && s->kind == kind) {
                *pp = s->next;
                stream_kill_locked(s);
            } else {
                pp = &s->next;
            }
        }
    }
    legacy_init(c);
    for (struct CUevent_st **pp = &G.events; *pp;) {
        struct CUevent_st *e = *pp;
        if (e->ctx == c) {
            *pp = e->next;
            e->magic = 0;
            free(e->cnodes);
            e->cnodes = NULL;
            e->next = G.event_free;
            G.event_free = e;
        } else {
            pp = &e->next;
        }
    }
    for (struct CUgraphExec_st *e = G.execs, *nx; e; e = nx) {
        nx = e->next;
        if (e->ctx == c)
            exec_kill_locked(e);
    }
    for (struct CUmod_st **pp = &G.mods; *pp;) {
        struct CUmod_st *m = *pp;
        if (m->ctx == c) {
            *pp = m->next;
            image_kill_locked(&m->img);
            m->magic = 0;
            m->next = G.mod_free;
            G.mod_free = m;
        } else {
            pp = &m->next;
        }
    }
    for (size_t i = G.nallocs; i-- > 0;) {
        sim_alloc *a = &G.allocs[i];
        if (a->ctx != c)
            continue;
        if (a->kind != SIM_MEM_REGISTERED)
            free(a->base);
        G.allocs[i] = G.allocs[--G.nallocs];
    }
    for (sim_symbol *y = G.symbols; y; y = y->next)
        for (size_t i = y->ncopies; i-- > 0;)
            if (y->copies[i].ctx == c)
                y->copies[i] = y->copies[--y->ncopies];
    if (c->primary)
        for (struct CUkern_st *k = G.kernels; k; k = k->next)
            k->maxdyn[c->device] = 0;
    c->gen++;
    return CUDA_SUCCESS;
}

SIM_API CUresult simc_ctx_create(CUcontext *out, unsigned flags, int dev)
{
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    lock();
    CUresult r = CUDA_SUCCESS;
    if (G.forked)
        r = CUDA_ERROR_NOT_INITIALIZED;
    else if (dev < 0 || dev >= G.ndev)
        r = CUDA_ERROR_INVALID_DEVICE;
    else if (tls_depth >= CTX_STACK)
        r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) {
        struct CUctx_st *c = G.ctx_free;
        if (c) {
            G.ctx_free = c->next;
        } else {
            c = xrealloc(NULL, sizeof(*c));
            memset(c, 0, sizeof(*c));
            c->all = G.ctx_all;
            G.ctx_all = c;
        }
        c->magic = MAGIC_CTX;
        c->device = dev;
        c->primary = 0;
        c->alive = 1;
        c->flags = flags;
        c->id = ++G.ctx_ids;
        c->retains = 0;
        c->next = NULL;
        legacy_init(c);
        tls_stack[tls_depth++] = c;
        *out = c;
    }
    unlock();
    return r;
}

SIM_API CUresult simc_ctx_destroy(CUcontext c)
{
    lock();
    CUresult r = CUDA_SUCCESS;
    if (G.forked)
        r = CUDA_ERROR_NOT_INITIALIZED;
    else if (!ctx_ok_locked(c) || c->primary)
        r = CUDA_ERROR_INVALID_CONTEXT;
    else
        r = ctx_teardown_locked(c);
    if (r == CUDA_SUCCESS) {
        c->alive = 0;
        c->magic = 0;
        c->next = G.ctx_free;
        G.ctx_free = c;
        /* Other threads keep it current but every use fails, until reused. */
        if (tls_depth && tls_stack[tls_depth - 1] == c)
            tls_depth--;
    }
    unlock();
    return r;
}

SIM_API CUresult simc_ctx_push(CUcontext c)
{
    lock();
    CUresult r = CUDA_SUCCESS;
    if (!ctx_ok_locked(c))
        r = CUDA_ERROR_INVALID_CONTEXT;
    else if (tls_depth >= CTX_STACK)
        r = CUDA_ERROR_INVALID_VALUE;
    else
        tls_stack[tls_depth++] = c;
    unlock();
    return r;
}

SIM_API CUresult simc_ctx_pop(CUcontext *out)
{
    lock();
    CUresult r = CUDA_SUCCESS;
    if (!tls_depth || !tls_stack[tls_depth - 1])
        r = CUDA_ERROR_INVALID_CONTEXT;
    else {
        tls_depth--;
        if (out)
            *out = tls_stack[tls_depth];
    }
    unlock();
    return r;
}

/* With nothing on its stack a thread answers the primary context of its
 * device, as if the runtime had made it current. */
SIM_API CUresult simc_ctx_get_current(CUcontext *out)
{
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    lock();
    *out = tls_depth ? tls_stack[tls_depth - 1] : &G.primary[tls_dev];
    unlock();
    return CUDA_SUCCESS;
}

SIM_API CUresult simc_ctx_set_current(CUcontext c)
{
    lock();
    CUresult r = CUDA_SUCCESS;
    if (c && !ctx_ok_locked(c))
        r = CUDA_ERROR_INVALID_CONTEXT;
    else if (tls_depth)
        tls_stack[tls_depth - 1] = c;
    else if (c)
        tls_stack[tls_depth++] = c;
    unlock();
    return r;
}

static struct CUctx_st *ctx_arg_locked(CUcontext c, CUresult *r)
{
    if (!c)
        return cur_locked(r);
    *r = ctx_ok_locked(c) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
    return *r == CUDA_SUCCESS ? c : NULL;
}

SIM_API CUresult simc_ctx_get_device(CUcontext c, int *dev)
{
    CUresult r;
    if (!dev)
        return CUDA_ERROR_INVALID_VALUE;
    lock();
    struct CUctx_st *x = ctx_arg_locked(c, &r);
    if (x)
        *dev = x->device;
    unlock();
    return r;
}

SIM_API CUresult simc_ctx_info(CUcontext c, unsigned long long *id, unsigned *flags)
{
    CUresult r;
    lock();
    struct CUctx_st *x = ctx_arg_locked(c, &r);
    if (x && id)
        *id = x->id;
    if (x && flags)
        *flags = x->flags;
    unlock();
    return r;
}

SIM_API CUresult simc_ctx_sync(CUcontext c)
{
    CUresult r;
    lock();
    struct CUctx_st *x = ctx_arg_locked(c, &r);
    if (x)
        r = wait_locked(WAIT_CTX, (uintptr_t)x);
    unlock();
    return r;
}

SIM_API CUresult simc_primary_retain(CUcontext *out, int dev)
{
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    lock();
    CUresult r = (dev < 0 || dev >= G.ndev) ? CUDA_ERROR_INVALID_DEVICE : CUDA_SUCCESS;
    if (r == CUDA_SUCCESS) {
        G.primary[dev].retains++;
        *out = &G.primary[dev];
    }
    unlock();
    return r;
}

/* The runtime holds its own reference here, as cudart does once it used the
 * device, so a release never tears the primary context down. */
SIM_API CUresult simc_primary_release(int dev)
{
    lock();
    CUresult r = (dev < 0 || dev >= G.ndev) ? CUDA_ERROR_INVALID_DEVICE : CUDA_SUCCESS;
    if (r == CUDA_SUCCESS && G.primary[dev].retains <= 0)
        r = CUDA_ERROR_INVALID_CONTEXT;
    if (r == CUDA_SUCCESS)
        G.primary[dev].retains--;
    unlock();
    return r;
}

SIM_API CUresult simc_primary_reset(int dev)
{
    lock();
    CUresult r = (dev < 0 || dev >= G.ndev) ? CUDA_ERROR_INVALID_DEVICE : CUDA_SUCCESS;
    if (r == CUDA_SUCCESS && G.forked)
        r = CUDA_ERROR_NOT_INITIALIZED;
    if (r == CUDA_SUCCESS)
        r = ctx_teardown_locked(&G.primary[dev]);
    unlock();
    return r;
}

SIM_API CUresult simc_primary_state(int dev, unsigned *flags, int *active)
{
    if (!flags || !active)
        return CUDA_ERROR_INVALID_VALUE;
    lock();
    CUresult r = (dev < 0 || dev >= G.ndev) ? CUDA_ERROR_INVALID_DEVICE : CUDA_SUCCESS;
    if (r == CUDA_SUCCESS) {
        *flags = G.primary[dev].flags;
        *active = 1;
    }
    unlock();
    return r;
}

SIM_API CUcontext simc_primary(int dev)
{
    lock();
    CUcontext c = (dev < 0 || dev >= G.ndev) ? NULL : &G.primary[dev];
    unlock();
    return c;
}

SIM_API CUresult simc_primary_set_flags(int dev, unsigned flags)
{
    lock();
    CUresult r = (dev < 0 || dev >= G.ndev) ? CUDA_ERROR_INVALID_DEVICE : CUDA_SUCCESS;
    if (r == CUDA_SUCCESS)
        G.primary[dev].flags = flags;
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

static struct CUfunc_st *func_find_locked(const void *f)
{
    for (struct CUfunc_st *h = G.funcs; h; h = h->next)
        if ((const void *)h == f)
            return h;
    return NULL;
}

/* A runtime kernel (its registry entry or host function), or a live module or
 * library handle; the handle, if any, through h. */
static struct CUkern_st *kern_find_locked(const void *f, struct CUfunc_st **h)
{
    if (h)
        *h = NULL;
    if (!f)
        return NULL;
    for (struct CUkern_st *k = G.kernels; k; k = k->next)
        if ((const void *)k == f || (const void *)k->fn == f)
            return k;
    struct CUfunc_st *x = func_find_locked(f);
    if (h)
        *h = x;
    return x ? x->k : NULL;
}

SIM_API struct CUkern_st *simc_kernel_lookup(const void *f)
{
    lock();
    struct CUkern_st *k = kern_find_locked(f, NULL);
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

/* Where a kernel's dynamic shared memory limit lives: per device for runtime
 * kernels, on the handle for modules, on the kernel for libraries. */
static unsigned *maxdyn_slot_locked(struct CUkern_st *k, struct CUfunc_st *h, int dev)
{
    if (h && h->kind == FUNC_LIBFUNC && h->kernel)
        h = h->kernel;
    return h ? &h->maxdyn : &k->maxdyn[dev];
}

static unsigned maxdyn_locked(struct CUkern_st *k, struct CUfunc_st *h, int dev)
{
    unsigned v = *maxdyn_slot_locked(k, h, dev);
    return v ? v - 1 : SIM_SHMEM_DEFAULT;
}

SIM_API CUresult simc_func_attr(const void *f, int dev, int attr, int *get, const int *set)
{
    CUresult r = CUDA_SUCCESS;
    lock();
    struct CUfunc_st *h;
    struct CUkern_st *k = kern_find_locked(f, &h);
    if (dev < 0) {
        struct CUctx_st *c = cur_locked(&r);
        dev = c ? c->device : 0;
    }
    if (!k)
        r = CUDA_ERROR_INVALID_HANDLE;
    else if (dev >= G.ndev)
        r = CUDA_ERROR_INVALID_DEVICE;
    if (r != CUDA_SUCCESS) {
        unlock();
        return r;
    }
    if (set) {
        int v = *set;
        switch (attr) {
        case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
            if (v < 0 || (unsigned)v > SIM_SHMEM_OPTIN)
                r = CUDA_ERROR_INVALID_VALUE;
            else
                *maxdyn_slot_locked(k, h, dev) = (unsigned)v + 1;
            break;
        case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
            if (v < -1 || v > 100)
                r = CUDA_ERROR_INVALID_VALUE;
            break;
        case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
        case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
        case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
        case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
        case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
            break;                  /* they shape scheduling only */
        default:
            r = CUDA_ERROR_INVALID_VALUE;
        }
    }
    if (get && r == CUDA_SUCCESS) {
        switch (attr) {
        case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
            *get = 1024;
            break;
        case CU_FUNC_ATTRIBUTE_NUM_REGS:
            *get = 32;
            break;
        case CU_FUNC_ATTRIBUTE_PTX_VERSION:
        case CU_FUNC_ATTRIBUTE_BINARY_VERSION:
            *get = 90;
            break;
        case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
            *get = (int)maxdyn_locked(k, h, dev);
            break;
        case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
            *get = -1;
            break;
        case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
        case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES:
        case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES:
        case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA:
        case CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET:
        case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
        case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
        case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
        case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
        case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
            *get = 0;
            break;
        default:
            r = CUDA_ERROR_INVALID_VALUE;
        }
    }
    unlock();
    return r;
}

/* Copies the argument bytes now, as a launch or node creation must. More
 * dynamic shared memory than the kernel's current limit is refused here, which
 * is where the real launch and node creation refuse it. */
SIM_API CUresult simc_work_kernel(sim_work *w, const void *f, sim_launch l, void **params, void **extra)
{
    memset(w, 0, sizeof(*w));
    CUresult r;
    lock();
    struct CUfunc_st *h;
    struct CUkern_st *k = kern_find_locked(f, &h);
    struct CUctx_st *c = cur_locked(&r);
    unsigned limit = k && c ? maxdyn_locked(k, h, c->device) : 0;
    unlock();
    if (!c)
        return r;
    if (!k)
        return CUDA_ERROR_INVALID_HANDLE;
    if (l.grid.x == 0 || l.grid.y == 0 || l.grid.z == 0 || l.block.x == 0 || l.block.y == 0 ||
        l.block.z == 0 || (uint64_t)l.block.x * l.block.y * l.block.z > 1024)
        return CUDA_ERROR_INVALID_VALUE;
    if (l.shmem > limit)
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

/* ------------------------------------------------------ modules, libraries */

static struct CUfunc_st *func_new_locked(int kind, struct CUkern_st *k)
{
    struct CUfunc_st *h = G.func_free;
    if (h)
        G.func_free = h->next;
    else
        h = xrealloc(NULL, sizeof(*h));
    memset(h, 0, sizeof(*h));
    h->magic = MAGIC_FUNC;
    h->kind = kind;
    h->k = k;
    h->next = G.funcs;
    G.funcs = h;
    return h;
}

static void func_kill_locked(struct CUfunc_st *h)
{
    for (struct CUfunc_st **pp = &G.funcs; *pp; pp = &(*pp)->next)
        if (*pp == h) {
            *pp = h->next;
            h->magic = 0;
            h->next = G.func_free;
            G.func_free = h;
            return;
        }
}

/* "sim:name1,name2,...": kernels registered under those names. */
/* cgraft's updater (src/updater.cu), one kernel per blob size, as its
 * fatbin names them. Run, it does nothing: what it sets is applied when its
 * graph is launched (updater_apply_locked), before the nodes it precedes. */
static void sim_updater_run(const sim_launch *l, void **args)
{
    (void)l;
    (void)args;
}

static const struct { const char *name; unsigned size; } sim_updaters[] = {
    { "cg_updater_1k", 1024 },   { "cg_updater_2k", 2048 },   { "cg_updater_4k", 4096 },
    { "cg_updater_8k", 8192 },   { "cg_updater_12k", 12288 }, { "cg_updater_16k", 16384 },
    { "cg_updater_24k", 24576 }, { "cg_updater_32k", 32000 },
};

static struct CUkern_st *updater_kernel_locked(size_t i)
{
    for (struct CUkern_st *k = G.kernels; k; k = k->next)
        if (k->updater && !strcmp(k->name, sim_updaters[i].name))
            return k;
    struct CUkern_st *k = xrealloc(NULL, sizeof(*k));
    memset(k, 0, sizeof(*k));
    k->magic = MAGIC_KERN;
    k->fn = sim_updater_run;
    snprintf(k->name, sizeof(k->name), "%s", sim_updaters[i].name);
    k->nparams = 1;
    k->size[0] = k->argsz = k->updater = sim_updaters[i].size;
    k->next = G.kernels;
    G.kernels = k;
    return k;
}

/* cgraft's copy kernel (src/updater.cu): dst, src, bytes. It copies byte by
 * byte from the first, as threads over a grid may: where the two ranges
 * overlap it is not a memmove (the eager copies' memmove), so a copy that
 * cgraft gives it with overlapping ranges shows in the output. */
static void sim_copy_run(const sim_launch *l, void **args)
{
    (void)l;
    struct { unsigned char *dst; const unsigned char *src; uint64_t n; } a;
    memcpy(&a, args[0], sizeof a);
    for (uint64_t i = 0; i < a.n; i++)
        a.dst[i] = a.src[i];
}

static struct CUkern_st *copy_kernel_locked(void)
{
    for (struct CUkern_st *k = G.kernels; k; k = k->next)
        if (k->fn == sim_copy_run)
            return k;
    struct CUkern_st *k = xrealloc(NULL, sizeof(*k));
    memset(k, 0, sizeof(*k));
    k->magic = MAGIC_KERN;
    k->fn = sim_copy_run;
    snprintf(k->name, sizeof(k->name), "cg_copy");
    k->nparams = 1;
    k->size[0] = k->argsz = 24;
    k->next = G.kernels;
    G.kernels = k;
    return k;
}

/* A fatbin (its header: magic, version, header size, then the size of what
 * follows) is taken for cgraft's updater where it names its kernels (and
 * its copy kernel where it names that). */
static CUresult image_parse_fatbin_locked(sim_image *img, const unsigned char *b)
{
    uint16_t hs;
    uint64_t fs;
    memcpy(&hs, b + 6, 2);
    memcpy(&fs, b + 8, 8);
    if (!memmem(b, hs + fs, sim_updaters[0].name, strlen(sim_updaters[0].name)))
        return CUDA_ERROR_INVALID_IMAGE;
    size_t nu = sizeof sim_updaters / sizeof sim_updaters[0];
    int copy = memmem(b, hs + fs, "cg_copy", 8) != NULL;
    img->n = nu + (size_t)copy;
    img->k = xrealloc(NULL, img->n * sizeof(*img->k));
    for (size_t i = 0; i < nu; i++)
        img->k[i] = updater_kernel_locked(i);
    if (copy)
        img->k[nu] = copy_kernel_locked();
    img->h = xrealloc(NULL, (img->n + 1) * sizeof(*img->h));
    memset(img->h, 0, (img->n + 1) * sizeof(*img->h));
    return CUDA_SUCCESS;
}

static CUresult image_parse_locked(sim_image *img, const void *image)
{
    const char *s = image;
    memset(img, 0, sizeof(*img));
    static const unsigned char fatbin[4] = { 0x50, 0xed, 0x55, 0xba };
    if (s && !memcmp(s, fatbin, 4))
        return image_parse_fatbin_locked(img, image);
    if (!s || strncmp(s, "sim:", 4))
        return CUDA_ERROR_INVALID_IMAGE;
    s += 4;
    size_t cap = 0;
    while (*s) {
        const char *e = strchr(s, ',');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        struct CUkern_st *k;
        for (k = G.kernels; k; k = k->next)
            if (strlen(k->name) == len && !strncmp(k->name, s, len))
                break;
        if (!k) {
            free(img->k);
            img->k = NULL;
            img->n = 0;
            return CUDA_ERROR_INVALID_IMAGE;
        }
        GROW(img->k, img->n, cap);
        img->k[img->n++] = k;
        s += len;
        if (*s == ',')
            s++;
    }
    img->h = xrealloc(NULL, (img->n + 1) * sizeof(*img->h));
    memset(img->h, 0, (img->n + 1) * sizeof(*img->h));
    return CUDA_SUCCESS;
}

static int image_index(const sim_image *img, const char *name)
{
    for (size_t i = 0; name && i < img->n; i++)
        if (!strcmp(img->k[i]->name, name))
            return (int)i;
    return -1;
}

/* The handles go to the free list in name order: a module loaded next gets
 * the last one's address for its first function. */
static void image_kill_locked(sim_image *img)
{
    for (size_t i = 0; i < img->n; i++) {
        struct CUfunc_st *h = img->h[i];
        if (!h)
            continue;
        if (h->func)
            func_kill_locked(h->func);
        func_kill_locked(h);
    }
    free(img->k);
    free(img->h);
    memset(img, 0, sizeof(*img));
}

SIM_API CUresult simc_module_load(CUmodule *out, const void *image)
{
    CUresult r;
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    lock();
    struct CUctx_st *c = cur_locked(&r);
    sim_image img;
    if (c)
        r = image_parse_locked(&img, image);
    if (r == CUDA_SUCCESS) {
        struct CUmod_st *m = G.mod_free;
        if (m)
            G.mod_free = m->next;
        else
            m = xrealloc(NULL, sizeof(*m));
        m->magic = MAGIC_MOD;
        m->ctx = c;
        m->img = img;
        m->next = G.mods;
        G.mods = m;
        *out = m;
    }
    unlock();
    return r;
}

static struct CUmod_st *mod_find_locked(CUmodule m)
{
    for (struct CUmod_st *x = G.mods; x; x = x->next)
        if (x == m)
            return x;
    return NULL;
}

SIM_API CUresult simc_module_unload(CUmodule m)
{
    CUresult r = CUDA_ERROR_INVALID_HANDLE;
    lock();
    for (struct CUmod_st **pp = &G.mods; *pp; pp = &(*pp)->next)
        if (*pp == m) {
            *pp = m->next;
            image_kill_locked(&m->img);
            m->magic = 0;
            m->next = G.mod_free;
            G.mod_free = m;
            r = CUDA_SUCCESS;
            break;
        }
    unlock();
    return r;
}

SIM_API CUresult simc_module_get_function(CUfunction *out, CUmodule m, const char *name)
{
    if (!out || !name)
        return CUDA_ERROR_INVALID_VALUE;
    lock();
    CUresult r = CUDA_SUCCESS;
    struct CUmod_st *x = mod_find_locked(m);
    int i = x ? image_index(&x->img, name) : -1;
    if (!x)
        r = CUDA_ERROR_INVALID_HANDLE;
    else if (i < 0)
        r = CUDA_ERROR_NOT_FOUND;
    else {
        if (!x->img.h[i]) {
            x->img.h[i] = func_new_locked(FUNC_MODULE, x->img.k[i]);
            x->img.h[i]->mod = x;
        }
        *out = x->img.h[i];
    }
    unlock();
    return r;
}

SIM_API CUresult simc_func_get_module(CUmodule *out, CUfunction f)
{
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    lock();
    struct CUfunc_st *h = func_find_locked(f);
    CUresult r = h && h->kind == FUNC_MODULE ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
    if (r == CUDA_SUCCESS)
        *out = h->mod;
    unlock();
    return r;
}

/* Libraries belong to no context, as with the real driver. */
SIM_API CUresult simc_library_load(CUlibrary *out, const void *image)
{
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    lock();
    sim_image img;
    CUresult r = G.forked ? CUDA_ERROR_NOT_INITIALIZED : image_parse_locked(&img, image);
    if (r == CUDA_SUCCESS) {
        struct CUlib_st *l = G.lib_free;
        if (l)
            G.lib_free = l->next;
        else
            l = xrealloc(NULL, sizeof(*l));
        l->magic = MAGIC_LIB;
        l->img = img;
        l->next = G.libs;
        G.libs = l;
        *out = l;
    }
    unlock();
    return r;
}

SIM_API CUresult simc_library_unload(CUlibrary l)
{
    CUresult r = CUDA_ERROR_INVALID_HANDLE;
    lock();
    for (struct CUlib_st **pp = &G.libs; *pp; pp = &(*pp)->next)
        if (*pp == l) {
            *pp = l->next;
            image_kill_locked(&l->img);
            l->magic = 0;
            l->next = G.lib_free;
            G.lib_free = l;
            r = CUDA_SUCCESS;
            break;
        }
    unlock();
    return r;
}

SIM_API CUresult simc_library_get_kernel(CUkernel *out, CUlibrary l, const char *name)
{
    if (!out || !name)
        return CUDA_ERROR_INVALID_VALUE;
    lock();
    struct CUlib_st *x;
    for (x = G.libs; x && x != l; x = x->next)
        ;
    int i = x ? image_index(&x->img, name) : -1;
    CUresult r = !x ? CUDA_ERROR_INVALID_HANDLE : i < 0 ? CUDA_ERROR_NOT_FOUND : CUDA_SUCCESS;
    if (r == CUDA_SUCCESS) {
        if (!x->img.h[i]) {
            x->img.h[i] = func_new_locked(FUNC_LIBKERNEL, x->img.k[i]);
            x->img.h[i]->lib = x;
        }
        *out = (CUkernel)(void *)x->img.h[i];
    }
    unlock();
    return r;
}

/* The runtime's kernels are their own functions here; a library kernel gets a
 * function handle of its own. */
SIM_API CUresult simc_kernel_get_function(CUfunction *out, CUkernel kern)
{
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    lock();
    struct CUfunc_st *h;
    struct CUkern_st *k = kern_find_locked(kern, &h);
    CUresult r = CUDA_SUCCESS;
    if (!k || (h && h->kind != FUNC_LIBKERNEL))
        r = CUDA_ERROR_INVALID_HANDLE;
    else if (!h)
        *out = (CUfunction)(void *)k;
    else {
        if (!h->func) {
            h->func = func_new_locked(FUNC_LIBFUNC, k);
            h->func->kernel = h;
            h->func->lib = h->lib;
        }
        *out = h->func;
    }
    unlock();
    return r;
}

SIM_API CUresult simc_kernel_get_library(CUlibrary *out, CUkernel kern)
{
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    lock();
    struct CUfunc_st *h = func_find_locked(kern);
    CUresult r = h && h->kind == FUNC_LIBKERNEL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
    if (r == CUDA_SUCCESS)
        *out = h->lib;
    unlock();
    return r;
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

/* Freed: device and pinned memory is kept to be handed out again, at the
 * same address for the same size and kind (G.spare). */
static void alloc_release_locked(void *p)
{
    sim_alloc *a = alloc_find_locked(p);
    size_t n = a ? a->size : 0;
    int kind = a ? a->kind : SIM_MEM_PAGEABLE;
    if (a && a->pooled)
        G.pool_used -= n; /* freed by cuMemFree, not in stream order */
    alloc_forget_locked(p);
    if ((kind == SIM_MEM_DEVICE || kind == SIM_MEM_PINNED) && G.nspare < (int)(sizeof G.spare / sizeof G.spare[0])) {
        G.spare[G.nspare].p = p;
        G.spare[G.nspare].kind = kind;
        G.spare[G.nspare++].n = n;
    } else {
        free(p);
    }
}

static void alloc_add_locked(char *p, size_t n, int kind, struct CUctx_st *c, unsigned flags)
{
    GROW(G.allocs, G.nallocs, G.capallocs);
    G.allocs[G.nallocs++] = (sim_alloc){ .base = p, .size = n, .kind = kind, .device = c->device, .ctx = c,
                                         .flags = flags, .id = ++G.alloc_ids };
}

static void *alloc_new_locked(size_t n, int kind, struct CUctx_st *c, unsigned flags)
{
    void *p = NULL;
    for (int i = G.nspare; !p && i-- > 0;)
        if (G.spare[i].n == n && G.spare[i].kind == kind) {
            p = G.spare[i].p;
            G.spare[i] = G.spare[--G.nspare];
        }
    if (!p) {
        /* Fresh memory reads as zeros, as a device's fresh pages do:
         * whatever MALLOC_PERTURB_ the tests run under, a program that
         * reads fresh memory it never wrote gets the same values. A spare
         * keeps what it held, as a caching allocator's blocks do. */
        if (posix_memalign(&p, 256, n ? n : 1))
            return NULL;
        memset(p, 0, n);
    }
    alloc_add_locked(p, n, kind, c, flags);
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

SIM_API int simc_mem_query(const void *p, sim_meminfo *info)
{
    lock();
    sim_alloc *a = alloc_find_locked(p);
    memset(info, 0, sizeof(*info));
    info->device = -1;
    if (a) {
        info->kind = a->kind;
        info->device = a->device;
        info->ctx = a->ctx;
        info->base = a->base;
        info->size = a->size;
        info->flags = a->flags;
        info->id = a->id;
    }
    unlock();
    return info->kind;
}

SIM_API CUresult simc_malloc(void **p, size_t n, int kind, unsigned flags)
{
    CUresult r;
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    lock();
    run_some_locked();
    struct CUctx_st *c = cur_locked(&r);
    if (c) {
        *p = alloc_new_locked(n, kind, c, flags);
        if (!*p)
            r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    unlock();
    return r;
}

/* Freeing synchronises like the real one: nothing pending may still touch it.
 * Device frees take managed memory too, as cudaFree does. */
SIM_API CUresult simc_free(void *p, int kind)
{
    if (!p)
        return CUDA_SUCCESS;
    lock();
    sim_alloc *a = alloc_find_locked(p);
    CUresult r = CUDA_SUCCESS;
    if (G.forked)
        r = CUDA_ERROR_NOT_INITIALIZED;
    else if (!a || a->base != p || (a->kind != kind && !(kind == SIM_MEM_DEVICE && a->kind == SIM_MEM_MANAGED)))
        r = CUDA_ERROR_INVALID_VALUE;
    else
        r = wait_locked(WAIT_ALL, 0);
    if (r == CUDA_SUCCESS)
        alloc_release_locked(p);
    unlock();
    return r;
}

SIM_API CUresult simc_malloc_async(void **p, size_t n, CUstream h, int ptsz, int kind)
{
    CUresult r;
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    lock();
    run_some_locked();
    CUstream s = resolve_locked(h, ptsz, &r);
    static atomic_uint limit = UINT_MAX;
    unsigned most = env_cached(&limit, "SIM_POOL_LIMIT");
    if (s && most && n > most - G.pool_used) {
        *p = NULL;
        r = CUDA_ERROR_OUT_OF_MEMORY;
    } else if (s) {
        *p = alloc_new_locked(n, kind, s->ctx, 0);
        if (!*p)
            r = CUDA_ERROR_OUT_OF_MEMORY;
        sim_alloc *a = *p ? alloc_find_locked(*p) : NULL;
        if (a) {
            a->pooled = 1;
            G.pool_used += n;
        }
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
    if (s && (!a || a->base != p || (a->kind != SIM_MEM_DEVICE && a->kind != SIM_MEM_PINNED)))
        r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) {
        uint64_t id;
        sim_work w = { .kind = s->cap ? SIM_W_NOP : SIM_W_FREE, .freeptr = p };
        r = submit_locked(s, &w, &id);
        if (r == CUDA_SUCCESS && a->pooled && !s->cap) {
            a->pooled = 0;
            G.pool_used -= a->size;
        }
    }
    unlock();
    return r;
}

/* Registered memory stays the program's; it only becomes device-accessible
 * and is no longer staged by copies. */
SIM_API CUresult simc_host_register(void *p, size_t n, unsigned flags)
{
    CUresult r;
    if (!p || !n)
        return CUDA_ERROR_INVALID_VALUE;
    lock();
    struct CUctx_st *c = cur_locked(&r);
    for (size_t i = 0; c && i < G.nallocs; i++) {
        const sim_alloc *a = &G.allocs[i];
        if ((char *)p < a->base + (a->size ? a->size : 1) && a->base < (char *)p + n)
            r = CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    }
    if (r == CUDA_SUCCESS)
        alloc_add_locked(p, n, SIM_MEM_REGISTERED, c, flags);
    unlock();
    return r;
}

SIM_API CUresult simc_host_unregister(void *p)
{
    lock();
    sim_alloc *a = p ? alloc_find_locked(p) : NULL;
    CUresult r = CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    if (G.forked)
        r = CUDA_ERROR_NOT_INITIALIZED;
    else if (a && a->base == p && a->kind == SIM_MEM_REGISTERED) {
        alloc_forget_locked(p);
        r = CUDA_SUCCESS;
    }
    unlock();
    return r;
}

SIM_API CUresult simc_mapped(void *p, size_t n, int kind)
{
    CUresult r;
    if (!p || !n)
        return CUDA_ERROR_INVALID_VALUE;
    lock();
    struct CUctx_st *c = cur_locked(&r);
    for (size_t i = G.nallocs; c && i-- > 0;) {
        const sim_alloc *a = &G.allocs[i];
        if (a->base >= (char *)p && a->base < (char *)p + n) {
            if (kind == SIM_MEM_PAGEABLE)
                alloc_forget_locked(a->base);
            else
                r = CUDA_ERROR_INVALID_VALUE;
        }
    }
    if (r == CUDA_SUCCESS && kind != SIM_MEM_PAGEABLE)
        alloc_add_locked(p, n, kind, c, 0);
    unlock();
    return r;
}

SIM_API int simRegisterSymbol(const void *hostVar, size_t size)
{
    if (!hostVar || !size)
        return -EINVAL;
    lock();
    for (sim_symbol *y = G.symbols; y; y = y->next)
        if (y->host == hostVar) {
            unlock();
            return y->size == size ? 0 : -EEXIST;
        }
    sim_symbol *y = xrealloc(NULL, sizeof(*y));
    memset(y, 0, sizeof(*y));
    y->host = hostVar;
    y->size = size;
    y->init = xrealloc(NULL, size);
    memcpy(y->init, hostVar, size);
    y->next = G.symbols;
    G.symbols = y;
    unlock();
    return 0;
}

SIM_API CUresult simc_symbol(const void *sym, void **dev, size_t *size)
{
    CUresult r;
    lock();
    struct CUctx_st *c = cur_locked(&r);
    sim_symbol *y = NULL;
    if (c) {
        for (y = G.symbols; y && y->host != sym; y = y->next)
            ;
        if (!y)
            r = CUDA_ERROR_NOT_FOUND;
    }
    if (y) {
        sim_symcopy *cp = NULL;
        for (size_t i = 0; i < y->ncopies; i++)
            if (y->copies[i].ctx == c && y->copies[i].gen == c->gen)
                cp = &y->copies[i];
        if (!cp) {
            void *p = alloc_new_locked(y->size, SIM_MEM_DEVICE, c, 0);
            if (!p)
                r = CUDA_ERROR_OUT_OF_MEMORY;
            else {
                memcpy(p, y->init, y->size);
                GROW(y->copies, y->ncopies, y->capcopies);
                cp = &y->copies[y->ncopies++];
                *cp = (sim_symcopy){ .ctx = c, .gen = c->gen, .dev = p };
            }
        }
        if (cp && dev)
            *dev = cp->dev;
        if (size)
            *size = y->size;
    }
    unlock();
    return r;
}

/* Pageable sources are staged now and pageable destinations make the call
 * host-synchronous, which is what the real copy engine path does. Consumes w;
 * a caller that staged the source itself (w->snap) keeps its copy. */
SIM_API CUresult simc_copy(CUstream h, int ptsz, sim_work *w, int blocking)
{
    CUresult r;
    size_t nz = work_depth(w);
    if (w->width && w->height &&
        (!w->dst || !w->src || w->dpitch < w->width || w->spitch < w->width ||
         (nz > 1 && (w->dslice < w->dpitch * (w->height - 1) + w->width ||
                     w->sslice < w->spitch * (w->height - 1) + w->width))))
        return CUDA_ERROR_INVALID_VALUE;
    w->kind = SIM_W_COPY;
    lock();
    run_some_locked();
    CUstream s = resolve_locked(h, ptsz, &r);
    if (!s) {
        unlock();
        return r;
    }
    sim_alloc *sa = alloc_find_locked(w->src), *da = alloc_find_locked(w->dst);
    if (!w->snap && !sa && !s->cap && w->width && w->height) {
        char *snap = xrealloc(NULL, w->width * w->height * nz);
        for (size_t z = 0; z < nz; z++)
            for (size_t i = 0; i < w->height; i++)
                memcpy(snap + (z * w->height + i) * w->width,
                       (const char *)w->src + z * w->sslice + i * w->spitch, w->width);
        w->snap = snap;
        w->src = snap;
        w->spitch = w->width;
        w->sslice = w->width * w->height;
    }
    if (!da && !s->cap)
        blocking = 1;
    if (blocking && s->cap) {
        simc_work_free(w);
        unlock();
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    uint64_t id;
    r = submit_locked(s, w, &id);
    if (r == CUDA_SUCCESS && blocking)
        r = wait_locked(WAIT_OP, id);
    unlock();
    return r;
}

SIM_API CUresult simc_memcpy(CUstream h, int ptsz, void *dst, size_t dpitch, const void *src,
                             size_t spitch, size_t width, size_t height, int blocking)
{
    sim_work w = { .kind = SIM_W_COPY, .dst = dst, .src = src, .dpitch = dpitch, .spitch = spitch,
                   .width = width, .height = height };
    return simc_copy(h, ptsz, &w, blocking);
}

SIM_API CUresult simc_memset3d(CUstream h, int ptsz, void *dst, size_t pitch, size_t slice, unsigned value,
                               unsigned elem, size_t width, size_t height, size_t depth, int blocking)
{
    CUresult r;
    if (!dst || (elem != 1 && elem != 2 && elem != 4))
        return CUDA_ERROR_INVALID_VALUE;
    if (!pitch)
        pitch = width * elem;
    if (height > 1 && pitch < width * elem)
        return CUDA_ERROR_INVALID_VALUE;
    if (depth > 1 && height && slice < pitch * (height - 1) + width * elem)
        return CUDA_ERROR_INVALID_VALUE;
    lock();
    run_some_locked();
    CUstream s = resolve_locked(h, ptsz, &r);
    if (s && blocking && s->cap)
        r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (s && r == CUDA_SUCCESS) {
        uint64_t id;
        sim_work w = { .kind = SIM_W_SET, .dst = dst, .dpitch = pitch, .dslice = slice, .depth = depth,
                       .value = value, .elem = elem, .width = width, .height = height };
        r = submit_locked(s, &w, &id);
        if (r == CUDA_SUCCESS && blocking)
            r = wait_locked(WAIT_OP, id);
    }
    unlock();
    return r;
}

SIM_API CUresult simc_memset(CUstream h, int ptsz, void *dst, size_t pitch, unsigned value,
                             unsigned elem, size_t width, size_t height, int blocking)
{
    return simc_memset3d(h, ptsz, dst, pitch, 0, value, elem, width, height, 1, blocking);
}

/* Stream memory ops reach device-accessible memory only: device, pinned,
 * registered or managed, never plain pageable memory. */
SIM_API CUresult simc_memop(CUstream h, int ptsz, int kind, void *addr, uint64_t value, unsigned size,
                            unsigned flags)
{
    CUresult r;
    if (kind == SIM_W_WAITVAL && (flags & ~(3u | (unsigned)CU_STREAM_WAIT_VALUE_FLUSH)))
        return CUDA_ERROR_INVALID_VALUE;
    if (kind == SIM_W_WRITEVAL && (flags & ~(unsigned)CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER))
        return CUDA_ERROR_INVALID_VALUE;
    if (kind != SIM_W_NOP && (!addr || (size != 4 && size != 8) || (uintptr_t)addr % size))
        return CUDA_ERROR_INVALID_VALUE;
    lock();
    run_some_locked();
    CUstream s = resolve_locked(h, ptsz, &r);
    if (s && kind != SIM_W_NOP) {
        sim_alloc *a = alloc_find_locked(addr);
        if (!a || (char *)addr + size > a->base + a->size)
            r = CUDA_ERROR_INVALID_VALUE;
    }
    if (s && r == CUDA_SUCCESS) {
        uint64_t id;
        sim_work w = { .kind = kind, .dst = addr, .value64 = value, .elem = size, .memflags = flags };
        r = submit_locked(s, &w, &id);
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
    CUresult r;
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    if (flags & ~(unsigned)(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS))
        return CUDA_ERROR_INVALID_VALUE;
    lock();
    run_some_locked();
    struct CUctx_st *c = cur_locked(&r);
    if (c) {
        struct CUevent_st *e = G.event_free;
        if (e)
            G.event_free = e->next;
        else
            e = xrealloc(NULL, sizeof(*e));
        memset(e, 0, sizeof(*e));
        e->magic = MAGIC_EVENT;
        e->ctx = c;
        e->flags = flags;
        e->next = G.events;
        G.events = e;
        *out = e;
    }
    unlock();
    return r;
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
            e->cnodes = NULL;
            e->next = G.event_free;
            G.event_free = e;
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
    if (r == CUDA_SUCCESS && !e)
        r = CUDA_ERROR_INVALID_HANDLE;
    if (r == CUDA_SUCCESS && e->ctx != s->ctx)
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
    if (r == CUDA_SUCCESS && !e)
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
    CUresult r = G.forked ? CUDA_ERROR_NOT_INITIALIZED
                 : !e     ? CUDA_ERROR_INVALID_HANDLE
                 : done(e->rec) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
    unlock();
    return r;
}

/* A call that starts late by the microseconds of the variable name: a
 * window for another thread's calls (tests of what may change there). */
static void delay_by(atomic_uint *cache, const char *name)
{
    unsigned us = env_cached(cache, name);
    if (us) {
        struct timespec ts = { us / 1000000, (long)(us % 1000000) * 1000 };
        nanosleep(&ts, NULL);
    }
}

/* SIM_SYNC_DELAY_US: between a caller's last look at an event and its wait. */
SIM_API CUresult simc_event_sync(CUevent h)
{
    static atomic_uint delay = UINT_MAX;
    delay_by(&delay, "SIM_SYNC_DELAY_US");
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

static struct CUgraphNode_st *node_new(CUgraph g, const sim_work *w, const CUgraphNode *deps, size_t n)
{
    struct CUgraphNode_st *node = xrealloc(NULL, sizeof(*node));
    memset(node, 0, sizeof(*node));
    node->magic = MAGIC_NODE;
    node->graph = g;
    node->index = g->n;
    node->w = *w;
    node->deps = xrealloc(NULL, (n + 1) * sizeof(CUgraphNode));
    if (n)
        memcpy(node->deps, deps, n * sizeof(CUgraphNode));
    node->ndeps = n;
    node->capdeps = n + 1;
    GROW(g->nodes, g->n, g->cap);
    g->nodes[g->n++] = node;
    return node;
}

/* A graph's copy or memset holds the allocation it names, as the H200's
 * driver may: launched after that memory was freed, even with the same
 * address handed out again, it is refused. */
static void work_bind_locked(sim_work *w)
{
    if (w->kind != SIM_W_COPY && w->kind != SIM_W_SET)
        return;
    sim_alloc *d = alloc_find_locked(w->dst), *s = w->kind == SIM_W_COPY ? alloc_find_locked(w->src) : NULL;
    w->dalloc = d ? d->id : 0;
    w->salloc = s ? s->id : 0;
}

static int work_bound_ok_locked(const sim_work *w)
{
    if (w->kind != SIM_W_COPY && w->kind != SIM_W_SET)
        return 1;
    sim_alloc *d = w->dalloc ? alloc_find_locked(w->dst) : NULL, *s = w->salloc ? alloc_find_locked(w->src) : NULL;
    return (!w->dalloc || (d && d->id == w->dalloc)) && (!w->salloc || (s && s->id == w->salloc));
}

static CUresult graph_add_locked(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n,
                                 sim_work *w)
{
    if (!graph_ok(g) || (n && !deps))
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < n; i++)
        if (!node_ok(deps[i]) || deps[i]->graph != g)
            return CUDA_ERROR_INVALID_VALUE;
    work_bind_locked(w);
    struct CUgraphNode_st *node = node_new(g, w, deps, n);
    if (out)
        *out = node;
    return CUDA_SUCCESS;
}

/* Graphs are the program's, not the device's: these need no lock of their own. */
static void graph_free_unlocked(CUgraph g)
{
    for (size_t i = 0; i < g->n; i++) {
        simc_work_free(&g->nodes[i]->w);
        free(g->nodes[i]->deps);
        g->nodes[i]->magic = 0;
        free(g->nodes[i]);
    }
    free(g->nodes);
    g->magic = 0;
    free(g);
}

static CUgraph graph_clone_unlocked(CUgraph g)
{
    struct CUgraph_st *c = xrealloc(NULL, sizeof(*c));
    memset(c, 0, sizeof(*c));
    c->magic = MAGIC_GRAPH;
    for (size_t i = 0; i < g->n; i++) {
        sim_work w;
        simc_work_copy(&w, &g->nodes[i]->w);
        node_new(c, &w, NULL, 0);
    }
    for (size_t i = 0; i < g->n; i++) {
        struct CUgraphNode_st *from = g->nodes[i], *to = c->nodes[i];
        to->deps = xrealloc(to->deps, (from->ndeps + 1) * sizeof(CUgraphNode));
        for (size_t j = 0; j < from->ndeps; j++)
            to->deps[j] = c->nodes[from->deps[j]->index];
        to->ndeps = from->ndeps;
        to->capdeps = from->ndeps + 1;
    }
    return c;
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
    graph_free_unlocked(g);
    unlock();
    return CUDA_SUCCESS;
}

SIM_API CUresult simc_graph_clone(CUgraph *out, CUgraph g)
{
    if (!out || !graph_ok(g))
        return CUDA_ERROR_INVALID_VALUE;
    lock();
    *out = graph_clone_unlocked(g);
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

SIM_API CUresult simc_graph_add_child(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n,
                                      CUgraph child)
{
    if (!graph_ok(child) || child == g)
        return CUDA_ERROR_INVALID_VALUE;
    lock();
    sim_work w = { .kind = SIM_W_GRAPH, .child = graph_clone_unlocked(child) };
    unlock();
    return simc_graph_add(out, g, deps, n, &w);
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

SIM_API CUresult simc_node_set_devupd(CUgraphNode n, int on)
{
    if (!node_ok(n) || n->w.kind != SIM_W_KERNEL || (unsigned)on > 1 || (n->w.devupd && !on))
        return CUDA_ERROR_INVALID_VALUE;
    n->w.devupd = (unsigned char)on;
    return CUDA_SUCCESS;
}

SIM_API int simc_node_devupd(CUgraphNode n)
{
    return node_ok(n) && n->w.devupd;
}

SIM_API CUresult simc_node_launch(CUgraphNode n, sim_launch *l)
{
    if (!node_ok(n) || n->w.kind != SIM_W_KERNEL || !l)
        return CUDA_ERROR_INVALID_VALUE;
    *l = n->w.launch;
    return CUDA_SUCCESS;
}

/* A graph flattened into slots: works and dependencies by slot. */
typedef struct flat {
    sim_work *w;
    size_t **deps;
    size_t *ndeps;
    size_t n, cap;
} flat;

static size_t flat_reserve(flat *f)
{
    if (f->n >= f->cap) {
        f->cap = f->cap ? 2 * f->cap : 16;
        f->w = xrealloc(f->w, f->cap * sizeof(*f->w));
        f->deps = xrealloc(f->deps, f->cap * sizeof(*f->deps));
        f->ndeps = xrealloc(f->ndeps, f->cap * sizeof(*f->ndeps));
    }
    memset(&f->w[f->n], 0, sizeof(f->w[0]));
    f->w[f->n].kind = SIM_W_NOP;
    f->deps[f->n] = NULL;
    f->ndeps[f->n] = 0;
    return f->n++;
}

/* Places g's nodes at slot[]; its roots depend on entry[]. A child graph node
 * becomes a join that waits for every node of its child. */
static void flat_graph(flat *f, CUgraph g, const size_t *slot, const size_t *entry, size_t nentry)
{
    for (size_t i = 0; i < g->n; i++) {
        struct CUgraphNode_st *node = g->nodes[i];
        size_t nd = node->ndeps ? node->ndeps : nentry;
        size_t *d = xrealloc(NULL, (nd + 1) * sizeof(size_t));
        for (size_t j = 0; j < nd; j++)
            d[j] = node->ndeps ? slot[node->deps[j]->index] : entry[j];
        if (node->w.kind == SIM_W_GRAPH && node->w.child) {
            CUgraph cg = node->w.child;
            size_t *cs = xrealloc(NULL, (cg->n + 1) * sizeof(size_t));
            for (size_t j = 0; j < cg->n; j++)
                cs[j] = flat_reserve(f);
            flat_graph(f, cg, cs, d, nd);
            if (cg->n) {
                free(d);
                d = cs;
                nd = cg->n;
            } else {
                free(cs);
            }
        } else {
            simc_work_copy(&f->w[slot[i]], &node->w);
        }
        f->deps[slot[i]] = d;
        f->ndeps[slot[i]] = nd;
    }
}

static void flat_build(flat *f, CUgraph g)
{
    memset(f, 0, sizeof(*f));
    size_t *top = xrealloc(NULL, (g->n + 1) * sizeof(size_t));
    for (size_t i = 0; i < g->n; i++)
        top[i] = flat_reserve(f);
    flat_graph(f, g, top, NULL, 0);
    free(top);
}

static void flat_free(flat *f, int works)
{
    for (size_t i = 0; i < f->n; i++) {
        if (works)
            simc_work_free(&f->w[i]);
        free(f->deps[i]);
    }
    free(f->w);
    free(f->deps);
    free(f->ndeps);
}

static void exec_free_contents(CUgraphExec e)
{
    for (size_t i = 0; i < e->n; i++) {
        simc_work_free(&e->w[i]);
        free(e->deps[i]);
    }
    free(e->w);
    free(e->deps);
    free(e->ndeps);
    free(e->order);
    free(e->off);
    e->off = NULL;
    e->w = NULL;
    e->deps = NULL;
    e->ndeps = NULL;
    e->order = NULL;
    e->n = 0;
}

/* Off the live list, onto the free list: the next exec takes its address. */
static void exec_kill_locked(struct CUgraphExec_st *e)
{
    for (struct CUgraphExec_st **pp = &G.execs; *pp; pp = &(*pp)->next)
        if (*pp == e) {
            *pp = e->next;
            break;
        }
    exec_free_contents(e);
    e->magic = 0;
    e->next = G.exec_free;
    G.exec_free = e;
}

static struct CUgraphExec_st *exec_find_locked(CUgraphExec e)
{
    for (struct CUgraphExec_st *x = G.execs; x; x = x->next)
        if (x == e)
            return x;
    return NULL;
}

/* SIM_INSTANTIATE_US: an instantiation takes that long (a large graph's
 * build: the window in which the program's calls go on). */
SIM_API CUresult simc_graph_instantiate(CUgraphExec *out, CUgraph g)
{
    static atomic_uint delay = UINT_MAX;
    CUresult r;
    if (!out || !graph_ok(g))
        return CUDA_ERROR_INVALID_VALUE;
    delay_by(&delay, "SIM_INSTANTIATE_US");
    lock();
    struct CUctx_st *c = cur_locked(&r);
    if (!c) {
        unlock();
        return r;
    }
    int devupd = 0;
    for (size_t i = 0; i < g->n; i++)
        devupd |= g->nodes[i]->w.devupd;
    if (devupd && g->instantiated) {
        unlock();
        return CUDA_ERROR_INVALID_VALUE;
    }
    flat f;
    flat_build(&f, g);
    size_t n = f.n;
    size_t *order = xrealloc(NULL, (n + 1) * sizeof(size_t));
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
            for (j = 0; j < f.ndeps[i]; j++)
                if (!placed[f.deps[i][j]])
                    break;
            if (j == f.ndeps[i]) {
                placed[i] = 1;
                order[k++] = i;
                progress = 1;
            }
        }
    }
    free(placed);
    if (k < n) {
        flat_free(&f, 1);
        free(order);
        unlock();
        return CUDA_ERROR_INVALID_VALUE;
    }
    struct CUgraphExec_st *e = G.exec_free;
    if (e)
        G.exec_free = e->next;
    else
        e = xrealloc(NULL, sizeof(*e));
    e->magic = MAGIC_EXEC;
    e->ctx = c;
    e->n = n;
    e->ntop = g->n;
    e->w = f.w;
    e->deps = f.deps;
    e->ndeps = f.ndeps;
    e->order = order;
    e->launches = 0;
    e->updates = 0;
    e->graph = g;
    e->off = calloc(n + 1, 1);
    e->uploaded = 0;
    g->instantiated = 1;
    e->next = G.execs;
    G.execs = e;
    *out = e;
    unlock();
    return CUDA_SUCCESS;
}

SIM_API CUresult simc_exec_destroy(CUgraphExec e)
{
    lock();
    struct CUgraphExec_st *x = exec_find_locked(e);
    if (x)
        exec_kill_locked(x);
    unlock();
    return x ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* SIM_EXEC_UPDATE_FAIL=N makes every Nth node update of each exec fail, as
 * a driver may refuse one: the node keeps its parameters. */
static int simc_exec_update_refused_locked(struct CUgraphExec_st *x)
{
    static atomic_uint every = UINT_MAX;
    unsigned n = env_cached(&every, "SIM_EXEC_UPDATE_FAIL");
    return n && ++x->updates % n == 0;
}

/* Consumes w. Ops already launched hold their own copies, so this cannot
 * reach back into submitted work. */
SIM_API CUresult simc_exec_set(CUgraphExec e, CUgraphNode node, int kind, sim_work *w)
{
    static atomic_uint delay = UINT_MAX;
    delay_by(&delay, "SIM_EXEC_SET_US"); /* a node's update costs that much host time */
    CUresult r = CUDA_SUCCESS;
    lock();
    struct CUgraphExec_st *x = exec_find_locked(e);
    if (!x || !node_ok(node) || node->index >= x->ntop || x->w[node->index].kind != kind || w->kind != kind)
        r = CUDA_ERROR_INVALID_VALUE;
    else if (simc_exec_update_refused_locked(x))
        r = CUDA_ERROR_OUT_OF_MEMORY;
    else if (kind == SIM_W_COPY && (x->w[node->index].height > 1 || x->w[node->index].depth > 1 ||
                                    w->height > 1 || w->depth > 1 || !w->width))
        r = CUDA_ERROR_INVALID_VALUE; /* the driver updates copies of one dimension only, any size but 0 */
    else if (kind == SIM_W_KERNEL && x->w[node->index].k != w->k && w->k->updater &&
             !x->w[node->index].k->updater)
        r = CUDA_ERROR_INVALID_VALUE; /* the driver takes another function of the node's context, but not one
                                         making device-side update calls where the old one made none (here,
                                         cgraft's updater) */
    if (r == CUDA_SUCCESS) {
        w->devupd = x->w[node->index].devupd;
        simc_work_free(&x->w[node->index]);
        work_bind_locked(w);
        x->w[node->index] = *w;
    } else {
        simc_work_free(w);
    }
    unlock();
    return r;
}

/* The same flattened shape (kinds, kernels, edges) takes the new parameters. */
SIM_API CUresult simc_exec_update(CUgraphExec e, CUgraph g, CUgraphNode *err)
{
    if (err)
        *err = NULL;
    if (!graph_ok(g))
        return CUDA_ERROR_INVALID_VALUE;
    lock();
    struct CUgraphExec_st *x = exec_find_locked(e);
    if (!x) {
        unlock();
        return CUDA_ERROR_INVALID_VALUE;
    }
    flat f;
    flat_build(&f, g);
    CUresult r = CUDA_SUCCESS;
    if (g->n != x->ntop || f.n != x->n)
        r = CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
    for (size_t i = 0; i < f.n && r == CUDA_SUCCESS; i++) {
        int same = f.w[i].kind == x->w[i].kind && f.ndeps[i] == x->ndeps[i];
        for (size_t j = 0; same && j < f.ndeps[i]; j++)
            same = f.deps[i][j] == x->deps[i][j];
        if (same && f.w[i].kind == SIM_W_KERNEL)
            same = f.w[i].k == x->w[i].k;
        if (!same) {
            r = CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
            if (err && i < g->n)
                *err = g->nodes[i];
        }
    }
    if (r == CUDA_SUCCESS)
        for (size_t i = 0; i < f.n; i++) {
            simc_work_free(&x->w[i]);
            x->w[i] = f.w[i];
            f.w[i].args = NULL;
            f.w[i].snap = NULL;
            f.w[i].child = NULL;
        }
    flat_free(&f, 1);
    unlock();
    return r;
}

SIM_API CUresult simc_exec_enable(CUgraphExec e, CUgraphNode node, int on)
{
    lock();
    struct CUgraphExec_st *x = exec_find_locked(e);
    CUresult r = x && node_ok(node) && node->graph == x->graph && node->index < x->ntop ? CUDA_SUCCESS
                                                                                        : CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS)
        x->off[node->index] = !on;
    unlock();
    return r;
}

SIM_API CUresult simc_exec_upload(CUgraphExec e)
{
    lock();
    struct CUgraphExec_st *x = exec_find_locked(e);
    if (x)
        x->uploaded = 1;
    unlock();
    return x ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* What an enabled updater of e sets, applied to the exec's nodes before its
 * launch copies them: the updater runs before them on the device. A change
 * reaches only a device-updatable kernel node of e's own graph that comes
 * after the updater (else it is not applied, as on the device it would race);
 * the exec must have been uploaded. */
static CUresult updater_apply_locked(struct CUgraphExec_st *e)
{
    unsigned char *after = NULL;
    CUresult r = CUDA_SUCCESS;
    for (size_t u = 0; u < e->ntop && r == CUDA_SUCCESS; u++) {
        const sim_work *uw = &e->w[u];
        if (uw->kind != SIM_W_KERNEL || !uw->k->updater || e->off[u])
            continue;
        if (!e->uploaded) {
            r = CUDA_ERROR_INVALID_VALUE;
            break;
        }
        if (!after)
            after = xrealloc(NULL, e->n + 1);
        memset(after, 0, e->n + 1);
        after[u] = 1;
        for (size_t k = 0; k < e->n; k++) {
            size_t i = e->order[k];
            for (size_t j = 0; j < e->ndeps[i] && !after[i]; j++)
                after[i] = after[e->deps[i][j]];
        }
        uint32_t n;
        memcpy(&n, uw->args, 4);
        const unsigned char *recs = uw->args + 8;
        for (uint32_t i = 0; i < n && 8 + (i + 1) * 24u <= uw->k->updater; i++) {
            uint64_t node;
            uint32_t off, size, data, kind;
            memcpy(&node, recs + i * 24, 8);
            memcpy(&off, recs + i * 24 + 8, 4);
            memcpy(&size, recs + i * 24 + 12, 4);
            memcpy(&data, recs + i * 24 + 16, 4);
            memcpy(&kind, recs + i * 24 + 20, 4);
            CUgraphNode t = (CUgraphNode)(uintptr_t)node;
            if (!node_ok(t) || t->graph != e->graph || t->index >= e->ntop || !e->w[t->index].devupd ||
                e->w[t->index].kind != SIM_W_KERNEL || !after[t->index])
                continue;
            sim_work *tw = &e->w[t->index];
            if (kind & 1) {
                if (8 + (size_t)data + 12 <= uw->k->updater) {
                    uint32_t g[3];
                    memcpy(g, recs + data, 12);
                    tw->launch.grid.x = g[0];
                    tw->launch.grid.y = g[1];
                    tw->launch.grid.z = g[2];
                }
            } else if ((size_t)off + size <= tw->k->argsz && 8 + (size_t)data + size <= uw->k->updater) {
                memcpy(tw->args + off, recs + data, size);
            }
        }
    }
    free(after);
    return r;
}

/* SIM_GRAPH_LAUNCH_US makes each graph launch cost that much host time, so
 * tests can see what a replay that saves nothing does. */
static void simc_graph_launch_delay(void)
{
    static atomic_uint delay = UINT_MAX;
    delay_by(&delay, "SIM_GRAPH_LAUNCH_US");
}

/* SIM_GRAPH_LAUNCH_FAIL=N makes every Nth launch of each exec fail at its
 * call, as a driver may refuse one (out of resources, say): nothing of it
 * runs. Counted by exec, a program's own graphs fail alike whether or not
 * an interposer launches graphs of its own. */
static int simc_graph_launch_refused_locked(struct CUgraphExec_st *e)
{
    static atomic_uint every = UINT_MAX;
    unsigned n = env_cached(&every, "SIM_GRAPH_LAUNCH_FAIL");
    return n && ++e->launches % n == 0;
}

/* An exec runs in the context it was instantiated in; a stream of another
 * context or device is not one it can be launched on. */
SIM_API CUresult simc_graph_launch(CUgraphExec eh, CUstream h, int ptsz)
{
    CUresult r;
    simc_graph_launch_delay();
    lock();
    struct CUgraphExec_st *e = exec_find_locked(eh);
    if (!e) {
        unlock();
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (simc_graph_launch_refused_locked(e)) {
        unlock();
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    run_some_locked();
    CUstream s = resolve_locked(h, ptsz, &r);
    if (s && s->cap)
        r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    else if (s && s->ctx != e->ctx)
        r = CUDA_ERROR_INVALID_HANDLE;
    for (size_t i = 0; i < e->n && r == CUDA_SUCCESS; i++)
        if (!work_bound_ok_locked(&e->w[i]))
            r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS)
        r = updater_apply_locked(e);
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
        if (e->off[i])
            w = (sim_work){ .kind = SIM_W_NOP };
        else
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
        ids[i] = op_create(s->ctx, &w, &d);
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
    stream_advance_locked(s, op_create(s->ctx, &join, &all));
    free(sd.v);
    free(ids);
    unlock();
    return CUDA_SUCCESS;
}

/* ---------------------------------------------------------------- capture */

/* Ends a capture whose stream is gone: its streams and events leave it. */
static void capture_abandon_locked(sim_capture *c)
{
    for (struct CUstream_st *t = G.streams; t; t = t->next)
        if (t->cap == c) {
            t->cap = NULL;
            t->ncdeps = 0;
        }
    for (struct CUevent_st *e = G.events; e; e = e->next)
        if (e->cap == c)
            e->cap = NULL;
    if (!c->into)
        graph_free_unlocked(c->graph);
    free(c);
}

/* into: the program's own graph, whose nodes deps the capture starts after.
 * SIM_CAPTURE_DELAY_US: the call takes that long before the capture begins. */
SIM_API CUresult simc_capture_begin(CUstream h, int ptsz, int mode, CUgraph into, const CUgraphNode *deps,
                                    size_t ndeps)
{
    static atomic_uint delay = UINT_MAX;
    CUresult r;
    (void)mode;
    delay_by(&delay, "SIM_CAPTURE_DELAY_US");
    if (into && !graph_ok(into))
        return CUDA_ERROR_INVALID_VALUE;
    if (ndeps && (!into || !deps))
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < ndeps; i++)
        if (!node_ok(deps[i]) || deps[i]->graph != into)
            return CUDA_ERROR_INVALID_VALUE;
    lock();
    run_some_locked();
    CUstream s = resolve_locked(h, ptsz, &r);
    if (s && s->kind == STREAM_LEGACY)
        r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    else if (s && s->cap)
        r = CUDA_ERROR_ILLEGAL_STATE;
    if (r == CUDA_SUCCESS) {
        sim_capture *c = xrealloc(NULL, sizeof(*c));
        c->into = into != NULL;
        if (into)
            c->graph = into;
        else
            simc_graph_create(&c->graph);
        c->origin = s;
        c->id = ++G.capture_ids;
        s->cap = c;
        s->ncdeps = 0;
        for (size_t i = 0; i < ndeps; i++) {
            GROW(s->cdeps, s->ncdeps, s->capcdeps);
            s->cdeps[s->ncdeps++] = deps[i];
        }
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
