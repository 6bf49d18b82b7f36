#!/usr/bin/env bash
# t0011-smi-fields.sh: the whole of nvidia-smi 590's --query-gpu (issue 27). Every name and alias
# of its --help-query-gpu (tests/golden/nvidia-smi-590-query-gpu-fields.txt, copied from the H200
# capture) is accepted and prints its canonical header; unknown fields, bad formats and bad -i
# answer as nvidia-smi does; -i takes a board serial; --query-compute-apps prints all of
# nvidia-smi's process fields; the tokens for what cannot be had ([N/A] for not supported,
# [Function Not Found] where the library lacks the call, the driver's words otherwise); the
# temperature through nvmlDeviceGetTemperatureV and its fallback; a query reads only the calls
# its fields need and status none of them; deprecated fields. Every field's value on every
# machine is in the golden files of t0006.
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/daemon.sh"
plan 34
LIST=$ROOT/tests/golden/nvidia-smi-590-query-gpu-fields.txt
export FAKENVML_STATS=$TMP/stats
use_machine "$MACHINES/h200-idle.machine"

# ---- the field list ----
canon=$(grep -v '^#' "$LIST" | awk '{print $1}')
check_eq "the list holds nvidia-smi 590's 212 fields" 212 "$(wc -l <<<"$canon")"
"$GPUCTL" status --help-query-gpu | awk '/^  [a-z]/ {split($1, n, "|"); print n[1]}' | sort >"$TMP/help"
check_eq "--help-query-gpu lists every field of the list, and no other" "$(sort <<<"$canon")" "$(cat "$TMP/help")"
# Every name and every alias, one query: all accepted, each printing its canonical header.
names=() heads=()
while read -r first rest; do
	for n in $first $rest; do names+=("$n"); heads+=("$first"); done
done < <(grep -v '^#' "$LIST")
check_eq "the list has 254 names with the aliases" 254 "${#names[@]}"
q=$(IFS=,; echo "${names[*]}")
check_exit "every name and alias is accepted" 0 "$GPUCTL" status --query-gpu="$q" --format=csv
head -1 "$TMP/stdout" | sed 's/ \[[^]]*\]//g' >"$TMP/got"
check_eq "each prints its canonical name as header" "$(IFS=,; echo "${heads[*]}" | sed 's/,/, /g')" "$(cat "$TMP/got")"
bad=0
for n in "${names[@]}"; do
	"$GPUCTL" status --query-gpu="$n" --format=csv,noheader >/dev/null 2>&1 || { bad=$((bad + 1)); echo "# refused: $n"; }
done
check_eq "each name and alias alone is accepted" 0 "$bad"

# ---- errors, as nvidia-smi gives them ----
check_exit "an unknown field exits 2" 2 "$GPUCTL" status --query-gpu=index,device_minor,name --format=csv
printf 'Field "device_minor" is not a valid field to query.\n\n' >"$TMP/want"
if cmp -s "$TMP/want" "$TMP/stdout"; then ok "nvidia-smi's words and blank line on stdout, no row"; else
	not_ok "nvidia-smi's words and blank line on stdout, no row" "$(cat -A "$TMP/stdout")"; fi
check_grep "stderr says where the fields are listed" 'help-query-gpu' "$TMP/stderr"
check_exit "a format other than csv exits 2" 2 "$GPUCTL" status --query-gpu=index --format=xml
check_exit "--format=noheader without csv exits 2" 2 "$GPUCTL" status --query-gpu=index --format=noheader
use_machine "$MACHINES/h100x8.machine"
check_exit "-i of no GPU exits 6 (nvidia-smi: object not found)" 6 "$GPUCTL" status -i 1651220004099 --query-gpu=index --format=csv
check_exit "-i of a malformed id exits 2" 2 "$GPUCTL" status -i GPU0x --query-gpu=index --format=csv

# ---- -i by board serial ----
check_exit "-i takes a board serial" 0 "$GPUCTL" status -i 1651220004002 --query-gpu=index,serial --format=csv,noheader
check_eq "the serial's GPU, alone" "2, 1651220004002" "$(cat "$TMP/stdout")"
"$GPUCTL" status -i 5,1651220004001 --query-gpu=index --format=csv,noheader >"$TMP/got"
check_eq "serials and indices mix in one list" "$(printf '1\n5')" "$(cat "$TMP/got")"
"$GPUCTL" status -i 3 --query-gpu=index --format=csv,noheader >"$TMP/got"
check_eq "a small number is still an index" 3 "$(cat "$TMP/got")"

# ---- --query-compute-apps: nvidia-smi's eight fields (H200 590 capture's header) ----
use_machine "$MACHINES/h200-load.machine"
apps=timestamp,gpu_name,gpu_bus_id,gpu_serial,gpu_uuid,pid,process_name,used_gpu_memory
check_exit "every compute-apps field" 0 "$GPUCTL" status --query-compute-apps=$apps --format=csv
check_eq "their header as nvidia-smi prints it" \
	"timestamp, gpu_name, gpu_bus_id, gpu_serial, gpu_uuid, pid, process_name, used_gpu_memory [MiB]" \
	"$(head -1 "$TMP/stdout")"
"$GPUCTL" status --query-compute-apps=pid,name,used_memory --format=csv >"$TMP/got"
check_eq "aliases print the canonical headers" "pid, process_name, used_gpu_memory [MiB]" "$(head -1 "$TMP/got")"
rows=$(tail -n +2 "$TMP/stdout" | grep -c ', NVIDIA H200, 00000000:83:00.0, 0000000000000, GPU-[0-9a-f-]*, [0-9]*, .*, [0-9]* MiB$')
check_eq "one full row per compute process" "$(($(wc -l <"$TMP/stdout") - 1))" "$rows"

# ---- what cannot be had ----
use_machine "$MACHINES/h200-idle.machine"
"$GPUCTL" status --query-gpu=retired_pages.sbe,remapped_rows.correctable,ecc.errors.corrected.volatile.l1_cache,fabric.health.summary,hostname --format=csv,noheader >"$TMP/got"
check_eq "not supported: [N/A] (the fabric fields: N/A)" "[N/A], 0, [N/A], N/A, [N/A]" "$(cat "$TMP/got")"
use_machine "$MACHINES/h200-idle.machine" "$FAKE_OLD"
"$GPUCTL" status --query-gpu=remapped_rows.correctable,power.draw.average,pcie.link.gen.gpumax,utilization.jpeg,retired_pages.sbe,temperature.gpu --format=csv,noheader >"$TMP/got"
check_eq "an old library: [Function Not Found] where it lacks the call" \
	"[Function Not Found], [Function Not Found], [Function Not Found], [Function Not Found], [N/A], 27" "$(cat "$TMP/got")"
sed 's/^\[gpu\]$/[gpu]\nfail.nvmlDeviceGetRemappedRows = NO_PERMISSION\nfail.nvmlDeviceGetSramEccErrorStatus = UNKNOWN/' \
	"$MACHINES/h200-idle.machine" >"$TMP/fail.machine"
use_machine "$TMP/fail.machine"
"$GPUCTL" status --query-gpu=remapped_rows.pending,ecc.errors.uncorrected.aggregate.sram.l2,remapped_rows.histogram.max --format=csv,noheader >"$TMP/got"
check_eq "other failures: the driver's words" "[Insufficient Permissions], [Unknown Error], 3072" "$(cat "$TMP/got")"

# ---- the temperature's current call and its fallback ----
use_machine "$MACHINES/h200-idle.machine"
rm -f "$TMP/stats"; "$GPUCTL" status --query-gpu=temperature.gpu --format=csv,noheader >/dev/null
check_eq "nvmlDeviceGetTemperatureV, not the deprecated call" "nvmlDeviceGetTemperatureV 1" \
	"$(grep '^nvmlDeviceGetTemperature' "$TMP/stats")"
sed 's/^\[gpu\]$/[gpu]\nfail.nvmlDeviceGetTemperatureV = ARGUMENT_VERSION_MISMATCH/' \
	"$MACHINES/h200-idle.machine" >"$TMP/tv.machine"
use_machine "$TMP/tv.machine"
rm -f "$TMP/stats"; "$GPUCTL" status --query-gpu=temperature.gpu --format=csv,noheader >"$TMP/got"
check_eq "a library refusing its version word: the old call gives the value" \
	"27 nvmlDeviceGetTemperature 1 nvmlDeviceGetTemperatureV 1" \
	"$(cat "$TMP/got") $(grep '^nvmlDeviceGetTemperature' "$TMP/stats" | sort | paste -sd' ')"

# ---- a query reads what its fields need; status none of it ----
use_machine "$MACHINES/h200-idle.machine"
rm -f "$TMP/stats"; "$GPUCTL" status --query-gpu=remapped_rows.correctable,remapped_rows.failure --format=csv >/dev/null
check_eq "two remapped-rows fields: that call only, of the new ones" "nvmlDeviceGetRemappedRows 2" \
	"$(grep -E '^nvmlDevice(GetRemapped|GetRowRemapper|GetMemoryErrorCounter|GetSram|GetInforom|GetEncoderStats|GetFieldValues)' "$TMP/stats")"
rm -f "$TMP/stats"; "$GPUCTL" status >/dev/null
check_eq "status calls none of them" "" \
	"$(grep -E '^nvmlDevice(GetRemapped|GetRowRemapper|GetMemoryErrorCounter|GetSram|GetInforom|ValidateInforom|GetEncoderStats|GetFieldValues|GetPciInfoExt|GetGsp|GetJpg|GetOfa|GetVgpu|GetAddressing|GetC2c|GetDram|GetApplications|GetDefaultApplications|GetPowerManagementMode)' "$TMP/stats")"

# ---- deprecated calls: the token from driver 590 on, the value before ----
"$GPUCTL" status --query-gpu=clocks.applications.graphics,power.management --format=csv,noheader >"$TMP/got"
check_eq "590: the deprecation token" \
	"[Requested functionality has been deprecated], [Requested functionality has been deprecated]" "$(cat "$TMP/got")"
sed 's/^driver_version = .*/driver_version = 535.154.05/' "$MACHINES/h200-idle.machine" >"$TMP/535.machine"
use_machine "$TMP/535.machine"
"$GPUCTL" status --query-gpu=clocks.applications.graphics,clocks.default_applications.mem --format=csv,noheader,nounits >"$TMP/got"
check_eq "535: the old calls' values" "1980, 3201" "$(cat "$TMP/got")"

# ---- counts that move ----
sed 's/^ecc_corrected_volatile = 0/ecc_corrected_volatile = 7/; s/^remapped_pending = 0/remapped_pending = 1/' \
	"$MACHINES/h200-idle.machine" >"$TMP/ecc.machine"
use_machine "$TMP/ecc.machine"
"$GPUCTL" status --query-gpu=ecc.errors.corrected.volatile.dram,ecc.errors.corrected.volatile.sram,ecc.errors.corrected.volatile.total,remapped_rows.pending --format=csv,noheader >"$TMP/got"
check_eq "ECC counts by location and in all; a pending remap" "7, 0, 7, Yes" "$(cat "$TMP/got")"

# ---- with a shared daemon: the snapshot does not carry these fields, the query reads them ----
unset FAKENVML_STATS
use_state
daemon_setup
use_machine "$MACHINES/h100x8.machine"
daemon_start
q=index,serial,remapped_rows.correctable,ecc.errors.corrected.aggregate.total,inforom.img,power.draw.average
GPUCTL_SNAPSHOT=0 "$GPUCTL" status --query-gpu=$q --format=csv >"$TMP/direct" 2>&1
"$GPUCTL" status --query-gpu=$q --format=csv >"$TMP/shared" 2>&1
check_eq "with the daemon running, a query of them is what the direct read prints" "$(cat "$TMP/direct")" "$(cat "$TMP/shared")"
"$GPUCTL" status --query-gpu=index,name,memory.total --format=csv >"$TMP/snap" 2>&1
check_eq "the model's fields still come through the snapshot" "$(GPUCTL_SNAPSHOT=0 "$GPUCTL" status --query-gpu=index,name,memory.total --format=csv)" "$(cat "$TMP/snap")"
"$GPUCTL" status -i 1651220004002 --query-gpu=index --format=csv,noheader >"$TMP/got" 2>&1
check_eq "-i by serial through the snapshot" 2 "$(cat "$TMP/got")"
daemon_stop
