#!/usr/bin/env bash
# Creates bench/.venv with the CPU benchmark's peers (PyTorch 2.x, ONNX, ONNX Runtime); idempotent.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv"
py="$venv/bin/python"

# The interpreter that owns the venv: python3 on PATH, which must have the venv module.
if [ ! -x "$py" ]; then
    if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
        if [ "$(id -u)" = 0 ]; then
            apt-get update -qq && apt-get install -y -qq python3-venv
        else
            echo "setup: python3 lacks venv/ensurepip and we are not root to install python3-venv" >&2
            exit 1
        fi
    fi
    python3 -m venv "$venv" || { echo "setup: python3 -m venv failed" >&2; exit 1; }
fi

# The BLAS candidates of gemm_libs.sh (the tests never need them).
blas_pkgs=()
for p in libdnnl-dev libblis-dev libxsmm-dev; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || blas_pkgs+=("$p")
done
if [ ${#blas_pkgs[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ]; then
        apt-get install -y -qq --no-install-recommends "${blas_pkgs[@]}" || echo "setup: could not install ${blas_pkgs[*]}" >&2
    else
        echo "setup: gemm_libs.sh needs ${blas_pkgs[*]} (not root: not installed)" >&2
    fi
fi

have() { "$py" -c "import $1" 2>/dev/null; }
pipi() { "$py" -m pip install --disable-pip-version-check -q "$@"; }

# Small pure packages first: the harness needs them even when torch is missing.
for mod_pkg in numpy:numpy yaml:pyyaml onnx:onnx onnxruntime:onnxruntime onnxscript:onnxscript; do
    mod="${mod_pkg%%:*}"; pkg="${mod_pkg#*:}"
    if have "$mod"; then echo "setup: $pkg present"; else
        echo "setup: installing $pkg"; pipi "$pkg" || echo "setup: could not install $pkg" >&2
    fi
done

# PyTorch: the CPU wheel index keeps the download small; where that index cannot be
# reached, PyPI's wheel is tried without its CUDA dependencies (it runs on the CPU
# without them), then with them.
torch_ok() { "$py" -c 'import torch, sys; sys.exit(0 if int(torch.__version__.split(".")[0]) >= 2 else 1)' 2>/dev/null; }
if torch_ok; then
    echo "setup: torch present ($("$py" -c 'import torch; print(torch.__version__)'))"
else
    echo "setup: installing CPU torch from the PyTorch CPU index"
    if ! pipi --timeout 20 --retries 0 'torch>=2,<3' --index-url https://download.pytorch.org/whl/cpu; then
        echo "setup: CPU index unreachable; installing torch from PyPI without CUDA dependencies"
        pipi filelock typing-extensions 'sympy>=1.13' networkx jinja2 fsspec setuptools
        pipi --no-deps 'torch>=2,<3' || true
        if ! torch_ok; then
            echo "setup: torch without CUDA dependencies does not import; installing with them"
            pipi 'torch>=2,<3' || true
        fi
    fi
fi
if torch_ok; then
    echo "setup: torch ok ($("$py" -c 'import torch; print(torch.__version__)'))"
elif /usr/bin/python3 -c 'import torch' 2>/dev/null || { [ "$(id -u)" = 0 ] && apt-get install -y -qq python3-torch; }; then
    echo "setup: could not install PyTorch 2.x in the venv; falling back to Debian's python3-torch" \
         "(/usr/bin/python3, torch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)' 2>/dev/null)):" \
         "run bench_cpu.py with /usr/bin/python3; torch.compile is unavailable before torch 2" >&2
else
    echo "setup: no PyTorch available; bench_cpu.py will report dscc and ONNX Runtime only" >&2
fi
echo "setup: done; run: $py $here/bench_cpu.py"
