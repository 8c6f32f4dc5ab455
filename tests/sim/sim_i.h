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

/* Where a host address lives, as the copy engine must know it. */
enum sim_memkind { SIM_MEM_PAGEABLE = 0, SIM_MEM_DEVICE = 1, SIM_MEM_PINNED = 2 };

enum sim_workkind {
    SIM_W_NOP, SIM_W_KERNEL, SIM_W_COPY, SIM_W_SET, SIM_W_HOST, SIM_W_CALLBACK,
    SIM_W_EVREC, SIM_W_EVWAIT, SIM_W_FREE
};

struct CUkern_st {
    uint32_t magic;
    sim_kernel_fn fn;
    char name[64];
    int nparams;
    size_t size[SIM_MAXPARAMS], off[SIM_MAXPARAMS];
    size_t argsz;
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
    void *snap;                       /* owned staging copy of a pageable source */
    unsigned value, elem;
    void (*hostfn)(void *);
    void *user;
    CUstreamCallback cb;
    CUstream cbstream;
    CUevent ev;
    void *freeptr;
} sim_work;

/* Stream handles are normalised with this flag: NULL means the per-thread
 * stream in _ptsz entry points and the legacy stream elsewhere. */
SIM_API void simc_tick(void);
SIM_API int simc_device_count(void);
SIM_API int simc_get_device(void);
SIM_API CUresult simc_set_device(int dev);

SIM_API struct CUkern_st *simc_kernel_lookup(const void *fn_or_handle);
SIM_API CUresult simc_param_info(const void *fn_or_handle, size_t idx, size_t *off, size_t *size);
SIM_API CUresult simc_work_kernel(sim_work *w, const void *f, sim_launch l, void **params, void **extra);
SIM_API void simc_work_free(sim_work *w);
SIM_API CUresult simc_work_copy(sim_work *to, const sim_work *from);

SIM_API CUresult simc_submit(CUstream s, int ptsz, sim_work *w);
SIM_API CUresult simc_memcpy(CUstream s, int ptsz, void *dst, size_t dpitch, const void *src,
                             size_t spitch, size_t width, size_t height, int blocking);
SIM_API CUresult simc_memset(CUstream s, int ptsz, void *dst, size_t pitch, unsigned value,
                             unsigned elem, size_t width, size_t height, int blocking);

SIM_API CUresult simc_stream_create(CUstream *out, unsigned flags, int prio);
SIM_API CUresult simc_stream_destroy(CUstream s);
SIM_API CUresult simc_stream_get_flags(CUstream s, int ptsz, unsigned *flags);
SIM_API CUresult simc_stream_get_priority(CUstream s, int ptsz, int *prio);
SIM_API CUresult simc_stream_sync(CUstream s, int ptsz);
SIM_API CUresult simc_stream_query(CUstream s, int ptsz);
SIM_API CUresult simc_stream_wait_event(CUstream s, int ptsz, CUevent e);
SIM_API CUresult simc_ctx_sync(void);
SIM_API CUresult simc_sync_all(void);

SIM_API CUresult simc_event_create(CUevent *out, unsigned flags);
SIM_API CUresult simc_event_destroy(CUevent e);
SIM_API CUresult simc_event_record(CUevent e, CUstream s, int ptsz);
SIM_API CUresult simc_event_query(CUevent e);
SIM_API CUresult simc_event_sync(CUevent e);
SIM_API CUresult simc_event_elapsed(float *ms, CUevent a, CUevent b);

SIM_API CUresult simc_malloc(void **p, size_t n, int kind);
SIM_API CUresult simc_free(void *p, int kind);
SIM_API CUresult simc_malloc_async(void **p, size_t n, CUstream s, int ptsz);
SIM_API CUresult simc_free_async(void *p, CUstream s, int ptsz);
SIM_API int simc_mem_kind(const void *p, int *device);

SIM_API CUresult simc_capture_begin(CUstream s, int ptsz, int mode);
SIM_API CUresult simc_capture_end(CUstream s, int ptsz, CUgraph *g);
SIM_API CUresult simc_capture_info(CUstream s, int ptsz, CUstreamCaptureStatus *st,
                                   cuuint64_t *id, CUgraph *g, const CUgraphNode **deps,
                                   size_t *ndeps);
SIM_API CUresult simc_capture_exchange_mode(int *mode);

SIM_API CUresult simc_graph_create(CUgraph *g);
SIM_API CUresult simc_graph_destroy(CUgraph g);
SIM_API CUresult simc_graph_add(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n,
                                sim_work *w);
SIM_API CUresult simc_graph_add_deps(CUgraph g, const CUgraphNode *from, const CUgraphNode *to, size_t n);
SIM_API CUresult simc_graph_get_nodes(CUgraph g, CUgraphNode *nodes, size_t *n);
SIM_API CUresult simc_graph_instantiate(CUgraphExec *out, CUgraph g);
SIM_API CUresult simc_exec_destroy(CUgraphExec e);
SIM_API CUresult simc_exec_set(CUgraphExec e, CUgraphNode node, int kind, sim_work *w);
SIM_API CUresult simc_exec_update(CUgraphExec e, CUgraph g, CUgraphNode *err);
SIM_API CUresult simc_graph_launch(CUgraphExec e, CUstream s, int ptsz);
SIM_API int simc_node_kind(CUgraphNode n);

#endif
