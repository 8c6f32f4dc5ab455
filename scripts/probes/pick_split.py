"""Usage: pick_split.py TREE

Adds timers to the copy of cgraft's sources in TREE (src/replay.c): a build
of it prints, at exit, a line `PICKDIAG` with the time of each part of a
graph launch over the calls timed with cgraft_call_time_ns(2): the pick
with and without updaters, a variant's instantiation, the updaters' loop
over the nodes (u_loop1; u_nodes compared, u_bytes of parameters, u_recs
records written), their driver calls (u_drv), the records applied
to the values kept (u_apply), the driver's launch; and the cost of a clock
read. For a diagnostic build only: the timers cost a clock read each.

    mkdir /tmp/pd && git ls-files | tar cf - -T - | tar xf - -C /tmp/pd
    python3 scripts/probes/pick_split.py /tmp/pd
    meson setup /tmp/pdb /tmp/pd && ninja -C /tmp/pdb shim/libcgraft.so
"""
import sys
p = sys.argv[1] + "/src/replay.c"
s = open(p).read()
hdr = '''#include <stdio.h>
static unsigned long long pd_ns[12], pd_n[12], pd_nodes, pd_bytes, pd_recs;
static const char *pd_name[12] = {"pick_plain","pick_upd","var_inst","plain_upd_loop","u_loop1","u_drv","u_apply","launch_ops_total","upload","stage_fork","driver_launch","after"};
#define PD_ON (atomic_load_explicit(&cg_hot.timing, memory_order_relaxed) == 2)
#define PD_T0 uint64_t pd_t0_ = cg_now_ns()
#define PD_ADD(k) do { uint64_t pd_t1_ = cg_now_ns(); if (PD_ON) { pd_ns[k] += pd_t1_ - pd_t0_; pd_n[k]++; } pd_t0_ = pd_t1_; } while (0)
__attribute__((destructor)) static void pd_report(void)
{
	uint64_t a = cg_now_ns();
	for (int i = 0; i < 100000; i++)
		(void)cg_now_ns();
	fprintf(stderr, "PICKDIAG clock %.1f ns", (double)(cg_now_ns() - a) / 100000);
	for (int i = 0; i < 12; i++)
		fprintf(stderr, " %s=%.3fms/%llu", pd_name[i], pd_ns[i] / 1e6, pd_n[i]);
	fprintf(stderr, " u_nodes=%llu u_bytes=%llu u_recs=%llu\\n", pd_nodes, pd_bytes, pd_recs);
}
'''
s = s.replace('#define CG_MAX_VARIANTS 16', hdr + '#define CG_MAX_VARIANTS 16', 1)
def rep(a, b):
    global s
    assert s.count(a) == 1, a
    s = s.replace(a, b)
# updater pick: loop 1, the driver section, the apply loop
rep('''	uint32_t(*sent)[2] = g->sent;
	int k = 0;''', '''	uint32_t(*sent)[2] = g->sent;
	int k = 0;
	PD_T0;''')
rep('''	uint64_t c0 = cg_cost_start();
	CUresult rc = CUDA_SUCCESS;
	for (int j = 0; j < g->nupd''', '''	PD_ADD(4);
	uint64_t c0 = cg_cost_start();
	CUresult rc = CUDA_SUCCESS;
	for (int j = 0; j < g->nupd''')
rep('''	cg_cost_stop(CG_COST_UPDATE, c0);
	if (rc != CUDA_SUCCESS) {
		/* Refused''', '''	cg_cost_stop(CG_COST_UPDATE, c0);
	PD_ADD(5);
	if (rc != CUDA_SUCCESS) {
		/* Refused''')
rep('''			cg_stat_add(node_updates_device, 1);
		}
	return v;''', '''			cg_stat_add(node_updates_device, 1);
		}
	PD_ADD(6);
	return v;''')
# plain pick: the instantiation of a variant, the update loop
rep('''		if (cg_instantiate(g, t, v, &vals, NULL) == 0) {''', '''		PD_T0;
		int pd_r = cg_instantiate(g, t, v, &vals, NULL);
		PD_ADD(2);
		if (pd_r == 0) {''')
rep('''	for (size_t i = 0; i < t->n; i++)
		if (g->node[i] && best->vh[i] != g->hnow[i]''', '''	PD_T0;
	for (size_t i = 0; i < t->n; i++)
		if (g->node[i] && best->vh[i] != g->hnow[i]''')
rep('''			return NULL;
	return best;
}''', '''			return NULL;
	PD_ADD(3);
	return best;
}''')
rep('''		uint32_t from;
		while (from = g->ub[k]->nrec,''', '''		if (PD_ON) {
			pd_nodes++;
			pd_bytes += nb;
		}
		uint32_t from;
		while (from = g->ub[k]->nrec,''')
rep('''		sent[i][0] = copyk ? 0 : (uint32_t)k << 16 | from;''', '''		if (PD_ON)
			pd_recs += g->ub[k]->nrec - from;
		sent[i][0] = copyk ? 0 : (uint32_t)k << 16 | from;''')
# the two picks as a whole, and the launch's parts
rep('''	uint64_t c0 = cg_cost_start();
	struct cg_variant *v = cg_pick_variant(''', '''	PD_T0;
	uint64_t pd_s = pd_t0_;
	uint64_t c0 = cg_cost_start();
	struct cg_variant *v = cg_pick_variant(''')
rep('''	cg_cost_stop(CG_COST_PICK, c0);''', '''	cg_cost_stop(CG_COST_PICK, c0);
	PD_ADD(g->nupd ? 1 : 0);''')
rep('''	int ready = v && (!g->nupd || v->uploaded)''', '''	PD_ADD(8);
	int ready = v && (!g->nupd || v->uploaded)''')
rep('''	c0 = cg_cost_start();
	CUresult lr = ready ? CG_BK(graph_launch, v->exec, ls) : CUDA_ERROR_NOT_READY;
	cg_cost_stop(CG_COST_DRIVER, c0);''', '''	PD_ADD(9);
	c0 = cg_cost_start();
	CUresult lr = ready ? CG_BK(graph_launch, v->exec, ls) : CUDA_ERROR_NOT_READY;
	cg_cost_stop(CG_COST_DRIVER, c0);
	PD_ADD(10);''')
rep('''	cg_stat_add(graph_launches, 1);
	return 0;
}''', '''	cg_stat_add(graph_launches, 1);
	PD_ADD(11);
	pd_t0_ = pd_s;
	PD_ADD(7);
	return 0;
}''')
open(p, "w").write(s)
