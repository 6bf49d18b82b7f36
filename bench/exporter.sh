#!/usr/bin/env bash
# bench/exporter.sh: `gpuctl exporter` on a simulated 16-GPU machine with 1,000 live processes
# (bench/spawn.c), scraped by bench/scrape.c over keep-alive connections: an uncached scrape's
# latency, cached scrapes from 64 concurrent clients, and the exporter's RSS over 20,000 scrapes.
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
trap 'if [ -n "$xpid" ]; then kill "$xpid" 2>/dev/null || true; fi; bench_cleanup' EXIT

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
stop
echo "exporter.sh: $missed target(s) missed"
