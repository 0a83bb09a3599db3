# Writes random programs (seeds x count) as .dsc files for the planner comparison.
import sys, os
sys.path.insert(0, "/work/main/test/numeric")
import random_programs as rp
out = sys.argv[1]; os.makedirs(out, exist_ok=True)
for seed in [15001, 3, 3002, 6007, 8001, 6012, 1, 20001]:
    for k in range(300):
        for w, s, tag in [(False, False, ""), (True, True, "ws")] if seed in (1, 20001) else [(False, False, "")]:
            g = rp.Gen(seed * 1000003 + k, w, s)
            open(os.path.join(out, "s%d_%d%s.dsc" % (seed, k, tag)), "w").write(g.program())
