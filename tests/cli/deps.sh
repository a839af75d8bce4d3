# scripts/deps.sh (what `make run` / `make test` run first on a fresh machine), with stub
# dpkg-query, apt-get, apt-cache and id on PATH that record their calls: every package present ->
# nothing runs; missing as root -> the exact apt-get line is announced and run (after apt-get
# update when apt does not know a package); missing as another user -> the sudo line is printed
# and the script fails. Nothing is installed or removed for real.
source tests/cli/lib.bash

DEPS="$ROOT/scripts/deps.sh"
STUBS="$WORK/stubs"
mkdir -p "$STUBS"
# dpkg-query -W -f=... PKG: "installed" unless PKG is in $STUB_MISSING (then dpkg's message, 1).
cat >"$STUBS/dpkg-query" <<'EOF'
#!/bin/bash
pkg=${!#}
for m in $STUB_MISSING; do
    if [ "$m" = "$pkg" ]; then echo "dpkg-query: no packages found matching $pkg" >&2; exit 1; fi
done
printf 'install ok installed'
EOF
cat >"$STUBS/apt-get" <<'EOF'
#!/bin/bash
echo "apt-get $*" >>"$STUB_CALLS"
exit "${STUB_APT_RC:-0}"
EOF
# apt-cache show PKG: known unless $STUB_UNKNOWN=1 (fresh container without package lists).
cat >"$STUBS/apt-cache" <<'EOF'
#!/bin/bash
echo "apt-cache $*" >>"$STUB_CALLS"
[ "${STUB_UNKNOWN:-0}" = 1 ] && exit 100
exit 0
EOF
printf '#!/bin/bash\necho "$STUB_UID"\n' >"$STUBS/id"
chmod +x "$STUBS"/*
export STUB_CALLS="$WORK/calls"

# run_deps UID MISSING [VAR=VALUE...]: runs deps.sh "${DEPS_ARGS[@]}" with the stubs first on
# PATH; sets rc, out and err.
DEPS_ARGS=()
run_deps() {
    local uid=$1 missing=$2
    shift 2
    : >"$STUB_CALLS"
    env -u STRIX_SKIP_DEPS PATH="$STUBS:$PATH" STUB_UID="$uid" STUB_MISSING="$missing" "$@" \
        bash "$DEPS" "${DEPS_ARGS[@]}" >"$WORK/out" 2>"$WORK/err"
    rc=$?
    out=$(cat "$WORK/out")
    err=$(cat "$WORK/err")
}

# 1. Everything installed (as root and as a user): exit 0, silent, no apt call.
for uid in 0 1000; do
    run_deps "$uid" ""
    if [ "$rc" -eq 0 ] && [ -z "$out$err" ] && [ ! -s "$STUB_CALLS" ]; then
        ok "all present (uid $uid): nothing runs"
    else
        fail "all present (uid $uid): rc $rc, out '$out', err '$err', calls: $(cat "$STUB_CALLS")"
    fi
done

# 2. Missing as root, apt knows the packages: announce the line, install exactly the missing ones.
run_deps 0 "libcjson-dev fortunes"
calls=$(grep '^apt-get' "$STUB_CALLS")
if [ "$rc" -eq 0 ] && [ "$calls" = "apt-get install -y libcjson-dev fortunes" ] &&
    grep -qxF "strix: installing missing build packages: apt-get install -y libcjson-dev fortunes" \
        "$WORK/out"; then
    ok "missing as root: announced and ran '$calls'"
else
    fail "missing as root: rc $rc, out '$out', err '$err', apt-get calls '$calls'"
fi

# 3. Missing as root on a fresh container (no package lists): apt-get update, then the install.
run_deps 0 "cmake" STUB_UNKNOWN=1
calls=$(grep '^apt-get' "$STUB_CALLS" | tr '\n' ';')
if [ "$rc" -eq 0 ] && [ "$calls" = "apt-get update -qq;apt-get install -y cmake;" ]; then
    ok "missing as root without package lists: '$calls'"
else
    fail "missing as root without package lists: rc $rc, out '$out', err '$err', calls '$calls'"
fi

# 4. The install fails (no network): non-zero exit, one error line naming the command.
run_deps 0 "libcmocka-dev" STUB_APT_RC=100
if [ "$rc" -ne 0 ] && [ "$(wc -l <"$WORK/err")" -eq 1 ] &&
    grep -qF "'apt-get install -y libcmocka-dev' failed" "$WORK/err"; then
    ok "failed install: exit $rc, $err"
else
    fail "failed install: rc $rc, err '$err'"
fi

# 5. Missing as a user: the one sudo line on stderr, exit 1, apt-get never called.
run_deps 1000 "build-essential libopenblas-dev"
if [ "$rc" -eq 1 ] && [ ! -s "$STUB_CALLS" ] && [ -z "$out" ] &&
    [ "$(wc -l <"$WORK/err")" -eq 1 ] &&
    grep -qF "install them with: sudo apt-get install -y build-essential libopenblas-dev" \
        "$WORK/err"; then
    ok "missing as a user: $err"
else
    fail "missing as a user: rc $rc, out '$out', err '$err', calls $(cat "$STUB_CALLS")"
fi

# 6. --check as root only reports; STRIX_SKIP_DEPS=1 checks nothing.
DEPS_ARGS=(--check)
run_deps 0 "fortunes"
DEPS_ARGS=()
if [ "$rc" -eq 1 ] && [ ! -s "$STUB_CALLS" ] && grep -qF "apt-get install -y fortunes" "$WORK/err"
then
    ok "--check reports without installing"
else
    fail "--check: rc $rc, err '$err', calls $(cat "$STUB_CALLS")"
fi
: >"$STUB_CALLS"
PATH="$STUBS:$PATH" STUB_UID=1000 STUB_MISSING=cmake STRIX_SKIP_DEPS=1 bash "$DEPS" >/dev/null 2>&1
rc=$?
[ "$rc" -eq 0 ] && ok "STRIX_SKIP_DEPS=1 skips the check" || fail "STRIX_SKIP_DEPS=1: rc $rc"

finish
