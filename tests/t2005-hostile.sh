#!/usr/bin/env bash
# t2005-hostile.sh: another user controls their process names, command lines and lease names;
# none of their control bytes (ESC, OSC, BEL, CR, newline, DEL, C1 CSI) may reach a terminal
# (issue 11.12): status (table, lease line, loop on a pty), the nvidia-smi CSV (a newline must
# not forge a row), kill's list, prompt and report, doctor's messages, map/which --pid.
# Shown escaped, as ps and ls do (\e, \n, \x7f, \u009b; a backslash doubled). Nor may their
# invisible format characters: a right-to-left override (U+202E) shows "txt.py" as "yp.txt", so it
# is escaped too (\u202e), and in JSON written as the escape \u202e (the same string).
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/daemon.sh"
plan 22
quiet_machine "$TMP/m4" 4
use_machine "$TMP/m4"
daemon_setup
daemon_start
WL=$B/workload
H=$'job\e]0;owned\a\e[2J\r\nforged\x7f\xc2\x9bx\xe2\x80\xaeyp.txt'
SHOWN='job\e]0;owned\a\e[2J\r\nforged\x7f\u009bx\u202eyp.txt'
# raw FILE: the lines of FILE holding a control byte other than the newline ending each line
# (our own codes are removed first: colours, clearing, the cursor, and the CR a terminal adds
# before each newline), or a bidirectional control (U+200E/F, U+202A-E, U+2066-9).
raw() {
	sed 's/\x1b\[[0-9;]*[mKJH]//g; s/\x1b\[?25[hl]//g; s/\r$//' "$1" |
		LC_ALL=C grep -an $'[\x01-\x08\x0b-\x1f\x7f]\|\xc2[\x80-\x9f]\|\xe2\x80[\x8e\x8f\xaa-\xae]\|\xe2\x81[\xa6-\xa9]'
}
shown() { grep -aqF -- "$SHOWN" "$1"; }

# A lease named by the other user, its job on GPU 1, and a process named by them on GPUs 1-3
# that ignores its CUDA_VISIBLE_DEVICES (doctor quotes it: late_visibility, lease_violation).
mkfifo "$TMP/fifo"
"$GPUCTL" run -q -g 1 --name "$H" -- "$WL" --log "$TMP/log" --tag lease --until "$TMP/fifo" & runner=$!
await_line '^start lease' "$TMP/log"
CUDA_VISIBLE_DEVICES=0 bash -c 'exec -a "$0" "$@"' "$H" "$WL" --mode ignore --mem 700 & P=$!
await_workload $P

"$GPUCTL" status >"$TMP/st"
check_eq "status: no control byte of theirs reaches the terminal" "" "$(raw "$TMP/st")"
check "status: the process name is shown escaped" shown "$TMP/st"
check_grep "status: the lease name too" "lease: $(id -un) 'job\\\\e\]0;owned" "$TMP/st"
check_eq "status: a newline in a name forges no line of its own" "" "$(grep -av '^driver \|^GPU \|^ *[0-9] \|^      ' "$TMP/st")"
python3 "$ROOT/tests/helper/pty_run.py" --rows 40 "$TMP/tty" "$GPUCTL" status -l 0.05 -c 2
check_eq "status -l on a terminal: no control byte of theirs" "" "$(raw "$TMP/tty")"
"$GPUCTL" status --query-compute-apps=pid,process_name --format=csv,noheader >"$TMP/csv"
check_eq "CSV: one row per process; the newline forges no row" 5 "$(wc -l <"$TMP/csv")"
check_eq "CSV: no control byte or bidi override of theirs" "" "$(raw "$TMP/csv")"
"$GPUCTL" status --json >"$TMP/json"
check_eq "JSON: the override and the C1 control written as escapes, not raw" "" "$(raw "$TMP/json")"
check_eq "JSON: and the lease name read back is theirs, byte for byte" "${H}x" \
	"$(jq -j '.gpus[1].lease.name' "$TMP/json"; echo x)"
"$GPUCTL" leases >"$TMP/leases"
check_eq "leases: no control byte or bidi override of theirs" "" "$(raw "$TMP/leases")"
check_grep "CSV: the name escaped in its row" "^$P, job\\\\e\\]0;owned\\\\a\\\\e\\[2J\\\\r\\\\nforged" "$TMP/csv"

"$GPUCTL" kill --pid $P --dry-run >"$TMP/kill"
check_eq "kill --dry-run: no control byte" "" "$(raw "$TMP/kill")"
check_grep "kill --dry-run: the command shown escaped" "would signal pid $P .*: job\\\\e\\]0;owned" "$TMP/kill"
python3 "$ROOT/tests/helper/pty_run.py" --answer '[y/N]' $'n\r' "$TMP/prompt" "$GPUCTL" kill --pid $P
check_eq "kill's prompt on a terminal: no control byte" "" "$(raw "$TMP/prompt")"
check "kill's prompt: the command escaped" shown "$TMP/prompt"
check "and answered no, nothing was signalled" kill -0 $P

"$GPUCTL" doctor >"$TMP/doc"
check_eq "doctor: no control byte in its messages" "" "$(raw "$TMP/doc")"
check_grep "doctor: the process named, escaped" "process $P \(job\\\\e\]0;owned" "$TMP/doc"
check_grep "doctor: the lease name too" "leased to $(id -un) \(pid [0-9]+, job\\\\e\]0;owned" "$TMP/doc"

# Another process's CUDA_VISIBLE_DEVICES, read from /proc/PID/environ.
CUDA_VISIBLE_DEVICES=$'1\e]0;owned\a' "$B/sleeper" & S=$!
await_line "^$S\$" "$SLEEPER_READY"
{ "$GPUCTL" map --pid $S; "$GPUCTL" which 3 --pid $S; } >"$TMP/map" 2>&1
check_eq "map and which --pid: no control byte of that environment" "" "$(raw "$TMP/map")"
check_grep "map --pid: the value escaped" 'CUDA_VISIBLE_DEVICES=1\\e\]0;owned\\a' "$TMP/map"
# Wide text: a command line of CJK characters (two columns each) fits an 80-column line.
W=$(printf '\xe8\xae\xad\xe7\xbb\x83%.0s' {1..40})
CUDA_VISIBLE_DEVICES=2 bash -c 'exec -a "$0" "$@"' "$W" "$WL" --mem 300 & PW=$!
await_workload $PW
COLUMNS=80 "$GPUCTL" status >"$TMP/wide"
check_eq "wide characters count two columns: every line fits 80 (and the name is there)" "80 1" \
	"$(python3 -c 'import sys, unicodedata as u
t = open(sys.argv[1], encoding="utf-8").read().splitlines()
print(max(sum(2 if u.east_asian_width(c) in "WF" else 1 for c in l) for l in t), sum("\u8bad" in l for l in t))' "$TMP/wide")"
kill $P $S $PW
echo >"$TMP/fifo"
wait $runner
