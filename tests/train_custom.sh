#!/usr/bin/env bash
# examples/train_custom: a model of one's own trained by the library's run
# (train/run.h), its messages the library's.
#   tests/train_custom.sh TRAIN_CUSTOM SOURCE_DIR MPI_FOUND
# 1. --stop-at, then --resume --out DIR alone (the checkpoint records the
#    data, by absolute path and identity, and the step count; resumed from
#    another directory): the uninterrupted run's last.safetensors, byte for
#    byte; other data given at resume is refused, a moved text is named
# 2. kill -9 after a checkpoint, then --resume alone: the same bytes
# 3. token files (nanoGPT's uint16 ids of the text's bytes, a val file) train and resume (alone) too
# 4. mpirun -np 2: the loss lines of the one-process run (skipped without
#    MPI, failed without it under CI=true, as tests/mpi_run.sh does). Two
#    processes sum their gradients and losses in another order, so the
#    values agree within f32 rounding (tiny_gpt_mpi.sh checks 1e-5
#    relative on full-precision metrics); printed to 4 decimals, a value
#    near a rounding boundary may print one unit apart, so each number
#    may differ by at most that one unit of its last digit.
# 5. bad input: a clear message and exit 1, nothing written
set -u
bin=$1 src=$2 have_mpi=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
ok() { echo "ok: $1"; }
bad() { echo "FAILED: $1"; fail=1; }

cat "$src"/docs/*.md >"$work/text.txt"   # a text the repository ships (~200 KB)
run() { "$bin" --data "$work/text.txt" --steps 300 "$@"; }

run --out "$work/a" >"$work/a.log" 2>&1 || bad "the uninterrupted run: $(cat "$work/a.log")"
grep -q "^step 300: loss .* bits per byte)$" "$work/a.log" && ok "300 steps: $(tail -1 "$work/a.log")" ||
  bad "no step 300 line with bits per byte"
first=$(sed -n 's/^step 100: .*val \([0-9.]*\).*/\1/p' "$work/a.log")
last=$(sed -n 's/^step 300: .*val \([0-9.]*\).*/\1/p' "$work/a.log")
awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a) }' && ok "it learns: val $first -> $last" || bad "val $first -> $last"

# 1. --stop-at 150 (a checkpoint there, as if interrupted; the text named
# relative to the run's directory), then --resume --out DIR alone, from elsewhere
(cd "$work" && "$bin" --data text.txt --steps 300 --out b --stop-at 150) >/dev/null 2>&1 &&
  (cd / && "$bin" --resume --out "$work/b") >"$work/b.log" 2>&1 || bad "stop and resume: $(cat "$work/b.log")"
cmp -s "$work/a/last.safetensors" "$work/b/last.safetensors" && ok "--stop-at 150 and --resume --out DIR alone: the same bytes" ||
  bad "--stop-at 150 and --resume --out DIR end differently: $(cat "$work/b.log")"
grep -q "^step 100" "$work/b.log" && bad "the resumed run ran step 100 again"
grep -q "^step 300:" "$work/b.log" || bad "the resumed run did not run to the recorded 300 steps: $(cat "$work/b.log")"
# the same data named again is taken; other data is another run's
(cd "$work" && "$bin" --data text.txt --steps 300 --out b2 --stop-at 150) >/dev/null 2>&1
cp "$work/text.txt" "$work/copy.txt"
"$bin" --resume --out "$work/b2" --data "$work/copy.txt" >"$work/b2.log" 2>&1 &&
  [ "$(grep '^step 300:' "$work/b2.log")" = "$(grep '^step 300:' "$work/a.log")" ] &&
  head -c 65536 "$work/b2/last.safetensors" | tr -d '\000' | grep -qF "\"train.data\":\"$work/copy.txt\"" &&
  ok "--resume with --data naming a copy of the run's text: the same step 300, the copy recorded" ||
  bad "--resume --data copy: $(cat "$work/b2.log")"
head -c 100000 "$work/text.txt" >"$work/other.txt"
(cd "$work" && "$bin" --data text.txt --steps 300 --out b3 --stop-at 150) >/dev/null 2>&1
before=$(cksum <"$work/b3/last.safetensors")
out=$("$bin" --resume --out "$work/b3" --data "$work/other.txt" 2>&1)
[ $? -eq 1 ] && grep -qF "train_custom: $work/other.txt (100000 bytes, checksum " <<<"$out" &&
  grep -qF ") is not the text the run was trained on: $work/text.txt (" <<<"$out" && [ "$(cksum <"$work/b3/last.safetensors")" = "$before" ] &&
  ok "--resume --data with another text: $out" || bad "--resume --data other: $out"
out=$("$bin" --resume --out "$work/b3" --data-tokens "$work/other.txt" 2>&1)
[ $? -eq 1 ] && grep -qF "train_custom: --data-tokens $work/other.txt: the run in $work/b3 trains on a text, not on token files" <<<"$out" &&
  ok "--resume --data-tokens for a text's run: $out" || bad "--resume --data-tokens on a text run: $out"
mv "$work/text.txt" "$work/moved.txt"
out=$("$bin" --resume --out "$work/b3" 2>&1)
[ $? -eq 1 ] && grep -qF "train_custom: the run's text: $work/text.txt: No such file or directory (give its new place with --data)" <<<"$out" &&
  ok "--resume after the text moved: $out" || bad "--resume after the text moved: $out"
mv "$work/moved.txt" "$work/text.txt"

# 2. kill -9 once a checkpoint exists (step 100 or 200), then --resume
"$bin" --data "$work/text.txt" --out "$work/c" --steps 300 >/dev/null 2>&1 &   # (the program itself: its pid)
pid=$!
for _ in $(seq 1 2000); do [ -f "$work/c/last.safetensors" ] && break; sleep 0.005; done
kill -9 $pid 2>/dev/null
killed=$?
wait $pid 2>/dev/null
"$bin" --resume --out "$work/c" >/dev/null 2>&1 || bad "resume after kill -9"
cmp -s "$work/a/last.safetensors" "$work/c/last.safetensors" &&
  ok "kill -9 ($([ $killed -eq 0 ] && echo "during the run" || echo "after it ended")) and --resume: the same bytes" ||
  bad "kill -9 and --resume end differently"

# 3. token files: the text's bytes as uint16 ids, the last 10% a val file
python3 - "$work/text.txt" "$work/train.bin" "$work/val.bin" <<'EOF'
import struct, sys
b = open(sys.argv[1], 'rb').read()
cut = len(b) * 9 // 10
open(sys.argv[2], 'wb').write(struct.pack('<%dH' % cut, *b[:cut]))
open(sys.argv[3], 'wb').write(struct.pack('<%dH' % (len(b) - cut), *b[cut:]))
EOF
tok() { "$bin" --data-tokens "$work/train.bin" --val-tokens "$work/val.bin" --vocab-size 256 --steps 200 "$@"; }
tok --out "$work/t" >"$work/t.log" 2>&1 && grep -q "^step 200: loss [0-9.]*, train [0-9.]*, val [0-9.]*$" "$work/t.log" &&
  ok "token files: $(tail -1 "$work/t.log")" || bad "token files: $(cat "$work/t.log")"
tok --out "$work/u" --stop-at 50 >/dev/null 2>&1 && "$bin" --resume --out "$work/u" >/dev/null 2>&1 &&
  cmp -s "$work/t/last.safetensors" "$work/u/last.safetensors" && ok "token files resume (--resume --out DIR alone): the same bytes" ||
  bad "token files: stop and resume end differently"
out=$("$bin" --resume --out "$work/u" --val-tokens "$work/train.bin" 2>&1)
[ $? -eq 1 ] && grep -qF "train_custom: --val-tokens $work/train.bin (" <<<"$out" && grep -qF ") is not the token file the run was trained on: $work/val.bin (" <<<"$out" &&
  ok "--resume with another val file: $out" || bad "--resume --val-tokens other: $out"

# 4. two processes: the losses of one
MPIRUN_ARGS= bash "$src/tests/mpi_run.sh" "$have_mpi" 2 "$bin" --data "$work/text.txt" --steps 300 --out "$work/m" \
  >"$work/m.log" 2>&1
rc=$?
if [ $rc -eq 77 ]; then
  cat "$work/m.log"
  [ $fail -eq 0 ] && exit 77
elif [ $rc -ne 0 ]; then
  bad "mpirun -np 2: $(cat "$work/m.log")"
else
  grep "^step" "$work/a.log" >"$work/a.steps"
  grep "^step" "$work/m.log" >"$work/m.steps"
  same=$(paste -d'|' "$work/a.steps" "$work/m.steps" | awk -F'|' '
    { na = split($1, a, /[ (]+/); nb = split($2, b, /[ (]+/)
      if (na != nb) { bad++; next }
      for (i = 1; i <= na; i++)
        if (a[i] != b[i]) {   # numbers: at most one unit of the last printed digit apart
          u = a[i]; sub(/,$/, "", u); d = index(u, ".") ? length(u) - index(u, ".") : 0
          if (!(a[i] ~ /^[0-9.]+,?$/ && b[i] ~ /^[0-9.]+,?$/) || (a[i] - b[i]) ^ 2 > (1.5 * 10 ^ -d) ^ 2) bad++
        }
    }
    END { print (NR > 0 && !bad) ? "yes" : "no" }')
  grep -q "2 processes" "$work/m.log" && [ "$(wc -l <"$work/a.steps")" = "$(wc -l <"$work/m.steps")" ] &&
    [ "$same" = yes ] && ok "mpirun -np 2: the one-process run's $(wc -l <"$work/a.steps") loss lines (within one unit of the last digit)" ||
    bad "mpirun -np 2 differs: $(diff "$work/a.steps" "$work/m.steps")"
fi

# 5. bad input
for args in "--steps x" "--steps" "--data $work/none.txt" "--bogus 1" "--data-tokens $work/train.bin" ""; do
  # shellcheck disable=SC2086   # the words are meant
  out=$("$bin" $args --out "$work/bad" 2>&1)
  rc=$?
  [ $rc -eq 1 ] && echo "$out" | grep -q "^train_custom: " && [ ! -e "$work/bad/last.safetensors" ] &&
    ok "'$args': $out" || bad "'$args' gave exit $rc: $out"
done

[ $fail -eq 0 ] && echo "train_custom: all passed"
exit $fail
