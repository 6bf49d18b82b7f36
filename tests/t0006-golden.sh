#!/usr/bin/env bash
# t0006-golden.sh: every output format of every simulated machine, diffed whole against
# tests/golden/<machine>.{json,query.csv,prom} (jq's data-driven style): status --json, the nvidia-smi
# CSV of every GPU and compute-app field (all 212 of nvidia-smi 590's --query-gpu; csv and
# noheader,nounits), and the exporter's Prometheus exposition. A change in
# any value, key, unit or N/A shows up here. GOLDEN_UPDATE=1 rewrites the files (review the diff).
. "$(dirname "$0")/lib/lib.sh"
machines=("$MACHINES"/*.machine)
plan $((3 * ${#machines[@]}))
# Every query field but the timestamp, as --help-query-* lists them.
fields() { "$GPUCTL" status "--help-query-$1" | awk '/^  [a-z]/ {split($1, n, "|"); if (n[1] != "timestamp") print n[1]}' | paste -sd,; }
GPU_FIELDS=$(fields gpu) APP_FIELDS=$(fields compute-apps)

for m in "${machines[@]}"; do
	name=$(basename "$m" .machine)
	use_machine "$m"
	"$GPUCTL" status --json >"$TMP/$name.json"
	check_golden "$name: status --json" "$name.json" "$TMP/$name.json"
	{ "$GPUCTL" status --query-gpu="$GPU_FIELDS" --format=csv
	  "$GPUCTL" status --query-gpu="$GPU_FIELDS" --format=csv,noheader,nounits
	  "$GPUCTL" status --query-compute-apps="$APP_FIELDS" --format=csv
	  "$GPUCTL" status --query-compute-apps="$APP_FIELDS" --format=csv,noheader,nounits; } >"$TMP/$name.csv"
	check_golden "$name: --query-gpu and --query-compute-apps" "$name.query.csv" "$TMP/$name.csv"
	# The host's name and the refresh's cost and count vary: written as HOST and N.
	start_exporter --cache-ms 0
	curl -sf "http://127.0.0.1:$PORT/metrics" |
		sed -e "s/hostname=\"$(hostname)\"/hostname=\"HOST\"/" \
		    -e 's/^\(gpuctl_exporter_refresh\(es_total\|_seconds\)\) .*/\1 N/' >"$TMP/$name.prom"
	stop_exporter
	check_golden "$name: exporter /metrics" "$name.prom" "$TMP/$name.prom"
done
