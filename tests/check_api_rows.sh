#!/usr/bin/env bash
# Every public function has a row in tests/test_api.c's table CASES (its
# bad input, the documented result, the message), or an entry in the
# file's NO_ROW list saying why not. Public functions: the TG_API
# declarations of the public headers (public_api.sh).
#   tests/check_api_rows.sh SOURCE_DIR
# Fails, naming them, for a public function with neither, a NO_ROW entry
# that names no public function, and a function a row names that
# test_api.c never calls outside the tables. Before looking at the real
# files it runs both parsers on small samples with known answers, so a
# parser that silently matches nothing fails.
set -euo pipefail
src=$1

. "$(dirname "$0")/public_api.sh"

# awk over test_api.c: "row NAME" for each row of CASES (the function its
# call string starts with), "exempt NAME" for each entry of NO_ROW,
# "call NAME" for each tg_ function called outside those two tables, and
# "bad LINE: TEXT" for a row or entry it cannot read. A row or entry
# starts a line with {" (a row may go on over the next lines).
rows() {
    awk '
    /^static const api_case CASES\[\] = \{/ { table = "row"; next }
    /^static const no_row NO_ROW\[\] = \{/ { table = "exempt"; next }
    table && /^\};/ { table = ""; next }
    table == "row" && /^[ \t]*\{"/ {
        if (match($0, /\{"tg_[A-Za-z0-9_]*\(/)) print "row " substr($0, RSTART + 2, RLENGTH - 3)
        else printf "bad %d: %s\n", FNR, $0
        next
    }
    table == "exempt" && /^[ \t]*\{"/ {
        if (match($0, /\{"tg_[A-Za-z0-9_]*", "[^"]+"\},/)) {
            name = substr($0, RSTART + 2)
            print "exempt " substr(name, 1, index(name, "\"") - 1)
        } else printf "bad %d: %s\n", FNR, $0
        next
    }
    !table {
        line = $0
        while (match(line, /tg_[A-Za-z0-9_]*\(/)) {
            print "call " substr(line, RSTART, RLENGTH - 1)
            line = substr(line, RSTART + RLENGTH)
        }
    }
    ' "$1"
}

# ---- the parsers' self-tests
declared_selftest
sample=$(mktemp)
trap 'rm -f "$sample"' EXIT
cat > "$sample" <<'EOF'
static void c_a(fx *f) { num(f, tg_a(NULL)); }
static const api_case CASES[] = {
    /* a.h */
    {"tg_a(NULL)", "0", NULL, c_a},
    {"tg_b(x, a long case)", "NULL",
     "tg_in_row(", c_b},
    {"no function", "0", NULL, c_c},
};
static const no_row NO_ROW[] = {
    {"tg_c", "takes no argument"},
    {"tg_d", ""},
};
EOF
expect="call tg_a
row tg_a
row tg_b
bad 7:     {\"no function\", \"0\", NULL, c_c},
exempt tg_c
bad 11:     {\"tg_d\", \"\"},"
got=$(rows "$sample")
if [ "$got" != "$expect" ]; then
    echo "check_api_rows.sh: the test_api.c parser's self-test failed; expected:"
    echo "$expect"
    echo "got:"
    echo "$got"
    exit 1
fi

# ---- the public headers against test_api.c
cd "$src"
mapfile -t headers < <(public_headers)
api=$(declared "${headers[@]}" | awk '$1 == "api" { print $2 }' | sort -u)
table=$(rows tests/test_api.c)
rowed=$(echo "$table" | awk '$1 == "row" { print $2 }' | sort -u)
exempt=$(echo "$table" | awk '$1 == "exempt" { print $2 }' | sort -u)
called=$(echo "$table" | awk '$1 == "call" { print $2 }' | sort -u)

fail=0
bad=$(echo "$table" | awk '$1 == "bad" { $1 = ""; print substr($0, 2) }')
if [ -n "$bad" ]; then
    echo "tests/test_api.c: rows whose call does not start with a function, or NO_ROW entries without a reason:"
    echo "$bad" | sed 's/^/  line /'
    fail=1
fi
missing=$(comm -23 <(echo "$api") <(sort -u <(echo "$rowed") <(echo "$exempt")))
if [ -n "$missing" ]; then
    echo "public functions with no row in test_api.c's CASES (add one; or, if no input can be bad, an entry in NO_ROW):"
    echo "$missing" | sed 's/^/  /'
    fail=1
fi
stale=$(comm -13 <(echo "$api") <(echo "$exempt"))
if [ -n "$stale" ]; then
    echo "in test_api.c's NO_ROW but not a TG_API function of the public headers:"
    echo "$stale" | sed 's/^/  /'
    fail=1
fi
uncalled=$(comm -23 <(echo "$rowed") <(echo "$called"))
if [ -n "$uncalled" ]; then
    echo "named by a row of test_api.c but called nowhere in it:"
    echo "$uncalled" | sed 's/^/  /'
    fail=1
fi
n_api=$(echo "$api" | grep -c . || true)
n_rows=$(echo "$table" | grep -c '^row ' || true)
if [ "$n_api" -lt 100 ] || [ "$n_rows" -lt 100 ]; then
    echo "only $n_api TG_API functions and $n_rows rows found: a parser is broken"
    fail=1
fi
[ "$fail" -eq 0 ] || exit 1
n_rowed=$(comm -12 <(echo "$api") <(echo "$rowed") | grep -c . || true)
n_exempt=$(echo "$exempt" | grep -c . || true)
echo "the $n_api TG_API functions of ${#headers[@]} public headers: $n_rowed with rows ($n_rows rows), $n_exempt in NO_ROW"
