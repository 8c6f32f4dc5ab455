#!/usr/bin/env python3
# Fails when libcgraft.so exports anything the X-macro list does not name, or
# misses one it does, or exports it without the runtime's version node; beside
# them only dlsym and cgraft's own function.
import re
import subprocess
import sys

lib, deffile = sys.argv[1], sys.argv[2]
want = set()
for m in re.finditer(r"^CG_RT\(\s*(\w+)\s*,\s*(\w+)", open(deffile).read(), re.M):
    if m.group(1) != "INT":
        want.add(m.group(2) + "@@libcudart.so.13")
want |= {"dlsym@@GLIBC_2.34", "dlsym@GLIBC_2.2.5", "cgraft_set_enabled@@CGRAFT_0"}
out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True,
                     capture_output=True, text=True).stdout
have = set()
for line in out.splitlines():
    parts = line.split()
    if len(parts) == 3 and parts[1] != "A":
        have.add(parts[2])
leaked, missing = sorted(have - want), sorted(want - have)
for s in leaked:
    print("leaked:", s)
for s in missing:
    print("missing:", s)
print(f"{len(have)} exported, {len(want)} expected")
sys.exit(1 if leaked or missing else 0)
