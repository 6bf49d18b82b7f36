#!/usr/bin/env bash
# t5004-cluster.sh: the cluster view (`status --prometheus`) against a real Prometheus server
# (Debian's prometheus) scraping three gpuctl exporters on loopback that simulate hosts: gpu-a
# (h100x8), gpu-b (two idle GPUs) and a second exporter that also calls itself gpu-a (so both
# gpu-a's are named by their scrape targets). Then gpu-b's exporter stops: gpu-b is shown stale
# (how soon, beside the documented bound of two scrape intervals and a scrape timeout, is
# bench/exporter.sh's figure) and never free; then Prometheus stops: exit 14 and a clear error.
. "$(dirname "$0")/lib/lib.sh"
plan 18
N=18
if ! command -v prometheus >/dev/null || ! command -v promtool >/dev/null; then
	skip "cluster view" "the prometheus package is not installed" $N
	exit 0
fi
quiet_machine "$TMP/b.machine" 2
# A gpuctl daemon the exporters ask: without one they say gpuctl_daemon_up 0, and the view
# shows no GPU of theirs free (who holds them is unknown).
. "$ROOT/tests/lib/daemon.sh"
daemon_setup
use_machine "$TMP/b.machine"
daemon_start
# gpu-a's two exporters simulate other hosts: their own NVML, not this daemon's view.
use_machine "$MACHINES/h100x8.machine"
GPUCTL_SNAPSHOT=0 start_exporter --hostname gpu-a --cache-ms 0
EA=$EXP PA=$PORT
use_machine "$TMP/b.machine"
start_exporter --hostname gpu-b --cache-ms 0
EB=$EXP PB=$PORT
use_machine "$MACHINES/workstation-mixed.machine"
GPUCTL_SNAPSHOT=0 start_exporter --hostname gpu-a --cache-ms 0
EC=$EXP PC=$PORT
PP=$(free_port)
URL=http://127.0.0.1:$PP
mkdir -p "$TMP/prom"
cat >"$TMP/prom/prometheus.yml" <<YML
global: {scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}
scrape_configs:
  - job_name: gpuctl
    static_configs: [{targets: ['127.0.0.1:$PA', '127.0.0.1:$PB', '127.0.0.1:$PC']}]
YML
promtool check config "$TMP/prom/prometheus.yml" >/dev/null 2>&1 || echo "# promtool check config failed"
prometheus --config.file="$TMP/prom/prometheus.yml" --storage.tsdb.path="$TMP/prom/data" \
	--web.listen-address=127.0.0.1:$PP >"$TMP/prom/log" 2>&1 &
PROM=$!
await_line 'Server is ready to receive web requests' "$TMP/prom/log" 30
# Its first scrapes wait for its discovery manager (every 5 s in 2.42): seen only by asking it.
ups() { curl -s "$URL/api/v1/query" --data-urlencode 'query=sum(up{job="gpuctl"})' | jq -r '.data.result[0].value[1] // 0'; }
end=$((SECONDS + 30))
until [ "$(ups)" = 3 ] || [ $SECONDS -ge $end ]; do sleep 0.1; done

# A scrape that fails (one of 1 s, on a loaded machine) makes its host's GPUs stale until the next
# one: the view is taken once every target's last scrape succeeded (or after 30 s, to fail).
settled() {
	"$GPUCTL" status --prometheus="$URL" --json >"$TMP/out" 2>"$TMP/err" &&
		[ "$(jqv '[.gpus[] | select(.stale)] | length')" = 0 ]
}
wait_for settled
check_eq "three hosts: gpu-b and the two gpu-a exporters by target" \
	"$(jq -cn --arg a "127.0.0.1:$PA" --arg c "127.0.0.1:$PC" '[$a, $c, "gpu-b"] | sort')" \
	"$(jqv '[.hosts[].host] | sort')"
check_eq "13 GPUs, none stale" "13 0" "$(jqv '[(.gpus | length), ([.gpus[] | select(.stale)] | length)] | join(" ")' | tr -d '"')"
check_eq "gpu-a GPU 0: the simulated values" '[71234,81559,98,64,658]' \
	"$(jqv "[.gpus[] | select(.instance == \"127.0.0.1:$PA\" and .index == 0) | .memory_used_mib, .memory_total_mib, .utilization_gpu_pct, .temperature_c, (.power_w | floor)]")"
"$GPUCTL" status --json >"$TMP/local.json"
check_eq "gpu-a's GPUs and processes as status shows them locally" \
	"$(GPUCTL_SNAPSHOT=0 FAKENVML_MACHINE=$MACHINES/h100x8.machine "$GPUCTL" status --json | jq -c '[.gpus[] | [.uuid, ([.processes[]? | [.pid, .used_memory_mib]] | sort)]]')" \
	"$(jqv "[.gpus[] | select(.instance == \"127.0.0.1:$PA\") | [.uuid, ([.processes[]? | [.pid, .used_memory_mib]] | sort)]]")"
"$GPUCTL" status --prometheus="$URL" --color=never >"$TMP/table" 2>&1
[ -n "${SHOW_TABLE:-}" ] && sed 's/^/# /' "$TMP/table"
check_grep "table: a line per host" "^== gpu-b  127\.0\.0\.1:$PB  driver " "$TMP/table"
check_eq "table: 13 GPU lines" 13 "$(grep -cE '^ +[0-9]+ NVIDIA' "$TMP/table")"
wait_for settled
"$GPUCTL" status --prometheus="$URL" --free --json >"$TMP/out" 2>"$TMP/err"
check_eq "--free: gpu-b's two idle GPUs are free" 2 "$(jqv '[.gpus[] | select(.host == "gpu-b")] | length')"
check_eq "--free: gpu-a GPU 0 (98% busy) is not" 0 \
	"$(jqv "[.gpus[] | select(.instance == \"127.0.0.1:$PA\" and .index == 0)] | length")"
check_exit "the exporter's URL is not Prometheus: exit 14" 14 "$GPUCTL" status --prometheus="http://127.0.0.1:$PA"
check_grep "... saying so" "not a Prometheus server|no Prometheus API answer" "$TMP/stderr"

# The Grafana dashboard shipped in contrib/: each query is PromQL this Prometheus accepts, and
# each metric it names is one the exporter exports.
bad=""
while IFS= read -r expr; do
	e=${expr//\$hostname/.*}
	e=${e//\$job/.*}
	st=$(curl -s "$URL/api/v1/query" --data-urlencode "query=$e" | jq -r .status)
	[ "$st" = success ] || bad="$bad [$expr: $st]"
done < <(jq -r '.. | .expr? // empty' "$ROOT/contrib/grafana-gpuctl.json")
check_eq "Grafana dashboard: every query accepted by Prometheus" "" "$bad"
missing=""
for m in $(jq -r '.. | .expr? // empty' "$ROOT/contrib/grafana-gpuctl.json" | grep -oE 'gpuctl_[a-z_]+' | sort -u); do
	curl -s "http://127.0.0.1:$PA/metrics" | grep -q "^# TYPE $m " || missing="$missing $m"
done
check_eq "Grafana dashboard: every metric it names is exported" "" "$missing"

# Prometheus tells no one when a scrape fails: asked until it shows (the 60 s only catch a failure).
kill "$EB"; wait "$EB" 2>/dev/null
stale=""
end=$((SECONDS + 60))
until [ $SECONDS -ge $end ]; do
	"$GPUCTL" status --prometheus="$URL" --json >"$TMP/out" 2>/dev/null
	# Its GPUs go stale when their newest sample ages, the host when Prometheus's next scrape of
	# the target fails: two moments; wait for both.
	[ "$(jqv '[(.gpus[] | select(.host == "gpu-b") | .stale), (.hosts[] | select(.host == "gpu-b") | .stale)] | all')" = true ] &&
		{ stale=1; break; }
	sleep 0.1
done
check_eq "gpu-b shown stale once its exporter stopped" 1 "$stale"
check_eq "... its host too, saying why" '[true,true]' \
	"$(jqv '[.hosts[] | select(.host == "gpu-b") | .stale, (.error | length > 0)]')"
check_eq "... the others current" 0 "$(jqv '[.gpus[] | select(.host != "gpu-b" and .stale)] | length')"
check_eq "... with its last values, processes unknown (null), never idle" '[2,true]' \
	"$(jqv '[.gpus[] | select(.host == "gpu-b")] | [length, (map(.processes == null and .memory_total_mib != null) | all)]')"
"$GPUCTL" status --prometheus="$URL" --free --json >"$TMP/out" 2>/dev/null
check_eq "--free: a stale GPU is never free" 0 "$(jqv '[.gpus[] | select(.host == "gpu-b")] | length')"

kill "$PROM"; wait "$PROM" 2>/dev/null
check_exit "Prometheus down: exit 14" 14 "$GPUCTL" status --prometheus "$URL"
stop_exporter
kill "$EA" "$EC" 2>/dev/null
