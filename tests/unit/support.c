/* What the shim defines that the engine's sources need, for binaries that
 * link the engine without the shim. */
#include "base.h"

/* Depth of cgraft's own CUDA calls on this thread (shim/shim.c). */
CG_TLS int cg_busy;
