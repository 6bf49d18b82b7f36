#!/usr/bin/env bash
# t9005-private-checkout.sh: the suite from a checkout other users cannot enter (a Debian 12 home
# is 0700): tests/run.sh runs it from a world-readable copy of its own, and the scripts that act
# as a second user (nobody, daemon) pass there as they do here; the copy is gone afterwards.
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/daemon.sh"
plan 5
if ! can_switch; then
	skip "a 0700 checkout" "needs root and setpriv to act as a second user" 5
	exit 0
fi
home=$TMP/home/user
mkdir -p "$home/gpuctl"
chmod 700 "$TMP/home" "$home"
tar -C "$ROOT" --exclude=./.git --exclude='./build*' -cf - . | tar -C "$home/gpuctl" -xf -
cp -a "$B" "$home/gpuctl/$GPUCTL_BUILD"
as_nobody test -r "$home/gpuctl/$GPUCTL_BUILD/gpuctl"
check_eq "the second user cannot reach the copied checkout" 1 $?
# A run of its own, as a newcomer's: not told of this run's staging (when this one is staged).
(cd "$home/gpuctl" && env -u GPUCTL_TEST_STAGED -u GPUCTL_TEST_NO_SWITCH GPUCTL_BUILD=$GPUCTL_BUILD \
	tests/run.sh t2001 t0009) >"$TMP/run" 2>&1
check_eq "the suite passes there" 0 $?
check_grep "it said it runs from a world-readable copy" \
	'^tests/run.sh: the second test user \(nobody\) cannot reach .*; running from a world-readable copy in ' "$TMP/run"
check_grep "and the second user's checks ran (none skipped)" '^[0-9]+ passed, 0 failed$' "$TMP/run"
stage=$(sed -n 's/.*running from a world-readable copy in \(.*\) (removed afterwards)$/\1/p' "$TMP/run")
check "the copy is removed afterwards (${stage:-none named})" test -n "$stage" -a ! -e "${stage:-/}"
