# Compares the planner's output before and after: kernels (kind, result types, body ops) with remarks stripped.
import os, re, sys, collections
a, b = sys.argv[1], sys.argv[2]
def strip(t):
    t = re.sub(r', remarks = \[.*?"\]\}', '}', t)
    t = re.sub(r' \{remarks = \[.*?"\]\}', '', t)
    return t
def kinds(t):
    return collections.Counter(re.findall(r'fusion .*?\{kind = "(\w+)"', t))
same = diff = 0
tot_a = collections.Counter(); tot_b = collections.Counter()
diffs = []
for f in sorted(os.listdir(a)):
    if not os.path.exists(os.path.join(b, f)): continue
    ta, tb = open(os.path.join(a, f)).read(), open(os.path.join(b, f)).read()
    ka, kb = kinds(ta), kinds(tb)
    tot_a += ka; tot_b += kb
    if strip(ta) == strip(tb): same += 1
    else:
        diff += 1
        diffs.append((f, dict(ka), dict(kb), sum(ka.values()), sum(kb.values())))
print("identical:", same, "different:", diff)
print("kernels before:", dict(tot_a), sum(tot_a.values()))
print("kernels after: ", dict(tot_b), sum(tot_b.values()))
fewer = sum(1 for d in diffs if d[4] < d[3]); more = sum(1 for d in diffs if d[4] > d[3])
print("programs with fewer kernels:", fewer, "more:", more, "same count:", len(diffs) - fewer - more)
for d in diffs[:40]: print(d)
