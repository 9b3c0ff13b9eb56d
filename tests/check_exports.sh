#!/usr/bin/env bash
# A shared library exports exactly its public API: every function declared
# in its public headers carries TG_API (core/export.h), every TG_API
# function is exported, and nothing else is (no internal function that
# forgot `static`, no stb_ds). libtapegrad.so's headers: core/*.h except
# *_internal.h, ops/ops.h, nn/nn.h, optim/optim.h, text/text.h, train/train.h,
# train/generate.h, pictures/pictures.h, formats/formats.h (tests/public_api.sh);
# it must not need MPI. libtapegrad_dist.so's: distributed/dist.h.
#   tests/check_exports.sh SOURCE_DIR LIB.so tapegrad|dist
# Before looking at the real headers it runs its parser on a small sample
# with known answers, so a parser that silently matches nothing fails.
set -euo pipefail
src=$1
lib=$2
which=$3

. "$(dirname "$0")/public_api.sh"

# ---- the parser's self-test, then the public headers against the library's dynamic symbols
declared_selftest
cd "$src"
mapfile -t headers < <(public_headers "$which")
decl=$(declared "${headers[@]}")
api=$(echo "$decl" | awk '$1 == "api" { print $2 }' | sort -u)
bare=$(echo "$decl" | awk '$1 == "bare" { $1 = ""; print substr($0, 2) }')
exported=$(nm -D --defined-only "$lib" | awk 'NF >= 3 { print $3 }' | sed 's/@.*//' | sort -u)

fail=0
if [ -n "$bare" ]; then
    echo "declared in a public header without TG_API (so not exported):"
    echo "$bare" | sed 's/^/  /'
    fail=1
fi
missing=$(comm -23 <(echo "$api") <(echo "$exported"))
if [ -n "$missing" ]; then
    echo "TG_API functions that $lib does not export:"
    echo "$missing" | sed 's/^/  /'
    fail=1
fi
extra=$(comm -13 <(echo "$api") <(echo "$exported"))
if [ -n "$extra" ]; then
    echo "exported by $lib but not public API (make them static, or hidden):"
    echo "$extra" | sed 's/^/  /'
    fail=1
fi
n_api=$(echo "$api" | grep -c . || true)
n_exp=$(echo "$exported" | grep -c . || true)
if [ "$which" = tapegrad ] && readelf -d "$lib" | grep -E 'NEEDED.*(mpi|hwloc|udev)'; then
    echo "$lib needs MPI (above): only libtapegrad_dist may"
    fail=1
fi
if [ "$n_api" -lt "$([ "$which" = dist ] && echo 20 || echo 100)" ]; then
    echo "only $n_api TG_API functions found in ${#headers[@]} headers: the parser is broken"
    fail=1
fi
[ "$fail" -eq 0 ] || exit 1
echo "$n_exp symbols exported, the $n_api TG_API functions of ${#headers[@]} public headers and nothing else"
