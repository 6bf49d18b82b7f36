#!/usr/bin/env bash
# bench/exporter.sh: `gpuctl exporter` on a simulated 16-GPU machine with 1,000 live processes
# (bench/spawn.c), scraped by bench/scrape.c over keep-alive connections: an uncached scrape's
# latency, cached scrapes from 64 concurrent clients, 200 clients arriving at once, scrapes while
# 50 idle and half-open connections are open, and the exporter's RSS over 20,000 scrapes. Then,
# where Prometheus is installed, how soon `status --prometheus` shows a host stale once its
# exporter stops (gpuctl-status(1): at most two scrape intervals plus the scrape timeout).
. "$(dirname "$0")/lib.sh"

echo "== gpuctl exporter bench: $(machine_line)"
live_machine "$tmp/m16" 16 1000
export FAKENVML_MACHINE=$tmp/m16
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
xpid=
start() { # start CACHE_MS [OPTIONS]: an exporter on a free port
	p=$(port)
	"$B/gpuctl" exporter --listen 127.0.0.1:$p --cache-ms "$@" 2>"$tmp/exporter.log" & xpid=$!
	for ((i = 0; i < 200; i++)); do
		curl -sf "http://127.0.0.1:$p/metrics" -o /dev/null && return
		sleep 0.05
	done
	echo "bench: the exporter did not answer" >&2; cat "$tmp/exporter.log" >&2; exit 1
}
stop() { kill "$xpid"; wait "$xpid" 2>/dev/null || true; xpid=; }
refreshes() { curl -sf "http://127.0.0.1:$p/metrics" | awk '/^gpuctl_exporter_refreshes_total /{print $2}'; }
rss() { awk '/^VmRSS/{print $2}' "/proc/$xpid/status"; }
scrape() { # scrape CLIENTS SCRAPES GAP_MIN GAP_MAX: sets S_* from bench-scrape's line
	local out
	out=$("$B/bench-scrape" "$p" "$@") || { echo "bench: scrapes failed" >&2; exit 1; }
	read -r _ S_n _ S_bytes _ S_wall _ S_p50 _ S_p99 _ S_max <<<"$out"
}
extra=() # Prometheus and its exporters, at the end
trap 'for x in $xpid "${extra[@]}"; do kill "$x" 2>/dev/null || true; done; bench_cleanup' EXIT

echo "16 GPUs x 1,000 live processes"
start 0
scrape 1 300 10 30
row "uncached scrape, one client: p50" "$S_p50 ms (p99 $S_p99, $((S_bytes / 1024)) KiB)" "<= 3 ms" "$(le "$S_p50" 3)"
r0=$(refreshes)
scrape 8 100 0 0
r1=$(refreshes)
row "uncached, 8 clients back to back: p50" "$S_p50 ms, p99 $S_p99 ms, $(calc "$S_n / $S_wall") /s" "" -
row "  NVML refreshes for their $S_n scrapes" "$((r1 - r0 - 1))" "" -
# RSS: 20,000 uncached scrapes (each a refresh, or a share of one), sampled every 5,000.
samples=()
for ((k = 0; k < 4; k++)); do scrape 8 625 0 0; samples+=("$(rss)"); done
grow=$((samples[3] - samples[0]))
row "RSS over 20,000 uncached scrapes (KiB)" "${samples[*]}" "growth <= 512" "$(le "$grow" 512)"
stop

start 1000
r0=$(refreshes)
scrape 64 100 0 100
r1=$(refreshes)
row "cached (1 s), 64 keep-alive clients: p99" "$S_p99 ms (p50 $S_p50, max $S_max)" "<= 5 ms" "$(le "$S_p99" 5)"
row "  $S_n scrapes in $S_wall s: NVML refreshes" "$((r1 - r0 - 1))" "<= $(awk "BEGIN{print int($S_wall) + 1}")" \
	"$(le "$((r1 - r0 - 1))" "$(awk "BEGIN{print int($S_wall) + 1}")")"
samples=("$(rss)")
scrape 64 313 0 0
samples+=("$(rss)")
row "RSS over 20,000 cached scrapes (KiB)" "${samples[*]}" "growth <= 512" "$(le "$((samples[1] - samples[0]))" 512)"
# 200 clients at once, each on a new connection (tests/t5002 checks that all are served).
scrape 200 1 0 0
row "cached, 200 clients at once (new connections): max" "$S_max ms (p50 $S_p50, all in $S_wall s)" "<= 100 ms" "$(le "$S_max" 100)"
# Scrapes while 50 connections stay open, idle or with half a request (the exporter drops them
# after its --timeout, 10 s: longer than this takes); t5002 checks that they do not block others.
exec 8> >(python3 -c '
import socket, sys
socks = [socket.create_connection(("127.0.0.1", int(sys.argv[1]))) for _ in range(50)]
for s in socks[1::2]:
    s.sendall(b"GET /metr")
print("open", flush=True)
sys.stdin.read()' "$p" >"$tmp/held")
for ((i = 0; i < 600; i++)); do grep -q open "$tmp/held" 2>/dev/null && break; sleep 0.05; done
scrape 1 200 0 0
exec 8>&-
row "cached, 50 idle and half-open connections open: p99" "$S_p99 ms (p50 $S_p50, max $S_max)" "<= 5 ms" "$(le "$S_p99" 5)"
stop

# Staleness through a real Prometheus (scrape interval 1 s, timeout 1 s): five exporters of an idle
# 2-GPU machine, stopped one after another; the time from each exporter's end to the first
# `status --prometheus` that shows its host's GPUs stale (asked back to back).
if command -v prometheus >/dev/null; then
	bash tests/fake/gen-machine.sh "$tmp/q2" 2 0
	sed -i 's/^memory_used_mib = .*/memory_used_mib = 0/; s/^util_gpu = .*/util_gpu = 0/' "$tmp/q2"
	xp=() targets=""
	for k in 0 1 2 3 4; do
		pk=$(port)
		FAKENVML_MACHINE=$tmp/q2 "$B/gpuctl" exporter --listen 127.0.0.1:$pk --hostname bench-$k \
			2>"$tmp/exporter-$k.log" & xp+=($!) extra+=($!)
		targets="$targets${targets:+, }'127.0.0.1:$pk'"
	done
	pp=$(port)
	mkdir -p "$tmp/prom"
	printf 'global: {scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}\nscrape_configs:\n  - job_name: gpuctl\n    static_configs: [{targets: [%s]}]\n' \
		"$targets" >"$tmp/prom/prometheus.yml"
	prometheus --config.file="$tmp/prom/prometheus.yml" --storage.tsdb.path="$tmp/prom/data" \
		--web.listen-address=127.0.0.1:$pp >"$tmp/prom/log" 2>&1 & extra+=($!)
	url=http://127.0.0.1:$pp
	ups() { curl -s "$url/api/v1/query" --data-urlencode 'query=sum(up{job="gpuctl"})' | jq -r '.data.result[0].value[1] // 0' 2>/dev/null || echo 0; }
	for ((i = 0; i < 600; i++)); do [ "$(ups)" = 5 ] && break; sleep 0.1; done
	[ "$(ups)" = 5 ] || { echo "bench: Prometheus did not scrape the 5 exporters" >&2; exit 1; }
	: >"$tmp/stale"
	for k in 0 1 2 3 4; do
		kill "${xp[$k]}"; wait "${xp[$k]}" 2>/dev/null || true
		t0=$(date +%s%N)
		for ((i = 0; i < 3000; i++)); do
			[ "$("$B/gpuctl" status --prometheus="$url" --json 2>/dev/null |
				jq "[.gpus[] | select(.host == \"bench-$k\") | .stale] | (length > 0 and all)")" = true ] && break
		done
		echo $((($(date +%s%N) - t0) / 1000000)) >>"$tmp/stale"
	done
	smax=$(sort -n "$tmp/stale" | tail -1)
	row "a stopped exporter's host shown stale: max" "$smax ms (median $(sort -n "$tmp/stale" | sed -n 3p); 5)" \
		"<= 3000 ms" "$(le "$smax" 3000)"
else
	row "a stopped exporter's host shown stale" "not measured: no prometheus" "" -
fi
echo "exporter.sh: $missed target(s) missed"
