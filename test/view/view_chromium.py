#!/usr/bin/python3
"""`dscc view` pages opened in headless Chromium: they load without console errors, show every kernel, and mark the versions `dscc explain` says run.

Usage: /usr/bin/python3 test/view/view_chromium.py PATH/TO/dscc OUTDIR

For each workload of bench/workloads, the imported BERT of test/onnx/fixtures
(straight from its .onnx), a 12-layer BERT exported by PyTorch where it is
installed (test/view/export_bert12.py) and one compiled model (.so, whose program is read
back from the artifact), at sizes inside its ranges (37 clamped):

* `dscc view MODEL --dim ... -o OUTDIR/NAME.html`;
* Chromium (Debian's `chromium`, --headless --no-sandbox) dumps the DOM after
  the page's script ran, with console messages on stderr
  (--enable-logging=stderr): the page must log nothing to the console and its
  script must have written its ready marker (it does so only when it ran
  without an exception);
* every kernel `dscc explain` lists is in the kernel list and in the graph
  (an SVG group `kernelN`), and the version the list marks as running is the
  `runs:` function explain prints (none for a library call without epilogue);
* a screenshot OUTDIR/NAME.png is written (a PNG of the window size);
* the 12-layer BERT's page is the same bytes when written twice, and its kernel view groups its kernels in 12 layer clusters;
* opened as NAME.html#kernel=N (what clicking kernel N shows), the details
  panel holds that kernel's explain text and its IR.

Exits 77 (ctest: skipped) when chromium is missing or cannot start here,
1 on any failure, 0 otherwise.
"""

import html.parser
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import view_common as vc  # noqa: E402

SKIP = 77
WINDOW = "1600,1000"


def chromium_args(exe, profile_dir):
    return [exe, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--disable-extensions",
            "--user-data-dir=" + profile_dir, "--enable-logging=stderr", "--v=0", "--window-size=" + WINDOW,
            "--virtual-time-budget=10000"]


class PageParser(html.parser.HTMLParser):
    """Collects the kernel list items, the graph's kernel groups and the ready marker."""

    def __init__(self):
        super().__init__()
        self.items = {}
        self.groups = set()
        self.ready = False
        self.status = None
        self._in_status = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body" and a.get("data-dscc-ready") == "1":
            self.ready = True
        if tag == "li" and "data-kernel" in a:
            self.items[int(a["data-kernel"])] = a
        if tag == "g" and (a.get("id") or "").startswith("kernel"):
            self.groups.add(a["id"])
        self._in_status = a.get("id") == "dscc-status"

    def handle_data(self, data):
        if self._in_status:
            self.status = (self.status or "") + data

    def handle_endtag(self, tag):
        self._in_status = False


def console_lines(stderr):
    return [l for l in stderr.splitlines() if ":CONSOLE" in l or "Uncaught" in l]


def main():
    dscc, outdir = sys.argv[1], sys.argv[2]
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        print("SKIP: chromium is not installed (Debian: chromium)")
        return SKIP
    os.makedirs(outdir, exist_ok=True)
    failures = []
    with tempfile.TemporaryDirectory(prefix="dscc-view-") as tmp:
        profile_dir = os.path.join(tmp, "chromium-profile")
        # Can Chromium start at all here (a container without /dev/shm, no user namespaces...)?
        probe = os.path.join(tmp, "probe.html")
        with open(probe, "w") as f:
            f.write("<!DOCTYPE html><html><body><p id='x'>probe</p></body></html>")
        try:
            p = subprocess.run(chromium_args(exe, profile_dir) + ["--dump-dom", "file://" + probe],
                               capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired:
            print("SKIP: chromium did not finish loading a trivial page in 120 s")
            return SKIP
        if p.returncode != 0 or "probe" not in p.stdout:
            print("SKIP: chromium cannot start here (exit %d):\n%s" % (p.returncode, p.stderr[-2000:]))
            return SKIP

        models = [(m, m) for m in vc.workloads()] + [(vc.BERT_ONNX, vc.BERT_ONNX)]
        # A 12-layer BERT exported by PyTorch (when it is installed): the large model the page must keep readable.
        bert12 = os.path.join(tmp, "bert12.onnx")
        e = subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "export_bert12.py"),
                            bert12], capture_output=True, text=True)
        if e.returncode == 0:
            models.append((bert12, bert12))
        elif e.returncode == 77:
            print("note: no PyTorch, so no 12-layer BERT: " + e.stdout.strip())
        else:
            failures.append("export_bert12.py failed: " + e.stderr[-2000:])
        so = os.path.join(tmp, "softmax.so")
        softmax = os.path.join(vc.WORKLOADS, "softmax.dsc")
        c = subprocess.run([dscc, "compile", softmax, "-o", so], capture_output=True, text=True)
        if c.returncode != 0:
            failures.append("softmax.dsc: compile failed: " + c.stderr)
        else:
            models.append((so, softmax))  # the .so is explained through its source
        for model, source in models:
            name = os.path.splitext(os.path.basename(model))[0] + ("_so" if model.endswith(".so") else "")
            dims = vc.sizes_for(vc.program_text(dscc, source))
            kernels, _ = vc.explain(dscc, source, dims)
            page = os.path.join(outdir, name + ".html")
            v = subprocess.run([dscc, "view", model, "-o", page] + vc.dim_args(dims), capture_output=True, text=True)
            if v.returncode != 0:
                failures.append("%s: dscc view failed: %s" % (name, v.stderr.strip()))
                continue
            url = "file://" + os.path.abspath(page)
            d = subprocess.run(chromium_args(exe, profile_dir) + ["--dump-dom", url],
                               capture_output=True, text=True, timeout=300)
            png = os.path.join(outdir, name + ".png")
            if os.path.exists(png):
                os.remove(png)
            s = subprocess.run(chromium_args(exe, profile_dir) + ["--screenshot=" + png, url],
                               capture_output=True, text=True, timeout=300)
            mine = []
            parser = PageParser()
            parser.feed(d.stdout)
            if d.returncode != 0:
                mine.append("chromium exited %d on the page" % d.returncode)
            for l in console_lines(d.stderr) + console_lines(s.stderr):
                mine.append("console: " + l.strip())
            if not parser.ready:
                mine.append("the page's script did not finish (status: %r)" % parser.status)
            for k in kernels:
                item = parser.items.get(k["index"])
                if item is None:
                    mine.append("kernel %d (%%%s) is not in the kernel list" % (k["index"], k["result"]))
                    continue
                if "kernel%d" % k["index"] not in parser.groups:
                    mine.append("kernel %d (%s) is not in the graph" % (k["index"], item.get("data-symbol")))
                if item.get("data-runs") != k["runs"]:
                    mine.append("kernel %d: the page marks %r as running, explain says %r"
                                % (k["index"], item.get("data-runs"), k["runs"]))
            if len(parser.items) != len(kernels):
                mine.append("the page lists %d kernels, explain %d" % (len(parser.items), len(kernels)))
            if not os.path.exists(png) or os.path.getsize(png) < 1000:
                mine.append("no screenshot written (%s): %s" % (png, s.stderr[-500:]))
            else:
                with open(png, "rb") as f:
                    if f.read(8) != b"\x89PNG\r\n\x1a\n":
                        mine.append("the screenshot %s is not a PNG" % png)
            if name == "bert12":
                # Deterministic: a second page of the same model is the same bytes (cgraph's default IDs
                # ordered the clusters by address, which changed from run to run on this model).
                again = page + ".again.html"
                subprocess.run([dscc, "view", model, "-o", again] + vc.dim_args(dims), capture_output=True)
                with open(page, "rb") as f1, open(again, "rb") as f2:
                    if f1.read() != f2.read():
                        mine.append("two pages of the same model differ")
                os.remove(again)
                # A deep model reads as a stack of layers: the kernel view groups each layer's kernels.
                with open(page) as f:
                    layers = f.read().count('class="cluster layer"')
                if layers < 12:
                    mine.append("the 12-layer BERT's kernel view has %d layer clusters, not 12" % layers)
            # What a click shows: page.html#kernel=N runs the click handler's show(N) on load.
            last = kernels[-1]["index"] if kernels else None
            if last is not None:
                c = subprocess.run(chromium_args(exe, profile_dir) + ["--dump-dom", url + "#kernel=%d" % last],
                                   capture_output=True, text=True, timeout=300)
                for l in console_lines(c.stderr):
                    mine.append("console (kernel shown): " + l.strip())
                shown = re.search(r'<pre class="explain">(.*?)</pre>', c.stdout, re.S)
                ir = re.search(r'<pre class="ir">(.*?)</pre>', c.stdout, re.S)
                if not shown or ("[%d] %%" % last) not in shown.group(1):
                    mine.append("showing kernel %d gives no explain text for it" % last)
                if not ir or "fusion" not in ir.group(1):
                    mine.append("showing kernel %d gives no IR" % last)
            print("%-22s %3d kernels, %s  %s" % (name, len(kernels), "FAIL" if mine else "ok", png))
            failures += ["%s: %s" % (name, m) for m in mine]
    for f in failures:
        print("FAIL: " + f)
    print("%d failures" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
