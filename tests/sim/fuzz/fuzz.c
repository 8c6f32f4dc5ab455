/* Differential fuzzer for cgraft on the simulated CUDA runtime.
 *
 *   fuzz SEED COUNT [--dump] [--trace]
 *
 * runs COUNT generated programs, seeds SEED..SEED+COUNT-1, one after another in
 * this process, and prints "seed <s> <digest>" for each. A program is generated
 * from its seed alone (its own xorshift generator; SIM_SEED only picks the
 * simulator's order of ready work), allocates and frees its own streams, events
 * and buffers, and is usually a loop over a generated body, because cgraft only
 * replays what repeats. The digest (FNV-1a) covers every return code, every
 * value the host read back and, at the end, every byte of every buffer.
 *
 * Every program must print the same digest for every valid order of device
 * work. The generator guarantees it with a happens-before model (vector
 * clocks over host threads and streams, with only the orderings CUDA defines:
 * stream order, event waits, the legacy stream's barrier against blocking
 * streams, host synchronisation, stream memory operations, thread create and
 * join). The model runs over the whole unrolled program; each access to a
 * buffer that is not ordered after the conflicting earlier accesses gets a
 * fix inserted into the program template (an event record and wait, a wait on
 * an event recorded right after the earlier access, or a host sync), and the
 * model runs again until there is nothing left to fix. run_fuzz.py
 * --bare-check checks the claim empirically over scheduler seeds.
 *
 * --dump prints the generated program; --trace prints each call made, its
 * return code and the running digest; --gen-only generates (and fixes)
 * without running. FUZZ_CHECK=1 makes the program stop at a call whose result
 * the generator did not expect (a generator bug, exit status 3).
 *
 * For taking a failure apart: FUZZ_DROP=id,... removes template ops and
 * FUZZ_ITERS / FUZZ_WITERS set the iteration counts before the fixer runs
 * (run_fuzz.py --minimize uses them); FUZZ_NOIMPLICIT=1 makes the model ignore
 * the legacy stream's implicit ordering, so that explicit waits stand for it;
 * FUZZ_NOBLOCKING=1 makes every stream non-blocking and keeps work off the
 * legacy and per-thread streams where it can; FUZZ_NOFIX=1 skips the fixer
 * (its programs are nondeterministic: for checking the checker).
 * FUZZ_VALUE_WAITS=all gives stream waits on memory to every program whose
 * profile draws them, as the generator did before they became a third
 * (regressions.txt names the generator its seeds need).
 * FUZZ_PAUSES=N switches cgraft off and on again (cgraft_set_enabled), in
 * turn, before every Nth op the program runs, wherever it is (as the
 * governor's probes do); the program is the same, and bare runs make no such
 * call.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dlfcn.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "sim.h"

typedef uint32_t u32;
typedef uint64_t u64;

/* What the headers declare only for per-thread-default-stream builds, and what
 * nvcc's launch code calls. */
cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *func);
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,
                               cudaStream_t stream);
cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
                                    size_t sharedMem, cudaStream_t stream);
cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,
                                  cudaStream_t stream);
cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                                 cudaStream_t stream);
cudaError_t cudaMemcpy2DAsync_ptsz(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                   size_t height, enum cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t cudaMemsetAsync_ptsz(void *devPtr, int value, size_t count, cudaStream_t stream);
cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream);
cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event, unsigned int flags);
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream);
cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t stream, cudaHostFn_t fn, void *userData);
cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind);
cudaError_t cudaMemset_ptds(void *devPtr, int value, size_t count);

/* ------------------------------------------------------------------ limits */

#define MAXB 40          /* buffer slots */
#define MAXS 24          /* stream slots */
#define MAXE 48          /* event slots */
#define MAXG 4           /* graphs captured in the setup */
#define MAXCAP 8         /* capture sections */
#define MAXAG 200        /* model agents: host threads and stream instances */
#define NHV 3            /* host variables host functions update: 2 main, 1 worker */
#define NFLAG 4          /* words of each flag array */
#define SYMN 16          /* words of the __device__ variable */
#define SHMEM_DEFAULT (48u * 1024u)
#define SHMEM_OPTIN (227u * 1024u)

/* ---------------------------------------------------------------- hashing */

static inline u64 fnv(u64 h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}
#define FNV0 0xcbf29ce484222325ull

/* -------------------------------------------------------------------- rng */

typedef struct { u64 s; } rng_t;

static u64 rnext(rng_t *r)
{
    u64 x = r->s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    r->s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

static void rseed(rng_t *r, u64 seed)
{
    u64 z = seed + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    r->s = z ? z : 1;
}

/* lo..hi inclusive */
static int ri(rng_t *r, int lo, int hi)
{
    if (hi <= lo)
        return lo;
    return lo + (int)(rnext(r) % (u64)(hi - lo + 1));
}

static int pct(rng_t *r, int p)
{
    return (int)(rnext(r) % 100) < p;
}

/* ---------------------------------------------------------------- kernels */

/* Kernels are host functions that run the whole grid; they cover
 * grid * block elements clipped to n, so the launch shape matters. All
 * arithmetic is on 32-bit integers: exact, and any change of order shows. */
static int cover(const sim_launch *l, int n)
{
    long long c = (long long)l->grid.x * l->grid.y * l->grid.z * l->block.x * l->block.y * l->block.z;
    return c < n ? (int)c : n;
}

static u32 *g_symdev;                 /* the device copy of g_sym, for the kernel with no parameters */
static u32 g_sym[SYMN];               /* host shadow of a __device__ variable */

static void k_axpb(const sim_launch *l, void **a)
{
    u32 *y = *(u32 **)a[0], m = *(u32 *)a[1], b = *(u32 *)a[2];
    int n = cover(l, *(int *)a[3]);
    for (int i = 0; i < n; i++)
        y[i] = y[i] * m + b;
}

static void k_mix(const sim_launch *l, void **a)
{
    u32 *d = *(u32 **)a[0];
    const u32 *x = *(const u32 **)a[1], *y = *(const u32 **)a[2];
    int n = cover(l, *(int *)a[3]);
    for (int i = 0; i < n; i++)
        d[i] = x[i] * 3u + y[i] * 5u + (u32)i;
}

static void k_acc(const sim_launch *l, void **a)
{
    u32 *d = *(u32 **)a[0];
    const u32 *s = *(const u32 **)a[1];
    u32 m = *(u32 *)a[2];
    int n = cover(l, *(int *)a[3]);
    for (int i = 0; i < n; i++)
        d[i] = d[i] * 7u + s[i] * m;
}

/* A running reduction into out[0], whatever the grid. */
static void k_reduce(const sim_launch *l, void **a)
{
    (void)l;
    u32 *out = *(u32 **)a[0];
    const u32 *x = *(const u32 **)a[1];
    int n = *(int *)a[2];
    u32 s = 0;
    for (int i = 0; i < n; i++)
        s += x[i] * (u32)(i + 1);
    out[0] = out[0] * 31u + s;
}

static void k_rot(const sim_launch *l, void **a)
{
    u32 *y = *(u32 **)a[0];
    int k = *(int *)a[1];
    int n = cover(l, *(int *)a[2]);
    unsigned r = (unsigned)k & 31u;
    for (int i = 0; i < n; i++) {
        u32 v = r ? (y[i] << r) | (y[i] >> (32u - r)) : y[i];
        y[i] = (v ^ ((u32)i * 0x9e3779b9u)) + (u32)k;
    }
}

static void k_noparam(const sim_launch *l, void **a)
{
    (void)l;
    (void)a;
    for (int i = 0; i < SYMN; i++)
        g_symdev[i] = g_symdev[i] * 5u + 3u + (u32)i;
}

/* Sees its launch configuration: a replay with another one shows. */
static void k_shmem(const sim_launch *l, void **a)
{
    u32 *y = *(u32 **)a[0];
    int n = cover(l, *(int *)a[1]);
    u32 add = (u32)l->shmem + l->grid.x * 7u + l->grid.y * 11u + l->block.x * 13u;
    for (int i = 0; i < n; i++)
        y[i] = y[i] * 9u + add;
}

/* Parameters of every size, for the packed "extra" form. */
static void k_many(const sim_launch *l, void **a)
{
    u32 *y = *(u32 **)a[0];
    unsigned char c8 = *(unsigned char *)a[1];
    unsigned short c16 = *(unsigned short *)a[2];
    unsigned long long c64 = *(unsigned long long *)a[3];
    int n = cover(l, *(int *)a[4]);
    const u32 *x = *(const u32 **)a[5];
    u32 d = *(u32 *)a[6];
    for (int i = 0; i < n; i++)
        y[i] = y[i] * (2u * c8 + 1u) + c16 + (u32)c64 + (u32)(c64 >> 32) + x[i] * d;
}

/* Another function of axpb's parameters, and of shmem's. */
static void k_axpb2(const sim_launch *l, void **a)
{
    u32 *y = *(u32 **)a[0], m = *(u32 *)a[1], b = *(u32 *)a[2];
    int n = cover(l, *(int *)a[3]);
    for (int i = 0; i < n; i++)
        y[i] = y[i] * m + b * 3u + 1u;
}

static void k_shmem2(const sim_launch *l, void **a)
{
    u32 *y = *(u32 **)a[0];
    int n = cover(l, *(int *)a[1]);
    u32 add = (u32)l->shmem * 3u + l->grid.x * 5u + l->block.x * 17u + 1u;
    for (int i = 0; i < n; i++)
        y[i] = y[i] * 11u + add;
}

/* Another function of axpb's buffer with one more parameter: other
 * parameter sizes at the same place of a step, in turn. */
static void k_axpb3(const sim_launch *l, void **a)
{
    u32 *y = *(u32 **)a[0], m = *(u32 *)a[1], b = *(u32 *)a[2];
    int n = cover(l, *(int *)a[3]);
    u32 d = *(u32 *)a[4];
    for (int i = 0; i < n; i++)
        y[i] = y[i] * m + b + d * 7u + 2u;
}

/* The generator picks among the first NKERN_GEN; the twins stand in for
 * axpb and shmem at some iterations (r_k), with the limits of their own,
 * never raised. */
enum { KN_AXPB, KN_MIX, KN_ACC, KN_REDUCE, KN_ROT, KN_NOPARAM, KN_SHMEM, KN_MANY, NKERN_GEN,
       KN_AXPB2 = NKERN_GEN, KN_SHMEM2, KN_AXPB3, NKERN };

/* Parameter roles: m read-write buffer, r read buffer, w written buffer,
 * u = x, v = y, d = z (u32), k = x (int), n = the length, c = x as a char,
 * s = y as a short, L = x:y as a 64-bit value. */
typedef struct {
    sim_kernel_fn fn;
    const char *name;
    const char *roles;
} kdesc_t;

static const kdesc_t KD[NKERN] = {
    { k_axpb, "fz_axpb", "muvn" },
    { k_mix, "fz_mix", "wrrn" },
    { k_acc, "fz_acc", "mrun" },
    { k_reduce, "fz_reduce", "mrn" },
    { k_rot, "fz_rot", "mkn" },
    { k_noparam, "fz_noparam", "" },
    { k_shmem, "fz_shmem", "mn" },
    { k_many, "fz_many", "mcsLnrd" },
    { k_axpb2, "fz_axpb2", "muvn" },
    { k_shmem2, "fz_shmem2", "mn" },
    { k_axpb3, "fz_axpb3", "muvnd" },
};

static size_t role_size(char c)
{
    switch (c) {
    case 'm': case 'r': case 'w': case 'L':
        return 8;
    case 'c':
        return 1;
    case 's':
        return 2;
    default:
        return 4;
    }
}

static void register_kernels(void)
{
    for (int k = 0; k < NKERN; k++) {
        size_t sz[8];
        int np = (int)strlen(KD[k].roles);
        for (int i = 0; i < np; i++)
            sz[i] = role_size(KD[k].roles[i]);
        if (simRegisterKernel(KD[k].fn, KD[k].name, np, sz)) {
            fprintf(stderr, "fuzz: simRegisterKernel failed\n");
            exit(2);
        }
    }
    if (simRegisterSymbol(g_sym, sizeof(g_sym))) {
        fprintf(stderr, "fuzz: simRegisterSymbol failed\n");
        exit(2);
    }
}

/* ------------------------------------------------------------ the program */

enum { BK_DEV, BK_DEVASYNC, BK_MANAGED, BK_PINNED, BK_HOSTALLOC, BK_PAGEABLE, BK_SYM, BK_HV, BK_FLAGD, BK_FLAGH };
static const char *BKN[] = { "dev", "devasync", "managed", "pinned", "hostalloc", "pageable", "sym", "hostvar",
                             "flagdev", "flagpinned" };
enum { SK_LEGACY, SK_PTDS, SK_BLOCK, SK_NONBLOCK };
static const char *SKN[] = { "legacy", "ptds", "blocking", "nonblocking" };

/* Fixed slots. */
enum { SL_LEGACY, SL_PTDS, SL_WPTDS, SL_FIRST };
enum { B_SYM, B_HV0, B_HV1, B_HVW, B_FLAGD, B_FLAGH, B_FIRST };
enum { E_FIX0, E_FIX1, E_CAPF, E_CAPJ, E_FIRST };
enum { SEC_SETUP, SEC_BODY, SEC_TEAR, SEC_WSETUP, SEC_WBODY, SEC_WTEAR, SEC_CAP0 };
#define MAXSEC (SEC_CAP0 + MAXCAP)
static const char *SECN[] = { "setup", "body", "teardown", "worker setup", "worker body", "worker teardown" };

typedef struct {
    int kind, n, owner, temp, api;
} gbuf_t;

typedef struct {
    int kind, owner, temp, api, prio;
} gstream_t;

typedef struct {
    int flags, owner, temp, api, role;
} gevent_t;

#define OPKINDS(X) \
    X(KERNEL) X(MEMCPY_ASYNC) X(MEMCPY) X(MEMCPY2D_ASYNC) X(MEMCPY2D) X(MEMCPY3D_ASYNC) X(MEMCPY3D) \
    X(MEMCPY_BATCH) X(MEMSET_ASYNC) X(MEMSET) X(MEMSET2D_ASYNC) X(EVENT_RECORD) X(STREAM_WAIT) \
    X(EVENT_QUERY) X(EVENT_SYNC) X(STREAM_QUERY) X(STREAM_SYNC) X(DEVICE_SYNC) X(HOSTFN) X(MALLOC) X(FREE) \
    X(STREAM_CREATE) X(STREAM_DESTROY) X(EVENT_CREATE) X(EVENT_DESTROY) X(FUNC_ATTR) X(CAPTURE) \
    X(GRAPH_LAUNCH) X(WRITE_VALUE) X(WAIT_VALUE) X(HOST_WRITE) X(HOST_READ) X(READBACK) X(ERR) \
    X(LAST_ERROR) X(INFO) X(SYMBOL) X(WORKER_START) X(WORKER_JOIN) X(PROCADDR) X(MODULE) X(CLEAR_ERROR) \
    X(GRAPH_BUILD) X(GRAPH_SETPARAM)
#define X(n) OP_##n,
enum { OPKINDS(X) NOPK };
#undef X
#define X(n) #n,
static const char *OPN[] = { OPKINDS(X) };
#undef X

/* One call (or a few calls that belong together) of a program template. */
typedef struct {
    int kind, api, id;
    int wmod, wrem;            /* runs when wmod == 0, it % wmod == wrem (wmod > 0), it == wrem (wmod < 0) */
    int s, s2, s3, sl;         /* stream slots; s2 replaces s on odd iterations; s3 a second
                                * stream (capture fork); sl the stream a capture launches on */
    int e, e2;                 /* event slots; e2 replaces e on odd iterations */
    int b[3], b2[3];           /* buffer slots; b2[i] replaces b[i] on odd iterations */
    int k;                     /* kernel */
    u32 x, y, z;               /* scalars */
    int xvar;                  /* 0: constant; 1: x + it * y; 2: x on even, y on odd iterations */
    int gx, gy, bx, gvar;      /* launch shape; grid.x + it % gvar when gvar */
    int shmem, attr;           /* dynamic shared memory; launch with a priority attribute */
    int fsrc;                  /* driver launches: runtime handle, module, library kernel, its function */
    int off, off2, len;        /* elements */
    int w, h, d, pd, ps, ysz;  /* 2D and 3D copies: extent, pitches (elements), rows a slice */
    int sec;                   /* capture section */
    int slot;                  /* graph slot, flag word, host variable */
    int flags;
    int nlaunch;               /* captures: launches of the instantiated graph */
} op_t;

typedef struct {
    op_t *v;
    int n, cap;
} seq_t;

typedef struct prog {
    u64 seed;
    int N, W;
    int iters, witers;
    gbuf_t buf[MAXB];
    int nbuf;
    gstream_t st[MAXS];
    int nst;
    gevent_t ev[MAXE];
    int nev;
    seq_t sec[MAXSEC];
    int ncap, ngraph;
    int next_id;
    int worker;                /* a second host thread */
    int capmode_global;        /* no worker: captures may use the global mode */
    int nfix;                  /* fixes inserted */
    int passes;
} prog_t;

static op_t op_new(int kind)
{
    op_t o;
    memset(&o, 0, sizeof(o));
    o.kind = kind;
    o.s = o.s2 = o.s3 = o.sl = o.e = o.e2 = -1;
    for (int i = 0; i < 3; i++)
        o.b[i] = o.b2[i] = -1;
    o.k = -1;
    o.sec = o.slot = -1;
    o.gy = o.bx = o.gx = 1;
    o.nlaunch = 1;
    return o;
}

static void seq_insert(seq_t *q, int at, const op_t *o)
{
    if (q->n >= q->cap) {
        q->cap = q->cap ? 2 * q->cap : 32;
        q->v = realloc(q->v, (size_t)q->cap * sizeof(op_t));
        if (!q->v) {
            fprintf(stderr, "fuzz: out of memory\n");
            exit(2);
        }
    }
    memmove(&q->v[at + 1], &q->v[at], (size_t)(q->n - at) * sizeof(op_t));
    q->v[at] = *o;
    q->n++;
}

static int emit_in(prog_t *P, int sec, op_t o)
{
    o.id = P->next_id++;
    seq_insert(&P->sec[sec], P->sec[sec].n, &o);
    return o.id;
}

static int seq_find(const seq_t *q, int id)
{
    for (int i = 0; i < q->n; i++)
        if (q->v[i].id == id)
            return i;
    return -1;
}

static void prog_free(prog_t *P)
{
    for (int i = 0; i < MAXSEC; i++)
        free(P->sec[i].v);
    memset(P, 0, sizeof(*P));
}

/* ------------------------------------------------- operands at iteration it */

static int pred(const op_t *o, int it)
{
    if (o->wmod == 0)
        return 1;
    if (o->wmod < 0)
        return it == o->wrem;
    return it % o->wmod == o->wrem;
}

static int r_s(const op_t *o, int it)
{
    return (o->s2 >= 0 && (it & 1)) ? o->s2 : o->s;
}

static int r_e(const op_t *o, int it)
{
    return (o->e2 >= 0 && (it & 1)) ? o->e2 : o->e;
}

static int r_b(const op_t *o, int i, int it)
{
    return (o->b2[i] >= 0 && (it & 1)) ? o->b2[i] : o->b[i];
}

static u32 r_x(const op_t *o, int it)
{
    switch (o->xvar) {
    case 1:
        return o->x + (u32)it * o->y;
    case 2:
        return (it & 1) ? o->y : o->x;
    default:
        return o->x;
    }
}

static int r_gx(const op_t *o, int it)
{
    return o->gvar ? o->gx + it % o->gvar : o->gx;
}

/* The value a stream memory op writes or waits for at iteration it. */
static u32 flag_value(const op_t *o, int it)
{
    return o->x + (u32)it;
}

/* Which limit of dynamic shared memory a launch is checked against: the
 * runtime kernel's (0), a module function's (1) or a library kernel's (2). */
static int limit_class(const op_t *o)
{
    if (o->kind != OP_KERNEL)
        return 0;
    switch (o->api) {
    case 4: case 5: case 6: case 10:
        return o->fsrc == 1 ? 1 : o->fsrc >= 2 ? 2 : 0;
    default:
        return 0;
    }
}

static int is_devlike(int kind)
{
    return kind == BK_DEV || kind == BK_DEVASYNC || kind == BK_MANAGED;
}

static int is_pinned(int kind)
{
    return kind == BK_PINNED || kind == BK_HOSTALLOC;
}

/* ------------------------------------------------- happens-before model */

/* Vector clocks over agents: the two host threads and every stream instance
 * (a stream created again in the same slot is a new agent). An access is an
 * epoch (agent, seq) and belongs to a template op; it happens before an op
 * whose clock has clock[agent] >= seq. Only orderings CUDA documents count;
 * where the simulator orders more (the legacy stream's sync waiting for
 * blocking streams, a free that synchronises), the model does not. */
enum { AG_LEGACY, AG_PTDS, AG_H0, AG_H1, AG_WPTDS, AG_FIRST };

typedef struct {
    u32 c[MAXAG];
} vc_t;

typedef struct {
    int ag;
    u32 seq;
    int sec, id;
} acc_t;

#define MAXR 160
typedef struct {
    int alive, init, hasw, nr;
    acc_t w, r[MAXR];
} mbuf_t;

typedef struct {
    int alive, ag, kind;
    vc_t last, wait;             /* the last op; waits the next op takes on */
} mstream_t;

typedef struct {
    int alive, rec, poison;
    vc_t vc;
} mevent_t;

typedef struct {
    acc_t c;                     /* the access found unordered */
    int cthread, chost, cslot, calt;
    acc_t a;                     /* the earlier access it conflicts with */
    int aslot_alive;             /* a's stream is alive at c, the same instance */
} hz_t;

typedef struct {
    prog_t *P;
    int nag;
    u32 seq[MAXAG];
    int agslot[MAXAG], agthread[MAXAG];
    vc_t host[2], sub[2];
    mstream_t st[MAXS];
    mevent_t ev[MAXE];
    mbuf_t buf[MAXB];
    vc_t flagw[2][NFLAG];
    int flagit[2][NFLAG];        /* 1 + the iteration of the last value written */
    int gbuilt[MAXG];
    int window, joined, started;
    unsigned limit[3][NKERN];
    int gn[MAXG], gb[MAXG][24], gw[MAXG][24];   /* what each setup graph touches */
    hz_t *hz;
    int nhz, caphz;
    int bug;
    char bugmsg[300];
    int csec, cid;               /* the op being modelled */
} model_t;

static void vc_join(vc_t *a, const vc_t *b, int n)
{
    for (int i = 0; i < n; i++)
        if (b->c[i] > a->c[i])
            a->c[i] = b->c[i];
}

static void vc_zero(vc_t *a, int n)
{
    memset(a->c, 0, (size_t)n * sizeof(u32));
}

static int hb(const acc_t *e, const vc_t *v)
{
    return v->c[e->ag] >= e->seq;
}

static void mbug(model_t *M, const char *fmt, ...)
{
    if (M->bug)
        return;
    M->bug = 1;
    int k = snprintf(M->bugmsg, sizeof(M->bugmsg), "%s op #%d: ", M->csec < SEC_CAP0 ? SECN[M->csec] : "capture",
                     M->cid);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(M->bugmsg + k, sizeof(M->bugmsg) - (size_t)k, fmt, ap);
    va_end(ap);
}

static int new_agent(model_t *M, int slot, int th)
{
    if (M->nag >= MAXAG) {
        mbug(M, "too many agents");
        return AG_FIRST;
    }
    int a = M->nag++;
    M->seq[a] = 0;
    M->agslot[a] = slot;
    M->agthread[a] = th;
    return a;
}

static int blocking_kind(int k)
{
    return k != SK_NONBLOCK;
}

static void add_hz(model_t *M, const acc_t *c, int th, int chost, int cslot, int calt, const acc_t *a)
{
    /* One per pair of template ops and pass: the fix covers every iteration. */
    for (int i = 0; i < M->nhz; i++) {
        hz_t *h = &M->hz[i];
        if (h->c.sec == c->sec && h->c.id == c->id && h->a.sec == a->sec && h->a.id == a->id)
            return;
    }
    if (M->nhz >= M->caphz) {
        M->caphz = M->caphz ? 2 * M->caphz : 64;
        M->hz = realloc(M->hz, (size_t)M->caphz * sizeof(hz_t));
        if (!M->hz)
            exit(2);
    }
    hz_t *h = &M->hz[M->nhz++];
    h->c = *c;
    h->cthread = th;
    h->chost = chost;
    h->cslot = cslot;
    h->calt = calt;
    h->a = *a;
    int as = M->agslot[a->ag];
    h->aslot_alive = as >= 0 && M->st[as].alive && M->st[as].ag == a->ag;
}

/* Checks an access of the op whose clock is v against the buffer's history;
 * an unordered earlier access is a hazard, fixed in place (v takes it on) so
 * that the pass goes on. */
typedef struct {
    int th, host, slot, alt;
} who_t;

/* Access flags: reads, writes, writes every byte (the buffer's contents are
 * defined from then on: reading a buffer before that is a generator bug). */
enum { AC_R = 1, AC_W = 2, AC_FULL = 4 };

static void m_check(model_t *M, int b, int fl, vc_t *v, const acc_t *c, const who_t *w)
{
    int write = fl & AC_W;
    if (b < 0 || b >= MAXB) {
        mbug(M, "bad buffer slot %d", b);
        return;
    }
    mbuf_t *B = &M->buf[b];
    if (!B->alive) {
        mbug(M, "buffer %d used while not allocated", b);
        return;
    }
    if ((fl & AC_R) && !B->init) {
        mbug(M, "buffer %d read before it was written", b);
        return;
    }
    if (B->hasw && !hb(&B->w, v)) {
        add_hz(M, c, w->th, w->host, w->slot, w->alt, &B->w);
        v->c[B->w.ag] = B->w.seq > v->c[B->w.ag] ? B->w.seq : v->c[B->w.ag];
    }
    if (write)
        for (int i = 0; i < B->nr; i++)
            if (!hb(&B->r[i], v)) {
                add_hz(M, c, w->th, w->host, w->slot, w->alt, &B->r[i]);
                if (B->r[i].seq > v->c[B->r[i].ag])
                    v->c[B->r[i].ag] = B->r[i].seq;
            }
}

/* v: the accessor's clock. A read ordered before a newer one needs no
 * keeping: whatever comes after the newer one comes after it too. */
static void m_commit(model_t *M, int b, int fl, const acc_t *c, const vc_t *v)
{
    mbuf_t *B = &M->buf[b];
    if (fl & AC_W) {
        B->w = *c;
        B->hasw = 1;
        if (fl & AC_FULL)
            B->init = 1;
        B->nr = 0;
        return;
    }
    int k = 0;
    for (int i = 0; i < B->nr; i++)
        if (B->r[i].ag != c->ag && !hb(&B->r[i], v))
            B->r[k++] = B->r[i];
    B->nr = k;
    if (B->nr >= MAXR) {
        mbug(M, "too many concurrent readers of buffer %d", b);
        return;
    }
    B->r[B->nr++] = *c;
}

/* Up to 24 accesses of one op. */
typedef struct {
    int n, b[24], w[24];
} accs_t;

static void acc_add(accs_t *A, int b, int fl)
{
    if (b < 0)
        return;
    for (int i = 0; i < A->n; i++)
        if (A->b[i] == b) {
            A->w[i] |= fl;
            return;
        }
    if (A->n < 24) {
        A->b[A->n] = b;
        A->w[A->n++] = fl;
    }
}

/* AC_W, and AC_FULL when elements off..off+len cover all of buffer b. */
static int wr(const prog_t *P, int b, int off, int len)
{
    return AC_W | (b >= 0 && off == 0 && len >= P->buf[b].n ? AC_FULL : 0);
}

/* A device op on slot: the clock it starts with, by stream order, pending
 * waits, the submitting thread and the legacy stream's rules. */
static void m_dev_vc(model_t *M, int th, int slot, vc_t *v)
{
    int n = M->nag;
    mstream_t *s = &M->st[slot];
    if (slot < 0 || !s->alive) {
        mbug(M, "stream slot %d used while not alive", slot);
        vc_zero(v, n);
        return;
    }
    *v = s->last;
    vc_join(v, &s->wait, n);
    vc_join(v, &M->host[th], n);
    static int noimplicit = -1;
    if (noimplicit < 0) {
        /* FUZZ_NOIMPLICIT=1, for telling failures apart: the legacy stream's
         * implicit ordering is not relied on, explicit waits stand for it. */
        const char *e = getenv("FUZZ_NOIMPLICIT");
        noimplicit = e && *e && strcmp(e, "0");
    }
    if (noimplicit) {
    } else if (s->kind == SK_LEGACY) {
        for (int t = 0; t < MAXS; t++) {
            mstream_t *x = &M->st[t];
            if (t == slot || !x->alive || !blocking_kind(x->kind))
                continue;
            if (M->window && M->agthread[x->ag] != th)
                continue;   /* the other thread's work: its order against ours is not known */
            vc_join(v, &x->last, n);
        }
    } else if (blocking_kind(s->kind)) {
        vc_join(v, &M->st[SL_LEGACY].last, n);
    }
    v->c[s->ag] = M->seq[s->ag] + 1;
}

static void m_dev_commit(model_t *M, int th, int slot, const vc_t *v)
{
    mstream_t *s = &M->st[slot];
    if (!s->alive)
        return;
    s->last = *v;
    vc_zero(&s->wait, M->nag);
    M->seq[s->ag]++;
    vc_join(&M->sub[th], v, M->nag);
}

/* A device op with its accesses; returns its clock through out. */
static void m_devop(model_t *M, int th, int slot, int alt, const accs_t *A, vc_t *out)
{
    vc_t v;
    m_dev_vc(M, th, slot, &v);
    if (M->bug)
        return;
    acc_t c = { M->st[slot].ag, v.c[M->st[slot].ag], M->csec, M->cid };
    who_t w = { th, 0, slot, alt };
    for (int i = 0; A && i < A->n; i++)
        m_check(M, A->b[i], A->w[i], &v, &c, &w);
    m_dev_commit(M, th, slot, &v);
    for (int i = 0; A && i < A->n; i++)
        m_commit(M, A->b[i], A->w[i], &c, &v);
    if (out)
        *out = v;
}

static void m_hostacc(model_t *M, int th, int b, int fl)
{
    int ag = AG_H0 + th;
    vc_t *v = &M->host[th];
    v->c[ag] = ++M->seq[ag];
    acc_t c = { ag, v->c[ag], M->csec, M->cid };
    who_t w = { th, 1, -1, 0 };
    m_check(M, b, fl, v, &c, &w);
    m_commit(M, b, fl, &c, v);
}

static void m_hostjoin(model_t *M, int th, const vc_t *v)
{
    vc_join(&M->host[th], v, M->nag);
}

/* The kernel a launch op makes at iteration it: for a quarter of the
 * launches of axpb and shmem, their twin at every third iteration (one node
 * given another function, of the same parameters, the twin's limits its
 * own); for another quarter of axpb's, axpb3 at every other iteration
 * (another function of more parameters: a step of two forms in turn). */
static int r_k(const op_t *o, int it)
{
    int twin = o->k == KN_AXPB ? KN_AXPB2 : o->k == KN_SHMEM ? KN_SHMEM2 : -1;
    u32 slice = ((u32)o->id * 0x9e3779b9u) >> 30;
    if (o->kind == OP_KERNEL && o->k == KN_AXPB && slice == 2 && it % 2 == 1)
        return KN_AXPB3;
    return o->kind == OP_KERNEL && twin >= 0 && slice == 1 && it % 3 == 1 ? twin : o->k;
}

static void kernel_accs(const prog_t *P, const op_t *o, int it, accs_t *A)
{
    (void)P;
    const char *r = KD[o->k].roles;
    int bi = 0;
    for (; *r; r++) {
        if (*r != 'm' && *r != 'r' && *r != 'w')
            continue;
        acc_add(A, r_b(o, bi, it), *r == 'r' ? AC_R : *r == 'w' ? AC_W : AC_R | AC_W);
        bi++;
    }
    if (o->k == KN_NOPARAM)
        acc_add(A, B_SYM, AC_R | AC_W);
}

static int kernel_ok(const model_t *M, const op_t *o, int it)
{
    (void)it;
    if (o->bx > 1024 || o->gx <= 0)
        return 0;
    return (unsigned)o->shmem <= M->limit[limit_class(o)][r_k(o, it)];
}

/* A capture must capture all its ops: each on the origin or on a stream
 * that joined by waiting for an event recorded in the capture, and every
 * stream that joined must be joined back into the origin at the end. */
static int capture_ok(const prog_t *P, int sec, int origin)
{
    const seq_t *q = &P->sec[sec];
    int in[MAXS] = { 0 }, dirty[MAXS] = { 0 };
    int evs[MAXE], evd[MAXE];     /* event: recorded on stream, stream had no later op */
    for (int e = 0; e < MAXE; e++)
        evs[e] = -1, evd[e] = 0;
    in[origin] = 1;
    for (int i = 0; i < q->n; i++) {
        const op_t *o = &q->v[i];
        if (o->s < 0 || o->s >= MAXS)
            continue;
        if (o->kind == OP_STREAM_WAIT) {
            if (evs[o->e] < 0)
                return 0;
            in[o->s] = 1;
            if (o->s == origin && evd[o->e])
                dirty[evs[o->e]] = 0;
            continue;
        }
        if (!in[o->s])
            return 0;
        if (o->kind == OP_EVENT_RECORD) {
            evs[o->e] = o->s;
            evd[o->e] = 1;
            continue;
        }
        for (int e = 0; e < MAXE; e++)
            if (evs[e] == o->s)
                evd[e] = 0;
        if (o->s != origin)
            dirty[o->s] = 1;
    }
    for (int t = 0; t < MAXS; t++)
        if (t != origin && in[t] && dirty[t])
            return 0;
    return 1;
}

/* What a capture section touches, resolved at iteration it. */
static void capture_accs(const prog_t *P, int sec, int it, accs_t *A)
{
    const seq_t *q = &P->sec[sec];
    for (int i = 0; i < q->n; i++) {
        const op_t *o = &q->v[i];
        switch (o->kind) {
        case OP_KERNEL:
            kernel_accs(P, o, it, A);
            break;
        case OP_MEMSET_ASYNC:
            acc_add(A, r_b(o, 0, it), wr(P, r_b(o, 0, it), o->off, o->len));
            break;
        case OP_MEMSET2D_ASYNC:
            acc_add(A, r_b(o, 0, it), AC_W);
            break;
        case OP_MEMCPY_ASYNC:
            acc_add(A, r_b(o, 1, it), AC_R);
            acc_add(A, r_b(o, 0, it), wr(P, r_b(o, 0, it), o->off, o->len));
            break;
        case OP_HOSTFN:
            acc_add(A, o->slot, AC_R | AC_W);
            acc_add(A, r_b(o, 0, it), AC_R);
            break;
        default:
            break;
        }
    }
}

static void m_alloc(model_t *M, int b, const acc_t *c)
{
    mbuf_t *B = &M->buf[b];
    if (B->alive)
        mbug(M, "buffer %d allocated twice", b);
    B->alive = 1;
    B->init = 0;
    B->hasw = 1;
    B->w = *c;
    B->nr = 0;
}

static void model_section(model_t *M, int sec, int it, int th);

static void model_op(model_t *M, const op_t *o, int it, int th)
{
    const prog_t *P = M->P;
    accs_t A = { 0 };
    vc_t v;
    int s = r_s(o, it);
    int alt = o->s2 >= 0;
    M->cid = o->id;
    switch (o->kind) {
    case OP_KERNEL:
        if (!kernel_ok(M, o, it))
            break;
        kernel_accs(P, o, it, &A);
        m_devop(M, th, s, alt, &A, NULL);
        break;
    case OP_MEMCPY_ASYNC:
    case OP_MEMCPY2D_ASYNC:
    case OP_MEMCPY3D_ASYNC:
    case OP_MEMCPY:
    case OP_MEMCPY2D:
    case OP_MEMCPY3D: {
        int d = r_b(o, 0, it), sb = r_b(o, 1, it);
        int dk = P->buf[d].kind, sk = P->buf[sb].kind;
        int sync = o->kind == OP_MEMCPY || o->kind == OP_MEMCPY2D || o->kind == OP_MEMCPY3D;
        int lin = o->kind == OP_MEMCPY || o->kind == OP_MEMCPY_ASYNC;
        if (sk == BK_PAGEABLE)
            m_hostacc(M, th, sb, AC_R);
        else
            acc_add(&A, sb, AC_R);
        acc_add(&A, d, lin ? wr(P, d, o->off, o->len) : AC_W);
        m_devop(M, th, s, alt, &A, &v);
        if (dk == BK_PAGEABLE || (sync && (is_pinned(dk) || (is_pinned(sk) && is_devlike(dk)))))
            m_hostjoin(M, th, &v);
        break;
    }
    case OP_MEMCPY_BATCH: {
        int d = r_b(o, 0, it), sb = r_b(o, 1, it);
        if (o->flags & 1)   /* the source is read during the call */
            m_hostacc(M, th, sb, AC_R);
        else
            acc_add(&A, sb, AC_R);
        acc_add(&A, d, AC_W);
        m_devop(M, th, s, alt, &A, NULL);
        break;
    }
    case OP_MEMSET_ASYNC:
    case OP_MEMSET:
    case OP_MEMSET2D_ASYNC:
        acc_add(&A, r_b(o, 0, it), o->kind == OP_MEMSET2D_ASYNC ? AC_W : wr(P, r_b(o, 0, it), o->off, o->len));
        m_devop(M, th, s, alt, &A, NULL);
        break;
    case OP_EVENT_RECORD: {
        int e = r_e(o, it);
        if (!M->ev[e].alive) {
            mbug(M, "event %d recorded while not alive", e);
            break;
        }
        m_devop(M, th, s, alt, NULL, &v);
        M->ev[e].vc = v;
        M->ev[e].rec = 1;
        M->ev[e].poison = 0;
        break;
    }
    case OP_STREAM_WAIT: {
        int e = r_e(o, it);
        if (!M->ev[e].alive || M->ev[e].poison) {
            mbug(M, "wait on event %d that is not alive or was recorded in a capture", e);
            break;
        }
        if (!M->st[s].alive) {
            mbug(M, "wait on stream slot %d that is not alive", s);
            break;
        }
        if (M->ev[e].rec)
            vc_join(&M->st[s].wait, &M->ev[e].vc, M->nag);
        break;
    }
    case OP_EVENT_QUERY:
    case OP_EVENT_SYNC: {
        int e = r_e(o, it);
        if (!M->ev[e].alive) {
            mbug(M, "event %d used while not alive", e);
            break;
        }
        if ((o->kind == OP_EVENT_SYNC || o->api == 1) && M->ev[e].rec)
            m_hostjoin(M, th, &M->ev[e].vc);
        break;
    }
    case OP_STREAM_QUERY:
    case OP_STREAM_SYNC:
        if (!M->st[s].alive) {
            mbug(M, "stream slot %d synchronised while not alive", s);
            break;
        }
        if (o->kind == OP_STREAM_SYNC || o->api == 1)
            m_hostjoin(M, th, &M->st[s].last);
        break;
    case OP_DEVICE_SYNC:
        m_hostjoin(M, th, &M->sub[th]);
        if (th == 0 && M->joined)
            m_hostjoin(M, th, &M->sub[1]);
        break;
    case OP_HOSTFN:
        acc_add(&A, o->slot, AC_R | AC_W);
        acc_add(&A, r_b(o, 0, it), AC_R);
        m_devop(M, th, s, alt, &A, NULL);
        break;
    case OP_MALLOC: {
        int b = o->b[0];
        if (P->buf[b].kind == BK_DEVASYNC) {
            /* Valid from this point of the stream's order. */
            m_dev_vc(M, th, s, &v);
            if (M->bug)
                break;
            acc_t c = { M->st[s].ag, v.c[M->st[s].ag], M->csec, M->cid };
            m_dev_commit(M, th, s, &v);
            m_alloc(M, b, &c);
        } else {
            int ag = AG_H0 + th;
            M->host[th].c[ag] = ++M->seq[ag];
            acc_t c = { ag, M->host[th].c[ag], M->csec, M->cid };
            m_alloc(M, b, &c);
            if (P->buf[b].kind == BK_FLAGD || P->buf[b].kind == BK_FLAGH)
                M->buf[b].init = 1;
        }
        break;
    }
    case OP_FREE: {
        int b = o->b[0];
        if (P->buf[b].kind == BK_DEVASYNC) {
            acc_add(&A, b, AC_W);
            m_devop(M, th, s, alt, &A, NULL);
        } else {
            m_hostacc(M, th, b, AC_W);
        }
        M->buf[b].alive = 0;
        break;
    }
    case OP_STREAM_CREATE: {
        mstream_t *x = &M->st[o->s];
        if (x->alive)
            mbug(M, "stream slot %d created twice", o->s);
        x->alive = 1;
        x->kind = P->st[o->s].kind;
        x->ag = new_agent(M, o->s, th);
        vc_zero(&x->last, MAXAG);
        vc_zero(&x->wait, MAXAG);
        break;
    }
    case OP_STREAM_DESTROY:
        if (!M->st[o->s].alive)
            mbug(M, "stream slot %d destroyed while not alive", o->s);
        M->st[o->s].alive = 0;
        break;
    case OP_EVENT_CREATE:
        if (M->ev[o->e].alive)
            mbug(M, "event %d created twice", o->e);
        M->ev[o->e].alive = 1;
        M->ev[o->e].rec = 0;
        M->ev[o->e].poison = 0;
        break;
    case OP_EVENT_DESTROY:
        if (!M->ev[o->e].alive)
            mbug(M, "event %d destroyed while not alive", o->e);
        M->ev[o->e].alive = 0;
        break;
    case OP_FUNC_ATTR: {
        int cls = o->api == 1 ? 1 : o->api == 2 ? 2 : 0;
        if (o->x <= SHMEM_OPTIN)
            M->limit[cls][o->k] = o->x;
        break;
    }
    case OP_CAPTURE: {
        if (!capture_ok(P, o->sec, o->s))
            mbug(M, "capture does not capture all its work");
        if (o->slot >= 0)
            M->gbuilt[o->slot] = 1;
        /* Work a stream had been told to wait for is not assumed to carry
         * over a capture. */
        vc_zero(&M->st[o->s].wait, M->nag);
        if (o->s3 >= 0)
            vc_zero(&M->st[o->s3].wait, M->nag);
        M->ev[E_CAPF].poison = M->ev[E_CAPF].alive;
        M->ev[E_CAPJ].poison = M->ev[E_CAPJ].alive;
        capture_accs(P, o->sec, it, &A);
        if (o->slot >= 0) {
            M->gn[o->slot] = A.n;
            memcpy(M->gb[o->slot], A.b, sizeof(A.b));
            memcpy(M->gw[o->slot], A.w, sizeof(A.w));
        }
        for (int i = 0; i < o->nlaunch; i++)
            m_devop(M, th, o->sl, 0, &A, NULL);
        break;
    }
    case OP_GRAPH_BUILD:
        if (o->slot >= 0)
            M->gbuilt[o->slot] = 1;
        capture_accs(P, o->sec, it, &A);
        if (o->slot >= 0) {
            M->gn[o->slot] = A.n;
            memcpy(M->gb[o->slot], A.b, sizeof(A.b));
            memcpy(M->gw[o->slot], A.w, sizeof(A.w));
        }
        for (int i = 0; i < o->nlaunch; i++)
            m_devop(M, th, o->sl, 0, &A, NULL);
        break;
    case OP_GRAPH_SETPARAM:
        if (!M->gbuilt[o->slot])
            mbug(M, "graph %d updated but never built", o->slot);
        break;
    case OP_GRAPH_LAUNCH:
        if (!M->gbuilt[o->slot])
            mbug(M, "graph %d launched but never built", o->slot);
        A.n = M->gn[o->slot];
        memcpy(A.b, M->gb[o->slot], sizeof(A.b));
        memcpy(A.w, M->gw[o->slot], sizeof(A.w));
        m_devop(M, th, s, alt, &A, NULL);
        break;
    case OP_WRITE_VALUE: {
        vc_t *last = &M->flagw[o->b[0] == B_FLAGH][o->slot];
        m_devop(M, th, s, alt, NULL, &v);
        for (int a = 0; a < M->nag; a++)
            if (last->c[a] > v.c[a]) {
                mbug(M, "writes of flag word %d are not ordered", o->slot);
                break;
            }
        *last = v;
        M->flagit[o->b[0] == B_FLAGH][o->slot] = it + 1;
        break;
    }
    case OP_WAIT_VALUE:
        if (o->flags & 1) {
            /* The host stores the value right after the wait. */
            m_devop(M, th, s, alt, NULL, NULL);
            int ag = AG_H0 + th;
            M->host[th].c[ag] = ++M->seq[ag];
            vc_join(&M->st[s].wait, &M->host[th], M->nag);
        } else {
            if (M->flagit[o->b[0] == B_FLAGH][o->slot] != it + 1) {
                mbug(M, "wait for a value of flag word %d no one wrote", o->slot);
                break;
            }
            m_dev_vc(M, th, s, &v);
            if (M->bug)
                break;
            vc_join(&v, &M->flagw[o->b[0] == B_FLAGH][o->slot], M->nag);
            m_dev_commit(M, th, s, &v);
        }
        break;
    case OP_HOST_WRITE:
        m_hostacc(M, th, o->b[0], wr(P, o->b[0], o->off, o->len));
        break;
    case OP_HOST_READ:
        m_hostacc(M, th, r_b(o, 0, it), AC_R);
        break;
    case OP_READBACK:
        acc_add(&A, r_b(o, 0, it), AC_R);
        m_devop(M, th, s, alt, &A, &v);
        m_hostjoin(M, th, &v);
        break;
    case OP_SYMBOL:
        switch (o->api) {
        case 0:   /* to the symbol from pageable memory, blocking */
            m_hostacc(M, th, o->b[1], AC_R);
            acc_add(&A, B_SYM, wr(P, B_SYM, o->off, o->len));
            m_devop(M, th, s, alt, &A, NULL);
            break;
        case 1:   /* to the symbol, stream-ordered */
            acc_add(&A, r_b(o, 1, it), AC_R);
            acc_add(&A, B_SYM, wr(P, B_SYM, o->off, o->len));
            m_devop(M, th, s, alt, &A, NULL);
            break;
        case 2:   /* from the symbol into pageable memory, blocking */
            acc_add(&A, B_SYM, AC_R);
            m_devop(M, th, s, alt, &A, &v);
            m_hostjoin(M, th, &v);
            break;
        default:  /* from the symbol, stream-ordered */
            acc_add(&A, B_SYM, AC_R);
            acc_add(&A, r_b(o, 0, it), AC_W);
            m_devop(M, th, s, alt, &A, NULL);
            break;
        }
        break;
    case OP_ERR:
    case OP_INFO:
        /* The buffers they name are real arguments, even of calls that fail. */
        for (int i = 0; i < 2; i++)
            if (o->b[i] >= 0 && (o->kind == OP_ERR || o->api == 3) && !M->buf[o->b[i]].alive)
                mbug(M, "buffer %d named while not allocated", o->b[i]);
        if (o->e >= 0 && o->kind == OP_ERR && o->api == 3 && !M->ev[o->e].alive)
            mbug(M, "event %d named while not alive", o->e);
        break;
    case OP_WORKER_START: {
        if (M->started)
            mbug(M, "worker started twice");
        M->started = 1;
        M->host[1] = M->host[0];
        M->window = 1;
        int csec = M->csec;
        model_section(M, SEC_WSETUP, 0, 1);
        for (int i = 0; i < P->witers && !M->bug; i++)
            model_section(M, SEC_WBODY, i, 1);
        model_section(M, SEC_WTEAR, 0, 1);
        M->csec = csec;
        break;
    }
    case OP_WORKER_JOIN:
        if (!M->started || M->joined)
            mbug(M, "worker joined but not running");
        m_hostjoin(M, 0, &M->host[1]);
        M->window = 0;
        M->joined = 1;
        break;
    default:
        break;
    }
}

static void model_section(model_t *M, int sec, int it, int th)
{
    const seq_t *q = &M->P->sec[sec];
    for (int i = 0; i < q->n && !M->bug; i++) {
        M->csec = sec;
        if (pred(&q->v[i], it))
            model_op(M, &q->v[i], it, th);
    }
}

static model_t *model_run(prog_t *P)
{
    static model_t *M;
    if (!M)
        M = calloc(1, sizeof(*M));
    if (!M)
        exit(2);
    hz_t *hz = M->hz;
    int caphz = M->caphz;
    memset(M, 0, sizeof(*M));
    M->hz = hz;
    M->caphz = caphz;
    M->P = P;
    M->nag = AG_FIRST;
    for (int a = 0; a < AG_FIRST; a++) {
        M->agslot[a] = -1;
        M->agthread[a] = a == AG_H1 || a == AG_WPTDS;
    }
    M->agslot[AG_LEGACY] = SL_LEGACY;
    M->agslot[AG_PTDS] = SL_PTDS;
    M->agslot[AG_WPTDS] = SL_WPTDS;
    M->st[SL_LEGACY] = (mstream_t){ .alive = 1, .ag = AG_LEGACY, .kind = SK_LEGACY };
    M->st[SL_PTDS] = (mstream_t){ .alive = 1, .ag = AG_PTDS, .kind = SK_PTDS };
    M->st[SL_WPTDS] = (mstream_t){ .alive = 1, .ag = AG_WPTDS, .kind = SK_PTDS };
    for (int c = 0; c < 3; c++)
        for (int k = 0; k < NKERN; k++)
            M->limit[c][k] = SHMEM_DEFAULT;
    model_section(M, SEC_SETUP, 0, 0);
    for (int it = 0; it < P->iters && !M->bug; it++)
        model_section(M, SEC_BODY, it, 0);
    model_section(M, SEC_TEAR, 0, 0);
    if (M->started && !M->joined)
        mbug(M, "worker never joined");
    return M;
}

/* ------------------------------------------------------------- the fixer */

/* Ops whose work goes to the stream r_s() names. */
static int stream_op(int kind)
{
    switch (kind) {
    case OP_KERNEL: case OP_MEMCPY_ASYNC: case OP_MEMCPY: case OP_MEMCPY2D_ASYNC: case OP_MEMCPY2D:
    case OP_MEMCPY3D_ASYNC: case OP_MEMCPY3D: case OP_MEMCPY_BATCH: case OP_MEMSET_ASYNC: case OP_MEMSET:
    case OP_MEMSET2D_ASYNC: case OP_HOSTFN: case OP_GRAPH_LAUNCH: case OP_READBACK: case OP_SYMBOL:
    case OP_EVENT_RECORD: case OP_WRITE_VALUE:
        return 1;
    default:
        return 0;
    }
}

static int add_event(prog_t *P, int flags, int owner, int temp, int role)
{
    if (P->nev >= MAXE)
        return -1;
    P->ev[P->nev] = (gevent_t){ flags, owner, temp, 0, role };
    return P->nev++;
}

static void insert_before(prog_t *P, int sec, int id, op_t o)
{
    seq_t *q = &P->sec[sec];
    int at = seq_find(q, id);
    o.id = P->next_id++;
    seq_insert(q, at < 0 ? q->n : at, &o);
}

static void insert_after(prog_t *P, int sec, int id, op_t o)
{
    seq_t *q = &P->sec[sec];
    int at = seq_find(q, id);
    o.id = P->next_id++;
    seq_insert(q, at < 0 ? q->n : at + 1, &o);
}

/* One fix for one hazard: c must come after a. */
static void fix_hazard(prog_t *P, rng_t *R, const model_t *M, const hz_t *h)
{
    seq_t *cq = &P->sec[h->c.sec];
    int pc = seq_find(cq, h->c.id);
    if (pc < 0)
        return;
    op_t C = cq->v[pc];
    int ath = M->agthread[h->a.ag];
    int ahost = h->a.ag == AG_H0 || h->a.ag == AG_H1;
    int aslot = M->agslot[h->a.ag];
    int th = h->cthread;
    op_t f = op_new(0);
    f.wmod = C.wmod;
    f.wrem = C.wrem;
    P->nfix++;
    if (ahost || ath != th) {
        /* Another thread's work: only a device-wide sync after the join orders it. */
        f.kind = OP_DEVICE_SYNC;
        f.api = ri(R, 0, 1);
        insert_before(P, h->c.sec, h->c.id, f);
        return;
    }
    /* F2 needs the earlier op in a section of the same thread. */
    op_t Acopy, *A = NULL;
    int pa = seq_find(&P->sec[h->a.sec], h->a.id);
    if (pa >= 0) {
        Acopy = P->sec[h->a.sec].v[pa];
        A = &Acopy;
    }
    int f2_ok = A && stream_op(A->kind) && P->nev < MAXE;
    int f1_ok = h->aslot_alive && !h->chost && C.kind != OP_CAPTURE;
    int r = ri(R, 0, 99);
    int fe = th ? E_FIX1 : E_FIX0;
    if (f1_ok && r < 45) {
        /* Record a fresh event on a's stream right here, wait for it. */
        f.kind = OP_EVENT_RECORD;
        f.api = ri(R, 0, 4);
        f.s = aslot;
        f.e = fe;
        insert_before(P, h->c.sec, h->c.id, f);
        f.kind = OP_STREAM_WAIT;
        f.api = ri(R, 0, 2);
        f.e = fe;
        f.s = h->calt ? C.s : h->cslot;
        f.s2 = h->calt ? C.s2 : -1;
        insert_before(P, h->c.sec, h->c.id, f);
        return;
    }
    if (f2_ok && (r < 80 || (!f1_ok && r < 90)) && (!h->chost || r % 2) && C.kind != OP_CAPTURE) {
        /* An event of its own recorded right after a, waited for (or
         * synchronised with) before c, iterations later perhaps. */
        int e = add_event(P, pct(R, 50) ? cudaEventDisableTiming : 0, th, 0, 3);
        op_t ce = op_new(OP_EVENT_CREATE);
        ce.e = e;
        ce.api = ri(R, 0, 2);
        ce.id = P->next_id++;
        seq_insert(&P->sec[th ? SEC_WSETUP : SEC_SETUP], 0, &ce);
        op_t de = op_new(OP_EVENT_DESTROY);
        de.e = e;
        de.api = ri(R, 0, 1);
        emit_in(P, th ? SEC_WTEAR : SEC_TEAR, de);
        op_t rec = op_new(OP_EVENT_RECORD);
        rec.api = ri(R, 0, 4);
        rec.wmod = A->wmod;
        rec.wrem = A->wrem;
        rec.s = A->s;
        rec.s2 = A->s2;
        rec.e = e;
        insert_after(P, h->a.sec, h->a.id, rec);
        if (h->chost) {
            f.kind = pct(R, 70) ? OP_EVENT_SYNC : OP_EVENT_QUERY;
            f.api = f.kind == OP_EVENT_SYNC ? ri(R, 0, 1) : 1;
        } else {
            f.kind = OP_STREAM_WAIT;
            f.api = ri(R, 0, 2);
            f.s = h->calt ? C.s : h->cslot;
            f.s2 = h->calt ? C.s2 : -1;
        }
        f.e = e;
        insert_before(P, h->c.sec, h->c.id, f);
        return;
    }
    /* F3: the host waits for a's stream, or for the device. */
    if (h->aslot_alive && pct(R, 75)) {
        f.kind = pct(R, 75) ? OP_STREAM_SYNC : OP_STREAM_QUERY;
        f.api = f.kind == OP_STREAM_SYNC ? ri(R, 0, 2) : 1;
        f.s = aslot;
    } else {
        f.kind = OP_DEVICE_SYNC;
        f.api = ri(R, 0, 1);
    }
    insert_before(P, h->c.sec, h->c.id, f);
}

static void fix_program(prog_t *P)
{
    rng_t R;
    rseed(&R, P->seed ^ 0xF1F1F1F1ull);
    static int nofix = -1;
    if (nofix < 0) {
        const char *v = getenv("FUZZ_NOFIX");   /* for checking the checker: no fixes */
        nofix = v && *v && strcmp(v, "0");
    }
    if (nofix)
        return;
    for (int pass = 0; pass < 80; pass++) {
        model_t *M = model_run(P);
        if (M->bug) {
            fprintf(stderr, "fuzz: generator bug, seed %" PRIu64 ": %s\n", P->seed, M->bugmsg);
            exit(3);
        }
        P->passes = pass + 1;
        if (!M->nhz)
            return;
        for (int i = 0; i < M->nhz; i++)
            fix_hazard(P, &R, M, &M->hz[i]);
    }
    fprintf(stderr, "fuzz: generator bug, seed %" PRIu64 ": hazards left after 80 passes\n", P->seed);
    exit(3);
}

/* ------------------------------------------------------------- generator */

enum {
    E_KERNEL, E_NOPARAM, E_D2D, E_H2D, E_D2H, E_MEMCPY_SYNC, E_2D, E_3D, E_BATCH, E_MEMSET, E_MEMSET_SYNC,
    E_MEMSET2D, E_RECORD, E_WAIT, E_FORKJOIN, E_QUERY, E_SYNC, E_HOSTFN, E_TEMPBUF, E_TEMPSTREAM,
    E_TEMPEVENT, E_FUNCATTR, E_CAPTURE, E_GRAPHLAUNCH, E_VALUE, E_HOSTREAD, E_READBACK, E_ERR, E_LASTERR,
    E_INFO, E_SYMBOL, E_HOSTWRITE, E_GRAPHBUILD, E_SETPARAM, NEMIT
};
static const int EW[NEMIT] = {
    30, 3, 6, 6, 5, 3, 3, 2, 2, 5, 2, 2, 6, 6, 5, 3, 4, 3, 2, 2, 1, 2, 2, 3, 2, 3, 2, 3, 2, 2, 2, 2, 2, 3,
};

typedef struct {
    prog_t *P;
    rng_t *r;
    /* Draws of what was added to the generator later: the main one's stay
     * as they were, so that regressions.txt's seeds keep their programs. */
    rng_t side;
    int sec, th;
    int wmod, wrem;
    int live_st[MAXS], live_buf[MAXB], live_ev[MAXE];
    int w[NEMIT];
    int flagused[2][NFLAG];
    int depth;
} gen_t;

static int emit(gen_t *G, op_t o)
{
    if (!o.wmod) {
        o.wmod = G->wmod;
        o.wrem = G->wrem;
    }
    return emit_in(G->P, G->sec, o);
}

/* FUZZ_NOBLOCKING=1, for telling failures apart: every stream non-blocking,
 * and no work on the legacy or per-thread streams but what has to be there. */
static int no_blocking(void)
{
    static int v = -1;
    if (v < 0) {
        const char *e = getenv("FUZZ_NOBLOCKING");
        v = e && *e && strcmp(e, "0");
    }
    return v;
}

static int add_stream(prog_t *P, int kind, int owner, int temp, rng_t *r)
{
    if (P->nst >= MAXS)
        return -1;
    if (no_blocking())
        kind = SK_NONBLOCK;
    P->st[P->nst] = (gstream_t){ kind, owner, temp, ri(r, 0, 3), -ri(r, 0, 5) };
    return P->nst++;
}

static int add_buf(prog_t *P, int kind, int n, int owner, int temp, rng_t *r)
{
    if (P->nbuf >= MAXB)
        return -1;
    P->buf[P->nbuf] = (gbuf_t){ kind, n, owner, temp, ri(r, 0, 1) };
    return P->nbuf++;
}

static int pick_user_stream(gen_t *G, int temps, int not1, int not2);

/* Streams the generating thread may use here. */
static int pick_stream(gen_t *G, int legacy, int ptds, int temps)
{
    int c[MAXS], n = 0;
    const prog_t *P = G->P;
    if (no_blocking()) {
        int u = pick_user_stream(G, temps, -1, -1);
        if (u >= 0)
            return u;
    }
    if (G->th == 0) {
        if (legacy)
            c[n++] = SL_LEGACY, c[n++] = SL_LEGACY;
        if (ptds)
            c[n++] = SL_PTDS;
    } else if (ptds) {
        c[n++] = SL_WPTDS;
    }
    for (int i = SL_FIRST; i < P->nst; i++)
        if (P->st[i].owner == G->th && G->live_st[i] && (temps || !P->st[i].temp))
            c[n++] = i, c[n++] = i;
    if (!n)
        return G->th ? SL_WPTDS : SL_LEGACY;
    return c[ri(G->r, 0, n - 1)];
}

static int pick_user_stream(gen_t *G, int temps, int not1, int not2)
{
    int c[MAXS], n = 0;
    for (int i = SL_FIRST; i < G->P->nst; i++)
        if (G->P->st[i].owner == G->th && G->live_st[i] && (temps || !G->P->st[i].temp) && i != not1 && i != not2)
            c[n++] = i;
    return n ? c[ri(G->r, 0, n - 1)] : -1;
}

/* Buffers of the generating thread of a kind in mask. */
static int pick_buf(gen_t *G, unsigned mask, int temps)
{
    int c[MAXB], n = 0;
    for (int i = B_FIRST; i < G->P->nbuf; i++) {
        const gbuf_t *b = &G->P->buf[i];
        if (b->owner == G->th && G->live_buf[i] && (mask & (1u << b->kind)) && (temps || !b->temp))
            c[n++] = i;
    }
    return n ? c[ri(G->r, 0, n - 1)] : -1;
}

#define M_DEV ((1u << BK_DEV) | (1u << BK_DEVASYNC) | (1u << BK_MANAGED))
#define M_PIN ((1u << BK_PINNED) | (1u << BK_HOSTALLOC))
#define M_PAGE (1u << BK_PAGEABLE)
#define M_MANAGED (1u << BK_MANAGED)

static int pick_event(gen_t *G)
{
    int c[MAXE], n = 0;
    for (int i = E_FIRST; i < G->P->nev; i++) {
        const gevent_t *e = &G->P->ev[i];
        if (e->owner == G->th && e->role == 0 && G->live_ev[i])
            c[n++] = i;
    }
    return n ? c[ri(G->r, 0, n - 1)] : -1;
}

static const int BLOCKS[] = { 32, 64, 128, 256 };

static int nbufparams(int k)
{
    int n = 0;
    for (const char *r = KD[k].roles; *r; r++)
        n += *r == 'm' || *r == 'r' || *r == 'w';
    return n;
}

/* A launch of kernel k on stream s through one of the entry points. */
static op_t gen_kernel(gen_t *G, int k, int s, int capture)
{
    rng_t *r = G->r;
    const prog_t *P = G->P;
    op_t o = op_new(OP_KERNEL);
    o.k = k;
    o.s = s;
    o.api = ri(r, 0, 10);
    int nb = nbufparams(k);
    for (int i = 0; i < nb; i++) {
        o.b[i] = pick_buf(G, M_DEV, !capture || G->sec == SEC_BODY);
        if (!capture && pct(r, 10))
            o.b2[i] = pick_buf(G, M_DEV, 1);
    }
    o.len = pct(r, 70) ? P->N : ri(r, 1, P->N);
    o.bx = BLOCKS[ri(r, 0, 3)];
    o.gx = (o.len + o.bx - 1) / o.bx;
    if (pct(r, 20))
        o.gx = ri(r, 1, o.gx);
    if (pct(r, 10))
        o.gy = 2;
    if (pct(r, 15))
        o.gvar = ri(r, 2, 4);
    o.x = (u32)rnext(r) | 1u;
    o.y = (u32)rnext(r);
    o.z = (u32)rnext(r);
    if (pct(r, 25))
        o.xvar = ri(r, 1, 2);
    if (capture || G->th) {
        /* A launch that fails would invalidate a capture; the worker's must
         * not depend on limits the main thread changes meanwhile. */
        o.shmem = 0;
    } else if (k == KN_SHMEM) {
        static const int sm[] = { 0, 512, 4096, 40000, 48 * 1024, 60000, 100000, 200000 };
        o.shmem = sm[ri(r, 0, 7)];
    } else if (pct(r, 10)) {
        o.shmem = ri(r, 1, 4096);
    }
    if (o.api >= 4 && o.api != 7 && o.api != 8 && o.api != 9)
        o.fsrc = ri(r, 0, 3);
    o.attr = o.api == 3 || ((o.api == 6 || o.api == 10) && pct(r, 50));
    if (!capture && pct(r, 8))
        o.s2 = pick_stream(G, G->th == 0, 1, 1);
    return o;
}

static void e_kernel(gen_t *G, int k)
{
    int s = pick_stream(G, G->th == 0, 1, 1);
    emit(G, gen_kernel(G, k, s, 0));
}

static int rand_kernel(rng_t *r, int noparam)
{
    for (;;) {
        int k = ri(r, 0, NKERN_GEN - 1);
        if (k != KN_NOPARAM || noparam)
            return k;
    }
}

/* A region of len elements in a buffer of n. */
static void region(rng_t *r, int n, int *off, int *len)
{
    *len = pct(r, 50) ? n : ri(r, 1, n);
    *off = ri(r, 0, n - *len);
}

static void e_memcpy(gen_t *G, int kind, unsigned dmask, unsigned smask, int temps)
{
    const prog_t *P = G->P;
    rng_t *r = G->r;
    int d = pick_buf(G, dmask, temps), s = pick_buf(G, smask, temps);
    if (d < 0 || s < 0)
        return;
    op_t o = op_new(kind);
    o.b[0] = d;
    o.b[1] = s;
    region(r, P->N, &o.off, &o.len);
    o.off2 = ri(r, 0, P->N - o.len);
    if (d == s && o.off < o.off2 + o.len && o.off2 < o.off + o.len)
        o.off2 = o.off = 0, o.len = P->N / 2, o.off2 = P->N / 2;
    if (kind == OP_MEMCPY) {
        o.api = ri(r, 0, 4);
        o.s = o.api == 4 ? (G->th ? SL_WPTDS : SL_PTDS) : SL_LEGACY;
    } else {
        o.api = ri(r, 0, 4);
        o.s = pick_stream(G, G->th == 0, 1, 1);
        if ((dmask & M_DEV) && (smask & M_DEV) && pct(r, 10)) {
            int alt = pick_buf(G, M_DEV, temps);
            if (alt >= 0 && alt != s)
                o.b2[0] = alt;
        }
    }
    emit(G, o);
}

static void e_h2d(gen_t *G)
{
    rng_t *r = G->r;
    if (pct(r, 50) && pick_buf(G, M_PAGE, 0) >= 0) {
        /* The copy must see the bytes of its call, not the ones written
         * after it: the host fills the buffer, copies it, scribbles on it. */
        int pg = pick_buf(G, M_PAGE, 0);
        op_t w = op_new(OP_HOST_WRITE);
        w.b[0] = pg;
        w.x = (u32)rnext(r);
        w.y = (u32)rnext(r);
        w.xvar = pct(r, 60) ? 1 : 0;
        w.len = G->P->N;
        emit(G, w);
        int d = pick_buf(G, M_DEV, 1);
        op_t o = op_new(OP_MEMCPY_ASYNC);
        o.b[0] = d;
        o.b[1] = pg;
        region(r, G->P->N, &o.off, &o.len);
        o.off2 = o.off;
        o.api = ri(r, 0, 4);
        o.s = pick_stream(G, G->th == 0, 1, 1);
        emit(G, o);
        if (pct(r, 70)) {
            w.x = 0xdeadbeefu ^ (u32)rnext(r);
            w.xvar = 0;
            emit(G, w);
        }
        return;
    }
    e_memcpy(G, OP_MEMCPY_ASYNC, M_DEV, M_PIN, 1);
}

static void e_hostread_of(gen_t *G, int b, int off, int len)
{
    op_t o = op_new(OP_HOST_READ);
    o.b[0] = b;
    o.off = off;
    o.len = len;
    emit(G, o);
}

static void e_d2h(gen_t *G)
{
    rng_t *r = G->r;
    int pageable = pct(r, 40);
    int h = pick_buf(G, pageable ? M_PAGE : M_PIN, 0);
    int d = pick_buf(G, M_DEV, 1);
    if (h < 0 || d < 0)
        return;
    op_t o = op_new(OP_MEMCPY_ASYNC);
    o.b[0] = h;
    o.b[1] = d;
    region(r, G->P->N, &o.off, &o.len);
    o.off2 = ri(r, 0, G->P->N - o.len);
    o.api = ri(r, 0, 4);
    o.s = pick_stream(G, G->th == 0, 1, 1);
    emit(G, o);
    /* Pageable: the copy is done when the call returns. Pinned: the host
     * reads it only after a sync, which the fixer adds if needed. */
    if (pageable || pct(r, 50))
        e_hostread_of(G, h, o.off, o.len);
    /* A synchronisation of the copy's stream, which a pageable copy made
     * needless: cgraft may answer it after a replay. */
    if (pageable && pct(&G->side, 70)) {
        op_t y = op_new(OP_STREAM_SYNC);
        y.s = o.s;
        y.api = ri(&G->side, 0, 2);
        emit(G, y);
    }
}

static void e_memcpy_sync(gen_t *G)
{
    rng_t *r = G->r;
    switch (ri(r, 0, 3)) {
    case 0:
        e_memcpy(G, OP_MEMCPY, M_DEV, M_DEV, 1);
        break;
    case 1:
        e_memcpy(G, OP_MEMCPY, M_DEV, M_PIN | M_PAGE, 1);
        break;
    default: {
        int pg = pct(r, 50);
        int h = pick_buf(G, pg ? M_PAGE : M_PIN, 0), d = pick_buf(G, M_DEV, 1);
        if (h < 0 || d < 0)
            return;
        op_t o = op_new(OP_MEMCPY);
        o.b[0] = h;
        o.b[1] = d;
        region(r, G->P->N, &o.off, &o.len);
        o.off2 = o.off;
        o.api = ri(r, 0, 4);
        o.s = o.api == 4 ? SL_PTDS : SL_LEGACY;
        emit(G, o);
        e_hostread_of(G, h, o.off, o.len);
        break;
    }
    }
}

/* w x h elements at pitches pd and ps. */
static void region2d(rng_t *r, int N, int W, op_t *o)
{
    o->w = ri(r, 1, W);
    o->pd = ri(r, o->w, 2 * W);
    o->ps = ri(r, o->w, 2 * W);
    int pmax = o->pd > o->ps ? o->pd : o->ps;
    int hmax = (N - o->w) / pmax + 1;
    o->h = ri(r, 1, hmax < 1 ? 1 : hmax);
    o->off = ri(r, 0, N - ((o->h - 1) * o->pd + o->w));
    o->off2 = ri(r, 0, N - ((o->h - 1) * o->ps + o->w));
}

static void e_2d(gen_t *G)
{
    rng_t *r = G->r;
    int sync = pct(r, 25);
    unsigned dm = M_DEV, sm = M_DEV;
    int dir = ri(r, 0, 3);
    if (dir == 1)
        sm = M_PIN | (sync ? 0 : M_PAGE);
    else if (dir == 2)
        dm = M_PIN;
    int d = pick_buf(G, dm, 1), s = pick_buf(G, sm, 1);
    if (d < 0 || s < 0 || d == s)
        return;
    op_t o = op_new(sync ? OP_MEMCPY2D : OP_MEMCPY2D_ASYNC);
    o.b[0] = d;
    o.b[1] = s;
    region2d(r, G->P->N, G->P->W, &o);
    o.api = ri(r, 0, sync ? 1 : 2);
    o.s = sync ? SL_LEGACY : pick_stream(G, G->th == 0, 1, 1);
    emit(G, o);
    if (dir == 2 && pct(r, 50))
        e_hostread_of(G, d, 0, G->P->N);
}

static void e_3d(gen_t *G)
{
    rng_t *r = G->r;
    int sync = pct(r, 40);
    int d = pick_buf(G, M_DEV | (pct(r, 30) ? M_PIN : 0), 1), s = pick_buf(G, M_DEV | M_PIN, 1);
    if (d < 0 || s < 0 || d == s || (G->P->buf[d].kind >= BK_PINNED && G->P->buf[s].kind >= BK_PINNED))
        return;
    op_t o = op_new(sync ? OP_MEMCPY3D : OP_MEMCPY3D_ASYNC);
    o.b[0] = d;
    o.b[1] = s;
    int N = G->P->N;
    for (int tries = 0; tries < 20; tries++) {
        o.w = ri(r, 1, 8);
        o.h = ri(r, 1, 4);
        o.d = ri(r, 1, 3);
        o.ysz = o.h + ri(r, 0, 2);
        o.pd = o.w + ri(r, 0, 4);
        o.ps = o.w + ri(r, 0, 4);
        int ed = (o.d - 1) * o.pd * o.ysz + (o.h - 1) * o.pd + o.w;
        int es = (o.d - 1) * o.ps * o.ysz + (o.h - 1) * o.ps + o.w;
        if (ed <= N && es <= N) {
            o.off = ri(r, 0, N - ed);
            o.off2 = ri(r, 0, N - es);
            o.api = ri(r, 0, 1);
            o.s = sync ? SL_LEGACY : pick_stream(G, G->th == 0, 1, 1);
            emit(G, o);
            return;
        }
    }
}

static void e_batch(gen_t *G)
{
    rng_t *r = G->r;
    int during = pct(r, 30);
    int d = pick_buf(G, M_DEV | M_PIN, 1), s = pick_buf(G, M_DEV | M_PIN | (during ? M_PAGE : 0), 1);
    if (d < 0 || s < 0 || d == s)
        return;
    op_t o = op_new(OP_MEMCPY_BATCH);
    o.b[0] = d;
    o.b[1] = s;
    o.flags = during;
    o.z = (u32)ri(r, 2, 3);
    o.len = ri(r, 1, G->P->N / (int)o.z);
    o.off = ri(r, 0, G->P->N - (int)o.z * o.len);
    o.off2 = ri(r, 0, G->P->N - (int)o.z * o.len);
    o.s = pick_stream(G, 0, 1, 1);
    emit(G, o);
}

static void e_memset(gen_t *G, int kind)
{
    rng_t *r = G->r;
    int d = pick_buf(G, M_DEV, 1);
    if (d < 0)
        return;
    op_t o = op_new(kind);
    o.b[0] = d;
    region(r, G->P->N, &o.off, &o.len);
    o.x = (u32)rnext(r);
    o.y = (u32)rnext(r);
    if (pct(r, 30))
        o.xvar = ri(r, 1, 2);
    if (kind == OP_MEMSET) {
        o.api = ri(r, 0, G->th ? 0 : 2);
        if (G->th)
            o.api = 2;
        o.s = o.api == 2 ? (G->th ? SL_WPTDS : SL_PTDS) : SL_LEGACY;
    } else if (kind == OP_MEMSET2D_ASYNC) {
        region2d(r, G->P->N, G->P->W, &o);
        o.api = ri(r, 0, 2);
        o.s = pick_stream(G, G->th == 0, 1, 1);
    } else {
        o.api = ri(r, 0, 6);
        o.s = pick_stream(G, G->th == 0, 1, 1);
        if (pct(r, 8))
            o.b2[0] = pick_buf(G, M_DEV, 1);
    }
    emit(G, o);
}

static void e_record(gen_t *G, int s, int e)
{
    op_t o = op_new(OP_EVENT_RECORD);
    o.s = s;
    o.e = e;
    o.api = ri(G->r, 0, 4);
    emit(G, o);
}

static void e_wait(gen_t *G, int s, int e)
{
    op_t o = op_new(OP_STREAM_WAIT);
    o.s = s;
    o.e = e;
    o.api = ri(G->r, 0, 2);
    emit(G, o);
}

static void gen_some(gen_t *G, int n);

/* Fork and join: s1's work so far is waited for by s2, which does some
 * work that s1 then waits for. */
static void e_forkjoin(gen_t *G)
{
    int e1 = pick_event(G), e2 = pick_event(G);
    int s1 = pick_stream(G, G->th == 0, 1, 1), s2 = pick_stream(G, 0, 1, 1);
    if (e1 < 0 || e2 < 0 || s1 == s2)
        return;
    e_record(G, s1, e1);
    e_wait(G, s2, e1);
    int n = ri(G->r, 1, 3);
    for (int i = 0; i < n; i++)
        emit(G, gen_kernel(G, rand_kernel(G->r, 0), s2, 0));
    e_record(G, s2, e2);
    if (pct(G->r, 70))
        e_wait(G, s1, e2);
}

static void e_sync(gen_t *G, int kind)
{
    rng_t *r = G->r;
    op_t o = op_new(kind);
    switch (kind) {
    case OP_EVENT_QUERY:
    case OP_EVENT_SYNC:
        o.e = pick_event(G);
        if (o.e < 0)
            return;
        o.api = ri(r, 0, kind == OP_EVENT_SYNC ? 1 : 2);
        break;
    case OP_STREAM_QUERY:
    case OP_STREAM_SYNC:
        o.s = pick_stream(G, G->th == 0, 1, 1);
        o.api = ri(r, 0, 2);
        break;
    default:
        o.api = ri(r, 0, 1);
        break;
    }
    emit(G, o);
}

static void e_hostfn(gen_t *G, int s)
{
    rng_t *r = G->r;
    op_t o = op_new(OP_HOSTFN);
    o.s = s;
    o.api = ri(r, 0, 3);
    o.slot = G->th ? B_HVW : (pct(r, 50) ? B_HV0 : B_HV1);
    o.x = (u32)rnext(r);
    o.y = (u32)ri(r, 1, 1000);
    o.xvar = pct(r, 50);
    if (pct(r, 40)) {
        o.b[0] = pick_buf(G, M_PIN, 0);
        o.len = o.b[0] >= 0 ? ri(r, 1, G->P->N) : 0;
    }
    emit(G, o);
}

static void init_buf(gen_t *G, int b, int s);

static void e_tempbuf(gen_t *G)
{
    prog_t *P = G->P;
    rng_t *r = G->r;
    int async = pct(r, 50);
    int b = add_buf(P, async ? BK_DEVASYNC : BK_DEV, P->N, G->th, 1, r);
    if (b < 0)
        return;
    op_t o = op_new(OP_MALLOC);
    o.b[0] = b;
    o.api = P->buf[b].api;
    o.s = async ? pick_stream(G, G->th == 0, 1, 1) : -1;
    emit(G, o);
    G->live_buf[b] = 1;
    init_buf(G, b, async ? o.s : -1);
    /* Some work with it right away; more may come from later ops. */
    int n = ri(r, 0, 2);
    for (int i = 0; i < n; i++)
        e_kernel(G, rand_kernel(r, 0));
}

static void e_tempstream(gen_t *G)
{
    prog_t *P = G->P;
    int s = add_stream(P, pct(G->r, 50) ? SK_BLOCK : SK_NONBLOCK, G->th, 1, G->r);
    if (s < 0)
        return;
    op_t o = op_new(OP_STREAM_CREATE);
    o.s = s;
    o.api = P->st[s].api;
    emit(G, o);
    G->live_st[s] = 1;
}

static void e_tempevent(gen_t *G)
{
    prog_t *P = G->P;
    int e = add_event(P, pct(G->r, 50) ? cudaEventDisableTiming : 0, G->th, 1, 0);
    if (e < 0)
        return;
    op_t o = op_new(OP_EVENT_CREATE);
    o.e = e;
    o.api = ri(G->r, 0, 2);
    emit(G, o);
    G->live_ev[e] = 1;
}

static void e_funcattr(gen_t *G, int k, int api, u32 v)
{
    op_t o = op_new(OP_FUNC_ATTR);
    o.k = k;
    o.api = api;
    o.x = v;
    emit(G, o);
}

static u32 rand_limit(rng_t *r)
{
    static const u32 v[] = { 0, 4096, 48 * 1024, 64 * 1024, 100000, SHMEM_OPTIN };
    return v[ri(r, 0, 5)];
}

/* A capture of a few ops on s (and a fork into t), instantiated; the graph
 * goes to a setup slot, or is launched nlaunch times on sl. */
static void gen_capture(gen_t *G, int s, int t, int slot, int sl, int nlaunch)
{
    prog_t *P = G->P;
    rng_t *r = G->r;
    if (P->ncap >= MAXCAP)
        return;
    int sec = SEC_CAP0 + P->ncap++;
    int saved = G->sec;
    int swm = G->wmod, swr = G->wrem;
    G->sec = sec;
    G->wmod = G->wrem = 0;
    int n1 = ri(r, 1, 3);
    for (int i = 0; i < n1; i++) {
        if (pct(r, 75))
            emit(G, gen_kernel(G, rand_kernel(r, 0), s, 1));
        else
            e_memset(G, OP_MEMSET_ASYNC);
    }
    /* e_memset picked its own stream: in a capture everything is on s. */
    for (int i = 0; i < P->sec[sec].n; i++)
        P->sec[sec].v[i].s = s, P->sec[sec].v[i].s2 = -1, P->sec[sec].v[i].b2[0] = -1;
    if (t >= 0) {
        /* Disjoint buffers for the two branches. */
        int bufs[MAXB], nb = 0;
        for (int i = B_FIRST; i < P->nbuf; i++)
            if (P->buf[i].owner == G->th && G->live_buf[i] && is_devlike(P->buf[i].kind) &&
                (G->sec == SEC_BODY || saved == SEC_BODY || !P->buf[i].temp))
                bufs[nb++] = i;
        if (nb >= 2) {
            int cut = ri(r, 1, nb - 1);
            op_t o = op_new(OP_EVENT_RECORD);
            o.s = s;
            o.e = E_CAPF;
            o.api = ri(r, 0, 4);
            emit(G, o);
            o = op_new(OP_STREAM_WAIT);
            o.s = t;
            o.e = E_CAPF;
            o.api = ri(r, 0, 2);
            emit(G, o);
            for (int br = 0; br < 2; br++) {
                int lo = br ? cut : 0, hi = br ? nb : cut;
                int n = ri(r, 1, 3);
                for (int i = 0; i < n; i++) {
                    op_t k = gen_kernel(G, rand_kernel(r, 0), br ? s : t, 1);
                    for (int j = 0; j < 3; j++)
                        if (k.b[j] >= 0)
                            k.b[j] = bufs[ri(r, lo, hi - 1)];
                    emit(G, k);
                }
            }
            o = op_new(OP_EVENT_RECORD);
            o.s = t;
            o.e = E_CAPJ;
            o.api = ri(r, 0, 4);
            emit(G, o);
            o = op_new(OP_STREAM_WAIT);
            o.s = s;
            o.e = E_CAPJ;
            o.api = ri(r, 0, 2);
            emit(G, o);
        } else {
            t = -1;
        }
    }
    if (pct(r, 50))
        emit(G, gen_kernel(G, rand_kernel(r, 1), s, 1));
    if (pct(r, 15))
        e_hostfn(G, s);
    G->sec = saved;
    G->wmod = swm;
    G->wrem = swr;
    op_t c = op_new(OP_CAPTURE);
    c.s = s;
    c.s3 = t;
    c.sec = sec;
    c.slot = slot;
    c.sl = sl;
    c.nlaunch = nlaunch;
    c.api = ri(r, 0, 2);
    c.flags = P->capmode_global ? ri(r, 0, 2) : ri(r, 1, 2);
    c.z = (u32)ri(r, 0, 2);   /* instantiate variant */
    emit(G, c);
}

/* A graph made with the graph API: a chain of kernel, memset and copy nodes
 * (the ops of a section), instantiated; kept in a setup slot, or launched
 * nlaunch times on sl. */
static void gen_graph_build(gen_t *G, int slot, int sl, int nlaunch)
{
    prog_t *P = G->P;
    rng_t *r = G->r;
    if (P->ncap >= MAXCAP)
        return;
    int sec = SEC_CAP0 + P->ncap++;
    int saved = G->sec, swm = G->wmod, swr = G->wrem;
    G->sec = sec;
    G->wmod = G->wrem = 0;
    int n = ri(r, 1, 4);
    for (int i = 0; i < n; i++) {
        int x = ri(r, 0, 9);
        if (x < 6) {
            emit(G, gen_kernel(G, rand_kernel(r, 1), SL_LEGACY, 1));
        } else if (x < 8) {
            op_t m = op_new(OP_MEMSET_ASYNC);
            m.b[0] = pick_buf(G, M_DEV, 0);
            region(r, P->N, &m.off, &m.len);
            m.x = (u32)rnext(r);
            m.s = SL_LEGACY;
            emit(G, m);
        } else {
            op_t c = op_new(OP_MEMCPY_ASYNC);
            c.b[0] = pick_buf(G, M_DEV, 0);
            c.b[1] = pick_buf(G, M_DEV, 0);
            region(r, P->N, &c.off, &c.len);
            c.off2 = ri(r, 0, P->N - c.len);
            if (c.b[0] == c.b[1])
                c.off = 0, c.len = P->N / 2, c.off2 = P->N / 2;
            c.s = SL_LEGACY;
            emit(G, c);
        }
    }
    G->sec = saved;
    G->wmod = swm;
    G->wrem = swr;
    op_t g = op_new(OP_GRAPH_BUILD);
    g.sec = sec;
    g.slot = slot;
    g.sl = sl;
    g.nlaunch = nlaunch;
    g.api = ri(r, 0, 1);          /* runtime or driver node calls */
    g.flags = ri(r, 0, 3);        /* bit 0: upload first; bit 1: a priority attribute on the kernel nodes */
    g.z = (u32)ri(r, 0, 2);
    emit(G, g);
}

/* New scalars for a kernel node of a setup graph, then a launch. */
static void e_setparam(gen_t *G)
{
    prog_t *P = G->P;
    rng_t *r = G->r;
    int cand[MAXG], nc = 0;
    for (int sec = SEC_SETUP; sec <= SEC_SETUP; sec++)
        for (int i = 0; i < P->sec[sec].n; i++) {
            const op_t *o = &P->sec[sec].v[i];
            if (o->kind == OP_GRAPH_BUILD && o->slot >= 0)
                cand[nc++] = i;
        }
    if (!nc)
        return;
    const op_t *g = &P->sec[SEC_SETUP].v[cand[ri(r, 0, nc - 1)]];
    const seq_t *q = &P->sec[g->sec];
    int ks[16], nk = 0;
    for (int i = 0; i < q->n && nk < 16; i++)
        if (q->v[i].kind == OP_KERNEL && strchr(KD[q->v[i].k].roles, 'u'))
            ks[nk++] = i;
    if (nk) {
        int i = ks[ri(r, 0, nk - 1)];
        op_t o = q->v[i];
        o.kind = OP_GRAPH_SETPARAM;
        o.slot = g->slot;
        o.z = (u32)i;            /* the node */
        o.xvar = 1;
        o.y = (u32)ri(r, 1, 1000) * 2u;
        o.api = ri(r, 0, 1);
        o.s = o.s2 = -1;
        emit(G, o);
    }
    op_t l = op_new(OP_GRAPH_LAUNCH);
    l.slot = g->slot;
    l.s = pick_stream(G, 1, 1, 1);
    l.api = ri(r, 0, 1);
    emit(G, l);
}

static void e_capture(gen_t *G)
{
    int s = pick_user_stream(G, 1, -1, -1);
    if (s < 0)
        return;
    int t = pct(G->r, 50) ? pick_user_stream(G, 1, s, -1) : -1;
    gen_capture(G, s, t, -1, pick_stream(G, 1, 1, 1), ri(G->r, 1, 2));
}

static void e_value(gen_t *G)
{
    rng_t *r = G->r;
    int host = pct(r, 30);
    int arr = host ? 1 : ri(r, 0, 1);
    int f = -1;
    for (int i = 0; i < NFLAG; i++)
        if (!G->flagused[arr][i]) {
            f = i;
            break;
        }
    if (f < 0)
        return;
    G->flagused[arr][f] = 1;
    op_t o = op_new(OP_WRITE_VALUE);
    o.b[0] = arr ? B_FLAGH : B_FLAGD;
    o.slot = f;
    o.x = 1u + (u32)ri(r, 0, 1000) * 64u;
    if (!host) {
        /* One writer stream for all iterations, not a stream created again
         * in each: the values must land in increasing order. */
        o.s = pick_stream(G, 1, 1, 0);
        o.api = ri(r, 0, 2);
        emit(G, o);
        int n = ri(r, 0, 2);
        for (int i = 0; i < n; i++)
            e_kernel(G, rand_kernel(r, 0));
    }
    o.kind = OP_WAIT_VALUE;
    o.s = pick_stream(G, 1, 1, 1);
    o.api = ri(r, 0, 2);
    o.flags = host;
    emit(G, o);
}

static void e_hostread(gen_t *G)
{
    rng_t *r = G->r;
    int b = -1;
    switch (ri(r, 0, 3)) {
    case 0:
        b = pick_buf(G, M_PIN, 0);
        break;
    case 1:
        b = pick_buf(G, M_MANAGED, 1);
        break;
    case 2:
        b = pick_buf(G, M_PAGE, 0);
        break;
    default:
        b = G->th ? B_HVW : ri(r, B_HV0, B_HV1);
        break;
    }
    if (b < 0)
        return;
    int off, len;
    region(r, G->P->buf[b].n, &off, &len);
    e_hostread_of(G, b, off, len);
}

static void e_hostwrite(gen_t *G)
{
    rng_t *r = G->r;
    int b = pick_buf(G, M_PIN | M_PAGE | M_MANAGED, 1);
    if (b < 0)
        return;
    op_t o = op_new(OP_HOST_WRITE);
    o.b[0] = b;
    region(r, G->P->N, &o.off, &o.len);
    o.x = (u32)rnext(r);
    o.y = (u32)rnext(r);
    o.xvar = pct(r, 50);
    emit(G, o);
}

static void e_readback(gen_t *G, int b, int full)
{
    rng_t *r = G->r;
    if (b < 0)
        b = pick_buf(G, M_DEV, 1);
    if (b < 0)
        return;
    op_t o = op_new(OP_READBACK);
    o.b[0] = b;
    if (full) {
        o.off = 0;
        o.len = G->P->buf[b].n;
    } else {
        region(r, G->P->buf[b].n, &o.off, &o.len);
    }
    o.api = ri(r, 0, 4);
    if (G->th && (o.api == 0 || o.api == 1))
        o.api = 3;
    o.s = o.api == 2 || o.api == 4 ? pick_stream(G, G->th == 0, 1, 1)
          : o.api == 3 ? (G->th ? SL_WPTDS : SL_PTDS) : SL_LEGACY;
    emit(G, o);
}

#define NERR 15
static void e_err(gen_t *G)
{
    rng_t *r = G->r;
    op_t o = op_new(OP_ERR);
    o.api = ri(r, 0, NERR - 1);
    if (G->th && (o.api == 2 || o.api == 8))
        o.api = 1;
    o.s = pick_stream(G, G->th == 0, 1, 1);
    o.k = rand_kernel(r, 0);
    o.b[0] = pick_buf(G, M_DEV, 1);
    o.b[1] = pick_buf(G, M_DEV, 1);
    o.e = pick_event(G);
    if (o.e < 0 && (o.api == 3))
        o.api = 0;
    o.len = G->P->N;
    emit(G, o);
    if (pct(r, 60)) {
        op_t l = op_new(OP_LAST_ERROR);
        l.api = ri(r, 0, 1);
        emit(G, l);
    }
}

static void e_info(gen_t *G)
{
    rng_t *r = G->r;
    op_t o = op_new(OP_INFO);
    o.api = ri(r, 0, 8);
    o.s = pick_stream(G, G->th == 0, 1, 1);
    o.b[0] = pick_buf(G, M_DEV | M_PIN | M_PAGE, 1);
    o.k = rand_kernel(r, 1);
    if (o.b[0] < 0 && o.api == 3)
        o.api = 0;
    if (G->th && o.api == 4)
        o.api = 5;   /* the main thread may change the limit it reports meanwhile */
    emit(G, o);
}

static void e_symbol(gen_t *G)
{
    rng_t *r = G->r;
    op_t o = op_new(OP_SYMBOL);
    o.api = ri(r, 0, 3);
    o.len = ri(r, 1, SYMN);
    o.off = ri(r, 0, SYMN - o.len);
    switch (o.api) {
    case 0:
        o.b[1] = pick_buf(G, M_PAGE, 0);
        o.s = SL_LEGACY;
        if (o.b[1] < 0)
            return;
        break;
    case 1:
        o.b[1] = pick_buf(G, M_DEV | M_PIN, 1);
        o.s = pick_stream(G, 1, 1, 1);
        if (o.b[1] < 0)
            return;
        break;
    case 2:
        o.s = SL_LEGACY;
        break;
    default:
        o.b[0] = pick_buf(G, M_DEV | M_PIN, 1);
        o.s = pick_stream(G, 1, 1, 1);
        if (o.b[0] < 0)
            return;
        break;
    }
    o.off2 = ri(r, 0, G->P->N - o.len);
    emit(G, o);
}

/* Initial contents: from host data, a memset or both. s >= 0: stream-ordered there. */
static void init_buf(gen_t *G, int b, int s)
{
    prog_t *P = G->P;
    rng_t *r = G->r;
    int n = P->buf[b].n;
    int kind = P->buf[b].kind;
    if (!is_devlike(kind)) {
        op_t w = op_new(OP_HOST_WRITE);
        w.b[0] = b;
        w.len = n;
        w.x = (u32)rnext(r);
        w.y = (u32)rnext(r) | 1u;
        emit(G, w);
        return;
    }
    int src = pick_buf(G, M_PAGE | M_PIN, 0);
    if (s < 0 && src >= 0 && pct(r, 70)) {
        op_t w = op_new(OP_HOST_WRITE);
        w.b[0] = src;
        w.len = n;
        w.x = (u32)rnext(r);
        w.y = (u32)rnext(r) | 1u;
        emit(G, w);
        op_t c = op_new(pct(r, 50) ? OP_MEMCPY : OP_MEMCPY_ASYNC);
        c.b[0] = b;
        c.b[1] = src;
        c.len = n;
        c.api = c.kind == OP_MEMCPY ? ri(r, 0, 3) : ri(r, 0, 4);
        c.s = c.kind == OP_MEMCPY ? SL_LEGACY : pick_stream(G, G->th == 0, 1, 0);
        emit(G, c);
        return;
    }
    op_t m = op_new(OP_MEMSET_ASYNC);
    m.b[0] = b;
    m.len = n;
    m.x = (u32)rnext(r);
    m.api = ri(r, 0, 6);
    m.s = s >= 0 ? s : pick_stream(G, G->th == 0, 1, 0);
    emit(G, m);
    op_t k = op_new(OP_KERNEL);
    k.k = KN_ROT;
    k.s = m.s;
    k.b[0] = b;
    k.x = (u32)ri(r, 1, 31);
    k.len = n;
    k.bx = 64;
    k.gx = (n + 63) / 64;
    k.api = ri(r, 0, 3);
    emit(G, k);
}

static void gen_one(gen_t *G)
{
    prog_t *P = G->P;
    rng_t *r = G->r;
    int tot = 0;
    for (int i = 0; i < NEMIT; i++)
        tot += G->w[i];
    if (!tot)
        return;
    int x = ri(r, 0, tot - 1), e = 0;
    while (x >= G->w[e])
        x -= G->w[e++];
    G->depth++;
    switch (e) {
    case E_KERNEL:
        e_kernel(G, rand_kernel(r, 0));
        break;
    case E_NOPARAM:
        if (!G->th)
            e_kernel(G, KN_NOPARAM);
        break;
    case E_D2D:
        e_memcpy(G, OP_MEMCPY_ASYNC, M_DEV, M_DEV, 1);
        break;
    case E_H2D:
        e_h2d(G);
        break;
    case E_D2H:
        e_d2h(G);
        break;
    case E_MEMCPY_SYNC:
        if (!G->th)
            e_memcpy_sync(G);
        break;
    case E_2D:
        if (!G->th)
            e_2d(G);
        break;
    case E_3D:
        if (!G->th)
            e_3d(G);
        break;
    case E_BATCH:
        e_batch(G);
        break;
    case E_MEMSET:
        e_memset(G, OP_MEMSET_ASYNC);
        break;
    case E_MEMSET_SYNC:
        e_memset(G, OP_MEMSET);
        break;
    case E_MEMSET2D:
        e_memset(G, OP_MEMSET2D_ASYNC);
        break;
    case E_RECORD: {
        int ev = pick_event(G);
        if (ev >= 0) {
            op_t o = op_new(OP_EVENT_RECORD);
            o.s = pick_stream(G, G->th == 0, 1, 1);
            o.e = ev;
            o.api = ri(r, 0, 4);
            if (pct(r, 10))
                o.e2 = pick_event(G);
            if (pct(r, 10))
                o.s2 = pick_stream(G, G->th == 0, 1, 1);
            emit(G, o);
        }
        break;
    }
    case E_WAIT: {
        int ev = pick_event(G);
        if (ev >= 0) {
            op_t o = op_new(OP_STREAM_WAIT);
            o.s = pick_stream(G, G->th == 0, 1, 1);
            o.e = ev;
            o.api = ri(r, 0, 2);
            if (pct(r, 10))
                o.e2 = pick_event(G);
            emit(G, o);
        }
        break;
    }
    case E_FORKJOIN:
        e_forkjoin(G);
        break;
    case E_QUERY:
        e_sync(G, pct(r, 50) ? OP_EVENT_QUERY : OP_STREAM_QUERY);
        break;
    case E_SYNC: {
        static const int k[] = { OP_STREAM_SYNC, OP_STREAM_SYNC, OP_EVENT_SYNC, OP_DEVICE_SYNC };
        e_sync(G, k[ri(r, 0, 3)]);
        break;
    }
    case E_HOSTFN:
        e_hostfn(G, pick_stream(G, G->th == 0, 1, 1));
        break;
    case E_TEMPBUF:
        if (G->sec == SEC_BODY && !G->wmod && G->depth == 1)
            e_tempbuf(G);
        break;
    case E_TEMPSTREAM:
        if (G->sec == SEC_BODY && !G->wmod && G->depth == 1 && P->iters <= 60)
            e_tempstream(G);
        break;
    case E_TEMPEVENT:
        if (G->sec == SEC_BODY && !G->wmod && G->depth == 1)
            e_tempevent(G);
        break;
    case E_FUNCATTR:
        if (!G->th) {
            int k = pct(r, 70) ? KN_SHMEM : rand_kernel(r, 1);
            e_funcattr(G, k, ri(r, 0, 3), rand_limit(r));
            if (pct(r, 70))
                e_kernel(G, k);
        }
        break;
    case E_CAPTURE:
        if (!G->th && !G->wmod && G->depth == 1)
            e_capture(G);
        break;
    case E_GRAPHLAUNCH:
        if (!G->th && P->ngraph) {
            op_t o = op_new(OP_GRAPH_LAUNCH);
            o.slot = ri(r, 0, P->ngraph - 1);
            o.s = pick_stream(G, 1, 1, 1);
            o.api = ri(r, 0, 1);
            emit(G, o);
        }
        break;
    case E_VALUE:
        if (!G->th && !G->wmod && G->sec == SEC_BODY && G->depth == 1)
            e_value(G);
        break;
    case E_HOSTREAD:
        e_hostread(G);
        break;
    case E_READBACK:
        e_readback(G, -1, 0);
        break;
    case E_ERR:
        e_err(G);
        break;
    case E_LASTERR: {
        op_t o = op_new(OP_LAST_ERROR);
        o.api = ri(r, 0, 1);
        emit(G, o);
        break;
    }
    case E_INFO:
        e_info(G);
        break;
    case E_SYMBOL:
        if (!G->th)
            e_symbol(G);
        break;
    case E_HOSTWRITE:
        e_hostwrite(G);
        break;
    case E_GRAPHBUILD:
        if (!G->th && !G->wmod && G->depth == 1)
            gen_graph_build(G, -1, pick_stream(G, 1, 1, 1), ri(r, 1, 2));
        break;
    case E_SETPARAM:
        if (!G->th && G->sec == SEC_BODY)
            e_setparam(G);
        break;
    }
    G->depth--;
}

static void gen_some(gen_t *G, int n)
{
    for (int i = 0; i < n; i++)
        gen_one(G);
}

/* Frees what the body allocated, in the body. */
static void end_temps(gen_t *G)
{
    prog_t *P = G->P;
    rng_t *r = G->r;
    for (int b = B_FIRST; b < P->nbuf; b++)
        if (P->buf[b].temp && G->live_buf[b] && P->buf[b].owner == G->th) {
            op_t o = op_new(OP_FREE);
            o.b[0] = b;
            o.api = ri(r, 0, 1);
            o.s = P->buf[b].kind == BK_DEVASYNC ? pick_stream(G, G->th == 0, 1, 1) : -1;
            emit(G, o);
            G->live_buf[b] = 0;
        }
    for (int s = SL_FIRST; s < P->nst; s++)
        if (P->st[s].temp && G->live_st[s] && P->st[s].owner == G->th) {
            op_t o = op_new(OP_STREAM_DESTROY);
            o.s = s;
            o.api = ri(r, 0, 1);
            emit(G, o);
            G->live_st[s] = 0;
        }
    for (int e = E_FIRST; e < P->nev; e++)
        if (P->ev[e].temp && G->live_ev[e] && P->ev[e].owner == G->th) {
            op_t o = op_new(OP_EVENT_DESTROY);
            o.e = e;
            o.api = ri(r, 0, 1);
            emit(G, o);
            G->live_ev[e] = 0;
        }
}

/* A body: random ops, some in blocks that run only every k-th iteration, and
 * a sync schedule. */
static void gen_body(gen_t *G, int nops, int iters)
{
    rng_t *r = G->r;
    int done = 0;
    while (done < nops) {
        if (iters > 2 && pct(r, 12)) {
            int k = ri(r, 2, 5);
            G->wmod = pct(r, 15) ? -1 : k;
            G->wrem = G->wmod < 0 ? ri(r, 0, iters - 1) : ri(r, 0, k - 1);
            int n = ri(r, 1, 3);
            gen_some(G, n);
            G->wmod = G->wrem = 0;
            done += n;
        } else {
            gen_one(G);
            done++;
        }
    }
    int sched = ri(r, 0, 99);
    if (sched < 35 && iters > 1) {
        int k = ri(r, 1, 5);
        G->wmod = k;
        G->wrem = k - 1;
        static const int kinds[] = { OP_DEVICE_SYNC, OP_STREAM_SYNC, OP_STREAM_SYNC, OP_EVENT_SYNC, OP_STREAM_QUERY };
        int kind = kinds[ri(r, 0, 4)];
        if (kind == OP_EVENT_SYNC) {
            int e = pick_event(G);
            if (e >= 0) {
                int s = pick_stream(G, G->th == 0, 1, 1);
                e_record(G, s, e);
                op_t o = op_new(OP_EVENT_SYNC);
                o.e = e;
                o.api = ri(r, 0, 1);
                emit(G, o);
            }
        } else {
            op_t o = op_new(kind);
            o.api = kind == OP_STREAM_QUERY ? 1 : ri(r, 0, kind == OP_STREAM_SYNC ? 2 : 1);
            o.s = pick_stream(G, G->th == 0, 1, 1);
            emit(G, o);
        }
        if (pct(r, 50))
            e_hostread(G);
        G->wmod = G->wrem = 0;
    }
    end_temps(G);
}

static void gen_worker(gen_t *G, int nops)
{
    prog_t *P = G->P;
    rng_t *r = G->r;
    G->th = 1;
    G->sec = SEC_WSETUP;
    emit(G, op_new(OP_CLEAR_ERROR));
    op_t o = op_new(OP_EVENT_CREATE);
    o.e = E_FIX1;
    emit(G, o);
    G->live_ev[E_FIX1] = 1;
    int nws = ri(r, 1, 2);
    for (int i = 0; i < nws; i++) {
        int s = add_stream(P, pct(r, 50) ? SK_BLOCK : SK_NONBLOCK, 1, 0, r);
        o = op_new(OP_STREAM_CREATE);
        o.s = s;
        o.api = P->st[s].api;
        emit(G, o);
        G->live_st[s] = 1;
    }
    int nwe = ri(r, 1, 3);
    for (int i = 0; i < nwe; i++) {
        int e = add_event(P, pct(r, 50) ? cudaEventDisableTiming : 0, 1, 0, 0);
        o = op_new(OP_EVENT_CREATE);
        o.e = e;
        o.api = ri(r, 0, 2);
        emit(G, o);
        G->live_ev[e] = 1;
    }
    int saved[NEMIT];
    memcpy(saved, G->w, sizeof(saved));
    static const int no[] = { E_NOPARAM, E_MEMCPY_SYNC, E_2D, E_3D, E_TEMPBUF, E_TEMPSTREAM, E_TEMPEVENT,
                              E_FUNCATTR, E_CAPTURE, E_GRAPHLAUNCH, E_VALUE, E_SYMBOL, E_GRAPHBUILD,
                              E_SETPARAM };
    for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
        G->w[no[i]] = 0;
    if (!G->w[E_KERNEL])
        G->w[E_KERNEL] = 10;
    G->sec = SEC_WBODY;
    gen_body(G, nops, P->witers);
    G->sec = SEC_WTEAR;
    for (int s = SL_FIRST; s < P->nst; s++)
        if (P->st[s].owner == 1 && !P->st[s].temp) {
            o = op_new(OP_STREAM_SYNC);
            o.s = s;
            o.api = ri(r, 0, 2);
            emit(G, o);
        }
    for (int b = B_FIRST; b < P->nbuf; b++)
        if (P->buf[b].owner == 1) {
            if (is_devlike(P->buf[b].kind))
                e_readback(G, b, 1);
            else
                e_hostread_of(G, b, 0, P->buf[b].n);
        }
    e_hostread_of(G, B_HVW, 0, 1);
    o = op_new(OP_LAST_ERROR);
    emit(G, o);
    for (int s = SL_FIRST; s < P->nst; s++)
        if (P->st[s].owner == 1) {
            o = op_new(OP_STREAM_DESTROY);
            o.s = s;
            o.api = ri(r, 0, 1);
            emit(G, o);
            G->live_st[s] = 0;
        }
    for (int e = 0; e < P->nev; e++)
        if (P->ev[e].owner == 1 && P->ev[e].role <= 1) {
            o = op_new(OP_EVENT_DESTROY);
            o.e = e;
            o.api = ri(r, 0, 1);
            emit(G, o);
            G->live_ev[e] = 0;
        }
    memcpy(G->w, saved, sizeof(saved));
    G->th = 0;
}

/* FUZZ_VALUE_WAITS: "some" (the default) or "all" (gen_program). */
static int value_waits_all(void)
{
    static int all = -1;
    if (all < 0) {
        const char *v = getenv("FUZZ_VALUE_WAITS");
        if (v && *v && strcmp(v, "all") && strcmp(v, "some")) {
            fprintf(stderr, "FUZZ_VALUE_WAITS=%s: expected all or some\n", v);
            exit(2);
        }
        all = v && !strcmp(v, "all");
    }
    return all;
}

static void gen_program(prog_t *P, u64 seed)
{
    memset(P, 0, sizeof(*P));
    P->seed = seed;
    rng_t r;
    rseed(&r, seed);
    gen_t G;
    memset(&G, 0, sizeof(G));
    G.P = P;
    G.r = &r;
    rseed(&G.side, seed ^ 0x5D5D5D5Dull);
    /* A profile: some programs are mostly copies, some mostly events... */
    for (int i = 0; i < NEMIT; i++)
        G.w[i] = pct(&r, 75) ? EW[i] * ri(&r, 1, 3) : 0;
    if (!G.w[E_KERNEL])
        G.w[E_KERNEL] = EW[E_KERNEL];
    /* After a stream's wait on memory cgraft builds no graph over two
     * streams, so a program with one tries none: two in three programs
     * that would have them go without (the side generator decides), unless
     * FUZZ_VALUE_WAITS=all, the generator that made regressions.txt's
     * first seeds. The rest of those programs' draws change with it. */
    if (!value_waits_all() && !pct(&G.side, 34))
        G.w[E_VALUE] = 0;
    static const int Ws[] = { 8, 16, 32 }, Hs[] = { 2, 4, 8, 16 };
    P->W = Ws[ri(&r, 0, 2)];
    P->N = P->W * Hs[ri(&r, 0, 3)];
    P->iters = pct(&r, 85) ? ri(&r, 5, 40) : ri(&r, 1, 3);
    int nops = ri(&r, 3, 24);
    while (nops > 3 && P->iters * nops > 500)
        nops--;
    P->worker = pct(&r, 25);
    P->capmode_global = !P->worker;
    if (P->worker)
        P->witers = ri(&r, 2, 20);

    P->nst = SL_FIRST;
    P->st[SL_LEGACY] = (gstream_t){ SK_LEGACY, 0, 0, 0, 0 };
    P->st[SL_PTDS] = (gstream_t){ SK_PTDS, 0, 0, 0, 0 };
    P->st[SL_WPTDS] = (gstream_t){ SK_PTDS, 1, 0, 0, 0 };
    P->nev = E_FIRST;
    P->ev[E_FIX0] = (gevent_t){ cudaEventDisableTiming, 0, 0, 0, 1 };
    P->ev[E_FIX1] = (gevent_t){ 0, 1, 0, 0, 1 };
    P->ev[E_CAPF] = (gevent_t){ cudaEventDisableTiming, 0, 0, 0, 2 };
    P->ev[E_CAPJ] = (gevent_t){ 0, 0, 0, 0, 2 };
    P->nbuf = B_FIRST;
    P->buf[B_SYM] = (gbuf_t){ BK_SYM, SYMN, 0, 0, 0 };
    P->buf[B_HV0] = (gbuf_t){ BK_HV, 1, 0, 0, 0 };
    P->buf[B_HV1] = (gbuf_t){ BK_HV, 1, 0, 0, 0 };
    P->buf[B_HVW] = (gbuf_t){ BK_HV, 1, 1, 0, 0 };
    P->buf[B_FLAGD] = (gbuf_t){ BK_FLAGD, NFLAG, 0, 0, ri(&r, 0, 1) };
    P->buf[B_FLAGH] = (gbuf_t){ BK_FLAGH, NFLAG, 0, 0, ri(&r, 0, 1) };

    /* ---- setup */
    G.sec = SEC_SETUP;
    emit(&G, op_new(OP_CLEAR_ERROR));
    op_t o = op_new(OP_PROCADDR);
    o.api = ri(&r, 0, 2);
    emit(&G, o);
    o = op_new(OP_MODULE);
    emit(&G, o);
    for (int b = 0; b < B_FIRST; b++) {
        o = op_new(OP_MALLOC);
        o.b[0] = b;
        o.api = P->buf[b].api;
        emit(&G, o);
        G.live_buf[b] = 1;
        if (P->buf[b].kind == BK_HV || P->buf[b].kind == BK_FLAGH) {
            op_t w = op_new(OP_HOST_WRITE);
            w.b[0] = b;
            w.len = P->buf[b].n;
            w.x = P->buf[b].kind == BK_HV ? (u32)rnext(&r) : 0;
            emit(&G, w);
        } else if (P->buf[b].kind == BK_FLAGD) {
            op_t m = op_new(OP_MEMSET);
            m.b[0] = b;
            m.len = NFLAG;
            m.s = SL_LEGACY;
            emit(&G, m);
        }
    }
    int nus = ri(&r, 1, 4);
    for (int i = 0; i < nus; i++) {
        int s = add_stream(P, pct(&r, 50) ? SK_BLOCK : SK_NONBLOCK, 0, 0, &r);
        o = op_new(OP_STREAM_CREATE);
        o.s = s;
        o.api = P->st[s].api;
        emit(&G, o);
        G.live_st[s] = 1;
    }
    for (int e = 0; e < E_FIRST; e++) {
        if (P->ev[e].owner)
            continue;
        o = op_new(OP_EVENT_CREATE);
        o.e = e;
        o.api = ri(&r, 0, 2);
        emit(&G, o);
        G.live_ev[e] = 1;
    }
    int nue = ri(&r, 1, 5);
    for (int i = 0; i < nue; i++) {
        static const int fl[] = { 0, cudaEventDisableTiming, cudaEventBlockingSync,
                                  cudaEventDisableTiming | cudaEventBlockingSync };
        int e = add_event(P, fl[ri(&r, 0, 3)], 0, 0, 0);
        o = op_new(OP_EVENT_CREATE);
        o.e = e;
        o.api = ri(&r, 0, 2);
        emit(&G, o);
        G.live_ev[e] = 1;
    }
    /* Host buffers first: they hold the device buffers' first contents. */
    int npage = ri(&r, 1, 2), npin = ri(&r, 0, 2), ndev = ri(&r, 2, 6);
    int wdev = P->worker ? ri(&r, 1, 3) : 0, wpin = P->worker ? ri(&r, 0, 1) : 0;
    int first = P->nbuf;
    for (int i = 0; i < npage; i++)
        add_buf(P, BK_PAGEABLE, P->N, 0, 0, &r);
    for (int i = 0; i < npin; i++)
        add_buf(P, pct(&r, 50) ? BK_PINNED : BK_HOSTALLOC, P->N, 0, 0, &r);
    for (int i = 0; i < wpin; i++)
        add_buf(P, BK_PINNED, P->N, 1, 0, &r);
    for (int i = 0; i < ndev; i++) {
        int x = ri(&r, 0, 3);
        add_buf(P, x < 2 ? BK_DEV : x == 2 ? BK_DEVASYNC : BK_MANAGED, P->N, 0, 0, &r);
    }
    for (int i = 0; i < wdev; i++)
        add_buf(P, pct(&r, 70) ? BK_DEV : BK_DEVASYNC, P->N, 1, 0, &r);
    for (int b = first; b < P->nbuf; b++) {
        o = op_new(OP_MALLOC);
        o.b[0] = b;
        o.api = P->buf[b].api;
        if (P->buf[b].kind == BK_DEVASYNC)
            o.s = pick_stream(&G, 1, 1, 0);
        emit(&G, o);
        G.live_buf[b] = 1;
        init_buf(&G, b, P->buf[b].kind == BK_DEVASYNC ? o.s : -1);
    }
    {
        int pg = pick_buf(&G, M_PAGE, 0);
        op_t w = op_new(OP_HOST_WRITE);
        w.b[0] = pg;
        w.len = P->N;
        w.x = (u32)rnext(&r);
        w.y = (u32)rnext(&r);
        emit(&G, w);
        o = op_new(OP_SYMBOL);
        o.api = 0;
        o.b[1] = pg;
        o.len = SYMN;
        o.s = SL_LEGACY;
        emit(&G, o);
    }
    for (int k = 0; k < NKERN_GEN; k++)
        e_funcattr(&G, k, pct(&r, 50) ? 0 : 3, pct(&r, 60) ? SHMEM_DEFAULT : rand_limit(&r));
    e_funcattr(&G, KN_SHMEM, 1, rand_limit(&r));
    e_funcattr(&G, KN_SHMEM, 2, rand_limit(&r));
    if (pct(&r, 40)) {
        int ng = ri(&r, 1, 2);
        for (int i = 0; i < ng; i++) {
            int s = pick_user_stream(&G, 0, -1, -1);
            int t = pct(&r, 50) ? pick_user_stream(&G, 0, s, -1) : -1;
            if (s < 0)
                break;
            gen_capture(&G, s, t, P->ngraph++, pick_stream(&G, 1, 1, 0), ri(&r, 0, 1));
        }
    }
    if (pct(&r, 40) && P->ngraph < MAXG)
        gen_graph_build(&G, P->ngraph++, pick_stream(&G, 1, 1, 0), ri(&r, 0, 1));
    gen_some(&G, ri(&r, 0, 3));
    o = op_new(OP_DEVICE_SYNC);
    o.api = ri(&r, 0, 1);
    emit(&G, o);
    int wstart = -2, wjoin = -2;
    if (P->worker) {
        wstart = pct(&r, 50) ? -1 : ri(&r, 0, P->iters - 1);
        wjoin = pct(&r, 50) ? -1 : ri(&r, wstart < 0 ? 0 : wstart, P->iters - 1);
        if (wstart == -1)
            emit(&G, op_new(OP_WORKER_START));
    }

    /* ---- body */
    G.sec = SEC_BODY;
    if (wstart >= 0) {
        o = op_new(OP_WORKER_START);
        o.wmod = -1;
        o.wrem = wstart;
        emit(&G, o);
    }
    gen_body(&G, nops, P->iters);
    if (wjoin >= 0) {
        o = op_new(OP_WORKER_JOIN);
        o.wmod = -1;
        o.wrem = wjoin;
        emit(&G, o);
    }

    /* ---- teardown: everything read back, then freed */
    G.sec = SEC_TEAR;
    if (P->worker && wjoin < 0)
        emit(&G, op_new(OP_WORKER_JOIN));
    o = op_new(OP_DEVICE_SYNC);
    o.api = ri(&r, 0, 1);
    emit(&G, o);
    int th = G.th;
    for (int b = B_FIRST; b < P->nbuf; b++) {
        if (P->buf[b].temp)
            continue;
        G.th = 0;
        if (is_devlike(P->buf[b].kind)) {
            int saved_owner = P->buf[b].owner;
            P->buf[b].owner = 0;
            e_readback(&G, b, 1);
            P->buf[b].owner = saved_owner;
        } else {
            e_hostread_of(&G, b, 0, P->buf[b].n);
        }
    }
    G.th = th;
    e_hostread_of(&G, B_HV0, 0, 1);
    e_hostread_of(&G, B_HV1, 0, 1);
    e_hostread_of(&G, B_HVW, 0, 1);
    o = op_new(OP_SYMBOL);
    o.api = 2;
    o.len = SYMN;
    o.s = SL_LEGACY;
    emit(&G, o);
    e_readback(&G, B_FLAGD, 1);
    e_hostread_of(&G, B_FLAGH, 0, NFLAG);
    emit(&G, op_new(OP_LAST_ERROR));
    for (int b = B_FIRST; b < P->nbuf; b++) {
        if (P->buf[b].temp)
            continue;
        o = op_new(OP_FREE);
        o.b[0] = b;
        o.api = ri(&r, 0, 1);
        if (P->buf[b].kind == BK_DEVASYNC)
            o.s = pick_stream(&G, 1, 1, 0);
        emit(&G, o);
    }
    for (int b = B_FLAGD; b <= B_FLAGH; b++) {
        o = op_new(OP_FREE);
        o.b[0] = b;
        o.api = ri(&r, 0, 1);
        emit(&G, o);
    }
    for (int s = SL_FIRST; s < P->nst; s++)
        if (P->st[s].owner == 0 && !P->st[s].temp) {
            o = op_new(OP_STREAM_DESTROY);
            o.s = s;
            o.api = ri(&r, 0, 1);
            emit(&G, o);
        }
    for (int e = 0; e < P->nev; e++)
        if (P->ev[e].owner == 0 && !P->ev[e].temp && P->ev[e].role != 3) {
            o = op_new(OP_EVENT_DESTROY);
            o.e = e;
            o.api = ri(&r, 0, 1);
            emit(&G, o);
        }
    o = op_new(OP_MODULE);
    o.api = 1;
    emit(&G, o);
    o = op_new(OP_DEVICE_SYNC);
    emit(&G, o);
    emit(&G, op_new(OP_LAST_ERROR));

    if (P->worker)
        gen_worker(&G, ri(&r, 2, 10));
}

/* --------------------------------------------------------------- executor */

typedef struct {
    u32 *hv;
    u32 tag;
    const u32 *pin;
    int n;
} hfarg_t;

typedef struct arena {
    hfarg_t a[256];
    int n;
    struct arena *next;
} arena_t;

typedef CUresult (*pfn_memset16_t)(CUdeviceptr, unsigned short, size_t, CUstream);
typedef CUresult (*pfn_memset32_t)(CUdeviceptr, unsigned int, size_t, CUstream);
typedef CUresult (*pfn_memset8_t)(CUdeviceptr, unsigned char, size_t, CUstream);
typedef CUresult (*pfn_value_t)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);

struct xctx;

typedef struct {
    const prog_t *P;
    cudaStream_t st[MAXS];
    cudaEvent_t ev[MAXE];
    u32 *buf[MAXB];
    cudaGraphExec_t gexec[MAXG];
    cudaGraph_t graph[MAXG];          /* graphs made with the graph API, for node updates */
    cudaGraphNode_t gnode[MAXG][16];
    cudaGraphExec_t *texec;
    int ntexec, captexec;
    CUmodule mod;
    CUlibrary lib;
    CUfunction fmod[NKERN], flibf[NKERN], frt[NKERN];
    CUkernel klib[NKERN];
    cudaKernel_t kh[NKERN];
    pfn_memset16_t memset16;
    pfn_memset32_t memset32;
    pfn_memset8_t future;
    pfn_value_t write32, wait32;
    u32 hv[NHV];
    unsigned limit[3][NKERN];
    pthread_t worker;
    struct xctx *wx;
} rt_t;

typedef struct xctx {
    rt_t *R;
    int th, it, sec;
    u64 h;
    arena_t *arena;
    u32 *scratch;
    int trace, check;
} xctx_t;

static char g_bogus[512];           /* a handle no object has */
#define BOGUS_STREAM ((cudaStream_t)(void *)g_bogus)
#define BOGUS_EVENT ((cudaEvent_t)(void *)(g_bogus + 256))

static __thread const op_t *g_cur;  /* for messages */

static void xfail(xctx_t *X, const char *what, int rc)
{
    fprintf(stderr, "fuzz: generator bug, seed %" PRIu64 ": %s op #%d (%s api %d) it %d: %s returned %d\n",
            X->R->P->seed, X->sec < SEC_CAP0 ? SECN[X->sec] : "capture", g_cur ? g_cur->id : -1,
            g_cur ? OPN[g_cur->kind] : "?", g_cur ? g_cur->api : -1, X->it, what, rc);
    exit(3);
}

/* Every call's result goes into the digest. ok: 0 must succeed, 1 must fail,
 * 2 either; checked under FUZZ_CHECK. */
static void HR(xctx_t *X, const char *what, int rc, int ok)
{
    X->h = fnv(X->h, &rc, sizeof(rc));
    if (X->trace)
        printf("    %c it=%d #%d %s -> %d  %016" PRIx64 "\n", X->th ? 'w' : 'm', X->it, g_cur ? g_cur->id : -1,
               what, rc, X->h);
    if (X->check && ((ok == 0 && rc != 0) || (ok == 1 && rc == 0)))
        xfail(X, what, rc);
}

static void HB(xctx_t *X, const char *what, const void *p, size_t n)
{
    X->h = fnv(X->h, p, n);
    if (X->trace)
        printf("    %c it=%d #%d read %s (%zu bytes, fnv %016" PRIx64 ")  %016" PRIx64 "\n", X->th ? 'w' : 'm', X->it,
               g_cur ? g_cur->id : -1, what, n, fnv(FNV0, p, n), X->h);
}

/* Queries answer "done" or "not yet" by the order of work: only an error counts. */
static int qnorm(int rc)
{
    return rc == cudaErrorNotReady ? 0 : rc;
}

static cudaStream_t hs(const xctx_t *X, const op_t *o, int slot)
{
    if (slot == SL_LEGACY)
        return (o->id & 1) ? cudaStreamLegacy : (cudaStream_t)0;
    if (slot == SL_PTDS || slot == SL_WPTDS)
        return cudaStreamPerThread;
    return X->R->st[slot];
}

/* For the _ptsz entry points, where NULL is the calling thread's stream. */
static cudaStream_t hs_pt(const xctx_t *X, const op_t *o, int slot)
{
    if (slot == SL_LEGACY)
        return cudaStreamLegacy;
    if (slot == SL_PTDS || slot == SL_WPTDS)
        return (o->id & 2) ? cudaStreamPerThread : (cudaStream_t)0;
    return X->R->st[slot];
}

static CUstream hcu(const xctx_t *X, const op_t *o, int slot)
{
    if (slot == SL_LEGACY)
        return (o->id & 1) ? CU_STREAM_LEGACY : (CUstream)0;
    if (slot == SL_PTDS || slot == SL_WPTDS)
        return CU_STREAM_PER_THREAD;
    return (CUstream)X->R->st[slot];
}

#define DP(p) ((CUdeviceptr)(uintptr_t)(p))

static enum cudaMemcpyKind mkind(const prog_t *P, int d, int s)
{
    int dh = !is_devlike(P->buf[d].kind) && P->buf[d].kind != BK_SYM && P->buf[d].kind != BK_FLAGD;
    int sh = !is_devlike(P->buf[s].kind) && P->buf[s].kind != BK_SYM && P->buf[s].kind != BK_FLAGD;
    return dh ? (sh ? cudaMemcpyHostToHost : cudaMemcpyDeviceToHost)
              : (sh ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToDevice);
}

static int is_hostside(const prog_t *P, int b)
{
    int k = P->buf[b].kind;
    return k == BK_PINNED || k == BK_HOSTALLOC || k == BK_PAGEABLE || k == BK_FLAGH || k == BK_HV;
}

static void CUDART_CB hostfn(void *p)
{
    hfarg_t *a = p;
    u32 acc = a->tag;
    for (int i = 0; a->pin && i < a->n; i++)
        acc = acc * 31u + a->pin[i];
    *a->hv = *a->hv * 1000003u + acc;
}

static void CUDART_CB callback(cudaStream_t s, cudaError_t st, void *p)
{
    (void)s;
    hfarg_t *a = p;
    u32 acc = a->tag + 7u * (u32)st;
    for (int i = 0; a->pin && i < a->n; i++)
        acc = acc * 31u + a->pin[i];
    *a->hv = *a->hv * 1000033u + acc;
}

static hfarg_t *hfarg(xctx_t *X)
{
    if (!X->arena || X->arena->n == 256) {
        arena_t *a = calloc(1, sizeof(*a));
        if (!a)
            exit(2);
        a->next = X->arena;
        X->arena = a;
    }
    return &X->arena->a[X->arena->n++];
}

/* ---- kernel launches */

typedef struct {
    void *p[3];
    u32 u, v, d;
    int k, n;
    unsigned char c;
    unsigned short sh;
    unsigned long long L;
    void *params[8];
    unsigned char packed[64];
    size_t packsz;
} kargs_t;

/* The arguments of kernel k for launch op o at iteration it. */
static void build_args_k(xctx_t *X, const op_t *o, int it, int k, kargs_t *A)
{
    memset(A, 0, sizeof(*A));
    for (int i = 0; i < 3; i++) {
        int b = r_b(o, i, it);
        A->p[i] = b >= 0 ? (void *)X->R->buf[b] : NULL;
    }
    A->u = r_x(o, it);
    A->v = o->y;
    A->d = o->z;
    A->k = (int)(r_x(o, it) & 0x7fffffff);
    A->n = o->len;
    A->c = (unsigned char)r_x(o, it);
    A->sh = (unsigned short)o->y;
    A->L = ((unsigned long long)r_x(o, it) << 32) | o->y;
    int np = 0, bi = 0;
    size_t off = 0;
    for (const char *r = KD[k].roles; *r; r++) {
        void *p;
        switch (*r) {
        case 'm': case 'r': case 'w':
            p = &A->p[bi++];
            break;
        case 'u':
            p = &A->u;
            break;
        case 'v':
            p = &A->v;
            break;
        case 'd':
            p = &A->d;
            break;
        case 'k':
            p = &A->k;
            break;
        case 'c':
            p = &A->c;
            break;
        case 's':
            p = &A->sh;
            break;
        case 'L':
            p = &A->L;
            break;
        default:
            p = &A->n;
            break;
        }
        A->params[np++] = p;
        size_t sz = role_size(*r), al = sz < 8 ? sz : 8;
        off = (off + al - 1) / al * al;
        memcpy(A->packed + off, p, sz);
        off += sz;
    }
    A->packsz = off;
}

static void build_args(xctx_t *X, const op_t *o, int it, kargs_t *A)
{
    build_args_k(X, o, it, o->k, A);
}

static CUfunction kfunc_of(const rt_t *R, const op_t *o, int k)
{
    switch (o->fsrc) {
    case 1:
        return R->fmod[k];
    case 2:
        return R->flibf[k];
    case 3:
        return (CUfunction)(void *)R->klib[k];
    default:
        return R->frt[k];
    }
}

static CUfunction kfunc(const rt_t *R, const op_t *o)
{
    return kfunc_of(R, o, o->k);
}

static int exec_kernel(xctx_t *X, const op_t *o, int it, int ok)
{
    rt_t *R = X->R;
    kargs_t A;
    int kk = r_k(o, it); /* twins have their own parameters */
    build_args_k(X, o, it, kk, &A);
    dim3 g = { (unsigned)r_gx(o, it), (unsigned)o->gy, 1 }, b = { (unsigned)o->bx, 1, 1 };
    void **params = (o->k == KN_NOPARAM && (o->id & 4)) ? NULL : A.params;
    size_t psz = A.packsz;
    void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, A.packed, CU_LAUNCH_PARAM_BUFFER_SIZE, &psz,
                      CU_LAUNCH_PARAM_END };
    const void *fn = (const void *)KD[kk].fn;
    cudaLaunchAttribute ra[1];
    memset(ra, 0, sizeof(ra));
    ra[0].id = cudaLaunchAttributePriority;
    ra[0].val.priority = -(int)(o->z % 4);
    CUlaunchAttribute ca[1];
    memset(ca, 0, sizeof(ca));
    ca[0].id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
    ca[0].value.priority = -(int)(o->z % 4);
    cudaLaunchConfig_t rc = { .gridDim = g, .blockDim = b, .dynamicSmemBytes = (size_t)o->shmem,
                              .stream = hs(X, o, r_s(o, it)), .attrs = o->attr ? ra : NULL,
                              .numAttrs = o->attr ? 1 : 0 };
    CUlaunchConfig cc = { .gridDimX = g.x, .gridDimY = g.y, .gridDimZ = 1, .blockDimX = b.x, .blockDimY = 1,
                          .blockDimZ = 1, .sharedMemBytes = (unsigned)o->shmem, .hStream = hcu(X, o, r_s(o, it)),
                          .attrs = o->attr ? ca : NULL, .numAttrs = o->attr ? 1 : 0 };
    int s = r_s(o, it);
    int r;
    const char *what;
    switch (o->api) {
    case 0:
        what = "__cudaLaunchKernel";
        r = __cudaLaunchKernel(R->kh[kk], g, b, params, (size_t)o->shmem, hs(X, o, s));
        break;
    case 1:
        what = "cudaLaunchKernel";
        r = cudaLaunchKernel(fn, g, b, params, (size_t)o->shmem, hs(X, o, s));
        break;
    case 2:
    case 3:
        what = o->attr ? "cudaLaunchKernelExC+priority" : "cudaLaunchKernelExC";
        r = cudaLaunchKernelExC(&rc, fn, params);
        break;
    case 4:
        what = "cuLaunchKernel";
        r = cuLaunchKernel(kfunc_of(R, o, kk), g.x, g.y, 1, b.x, 1, 1, (unsigned)o->shmem, hcu(X, o, s), params, NULL);
        break;
    case 5:
        what = "cuLaunchKernel(extra)";
        r = cuLaunchKernel(kfunc_of(R, o, kk), g.x, g.y, 1, b.x, 1, 1, (unsigned)o->shmem, hcu(X, o, s), NULL, extra);
        break;
    case 6:
        what = o->attr ? "cuLaunchKernelEx+priority" : "cuLaunchKernelEx";
        r = cuLaunchKernelEx(&cc, kfunc_of(R, o, kk), params, NULL);
        break;
    case 7:
        what = "cudaLaunchKernel_ptsz";
        r = cudaLaunchKernel_ptsz(fn, g, b, params, (size_t)o->shmem, hs_pt(X, o, s));
        break;
    case 8:
        what = "__cudaLaunchKernel_ptsz";
        r = __cudaLaunchKernel_ptsz(R->kh[kk], g, b, params, (size_t)o->shmem, hs_pt(X, o, s));
        break;
    case 9:
        what = "cudaLaunchCooperativeKernel";
        r = cudaLaunchCooperativeKernel(fn, g, b, params, (size_t)o->shmem, hs(X, o, s));
        break;
    default:
        what = o->attr ? "cuLaunchKernelEx(extra)+priority" : "cuLaunchKernelEx(extra)";
        r = cuLaunchKernelEx(&cc, kfunc_of(R, o, kk), NULL, extra);
        break;
    }
    HR(X, what, r, ok);
    return r;
}

static int exec_memcpy(xctx_t *X, const op_t *o, int it)
{
    const prog_t *P = X->R->P;
    int d = r_b(o, 0, it), sb = r_b(o, 1, it), s = r_s(o, it);
    u32 *dp = X->R->buf[d] + o->off, *sp = X->R->buf[sb] + o->off2;
    size_t n = (size_t)o->len * 4;
    enum cudaMemcpyKind k = mkind(P, d, sb);
    int dh = is_hostside(P, d), sh = is_hostside(P, sb);
    int r;
    const char *what;
    if (o->kind == OP_MEMCPY_ASYNC) {
        switch (o->api) {
        case 0:
            what = "cudaMemcpyAsync";
            r = cudaMemcpyAsync(dp, sp, n, k, hs(X, o, s));
            break;
        case 1:
            what = "cudaMemcpyAsync(Default)";
            r = cudaMemcpyAsync(dp, sp, n, cudaMemcpyDefault, hs(X, o, s));
            break;
        case 2:
            what = "cudaMemcpyAsync_ptsz";
            r = cudaMemcpyAsync_ptsz(dp, sp, n, k, hs_pt(X, o, s));
            break;
        case 3:
            if (sh && !dh) {
                what = "cuMemcpyHtoDAsync";
                r = cuMemcpyHtoDAsync(DP(dp), sp, n, hcu(X, o, s));
            } else if (dh && !sh) {
                what = "cuMemcpyDtoHAsync";
                r = cuMemcpyDtoHAsync(dp, DP(sp), n, hcu(X, o, s));
            } else {
                what = "cuMemcpyDtoDAsync";
                r = cuMemcpyDtoDAsync(DP(dp), DP(sp), n, hcu(X, o, s));
            }
            break;
        default:
            what = "cuMemcpyAsync";
            r = cuMemcpyAsync(DP(dp), DP(sp), n, hcu(X, o, s));
            break;
        }
    } else {
        switch (o->api) {
        case 0:
            what = "cudaMemcpy";
            r = cudaMemcpy(dp, sp, n, k);
            break;
        case 1:
            what = "cudaMemcpy(Default)";
            r = cudaMemcpy(dp, sp, n, cudaMemcpyDefault);
            break;
        case 2:
            if (sh && !dh) {
                what = "cuMemcpyHtoD";
                r = cuMemcpyHtoD(DP(dp), sp, n);
            } else if (dh && !sh) {
                what = "cuMemcpyDtoH";
                r = cuMemcpyDtoH(dp, DP(sp), n);
            } else {
                what = "cuMemcpyDtoD";
                r = cuMemcpyDtoD(DP(dp), DP(sp), n);
            }
            break;
        case 3:
            what = "cuMemcpy";
            r = cuMemcpy(DP(dp), DP(sp), n);
            break;
        default:
            what = "cudaMemcpy_ptds";
            r = cudaMemcpy_ptds(dp, sp, n, k);
            break;
        }
    }
    HR(X, what, r, 0);
    return r;
}

static CUmemorytype cutype(const prog_t *P, int b)
{
    return is_hostside(P, b) ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
}

static void exec_2d(xctx_t *X, const op_t *o, int it)
{
    const prog_t *P = X->R->P;
    int d = r_b(o, 0, it), sb = r_b(o, 1, it), s = r_s(o, it);
    u32 *dp = X->R->buf[d] + o->off, *sp = X->R->buf[sb] + o->off2;
    enum cudaMemcpyKind k = mkind(P, d, sb);
    size_t dpitch = (size_t)o->pd * 4, spitch = (size_t)o->ps * 4, wb = (size_t)o->w * 4, h = (size_t)o->h;
    CUDA_MEMCPY2D c;
    memset(&c, 0, sizeof(c));
    c.srcMemoryType = cutype(P, sb);
    c.dstMemoryType = cutype(P, d);
    if (c.srcMemoryType == CU_MEMORYTYPE_HOST)
        c.srcHost = sp;
    else
        c.srcDevice = DP(sp);
    if (c.dstMemoryType == CU_MEMORYTYPE_HOST)
        c.dstHost = dp;
    else
        c.dstDevice = DP(dp);
    c.srcPitch = spitch;
    c.dstPitch = dpitch;
    c.WidthInBytes = wb;
    c.Height = h;
    int r;
    const char *what;
    if (o->kind == OP_MEMCPY2D_ASYNC) {
        switch (o->api) {
        case 0:
            what = "cudaMemcpy2DAsync";
            r = cudaMemcpy2DAsync(dp, dpitch, sp, spitch, wb, h, k, hs(X, o, s));
            break;
        case 1:
            what = "cuMemcpy2DAsync";
            r = cuMemcpy2DAsync(&c, hcu(X, o, s));
            break;
        default:
            what = "cudaMemcpy2DAsync_ptsz";
            r = cudaMemcpy2DAsync_ptsz(dp, dpitch, sp, spitch, wb, h, k, hs_pt(X, o, s));
            break;
        }
    } else if (o->api == 0) {
        what = "cudaMemcpy2D";
        r = cudaMemcpy2D(dp, dpitch, sp, spitch, wb, h, k);
    } else {
        what = "cuMemcpy2D";
        r = cuMemcpy2D(&c);
    }
    HR(X, what, r, 0);
}

static void exec_3d(xctx_t *X, const op_t *o, int it)
{
    const prog_t *P = X->R->P;
    int d = r_b(o, 0, it), sb = r_b(o, 1, it), s = r_s(o, it);
    u32 *dp = X->R->buf[d] + o->off, *sp = X->R->buf[sb] + o->off2;
    int r;
    const char *what;
    int async = o->kind == OP_MEMCPY3D_ASYNC;
    if (o->api == 0) {
        struct cudaMemcpy3DParms p;
        memset(&p, 0, sizeof(p));
        p.srcPtr.ptr = sp;
        p.srcPtr.pitch = (size_t)o->ps * 4;
        p.srcPtr.xsize = (size_t)o->ps;
        p.srcPtr.ysize = (size_t)o->ysz;
        p.dstPtr.ptr = dp;
        p.dstPtr.pitch = (size_t)o->pd * 4;
        p.dstPtr.xsize = (size_t)o->pd;
        p.dstPtr.ysize = (size_t)o->ysz;
        p.extent.width = (size_t)o->w * 4;
        p.extent.height = (size_t)o->h;
        p.extent.depth = (size_t)o->d;
        p.kind = mkind(P, d, sb);
        what = async ? "cudaMemcpy3DAsync" : "cudaMemcpy3D";
        r = async ? cudaMemcpy3DAsync(&p, hs(X, o, s)) : cudaMemcpy3D(&p);
    } else {
        CUDA_MEMCPY3D c;
        memset(&c, 0, sizeof(c));
        c.srcMemoryType = cutype(P, sb);
        c.dstMemoryType = cutype(P, d);
        if (c.srcMemoryType == CU_MEMORYTYPE_HOST)
            c.srcHost = sp;
        else
            c.srcDevice = DP(sp);
        if (c.dstMemoryType == CU_MEMORYTYPE_HOST)
            c.dstHost = dp;
        else
            c.dstDevice = DP(dp);
        c.srcPitch = (size_t)o->ps * 4;
        c.dstPitch = (size_t)o->pd * 4;
        c.srcHeight = (size_t)o->ysz;
        c.dstHeight = (size_t)o->ysz;
        c.WidthInBytes = (size_t)o->w * 4;
        c.Height = (size_t)o->h;
        c.Depth = (size_t)o->d;
        what = async ? "cuMemcpy3DAsync" : "cuMemcpy3D";
        r = async ? cuMemcpy3DAsync(&c, hcu(X, o, s)) : cuMemcpy3D(&c);
    }
    HR(X, what, r, 0);
}

static void exec_memset(xctx_t *X, const op_t *o, int it)
{
    rt_t *R = X->R;
    int d = r_b(o, 0, it), s = r_s(o, it);
    u32 *dp = R->buf[d] + o->off;
    u32 v = r_x(o, it);
    size_t n = (size_t)o->len;
    int r;
    const char *what;
    if (o->kind == OP_MEMSET) {
        switch (o->api) {
        case 0:
            what = "cudaMemset";
            r = cudaMemset(dp, (int)(v & 0xff), n * 4);
            break;
        case 1:
            what = "cuMemsetD32";
            r = cuMemsetD32(DP(dp), v, n);
            break;
        default:
            what = "cudaMemset_ptds";
            r = cudaMemset_ptds(dp, (int)(v & 0xff), n * 4);
            break;
        }
    } else if (o->kind == OP_MEMSET2D_ASYNC) {
        size_t pitch = (size_t)o->pd * 4;
        switch (o->api) {
        case 0:
            what = "cudaMemset2DAsync";
            r = cudaMemset2DAsync(dp, pitch, (int)(v & 0xff), (size_t)o->w * 4, (size_t)o->h, hs(X, o, s));
            break;
        case 1:
            what = "cuMemsetD2D32Async";
            r = cuMemsetD2D32Async(DP(dp), pitch, v, (size_t)o->w, (size_t)o->h, hcu(X, o, s));
            break;
        default: {
            struct cudaPitchedPtr pp = { dp, pitch, (size_t)o->pd, (size_t)o->h };
            struct cudaExtent e = { (size_t)o->w * 4, (size_t)o->h, 1 };
            what = "cudaMemset3DAsync";
            r = cudaMemset3DAsync(pp, (int)(v & 0xff), e, hs(X, o, s));
            break;
        }
        }
    } else {
        switch (o->api) {
        case 0:
            what = "cudaMemsetAsync";
            r = cudaMemsetAsync(dp, (int)(v & 0xff), n * 4, hs(X, o, s));
            break;
        case 1:
            what = "cudaMemsetAsync_ptsz";
            r = cudaMemsetAsync_ptsz(dp, (int)(v & 0xff), n * 4, hs_pt(X, o, s));
            break;
        case 2:
            what = "cuMemsetD8Async";
            r = cuMemsetD8Async(DP(dp), (unsigned char)v, n * 4, hcu(X, o, s));
            break;
        case 3:
            what = "cuMemsetD16Async(proc)";
            r = R->memset16 ? R->memset16(DP(dp), (unsigned short)v, n * 2, hcu(X, o, s))
                            : cuMemsetD16Async(DP(dp), (unsigned short)v, n * 2, hcu(X, o, s));
            break;
        case 4:
            what = "cuMemsetD32Async(proc)";
            r = R->memset32 ? R->memset32(DP(dp), v, n, hcu(X, o, s)) : cuMemsetD32Async(DP(dp), v, n, hcu(X, o, s));
            break;
        case 5:
            what = "cuMemsetD32Async";
            r = cuMemsetD32Async(DP(dp), v, n, hcu(X, o, s));
            break;
        default:
            what = R->future ? "cuSimFutureMemset(proc)" : "cudaMemsetAsync";
            r = R->future ? R->future(DP(dp), (unsigned char)v, n * 4, hcu(X, o, s))
                          : cudaMemsetAsync(dp, (int)(v & 0xff), n * 4, hs(X, o, s));
            break;
        }
    }
    HR(X, what, r, 0);
}

/* ---- capture */

static void exec_section(xctx_t *X, int sec, int it);

static void exec_capture(xctx_t *X, const op_t *o, int it)
{
    rt_t *R = X->R;
    const op_t *saved = g_cur;
    static const enum cudaStreamCaptureMode modes[] = { cudaStreamCaptureModeGlobal,
                                                         cudaStreamCaptureModeThreadLocal,
                                                         cudaStreamCaptureModeRelaxed };
    enum cudaStreamCaptureMode mode = modes[o->flags % 3];
    cudaStream_t s = R->st[o->s];
    cudaGraph_t g = NULL;
    int r;
    switch (o->api) {
    case 0:
        r = cudaStreamBeginCapture(s, mode);
        HR(X, "cudaStreamBeginCapture", r, 0);
        break;
    case 1:
        r = cuStreamBeginCapture((CUstream)s, (CUstreamCaptureMode)mode);
        HR(X, "cuStreamBeginCapture", r, 0);
        break;
    default:
        r = cudaGraphCreate(&g, 0);
        HR(X, "cudaGraphCreate", r, 0);
        r = cudaStreamBeginCaptureToGraph(s, g, NULL, NULL, 0, mode);
        HR(X, "cudaStreamBeginCaptureToGraph", r, 0);
        break;
    }
    enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    r = cudaStreamIsCapturing(s, &st);
    HR(X, "cudaStreamIsCapturing", r, 0);
    X->h = fnv(X->h, &st, sizeof(st));
    int osec = X->sec;
    exec_section(X, o->sec, it);
    X->sec = osec;
    g_cur = saved;
    cudaGraph_t got = NULL;
    if (o->api == 1) {
        r = cuStreamEndCapture((CUstream)s, (CUgraph *)&got);
        HR(X, "cuStreamEndCapture", r, 0);
    } else {
        r = cudaStreamEndCapture(s, &got);
        HR(X, "cudaStreamEndCapture", r, 0);
    }
    size_t nn = 0;
    r = cudaGraphGetNodes(got, NULL, &nn);
    HR(X, "cudaGraphGetNodes", r, 0);
    X->h = fnv(X->h, &nn, sizeof(nn));
    cudaGraphExec_t ge = NULL;
    switch (o->z) {
    case 0:
        r = cudaGraphInstantiate(&ge, got, 0);
        HR(X, "cudaGraphInstantiate", r, 0);
        break;
    case 1:
        r = cudaGraphInstantiateWithFlags(&ge, got, 0);
        HR(X, "cudaGraphInstantiateWithFlags", r, 0);
        break;
    default:
        r = cuGraphInstantiate((CUgraphExec *)&ge, (CUgraph)got, 0);
        HR(X, "cuGraphInstantiate", r, 0);
        break;
    }
    r = (o->id & 1) ? cudaGraphDestroy(got) : cuGraphDestroy((CUgraph)got);
    HR(X, "cudaGraphDestroy", r, 0);
    if (o->slot >= 0) {
        R->gexec[o->slot] = ge;
    } else {
        if (R->ntexec >= R->captexec) {
            R->captexec = R->captexec ? 2 * R->captexec : 16;
            R->texec = realloc(R->texec, (size_t)R->captexec * sizeof(*R->texec));
            if (!R->texec)
                exit(2);
        }
        R->texec[R->ntexec++] = ge;
    }
    for (int i = 0; i < o->nlaunch; i++) {
        if (o->id & 2) {
            r = cuGraphLaunch((CUgraphExec)ge, hcu(X, o, o->sl));
            HR(X, "cuGraphLaunch", r, 0);
        } else {
            r = cudaGraphLaunch(ge, hs(X, o, o->sl));
            HR(X, "cudaGraphLaunch", r, 0);
        }
    }
}

typedef cudaError_t (*pfn_rt_nodeattr_t)(cudaGraphNode_t, cudaKernelNodeAttrID, const cudaKernelNodeAttrValue *);
typedef CUresult (*pfn_cu_nodeattr_t)(CUgraphNode, CUkernelNodeAttrID, const CUkernelNodeAttrValue *);

static void kernel_node_params(xctx_t *X, const op_t *k, int it, kargs_t *A, struct cudaKernelNodeParams *rp,
                               CUDA_KERNEL_NODE_PARAMS *cp)
{
    build_args(X, k, it, A);
    memset(rp, 0, sizeof(*rp));
    rp->func = (void *)KD[k->k].fn;
    rp->gridDim = (dim3){ (unsigned)r_gx(k, it), (unsigned)k->gy, 1 };
    rp->blockDim = (dim3){ (unsigned)k->bx, 1, 1 };
    rp->kernelParams = A->params;
    memset(cp, 0, sizeof(*cp));
    cp->func = kfunc(X->R, k);
    cp->gridDimX = rp->gridDim.x;
    cp->gridDimY = rp->gridDim.y;
    cp->gridDimZ = 1;
    cp->blockDimX = rp->blockDim.x;
    cp->blockDimY = 1;
    cp->blockDimZ = 1;
    cp->kernelParams = A->params;
}

/* The graph API: a chain of nodes, instantiated, launched. */
static void exec_graph_build(xctx_t *X, const op_t *o, int it)
{
    rt_t *R = X->R;
    const seq_t *q = &R->P->sec[o->sec];
    cudaGraph_t g = NULL;
    int r = o->api ? cuGraphCreate((CUgraph *)&g, 0) : cudaGraphCreate(&g, 0);
    HR(X, o->api ? "cuGraphCreate" : "cudaGraphCreate", r, 0);
    cudaGraphNode_t prev = NULL;
    static pfn_rt_nodeattr_t rt_attr;
    static pfn_cu_nodeattr_t cu_attr;
    static int looked;
    if (!looked) {
        rt_attr = (pfn_rt_nodeattr_t)dlsym(RTLD_DEFAULT, "cudaGraphKernelNodeSetAttribute");
        cu_attr = (pfn_cu_nodeattr_t)dlsym(RTLD_DEFAULT, "cuGraphKernelNodeSetAttribute");
        looked = 1;
    }
    for (int i = 0; i < q->n; i++) {
        const op_t *n = &q->v[i];
        cudaGraphNode_t node = NULL;
        int nd = prev ? 1 : 0;
        switch (n->kind) {
        case OP_KERNEL: {
            kargs_t A;
            struct cudaKernelNodeParams rp;
            CUDA_KERNEL_NODE_PARAMS cp;
            kernel_node_params(X, n, it, &A, &rp, &cp);
            if (o->api) {
                r = cuGraphAddKernelNode((CUgraphNode *)&node, (CUgraph)g, (CUgraphNode *)&prev, (size_t)nd, &cp);
                HR(X, "cuGraphAddKernelNode", r, 0);
            } else {
                r = cudaGraphAddKernelNode(&node, g, &prev, (size_t)nd, &rp);
                HR(X, "cudaGraphAddKernelNode", r, 0);
            }
            if ((o->flags & 2) && node) {
                if (o->api && cu_attr) {
                    CUkernelNodeAttrValue v;
                    memset(&v, 0, sizeof(v));
                    v.priority = -(int)(n->z % 4);
                    r = cu_attr((CUgraphNode)node, CU_LAUNCH_ATTRIBUTE_PRIORITY, &v);
                    HR(X, "cuGraphKernelNodeSetAttribute", r, 2);
                } else if (!o->api && rt_attr) {
                    cudaKernelNodeAttrValue v;
                    memset(&v, 0, sizeof(v));
                    v.priority = -(int)(n->z % 4);
                    r = rt_attr(node, cudaLaunchAttributePriority, &v);
                    HR(X, "cudaGraphKernelNodeSetAttribute", r, 2);
                }
            }
            break;
        }
        case OP_MEMSET_ASYNC: {
            u32 *dp = R->buf[n->b[0]] + n->off;
            if (o->api) {
                CUDA_MEMSET_NODE_PARAMS m = { DP(dp), 0, n->x, 4, (size_t)n->len, 1 };
                r = cuGraphAddMemsetNode((CUgraphNode *)&node, (CUgraph)g, (CUgraphNode *)&prev, (size_t)nd, &m, NULL);
                HR(X, "cuGraphAddMemsetNode", r, 0);
            } else {
                struct cudaMemsetParams m = { dp, 0, n->x, 4, (size_t)n->len, 1 };
                r = cudaGraphAddMemsetNode(&node, g, &prev, (size_t)nd, &m);
                HR(X, "cudaGraphAddMemsetNode", r, 0);
            }
            break;
        }
        case OP_MEMCPY_ASYNC: {
            u32 *dp = R->buf[n->b[0]] + n->off, *sp = R->buf[n->b[1]] + n->off2;
            size_t bytes = (size_t)n->len * 4;
            if (o->api) {
                CUDA_MEMCPY3D c;
                memset(&c, 0, sizeof(c));
                c.srcMemoryType = c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
                c.srcDevice = DP(sp);
                c.dstDevice = DP(dp);
                c.srcPitch = c.dstPitch = bytes;
                c.WidthInBytes = bytes;
                c.Height = c.Depth = 1;
                r = cuGraphAddMemcpyNode((CUgraphNode *)&node, (CUgraph)g, (CUgraphNode *)&prev, (size_t)nd, &c, NULL);
                HR(X, "cuGraphAddMemcpyNode", r, 0);
            } else {
                r = cudaGraphAddMemcpyNode1D(&node, g, &prev, (size_t)nd, dp, sp, bytes, cudaMemcpyDeviceToDevice);
                HR(X, "cudaGraphAddMemcpyNode1D", r, 0);
            }
            break;
        }
        default:
            break;
        }
        if (o->slot >= 0 && i < 16)
            R->gnode[o->slot][i] = node;
        if (node)
            prev = node;
    }
    cudaGraphExec_t ge = NULL;
    switch (o->z) {
    case 0:
        r = cudaGraphInstantiate(&ge, g, 0);
        HR(X, "cudaGraphInstantiate", r, 0);
        break;
    case 1:
        r = cudaGraphInstantiateWithFlags(&ge, g, 0);
        HR(X, "cudaGraphInstantiateWithFlags", r, 0);
        break;
    default:
        r = cuGraphInstantiate((CUgraphExec *)&ge, (CUgraph)g, 0);
        HR(X, "cuGraphInstantiate", r, 0);
        break;
    }
    if (o->slot >= 0) {
        R->gexec[o->slot] = ge;
        R->graph[o->slot] = g;   /* kept: its nodes name what an update changes */
    } else {
        r = cudaGraphDestroy(g);
        HR(X, "cudaGraphDestroy", r, 0);
        if (R->ntexec >= R->captexec) {
            R->captexec = R->captexec ? 2 * R->captexec : 16;
            R->texec = realloc(R->texec, (size_t)R->captexec * sizeof(*R->texec));
            if (!R->texec)
                exit(2);
        }
        R->texec[R->ntexec++] = ge;
    }
    if ((o->flags & 1) && o->nlaunch) {
        r = cudaGraphUpload(ge, hs(X, o, o->sl));
        HR(X, "cudaGraphUpload", r, 0);
    }
    for (int i = 0; i < o->nlaunch; i++) {
        if (o->id & 2) {
            r = cuGraphLaunch((CUgraphExec)ge, hcu(X, o, o->sl));
            HR(X, "cuGraphLaunch", r, 0);
        } else {
            r = cudaGraphLaunch(ge, hs(X, o, o->sl));
            HR(X, "cudaGraphLaunch", r, 0);
        }
    }
}

static void exec_setparam(xctx_t *X, const op_t *o, int it)
{
    rt_t *R = X->R;
    cudaGraphNode_t node = o->z < 16 ? R->gnode[o->slot][o->z] : NULL;
    kargs_t A;
    struct cudaKernelNodeParams rp;
    CUDA_KERNEL_NODE_PARAMS cp;
    kernel_node_params(X, o, it, &A, &rp, &cp);
    int r;
    if (o->api) {
        r = cuGraphExecKernelNodeSetParams((CUgraphExec)R->gexec[o->slot], (CUgraphNode)node, &cp);
        HR(X, "cuGraphExecKernelNodeSetParams", r, 0);
    } else {
        r = cudaGraphExecKernelNodeSetParams(R->gexec[o->slot], node, &rp);
        HR(X, "cudaGraphExecKernelNodeSetParams", r, 0);
    }
}

static void *worker_main(void *p);

static void proc_lookup(xctx_t *X, int api, const char *name, void **fp)
{
    int r;
    *fp = NULL;
    if (api == 0) {
        CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        r = cuGetProcAddress(name, fp, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &st);
        HR(X, "cuGetProcAddress", r, 2);
        X->h = fnv(X->h, &st, sizeof(st));
    } else {
        enum cudaDriverEntryPointQueryResult st = cudaDriverEntryPointSymbolNotFound;
        if (api == 1)
            r = cudaGetDriverEntryPointByVersion(name, fp, 13000, cudaEnableDefault, &st);
        else {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
            r = cudaGetDriverEntryPoint(name, fp, cudaEnableDefault, &st);
#pragma GCC diagnostic pop
        }
        HR(X, api == 1 ? "cudaGetDriverEntryPointByVersion" : "cudaGetDriverEntryPoint", r, 2);
        X->h = fnv(X->h, &st, sizeof(st));
    }
    int got = *fp != NULL;
    X->h = fnv(X->h, &got, sizeof(got));
}

static void exec_err(xctx_t *X, const op_t *o, int it)
{
    rt_t *R = X->R;
    int s = r_s(o, it);
    kargs_t A;
    op_t k = *o;
    k.b[0] = o->b[0];
    k.b[1] = o->b[1];
    k.b[2] = o->b[1];
    k.len = o->len;
    build_args(X, &k, it, &A);
    const void *fn = (const void *)KD[o->k].fn;
    dim3 g1 = { 1, 1, 1 }, b64 = { 64, 1, 1 };
    int r;
    const char *what;
    switch (o->api) {
    case 0:
        what = "cudaLaunchKernel(bogus stream)";
        r = cudaLaunchKernel(fn, g1, b64, A.params, 0, BOGUS_STREAM);
        break;
    case 1:
        what = "cudaLaunchKernel(shmem 300000)";
        r = cudaLaunchKernel(fn, g1, b64, A.params, 300000, hs(X, o, s));
        break;
    case 2:
        what = "cudaMemcpyAsync(bad kind)";
        r = cudaMemcpyAsync(R->buf[o->b[0]], R->buf[o->b[1]], 16, (enum cudaMemcpyKind)42, hs(X, o, s));
        break;
    case 3:
        what = "cudaStreamWaitEvent(bad flags)";
        r = cudaStreamWaitEvent(hs(X, o, s), R->ev[o->e], 0x4);
        break;
    case 4: {
        dim3 big = { 2048, 1, 1 };
        what = "cudaLaunchKernel(block 2048)";
        r = cudaLaunchKernel(fn, g1, big, A.params, 0, hs(X, o, s));
        break;
    }
    case 5:
        what = "cudaFuncSetAttribute(300000)";
        r = cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, 300000);
        break;
    case 6:
        what = "cudaEventRecord(bogus event)";
        r = cudaEventRecord(BOGUS_EVENT, hs(X, o, s));
        break;
    case 7:
        what = "cudaMemsetAsync(bogus stream)";
        r = cudaMemsetAsync(R->buf[o->b[0]], 0, 16, BOGUS_STREAM);
        break;
    case 8: {
        dim3 g0 = { 0, 1, 1 };
        what = "cudaLaunchKernel(grid 0)";
        r = cudaLaunchKernel(fn, g0, b64, A.params, 0, hs(X, o, s));
        break;
    }
    case 9: {
        void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, A.packed, CU_LAUNCH_PARAM_END };
        what = "cuLaunchKernel(extra without size)";
        r = cuLaunchKernel(R->frt[o->k], 1, 1, 1, 64, 1, 1, 0, hcu(X, o, s), NULL, extra);
        break;
    }
    case 10:
        what = "cudaStreamSynchronize(bogus)";
        r = cudaStreamSynchronize(BOGUS_STREAM);
        break;
    case 11:
        what = "cudaEventQuery(bogus)";
        r = cudaEventQuery(BOGUS_EVENT);
        break;
    case 12:
        what = "cudaStreamQuery(bogus)";
        r = cudaStreamQuery(BOGUS_STREAM);
        break;
    case 13:
        what = "cudaEventSynchronize(bogus)";
        r = cudaEventSynchronize(BOGUS_EVENT);
        break;
    default:
        what = "cudaGraphLaunch(NULL)";
        r = cudaGraphLaunch(NULL, hs(X, o, s));
        break;
    }
    HR(X, what, r, 1);
}

static void exec_info(xctx_t *X, const op_t *o, int it)
{
    rt_t *R = X->R;
    int s = r_s(o, it);
    int r;
    switch (o->api) {
    case 0: {
        unsigned f = 0;
        r = cudaStreamGetFlags(hs(X, o, s), &f);
        HR(X, "cudaStreamGetFlags", r, 0);
        X->h = fnv(X->h, &f, sizeof(f));
        break;
    }
    case 1: {
        int p = 0;
        r = cudaStreamGetPriority(hs(X, o, s), &p);
        HR(X, "cudaStreamGetPriority", r, 0);
        X->h = fnv(X->h, &p, sizeof(p));
        break;
    }
    case 2: {
        enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusActive;
        r = cudaStreamIsCapturing(hs(X, o, s), &st);
        HR(X, "cudaStreamIsCapturing", r, 0);
        X->h = fnv(X->h, &st, sizeof(st));
        break;
    }
    case 3: {
        struct cudaPointerAttributes a;
        memset(&a, 0, sizeof(a));
        r = cudaPointerGetAttributes(&a, R->buf[o->b[0]]);
        HR(X, "cudaPointerGetAttributes", r, 0);
        int v[2] = { (int)a.type, a.device };
        X->h = fnv(X->h, v, sizeof(v));
        break;
    }
    case 4: {
        struct cudaFuncAttributes a;
        memset(&a, 0, sizeof(a));
        r = cudaFuncGetAttributes(&a, (const void *)KD[o->k].fn);
        HR(X, "cudaFuncGetAttributes", r, 0);
        int v[2] = { a.maxDynamicSharedSizeBytes, a.numRegs };
        X->h = fnv(X->h, v, sizeof(v));
        break;
    }
    case 5: {
        const char *nm = NULL;
        r = cudaFuncGetName(&nm, (const void *)KD[o->k].fn);
        HR(X, "cudaFuncGetName", r, 0);
        if (nm)
            X->h = fnv(X->h, nm, strlen(nm));
        break;
    }
    case 6: {
        int d = -1, n = 0;
        r = cudaGetDevice(&d);
        HR(X, "cudaGetDevice", r, 0);
        r = cudaGetDeviceCount(&n);
        HR(X, "cudaGetDeviceCount", r, 0);
        int v[2] = { d, n };
        X->h = fnv(X->h, v, sizeof(v));
        break;
    }
    case 7: {
        unsigned f = 0;
        r = cuStreamGetFlags(hcu(X, o, s), &f);
        HR(X, "cuStreamGetFlags", r, 0);
        X->h = fnv(X->h, &f, sizeof(f));
        break;
    }
    default: {
        enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusActive;
        r = cudaStreamGetCaptureInfo(hs(X, o, s), &st, NULL, NULL, NULL, NULL, NULL);
        HR(X, "cudaStreamGetCaptureInfo", r, 0);
        X->h = fnv(X->h, &st, sizeof(st));
        break;
    }
    }
}

static void exec_malloc(xctx_t *X, const op_t *o)
{
    rt_t *R = X->R;
    const prog_t *P = R->P;
    int b = o->b[0];
    size_t bytes = (size_t)P->buf[b].n * 4;
    void *p = NULL;
    CUdeviceptr dp = 0;
    int r = 0;
    switch (P->buf[b].kind) {
    case BK_DEV:
    case BK_FLAGD:
        if (o->api) {
            r = cuMemAlloc(&dp, bytes);
            p = (void *)(uintptr_t)dp;
            HR(X, "cuMemAlloc", r, 0);
        } else {
            r = cudaMalloc(&p, bytes);
            HR(X, "cudaMalloc", r, 0);
        }
        break;
    case BK_DEVASYNC:
        if (o->api) {
            r = cuMemAllocAsync(&dp, bytes, hcu(X, o, o->s));
            p = (void *)(uintptr_t)dp;
            HR(X, "cuMemAllocAsync", r, 0);
        } else {
            r = cudaMallocAsync(&p, bytes, hs(X, o, o->s));
            HR(X, "cudaMallocAsync", r, 0);
        }
        break;
    case BK_MANAGED:
        r = cudaMallocManaged(&p, bytes, cudaMemAttachGlobal);
        HR(X, "cudaMallocManaged", r, 0);
        break;
    case BK_PINNED:
        if (o->api) {
            r = cuMemAllocHost(&p, bytes);
            HR(X, "cuMemAllocHost", r, 0);
        } else {
            r = cudaMallocHost(&p, bytes);
            HR(X, "cudaMallocHost", r, 0);
        }
        break;
    case BK_HOSTALLOC:
    case BK_FLAGH:
        if (o->api) {
            r = cuMemHostAlloc(&p, bytes, CU_MEMHOSTALLOC_PORTABLE);
            HR(X, "cuMemHostAlloc", r, 0);
        } else {
            r = cudaHostAlloc(&p, bytes, (o->id & 1) ? cudaHostAllocMapped : cudaHostAllocDefault);
            HR(X, "cudaHostAlloc", r, 0);
        }
        break;
    case BK_PAGEABLE:
        p = malloc(bytes);
        if (!p)
            exit(2);
        break;
    case BK_SYM:
        r = cudaGetSymbolAddress(&p, g_sym);
        HR(X, "cudaGetSymbolAddress", r, 0);
        g_symdev = p;
        break;
    case BK_HV:
        p = &R->hv[b - B_HV0];
        break;
    }
    R->buf[b] = p;
}

static void exec_free(xctx_t *X, const op_t *o)
{
    rt_t *R = X->R;
    int b = o->b[0];
    void *p = R->buf[b];
    int r;
    switch (R->P->buf[b].kind) {
    case BK_DEV:
    case BK_FLAGD:
    case BK_MANAGED:
        r = o->api ? cuMemFree(DP(p)) : cudaFree(p);
        HR(X, o->api ? "cuMemFree" : "cudaFree", r, 0);
        break;
    case BK_DEVASYNC:
        r = o->api ? cuMemFreeAsync(DP(p), hcu(X, o, o->s)) : cudaFreeAsync(p, hs(X, o, o->s));
        HR(X, o->api ? "cuMemFreeAsync" : "cudaFreeAsync", r, 0);
        break;
    case BK_PINNED:
    case BK_HOSTALLOC:
    case BK_FLAGH:
        r = o->api ? cuMemFreeHost(p) : cudaFreeHost(p);
        HR(X, o->api ? "cuMemFreeHost" : "cudaFreeHost", r, 0);
        break;
    case BK_PAGEABLE:
        free(p);
        break;
    default:
        break;
    }
    R->buf[b] = NULL;
}

static void exec_op(xctx_t *X, const op_t *o, int it)
{
    rt_t *R = X->R;
    const prog_t *P = R->P;
    int s = r_s(o, it);
    int r;
    g_cur = o;
    switch (o->kind) {
    case OP_KERNEL: {
        int cls = limit_class(o);
        int ok = o->bx <= 1024 && (unsigned)o->shmem <= R->limit[cls][r_k(o, it)] ? 0 : 1;
        exec_kernel(X, o, it, ok);
        break;
    }
    case OP_MEMCPY_ASYNC:
    case OP_MEMCPY:
        exec_memcpy(X, o, it);
        break;
    case OP_MEMCPY2D_ASYNC:
    case OP_MEMCPY2D:
        exec_2d(X, o, it);
        break;
    case OP_MEMCPY3D_ASYNC:
    case OP_MEMCPY3D:
        exec_3d(X, o, it);
        break;
    case OP_MEMCPY_BATCH: {
        int d = r_b(o, 0, it), sb = r_b(o, 1, it);
        void *dsts[3];
        const void *srcs[3];
        size_t sizes[3];
        for (u32 i = 0; i < o->z; i++) {
            dsts[i] = R->buf[d] + o->off + (int)i * o->len;
            srcs[i] = R->buf[sb] + o->off2 + (int)i * o->len;
            sizes[i] = (size_t)o->len * 4;
        }
        struct cudaMemcpyAttributes a;
        memset(&a, 0, sizeof(a));
        a.srcAccessOrder = (o->flags & 1) ? cudaMemcpySrcAccessOrderDuringApiCall : cudaMemcpySrcAccessOrderStream;
        size_t idx = 0;
        r = cudaMemcpyBatchAsync(dsts, srcs, sizes, o->z, &a, &idx, 1, hs(X, o, s));
        HR(X, "cudaMemcpyBatchAsync", r, 0);
        break;
    }
    case OP_MEMSET_ASYNC:
    case OP_MEMSET:
    case OP_MEMSET2D_ASYNC:
        exec_memset(X, o, it);
        break;
    case OP_EVENT_RECORD: {
        cudaEvent_t e = R->ev[r_e(o, it)];
        switch (o->api) {
        case 0:
            r = cudaEventRecord(e, hs(X, o, s));
            HR(X, "cudaEventRecord", r, 0);
            break;
        case 1:
            r = cudaEventRecordWithFlags(e, hs(X, o, s), cudaEventRecordDefault);
            HR(X, "cudaEventRecordWithFlags", r, 0);
            break;
        case 2:
            r = cudaEventRecord_ptsz(e, hs_pt(X, o, s));
            HR(X, "cudaEventRecord_ptsz", r, 0);
            break;
        case 3:
            r = cuEventRecord((CUevent)e, hcu(X, o, s));
            HR(X, "cuEventRecord", r, 0);
            break;
        default:
            r = cuEventRecordWithFlags((CUevent)e, hcu(X, o, s), CU_EVENT_RECORD_DEFAULT);
            HR(X, "cuEventRecordWithFlags", r, 0);
            break;
        }
        break;
    }
    case OP_STREAM_WAIT: {
        cudaEvent_t e = R->ev[r_e(o, it)];
        switch (o->api) {
        case 0:
            r = cudaStreamWaitEvent(hs(X, o, s), e, 0);
            HR(X, "cudaStreamWaitEvent", r, 0);
            break;
        case 1:
            r = cudaStreamWaitEvent_ptsz(hs_pt(X, o, s), e, cudaEventWaitDefault);
            HR(X, "cudaStreamWaitEvent_ptsz", r, 0);
            break;
        default:
            r = cuStreamWaitEvent(hcu(X, o, s), (CUevent)e, 0);
            HR(X, "cuStreamWaitEvent", r, 0);
            break;
        }
        break;
    }
    case OP_EVENT_QUERY: {
        cudaEvent_t e = R->ev[r_e(o, it)];
        if (o->api == 1) {
            long n = 0;
            while ((r = cudaEventQuery(e)) == cudaErrorNotReady)
                if (++n > 50000000L) {
                    fprintf(stderr, "fuzz: seed %" PRIu64 ": event never completes\n", P->seed);
                    exit(4);
                }
            HR(X, "cudaEventQuery(poll)", r, 0);
        } else if (o->api == 2) {
            r = cuEventQuery((CUevent)e);
            HR(X, "cuEventQuery", qnorm(r), 0);
        } else {
            r = cudaEventQuery(e);
            HR(X, "cudaEventQuery", qnorm(r), 0);
        }
        break;
    }
    case OP_EVENT_SYNC: {
        cudaEvent_t e = R->ev[r_e(o, it)];
        r = o->api ? cuEventSynchronize((CUevent)e) : cudaEventSynchronize(e);
        HR(X, o->api ? "cuEventSynchronize" : "cudaEventSynchronize", r, 0);
        break;
    }
    case OP_STREAM_QUERY:
        if (o->api == 1) {
            long n = 0;
            while ((r = cudaStreamQuery(hs(X, o, s))) == cudaErrorNotReady)
                if (++n > 50000000L) {
                    fprintf(stderr, "fuzz: seed %" PRIu64 ": stream never drains\n", P->seed);
                    exit(4);
                }
            HR(X, "cudaStreamQuery(poll)", r, 0);
        } else if (o->api == 2) {
            r = cuStreamQuery(hcu(X, o, s));
            HR(X, "cuStreamQuery", qnorm(r), 0);
        } else {
            r = cudaStreamQuery(hs(X, o, s));
            HR(X, "cudaStreamQuery", qnorm(r), 0);
        }
        break;
    case OP_STREAM_SYNC:
        switch (o->api) {
        case 0:
            r = cudaStreamSynchronize(hs(X, o, s));
            HR(X, "cudaStreamSynchronize", r, 0);
            break;
        case 1:
            r = cudaStreamSynchronize_ptsz(hs_pt(X, o, s));
            HR(X, "cudaStreamSynchronize_ptsz", r, 0);
            break;
        default:
            r = cuStreamSynchronize(hcu(X, o, s));
            HR(X, "cuStreamSynchronize", r, 0);
            break;
        }
        break;
    case OP_DEVICE_SYNC:
        r = o->api ? cuCtxSynchronize() : cudaDeviceSynchronize();
        HR(X, o->api ? "cuCtxSynchronize" : "cudaDeviceSynchronize", r, 0);
        break;
    case OP_HOSTFN: {
        hfarg_t *a = hfarg(X);
        int pb = r_b(o, 0, it);
        a->hv = &R->hv[o->slot - B_HV0];
        a->tag = r_x(o, it);
        a->pin = pb >= 0 ? R->buf[pb] : NULL;
        a->n = o->len;
        switch (o->api) {
        case 0:
            r = cudaLaunchHostFunc(hs(X, o, s), hostfn, a);
            HR(X, "cudaLaunchHostFunc", r, 0);
            break;
        case 1:
            r = cuLaunchHostFunc(hcu(X, o, s), hostfn, a);
            HR(X, "cuLaunchHostFunc", r, 0);
            break;
        case 2:
            r = cudaStreamAddCallback(hs(X, o, s), callback, a, 0);
            HR(X, "cudaStreamAddCallback", r, 0);
            break;
        default:
            r = cudaLaunchHostFunc_ptsz(hs_pt(X, o, s), hostfn, a);
            HR(X, "cudaLaunchHostFunc_ptsz", r, 0);
            break;
        }
        break;
    }
    case OP_MALLOC:
        exec_malloc(X, o);
        break;
    case OP_FREE:
        exec_free(X, o);
        break;
    case OP_STREAM_CREATE: {
        const gstream_t *g = &P->st[o->s];
        cudaStream_t h = NULL;
        unsigned fl = g->kind == SK_NONBLOCK ? cudaStreamNonBlocking : cudaStreamDefault;
        switch (o->api) {
        case 0:
            if (fl) {
                r = cudaStreamCreateWithFlags(&h, fl);
                HR(X, "cudaStreamCreateWithFlags", r, 0);
            } else {
                r = cudaStreamCreate(&h);
                HR(X, "cudaStreamCreate", r, 0);
            }
            break;
        case 1:
            r = cudaStreamCreateWithFlags(&h, fl);
            HR(X, "cudaStreamCreateWithFlags", r, 0);
            break;
        case 2:
            r = cudaStreamCreateWithPriority(&h, fl, g->prio);
            HR(X, "cudaStreamCreateWithPriority", r, 0);
            break;
        default:
            if (o->id & 1) {
                r = cuStreamCreate((CUstream *)&h, fl ? CU_STREAM_NON_BLOCKING : CU_STREAM_DEFAULT);
                HR(X, "cuStreamCreate", r, 0);
            } else {
                r = cuStreamCreateWithPriority((CUstream *)&h, fl ? CU_STREAM_NON_BLOCKING : CU_STREAM_DEFAULT,
                                               g->prio);
                HR(X, "cuStreamCreateWithPriority", r, 0);
            }
            break;
        }
        R->st[o->s] = h;
        break;
    }
    case OP_STREAM_DESTROY:
        r = o->api ? cuStreamDestroy((CUstream)R->st[o->s]) : cudaStreamDestroy(R->st[o->s]);
        HR(X, o->api ? "cuStreamDestroy" : "cudaStreamDestroy", r, 0);
        R->st[o->s] = NULL;
        break;
    case OP_EVENT_CREATE: {
        cudaEvent_t e = NULL;
        unsigned fl = (unsigned)P->ev[o->e].flags;
        switch (o->api) {
        case 0:
            if (fl) {
                r = cudaEventCreateWithFlags(&e, fl);
                HR(X, "cudaEventCreateWithFlags", r, 0);
            } else {
                r = cudaEventCreate(&e);
                HR(X, "cudaEventCreate", r, 0);
            }
            break;
        case 1:
            r = cudaEventCreateWithFlags(&e, fl);
            HR(X, "cudaEventCreateWithFlags", r, 0);
            break;
        default:
            r = cuEventCreate((CUevent *)&e, fl);
            HR(X, "cuEventCreate", r, 0);
            break;
        }
        R->ev[o->e] = e;
        break;
    }
    case OP_EVENT_DESTROY:
        r = o->api ? cuEventDestroy((CUevent)R->ev[o->e]) : cudaEventDestroy(R->ev[o->e]);
        HR(X, o->api ? "cuEventDestroy" : "cudaEventDestroy", r, 0);
        R->ev[o->e] = NULL;
        break;
    case OP_FUNC_ATTR: {
        int cls = o->api == 1 ? 1 : o->api == 2 ? 2 : 0;
        switch (o->api) {
        case 0:
            r = cudaFuncSetAttribute((const void *)KD[o->k].fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     (int)o->x);
            HR(X, "cudaFuncSetAttribute", r, o->x <= SHMEM_OPTIN ? 0 : 1);
            break;
        case 1:
            r = cuFuncSetAttribute(R->fmod[o->k], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)o->x);
            HR(X, "cuFuncSetAttribute(module)", r, o->x <= SHMEM_OPTIN ? 0 : 1);
            break;
        case 2:
            r = cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)o->x, R->klib[o->k], 0);
            HR(X, "cuKernelSetAttribute(library)", r, o->x <= SHMEM_OPTIN ? 0 : 1);
            break;
        default:
            r = cuFuncSetAttribute(R->frt[o->k], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)o->x);
            HR(X, "cuFuncSetAttribute(runtime)", r, o->x <= SHMEM_OPTIN ? 0 : 1);
            break;
        }
        if (r == 0)
            R->limit[cls][o->k] = o->x;
        break;
    }
    case OP_CAPTURE:
        exec_capture(X, o, it);
        break;
    case OP_GRAPH_BUILD:
        exec_graph_build(X, o, it);
        break;
    case OP_GRAPH_SETPARAM:
        exec_setparam(X, o, it);
        break;
    case OP_GRAPH_LAUNCH:
        if (o->api) {
            r = cuGraphLaunch((CUgraphExec)R->gexec[o->slot], hcu(X, o, s));
            HR(X, "cuGraphLaunch", r, 0);
        } else {
            r = cudaGraphLaunch(R->gexec[o->slot], hs(X, o, s));
            HR(X, "cudaGraphLaunch", r, 0);
        }
        break;
    case OP_WRITE_VALUE:
    case OP_WAIT_VALUE: {
        u32 *addr = R->buf[o->b[0]] + o->slot;
        u32 v = flag_value(o, it);
        int wr = o->kind == OP_WRITE_VALUE;
        unsigned fl = wr ? 0u : (unsigned)CU_STREAM_WAIT_VALUE_GEQ;
        switch (o->api) {
        case 0:
            r = wr ? cuStreamWriteValue32(hcu(X, o, s), DP(addr), v, fl)
                   : cuStreamWaitValue32(hcu(X, o, s), DP(addr), v, fl);
            HR(X, wr ? "cuStreamWriteValue32" : "cuStreamWaitValue32", r, 0);
            break;
        case 1: {
            pfn_value_t f = wr ? R->write32 : R->wait32;
            if (!f)
                f = wr ? cuStreamWriteValue32 : cuStreamWaitValue32;
            r = f(hcu(X, o, s), DP(addr), v, fl);
            HR(X, wr ? "cuStreamWriteValue32(proc)" : "cuStreamWaitValue32(proc)", r, 0);
            break;
        }
        default: {
            CUstreamBatchMemOpParams p;
            memset(&p, 0, sizeof(p));
            if (wr) {
                p.writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
                p.writeValue.address = DP(addr);
                p.writeValue.value = v;
                p.writeValue.flags = fl;
            } else {
                p.waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
                p.waitValue.address = DP(addr);
                p.waitValue.value = v;
                p.waitValue.flags = fl;
            }
            r = cuStreamBatchMemOp(hcu(X, o, s), 1, &p, 0);
            HR(X, "cuStreamBatchMemOp", r, 0);
            break;
        }
        }
        if (!wr && (o->flags & 1))
            __atomic_store_n(addr, v, __ATOMIC_RELEASE);
        break;
    }
    case OP_HOST_WRITE: {
        u32 *p = R->buf[o->b[0]] + o->off;
        u32 x = r_x(o, it);
        for (int i = 0; i < o->len; i++)
            p[i] = x + (u32)i * o->y;
        break;
    }
    case OP_HOST_READ: {
        int b = r_b(o, 0, it);
        HB(X, BKN[P->buf[b].kind], R->buf[b] + o->off, (size_t)o->len * 4);
        break;
    }
    case OP_READBACK: {
        int b = r_b(o, 0, it);
        u32 *src = R->buf[b] + o->off;
        size_t n = (size_t)o->len * 4;
        memset(X->scratch, 0xa5, n);
        switch (o->api) {
        case 0:
            r = cudaMemcpy(X->scratch, src, n, cudaMemcpyDeviceToHost);
            HR(X, "cudaMemcpy(D2H)", r, 0);
            break;
        case 1:
            r = cuMemcpyDtoH(X->scratch, DP(src), n);
            HR(X, "cuMemcpyDtoH", r, 0);
            break;
        case 2:
            r = cudaMemcpyAsync(X->scratch, src, n, cudaMemcpyDeviceToHost, hs(X, o, s));
            HR(X, "cudaMemcpyAsync(D2H pageable)", r, 0);
            break;
        case 3:
            r = cudaMemcpy_ptds(X->scratch, src, n, cudaMemcpyDeviceToHost);
            HR(X, "cudaMemcpy_ptds(D2H)", r, 0);
            break;
        default:
            r = cuMemcpyDtoHAsync(X->scratch, DP(src), n, hcu(X, o, s));
            HR(X, "cuMemcpyDtoHAsync(pageable)", r, 0);
            break;
        }
        HB(X, BKN[P->buf[b].kind], X->scratch, n);
        break;
    }
    case OP_ERR:
        exec_err(X, o, it);
        break;
    case OP_LAST_ERROR:
        r = o->api ? cudaPeekAtLastError() : cudaGetLastError();
        HR(X, o->api ? "cudaPeekAtLastError" : "cudaGetLastError", r, 2);
        break;
    case OP_CLEAR_ERROR:
        (void)cudaGetLastError();
        break;
    case OP_INFO:
        exec_info(X, o, it);
        break;
    case OP_SYMBOL: {
        size_t n = (size_t)o->len * 4, off = (size_t)o->off * 4;
        switch (o->api) {
        case 0:
            r = cudaMemcpyToSymbol(g_sym, R->buf[o->b[1]] + o->off2, n, off, cudaMemcpyHostToDevice);
            HR(X, "cudaMemcpyToSymbol", r, 0);
            break;
        case 1: {
            int sb = r_b(o, 1, it);
            r = cudaMemcpyToSymbolAsync(g_sym, R->buf[sb] + o->off2, n, off,
                                        is_hostside(P, sb) ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToDevice,
                                        hs(X, o, s));
            HR(X, "cudaMemcpyToSymbolAsync", r, 0);
            break;
        }
        case 2:
            r = cudaMemcpyFromSymbol(X->scratch, g_sym, n, off, cudaMemcpyDeviceToHost);
            HR(X, "cudaMemcpyFromSymbol", r, 0);
            HB(X, "symbol", X->scratch, n);
            break;
        default: {
            int db = r_b(o, 0, it);
            r = cudaMemcpyFromSymbolAsync(R->buf[db] + o->off2, g_sym, n, off,
                                          is_hostside(P, db) ? cudaMemcpyDeviceToHost : cudaMemcpyDeviceToDevice,
                                          hs(X, o, s));
            HR(X, "cudaMemcpyFromSymbolAsync", r, 0);
            break;
        }
        }
        break;
    }
    case OP_WORKER_START: {
        xctx_t *W = calloc(1, sizeof(*W));
        if (!W)
            exit(2);
        W->R = R;
        W->th = 1;
        W->h = FNV0;
        W->trace = X->trace;
        W->check = X->check;
        W->scratch = calloc((size_t)P->N + 64, 4);
        R->wx = W;
        if (pthread_create(&R->worker, NULL, worker_main, W)) {
            fprintf(stderr, "fuzz: pthread_create failed\n");
            exit(2);
        }
        break;
    }
    case OP_WORKER_JOIN: {
        pthread_join(R->worker, NULL);
        xctx_t *W = R->wx;
        X->h = fnv(X->h, &W->h, sizeof(W->h));
        if (X->trace)
            printf("    m joined the worker: %016" PRIx64 "\n", W->h);
        while (W->arena) {
            arena_t *n = W->arena->next;
            free(W->arena);
            W->arena = n;
        }
        free(W->scratch);
        free(W);
        R->wx = NULL;
        break;
    }
    case OP_PROCADDR:
        proc_lookup(X, o->api, "cuMemsetD16Async", (void **)&R->memset16);
        proc_lookup(X, o->api, "cuMemsetD32Async", (void **)&R->memset32);
        proc_lookup(X, o->api, "cuStreamWriteValue32", (void **)&R->write32);
        proc_lookup(X, o->api, "cuStreamWaitValue32", (void **)&R->wait32);
        proc_lookup(X, o->api, "cuSimFutureMemset", (void **)&R->future);
        break;
    case OP_MODULE:
        if (o->api == 0) {
            static char image[256];
            if (!image[0]) {
                strcpy(image, "sim:");
                for (int k = 0; k < NKERN; k++) {
                    strcat(image, KD[k].name);
                    if (k + 1 < NKERN)
                        strcat(image, ",");
                }
            }
            r = cuModuleLoadData(&R->mod, image);
            HR(X, "cuModuleLoadData", r, 0);
            r = cuLibraryLoadData(&R->lib, image, NULL, NULL, 0, NULL, NULL, 0);
            HR(X, "cuLibraryLoadData", r, 0);
            for (int k = 0; k < NKERN; k++) {
                r = (o->id + k) & 1 ? cudaGetKernel(&R->kh[k], (const void *)KD[k].fn)
                                    : __cudaGetKernel(&R->kh[k], (const void *)KD[k].fn);
                HR(X, "cudaGetKernel", r, 0);
                r = cuKernelGetFunction(&R->frt[k], (CUkernel)(void *)R->kh[k]);
                HR(X, "cuKernelGetFunction(runtime)", r, 0);
                r = cuModuleGetFunction(&R->fmod[k], R->mod, KD[k].name);
                HR(X, "cuModuleGetFunction", r, 0);
                r = cuLibraryGetKernel(&R->klib[k], R->lib, KD[k].name);
                HR(X, "cuLibraryGetKernel", r, 0);
                r = cuKernelGetFunction(&R->flibf[k], R->klib[k]);
                HR(X, "cuKernelGetFunction(library)", r, 0);
            }
        } else {
            for (int g = 0; g < MAXG; g++) {
                if (R->gexec[g]) {
                    r = (o->id + g) & 1 ? cuGraphExecDestroy((CUgraphExec)R->gexec[g])
                                        : cudaGraphExecDestroy(R->gexec[g]);
                    HR(X, "cudaGraphExecDestroy", r, 0);
                    R->gexec[g] = NULL;
                }
                if (R->graph[g]) {
                    r = cudaGraphDestroy(R->graph[g]);
                    HR(X, "cudaGraphDestroy", r, 0);
                    R->graph[g] = NULL;
                }
            }
            for (int i = 0; i < R->ntexec; i++) {
                r = cudaGraphExecDestroy(R->texec[i]);
                HR(X, "cudaGraphExecDestroy", r, 0);
            }
            R->ntexec = 0;
            r = cuModuleUnload(R->mod);
            HR(X, "cuModuleUnload", r, 0);
            r = cuLibraryUnload(R->lib);
            HR(X, "cuLibraryUnload", r, 0);
        }
        break;
    default:
        break;
    }
}

/* FUZZ_PAUSES=N: before every Nth op, cgraft off, or on again. */
static int g_pause_every;
static int (*g_pause_set)(int);
static long g_pause_ops;
static pthread_once_t g_pause_once = PTHREAD_ONCE_INIT;

static void pause_init(void)
{
    const char *v = getenv("FUZZ_PAUSES");
    g_pause_every = v ? atoi(v) : 0;
    if (g_pause_every > 0)
        g_pause_set = (int (*)(int))dlsym(RTLD_DEFAULT, "cgraft_set_enabled");
}

static void maybe_pause(void)
{
    pthread_once(&g_pause_once, pause_init);
    if (!g_pause_set)
        return;
    long k = __atomic_add_fetch(&g_pause_ops, 1, __ATOMIC_RELAXED);
    if (k % g_pause_every == 0)
        g_pause_set(k / g_pause_every % 2 == 0);
}

static void exec_section(xctx_t *X, int sec, int it)
{
    const seq_t *q = &X->R->P->sec[sec];
    X->sec = sec;
    X->it = it;
    for (int i = 0; i < q->n; i++) {
        if (pred(&q->v[i], it)) {
            X->sec = sec;
            maybe_pause();
            exec_op(X, &q->v[i], it);
        }
    }
}

static void *worker_main(void *p)
{
    xctx_t *X = p;
    const prog_t *P = X->R->P;
    exec_section(X, SEC_WSETUP, 0);
    for (int it = 0; it < P->witers; it++)
        exec_section(X, SEC_WBODY, it);
    exec_section(X, SEC_WTEAR, 0);
    return NULL;
}

/* ------------------------------------------------------------------ dump */

static void dump_stream(const prog_t *P, char *b, size_t n, int s)
{
    if (s < 0)
        snprintf(b, n, "-");
    else if (s == SL_LEGACY)
        snprintf(b, n, "legacy");
    else if (s == SL_PTDS || s == SL_WPTDS)
        snprintf(b, n, "ptds");
    else
        snprintf(b, n, "s%d%s", s, P->st[s].temp ? "(temp)" : "");
}

static void dump_op(const prog_t *P, const op_t *o, const char *indent)
{
    char s1[32], s2[32];
    dump_stream(P, s1, sizeof(s1), o->s);
    printf("%s#%-4d %-14s api=%d", indent, o->id, OPN[o->kind], o->api);
    if (o->wmod > 0)
        printf(" [it%%%d==%d]", o->wmod, o->wrem);
    else if (o->wmod < 0)
        printf(" [it==%d]", o->wrem);
    if (o->s >= 0) {
        printf(" stream=%s", s1);
        if (o->s2 >= 0) {
            dump_stream(P, s2, sizeof(s2), o->s2);
            printf("|%s", s2);
        }
    }
    if (o->e >= 0) {
        printf(" event=e%d", o->e);
        if (o->e2 >= 0)
            printf("|e%d", o->e2);
    }
    for (int i = 0; i < 3; i++)
        if (o->b[i] >= 0) {
            printf(" b%d=%d(%s)", i, o->b[i], BKN[P->buf[o->b[i]].kind]);
            if (o->b2[i] >= 0)
                printf("|%d", o->b2[i]);
        }
    switch (o->kind) {
    case OP_KERNEL:
        printf(" k=%s grid=%dx%d%s block=%d shmem=%d len=%d x=%#x%s y=%#x fsrc=%d%s", KD[o->k].name, o->gx, o->gy,
               o->gvar ? "(+it%v)" : "", o->bx, o->shmem, o->len, o->x, o->xvar ? "(varies)" : "", o->y, o->fsrc,
               o->attr ? " priority" : "");
        break;
    case OP_MEMCPY_ASYNC: case OP_MEMCPY: case OP_MEMSET_ASYNC: case OP_MEMSET: case OP_READBACK:
    case OP_HOST_READ: case OP_HOST_WRITE: case OP_SYMBOL: case OP_MEMCPY_BATCH:
        printf(" off=%d off2=%d len=%d x=%#x%s", o->off, o->off2, o->len, o->x, o->xvar ? "(varies)" : "");
        break;
    case OP_MEMCPY2D_ASYNC: case OP_MEMCPY2D: case OP_MEMSET2D_ASYNC:
        printf(" off=%d off2=%d %dx%d pitch=%d,%d", o->off, o->off2, o->w, o->h, o->pd, o->ps);
        break;
    case OP_MEMCPY3D_ASYNC: case OP_MEMCPY3D:
        printf(" off=%d off2=%d %dx%dx%d pitch=%d,%d rows=%d", o->off, o->off2, o->w, o->h, o->d, o->pd, o->ps,
               o->ysz);
        break;
    case OP_HOSTFN:
        printf(" hostvar=%d tag=%#x%s", o->slot, o->x, o->xvar ? "(varies)" : "");
        break;
    case OP_FUNC_ATTR:
        printf(" k=%s max_dynamic_shared=%u", KD[o->k].name, o->x);
        break;
    case OP_CAPTURE:
        dump_stream(P, s2, sizeof(s2), o->sl);
        printf(" fork=%d mode=%d graph-slot=%d launches=%d on %s", o->s3, o->flags % 3, o->slot, o->nlaunch, s2);
        break;
    case OP_GRAPH_LAUNCH:
        printf(" graph-slot=%d", o->slot);
        break;
    case OP_GRAPH_BUILD:
        dump_stream(P, s2, sizeof(s2), o->sl);
        printf(" graph-slot=%d launches=%d on %s%s%s", o->slot, o->nlaunch, s2, (o->flags & 1) ? " upload" : "",
               (o->flags & 2) ? " priority" : "");
        break;
    case OP_GRAPH_SETPARAM:
        printf(" graph-slot=%d node=%u k=%s x=%#x+it*%#x", o->slot, o->z, KD[o->k].name, o->x, o->y);
        break;
    case OP_WRITE_VALUE: case OP_WAIT_VALUE:
        printf(" word=%d value=%#x+it%s", o->slot, o->x, (o->flags & 1) ? " host-signalled" : "");
        break;
    case OP_ERR:
        printf(" (invalid call %d)", o->api);
        break;
    default:
        break;
    }
    printf("\n");
    if (o->kind == OP_CAPTURE || o->kind == OP_GRAPH_BUILD)
        for (int i = 0; i < P->sec[o->sec].n; i++)
            dump_op(P, &P->sec[o->sec].v[i], "        | ");
}

static void dump_program(const prog_t *P)
{
    printf("program seed=%" PRIu64 " N=%d W=%d iters=%d worker=%d witers=%d fixes=%d passes=%d\n", P->seed, P->N,
           P->W, P->iters, P->worker, P->witers, P->nfix, P->passes);
    for (int s = SL_FIRST; s < P->nst; s++)
        printf("  stream s%d: %s%s owner=%d prio=%d\n", s, SKN[P->st[s].kind], P->st[s].temp ? " temp" : "",
               P->st[s].owner, P->st[s].prio);
    for (int b = 0; b < P->nbuf; b++)
        printf("  buffer %d: %s n=%d%s owner=%d\n", b, BKN[P->buf[b].kind], P->buf[b].n, P->buf[b].temp ? " temp" : "",
               P->buf[b].owner);
    for (int e = 0; e < P->nev; e++)
        printf("  event e%d: flags=%d owner=%d%s%s\n", e, P->ev[e].flags, P->ev[e].owner, P->ev[e].temp ? " temp" : "",
               P->ev[e].role == 1 ? " (fixes)" : P->ev[e].role == 2 ? " (captures)" : P->ev[e].role == 3 ? " (fix)" : "");
    for (int sec = 0; sec < SEC_CAP0; sec++) {
        if (!P->sec[sec].n)
            continue;
        if (sec == SEC_BODY)
            printf("[body] x %d iterations\n", P->iters);
        else if (sec == SEC_WBODY)
            printf("[worker body] x %d iterations\n", P->witers);
        else
            printf("[%s]\n", SECN[sec]);
        for (int i = 0; i < P->sec[sec].n; i++)
            dump_op(P, &P->sec[sec].v[i], "    ");
    }
    fflush(stdout);
}

/* ------------------------------------------------------------------ main */

/* For minimising a failure: FUZZ_DROP=id,id,... removes those template ops
 * and FUZZ_ITERS / FUZZ_WITERS change the iteration counts, before the fixer
 * makes the program deterministic again (a program that no longer makes
 * sense stops as a generator bug, exit status 3). */
static void apply_edits(prog_t *P)
{
    const char *it = getenv("FUZZ_ITERS"), *wit = getenv("FUZZ_WITERS"), *drop = getenv("FUZZ_DROP");
    if (it && *it)
        P->iters = atoi(it);
    if (wit && *wit)
        P->witers = atoi(wit);
    while (drop && *drop) {
        char *end;
        long id = strtol(drop, &end, 10);
        if (end == drop)
            break;
        for (int sec = 0; sec < MAXSEC; sec++) {
            seq_t *q = &P->sec[sec];
            int k = 0;
            for (int i = 0; i < q->n; i++) {
                const op_t *o = &q->v[i];
                /* The fixer's own events stay: another fixer run may need them. */
                int infra = (o->kind == OP_EVENT_CREATE || o->kind == OP_EVENT_DESTROY) && o->e < E_FIRST;
                if (o->id != id || infra)
                    q->v[k++] = *o;
            }
            q->n = k;
        }
        drop = *end ? end + 1 : end;
    }
}

static void make_program(prog_t *P, u64 seed)
{
    gen_program(P, seed);
    apply_edits(P);
    fix_program(P);
}

static u64 run_program(u64 seed, int dump, int trace, int check)
{
    prog_t P;
    make_program(&P, seed);
    if (dump)
        dump_program(&P);
    rt_t *R = calloc(1, sizeof(*R));
    if (!R)
        exit(2);
    R->P = &P;
    for (int c = 0; c < 3; c++)
        for (int k = 0; k < NKERN; k++)
            R->limit[c][k] = SHMEM_DEFAULT;
    xctx_t X;
    memset(&X, 0, sizeof(X));
    X.R = R;
    X.h = FNV0;
    X.trace = trace;
    X.check = check;
    X.scratch = calloc((size_t)P.N + 64, 4);
    if (!X.scratch)
        exit(2);
    exec_section(&X, SEC_SETUP, 0);
    for (int it = 0; it < P.iters; it++)
        exec_section(&X, SEC_BODY, it);
    exec_section(&X, SEC_TEAR, 0);
    while (X.arena) {
        arena_t *n = X.arena->next;
        free(X.arena);
        X.arena = n;
    }
    free(X.scratch);
    free(R->texec);
    free(R);
    prog_free(&P);
    return X.h;
}

int main(int argc, char **argv)
{
    int dump = 0, trace = 0, genonly = 0;
    const char *pos[2] = { NULL, NULL };
    int npos = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--dump"))
            dump = 1;
        else if (!strcmp(argv[i], "--trace"))
            trace = 1;
        else if (!strcmp(argv[i], "--gen-only"))
            genonly = 1;
        else if (npos < 2)
            pos[npos++] = argv[i];
    }
    if (npos < 1) {
        fprintf(stderr, "usage: %s SEED [COUNT] [--dump] [--trace] [--gen-only]\n", argv[0]);
        return 2;
    }
    u64 seed = strtoull(pos[0], NULL, 10);
    long count = pos[1] ? strtol(pos[1], NULL, 10) : 1;
    const char *ck = getenv("FUZZ_CHECK");
    int check = ck && *ck && strcmp(ck, "0");
    if (genonly) {
        long ops = 0, fixes = 0;
        for (long i = 0; i < count; i++) {
            prog_t P;
            make_program(&P, seed + (u64)i);
            if (dump)
                dump_program(&P);
            for (int s = 0; s < MAXSEC; s++)
                ops += P.sec[s].n;
            fixes += P.nfix;
            prog_free(&P);
        }
        printf("generated %ld programs, %ld template ops, %ld fixes\n", count, ops, fixes);
        return 0;
    }
    register_kernels();
    for (long i = 0; i < count; i++) {
        u64 s = seed + (u64)i;
        u64 h = run_program(s, dump, trace, check);
        printf("seed %" PRIu64 " %016" PRIx64 "\n", s, h);
        fflush(stdout);
    }
    return 0;
}
