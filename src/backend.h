/* The one table of real CUDA functions cgraft calls for its own work: graph
 * construction, launch, event and stream bookkeeping, the eager submission of
 * held work, kernel layouts. All of it goes through the driver, which keeps no
 * per-thread error state, so cgraft never touches the program's
 * cudaGetLastError(). A test may install a table of its own. */
#ifndef CG_BACKEND_H
#define CG_BACKEND_H

#include <cudaTypedefs.h>

#include "api.h"
#include "base.h"

/* field, query name, the ABI asked for (cudaTypedefs.h's PFN_<query>_v<n>,
 * asked for at version n so that the driver hands out exactly that one), and
 * whether cgraft needs it at all (others are used where the driver has them) */
#define CG_BACKEND_DRIVER(X)                                                           \
	X(ctx_get_current, cuCtxGetCurrent, 4000, 1)                                 \
	X(ctx_set_current, cuCtxSetCurrent, 4000, 1)                                 \
	X(ctx_push, cuCtxPushCurrent, 4000, 1)                                       \
	X(ctx_pop, cuCtxPopCurrent, 4000, 1)                                         \
	X(ctx_get_device, cuCtxGetDevice, 2000, 1)                                   \
	X(func_param_info, cuFuncGetParamInfo, 12040, 0)                             \
	X(kernel_param_info, cuKernelGetParamInfo, 12040, 0)                         \
	X(func_name, cuFuncGetName, 12030, 0)                                        \
	X(kernel_name, cuKernelGetName, 12030, 0)                                    \
	X(kernel_get_function, cuKernelGetFunction, 12000, 0)                        \
	X(func_attr, cuFuncGetAttribute, 2020, 0)                                    \
	X(pointer_attrs, cuPointerGetAttributes, 7000, 1)                            \
	X(alloc_props, cuMemGetAllocationPropertiesFromHandle, 10020, 0)             \
	X(mem_alloc_host, cuMemAllocHost, 3020, 1)                                   \
	X(mem_free_host, cuMemFreeHost, 2000, 1)                                     \
	X(mem_free_async, cuMemFreeAsync, 11020, 0)                                  \
	X(stream_flags, cuStreamGetFlags, 5050, 1)                                   \
	X(stream_sync, cuStreamSynchronize, 2000, 1)                                 \
	X(stream_query, cuStreamQuery, 2000, 0)                                      \
	X(event_create, cuEventCreate, 2000, 1)                                      \
	X(event_destroy, cuEventDestroy, 4000, 1)                                    \
	X(event_record, cuEventRecord, 2000, 1)                                      \
	X(event_query, cuEventQuery, 2000, 1)                                        \
	X(event_sync, cuEventSynchronize, 2000, 1)                                   \
	X(stream_wait, cuStreamWaitEvent, 3020, 1)                                   \
	X(graph_create, cuGraphCreate, 10000, 1)                                     \
	X(graph_destroy, cuGraphDestroy, 10000, 1)                                   \
	X(graph_add_kernel, cuGraphAddKernelNode, 12000, 1)                          \
	X(graph_kernel_attr, cuGraphKernelNodeSetAttribute, 11000, 0)                \
	X(graph_kernel_attr_get, cuGraphKernelNodeGetAttribute, 11000, 0)            \
	X(exec_node_enable, cuGraphNodeSetEnabled, 11060, 0)                         \
	X(library_load, cuLibraryLoadData, 12000, 0)                                 \
	X(library_kernel, cuLibraryGetKernel, 12000, 0)                              \
	X(graph_add_memcpy, cuGraphAddMemcpyNode, 10000, 1)                          \
	X(graph_add_memset, cuGraphAddMemsetNode, 10000, 1)                          \
	X(graph_add_host, cuGraphAddHostNode, 10000, 1)                              \
	X(graph_add_record, cuGraphAddEventRecordNode, 11010, 1)                     \
	X(graph_instantiate, cuGraphInstantiateWithFlags, 11040, 1)                  \
	X(exec_destroy, cuGraphExecDestroy, 10000, 1)                                \
	X(exec_set_kernel, cuGraphExecKernelNodeSetParams, 12000, 1)                 \
	X(exec_set_memcpy, cuGraphExecMemcpyNodeSetParams, 10020, 1)                 \
	X(exec_set_memset, cuGraphExecMemsetNodeSetParams, 10020, 1)                 \
	X(exec_set_host, cuGraphExecHostNodeSetParams, 10020, 1)                     \
	X(graph_launch, cuGraphLaunch, 10000, 1)                                     \
	X(launch_kernel, cuLaunchKernel, 4000, 1)                                    \
	X(launch_kernel_ex, cuLaunchKernelEx, 11060, 0)                              \
	X(memcpy_async, cuMemcpyAsync, 4000, 1)                                      \
	X(memcpy3d_async, cuMemcpy3DAsync, 3020, 0)                                  \
	X(memset8_async, cuMemsetD8Async, 3020, 1)                                   \
	X(memset16_async, cuMemsetD16Async, 3020, 0)                                 \
	X(memset32_async, cuMemsetD32Async, 3020, 0)                                 \
	X(memset2d8_async, cuMemsetD2D8Async, 3020, 0)                               \
	X(memset2d16_async, cuMemsetD2D16Async, 3020, 0)                             \
	X(memset2d32_async, cuMemsetD2D32Async, 3020, 0)                             \
	X(host_func, cuLaunchHostFunc, 10000, 1)                                     \
	X(mem_get_info, cuMemGetInfo, 3020, 0)                                       \
	X(stream_create, cuStreamCreate, 2000, 0)                                    \
	X(stream_destroy, cuStreamDestroy, 4000, 0)                                  \
	X(begin_capture, cuStreamBeginCapture, 10010, 0)                             \
	X(end_capture, cuStreamEndCapture, 10000, 0)                                 \
	X(graph_add_child, cuGraphAddChildGraphNode, 10000, 0)                       \
	X(ctx_sync, cuCtxSynchronize, 2000, 0)                                       \
	X(graph_upload, cuGraphUpload, 11010, 0)                                     \
	X(capture_mode, cuThreadExchangeStreamCaptureMode, 10010, 0)

/* The runtime the program loaded, for the two things only it knows: the
 * kernel behind a host stub, and a __device__ variable's address. Both are
 * asked right before the program's own call on the same handle, which would
 * fail the same way. */
#define CG_BACKEND_RUNTIME(X)                                                   \
	X(rt_get_kernel, "cudaGetKernel", cudaGetKernel)                        \
	X(rt_symbol_address, "cudaGetSymbolAddress", cudaGetSymbolAddress)

struct cg_backend {
#define CG_BK_FIELD(field, name, version, req) PFN_##name##_v##version field;
#define CG_BK_RT_FIELD(field, query, decl) __typeof__(&decl) field;
	CG_BACKEND_DRIVER(CG_BK_FIELD)
	CG_BACKEND_RUNTIME(CG_BK_RT_FIELD)
#undef CG_BK_FIELD
#undef CG_BK_RT_FIELD
};

/* Finds the real driver (and the program's runtime, where there is one);
 * 0 when the driver's entry points are there, -ENOENT otherwise. */
int cg_backend_ready_slow(void) CG_HIDDEN;
static inline int cg_backend_ready(void)
{
	return cg_likely(atomic_load_explicit(&cg_hot.backend_ok, memory_order_acquire)) ? 0 : cg_backend_ready_slow();
}
/* The runtime's two helpers, looked up again while missing; 0 once found. */
int cg_backend_runtime(void) CG_HIDDEN;
/* The runtime's kernel of a host stub, or NULL (no runtime, or none). Call
 * with the backend ready. */
CUkernel cg_backend_stub_kernel(const void *stub) CG_HIDDEN;
/* glibc's dlsym, for cgraft's own lookups (the exported dlsym is cgraft's). */
void *cg_dlsym_real(void *handle, const char *name) CG_HIDDEN CG_NO_SANITIZE;
/* For tests: replaces the table (NULL: back to the real one). */
void cg_backend_set(const struct cg_backend *bk) CG_HIDDEN;

/* NCCL, where the program loaded libnccl.so.2: its calls, with its enums as
 * ints and its communicator and stream as pointers (the same ABI). */
struct cg_nccl_backend {
	int (*allreduce)(const void *, void *, size_t, int, int, void *, void *);
	int (*broadcast)(const void *, void *, size_t, int, int, void *, void *);
	int (*reduce)(const void *, void *, size_t, int, int, int, void *, void *);
	int (*allgather)(const void *, void *, size_t, int, void *, void *);
	int (*reducescatter)(const void *, void *, size_t, int, int, void *, void *);
	int (*alltoall)(const void *, void *, size_t, int, void *, void *);
	int (*gather)(const void *, void *, size_t, int, int, void *, void *);
	int (*scatter)(const void *, void *, size_t, int, int, void *, void *);
	int (*send)(const void *, size_t, int, int, void *, void *);
	int (*recv)(void *, size_t, int, int, void *, void *);
};
extern struct cg_nccl_backend cg_nccl_bk CG_HIDDEN;
/* 0 once every one of them is found, -ENOENT otherwise. */
int cg_nccl_ready(void) CG_HIDDEN;

/* A real call made by cgraft: its own wrappers let it through. */
#define CG_BK(fn, ...)                                                          \
	({                                                                      \
		cg_busy++;                                                      \
		CUresult rc_ = cg_hot.bk->fn ? (CUresult)cg_hot.bk->fn(__VA_ARGS__) : CUDA_ERROR_NOT_SUPPORTED; \
		cg_busy--;                                                      \
		rc_;                                                            \
	})

#endif
