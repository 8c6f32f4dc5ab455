#!/usr/bin/env python3
# Fails when libcgraft.so exports anything its generated version script does
# not list, or misses one it lists, or gives a runtime entry point another
# version node than the runtime's; and when a function the toolkit's
# libcudart.so.13 or libcuda.so (stub) exports is missing from cgraft's, so
# that a program's call would bypass it.
import re
import subprocess
import sys

lib, mapfile, cudalib = sys.argv[1], sys.argv[2], sys.argv[3]

# Runtime exports the runtime makes for nvcc's generated code only: they
# register modules and launch configurations, and touch no stream.
RUNTIME_INTERNAL = {
    "__cudaInitModule", "__cudaRegisterFatBinary", "__cudaRegisterFatBinaryEnd",
    "__cudaRegisterFunction", "__cudaRegisterHostVar", "__cudaRegisterManagedVar",
    "__cudaRegisterUnifiedTable", "__cudaRegisterVar",
}


def exported(path, want_versions):
    out = subprocess.run(["nm", "-D", "--defined-only", path], check=True,
                         capture_output=True, text=True).stdout
    syms = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in ("T", "W", "i"):
            syms.add(parts[2] if want_versions else parts[2].split("@")[0])
    return syms


want = {"dlsym@@GLIBC_2.34", "dlsym@GLIBC_2.2.5"}
node = None
for line in open(mapfile):
    line = re.sub(r"/\*.*?\*/", "", line).strip()
    m = re.match(r"^(\S+)\s*\{", line)
    if m:
        node = m.group(1)
        continue
    m = re.match(r"^(\w+);$", line)
    if m and node and m.group(1) != "dlsym":
        want.add(f"{m.group(1)}@@{node}")
have = exported(lib, True)
leaked, missing = sorted(have - want), sorted(want - have)
for s in leaked:
    print("leaked:", s)
for s in missing:
    print("missing:", s)
names = {s.split("@")[0] for s in have}
bad = leaked or missing
for path, skip in ((f"{cudalib}/libcudart.so.13", RUNTIME_INTERNAL), (f"{cudalib}/stubs/libcuda.so", set())):
    try:
        theirs = exported(path, False)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"cannot read {path}: {e}")
        bad = True
        continue
    unwrapped = sorted(theirs - names - skip)
    for s in unwrapped:
        print(f"not wrapped (from {path}): {s}")
    bad = bad or bool(unwrapped)
    print(f"{path}: {len(theirs)} functions, {len(theirs) - len(unwrapped)} wrapped")
print(f"{len(have)} exported, {len(want)} expected")
sys.exit(1 if bad else 0)
