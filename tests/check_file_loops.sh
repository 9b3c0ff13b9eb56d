#!/usr/bin/env bash
# No two library files use each other, directly or around a longer loop:
# the files of the library form a graph whose edges all point one way, so
# that each file can be read knowing only the ones below it.
#
# File A uses file B (both .c files of the library) when
#   - A's object needs a symbol that B's object defines (nm: A calls B or
#     reads B's data), or
#   - A includes B's own header, B.h or B_internal.h beside B.c: the
#     functions, types and inline code that come with B. A header named
#     after no .c file (graph_fields_internal.h, attention_tiles_internal.h)
#     is shared by the files that include it and ties them to no one.
# Every strongly connected set of two or more files is a loop; it is
# printed with the edges inside it and why each is there, and the check
# fails, unless the set is listed in EXPECTED_LOOPS below with its reason.
# A listed loop that is not found any more is named in a note (its line is
# to be deleted), without failing: the branch that untangles it need not
# edit this file.
#   tests/check_file_loops.sh SOURCE_DIR OBJECT.o...
# An object's file is the part of its path after "<target>.dir/" without
# ".o" (CMake's layout: .../tapegrad_obj.dir/core/graph.c.o is
# core/graph.c). Before looking at the library it runs the checker on a
# small sample with a known loop, so a checker that silently finds no edge
# fails.
set -euo pipefail

# Loops allowed for now, one per line: the files of the loop, sorted and
# separated by spaces, then " | " and the reason (no single quotes).
EXPECTED_LOOPS='
'

# file_of OBJECT: the source file an object was compiled from
file_of() {
    local f=${1##*.dir/}
    echo "${f%.o}"
}

# edges SOURCE_DIR OBJECT...: prints "A B why" for each use of B by A
edges() {
    local src=$1
    shift
    local o f files=()
    {
        for o in "$@"; do
            f=$(file_of "$o")
            nm -P "$o" | awk -v f="$f" '$2 == "U" { print "U", f, $1 } $2 ~ /^[TDBRCVWG]$/ { print "D", f, $1 }'
            [ -f "$src/$f" ] && files+=("$f")
        done
        (cd "$src" && grep -H '^[ \t]*#[ \t]*include[ \t]*"' "${files[@]}" /dev/null) |
            sed 's/^\([^:]*\):[^"]*"\([^"]*\)".*/I \1 \2/'
    } | awk '
        # the path of header h included from file f, with . and .. resolved
        function resolve(f, h,    n, parts, i, out, k) {
            sub(/[^\/]*$/, "", f)
            n = split(f h, parts, "/")
            k = 0
            for (i = 1; i <= n; i++) {
                if (parts[i] == "" || parts[i] == ".") continue
                if (parts[i] == ".." && k > 0) { k--; continue }
                out[++k] = parts[i]
            }
            h = out[1]
            for (i = 2; i <= k; i++) h = h "/" out[i]
            return h
        }
        $1 == "U" { nu++; uf[nu] = $2; us[nu] = $3 }
        $1 == "D" { def[$3] = $2; isfile[$2] = 1 }
        $1 == "I" { ni++; if_[ni] = $2; ih[ni] = resolve($2, $3) }
        END {
            for (i = 1; i <= nu; i++) {
                b = def[us[i]]
                if (b != "" && b != uf[i] && !((uf[i], b, us[i]) in seen)) {
                    seen[uf[i], b, us[i]] = 1
                    print uf[i], b, us[i]
                }
            }
            for (i = 1; i <= ni; i++) {
                b = ih[i]
                if (b !~ /\.h$/) continue
                sub(/(_internal)?\.h$/, ".c", b)
                if ((b in isfile) && b != if_[i]) print if_[i], b, "#include:" ih[i]
            }
        }'
}

# loops: reads "A B why" lines, prints each loop as
#   "loop FILE FILE ..." (sorted) then "  A -> B: why, why" for its edges
loops() {
    awk '
    function visit(v,    i, w) {
        idx[v] = low[v] = ++counter
        stack[++sp] = v
        on[v] = 1
        for (i = 1; i <= nout[v]; i++) {
            w = out[v, i]
            if (!(w in idx)) { visit(w); if (low[w] < low[v]) low[v] = low[w] }
            else if (on[w] && idx[w] < low[v]) low[v] = idx[w]
        }
        if (low[v] == idx[v]) {
            n = 0
            do { w = stack[sp--]; on[w] = 0; comp[++n] = w } while (w != v)
            if (n > 1) { nloops++; report(n) }
        }
    }
    function report(n,    i, j, t, line, a, k) {
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
            if (comp[j] < comp[i]) { t = comp[i]; comp[i] = comp[j]; comp[j] = t }
        line = "loop"
        for (i = 1; i <= n; i++) { line = line " " comp[i]; mark[comp[i]] = nloops }
        print line
        for (i = 1; i <= n; i++) {
            a = comp[i]
            for (k = 1; k <= nout[a]; k++)
                if (mark[out[a, k]] == nloops) print "  " a " -> " out[a, k] ": " why[a, out[a, k]]
        }
    }
    {
        a = $1; b = $2; w = $3
        node[a] = node[b] = 1
        if (!((a, b) in why)) { out[a, ++nout[a]] = b; why[a, b] = w }
        else if (length(why[a, b]) < 160) why[a, b] = why[a, b] ", " w
    }
    END { for (v in node) if (!(v in idx)) visit(v) }'
}

# judge LOOPS EXPECTED: prints what fails and returns 1 if anything does
judge() {
    local found=$1 expected=$2 bad=0 key
    while IFS= read -r line; do
        case $line in
            loop\ *)
                key=${line#loop }
                if grep -qxF "$key" <(echo "$expected" | sed -n 's/ *|.*//p'); then
                    echo "known loop (EXPECTED_LOOPS): $key"
                    skip=1
                else
                    echo "files that use each other: $key"
                    skip=0
                    bad=1
                fi
                ;;
            *) [ "${skip:-0}" = 1 ] || echo "$line" ;;
        esac
    done <<< "$found"
    while IFS= read -r key; do
        [ -n "$key" ] || continue
        if ! grep -qxF "loop $key" <<< "$found"; then
            echo "note: EXPECTED_LOOPS names a loop that is gone, delete its line: $key"
        fi
    done < <(echo "$expected" | sed -n 's/ *|.*//p')
    return $bad
}

# ---- self-test: a sample of four objects, a.c <-> b.c by calls and
# c.c -> d.c -> (d's header is c's) c.c by an include, e.c alone
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src/x" "$work/obj/s.dir/x"
cat > "$work/src/x/a.c" <<'EOF'
int tg_b(void);
int tg_a(void) { return tg_b() + 1; }
int tg_a2(void) { return 2; }
EOF
cat > "$work/src/x/b.c" <<'EOF'
int tg_a2(void);
int tg_b(void) { return tg_a2(); }
EOF
cat > "$work/src/x/c_internal.h" <<'EOF'
static inline int tg_c_inline(int x) { return x; }
EOF
cat > "$work/src/x/c.c" <<'EOF'
int tg_d(void);
int tg_c(void) { return tg_d(); }
EOF
cat > "$work/src/x/d.c" <<'EOF'
#include "c_internal.h"
int tg_d(void) { return tg_c_inline(3); }
EOF
cat > "$work/src/x/e.c" <<'EOF'
int tg_a(void);
int tg_e(void) { return tg_a(); }
EOF
for f in a b c d e; do
    cc -c -o "$work/obj/s.dir/x/$f.c.o" "$work/src/x/$f.c"
done
sample=$(edges "$work/src" "$work"/obj/s.dir/x/*.o | loops)
want='loop x/a.c x/b.c
  x/a.c -> x/b.c: tg_b
  x/b.c -> x/a.c: tg_a2
loop x/c.c x/d.c
  x/c.c -> x/d.c: tg_d
  x/d.c -> x/c.c: #include:x/c_internal.h'
if [ "$(sort <<< "$sample")" != "$(sort <<< "$want")" ]; then
    echo "self-test failed: on the sample the checker found"
    echo "$sample"
    echo "instead of"
    echo "$want"
    exit 1
fi
if judge "$sample" 'x/a.c x/b.c | a reason' > "$work/judged"; then
    echo "self-test failed: a loop missing from the expected list passed"
    exit 1
fi
grep -q "^files that use each other: x/c.c x/d.c$" "$work/judged" || { echo "self-test failed: no message"; exit 1; }
if ! judge "$sample" 'x/a.c x/b.c | r
x/c.c x/d.c | r
x/e.c x/f.c | r' > "$work/judged"; then
    echo "self-test failed: expected loops failed"
    exit 1
fi
grep -q "^note: EXPECTED_LOOPS names a loop that is gone, delete its line: x/e.c x/f.c$" "$work/judged" ||
    { echo "self-test failed: no note for an expected loop that is gone"; exit 1; }

# ---- the library
src=$1
shift
[ $# -gt 0 ] || { echo "usage: $0 SOURCE_DIR OBJECT.o..."; exit 2; }
all=$(edges "$src" "$@")
found=$(loops <<< "$all")
nedges=$(wc -l <<< "$all")
if [ "$nedges" -lt 100 ]; then
    echo "only $nedges uses between $# objects: the objects or their symbols were not read"
    exit 1
fi
if judge "$found" "$EXPECTED_LOOPS"; then
    echo "no loops between files: $# objects, $nedges uses"
else
    exit 1
fi
