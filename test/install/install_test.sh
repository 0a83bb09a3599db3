#!/usr/bin/env bash
# The install test: cmake --install into a temporary prefix, build C and C++ programs against it (pkg-config,
# find_package + dscc_add_model, the static runtime), run them, move the prefix, run them again (relocatable).
# Usage: install_test.sh BUILD_DIR SOURCE_DIR
set -eu  # no pipefail: `cmd | grep -q` may end cmd by SIGPIPE; every output is checked
BUILD=$(cd "$1" && pwd)
SRC=$(cd "$2" && pwd)
HERE="$SRC/test/install"
T=$(mktemp -d /tmp/dscc-install-test.XXXXXX)
trap 'rm -rf "$T"' EXIT
P="$T/prefix"
fail() { echo "install_test: FAIL: $*" >&2; exit 1; }
step() { echo "== $*"; }
expect_y='2 3 4 3 5 7'

step "cmake --install into $P"
cmake --install "$BUILD" --prefix "$P" > "$T/install.log" || { cat "$T/install.log"; fail "cmake --install failed"; }
for f in bin/dscc bin/dscc-opt bin/dscc-tune bin/dscc-run lib/libdscc_runtime.so.0 lib/libdscc_runtime.so \
         lib/libdscc_runtime.a include/dscc/dscc_runtime.h include/dscc/dscc_generated.h \
         lib/pkgconfig/dscc_runtime.pc lib/pkgconfig/dscc_runtime_static.pc lib/cmake/dscc/dsccConfig.cmake \
         lib/cmake/dscc/DsccModel.cmake share/bash-completion/completions/dscc share/doc/dscc/README.md \
         share/doc/dscc/docs/install.md share/doc/dscc/examples/bert_layer.dsc; do
  [ -e "$P/$f" ] || fail "$f is not installed"
done
if command -v help2man > /dev/null; then
  for m in dscc dscc-compile dscc-run dscc-opt dscc-tune; do
    [ -s "$P/share/man/man1/$m.1" ] || fail "man page $m.1 is not installed"
  done
  grep -q -- "-MD" "$P/share/man/man1/dscc-compile.1" || fail "dscc-compile.1 does not document -MD"
fi
[ -e "$P/lib/python3/dist-packages/dscc/__init__.py" ] || fail "the Python module is not installed"

step "readelf: SONAME, RUNPATH"
readelf -d "$P/lib/libdscc_runtime.so.0" | grep -q 'SONAME.*\[libdscc_runtime.so.0\]' || fail "runtime SONAME"
no_build_paths() {  # $1: an ELF file; its RUNPATH/RPATH must not name the build or source tree
  local rp
  rp=$(readelf -d "$1" | sed -n 's/.*\(RUNPATH\|RPATH\).*\[\(.*\)\]/\2/p')
  case "$rp" in *"$BUILD"*|*"$SRC"*) fail "$1 has a build-tree RUNPATH: $rp" ;; esac
  echo "$1: RUNPATH [$rp]"
}
for f in bin/dscc bin/dscc-opt bin/dscc-tune bin/dscc-run; do no_build_paths "$P/$f"; done
"$P/bin/dscc" --version | head -1 | grep -q '^dscc 0.1.0' || fail "installed dscc --version"
"$P/bin/dscc" --version | grep -q 'LLVM 19' || fail "dscc --version names no LLVM version"

step "a model compiled by the installed dscc"
cp "$HERE/inputs/scale.dsc" "$HERE/inputs/w3.npy" "$T/"
"$P/bin/dscc" compile "$T/scale.dsc" --emit=so,header -o "$P/lib/scale"
readelf -d "$P/lib/scale.so" > "$T/model.dyn"
grep -q 'SONAME.*\[scale.so\]' "$T/model.dyn" || fail "model SONAME"
grep -q 'NEEDED.*\[libdscc_runtime.so.0\]' "$T/model.dyn" || fail "model does not need libdscc_runtime.so.0"
grep -q 'RUNPATH.*\$ORIGIN' "$T/model.dyn" || fail "model RUNPATH has no \$ORIGIN"
no_build_paths "$P/lib/scale.so"

step "C program with pkg-config"
export PKG_CONFIG_PATH="$P/lib/pkgconfig"
pkg-config --exists dscc_runtime || fail "pkg-config does not find dscc_runtime"
cc -std=c99 -Wall -Werror -o "$P/bin/app_c" "$HERE/main.c" -I"$P/lib" $(pkg-config --cflags --libs dscc_runtime) \
   -L"$P/lib" -l:scale.so -Wl,-rpath,'$ORIGIN/../lib'
"$P/bin/app_c" | tee "$T/c.out"
grep -q "c: $expect_y" "$T/c.out" || fail "C program output"

step "C++ program with find_package(dscc) and dscc_add_model (Ninja, depfile)"
cp -r "$HERE/cmake_app" "$T/cmake_app"  # beside $T/scale.dsc, which it compiles
cmake -S "$T/cmake_app" -B "$T/app-build" -G Ninja -DCMAKE_PREFIX_PATH="$P" -DCMAKE_INSTALL_PREFIX="$P" \
      > "$T/app-cfg.log" || { cat "$T/app-cfg.log"; fail "configuring the CMake app"; }
cmake --build "$T/app-build" > "$T/app-build.log" || { cat "$T/app-build.log"; fail "building the CMake app"; }
"$T/app-build/app_cmake" | grep -q "c++: $expect_y" || fail "C++ program output (build tree)"
out=$(cmake --build "$T/app-build"); grep -q "no work to do" <<< "$out" || fail "a second build did work: $out"
sleep 1; touch "$T/w3.npy"  # a dependency named only by the depfile
out=$(cmake --build "$T/app-build"); grep -q "dscc compile" <<< "$out" || fail "touching w3.npy did not recompile: $out"
cmake --install "$T/app-build" > /dev/null
"$P/bin/app_cmake" | grep -q "c++: $expect_y" || fail "C++ program output (installed)"

step "-c object + static runtime (pkg-config dscc_runtime_static)"
"$P/bin/dscc" compile "$T/scale.dsc" -c -o "$T/scale.o"
"$P/bin/dscc" compile "$T/scale.dsc" --emit=header -o "$T/scale.h"
cc -std=c99 -o "$T/app_static" "$HERE/main.c" "$T/scale.o" -I"$T" $(pkg-config --cflags --libs dscc_runtime_static)
readelf -d "$T/app_static" | grep -q 'NEEDED.*dscc_runtime' && fail "the static program needs libdscc_runtime.so"
"$T/app_static" | grep -q "c: $expect_y" || fail "static program output"

step "Python module from the prefix"
/usr/bin/python3 - "$P" <<'PY' || fail "python"
import sys, numpy as np
sys.path.insert(0, sys.argv[1] + "/lib/python3/dist-packages")
import dscc
m = dscc.Model(sys.argv[1] + "/lib/scale.so")
y = m(x=np.array([[1, 1, 1], [2, 2, 2]], np.float32))["y"]
assert y.tolist() == [[2, 3, 4], [3, 5, 7]], y
print("python:", y.ravel().tolist())
PY

step "move the prefix: everything still runs"
mv "$P" "$T/moved"
P="$T/moved"
"$P/bin/app_c" | grep -q "c: $expect_y" || fail "C program after the move"
"$P/bin/app_cmake" | grep -q "c++: $expect_y" || fail "C++ program after the move"
"$P/bin/dscc" compile "$T/scale.dsc" -o "$T/scale2.so" || fail "the moved dscc cannot compile"
readelf -d "$T/scale2.so" | grep -q "RUNPATH.*$P/lib" || fail "the moved dscc links a runtime outside its prefix"
"$P/bin/dscc" compile "$T/scale.dsc" --runtime-dir '$ORIGIN/../lib' -o "$P/lib/scale3.so"
readelf -d "$P/lib/scale3.so" | grep -q 'RUNPATH.*\[\$ORIGIN:\$ORIGIN/../lib\]' || fail "--runtime-dir \$ORIGIN/../lib"
"$P/bin/dscc" run "$P/lib/scale3.so" --random --dim N=4 --check > /dev/null || fail "dscc run of the \$ORIGIN model"
export PKG_CONFIG_PATH="$P/lib/pkgconfig"
inc=$(pkg-config --variable=includedir dscc_runtime)
[ "$(realpath "$inc")" = "$(realpath "$P/include")" ] || fail "the moved .pc file points elsewhere: $inc"
echo "install_test: OK"
