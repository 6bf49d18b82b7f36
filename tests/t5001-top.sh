#!/usr/bin/env bash
# t5001-top.sh: gpuctl top on a terminal, driven through tmux (new-session -x -y, send-keys,
# capture-pane): the screen at 80x24 and 200x50, sorting, filters, resizing, help, details, the
# history of a changing machine, signalling an own process (and the refusals for another
# user's), colour and NO_COLOR, TERM=dumb, redrawing only what changed, and clean exits on q,
# Ctrl-C, SIGTERM and a lost terminal. Every wait is for something on the screen (or a process's
# end), with a deadline only a failure reaches.
. "$(dirname "$0")/lib/lib.sh"
plan 94
use_state
chmod 755 "$TMP"
WL=$B/workload
# -d and --grace read durations as run --wait does; values are checked before the terminal is.
check_exit "-d 500ms --grace 1m: accepted" 2 "$GPUCTL" top -d 500ms --grace 1m
check_grep "then refused for want of a terminal" "needs a terminal" "$TMP/stderr"
check_exit "-d 10ms: refused, under the least delay (0.05 s)" 2 "$GPUCTL" top -d 10ms
check_grep "says so" "^gpuctl top: -d wants seconds from 0.05 to 1000000 \(fractions allowed\) or a duration such as 500ms, 30s or 5m, not '10ms'" "$TMP/stderr"
if ! command -v tmux >/dev/null; then
	skip "top" "tmux is not installed" 85
	exit 0
fi

# Four H100s; GPU 1's use alternates 0 and 100 at every read (a refresh reads it once), GPU 2 is
# held down by its power cap; a process NVML lists that /proc does not show, on GPU 3.
M=$TMP/m4
{
	echo "driver_version = 550.54.15"
	echo "cuda_driver_version = 12040"
	for i in 0 1 2 3; do
		printf '[gpu]\nname = NVIDIA H100 80GB HBM3\nuuid = GPU-%08x-1111-2222-3333-444444444444\n' "$i"
		printf 'pci_bus_id = 00000000:%02X:00.0\nmemory_total_mib = 81559\nmemory_used_mib = %d\n' \
			$((0x18 + i)) $((i * 1000))
		printf 'util_gpu = %s\nutil_memory = 0\ntemperature = 35\npower_mw = 70000\n' \
			"$([ $i = 1 ] && echo "0 100" || echo $((i * 10)))"
		printf 'power_limit_mw = 700000\nfan = NA\nclock_sm = 1980\nmax_clock_sm = 1980\n'
		printf 'clock_memory = 2619\nmax_clock_memory = 2619\npcie_gen = 5\npcie_width = 16\n'
		printf 'pcie_rx_kbs = 2000\npcie_tx_kbs = 1000\nutil_encoder = 0\nutil_decoder = 0\n'
		printf 'clocks_event_reasons = %s\ncompute_mode = Default\nmig_mode = 0\n\n' \
			"$([ $i = 2 ] && echo 4 || echo 0)"
	done
	printf '[process]\ngpu = 3\npid = 4000001\nused_memory_mib = 20000\n'
} >"$M"
use_machine "$M"

# The terminal server: private socket, no configuration; UTF-8 by default, LC_ALL=C panes draw
# in ASCII. A pane runs its command through $TMP/in-pane, which records the command's pid and
# exit status (tmux 3.3 sometimes never reaps a pane's process, so its own record of the status
# cannot be relied on) and keeps the pane open to be looked at.
. "$ROOT/tests/lib/tmux.sh"
# At the end the server goes, and with it every pane; the wrappers are awaited (they write).
finish() {
	"${TM[@]}" kill-server 2>/dev/null
	"$AWAIT_EXIT" 10 $(cat "$TMP"/*.wrapper 2>/dev/null) >/dev/null
}
trap 'main_shell && { finish; finish_script; }' EXIT
cat >"$TMP/in-pane" <<'EOF'
#!/bin/bash
# in-pane BASE CMD...: CMD, its pid in BASE.pid and its exit status in BASE.rc; a lost terminal
# does not end this wrapper, so the status is written.
base=$1
shift
echo $$ >"$base.wrapper"
trap '' HUP
sh -c 'echo $$ >"$0"; exec "$@"' "$base.pid" "$@"
echo $? >"$base.tmp" && mv "$base.tmp" "$base.rc"
exec cat
EOF
chmod +x "$TMP/in-pane"

# top_in NAME COLS ROWS [VAR=VALUE...] -- CMD...: CMD (gpuctl top ...) in a new detached session.
top_in() {
	local name=$1 x=$2 y=$3 envs=(-e LC_ALL=C)
	shift 3
	while [ "$1" != "--" ]; do envs+=(-e "$1"); shift; done
	shift
	"${TM[@]}" new-session -d -s "$name" -x "$x" -y "$y" "${envs[@]}" "$TMP/in-pane" "$TMP/$name" "$@"
}
# await_gone SESSION PATTERN: until no line of the screen matches.
await_gone() {
	local end=$((SECONDS + 20))
	while screen_of "$1" | grep -qE -- "$2"; do
		[ $SECONDS -ge $end ] && { echo "# /$2/ still on $1"; return 1; }
		sleep 0.05
	done
}
# await_exit SESSION: until its command has ended; prints its exit status.
await_exit() { await_line . "$TMP/$1.rc" 20 >/dev/null && cat "$TMP/$1.rc"; }
# pids SESSION: the PID column of the process table, in screen order.
pids() { screen_of "$1" | awk '/USER +PID/ { on = 1; next } on && $2 ~ /^[0-9]+$/ { print $2 }'; }

check_exit "no terminal: refused" 2 "$GPUCTL" top
check_grep "and says what to use" "needs a terminal.*status --json --details" "$TMP/stderr"
top_in dumb 200 24 -- env TERM=dumb "$GPUCTL" top
check_eq "TERM=dumb: refused (exit 2)" 2 "$(await_exit dumb)"
check "with the reason" await_screen dumb "^gpuctl top: the terminal \(TERM=dumb\) cannot draw a full screen"

# Redrawing only what changed: a pane whose output is counted while it refreshes every 50 ms.
top_in bytes 80 24 "FAKENVML_STATS=$TMP/stats" -- "$GPUCTL" top -d 0.05
"${TM[@]}" pipe-pane -o -t bytes "cat >>'$TMP/bytes'"

# Each workload carries a tag of its own, and the filters name the tag: a pid typed as a filter
# also matches other rows whose text holds its digits (pid 1000 and "--mem 1000", in a container's
# small pid space).
CUDA_VISIBLE_DEVICES=0 "$WL" --mem 3000 --tag wlone & wl1=$!
CUDA_VISIBLE_DEVICES=2 "$WL" --mem 1000 --tag wltwo & wl2=$!
await_workload $wl1
await_workload $wl2
root=false
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	root=true
	NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/nonexistent)
	CUDA_VISIBLE_DEVICES=3 "${NOBODY[@]}" "$WL" --mem 1500 --tag wlother & other=$!
	await_workload $other
fi
nprocs=$($root && echo 4 || echo 3)

# Nothing on top's screen that status --json --details cannot tell.
check_exit "--details goes with --json" 2 "$GPUCTL" status --details
"$GPUCTL" status --json --details >"$TMP/out"
check_eq "details of a GPU: clocks, PCIe, throttle reasons, thresholds, codecs" \
	'[1980,1980,2000,1000,["sw_power_cap"],0,null]' \
	"$(jqv '.gpus[2] | [.clocks_mhz.sm, .clocks_max_mhz.sm, .pcie_rx_kb_s, .pcie_tx_kb_s, .clocks_event_reasons, .utilization_encoder_pct, .fan_pct]')"
check_eq "of a process: its parent, memory and run time from /proc (CPU: after a refresh)" \
	"[$$,true,true,null]" \
	"$(jqv "[.gpus[].processes[] | select(.pid == $wl1) | .parent_pid, (.rss_mib > 0), (.elapsed_s >= 0), .cpu_pct]")"
"$GPUCTL" status --json --details --loop 0.05 --count 2 | tail -1 >"$TMP/out"
check_eq "in a loop, CPU since the refresh before" true \
	"$(jqv "[.gpus[].processes[] | select(.pid == $wl1) | .cpu_pct >= 0] | .[0]")"
check_eq "the host and the queue" '[true,[]]' "$(jqv '[(.hostname | length > 0), .queue]')"

# The 80x24 screen.
top_in main 80 24 -- "$GPUCTL" top -d 0.2
"${TM[@]}" pipe-pane -o -t main "cat >>'$TMP/main.out'"
check "80x24: the process table is drawn" await_screen main "^$nprocs processes  sort gmem"
screen_of main >"$TMP/80x24"
check_grep "header: host, GPUs, driver, refresh" "^ gpuctl top  .*  4 GPUs  driver 550.54.15 .*every 0.2s  [0-9:]{8}" "$TMP/80x24"
check_grep "a GPU: bars with numbers, temperature, power/limit" "^2 H100 80GB HBM3 GPU\[\|{4} +20%\] MEM\[\| +3000/81559M\] 35C 70/700W$" "$TMP/80x24"
check_grep "its details: fan, clocks, codecs, PCIe rx/tx" "^  fan N/A sm 1980/1980MHz mem 2619/2619MHz enc 0% dec 0% rx 2.0M/s tx 1.0M/s$" "$TMP/80x24"
check_grep "throttle reasons when throttled" "^  (not leased|no lease daemon) throttled: power cap" "$TMP/80x24"
check_grep "columns" "^USER +PID +GPU +GMEMv +SM% +MEM% +CPU% +RSS +TIME COMMAND" "$TMP/80x24"
check_grep "own process: user, pid, GPU, memory, CPU, RSS, time, command (cut)" "^$(id -un) +$wl1 +0 +3000M +- +- +[0-9.-]+ +[0-9.]+[KMG] +[0-9]+:[0-9:]+ ${WL:0:15}" "$TMP/80x24"
check_grep "a process /proc does not show" "^- +4000001 +3 +20000M .*\(not in /proc" "$TMP/80x24"
check_grep "the footer lists the keys" "^q Quit \? Help Tab Pane / Filter" "$TMP/80x24"
check_eq "sorted by GPU memory" "4000001 $wl1 $($root && echo "$other ")$wl2" "$(pids main | xargs)"

# Sorting.
keys main N
check "N sorts by pid" await_screen main "sort pid"
check_eq "in pid order" "$(pids main | sort -n | xargs)" "$(pids main | xargs)"
keys main I
check "I inverts it" await_screen main "sort pid \(inverted\)"
check_eq "in reverse pid order" "$(pids main | sort -rn | xargs)" "$(pids main | xargs)"
keys main '>'
check "> moves to the next column" await_screen main "sort gpu$"

# Filters.
keys main /
typed main "mem 3000"
keys main Enter
check "/ filters by text" await_screen main "1 row shown  sort gpu  filter 'mem 3000'"
check_eq "only the matching process" "$wl1" "$(pids main | xargs)"
keys main c
check "c clears the filters" await_screen main "^$nprocs processes  sort gpu$"
keys main m
check "m: only mine" await_screen main "row.? shown.*  mine$"
check_eq "my processes" "$(printf '%s\n' $wl1 $wl2 | sort -n | xargs)" "$(pids main | sort -n | xargs)"
keys main c g
typed main 2
keys main Enter
check "g: only a GPU's processes" await_screen main "  GPU 2$"
check_eq "those on GPU 2" "$wl2" "$(pids main | xargs)"
keys main c

# Tree view: the test's shell started the workloads (no GPU of its own): it heads them.
keys main t
check "t: the tree of each job" await_screen main "  tree$"
check_eq "the workloads' parent first (sorted by GPU: it has none)" "$$" "$(pids main | head -1)"
check "the workloads under it" await_screen main "^$(id -un) +$wl2 +2 .* (\||\`)- /"
keys main t

# Help, and details.
keys main '?'
check "? shows the help" await_screen main "^gpuctl top: keys"
check_grep "which lists the keys" "k  F9 +signal the selected process" <(screen_of main)
keys main Escape
check "Esc closes it" await_screen main "^$nprocs processes"
keys main / ; typed main wltwo; keys main Enter
check "one process selected" await_screen main "1 row shown"
keys main Enter
check "Enter: its details" await_screen main "^ Command line:"
check_grep "its environment as it was started" "^   CUDA_VISIBLE_DEVICES=2$" <(screen_of main)
check_grep "and what doctor --pid finds" "^   info \[pid_summary\] process $wl2 was started with CUDA_VISIBLE_DEVICES=2" <(screen_of main)
keys main Escape c

# Resizing: 200x50 uses the room (cards side by side), and back.
"${TM[@]}" resize-window -t main -x 200 -y 50
check "200x50: two GPUs a line" await_screen main "^0 H100 80GB HBM3 +GPU\[.* 1 H100 80GB HBM3 +GPU\["
screen_of main >"$TMP/200x50"
check_grep "with the codec columns" "ENC% +DEC%" "$TMP/200x50"
check "and the command whole" grep -qE "$WL --mem 1000 --tag wltwo$" "$TMP/200x50"
"${TM[@]}" resize-window -t main -x 80 -y 24
check "back to 80x24: one GPU a line" await_screen main "^1 H100 80GB HBM3 GPU\["

# History of a changing machine: GPU 1 alternates 0% and 100%, one column per refresh.
top_in hist 80 24 -- "$GPUCTL" top -d 0.05 -g 1 --graphs
check "history graph after a few refreshes" await_screen hist "util .*(# ){8}"
check_grep "labelled with the last sample and its span" "^  (0|100)% +" <(screen_of hist)
keys hist q

# Signalling an own process: asked, TERM, ended.
keys main / ; typed main wlone; keys main Enter
check "own process selected" await_screen main "1 row shown.*filter 'wlone'"
keys main k
# The answer first, the command after it (a long command line must not push [y/N] off 80 columns).
check "k asks first" await_screen main "^Send SIGTERM to pid $wl1, then SIGKILL after 10 s\? \[y/N\]  /"
keys main y
check "y signals it: it ends" await_screen main "pid $wl1 ended"
wait $wl1 2>/dev/null
check_eq "the process is gone" 1 "$(kill -0 $wl1 2>/dev/null; echo $?)"
keys main c / ; typed main wltwo; keys main Enter k
await_screen main "^Send SIGTERM to pid $wl2" >/dev/null
keys main n
check "n declines" await_screen main "not signalled"
check "and the process runs on" kill -0 $wl2

# Another user's processes.
if $root; then
	keys main c / ; typed main wlother; keys main Enter k
	check "root: asked to name the owner" await_screen main "^pid $other is nobody's: to signal it .* type nobody"
	typed main "root"
	keys main Enter
	check "a wrong name: not signalled" await_screen main "not signalled: 'root' is not pid $other's owner"
	check "nobody's process runs on" kill -0 $other
	top_in asnobody 80 24 -- "${NOBODY[@]}" "$GPUCTL" top -d 0.2 --filter wltwo
	await_screen asnobody "1 row shown" >/dev/null
	keys asnobody k
	check "nobody may not signal root's process" await_screen asnobody "refused: pid $wl2 is root's"
	check "which runs on" kill -0 $wl2
	keys asnobody q
	keys main k
	await_screen main "type nobody" >/dev/null
	typed main nobody
	keys main Enter
	check "root naming the owner may signal it" await_screen main "pid $other ended"
	wait $other 2>/dev/null
else
	skip "another user's process" "needs root and setpriv to act as a second user" 6
fi

# Another user's text on top's screen: a process name with OSC, BEL, CSI, CR, newline, DEL, a C1
# CSI and bytes that are not UTF-8. What top writes to the terminal (pipe-pane: its raw bytes)
# holds none of them (curses' own codes are CSI and charset escapes: no OSC, BEL, DEL or C1);
# the screen shows them escaped, in the table and in the details (on a UTF-8 terminal, where
# text that is UTF-8 is written as it is).
H=$'job\e]0;owned\a\e[2J\r\nforged\x7f\xc2\x9bx\xff\xfeend'
CUDA_VISIBLE_DEVICES=1 bash -c 'exec -a "$0" "$@"' "$H" "$WL" --mem 400 --tag wlhostile & hp=$!
await_workload $hp
top_in hostile 200 30 LC_ALL=C.UTF-8 -- "$GPUCTL" top -d 0.1 --filter wlhostile
"${TM[@]}" pipe-pane -o -t hostile "cat >>'$TMP/hostile.out'"
check "a hostile process name is shown escaped" \
	await_screen hostile 'job\\e\]0;owned\\a\\e\[2J\\r\\nforged\\x7f\\u009bx\\xff\\xfeend'
keys hostile Enter
check "in the details too" await_screen hostile '^   job\\e\]0;owned\\a'
keys hostile Escape q
await_exit hostile >/dev/null
check_eq "no OSC, BEL, DEL, C1 or stray byte of theirs reached the terminal" "0 drawn" \
	"$(LC_ALL=C grep -ac $'\e]\\|\a\\|\x7f\\|\xc2\x9b\\|\xff' "$TMP/hostile.out") $(grep -q 'owned' "$TMP/hostile.out" && echo drawn)"
kill $hp
wait $hp 2>/dev/null

# A process that ignores SIGTERM: SIGKILL after --grace. Quitting before the grace period ends
# sends no SIGKILL, and top says so on its way out (the screen that would have said it is gone).
CUDA_VISIBLE_DEVICES=1 "$WL" --ignore-term 1 --mem 500 --tag wlstubone & st1=$!
CUDA_VISIBLE_DEVICES=1 "$WL" --ignore-term 1 --mem 600 --tag wlstubtwo & st2=$!
await_workload $st1
await_workload $st2
top_in stub 80 24 -- "$GPUCTL" top -d 0.2 --grace 0.3 --filter wlstubone
await_screen stub "1 row shown" >/dev/null
keys stub k
await_screen stub "^Send SIGTERM to pid $st1" >/dev/null
keys stub y
check "TERM ignored: SIGKILL after --grace" await_screen stub "pid $st1 killed with SIGKILL after the grace period"
wait $st1 2>/dev/null
check_eq "the process was killed by SIGKILL" 137 $?
keys stub q
top_in stub2 80 24 -- "$GPUCTL" top -d 0.2 --grace 60 --filter wlstubtwo
await_screen stub2 "1 row shown" >/dev/null
keys stub2 k
await_screen stub2 "^Send SIGTERM to pid $st2" >/dev/null
keys stub2 y
await_screen stub2 "SIGTERM sent to pid $st2" >/dev/null
keys stub2 q
check_eq "q before the grace period ends: exit 0" 0 "$(await_exit stub2)"
check "saying no SIGKILL was sent" await_screen stub2 "^gpuctl top: pid $st2 got SIGTERM and still runs; top quit before"
check "and the process runs on" kill -0 $st2
kill -KILL $st2
wait $st2 2>/dev/null

# Colour, and NO_COLOR (capture-pane -e shows the attributes as escape sequences).
top_in colour 80 24 -- "$GPUCTL" top --color=always
top_in nocolour 80 24 NO_COLOR=1 -- "$GPUCTL" top
await_screen colour "processes" >/dev/null
await_screen nocolour "processes" >/dev/null
"${TM[@]}" capture-pane -e -p -t colour >"$TMP/colour"
"${TM[@]}" capture-pane -e -p -t nocolour >"$TMP/nocolour"
SGR_COLOUR=$'\e\\[([0-9]+;)*3[1-6](;[0-9]+)*m'
check_grep "--color=always: colours" "$SGR_COLOUR" "$TMP/colour"
check "NO_COLOR: none" bash -c "! grep -qE \"\$0\" \"\$1\"" "$SGR_COLOUR" "$TMP/nocolour"
check_grep "but attributes still (the header in reverse)" $'\e\\[7m' "$TMP/nocolour"

# Leases and the queue (this user's private daemon): my env lease on GPU 3 shows on its card,
# a request waiting for it in the queue panel; R releases the lease, and the waiter gets it.
"$B/sleeper" & holdp=$!
"$GPUCTL" env -q -n 1 -g 3 --ignore-usage --hold-pid $holdp >/dev/null 2>"$TMP/env.err"
"$GPUCTL" run -q -g 3 --ignore-usage --wait -- true 2>/dev/null & waiter=$!
top_in lease 80 24 -- "$GPUCTL" top -d 0.2 -g 3
check "the card shows my lease, and for how long" await_screen lease "^  lease $(id -un) env [0-9]+:[0-9]{2}"
check "the queue panel: the waiting request, its user, size and wait" \
	await_screen lease "^ +1\. $(id -un) +pid $waiter +wants 1 GPU +waiting [0-9]+:[0-9]{2}"
keys lease Tab R
check "R asks first" await_screen lease "^Release lease [0-9a-f]{16} \(1 GPU, holder pid [0-9]+ gets SIGTERM\)\? \[y/N\]"
keys lease y
check "y releases it" await_screen lease "lease [0-9a-f]{16} released"
wait $waiter
check_eq "and the waiter got the GPU" 0 $?
check "and the queue panel goes" await_gone lease "^Queue: "
keys lease q
kill $holdp 2>/dev/null

# A daemon that accepts but never answers (a stand-in at GPUCTL_SOCKET): the screen stays live,
# the status line says so and when top asks again (not before 30 s), and q or Ctrl-C while the
# question is pending quit at once, not when the client's timeout runs out.
cat >"$TMP/stuck.py" <<'EOF'
import socket, sys
path, log = sys.argv[1:3]
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.bind(path)
s.listen(16)
conns = []
print("listening", file=open(log, "a"), flush=True)
while True:
    conns.append(s.accept()[0])   # kept open, never answered
    print("accepted %d" % len(conns), file=open(log, "a"), flush=True)
EOF
python3 "$TMP/stuck.py" "$TMP/stuck.sock" "$TMP/stuck.log" & stuck=$!
await_line '^listening' "$TMP/stuck.log"
top_in stuck 80 24 GPUCTL_SOCKET="$TMP/stuck.sock" GPUCTL_DAEMON_TIMEOUT=1 -- "$GPUCTL" top -d 0.1
check "stuck daemon: the screen is live meanwhile" await_screen stuck "processes"
check "and the status line says why there are no leases, and when it asks again" \
	await_screen stuck "leases: the daemon did not answer \(retrying in [0-9]+ s\)"
# Two connections: the snapshot asked for at start (unanswered within its 2 s: top reads the
# machine itself from then on, issue 22), and the leases' one question.
check_eq "and it is not asked at every refresh (0.1 s): once so far (and the snapshot once)" 2 "$(grep -c accepted "$TMP/stuck.log")"
keys stuck q
await_exit stuck >/dev/null
# Quitting while the question is pending (an answer timeout of 60 s): await_exit gives up after
# 20 s, so a top that waited for the answer's timeout fails; how fast it quits is no test's.
for how in q C-c; do
	n=$(grep -c accepted "$TMP/stuck.log")
	top_in "stuck$how" 80 24 GPUCTL_SOCKET="$TMP/stuck.sock" GPUCTL_DAEMON_TIMEOUT=60 -- "$GPUCTL" top -d 0.1
	await_count accepted "$TMP/stuck.log" $((n + 1)) >/dev/null
	await_screen "stuck$how" "processes" >/dev/null
	keys "stuck$how" "$how"
	rc=$(await_exit "stuck$how")
	check_eq "$how while the daemon has not answered: top quits, not waiting for the answer's timeout (exit 0)" \
		0 "$rc"
done
kill $stuck

# Clean exits: the status and the terminal given back (no alternate screen, cursor shown).
keys main q
check_eq "q: exit 0" 0 "$(await_exit main)"
check_eq "the terminal is given back: the main screen" 0 "$(pane main '#{alternate_on}')"
check "and the cursor shown again" grep -q $'\e\\[?25h' <(tail -c 100 "$TMP/main.out")
keys colour C-c
check_eq "Ctrl-C: exit 0" 0 "$(await_exit colour)"
kill -TERM "$(cat "$TMP/nocolour.pid")"
check_eq "SIGTERM: exit 0" 0 "$(await_exit nocolour)"
check_eq "and the terminal given back" 0 "$(pane nocolour '#{alternate_on}')"
# A lost terminal: the session goes away (its terminal hangs up).
top_in lost 80 24 -- "$GPUCTL" top
await_screen lost "processes" >/dev/null
"${TM[@]}" kill-session -t lost
check "a lost terminal: top ends" await_line . "$TMP/lost.rc" 20
check_eq "cleanly (exit 0)" 0 "$(cat "$TMP/lost.rc")"

# Redrawing only what changed: with one number changing per refresh, each refresh sends a few
# bytes to the terminal, not the screen (80x24 is about 2 KB).
t0=$(screen_of bytes | sed -n 's/.*every 0.05s  \([0-9:]*\) *$/\1/p')
t2=$(date -d "$t0 2 seconds" +%H:%M:%S 2>/dev/null)
await_screen bytes "every 0.05s  $t2" 30 >/dev/null
keys bytes q
await_exit bytes >/dev/null
refreshes=$(awk '$1 == "nvmlDeviceGetUtilizationRates" { print int($2 / 4) }' "$TMP/stats")  # 4 GPUs
bytes=$(stat -c %s "$TMP/bytes")
check "a steady screen sends little: $bytes bytes in $refreshes refreshes" \
	test "${refreshes:-0}" -ge 20 -a "$bytes" -lt $((400 * ${refreshes:-1}))
kill $wl2 2>/dev/null
