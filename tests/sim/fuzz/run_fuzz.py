#!/usr/bin/env python3
"""Differential fuzzing of cgraft on the simulated CUDA runtime.

Runs the generated programs of tests/sim/fuzz/fuzz.c in batches, bare and with
cgraft preloaded, for several scheduler seeds (SIM_SEED), and compares the
per-program digests. Bare runs must agree with each other across scheduler
seeds: where they do not, the generator made a program whose result depends
on the order of device work (a generator bug, reported as such). A program
whose preloaded digest differs from the bare one is run again alone to
confirm; confirmed failures are appended to --keep.

Modes: the default (COUNT programs from --seed; --long: a million),
--bare-check (bare runs only, scheduler seeds times SIM_DEVICE_THREAD=0/1:
validates the generator), --regressions FILE (only the seeds listed there;
an empty list passes; a line NAME=VALUE sets a FUZZ_* variable for the
seeds after it, the generator they were found with) and --minimize SEED (the fewest iterations and template
ops with which the program still differs; print it with "fuzz SEED 1 --dump"
and the FUZZ_* variables it names).

Exit status: 0 when nothing differs, 1 otherwise, 77 (skip) when --lib does
not exist. The last line reads "fuzz: N programs, M differ".
"""

import argparse
import concurrent.futures
import datetime
import os
import re
import subprocess
import sys
import threading
import time

LINE = re.compile(rb"^seed (\d+) ([0-9a-f]{16})$")


def parse(out):
    res = {}
    for line in (out or b"").splitlines():
        m = LINE.match(line.strip())
        if m:
            res[int(m.group(1))] = m.group(2).decode()
    return res


def tail(b, n=600):
    s = (b or b"").decode(errors="replace").strip()
    return s[-n:]


class Runner:
    def __init__(self, prog, lib, base_env, timeout_per_prog):
        self.prog = prog
        self.lib = lib
        self.base = base_env
        self.tpp = timeout_per_prog

    def env(self, preload, sim_seed, device_thread=None):
        e = dict(self.base)
        e["SIM_SEED"] = str(sim_seed)
        if device_thread is not None:
            e["SIM_DEVICE_THREAD"] = str(device_thread)
        if preload:
            e["LD_PRELOAD"] = self.lib
            e.pop("FUZZ_CHECK", None)
        else:
            e.pop("LD_PRELOAD", None)
            # Bare runs stop at a result the generator did not expect.
            e["FUZZ_CHECK"] = "1"
        return e

    def run_once(self, start, count, env, timeout=None):
        timeout = timeout or 10 + self.tpp * count
        try:
            p = subprocess.run([self.prog, str(start), str(count)], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=timeout)
            return p.returncode, parse(p.stdout), p.stderr
        except subprocess.TimeoutExpired as e:
            return "timeout", parse(e.stdout), e.stderr or b""

    def run_range(self, start, count, env):
        """Digests of seeds start..start+count-1. A seed that crashed or hung
        gets "!<what>: <stderr tail>" and the rest of the range runs on."""
        res = {}
        s, end = start, start + count
        while s < end:
            rc, d, err = self.run_once(s, end - s, env)
            res.update({k: v for k, v in d.items() if s <= k < end})
            missing = next((x for x in range(s, end) if x not in res), None)
            if missing is None:
                break
            what = "timed out" if rc == "timeout" else f"exited {rc}"
            res[missing] = f"!{what}: {tail(err)}"
            s = missing + 1
        return res


def batches(start, count, size):
    out = []
    s = start
    while s < start + count:
        n = min(size, start + count - s)
        out.append((s, n))
        s += n
    return out


def supports_device_thread(simdir):
    try:
        with open(os.path.join(simdir, "libcuda.so.1"), "rb") as f:
            return b"SIM_DEVICE_THREAD" in f.read()
    except OSError:
        return False


def short(d):
    return d if not d.startswith("!") else d.split(":", 1)[0][1:]


def minimize(R, seed, ks, repeat=1):
    """Smallest iteration counts and set of template ops (FUZZ_ITERS,
    FUZZ_WITERS, FUZZ_DROP) with which the program still differs under cgraft
    (the fixer keeps every candidate deterministic). A difference that shows
    in some runs only (one that depends on when the hold timer fires) is
    looked for in `repeat` runs under cgraft of each candidate."""
    def fails(iters, witers, drop):
        extra = {"FUZZ_DROP": ",".join(map(str, sorted(drop)))}
        if iters is not None:
            extra["FUZZ_ITERS"] = str(iters)
        if witers is not None:
            extra["FUZZ_WITERS"] = str(witers)
        bare = None
        for k in ks:
            rc, d, _ = R.run_once(seed, 1, dict(R.env(False, k), **extra), timeout=10)
            if rc != 0 or seed not in d or (bare is not None and d[seed] != bare):
                return False          # no longer a valid program
            bare = d[seed]
        def differs(k):
            rc2, d2, _ = R.run_once(seed, 1, dict(R.env(True, k), **extra), timeout=10)
            return rc2 != 0 or d2.get(seed) != bare
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as ex:
            return any(ex.map(differs, [k for k in ks for _ in range(repeat)]))

    out = subprocess.run([R.prog, str(seed), "1", "--dump", "--gen-only"], env=R.env(False, 1),
                         stdout=subprocess.PIPE).stdout.decode()
    m = re.search(r"iters=(\d+) worker=(\d) witers=(\d+)", out)
    iters, witers = int(m.group(1)), int(m.group(3))
    ids = [int(x) for x in re.findall(r"^\s+(?:\| )?#(\d+)", out, re.M)]
    if not fails(None, None, set()):
        print(f"seed {seed} does not differ alone")
        return 1
    for n in range(1, iters):
        if fails(n, None, set()):
            iters = n
            break
    for n in range(1, witers):
        if fails(iters, n, set()):
            witers = n
            break
    drop = set()
    cand = [i for i in ids]
    chunk = max(1, len(cand) // 2)
    while chunk >= 1:
        i, progress = 0, False
        while i < len(cand):
            part = [x for x in cand[i:i + chunk] if x not in drop]
            if part and fails(iters, witers, drop | set(part)):
                drop |= set(part)
                progress = True
            i += chunk
        if not progress:
            chunk //= 2
    env = dict(R.env(False, 1), FUZZ_DROP=",".join(map(str, sorted(drop))), FUZZ_ITERS=str(iters),
               FUZZ_WITERS=str(witers))
    dumped = subprocess.run([R.prog, str(seed), "1", "--dump", "--gen-only"], env=env,
                            stdout=subprocess.PIPE).stdout.decode()
    print(f"minimal: FUZZ_ITERS={iters} FUZZ_WITERS={witers} FUZZ_DROP={env['FUZZ_DROP']}")
    print(dumped.rsplit("generated", 1)[0])
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", default="", help="libcgraft.so to preload (not needed for --bare-check)")
    ap.add_argument("--prog", required=True, help="the fuzz executable")
    ap.add_argument("--count", type=int, default=10000, help="programs (default 10000)")
    ap.add_argument("--long", action="store_true", help="1,000,000 programs")
    ap.add_argument("--batch", type=int, default=250, help="programs a process (default 250)")
    ap.add_argument("--seed", type=int, default=1, help="first program seed (default 1)")
    ap.add_argument("--sim-seeds", type=int, default=2, help="scheduler seeds 1..K (default 2)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="parallel runs (default: CPUs)")
    ap.add_argument("--keep", help="append confirmed failures to this file")
    ap.add_argument("--env", action="append", default=[], metavar="K=V", help="extra environment")
    ap.add_argument("--simdir", help="directory of the simulated libraries (default: the program's)")
    ap.add_argument("--bare-check", action="store_true", help="bare runs only: validate the generator")
    ap.add_argument("--regressions", metavar="FILE", help="run only the seeds listed in FILE")
    ap.add_argument("--minimize", type=int, metavar="SEED",
                    help="reduce a failing program to the fewest ops and iterations that still differ")
    ap.add_argument("--repeat", type=int, default=1, metavar="N",
                    help="with --minimize: runs under cgraft of each candidate (a difference seen in some only)")
    ap.add_argument("--timeout-per-program", type=float, default=0.1, help="seconds a program may take (default 0.1)")
    args = ap.parse_args()

    if not args.bare_check and not os.path.exists(args.lib):
        print(f"SKIP: {args.lib} does not exist")
        print("fuzz: 0 programs, 0 differ")
        return 77
    if not os.access(args.prog, os.X_OK):
        print(f"FAIL: {args.prog} is not an executable")
        print("fuzz: 0 programs, 0 differ")
        return 1
    if args.long:
        args.count = 1000000
    prog = os.path.abspath(args.prog)
    simdir = os.path.abspath(args.simdir or os.path.dirname(prog))
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
    base.setdefault("CGRAFT_BACKOFF_SLOW", "0")
    base.pop("LD_PRELOAD", None)
    base.pop("CGRAFT_STATS", None)
    R = Runner(prog, os.path.abspath(args.lib), base, args.timeout_per_program)
    ks = list(range(1, max(1, args.sim_seeds) + 1))
    t0 = time.time()
    if args.minimize is not None:
        return minimize(R, args.minimize, ks, max(1, args.repeat))

    # What to run: (start, count) ranges; regressions name their own.
    if args.regressions:
        ranges, extra = [], {}
        try:
            with open(args.regressions) as f:
                for line in f:
                    line = line.split("#", 1)[0].split()
                    if not line:
                        continue
                    if "=" in line[0]:
                        k, v = line[0].split("=", 1)
                        extra = dict(extra, **{k: v})
                        continue
                    ranges.append((int(line[0]), int(line[1]) if len(line) > 1 else 1, extra))
        except OSError as e:
            print(f"FAIL: cannot read {args.regressions}: {e}")
            print("fuzz: 0 programs, 0 differ")
            return 1
    else:
        ranges = [(s, n, {}) for s, n in batches(args.seed, args.count, max(1, args.batch))]
    nprog = sum(n for _, n, _ in ranges)
    if not ranges:
        print(f"no seeds in {args.regressions}")
        print("fuzz: 0 programs, 0 differ")
        return 0

    dts = [None]
    if args.bare_check and supports_device_thread(simdir):
        dts = [0, 1]
    configs = [("bare", k, dt) for k in ks for dt in dts]
    if not args.bare_check:
        configs += [("cgraft", k, None) for k in ks]

    results = {}   # (range index, config) -> {seed: digest}
    lock = threading.Lock()

    def task(ri, cfg):
        start, count, extra = ranges[ri]
        kind, k, dt = cfg
        res = R.run_range(start, count, dict(R.env(kind == "cgraft", k, dt), **extra))
        with lock:
            results[(ri, cfg)] = res

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
        futs = [ex.submit(task, ri, cfg) for ri in range(len(ranges)) for cfg in configs]
        for f in futs:
            f.result()

    genbugs, diffs = [], []
    for ri, (start, count, _) in enumerate(ranges):
        for seed in range(start, start + count):
            bare = {cfg: results[(ri, cfg)].get(seed, "!missing") for cfg in configs if cfg[0] == "bare"}
            ref_cfg = configs[0]
            ref = bare[ref_cfg]
            bad = [cfg for cfg, d in bare.items() if d != ref or d.startswith("!")]
            if bad:
                genbugs.append((ri, seed, bare))
                continue
            for cfg in configs:
                if cfg[0] != "cgraft":
                    continue
                d = results[(ri, cfg)].get(seed, "!missing")
                if d != ref:
                    diffs.append((ri, seed, cfg[1], ref, d))
                    break

    for ri, seed, bare in genbugs:
        what = ", ".join(f"SIM_SEED={k}{'' if dt is None else f' SIM_DEVICE_THREAD={dt}'}: {short(d)}"
                         for (kind, k, dt), d in bare.items())
        print(f"GENERATOR BUG seed {seed}: bare runs disagree or fail ({what})")
        for (kind, k, dt), d in bare.items():
            if d.startswith("!"):
                print(f"  SIM_SEED={k}: {d[1:]}")
                break

    def confirm(item):
        ri, seed, k, ref, d = item
        extra = ranges[ri][2]
        b1 = R.run_range(seed, 1, dict(R.env(False, k), **extra)).get(seed, "!missing")
        p1 = R.run_range(seed, 1, dict(R.env(True, k), **extra)).get(seed, "!missing")
        return item, b1, p1

    confirmed, batch_only = [], []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
        checked = list(ex.map(confirm, diffs))
    for (ri, seed, k, ref, d), b1, p1 in checked:
        start, count, _ = ranges[ri]
        if b1 != p1:
            confirmed.append((seed, k, b1, p1))
            print(f"DIFFERS seed {seed} (SIM_SEED={k}): bare {short(b1)}, cgraft {short(p1)}"
                  + (f"\n  {p1[1:]}" if p1.startswith("!") else ""))
        else:
            batch_only.append((seed, k, start, ref, d))
            print(f"DIFFERS seed {seed} (SIM_SEED={k}) only after seeds {start}..{seed - 1} in the same process: "
                  f"bare {short(ref)}, cgraft {short(d)}; alone both give {short(b1)}")

    if args.keep and (confirmed or batch_only):
        stamp = datetime.date.today().isoformat()
        # The generator's setting the seeds need, where the list's last differs.
        mode = base.get("FUZZ_VALUE_WAITS") or "some"
        last = "some"
        try:
            with open(args.keep) as f:
                for line in f:
                    w = line.split("#", 1)[0].split()
                    if w and w[0].startswith("FUZZ_VALUE_WAITS="):
                        last = w[0].split("=", 1)[1]
        except OSError:
            pass
        with open(args.keep, "a") as f:
            if mode != last:
                f.write(f"FUZZ_VALUE_WAITS={mode}\n")
            for seed, k, b1, p1 in confirmed:
                f.write(f"{seed}  # {stamp} SIM_SEED={k}: bare {short(b1)}, cgraft {short(p1)}\n")
            for seed, k, start, ref, d in batch_only:
                f.write(f"{start} {seed - start + 1}  # {stamp} SIM_SEED={k}: seed {seed} differs after "
                        f"{start}..{seed - 1} in one process: bare {short(ref)}, cgraft {short(d)}\n")

    ndiff = len(genbugs) + len(diffs)
    mode = "bare check" if args.bare_check else "regressions" if args.regressions else "run"
    print(f"{mode}: {nprog} programs x {len(configs)} runs ({', '.join(sorted({c[0] for c in configs}))}), "
          f"SIM_SEED 1..{len(ks)}{', SIM_DEVICE_THREAD 0/1' if len(dts) > 1 else ''}, "
          f"{time.time() - t0:.1f} s; generator bugs {len(genbugs)}, cgraft differences {len(diffs)} "
          f"({len(confirmed)} confirmed alone)")
    print(f"fuzz: {nprog} programs, {ndiff} differ")
    return 1 if ndiff else 0


if __name__ == "__main__":
    sys.exit(main())
