#!/usr/bin/env bash
# t5006-exporter-truth.sh: the exporter says only what it knows, and keeps serving under attack.
# Leases: with no daemon, or one that does not answer, gpuctl_daemon_up is 0, the lease series are
# left out (never "nothing leased, nobody waiting") and a scrape error is counted; with the daemon
# up, gpuctl_daemon_up 1 and the lease series. Processes whose owner is not known are user=""
# (no account has that name), never merged with a real user called "unknown". A slowloris (many
# half-open connections from several addresses, trickling bytes) cannot keep real scrapers out.
. "$(dirname "$0")/lib/lib.sh"
plan 18
use_state
sample() { grep -E "^$1\{$2" "$TMP/metrics" | awk '{print $NF}'; }
lease_samples() { grep -cE '^gpuctl_(gpu_leased|gpu_lease_info|lease_queue_length|lease_queue_oldest_wait_seconds)\{' "$TMP/metrics"; }

# No daemon at all: the lease view cannot be had.
spawn owned-by-me; ME=$SPAWNED
gen_machine "$TMP/m" 2 3 "$ME"    # pid 3000001 and 3000002 are gone: their owner is not known
use_machine "$TMP/m"
start_exporter --cache-ms 0
curl -sf "http://127.0.0.1:$PORT/metrics" >"$TMP/metrics"
check_eq "no daemon: gpuctl_daemon_up 0" 0 "$(sample gpuctl_daemon_up '')"
check_eq "no daemon: no lease series (not 'nothing leased')" 0 "$(lease_samples)"
check "no daemon: a scrape error counted for the lease collector" \
	test "$(sample gpuctl_exporter_scrape_errors_total 'collector="leases"')" -ge 1
check_grep "no daemon: logged" 'lease metrics left out \(gpuctl_daemon_up 0\): no gpuctl daemon is running' "$TMP/exporter.log"

# Processes whose owner is not known: user="", apart from every real user.
check_eq "an unknown owner is user=\"\" (2 processes)" 2 "$(grep -c '^gpuctl_process_gpu_memory_bytes{.*user="",command=""}' "$TMP/metrics")"
check_eq "no user=\"unknown\" anywhere" 0 "$(grep -c 'user="unknown"' "$TMP/metrics")"
check_eq "per-user sums: the unknown owners apart from $(id -un)" "$(( (101 + 102) * 1048576 )) $((100 * 1048576))" \
	"$(sample gpuctl_user_gpu_memory_bytes 'user=""') $(sample gpuctl_user_gpu_memory_bytes "user=\"$(id -un)\"")"
check_grep "the HELP names the real option, --max-processes" '^# HELP gpuctl_process_gpu_memory_bytes .*--max-processes' "$TMP/metrics"
stop_exporter

# A daemon that accepts but never answers (hung): the same, once its answer timeout has passed.
python3 -c 'import socket, sys, signal
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET); s.bind(sys.argv[1]); s.listen(64)
open(sys.argv[2], "w").write("listening\n"); signal.pause()' "$TMP/hung.sock" "$TMP/hung.ready" &
await_line listening "$TMP/hung.ready"
GPUCTL_SOCKET=$TMP/hung.sock GPUCTL_DAEMON_TIMEOUT=1s start_exporter --cache-ms 0
curl -sf --max-time 60 "http://127.0.0.1:$PORT/metrics" >"$TMP/metrics"
check_eq "a hung daemon: scraped, gpuctl_daemon_up 0 and no lease series" "0 0 0" "$? $(sample gpuctl_daemon_up '') $(lease_samples)"
check_grep "a hung daemon: logged, naming it" "lease metrics left out .*gpuctl daemon" "$TMP/exporter.log"
stop_exporter

# The daemon up (this user's private daemon, started by run): gpuctl_daemon_up 1 and the leases.
quiet_machine "$TMP/q" 2
use_machine "$TMP/q"
WORKLOAD_READY=$TMP/run.ready "$GPUCTL" run -g 1 --name t -- "$B/workload" --mem 10 & runner=$!
await_line '^ready ' "$TMP/run.ready"
wait_leases 1
start_exporter --cache-ms 0
curl -sf "http://127.0.0.1:$PORT/metrics" >"$TMP/metrics"
check_eq "daemon up: gpuctl_daemon_up 1" 1 "$(sample gpuctl_daemon_up '')"
check_eq "daemon up: the lease series (GPU 1 leased, queue 0)" "0 1 0" \
	"$(grep '^gpuctl_gpu_leased{' "$TMP/metrics" | awk '{print $NF}' | tr '\n' ' ')$(sample gpuctl_lease_queue_length '')"
kill $runner; wait $runner 2>/dev/null
stop_exporter

# A slowloris: more half-open connections than the bounds, from six addresses, trickling bytes.
start_exporter --timeout 2s
python3 "$ROOT/tests/helper/exporter_slowloris.py" "$PORT" 2 >"$TMP/slowloris" 2>&1
stop_exporter
if grep -q '^skip ' "$TMP/slowloris"; then
	skip "slowloris" "$(sed -n 's/^skip //p' "$TMP/slowloris")" 6
else
	cat "$TMP/slowloris"
	check "the exporter logs what it dropped, and why" sh -c "grep -Eq 'dropped connections: [0-9]+ whose request was not in within the 2 s timeout' '$TMP/exporter.log' &&
		grep -Eq 'dropped connections: .*[0-9]+ waiting ones to make room for newer' '$TMP/exporter.log'"
	# libmicrohttpd writes a line per connection that ends badly: thousands here, 20 a minute kept.
	check "the log stays short ($(wc -l <"$TMP/exporter.log") lines)" test "$(wc -l <"$TMP/exporter.log")" -lt 100
fi
