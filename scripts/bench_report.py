#!/usr/bin/env python3
# scripts/bench_report.py: turns the JSON collected by scripts/bench into a Markdown table
# (docs/bench.md) and a bar chart (docs/bench.png), and prints the table.
"""Usage: bench_report.py RESULTS.json [--md docs/bench.md] [--png docs/bench.png]"""
import argparse
import json
import os
import sys


def fmt(v, spec=".1f", none="–"):
    return none if v is None else format(v, spec)


def fmt_x(v):
    return "–" if v is None else f"{v:.2f}×"


def fmt_share(v):
    return "–" if v is None else f"{100 * v:.1f}%"


def fmt_payback(row):
    if row.get("payback_iters") is not None:
        return f"{row['payback_iters']:.0f}"
    if row.get("one_time_us") is not None and row.get("eager_us") and row.get("cgraft_us"):
        return "never"  # cgraft is not faster per iteration: the one-time cost never returns
    return "–"


def fmt_match(v):
    return {True: "same", False: "**DIFFERS**", None: "–"}[v]


def table(res):
    m = res.get("meta", {})
    lines = ["# cgraft benchmark", ""]
    lines.append(f"- GPU: {m.get('gpu', 'unknown')} (driver {m.get('driver', '?')}, "
                 f"CUDA {m.get('cuda_driver_api', '?')} driver API, toolkit {m.get('cuda_toolkit', '?')})")
    lines.append(f"- Date: {m.get('date', '?')}")
    lines.append(f"- Bench wall time: {res.get('seconds', 0):.0f} s")
    lines.append("")
    lines.append("Times are medians over at least 5 timed repeats, per iteration (per training step for "
                 "torch). *speedup* = eager / cgraft; *vs graph* = cgraft / hand-written graph (1.0 is the "
                 "limit); *one-time* = record + instantiate cost from cgraft's stats; *payback* = one-time "
                 "cost / (eager − cgraft) in iterations; *output* compares the program's output bare and "
                 "under cgraft.")
    lines.append("")
    lines.append("| workload | eager µs | cgraft µs | graph µs | speedup | vs graph | replayed | one-time ms "
                 "| payback iters | output |")
    lines.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for r in res.get("rows", []):
        name = r["name"] + (f" (failed: {', '.join(r['failed'])})" if r.get("failed") else "")
        ot = r.get("one_time_us")
        lines.append(f"| {name} | {fmt(r.get('eager_us'))} | {fmt(r.get('cgraft_us'))} | {fmt(r.get('graph_us'))} "
                     f"| {fmt_x(r.get('speedup'))} | {fmt(r.get('vs_graph'), '.2f')} "
                     f"| {fmt_share(r.get('replay_share'))} | {fmt(None if ot is None else ot / 1000, '.2f')} "
                     f"| {fmt_payback(r)} | {fmt_match(r.get('output_match'))} |")
    hot = [r for r in res.get("rows", []) if r.get("host_us_per_kernel") is not None
           or r.get("held_host_bytes") is not None or r.get("held_device_bytes") is not None]
    if hot:
        lines += ["", "## Host time per deferred kernel, and memory cgraft holds", "",
                  "*host µs/kernel*: the median time the timed loop took before its final synchronisation "
                  "under cgraft, per kernel launched (the GPU keeps up, so this is the host's cost of a "
                  "deferred launch, graph launches included). *floor*: the same loop's under an "
                  "interposer that does nothing (`kernels/null_launch.c`): the program's loop and the "
                  "runtime's launch stub, which no interposer avoids. *graph*: the hand-written graph's "
                  "loop, per kernel in it. *held*: pinned staging and arenas on the "
                  "host, and the device memory the graph instantiations took (free memory before and "
                  "after), at exit.", "",
                  "| workload | host µs/kernel | floor µs/kernel | graph µs/kernel | vs graph "
                  "| held host KiB | held device KiB |",
                  "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
        kib = lambda b: None if b is None else b / 1024  # noqa: E731
        for r in hot:
            lines.append(f"| {r['name']} | {fmt(r.get('host_us_per_kernel'), '.3f')} | "
                         f"{fmt(r.get('floor_us_per_kernel'), '.3f')} | "
                         f"{fmt(r.get('graph_host_us_per_kernel'), '.3f')} | "
                         f"{fmt(r.get('vs_graph'), '.2f')} | {fmt(kib(r.get('held_host_bytes')), '.0f')} | "
                         f"{fmt(kib(r.get('held_device_bytes')), '.0f')} |")
    ab = [r for r in res.get("rows", []) if r.get("ab")]
    if ab:
        lines += ["", "## PyTorch, cgraft off and on within one process", "",
                  "One process per model under cgraft, 38 blocks of 10 steps, cgraft switched off "
                  "(`cgraft_set_enabled(0)`: every call passes through, as eager) and on in the order "
                  "off, on, on, off, ...; medians per step, and the quartiles of the ratios of "
                  "neighbouring blocks. Unlike the rows above, the host's drift between processes "
                  "does not enter.", "",
                  "*T_calls* is the host time the eager CUDA calls themselves take per step "
                  "(`cgraft_call_time_ns`, in extra eager blocks); *saved* = (off − on) / T_calls, the "
                  "share of what an interposer can save at most.", "",
                  "| workload | cgraft off µs | cgraft on µs | speedup | neighbouring blocks, quartiles "
                  "| T_calls µs | saved |",
                  "| --- | ---: | ---: | ---: | --- | ---: | ---: |"]
        for r in ab:
            a = r["ab"]
            lines.append(f"| {r['name']} | {fmt(a.get('ab_eager_us'))} | {fmt(a.get('ab_cgraft_us'))} "
                         f"| {fmt_x(a.get('ab_ratio'))} | {fmt(a.get('ab_pair_lo'), '.2f')}–"
                         f"{fmt(a.get('ab_pair_hi'), '.2f')} ({fmt(a.get('pairs'), '.0f')} pairs) "
                         f"| {fmt(a.get('ab_tcalls_us'))} | {fmt_share(a.get('ab_saved_share'))} |")
    pt = res.get("passthrough")
    if pt:
        lines += ["", "## Interception cost per call (same binary)", "",
                  "| API | bare ns | preloaded, CGRAFT_ENABLE=0 ns | added ns | CGRAFT_ENABLE=1 ns |",
                  "| --- | ---: | ---: | ---: | ---: |"]
        for p in pt:
            lines.append(f"| {p['api']} | {fmt(p.get('bare_ns'))} | {fmt(p.get('disabled_ns'))} "
                         f"| {fmt(p.get('overhead_ns'), '+.1f')} | {fmt(p.get('enabled_ns'))} |")
    upd = res.get("nodeupdate")
    if upd:
        lines += ["", "## Host cost of a kernel-node update", "",
                  "`kernels/nodeupdate`: an eager launch, and the update of one node of an instantiated "
                  "64-node graph before its launch (the slope over 64 updates), by the size of the "
                  "kernel's parameters: 32 bytes (a scalar kernel), 648 (PyTorch's elementwise kernels), "
                  "3368 (its multi-tensor-apply kernels, which the foreach optimizers use).", "",
                  "| parameter bytes | eager launch ns | update, runtime API ns | update, driver API ns |",
                  "| ---: | ---: | ---: | ---: |"]
        by = {}
        for t in upd:
            by.setdefault(int(t.get("size", 0)), {})[t.get("api")] = t.get("ns")
        for size in sorted(by):
            d = by[size]
            lines.append(f"| {size} | {fmt(d.get('eager_launch'), '.0f')} | {fmt(d.get('runtime_update'), '.0f')} "
                         f"| {fmt(d.get('driver_update'), '.0f')} |")
    if res.get("skipped"):
        lines += ["", "Skipped (time budget or missing dependency): " + ", ".join(res["skipped"])]
    fb = {}
    for r in res.get("rows", []):
        for k, v in (r.get("stats", {}).get("fallbacks") or {}).items():
            fb.setdefault(k, []).append(f"{r['name']}: {v}")
    if fb:
        lines += ["", "## Fallbacks reported by cgraft", ""]
        for k in sorted(fb):
            lines.append(f"- `{k}`: " + "; ".join(fb[k]))
    return "\n".join(lines) + "\n"


def chart(res, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"bench_report: matplotlib missing, {path} not written", file=sys.stderr)
        return False
    rows = [r for r in res.get("rows", []) if r.get("eager_us")]
    pt = res.get("passthrough") or []
    if not rows and not pt:
        return False
    fig, axes = plt.subplots(1, 2 if pt else 1, figsize=(14 if pt else 10, 5),
                             gridspec_kw={"width_ratios": [3, 1]} if pt else None)
    ax = axes[0] if pt else axes
    names = [r["name"] for r in rows]
    x = list(range(len(rows)))
    w = 0.38
    cg = [r.get("speedup") or 0 for r in rows]
    gr = [r.get("graph_speedup") or 0 for r in rows]
    b1 = ax.bar([i - w / 2 for i in x], cg, w, label="cgraft (eager / cgraft)")
    b2 = ax.bar([i + w / 2 for i in x], gr, w, label="hand-written graph (eager / graph)")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(x)
    ax.set_xticklabels(names, rotation=30, ha="right")
    ax.set_ylabel("speedup over eager (×)")
    ax.set_title("Per-iteration speedup over plain eager launches")
    for bars in (b1, b2):
        for b in bars:
            if b.get_height() > 0:
                ax.annotate(f"{b.get_height():.2f}", (b.get_x() + b.get_width() / 2, b.get_height()),
                            ha="center", va="bottom", fontsize=7)
    ax.legend()
    if pt:
        ax2 = axes[1]
        apis = [p["api"] for p in pt]
        ov = [p.get("overhead_ns") or 0 for p in pt]
        ax2.barh(apis, ov, color="tab:gray")
        ax2.set_xlabel("ns added per call (CGRAFT_ENABLE=0 vs bare)")
        ax2.set_title("Interception cost")
        ax2.axvline(0, color="black", linewidth=0.8)
    m = res.get("meta", {})
    fig.suptitle(f"cgraft on {m.get('gpu', 'unknown GPU')}, driver {m.get('driver', '?')}, {m.get('date', '')}")
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=120)
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("results")
    ap.add_argument("--md", default="docs/bench.md")
    ap.add_argument("--png", default="docs/bench.png")
    a = ap.parse_args()
    with open(a.results) as f:
        res = json.load(f)
    md = table(res)
    os.makedirs(os.path.dirname(os.path.abspath(a.md)), exist_ok=True)
    with open(a.md, "w") as f:
        f.write(md)
        if chart(res, a.png):
            f.write(f"\n![benchmark chart]({os.path.basename(a.png)})\n")
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
