#!/usr/bin/env bash
# t1003-inherited-visibility.sh: run, env and submit read an inherited CUDA_VISIBLE_DEVICES as
# CUDA does and as `gpuctl map` explains it, never silently (issue 21): what map calls an error
# ('0-2' is read as 0) refuses the lease with map's own words (exit 2), a warning is said.
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/daemon.sh"
. "$ROOT/tests/lib/jobs.sh"
plan 14
use_machine "$MACHINES/h100x8.machine"
daemon_setup
daemon_start

CUDA_VISIBLE_DEVICES=0-2 "$GPUCTL" map >"$TMP/map" 2>&1
grep -a '^error \[range\]' "$TMP/map" >"$TMP/finding"
check_grep "map: '0-2' is an error" "is not a range: CUDA reads it as 0" "$TMP/finding"
CUDA_VISIBLE_DEVICES=0-2 check_exit "run with '0-2': refused" 2 "$GPUCTL" run -q -- true
check_grep "run: map's words" "^gpuctl run: your CUDA_VISIBLE_DEVICES='0-2': $(sed 's/[][().]/\\&/g' "$TMP/finding")" "$TMP/stderr"
CUDA_VISIBLE_DEVICES=0-2 check_exit "env with '0-2': refused" 2 "$GPUCTL" env -q -n 1
check_eq "env: nothing exported" "" "$(cat "$TMP/stdout")"
check_grep "env: map's words" "^gpuctl env: your CUDA_VISIBLE_DEVICES='0-2': error \[range\]" "$TMP/stderr"
check_eq "nothing was leased" 0 "$(live_leases)"
# submit: the job's environment is the submit's, and its runner refuses it the same way.
CUDA_VISIBLE_DEVICES=0-2 check_exit "submit with '0-2': refused" 2 "$GPUCTL" submit -- true
check_grep "submit: map's words" "^gpuctl submit: your CUDA_VISIBLE_DEVICES='0-2': error \[range\]" "$TMP/stderr"

# A warning of map's: the lease goes ahead among what CUDA sees (GPU 1: 'x' ends the list), and
# says why.
CUDA_VISIBLE_DEVICES=1,x,4 check_exit "run with '1,x,4': goes ahead" 0 "$GPUCTL" run -q -- sh -c 'echo "$CUDA_VISIBLE_DEVICES"'
check_eq "among the GPUs CUDA sees" 1 "$(cat "$TMP/stdout")"
check_grep "and says what map says" "^gpuctl run: your CUDA_VISIBLE_DEVICES='1,x,4': warning \[truncated\]: .*the list ends there" "$TMP/stderr"

# A hostile value is escaped on the terminal.
CUDA_VISIBLE_DEVICES=$'0-2\e]0;x\a' check_exit "a control byte in the value is escaped" 2 "$GPUCTL" run -q -- true
if grep -aq $'\e' "$TMP/stderr"; then not_ok "no escape byte reaches the terminal" "$(cat -v "$TMP/stderr")"; else ok "no escape byte reaches the terminal"; fi
