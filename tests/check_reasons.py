#!/usr/bin/env python3
# Fails when the README's table of reasons work stayed eager differs from the
# reasons the report gives (src/stats.c: cg_reasons): a reason missing
# from the README, or said otherwise.
import re
import sys

stats, readme = open(sys.argv[1]).read(), open(sys.argv[2]).read()


def table():
    body = stats[stats.index("cg_reasons[CG_WHY_COUNT] = {"):]
    body = body[:body.index("};")]
    return {m.group(1): "".join(re.findall(r'"([^"]*)"', m.group(2)))
            for m in re.finditer(r'\[CG_WHY_\w+\] = \{ "(\w+)",((?:\s*"[^"]*")+) \}', body)}


code = table()
doc = dict(re.findall(r"^\| `(\w+)` \| (.+) \|$", readme, re.M))
bad = 0
for n, h in code.items():
    if doc.get(n) != h:
        print(f"check_reasons: README says of {n}: {doc.get(n)!r}; the report: {h!r}")
        bad = 1
print(f"check_reasons: {len(code)} reasons, README {'differs' if bad else 'agrees'}")
sys.exit(bad)
