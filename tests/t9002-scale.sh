#!/usr/bin/env bash
# t9002-scale.sh: 16 GPUs and 1000 processes: right, and clean under valgrind.
. "$(dirname "$0")/lib/lib.sh"
plan 6
pids=()
for i in $(seq 20); do spawn "job$i" --rank "$i"; pids+=("$SPAWNED"); done
gen_machine "$TMP/big.machine" 16 1000 "${pids[@]}"
use_machine "$TMP/big.machine"
"$GPUCTL" status --json >"$TMP/out"
check_eq "1000 processes over 16 GPUs" '[16,1000]' "$(jqv '[(.gpus | length), ([.gpus[].processes[]] | length)]')"
check_eq "live ones have their command lines" '"job7 --rank 7"' "$(jqv '[.gpus[].processes[] | select(.pid == '"${pids[6]}"') | .command][0]')"
check_eq "memory per process" '[100,1099]' "$(jqv '[[.gpus[].processes[].used_memory_mib] | min, max]')"
if [[ ${GPUCTL_BUILD:-build} == *asan* ]]; then
	skip "valgrind" "the ASan build is checked by ASan instead" 3
elif ! command -v valgrind >/dev/null; then
	skip "valgrind" "valgrind is not installed" 3
else
	valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
		"$GPUCTL" status --json >/dev/null 2>"$TMP/vg"
	rc=$?
	if [ $rc -eq 0 ]; then ok "valgrind clean: status --json, 1000 processes"; else not_ok "valgrind: exit $rc" "$(head -40 "$TMP/vg")"; fi
	valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
		"$GPUCTL" status -l 0.01 -c 3 >/dev/null 2>"$TMP/vg"
	rc=$?
	if [ $rc -eq 0 ]; then ok "valgrind clean: table loop"; else not_ok "valgrind loop: exit $rc" "$(head -40 "$TMP/vg")"; fi
	valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
		"$GPUCTL" status --query-compute-apps=pid,process_name,used_memory --format=csv >/dev/null 2>"$TMP/vg"
	rc=$?
	if [ $rc -eq 0 ]; then ok "valgrind clean: csv"; else not_ok "valgrind csv: exit $rc" "$(head -40 "$TMP/vg")"; fi
fi
