#!/usr/bin/env python3
# Runs a scenario program on the simulated CUDA runtime bare and with the
# interposer preloaded, for several scheduler seeds, and compares the outputs.
"""Exit status: 0 pass, 1 fail, 77 skip (meson's convention)."""

import argparse
import difflib
import json
import operator
import os
import re
import subprocess
import sys
import tempfile

OPS = {">=": operator.ge, "<=": operator.le, "==": operator.eq, "!=": operator.ne,
       ">": operator.gt, "<": operator.lt}
EXPR = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*(>=|<=|==|!=|>|<)\s*(-?\d+(?:\.\d+)?)\s*$")


def lookup(stats, key):
    """Dotted path into the stats JSON; None when absent."""
    cur = stats
    for part in key.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return None
        cur = cur[part]
    return cur


def check_expect(stats, expr):
    m = EXPR.match(expr)
    if not m:
        return f"bad --expect expression {expr!r} (want KEY OP NUMBER, e.g. graph_launches>0)"
    key, op, num = m.group(1), m.group(2), float(m.group(3))
    val = lookup(stats, key)
    if val is None:
        val = 0
    if not isinstance(val, (int, float)):
        return f"{key} is not a number in the stats: {val!r}"
    if not OPS[op](val, num):
        return f"expectation {expr} failed: {key} is {val}"
    return None


def run(prog, env, timeout):
    try:
        p = subprocess.run(prog, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, b"", b"timed out after %d s" % timeout
    return p.returncode, p.stdout, p.stderr


def show_diff(a, b, name_a, name_b):
    diff = difflib.unified_diff(a.decode(errors="replace").splitlines(True),
                                b.decode(errors="replace").splitlines(True), name_a, name_b)
    sys.stdout.write("".join(diff))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--lib", required=True, help="interposer to preload (libcgraft.so)")
    ap.add_argument("--prog", required=True, help="scenario program")
    ap.add_argument("--seeds", type=int, default=20, help="scheduler seeds 1..N")
    ap.add_argument("--simdir", help="directory of the simulated libs (default: the program's)")
    ap.add_argument("--env", action="append", default=[], metavar="K=V", help="extra environment")
    ap.add_argument("--expect", action="append", default=[], metavar="EXPR",
                    help="condition on the preloaded run's stats, e.g. 'graph_launches>0'")
    ap.add_argument("--expect-absent", action="append", default=[], metavar="KEY",
                    help="stats key that must be absent or zero, e.g. 'fallbacks.instantiate'")
    ap.add_argument("--timeout", type=int, default=60, help="seconds per run")
    ap.add_argument("--arg", action="append", default=[], help="argument for the program")
    args = ap.parse_args()

    if not os.path.exists(args.lib):
        print(f"SKIP: {args.lib} does not exist")
        return 77
    if not os.access(args.prog, os.X_OK):
        print(f"FAIL: {args.prog} is not an executable")
        return 1
    simdir = args.simdir or os.path.dirname(os.path.abspath(args.prog))

    base = dict(os.environ)
    # Pieces sized by the host's time between calls would make what a test
    # replays hang on this machine's speed: tests that want them ask.
    base.setdefault("CGRAFT_PIECE_US", "0")
    for kv in args.env:
        if "=" not in kv:
            print(f"FAIL: --env wants K=V, got {kv!r}")
            return 1
        k, v = kv.split("=", 1)
        base[k] = v
    base["LD_LIBRARY_PATH"] = simdir + (":" + base["LD_LIBRARY_PATH"] if base.get("LD_LIBRARY_PATH") else "")
    base.pop("LD_PRELOAD", None)
    base.pop("CGRAFT_STATS", None)

    failures = 0
    reference = None
    with tempfile.TemporaryDirectory(prefix="cgraft-sim-") as tmp:
        for seed in range(1, args.seeds + 1):
            env = dict(base, SIM_SEED=str(seed))
            rc, out, err = run([args.prog] + args.arg, env, args.timeout)
            if rc != 0:
                print(f"FAIL seed {seed}: bare run exited {rc}\n{err.decode(errors='replace')}")
                failures += 1
                continue
            if reference is None:
                reference = out
            elif out != reference:
                # A correct program must print the same for every valid order.
                print(f"FAIL seed {seed}: bare output differs from seed 1 (program or simulator bug)")
                show_diff(reference, out, "bare seed 1", f"bare seed {seed}")
                failures += 1

            stats_path = os.path.join(tmp, f"stats-{seed}.json")
            penv = dict(env, LD_PRELOAD=os.path.abspath(args.lib), CGRAFT_STATS=stats_path)
            prc, pout, perr = run([args.prog] + args.arg, penv, args.timeout)
            if prc != 0:
                print(f"FAIL seed {seed}: preloaded run exited {prc}\n{perr.decode(errors='replace')}")
                failures += 1
                continue
            if pout != out:
                print(f"FAIL seed {seed}: preloaded output differs from bare")
                show_diff(out, pout, "bare", "preloaded")
                failures += 1
                continue
            if not args.expect and not args.expect_absent:
                continue
            try:
                with open(stats_path) as f:
                    stats = json.load(f)
            except (OSError, ValueError) as e:
                print(f"FAIL seed {seed}: no readable stats from the preloaded run ({e})")
                failures += 1
                continue
            missed = [m for m in (check_expect(stats, e) for e in args.expect) if m]
            for msg in missed:
                print(f"FAIL seed {seed}: {msg}")
                failures += 1
            if missed:
                print("  stats: " + ", ".join(f"{k}={stats.get(k)}" for k in
                      ("ops_total", "ops_replayed", "graph_launches", "host_gaps", "fallbacks")))
            for key in args.expect_absent:
                val = lookup(stats, key)
                if val not in (None, 0, {}, []):
                    print(f"FAIL seed {seed}: {key} should be absent, is {val!r}")
                    failures += 1

    if failures:
        print(f"{failures} failure(s) over {args.seeds} seeds")
        return 1
    print(f"PASS: {args.seeds} seeds, outputs identical")
    if reference:
        sys.stdout.write(reference.decode(errors="replace"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
