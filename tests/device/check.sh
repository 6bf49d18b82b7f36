#!/usr/bin/env bash
# tests/device/check.sh: gpuctl against the real NVIDIA driver and nvidia-smi, for the few minutes
# a GPU machine is lent (tests/device/README.md says how to run it in one prepared call). It
# compares, exactly, `-L` and every --query-gpu field that is stable on an idle GPU (STABLE: 96),
# in csv and noheader,nounits; nvidia-smi's answers to an unknown field, a bad format and a bad
# -i; then starts a CUDA workload of its own (cuda-hold: a context and HOLD_MIB MiB through the
# driver API, no toolkit) and compares the process list, the memory and `map --verify`, and that
# the process is gone from both after it ends. It records all 212 fields from both tools, the
# real library's exported symbols and which name and fallback gpuctl took for each call
# (GPUCTL_NVML_REPORT). Everything goes under one folder: $OUT when given, else a new one in /tmp.
# Exit status: 0 when everything compared equal, 1 on any difference, 2 when it cannot run.
#
# The suite runs it against the stand-in NVML with a recorded nvidia-smi (tests/t0012), so it
# cannot rot. Environment: GPUCTL (build/gpuctl), NVIDIA_SMI (nvidia-smi), CUDA_HOLD
# (build/cuda-hold), HOLD_MIB (256), HOLD_GPU (0, an nvidia-smi index), OUT.
set -u
cd "$(dirname "$0")/../.." || exit 2
G=${GPUCTL:-build/gpuctl}
SMI=${NVIDIA_SMI:-nvidia-smi}
HOLD=${CUDA_HOLD:-build/cuda-hold}
HOLD_MIB=${HOLD_MIB:-256}
HOLD_GPU=${HOLD_GPU:-0}
OUT=${OUT:-$(mktemp -d /tmp/gpuctl-device.XXXXXX)}
mkdir -p "$OUT" || exit 2
LOG=$OUT/check.log
: >"$LOG"
export GPUCTL_NVML_REPORT=$OUT/nvml-resolve.txt
: >"$GPUCTL_NVML_REPORT"
pass=0 fail=0
say() { echo "$*" | tee -a "$LOG"; }
ok() { say "ok - $1"; pass=$((pass + 1)); }
bad() { say "not ok - $1"; shift; local l; for l in "$@"; do printf '#   %s\n' "$l" | tee -a "$LOG"; done; fail=$((fail + 1)); }
command -v "$SMI" >/dev/null || { say "no $SMI here"; exit 2; }
[ -x "$G" ] || { say "no $G: run make"; exit 2; }

# Fields that do not move on an idle GPU within a second: identity, PCI, modes, InfoROM, ECC and
# page-retirement counts, remapping, limits, maximum clocks, deprecated tokens, capabilities.
STABLE=count,driver_version,name,serial,uuid,index,pci.bus_id,pci.domain,pci.bus,pci.device,pci.baseClass,pci.subClass,pci.device_id,pci.sub_device_id,pcie.link.gen.max,pcie.link.gen.gpumax,pcie.link.width.max,display_mode,display_attached,display_active,persistence_mode,addressing_mode,accounting.mode,accounting.buffer_size,driver_model.current,driver_model.pending,vbios_version,inforom.img,inforom.oem,inforom.ecc,inforom.pwr,inforom.checksum_validation,gpu_recovery_action,gom.current,gom.pending,clocks_event_reasons.supported,memory.total,memory.reserved,compute_mode,compute_cap,dramEncryption.mode.current,dramEncryption.mode.pending,ecc.mode.current,ecc.mode.pending,ecc.errors.corrected.aggregate.dram,ecc.errors.corrected.aggregate.sram,ecc.errors.corrected.aggregate.l1_cache,ecc.errors.corrected.aggregate.total,ecc.errors.uncorrected.aggregate.dram,ecc.errors.uncorrected.aggregate.sram,ecc.errors.uncorrected.aggregate.total,ecc.errors.uncorrected.volatile.total,ecc.errors.uncorrected.aggregate.sram.thresholdExceeded,ecc.errors.uncorrected.aggregate.sram.other,retired_pages.single_bit_ecc.count,retired_pages.double_bit.count,retired_pages.pending,remapped_rows.correctable,remapped_rows.uncorrectable,remapped_rows.pending,remapped_rows.failure,remapped_rows.histogram.max,power.management,power.limit,enforced.power.limit,power.default_limit,power.min_limit,power.max_limit,module.power.limit,module.power.max_limit,power_smoothing.primary_power_floor,clocks.applications.graphics,clocks.default_applications.memory,clocks.max.graphics,clocks.max.sm,clocks.max.memory,mig.mode.current,mig.mode.pending,gsp.mode.current,gsp.mode.default,c2c.mode,protected_memory.total,fabric.state,fabric.status,fabric.cliqueId,fabric.clusterUuid,platform.chassis_serial_number,platform.slot_number,platform.tray_index,platform.host_id,platform.peer_type,platform.module_id,platform.gpu_fabric_guid,hostname,vgpu_driver_capability.heterogenous_multivGPU,vgpu_device_capability.fractional_multiVgpu
# Fields gpuctl does not read yet (README of issue 27): recorded side by side, not counted.
GAPS=pcie.link.gen.hostmax,fabric.health.summary,fabric.health.bandwidth,fabric.health.route_recovery_in_progress,fabric.health.route_unhealthy,fabric.health.access_timeout_recovery,fabric.health.incorrect_configuration

# cells A B: the cells (by header) where two CSV answers differ, one line each.
cells() {
	awk -F', ' 'FNR == 1 { n = split($0, h, ", "); next }
		NR == FNR { a[FNR] = $0; next }
		{ split(a[FNR], x, ", "); split($0, y, ", ");
		  for (i = 1; i <= n; i++) if (x[i] != y[i])
			printf "row %d %s: nvidia-smi \"%s\", gpuctl \"%s\"\n", FNR - 1, h[i], x[i], y[i] }' "$1" "$2"
}
# same NAME A B: a check that files A and B are equal (cell by cell when CSV).
same() {
	if cmp -s "$2" "$3"; then ok "$1"; return; fi
	local d
	if [ "$(head -1 "$2")" = "$(head -1 "$3")" ] && [ "$(wc -l <"$2")" = "$(wc -l <"$3")" ]; then
		d=$(cells "$2" "$3" | head -40)
	else
		d=$(diff "$2" "$3" | head -40)
	fi
	mapfile -t lines <<<"$d"
	bad "$1" "${lines[@]}"
}

{ "$SMI" --version; uname -a; } >"$OUT/versions.txt" 2>&1
say "# nvidia-smi: $(head -1 "$OUT/versions.txt"); output in $OUT"

# ---- -L, exactly ----
"$SMI" -L >"$OUT/L.nvidia-smi" 2>&1
"$G" status -L >"$OUT/L.gpuctl" 2>&1
same "-L as nvidia-smi prints it" "$OUT/L.nvidia-smi" "$OUT/L.gpuctl"

# ---- the stable fields, exactly, both formats ----
n=$(tr ',' '\n' <<<"$STABLE" | wc -l)
for fmt in csv csv,noheader,nounits; do
	tag=${fmt//,/-}
	"$SMI" --query-gpu="$STABLE" --format="$fmt" >"$OUT/stable.$tag.nvidia-smi" 2>&1
	"$G" status --query-gpu="$STABLE" --format="$fmt" >"$OUT/stable.$tag.gpuctl" 2>&1
	if [ "$fmt" = csv ]; then
		same "$n stable fields, --format=$fmt" "$OUT/stable.$tag.nvidia-smi" "$OUT/stable.$tag.gpuctl"
	else   # no header to name the cells by: put it back for the report
		{ head -1 "$OUT/stable.csv.nvidia-smi"; cat "$OUT/stable.$tag.nvidia-smi"; } >"$OUT/stable.$tag.nvidia-smi.h"
		{ head -1 "$OUT/stable.csv.nvidia-smi"; cat "$OUT/stable.$tag.gpuctl"; } >"$OUT/stable.$tag.gpuctl.h"
		same "$n stable fields, --format=$fmt" "$OUT/stable.$tag.nvidia-smi.h" "$OUT/stable.$tag.gpuctl.h"
	fi
done

# ---- every field, recorded (readings move: not compared), and the known gaps ----
ALL=$("$G" status --help-query-gpu | awk '/^  [a-z]/ {split($1, n, "|"); print n[1]}' | paste -sd,)
"$SMI" --query-gpu="$ALL" --format=csv >"$OUT/all.nvidia-smi.csv" 2>&1
"$G" status --query-gpu="$ALL" --format=csv >"$OUT/all.gpuctl.csv" 2>&1
cells "$OUT/all.nvidia-smi.csv" "$OUT/all.gpuctl.csv" >"$OUT/all.differences.txt" 2>/dev/null
"$SMI" --query-gpu="$GAPS" --format=csv >"$OUT/gaps.nvidia-smi.csv" 2>&1
"$G" status --query-gpu="$GAPS" --format=csv >"$OUT/gaps.gpuctl.csv" 2>&1
say "# all $(tr ',' '\n' <<<"$ALL" | wc -l) fields recorded: $(wc -l <"$OUT/all.differences.txt") cells differ (readings move; see all.differences.txt)"

# ---- errors: nvidia-smi's words and exit status ----
err_case() { # NAME ARGS...: the same exit status and stdout from both
	local name=$1; shift
	"$SMI" "$@" >"$OUT/err.$name.nvidia-smi" 2>"$OUT/err.$name.nvidia-smi.stderr"; local a=$?
	"$G" status "$@" >"$OUT/err.$name.gpuctl" 2>"$OUT/err.$name.gpuctl.stderr"; local b=$?
	echo "$a" >>"$OUT/err.$name.nvidia-smi"; echo "$b" >>"$OUT/err.$name.gpuctl"
}
err_case field --query-gpu=index,no_such_field --format=csv
same "an unknown field: stdout and exit status as nvidia-smi's" "$OUT/err.field.nvidia-smi" "$OUT/err.field.gpuctl"
err_case format --query-gpu=index --format=xml
[ "$(tail -1 "$OUT/err.format.nvidia-smi")" = "$(tail -1 "$OUT/err.format.gpuctl")" ] &&
	ok "a bad format: nvidia-smi's exit status ($(tail -1 "$OUT/err.format.gpuctl"))" ||
	bad "a bad format: exit status" "nvidia-smi $(tail -1 "$OUT/err.format.nvidia-smi"), gpuctl $(tail -1 "$OUT/err.format.gpuctl")"
err_case id -i 999 --query-gpu=index --format=csv
[ "$(tail -1 "$OUT/err.id.nvidia-smi")" = "$(tail -1 "$OUT/err.id.gpuctl")" ] &&
	ok "-i of no GPU: nvidia-smi's exit status ($(tail -1 "$OUT/err.id.gpuctl"))" ||
	bad "-i of no GPU: exit status" "nvidia-smi $(tail -1 "$OUT/err.id.nvidia-smi"), gpuctl $(tail -1 "$OUT/err.id.gpuctl")"
serial=$("$SMI" -i "$HOLD_GPU" --query-gpu=serial --format=csv,noheader 2>/dev/null | head -1)
if [ -n "$serial" ] && [ "${serial#[}" = "$serial" ]; then
	"$SMI" -i "$serial" --query-gpu=index,uuid --format=csv >"$OUT/serial.nvidia-smi" 2>&1
	"$G" status -i "$serial" --query-gpu=index,uuid --format=csv >"$OUT/serial.gpuctl" 2>&1
	same "-i by board serial" "$OUT/serial.nvidia-smi" "$OUT/serial.gpuctl"
else
	say "# -i by serial: no serial on GPU $HOLD_GPU ($serial)"
fi

# ---- a CUDA workload of our own ----
APPS=pid,process_name,gpu_uuid,gpu_bus_id,gpu_serial,gpu_name,used_gpu_memory
apps() { # TAG: both tools' compute-apps rows, sorted
	"$SMI" --query-compute-apps=$APPS --format=csv,noheader 2>&1 | sort >"$OUT/apps.$1.nvidia-smi"
	"$G" status --query-compute-apps=$APPS --format=csv,noheader 2>&1 | sort >"$OUT/apps.$1.gpuctl"
}
used() { "$1" ${2:+$2} -i "$HOLD_GPU" --query-gpu=memory.used --format=csv,noheader,nounits 2>/dev/null | head -1; }
apps before
before=$(used "$G" status)
if [ -x "$HOLD" ]; then
	uuid=$("$SMI" -i "$HOLD_GPU" --query-gpu=uuid --format=csv,noheader | head -1)
	coproc HOLDER { CUDA_VISIBLE_DEVICES=$uuid exec "$HOLD" 0 "$HOLD_MIB" 2>"$OUT/cuda-hold.stderr"; }
	hold_pid=$HOLDER_PID
	ready=
	read -r -t 60 ready <&"${HOLDER[0]}"
	if [ "${ready%% *}" = ready ]; then
		ok "cuda-hold holds $HOLD_MIB MiB on GPU $HOLD_GPU ($uuid), pid $hold_pid"
		apps during
		same "the process list with our workload" "$OUT/apps.during.nvidia-smi" "$OUT/apps.during.gpuctl"
		grep -q "^$hold_pid, " "$OUT/apps.during.gpuctl" && grep -q "^$hold_pid, " "$OUT/apps.during.nvidia-smi" &&
			ok "both list pid $hold_pid" || bad "pid $hold_pid not listed by both" "$(cat "$OUT/apps.during.nvidia-smi")"
		a=$(used "$SMI"); b=$(used "$G" status)
		echo "memory.used before $before, during: nvidia-smi $a gpuctl $b" >"$OUT/memory.txt"
		awk -v a="$a" -v b="$b" -v was="$before" -v m="$HOLD_MIB" 'BEGIN { d = a - b; if (d < 0) d = -d;
			exit !(a != "" && b != "" && d <= 64 && b - was >= m) }' &&
			ok "memory.used within 64 MiB of nvidia-smi, up by at least $HOLD_MIB MiB ($before -> $b)" ||
			bad "memory.used" "$(cat "$OUT/memory.txt")"
		"$G" map --verify >"$OUT/map-verify.txt" 2>&1 && ok "map --verify agrees with the CUDA driver" ||
			bad "map --verify" "$(tail -5 "$OUT/map-verify.txt")"
		CUDA_VISIBLE_DEVICES=$HOLD_GPU "$G" map --verify >"$OUT/map-verify-cvd.txt" 2>&1 &&
			ok "map --verify, CUDA_VISIBLE_DEVICES=$HOLD_GPU" || bad "map --verify CVD=$HOLD_GPU" "$(tail -5 "$OUT/map-verify-cvd.txt")"
		"$G" status --json >"$OUT/status.json" 2>&1
		grep -q "\"pid\": *$hold_pid\b" "$OUT/status.json" && ok "status --json lists pid $hold_pid" ||
			bad "status --json does not list pid $hold_pid"
		eval "exec ${HOLDER[1]}>&-"   # stdin's end: cuda-hold frees and exits
		wait "$hold_pid"; rc=$?
		[ $rc = 0 ] && ok "cuda-hold freed its memory and exited" || bad "cuda-hold exit $rc" "$(cat "$OUT/cuda-hold.stderr")"
		# The driver forgets a process within a moment of its exit: bounded, 5 s at most.
		for _ in $(seq 20); do
			apps after
			grep -q "^$hold_pid, " "$OUT/apps.after.nvidia-smi" || break
			sleep 0.25
		done
		! grep -q "^$hold_pid, " "$OUT/apps.after.gpuctl" && ! grep -q "^$hold_pid, " "$OUT/apps.after.nvidia-smi" &&
			ok "pid $hold_pid gone from both lists after it exits" || bad "pid $hold_pid still listed after its exit"
	else
		bad "cuda-hold did not start" "$(cat "$OUT/cuda-hold.stderr")"
		kill "$hold_pid" 2>/dev/null
	fi
else
	bad "no $HOLD: make $HOLD"
fi

# ---- the real library: its exports, and what gpuctl took of them ----
lib=${GPUCTL_NVML_LIBRARY:-$(ldconfig -p 2>/dev/null | awk '/libnvidia-ml\.so\.1 / {print $NF; exit}')}
if [ -n "$lib" ] && command -v nm >/dev/null; then
	nm -D --defined-only "$lib" 2>/dev/null | awk '{print $NF}' | sort -u >"$OUT/nvml-exports.txt"
elif [ -n "$lib" ] && command -v readelf >/dev/null; then
	readelf --dyn-syms -W "$lib" | awk '$7 != "UND" && $8 != "" {sub(/@.*/, "", $8); print $8}' | sort -u >"$OUT/nvml-exports.txt"
fi
say "# $lib: $(wc -l <"$OUT/nvml-exports.txt" 2>/dev/null || echo '?') exported symbols (nvml-exports.txt)"
grep '^resolve ' "$GPUCTL_NVML_REPORT" | sort -u >"$OUT/nvml-resolved.txt"
awk '$2 == "missing:" || $2 != $3 ":"' "$OUT/nvml-resolved.txt" >"$OUT/nvml-fallbacks.txt"
grep '^fallback ' "$GPUCTL_NVML_REPORT" | sort -u >>"$OUT/nvml-fallbacks.txt"
say "# $(wc -l <"$OUT/nvml-resolved.txt") NVML slots; not the first name or missing, and run-time fallbacks:"
sed 's/^/#   /' "$OUT/nvml-fallbacks.txt" | tee -a "$LOG"
if [ -s "$OUT/nvml-exports.txt" ]; then
	wrong=$(awk '$2 != "missing:" {sub(":", "", $2); print $2}' "$OUT/nvml-resolved.txt" | sort -u |
		comm -23 - "$OUT/nvml-exports.txt")
	[ -z "$wrong" ] && ok "every name gpuctl resolved is exported by the library" ||
		bad "resolved names the export list lacks" $wrong
fi

# ---- issue 26: `gpuctl topo` beside `nvidia-smi topo -m`: the GPU columns, CPU Affinity and
# NUMA Affinity of every GPU row (nvidia-smi's NIC columns and escapes left out) ----
topo_cells() {   # FILE: "GPUn cell... cpus numa" per GPU row, from the header's GPU columns
	sed 's/\x1b\[[0-9;]*m//g' "$1" | awk -F'\t' '
		NR == 1 {for (i = 2; i <= NF; i++) {h = $i; gsub(/^ +| +$/, "", h); if (h ~ /^GPU[0-9]+$/ || h == "CPU Affinity" || h == "NUMA Affinity") keep[i] = 1}; next}
		/^GPU[0-9]+\t/ {s = $1; for (i = 2; i <= NF; i++) if (keep[i]) {c = $i; gsub(/^ +| +$/, "", c); s = s " " c}; print s}'
}
"$SMI" topo -m >"$OUT/topo.nvidia-smi" 2>&1; "$G" topo >"$OUT/topo.gpuctl" 2>&1
if [ -z "$(topo_cells "$OUT/topo.nvidia-smi")" ]; then
	say "# nvidia-smi topo -m gave no matrix here: topo not compared"
elif [ "$(topo_cells "$OUT/topo.nvidia-smi")" = "$(topo_cells "$OUT/topo.gpuctl")" ]; then
	ok "topo matches nvidia-smi topo -m (GPU columns, CPU and NUMA affinity)"
else
	bad "topo differs from nvidia-smi topo -m" "$(diff <(topo_cells "$OUT/topo.nvidia-smi") <(topo_cells "$OUT/topo.gpuctl"))"
fi

say "$pass passed, $fail failed (everything is in $OUT)"
[ "$fail" = 0 ]
