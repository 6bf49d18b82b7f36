# tests/lib/daemon.sh: helpers for the scripts that run a gpuctl daemon (source after lib.sh).
# The daemon runs as it does in production: as an unprivileged user of its own ('daemon' here,
# when the suite runs as root), with its socket and private state in a directory it owns.

# can_switch: true when the suite may act as other users (root, with setpriv, and those users
# can reach the build: tests/run.sh says why not in GPUCTL_TEST_NO_SWITCH).
can_switch() { [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && [ -z "${GPUCTL_TEST_NO_SWITCH:-}" ]; }
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/nonexistent "$@"; }

count_lines() { local n; n=$(grep -acE -- "$2" "$1" 2>/dev/null); echo "${n:-0}"; }

# daemon_setup: the run directory (as systemd's RuntimeDirectory) and the simulated processes.
daemon_setup() {
	DRUN=$TMP/run
	mkdir -p "$DRUN" "$TMP/procs"
	chmod 755 "$TMP" "$DRUN"
	chmod 1777 "$TMP/procs"
	export FAKENVML_PROC_DIR=$TMP/procs GPUCTL_SOCKET=$DRUN/gpuctl.sock GPUCTL_CONFIG_NOSYSTEM=1
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
	if ! await_count 'serving' "$DLOG" $((n + 1)) 20; then
		echo "# the daemon did not start:"; sed 's/^/#   /' "$DLOG"
		return 1
	fi
}

# daemon_stop: SIGTERM, and wait for it.
daemon_stop() { kill "$DAEMON" 2>/dev/null; wait "$DAEMON" 2>/dev/null; }

# wait_granted N / wait_ended N: until N leases in all were granted / have ended (the daemon
# logs each: these are events, not polls of the state).
wait_granted() { await_count 'lease [0-9a-f]+: uid' "$DLOG" "$1"; }
wait_ended() { await_count 'lease [0-9a-f]+ ended' "$DLOG" "$1"; }
