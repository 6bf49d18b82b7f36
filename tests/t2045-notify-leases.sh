#!/usr/bin/env bash
# t2045-notify-leases.sh: notify hooks of `run` and `env` leases (issue 24's notifications, which
# covered submitted jobs only): the user's own gpuctl process (run's, env's holder) runs the hook
# when the daemon warns the lease idle, near its time limit, and, for `run --notify CMD`, when
# the job ends (done, failed); [defaults] notify runs for the lease's events, not at every
# run's end; a hanging hook is killed after notify_timeout and said; the job is not held up; a
# memory share under share_overuse = stop (run waits through its claim's watch) gets the idle
# warning on its terminal and in its hook too.
# [daemon] idle_warn 1s, usage_poll 0.2s: a job with no GPU process is idle at once.
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/daemon.sh"
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
echo "\$GPUCTL_EVENT kind=\$GPUCTL_LEASE_KIND lease=\$GPUCTL_LEASE_ID state=\$GPUCTL_JOB_STATE exit=\$GPUCTL_EXIT_CODE gpus=\$GPUCTL_GPUS job=\$GPUCTL_JOB_ID" >>"$EV"
EOF
chmod +x "$TMP/hook"
export XDG_CONFIG_HOME=$TMP/xdg
mkdir -p "$XDG_CONFIG_HOME/gpuctl"
: >"$XDG_CONFIG_HOME/gpuctl/config"

# run --notify: the idle warning, then the job's failure, with the job's exit status.
"$G" run -q -g 1 --ignore-usage --notify "$TMP/hook" -- sh -c '
	"$AWAIT_LINE" "^idle-warn kind=run" "$1"; exit 3' sh "$EV" 2>"$TMP/run.err"
check_eq "run --notify: the job's exit status is its own" 3 "$?"
await_line '^failed kind=run' "$EV"
check_grep "the hook sees the lease warned idle, its id and GPU" \
	"^idle-warn kind=run lease=[0-9a-f]{16} state=running exit= gpus=1 job=$" "$EV"
check_grep "and the job's end: failed, exit status 3" "^failed kind=run lease=[0-9a-f]{16} state=failed exit=3 gpus=1 job=$" "$EV"
"$G" run -q --ignore-usage --notify "$TMP/hook" -- true
await_line '^done kind=run' "$EV"
check_grep "a job that succeeds: done, exit status 0" "^done kind=run lease=[0-9a-f]{16} state=done exit=0 gpus=[01] job=$" "$EV"

# time-near: a tenth of the limit before it (2 s: the hook has that long to tell the job, which
# a loaded machine needs); the job is still running then.
: >"$EV"
"$G" run -q --ignore-usage --time 20s --notify "$TMP/hook" -- sh -c '
	"$AWAIT_LINE" "^time-near" "$1" && echo "near seen while running" >>"$1"' sh "$EV"
check_eq "run --time 20s: time-near reaches the hook while the job runs" "time-near state=running|near seen while running" \
	"$(awk '/^time-near/ {print $1, $4} /^near seen/ {print}' "$EV" | paste -sd'|')"

# [defaults] notify: the lease's events, not the job's end.
await_line '^done kind=run' "$EV" # (that job's end, told by a detached hook: not left to come later)
: >"$EV"
printf '[defaults]\nnotify = %s\n' "$TMP/hook" >"$XDG_CONFIG_HOME/gpuctl/config"
"$G" run -q --ignore-usage -- sh -c '"$AWAIT_LINE" "^idle-warn" "$1"' sh "$EV"
"$G" run -q --ignore-usage -- true
wait_leases 0
check_eq "[defaults] notify: run's idle warning runs it, its end does not" "idle-warn" "$(cut -d' ' -f1 "$EV" | sort -u | paste -sd' ')"

# env: the holder runs it (env --notify, else [defaults] notify).
: >"$EV"
: >"$XDG_CONFIG_HOME/gpuctl/config"
sh -c 'eval "$("$1" env -q --ignore-usage --notify "$2")" && "$AWAIT_LINE" "^idle-warn" "$3"' \
	sh "$G" "$TMP/hook" "$EV"
check_grep "env --notify: the holder runs the hook at the idle warning" \
	"^idle-warn kind=env lease=[0-9a-f]{16} state=running exit= gpus=[01] job=$" "$EV"
wait_leases 0

# A hanging hook: killed after notify_timeout, said on run's stderr; the job ran on meanwhile.
: >"$EV"
printf '#!/bin/sh\necho "$$" >"%s"\nexec sleep 300\n' "$TMP/hang.pid" >"$TMP/hang"
chmod +x "$TMP/hang"
printf '[defaults]\nnotify_timeout = 1s\n' >"$XDG_CONFIG_HOME/gpuctl/config"
"$G" run -q --ignore-usage --notify "$TMP/hang" -- sh -c '"$AWAIT_LINE" . "$1" && echo ran on' \
	sh "$TMP/hang.pid" >"$TMP/hang.out" 2>"$TMP/hang.err"
check_eq "the job is not held up by its hook" "ran on" "$(cat "$TMP/hang.out")"
await_line "notify hook for '(idle-warn|done)' still ran after its timeout \(notify_timeout\): killed" "$TMP/hang.err"
check_grep "a hook past notify_timeout is killed, and said" "still ran after its timeout \(notify_timeout\): killed" "$TMP/hang.err"
hp=$(cat "$TMP/hang.pid")
"$AWAIT_EXIT" 30 "$hp"
check "and its process is gone" "$AWAIT_EXIT" 0 "$hp"

# A memory share under share_overuse = stop: run waits through the claim's watch, which reads
# the idle watch as well.
daemon_stop
printf '[daemon]\nidle_warn = 1s\nusage_poll = 0.2s\nkill_grace = 1s\nshare_overuse = stop\n' >"$TMP/daemon.conf"
daemon_start
: >"$EV"
: >"$XDG_CONFIG_HOME/gpuctl/config"
"$G" run -q --mem 1G --notify "$TMP/hook" -- sh -c '"$AWAIT_LINE" "^idle-warn" "$1"' \
	sh "$EV" 2>"$TMP/share.err"
await_line '^done kind=run' "$EV"
check_grep "a share under share_overuse = stop: the idle warning on its terminal" \
	"^gpuctl run: lease [0-9a-f]{16} has been idle for" "$TMP/share.err"
check_eq "and its hook: idle-warn, then done" "idle-warn done" "$(cut -d' ' -f1 "$EV" | paste -sd' ')"
daemon_stop
