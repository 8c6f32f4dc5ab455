#!/usr/bin/env python3
# Fails when the README's table of reasons work stayed eager differs from the
# reasons the report gives (src/stats.c: cg_reason_names, cg_reason_help): a
# reason missing from either, or said otherwise.
import re
import sys

stats, readme = open(sys.argv[1]).read(), open(sys.argv[2]).read()


def table(name):
    body = stats[stats.index(name + "[CG_WHY_COUNT] = {"):]
    body = body[:body.index("};")]
    return {m.group(1): "".join(re.findall(r'"([^"]*)"', m.group(2)))
            for m in re.finditer(r'\[(CG_WHY_\w+)\] = ((?:\s*"[^"]*")+)', body)}


names, helps = table("cg_reason_names"), table("cg_reason_help")
code = {names[k]: helps.get(k) for k in names}
doc = dict(re.findall(r"^\| `(\w+)` \| (.+) \|$", readme, re.M))
bad = 0
for n, h in code.items():
    if h is None:
        print(f"check_reasons: {n} has no help in src/stats.c")
        bad = 1
    elif doc.get(n) != h:
        print(f"check_reasons: README says of {n}: {doc.get(n)!r}; the report: {h!r}")
        bad = 1
print(f"check_reasons: {len(code)} reasons, README {'differs' if bad else 'agrees'}")
sys.exit(bad)
