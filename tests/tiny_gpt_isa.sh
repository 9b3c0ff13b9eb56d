#!/usr/bin/env bash
# TG_ISA: --version names the kernel path in use, TG_ISA caps it at a path
# the CPU has, and a value that names no path is refused (exit 2, a
# message naming the value), never a crash or a silent default.
#   tests/tiny_gpt_isa.sh path/to/tiny_gpt
bin=$1
fails=0
ok() { echo "ok: $1"; }
bad() { echo "FAIL: $1"; fails=$((fails + 1)); }

v=$(env -u TG_ISA "$bin" --version)
best=$(sed -n 's/^kernel path: \([a-z0-9]*\) (this CPU offers \([a-z0-9]*\);.*/\1 \2/p' <<<"$v")
[ -n "$best" ] && [ "${best% *}" = "${best#* }" ] && grep -q '^tiny_gpt (tapegrad) [0-9]*\.[0-9]*\.[0-9]*$' <<<"$v" &&
  ok "--version: the version, and without TG_ISA the CPU's best path (${best% *})" || bad "--version printed: $v"
grep -q '^build: .*pcre2' <<<"$v" && ok "--version names the build's options" || bad "no build line in: $v"
rank() { case $1 in generic) echo 0 ;; avx2) echo 1 ;; avx512) echo 2 ;; *) echo 9 ;; esac; }
for isa in generic avx2 avx512; do
  got=$(TG_ISA=$isa "$bin" --version | sed -n 's/^kernel path: \([a-z0-9]*\) .*/\1/p')
  want=$isa
  [ "$(rank "$isa")" -gt "$(rank "${best% *}")" ] && want=${best% *}   # a cap above the CPU's best
  [ "$got" = "$want" ] && ok "TG_ISA=$isa runs on $got" || bad "TG_ISA=$isa: path '$got', expected '$want'"
done
for v in sse AVX2 "" avx512f; do
  err=$(TG_ISA=$v "$bin" --version 2>&1 >/dev/null)
  rc=$?
  [ $rc -eq 2 ] && [ "$err" = "tiny_gpt: TG_ISA='$v' is not a kernel path: use generic, avx2 or avx512" ] &&
    ok "TG_ISA='$v' refused" || bad "TG_ISA='$v': exit $rc, '$err'"
done
err=$(TG_ISA=bogus "$bin" train --steps 1 --out "$(mktemp -d)/x" 2>&1 >/dev/null)
[ $? -eq 2 ] && grep -q "TG_ISA='bogus'" <<<"$err" && ok "train refuses a bad TG_ISA before anything" || bad "train: $err"
[ $fails -eq 0 ] && echo "all passed" || { echo "$fails failed"; exit 1; }
