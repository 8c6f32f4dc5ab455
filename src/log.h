/* The one logger: a fixed "cgraft:" prefix, levels, a cap on repeats, and
 * whose fault a message reports. It never calls CUDA. */
#ifndef CG_LOG_H
#define CG_LOG_H

#include <stdatomic.h>

#include "base.h"

enum cg_level { CG_LOG_ERROR, CG_LOG_WARN, CG_LOG_INFO, CG_LOG_DEBUG };
enum cg_fault { CG_FAULT_NONE, CG_FAULT_PROGRAM, CG_FAULT_CGRAFT, CG_FAULT_DRIVER };

extern int cg_log_level CG_HIDDEN;

void cg_log(enum cg_level level, enum cg_fault fault, const char *fmt, ...)
	__attribute__((format(printf, 3, 4))) CG_HIDDEN;

/* A message from one call site is printed at most CG_LOG_REPEATS times. */
#define CG_LOG_REPEATS 5
#define cg_log_capped(level, fault, ...)                                        \
	do {                                                                    \
		static atomic_int cg_log_seen_;                                 \
		if (atomic_fetch_add_explicit(&cg_log_seen_, 1, memory_order_relaxed) < CG_LOG_REPEATS) \
			cg_log(level, fault, __VA_ARGS__);                      \
	} while (0)
#define cg_debug(...)                                                           \
	do {                                                                    \
		if (cg_unlikely(cg_log_level >= CG_LOG_DEBUG))                  \
			cg_log(CG_LOG_DEBUG, CG_FAULT_NONE, __VA_ARGS__);       \
	} while (0)

#endif
