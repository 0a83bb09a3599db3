"""Data movement for the random program generator (random_programs.py): transpose, reshape, slice, concat, gather,
iota and broadcast_to, a mixin of its Gen, which gives it `r` (the seeded random.Random), `syms`, `arg`, `emit`,
`typ`, `positive`, `bound_dim`, `pool` and `op_unary`; and attention's data movement on rows of one or two whole
vector blocks (`op_rows`)."""


def atom(d):
    return d if d.isidentifier() or d.lstrip("-").isdigit() else "(" + d + ")"


def mul_dims(a, b):
    if a == "1":
        return b
    if b == "1":
        return a
    return atom(a) + "*" + atom(b)


class MovementOps:
    def op_transpose(self, x, dims):
        if len(dims) < 2:
            return self.op_unary(x, dims)
        perm = list(range(len(dims)))
        while perm == sorted(perm):
            self.r.shuffle(perm)
        self.emit("transpose %%%s {perm = [%s]}" % (x, ", ".join(map(str, perm))), [dims[p] for p in perm])

    def op_reshape(self, x, dims):
        r = self.r.random()
        nd = list(dims)
        if r < 0.35 and len(dims) >= 2:
            i = self.r.randrange(len(dims) - 1)
            nd[i:i + 2] = [mul_dims(dims[i], dims[i + 1])]
        elif r < 0.6:
            consts = [i for i, d in enumerate(dims) if d.isdigit() and int(d) in (4, 6, 8)]
            merged = [i for i, d in enumerate(dims) if d.count("*") == 1 and "(" not in d]
            if merged and self.r.random() < 0.5:
                i = self.r.choice(merged)
                nd[i:i + 1] = dims[i].split("*")
            elif consts:
                i = self.r.choice(consts)
                c = int(dims[i])
                f = 2
                nd[i:i + 1] = [str(f), str(c // f)]
            else:
                nd.insert(self.r.randint(0, len(dims)), "1")
        elif r < 0.8:
            nd.insert(self.r.randint(0, len(dims)), "1")
        else:
            ones = [i for i, d in enumerate(dims) if d == "1"]
            if ones:
                del nd[self.r.choice(ones)]
            elif dims:
                nd = ["?"]
                flat = "1"
                for d in dims:
                    flat = mul_dims(flat, d)
                self.emit("reshape %%%s : %s" % (x, self.typ(nd)), [flat])
                return
        self.emit("reshape %%%s : %s" % (x, self.typ(nd)), nd)

    def op_slice(self, x, dims):
        if not dims:
            return self.op_unary(x, dims)
        a = self.r.randrange(len(dims))
        d = dims[a]
        nd = list(dims)
        if d.isdigit():
            D = int(d)
            step = self.r.choice([1, 1, 2, -1, -2, 3])
            start = self.r.randint(-D - 2, D + 2)
            end = self.r.randint(-D - 2, D + 2)
            length = len(range(D)[slice(start, end, step)])
            if length == 0:
                start, end, step = 0, D, 1
                length = D
            nd[a] = str(length)
            self.emit("slice %%%s {axes = [%d], starts = [%d], ends = [%d], steps = [%d]}" % (x, a, start, end, step), nd)
            return
        form = self.r.random()
        if form < 0.4 or not self.positive(d):
            # Reversed: every element, last first.
            self.emit("slice %%%s {axes = [%d], starts = [-1], ends = [-1000000], steps = [-1]}" % (x, a), nd)
        elif form < 0.7:
            nd[a] = d + "-1"
            self.emit("slice %%%s {axes = [%d], starts = [1], ends = [1000000]}" % (x, a), nd)
        else:
            nd[a] = d + "-1"
            self.emit("slice %%%s {axes = [%d], starts = [0], ends = [-1]}" % (x, a), nd)

    def op_concat(self, x, dims):
        if not dims:
            return self.op_unary(x, dims)
        a = self.r.randrange(len(dims))
        others = [v for v in self.pool if len(v[1]) == len(dims) and v[0] != x and
                  all(v[1][i] == dims[i] for i in range(len(dims)) if i != a)]
        nd = list(dims)
        if others and self.r.random() < 0.6:
            y, yd = self.r.choice(others)
            nd[a] = atom(dims[a]) + "+" + atom(yd[a])
            self.emit("concat %%%s, %%%s {axis = %d}" % (x, y, a), nd)
        else:
            extra = [str(self.r.choice([1, 2, 3])) if i == a else d for i, d in enumerate(dims)]
            y = self.arg(extra)
            nd[a] = atom(dims[a]) + "+" + extra[a]
            self.emit("concat %%%s, %%%s, %%%s {axis = %d}" % (y, x, y, a), [d if i != a else atom(dims[a]) + "+" + str(2 * int(extra[a])) for i, d in enumerate(dims)])

    def op_gather(self, x, dims):
        ok = [i for i, d in enumerate(dims) if self.positive(d)]
        if not ok:
            return self.op_unary(x, dims)
        a = self.r.choice(ok)
        idims = self.r.choice([["M"], ["3"], ["2", "M"], []])
        ix = self.arg(idims, "i64", ("index", dims[a]))
        self.emit("gather %%%s, %%%s {axis = %d}" % (x, ix, a), dims[:a] + idims + dims[a + 1:])

    def op_iota(self, x, dims):
        if not dims:
            return self.op_unary(x, dims)
        a = self.r.randrange(len(dims))
        i = self.emit("iota {axis = %d} : %s" % (a, self.typ(dims)), dims, pool=False)
        # Scaled (exactly): large offsets make a later layer_norm or cos ill-conditioned.
        c = self.emit("constant 0.125 : f32[]", [], pool=False)
        j = self.emit("mul %%%s, %%%s" % (i, c), dims, pool=False)
        self.emit("add %%%s, %%%s" % (x, j), dims)

    def op_broadcast(self, x, dims):
        nd = [self.bound_dim()] + [(self.bound_dim() if d == "1" and self.r.random() < 0.5 else d) for d in dims]
        if len(nd) > 4:
            return self.op_unary(x, dims)
        self.emit("broadcast_to %%%s : %s" % (x, self.typ(nd)), nd)

    def op_rows(self, x, dims):
        """Attention's data movement on rows of 16 or 32 (one or two whole vector blocks), which generic kernels take
        in their vector version by default (codegen genericVectorPays): a head split's transpose, a rotate_half
        (its seam at a block boundary, or inside one), a cache append along an outer axis."""
        L = self.r.choice([16, 32])
        A = self.r.choice(["N", "M"])
        B = self.r.choice(["2", "3", "M"])
        form = self.r.random()
        if form < 0.3:
            y = self.arg([A, str(2 * L)])
            r = self.emit("reshape %%%s : %s" % (y, self.typ([A, "2", str(L)])), [A, "2", str(L)], pool=False)
            self.emit("transpose %%%s {perm = [1, 0, 2]}" % r, ["2", A, str(L)])
        elif form < 0.6:
            y = self.arg([A, B, str(L)])
            h = self.r.choice([L // 2, 8]) if L == 32 else L // 2
            a = self.emit("slice %%%s {axes = [2], starts = [%d], ends = [%d]}" % (y, h, L), [A, B, str(L - h)],
                          pool=False)
            n = self.emit("neg %%%s" % a, [A, B, str(L - h)], pool=False)
            b = self.emit("slice %%%s {axes = [2], starts = [0], ends = [%d]}" % (y, h), [A, B, str(h)], pool=False)
            self.emit("concat %%%s, %%%s {axis = 2}" % (n, b), [A, B, str(L)])
        else:
            y = self.arg([A, B, str(L)])
            z = self.arg(["1", B, str(L)])
            self.emit("concat %%%s, %%%s {axis = 0}" % (y, z), [atom(A) + "+1", B, str(L)])
