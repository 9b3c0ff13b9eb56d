#!/usr/bin/env bash
# Every function declared in a public header must have a comment directly
# above it (the line before its first line is a comment, not code) or on
# one of its own lines. Public headers: core/*.h except *_internal.h,
# ops/ops.h, nn/nn.h, optim/optim.h, text/text.h, train/train.h,
# train/generate.h, pictures/pictures.h, formats/formats.h,
# distributed/dist.h, tapegrad.h (tests/public_api.sh lists them).
#   tests/check_header_docs.sh [SOURCE_DIR]
# Prints each undocumented function as file:line: name and exits 1.
# Before looking at the real headers it runs the checker on a small sample
# with known answers, so a parser that silently matches nothing fails.
set -euo pipefail
src=${1:-$(dirname "$0")/..}
cd "$src"

# awk: prints "file:line: name" for each undocumented function and, at the
# end, "checked N" on stderr-free stdout as the last line.
check() {
    awk '
    function strip(s,    out, i, c2) {
        # removes comments from s, tracking /* */ across lines; sets had_comment
        out = ""
        i = 1
        while (i <= length(s)) {
            c2 = substr(s, i, 2)
            if (incomment) {
                if (c2 == "*/") { incomment = 0; i += 2 } else i++
                continue
            }
            if (c2 == "/*") { incomment = 1; had_comment = 1; i += 2; continue }
            if (c2 == "//") { had_comment = 1; break }
            out = out substr(s, i, 1)
            i++
        }
        return out
    }
    FNR == 1 { incomment = 0; prev_comment_only = 0; indecl = 0 }
    {
        had_comment = incomment
        code = strip($0)
        has_code = code ~ /[^ \t]/
        if (indecl) {
            if (had_comment) documented = 1
            if (code ~ /[;{]/) {
                indecl = 0
                if (!documented) { printf "%s:%d: %s has no comment\n", FILENAME, start, name; bad++ }
            }
        } else if (has_code && code ~ /^[A-Za-z_]/ && code !~ /^(typedef|#|struct[ \t]+[A-Za-z_0-9]+[ \t]*\{)/ &&
                   match(code, /[A-Za-z_][A-Za-z_0-9]*[ \t]*\(/)) {
            name = substr(code, RSTART, RLENGTH)
            sub(/[ \t]*\($/, "", name)
            checked++
            start = FNR
            documented = prev_comment_only || had_comment
            if (code ~ /[;{]/) {
                if (!documented) { printf "%s:%d: %s has no comment\n", FILENAME, start, name; bad++ }
            } else indecl = 1
        }
        prev_comment_only = had_comment && !has_code
    }
    END { printf "checked %d\n", checked; exit bad ? 1 : 0 }
    ' "$@"
}

# ---- self-test on a sample with known answers
sample=$(mktemp)
trap 'rm -f "$sample"' EXIT
cat > "$sample" <<'EOF'
/* documented above */
int tg_a(void);
int tg_b(int x);   /* documented on its line */
int tg_c(void);
typedef int (*tg_fn)(int);
/* a comment, then a blank line */

void tg_d(int x,
          int y);
int tg_e(int x,
         int y);   /* on its last line */
static inline int tg_f(int x) { return x; }
/* multi-line
 * comment */
void *tg_g(void)
    __attribute__((unused));
extern "C" {
/* exported, documented */
TG_API int tg_h(int x);
TG_API void tg_i(int x,
                 int y);
}
EOF
expect="$sample:4: tg_c has no comment
$sample:8: tg_d has no comment
$sample:12: tg_f has no comment
$sample:20: tg_i has no comment
checked 9"
got=$(check "$sample" || true)
if [ "$got" != "$expect" ]; then
    echo "check_header_docs.sh: self-test failed; expected:"
    echo "$expect"
    echo "got:"
    echo "$got"
    exit 1
fi

# ---- the public headers
. tests/public_api.sh   # public_headers: the one list of them
mapfile -t headers < <(public_headers)
headers+=(tapegrad.h)
if out=$(check "${headers[@]}"); then
    echo "${out##*$'\n'} functions in ${#headers[@]} headers: every one documented"
else
    echo "$out" | sed '$d'
    echo "public functions without a comment directly above them or on their line (${out##*$'\n'})"
    exit 1
fi
