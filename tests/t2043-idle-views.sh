#!/usr/bin/env bash
# t2043-idle-views.sh: where an idle lease is seen (issue 24): [daemon] idle_warn 1s,
# usage_poll 0.2s. A notebook-like Python process leases a GPU and uses it not:
# - the same gpuctl.lease() call run twice (a cell run again) returns the lease it holds;
# - the idle warning reaches the process as a RuntimeWarning;
# - `doctor` has a finding naming the lease, its holder and the fix; the exporter has
#   gpuctl_lease_idle_seconds with the lease series' labels; `status --json` the lease's idle
#   seconds;
# - `top`'s card of the GPU says how long the lease has been idle, and that it was warned;
# - lease(time=1) warns at its limit, and its lease ends.
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/daemon.sh"
plan 11
quiet_machine "$TMP/m2" 2
use_machine "$TMP/m2"
daemon_setup
printf '[daemon]\nidle_warn = 1s\nusage_poll = 0.2s\n' >"$TMP/daemon.conf"
daemon_start
G=$GPUCTL
PY=$("${PYTHON:-python3}" -c 'import sys; print(sys.executable)')
export PYTHONPATH=$ROOT/python GPUCTL_BINARY=$GPUCTL PYTHONDONTWRITEBYTECODE=1
cat >"$TMP/nb.py" <<'EOF'
import sys, threading, warnings
import gpuctl
warnings.simplefilter("always")
seen = threading.Event()
# Each line in one write: print() writes its text and its newline apart, and the warning comes
# from the module's watcher thread, so a line of the main thread could land between the two.
def say(text):
    sys.stdout.write(text + "\n")
    sys.stdout.flush()
def show(message, category, filename, lineno, file=None, line=None):
    say("WARN %s: %s" % (category.__name__, message))
    seen.set()
warnings.showwarning = show
kw = {"ignore_usage": True, "name": "nb"}
if len(sys.argv) > 1:
    kw["time"] = float(sys.argv[1])
a = gpuctl.lease(1, **kw)
b = gpuctl.lease(1, **kw)
say("same %s %d" % (a is b, len(gpuctl.held())))
seen.wait(120)
say("done")
sys.stdin.readline()
EOF
mkfifo "$TMP/py-in"
exec {PYW}<>"$TMP/py-in"
"$PY" "$TMP/nb.py" <"$TMP/py-in" >"$TMP/py-out" 2>"$TMP/py-err" &
NB=$!
await_line "^same " "$TMP/py-out"
check_eq "a cell run twice holds one lease (the same Lease returned)" "same True 1" \
	"$(grep '^same ' "$TMP/py-out")"
grep -q '^same True 1$' "$TMP/py-out" || sed 's/^/#   /' "$TMP/py-out" "$TMP/py-err" | head -20
check_eq "the daemon holds one lease" 1 "$(live_leases)"
await_line "^WARN " "$TMP/py-out"
check_grep "the idle warning is a RuntimeWarning in the process" \
	"^WARN RuntimeWarning: lease [0-9a-f]+ on GPU 0 has been idle for [0-9]+ s \(no process of yours uses it\)" \
	"$TMP/py-out"
"$G" doctor >"$TMP/doctor" 2>&1
check_grep "doctor: the GPU leased and idle, with its holder" \
	"GPU 0 leased by root \(lease [0-9a-f]+, pid [0-9]+, env, nb\) and idle for [0-9]+:[0-9]{2}:[0-9]{2}" "$TMP/doctor"
check_grep "and the fix" "gpuctl release --lease [0-9a-f]+" "$TMP/doctor"
start_exporter
curl -sf "http://127.0.0.1:$PORT/metrics" >"$TMP/metrics"
stop_exporter
check "the exporter: gpuctl_lease_idle_seconds, labelled as the lease series" \
	awk '/^gpuctl_lease_idle_seconds\{/ && /holder="root"/ && /lease_name="nb"/ && /kind="env"/ && $NF >= 1 {ok = 1} END {exit !ok}' "$TMP/metrics"
check_grep "with HELP" "^# HELP gpuctl_lease_idle_seconds " "$TMP/metrics"
"$G" status --json >"$TMP/out"
check "status --json: the lease's idle seconds" jq -e '[.gpus[] | .lease | select(. != null) | .idle_seconds >= 1] == [true]' "$TMP/out"
if command -v tmux >/dev/null; then
	. "$ROOT/tests/lib/tmux.sh"
	"${TM[@]}" new-session -d -s idle -x 160 -y 40 -e LC_ALL=C "$G" top -d 0.2
	check "top: the lease's card says how long it has been idle, and that it was warned" \
		await_screen idle "lease root 'nb' env [0-9]+:[0-9]{2} +idle [0-9]+:[0-9]{2} warned"
	"${TM[@]}" kill-server
else
	skip "top's idle time" "tmux is not installed" 1
fi
echo >&$PYW
wait $NB
wait_leases 0

# time=: a warning at the limit, and the lease ends.
printf '[daemon]\nidle_warn = none\n' >"$TMP/daemon.conf"
daemon_stop
daemon_start
: >"$TMP/py-out"
"$PY" "$TMP/nb.py" 1 <"$TMP/py-in" >"$TMP/py-out" 2>"$TMP/py-err" &
NB=$!
await_line "^WARN " "$TMP/py-out"
check_grep "lease(time=1) warns at its limit" "^WARN RuntimeWarning: lease [0-9a-f]+ reached its time limit" \
	"$TMP/py-out"
check "and its lease has ended" wait_leases 0
echo >&$PYW
wait $NB
daemon_stop
