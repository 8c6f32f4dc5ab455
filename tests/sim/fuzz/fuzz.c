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
 * return code and the running digest; FUZZ_CHECK=1 makes the program stop at a
 * call whose result the generator did not expect (a generator bug).
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

enum { KN_AXPB, KN_MIX, KN_ACC, KN_REDUCE, KN_ROT, KN_NOPARAM, KN_SHMEM, KN_MANY, NKERN };

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
    X(LAST_ERROR) X(INFO) X(SYMBOL) X(WORKER_START) X(WORKER_JOIN) X(PROCADDR) X(MODULE) X(CLEAR_ERROR)
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
