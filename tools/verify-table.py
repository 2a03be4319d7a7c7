#!/usr/bin/env python3
"""Tabulate memplan verify reports (tools/gpu-bench.sh's output directory):
predicted against measured peak, iteration time and link bandwidth, the
achieved bandwidth against memplan verify --probe's; a run that failed gets
a row saying why.  Prints markdown."""
import glob
import json
import os
import re
import sys

d = sys.argv[1] if len(sys.argv) > 1 else "gpu-out"
probe = {}
try:
    for line in open(os.path.join(d, "probe.txt")):
        m = re.search(r"h2d ([0-9.]+) GB/s.*d2h ([0-9.]+) GB/s", line)
        if m:
            probe = {"h2d": float(m.group(1)), "d2h": float(m.group(2))}
except OSError:
    pass
print("| net | budget | mode | peak pred | peak meas | peak dev | time pred ms | time meas ms | time dev "
      "| h2d GB/s | d2h GB/s | h2d/probe | d2h/probe | real/timed ops | ok |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for f in sorted(glob.glob(os.path.join(d, "*.verify.json")) + glob.glob(os.path.join(d, "*.timed.json"))):
    name = os.path.basename(f).split(".")
    mode = "timed" if name[2] == "timed" else "real"
    try:
        r = json.load(open(f))
    except (OSError, ValueError) as e:
        r = {"error": "unreadable report (%s)" % e}
    if "total" not in r:
        # a run that failed: its report says where and why, and has no totals
        why = r.get("violation") or r.get("error") or "no measurement"
        why = " ".join(why.replace("|", "/").split())
        print("| %s | %s%% | %s |%s no: %s |" % (name[0], name[1], mode, " - |" * 11, why))
        continue
    t = r["total"]
    cu = r.get("cuda", {})
    h2d, d2h = t["h2d_gbps"]["measured"], t["d2h_gbps"]["measured"]
    print("| %s | %s%% | %s | %d | %d | %+.2f%% | %.3f | %.3f | %+.2f%% | %.2f | %.2f | %s | %s | %s/%s | %s |" % (
        name[0], name[1], mode,
        t["peak_bytes"]["predicted"], t["peak_bytes"]["measured"], 100 * r["peak"]["deviation"],
        t["time_ms"]["predicted"], t["time_ms"]["measured"], 100 * r["time"]["deviation"],
        h2d, d2h,
        "%.0f%%" % (100 * h2d / probe["h2d"]) if probe and h2d else "-",
        "%.0f%%" % (100 * d2h / probe["d2h"]) if probe and d2h else "-",
        cu.get("ops_real", "-"), cu.get("ops_timed", "-"), "yes" if r["ok"] else "no"))
