#!/usr/bin/env bash
# libtapegrad.so exports exactly the public API: every function declared
# in a public header carries TG_API (core/export.h), every TG_API function
# is exported, and nothing else is (no internal function that forgot
# `static`, no stb_ds). Public headers: core/*.h except *_internal.h,
# ops/ops.h, nn/nn.h, optim/optim.h, text/text.h, dist/dist.h.
#   tests/check_exports.sh SOURCE_DIR LIBTAPEGRAD.so
# Before looking at the real headers it runs its parser on a small sample
# with known answers, so a parser that silently matches nothing fails.
set -euo pipefail
src=$1
lib=$2

# awk: for each function declared at the start of a line (comments
# stripped; not typedef, preprocessor, struct or static inline), prints
# "api NAME" when it starts with TG_API and "bare FILE:LINE: NAME" when not.
declared() {
    awk '
    function strip(s,    out, i, c2) {
        out = ""
        i = 1
        while (i <= length(s)) {
            c2 = substr(s, i, 2)
            if (incomment) {
                if (c2 == "*/") { incomment = 0; i += 2 } else i++
                continue
            }
            if (c2 == "/*") { incomment = 1; i += 2; continue }
            if (c2 == "//") break
            out = out substr(s, i, 1)
            i++
        }
        return out
    }
    FNR == 1 { incomment = 0 }
    {
        code = strip($0)
        if (code !~ /^[A-Za-z_]/ || code ~ /^(typedef|#|struct[ \t]+[A-Za-z_0-9]+[ \t]*\{|static[ \t]+inline|extern[ \t]+"C")/)
            next
        if (!match(code, /[A-Za-z_][A-Za-z_0-9]*[ \t]*\(/)) next
        name = substr(code, RSTART, RLENGTH)
        sub(/[ \t]*\($/, "", name)
        if (code ~ /^TG_API[ \t]/) print "api " name
        else printf "bare %s:%d: %s\n", FILENAME, FNR, name
    }
    ' "$@"
}

# ---- self-test on a sample with known answers
sample=$(mktemp)
trap 'rm -f "$sample"' EXIT
cat > "$sample" <<'EOF'
/* int tg_in_comment(void); */
TG_API int tg_a(void);
TG_API tg_tensor *tg_b(tg_graph *g,
                       int x);
int tg_c(void);   /* no TG_API */
static inline int tg_d(int x) { return x; }
typedef void (*tg_fn)(int);
#define TG_E(x) (x)
extern "C" {
typedef struct tg_s {
    int (*f)(int);
} tg_s;
void *tg_f(void)
    __attribute__((unused));
}
EOF
expect="api tg_a
api tg_b
bare $sample:5: tg_c
bare $sample:13: tg_f"
got=$(declared "$sample")
if [ "$got" != "$expect" ]; then
    echo "check_exports.sh: self-test failed; expected:"
    echo "$expect"
    echo "got:"
    echo "$got"
    exit 1
fi

# ---- the public headers against the library's dynamic symbols
cd "$src"
headers=()
for h in core/*.h ops/ops.h nn/nn.h optim/optim.h text/text.h dist/dist.h; do
    case "$h" in *_internal.h) continue ;; esac
    headers+=("$h")
done
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
if [ "$n_api" -lt 100 ]; then
    echo "only $n_api TG_API functions found in ${#headers[@]} headers: the parser is broken"
    fail=1
fi
[ "$fail" -eq 0 ] || exit 1
echo "$n_exp symbols exported, the $n_api TG_API functions of ${#headers[@]} public headers and nothing else"
