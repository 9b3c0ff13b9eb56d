#!/usr/bin/env bash
# The public API keeps one convention (docs/design.md, "The API
# convention"): over every TG_API declaration of the public headers
# (public_api.sh), it fails naming each function that breaks a rule:
#   err      no (char *err, size_t errlen) pair: the error is a
#            `tg_error *err`, and it is the last parameter (core/error.h's
#            own functions take the tg_error they write first)
#   sticky   no getter of a kept message (NAME_error, NAME_message) but the
#            ops' channel, tg_graph_error and tg_graph_clear_error
#   free     tg_X_free returns void and takes the object alone, and frees
#            an object the library allocates: some function returns its
#            type (a struct the caller owns is emptied by tg_X_release);
#            no tg_X_close, _destroy or _delete that returns nothing
#   release  tg_X_release returns void and takes the struct alone
#   new      tg_X_new returns a pointer (a heap object)
#   init     tg_X_init takes the struct it fills first
#   bool     a predicate (tg_X_is_..., _has_..., _adds_..., _same, _fits)
#            returns bool
#   kind     a getter of a kind (tg_X_kind_of, _format_of, _type) returns
#            its enum, not int
#   failure  one failure value per return type: the comment above an
#            int function names no -2, a double's no -1 (NAN)
#   params   at most 6 parameters besides err (more: an options struct)
# A breach listed in EXEMPT below, with its reason, is allowed; an entry
# that matches no breach any more is named in a note (its line is to be
# deleted), without failing. Before the real headers it runs the checker
# on a sample with known answers, so a parser that silently matches
# nothing fails.
#   tests/check_api_convention.sh [SOURCE_DIR]
set -euo pipefail
src=${1:-$(dirname "$0")/..}
cd "$src"
. tests/public_api.sh

# Allowed breaches, one per line: "NAME RULE: reason" (no single quotes).
EXEMPT='
tg_attention params: an op: its inputs are the graph and tensors (q, k, v), the head count, flags and the queries position, and its error is the graph
tg_rope params: an op: the graph, the tensor, its head size, the pairs turned, the first position, theta and the pairing, and its error is the graph
'

# awk: one line per declaration, "name|return type|param1|param2|...|#comment"
# (the comment directly above it, or on its lines, flattened)
decls() {
    awk '
    function strip(s,    out, i, c2) {
        out = ""; i = 1
        while (i <= length(s)) {
            c2 = substr(s, i, 2)
            if (incomment) {
                if (c2 == "*/") { incomment = 0; i += 2; continue }
                note = note substr(s, i, 1); i++; continue
            }
            if (c2 == "/*") { incomment = 1; i += 2; continue }
            if (c2 == "//") { note = note " " substr(s, i + 2); break }
            out = out substr(s, i, 1); i++
        }
        return out
    }
    FNR == 1 { incomment = 0; buf = ""; note = "" }
    {
        if (buf == "") { was = incomment; before = note }
        code = strip($0)
        if (buf == "" && code !~ /^TG_API[ \t]/) {
            if (code ~ /[^ \t]/) note = ""   # code between: that comment is not about this one
            else note = note " "
            next
        }
        buf = buf " " code
        if (buf !~ /;/) next
        d = buf; buf = ""
        sub(/__attribute__.*$/, "", d); sub(/;.*$/, "", d)
        gsub(/[ \t]+/, " ", d); sub(/^ *TG_API /, "", d)
        open = index(d, "(")
        head = substr(d, 1, open - 1); args = substr(d, open + 1)
        sub(/\) *$/, "", args)
        n = split(head, w, " "); name = w[n]; ret = ""
        for (i = 1; i < n; i++) ret = ret (i > 1 ? " " : "") w[i]
        while (name ~ /^\*/) { ret = ret "*"; name = substr(name, 2) }
        out = name "|" ret
        if (args != "void") {
            depth = 0; cur = ""
            for (i = 1; i <= length(args); i++) {
                c = substr(args, i, 1)
                if (c == "(" || c == "[") depth++
                if (c == ")" || c == "]") depth--
                if (c == "," && depth == 0) { out = out "|" cur; cur = ""; continue }
                cur = cur c
            }
            out = out "|" cur
        }
        gsub(/\| +/, "|", out); gsub(/ +\|/, "|", out)
        gsub(/[ \t|]+/, " ", note)
        print out "|#" note
        note = ""
    }
    ' "$@"
}

# the rules over decls' lines: "NAME RULE: why" per breach
rules() {
    awk -F'|' '
    { lines[NR] = $0 }
    # the types some function returns (a heap object of that type exists)
    {
        r = $2; sub(/^const /, "", r)
        if (r ~ /\*$/) { sub(/ *\*$/, "", r); made[r] = 1 }
    }
    END {
        for (k = 1; k <= NR; k++) {
            nf = split(lines[k], f, "|")
            note = f[nf]; sub(/^#/, "", note); nf--
            name = f[1]; ret = f[2]; np = nf - 2
            haserr = 0; pair = 0
            for (i = 3; i <= nf; i++) {
                if (f[i] ~ /size_t errlen/ || f[i] ~ /char \*err$/) pair = 1
                if (f[i] ~ /tg_error \*/) {
                    haserr = 1
                    if (i != nf && name !~ /^tg_error_/) printf "%s err: tg_error * is not the last parameter\n", name
                }
            }
            if (pair) printf "%s err: takes a (char *err, size_t errlen) pair\n", name
            if (name ~ /_(error|message)$/ && name != "tg_graph_error" && name != "tg_graph_clear_error" &&
                name !~ /^tg_error_/)
                printf "%s sticky: a getter of a kept message (report through tg_error *err)\n", name
            if (name ~ /_free$/ && (ret != "void" || np != 1)) printf "%s free: returns %s and takes %d parameters\n", name, ret, np
            if (name ~ /_free$/ && np == 1) {
                t = f[3]; sub(/^const /, "", t); sub(/ *\*.*$/, "", t)
                if (t != "void" && !(t in made))
                    printf "%s free: no function returns a %s *, so it empties a caller struct: tg_X_release\n", name, t
            }
            if (name ~ /_(close|destroy|delete)$/ && ret == "void")
                printf "%s free: a heap object is freed by tg_X_free\n", name
            if (name ~ /_release$/ && (ret != "void" || np != 1)) printf "%s release: returns %s and takes %d parameters\n", name, ret, np
            if (name ~ /_new$/ && ret !~ /\*$/) printf "%s new: returns %s, not a pointer\n", name, ret
            if (name ~ /_init$/ && (np < 1 || f[3] !~ /\*/)) printf "%s init: its first parameter is not the struct it fills\n", name
            if ((name ~ /_(is|has|adds)_/ || name ~ /_(same|fits)$/) && ret != "bool")
                printf "%s bool: a predicate returns %s\n", name, ret
            if (name ~ /_(kind_of|format_of|type)$/ && ret == "int")
                printf "%s kind: a kind is returned as int, not its enum\n", name
            if ((ret == "int" || ret == "int64_t") && note ~ /(^|[ (;,])-2([ ,.;)]|$)/)
                printf "%s failure: its comment gives -2 (an int fails with -1 alone)\n", name
            if (ret == "double" && note ~ /(^|[ (;,])-1([ ,.;)]|$)/)
                printf "%s failure: its comment gives -1 (a double fails with NAN)\n", name
            if (np - haserr > 6) printf "%s params: %d parameters besides err\n", name, np - haserr
        }
    }'
}

# breaches not in EXEMPT, and on stderr a note for each entry no breach matches
judge() {
    awk -v exempt="$EXEMPT" '
    BEGIN {
        n = split(exempt, e, "\n")
        for (i = 1; i <= n; i++) {
            if (e[i] == "") continue
            split(e[i], kv, ":"); ok[kv[1]] = 1
        }
    }
    { k = $1 " " $2; sub(/:$/, "", k); if (k in ok) { used[k] = 1; next } print }
    END {
        for (k in ok) if (!(k in used)) printf "note: EXEMPT lists \"%s\", which is no breach now: delete its line\n", k > "/dev/stderr"
    }'
}

selftest() {
    local sample got expect
    sample=$(mktemp)
    cat > "$sample" <<'SAMPLE'
/* TG_API int tg_in_comment(char *err, size_t errlen); */
TG_API int tg_a_load(const char *path, char *err, size_t errlen);
/* a made one */
TG_API tg_x *tg_x_new(int n,
                      tg_error *err);
TG_API int tg_x_free(tg_x *x);
TG_API int tg_x_is_empty(const tg_x *x);
TG_API const char *tg_x_error(const tg_x *x);
TG_API int tg_y_new(tg_y *y, tg_error *err, int k);
TG_API int tg_seven(int a, int b, int c, int d, int e, int f, int g, tg_error *err);
TG_API void tg_x_release(tg_x *x);
TG_API void tg_z_free(tg_z *z);   /* nothing makes a tg_z */
TG_API void tg_x_close(tg_x *x);
TG_API int tg_x_kind_of(const tg_x *x);
/* 0, -1, or -2 when the second file is bad */
TG_API int tg_two(const char *a);
/* the mean, or -1 for an empty x */
TG_API double tg_mean_of(const tg_x *x);
TG_API int tg_error_fill(tg_error *e, const char *s);
SAMPLE
    expect="tg_a_load err: takes a (char *err, size_t errlen) pair
tg_x_free free: returns int and takes 1 parameters
tg_x_is_empty bool: a predicate returns int
tg_x_error sticky: a getter of a kept message (report through tg_error *err)
tg_y_new err: tg_error * is not the last parameter
tg_y_new new: returns int, not a pointer
tg_seven params: 7 parameters besides err
tg_z_free free: no function returns a tg_z *, so it empties a caller struct: tg_X_release
tg_x_close free: a heap object is freed by tg_X_free
tg_x_kind_of kind: a kind is returned as int, not its enum
tg_two failure: its comment gives -2 (an int fails with -1 alone)
tg_mean_of failure: its comment gives -1 (a double fails with NAN)"
    got=$(decls "$sample" | rules)
    rm -f "$sample"
    if [ "$got" != "$expect" ]; then
        printf 'check_api_convention.sh: the self-test failed; expected:\n%s\ngot:\n%s\n' "$expect" "$got"
        return 1
    fi
}

selftest
declared_selftest
# shellcheck disable=SC2046
all=$(decls $(public_headers) | rules)
bad=$(echo "$all" | judge)
n=$(decls $(public_headers) | wc -l)
if [ -n "$bad" ]; then
    echo "$bad"
    echo "check_api_convention: $(echo "$bad" | wc -l) breaches of docs/design.md's convention in $n public functions"
    exit 1
fi
echo "check_api_convention: $n public functions follow the convention ($(echo "$all" | grep -c . || true) exempt)"
