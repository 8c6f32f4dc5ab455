/* Process life: options at load, the report and stats file at exit, and a
 * forked child that never touches CUDA writing nothing. */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgraft_i.h"

int cg_engine_on;
static pthread_once_t cg_once = PTHREAD_ONCE_INIT;
static pid_t cg_pid;
static int cg_is_child;

static unsigned long long cg_calls_total(void)
{
	unsigned long long n = 0;
	for (int i = 0; i < CG_API_COUNT; i++)
		n += atomic_load_explicit(&cg_stats.calls[i], memory_order_relaxed);
	for (int i = 0; i < CG_DRV_COUNT; i++)
		n += atomic_load_explicit(&cg_stats.drv_calls[i], memory_order_relaxed);
	return n + atomic_load_explicit(&cg_stats.ops_total, memory_order_relaxed);
}

/* A forked child starts from zero: what it reports is its own work. */
static void cg_atfork_child(void)
{
	memset(&cg_stats, 0, sizeof cg_stats);
	cg_is_child = 1;
	cg_pid = getpid();
}

static void cg_init_once(void)
{
	cg_pid = getpid();
	cg_options_load();
	cg_engine_on = cg_opt.enable;
	pthread_atfork(NULL, NULL, cg_atfork_child);
}

void cg_init(void)
{
	pthread_once(&cg_once, cg_init_once);
}

__attribute__((constructor)) static void cg_constructor(void)
{
	cg_init();
}

__attribute__((destructor)) static void cg_destructor(void)
{
	/* A process that never called CUDA (a forked worker, or a tool the
	 * program ran, such as timeout or ldconfig) writes nothing: it must not
	 * replace the file of the process that did. */
	if (cg_calls_total() == 0)
		return;
	if (cg_opt.stats_path) {
		char path[PATH_MAX];
		if (cg_stats_expand_path(cg_opt.stats_path, (long)getpid(), path, sizeof path)) {
			cg_log(CG_LOG_ERROR, CG_FAULT_PROGRAM, "CGRAFT_STATS: path too long");
		} else {
			FILE *f = fopen(path, "w");
			if (!f) {
				cg_log(CG_LOG_ERROR, CG_FAULT_PROGRAM, "CGRAFT_STATS: cannot write %s", path);
			} else {
				cg_stats_write_json(f);
				fclose(f);
			}
		}
	}
	if (cg_opt.report)
		cg_stats_write_report(stderr);
}
