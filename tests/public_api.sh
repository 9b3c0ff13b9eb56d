# The public headers and the functions they declare, for the checks that
# compare them with something (sourced by check_exports.sh,
# check_api_rows.sh and check_header_docs.sh; not run on its own).
#
# Public headers: core/*.h except *_internal.h, ops/ops.h, nn/nn.h, nn/models.h,
# optim/optim.h, text/text.h, train/train.h, train/generate.h, train/sampler.h, pictures/pictures.h, train/run.h, train/run_settings.h,
# train/corpus.h, formats/formats.h (libtapegrad), distributed/dist.h
# (libtapegrad_dist).

# Prints the public headers, relative to the source directory (the
# current directory): all of them, or with $1 "tapegrad" or "dist" those
# of that library.
public_headers() {
    local h list
    case "${1:-all}" in
        tapegrad) list="core/*.h ops/ops.h nn/nn.h nn/models.h optim/optim.h text/text.h train/train.h train/generate.h train/sampler.h pictures/pictures.h train/run.h train/run_settings.h train/corpus.h formats/formats.h" ;;
        dist) list="distributed/dist.h" ;;
        *) list="core/*.h ops/ops.h nn/nn.h nn/models.h optim/optim.h text/text.h train/train.h train/generate.h train/sampler.h pictures/pictures.h train/run.h train/run_settings.h train/corpus.h formats/formats.h distributed/dist.h" ;;
    esac
    # shellcheck disable=SC2086   # the globs are meant
    for h in $list; do
        case "$h" in *_internal.h) continue ;; esac
        echo "$h"
    done
}

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

# Runs declared on a small sample with known answers, so that a parser
# that silently matches nothing fails; prints what differs and returns 1.
declared_selftest() {
    local sample expect got
    sample=$(mktemp)
    cat > "$sample" <<'SAMPLE'
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
SAMPLE
    expect="api tg_a
api tg_b
bare $sample:5: tg_c
bare $sample:13: tg_f"
    got=$(declared "$sample")
    rm -f "$sample"
    if [ "$got" != "$expect" ]; then
        echo "public_api.sh: the header parser's self-test failed; expected:"
        echo "$expect"
        echo "got:"
        echo "$got"
        return 1
    fi
}
