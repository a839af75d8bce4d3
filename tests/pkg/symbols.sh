#!/usr/bin/env bash
# symbols.sh LIBSTRIX_SO LIBSTRIX_A - every symbol the installable libraries export carries the
# strix_ prefix: the dynamic symbols libstrix.so defines, and the global symbols libstrix.a
# defines (its internal cpu_*, lrp_*, ... are made local by the build). Fails naming the others.
set -uo pipefail
so=$1 a=$2
status=0
bad=$(nm -D --defined-only "$so" | awk 'NF == 3 { print $3 }' | grep -v '^strix_')
count=$(nm -D --defined-only "$so" | awk 'NF == 3' | wc -l)
if [ -n "$bad" ]; then
    echo "FAIL: $so exports $(echo "$bad" | wc -l) symbols without the strix_ prefix:"
    echo "$bad" | head -50
    status=1
elif [ "$count" -lt 100 ]; then
    echo "FAIL: $so exports only $count symbols (the public API is missing?)"
    status=1
else
    echo "ok: $so exports $count symbols, all strix_*"
fi
bad=$(nm -g --defined-only "$a" | awk 'NF == 3 { print $3 }' | grep -v '^strix_')
count=$(nm -g --defined-only "$a" | awk 'NF == 3' | wc -l)
if [ -n "$bad" ]; then
    echo "FAIL: $a defines $(echo "$bad" | wc -l) global symbols without the strix_ prefix:"
    echo "$bad" | head -50
    status=1
elif [ "$count" -lt 100 ]; then
    echo "FAIL: $a defines only $count global symbols"
    status=1
else
    echo "ok: $a defines $count global symbols, all strix_*"
fi
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
