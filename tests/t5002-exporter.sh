#!/usr/bin/env bash
# t5002-exporter.sh: gpuctl exporter: the exposition passes promtool (its every value per simulated
# machine: t0006's golden files), leases and processes show in it, and the server
# survives concurrency, slow and malformed clients, 10,000 scrapes and a GPU lost while serving.
# A real Prometheus server scraping it: t5003.
. "$(dirname "$0")/lib/lib.sh"
plan 41
use_state
sample() { grep -E "^$1\{$2" "$TMP/metrics" | awk '{print $NF}'; }

use_machine "$MACHINES/a100-mig.machine"
# Under ASan, freed memory waits in a quarantine (256 MiB by default) before reuse, and the RSS
# shows it: how much depends on how many pages the load lets the cache refresh. A small
# quarantine keeps the memory check below about the exporter, not the machine's load.
[[ $B == *asan* ]] && export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=4
start_exporter --cache-ms 200 --timeout 2s
curl -sf "http://127.0.0.1:$PORT/metrics" >"$TMP/metrics"
check_grep "logs where it serves: the port the kernel chose" "serving http://127.0.0.1:[1-9][0-9]*/metrics" "$TMP/exporter.log"
if command -v promtool >/dev/null; then
	check "promtool check metrics" sh -c "promtool check metrics <'$TMP/metrics'"
else
	skip "promtool" "the prometheus package is not installed"
fi
check_eq "every family has HELP and TYPE" "$(grep -c '^# HELP' "$TMP/metrics")" "$(grep -c '^# TYPE' "$TMP/metrics")"
check_eq "/ is an HTML page linking to /metrics" 1 "$(curl -sf "http://127.0.0.1:$PORT/" | grep -c 'href="/metrics"')"
check_eq "anything else is 404" 404 "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/nope")"
check_eq "POST is refused" 405 "$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$PORT/metrics")"
python3 "$ROOT/tests/helper/exporter_robust.py" "$PORT" "$EXP" 2 200 "$TMP/exporter.log"
stop_exporter
check_eq "stops cleanly on SIGTERM" 0 $?

# Processes, users and leases.
quiet_machine "$TMP/m4" 4
use_machine "$TMP/m4"
WORKLOAD_READY=$TMP/run.ready "$GPUCTL" run -g 2 --name train -- "$B/workload" --mem 3000 & runner=$!
await_line '^ready ' "$TMP/run.ready"
wait_leases 1
start_exporter --cache-ms 0
curl -sf "http://127.0.0.1:$PORT/metrics" >"$TMP/metrics"
check_eq "lease holder per GPU" 1 "$(sample gpuctl_gpu_lease_info "gpu=\"2\".*holder=\"$(id -un)\",lease_name=\"train\",kind=\"run\"")"
check_eq "leased flag" "0 0 1 0" "$(grep '^gpuctl_gpu_leased{' "$TMP/metrics" | awk '{print $NF}' | tr '\n' ' ' | sed 's/ $//')"
check_eq "per-user memory" 3145728000 "$(sample gpuctl_user_gpu_memory_bytes "user=\"$(id -un)\"")"
check_eq "per-user GPU count" 1 "$(sample gpuctl_user_gpus "user=\"$(id -un)\"")"
check_eq "the process's command name" 1 "$(grep -c 'command="workload"' "$TMP/metrics")"
"$GPUCTL" run -n 4 --wait -- true 2>/dev/null & waiter=$!
wait_queue 1
curl -sf "http://127.0.0.1:$PORT/metrics" >"$TMP/metrics" # --cache-ms 0: asked of the daemon now
check_eq "queue length" 1 "$(sample gpuctl_lease_queue_length '')"
kill $waiter $runner; wait $waiter $runner 2>/dev/null
stop_exporter

# More processes on a GPU than the label budget: the rest add up under pid="other".
gen_machine "$TMP/many" 1 30
use_machine "$TMP/many"
start_exporter --max-processes 5
curl -sf "http://127.0.0.1:$PORT/metrics" >"$TMP/metrics"
check_eq "process samples are capped" 6 "$(grep -c '^gpuctl_process_gpu_memory_bytes{' "$TMP/metrics")"
check_eq "the rest is one pid=\"other\" sample" "$(( (105+106+107+108+109+110+111+112+113+114+115+116+117+118+119+120+121+122+123+124+125+126+127+128+129) * 1048576 ))" "$(sample gpuctl_process_gpu_memory_bytes '.*pid="other"')"
stop_exporter

# Uncached, concurrent scrapes share refreshes, yet none is served a page older than itself:
# each client's consecutive scrapes see strictly newer refreshes.
gen_machine "$TMP/big" 8 500
use_machine "$TMP/big"
# Each refresh takes 150 ms or more (a slow driver), so the clients that a barrier releases
# together overlap one even when a loaded machine wakes them tens of milliseconds apart. Each
# scrape opens its own connection: libmicrohttpd keeps a connection on the thread that accepted
# it, and on a loaded machine one thread could accept all eight keep-alive connections and
# serve them one after another (a whole suite once saw 240 scrapes take 240 refreshes); a new
# connection is accepted by a thread that is free.
FAKENVML_PROCS_DELAY_MS=150 start_exporter --cache-ms 0
python3 - "$PORT" >"$TMP/shared" <<'PY'
import http.client, re, sys, threading
port, T, N = int(sys.argv[1]), 8, 6
seen, barrier = [[] for _ in range(T)], threading.Barrier(T)
failed = []
def client(k):
    try:
        for _ in range(N):
            barrier.wait(timeout=60)
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            c.request("GET", "/metrics")
            body = c.getresponse().read().decode()
            c.close()
            seen[k].append(int(re.search(r"^gpuctl_exporter_refreshes_total (\d+)$", body, re.M).group(1)))
    except Exception as e:   # one client failing must not leave the others at the barrier
        failed.append(repr(e))
        barrier.abort()
ts = [threading.Thread(target=client, args=(k,)) for k in range(T)]
[t.start() for t in ts]; [t.join() for t in ts]
if failed:
    print("failed 0 0"); sys.stderr.write("%s\n" % failed[0]); sys.exit()
newer = all(all(b > a for a, b in zip(s, s[1:])) for s in seen)
refreshes = max(max(s) for s in seen) - min(min(s) for s in seen) + 1
print("%s %d %d" % ("newer" if newer else "stale", refreshes, T * N))
PY
read -r fresh refreshes scrapes <"$TMP/shared"
check_eq "uncached: every scrape gets a refresh begun after it was asked for" newer "$fresh"
check "uncached: $scrapes concurrent scrapes shared $refreshes refreshes" test "$refreshes" -lt "$scrapes"
stop_exporter

# A refresh that outlasts the request deadline (a slow driver) holds the serving threads: the
# requests that came meanwhile wait unread, on the exporter, not on their clients, and are
# answered, not dropped as a slowloris's would be.
use_machine "$MACHINES/a100-mig.machine"
FAKENVML_PROCS_DELAY_MS=1500 start_exporter --cache-ms 0 --timeout 1s
python3 "$ROOT/tests/helper/exporter_robust.py" --crowd "$PORT" 40 >"$TMP/crowd"
read -r crowd_served crowd_rest <"$TMP/crowd"
name="a refresh outlasting the 1 s request timeout: the 40 requests that came meanwhile answered"
if [ "$crowd_served" = 40 ]; then ok "$name"; else
	not_ok "$name" "served $crowd_served, then $crowd_rest" "$(grep dropped "$TMP/exporter.log")"
fi
stop_exporter

# A refresh stuck in the driver (a GPU fallen off the bus: the call never returns) does not hang
# the stop: the exporter waits for it 5 s, says so, closes the scrape it was for, and ends with
# exit 1 (not 0: something is wrong). The stand-in hangs while the file exists.
use_machine "$MACHINES/h100x8.machine"
HANG=$TMP/hang
FAKENVML_PROCS_HANG_FILE=$HANG start_exporter --cache-ms 0
touch "$HANG"
curl -s -m 120 "http://127.0.0.1:$PORT/metrics" >"$TMP/hung.page" 2>&1 &
hung_curl=$!
await_line '^hung$' "$HANG.hung"
kill -TERM "$EXP"
if "$AWAIT_EXIT" 60 "$EXP"; then wait "$EXP"; rc=$?; else
	kill -KILL "$EXP"; wait "$EXP"; rc="still running 60 s after SIGTERM"
fi
check_eq "a refresh stuck in the driver: the stop ends without it, exit 1" 1 "$rc"
rm -f "$HANG"
wait "$hung_curl"
check_eq "  said so in the log, and the scrape it was for closed unanswered" "1:0" \
	"$(grep -c 'the refresh under way has not returned in 5 s' "$TMP/exporter.log"):$(grep -c gpuctl_ "$TMP/hung.page")"

# A GPU lost while serving: reported as lost, the others still served.
awk '/^\[gpu\]/{g++} {print} /^\[gpu\]/ && g==2 {print "lost_after = 40"}' "$TMP/m4" >"$TMP/m4lost"
use_machine "$TMP/m4lost"
start_exporter --cache-ms 0
for i in 1 2 3 4 5 6; do curl -sf "http://127.0.0.1:$PORT/metrics" >"$TMP/metrics"; done
check_eq "the lost GPU is reported" 1 "$(sample gpuctl_gpu_lost 'gpu="1"')"
check_eq "and has no stale values" "" "$(sample gpuctl_gpu_temperature_celsius 'gpu="1"')"
check_eq "the others are still served" 40 "$(sample gpuctl_gpu_temperature_celsius 'gpu="0"')"
check_grep "and it is logged" 'GPU 1 .* is lost' "$TMP/exporter.log"
stop_exporter

check_exit "a bad --listen" 2 "$GPUCTL" exporter --listen nowhere
check_exit "a bad IPv6 --listen" 2 "$GPUCTL" exporter --listen '[zz]:1'
"$GPUCTL" exporter --listen "[::1]:0" 2>"$TMP/e6.log" & e6=$!
if await_line 'serving|cannot' "$TMP/e6.log" && P6=$(sed -n 's|.*serving http://\[::1\]:\([0-9]*\)/.*|\1|p' "$TMP/e6.log") &&
	[ -n "$P6" ] && curl -sf -g "http://[::1]:$P6/metrics" >/dev/null; then
	ok "listens on IPv6 when asked"
elif ip -6 addr show lo 2>/dev/null | grep -q '::1'; then
	not_ok "listens on IPv6 when asked" "$(cat "$TMP/e6.log")"
else
	skip "listens on IPv6 when asked" "no ::1 on this machine"
fi
kill $e6 2>/dev/null; wait $e6 2>/dev/null
start_exporter
check_exit "a port in use" 1 "$GPUCTL" exporter --listen "127.0.0.1:$PORT"
stop_exporter
