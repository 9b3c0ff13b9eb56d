#!/usr/bin/env bash
# The C sources keep the style .clang-format describes: clang-format 14
# (Debian bookworm's; another version formats some lines otherwise)
# changes nothing in any .c, .h or .inc file of the library, the
# examples, the tests and the benchmarks. It names each file it would
# change and the first lines of the change. Without clang-format 14 it is
# skipped (exit 77), and fails under CI=true.
#   tests/check_format.sh SOURCE_DIR
set -euo pipefail
src=${1:-$(dirname "$0")/..}
cd "$src"
fmt=
for c in clang-format-14 clang-format; do
    if command -v "$c" >/dev/null 2>&1 && "$c" --version | grep -q 'version 14\.'; then fmt=$c; break; fi
done
if [ -z "$fmt" ]; then
    msg="clang-format 14 is not installed (Debian's clang-format; scripts/deps.sh --test installs it)"
    if [ "${CI:-}" = true ]; then echo "check_format: $msg: FAILED, not skipped, since CI=true"; exit 1; fi
    echo "skipped: $msg"
    exit 77
fi
mapfile -t files < <(find core ops nn optim text train pictures formats distributed examples tests bench \
                         \( -name '*.c' -o -name '*.h' -o -name '*.inc' \) -not -path 'tests/fuzz/corpus/*' -not -path 'bench/node_modules/*' | sort)
bad=0
for f in "${files[@]}"; do
    if ! out=$("$fmt" --style=file "$f" | diff -u "$f" - | head -n 12); then
        echo "$f: not in .clang-format's style ($fmt -i $f):"
        echo "$out"
        bad=$((bad + 1))
    fi
done
if [ "$bad" -gt 0 ]; then
    echo "check_format: $bad of ${#files[@]} files differ from .clang-format's style"
    exit 1
fi
echo "check_format: ${#files[@]} files in .clang-format's style"
