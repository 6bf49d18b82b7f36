#!/usr/bin/env bash
# t3040-notify.sh: notify hooks of submitted jobs (issue 24), run by the user's job runner:
# `submit --notify CMD` sees a job's end (done), failure (exit status) and stop (cancel), its
# lease warned idle ([daemon] idle_warn 1s) and near its time limit, with GPUCTL_EVENT,
# GPUCTL_JOB_ID, GPUCTL_JOB_NAME, GPUCTL_JOB_STATE, GPUCTL_EXIT_CODE and GPUCTL_GPUS; [defaults]
# notify is the default; a hanging hook is killed after notify_timeout and logged, and the jobs
# after it run meanwhile. Also: `submit -n 0`, a CPU-only step, runs beside full GPUs and in a chain;
# `wait` on another user's job waits for its end and tells only that.
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/daemon.sh"
. "$ROOT/tests/lib/jobs.sh"
plan 12
quiet_machine "$TMP/m2" 2
use_machine "$TMP/m2"
daemon_setup
printf '[daemon]\nidle_warn = 1s\nusage_poll = 0.2s\nkill_grace = 1s\n' >"$TMP/daemon.conf"
daemon_start
G=$GPUCTL
EV=$TMP/events
: >"$EV"
cat >"$TMP/hook" <<EOF
#!/bin/sh
echo "\$GPUCTL_EVENT id=\$GPUCTL_JOB_ID name=\$GPUCTL_JOB_NAME state=\$GPUCTL_JOB_STATE exit=\$GPUCTL_EXIT_CODE gpus=\$GPUCTL_GPUS" >>"$EV"
EOF
chmod +x "$TMP/hook"
mkdir -p "$XDG_CONFIG_HOME/gpuctl"
printf '[defaults]\nnotify_timeout = 2s\n' >"$XDG_CONFIG_HOME/gpuctl/config"
ev_of() { grep " id=$1 " "$EV" | cut -d' ' -f1,3- | sed 's/gpus=[01]$/gpus=N/'; }

ok=$("$G" submit --name fine --notify "$TMP/hook" -- true)
bad=$("$G" submit --name bad --notify "$TMP/hook" -- sh -c 'exit 3')
await_count " id=($ok|$bad) " "$EV" 2
check_eq "a job that ends: done, its exit status, name and GPU" "done name=fine state=done exit=0 gpus=N" "$(ev_of "$ok")"
check_eq "a job that fails: failed, exit 3" "failed name=bad state=failed exit=3 gpus=N" "$(ev_of "$bad")"

idle=$("$G" submit --name idle --notify "$TMP/hook" -- sleep 3600)
await_line "^idle-warn id=$idle " "$EV"
check_eq "its lease warned idle, while it runs" "idle-warn name=idle state=running exit= gpus=N" "$(ev_of "$idle")"
"$G" cancel "$idle" >/dev/null 2>&1
await_line "^stopped id=$idle " "$EV"
check_eq "then stopped (cancel)" "stopped name=idle state=cancelled exit=143 gpus=N" "$(ev_of "$idle" | tail -1)"

near=$("$G" submit --name near --time 2s --notify "$TMP/hook" -- sleep 3600)
await_line "^failed id=$near " "$EV"
check_eq "near its time limit, then failed at it" "time-near failed" "$(ev_of "$near" | cut -d' ' -f1 | grep -v idle-warn | xargs)"

# [defaults] notify, and a hook that hangs: killed after notify_timeout; the queue goes on.
printf '[defaults]\nnotify_timeout = 2s\nnotify = sleep 3600\n' >"$XDG_CONFIG_HOME/gpuctl/config"
hang=$("$G" submit -- true)
after=$("$G" submit -- true)
timeout 60 "$G" wait "$after" >/dev/null
check_eq "the job after a hanging hook runs meanwhile" 0 $?
await_line "job $hang: notify hook for 'done' still ran after its timeout \(notify_timeout\): killed" "$(runner_log)"
check_grep "[defaults] notify ran, and the hanging hook was killed and logged" "job $hang: notify hook for 'done' still ran after its timeout" "$(runner_log)"
printf '[defaults]\nnotify = %s\n' "$TMP/hook" >"$XDG_CONFIG_HOME/gpuctl/config"
dflt=$("$G" submit --name dflt -- true)
await_line " id=$dflt " "$EV"
check_eq "[defaults] notify is the hook of a job without --notify" "done name=dflt state=done exit=0 gpus=N" "$(ev_of "$dflt")"
: >"$XDG_CONFIG_HOME/gpuctl/config"

# submit -n 0: a CPU-only step in a chain, taking no GPU.
mkfifo "$TMP/go"
hold=$("$G" submit -n 2 -- sh -c "read x <'$TMP/go'")
await_started "$hold"
cpu=$("$G" submit -n 0 -- sh -c 'echo "cvd=[$CUDA_VISIBLE_DEVICES]"')
timeout 60 "$G" wait "$cpu" >/dev/null
check_eq "a -n 0 step runs while every GPU is taken, with no GPU visible" "cvd=[]" "$("$G" logs "$cpu")"
gpu=$("$G" submit --after "$cpu" -n 0 -- true)
echo >"$TMP/go"
timeout 60 "$G" wait "$gpu" "$hold" >/dev/null
check_eq "and its --after chain goes on" '"done"' "$(job_field "$gpu" .state)"

# wait on another user's job: its end, and nothing more.
if can_switch; then
	mkfifo -m 666 "$TMP/nb-go"
	theirs=$(as_nb "$G" submit -- sh -c "read x <'$TMP/nb-go'; exit 7")
	await_started "$theirs" "$NB_STATE"
	timeout 120 "$G" wait "$theirs" 2>"$TMP/wait-err" &
	W=$!
	await_line "^gpuctl wait: waiting for job $theirs of nobody \(running\)" "$TMP/wait-err"
	echo >"$TMP/nb-go"
	wait $W
	check_eq "wait on another user's job returns once it has ended (exit 0: its outcome is not ours)" 0 $?
	check_eq "saying only that" "gpuctl wait: job $theirs of nobody has ended (how is for its owner to see)" \
		"$(tail -1 "$TMP/wait-err")"
else
	skip "wait on another user's job" "needs root and setpriv" 2
fi
daemon_stop
