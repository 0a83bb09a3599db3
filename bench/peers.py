# The seven shared workloads as PyTorch modules with the .dsc programs' exact math, plus their inputs.
"""Workload table for bench_cpu.py.

Each Workload names its .dsc program, the shape distribution it is timed on,
how to make random inputs at a shape point (in the IR function's argument
order), which input dims are symbolic (for ONNX dynamic axes), and a PyTorch
module computing what the program computes. Inputs are non-zero random data
scaled so that every op works in its interesting range (softmax not saturated,
GELU on both sides of zero).
"""
from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np

from dscc_abi import aligned_empty

BENCH = Path(__file__).resolve().parent
WORKLOADS = BENCH / "workloads"
SHAPES = WORKLOADS / "shapes"


@dataclasses.dataclass
class Workload:
    """One benchmarked program and everything the harness needs to run its peers."""

    name: str  #: short name, the .dsc file's stem
    func: str  #: IR function name (without '@')
    shapes_file: str  #: YAML file under workloads/shapes
    #: maps the function's symbols to the YAML's symbols (e.g. N <- T)
    symbol_map: Dict[str, str]
    #: (argument name, dims as symbols or ints) in argument order
    args: List[Tuple[str, Tuple]]
    #: the function's `where` ranges, used to drop points the program rejects
    ranges: Dict[str, Tuple[int, int]]
    make_module: Callable[[], "object"]
    #: True when the time is bound by memory traffic (all but bert_layer)
    memory_bound: bool = True
    #: how an argument is filled: name -> callable(rng, shape) -> array
    fill: Dict[str, Callable] = dataclasses.field(default_factory=dict)
    #: a small point for the numerical check against the interpreter
    check_point: Dict[str, int] = dataclasses.field(default_factory=dict)

    @property
    def dsc(self) -> Path:
        """Path of the workload's .dsc program."""
        return WORKLOADS / f"{self.name}.dsc"

    def shape_of(self, arg_dims: Tuple, point: Dict[str, int]) -> Tuple[int, ...]:
        """Concrete shape of an argument at a shape point."""
        return tuple(d if isinstance(d, int) else point[d] for d in arg_dims)

    def inputs(self, point: Dict[str, int], seed: int = 0) -> List[np.ndarray]:
        """Random non-zero float32 inputs at `point`, in argument order, reproducible from `seed`.

        64-byte aligned (`dscc_abi.aligned_empty`), as PyTorch's and ONNX Runtime's own CPU allocators
        align tensors: NumPy's large arrays start 16 bytes past a cache line, and their misaligned outputs
        keep dscc's streaming versions off (experiments section 13)."""
        rng = np.random.default_rng(seed)
        out = []
        for name, dims in self.args:
            shape = self.shape_of(dims, point)
            f = self.fill.get(name, _normal)
            a = aligned_empty(shape)
            a[...] = f(rng, shape)
            out.append(a)
        return out

    def dynamic_axes(self) -> Dict[str, Dict[int, str]]:
        """ONNX dynamic_axes for the symbolic dims of every input."""
        return {
            name: {i: d for i, d in enumerate(dims) if not isinstance(d, int)}
            for name, dims in self.args
            if any(not isinstance(d, int) for d in dims)
        }

    def admits(self, point: Dict[str, int]) -> Optional[str]:
        """None if the program accepts `point`, else the violated fact."""
        for sym, (lo, hi) in self.ranges.items():
            v = point.get(sym)
            if v is None or not lo <= v <= hi:
                return f"{sym} in [{lo}, {hi}] (got {v})"
        return None


def _normal(rng, shape):
    x = rng.standard_normal(shape, dtype=np.float32)
    # Exact zeros would hide a missing term; standard_normal never gives one in practice,
    # but nudge anyway so the data is provably non-zero.
    x[x == 0] = 0.5
    return x


def _scaled(scale: float):
    return lambda rng, shape: _normal(rng, shape) * np.float32(scale)


def _uniform(lo: float, hi: float):
    return lambda rng, shape: rng.uniform(lo, hi, shape).astype(np.float32)


def _mask(rng, shape):
    # Additive attention mask: about one in five positions masked with -10000; the
    # first position is always open so no row is fully masked.
    m = np.where(rng.random(shape) < 0.2, np.float32(-10000.0), np.float32(0.0)).astype(np.float32)
    if m.size:
        m[..., 0] = 0.0
    return m


def _torch():
    import torch  # imported lazily so the harness runs without torch

    return torch


# ---------------------------------------------------------------------------------------------
# PyTorch modules. Each mirrors its .dsc op for op; comments note where PyTorch spells it
# differently.


def _chain():
    torch = _torch()

    class Chain(torch.nn.Module):
        def forward(self, a, w):
            return torch.tanh(a * w + 1.0) * torch.sigmoid(a)

    return Chain()


def _gelu_bias():
    torch = _torch()

    class GeluBias(torch.nn.Module):
        def forward(self, x, b):
            return torch.nn.functional.gelu(x + b)  # exact (erf) form, as the IR's default

    return GeluBias()


def _layer_norm():
    torch = _torch()

    class LayerNorm(torch.nn.Module):
        def forward(self, x, g, b):
            return torch.nn.functional.layer_norm(x, x.shape[-1:], g, b, eps=1e-5)

    return LayerNorm()


def _rms_norm():
    torch = _torch()

    class RMSNorm(torch.nn.Module):
        def forward(self, x, g):
            ms = (x * x).mean(dim=1, keepdim=True)
            return x * torch.rsqrt(ms + 1e-6) * g

    return RMSNorm()


def _softmax():
    torch = _torch()

    class AttnSoftmax(torch.nn.Module):
        def forward(self, s, mask):
            # reshape [B, S] -> [B, 1, 1, S]; indexing keeps B and S symbolic for export
            return torch.softmax(s * 0.125 + mask[:, None, None, :], dim=-1)

    return AttnSoftmax()


def _col_sum():
    torch = _torch()

    class ColSum(torch.nn.Module):
        def forward(self, x):
            # reduce_sum over rows divided by the row count (`dim` cast to f32): a column mean
            return x.sum(dim=0) / x.shape[0]

    return ColSum()


def _bert_layer():
    torch = _torch()
    F = torch.nn.functional

    class BertLayer(torch.nn.Module):
        """Post-LN BERT-base layer; weights are inputs (as in the .dsc), not parameters."""

        def forward(self, x, mask, wq, bq, wk, bk, wv, bv, wo, bo, ln1_g, ln1_b, w1, b1, w2, b2, ln2_g, ln2_b):
            B, S = x.shape[0], x.shape[1]
            q = (x @ wq + bq).reshape(B, S, 12, 64).permute(0, 2, 1, 3)
            k = (x @ wk + bk).reshape(B, S, 12, 64).permute(0, 2, 3, 1)
            v = (x @ wv + bv).reshape(B, S, 12, 64).permute(0, 2, 1, 3)
            s = (q @ k) * 0.125 + mask.reshape(B, 1, 1, S)
            p = torch.softmax(s, dim=-1)
            c = (p @ v).permute(0, 2, 1, 3).reshape(B, S, 768)
            a = c @ wo + bo + x
            h = F.layer_norm(a, (768,), ln1_g, ln1_b, eps=1e-12)
            f = F.gelu(h @ w1 + b1) @ w2 + b2 + h
            return F.layer_norm(f, (768,), ln2_g, ln2_b, eps=1e-12)

    return BertLayer()


_W = 1.0 / math.sqrt(768.0)
_BERT_FILL = {
    "mask": _mask,
    # weights ~ N(0, 1/fan_in) keep activations O(1) through the layer
    "wq": _scaled(_W), "wk": _scaled(_W), "wv": _scaled(_W), "wo": _scaled(_W),
    "w1": _scaled(_W), "w2": _scaled(1.0 / math.sqrt(3072.0)),
    "bq": _scaled(0.1), "bk": _scaled(0.1), "bv": _scaled(0.1), "bo": _scaled(0.1),
    "b1": _scaled(0.1), "b2": _scaled(0.1),
    "ln1_g": _uniform(0.5, 1.5), "ln2_g": _uniform(0.5, 1.5),
    "ln1_b": _scaled(0.1), "ln2_b": _scaled(0.1),
}

WORKLOAD_LIST: List[Workload] = [
    Workload(
        name="elementwise_chain", func="chain", shapes_file="layer_norm_rows.yaml",
        symbol_map={"N": "N", "D": "D"},
        args=[("a", ("N", "D")), ("w", ("D",))],
        ranges={"N": (1, 1000000), "D": (1, 4096)}, make_module=_chain,
        check_point={"N": 5, "D": 33},
    ),
    Workload(
        name="col_reduce", func="col_sum", shapes_file="layer_norm_rows.yaml",
        symbol_map={"N": "N", "D": "D"},
        args=[("x", ("N", "D"))],
        ranges={"N": (1, 1000000), "D": (1, 8192)}, make_module=_col_sum,
        check_point={"N": 37, "D": 19},
    ),
    Workload(
        name="gelu_bias", func="gelu_bias", shapes_file="tokens.yaml",
        symbol_map={"T": "T"},
        args=[("x", ("T", 3072)), ("b", (3072,))],
        ranges={"T": (1, 32768)}, make_module=_gelu_bias,
        fill={"x": _scaled(2.0)}, check_point={"T": 3},
    ),
    Workload(
        name="layer_norm", func="layer_norm", shapes_file="layer_norm_rows.yaml",
        symbol_map={"N": "N", "D": "D"},
        args=[("x", ("N", "D")), ("g", ("D",)), ("b", ("D",))],
        ranges={"N": (1, 65536), "D": (1, 16384)}, make_module=_layer_norm,
        fill={"g": _uniform(0.5, 1.5)}, check_point={"N": 7, "D": 513},
    ),
    Workload(
        name="rms_norm", func="rms_norm", shapes_file="tokens.yaml",
        symbol_map={"T": "T"},
        args=[("x", ("T", 4096)), ("g", (4096,))],
        ranges={"T": (1, 16384)}, make_module=_rms_norm,
        fill={"g": _uniform(0.5, 1.5)}, check_point={"T": 3},
    ),
    Workload(
        name="softmax", func="attn_softmax", shapes_file="bert_serving.yaml",
        symbol_map={"B": "B", "S": "S"},
        args=[("s", ("B", 12, "S", "S")), ("mask", ("B", "S"))],
        ranges={"B": (1, 64), "S": (1, 2048)}, make_module=_softmax,
        fill={"s": _scaled(8.0), "mask": _mask}, check_point={"B": 2, "S": 9},
    ),
    Workload(
        name="bert_layer", func="bert_layer", shapes_file="bert_serving.yaml",
        symbol_map={"B": "B", "S": "S"},
        args=[("x", ("B", "S", 768)), ("mask", ("B", "S")),
              ("wq", (768, 768)), ("bq", (768,)), ("wk", (768, 768)), ("bk", (768,)),
              ("wv", (768, 768)), ("bv", (768,)), ("wo", (768, 768)), ("bo", (768,)),
              ("ln1_g", (768,)), ("ln1_b", (768,)), ("w1", (768, 3072)), ("b1", (3072,)),
              ("w2", (3072, 768)), ("b2", (768,)), ("ln2_g", (768,)), ("ln2_b", (768,))],
        ranges={"B": (1, 64), "S": (1, 512)}, make_module=_bert_layer, memory_bound=False,
        fill=_BERT_FILL, check_point={"B": 2, "S": 5},
    ),
]

WORKLOADS_BY_NAME: Dict[str, Workload] = {w.name: w for w in WORKLOAD_LIST}
