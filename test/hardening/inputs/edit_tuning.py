# Writes a broken copy of a dscc-tune file (one edit by name) for the strict reader's tests.
import re
import sys

edit, src, dst = sys.argv[1], sys.argv[2], sys.argv[3]
text = open(src).read()
first_range = re.compile(r"(      - \{from: )(\d+)(, to: )(\d+)(, config: )([a-z0-9.]+)(\})")


def sub1(pattern, repl, s):
    out, n = re.subn(pattern, repl, s, count=1)
    assert n == 1, "edit %s found nothing to change" % edit
    return out


if edit == "config":      # a configuration the tuner never measures
    text = sub1(r"fallback: [a-z0-9.]+", "fallback: v3.c100", text)
elif edit == "unknown-key":
    text = sub1(r"(\n    kind: )", r"\n    colour: red\1", text)
elif edit == "dup-key":
    text = sub1(r"(\n    points: \d+)", r"\1\1", text)
elif edit == "dup-kernel":
    head, kernels = text.split("kernels:\n", 1)
    first = kernels.split("\n  - index:")[0]
    text = head + "kernels:\n" + first + "\n" + kernels
elif edit == "from-neg":
    text = sub1(r"ranges:.*\n", "ranges:\n      - {from: -5, to: 10, config: v8.c16384}\n", text)
elif edit == "index-neg":
    text = sub1(r"- index: \d+", "- index: -1", text)
elif edit == "index-big":  # a kernel the model does not have
    text = sub1(r"- index: \d+", "- index: 99999", text)
elif edit == "kind-bogus":  # not a kernel kind planModel gives
    text = sub1(r"(\n    kind: )[a-z]+", r"\1bogus", text)
elif edit == "nan-time":
    text = sub1(r"(ns: \{v4\.c4096: )[0-9.]+", r"\1.nan", text)
elif edit == "max-versions":
    text = sub1(r"max_versions: \d+", "max_versions: 1000000", text)
elif edit == "many-ranges":  # 20,000 disjoint ranges on the first kernel
    rs = "".join("      - {from: %d, to: %d, config: v8.c16384}\n" % (2 * i + 1, 2 * i + 1) for i in range(20000))
    text = sub1(r"ranges:.*\n(      - \{.*\n)*", "ranges:\n" + rs.replace("\\", "\\\\"), text)
elif edit == "empty":
    text = ""
else:
    sys.exit("unknown edit " + edit)
open(dst, "w").write(text)
