#!/usr/bin/env bash
# t1002-doctor.sh: each classic mistake, built from the test workload on a simulated machine, is
# reported with its code, pids and GPUs; a clean machine has no error findings.
. "$(dirname "$0")/lib/lib.sh"
plan 35
use_state
quiet_machine "$TMP/m4" 4
use_machine "$TMP/m4"
WL=$B/workload
doc() { "$GPUCTL" doctor --json >"$TMP/out"; }
codes() { jq -c '[.findings[].code] | sort' "$TMP/out"; }
finding() { jq -c --arg c "$1" '[.findings[] | select(.code == $c) | {gpus, pids}]' "$TMP/out"; }
stop_all() { kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; }

check_exit "a clean machine: exit 0" 0 "$GPUCTL" doctor
check_grep "and says so" '^no findings' "$TMP/stdout"
doc
check_eq "no findings in JSON" '[]' "$(jq -c .findings "$TMP/out")"

# The caller's environment.
CUDA_VISIBLE_DEVICES=0,0 check_exit "a repeated device: exit 1" 1 "$GPUCTL" doctor
check_grep "visible_duplicate, with the fix" 'error \[visible_duplicate\]' "$TMP/stdout"
CUDA_VISIBLE_DEVICES=0-2 "$GPUCTL" doctor --json >"$TMP/out"
check_eq "a range" '["visible_range"]' "$(codes)"
use_machine "$MACHINES/workstation-mixed.machine"
doc
check_eq "mixed GPUs, CUDA_DEVICE_ORDER unset" '["order_unpinned"]' "$(codes | jq -c 'map(select(test("order|indices")))')"
CUDA_VISIBLE_DEVICES=0 "$GPUCTL" doctor --json >"$TMP/out"
check_eq "indices with the order unpinned is an error" '"error"' "$(jq -c '[.findings[] | select(.code == "indices_unpinned") | .severity][0]' "$TMP/out")"
CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=0 "$GPUCTL" doctor --json >"$TMP/out"
check_eq "pinned: no order finding" '[]' "$(jq -c '[.findings[] | select(.code | test("order|indices"))]' "$TMP/out")"
use_machine "$TMP/m4"

# The variable set after CUDA started: the process uses GPUs it was not meant to see.
CUDA_VISIBLE_DEVICES=1 "$WL" --mode ignore --mem 2000 & p=$!
await_workload $p
doc
check_eq "late_visibility names the process and the GPUs it should not use" "[{\"gpus\":[0,2,3],\"pids\":[$p]}]" "$(finding late_visibility)"
check_grep "says what it was meant to see" "meant to see 1" "$TMP/out"
stop_all

# Every GPU grabbed, one used (DataParallel, or no variable at all).
"$WL" --mode all --mem 20000 --mem-other 300 & p=$!
await_workload $p
doc
check_eq "grabbed_all" "[{\"gpus\":[0,1,2,3],\"pids\":[$p]}]" "$(finding grabbed_all)"
stop_all

# Two jobs on one GPU with little memory left.
CUDA_VISIBLE_DEVICES=2 "$WL" --mem 39000 & p1=$!
CUDA_VISIBLE_DEVICES=2 "$WL" --mem 39000 & p2=$!
await_workload $p1 && await_workload $p2
doc
check_eq "oom_risk names both jobs" "[{\"gpus\":[2],\"pids\":[$(printf '%s\n' $p1 $p2 | sort -n | paste -sd,)]}]" "$(finding oom_risk | jq -c '[.[] | .pids |= sort]')"
stop_all

# A process on a GPU leased to someone else, and GPUs used without a lease.
WORKLOAD_READY=$TMP/run.ready "$GPUCTL" run -g 3 -- "$WL" --mem 500 & runner=$!
await_line '^ready ' "$TMP/run.ready" && wait_leases 1
CUDA_VISIBLE_DEVICES=3 "$WL" --mem 500 & intruder=$!
CUDA_VISIBLE_DEVICES=1 "$WL" --mem 500 & loose=$!
await_workload $intruder && await_workload $loose
doc
check_eq "lease_violation names the intruder only" "[{\"gpus\":[3],\"pids\":[$intruder]}]" "$(finding lease_violation)"
check_eq "unleased_use" "[{\"gpus\":[1],\"pids\":[$loose]}]" "$(finding unleased_use)"
check_exit "a lease violation is an error: exit 1" 1 "$GPUCTL" doctor
"$GPUCTL" doctor --pid $intruder --json >"$TMP/out"
check_eq "--pid focuses on one process" '["lease_violation","pid_summary"]' "$(codes)"
check_grep "and says what it sees" 'started with CUDA_VISIBLE_DEVICES=3 .* GPU 3' "$TMP/out"
stop_all

# An orphaned worker still holding memory.
bash -c "\"$WL\" --mem 700 & echo \$! >'$TMP/orphan'"
o=$(cat "$TMP/orphan")
await_workload $o
doc
check_eq "orphan_process" "[{\"gpus\":[0],\"pids\":[$o]}]" "$(finding orphan_process)"
kill $o

# Memory no visible process accounts for; machine settings; a lost GPU.
# GPU 0: 5000 MiB used by nobody visible, persistence off; GPU 2 Prohibited; GPU 3 lost.
awk '/^\[gpu\]/{g++}
     g==1 && /^memory_used_mib/ {$0 = "memory_used_mib = 5000"}
     g==1 && /^persistence/ {$0 = "persistence = 0"}
     g==3 && /^compute_mode/ {$0 = "compute_mode = Prohibited"}
     g==2 && /^ecc/ {$0 = "ecc = 1\necc_uncorrected = 3"}
     {print}
     /^\[gpu\]/ && g==4 {print "lost_after = 2"}' "$TMP/m4" >"$TMP/m4b"
use_machine "$TMP/m4b"
doc
check_eq "hidden_memory" '[{"gpus":[0],"pids":[]}]' "$(finding hidden_memory)"
check_eq "persistence_off" '[{"gpus":[0],"pids":[]}]' "$(finding persistence_off)"
check_eq "gpu_lost" '[{"gpus":[3],"pids":[]}]' "$(finding gpu_lost)"
check_eq "compute_prohibited" '[{"gpus":[2],"pids":[]}]' "$(finding compute_prohibited)"
check_eq "ecc_errors" '[{"gpus":[1],"pids":[]}]' "$(finding ecc_errors)"
"$GPUCTL" status --query-gpu=index,ecc.errors.uncorrected.volatile.total --format=csv,noheader -i 0,1 >"$TMP/csv"
check_eq "and in nvidia-smi's query field" $'0, 0\n1, 3' "$(cat "$TMP/csv")"
check_eq "every finding has a message and a fix" 'true' "$(jq '[.findings[] | (.message | length > 10) and (.fix | length > 5)] | all' "$TMP/out")"

# Reading it on a screen (issue 11.16): errors first, then warnings, then info, and a summary
# last that names the errors, so no amount of info pushes them out of sight; --severity;
# colour on a terminal.
"$GPUCTL" doctor >"$TMP/doc"
check_eq "errors first, then warnings, then info" "error error warning warning warning info" \
	"$(grep -oE '^(error|warning|info) ' "$TMP/doc" | tr -d ' ' | paste -sd' ')"
check_eq "a summary last, naming the errors" "2 errors (ecc_errors, gpu_lost), 3 warnings, 1 info" "$(tail -1 "$TMP/doc")"
check_eq "no colour when not a terminal" 0 "$(grep -c $'\033' "$TMP/doc")"
check_exit "--severity=error: exit 1 all the same" 1 "$GPUCTL" doctor --severity=error
check_eq "--severity=error: only the errors" "error error" "$(grep -oE '^(error|warning|info) ' "$TMP/stdout" | tr -d ' ' | paste -sd' ')"
check_grep "and says what it left out" '^2 errors .* \(4 below --severity=error not shown\)$' "$TMP/stdout"
"$GPUCTL" doctor --json --severity=warning >"$TMP/out"
check_eq "--severity=warning in JSON" '["error","warning"]' "$(jq -c '[.findings[].severity] | unique | sort' "$TMP/out")"
check_exit "--severity=fatal is a usage error" 2 "$GPUCTL" doctor --severity=fatal
python3 "$ROOT/tests/helper/pty_run.py" "$TMP/tty" "$GPUCTL" doctor
check_grep "on a terminal the severities are coloured" $'^\033\\[1;31merror\033\\[0m \\[ecc_errors\\]' "$TMP/tty"
