/* Process life: options at load, the report and stats file at exit, and a
 * forked child that passes everything through and writes nothing. */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"
#include "govern.h"
#include "log.h"
#include "options.h"
#include "profile.h"
#include "stats.h"

static pthread_once_t cg_once = PTHREAD_ONCE_INIT;
static int cg_is_child;

/* A forked child is not the process the stats describe: it passes calls
 * through, and writes no file that could replace its parent's. */
static void cg_atfork_child(void)
{
	cg_is_child = 1;
	cg_engine_forked_child();
	cg_profile_forked_child();
}

static void cg_init_once(void)
{
	cg_options_load();
	/* Launches the program asked to be synchronous (CUDA's debugging
	 * switch, read at start-up): each must be done when its call returns,
	 * so none is held. */
	const char *lb = getenv("CUDA_LAUNCH_BLOCKING");
	if (cg_opt.enable && lb && strtol(lb, NULL, 10) != 0) {
		cg_log(CG_LOG_WARN, CG_FAULT_PROGRAM, "CUDA_LAUNCH_BLOCKING=%s: launches are synchronous, cgraft runs in "
		       "pass-through", lb);
		cg_opt.enable = 0;
	}
	cg_log_level = cg_opt.log_level;
	atomic_store(&cg_hot.engine_on, cg_opt.enable);
	cg_engine_first_op = cg_govern_start;
	pthread_atfork(NULL, NULL, cg_atfork_child);
}

/* Also reached from the first use of each entry point, before its real
 * call: CUPTI starts at load, or there once the program's runtime is loaded
 * to be looked beside. */
void cg_init(void)
{
	pthread_once(&cg_once, cg_init_once);
	if (cg_unlikely(cg_opt.profile))
		cg_profile_start();
}

__attribute__((constructor)) static void cg_constructor(void)
{
	cg_init();
}

static void cg_write_stats(void)
{
	char path[PATH_MAX];
	if (cg_stats_expand_path(cg_opt.stats_path, (long)getpid(), path, sizeof path)) {
		cg_log(CG_LOG_ERROR, CG_FAULT_PROGRAM, "CGRAFT_STATS: path too long");
		return;
	}
	FILE *f = fopen(path, "w");
	if (!f) {
		cg_log(CG_LOG_ERROR, CG_FAULT_PROGRAM, "CGRAFT_STATS: cannot write %s", path);
		return;
	}
	cg_stats_write_json(f);
	fclose(f);
}

__attribute__((destructor)) static void cg_destructor(void)
{
	/* A process that never called CUDA (a tool the program ran, such as
	 * timeout or ldconfig) writes nothing: it must not replace the file of
	 * the process that did. */
	if (cg_is_child || !cg_stats_any_calls())
		return;
	cg_profile_finish();
	if (cg_opt.stats_path)
		cg_write_stats();
	if (cg_opt.report)
		cg_stats_write_report(stderr);
}
