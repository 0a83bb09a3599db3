"""rnn layers (ONNX LSTM, GRU, RNN) for the random program generator (random_programs.py --recurrent).

A mixin of its Gen, which gives it `r` (the seeded random.Random), `gpu`, `arg`, `emit`, `typ`, `extent`, `pool`,
`rnn_states`, `rnn_outs` and `op_unary`; and the GPU rnn kernels' CPU emulation for a program (random_programs.py
--recurrent --target cuda:... --emulate)."""

import subprocess

from random_movement import mul_dims

# (cell attribute, gates, linear_before_reset)
CELLS = [("lstm", 4, False), ("gru", 3, False), ("gru", 3, True), ("rnn", 1, False)]


def emulate_recurrent(emulate, env, text):
    """Runs the GPU kernels of the program's rnn ops on CPU threads, a loop over time steps standing in for the
    host's, against the interpreter bit for bit (test/unit/GpuRecurrentTest.cpp, GpuRecurrentBatch.Program; env names
    the program and sizes): ("" or the failure, the emulated (kernel, size) runs)."""
    if " rnn %" not in text:
        return "", 0
    c = subprocess.run([emulate, "--gtest_filter=GpuRecurrentBatch.Program"], capture_output=True, text=True,
                       timeout=600, env=env)
    if c.returncode != 0 or "[  PASSED  ] 1 test" not in c.stdout:
        return "GPU rnn emulation:\n" + c.stdout[-3000:] + c.stderr[-1000:], 0
    runs = sum(int(line.split(",")[1].split()[0]) for line in c.stdout.splitlines() if line.startswith("emulated: "))
    # Every rnn result is returned, so the plan has an rnn kernel: none emulated is a failure, not a pass.
    return ("" if runs else "GPU rnn emulation ran no rnn kernel:\n" + c.stdout[-3000:]), runs


class RecurrentOps:
    def sequence(self):
        """The first argument of a --recurrent program most of the time: a sequence x [S, N, I] whose length and
        batch are symbols (0 where N's range starts at 0) or small constants."""
        return [self.r.choice(["N", "M", "5", "1"]), self.r.choice(["1", "2", "M", "N"]),
                self.r.choice(["1", "3", "4", "M"])]

    def op_rnn(self, x, dims, chained=False):
        """An rnn layer over x read as [S, N, I] (a rank-2 value as [S, 1, I], a rank-4 one with its last two dims
        merged): a random cell, direction, hidden size and output; bias, initial_h and initial_c each present or not
        (a later one only with the earlier ones), initial_h at times the y_h of an earlier layer (an encoder's state
        handed to a decoder); f32, and on a GPU target also f64, f16 and bf16 (the CPU takes f32 only). At times a
        second rnn of the same operands (an ONNX node naming two outputs) and a layer stacked on y."""
        if len(dims) not in (2, 3, 4) or self.extent(dims[-1:]) > 64:
            # Up to 64 input terms a gate: f32 sums on the CPU stay within the batch's tolerance of f64 ones.
            return self.op_unary(x, dims)
        if len(dims) == 4 and self.extent(dims[2:]) > 64:
            return self.op_unary(x, dims)
        if len(dims) != 3:
            nd = [dims[0], "1", dims[1]] if len(dims) == 2 else dims[:2] + [mul_dims(dims[2], dims[3])]
            x = self.emit("reshape %%%s : %s" % (x, self.typ(nd)), nd, pool=False)
            dims = nd
        S, N, I = dims
        cell, G, lbr = self.r.choice(CELLS)
        dt = self.r.choice(["f32", "f32", "f64", "f16", "bf16"])
        if not self.gpu:
            dt = "f32"
        states = [s for s in self.rnn_states if s[1][1] == N and s[2] == dt]
        handed = self.r.choice(states) if states and self.r.random() < 0.5 else None
        if handed:
            D, H = int(handed[1][0]), int(handed[1][2])
            direction = "bidirectional" if D == 2 else self.r.choice(["forward", "reverse"])
        else:
            direction = self.r.choice(["forward", "reverse", "bidirectional"])
            D, H = 2 if direction == "bidirectional" else 1, self.r.choice([1, 2, 3, 4, 5, 8, 16, 17, 33])
        if dt != "f32":
            x = self.emit("cast %%%s {to = %s}" % (x, dt), dims, pool=False)
        # Weights and biases in [-1/sqrt(H), 1/sqrt(H)) on the cpu, as PyTorch initialises them: uniform in [-1, 1),
        # the recurrence of H = 33 is chaotic and amplifies f32 rounding from 1e-7 to 4e-4 in 17 steps in NumPy
        # alone (seed 301 programs 39 and 127), no compiler bug. (The GPU batch compares bits: any weights do.)
        weight = ("weight", H ** -0.5)
        w = self.arg([str(D), str(G * H), I], dt, weight)
        rr = self.arg([str(D), str(G * H), str(H)], dt, weight)
        ops = [x, w, rr]
        k = 3 if handed else self.r.choice([0, 1, 2, 3, 3])
        if k >= 1:
            ops.append(self.arg([str(D), str(2 * G * H)], dt, weight))
        if k >= 2:
            ops.append(handed[0] if handed else self.arg([str(D), N, str(H)], dt))
        if k >= 3 and cell == "lstm":
            ops.append(self.arg([str(D), N, str(H)], dt))
        attrs = 'cell = "%s", direction = "%s", hidden_size = %d%s' % (
            cell, direction, H, ", linear_before_reset = true" if lbr else "")
        outs = ["y", "y_h"] + (["y_c"] if cell == "lstm" else [])
        first = self.r.choice(["y", "y", "y"] + outs[1:])
        second = self.r.choice([o for o in outs if o != first]) if self.r.random() < 0.3 else None
        y = None
        for out in [first] + ([second] if second else []):
            od = [S, str(D), N, str(H)] if out == "y" else [str(D), N, str(H)]
            v = self.emit("rnn %s {%s%s}" % (", ".join("%" + o for o in ops), attrs,
                                             "" if out == "y" else ', output = "%s"' % out), od, pool=False)
            if out == "y_h":
                self.rnn_states.append((v, od, dt))
            if dt != "f32":
                v = self.emit("cast %%%s {to = f32}" % v, od, pool=False)
            self.pool.append((v, od))
            self.rnn_outs.append((v, od))
            if out == "y":
                y = v
        if y and not chained and self.r.random() < 0.35:
            # A layer stacked on this one: y [S, D, N, H] as [S, N, D*H] (a bidirectional y through a transpose,
            # as ONNX exports of stacked layers do).
            if D == 2:
                y = self.emit("transpose %%%s {perm = [0, 2, 1, 3]}" % y, [S, N, "2", str(H)], pool=False)
            nd = [S, N, str(D * H)]
            self.op_rnn(self.emit("reshape %%%s : %s" % (y, self.typ(nd)), nd, pool=False), nd, chained=True)
