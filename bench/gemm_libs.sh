#!/usr/bin/env bash
# Builds bench/gemm_libs.c and writes BERT's GEMM shapes on OpenBLAS, oneDNN, BLIS and libxsmm to bench/results/DATE-gemm-libs.md.
# Usage: bench/gemm_libs.sh [THREADS] [M...]   (Debian: libopenblas-pthread-dev libdnnl-dev libblis-dev libxsmm-dev;
#        bench/setup.sh installs them)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
threads="${1:-2}"
shift || true
mkdir -p "$here/.cache" "$here/results"
ob=/usr/lib/x86_64-linux-gnu/openblas-pthread
cc -O2 -march=native -fopenmp -I/usr/include/x86_64-linux-gnu/openblas-pthread "$here/gemm_libs.c" \
  -o "$here/.cache/gemm_libs" -L"$ob" -Wl,-rpath,"$ob" -lopenblas -ldnnl /usr/lib/libxsmm.a /usr/lib/libxsmmnoblas.a -ldl -lm -lpthread
out="$here/results/$(date +%F)-gemm-libs.md"
{
  echo "# BERT's GEMM shapes on CPU BLAS libraries — $(date +%F)"
  echo
  echo "- commit: $(git -C "$here" rev-parse --short HEAD); CPU: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) logical CPUs; $threads thread(s) per GEMM (the same strip split for every library)"
  echo "- 1-minute load average at the start: $(cut -d' ' -f1 /proc/loadavg)"
  echo "- GFLOP/s (2·M·N·K / time, best of 6 after a warm-up); fp32, row-major; OpenBLAS $(dpkg-query -W -f='${Version}' libopenblas0-pthread 2>/dev/null), oneDNN $(dpkg-query -W -f='${Version}' libdnnl2 2>/dev/null), BLIS $(dpkg-query -W -f='${Version}' libblis4 2>/dev/null), libxsmm $(dpkg-query -W -f='${Version}' libxsmm-dev 2>/dev/null)"
  echo
  "$here/.cache/gemm_libs" "$threads" "$@"
  echo
  echo "- 1-minute load average at the end: $(cut -d' ' -f1 /proc/loadavg)"
} | tee "$out"
echo "wrote $out" >&2
