# tests/lib/tmux.sh: driving a full-screen program (gpuctl top) in a private tmux server of the
# script's own (TM), for the top scripts: its screen, keys, typed text, pane facts, and a wait on
# the screen. The script ends the server itself (kill-server) when it exits.
TM=(env LC_ALL=C.UTF-8 tmux -S "$TMP/tmux.sock" -f /dev/null)
screen_of() { "${TM[@]}" capture-pane -p -t "$1"; }
keys() { local s=$1; shift; "${TM[@]}" send-keys -t "$s" "$@"; }
typed() { "${TM[@]}" send-keys -t "$1" -l "$2"; }
pane() { "${TM[@]}" display-message -p -t "$1" "$2"; }
# await_screen SESSION PATTERN [SECONDS]: until a line of the screen matches the extended regex
# (the deadline, 30 s by default, is reached only when something is wrong).
await_screen() {
	local s=$1 pat=$2 end=$((SECONDS + ${3:-30}))
	until screen_of "$s" | grep -qE -- "$pat"; do
		if [ $SECONDS -ge $end ]; then
			echo "# timed out waiting for /$pat/ on $s:"
			screen_of "$s" | sed 's/^/#   /'
			return 1
		fi
		sleep 0.05
	done
}
