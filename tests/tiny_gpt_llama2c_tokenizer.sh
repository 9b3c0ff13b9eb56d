#!/usr/bin/env bash
# `tiny_gpt tokenizer export` writes llama2.c's tokenizer.bin for a BPE
# tokenizer such that run.c's encoder (here the suite's own reader,
# tests/llama2c_run.c: whole characters looked up first, byte + 3 for the
# rest, then the best-scoring adjacent pair merged again and again) gives
# the ids tapegrad's encoder gives, BOS and the " " run.c puts in front
# included, on text of many kinds: English, other scripts, emoji, runs of
# spaces and newlines, invalid UTF-8, random bytes. Pieces run.c cannot
# hold are refused with the reason.
#   tests/tiny_gpt_llama2c_tokenizer.sh path/to/tiny_gpt path/to/st_edit path/to/llama2c_run
. "$(dirname "$0")/tiny_gpt_lib.sh"
reader=$3

# a training text with words of several scripts, emoji, tabs, space and
# newline runs and invalid bytes among English
words=(the cat sat on a mat and then ran to the door of her house while it rained
       "caf$(printf '\xc3\xa9')" "na$(printf '\xc3\xaf')ve" "$(printf '\xe2\x82\xac')42" "$(printf '\xf0\x9f\x98\x80')"
       "$(printf '\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e')" "$(printf '\xd0\xbc\xd0\xb8\xd1\x80')" "$(printf '\xce\xb1\xce\xb2')"
       "x$(printf '\x80\x80')" "$(printf '\xff\xfe')" "$(printf '\xe2\x82')" "tab$(printf '\t')bed" "<unk" "k>")
RANDOM=7
{
  for line in $(seq 1 600); do
    n=$((RANDOM % 12 + 3)); s=""
    for i in $(seq 1 $n); do s+="${words[RANDOM % ${#words[@]}]}"; [ $((RANDOM % 5)) -eq 0 ] && s+="  " || s+=" "; done
    printf '%s' "$s"; [ $((RANDOM % 4)) -eq 0 ] && printf '\n\n\n' || printf '\n'
  done
} >"$work/text"
tok=$work/tok.safetensors
"$bin" tokenizer train --data "$work/text" --vocab-size 700 --min-count 2 --out "$tok" >/dev/null 2>&1 &&
  "$bin" tokenizer export --tokenizer "$tok" --out "$work/tokenizer.bin" >/dev/null 2>&1 &&
  ok "train and export a BPE tokenizer with $("$bin" tokenizer info --tokenizer "$tok" | grep -o '[0-9]* merges')" ||
  bad "train and export"

same() {   # NAME FILE: run.c's ids for FILE equal 1 followed by tapegrad's ids for " " + FILE
  local want got
  if [ -s "$2" ]; then want="1 $({ printf ' '; cat "$2"; } | "$bin" tokenizer encode --tokenizer "$tok")"
  else want=1; fi
  got=$("$reader" --encode "$work/tokenizer.bin" <"$2")
  if [ -n "$got" ] && [ "$got" = "$want" ]; then ok "$1: the same $(wc -w <<<"$got") ids"
  else bad "$1: run.c's encoder gave '${got:0:200}', tapegrad '${want:0:200}'"; fi
}
head -c 4000 "$work/text" >"$work/a"; same "the training text's start" "$work/a"
tail -c 4000 "$work/text" >"$work/b"; same "its end" "$work/b"
head -c 3000 /dev/urandom | tr -d '\000' >"$work/r1"; same "random bytes" "$work/r1"
head -c 3000 /dev/urandom | tr -d '\000' | tr '\200-\377' 'a-z \n\t\303\251\342\202\254\360\237\230\200' >"$work/r2"
same "random letters, spaces and UTF-8 bytes" "$work/r2"
printf '' >"$work/e"; same "the empty text" "$work/e"
for s in '\xc3\xa9\x80' 'a\x80\x80 x' '\x80\xc3\xa9 caf\xc3\xa9' '\xe2\x82 \xe2\x82\xac' '\xf0\x9f\x98\x80\xf0\x9f\x98\x80!' \
         '   \n\n\n  the' '\tthe\t cat' '<unk> <unk' '\xff\xc3\xa9' 'caf\xc3' "$(printf 'the %.0s' $(seq 1 300))"; do
  printf "$s" >"$work/s"; same "'${s:0:24}'" "$work/s"
done

# a text where joining part of a character to a space would win: " \xC3"
# is the most frequent pair, then é; run.c looks é up whole, so without
# the trainer's rule it would give ' ' é where tapegrad gives ' \xC3' A9
for i in $(seq 40); do printf '\xc3\xa9\xc3\xa9\xc3\xa9 \xc3\xb2 \xc3\xb3 \xc3\xb4 \xc3\xb5 \xc3\xb6\n'; done >"$work/acc"
tok=$work/acc.safetensors
"$bin" tokenizer train --data "$work/acc" --vocab-size 300 --out "$tok" >/dev/null 2>&1 &&
  "$bin" tokenizer export --tokenizer "$tok" --out "$work/tokenizer.bin" >/dev/null 2>&1 || bad "train and export (accents)"
for s in ' \xc3\xa9' '\xc3\xa9 \xc3\xb2\xc3\xa9' 'x \xc3\xa9\xc3\xa9 \xc3\xb6'; do
  printf "$s" >"$work/s"; same "accents: '$s'" "$work/s"
done

# what run.c's file cannot hold is refused, naming the piece
printf '\000\000\000 ab\000\000 ' >"$work/nul"; for i in $(seq 8); do cat "$work/nul" "$work/nul" >"$work/nul2"; mv "$work/nul2" "$work/nul"; done
"$bin" tokenizer train --data "$work/nul" --vocab-size 300 --out "$work/nul.safetensors" >/dev/null 2>&1
expect_fail "a piece with a NUL byte" "holds a NUL byte, which run.c's C strings cannot" \
  "$bin" tokenizer export --tokenizer "$work/nul.safetensors" --out "$work/x.bin"
# (pieces of letters and punctuation together: --words spaces)
for i in $(seq 200); do printf '<unk>\n'; done >"$work/unk"
"$bin" tokenizer train --data "$work/unk" --vocab-size 300 --words spaces --out "$work/unk.safetensors" >/dev/null 2>&1
expect_fail "a piece spelling <unk>" "is \"<unk>\", which run.c's file spells id 0" \
  "$bin" tokenizer export --tokenizer "$work/unk.safetensors" --out "$work/x.bin"
for b in $(seq 0 255); do printf "$(printf '\\%03o' "$b")" | base64 | tr -d '\n'; echo " $b"; done >"$work/small.tiktoken"
expect_fail "GPT-2's kind of tokenizer" "only tapegrad's BPE maps onto it" \
  "$bin" tokenizer export --tokenizer "$work/small.tiktoken" --out "$work/x.bin"
[ ! -e "$work/x.bin" ] && ok "nothing written when refused" || bad "a refused export left $work/x.bin"
finish
