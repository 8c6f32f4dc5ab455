/* Internal interface of the simulated device core (simcore.c), shared by the
 * driver face (simdrv.c) and the runtime face (simrt.c). */
#ifndef SIM_I_H
#define SIM_I_H

#include <stddef.h>
#include <stdint.h>
#include <cuda.h>
#include "sim.h"

#define SIM_API __attribute__((visibility("default")))
#define SIM_MAXDEV 8
#define SIM_MAXPARAMS 64
/* Dynamic shared memory a kernel may use: by default, and at most after
 * raising its limit (what an H100/H200 allows). */
#define SIM_SHMEM_DEFAULT (48u * 1024u)
#define SIM_SHMEM_OPTIN (227u * 1024u)

/* Where a host address lives, as the copy engine must know it. Pinned,
 * registered and managed memory are all device-accessible under UVA and are
 * read when the work runs; pageable sources are staged at call time. */
enum sim_memkind {
    SIM_MEM_PAGEABLE = 0, SIM_MEM_DEVICE = 1, SIM_MEM_PINNED = 2, SIM_MEM_REGISTERED = 3, SIM_MEM_MANAGED = 4
};

enum sim_workkind {
    SIM_W_NOP, SIM_W_KERNEL, SIM_W_COPY, SIM_W_SET, SIM_W_HOST, SIM_W_CALLBACK,
    SIM_W_EVREC, SIM_W_EVWAIT, SIM_W_FREE,
    SIM_W_WRITEVAL,                   /* stream memory op: store value64 (elem 4 or 8 bytes) at dst */
    SIM_W_WAITVAL,                    /* ready only while the condition memflags holds at dst */
    SIM_W_GRAPH                       /* child graph node; flattened at instantiation */
};

struct CUkern_st {
    uint32_t magic;
    sim_kernel_fn fn;
    char name[64];
    int nparams;
    size_t size[SIM_MAXPARAMS], off[SIM_MAXPARAMS];
    size_t argsz;
    unsigned maxdyn[SIM_MAXDEV];      /* dynamic shared memory limit by device, 0: default */
    unsigned updater;                 /* cgraft's updater: its blob's bytes; 0 for others */
    struct CUkern_st *next;
};

/* One piece of device work; the same payload serves ops, graph nodes and
 * instantiated graphs so that copying it is the only way params travel. */
typedef struct sim_work {
    int kind;
    struct CUkern_st *k;
    sim_launch launch;
    unsigned char *args;
    void *dst;
    const void *src;
    size_t dpitch, spitch, width, height;
    size_t depth, dslice, sslice;     /* 3D copies and sets; depth 0 means 1 */
    void *snap;                       /* owned staging copy of a pageable source */
    unsigned value, elem;
    uint64_t value64;                 /* stream memory ops */
    unsigned memflags;
    void (*hostfn)(void *);
    void *user;
    CUstreamCallback cb;
    CUstream cbstream;
    CUevent ev;
    void *freeptr;
    CUgraph child;                    /* owned copy of a child graph */
    /* A copy or memset in a graph: the allocations its addresses lay in when
     * it was added or updated (0: none CUDA knows, pageable memory). As the
     * driver does, it holds those: freed, even allocated again at the same
     * address, its launch is refused. */
    unsigned long long salloc, dalloc;
    unsigned char devupd;             /* a device-updatable kernel node */
} sim_work;

/* What the allocation table knows about an address. */
typedef struct sim_meminfo {
    int kind, device;
    CUcontext ctx;
    char *base;
    size_t size;
    unsigned flags;                   /* cudaHostAlloc / cuMemHostRegister flags */
    unsigned long long id;
} sim_meminfo;

/* Stream handles are normalised with this flag: NULL means the per-thread
 * stream in _ptsz entry points and the legacy stream elsewhere. */
SIM_API void simc_tick(void);
SIM_API int simc_device_count(void);
SIM_API int simc_get_device(void);
SIM_API CUresult simc_set_device(int dev);

/* Contexts: a primary one per device (the runtime's), and created ones. A
 * thread's current context is the top of its stack, else the primary context
 * of the device it last selected. NULL arguments mean the current context. */
SIM_API CUresult simc_ctx_create(CUcontext *out, unsigned flags, int dev);
SIM_API CUresult simc_ctx_destroy(CUcontext c);
SIM_API CUresult simc_ctx_push(CUcontext c);
SIM_API CUresult simc_ctx_pop(CUcontext *out);
SIM_API CUresult simc_ctx_get_current(CUcontext *out);
SIM_API CUresult simc_ctx_set_current(CUcontext c);
SIM_API CUresult simc_ctx_get_device(CUcontext c, int *dev);
SIM_API CUresult simc_ctx_info(CUcontext c, unsigned long long *id, unsigned *flags);
SIM_API CUresult simc_ctx_sync(CUcontext c);
SIM_API CUresult simc_primary_retain(CUcontext *out, int dev);
SIM_API CUresult simc_primary_release(int dev);
SIM_API CUresult simc_primary_reset(int dev);
SIM_API CUresult simc_primary_state(int dev, unsigned *flags, int *active);
SIM_API CUresult simc_primary_set_flags(int dev, unsigned flags);
/* The primary context of dev, NULL for no such device (what the runtime uses). */
SIM_API CUcontext simc_primary(int dev);

SIM_API struct CUkern_st *simc_kernel_lookup(const void *fn_or_handle);
SIM_API CUresult simc_param_info(const void *fn_or_handle, size_t idx, size_t *off, size_t *size);
SIM_API CUresult simc_work_kernel(sim_work *w, const void *f, sim_launch l, void **params, void **extra);
SIM_API void simc_work_free(sim_work *w);
SIM_API CUresult simc_work_copy(sim_work *to, const sim_work *from);

/* Modules and libraries of "sim:name1,name2" images; their function and
 * kernel handles are their own objects, reused after unloading. */
SIM_API CUresult simc_module_load(CUmodule *out, const void *image);
SIM_API CUresult simc_module_unload(CUmodule m);
SIM_API CUresult simc_module_get_function(CUfunction *out, CUmodule m, const char *name);
SIM_API CUresult simc_func_get_module(CUmodule *out, CUfunction f);
SIM_API CUresult simc_library_load(CUlibrary *out, const void *image);
SIM_API CUresult simc_library_unload(CUlibrary l);
SIM_API CUresult simc_library_get_kernel(CUkernel *out, CUlibrary l, const char *name);
SIM_API CUresult simc_kernel_get_function(CUfunction *out, CUkernel k);
SIM_API CUresult simc_kernel_get_library(CUlibrary *out, CUkernel k);
/* Reads (get) or writes (set) a CUfunction_attribute of any kernel handle;
 * dev < 0 means the current device. */
SIM_API CUresult simc_func_attr(const void *f, int dev, int attr, int *get, const int *set);

SIM_API CUresult simc_submit(CUstream s, int ptsz, sim_work *w);
SIM_API CUresult simc_copy(CUstream s, int ptsz, sim_work *w, int blocking);
SIM_API CUresult simc_memcpy(CUstream s, int ptsz, void *dst, size_t dpitch, const void *src,
                             size_t spitch, size_t width, size_t height, int blocking);
SIM_API CUresult simc_memset(CUstream s, int ptsz, void *dst, size_t pitch, unsigned value,
                             unsigned elem, size_t width, size_t height, int blocking);
SIM_API CUresult simc_memset3d(CUstream s, int ptsz, void *dst, size_t pitch, size_t slice, unsigned value,
                               unsigned elem, size_t width, size_t height, size_t depth, int blocking);
/* kind SIM_W_WRITEVAL, SIM_W_WAITVAL or SIM_W_NOP (barrier); size 4 or 8. */
SIM_API CUresult simc_memop(CUstream s, int ptsz, int kind, void *addr, uint64_t value, unsigned size,
                            unsigned flags);

SIM_API CUresult simc_stream_create(CUstream *out, unsigned flags, int prio);
SIM_API CUresult simc_stream_destroy(CUstream s);
SIM_API CUresult simc_stream_get_flags(CUstream s, int ptsz, unsigned *flags);
SIM_API CUresult simc_stream_get_priority(CUstream s, int ptsz, int *prio);
SIM_API CUresult simc_stream_get_ctx(CUstream s, int ptsz, CUcontext *ctx);
SIM_API CUresult simc_stream_sync(CUstream s, int ptsz);
SIM_API CUresult simc_stream_query(CUstream s, int ptsz);
SIM_API CUresult simc_stream_wait_event(CUstream s, int ptsz, CUevent e);
SIM_API CUresult simc_sync_all(void);

SIM_API CUresult simc_event_create(CUevent *out, unsigned flags);
SIM_API CUresult simc_event_destroy(CUevent e);
SIM_API CUresult simc_event_record(CUevent e, CUstream s, int ptsz);
SIM_API CUresult simc_event_query(CUevent e);
SIM_API CUresult simc_event_sync(CUevent e);
SIM_API CUresult simc_event_elapsed(float *ms, CUevent a, CUevent b);

/* kind SIM_MEM_DEVICE, SIM_MEM_PINNED or SIM_MEM_MANAGED. */
SIM_API CUresult simc_malloc(void **p, size_t n, int kind, unsigned flags);
SIM_API CUresult simc_free(void *p, int kind);
/* Stream-ordered allocation of kind SIM_MEM_DEVICE, or SIM_MEM_PINNED (a
 * host-located pool's). */
SIM_API CUresult simc_malloc_async(void **p, size_t n, CUstream s, int ptsz, int kind);
SIM_API CUresult simc_free_async(void *p, CUstream s, int ptsz);
SIM_API CUresult simc_host_register(void *p, size_t n, unsigned flags);
SIM_API CUresult simc_host_unregister(void *p);
/* Memory of kind SIM_MEM_DEVICE or SIM_MEM_PINNED mapped at [p, p + n), or,
 * with kind SIM_MEM_PAGEABLE, what was mapped in that range unmapped. */
SIM_API CUresult simc_mapped(void *p, size_t n, int kind);
SIM_API int simc_mem_kind(const void *p, int *device);
/* Fills info (kind SIM_MEM_PAGEABLE when p is in no allocation); returns the kind. */
SIM_API int simc_mem_query(const void *p, sim_meminfo *info);
/* The current context's copy of a registered symbol. */
SIM_API CUresult simc_symbol(const void *sym, void **dev, size_t *size);

SIM_API CUresult simc_capture_begin(CUstream s, int ptsz, int mode, CUgraph into, const CUgraphNode *deps,
                                    size_t ndeps);
SIM_API CUresult simc_capture_end(CUstream s, int ptsz, CUgraph *g);
SIM_API CUresult simc_capture_info(CUstream s, int ptsz, CUstreamCaptureStatus *st,
                                   cuuint64_t *id, CUgraph *g, const CUgraphNode **deps,
                                   size_t *ndeps);
SIM_API CUresult simc_capture_exchange_mode(int *mode);

SIM_API CUresult simc_graph_create(CUgraph *g);
SIM_API CUresult simc_graph_destroy(CUgraph g);
SIM_API CUresult simc_graph_clone(CUgraph *out, CUgraph g);
SIM_API CUresult simc_graph_add(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n,
                                sim_work *w);
/* A child graph node holding a copy of child. */
SIM_API CUresult simc_graph_add_child(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n,
                                      CUgraph child);
SIM_API CUresult simc_graph_add_deps(CUgraph g, const CUgraphNode *from, const CUgraphNode *to, size_t n);
SIM_API CUresult simc_graph_get_nodes(CUgraph g, CUgraphNode *nodes, size_t *n);
SIM_API CUresult simc_graph_instantiate(CUgraphExec *out, CUgraph g);
SIM_API CUresult simc_exec_destroy(CUgraphExec e);
SIM_API CUresult simc_exec_set(CUgraphExec e, CUgraphNode node, int kind, sim_work *w);
SIM_API CUresult simc_exec_update(CUgraphExec e, CUgraph g, CUgraphNode *err);
SIM_API CUresult simc_graph_launch(CUgraphExec e, CUstream s, int ptsz);
SIM_API int simc_node_kind(CUgraphNode n);
/* A kernel node made device-updatable (once made, it stays so); whether it is. */
SIM_API CUresult simc_node_set_devupd(CUgraphNode n, int on);
SIM_API int simc_node_devupd(CUgraphNode n);
/* An exec's node enabled or disabled (a disabled node does nothing). */
SIM_API CUresult simc_exec_enable(CUgraphExec e, CUgraphNode n, int on);
/* An exec uploaded: one whose updater changes its nodes must be, before its launch. */
SIM_API CUresult simc_exec_upload(CUgraphExec e);
/* A kernel node's launch shape; CUDA_ERROR_INVALID_VALUE for other nodes. */
SIM_API CUresult simc_node_launch(CUgraphNode n, sim_launch *l);

#endif
