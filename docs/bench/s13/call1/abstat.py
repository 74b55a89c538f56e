#!/usr/bin/env python3
"""Median over rounds of each (file prefix, build, mode, size): us per call, old vs new."""
import glob, json, re, statistics, sys
d = sys.argv[1]
rows = {}
for f in sorted(glob.glob(f"{d}/*.json")):
    m = re.match(r".*/(\w+?)_(old|new)_(\d+)\.json", f)
    if not m:
        continue
    pre, b, _ = m.groups()
    for r in json.load(open(f))["results"]:
        rows.setdefault((pre, r["mode"], r["bytes"]), {}).setdefault(b, []).append(r["median_us"])
print("set mode bytes | old med (min..max) | new med (min..max) | new-old")
for (pre, mode, nb), v in sorted(rows.items()):
    o, n = v.get("old", []), v.get("new", [])
    if not o or not n:
        continue
    mo, mn = statistics.median(o), statistics.median(n)
    print(f"{pre} {mode} {nb} | {mo:.2f} ({min(o):.2f}..{max(o):.2f}) | {mn:.2f} ({min(n):.2f}..{max(n):.2f}) | {mn-mo:+.2f}")
