#!/usr/bin/env bash
# The shape rules of the library's sources (its folders' .c, .h and .inc
# files, and tapegrad.h):
#   layers  a file includes headers of its own layer and of the layers it
#           may use (docs/design.md, "Layers"), never of a layer below it
#   lines   no file over 450 lines
#   macros  no macro body over 15 lines (the lines after a #define's first,
#           continued with backslashes): code for several types goes in a
#           .inc included once per type, or takes a dtype flag
#           (docs/decisions.md, "Conventions")
#   issues  no issue number ("issue 20", "issue #20") in code or comments:
#           a comment says why, which a reader of the repository can follow
# Each breach is printed as file:line: what, and the check fails, unless
# the file is listed below with its reason. A listed file that keeps the
# rule now is named in a note (its line is to be deleted), without failing.
#   tests/check_source_rules.sh [SOURCE_DIR]
# Before looking at the library it runs the checks on a small sample with
# known breaches, so a parser that silently matches nothing fails.
set -euo pipefail

# The layers, in reading order, and what each may include besides itself.
LAYERS='
core:
ops: core
nn: core ops
optim: core
text: core
train: core nn optim text
pictures: core nn text train
formats: core nn text train
distributed: core optim train
'
MAX_LINES=450
MAX_MACRO=15

# Files over MAX_LINES for now, one per line: "file | reason" (no single
# quotes).
LONG_FILES='
'

# Files that still cite issue numbers, for now: "file | reason".
CITING_ISSUES='
'

# layer_breaches LAYERS FILE...: "file:line: includes X (layer L may use: ...)"
layer_breaches() {
    local layers=$1
    shift
    awk -v layers="$layers" '
    BEGIN {
        n = split(layers, rows, "\n")
        for (i = 1; i <= n; i++) {
            if (rows[i] !~ /:/) continue
            name = rows[i]; sub(/:.*/, "", name)
            uses = rows[i]; sub(/^[^:]*:[ ]*/, "", uses)
            known[name] = 1; may[name] = uses
            m = split(uses, u, " ")
            for (j = 1; j <= m; j++) ok[name, u[j]] = 1
        }
    }
    FNR == 1 {
        layer = FILENAME; sub(/\/.*/, "", layer)
        if (FILENAME !~ /\//) layer = "(top)"
    }
    /^[ \t]*#[ \t]*include[ \t]*"/ {
        h = $0; sub(/^[^"]*"/, "", h); sub(/".*/, "", h)
        to = layer
        if (h ~ /^\.\.\//) { to = h; sub(/^\.\.\//, "", to); sub(/\/.*/, "", to); if (h !~ /^\.\.\/[^\/]*\//) to = "(top)" }
        if (layer == "(top)" || to == layer || ok[layer, to]) next
        printf "%s:%d: includes %s, of %s (layer %s may use: %s)\n", FILENAME, FNR, h,
               to == "(top)" ? "the top level" : "layer " to, layer, (layer in known) ? (may[layer] == "" ? "nothing" : may[layer]) : "unknown layer"
    }' "$@"
}

# long_files MAX FILE...: "file:1: N lines (at most MAX)"
long_files() {
    local max=$1
    shift
    wc -l "$@" | awk -v max="$max" -v n=$# '(n == 1 || NR < n + 1) && $1 > max { printf "%s:1: %d lines (at most %d)\n", $2, $1, max }'
}

# long_macros MAX FILE...: "file:line: macro NAME has a body of N lines (at most MAX)"
long_macros() {
    local max=$1
    shift
    awk -v max="$max" '
    FNR == 1 { indef = 0 }
    indef {
        n++
        if ($0 !~ /\\[ \t]*$/) {
            indef = 0
            if (n > max) printf "%s:%d: macro %s has a body of %d lines (at most %d)\n", FILENAME, start, name, n, max
        }
        next
    }
    /^[ \t]*#[ \t]*define[ \t]/ && /\\[ \t]*$/ {
        indef = 1; n = 0; start = FNR
        name = $0; sub(/^[ \t]*#[ \t]*define[ \t]+/, "", name); sub(/[^A-Za-z0-9_].*/, "", name)
    }' "$@"
}

# issue_numbers FILE...: "file:line: cites an issue number: text"
issue_numbers() {
    grep -HniE '(^|[^a-z])issues? #?[0-9]' "$@" | sed 's/^\([^:]*:[0-9]*\):[ \t]*\(.*\)/\1: cites an issue number: \2/' || true
}

# judge BREACHES ALLOWED: prints the breaches of files not allowed, and a
# note per allowed file without one; returns 1 if any breach is left
judge() {
    local breaches=$1 allowed=$2 bad=0 f
    local files
    files=$(echo "$allowed" | sed -n 's/ *|.*//p')
    while IFS= read -r line; do
        [ -n "$line" ] || continue
        f=${line%%:*}
        if grep -qxF "$f" <<< "$files"; then continue; fi
        echo "$line"
        bad=1
    done <<< "$breaches"
    while IFS= read -r f; do
        [ -n "$f" ] || continue
        grep -q "^$f:" <<< "$breaches" || echo "note: $f is listed as an exception but keeps the rule now: delete its line"
    done <<< "$files"
    return $bad
}

# ---- self-test on a sample with known breaches
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/core" "$work/ops" "$work/optim"
printf '#include "op.h"\n#include "../ops/gemm.h"\n' > "$work/core/a.c"
printf '#include "../core/op.h"\n#include "kernels.h"\n#include "../tapegrad.h"\n' > "$work/ops/b.c"
printf '#include "../core/x.h"\n#include "../ops/gemm_internal.h"\n' > "$work/optim/c.c"
{
    echo '#define SHORT(x) \'
    for i in $(seq 1 14); do echo '    x + \'; done
    echo '    x'
    echo '#define LONG(x, y)   \'
    for i in $(seq 1 15); do echo '    x + \'; done
    echo '    y'
    echo '#define ONE_LINE 1'
    echo '/* fixed in issue 20, see Issue #7; tissue 3 and issues are fine */'
    for i in $(seq 1 420); do echo "int v$i;"; done
} > "$work/ops/m.c"
got=$(cd "$work" && { layer_breaches "$LAYERS" core/a.c ops/b.c optim/c.c; long_files 450 core/a.c ops/m.c
      long_macros 15 ops/m.c; issue_numbers core/a.c ops/m.c; })
want='core/a.c:2: includes ../ops/gemm.h, of layer ops (layer core may use: nothing)
ops/b.c:3: includes ../tapegrad.h, of the top level (layer ops may use: core)
optim/c.c:2: includes ../ops/gemm_internal.h, of layer ops (layer optim may use: core)
ops/m.c:1: 455 lines (at most 450)
ops/m.c:17: macro LONG has a body of 16 lines (at most 15)
ops/m.c:35: cites an issue number: /* fixed in issue 20, see Issue #7; tissue 3 and issues are fine */'
if [ "$got" != "$want" ]; then
    echo "self-test failed: on the sample the checks found"
    echo "$got"
    echo "instead of"
    echo "$want"
    exit 1
fi
if judge "$got" 'ops/m.c | r' > "$work/judged" || [ "$(grep -c . "$work/judged")" != 3 ]; then
    echo "self-test failed: an exception list hid the wrong breaches"
    cat "$work/judged"
    exit 1
fi
judge "$got" 'core/a.c | r
optim/c.c | r
ops/b.c | r
ops/m.c | r
ops/z.c | r' > "$work/judged" || { echo "self-test failed: every breach listed, still failed"; exit 1; }
grep -qx "note: ops/z.c is listed as an exception but keeps the rule now: delete its line" "$work/judged" ||
    { echo "self-test failed: no note for an exception that keeps the rule"; exit 1; }

# ---- the library
cd "${1:-$(dirname "$0")/..}"
folders=$(echo "$LAYERS" | sed -n 's/:.*//p')
mapfile -t files < <(for d in $folders; do [ -d "$d" ] && find "$d" -maxdepth 1 -type f \( -name '*.c' -o -name '*.h' -o -name '*.inc' \); done | sort; echo tapegrad.h)
if [ "${#files[@]}" -lt 100 ]; then
    echo "only ${#files[@]} files found: not the source tree"
    exit 1
fi
fail=0
judge "$(layer_breaches "$LAYERS" "${files[@]}")" "" || fail=1
judge "$(long_files "$MAX_LINES" "${files[@]}")" "$LONG_FILES" || fail=1
judge "$(long_macros "$MAX_MACRO" "${files[@]}")" "" || fail=1
judge "$(issue_numbers "${files[@]}")" "$CITING_ISSUES" || fail=1
[ "$fail" = 0 ] && echo "${#files[@]} files: layers, lines (<= $MAX_LINES), macro bodies (<= $MAX_MACRO) and no issue numbers as the rules say"
exit $fail
