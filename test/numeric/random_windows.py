"""Conv, conv_transpose and pool (max, avg and argmax) for the random program generator (random_programs.py --windows): a mixin of its Gen,
which gives it `r` (the seeded random.Random), `syms`, `arg`, `emit` and `op_unary`; and their GPU kernels' CPU
emulation for a program (random_programs.py --windows --target cuda:... --emulate)."""
import random
import subprocess


def emulate_windows(emulate, env, text):
    """Runs the GPU kernels of the program's conv, conv_transpose and pool on CPU threads against the interpreter, bit
    for bit (test/unit/GpuWindowTest.cpp, GpuWindowBatch.Program; env names the program and sizes): ("" or the
    failure, the emulated (kernel, size) runs)."""
    if not any(w in text for w in ("conv ", "conv_transpose ", "pool ")):
        return "", 0
    c = subprocess.run([emulate, "--gtest_filter=GpuWindowBatch.Program"], capture_output=True, text=True,
                       timeout=600, env=env)
    if c.returncode != 0 or "[  PASSED  ] 1 test" not in c.stdout:
        return "GPU conv/pool emulation:\n" + c.stdout[-3000:] + c.stderr[-1000:], 0
    return "", sum(int(line.split(",")[1].split()[0]) for line in c.stdout.splitlines() if line.startswith("emulated: "))


class WindowOps:
    def op_window(self, x, dims, chained=False):
        """conv or pool of x read as [N, C, spatial...] (1-D or 2-D). Symbolic spatial dims keep their size
        (stride 1, pads that add up to the span less one, or SAME when the dim may be 0); static ones take any
        stride, dilation, pads and (pool) ceil mode, the result size computed here by the rule of docs/ir.md."""
        simple = all(d.isdigit() or d in self.syms for d in dims)
        if len(dims) not in (3, 4) or not simple or dims[1] == "N":
            return self.op_unary(x, dims)
        sp = dims[2:]
        n = len(sp)
        maybe_zero = any(d in self.syms and self.syms[d][0] == 0 for d in sp)
        is_conv = self.r.random() < 0.6
        kind = self.r.choice(["max", "avg"])
        ks, st, dil, pb, pe, out = [], [], [], [], [], []
        ceil = not is_conv and all(d.isdigit() for d in sp) and self.r.random() < 0.4
        for d in sp:
            if maybe_zero:
                k = self.r.choice([1, 2, 3])
                ks.append(k), st.append(1), dil.append(1), pb.append(0), pe.append(0), out.append(d)
                continue
            if d.isdigit():
                D = int(d)
                while True:
                    k, s, dl = self.r.choice([1, 2, 3]), self.r.choice([1, 1, 2]), self.r.choice([1, 1, 2])
                    b, e = self.r.randint(0, k - 1), self.r.randint(0, k - 1)
                    span = dl * (k - 1) + 1
                    if span <= D + b + e:
                        break
                room = D + b + e - span
                o = (min(-(-room // s), (D + b - 1) // s) if ceil else room // s) + 1
                ks.append(k), st.append(s), dil.append(dl), pb.append(b), pe.append(e), out.append(str(o))
                continue
            k, dl, b, e = self.r.choice([(3, 1, 1, 1), (3, 1, 0, 2), (1, 1, 0, 0), (2, 1, 1, 0), (2, 1, 0, 1),
                                         (2, 2, 1, 1), (3, 2, 2, 2)])
            ks.append(k), st.append(1), dil.append(dl), pb.append(b), pe.append(e), out.append(d)
        attrs = []
        if any(s != 1 for s in st):
            attrs.append("strides = [%s]" % ", ".join(map(str, st)))
        if any(x != 1 for x in dil):
            attrs.append("dilations = [%s]" % ", ".join(map(str, dil)))
        if maybe_zero:
            attrs.append('auto_pad = "%s"' % self.r.choice(["same_upper", "same_lower"]))
        elif any(pb + pe):
            attrs.append("pads = [%s]" % ", ".join(map(str, pb + pe)))
        C = dims[1]
        if not is_conv:
            head = ['kind = "%s"' % kind, "kernel_shape = [%s]" % ", ".join(map(str, ks))]
            if ceil:
                attrs.append("ceil_mode = true")
            if kind == "avg" and self.r.random() < 0.5:
                attrs.append("count_include_pad = true")
            y = self.emit("pool %%%s {%s}" % (x, ", ".join(head + attrs)), dims[:2] + out)
            if kind == "max":
                self.argmax_pool(x, dims[:2] + out, attrs, ks)
            if not chained:
                self.chain_window(y, dims[:2] + out)
            return
        m = self.r.choice(["2", "3", C])
        group = int(C) if C.isdigit() and m == C and int(C) > 1 and self.r.random() < 0.5 else 1
        # conv_transpose instead, from a generator of its own seeded by this one's state: drawing it from `r` would
        # change every --windows program after the first window, those without a conv_transpose too.
        side = random.Random("%s|%s|%r" % (x, ",".join(dims), self.r.getstate()[1][:2]))
        if side.random() < 0.4:
            return self.op_conv_transpose(x, dims, ks, st, dil, pb, pe, maybe_zero, m, group, side)
        if group > 1:
            attrs.append("group = %d" % group)
        w = self.arg([m, "1" if group > 1 else C] + [str(k) for k in ks])
        b = ", %%%s" % self.arg([m]) if self.r.random() < 0.5 else ""
        y = self.emit("conv %%%s, %%%s%s%s" % (x, w, b, " {%s}" % ", ".join(attrs) if attrs else ""), [dims[0], m] + out)
        y = self.conv_tail(y, [dims[0], m] + out)
        if not chained:
            self.chain_window(y, [dims[0], m] + out)

    def argmax_pool(self, x, dims, attrs, ks):
        """Most of the time beside a max pool, its indices (ONNX MaxPool's second output): an argmax pool of the same
        windows, storage_order 0 or 1, kept as an i64 value (a program may return it) and cast to f32 for the ops
        after it. Drawn from a generator of its own, like conv_transpose's, so programs without one stay as they
        were."""
        side = random.Random("argmax|%s|%s|%r" % (x, ",".join(dims), self.r.getstate()[1][:2]))
        if side.random() >= 0.7:
            return
        head = ['kind = "argmax"', "kernel_shape = [%s]" % ", ".join(map(str, ks))]
        if side.random() < 0.5:
            attrs = attrs + ["storage_order = 1"]
        i = self.emit("pool %%%s {%s}" % (x, ", ".join(head + attrs)), dims, pool=False)
        self.ints.append((i, dims))
        self.emit("cast %%%s {to = f32}" % i, dims)

    def conv_tail(self, y, dims):
        """Half of the time an elementwise tail after a conv, the chains the planner fuses into it as oneDNN post-ops
        (ir/ConvEpilogue.h): relu, relu6 (max then min), HardSwish as the importer writes it, HardSigmoid (linear
        then clip), a residual add of a tensor of the conv's dims (then a relu half of those times). Drawn from a
        generator of its own, like conv_transpose's. Returns the tail's value (y when none)."""
        side = random.Random("tail|%s|%s|%r" % (y, ",".join(dims), self.r.getstate()[1][:2]))
        kind = side.random()
        if kind >= 0.5:
            return y
        k = lambda v: self.emit("constant %s : f32[]" % v, [], pool=False)  # noqa: E731
        if kind < 0.1:
            return self.emit("relu %%%s" % y, dims)
        if kind < 0.2:
            return self.emit("min %%%s, %%%s" % (self.emit("max %%%s, %%%s" % (y, k("0.0")), dims), k("6.0")), dims)
        if kind < 0.4:
            h = self.emit("add %%%s, %%%s" % (self.emit("mul %%%s, %%%s" % (y, k("0.16666666666666666")), dims), k("0.5")),
                          dims)
            h = self.emit("max %%%s, %%%s" % (self.emit("min %%%s, %%%s" % (h, k("1.0")), dims), k("0.0")), dims)
            return self.emit("mul %%%s, %%%s" % (y, h), dims) if kind < 0.3 else h
        a = self.emit("add %%%s, %%%s" % (y, self.arg(dims)), dims)
        return self.emit("relu %%%s" % a, dims) if kind < 0.45 else a

    def chain_window(self, y, dims):
        """Most of the time another conv or pool right after (through a relu or an add half of those times): the
        chains the channels-last pass turns into [N, spatial..., C] kernels (passes/ChannelsLast.cpp), which single
        windows never meet. Drawn from a generator of its own, like conv_transpose's."""
        side = random.Random("chain|%s|%s|%r" % (y, ",".join(dims), self.r.getstate()[1][:2]))
        if side.random() >= 0.8:
            return
        saved, self.r = self.r, side
        try:
            between = side.random()
            if between < 0.25:
                y = self.emit("relu %%%s" % y, dims)
            elif between < 0.5:
                y = self.emit("add %%%s, %%%s" % (y, y), dims)
            self.op_window(y, dims, chained=True)
        finally:
            self.r = saved

    def op_conv_transpose(self, x, dims, ks, st, dil, pb, pe, maybe_zero, m, group, side):
        """conv_transpose of x with the kernel, strides, dilations and pads drawn for a conv. Symbolic dims keep their
        size (stride 1 and pads adding up to the span less one, or SAME); static ones take the drawn stride and an
        output_padding, the pads dropped where they would cut more than there is; the size computed here by the rule
        of docs/ir.md."""
        C, out, ops = dims[1], [], []
        pb, pe = list(pb), list(pe)
        for i, d in enumerate(dims[2:]):
            span = dil[i] * (ks[i] - 1) + 1
            if not d.isdigit() or maybe_zero:  # (SAME: in*stride, the stride 1 here)
                ops.append(0)
                out.append(d)
                continue
            op = side.choice([0, 0, 1, st[i]])
            if st[i] * (int(d) - 1) + span + op - pb[i] - pe[i] < 1:
                pb[i] = pe[i] = 0
            ops.append(op)
            out.append(str(st[i] * (int(d) - 1) + span + op - pb[i] - pe[i]))
        attrs = []
        if any(s != 1 for s in st):
            attrs.append("strides = [%s]" % ", ".join(map(str, st)))
        if any(v != 1 for v in dil):
            attrs.append("dilations = [%s]" % ", ".join(map(str, dil)))
        if maybe_zero:
            attrs.append('auto_pad = "%s"' % side.choice(["same_upper", "same_lower"]))
        elif any(pb + pe):
            attrs.append("pads = [%s]" % ", ".join(map(str, pb + pe)))
        if any(ops):
            attrs.append("output_padding = [%s]" % ", ".join(map(str, ops)))
        if group > 1:
            attrs.append("group = %d" % group)
        w = self.arg([C, "1" if group > 1 else m] + [str(k) for k in ks])
        b = ", %%%s" % self.arg([m]) if side.random() < 0.5 else ""
        self.emit("conv_transpose %%%s, %%%s%s%s" % (x, w, b, " {%s}" % ", ".join(attrs) if attrs else ""),
                  [dims[0], m] + out)
