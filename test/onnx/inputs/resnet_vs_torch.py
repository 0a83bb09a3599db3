#!/usr/bin/python3
# A small ResNet-style network (BasicBlocks with a downsampling shortcut, a depthwise conv, adaptive average pool)
# exported by torch.onnx with symbolic batch, height and width, run by dscc interpreted and compiled against
# PyTorch: python3 resnet_vs_torch.py OUTDIR (dscc on PATH). Tolerance 1e-4 + 1e-4 * |torch|.
import os
import subprocess
import sys

import numpy as np
import torch
import torch.nn as nn

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self, c, stride):
        super().__init__()
        cin = c if stride == 1 else c // 2
        self.c1, self.b1 = nn.Conv2d(cin, c, 3, stride, 1, bias=False), nn.BatchNorm2d(c)
        self.c2, self.b2 = nn.Conv2d(c, c, 3, 1, 1, bias=False), nn.BatchNorm2d(c)
        self.down = None if stride == 1 else nn.Sequential(nn.Conv2d(cin, c, 1, stride, bias=False), nn.BatchNorm2d(c))

    def forward(self, x):
        y = self.b2(self.c2(torch.relu(self.b1(self.c1(x)))))
        return torch.relu(y + (x if self.down is None else self.down(x)))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 7, 2, 3, bias=False), nn.BatchNorm2d(8), nn.ReLU(),
                                  nn.MaxPool2d(3, 2, 1))
        self.l1, self.l2 = Block(8, 1), Block(16, 2)
        self.dw = nn.Conv2d(16, 16, 3, 1, 1, groups=16)
        self.avg = nn.AvgPool2d(2, 1, ceil_mode=True, count_include_pad=False)
        self.pool, self.fc = nn.AdaptiveAvgPool2d(1), nn.Linear(16, 10)

    def forward(self, x):
        x = self.avg(torch.relu(self.dw(self.l2(self.l1(self.stem(x))))))
        return self.fc(torch.flatten(self.pool(x), 1))


m = Net().eval()
for mod in m.modules():
    if isinstance(mod, nn.BatchNorm2d):  # statistics other than 0 and 1, so the batch norms matter
        mod.running_mean.uniform_(-0.5, 0.5)
        mod.running_var.uniform_(0.5, 1.5)
model = os.path.join(out, "net.onnx")
with torch.no_grad():
    torch.onnx.export(m, torch.randn(2, 3, 37, 29), model, input_names=["x"], output_names=["y"], opset_version=13,
                      dynamic_axes={"x": {0: "batch", 2: "H", 3: "W"}, "y": {0: "batch"}})
so = os.path.join(out, "net.so")
subprocess.run(["dscc", "compile", model, "-o", so], check=True)
bad = 0
for i, (n, h, w) in enumerate([(2, 37, 29), (1, 64, 64), (3, 17, 40), (1, 9, 9), (2, 10, 11)]):
    x = torch.randn(n, 3, h, w)
    xp = os.path.join(out, "x%d.npy" % i)
    np.save(xp, x.numpy())
    with torch.no_grad():
        want = m(x).numpy().astype(np.float64)
    for how, prog in (("interpreted", model), ("compiled", so)):
        d = os.path.join(out, "%s%d" % (how, i))
        subprocess.run(["dscc", "run", prog, "-i", "x=" + xp, "-o", d], check=True, capture_output=True)
        got = np.load(os.path.join(d, "y.npy")).astype(np.float64)
        ok = got.shape == want.shape and bool(np.all(np.abs(got - want) <= 1e-4 + 1e-4 * np.abs(want)))
        bad += not ok
        print("%s %s batch=%d H=%d W=%d" % ("ok" if ok else "FAIL", how, n, h, w))
# A 1x1 image leaves the last average pool (2x2, ceil mode) a 1x1 input, which PyTorch refuses too: a run-time
# error naming the pool, interpreted and compiled.
xp = os.path.join(out, "tiny.npy")
np.save(xp, np.ones((1, 3, 1, 1), np.float32))
for how, prog in (("interpreted", model), ("compiled", so)):
    c = subprocess.run(["dscc", "run", prog, "-i", "x=" + xp], capture_output=True, text=True)
    ok = c.returncode == 1 and "window of 'pool'" in c.stderr
    bad += not ok
    print("%s %s 1x1 refused: %s" % ("ok" if ok else "FAIL", how, c.stderr.strip().splitlines()[0] if c.stderr else ""))
sys.exit(1 if bad else 0)
