# Reads fused IR (dscc-opt --default-pipeline) on stdin; fails when a kernel holds more than LIMIT ops named OP ('' = any op).
import re
import sys

op, limit = sys.argv[1], int(sys.argv[2])
kernels, count, worst, name = 0, 0, 0, None
for line in sys.stdin:
    m = re.match(r"  (%\S+).* = fusion ", line)
    if m:
        kernels, count, name = kernels + 1, 0, m.group(1)
        continue
    if name and line.startswith("  }"):
        worst = max(worst, count)
        name = None
        continue
    body = re.match(r"    %\S+(?:, %\S+)* = (\w+)", line)
    if name and body and (not op or body.group(1) == op):
        count += 1
        if count > limit:
            sys.exit("kernel %s holds more than %d %s ops" % (name, limit, op or "body"))
if kernels == 0:
    sys.exit("no kernels in the input")
print("%d kernels, at most %d %s ops each (limit %d)" % (kernels, worst, op or "body", limit))
