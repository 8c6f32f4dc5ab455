#!/usr/bin/env bash
# scripts/gpu-check.sh: the one command for the GPU machine: build, GPU test suite, PyTorch
# losses bare vs under cgraft, HF decoding, the corpus, then the benchmark; logs under
# $OUT (else ./gpu-out).
#
# Fits in 9 minutes: every step has a time limit and the benchmark gets what is left.
# GPU_CHECK_ONLY=tests (build, GPU suite, PyTorch, HF decoding, corpus) or bench (build,
# benchmark, profile) splits it in two calls of up to 9 minutes each; the second
# reuses the build. GPU_CHECK_SKIP="gpu-tests torch hf profile nccl1 libs corpus corpus-extra"
# leaves steps out (any of them).
set -u

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 1
OUT=${OUT:-$ROOT/gpu-out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
BUILD=${BUILD:-$ROOT/build}
T0=$(date +%s)
TOTAL_S=${GPU_CHECK_TOTAL_S:-570}
PY=${PYTHON:-python3}
ONLY=${GPU_CHECK_ONLY:-all}
case $ONLY in
    all | tests | bench) ;;
    *) echo "gpu-check: GPU_CHECK_ONLY must be tests, bench or unset, not '$ONLY'" >&2; exit 64 ;;
esac

SUMMARY=()
FAILED=0
SKIP_STEPS=" ${GPU_CHECK_SKIP:-} "
skipped() { case $SKIP_STEPS in *" $1 "*) return 0 ;; esac; return 1; }
elapsed() { echo $(( $(date +%s) - T0 )); }
left() { echo $(( TOTAL_S - $(elapsed) )); }
note() { printf '[%4ss] %s\n' "$(elapsed)" "$*"; }
record() { # step status seconds detail
    SUMMARY+=("$(printf '%-22s %-5s %5ss  %s' "$1" "$2" "$3" "$4")")
    [ "$2" = FAIL ] && FAILED=1
    return 0
}

# --- tools ---------------------------------------------------------------------
[ -d /usr/local/cuda/bin ] && PATH=/usr/local/cuda/bin:$PATH
if command -v meson >/dev/null 2>&1; then
    MESON=(meson)
elif "$PY" -c 'import mesonbuild' >/dev/null 2>&1; then
    MESON=("$PY" -m mesonbuild.mesonmain)
else
    echo "gpu-check: meson not found (neither on PATH nor as a python module)" >&2
    exit 1
fi
if ! command -v ninja >/dev/null 2>&1; then
    # The pip package puts the binary next to its module, not always on PATH.
    NINJA_DIR=$("$PY" -c 'import ninja, os; print(getattr(ninja, "BIN_DIR", os.path.join(os.path.dirname(ninja.__file__), "data", "bin")))' 2>/dev/null)
    [ -n "${NINJA_DIR:-}" ] && [ -x "$NINJA_DIR/ninja" ] && PATH=$NINJA_DIR:$PATH
fi
export PATH
{
    date
    nvidia-smi 2>&1
    nvcc --version 2>&1
    "${MESON[@]}" --version 2>&1
    ninja --version 2>&1
    "$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1
} >"$OUT/env.txt"
note "logs in $OUT"

# --- build ---------------------------------------------------------------------
t=$(date +%s)
build_ok=1
if [ ! -f "$BUILD/build.ninja" ]; then
    TESTS_OPT=-Dtests=true
    pkg-config --exists cmocka 2>/dev/null || TESTS_OPT=-Dtests=false
    if ! timeout 120 "${MESON[@]}" setup "$BUILD" "$TESTS_OPT" -Dgpu=enabled >"$OUT/setup.log" 2>&1; then
        # cmocka may be present without pkg-config metadata, or broken: the unit
        # suites are not what this check is for.
        rm -rf "$BUILD"
        timeout 120 "${MESON[@]}" setup "$BUILD" -Dtests=false -Dgpu=enabled >>"$OUT/setup.log" 2>&1 || build_ok=0
    fi
fi
if [ $build_ok = 1 ]; then
    if command -v ninja >/dev/null 2>&1; then
        timeout 240 ninja -C "$BUILD" >"$OUT/build.log" 2>&1 || build_ok=0
    else
        timeout 240 "${MESON[@]}" compile -C "$BUILD" >"$OUT/build.log" 2>&1 || build_ok=0
    fi
fi
if [ $build_ok = 1 ]; then
    record build PASS $(( $(date +%s) - t )) "$BUILD"
else
    record build FAIL $(( $(date +%s) - t )) "see setup.log / build.log"
    tail -30 "$OUT/setup.log" "$OUT/build.log" 2>/dev/null
fi
LIB=$BUILD/shim/libcgraft.so
note "build done"

# --- GPU test suite and PyTorch losses, side by side -------------------------------
# Correctness runs do not care about timing, so the suite shares the GPU with the
# PyTorch step; HF decoding, which reports speed-ups, waits for the suite, and the
# benchmark afterwards runs alone.
t=$(date +%s)
TESTS_PID=
if [ $build_ok = 1 ] && [ "$ONLY" != bench ] && ! skipped gpu-tests; then
    tests_limit=$(( $(left) - 120 ))
    [ $tests_limit -gt 200 ] && tests_limit=200
    [ $tests_limit -lt 30 ] && tests_limit=30
    timeout $tests_limit "$PY" tests/gpu/run_gpu_tests.py "$BUILD" --lib "$LIB" --out "$OUT/gpu-tests" \
        --json "$OUT/gpu-tests.json" >"$OUT/gpu-tests.log" 2>&1 &
    TESTS_PID=$!
fi

torch_check() {
    mkdir -p "$OUT/torch"
    if ! "$PY" -c 'import torch' >/dev/null 2>&1; then
        echo "SKIP torch not importable"
        return 0
    fi
    local rc=0
    for m in mlp transformer; do
        # Leave the benchmark its share of the 9 minutes.
        if [ "$(left)" -lt 240 ]; then
            echo "FAIL $m: not run, $(left) s left"
            rc=1
            continue
        fi
        local sd="$OUT/torch/$m.stats"
        rm -rf "$sd"
        mkdir -p "$sd"
        env -u LD_PRELOAD timeout 90 "$PY" scripts/torch_train.py --model "$m" --steps 60 \
            --out "$OUT/torch/$m.bare.txt" >"$OUT/torch/$m.bare.out" 2>"$OUT/torch/$m.bare.err"
        local rb=$?
        LD_PRELOAD=$LIB CGRAFT_ENABLE=1 CGRAFT_REPORT=1 CGRAFT_STATS="$sd/stats.%p.json" timeout 90 "$PY" scripts/torch_train.py \
            --model "$m" --steps 60 --out "$OUT/torch/$m.cgraft.txt" \
            >"$OUT/torch/$m.cgraft.out" 2>"$OUT/torch/$m.cgraft.err"
        local rcg=$?
        # cgraft switched off and on between blocks of steps, in one process.
        LD_PRELOAD=$LIB CGRAFT_ENABLE=1 timeout 90 "$PY" scripts/torch_train.py --model "$m" --steps 60 --ab \
            --out "$OUT/torch/$m.ab.txt" >"$OUT/torch/$m.ab.out" 2>"$OUT/torch/$m.ab.err"
        local rab=$?
        # The comparison's figures from a longer run: its warm-up covers the
        # graphs' building and the governor's first check.
        LD_PRELOAD=$LIB CGRAFT_ENABLE=1 CGRAFT_REPORT=1 timeout 120 "$PY" scripts/torch_train.py --model "$m" --steps 500 \
            --block 10 --ab --out "$OUT/torch/$m.abt.txt" >"$OUT/torch/$m.abt.out" 2>"$OUT/torch/$m.abt.err" || rab=$?
        local share
        share=$("$PY" - "$sd" <<'EOF'
import glob, json, sys
rep = tot = 0
for p in glob.glob(sys.argv[1] + "/*.json"):
    try:
        d = json.load(open(p))
    except (OSError, ValueError):
        continue
    rep += d.get("ops_replayed", 0); tot += d.get("ops_total", 0)
print(f"replayed {100 * rep / tot:.1f}% ({rep}/{tot} ops)" if tot else "no stats")
EOF
)
        if [ $rb -ne 0 ] || [ $rcg -ne 0 ] || [ $rab -ne 0 ]; then
            echo "FAIL $m: exit bare=$rb cgraft=$rcg switched=$rab; $share"
            tail -5 "$OUT/torch/$m.bare.err" "$OUT/torch/$m.cgraft.err" "$OUT/torch/$m.ab.err"
            rc=1
        elif cmp -s "$OUT/torch/$m.bare.txt" "$OUT/torch/$m.cgraft.txt" &&
             cmp -s "$OUT/torch/$m.bare.txt" "$OUT/torch/$m.ab.txt"; then
            echo "PASS $m: 60 losses identical, also with cgraft switched off and on; $share; $(grep -ho 'ab_ratio=[^ ]*\|ab_saved_share=[^ ]*\|ab_calls_saved_share=[^ ]*' "$OUT/torch/$m.abt.err" | tr '\n' ' ')"
        else
            echo "FAIL $m: losses differ (cgraft $(diff "$OUT/torch/$m.bare.txt" "$OUT/torch/$m.cgraft.txt" | grep -c '^<'), switched $(diff "$OUT/torch/$m.bare.txt" "$OUT/torch/$m.ab.txt" | grep -c '^<') of 60); $share"
            rc=1
        fi
    done
    return $rc
}

# HF transformers greedy decoding, static and dynamic cache, cgraft switched off and on
# between generate() calls in one process: tokens identical, replayed share, speed-up,
# and the share of the eager calls' own time saved. A crash gets its Python and native
# stacks (faulthandler, and gdb or cuda-gdb where there is one).
hf_check() {
    mkdir -p "$OUT/hf"
    if ! "$PY" -c 'import transformers' >/dev/null 2>&1; then
        echo "SKIP transformers not importable"
        return 0
    fi
    local rc=0 cache
    for cache in static dynamic; do
        if [ "$(left)" -lt 200 ]; then
            echo "FAIL $cache: not run, $(left) s left"
            rc=1
            continue
        fi
        local sd="$OUT/hf/$cache.stats"
        rm -rf "$sd"
        mkdir -p "$sd"
        LD_PRELOAD=$LIB CGRAFT_ENABLE=1 CGRAFT_REPORT=1 CGRAFT_STATS="$sd/stats.%p.json" timeout 150 \
            "$PY" -X faulthandler scripts/hf_decode.py --cache "$cache" --tokens 48 --rounds 8 \
            --out "$OUT/hf/$cache.tokens.txt" >"$OUT/hf/$cache.out" 2>"$OUT/hf/$cache.err"
        local r=$?
        local share
        share=$("$PY" - "$sd" <<'EOF2'
import glob, json, sys
rep = tot = div = 0
for p in glob.glob(sys.argv[1] + "/*.json"):
    try:
        d = json.load(open(p))
    except (OSError, ValueError):
        continue
    rep += d.get("ops_replayed", 0); tot += d.get("ops_total", 0); div += d.get("divergences", 0)
print(f"replayed {100 * rep / tot:.1f}% ({rep}/{tot} ops, {div} divergences)" if tot else "no stats")
EOF2
)
        local tm
        tm=$(grep -h '^TIME' "$OUT/hf/$cache.err" | cut -c6-)
        # What diverges, for the note: a short run with the debug log.
        if [ -n "${HF_DEBUG:-}" ] && [ "$(left)" -gt 150 ]; then
            LD_PRELOAD=$LIB CGRAFT_LOG=debug timeout 60 "$PY" scripts/hf_decode.py --cache "$cache" --tokens 16 \
                --rounds 2 >/dev/null 2>"$OUT/hf/$cache.debug.log"
            grep -E "divergence|recurs|back|stays eager|slower|standing|replaying" "$OUT/hf/$cache.debug.log" |
                sed 's/0x[0-9a-f]*/X/g' | sort | uniq -c | sort -rn | head -40 >"$OUT/hf/$cache.debug.top"
        fi
        if [ $r -eq 0 ]; then
            echo "PASS $cache: tokens identical off and on; $share; $tm"
        else
            echo "FAIL $cache: rc=$r; $share; $tm"
            tail -30 "$OUT/hf/$cache.err"
            rc=1
            local gdb
            gdb=$(command -v gdb || command -v cuda-gdb || true)
            if [ $r -ge 128 ] && [ -n "$gdb" ]; then
                timeout 200 "$gdb" -batch -ex "set environment LD_PRELOAD $LIB" -ex run -ex bt \
                    --args "$PY" scripts/hf_decode.py --cache "$cache" --tokens 48 --rounds 2 \
                    >"$OUT/hf/$cache.gdb.txt" 2>&1
                grep -A30 'SIG' "$OUT/hf/$cache.gdb.txt" | head -40
            fi
        fi
    done
    return $rc
}

# CGRAFT_PROFILE on the demo loop, bare (cgraft passing through) and under cgraft, and
# on a PyTorch training step: busy share and gaps from CUPTI, outputs unchanged, and the
# timeline pictures (docs/timeline-*.png).
profile_check() {
    mkdir -p "$OUT/profile"
    local P="$OUT/profile" K="$BUILD/kernels" rc=0
    "$K/chain" --k 100 >"$P/plain.out" 2>/dev/null
    local how
    for how in bare cgraft; do
        local en=1
        [ $how = bare ] && en=0
        CGRAFT_ENABLE=$en CGRAFT_PROFILE=1 CGRAFT_REPORT=1 CGRAFT_LOG=info CGRAFT_STATS="$P/chain.$how.%p.json" \
            CGRAFT_PROFILE_TRACE="$P/chain.$how.%p.trace" LD_PRELOAD=$LIB timeout 60 "$K/chain" --k 100 \
            >"$P/chain.$how.out" 2>"$P/chain.$how.err" || rc=1
        cmp -s "$P/plain.out" "$P/chain.$how.out" || { echo "FAIL chain $how: output differs with CGRAFT_PROFILE"; rc=1; }
        echo "chain $how: $(grep -h 'profile' "$P/chain.$how.err" | tr -s ' ' | tr '\n' ' ')"
    done
    "$PY" scripts/timeline "$P"/chain.bare.*.trace "$P"/chain.cgraft.*.trace -o "$P/timeline-chain.png" \
        --title "chain, 100 kernels an iteration" >"$P/timeline-chain.log" 2>&1 || rc=1
    if "$PY" -c 'import torch' >/dev/null 2>&1; then
        for how in bare cgraft; do
            local en=1
            [ $how = bare ] && en=0
            CGRAFT_ENABLE=$en CGRAFT_PROFILE=1 CGRAFT_REPORT=1 CGRAFT_PROFILE_TRACE="$P/mlp.$how.%p.trace" \
                LD_PRELOAD=$LIB timeout 90 "$PY" scripts/torch_train.py --model mlp --steps 60 \
                --out "$P/mlp.$how.txt" >"$P/mlp.$how.out" 2>"$P/mlp.$how.err" || rc=1
            echo "mlp $how: $(grep -h 'profile' "$P/mlp.$how.err" | tr -s ' ' | tr '\n' ' ')"
        done
        cmp -s "$P/mlp.bare.txt" "$P/mlp.cgraft.txt" || { echo "FAIL mlp: losses differ with CGRAFT_PROFILE"; rc=1; }
        "$PY" scripts/timeline "$P"/mlp.bare.*.trace "$P"/mlp.cgraft.*.trace -o "$P/timeline-mlp.png" \
            --title "PyTorch MLP training step" >"$P/timeline-mlp.log" 2>&1 || rc=1
    fi
    [ $rc = 0 ] && echo "PASS profile: outputs unchanged, timelines drawn"
    return $rc
}

# CuPy and JAX loops (scripts/cupy_loop.py, scripts/jax_loop.py; CuPy also with its
# stream-ordered pool), bare and under cgraft: their printed values and digests must be
# the same bit for bit.
libs_check() {
    mkdir -p "$OUT/libs"
    local L="$OUT/libs" rc=0 ran=0 p rb rg args
    for p in cupy cupy-async jax; do
        args=()
        [ $p = cupy-async ] && args=(--async-pool)
        timeout 90 "$PY" scripts/${p%-async}_loop.py "${args[@]}" >"$L/$p.bare.out" 2>"$L/$p.bare.err"
        rb=$?
        if [ $rb = 77 ]; then
            echo "$p: not importable or no GPU"
            continue
        fi
        ran=1
        CGRAFT_STATS="$L/$p.stats.%p.json" LD_PRELOAD=$LIB timeout 90 "$PY" scripts/${p%-async}_loop.py \
            "${args[@]}" >"$L/$p.cgraft.out" 2>"$L/$p.cgraft.err"
        rg=$?
        if [ $rb != 0 ] || [ $rg != 0 ] || ! cmp -s "$L/$p.bare.out" "$L/$p.cgraft.out"; then
            echo "FAIL $p: exit $rb bare, $rg under cgraft, or outputs differ (see $L)"
            rc=1
            continue
        fi
        echo "$p identical: $("$PY" - "$L" "$p" <<'EOF2'
import glob, json, sys
rep = tot = 0
for f in glob.glob(f"{sys.argv[1]}/{sys.argv[2]}.stats.*.json"):
    d = json.load(open(f))
    rep += d.get("ops_replayed", 0)
    tot += d.get("ops_total", 0)
print(f"{rep}/{tot} ops replayed" + (f" ({100 * rep / tot:.1f}%)" if tot else ""))
EOF2
)"
    done
    [ $ran = 0 ] && echo "SKIP neither CuPy nor JAX importable with a GPU"
    return $rc
}

# NCCL inside graphs on the one GPU there is: DistributedDataParallel over a process group
# of one rank, bare and under cgraft with CGRAFT_NCCL=1 (and without it).
nccl1_check() {
    if ! "$PY" -c 'import torch.distributed' >/dev/null 2>&1; then
        echo "SKIP torch.distributed not importable"
        return 0
    fi
    mkdir -p "$OUT/nccl1"
    local D="$OUT/nccl1" rc=0 run=("$PY" -m torch.distributed.run --standalone --nproc_per_node=1 scripts/torch_ddp.py --steps 40)
    env -u LD_PRELOAD timeout 120 "${run[@]}" --out "$D/bare" >"$D/bare.log" 2>&1 || rc=1
    local mode
    for mode in 0 1; do
        rm -rf "$D/stats$mode"; mkdir -p "$D/stats$mode"
        LD_PRELOAD=$LIB CGRAFT_NCCL=$mode CGRAFT_REPORT=1 CGRAFT_STATS="$D/stats$mode/s.%p.json" timeout 120 \
            "${run[@]}" --out "$D/cg$mode" >"$D/cg$mode.log" 2>&1 || rc=1
        local same=differ
        cmp -s "$D/bare.rank0.txt" "$D/cg$mode.rank0.txt" && same=identical
        echo "CGRAFT_NCCL=$mode: losses and parameters $same; $("$PY" - "$D/stats$mode" <<'EOF2'
import glob, json, sys
rep = tot = 0; calls = {}; fb = {}
for p in glob.glob(sys.argv[1] + "/*.json"):
    d = json.load(open(p))
    rep += d.get("ops_replayed", 0); tot += d.get("ops_total", 0)
    for k, v in (d.get("driver_calls") or {}).items():
        if k.startswith("nccl"):
            calls[k] = calls.get(k, 0) + v
    for k, v in (d.get("fallbacks") or {}).items():
        fb[k] = fb.get(k, 0) + v
print(f"replayed {100 * rep / max(tot, 1):.1f}% ({rep}/{tot}); nccl calls {calls}; fallbacks {fb}")
EOF2
)"
        [ $same = identical ] || rc=1
    done
    grep -h "TIME" "$D"/*.log | head -4
    return $rc
}

# Data-parallel training over every GPU (DistributedDataParallel, NCCL), bare and
# under cgraft: the losses and final parameters of every rank must be identical.
ddp_check() {
    local n
    n=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
    if [ "$n" -lt 2 ]; then
        echo "SKIP data-parallel training needs 2 GPUs, this machine has $n"
        return 0
    fi
    if ! "$PY" -c 'import torch.distributed' >/dev/null 2>&1; then
        echo "SKIP torch.distributed not importable"
        return 0
    fi
    mkdir -p "$OUT/ddp"
    local sd="$OUT/ddp/stats" run=("$PY" -m torch.distributed.run --standalone --nproc_per_node="$n"
        scripts/torch_ddp.py --steps 30)
    rm -rf "$sd"
    mkdir -p "$sd"
    env -u LD_PRELOAD timeout 150 "${run[@]}" --out "$OUT/ddp/bare" >"$OUT/ddp/bare.log" 2>&1
    local rb=$?
    LD_PRELOAD=$LIB CGRAFT_ENABLE=1 CGRAFT_STATS="$sd/stats.%p.json" timeout 150 "${run[@]}" \
        --out "$OUT/ddp/cgraft" >"$OUT/ddp/cgraft.log" 2>&1
    local rcg=$?
    local stats
    stats=$("$PY" - "$sd" <<'EOF'
import glob, json, sys
rep = tot = nccl = attr = 0
for p in glob.glob(sys.argv[1] + "/*.json"):
    try:
        d = json.load(open(p))
    except (OSError, ValueError):
        continue
    rep += d.get("ops_replayed", 0); tot += d.get("ops_total", 0)
    nccl += (d.get("fallbacks") or {}).get("nccl_kernel", 0)
    attr += (d.get("fallbacks") or {}).get("launch_attribute", 0)
# NCCL launches with attributes: those count as launch_attribute.
print(f"replayed {100 * rep / tot:.1f}% ({rep}/{tot} ops); left eager: {nccl} NCCL kernels, "
      f"{attr} launches with attributes" if tot else "no stats")
EOF
)
    if [ $rb -ne 0 ] || [ $rcg -ne 0 ]; then
        echo "FAIL ddp over $n GPUs: exit bare=$rb cgraft=$rcg; $stats"
        tail -5 "$OUT/ddp/bare.log" "$OUT/ddp/cgraft.log"
        return 1
    fi
    local r bad=0
    for r in $(seq 0 $((n - 1))); do
        cmp -s "$OUT/ddp/bare.rank$r.txt" "$OUT/ddp/cgraft.rank$r.txt" || bad=1
    done
    if [ $bad = 0 ]; then
        echo "PASS ddp over $n GPUs: 30 losses and final parameters identical on every rank; $stats"
    else
        echo "FAIL ddp over $n GPUs: a rank's losses or parameters differ; $stats"
        return 1
    fi
}

if [ "$ONLY" = bench ]; then
    note "GPU suite and PyTorch losses not run (GPU_CHECK_ONLY=bench)"
elif [ $build_ok = 1 ]; then
    t_ddp=$(date +%s)
    ddp_check >"$OUT/ddp.log" 2>&1
    ddp_rc=$?
    case $ddp_rc:$(head -c4 "$OUT/ddp.log") in
        0:SKIP) record torch-ddp SKIP $(( $(date +%s) - t_ddp )) "$(head -1 "$OUT/ddp.log" | cut -c6-)" ;;
        0:*) record torch-ddp PASS $(( $(date +%s) - t_ddp )) "$(grep -h '^PASS' "$OUT/ddp.log" | cut -c6-)" ;;
        *) record torch-ddp FAIL $(( $(date +%s) - t_ddp )) "$(grep -h '^FAIL' "$OUT/ddp.log" | cut -c6-)" ;;
    esac
    if skipped torch; then
        echo "SKIP left out (GPU_CHECK_SKIP)" >"$OUT/torch.log"
        torch_rc=0
    else
        torch_check >"$OUT/torch.log" 2>&1
        torch_rc=$?
    fi
    if grep -q '^SKIP left out' "$OUT/torch.log"; then
        record torch-losses SKIP 0 "left out (GPU_CHECK_SKIP)"
    elif grep -q '^SKIP' "$OUT/torch.log"; then
        record torch-losses SKIP $(( $(date +%s) - t )) "torch not importable"
    elif [ $torch_rc -eq 0 ]; then
        record torch-losses PASS $(( $(date +%s) - t )) "$(grep -h '^PASS' "$OUT/torch.log" | cut -c6- | tr '\n' ' ')"
    else
        record torch-losses FAIL $(( $(date +%s) - t )) "$(grep -h '^FAIL' "$OUT/torch.log" | cut -c6- | tr '\n' ' ')"
    fi
    note "torch check done"
    for extra in profile nccl1 libs; do
        skipped $extra && continue
        t_x=$(date +%s)
        ${extra}_check >"$OUT/$extra.log" 2>&1
        x_rc=$?
        if grep -q '^SKIP' "$OUT/$extra.log"; then
            record $extra SKIP $(( $(date +%s) - t_x )) "$(grep -h '^SKIP' "$OUT/$extra.log" | cut -c6-)"
        elif [ $x_rc -eq 0 ]; then
            record $extra PASS $(( $(date +%s) - t_x )) "$(grep -vh '^PASS' "$OUT/$extra.log" | head -4 | tr '\n' ' ')"
        else
            record $extra FAIL $(( $(date +%s) - t_x )) "$(tail -4 "$OUT/$extra.log" | tr '\n' ' ')"
        fi
        note "$extra done"
    done
    # HF decoding reports speed-ups: the suite, which shares the GPU and the
    # host, is done first (it takes about half a minute, less than the
    # PyTorch step beside it).
    if [ -n "$TESTS_PID" ]; then
        wait "$TESTS_PID"
        tests_rc=$?
    else
        tests_rc=skipped
    fi
    tests_s=$(( $(date +%s) - t ))
    if skipped hf; then
        note "HF decoding not run (GPU_CHECK_SKIP)"
    else
        t_hf=$(date +%s)
        hf_check >"$OUT/hf.log" 2>&1
        hf_rc=$?
        if grep -q '^SKIP' "$OUT/hf.log"; then
            record hf-decode SKIP $(( $(date +%s) - t_hf )) "transformers not importable"
        elif [ $hf_rc -eq 0 ]; then
            record hf-decode PASS $(( $(date +%s) - t_hf )) "$(grep -h '^PASS' "$OUT/hf.log" | cut -c6- | tr '\n' ' ')"
        else
            record hf-decode FAIL $(( $(date +%s) - t_hf )) "$(grep -h '^FAIL' "$OUT/hf.log" | cut -c6- | tr '\n' ' ')"
        fi
        note "HF decoding done"
    fi
    last=$(tail -2 "$OUT/gpu-tests.log" 2>/dev/null | tr '\n' ' ')
    case $tests_rc in
        skipped) record gpu-tests SKIP 0 "left out (GPU_CHECK_SKIP)" ;;
        0) record gpu-tests PASS $tests_s "$(grep '^gpu tests:.*passed' "$OUT/gpu-tests.log")" ;;
        77) record gpu-tests SKIP $tests_s "$last" ;;
        *) record gpu-tests FAIL $tests_s "rc=$tests_rc; $last" ;;
    esac
    note "gpu tests done"
    grep -E '^(PASS|FAIL|SKIP)' "$OUT/gpu-tests.log" 2>/dev/null | head -80
else
    record gpu-tests FAIL 0 "not run: build failed"
    record torch-losses FAIL 0 "not run: build failed"
fi

# --- third-party corpus: cuda-samples built elsewhere (scripts/corpus build), run here ----
# Bare and under cgraft, alternating, 3 times each: exit status and output without the
# samples' time lines must match. In a full run it leaves the benchmark 200 s.
t=$(date +%s)
if [ "$ONLY" = bench ] || skipped corpus; then
    note "corpus not run (GPU_CHECK_ONLY=bench or GPU_CHECK_SKIP)"
elif [ ! -f "$ROOT/corpus-build/manifest.json" ]; then
    record corpus SKIP 0 "corpus-build/ missing: run scripts/corpus build where nvcc is, carry corpus-build to this machine"
elif [ $build_ok != 1 ]; then
    record corpus FAIL 0 "not run: build failed"
else
    if [ "$ONLY" = tests ]; then corpus_limit=$(( $(left) - 15 )); else corpus_limit=$(( $(left) - 200 )); fi
    [ $corpus_limit -gt 400 ] && corpus_limit=400
    if [ $corpus_limit -lt 60 ]; then
        record corpus SKIP 0 "only $(left) s left; GPU_CHECK_ONLY=tests runs it"
    else
        timeout $corpus_limit "$PY" scripts/corpus run --build "$ROOT/corpus-build" --lib "$LIB" --out "$OUT/corpus" \
            --json "$OUT/corpus.json" --md "$OUT/corpus.md" >"$OUT/corpus.log" 2>&1
        corpus_rc=$?
        corpus_line=$(grep -h '^corpus: ' "$OUT/corpus.log" | tail -1 | cut -c9-)
        case $corpus_rc in
            0) record corpus PASS $(( $(date +%s) - t )) "$corpus_line" ;;
            77) record corpus SKIP $(( $(date +%s) - t )) "$(tail -1 "$OUT/corpus.log" | sed 's/^SKIP: //')" ;;
            124) record corpus FAIL $(( $(date +%s) - t )) "time limit ${corpus_limit} s; ${corpus_line:-no summary}" ;;
            *) record corpus FAIL $(( $(date +%s) - t )) "rc=$corpus_rc; ${corpus_line:-$(tail -1 "$OUT/corpus.log")}" ;;
        esac
        grep -E '^(PASS|FAIL)' "$OUT/corpus.log" | head -40
    fi
    note "corpus done"
fi
# A further corpus where one was built (corpus-extra-build/, from another folder of
# third-party programs with its own README table and samples.json): run twice each.
t=$(date +%s)
if [ "$ONLY" != bench ] && [ $build_ok = 1 ] && [ -f "$ROOT/corpus-extra-build/manifest.json" ] && ! skipped corpus-extra; then
    extra_limit=$(( $(left) - 15 ))
    [ "$ONLY" = tests ] || extra_limit=$(( extra_limit - 185 ))
    [ $extra_limit -gt 400 ] && extra_limit=400
    if [ $extra_limit -lt 60 ]; then
        record corpus-extra SKIP 0 "only $(left) s left"
    else
        timeout $extra_limit "$PY" scripts/corpus run --build "$ROOT/corpus-extra-build" --lib "$LIB" \
            --out "$OUT/corpus-extra" --repeats 2 --json "$OUT/corpus-extra.json" --md "$OUT/corpus-extra.md" \
            >"$OUT/corpus-extra.log" 2>&1
        extra_rc=$?
        extra_line=$(grep -h '^corpus: ' "$OUT/corpus-extra.log" | tail -1 | cut -c9-)
        case $extra_rc in
            0) record corpus-extra PASS $(( $(date +%s) - t )) "$extra_line" ;;
            *) record corpus-extra FAIL $(( $(date +%s) - t )) "rc=$extra_rc; ${extra_line:-$(tail -1 "$OUT/corpus-extra.log")}" ;;
        esac
        grep -E '^(PASS|FAIL)' "$OUT/corpus-extra.log" | head -40
    fi
    note "corpus-extra done"
fi

# --- benchmark -------------------------------------------------------------------
t=$(date +%s)
budget=$(( $(left) - 25 ))
[ $budget -gt 520 ] && budget=520
if [ "$ONLY" = tests ]; then
    note "benchmark not run (GPU_CHECK_ONLY=tests)"
elif [ "${tests_rc:-0}" = 77 ] || ! nvidia-smi -L >/dev/null 2>&1; then
    record bench SKIP 0 "no GPU"
elif [ $build_ok = 1 ] && [ $budget -gt 30 ]; then
    # GPU_BENCH_ONLY="name ..." limits the benchmark to workloads whose names hold one of them.
    only=()
    [ -n "${GPU_BENCH_ONLY:-}" ] && only=(--only $GPU_BENCH_ONLY)
    timeout $(( budget + 60 )) "$PY" scripts/bench --build "$BUILD" --no-build --out "$OUT/bench" \
        --budget-s "$budget" "${only[@]}" >"$OUT/bench.log" 2>&1
    bench_rc=$?
    if [ $bench_rc -eq 0 ]; then
        record bench PASS $(( $(date +%s) - t )) "$OUT/bench/bench.md"
    else
        record bench FAIL $(( $(date +%s) - t )) "rc=$bench_rc; $(tail -1 "$OUT/bench.log")"
    fi
else
    record bench SKIP 0 "build failed or no time left ($budget s)"
fi

# --- summary ---------------------------------------------------------------------
echo
if [ -f "$OUT/bench/results.json" ]; then
    "$PY" - "$OUT/bench/results.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
f = lambda v, s: "-" if v is None else format(v, s)
print(f"{'workload':<22} {'eager us':>9} {'cgraft us':>9} {'graph us':>9} {'speedup':>7} {'vs graph':>8} {'replayed':>8} output")
for w in r["rows"]:
    sh = w.get("replay_share")
    out = {True: "same", False: "DIFFERS", None: "-"}[w.get("output_match")]
    print(f"{w['name']:<22} {f(w.get('eager_us'), '9.1f')} {f(w.get('cgraft_us'), '9.1f')} "
          f"{f(w.get('graph_us'), '9.1f')} {f(w.get('speedup'), '7.2f')} {f(w.get('vs_graph'), '8.2f')} "
          f"{'-' if sh is None else format(100 * sh, '7.1f') + '%'} {out}")
for p in r.get("passthrough") or []:
    print(f"passthrough {p['api']:<22} bare {f(p.get('bare_ns'), '.1f')} ns, preloaded-off "
          f"{f(p.get('disabled_ns'), '.1f')} ns ({f(p.get('overhead_ns'), '+.1f')})")
EOF
    echo
fi
echo "gpu-check summary ($(elapsed) s, logs in $OUT)"
printf '%s\n' "${SUMMARY[@]}" | tee "$OUT/summary.txt"
exit $FAILED
