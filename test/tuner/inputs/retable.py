# Rewrites kernel 0's ranges, fallback or fingerprint of a dscc-tune file (lit tests of hand-edited tables).
import argparse
import re

ap = argparse.ArgumentParser()
ap.add_argument("src")
ap.add_argument("dst")
ap.add_argument("--ranges", default=None, help="FROM:TO:CONFIG,... for kernel 0")
ap.add_argument("--fallback", default=None, help="a config, or 'none' to drop it")
ap.add_argument("--fingerprint", default=None)
a = ap.parse_args()
lines = open(a.src).read().split("\n")
out, in_ranges, kernel = [], False, -1
for line in lines:
    if line.startswith("  - index:"):
        kernel += 1
    if kernel == 0 and in_ranges and line.startswith("      - {from:"):
        continue
    in_ranges = False
    if kernel == 0 and line.startswith("    ranges:") and a.ranges is not None:
        out.append("    ranges:")
        for r in a.ranges.split(","):
            f, t, c = r.split(":")
            out.append("      - {from: %s, to: %s, config: %s}" % (f, t, c))
        in_ranges = True
        continue
    if kernel == 0 and line.startswith("    fallback:") and a.fallback is not None:
        if a.fallback != "none":
            out.append("    fallback: " + a.fallback)
        continue
    if kernel == 0 and line.startswith("    fingerprint:") and a.fingerprint is not None:
        out.append('    fingerprint: "%s"' % a.fingerprint)
        continue
    out.append(line)
open(a.dst, "w").write("\n".join(out))
