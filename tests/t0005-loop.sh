#!/usr/bin/env bash
# t0005-loop.sh: -l/--loop: NVML opened once, one JSON document per line, CSV appends rows,
# Ctrl-C ends with status 0, processes that come and go are seen, a GPU lost mid-run.
. "$(dirname "$0")/lib/lib.sh"
plan 20
H=$MACHINES/h100x8.machine
use_machine "$H"
export FAKENVML_STATS=$TMP/stats

"$GPUCTL" status --json -l 0.05 -c 3 >"$TMP/out"
check_eq "three refreshes, one compact document per line" 3 "$(wc -l <"$TMP/out")"
check_eq "every line is a whole document" '[8,8,8]' "$(jq -sc '[.[] | .gpus | length]' "$TMP/out")"
check_grep "NVML initialised once" '^init 1$' "$TMP/stats"
check_grep "handles looked up once, not per refresh" '^nvmlDeviceGetHandleByIndex_v2 8$' "$TMP/stats"
check_grep "names and UUIDs read once" '^nvmlDeviceGetUUID 8$' "$TMP/stats"
check_grep "telemetry read per refresh (the temperature's current call)" '^nvmlDeviceGetTemperatureV 24$' "$TMP/stats"
# A steady machine costs one call per process list per GPU and refresh (the buffer is kept).
calls=$(awk '/^nvmlDeviceGetComputeRunningProcesses_v3 /{print $2}' "$TMP/stats")
check "process lists: at most 2 calls per GPU on the first refresh, 1 after ($calls)" test "$calls" -le $((8 * 2 + 8 * 2))

rm -f "$TMP/stats"
"$GPUCTL" status --query-gpu=index,memory.used --format=csv -l 0.02 -c 3 >"$TMP/csv"
check_eq "csv: header once, rows appended" 25 "$(wc -l <"$TMP/csv")"
check_eq "csv: one header" 1 "$(grep -c '^index, memory.used' "$TMP/csv")"

"$GPUCTL" status -l 0.02 -c 2 --no-processes >"$TMP/t"
check_eq "table frames follow each other when not a terminal" 2 "$(grep -c '^driver 550' "$TMP/t")"

# Each loop writes a new file: the line awaited must be this loop's.
"$GPUCTL" status --json -l 0.05 >"$TMP/int.json" 2>"$TMP/err" &
pid=$!
await_line '^\{' "$TMP/int.json"
kill -INT $pid
wait $pid
check_eq "Ctrl-C ends the loop with status 0" 0 $?
check "output up to then is whole" jq -e . "$TMP/int.json"
"$GPUCTL" status --json -l 0.05 >"$TMP/term.json" 2>"$TMP/err" &
pid=$!; await_line '^\{' "$TMP/term.json"; kill -TERM $pid; wait $pid
check_eq "SIGTERM ends the loop with status 0" 0 $?

# Processes appear while the loop runs (the machine file changes).
M=$TMP/m.machine
cp "$H" "$M"
use_machine "$M"
"$GPUCTL" status --json -l 0.05 -i 1 >"$TMP/mid.json" &
pid=$!
await_line '^\{' "$TMP/mid.json"
printf '\n[process]\ngpu = 1\npid = 4000999\nused_memory_mib = 42\n' >>"$M"
touch -d '+1 second' "$M"
await_line '"pid":4000999' "$TMP/mid.json"
kill -INT $pid; wait $pid
check_eq "a process that starts mid-loop shows up" 'true' "$(jq -sc '(.[0].gpus[0].processes | length) == 0 and (.[-1].gpus[0].processes[0].pid == 4000999)' "$TMP/mid.json")"

# A GPU that falls off the bus on the second refresh: the loop goes on with the others.
awk '/^\[gpu\]/{g++} {print} /^\[gpu\]/ && g==2 {print "lost_after = 14"}' "$H" >"$M"
check_exit "lost mid-loop: exit 5 at the end" 5 "$GPUCTL" status --json -l 0.02 -c 3 --no-processes
check_eq "first refresh fine, later ones lost, others fine" '[[false,false],[false,true],[false,true]]' \
	"$(jq -sc '[.[] | [.gpus[0].lost, .gpus[1].lost]]' "$TMP/stdout")"

# On a terminal a loop fits the screen, as top does (issue 11.15): 8 GPUs with 200 processes on
# a 24-line terminal; every frame takes at most 23 lines (a 24th would scroll the screen and
# duplicate it at every refresh), starts with the header, shows every GPU, and says how many
# processes it left out. Frames begin with the cursor-home code.
gen_machine "$TMP/busy.machine" 8 200
use_machine "$TMP/busy.machine"
python3 "$ROOT/tests/helper/pty_run.py" --rows 24 --cols 80 "$TMP/tty" "$GPUCTL" status -l 0.05 -c 3
frames() { python3 -c 'import sys; print("\n".join(f for f in open(sys.argv[1], "rb").read().decode("utf-8", "replace").split("\x1b[H")[1:]))' "$TMP/tty" | sed 's/\x1b\[[0-9;]*[mKJ]//g; s/\x1b\[?25[hl]//g; s/\r$//'; }
python3 -c '
import sys
frames = open(sys.argv[1], "rb").read().split(b"\x1b[H")[1:]
print(len(frames), max(f.count(b"\n") for f in frames))' "$TMP/tty" >"$TMP/sizes"
check_eq "3 frames of at most 23 lines on a 24-line terminal" "3 23" "$(cat "$TMP/sizes")"
frames >"$TMP/frames"
check_eq "each frame starts with the header" 3 "$(grep -c '^driver 550' "$TMP/frames")"
check_eq "and shows all 8 GPUs" 24 "$(grep -c '^  [0-7] NVIDIA H100' "$TMP/frames")"
check_grep "says how many processes it left out" '^      \+2[45] more processes$' "$TMP/frames"
