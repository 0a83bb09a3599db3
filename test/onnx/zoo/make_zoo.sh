#!/usr/bin/env bash
# Regenerates the model zoo of issue #36 (test/onnx/zoo, README.md there): a venv of its own with the current CPU
# builds of torch, torchvision, transformers, onnx, onnxscript and onnxruntime from PyPI, their exact versions in VERSIONS.txt, then
# make_zoo.py, which writes <family>_<exporter>.onnx (+ .onnx.data), <family>_<exporter>.npz and exports.txt.
# Usage: test/onnx/zoo/make_zoo.sh [family | family_exporter ...]   (no argument: every family)
# Environment: PYTHON (default python3) makes the venv; ZOO_REUSE_VENV=1 skips the install when the venv exists.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv"
py="${PYTHON:-python3}"

if [[ ! -x "$venv/bin/python" || "${ZOO_REUSE_VENV:-0}" != 1 ]]; then
  "$py" -m venv "$venv"
  "$venv/bin/python" -m pip install --upgrade pip
  # The CPU-only wheel of torch (no CUDA libraries) from PyTorch's own index; PyPI's (with CUDA: ~5.7 GB of venv)
  # if that index cannot be reached.
  "$venv/bin/python" -m pip install --upgrade --retries 1 --timeout 30 torch torchvision --index-url https://download.pytorch.org/whl/cpu \
    || "$venv/bin/python" -m pip install --upgrade torch torchvision
  # onnxruntime checks every export against PyTorch's outputs when it is made (exports.json: "onnxruntime").
  "$venv/bin/python" -m pip install --upgrade transformers onnx onnxscript onnxruntime numpy
fi

"$venv/bin/python" -m pip freeze | grep -i -E '^(torch|torchvision|transformers|onnx|onnxscript|onnxruntime|numpy|tokenizers|huggingface[-_]hub|ml[-_]dtypes|onnx[-_]ir)==' \
  > "$here/VERSIONS.txt"
echo "python==$("$venv/bin/python" -c 'import platform; print(platform.python_version())')" >> "$here/VERSIONS.txt"
cat "$here/VERSIONS.txt"

exec "$venv/bin/python" "$here/make_zoo.py" "$@"
