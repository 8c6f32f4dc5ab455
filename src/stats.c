/* Counters cgraft keeps, the JSON object written at exit (CGRAFT_STATS) and
 * the human summary (CGRAFT_REPORT). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "stats.h"
#include "op.h"
#include "options.h"
#include "profile.h"

struct cg_stats cg_stats;

/* Each reason's name (the report's and CGRAFT_STATS' key) and what it means,
 * as the report says it (the README's table, checked by tests/check_reasons.py). */
const struct cg_reason_text cg_reasons[CG_WHY_COUNT] = {
	[CG_WHY_UNSUPPORTED_API] = { "unsupported_api",
		"a call cgraft does not model ended held work: the calls below" },
	[CG_WHY_LAUNCH_ATTRIBUTE] = { "launch_attribute",
		"a launch attribute a graph node cannot carry" },
	[CG_WHY_PARAM_INFO] = { "kernel_param_info",
		"a kernel whose parameter layout cgraft could not learn" },
	[CG_WHY_MEMCPY_KIND] = { "memcpy_kind",
		"a copy or memset a graph node cannot take: host to host, arrays, a memset of host memory, a "
		"pageable source of more than 1 MiB" },
	[CG_WHY_EVENT_FLAGS] = { "event_flags",
		"an event record or wait with flags, or of an event shared between processes" },
	[CG_WHY_CAPTURE] = { "program_capture",
		"the program's own stream capture: cgraft stands aside" },
	[CG_WHY_THREADS] = { "other_host_thread",
		"a call of another host thread amid held work it could not go on with" },
	[CG_WHY_DEVICE] = { "device_switch",
		"another device or context, or a copy between them" },
	[CG_WHY_HOST_MEMORY] = { "host_memory_kernel",
		"a kernel given memory the host may poll (mapped, managed, registered)" },
	[CG_WHY_UNSEEN_LAUNCH] = { "unseen_launch",
		"a kernel in a graph node's place that was never seen to launch" },
	[CG_WHY_HELD_TOO_LONG] = { "held_too_long",
		"no call came for CGRAFT_MAX_HOLD_US: held work went out eagerly" },
	[CG_WHY_RESET] = { "reset",
		"a device reset or module unload, or launch settings changed: graphs forgotten" },
	[CG_WHY_KERNEL_ATTR] = { "kernel_attribute",
		"a kernel attribute set to another value: the graphs that launch it forgotten" },
	[CG_WHY_BUILD_FAILED] = { "graph_build_failed",
		"the driver refused to build or instantiate a graph" },
	[CG_WHY_LAUNCH_FAILED] = { "graph_launch_failed",
		"the driver refused a graph launch or a node update" },
	[CG_WHY_BACKOFF_DIVERGE] = { "backoff_diverging",
		"a stretch that kept diverging from its graph, set aside for a while" },
	[CG_WHY_BACKOFF_SLOW] = { "backoff_not_faster",
		"a stretch whose replay saved no host time, set aside for a while" },
	[CG_WHY_BACKOFF_NOREPEAT] = { "backoff_no_repeat",
		"calls that did not repeat: cgraft looked less often" },
	[CG_WHY_NCCL] = { "nccl_kernel",
		"NCCL work not held: a collective without CGRAFT_NCCL=1 (or over several streams), an NCCL "
		"kernel, a communicator gone" },
	[CG_WHY_MEMORY_WAIT] = { "streams_wait_memory",
		"a stream that may wait for memory: graphs over several streams forgotten" },
	[CG_WHY_FREED_UNLAUNCHED] = { "freed_before_launch",
		"a graph forgotten before its first launch: memory its copies or memsets name was freed" },
	[CG_WHY_FREE_UNHELD] = { "free_not_held",
		"a free in stream order or an unmap that could not wait behind held work" },
	[CG_WHY_CALLBACKS] = { "stream_callback",
		"a stream callback (held only with CGRAFT_CALLBACKS=1)" },
};

#define LD(x) atomic_load_explicit(&cg_stats.x, memory_order_relaxed)

/* The program's own real calls timed whole (cgraft_call_time_ns(2)). */
static unsigned long long cg_real_ns_total(void)
{
	unsigned long long n = 0;
	for (int i = 0; i < CG_E_COUNT; i++)
		n += LD(real_ns[i]);
	return n;
}

/* A JSON object of the non-zero counters of entries on the given layers. */
static void cg_write_entries(FILE *f, const char *key, const atomic_ullong *v, int rt)
{
	fprintf(f, "  \"%s\": {", key);
	const char *sep = "";
	for (int i = 0; i < CG_E_COUNT; i++) {
		unsigned long long n = atomic_load_explicit(&v[i], memory_order_relaxed);
		if (!n || (cg_entries[i].layer == CG_L_RT) != rt)
			continue;
		fprintf(f, "%s\n    \"%s\": %llu", sep, cg_entries[i].name, n);
		sep = ",";
	}
	fprintf(f, "%s},\n", *sep ? "\n  " : "");
}

void cg_stats_write_json(FILE *f)
{
	fprintf(f, "{\n");
	cg_write_entries(f, "calls", cg_stats.calls, 1);
	cg_write_entries(f, "driver_calls", cg_stats.calls, 0);
	cg_write_entries(f, "boundary_calls", cg_stats.boundaries, 1);
	cg_write_entries(f, "boundary_driver_calls", cg_stats.boundaries, 0);
	fprintf(f, "  \"lookups\": %llu,\n  \"syncs_answered\": %llu,\n  \"graphs_forgotten_freed\": %llu,\n"
		   "  \"frees_held\": %llu,\n  \"allocs_again\": %llu,\n  \"host_gaps\": %llu,\n"
		   "  \"joins_owed\": %llu,\n  \"joins_made\": %llu,\n"
		   "  \"piece_ops\": %llu,\n  \"piece_gap_ns\": %llu,\n",
		LD(lookups), LD(syncs_answered), LD(forgotten_freed), LD(frees_held), LD(allocs_again), LD(host_gaps),
		LD(joins_owed), LD(joins_made), LD(piece_ops), LD(piece_gap_ns));
	fprintf(f, "  \"segments\": %llu,\n  \"graphs_built\": %llu,\n  \"graph_launches\": %llu,\n"
		   "  \"ops_total\": %llu,\n  \"ops_replayed\": %llu,\n  \"divergences\": %llu,\n"
		   "  \"pieces_eager\": %llu,\n  \"node_updates\": %llu,\n  \"node_updates_device\": %llu,\n"
		   "  \"graphs_updater\": %llu,\n  \"variants\": %llu,\n"
		   "  \"backoffs\": %llu,\n  \"record_ns\": %llu,\n  \"instantiate_ns\": %llu,\n"
		   "  \"held_host_bytes\": %llu,\n  \"held_device_bytes\": %llu,\n  \"stream_calls\": %llu,\n",
		LD(segments), LD(graphs_built), LD(graph_launches), LD(ops_total), LD(ops_replayed),
		LD(divergences), LD(pieces_eager), LD(node_updates), LD(node_updates_device), LD(graphs_updater), LD(variants),
		LD(backoffs), LD(record_ns), LD(instantiate_ns), LD(held_bytes_host), LD(held_bytes_device), cg_stats_stream_calls());
	fprintf(f, "  \"node_updates_host\": {\"kernel\": %llu, \"copy\": %llu, \"memset\": %llu, \"host\": %llu, "
		   "\"kernel_beside_updater\": %llu, \"copy_beside_updater\": %llu, \"memset_beside_updater\": %llu, "
		   "\"kernel_swapped\": %llu},\n",
		LD(node_updates_host[CG_OP_KERNEL]), LD(node_updates_host[CG_OP_COPY]),
		LD(node_updates_host[CG_OP_MEMSET]), LD(node_updates_host[CG_OP_HOST]),
		LD(node_updates_host_beside[CG_OP_KERNEL]), LD(node_updates_host_beside[CG_OP_COPY]),
		LD(node_updates_host_beside[CG_OP_MEMSET]), LD(kernel_swaps));
	fprintf(f, "  \"governor\": {\"windows\": %llu, \"aside_windows\": %llu, \"probes\": %llu, "
		   "\"probes_slower\": %llu, \"last_ratio\": %.3f},\n",
		LD(gov_windows), LD(gov_aside), LD(gov_probes), LD(gov_slower), (double)LD(gov_ratio_milli) / 1000);
	fprintf(f, "  \"host_cost_ns\": {\"calls\": %llu, \"real\": %llu, \"graph_launch\": %llu, "
		   "\"node_update\": %llu, \"eager_submit\": %llu, \"graph_launch_driver\": %llu, "
		   "\"graph_rebuild\": %llu, \"variant\": %llu, \"readback_wait\": %llu},\n",
		LD(cost_ns[CG_COST_CALLS]), cg_real_ns_total(), LD(cost_ns[CG_COST_LAUNCH]),
		LD(cost_ns[CG_COST_UPDATE]), LD(cost_ns[CG_COST_SUBMIT]), LD(cost_ns[CG_COST_DRIVER]),
		LD(cost_ns[CG_COST_REBUILD]), LD(cost_ns[CG_COST_PICK]), LD(cost_ns[CG_COST_WAIT]));
	fprintf(f, "  \"host_cost_count\": {\"calls\": %llu, \"graph_launch\": %llu, \"node_update\": %llu, "
		   "\"eager_submit\": %llu, \"graph_launch_driver\": %llu, \"graph_rebuild\": %llu, "
		   "\"variant\": %llu, \"readback_wait\": %llu},\n",
		LD(cost_n[CG_COST_CALLS]), LD(cost_n[CG_COST_LAUNCH]), LD(cost_n[CG_COST_UPDATE]),
		LD(cost_n[CG_COST_SUBMIT]), LD(cost_n[CG_COST_DRIVER]),
		LD(cost_n[CG_COST_REBUILD]), LD(cost_n[CG_COST_PICK]), LD(cost_n[CG_COST_WAIT]));
	fprintf(f, "  \"slow_path_ops\": {\"record\": %llu, \"not_kernel\": %llu, \"candidates\": %llu, "
		   "\"timed\": %llu, \"values\": %llu},\n",
		LD(slow[CG_SLOW_RECORD]), LD(slow[CG_SLOW_NOT_KERNEL]), LD(slow[CG_SLOW_CANDIDATES]),
		LD(slow[CG_SLOW_TIMED]), LD(slow[CG_SLOW_VALUES]));
	cg_write_entries(f, "whole_call_ns", cg_stats.call_ns, 1);
	cg_write_entries(f, "whole_call_count", cg_stats.call_n, 1);
	cg_write_entries(f, "whole_driver_call_ns", cg_stats.call_ns, 0);
	cg_write_entries(f, "whole_driver_call_count", cg_stats.call_n, 0);
	cg_write_entries(f, "real_call_ns", cg_stats.real1_ns, 1);
	cg_write_entries(f, "real_call_count", cg_stats.real1_n, 1);
	cg_write_entries(f, "real_driver_call_ns", cg_stats.real1_ns, 0);
	cg_write_entries(f, "real_driver_call_count", cg_stats.real1_n, 0);
	cg_write_entries(f, "eager_call_ns", cg_stats.real_ns, 1);
	cg_write_entries(f, "eager_driver_call_ns", cg_stats.real_ns, 0);
	cg_profile_write_json(f);
	fprintf(f, "  \"enabled\": %s,\n  \"fallbacks\": {", cg_opt.enable ? "true" : "false");
	const char *sep = "";
	for (int i = 0; i < CG_WHY_COUNT; i++) {
		unsigned long long n = LD(fallbacks[i]);
		if (!n)
			continue;
		fprintf(f, "%s\n    \"%s\": %llu", sep, cg_reasons[i].name, n);
		sep = ",";
	}
	fprintf(f, "%s}\n}\n", *sep ? "\n  " : "");
}

/* The five entry points with the most in v, one line each: the count, or
 * with ms set, nanoseconds as milliseconds, and with per set, per one of
 * those calls. */
static void cg_report_top(FILE *f, const atomic_ullong *v, int ms, const atomic_ullong *per)
{
	int top[5] = { -1, -1, -1, -1, -1 };
	for (int i = 0; i < CG_E_COUNT; i++) {
		unsigned long long n = atomic_load_explicit(&v[i], memory_order_relaxed);
		if (!n)
			continue;
		for (int k = 0; k < 5; k++)
			if (top[k] < 0 || n > atomic_load_explicit(&v[top[k]], memory_order_relaxed)) {
				memmove(top + k + 1, top + k, (size_t)(4 - k) * sizeof *top);
				top[k] = i;
				break;
			}
	}
	for (int k = 0; k < 5 && top[k] >= 0; k++) {
		unsigned long long n = atomic_load_explicit(&v[top[k]], memory_order_relaxed);
		unsigned long long calls = per ? atomic_load_explicit(&per[top[k]], memory_order_relaxed) : 0;
		if (ms && calls)
			fprintf(f, "cgraft:     %s: %.3f ms over %llu calls, %.0f ns a call\n", cg_entries[top[k]].name,
				(double)n / 1e6, calls, (double)n / (double)calls);
		else if (ms)
			fprintf(f, "cgraft:     %s: %.3f ms\n", cg_entries[top[k]].name, (double)n / 1e6);
		else
			fprintf(f, "cgraft:     %s: %llu\n", cg_entries[top[k]].name, n);
	}
}

/* The program's calls of stream work (launches, copies, memsets, event
 * records and waits, host functions, NCCL calls), held or not. */
unsigned long long cg_stats_stream_calls(void)
{
	unsigned long long n = 0;
	for (int i = 0; i < CG_E_COUNT; i++)
		if (cg_entries[i].kind == CG_K_OP)
			n += LD(calls[i]);
	return n;
}

void cg_stats_write_report(FILE *f)
{
	unsigned long long total = LD(ops_total), replayed = LD(ops_replayed);
	fprintf(f, "cgraft: report%s\n", cg_opt.enable ? "" : " (pass-through: CGRAFT_ENABLE=0, a bad option or CUDA_LAUNCH_BLOCKING)");
	fprintf(f, "cgraft:   ops seen %llu, replayed in graphs %llu (%.1f%%), of %llu stream-work calls\n", total,
		replayed, total ? 100.0 * (double)replayed / (double)total : 0.0, cg_stats_stream_calls());
	fprintf(f, "cgraft:   segments %llu, graphs built %llu (+%llu variants), graph launches %llu, node updates %llu "
		   "(%llu on the device, by %llu graphs' updaters; from the host %llu kernels, %llu of them given another "
		   "kernel, %llu copies, %llu memsets)\n",
		LD(segments), LD(graphs_built), LD(variants), LD(graph_launches), LD(node_updates), LD(node_updates_device),
		LD(graphs_updater), LD(node_updates_host[CG_OP_KERNEL]), LD(kernel_swaps), LD(node_updates_host[CG_OP_COPY]),
		LD(node_updates_host[CG_OP_MEMSET]));
	fprintf(f, "cgraft:   divergences %llu, stretches run eagerly %llu, back-offs %llu, one-time cost %.3f ms "
		   "(record %.3f, instantiate %.3f)\n",
		LD(divergences), LD(pieces_eager), LD(backoffs), (double)(LD(record_ns) + LD(instantiate_ns)) / 1e6,
		(double)LD(record_ns) / 1e6, (double)LD(instantiate_ns) / 1e6);
	if (LD(syncs_answered))
		fprintf(f, "cgraft:   stream synchronisations answered without a call (the stream's last work a "
			   "read-back just waited for): %llu\n",
			LD(syncs_answered));
	if (LD(joins_owed))
		fprintf(f, "cgraft:   launches over several streams whose other streams' waits on them were left owed "
			   "till work came to them: %llu, waits made later: %llu\n",
			LD(joins_owed), LD(joins_made));
	if (LD(forgotten_freed))
		fprintf(f, "cgraft:   graphs forgotten because memory their copies or memsets name was freed: %llu\n",
			LD(forgotten_freed));
	if (LD(frees_held))
		fprintf(f, "cgraft:   frees in stream order made after the held work before them: %llu\n", LD(frees_held));
	if (LD(host_gaps))
		fprintf(f, "cgraft:   stretches ended where the host worked on its own past CGRAFT_MAX_HOLD_US (or 1 ms): "
			   "%llu\n", LD(host_gaps));
	if (LD(piece_ops))
		fprintf(f, "cgraft:   stretches cut into pieces of %llu ops, the host working %.1f us between calls "
			   "(CGRAFT_PIECE_US)\n", LD(piece_ops), (double)LD(piece_gap_ns) / 1e3);
	if (LD(allocs_again))
		fprintf(f, "cgraft:   allocations in stream order made again once the frees held back went out: %llu\n",
			LD(allocs_again));
	if (LD(held_bytes_host) || LD(held_bytes_device))
		fprintf(f, "cgraft:   held at exit: %llu bytes of pinned staging, %llu bytes of device memory for graphs\n",
			LD(held_bytes_host), LD(held_bytes_device));
	if (LD(gov_probes))
		fprintf(f, "cgraft:   governor: replay %.2fx as fast as standing aside at the last of %llu probes "
			   "(%llu found it slower); stood aside %llu of %llu windows of 25 ms\n",
			(double)LD(gov_ratio_milli) / 1000, LD(gov_probes), LD(gov_slower), LD(gov_aside),
			LD(gov_windows));
	unsigned long long calls_ns = LD(cost_ns[CG_COST_CALLS]);
	if (calls_ns) {
		unsigned long long real = cg_real_ns_total(), launch = LD(cost_ns[CG_COST_LAUNCH]),
				   submit = LD(cost_ns[CG_COST_SUBMIT]), wait = LD(cost_ns[CG_COST_WAIT]),
				   parts = real + launch + submit + wait;
		fprintf(f, "cgraft:   host time in calls the program timed whole: %.3f ms: its eager calls %.3f, %llu graph "
			   "launches %.3f (node updates %.3f, the driver's launch calls %.3f), held work submitted eagerly "
			   "%.3f, %llu read-backs waiting for their graphs %.3f, cgraft's own %.3f over %llu calls\n",
			(double)calls_ns / 1e6, (double)real / 1e6, LD(cost_n[CG_COST_LAUNCH]), (double)launch / 1e6,
			(double)LD(cost_ns[CG_COST_UPDATE]) / 1e6, (double)LD(cost_ns[CG_COST_DRIVER]) / 1e6,
			(double)submit / 1e6, LD(cost_n[CG_COST_WAIT]), (double)wait / 1e6,
			(double)(calls_ns > parts ? calls_ns - parts : 0) / 1e6, LD(cost_n[CG_COST_CALLS]));
		fprintf(f, "cgraft:   of the calls timed whole, by entry point, the longest:\n");
		cg_report_top(f, cg_stats.call_ns, 1, cg_stats.call_n);
		if (real) {
			fprintf(f, "cgraft:   of its eager calls, the longest:\n");
			cg_report_top(f, cg_stats.real_ns, 1, NULL);
		}
	}
	for (int i = 0; i < CG_WHY_COUNT; i++) {
		unsigned long long n = LD(fallbacks[i]);
		if (n)
			fprintf(f, "cgraft:   eager because %s: %llu (%s)\n", cg_reasons[i].name, n, cg_reasons[i].help);
	}
	unsigned long long ended = 0;
	for (int i = 0; i < CG_E_COUNT; i++)
		ended += LD(boundaries[i]);
	if (ended) {
		fprintf(f, "cgraft:   calls that ended segments most (not modelled, or not taken for a reason above):\n");
		cg_report_top(f, cg_stats.boundaries, 0, NULL);
	}
	unsigned long long calls = 0;
	for (int i = 0; i < CG_E_COUNT; i++)
		calls += LD(calls[i]);
	fprintf(f, "cgraft:   intercepted calls %llu\n", calls);
	cg_profile_write_report(f);
}

int cg_stats_any_calls(void)
{
	for (int i = 0; i < CG_E_COUNT; i++)
		if (LD(calls[i]))
			return 1;
	return LD(ops_total) != 0;
}

int cg_stats_expand_path(const char *pattern, long pid, char *out, size_t size)
{
	size_t n = 0;
	for (const char *p = pattern; *p; p++) {
		char buf[24];
		const char *piece = buf;
		if (p[0] == '%' && p[1] == 'p') {
			snprintf(buf, sizeof buf, "%ld", pid);
			p++;
		} else {
			buf[0] = *p;
			buf[1] = 0;
		}
		size_t len = strlen(piece);
		if (n + len + 1 > size)
			return -ENAMETOOLONG;
		memcpy(out + n, piece, len);
		n += len;
	}
	out[n] = 0;
	return 0;
}
