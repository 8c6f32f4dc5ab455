/* The engine as the shim sees it: ops arrive, boundaries pass, and the
 * specials that need the engine's state (events, destroyed handles, the
 * program's own capture, its switch). */
#ifndef CG_ENGINE_H
#define CG_ENGINE_H

#include "op.h"

void cg_init(void) CG_HIDDEN;
/* Called once, at the process's first op (set at load: the governor). */
extern void (*cg_engine_first_op)(void) CG_HIDDEN;

enum {
	CG_EAGER = 0,    /* the caller makes the real call, then cg_engine_op_done() */
	CG_DEFERRED = 1, /* held (or replayed): the call returns success */
	CG_PASS = 2,     /* the caller makes the real call, and reports nothing */
};
/* An op arrives through a wrapper, normalised; its arguments are the
 * caller's until the wrapper returns. */
int cg_engine_op(struct cg_op *op) CG_HIDDEN;
/* After the real call of an op cg_engine_op() returned CG_EAGER for. */
void cg_engine_op_done(struct cg_op *op, int ok) CG_HIDDEN;

/* A call cgraft does not hold: held work goes out first. kind is CG_K_SYNC
 * (the host waits for or looks at device work), CG_K_BND (work cgraft does
 * not model, counted with why against entry), CG_K_RESET (also forget
 * every graph and kernel layout, even while the engine stands aside, as the
 * two forgetting calls below do), CG_K_FREE (a BND that frees memory it
 * does not say: every graph with a copy or memset goes) or CG_K_MWAIT (a BND
 * after which streams may wait for memory: graphs over streams go, and none
 * is built again, cg_engine_memory_waits). */
void cg_engine_boundary(int entry, enum cg_kind kind, enum cg_reason why) CG_HIDDEN;
/* A kernel's attribute changes: kernel k (a CUkernel), whose function in
 * context ctx, the current one, is f. Held work goes out first; the graphs
 * that may launch it go (a node of k, of f, or of a function in another
 * context), and what learning kept and the launches seen to succeed are
 * forgotten, as after a reset; the graphs of other kernels stay. Even while
 * the engine stands aside. */
void cg_engine_kernel_changed(int entry, const void *k, const void *f, CUcontext ctx) CG_HIDDEN;
/* Whether a stream may have waited for memory (a CG_K_MWAIT call was seen):
 * then no graph spans two streams. */
int cg_engine_memory_waits(void) CG_HIDDEN;
/* A synchronisation of stream s: 1 where the engine answers it, s having
 * nothing left (its last work a replayed read-back the calling thread
 * waited for, nothing else since), else 0 after a CG_K_SYNC boundary. */
int cg_engine_stream_sync(int entry, CUstream s) CG_HIDDEN;
/* A stream or event is destroyed: held work goes out and graphs naming it go. */
void cg_engine_forget_handle(int entry, CUstream s, CUevent e) CG_HIDDEN;
/* The allocation at p is about to be freed, after a boundary: graphs whose
 * copies or memsets name it, which hold the memory as they found it, go. n:
 * its size, where cgraft noted it as host or managed memory, else 0 (host:
 * host memory, whose range the driver is not asked). */
void cg_engine_memory_freed(const void *p, size_t n, int host) CG_HIDDEN;
/* A free in stream order of device memory [p, p + n), on explicit stream
 * s: 1 where it is held back till the held work before it goes out (the
 * call returns success), 0 where it is made now and the segment goes on
 * (nothing held), -1 where it ends the segment as a call not modelled
 * (another thread's, memory a copy or memset of the run or the held work
 * names, too many held back). */
int cg_engine_free_async(const void *p, size_t n, CUstream s) CG_HIDDEN;
/* A call that sees frees in stream order made (a pool's counts): those
 * held back go first, with the held work, and from then on every such free
 * ends the segment (held back or not, the counts would differ from eager's,
 * and a step learnt across frees would not replay cut at them). */
void cg_engine_frees_seen(int entry) CG_HIDDEN;
/* Whether frees in stream order are held back now (a hint, read without
 * the lock). */
int cg_engine_frees_held(void) CG_HIDDEN;
/* An allocation in stream order failed for want of memory: 1 where frees
 * were held back, which went out now with the held work before them (the
 * call is to be made again: eagerly they came before it), else 0. */
int cg_engine_alloc_failed(int entry) CG_HIDDEN;
/* An NCCL communicator's calls are not held from now on: held work goes
 * out and graphs with its calls are forgotten. */
void cg_engine_forget_comm(int entry, void *comm) CG_HIDDEN;
/* [p, p + n) became host memory a kernel can reach: held work goes out, the
 * run is dropped, and graphs that reach it are forgotten. */
void cg_engine_host_memory(const void *p, size_t n) CG_HIDDEN;
/* Whether a query of or wait on event e sees what it would see eagerly with
 * the held work out: e is not recorded by held work. */
int cg_engine_event_independent(CUevent e) CG_HIDDEN;
/* The program's own capture, through the runtime or the driver: begin
 * before the call (held work goes out, nothing is held until the end), end
 * after an end call, failed or not, or after a begin call that failed. */
void cg_capture_begin(int entry) CG_HIDDEN;
void cg_capture_end(void) CG_HIDDEN;
/* The governor (govern.c): 1 where cgraft is on and neither the program's
 * switch nor its capture has it standing aside, 0 where one of them has,
 * -1 once NCCL calls were held (the governor keeps out for good, since each
 * rank would decide by its own timing whether a call runs inside a graph,
 * which NCCL requires to be the same on all); and its own switch, which
 * submits what is held when it stands aside. */
int cg_engine_governable(void) CG_HIDDEN;
void cg_engine_govern(int aside) CG_HIDDEN;
/* At exit: what is held goes out. */
void cg_engine_exit(void) CG_HIDDEN;
/* Starts a detached thread of cgraft's (the hold timer, the builder, the
 * governor), never taken for the program's own: every signal is blocked in
 * it. 0 or an errno. */
int cg_thread_start(void *(*fn)(void *)) CG_HIDDEN;
/* A forked child: pass-through for good, nothing inherited is submitted. */
void cg_engine_forked_child(void) CG_HIDDEN;

#endif
