"""dscc: call compiled tensor models (``dscc compile`` output) from Python with NumPy arrays.

    import numpy as np, dscc
    model = dscc.Model("bert_layer.so", context=dscc.Context(threads=4))
    out = model(x=np.zeros((2, 16, 768), np.float32), mask=...)   # inputs by name (or in order)
    out["y"]                                                     # outputs by name, as NumPy arrays

Inputs go in without a copy when they are C-contiguous NumPy arrays of the
declared dtype (others are made contiguous first; a wrong dtype is an error,
never a silent cast); objects with ``__dlpack__`` are taken through
``numpy.from_dlpack``. Outputs are NumPy arrays over the memory the runtime
allocated (no copy). Every failing status raises a ``dscc.Error`` subclass
carrying the runtime's message. Calls release the GIL: threads may call one
model (and one context) at once. docs/python.md has the details.
"""
import numpy as _np

from ._dscc import (Context, Error, FactViolatedError, InternalError, InvalidArgumentError, OutOfMemoryError,
                    ShapeMismatchError, TensorSpec, UnavailableError, abi_version)
from ._dscc import Model as _NativeModel
from . import _dscc

__all__ = ["Model", "Context", "TensorSpec", "compile", "CompileError", "empty", "Error", "InvalidArgumentError", "ShapeMismatchError",
           "FactViolatedError", "OutOfMemoryError", "InternalError", "UnavailableError", "abi_version",
           "__version__"]
__version__ = "0.1.0"

_default_context = None


def default_context():
    """The context models use when given none: one thread per hardware thread, created on first use."""
    global _default_context
    if _default_context is None:
        _default_context = Context(0)
    return _default_context


def empty(shape, dtype=_np.float32):
    """An uninitialised C-contiguous NumPy array whose data start on a 64-byte boundary.

    For ``out=`` arrays: NumPy's own large allocations start 16 bytes past a
    cache line, and an elementwise kernel or a softmax whose outputs exceed
    the last-level cache takes its streaming version (non-temporal stores)
    only on 64-byte aligned outputs, as the runtime's own and PyTorch's
    allocations are; layer and RMS norms stream at any alignment, 1.2x
    faster aligned. The array keeps its buffer alive. An
    array of no elements has no data to align (NumPy may give it any pointer).
    """
    shape = (int(shape),) if _np.isscalar(shape) else tuple(int(d) for d in shape)
    if any(d < 0 for d in shape):
        raise ValueError(f"dscc.empty: negative dimension in {shape}")
    dtype = _np.dtype(dtype)
    nbytes = int(_np.prod(shape, dtype=_np.int64)) * dtype.itemsize
    raw = _np.empty(nbytes + 64, _np.uint8)
    skip = (-raw.ctypes.data) % 64
    return raw[skip:skip + nbytes].view(dtype).reshape(shape)


def _as_array(value, spec):
    if isinstance(value, _np.ndarray):
        return value
    if hasattr(value, "__dlpack__"):
        return _np.from_dlpack(value)
    # Python scalars and nested lists: in the declared dtype (there is no array dtype to keep).
    return _np.asarray(value, dtype=spec.dtype)


class Model:
    """A compiled model (.so) loaded into this process.

    ``inputs`` and ``outputs`` list the program's arguments and results
    (``TensorSpec``: name, type, dtype, rank, dims). Calling the model returns
    a dict of outputs by name, in the program's order.
    """

    def __init__(self, path, context=None):
        self._native = _NativeModel(str(path))
        self.context = context

    @property
    def inputs(self):
        return self._native.inputs

    @property
    def outputs(self):
        return self._native.outputs

    @property
    def entry(self):
        """The IR name of the compiled function."""
        return self._native.entry

    @property
    def target(self):
        return self._native.target

    @property
    def source(self):
        """The program text the model was compiled from."""
        return self._native.source

    def __repr__(self):
        ins = ", ".join(f"%{s.name}: {s.type}" for s in self.inputs)
        outs = ", ".join(s.type for s in self.outputs)
        return f"dscc.Model({self._native.path!r}: @{self.entry}({ins}) -> {outs})"

    def _arguments(self, args, kwargs, context, out):
        """The input arrays in order, the context, and the output arrays in order (or None)."""
        specs = self.inputs
        if len(args) > len(specs):
            raise InvalidArgumentError(f"@{self.entry} takes {len(specs)} inputs, got {len(args)} positional")
        values = list(args) + [None] * (len(specs) - len(args))
        names = [s.name for s in specs]
        for name, v in kwargs.items():
            key = name[1:] if name.startswith("%") else name
            if key not in names:
                raise InvalidArgumentError(f"@{self.entry} has no input '{name}' (its inputs: {', '.join(names)})")
            k = names.index(key)
            if k < len(args):
                raise InvalidArgumentError(f"input '{key}' given both by position and by name")
            values[k] = v
        missing = [names[k] for k, v in enumerate(values) if v is None]
        if missing:
            raise InvalidArgumentError(f"@{self.entry}: missing input(s) {', '.join(missing)}")
        arrays = [_as_array(v, s) for v, s in zip(values, specs)]
        ctx = context or self.context or default_context()
        if isinstance(out, dict):
            unknown = [k for k in out if k not in [s.name for s in self.outputs]]
            if unknown or len(out) != len(self.outputs):
                raise InvalidArgumentError(f"out= must name every output of @{self.entry} "
                                           f"({', '.join(s.name for s in self.outputs)}), got {', '.join(out)}")
            out = [out[s.name] for s in self.outputs]
        return arrays, ctx, None if out is None else list(out)

    def run(self, *args, context=None, out=None, **kwargs):
        """Runs the model: inputs in order (positional) or by name (keywords), not both for one input.

        Returns ``{name: numpy.ndarray}`` in the order of the program's results. ``out``: arrays to write the
        outputs into instead (a dict by name or a sequence in order; each C-contiguous, writable, of the exact
        dtype and shape the model computes, else ShapeMismatchError); they are returned.
        """
        arrays, ctx, out = self._arguments(args, kwargs, context, out)
        outs = self._native.call(arrays, ctx, out)
        return {s.name: a for s, a in zip(self.outputs, outs)}

    __call__ = run

    def bind(self, *args, out, context=None, **kwargs):
        """A call on these arrays, checked once and run by calling it (no arguments, returns None): inputs as for
        ``run``, ``out`` the arrays the outputs are written into (a dict by name or a sequence in order). The
        arrays must not be resized; their contents may change between calls. For loops of small calls, where
        ``run``'s per-call checks would cost more than the model."""
        arrays, ctx, outs = self._arguments(args, kwargs, context, out)
        return _dscc.BoundCall(self._native, arrays, ctx, outs)


class CompileError(Exception):
    """``dscc.compile`` failed: ``str(e)`` is the compiler's report (located diagnostics, as ``dscc compile``
    prints them), ``.status`` its exit status (1: the program or model, 2: a usage error in the options)."""

    def __init__(self, message, status):
        super().__init__(message)
        self.status = status


def compile(source, output=None, *options, where=(), target=None):
    """Compiles ``source`` (a ``.dsc`` program or an ``.onnx`` model) in this process, as ``dscc compile`` does:
    the same compile session, options and checks (docs/compile.md). Returns ``output``, or without one the
    shared library's default path (the source's stem + ``.so`` in the current folder, as the command line).

    ``output``: the file to write (with several ``--emit`` kinds, their stem); ``where``: facts
    for an ONNX model's sizes (``"seq in [1, 512]"``, each a ``--where``); ``target``: ``"cpu"`` (default),
    ``"cuda:sm_80"`` or ``"cuda:sm_90"``; ``options``: any other flags of ``dscc compile``, as strings
    (``"-O3"``, ``"--symbolic-dims"``, ``"--emit=so,header"``). Text the command prints (``--emit=ir`` without
    an output) goes to ``sys.stdout``, warnings to ``sys.stderr``; a failure raises ``CompileError`` with the
    report. ``dscc.Model(dscc.compile(...))`` loads the result (CPU target).
    """
    import os
    import sys
    if isinstance(where, str):
        where = (where,)
    args = [os.fspath(source)]
    if output is not None:
        output = os.fspath(output)
        args += ["-o", output]
    if target is not None:
        args.append(f"--target={target}")
    for fact in where:
        args += ["--where", str(fact)]
    options = [os.fspath(o) if isinstance(o, os.PathLike) else str(o) for o in options]
    if not any(o == "--progress" or o.startswith("--progress=") for o in options):
        args.append("--progress=never")  # the report is captured, not a terminal
    status, out, err = _dscc.compile_command(args + options)
    if out:
        sys.stdout.write(out.decode("utf-8", "replace"))
    err = err.decode("utf-8", "replace")
    if status != 0:
        raise CompileError(err.rstrip() or f"dscc compile failed (status {status})", status)
    if err:
        sys.stderr.write(err)
    if output is None:
        output = os.path.splitext(os.path.basename(os.fspath(source)))[0] + ".so"
    return output
