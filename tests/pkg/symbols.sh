#!/usr/bin/env bash
# symbols.sh LIBSTRIX_SO LIBSTRIX_A - every symbol the installable libraries export carries the
# strix_ prefix: the dynamic symbols libstrix.so defines, and the global symbols libstrix.a
# defines (its internal cpu_*, lrp_*, ... are made local by the build). Fails naming the others.
set -uo pipefail
so=$1 a=$2
status=0
# check_prefix FILE WHAT NM-FLAGS...: every symbol nm lists for FILE starts with strix_, and there
# are at least 100 (the public API is there).
check_prefix() {
    local file=$1 what=$2
    shift 2
    local bad count
    bad=$(nm "$@" "$file" | awk 'NF == 3 { print $3 }' | grep -v '^strix_')
    count=$(nm "$@" "$file" | awk 'NF == 3' | wc -l)
    if [ -n "$bad" ]; then
        echo "FAIL: $file $what $(echo "$bad" | wc -l) symbols without the strix_ prefix:"
        echo "$bad" | head -50
        status=1
    elif [ "$count" -lt 100 ]; then
        echo "FAIL: $file $what only $count symbols (the public API is missing?)"
        status=1
    else
        echo "ok: $file $what $count symbols, all strix_*"
    fi
}
check_prefix "$so" exports -D --defined-only
check_prefix "$a" "defines global" -g --defined-only
# Every function the public headers declare with STRIX_API is exported by libstrix.so.
root=$(cd "$(dirname "$0")/../.." && pwd)
exported=$(nm -D --defined-only "$so" | awk 'NF == 3 { print $3 }' | sort -u)
declared=$(grep -rhoE 'STRIX_API[^;(]*\b(strix_[a-z0-9_]+)\(' "$root/include" |
           grep -oE 'strix_[a-z0-9_]+\($' | tr -d '(' | sort -u)
missing=$(comm -23 <(echo "$declared") <(echo "$exported") | tr '\n' ' ')
if [ -n "$missing" ]; then
    echo "FAIL: declared STRIX_API in include/ but not exported by $so:$missing"
    status=1
else
    echo "ok: every STRIX_API function of include/ is exported"
fi
exit $status
