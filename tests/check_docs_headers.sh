#!/usr/bin/env bash
# docs/README.md names every public header (tests/public_api.sh's
# public_headers) as `dir/name.h`, so a header added to the API cannot be
# left out of the reference list a newcomer reads.
#   tests/check_docs_headers.sh SOURCE_DIR
# Prints each header docs/README.md does not name and exits 1.
set -euo pipefail
cd "$1"
. tests/public_api.sh
headers=$(public_headers)
n=$(wc -w <<<"$headers")
if [ "$n" -lt 10 ]; then   # the list is ~25: fewer means public_headers broke, not that all is well
    echo "check_docs_headers.sh: public_headers listed only $n headers"
    exit 1
fi
missing=0
for h in $headers; do
    if ! grep -qF "\`$h\`" docs/README.md; then
        echo "docs/README.md does not name the public header $h"
        missing=$((missing + 1))
    fi
done
[ $missing -eq 0 ] && echo "docs/README.md names all $n public headers"
[ $missing -eq 0 ]
