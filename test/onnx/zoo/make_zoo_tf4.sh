#!/usr/bin/env bash
# Makes the model zoo's transformers 4.x exports (the *_tf4 families; README.md here): transformers 4.46 and the versions
# of its light dependencies that it accepts, installed into .tf4/ (gitignored) with no dependencies of their own, put first
# on PYTHONPATH in make_zoo.sh's venv (whose torch, onnx, onnxscript and onnxruntime are used as they are), then make_zoo.py.
# Usage: test/onnx/zoo/make_zoo_tf4.sh [family_tf4 | family_tf4_exporter ...]   (no argument: every *_tf4 family)
# Environment: ZOO_REUSE_TF4=1 skips the install when .tf4/ exists. make_zoo.sh must have made .venv/ first.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv"
tf4="$here/.tf4"
if [[ ! -x "$venv/bin/python" ]]; then
  echo "make_zoo_tf4.sh: no $venv: run make_zoo.sh first (it makes the venv with torch, onnx and onnxruntime)" >&2
  exit 2
fi

if [[ ! -d "$tf4/transformers" || "${ZOO_REUSE_TF4:-0}" != 1 ]]; then
  rm -rf "$tf4"
  # --no-deps: the venv's torch, numpy, etc. serve as they are; transformers 4.46 checks at import that tokenizers is
  # < 0.21 and huggingface_hub < 1.0 (the venv's are transformers 5's), so those come here, with huggingface_hub's
  # requests (the venv has none).
  "$venv/bin/python" -m pip install --no-deps --target "$tf4" 'transformers==4.46.3' 'tokenizers==0.20.3' \
    'huggingface_hub==0.26.5' requests urllib3 certifi charset-normalizer idna
fi

export PYTHONPATH="$tf4${PYTHONPATH:+:$PYTHONPATH}"
{
  "$venv/bin/python" -m pip freeze --path "$tf4" | grep -i -E '^(transformers|tokenizers|huggingface[-_]hub)=='
  "$venv/bin/python" -m pip freeze | grep -i -E '^(torch|onnx|onnxscript|onnxruntime|numpy)=='
  echo "python==$("$venv/bin/python" -c 'import platform; print(platform.python_version())')"
} > "$here/VERSIONS_tf4.txt"
cat "$here/VERSIONS_tf4.txt"

exec "$venv/bin/python" "$here/make_zoo.py" "$@"
