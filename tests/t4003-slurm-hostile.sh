#!/usr/bin/env bash
# t4003-slurm-hostile.sh: the Slurm job backend against what a hostile neighbour or a hung
# slurmctld can do, without a real Slurm (t4002 has one): gpuctl's own records of Slurm jobs, and
# stand-ins for squeue that hang or answer. A job's default log (slurm-N.out in the directory of
# the submit, N predictable) may be a FIFO or another user's file planted in a shared directory:
# `logs` neither blocks on it nor shows its bytes. A squeue that never answers (slurmctld hung)
# does not hold `wait --timeout` past its timeout.
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/daemon.sh"
plan 45
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

# A squeue that never answers: wait --timeout 1 ends by its timeout, not after squeue's own limit
# (30 s). `timeout 25` catches the failure (it would exit 124): over ten times the 1 or 2 s a
# correct gpuctl takes, and under squeue's limit, which a gpuctl that waited for it would reach.
# That the timeout is not cut short is a lower bound, which load cannot break.
# ms_since T0: milliseconds since T0 (date +%s%N).
ms_since() { echo $((($(date +%s%N) - $1) / 1000000)); }
printf '#!/bin/sh\nexec sleep infinity\n' >"$TMP/bin/squeue"
chmod 755 "$TMP/bin/squeue"
record 904 running "$W/slurm-904.out"
t0=$(date +%s%N)
check_exit "wait --timeout 1 with slurmctld hung: the timeout (11)" 11 \
	env PATH="$TMP/bin:$PATH" timeout 25 "$G" wait --timeout 1 slurm:904
ms=$(ms_since "$t0")
check "not before the timeout ($ms ms)" test "$ms" -ge 900
check_grep "saying the timeout ran out" "--timeout ran out" "$TMP/stderr"
# The same while watching: squeue answers once (the job runs), then hangs.
printf '#!/bin/sh\n[ -e "%s" ] && exec sleep infinity\n: >"%s"\necho "905|%s|RUNNING|0|2025-01-01T00:00:00|2025-01-01T00:00:01|N/A|node1|None|"\n' \
	"$TMP/answered" "$TMP/answered" "$(id -u)" >"$TMP/bin/squeue"
printf '#!/bin/sh\nexit 1\n' >"$TMP/bin/scontrol"
chmod 755 "$TMP/bin/scontrol"
record 905 queued "$W/slurm-905.out"
t0=$(date +%s%N)
check_exit "wait --timeout 2 on a running job, then slurmctld hung: the timeout (11)" 11 \
	env PATH="$TMP/bin:$PATH" timeout 25 "$G" wait --timeout 2 slurm:905
ms=$(ms_since "$t0")
check "not before the timeout ($ms ms)" test "$ms" -ge 1800
check_grep "saying the timeout ran out" "--timeout ran out" "$TMP/stderr"

# A squeue that closes its output and then hangs, leaving a child of its own behind: the whole
# call is bounded (not only its output), and the tool's process group is killed with it.
# dead PID: gone, or a zombie its new parent has not reaped yet.
dead() { ! [ -e "/proc/$1" ] || grep -q '^[0-9]* ([^)]*) Z' "/proc/$1/stat" 2>/dev/null; }
printf '#!/bin/sh\nsleep infinity </dev/null >/dev/null 2>&1 &\necho $! >"%s"\nexec >&- 2>&-\nexec sleep infinity\n' \
	"$TMP/grandchild" >"$TMP/bin/squeue"
t0=$(date +%s%N)
check_exit "wait --timeout 2, squeue closed its output and hung: the timeout (11)" 11 \
	env PATH="$TMP/bin:$PATH" timeout 25 "$G" wait --timeout 2 slurm:904
ms=$(ms_since "$t0")
check "not before the timeout ($ms ms)" test "$ms" -ge 1800
check "squeue's own child killed with it (its process group)" "$AWAIT_EXIT" 30 "$(cat "$TMP/grandchild")"

# squeue's answers that cannot be trusted are not read: a Reason holding a newline makes a second
# row for a job; an array's tasks; a task id. ROWS is what the stand-in prints.
printf '#!/bin/sh\nprintf "%%b" "$ROWS"\n' >"$TMP/bin/squeue"
U=$(id -u)
ROWS="911|$U|PENDING|0|N/A|N/A|N/A||x|\n911|$U|COMPLETED|0|N/A|N/A|N/A|n1|None|\n911|$U|RUNNING|0|N/A|N/A|N/A|n1|None|\n"
check_exit "squeue answering two rows for one job: a failed query (18)" 18 \
	env PATH="$TMP/bin:$PATH" ROWS="$ROWS" "$G" jobs slurm:911
check_grep "saying why" "squeue's answer cannot be read: .*two rows for job 911" "$TMP/stderr"
ROWS="912_1|$U|RUNNING|0|N/A|N/A|N/A|n1|None|\n912_[2-3]|$U|PENDING|0|N/A|N/A|N/A||Resources|\n"
check_exit "a job array: refused (2)" 2 env PATH="$TMP/bin:$PATH" ROWS="$ROWS" "$G" jobs slurm:912
check_grep "saying so" "slurm:912 is a Slurm job array.*does not follow" "$TMP/stderr"
check_exit "an array's task id: refused (2)" 2 "$G" jobs slurm:912_1
check_grep "saying so" "a task of Slurm's job array 912" "$TMP/stderr"

# The local backend's --log path is held to the same rule: a FIFO there is refused, not opened.
HD=$XDG_STATE_HOME/gpuctl/jobs/$(hostname | tr -c 'A-Za-z0-9._\n-' '_')
mkdir -p "$HD" && chmod 700 "$HD"
mkfifo "$W/local.fifo"
printf 'job\nid 31\nuid %s\nstate done\nboot x\ncommand true\ncwd %s\nlog %s\ncount 1\nexit 0\n' \
	"$U" "$W" "$W/local.fifo" >"$HD/31.job"
check_exit "logs of a local job whose --log is now a FIFO: refused, not blocked (1)" 1 timeout 10 "$G" logs 31
check_grep "saying it is not a regular file" "local.fifo.*not a regular file" "$TMP/stderr"

# A squeue that answers once (the job runs), then hangs: Ctrl-C (SIGINT to gpuctl) during
# `wait` and `logs -f` ends gpuctl at once, by the signal (the shell's 130), and kills the hung
# squeue. SIGINT is reset to its default: bash ignores it in background jobs.
cat >"$TMP/bin/squeue" <<EOS
#!/bin/sh
id=; while [ \$# -gt 0 ]; do [ "\$1" = -j ] && id=\$2; shift; done
if [ ! -e "$TMP/once" ]; then
	: >"$TMP/once"
	echo "\$id|$U|RUNNING|0|2025-01-01T00:00:00|2025-01-01T00:00:01|N/A|node1|None|"
	exit 0
fi
echo \$\$ >"$TMP/hung.pid"
exec sleep infinity
EOS
for what in wait logs; do
	rm -f "$TMP/once" "$TMP/hung.pid"
	record 906 running "$W/slurm-906.out"
	: >"$W/slurm-906.out"
	if [ $what = wait ]; then set -- wait slurm:906; else set -- logs -f slurm:906; fi
	(PATH="$TMP/bin:$PATH" exec env --default-signal=INT "$G" "$@" >/dev/null 2>"$TMP/int.err") &
	pid=$!
	await_line '^[0-9]' "$TMP/hung.pid" 20
	kill -INT "$pid"
	(sleep 20; kill -KILL "$pid" 2>/dev/null) &   # the deadline: only a hung gpuctl meets it
	dog=$!
	wait "$pid"
	rc=$?
	kill "$dog" 2>/dev/null
	check_eq "$what with slurmctld hung: Ctrl-C ends it, by SIGINT (130)" 130 "$rc"
	check "$what: the hung squeue is killed too" "$AWAIT_EXIT" 30 "$(cat "$TMP/hung.pid")"
done

# On a terminal, a wait whose squeue keeps failing says so at each look, and why it gives up.
printf '#!/bin/sh\n[ -e "%s" ] && { echo "slurm_load_jobs error: Socket timed out on send/recv operation" >&2; exit 1; }\n: >"%s"\necho "908|%s|RUNNING|0|2025-01-01T00:00:00|2025-01-01T00:00:01|N/A|node1|None|"\n' \
	"$TMP/once8" "$TMP/once8" "$U" >"$TMP/bin/squeue"
record 908 running "$W/slurm-908.out"
check_exit "wait with squeue failing: Slurm's failure (18), after 5 looks" 18 \
	env PATH="$TMP/bin:$PATH" SHELL=/bin/sh timeout 30 script -qec "$G wait slurm:908" /dev/null
check_grep "each failed look told on the terminal" "squeue failed: slurm_load_jobs error: Socket timed out.*asking again \(4 of 5\)" "$TMP/stdout"
check_grep "and why it stopped" "asked 5 times in a row, so gpuctl stopped waiting" "$TMP/stdout"

# A job slurmctld has forgotten (squeue: Invalid job id): Slurm's accounting, where sacct works,
# says how it ended; where it fails or its answer is odd, the job is `unknown` (wait: 16). The
# stand-in sacct answers by the job asked for (--parsable2, SACCT_FORMAT), as sacct(1) documents.
printf '#!/bin/sh\necho "slurm_load_jobs error: Invalid job id specified" >&2\nexit 1\n' >"$TMP/bin/squeue"
T=2025-01-01T00:00:00
cat >"$TMP/bin/sacct" <<EOS
#!/bin/sh
echo "\$*" >>"$TMP/sacct.args"
case "\$2" in
921) printf '921|$U|COMPLETED|0:0|$T|$T|$T|node1\n921.batch|$U|COMPLETED|0:0|$T|$T|$T|node1\n921.extern|$U|COMPLETED|0:0|$T|$T|$T|node1\n' ;;
922) printf '922|$U|FAILED|3:0|$T|$T|$T|node1\n922.batch|$U|FAILED|3:0|$T|$T|$T|node1\n' ;;
923) printf '923|$U|FAILED|0:0|$T|$T|$T|node1\n923.batch|$U|FAILED|0:9|$T|$T|$T|node1\n' ;;
924) echo "sacct: error: Slurm accounting storage is disabled" >&2; exit 1 ;;
925) printf '925|$U|COMPLETED|0:0|$T|$T|$T|node1\n925|$U|FAILED|1:0|$T|$T|$T|node1\n' ;;
926) printf '926|12345|COMPLETED|0:0|$T|$T|$T|node1\n' ;;
927) ;;
928) exec sleep infinity ;;
esac
EOS
chmod 755 "$TMP/bin/sacct"
for id in 921 922 923 924 925 926 927 928; do record $id running "$W/slurm-$id.out"; done
check_exit "forgotten job, sacct: COMPLETED: wait 0" 0 env PATH="$TMP/bin:$PATH" "$G" wait slurm:921
check_grep "sacct asked with an argv for the job's fields" "^-j 921 --parsable2 --noheader --format=JobIDRaw,UID,State,ExitCode" "$TMP/sacct.args"
check_exit "forgotten job, sacct: FAILED 3:0: wait 3" 3 env PATH="$TMP/bin:$PATH" "$G" wait slurm:922
check_exit "forgotten job, sacct: batch step signalled 0:9: wait 137" 137 env PATH="$TMP/bin:$PATH" "$G" wait slurm:923
check_exit "forgotten job, sacct fails (no slurmdbd): unknown, wait 16" 16 env PATH="$TMP/bin:$PATH" "$G" wait slurm:924
check_exit "forgotten job, sacct's answer has the job twice: unknown, 16" 16 env PATH="$TMP/bin:$PATH" "$G" wait slurm:925
check_exit "forgotten job, sacct's job of that id is another user's: unknown, 16" 16 env PATH="$TMP/bin:$PATH" "$G" wait slurm:926
check_exit "forgotten job, sacct says nothing: unknown, 16" 16 env PATH="$TMP/bin:$PATH" "$G" wait slurm:927
check_exit "jobs --json of them" 0 env PATH="$TMP/bin:$PATH" "$G" jobs --json slurm:921,slurm:922,slurm:923,slurm:924
check_eq "states by sacct, unknown where it failed" "done 0 null failed 3 null failed null 9 unknown null null" \
	"$(python3 -c 'import json,sys; print(" ".join("%s %s %s" % (j["state"], json.dumps(j["exit_code"]), json.dumps(j["signal"])) for j in json.load(open(sys.argv[1]))["jobs"]))' "$TMP/stdout")"
check_exit "jobs slurm:924" 0 env PATH="$TMP/bin:$PATH" "$G" jobs slurm:924
check_grep "saying why sacct could not tell" "could not say how it ended: sacct failed .*accounting storage is disabled" "$TMP/stdout"
t0=$(date +%s%N)
check_exit "forgotten job, sacct hung (slurmdbd down): wait --timeout 1 ends by the timeout (11)" 11 \
	env PATH="$TMP/bin:$PATH" timeout 25 "$G" wait --timeout 1 slurm:928
ms=$(ms_since "$t0")
check "not before the timeout ($ms ms)" test "$ms" -ge 900
