# tests/daemon.sh: helpers for the scripts that run a gpuctl daemon (source after lib.sh).
# The daemon runs as it does in production: as an unprivileged user of its own ('daemon' here,
# when the suite runs as root), with its socket and private state in a directory it owns.

# can_switch: true when the suite may act as other users (root, with setpriv).
can_switch() { [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; }
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/nonexistent "$@"; }

# wait_count FILE REGEX N [SECONDS]: wait (10 s at most by default) until N lines of FILE match.
wait_count() {
	local end=$(($(date +%s%N) + ${4:-10} * 1000000000))
	until [ "$(count_lines "$1" "$2")" -ge "$3" ]; do
		[ "$(date +%s%N)" -lt "$end" ] || return 1
		sleep 0.01
	done
}
wait_line() { wait_count "$1" "$2" 1 "${3:-10}"; }
count_lines() { local n; n=$(grep -acE -- "$2" "$1" 2>/dev/null); echo "${n:-0}"; }

# daemon_setup: the run directory (as systemd's RuntimeDirectory) and the simulated processes.
daemon_setup() {
	DRUN=$TMP/run
	mkdir -p "$DRUN" "$TMP/procs"
	chmod 755 "$TMP" "$DRUN"
	chmod 1777 "$TMP/procs"
	export FAKENVML_PROC_DIR=$TMP/procs GPUCTL_SOCKET=$DRUN/gpuctl.sock GPUCTL_CONFIG_NOSYSTEM=1
	export XDG_CONFIG_HOME=$TMP/xdg
	unset GPUCTL_STATE_DIR
	DUSER=$(id -un)
	if can_switch && id daemon >/dev/null 2>&1; then
		DUSER=daemon
		chown daemon: "$DRUN"
	fi
	: >"$TMP/daemon.conf"
	DLOG=$TMP/daemon.log
	: >"$DLOG"
}

# daemon_start [ARGS...]: start the daemon and wait until it serves; its pid is in $DAEMON.
daemon_start() {
	local n
	n=$(count_lines "$DLOG" 'serving')
	if [ "$DUSER" = "$(id -un)" ]; then
		"$GPUCTL" daemon --socket "$GPUCTL_SOCKET" --state-dir "$DRUN/state" \
			--config "$TMP/daemon.conf" "$@" >>"$DLOG" 2>&1 &
	else
		setpriv --reuid="$DUSER" --regid="$DUSER" --clear-groups "$GPUCTL" daemon \
			--socket "$GPUCTL_SOCKET" --state-dir "$DRUN/state" --config "$TMP/daemon.conf" \
			"$@" >>"$DLOG" 2>&1 &
	fi
	DAEMON=$!
	if ! wait_count "$DLOG" 'serving' $((n + 1)); then
		echo "# the daemon did not start:"; sed 's/^/#   /' "$DLOG"
		return 1
	fi
}

# daemon_stop: SIGTERM, and wait for it.
daemon_stop() { kill "$DAEMON" 2>/dev/null; wait "$DAEMON" 2>/dev/null; }

# wait_granted N / wait_ended N: until N leases in all were granted / have ended (the daemon
# logs each: these are events, not polls of the state).
wait_granted() { wait_count "$DLOG" 'lease [0-9a-f]+: uid' "$1"; }
wait_ended() { wait_count "$DLOG" 'lease [0-9a-f]+ ended' "$1"; }

live_leases() { "$GPUCTL" leases --json | jq '.leases | length'; }
queue_len() { "$GPUCTL" leases --json | jq '.queue | length'; }
