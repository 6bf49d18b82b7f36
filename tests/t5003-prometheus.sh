#!/usr/bin/env bash
# t5003-prometheus.sh: a real Prometheus server (Debian's prometheus package) scrapes gpuctl
# exporter and answers PromQL with the simulated machine's values. Its own script: Prometheus
# takes seconds before its first scrape, which the other exporter tests need not wait for.
. "$(dirname "$0")/lib/lib.sh"
plan 8
# A real Prometheus server scrapes the exporter and answers PromQL. Two processes whose names
# are not UTF-8 as labels unless made so (a byte that is not UTF-8; a name whose 64th byte falls
# inside an "é"): Prometheus refuses a whole scrape over one bad label.
if command -v prometheus >/dev/null && command -v promtool >/dev/null; then
	A63=$(printf 'a%.0s' $(seq 63))
	spawn $'train\xff.py' --lr 3e-4; P1=$SPAWNED
	spawn "$A63"$'\xc3\xa9x'; P2=$SPAWNED
	sed -e "s/^pid = 4000101/pid = $P1/" -e "s/^pid = 4000104/pid = $P2/" "$MACHINES/h100x8.machine" >"$TMP/m"
	use_machine "$TMP/m"
	start_exporter
	PP=$(free_port)
	mkdir -p "$TMP/prom"
	cat >"$TMP/prom/prometheus.yml" <<YML
global: {scrape_interval: 1s, evaluation_interval: 1s}
scrape_configs:
  - job_name: gpuctl
    static_configs: [{targets: ['127.0.0.1:$PORT']}]
YML
	check "promtool check config" promtool check config "$TMP/prom/prometheus.yml"
	prometheus --config.file="$TMP/prom/prometheus.yml" --storage.tsdb.path="$TMP/prom/data" \
		--web.listen-address=127.0.0.1:$PP >"$TMP/prom/log" 2>&1 &
	PROM=$!
	q() { curl -s "http://127.0.0.1:$PP/api/v1/query" --data-urlencode "query=$1" | jq -r '.data.result[0].value[1] // empty'; }
	# Prometheus says when it serves. Its first scrape waits for its discovery manager (updates
	# every 5 s in 2.42) and is seen only by asking it: a bounded poll of an outside server.
	await_line 'Server is ready to receive web requests' "$TMP/prom/log" 30
	end=$((SECONDS + 30))
	until [ "$(q 'up{job="gpuctl"}')" = 1 ] || [ $SECONDS -ge $end ]; do sleep 0.1; done
	check_eq "Prometheus scraped the exporter" 1 "$(q 'up{job="gpuctl"}')"
	check_eq "PromQL: temperature of GPU 5" 65 "$(q 'gpuctl_gpu_temperature_celsius{gpu="5"}')"
	check_eq "PromQL: memory used on GPU 0, in MiB" 71234 "$(q 'gpuctl_gpu_memory_used_bytes{gpu="0"} / 2^20')"
	check_eq "PromQL: total power over 8 GPUs" 2176.9 "$(q 'round(sum(gpuctl_gpu_power_watts), 0.1)')"
	check_eq "PromQL: GPUs of the machine" 8 "$(q 'count(gpuctl_gpu_info{hostname!=""})')"
	check_eq "a byte that is not UTF-8 became U+FFFD" 70000 "$(q 'gpuctl_process_gpu_memory_bytes{command="train\ufffd.py"} / 2^20')"
	check_eq "a name cut at 64 bytes between characters" 500 "$(q "gpuctl_process_gpu_memory_bytes{command=\"$A63\"} / 2^20")"
	kill $PROM; wait $PROM 2>/dev/null
	stop_exporter
else
	skip "real Prometheus" "the prometheus package is not installed" 8
fi
