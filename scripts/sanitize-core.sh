#!/usr/bin/env bash
# CI's sanitizer stage: ir/, passes/, runtime/ and the readers under ASan+UBSan, their unit tests and the fuzz corpora replayed.
#
# Builds build-san/ (gcc, -DDSCC_SANITIZE="address;undefined"
# -DDSCC_SANITIZE_CORE=ON: no LLVM or tools code) and runs its ctest:
# dscc-core-unittests and fuzz_regression_TARGET for fuzz_parse,
# fuzz_pipeline, fuzz_npy, fuzz_shapes, fuzz_tuning and fuzz_onnx, every
# finding fatal.
# scripts/test.sh runs it after the normal suite; its cost is measured in
# docs/hardening.md ("Sanitizers"). `scripts/test.sh --no-sanitize` skips it.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
if [ ! -f build-san/build.ninja ]; then
  # -O1 -g1: the usual sanitizer build (line numbers in reports, a cheaper compile than -O2 -g).
  cmake -S . -B build-san -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
    -DDSCC_SANITIZE="address;undefined" -DDSCC_SANITIZE_CORE=ON
fi
cmake --build build-san
built=$(date +%s)
# allocator_may_return_null: the runtime's tests ask for impossible sizes and
# expect NULL (DSCC_OUT_OF_MEMORY), as malloc gives; ASan would abort instead.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
ctest --test-dir build-san --output-on-failure -j2
end=$(date +%s)
echo "sanitize-core: build $((built - start)) s, tests $((end - built)) s"
