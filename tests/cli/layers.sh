#!/usr/bin/env bash
# layers.sh - the one-way layer check: every `#include "..."` in src/, include/ and tools/ may
# name only a file on the same or a lower floor, and no object of the library may use a symbol
# defined on a higher floor (nm over the build's objects, when a build is at hand). The floors and the known exceptions are read
# from docs/ARCHITECTURE.md (the ```layers and ```layers-allow blocks; the only copy; a floor's
# name may start several lines). Includes resolve as the compiler resolves them: the including
# file's folder, then src/, then include/.
# Fails on an upward include, on a file that belongs to no floor, and on an allowed exception
# that no longer occurs (so the list shrinks as branches fix them). Then it plants two upward
# includes in a scratch tree (src/nn -> src/explain, strix/nn.h -> strix/lrp.h) and requires the
# check to report exactly those two, so it cannot pass by checking nothing. Runs from the repo
# root (ctest's working directory) or with the root as $1; needs only bash, grep, awk.
set -u
ROOT=${1:-$(pwd)}
DOC="$ROOT/docs/ARCHITECTURE.md"
[ -f "$DOC" ] || { echo "FAIL: $DOC not found" >&2; exit 1; }

# block NAME: the lines of the fenced block ```NAME of the doc, comments and blanks dropped.
block() {
    awk -v name="$1" '$0 == "```" name {on = 1; next} on && /^```/ {on = 0} on' "$DOC" \
        | sed 's/#.*//' | awk 'NF'
}
FLOORS=$(block layers)
ALLOW=$(block layers-allow)
[ "$(echo "$FLOORS" | wc -l)" -ge 5 ] || { echo "FAIL: no floor table in $DOC" >&2; exit 1; }

# list_includes TREE: "file target" per quoted include of a C/C++/CUDA source or header under
# TREE's src/, include/ and tools/, both relative to TREE; unresolved names (system headers
# spelled with quotes, generated files) are skipped.
list_includes() {
    local tree=$1 f inc dir
    (cd "$tree" && find src include tools -type f \
        \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' -o -name '*.cpp' \) \
        2>/dev/null | sort) | while read -r f; do
        dir=$(dirname "$f")
        grep -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$tree/$f" \
            | sed -E 's/^[^"]*"([^"]*)".*/\1/' | while read -r inc; do
            if [ -f "$tree/$dir/$inc" ]; then
                echo "$f $(cd "$tree" && realpath -m --relative-to=. "$dir/$inc")"
            elif [ -f "$tree/src/$inc" ]; then
                echo "$f src/$inc"
            elif [ -f "$tree/include/$inc" ]; then
                echo "$f include/$inc"
            fi
        done
    done
}

# check TREE: prints "UP file target (floor -> floor)" per upward include that is not allowed,
# "NOFLOOR file" per file outside every floor, "STALE file target" per allowed include pair (the
# ALLOW lines of kind "include") not found.
# The awk prelude shared by both checks: prefix[] -> floor index, fname[], floor_of(path).
FLOOR_AWK='
        function load_floors(    n, lines, i, k, w, j) {
            n = split(floors, lines, "\n")
            nf = 0
            for (i = 1; i <= n; i++) {
                k = split(lines[i], w, " ")
                if (!(w[1] in index_of)) { index_of[w[1]] = ++nf; fname[nf] = w[1] }
                for (j = 2; j <= k; j++) prefix[w[j]] = index_of[w[1]]
            }
        }
        function floor_of(path,    p, best, len) {
            best = 0; len = 0
            for (p in prefix)
                if (substr(path, 1, length(p)) == p && length(p) > len) {
                    best = prefix[p]; len = length(p)
                }
            return best
        }'

check() {
    list_includes "$1" | awk -v floors="$FLOORS" -v allow="$ALLOW" "$FLOOR_AWK"'
        BEGIN {
            load_floors()
            m = split(allow, al, "\n")
            for (i = 1; i <= m; i++) {
                split(al[i], w, " ")
                if (w[1] == "include") ok[w[2] " " w[3]] = 1
            }
        }
        {
            a = floor_of($1); b = floor_of($2)
            if (a == 0) { if (!($1 in nofloor)) print "NOFLOOR " $1; nofloor[$1] = 1; next }
            if (b == 0) { if (!($2 in nofloor)) print "NOFLOOR " $2; nofloor[$2] = 1; next }
            if (b > a) {
                if (($1 " " $2) in ok) seen[$1 " " $2] = 1
                else print "UP " $1 " " $2 " (" fname[a] " -> " fname[b] ")"
            }
        }
        END { for (p in ok) if (!(p in seen)) print "STALE " p }'
}

# list_symbols OBJDIR TREE: "D file symbol" per global symbol defined and "U file symbol" per one
# used by the object of each source file (OBJDIR holds src/<path>.o as CMake lays them out;
# objects whose source is gone, stale ones, are skipped).
list_symbols() {
    local objdir=$1 tree=$2 o src
    (cd "$objdir" && find src -name '*.o' 2>/dev/null | sort) | while read -r o; do
        src=${o%.o}
        [ -f "$tree/$src" ] || continue
        nm -g --defined-only "$objdir/$o" 2>/dev/null | awk -v f="$src" 'NF == 3 {print "D", f, $3}'
        nm -u "$objdir/$o" 2>/dev/null | awk -v f="$src" '{print "U", f, $NF}'
    done
}

# check_calls OBJDIR TREE ALLOW: "CALL file symbol -> file (floor -> floor)" per symbol a file uses that
# is defined on a higher floor: an upward call, even one declared by hand without an include;
# "STALE call a b" per allowed pair (ALLOW's "call" lines) that no longer occurs.
check_calls() {
    list_symbols "$1" "$2" | awk -v floors="$FLOORS" -v allow="$3" "$FLOOR_AWK"'
        BEGIN {
            load_floors()
            m = split(allow, al, "\n")
            for (i = 1; i <= m; i++) {
                split(al[i], w, " ")
                if (w[1] == "call") ok[w[2] " " w[3]] = 1
            }
        }
        $1 == "D" { def[$3] = $2; next }
        { use[++n] = $2 " " $3 }
        END {
            for (i = 1; i <= n; i++) {
                split(use[i], w, " ")
                if (!(w[2] in def)) continue
                a = floor_of(w[1]); b = floor_of(def[w[2]])
                if (a > 0 && b > a) {
                    if ((w[1] " " def[w[2]]) in ok) { seen[w[1] " " def[w[2]]] = 1; continue }
                    print "CALL " w[1] " " w[2] " -> " def[w[2]] " (" fname[a] " -> " fname[b] ")"
                }
            }
            for (p in ok) if (!(p in seen)) print "STALE call " p
        }'
}

FAILS=0
out=$(check "$ROOT")
if [ -n "$out" ]; then
    echo "$out" | sed 's/^/FAIL: /' >&2
    FAILS=$((FAILS + $(echo "$out" | wc -l)))
else
    echo "ok: $(list_includes "$ROOT" | wc -l) includes in src/, include/, tools/ go down only"
fi

# Calls: the library's objects of the build that ctest runs ($STRIX is its strix command; or
# STRIX_BUILD_DIR), skipped when there is none or no nm.
BUILD_DIR=${STRIX_BUILD_DIR:-}
if [ -z "$BUILD_DIR" ] && [ -n "${STRIX:-}" ]; then
    d=$(dirname "$STRIX")
    while [ "$d" != "/" ] && [ ! -f "$d/CMakeCache.txt" ]; do d=$(dirname "$d"); done
    [ -f "$d/CMakeCache.txt" ] && BUILD_DIR=$d
fi
OBJDIR=${BUILD_DIR:+$BUILD_DIR/CMakeFiles/strix_objs.dir}
if [ -n "$OBJDIR" ] && [ -d "$OBJDIR/src" ] && command -v nm >/dev/null; then
    nobj=$(list_symbols "$OBJDIR" "$ROOT" | awk '{print $2}' | sort -u | wc -l)
    out=$(check_calls "$OBJDIR" "$ROOT" "$ALLOW")
    if [ -n "$out" ]; then
        echo "$out" | sed 's/^/FAIL: /' >&2
        FAILS=$((FAILS + $(echo "$out" | wc -l)))
    elif [ "$nobj" -lt 20 ]; then
        echo "FAIL: only $nobj objects found under $OBJDIR" >&2
        FAILS=$((FAILS + 1))
    else
        echo "ok: the symbols used by $nobj objects of $OBJDIR are defined on their floor or below"
    fi
else
    echo "skip: no build objects (set STRIX or STRIX_BUILD_DIR) or no nm: calls not checked"
fi

# The check must be able to fail: a scratch tree with the real floors and two planted upward
# includes (the allowed exceptions' files are absent there, so they are STALE, not counted).
SCRATCH=$(mktemp -d /tmp/strix_layers.XXXXXX)
trap 'rm -rf "$SCRATCH"' EXIT
mkdir -p "$SCRATCH/src/nn" "$SCRATCH/src/explain" "$SCRATCH/include/strix" "$SCRATCH/src/core"
printf '#include "explain/explain_internal.h"\n#include "strix/core.h"\n' >"$SCRATCH/src/nn/a.c"
printf '#include "strix/nn.h"\n' >"$SCRATCH/src/explain/explain_internal.h"
printf '#include "strix/lrp.h"\n#include "strix/core.h"\n' >"$SCRATCH/include/strix/nn.h"
printf '#include "strix/nn.h"\n' >"$SCRATCH/include/strix/lrp.h"
printf '\n' >"$SCRATCH/include/strix/core.h"
planted=$(check "$SCRATCH" | grep -v '^STALE' | sort)
expected=$(printf '%s\n' \
    "UP include/strix/nn.h include/strix/lrp.h (nn -> explain)" \
    "UP src/nn/a.c src/explain/explain_internal.h (nn -> explain)" | sort)
if [ "$planted" = "$expected" ]; then
    echo "ok: planted upward includes are caught (nn -> explain, strix/nn.h -> strix/lrp.h)"
else
    echo "FAIL: the check on planted upward includes reported:" >&2
    echo "$planted" >&2
    FAILS=$((FAILS + 1))
fi

# ... and an upward call declared by hand (no include), compiled when a C compiler is at hand.
CC=${CC:-cc}
if command -v "$CC" >/dev/null && command -v nm >/dev/null; then
    mkdir -p "$SCRATCH/obj/src/nn" "$SCRATCH/obj/src/explain"
    printf 'int explain_helper(void);\nint nn_user(void) { return explain_helper(); }\n' \
        >"$SCRATCH/src/nn/b.c"
    printf 'int explain_helper(void) { return 1; }\n' >"$SCRATCH/src/explain/c.c"
    "$CC" -c "$SCRATCH/src/nn/b.c" -o "$SCRATCH/obj/src/nn/b.c.o" &&
        "$CC" -c "$SCRATCH/src/explain/c.c" -o "$SCRATCH/obj/src/explain/c.c.o"
    planted=$(check_calls "$SCRATCH/obj" "$SCRATCH" "")
    if [ "$planted" = "CALL src/nn/b.c explain_helper -> src/explain/c.c (nn -> explain)" ]; then
        echo "ok: a planted upward call is caught (nn -> explain, declared without an include)"
    else
        echo "FAIL: the call check on a planted upward call reported: $planted" >&2
        FAILS=$((FAILS + 1))
    fi
else
    echo "skip: no C compiler: the planted upward call is not built"
fi

[ "$FAILS" -eq 0 ] && { echo "all checks passed"; exit 0; }
echo "$FAILS check(s) failed"
exit 1
