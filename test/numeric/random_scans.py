"""scatter and cumsum for the random program generator (random_programs.py --scans): a mixin of its Gen, which
gives it `r` (the seeded random.Random), `positive`, `arg`, `emit` and `op_unary`; and their GPU bodies' CPU
emulation for a program (random_programs.py --scans --target cuda:... --emulate)."""

import subprocess

REDUCTIONS = ["none", "add", "mul", "max", "min"]


class ScanOps:
    def op_scatter(self, x, dims):
        """x with rows of dim 0 written at index arguments (uniform in [-D, D): negative ones and repeats) from
        updates of the index dims plus x's other dims, by a random reduction."""
        if not dims or not self.positive(dims[0]):
            return self.op_unary(x, dims)
        idims = self.r.choice([["M"], ["3"], ["2", "M"], ["1"]])
        ix = self.arg(idims, "i64", ("index", dims[0]))
        u = self.arg(idims + dims[1:])
        red = self.r.choice(REDUCTIONS)
        attr = "" if red == "none" else ' {reduction = "%s"}' % red
        self.emit("scatter %%%s, %%%s, %%%s%s" % (x, ix, u, attr), dims)

    def op_cumsum(self, x, dims):
        """The running sum of x along a random axis, exclusive and reverse at random."""
        if not dims:
            return self.op_unary(x, dims)
        attrs = ["axis = %d" % self.r.randrange(-len(dims), len(dims))]
        if self.r.random() < 0.4:
            attrs.append("exclusive = true")
        if self.r.random() < 0.4:
            attrs.append("reverse = true")
        self.emit("cumsum %%%s {%s}" % (x, ", ".join(attrs)), dims)


def emulate_scans(emulate, env, text):
    """Runs the GPU bodies of the program's scatter and cumsum kernels on CPU threads against the interpreter
    (test/unit/GpuScatterTest.cpp, GpuScatterBatch.Program; env names the program and sizes): ("" or the
    failure, the emulated (kernel, size) runs)."""
    if "scatter " not in text and "cumsum " not in text:
        return "", 0
    c = subprocess.run([emulate, "--gtest_filter=GpuScatterBatch.Program"], capture_output=True, text=True,
                       timeout=600, env=env)
    if c.returncode != 0 or "[  PASSED  ] 1 test" not in c.stdout:
        return "GPU scatter/cumsum emulation:\n" + c.stdout[-3000:] + c.stderr[-1000:], 0
    return "", sum(int(line.split(",")[1].split()[0]) for line in c.stdout.splitlines() if line.startswith("emulated: "))
