#!/usr/bin/env bash
# Runs a test on one kernel path (core/cpu.h): TG_ISA=ISA in its
# environment. Exits 77 (CTest: skipped, with the reason printed) when
# this CPU does not offer that path, as tiny_gpt --version reports it.
#   tests/isa_run.sh ISA path/to/tiny_gpt command [args...]
set -uo pipefail
isa=$1 tiny_gpt=$2
shift 2
path=$(TG_ISA=$isa "$tiny_gpt" --version | sed -n 's/^kernel path: \([a-z0-9]*\) .*/\1/p')
if [ "$path" != "$isa" ]; then
  echo "skipped: this CPU has no $isa kernel path ($("$tiny_gpt" --version | grep '^kernel path'))"
  exit 77
fi
echo "kernel path: $path"
TG_ISA=$isa exec "$@"
