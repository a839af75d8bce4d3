#!/usr/bin/env bash
# out_links.sh - where `strix train --out` writes: through a symbolic link to the link's target
# (atomically, in the target's directory; the link stays a link; the lock file and the temp files
# follow the target), a file name of 255 bytes (NAME_MAX) trains and resumes, and --out in a
# subdirectory of the --data directory is accepted (the directory is read non-recursively) while
# --out directly in it stays refused.
source "$(dirname "$0")/lib.bash"

head -c 20000 "$SHAKESPEARE" >corpus.txt
RUN=(--data corpus.txt "${TINY[@]}" --steps 4 --eval-every 2 --eval-batches 2)
temps() { find . -name '.strix-tmp-*' -o -name '*.tmp.[0-9]*'; }
loads() { "$STRIX" sample --model "$1" --tokens 5 >/dev/null 2>&1; }

# ---- a link in this directory to a file in another
mkdir real
ln -s real/target.st link.st
"$STRIX" train "${RUN[@]}" --out link.st >/dev/null 2>link.err
rc=$?
[ $rc -eq 0 ] && ok "--out through a link: exit 0" || fail "--out through a link: exit $rc: \
$(cat link.err)"
[ -L link.st ] && [ "$(readlink link.st)" = real/target.st ] && ok "the link stays a link" \
    || fail "the link was replaced: $(ls -l link.st)"
[ -f real/target.st ] && [ ! -L real/target.st ] && loads real/target.st \
    && ok "the checkpoint is the link's target" || fail "no checkpoint at the target"
# a resumed run through the link writes the target again, the link stays
"$STRIX" train --data corpus.txt "${TINY[@]}" --steps 6 --eval-every 2 --eval-batches 2 \
    --stop-after 2 --out chain.st >/dev/null 2>&1
mv chain.st real/chain.st && ln -s real/chain.st chain.st
"$STRIX" train --resume chain.st >/dev/null 2>chain.err && [ -L chain.st ] \
    && "$STRIX" train --resume real/chain.st 2>&1 | grep -q "already finished its 6 steps" \
    && ok "--resume through a link continues the target" \
    || fail "--resume through a link: $(cat chain.err)"

# ---- a relative link in a subdirectory, and a dangling link (the target is created)
mkdir a b
ln -s ../b/t.st a/l.st
"$STRIX" train "${RUN[@]}" --out a/l.st >/dev/null 2>&1 && [ -L a/l.st ] && loads b/t.st \
    && ok "a relative link in a subdirectory writes b/t.st" || fail "relative link"
ln -s new.st dangling.st
"$STRIX" train "${RUN[@]}" --out dangling.st >/dev/null 2>&1 && [ -L dangling.st ] \
    && loads new.st && ok "a dangling link creates its target" || fail "dangling link"
# a link to the corpus, to a directory, or to a non-checkpoint is judged by its target
ln -s corpus.txt to_corpus.st
expect_error "--out links to the corpus" "is the corpus --data 'corpus.txt'" \
    "$STRIX" train "${RUN[@]}" --out to_corpus.st
ln -s real to_dir.st
expect_error "--out links to a directory" "is a directory" \
    "$STRIX" train "${RUN[@]}" --out to_dir.st
ln -s loop2.st loop1.st && ln -s loop1.st loop2.st
expect_error "--out is a link loop" "Too many levels of symbolic links" \
    "$STRIX" train "${RUN[@]}" --out loop1.st

# ---- the lock follows the target: a run into the link and one into the target exclude each other
ln -s real/locked.st locked_link.st
"$STRIX" train --data corpus.txt "${TINY[@]}" --steps 1000000 --eval-every 1000000 \
    --out locked_link.st >/dev/null 2>&1 &
pid=$!
for _ in $(seq 100); do [ -e real/locked.st.lock ] && break; sleep 0.1; done
[ -e real/locked.st.lock ] && [ ! -e locked_link.st.lock ] \
    && ok "the lock file lies beside the target" || fail "lock file: $(ls -A . real)"
expect_error "a second run into the link's target" "another strix process is training into" \
    "$STRIX" train "${RUN[@]}" --out real/locked.st
kill -INT $pid
wait $pid || fail "the run into the link did not stop cleanly"
[ -L locked_link.st ] && loads real/locked.st && ok "interrupted run saved to the target" \
    || fail "interrupted run through the link"
[ -z "$(temps)" ] && ok "no temp files anywhere" || fail "temp files left: $(temps)"
[ -z "$(find . -name '*.lock')" ] || fail "lock files left: $(find . -name '*.lock')"

# ---- a file name of 255 bytes (NAME_MAX): temp and lock names still fit
long=$(printf 'm%.0s' $(seq 243)).safetensors
[ ${#long} -eq 255 ] || fail "test setup: name of ${#long} bytes"
"$STRIX" train "${RUN[@]}" --steps 6 --stop-after 2 --out "$long" >/dev/null 2>long.err
rc=$?
[ $rc -eq 0 ] && loads "$long" && ok "--out of 255 bytes: trained and loadable" \
    || fail "--out of 255 bytes: exit $rc: $(cat long.err)"
"$STRIX" train --resume "$long" >long.out 2>long.err
rc=$?
[ $rc -eq 0 ] && grep -q "^done: 6 of 6 steps" long.out && ok "--resume of a 255-byte name" \
    || fail "--resume of a 255-byte name: exit $rc: $(cat long.err)"
[ -z "$(find . -name '*.lock' -o -name '.strix-lock-*')" ] || fail "lock left (long name)"
toolong=x$long
expect_error "a name over NAME_MAX" "cannot write the checkpoint $toolong: File name too long" \
    "$STRIX" train "${RUN[@]}" --out "$toolong"
"$STRIX" train "${RUN[@]}" --out "$toolong" >/dev/null 2>&1
[ $? -eq 2 ] && ok "a name over NAME_MAX: refused before training (exit 2)" \
    || fail "a name over NAME_MAX: not refused with exit 2"

# ---- --data DIR: a subdirectory may hold --out, DIR itself may not
mkdir texts && cp corpus.txt texts/a.txt && mkdir texts/sub
"$STRIX" train --data texts "${TINY[@]}" --steps 4 --eval-every 2 --eval-batches 2 \
    --out texts/sub/x.safetensors >/dev/null 2>sub.err
rc=$?
[ $rc -eq 0 ] && loads texts/sub/x.safetensors && ok "--out in a subdirectory of --data: exit 0" \
    || fail "--out in a subdirectory of --data: exit $rc: $(cat sub.err)"
expect_error "--out directly in --data" "lies inside the corpus directory 'texts'" \
    "$STRIX" train --data texts "${TINY[@]}" --steps 4 --out texts/sub/../y.st
ln -s texts/z.st into_data.st
expect_error "--out links into --data" "lies inside the corpus directory" \
    "$STRIX" train --data texts "${TINY[@]}" --steps 4 --out into_data.st
[ -e texts/y.st ] || [ -e texts/z.st ] && fail "a checkpoint was written into the corpus directory"
finish
