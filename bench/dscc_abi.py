# Calls a model compiled by `dscc compile` through its C ABI (runtime/dscc_runtime.h) with ctypes.
"""ctypes binding of the dscc model ABI for the benchmark.

A compiled model is a shared library exporting `dscc_model_run` (a
`dscc_run_fn`), `dscc_model_source`, `dscc_model_entry` and
`dscc_model_target`; it links libdscc_runtime.so, whose symbols
(`dscc_context_create`, ...) are found through the model's handle because
dlsym searches a library's dependencies.
"""
from __future__ import annotations

import ctypes
import re
import subprocess
from pathlib import Path
from typing import List, Optional, Sequence

import numpy as np

DSCC_F32 = 0
_NP_TO_DTYPE = {
    np.dtype(np.float32): 0, np.dtype(np.float16): 1, np.dtype(np.float64): 3,
    np.dtype(np.int64): 4, np.dtype(np.int32): 5, np.dtype(np.int8): 6, np.dtype(np.bool_): 7,
}


class DsccTensor(ctypes.Structure):
    """`dscc_tensor`: {void* data; int64_t* dims; int32_t rank; dscc_dtype dtype}."""

    _fields_ = [
        ("data", ctypes.c_void_p),
        ("dims", ctypes.POINTER(ctypes.c_int64)),
        ("rank", ctypes.c_int32),
        ("dtype", ctypes.c_int),
    ]


class DsccError(RuntimeError):
    """A non-OK status from a dscc call, with the runtime's message."""


def compile_model(dscc: Path, dsc: Path, out: Path, func: Optional[str] = None, opt: str = "-O3") -> Path:
    """Runs `dscc compile DSC -o OUT [--func F] OPT`; raises DsccError with dscc's diagnostics on failure."""
    cmd = [str(dscc), "compile", str(dsc), "-o", str(out), opt]
    if func:
        cmd += ["--func", func]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0 or not out.exists():
        raise DsccError(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stderr.strip() or r.stdout.strip()}")
    return out


def compiler_available(dscc: Path) -> bool:
    """True when `dscc compile` is implemented (its help lists options beyond --help)."""
    if not dscc.exists():
        return False
    r = subprocess.run([str(dscc), "compile", "--help"], capture_output=True, text=True)
    text = r.stdout + r.stderr
    return "not yet implemented" not in text and "-o" in text


class Model:
    """A loaded compiled model with its own context of `threads` threads."""

    def __init__(self, so_path: Path, threads: int):
        self.path = Path(so_path)
        # RTLD_LOCAL: two models may define the same FUNC_run; each is reached through its own handle.
        self.lib = ctypes.CDLL(str(self.path.resolve()), mode=ctypes.RTLD_LOCAL)
        lib = self.lib
        lib.dscc_context_create.restype = ctypes.c_void_p
        lib.dscc_context_create.argtypes = [ctypes.c_int]
        lib.dscc_context_release.argtypes = [ctypes.c_void_p]
        lib.dscc_status_message.restype = ctypes.c_char_p
        lib.dscc_status_message.argtypes = [ctypes.c_void_p]
        lib.dscc_status_name.restype = ctypes.c_char_p
        lib.dscc_status_name.argtypes = [ctypes.c_int]
        lib.dscc_tensor_free.argtypes = [ctypes.POINTER(DsccTensor)]
        self.run_fn = lib.dscc_model_run
        self.run_fn.restype = ctypes.c_int
        self.run_fn.argtypes = [ctypes.c_void_p, ctypes.POINTER(DsccTensor), ctypes.c_int,
                                ctypes.POINTER(DsccTensor), ctypes.c_int]
        self.source = _cstr(lib, "dscc_model_source")
        self.entry = _cstr(lib, "dscc_model_entry")
        self.target = _cstr(lib, "dscc_model_target")
        self.ctx = lib.dscc_context_create(threads)
        if not self.ctx:
            raise DsccError(f"dscc_context_create({threads}): {lib.dscc_status_message(None).decode()}")
        self.n_args = len(signature_args(self.source, self.entry))

    def close(self):
        """Releases the context (the library stays mapped: ctypes cannot unload it safely)."""
        if self.ctx:
            self.lib.dscc_context_release(self.ctx)
            self.ctx = None

    def bind(self, inputs: Sequence[np.ndarray], outputs: Sequence[np.ndarray]) -> "BoundCall":
        """Prepares a call on these arrays (outputs written in place); the arrays must outlive the call object."""
        if len(inputs) != self.n_args:
            raise DsccError(f"{self.entry} takes {self.n_args} inputs, got {len(inputs)}")
        return BoundCall(self, inputs, outputs)


def _cstr(lib, name: str) -> str:
    # The symbols are char arrays, not pointers: read the bytes at the symbol's address.
    return ctypes.string_at(ctypes.addressof(ctypes.c_char.in_dll(lib, name))).decode()


def _tensor(a: np.ndarray, keep: list) -> DsccTensor:
    if not a.flags.c_contiguous:
        raise DsccError("dscc tensors are dense row-major: pass C-contiguous arrays")
    dims = (ctypes.c_int64 * max(1, a.ndim))(*a.shape)
    keep.append(dims)
    return DsccTensor(ctypes.c_void_p(a.ctypes.data), ctypes.cast(dims, ctypes.POINTER(ctypes.c_int64)),
                      a.ndim, _NP_TO_DTYPE[a.dtype])


class BoundCall:
    """A ready-made call: the tensor structs are built once so timing covers only the model."""

    def __init__(self, model: Model, inputs: Sequence[np.ndarray], outputs: Sequence[np.ndarray]):
        self.model = model
        self._keep: List = list(inputs) + list(outputs)
        self.ins = (DsccTensor * max(1, len(inputs)))(*[_tensor(a, self._keep) for a in inputs])
        self.outs = (DsccTensor * max(1, len(outputs)))(*[_tensor(a, self._keep) for a in outputs])
        self.n_in, self.n_out = len(inputs), len(outputs)
        self._args = (model.ctx, self.ins, self.n_in, self.outs, self.n_out)

    def __call__(self):
        st = self.model.run_fn(*self._args)
        if st != 0:
            m = self.model
            raise DsccError(f"{m.entry}: {m.lib.dscc_status_name(st).decode()}: "
                            f"{m.lib.dscc_status_message(m.ctx).decode()}")


_FUNC_RE = re.compile(r"func\s+@([A-Za-z_][A-Za-z0-9_.$]*)\s*\((.*?)\)\s*->", re.S)
_ARG_RE = re.compile(r"%([A-Za-z_][A-Za-z0-9_.$]*)\s*:\s*([a-z0-9]+)\[([^\]]*)\]")


def signature_args(source: str, entry: str) -> List[tuple]:
    """(name, dtype, dims as strings) of the entry function's arguments, parsed from the IR text."""
    for m in _FUNC_RE.finditer(source):
        if m.group(1) == entry:
            return [(a.group(1), a.group(2), [d.strip() for d in a.group(3).split(",") if d.strip()])
                    for a in _ARG_RE.finditer(m.group(2))]
    raise DsccError(f"function @{entry} not found in the model's source")


def aligned_empty(shape, dtype=np.float32, align: int = 64) -> np.ndarray:
    """An uninitialised C-contiguous array whose data start on an `align`-byte boundary.

    NumPy's own allocations are 16-byte aligned; dscc's streaming kernel
    versions (non-temporal stores, for outputs beyond the cache) run only on
    64-byte aligned outputs, as the runtime's own and PyTorch's allocations are.
    """
    dtype = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64))
    raw = np.empty(n * dtype.itemsize + align, np.uint8)
    skip = (-raw.ctypes.data) % align
    return raw[skip:skip + n * dtype.itemsize].view(dtype).reshape(shape)
