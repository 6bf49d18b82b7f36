#!/usr/bin/env bash
# t0035-slurm-hostile.sh: the Slurm job backend against what a hostile neighbour or a hung
# slurmctld can do, without a real Slurm (t0034 has one): gpuctl's own records of Slurm jobs, and
# stand-ins for squeue that hang or answer. A job's default log (slurm-N.out in the directory of
# the submit, N predictable) may be a FIFO or another user's file planted in a shared directory:
# `logs` neither blocks on it nor shows its bytes. A squeue that never answers (slurmctld hung)
# does not hold `wait --timeout` past its timeout.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/daemon.sh"
plan 13
G=$GPUCTL
W=$TMP/shared
mkdir -p "$W" "$TMP/bin"
SD=$XDG_STATE_HOME/gpuctl/slurm
mkdir -p "$SD"
chmod 700 "$XDG_STATE_HOME/gpuctl" "$SD"
# record ID STATE LOG: gpuctl's record of a Slurm job it submitted (job.c's format).
record() {
	printf 'job\nid %s\nuid %s\nstate %s\nboot x\ncommand true\ncwd %s\nlog %s\ncount 1\nexit 0\n' \
		"$1" "$(id -u)" "$2" "$W" "$3" >"$SD/$1.job"
}

# A FIFO where the log should be: logs refuses it at once instead of blocking on it.
mkfifo "$W/slurm-901.out"
record 901 done "$W/slurm-901.out"
check_exit "logs of a job whose log is a FIFO: refused, not blocked (1)" 1 timeout 10 "$G" logs slurm:901
check_grep "saying it is not a regular file" "slurm-901.out.*not a regular file" "$TMP/stderr"

# Another user's file where the log should be: never shown.
if can_switch; then
	printf 'fake\e]0;owned\a output\n' >"$W/slurm-902.out"
	chown 65534:65534 "$W/slurm-902.out"
	record 902 done "$W/slurm-902.out"
	check_exit "logs of a job whose log is another user's file: refused (12)" 12 "$G" logs slurm:902
	check_eq "nothing of it printed" "" "$(cat "$TMP/stdout")"
	check_grep "naming whose it is" "slurm-902.out, is nobody's, not yours" "$TMP/stderr"
else
	skip "another user's file" "needs root and setpriv" 3
fi
printf 'mine\n' >"$W/slurm-903.out"
record 903 done "$W/slurm-903.out"
check_exit "logs of one's own log file: shown" 0 "$G" logs slurm:903
check_eq "as written" "mine" "$(cat "$TMP/stdout")"

# A squeue that never answers: wait --timeout 1 ends after about a second, not after squeue's
# own limit (30 s). `timeout 20` only catches the failure.
printf '#!/bin/sh\nexec sleep 120\n' >"$TMP/bin/squeue"
chmod 755 "$TMP/bin/squeue"
record 904 running "$W/slurm-904.out"
SECONDS=0
check_exit "wait --timeout 1 with slurmctld hung: the timeout (11)" 11 \
	env PATH="$TMP/bin:$PATH" timeout 20 "$G" wait --timeout 1 slurm:904
check "within a few seconds" test "$SECONDS" -le 8
check_grep "saying the timeout ran out" "--timeout ran out" "$TMP/stderr"
# The same while watching: squeue answers once (the job runs), then hangs.
printf '#!/bin/sh\n[ -e "%s" ] && exec sleep 120\n: >"%s"\necho "905|%s|RUNNING|0|2025-01-01T00:00:00|2025-01-01T00:00:01|N/A|node1|None|"\n' \
	"$TMP/answered" "$TMP/answered" "$(id -u)" >"$TMP/bin/squeue"
printf '#!/bin/sh\nexit 1\n' >"$TMP/bin/scontrol"
chmod 755 "$TMP/bin/scontrol"
record 905 queued "$W/slurm-905.out"
SECONDS=0
check_exit "wait --timeout 2 on a running job, then slurmctld hung: the timeout (11)" 11 \
	env PATH="$TMP/bin:$PATH" timeout 20 "$G" wait --timeout 2 slurm:905
check "within a few seconds" test "$SECONDS" -le 8
check_grep "saying the timeout ran out" "--timeout ran out" "$TMP/stderr"
