#!/usr/bin/env python3
# CGRAFT_PROFILE end to end on the simulator, with a stand-in libcupti.so.13
# that delivers a fixed set of records: the figures in the stats file and the
# report, the trace, one warning when CUPTI fails, nothing loaded when off,
# and the program's output the same in every case.
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

ap = argparse.ArgumentParser()
ap.add_argument("--lib", required=True)
ap.add_argument("--prog", required=True)
ap.add_argument("--fake-dir", required=True)
a = ap.parse_args()

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


tmp = tempfile.mkdtemp(prefix="cgraft-profile-")
base = {k: v for k, v in os.environ.items() if not k.startswith("CGRAFT_") and k not in ("LD_PRELOAD", "FAKE_CUPTI_FAIL")}
base["SIM_SEED"] = "1"
base["LD_LIBRARY_PATH"] = a.fake_dir + (":" + base["LD_LIBRARY_PATH"] if base.get("LD_LIBRARY_PATH") else "")


def run(name, extra, wrapper=()):
    d = os.path.join(tmp, name)
    os.makedirs(d)
    env = dict(base, LD_PRELOAD=os.path.abspath(a.lib), CGRAFT_STATS=os.path.join(d, "s-%p.json"),
               FAKE_CUPTI_MARK=os.path.join(d, "loaded"), **extra)
    p = subprocess.run(list(wrapper) + [a.prog], env=env, capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, f"{name}: exit status {p.returncode}: {p.stderr[-2000:]}")
    stats = [json.load(open(f)) for f in glob.glob(os.path.join(d, "s-*.json"))]
    check(len(stats) == 1, f"{name}: {len(stats)} stats files")
    traces = glob.glob(os.path.join(d, "t-*.txt"))
    return p, (stats[0] if stats else {}), traces, os.path.exists(os.path.join(d, "loaded"))


bare = subprocess.run([a.prog], env=base, capture_output=True, text=True, timeout=120)
check(bare.returncode == 0, "bare run failed")


def same_output(name, p):
    check(p.stdout == bare.stdout, f"{name}: the program's output differs from the bare run")


def warnings(p):
    return [l for l in p.stderr.splitlines() if "CGRAFT_PROFILE" in l and "warning" in l]


# Off: libcupti is not even opened.
p, st, _, loaded = run("off", {})
same_output("off", p)
check(not loaded, "off: libcupti.so.13 was loaded")
check("profile" not in st, "off: the stats file has a profile object")

# On, with the trace: the figures of the fake's records.
p, st, traces, loaded = run("on", {"CGRAFT_PROFILE": "1", "CGRAFT_REPORT": "1",
                                   "CGRAFT_PROFILE_TRACE": os.path.join(tmp, "on", "t-%p.txt")})
same_output("on", p)
check(loaded, "on: libcupti.so.13 not loaded")
check(not warnings(p), f"on: warnings: {warnings(p)}")
pr = st.get("profile", {})
want = {
    "available": True, "ops": 22, "window_ns": 2990, "busy_ns": 1100, "devices": 1,
    "gaps": {"count": 20, "total_ns": 1890, "median_ns": 40, "p90_ns": 40},
    "eager": {"ops": 11, "busy_ns": 700, "gaps": {"count": 10, "total_ns": 760, "median_ns": 40, "p90_ns": 40}},
    "replayed": {"ops": 11, "busy_ns": 400, "gaps": {"count": 10, "total_ns": 1130, "median_ns": 10, "p90_ns": 10}},
    "cost": {"records": 23, "stored": 22, "untimed": 1, "dropped": 2, "over_cap": 0, "buffers": 2},
}


def compare(got, exp, path):
    for k, v in exp.items():
        if isinstance(v, dict):
            compare(got.get(k, {}), v, path + k + ".")
        else:
            check(got.get(k) == v, f"on: profile.{path}{k} is {got.get(k)!r}, expected {v!r}")


compare(pr, want, "")
check(abs(pr.get("busy_share", 0) - 1100 / 2990) < 1e-5, f"on: busy_share {pr.get('busy_share')}")
check(abs(pr.get("eager", {}).get("busy_share", 0) - 700 / 2990) < 1e-5, "on: eager busy_share")
for line in ["cgraft:   profile: GPU busy 36.8% of 3.0 us (1.1 us, 22 ops), idle gaps 20 (median 40 ns, "
             "p90 40 ns, total 1.9 us)",
             "cgraft:   profile: eager: 11 ops, busy 23.4% (700 ns), gaps 10 (median 40 ns, p90 40 ns, total 760 ns)",
             "cgraft:   profile: replayed (in graphs): 11 ops, busy 13.4% (400 ns), gaps 10 (median 10 ns, p90 10 ns",
             "cgraft:   profile: 1 records without timestamps, 2 dropped by CUPTI",
             "cgraft:   profile cost: 23 records in 2 buffers of 4096 KiB"]:
    check(line in p.stderr, f"on: report lacks {line!r}:\n{p.stderr}")
check(len(traces) == 1, f"on: {len(traces)} trace files")
if traces:
    lines = open(traces[0]).read().splitlines()
    check(lines[0].startswith("#"), "trace: no header")
    rows = [l.split() for l in lines[1:]]
    check(len(rows) == 22 and all(len(r) == 6 for r in rows), f"trace: rows {rows}")
    starts = [int(r[0]) for r in rows]
    check(starts == sorted(starts), "trace: not in time order")
    check(rows and rows[0] == ["500", "600", "memcpy", "0", "1", "HtoD"], f"trace: first row {rows[:1]}")
    check(sum(r[2:] == ["kernel", "1", "2", "void_k<int>(int)"] for r in rows) == 10, "trace: graph kernels")
    check(sum(r[2:] == ["kernel", "0", "1", "_Z6k_axpbPfPKfiff"] for r in rows) == 10, "trace: eager kernels")
    check(["3000", "3010", "memset", "1", "3", "memset"] in rows, "trace: memset")

# CUPTI failing: one warning, the reason in the stats file, the same output,
# also when a tool that calls no CUDA (timeout) runs the program.
for fail, why in [("enable", "cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET) failed: CUPTI_ERROR_FAKE"),
                  ("register", "cuptiActivityRegisterCallbacks failed: CUPTI_ERROR_FAKE")]:
    for wrapped in (False, True):
        name = f"fail-{fail}" + ("-wrapped" if wrapped else "")
        p, st, _, _ = run(name, {"CGRAFT_PROFILE": "1", "CGRAFT_REPORT": "1", "FAKE_CUPTI_FAIL": fail},
                          ("timeout", "60") if wrapped else ())
        same_output(name, p)
        check(len(warnings(p)) == 1, f"{name}: {len(warnings(p))} warnings: {p.stderr}")
        pr = st.get("profile", {})
        check(pr.get("available") is False and why in pr.get("why", ""), f"{name}: profile {pr}")
        check("profile: unavailable (" + why in p.stderr, f"{name}: report: {p.stderr}")

# The flush failing: what came before it, and a warning.
p, st, _, _ = run("fail-flush", {"CGRAFT_PROFILE": "1", "FAKE_CUPTI_FAIL": "flush"})
same_output("fail-flush", p)
check(len(warnings(p)) == 1 and "cuptiActivityFlushAll failed" in p.stderr, f"fail-flush: {p.stderr}")
pr = st.get("profile", {})
check(pr.get("available") is True and pr.get("ops") == 11 and pr.get("busy_ns") == 700 and
      pr.get("window_ns") == 1460, f"fail-flush: profile {pr}")

# Not found at all: the warning names what was tried and LD_LIBRARY_PATH.
p, st, _, _ = run("missing", {"CGRAFT_PROFILE": "1", "CUDA_HOME": "/nonexistent", "LD_LIBRARY_PATH": "/nonexistent"})
same_output("missing", p)
pr = st.get("profile", {})
if os.path.exists("/usr/local/cuda/lib64/libcupti.so.13") or os.path.exists("/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13"):
    # The toolkit's own is found: on the simulator's driver it fails or sees nothing.
    check("available" in pr and len(warnings(p)) <= 1, f"missing: profile {pr}, {p.stderr}")
else:
    check(pr.get("available") is False and "LD_LIBRARY_PATH" in pr.get("why", "") and
          "/nonexistent/lib64/libcupti.so.13" in pr.get("why", ""), f"missing: profile {pr}")
    check(len(warnings(p)) == 1, f"missing: {p.stderr}")

if failures:
    print(f"{len(failures)} failures; files in {tmp}", file=sys.stderr)
    sys.exit(1)
print("profile pipeline: ok")
