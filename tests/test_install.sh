#!/usr/bin/env bash
# Installs the build into a temporary prefix and uses it as a C developer would:
# a consumer project (tests/consumer) through find_package(ndforge CONFIG) and
# through pkg-config, the installed CLI, and -- with --subdir -- the source tree
# by add_subdirectory() with only the library built.
#   test_install.sh SOURCE_DIR BUILD_DIR SCRATCH_DIR [--subdir] [extra C flags...]
# Extra C flags (e.g. the sanitizers of the build under test) go to the consumer.
set -euo pipefail
src=$1 build=$2 scratch=$3
shift 3
subdir=0
if [ "${1:-}" = "--subdir" ]; then subdir=1; shift; fi
cflags="$*"
fail() { echo "test_install: $*" >&2; exit 1; }

rm -rf "$scratch"
mkdir -p "$scratch"
prefix=$scratch/prefix
cmake --install "$build" --prefix "$prefix" >"$scratch/install.log" || { cat "$scratch/install.log"; fail "cmake --install failed"; }

lib=$(find "$prefix" -name 'libndforge.so.*.*.*' | head -n1)
[ -n "$lib" ] || fail "no libndforge.so.X.Y.Z under $prefix"
libdir=$(dirname "$lib")
[ -L "$libdir/libndforge.so" ] || fail "no libndforge.so development link in $libdir"
soname=$(objdump -p "$lib" | awk '$1 == "SONAME" { print $2 }')
[ "$soname" = "libndforge.so.0" ] || fail "SONAME is '$soname', expected libndforge.so.0"
[ -L "$libdir/$soname" ] || fail "no $soname link in $libdir"
[ -f "$prefix/include/ndforge.h" ] || fail "no include/ndforge.h"
[ -f "$libdir/cmake/ndforge/ndforgeConfig.cmake" ] || fail "no CMake package in $libdir/cmake/ndforge"
[ -f "$libdir/pkgconfig/ndforge.pc" ] || fail "no ndforge.pc in $libdir/pkgconfig"
# Nothing private is installed: one header, no internal static library.
[ "$(find "$prefix/include" -type f | wc -l)" -eq 1 ] || fail "more than ndforge.h under include/"
if find "$prefix" -name '*.a' | grep -q .; then fail "a static library was installed"; fi

# The installed CLI finds its library through its RUNPATH.
if [ -x "$prefix/bin/ndforge" ]; then
  # Without any directory holding a libndforge: the installed CLI must find
  # its own through its RPATH (other libraries' directories stay).
  ldp=
  IFS=: read -r -a _dirs <<<"${LD_LIBRARY_PATH:-}"
  for d in "${_dirs[@]}"; do
    [ -n "$d" ] && ! compgen -G "$d/libndforge.so*" >/dev/null && ldp="$ldp${ldp:+:}$d"
  done
  LD_LIBRARY_PATH="$ldp" "$prefix/bin/ndforge" --version >"$scratch/cli.txt" || fail "installed ndforge --version failed"
  grep -q . "$scratch/cli.txt" || fail "installed ndforge --version printed nothing"
fi

# 1. CMake package.
cmake -S "$src/tests/consumer" -B "$scratch/pkg" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_C_FLAGS="$cflags" -DCMAKE_EXE_LINKER_FLAGS="$cflags" >"$scratch/pkg.log" 2>&1 &&
  cmake --build "$scratch/pkg" >>"$scratch/pkg.log" 2>&1 || { cat "$scratch/pkg.log"; fail "find_package consumer did not build"; }
"$scratch/pkg/consumer" || fail "find_package consumer failed"

# 2. pkg-config.
export PKG_CONFIG_PATH="$libdir/pkgconfig"
[ "$(pkg-config --modversion ndforge)" = "$(awk -F'"' '/define NDF_VERSION_STRING/ { print $2 }' "$src/include/ndforge.h")" ] ||
  fail "pkg-config --modversion does not match NDF_VERSION_STRING"
# shellcheck disable=SC2046,SC2086
cc $cflags "$src/tests/consumer/consumer.c" $(pkg-config --cflags --libs ndforge) -o "$scratch/consumer_pc" ||
  fail "pkg-config consumer did not build"
LD_LIBRARY_PATH="$libdir" "$scratch/consumer_pc" || fail "pkg-config consumer failed"

# 3. add_subdirectory of the source tree: the library alone (no nifti_clib, cmocka, python needed).
if [ "$subdir" = 1 ]; then
  cmake -S "$src/tests/consumer" -B "$scratch/sub" -G Ninja -DNDF_CONSUME=subdir -DNDF_SOURCE_DIR="$src" \
    -DCMAKE_C_FLAGS="$cflags" >"$scratch/sub.log" 2>&1 &&
    cmake --build "$scratch/sub" >>"$scratch/sub.log" 2>&1 || { cat "$scratch/sub.log"; fail "add_subdirectory consumer did not build"; }
  grep -q 'Build files have been written' "$scratch/sub.log" || fail "no configure output"
  [ ! -e "$scratch/sub/ndforge/tools" ] || fail "add_subdirectory built the tools by default"
  "$scratch/sub/consumer" || fail "add_subdirectory consumer failed"
fi
echo "test_install: ok (prefix $prefix, $soname, subdir=$subdir)"
