#!/usr/bin/env bash
# tapegrad as another project sees it: `cmake --install` of this build
# tree into a temporary prefix, then the programs under tests/consumers/
# built against that prefix and run:
#   c_pkgconfig  C, a plain cc command line with pkg-config's flags; it
#                must not load MPI (libtapegrad needs none), and the
#                installed version (pkg-config, TG_VERSION, tg_version())
#                must be the build's
#   c_dist       C, the same with pkg-config's tapegrad-dist (libtapegrad_dist)
#   c_cmake      C, find_package(tapegrad): tapegrad::tapegrad (shared) and
#                tapegrad::tapegrad_static
#   cxx_cmake    C++11, find_package(tapegrad), -pedantic -Werror
# LD_LIBRARY_PATH is cleared: the programs find the installed
# libtapegrad.so by their RPATH (CMake's build RPATH; -Wl,-rpath on the cc
# line), and each must load it from the prefix, not from this build tree.
#   tests/install_consumers.sh BUILD_DIR SOURCE_DIR CMAKE GENERATOR CC CXX [FLAGS]
# CXX is empty when CMake found no C++ compiler: then the test is skipped
# (exit 77), or fails when the environment has CI=true (scripts/deps.sh
# installs g++). FLAGS (the sanitizer build's -fsanitize=...) go to every
# compile and link, since the installed library needs the same runtime.
set -euo pipefail
build=$1 src=$2 cmake=$3 generator=$4 cc=$5 cxx=$6 flags=${7:-}

if [ -z "$cxx" ]; then
    if [ "${CI:-}" = true ]; then
        echo "install_consumers: no C++ compiler found (CMake's check_language(CXX); scripts/deps.sh installs g++):" \
             "FAILED, not skipped, since CI=true"
        exit 1
    fi
    echo "install_consumers: no C++ compiler found (CMake's check_language(CXX); scripts/deps.sh installs g++): skipped"
    exit 77
fi
command -v pkg-config >/dev/null || { echo "install_consumers: pkg-config is missing"; exit 1; }
unset LD_LIBRARY_PATH

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
step() { echo "== $*"; }

step "cmake --install $build --prefix $prefix"
"$cmake" --install "$build" --prefix "$prefix" >"$work/install.log" || { cat "$work/install.log"; exit 1; }

pc=$(find "$prefix" -name tapegrad.pc)
config=$(find "$prefix" -name tapegradConfig.cmake)
if [ -z "$pc" ] || [ -z "$config" ]; then
    echo "no tapegrad.pc or tapegradConfig.cmake under $prefix"
    exit 1
fi
# stb_ds is compiled into the library: nothing of stb may reach its users
if grep -il stb "$pc" "$(dirname "$config")"/*.cmake; then
    echo "stb leaks into the installed interface (files above)"
    exit 1
fi
if find "$prefix" -name '*_internal.h' | grep .; then
    echo "internal headers were installed"
    exit 1
fi

# $1: a program; it must load libtapegrad.so (and $2, if given) from the prefix
loads_installed() {
    local lib name
    for name in libtapegrad ${2:-}; do
        lib=$(ldd "$1" | awk -v n="$name" 'index($1, n ".so") == 1 { print $3 }')
        case "$lib" in
            "$prefix"/*) ;;
            *) echo "$1 loads $name.so from '${lib:-nowhere}', not from $prefix"; exit 1 ;;
        esac
    done
}
# $1: a program on one process: nothing of MPI may be loaded
loads_no_mpi() {
    if ldd "$1" | grep -E 'libmpi|libopen-(pal|rte)|libhwloc|libudev|libtapegrad_dist'; then
        echo "$1 loads MPI or libtapegrad_dist (above), though it uses neither"
        exit 1
    fi
}

# ---- C, pkg-config, a plain command line
step "c_pkgconfig: cc with pkg-config"
PKG_CONFIG_PATH=$(dirname "$pc")${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
export PKG_CONFIG_PATH
libdir=$(pkg-config --variable=libdir tapegrad)
# shellcheck disable=SC2046,SC2086   # word splitting of the flags is meant
"$cc" $flags -std=c11 -Wall -Wextra -Werror "$src/tests/consumers/c_pkgconfig/main.c" -o "$work/c_pkgconfig" \
    $(pkg-config --cflags tapegrad) $(pkg-config --libs tapegrad) -Wl,-rpath,"$libdir"
loads_installed "$work/c_pkgconfig"
loads_no_mpi "$work/c_pkgconfig"
"$work/c_pkgconfig" | tee "$work/c_pkgconfig.out"
# the version three ways: the installed header, pkg-config, the library
hdr=$(sed -n 's/^#define TG_VERSION "\(.*\)"$/\1/p' "$prefix/include/tapegrad/core/version.h")
pcv=$(pkg-config --modversion tapegrad)
lib=$(sed -n 's/^c_pkgconfig: tapegrad //p' "$work/c_pkgconfig.out")
if [ -z "$hdr" ] || [ "$hdr" != "$pcv" ] || [ "$hdr" != "$lib" ]; then
    echo "installed versions disagree: core/version.h '$hdr', pkg-config '$pcv', tg_version() '$lib'"
    exit 1
fi
soname=$(readelf -d "$libdir/libtapegrad.so" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
case "$hdr" in
    0.*) want=libtapegrad.so.$(echo "$hdr" | cut -d. -f1-2) ;;   # 0.x: a minor version may break the ABI
    *) want=libtapegrad.so.$(echo "$hdr" | cut -d. -f1) ;;
esac
if [ "$soname" != "$want" ]; then
    echo "libtapegrad.so's soname is '$soname', version $hdr wants '$want'"
    exit 1
fi
echo "version $hdr: core/version.h, pkg-config and tg_version() agree; soname $soname"

step "c_dist: cc with pkg-config tapegrad-dist"
# shellcheck disable=SC2046,SC2086
"$cc" $flags -std=c11 -Wall -Wextra -Werror "$src/tests/consumers/c_dist/main.c" -o "$work/c_dist" \
    $(pkg-config --cflags tapegrad-dist) $(pkg-config --libs tapegrad-dist) -Wl,-rpath,"$libdir"
loads_installed "$work/c_dist" libtapegrad_dist
"$work/c_dist"

# ---- CMake projects: $1 the consumer's folder; the rest, cache settings
cmake_consumer() {
    local name=$1
    shift
    "$cmake" -S "$src/tests/consumers/$name" -B "$work/$name" -G "$generator" -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_PREFIX_PATH="$prefix" "$@" >"$work/$name.log" 2>&1 || { cat "$work/$name.log"; exit 1; }
    local dir
    dir=$(sed -n 's/^tapegrad_DIR:[A-Z]*=//p' "$work/$name/CMakeCache.txt")
    case "$dir" in
        "$prefix"/*) ;;
        *) echo "$name found tapegrad in '$dir', not in $prefix"; exit 1 ;;
    esac
    "$cmake" --build "$work/$name" >"$work/$name.log" 2>&1 || { cat "$work/$name.log"; exit 1; }
}

step "c_cmake: find_package(tapegrad), tapegrad::tapegrad, tapegrad::tapegrad_static, tapegrad::dist, tapegrad::dist_static"
cmake_consumer c_cmake -DCMAKE_C_COMPILER="$cc" -DCMAKE_C_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags"
loads_installed "$work/c_cmake/fit_shared"
if ldd "$work/c_cmake/fit_static" | grep libtapegrad; then
    echo "fit_static loads libtapegrad.so: it was to link libtapegrad.a"
    exit 1
fi
loads_no_mpi "$work/c_cmake/fit_shared"
loads_no_mpi "$work/c_cmake/fit_static"
"$work/c_cmake/fit_shared"
"$work/c_cmake/fit_static"
loads_installed "$work/c_cmake/dist_shared" libtapegrad_dist
"$work/c_cmake/dist_shared"
"$work/c_cmake/dist_static"

step "cxx_cmake: C++ with find_package(tapegrad)"
cmake_consumer cxx_cmake -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags"
loads_installed "$work/cxx_cmake/gpt_cxx"
"$work/cxx_cmake/gpt_cxx"

echo "install_consumers: every consumer built against $prefix and ran"
