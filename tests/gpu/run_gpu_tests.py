#!/usr/bin/env python3
# tests/gpu/run_gpu_tests.py: the real-device suite: runs every scenario and workload
# bare and under cgraft, compares stdout byte for byte, reports the share of ops replayed.
"""Usage: run_gpu_tests.py BUILD_DIR [--lib PATH] [--only NAME ...] [--out DIR] [-j N]

Exits 0 when every case matches, 1 when one differs or fails, 77 when there is
no GPU or the GPU programs were not built (meson reports SKIP).
"""
import argparse
import concurrent.futures
import glob
import json
import os
import shutil
import subprocess
import sys
import time

SKIP = 77

# Workload programs in small configurations: (case name, program, arguments).
# The same digest must come out bare and under cgraft; graph-mode runs are the
# program's own stream capture, which cgraft has to leave alone.
WORKLOAD_CASES = [
    ("chain.k10", "chain", ["--k", "10", "--warmup", "5", "--repeats", "5", "--iters", "10"]),
    ("chain.k100.scalar", "chain", ["--k", "100", "--scalar-changes", "--warmup", "5", "--repeats", "5", "--iters", "10"]),
    # Iterations cut at their period, every third one ending in a sync: that one
    # starts like the others, so it is not replayed as a chain.
    ("chain.k100.sync3", "chain", ["--k", "100", "--sync-every", "3", "--warmup", "6", "--repeats", "5", "--iters", "12"]),
    ("chain.k10.nosync", "chain", ["--k", "10", "--sync-every", "0", "--warmup", "5", "--repeats", "5", "--iters", "10"]),
    ("chain.k10.sync7", "chain", ["--k", "10", "--sync-every", "7", "--warmup", "5", "--repeats", "5", "--iters", "10"]),
    ("chain.k10.graph", "chain", ["--mode", "graph", "--k", "10", "--warmup", "5", "--repeats", "5", "--iters", "10"]),
    ("chain.k10.scalar.graph", "chain", ["--mode", "graph", "--k", "10", "--scalar-changes", "--warmup", "5", "--repeats", "5", "--iters", "10"]),
    ("chain_static.k10", "chain_static", ["--k", "10", "--warmup", "5", "--repeats", "5", "--iters", "10"]),
    ("chain_static.k10.scalar", "chain_static", ["--k", "10", "--scalar-changes", "--warmup", "5", "--repeats", "5", "--iters", "10"]),
    ("forkjoin", "forkjoin", ["--warmup", "5", "--repeats", "5", "--iters", "10"]),
    ("forkjoin.graph", "forkjoin", ["--mode", "graph", "--warmup", "5", "--repeats", "5", "--iters", "10"]),
    ("stencil.2d", "stencil", ["--warmup", "5", "--repeats", "5", "--iters", "10"]),
    ("stencil.1d", "stencil", ["--dim", "1", "--nx", "8192", "--warmup", "5", "--repeats", "5", "--iters", "10"]),
    ("stencil.2d.graph", "stencil", ["--mode", "graph", "--warmup", "5", "--repeats", "5", "--iters", "10"]),
    ("solver", "solver", ["--n", "256", "--warmup", "5", "--repeats", "5", "--iters", "30"]),
    ("solver.graph", "solver", ["--mode", "graph", "--n", "256", "--warmup", "5", "--repeats", "5", "--iters", "30"]),
    ("large", "large", ["--n", str(1 << 24), "--warmup", "2", "--repeats", "5", "--iters", "2"]),
    ("passthrough", "passthrough", ["--calls", "2000", "--repeats", "2"]),
    ("hostgap", "hostgap", ["--warmup", "8", "--repeats", "3", "--iters", "12"]),
]

# The fail-closed classes (kernels/class_*.cu): work cgraft must pass through, or
# flush before, unchanged: (case name, program, arguments, extra cgraft environment).
# Each program runs its own repeating loops at their default length.
CLASS_CASES = [
    ("class.drvlink", "class_drvlink", [], {}),
    ("class.unlisted", "class_unlisted", [], {}),
    ("class.ptds", "class_ptds", [], {}),
    ("class.hostspin", "class_hostspin", [], {}),
    # The host spinning again with the hold timer out of reach: the calls
    # themselves (a host function, a kernel given host memory) must end the held
    # work; the timer is only a net.
    ("class.hostspin.nohold", "class_hostspin", [], {"CGRAFT_MAX_HOLD_US": "100000000"}),
    ("class.errors", "class_errors", [], {}),
    ("class.handles", "class_handles", [], {}),
    ("class.multidev", "class_multidev", [], {}),
    ("class.fork", "class_fork", [], {}),
    ("class.legacy", "class_legacy", [], {}),
    # Stream callbacks held (by default each ends held work: semantics.order_stream_callback).
    ("semantics.order_stream_callback.held", "order_stream_callback", [], {"CGRAFT_CALLBACKS": "1"}),
]

# Programs written against CUDA's documented semantics (kernels/semantics):
# each checks its own results, and its digest must be bare's.
SEMANTIC_CASES = [
    f"{kind}_{name}"
    for kind, names in (
        ("mem", "alloc_free arrays_textures batch_ops copy_kinds copy_rotate host_lifetimes host_register "
                "managed mapped_zero_copy memset_pitched pageable_rewrite pingpong_grow pinned_rewrite "
                "pool_bounded reset_reinit symbols vmm_remap"),
        ("order", "capture_threads contexts device_launch device_printf drv_mix error_codes event_chains "
                  "graph_features handle_lifetimes host_func ipc_child launch_events launch_ex launch_shapes "
                  "legacy_stream own_graph pipeline_chunks poll_spin ptds_threads shared_stream stream_callback stream_memops thread_sync"),
        ("lib", "cublas_modes cublas_training cublaslt curand_fft cusolver cusparse thrust_cub"),
    )
    for name in names.split()
]

# Pairs whose digests must agree bare: the hand-captured graph does the same
# work as the eager loop, or the benchmark compares unlike things.
SAME_WORK = [
    ("chain.k10", "chain.k10.graph"),
    ("forkjoin", "forkjoin.graph"),
    ("stencil.2d", "stencil.2d.graph"),
]


def have_gpu():
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            r = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            return False
        return r.returncode == 0 and "GPU" in r.stdout
    # No tool to ask: the device node is the next best sign of a driver.
    return os.path.exists("/dev/nvidiactl") and os.path.exists("/dev/nvidia0")


def clean_env():
    env = {k: v for k, v in os.environ.items() if not k.startswith("CGRAFT_")}
    env.pop("LD_PRELOAD", None)
    return env


def merge_stats(paths):
    """Sums every stats file a run left (one per process, %p in the name)."""
    total = {}
    for p in paths:
        try:
            with open(p) as f:
                d = json.load(f)
        except (OSError, ValueError) as e:
            total.setdefault("_unreadable", []).append(f"{p}: {e}")
            continue
        for k, v in d.items():
            if isinstance(v, bool):
                continue
            if isinstance(v, (int, float)):
                total[k] = total.get(k, 0) + v
            elif isinstance(v, dict):
                sub = total.setdefault(k, {})
                for kk, vv in v.items():
                    if isinstance(vv, (int, float)) and not isinstance(vv, bool):
                        sub[kk] = sub.get(kk, 0) + vv
    return total


def replay_share(stats):
    tot = stats.get("ops_total", 0)
    rep = stats.get("ops_replayed", 0)
    return (rep / tot if tot else 0.0), rep, tot


def run_one(argv, env, timeout, log_prefix):
    t0 = time.monotonic()
    try:
        r = subprocess.run(argv, env=env, capture_output=True, timeout=timeout)
        rc, out, err = r.returncode, r.stdout, r.stderr
    except subprocess.TimeoutExpired as e:
        rc, out, err = "timeout", e.stdout or b"", (e.stderr or b"") + b"\n[killed after timeout]\n"
    with open(log_prefix + ".out", "wb") as f:
        f.write(out)
    with open(log_prefix + ".err", "wb") as f:
        f.write(err)
    return rc, out, err, time.monotonic() - t0


def tail(b, n=15):
    lines = b.decode(errors="replace").rstrip().splitlines()
    return "\n".join("      " + l for l in lines[-n:])


def run_case(case, lib, outdir, timeout, extra_env):
    name, prog, args = case[:3]
    case_env = case[3] if len(case) > 3 else {}
    argv = [prog] + args
    safe = name.replace("/", "_")
    bare_env = clean_env()
    rc_b, out_b, err_b, t_b = run_one(argv, bare_env, timeout, os.path.join(outdir, safe + ".bare"))

    stats_dir = os.path.join(outdir, safe + ".stats")
    shutil.rmtree(stats_dir, ignore_errors=True)
    os.makedirs(stats_dir)
    cg_env = clean_env()
    cg_env.update({"LD_PRELOAD": lib, "CGRAFT_ENABLE": "1",
                   "CGRAFT_STATS": os.path.join(stats_dir, "stats.%p.json")})
    cg_env.update(case_env)
    cg_env.update(extra_env)
    rc_c, out_c, err_c, t_c = run_one(argv, cg_env, timeout, os.path.join(outdir, safe + ".cgraft"))
    stats = merge_stats(sorted(glob.glob(os.path.join(stats_dir, "*.json"))))

    problems = []
    if rc_b != 0:
        problems.append(f"bare run failed (rc={rc_b}):\n{tail(err_b)}")
    if rc_c != rc_b:
        problems.append(f"exit status differs: bare {rc_b}, cgraft {rc_c}:\n{tail(err_c)}")
    if out_b != out_c:
        problems.append("stdout differs:\n    bare:   " + out_b.decode(errors="replace").strip()[:400]
                        + "\n    cgraft: " + out_c.decode(errors="replace").strip()[:400]
                        + "\n    cgraft stderr:\n" + tail(err_c))
    if not out_b.strip() and rc_b == 0:
        problems.append("no output to compare")
    return {"name": name, "ok": not problems, "problems": problems, "stats": stats,
            "stdout": out_b.decode(errors="replace"), "seconds_bare": t_b, "seconds_cgraft": t_c,
            "stats_files": len(glob.glob(os.path.join(stats_dir, "*.json")))}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build_dir")
    ap.add_argument("--lib", help="libcgraft.so (default BUILD_DIR/shim/libcgraft.so)")
    ap.add_argument("--only", nargs="*", help="run only cases whose name contains one of these")
    ap.add_argument("--out", help="log directory (default BUILD_DIR/gpu-tests)")
    ap.add_argument("--timeout", type=float, default=180, help="seconds per run")
    ap.add_argument("--iters", type=int, default=40, help="iterations per scenario")
    ap.add_argument("-j", "--jobs", type=int, default=4, help="cases run at once")
    ap.add_argument("--env", action="append", default=[], metavar="K=V",
                    help="extra environment for the cgraft runs, e.g. CGRAFT_MIN_REPEATS=2")
    ap.add_argument("--json", help="write per-case results here")
    a = ap.parse_args()

    if not have_gpu():
        print("SKIP: no GPU (nvidia-smi -L lists none)")
        return SKIP

    build = os.path.abspath(a.build_dir)
    kdir = os.path.join(build, "kernels")
    lib = os.path.abspath(a.lib or os.path.join(build, "shim", "libcgraft.so"))
    if not os.path.exists(os.path.join(kdir, "scenarios")):
        print(f"SKIP: GPU programs not built in {kdir} (nvcc missing, or run ninja first)")
        return SKIP
    if not os.path.exists(lib):
        print(f"FAIL: {lib} does not exist; build the project first")
        return 1
    extra_env = {}
    for kv in a.env:
        k, _, v = kv.partition("=")
        extra_env[k] = v
    outdir = os.path.abspath(a.out or os.path.join(build, "gpu-tests"))
    os.makedirs(outdir, exist_ok=True)

    cases = []
    for prog in ("scenarios", "scenarios_ptds"):
        path = os.path.join(kdir, prog)
        if not os.path.exists(path):
            print(f"FAIL: {path} missing")
            return 1
        names = subprocess.run([path, "--list"], capture_output=True, text=True, env=clean_env(),
                               check=True).stdout.split()
        cases += [(f"{prog}:{n}", path, [n, "--iters", str(a.iters)]) for n in names]
    for name, prog, args in WORKLOAD_CASES:
        path = os.path.join(kdir, prog)
        if os.path.exists(path):
            cases.append((name, path, args))
        else:
            print(f"note: {path} missing, {name} not run")
    for name, prog, args, env in CLASS_CASES:
        path = os.path.join(kdir, prog)
        if not os.path.exists(path):
            print(f"FAIL: {path} missing")
            return 1
        cases.append((name, path, args, env))
    for prog in SEMANTIC_CASES:
        path = os.path.join(kdir, prog)
        if not os.path.exists(path) and prog.startswith("lib_"):
            print(f"skipped: {path} not built (the toolkit lacks a library it links)")
            continue
        if not os.path.exists(path):
            print(f"FAIL: {path} missing")
            return 1
        cases.append((f"semantics.{prog}", path, []))
    if a.only:
        cases = [c for c in cases if any(o in c[0] for o in a.only)]

    print(f"gpu tests: {len(cases)} cases, lib {lib}, logs in {outdir}", flush=True)
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        futs = [pool.submit(run_case, c, lib, outdir, a.timeout, extra_env) for c in cases]
        results = []
        for f in futs:  # in submission order, so the log reads the same every time
            r = f.result()
            results.append(r)
            share, rep, tot = replay_share(r["stats"])
            info = f"replayed {100 * share:5.1f}% ({rep}/{tot} ops)"
            st = r["stats"]
            if st:
                info += f" graphs={st.get('graphs_built', 0)} launches={st.get('graph_launches', 0)}"
                if st.get("divergences"):
                    info += f" divergences={st['divergences']}"
                if st.get("fallbacks"):
                    info += " fallbacks=" + ",".join(f"{k}:{v}" for k, v in sorted(st["fallbacks"].items()))
            else:
                info += " (no stats written)"
            print(f"{'PASS' if r['ok'] else 'FAIL'} {r['name']:<34} {info}", flush=True)
            for p in r["problems"]:
                print("    " + p, flush=True)

    by_name = {r["name"]: r for r in results}
    for x, y in SAME_WORK:
        if x in by_name and y in by_name and by_name[x]["ok"] and by_name[y]["ok"]:
            same = by_name[x]["stdout"] == by_name[y]["stdout"]
            print(f"{'PASS' if same else 'FAIL'} same-work {x} == {y}")
            if not same:
                print(f"    {x}: {by_name[x]['stdout'].strip()}\n    {y}: {by_name[y]['stdout'].strip()}")
                results.append({"name": f"same-work:{x}:{y}", "ok": False, "problems": ["digests differ"],
                                "stats": {}})

    failed = [r["name"] for r in results if not r["ok"]]
    tot_rep = sum(r["stats"].get("ops_replayed", 0) for r in results)
    tot_ops = sum(r["stats"].get("ops_total", 0) for r in results)
    print(f"gpu tests: {len(results) - len(failed)}/{len(results)} passed in {time.monotonic() - t0:.0f} s; "
          f"ops replayed overall {100 * tot_rep / tot_ops if tot_ops else 0:.1f}% ({tot_rep}/{tot_ops})")
    if failed:
        print("failed: " + " ".join(failed))
    if a.json:
        with open(a.json, "w") as f:
            json.dump([{k: v for k, v in r.items() if k != "stdout"} for r in results], f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
