#!/usr/bin/env python3
"""Generates cgraft's tables of CUDA entry points from the toolkit's headers.

Every runtime and driver function the headers declare (cuda_runtime_api.h,
cuda.h in its plain, per-thread and legacy forms, cudaTypedefs.h for the ABIs
cuGetProcAddress hands out), and every NCCL one where the toolkit has nccl.h,
gets an entry. Those that cuda_api.def wraps by
hand keep their C wrapper; every other one gets a generated trampoline that
runs its classification (pure, sync or, by default, boundary) and jumps to the
real function, whatever its signature.

Outputs (in --out):
  cg_api_gen.h      entry enum and counts
  cg_api_gen.c      names, kinds, real-pointer slots, the cuGetProcAddress
                    table and the sorted link names for dlsym
  cg_tramp_gen.S    the trampolines (exported for link names)
  libcgraft.map     the version script
"""
import argparse
import fnmatch
import os
import re
import subprocess
import sys
import tempfile

KINDS = ("OP", "SPC", "WAIT", "ALLOC", "PURE", "SYNC", "BND", "RESET", "FREE", "MWAIT")
DYN_SLOTS = 64  # trampolines for names no header declares (a newer driver's)


def preprocess(cc, inc, text, defines):
    with tempfile.NamedTemporaryFile("w", suffix=".c", delete=False) as f:
        f.write(text)
        path = f.name
    try:
        cmd = cc + ["-E", "-P", "-I", inc] + ["-D" + d for d in defines] + [path]
        return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    finally:
        os.unlink(path)


def strip_attributes(s):
    """Drops __attribute__((...)) with its nested parentheses."""
    out, i = [], 0
    while True:
        j = s.find("__attribute__", i)
        if j < 0:
            out.append(s[i:])
            return "".join(out)
        out.append(s[i:j])
        k = s.find("(", j)
        depth = 0
        while k < len(s):
            depth += {"(": 1, ")": -1}.get(s[k], 0)
            k += 1
            if depth == 0:
                break
        i = k


def declared(text, pattern):
    """Names of the functions a preprocessed header declares, by a regex on
    each statement."""
    text = re.sub(r"\s+", " ", strip_attributes(text))
    names = set()
    for st in text.split(";"):
        m = re.match(pattern, st.strip())
        if m:
            names.add(m.group(1))
    return names


def header_names(cc, inc):
    forms = ([], ["CUDA_API_PER_THREAD_DEFAULT_STREAM"], ["__CUDA_API_VERSION_INTERNAL"])
    rt, drv = set(), set()
    for d in forms:
        t = preprocess(cc, inc, "#include <cuda_runtime_api.h>\n#include <cuda_profiler_api.h>\n", d)
        rt |= declared(t, r"^extern (?:const )?(?:struct |enum )?\w+\s*\*?\s*((?:__)?cuda\w+)\s*\(")
        t = preprocess(cc, inc, "#include <cuda.h>\n#include <cudaProfiler.h>\n", d)
        drv |= declared(t, r"^(?:extern )?CUresult\s+(cu\w+)\s*\(")
    t = preprocess(cc, inc, "#include <cudaTypedefs.h>\n#include <cudaProfilerTypedefs.h>\n",
                   ["__CUDA_API_VERSION_INTERNAL"])
    pfn = []
    for name in re.findall(r"typedef\s+CUresult\s*\(\s*\*\s*PFN_(\w+)\)\s*\(", t):
        m = re.match(r"(\w+?)_v(\d+)(_ptds|_ptsz)?$", name)
        if not m:
            sys.exit(f"gen_api: cannot read the typedef PFN_{name}")
        pfn.append((m.group(1), int(m.group(2)), 1 if m.group(3) else 0))
    return rt, drv, sorted(set(pfn))


def nccl_names(cc, inc):
    """NCCL's functions, where the toolkit ships nccl.h (else none)."""
    if not os.path.exists(os.path.join(inc, "nccl.h")):
        return set()
    t = preprocess(cc, inc, "#include <nccl.h>\n", [])
    return declared(t, r"^(?:extern )?ncclResult_t\s+(nccl\w+)\s*\(")


def read_def(cc, inc, path):
    """The hand-written entries and the classification, through the
    preprocessor so that the list's own helper macros expand."""
    text = (
        "#define CG_RT(kind, name, family, pt, params, args) @@RT kind name pt\n"
        "#define CG_DRV(kind, name, family, query, since, pt, params, args) @@DRV kind name query since pt\n"
        "#define CG_CLASS(kind, pattern) @@CLASS kind #pattern\n"
        "#define CG_EXTRA_RT(kind, name) @@EXTRA kind name\n"
        "#define CG_NCCL(kind, name, family, params, args) @@NCCL kind name\n"
        f'#include "{os.path.abspath(path)}"\n'
    )
    hand_rt, hand_drv, classes, extra, hand_nccl = [], [], [], [], []
    for line in preprocess(cc, inc, text, []).splitlines():
        for chunk in line.split("@@")[1:]:
            w = chunk.split()
            if w[0] == "RT":
                hand_rt.append((w[1], w[2], int(w[3])))
            elif w[0] == "DRV":
                hand_drv.append((w[1], w[2], w[3].strip('"'), int(w[4]), int(w[5])))
            elif w[0] == "CLASS":
                classes.append((w[1], w[2].strip('"')))
            elif w[0] == "EXTRA":
                extra.append((w[1], w[2]))
            elif w[0] == "NCCL":
                hand_nccl.append((w[1], w[2]))
    for k, *_ in hand_rt + hand_drv + classes + extra + hand_nccl:
        if k not in KINDS:
            sys.exit(f"gen_api: unknown kind {k} in {path}")
    return hand_rt, hand_drv, classes, extra, hand_nccl


def classify(name, classes, used, also=()):
    """The first pattern matching name (or, for a cuGetProcAddress query,
    one of the link names it stands for) gives the kind; BND otherwise."""
    for n in (name,) + tuple(also):
        for i, (kind, pat) in enumerate(classes):
            if fnmatch.fnmatchcase(n, pat):
                used.add(i)
                return kind
    return "BND"


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--cc", required=True, help="C compiler command, words separated by ';'")
    ap.add_argument("--cuda-inc", required=True)
    ap.add_argument("--def", dest="deffile", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    cc = [w for w in a.cc.split(";") if w]

    rt_names, drv_names, pfn = header_names(cc, a.cuda_inc)
    nccl = nccl_names(cc, a.cuda_inc)
    hand_rt, hand_drv, classes, extra, hand_nccl = read_def(cc, a.cuda_inc, a.deffile)
    if not nccl:
        hand_nccl = []
    used = set()
    errors = []

    # Hand-written entries must name what the headers declare (or, for the
    # runtime's internal launch entry points, be listed as such).
    hand_rt_names = {n for _, n, _ in hand_rt}
    hand_drv_names = {n for _, n, _, _, _ in hand_drv}
    pfn_set = set(pfn)
    for _, n, q, since, pt in hand_drv:
        if n not in drv_names:
            errors.append(f"{n}: not declared by cuda.h")
        if (q, since, pt) not in pfn_set:
            errors.append(f"{n}: cudaTypedefs.h has no PFN_{q}_v{since}{'_ptsz/_ptds' if pt else ''}")

    entries = []  # (enum name, display name, kind, layer, exported link name or None)
    for kind, n, pt in hand_rt:
        entries.append((n, n, kind, "RT", n, True))
    for kind, n, q, since, pt in hand_drv:
        entries.append((n, n, kind, "DRV", n, True))
    for kind, n in hand_nccl:
        if n not in nccl:
            errors.append(f"{n}: not declared by nccl.h")
        entries.append((n, n, kind, "NCCL", n, True))
    n_hand = len(entries)
    for n in sorted(rt_names - hand_rt_names):
        entries.append((n, n, classify(n, classes, used), "RT", n, False))
    for kind, n in extra:
        if n in rt_names or n in hand_rt_names:
            errors.append(f"{n}: listed as extra but the headers declare it")
        entries.append((n, n, kind, "RT", n, False))
    for n in sorted(drv_names - hand_drv_names):
        entries.append((n, n, classify(n, classes, used), "DRV", n, False))
    for n in sorted(nccl - {n for _, n in hand_nccl}):
        entries.append((n, n, classify(n, classes, used), "NCCL", n, False))
    pfn_first = len(entries)
    for q, ver, pt in pfn:
        tag = f"{q}_v{ver}{'_pt' if pt else ''}"
        # cuda.h names a query's current ABI with a version suffix
        # (cuMemAlloc is cuMemAlloc_v2): the link name's class is the query's.
        links = tuple(sorted(n for n in drv_names if re.fullmatch(re.escape(q) + r"_v\d+", n)))
        entries.append(("pfn_" + tag, tag, classify(q, classes, used, links), "PFN", None, False))
    for i in range(DYN_SLOTS):
        entries.append((f"dyn_{i}", "(newer driver)", "BND", "DYN", None, False))
    for i, (kind, pat) in enumerate(classes):
        if i not in used and (nccl or not pat.startswith("nccl")):
            errors.append(f"classification pattern {pat} matches no entry point")
    if errors:
        sys.exit("gen_api: " + "\n  ".join(["errors in " + a.deffile] + errors))

    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "cg_api_gen.h"), "w") as f:
        f.write("/* Generated by shim/gen_api.py from the CUDA headers and shim/cuda_api.def. */\n")
        f.write("#ifndef CG_API_GEN_H\n#define CG_API_GEN_H\n\nenum cg_entry {\n")
        for e in entries:
            f.write(f"\tCG_E_{e[0]},\n")
        f.write("\tCG_E_COUNT\n};\n\n")
        f.write(f"#define CG_E_HAND_COUNT {n_hand}\n#define CG_E_FIRST_PFN {pfn_first}\n")
        f.write(f"#define CG_E_FIRST_DYN {len(entries) - DYN_SLOTS}\n#define CG_DYN_SLOTS {DYN_SLOTS}\n")
        f.write(f"#define CG_PROC_COUNT {len(pfn)}\n#define CG_LINK_COUNT {sum(1 for e in entries if e[4])}\n")
        f.write(f"#define CG_HAVE_NCCL {1 if nccl else 0}\n")
        f.write("\n/* Every entry's address (cg_tramp_gen.S). */\n"
                "extern void *const cg_entry_addr[CG_E_COUNT] __attribute__((visibility(\"hidden\")));\n")
        f.write("\n#endif\n")

    kind_c = {k: "CG_K_" + k for k in KINDS}
    layer_c = {"RT": "CG_L_RT", "DRV": "CG_L_DRV", "PFN": "CG_L_PFN", "DYN": "CG_L_DYN", "NCCL": "CG_L_NCCL"}
    with open(os.path.join(a.out, "cg_api_gen.c"), "w") as f:
        f.write("/* Generated by shim/gen_api.py from the CUDA headers and shim/cuda_api.def. */\n")
        f.write('#include "api.h"\n\n')
        f.write("const struct cg_entry_info cg_entries[CG_E_COUNT] = {\n")
        for e in entries:
            f.write(f'\t{{ "{e[1]}", {kind_c[e[2]]}, {layer_c[e[3]]} }},\n')
        f.write("};\n\n")
        # cuGetProcAddress: every ABI of every query name, sorted by name, then
        # per-thread flag, then version; with the hand wrapper of that ABI.
        hand_of = {(q, since, pt): n for _, n, q, since, pt in hand_drv}
        f.write("const struct cg_proc cg_procs[CG_PROC_COUNT] = {\n")
        for i, (q, ver, pt) in enumerate(pfn):
            hand = hand_of.get((q, ver, pt))
            he = f"CG_E_{hand}" if hand else "-1"
            f.write(f'\t{{ "{q}", {ver}, {pt}, CG_E_pfn_{entries[pfn_first + i][1]}, {he} }},\n')
        f.write("};\n\n")
        links = sorted((e[4], e[0]) for e in entries if e[4])
        f.write("const struct cg_link cg_links[CG_LINK_COUNT] = {\n")
        for name, en in links:
            f.write(f'\t{{ "{name}", CG_E_{en} }},\n')
        f.write("};\n")

    with open(os.path.join(a.out, "cg_tramp_gen.S"), "w") as f:
        f.write("/* Generated by shim/gen_api.py: one trampoline per entry point without a\n"
                " * hand-written wrapper. r11 carries the entry to cg_tramp_common. A PURE\n"
                " * entry, once resolved, jumps to the real function itself: it counts the\n"
                " * call (not under cgraft's own, as cg_tramp_enter; without a lock, so two\n"
                " * threads' calls at once may count as one) and touches nothing else,\n"
                " * r10 and r11 being free at a call. */\n")
        f.write("\t.text\n")
        for idx, e in enumerate(entries):
            if idx < n_hand:
                continue
            sym = e[4] if e[4] else f"cg_tramp_{e[0]}"
            f.write("\t.p2align 4\n")
            if e[4]:
                f.write(f"\t.globl {sym}\n")
            else:
                f.write(f"\t.globl {sym}\n\t.hidden {sym}\n")
            f.write(f"\t.type {sym}, @function\n{sym}:\n")
            if e[2] == "PURE":
                f.write(f"\tmovq cg_tramp_real+{8 * idx}(%rip), %r11\n\ttestq %r11, %r11\n\tjz 1f\n"
                        "\tmovq cg_busy@gottpoff(%rip), %r10\n\tcmpl $0, %fs:(%r10)\n\tjne 2f\n"
                        f"\tincq cg_stats+{8 * idx}(%rip)\n2:\tjmp *%r11\n1:\n")
            f.write(f"\tmovl ${idx}, %r11d\n\tjmp cg_tramp_common\n\t.size {sym}, .-{sym}\n")
        # Every entry's address, for dlsym and cuGetProcAddress to hand out.
        f.write('\t.section .data.rel.ro,"aw"\n\t.p2align 3\n'
                "\t.globl cg_entry_addr\n\t.hidden cg_entry_addr\ncg_entry_addr:\n")
        for e in entries:
            f.write(f"\t.quad {e[4] if e[4] else 'cg_tramp_' + e[0]}\n")
        f.write('\t.section .note.GNU-stack,"",@progbits\n')

    with open(os.path.join(a.out, "libcgraft.map"), "w") as f:
        f.write("/* Generated by shim/gen_api.py. Runtime entry points carry the runtime's\n"
                " * version node, so versioned references bind to cgraft; driver and NCCL\n"
                " * ones are unversioned, as libcuda.so.1's and libnccl.so.2's are; dlsym\n"
                " * carries both of glibc's. */\n")
        f.write("libcudart.so.13 {\n  global:\n")
        for e in entries:
            if e[4] and e[3] == "RT":
                f.write(f"    {e[4]};\n")
        f.write("  local:\n    *;\n};\n")
        f.write("GLIBC_2.2.5 {\n  global:\n    dlsym;\n};\n")
        f.write("GLIBC_2.34 {\n  global:\n    dlsym;\n} GLIBC_2.2.5;\n")
        f.write("CGRAFT_0 {\n  global:\n    cgraft_set_enabled;\n    cgraft_call_time_ns;\n")
        for e in entries:
            if e[4] and e[3] in ("DRV", "NCCL"):
                f.write(f"    {e[4]};\n")
        f.write("};\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
