#!/usr/bin/env bash
# Runs one of README.md's programs (readme_example_<n>) for CTest.
#   tests/readme_run.sh PROGRAM FILE...
# Fails when PROGRAM is missing or older than any FILE (its source, cut
# out of README.md, and the library it links): what would run is then not
# what README.md says, as when the block stopped compiling and the build
# kept the last program that did. Otherwise exits with PROGRAM's status.
set -u
prog=$1
shift
if [ ! -x "$prog" ]; then
    echo "readme_run.sh: $prog was not built (does its block in README.md compile?)"
    exit 1
fi
for f in "$@"; do
    if [ ! -e "$f" ]; then
        echo "readme_run.sh: $f does not exist"
        exit 1
    fi
    if [ "$prog" -ot "$f" ]; then
        echo "readme_run.sh: $prog is older than $f: rebuild it (does its block in README.md compile?)"
        exit 1
    fi
done
"$prog"
rc=$?
[ $rc -eq 0 ] || echo "readme_run.sh: $prog exited $rc"
exit $rc
