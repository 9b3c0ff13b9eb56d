#!/usr/bin/env bash
# mpirun as the tests run it: NP processes on this machine.
#   tests/mpi_run.sh HAVE_MPI NP PROGRAM [ARGS...]
# HAVE_MPI is CMake's MPI_C_FOUND; without MPI, or without Open MPI's
# mpirun on the PATH, the test is skipped (exit 77). The flags:
#   --oversubscribe        more ranks than cores (3 ranks on a 2-core machine)
#   --bind-to none         oversubscribed ranks must not share one pinned core
#   mpi_yield_when_idle    a rank waiting in a collective yields its core
#                          instead of spinning against the ranks computing
#   btl_vader_single_copy_mechanism none
#                          shared memory without process_vm_readv, which
#                          containers often forbid (ptrace rules); speed
#                          does not matter here
#   --allow-run-as-root    CI runs as root, which Open MPI refuses otherwise
#   -x VAR                 the sanitizer and BLAS settings reach every rank
# Extra mpirun arguments may come in MPIRUN_ARGS (e.g. an MPMD tail is
# passed by the caller after PROGRAM as ': -np 1 prog ...').
set -u
have=$1 np=$2
shift 2
# under CI=true, where scripts/deps.sh has installed Open MPI, a skip is a failure
skip() { echo "$1: $([ "${CI:-}" = true ] && echo 'FAILED under CI=true (scripts/deps.sh installs Open MPI)' || echo skipped)"; [ "${CI:-}" = true ] && exit 1; exit 77; }
case "$have" in 1 | ON | TRUE | YES | Y | on | true) ;; *) skip "tapegrad was built without MPI" ;; esac
command -v mpirun >/dev/null || skip "no mpirun on the PATH (Debian: openmpi-bin)"
mpirun --version 2>/dev/null | grep -q "Open MPI" || skip "mpirun is not Open MPI's"
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_mpi_yield_when_idle=1
xs=()
for v in ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS OPENBLAS_NUM_THREADS; do
  [ -n "${!v:-}" ] && xs+=(-x "$v")
done
# shellcheck disable=SC2086   # MPIRUN_ARGS is a list of words
exec mpirun --allow-run-as-root --oversubscribe --bind-to none "${xs[@]}" ${MPIRUN_ARGS:-} -np "$np" "$@"
