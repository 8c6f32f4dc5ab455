/* The entry points cgraft knows: the table generated from the toolkit's
 * headers and shim/cuda_api.def (names, kinds, cuGetProcAddress ABIs). */
#ifndef CG_API_H
#define CG_API_H

#include <stdint.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
/* cuda.h renames the 11.3 ABI of cuGetProcAddress and the 12.2 one of
 * cuGraphAddNode; cgraft wraps both of each. */
#undef cuGetProcAddress
#undef cuGraphAddNode

#include "cg_api_gen.h"

/* What an entry point is to cgraft (see shim/cuda_api.def). */
enum cg_kind { CG_K_OP, CG_K_SPC, CG_K_WAIT, CG_K_ALLOC, CG_K_PURE, CG_K_SYNC, CG_K_BND, CG_K_RESET, CG_K_FREE, CG_K_MWAIT };
/* Where it is reached: a runtime, driver or NCCL link name, an ABI handed
 * out by cuGetProcAddress, or a slot for a name no header declares. */
enum cg_layer { CG_L_RT, CG_L_DRV, CG_L_PFN, CG_L_DYN, CG_L_NCCL };

struct cg_entry_info {
	const char *name;
	uint8_t kind, layer;
};
/* One ABI of a driver function, as cuGetProcAddress hands it out: the
 * trampoline of that ABI, and its hand-written wrapper where there is one. */
struct cg_proc {
	const char *query;
	int version, pt;
	int tramp, hand;
};
struct cg_link {
	const char *name;
	int entry;
};

extern const struct cg_entry_info cg_entries[CG_E_COUNT] __attribute__((visibility("hidden")));
extern const struct cg_proc cg_procs[CG_PROC_COUNT] __attribute__((visibility("hidden")));
extern const struct cg_link cg_links[CG_LINK_COUNT] __attribute__((visibility("hidden")));

#endif
