#!/usr/bin/env bash
# bench/exporter.sh: scrape latency and throughput of `gpuctl exporter` on a simulated 16-GPU,
# 1000-process machine, from the cache and uncached, and how often NVML was refreshed.
set -eu
cd "$(dirname "$0")/.."
B=${B:-build}
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT
sleepers=()
for i in $(seq 100); do "$B/sleeper" & sleepers+=($!); done
bash tests/gen-machine.sh "$tmp/m16" 16 1000 "${sleepers[@]}" "${sleepers[@]}" "${sleepers[@]}"
export FAKENVML_MACHINE=$tmp/m16 GPUCTL_NVML_LIBRARY=$PWD/$B/fakenvml/libnvidia-ml.so.1 GPUCTL_STATE_DIR=$tmp/state
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
run() { # run CACHE_MS: start an exporter, scrape it from 8 threads, print figures
	local p; p=$(port)
	"$B/gpuctl" exporter --listen 127.0.0.1:$p --cache-ms "$1" 2>/dev/null &
	local pid=$!
	for i in $(seq 100); do curl -sf "http://127.0.0.1:$p/metrics" >/dev/null && break; sleep 0.05; done
	python3 - "$p" "$1" <<'PY'
import http.client, sys, threading, time
port, cache = int(sys.argv[1]), int(sys.argv[2])
def refreshes():
    c = http.client.HTTPConnection("127.0.0.1", port); c.request("GET", "/metrics")
    body = c.getresponse().read().decode()
    return int([l for l in body.splitlines() if l.startswith("gpuctl_exporter_refreshes_total ")][0].split()[1]), len(body)
r0, size = refreshes()
lat, lock, N, T = [], threading.Lock(), 250, 8
def worker():
    c = http.client.HTTPConnection("127.0.0.1", port)
    mine = []
    for _ in range(N):
        t = time.perf_counter(); c.request("GET", "/metrics"); c.getresponse().read()
        mine.append(time.perf_counter() - t)
    with lock: lat.extend(mine)
t0 = time.perf_counter()
ts = [threading.Thread(target=worker) for _ in range(T)]
[t.start() for t in ts]; [t.join() for t in ts]
wall = time.perf_counter() - t0
r1, _ = refreshes()
lat.sort()
print("cache %4d ms: %d scrapes of %d KiB in %.2f s = %.0f/s; latency median %.2f ms, p99 %.2f ms; "
      "NVML refreshes %d (at most %s)" % (cache, len(lat), size // 1024, wall, len(lat) / wall,
      lat[len(lat) // 2] * 1000, lat[int(len(lat) * .99)] * 1000, r1 - r0,
      "one per scrape" if cache == 0 else int(wall / (cache / 1000)) + 1))
PY
	kill $pid; wait $pid 2>/dev/null || true
}
echo "machine: 16 GPUs, 1000 processes; 8 keep-alive scrapers, 250 scrapes each"
run 1000
run 0
