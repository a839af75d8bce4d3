#!/usr/bin/env bash
# install.sh BUILD_DIR - what a new user does: installs the build into a temporary prefix
# (cmake --install), then builds examples/tiny_gpt.c against it four ways and runs each for a
# short training (as the example_tiny_gpt test):
#   cc prog.c $(pkg-config --cflags --libs strix)          (libstrix.so)
#   cc prog.c $(pkg-config --cflags --libs strix-static)   (libstrix.a)
#   a CMake project with find_package(strix): strix::strix and strix::strix_static.
# Also runs the installed `strix --version`, and checks that a program built against libstrix.so
# maps the installed library, not the build tree's. Run from the source root.
set -euo pipefail
build=$(cd "$1" && pwd)
root=$(pwd)
cc=${CC:-cc}
cmake=${CMAKE:-cmake}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
fail() { echo "FAIL: $*"; exit 1; }

"$cmake" --install "$build" --prefix "$prefix" >"$work/install.log" 2>&1 ||
    { cat "$work/install.log"; fail "cmake --install"; }
for f in include/strix.h lib/libstrix.a lib/libstrix.so lib/pkgconfig/strix.pc \
         lib/pkgconfig/strix-static.pc lib/cmake/strix/strixConfig.cmake bin/strix; do
    [ -e "$prefix/$f" ] || fail "the install has no $f"
done
"$prefix/bin/strix" --version | grep -q '^strix ' || fail "installed strix --version"

data=$root/../shared/data/tinyshakespeare.txt
run() { # name, program
    local out
    out=$("$2" "$data" 150 2>&1) || { echo "$out" | tail -20; fail "$1 exited $?"; }
    echo "$out" | grep -qi 'loss' || { echo "$out" | tail -5; fail "$1 printed no loss"; }
    echo "ok: $1"
}

export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
# shellcheck disable=SC2046 # word splitting of pkg-config's output is the point
"$cc" -std=c11 -O2 -o "$work/tiny_shared" "$root/examples/tiny_gpt.c" \
    $(pkg-config --cflags --libs strix) || fail "cc ... \$(pkg-config --cflags --libs strix)"
loaded=$(LD_TRACE_LOADED_OBJECTS=1 "$work/tiny_shared" | awk '/libstrix\.so/ { print $3 }')
[ -n "$loaded" ] && [ "$(realpath "$loaded")" = "$(realpath "$prefix/lib/libstrix.so")" ] ||
    fail "tiny_shared loads '$loaded', not $prefix/lib/libstrix.so"
run "pkg-config strix (shared)" "$work/tiny_shared"
# shellcheck disable=SC2046
"$cc" -std=c11 -O2 -o "$work/tiny_static" "$root/examples/tiny_gpt.c" \
    $(pkg-config --cflags --libs strix-static) || fail "cc ... \$(pkg-config ... strix-static)"
if LD_TRACE_LOADED_OBJECTS=1 "$work/tiny_static" | grep -q libstrix; then
    fail "tiny_static loads a libstrix.so"
fi
run "pkg-config strix-static" "$work/tiny_static"

mkdir -p "$work/proj"
cat >"$work/proj/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.21)
project(uses_strix C)
find_package(strix 0.1 REQUIRED)
add_executable(tiny_shared $root/examples/tiny_gpt.c)
target_link_libraries(tiny_shared PRIVATE strix::strix)
add_executable(tiny_static $root/examples/tiny_gpt.c)
target_link_libraries(tiny_static PRIVATE strix::strix_static)
CMAKE
"$cmake" -S "$work/proj" -B "$work/proj/build" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_BUILD_TYPE=Release >"$work/proj.log" 2>&1 || { cat "$work/proj.log"; fail "configure"; }
"$cmake" --build "$work/proj/build" >>"$work/proj.log" 2>&1 ||
    { cat "$work/proj.log"; fail "build"; }
run "find_package strix::strix" "$work/proj/build/tiny_shared"
run "find_package strix::strix_static" "$work/proj/build/tiny_static"
