#!/usr/bin/env bash
# t2018-snapshot.sh: the daemon's shared snapshot (issue 22). status (table, JSON, --details,
# -L, --query-gpu, --query-compute-apps), doctor and the exporter print through the daemon's view
# exactly what they print reading the machine themselves, on each stand-in machine: the client
# is given no NVML at all (GPUCTL_NVML_LIBRARY names nothing), so only the snapshot can have
# shown the GPUs. A change in the simulated machine shows within the bound the asker states; a
# stopped or absent daemon leaves the client to read the machine itself (and without NVML it
# says so, never shows nothing); a second user flooding snapshot requests or reading half an
# answer neither fails nor blocks the first user's status. The leases status shows come in the
# snapshot's own round trip (one connection a refresh), each user's `list` answer byte for byte.
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/daemon.sh"
plan 130
use_state
daemon_setup
NONVML=$TMP/no-such-libnvidia-ml.so.1
direct() { GPUCTL_SNAPSHOT=0 "$GPUCTL" "$@"; }
# frames_since LINE: the frames laid out by the daemon that stopped after line LINE of its log
# (a daemon never asked for a view logs no count: none, not an earlier daemon's)
frames_since() { tail -n +$(($1 + 1)) "$DLOG" | grep -o '[0-9]* frames laid out' | tail -n 1 | cut -d' ' -f1; }
viasnap() { GPUCTL_NVML_LIBRARY=$NONVML "$GPUCTL" "$@"; }
QGPU=index,name,uuid,pci.bus_id,serial,vbios_version,memory.total,memory.used,memory.reserved,utilization.gpu,temperature.gpu,power.draw,power.limit,fan.speed,clocks.sm,clocks.mem,pstate,compute_mode,persistence_mode,ecc.mode.current,ecc.errors.uncorrected.volatile.total,mig.mode.current,pcie.link.gen.current,clocks_event_reasons.active
QAPPS=pid,process_name,used_memory,gpu_uuid,gpu_bus_id
forms=("status" "status --json" "status --json --details" "status -L"
	"status --query-gpu=$QGPU --format=csv" "status --query-compute-apps=$QAPPS --format=csv"
	"doctor")

# Each stand-in machine: every form through the snapshot is the direct output, byte for byte.
for m in h100x8 a100-mig workstation-mixed h200-mig; do
	use_machine "$MACHINES/$m.machine"
	from=$(wc -l <"$DLOG")
	daemon_start
	for f in "${forms[@]}"; do
		direct $f >"$TMP/direct" 2>"$TMP/direct.err"; drc=$?
		viasnap $f >"$TMP/snap" 2>"$TMP/snap.err"; src=$?
		# The table's first line ends in the time of day: two runs may fall either side of a second.
		sed -Ei '1s/ [0-9]{2}:[0-9]{2}:[0-9]{2}$//' "$TMP/direct" "$TMP/snap"
		if [ "$drc:$src" = "$drc:$drc" ] && [ -s "$TMP/snap" ] && cmp -s "$TMP/direct" "$TMP/snap"; then
			ok "$m: gpuctl $f via the snapshot is the direct output (exit $drc)"
		else
			not_ok "$m: gpuctl $f via the snapshot is the direct output" "exit $drc / $src" \
				"$(diff "$TMP/direct" "$TMP/snap" | head -8)" "$(head -3 "$TMP/snap.err")"
		fi
	done
	# The table one-shot on a terminal (a pty 90 columns wide): not redrawn nor cut to the
	# terminal's rows as a loop's, the same as read directly.
	for how in direct frame; do
		env=GPUCTL_SNAPSHOT=0
		[ $how = frame ] && env=GPUCTL_NVML_LIBRARY=$NONVML
		SHELL=/bin/sh timeout 60 script -qec "stty cols 90 rows 12; env $env $GPUCTL status" /dev/null >"$TMP/pty.$how" 2>&1
		sed -Ei '1s/ [0-9]{2}:[0-9]{2}:[0-9]{2}\r?$//' "$TMP/pty.$how"
	done
	if [ -s "$TMP/pty.frame" ] && cmp -s "$TMP/pty.direct" "$TMP/pty.frame"; then
		ok "$m: gpuctl status on a terminal via the daemon's frame is the direct output"
	else
		not_ok "$m: gpuctl status on a terminal via the daemon's frame is the direct output" \
			"$(diff "$TMP/pty.direct" "$TMP/pty.frame" | head -6 | cat -A)"
	fi
	daemon_stop
	# the table's one-shots were the daemon's frames (the other forms decode the view)
	frames=$(frames_since "$from")
	check "$m: the daemon laid out the one-shot tables, piped and on the terminal ($frames)" \
		test "${frames:-0}" -ge 2
done

# Table loops (issue 22): their frames laid out by the daemon (machine/snap.h), each what the loop
# lays out reading the machine itself, byte for byte but for the clocks: piped, as wide as
# COLUMNS says, coloured, without processes. The daemon's log counts the frames it laid out;
# with a GPU lost it lays out none (the loop reports it, and exits 5), and the loop lays out
# the view itself, the same as ever. A one-shot's table likewise.
awk '/^\[gpu\]/{g++} {print} /^\[gpu\]/ && g==3 {print "fail.nvmlDeviceGetMemoryInfo = GPU_IS_LOST"}' "$MACHINES/h100x8.machine" >"$TMP/lost.machine"
loops=("status -l 0.2 -c 2" "72 status -l 0.2 -c 2" "100 status -l 0.2 -c 2 --color=always"
	"status -l 0.2 -c 2 --no-processes" "status")
for m in h100x8 a100-mig workstation-mixed h200-mig lost; do
	use_machine "$( [ $m = lost ] && echo "$TMP/lost.machine" || echo "$MACHINES/$m.machine")"
	from=$(wc -l <"$DLOG")
	daemon_start
	for f in "${loops[@]}"; do
		cols=
		case $f in [0-9]*) cols=${f%% *} f=${f#* } ;; esac
		env ${cols:+COLUMNS=$cols} GPUCTL_SNAPSHOT=0 "$GPUCTL" $f >"$TMP/direct" 2>"$TMP/direct.err"; drc=$?
		env ${cols:+COLUMNS=$cols} GPUCTL_NVML_LIBRARY=$NONVML "$GPUCTL" $f >"$TMP/snap" 2>"$TMP/snap.err"; src=$?
		sed -Ei 's/ [0-9]{2}:[0-9]{2}:[0-9]{2}$//' "$TMP/direct" "$TMP/snap"
		if [ "$drc" = "$src" ] && [ -s "$TMP/snap" ] && cmp -s "$TMP/direct" "$TMP/snap" &&
			cmp -s "$TMP/direct.err" "$TMP/snap.err"; then
			ok "$m: gpuctl $f${cols:+ (COLUMNS=$cols)} via the daemon's frames is the direct output (exit $drc)"
		else
			not_ok "$m: gpuctl $f${cols:+ (COLUMNS=$cols)} via the daemon's frames" "exit $drc / $src" \
				"$(diff "$TMP/direct" "$TMP/snap" | head -8)" "$(head -3 "$TMP/snap.err")"
		fi
	done
	daemon_stop
	frames=$(frames_since "$from")
	if [ $m = lost ]; then
		check_eq "$m: a GPU lost: no frame laid out, the loops laid out the view" 0 "${frames:-none}"
	else
		check "$m: the daemon laid out the loops' frames ($frames)" test "${frames:-0}" -ge 4
	fi
done

# A GPU whose graphics list fails: the daemon's view (which reads every list) cannot list its
# processes, so a query of compute processes through it says so on stderr (never a silent "none
# running"); read directly, the query reads the compute lists alone and lists them.
awk '{print} /^\[gpu\]/ && ++g == 7 {print "fail.nvmlDeviceGetGraphicsRunningProcesses = UNKNOWN"}' "$MACHINES/h100x8.machine" >"$TMP/gfail.machine"
use_machine "$TMP/gfail.machine"
daemon_start
viasnap status --query-compute-apps=pid --format=csv,noheader >"$TMP/snap" 2>"$TMP/snap.err"
check_grep "a GPU whose processes the view lacks: said, through the snapshot" '^gpuctl status: GPU 6: its processes could not be listed \(Unknown Error\); it has no rows here$' "$TMP/snap.err"
direct status --query-compute-apps=pid --format=csv,noheader >"$TMP/direct" 2>"$TMP/direct.err"
check_eq "  read directly: its compute processes listed, nothing to say" "1:0" "$(grep -c '^4000106$' "$TMP/direct"):$(grep -c . "$TMP/direct.err")"
daemon_stop

# A GPU process of a uid the directory does not name when the daemon first sees it (a daemon
# started at boot before LDAP answered): its number, then its name once the directory has it,
# without a restart (the daemon kept its first answer for good). The daemon runs in a mount
# namespace of its own whose /etc/passwd is a copy this script adds to (as root, with unshare).
NUID=2021
NLINE="gpuctl-t2018:x:$NUID:$NUID::/nonexistent:/usr/sbin/nologin"
cp /etc/passwd "$TMP/passwd"
chmod 644 "$TMP/passwd"
{ cat /etc/passwd; echo "$NLINE"; } >"$TMP/passwd.probe"
# The probe does what the check needs: a namespace of its own where a line added to the bound
# copy names the uid (not where nscd, sssd or LDAP alone answer for passwd).
if can_switch && ! getent passwd $NUID >/dev/null &&
	unshare -m --propagation private sh -c 'mount --bind "$0" /etc/passwd && getent passwd '$NUID \
		"$TMP/passwd.probe" >/dev/null 2>&1; then
	setpriv --reuid=$NUID --regid=$NUID --clear-groups "$B/sleeper" &
	NAMED=$!
	await_line "^$NAMED\$" "$SLEEPER_READY"
	{ sed '/^\[process\]/,$d' "$MACHINES/h200-idle.machine"
	  printf '[process]\ngpu = 0\npid = %s\nused_memory_mib = 100\n' "$NAMED"; } >"$TMP/named.machine"
	use_machine "$TMP/named.machine"
	n=$(count_lines "$DLOG" 'serving')
	unshare -m --propagation private sh -c 'mount --bind "$0" /etc/passwd && exec "$@"' "$TMP/passwd" \
		setpriv --reuid="$DUSER" --regid="$DUSER" --clear-groups "$GPUCTL" daemon \
		--socket "$GPUCTL_SOCKET" --state-dir "$DRUN/state" --config "$TMP/daemon.conf" >>"$DLOG" 2>&1 &
	DAEMON=$!
	await_count 'serving' "$DLOG" $((n + 1)) 20 || sed 's/^/#   /' "$DLOG"
	owner() { viasnap status --json 2>/dev/null | jq -r '.gpus[0].processes[0].user'; }
	check_eq "a process of a uid the directory does not name: its number, in the daemon's view" $NUID "$(owner)"
	echo "$NLINE" >>"$TMP/passwd"
	# the directory asked again 20 s after its miss (pid.h NAME_TTL_MISS), the view refreshed
	# for the asker: a deadline of 200 s only catches a name never shown
	named= end=$((SECONDS + 200))
	while kill -0 "$DAEMON" 2>/dev/null && [ $SECONDS -lt $end ]; do
		named=$(owner)
		[ "$named" = gpuctl-t2018 ] && break
		sleep 0.2
	done
	check_eq "  named once the directory names it, the daemon not restarted" gpuctl-t2018 "$named"
	daemon_stop
	{ kill -KILL $NAMED && wait $NAMED; } 2>/dev/null   # (no "Killed" notice in the output)
else
	skip "a uid named after the daemon's start" "needs root, setpriv, unshare -m, and /etc/passwd answering for uid $NUID (files)" 2
fi

# The exporter: the same exposition, but for its own refresh counter and timings.
use_machine "$MACHINES/a100-mig.machine"
daemon_start
expo() {
	start_exporter --cache-ms 0
	curl -sf "http://127.0.0.1:$PORT/metrics" | grep -vE '^gpuctl_exporter_|^# (HELP|TYPE) gpuctl_exporter_' >"$1"
	stop_exporter
}
if "$GPUCTL" exporter --help >/dev/null 2>&1 && curl --version >/dev/null 2>&1; then
	GPUCTL_SNAPSHOT=0 expo "$TMP/e.direct"
	GPUCTL_NVML_LIBRARY=$NONVML expo "$TMP/e.snap"
	if [ -s "$TMP/e.snap" ] && cmp -s "$TMP/e.direct" "$TMP/e.snap"; then
		ok "exporter via the snapshot: the direct exposition"
	else
		not_ok "exporter via the snapshot: the direct exposition" "$(diff "$TMP/e.direct" "$TMP/e.snap" | head -8)"
	fi
else
	skip "exporter via the snapshot" "no exporter (libmicrohttpd) or curl"
fi
# top: its screen from the snapshot (the client has no NVML), refreshed as the machine changes.
if command -v tmux >/dev/null; then
	. "$ROOT/tests/lib/tmux.sh"
	trap 'main_shell && { "${TM[@]}" kill-server 2>/dev/null; finish_script; }' EXIT
	"${TM[@]}" new-session -d -s top -x 160 -y 40 -e LC_ALL=C -e GPUCTL_NVML_LIBRARY=$NONVML "$GPUCTL" top -d 0.2
	check "top via the snapshot: the GPUs on its screen" await_screen top "A100"
	"${TM[@]}" kill-server 2>/dev/null
else
	skip "top via the snapshot" "no tmux"
fi
daemon_stop

# Validity per field: a GPU whose driver gives no fan reading keeps it N/A (workstation-mixed's
# first GPU: fan = NA), never 0.
use_machine "$MACHINES/workstation-mixed.machine"
daemon_start
viasnap status --query-gpu=index,fan.speed,power.draw,temperature.gpu --format=csv,noheader >"$TMP/snap"
direct status --query-gpu=index,fan.speed,power.draw,temperature.gpu --format=csv,noheader >"$TMP/direct"
check_eq "N/A stays N/A through the snapshot (never 0)" "$(grep -c 'N/A' "$TMP/direct"):same" \
	"$(grep -c 'N/A' "$TMP/snap"):$(cmp -s "$TMP/direct" "$TMP/snap" && echo same)"
daemon_stop

# Freshness: a change in the machine shows within the bound the asker states. The loops killed
# below run under `timeout --foreground`: plain timeout sends the signal to its process group as
# well, and a second SIGTERM reaching an ASan build's exit-time leak check (LeakSanitizer's
# tracer, a clone in that group) hung it (seen under make asan on a loaded machine).
cp "$MACHINES/h100x8.machine" "$TMP/f.machine"
use_machine "$TMP/f.machine"
daemon_start
temp() { viasnap status --query-gpu=temperature.gpu --format=csv,noheader,nounits -g 0; }
t0=$(temp)
sed -i '0,/^temperature = .*/s//temperature = 77/' "$TMP/f.machine"
touch -d '+1 second' "$TMP/f.machine" # a new mtime, however coarse the file system's clock
check_eq "a bound of 60 s: the view already made, shared (not the change)" "$t0" "$(GPUCTL_SNAPSHOT_AGE=60 temp)"
check_eq "a one-shot's bound (none older than its ask): the change at once" "77" "$(temp)"
sed -i 's/^temperature = 77/temperature = 78/' "$TMP/f.machine"
touch -d '+2 seconds' "$TMP/f.machine"
GPUCTL_NVML_LIBRARY=$NONVML timeout --foreground 120 "$GPUCTL" status -l 0.2 -c 1000 -g 0 \
	--query-gpu=temperature.gpu --format=csv,noheader,nounits >"$TMP/loop" 2>&1 &
loop=$!
await_line '^78$' "$TMP/loop" 60
check_eq "a loop of 0.2 s sees the next (its bound: its period)" 0 $?
kill $loop 2>/dev/null; wait $loop 2>/dev/null
check "the first reading was the old one ($t0)" test "$t0" != 77
# The exporter's page is as old as the daemon's view it shows, not as the refresh that fetched
# it: a view made a second before the exporter started is not served once it is past the cache
# period (1.5 s) old. Dated from the fetch, the page was served until 2.5 s after the view was
# made. The two sleeps are the ages under test, not waits for an event; on a slow machine the
# exporter's first fetch may already find a newer view (and the check passes either way).
if "$GPUCTL" exporter --help >/dev/null 2>&1 && curl --version >/dev/null 2>&1; then
	etemp() { grep -E '^gpuctl_gpu_temperature_celsius\{gpu="0"' "$TMP/metrics" | awk '{print $NF}'; }
	sed -i 's/^temperature = 78/temperature = 76/' "$TMP/f.machine"
	touch -d '+3 seconds' "$TMP/f.machine"
	# The view, made now for an exporter (one with every group the exporter asks for)
	GPUCTL_NVML_LIBRARY=$NONVML start_exporter --cache-ms 0
	curl -sf "http://127.0.0.1:$PORT/metrics" >"$TMP/metrics"
	stop_exporter
	check_eq "exporter: a view made now (76)" 76 "$(etemp)"
	sed -i 's/^temperature = 76/temperature = 75/' "$TMP/f.machine"
	touch -d '+4 seconds' "$TMP/f.machine"
	sleep 1
	GPUCTL_NVML_LIBRARY=$NONVML start_exporter --cache-ms 1500
	sleep 0.7
	curl -sf "http://127.0.0.1:$PORT/metrics" >"$TMP/metrics"
	check_eq "exporter: 1.7 s after the view was made, past --cache-ms 1500: a newer view (75)" 75 "$(etemp)"
	stop_exporter
	# A daemon whose refreshes are slow (300 ms) serves a view older than --cache-ms (it
	# refreshes at most every four refreshes' lengths): that page is the freshest there is, and
	# serves the cache period. Dated from its view, it was out of date at once: every scrape
	# asked the daemon again for the same view (hundreds a second), until the daemon's bound
	# per user refused and the exporter read the machine itself (here, without NVML: every GPU
	# lost). Scrapes from 4 clients for 3 s: at most two refreshes a second.
	daemon_stop
	FAKENVML_PROCS_DELAY_MS=300 daemon_start
	GPUCTL_NVML_LIBRARY=$NONVML start_exporter --cache-ms 1000
	began=$SECONDS
	python3 - "$PORT" <<'PY'
import http.client, sys, threading, time
port, end = int(sys.argv[1]), time.monotonic() + 3
def client():
    while time.monotonic() < end:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        c.request("GET", "/metrics")
        c.getresponse().read()
        c.close()
ts = [threading.Thread(target=client) for _ in range(4)]
for t in ts: t.start()
for t in ts: t.join()
PY
	secs=$((SECONDS - began + 1))
	curl -sf "http://127.0.0.1:$PORT/metrics" >"$TMP/metrics"
	stop_exporter
	refreshes=$(grep -E '^gpuctl_exporter_refreshes_total' "$TMP/metrics" | awk '{print $NF}')
	check "exporter beside a slow daemon: at most two refreshes a second ($refreshes in about $secs s)" \
		test "${refreshes:-9999}" -le $((2 * secs + 3))
	check_eq "  every GPU still served from the daemon's view" 0 "$(grep -cE '^gpuctl_gpu_lost\{.* 1$' "$TMP/metrics")"
	daemon_stop
	# The daemon gone: the exporter (NVML of its own here) reads the GPUs itself from then on,
	# and says so once, with why, not silently.
	daemon_start
	start_exporter --cache-ms 0
	curl -sf -o /dev/null "http://127.0.0.1:$PORT/metrics"
	daemon_stop
	curl -sf -o /dev/null "http://127.0.0.1:$PORT/metrics"
	curl -sf "http://127.0.0.1:$PORT/metrics" >"$TMP/metrics"
	stop_exporter
	check_eq "exporter: the daemon gone, the GPUs read here (a temperature), said once in its log" \
		"75:1" "$(etemp):$(grep -c "the gpuctl daemon's view failed (.*): the GPUs are read here from now on" "$TMP/exporter.log")"
	daemon_start
else
	skip "the exporter's page dated from its view" "no exporter (libmicrohttpd) or curl" 5
fi

# Bad requests get a usage error, not a view.
python3 "$ROOT/tests/helper/snap_flood.py" bad "$GPUCTL_SOCKET" >"$TMP/bad"
check_eq "an age past 60 s, a want that is no number, a frame of 3 words: usage errors" \
	"bad-age error 2 bad-want error 2 bad-frame error 2" "$(tr '\n' ' ' <"$TMP/bad" | sed 's/ $//')"

# A stopped daemon (SIGSTOP): the client reads the machine itself after its short wait.
direct status --query-gpu=$QGPU --format=csv >"$TMP/direct"
kill -STOP "$DAEMON"
timeout 60 "$GPUCTL" status --query-gpu=$QGPU --format=csv >"$TMP/snap" 2>"$TMP/snap.err"
rc=$?
check_eq "a stopped daemon: the machine read here, the same output" "0:same" \
	"$rc:$(cmp -s "$TMP/direct" "$TMP/snap" && echo same)"
timeout 60 "$GPUCTL" status -l 0.2 -c 3 --query-gpu=index --format=csv,noheader >"$TMP/snap" 2>&1
check_eq "a loop with a stopped daemon: each refresh shown" "24" "$(grep -c '^[0-7]$' "$TMP/snap")"
# Interrupted while it waits for the stopped daemon's view, a loop ends there: it does not wait
# the wait out and then give up on the daemon to read the machine itself (the stand-in NVML
# writes FAKENVML_STATS when a client used it).
kill -CONT "$DAEMON"
FAKENVML_STATS=$TMP/intr.stats "$GPUCTL" status -l 0.2 --query-gpu=index --format=csv,noheader \
	>"$TMP/snap" 2>&1 &
loop=$!
await_line '^7$' "$TMP/snap" 60
kill -STOP "$DAEMON"
wait_for grep -q poll "/proc/$loop/wchan"
kill -INT $loop
wait $loop
check_eq "a loop interrupted in its wait for the daemon: it ends, NVML never loaded here" \
	"0:no" "$?:$([ -e "$TMP/intr.stats" ] && echo yes || echo no)"
kill -CONT "$DAEMON"
daemon_stop

# No daemon: the machine read here; without NVML either, an error, never an empty view.
direct status --json >"$TMP/direct"
"$GPUCTL" status --json >"$TMP/snap" 2>"$TMP/snap.err"
check_eq "no daemon: status reads the machine itself" "0:same" "$?:$(cmp -s "$TMP/direct" "$TMP/snap" && echo same)"
viasnap status --json >"$TMP/snap" 2>"$TMP/snap.err"
rc=$?
check_eq "no daemon and no NVML: exit 3, nothing on stdout" "3:0" "$rc:$(wc -c <"$TMP/snap")"
check_grep "and stderr says why" "NVML|libnvidia-ml" "$TMP/snap.err"

# A daemon that stops answering in the middle of a loop: the loop goes on, reading it itself.
daemon_start
timeout --foreground 120 "$GPUCTL" status -l 0.2 -c 1000 --query-gpu=index --format=csv,noheader >"$TMP/loop" 2>&1 &
loop=$!
await_count '^7$' "$TMP/loop" 2 60
n=$(count_lines "$TMP/loop" '^7$')
daemon_stop
await_count '^7$' "$TMP/loop" $((n + 3)) 60
check_eq "a loop outlives its daemon: refreshes go on" 0 $?
kill $loop 2>/dev/null; wait $loop 2>/dev/null

# Deltas: a loop's refreshes after its first are deltas against the view it holds (the records
# of processes that did not change are copied from it): each frame is what a direct refresh
# shows, as processes change, come and go. Live processes, so the records carry command lines.
cp "$MACHINES/h100x8.machine" "$TMP/d.machine"
spawn 'python3 train.py --lr 0.1 %x'; s1=$SPAWNED
spawn 'torchrun --nproc 8 big.py'; s2=$SPAWNED
sed -i "s/^pid = 4000101/pid = $s1/; s/^pid = 4000102/pid = $s2/" "$TMP/d.machine"
use_machine "$TMP/d.machine"
daemon_start
frames() { jq -c '[.gpus[] | [.index, .memory_used_mib, [.processes[]? | [.pid, .user, .command, .used_memory_mib]]]]' "$@"; }
GPUCTL_NVML_LIBRARY=$NONVML timeout --foreground 120 "$GPUCTL" status -l 0.2 -c 1000 --json >"$TMP/loop" 2>"$TMP/loop.err" &
loop=$!
await_count '^{' "$TMP/loop" 3 60
sed -i 's/^used_memory_mib = 20480/used_memory_mib = 20481/; 0,/^pid = 4000105/s//pid = 4000199/' "$TMP/d.machine"
touch -d '+1 second' "$TMP/d.machine"
direct status --json | frames >"$TMP/want"
await_line '20481' "$TMP/loop" 60
n=$(count_lines "$TMP/loop" '^{')
await_count '^{' "$TMP/loop" $((n + 2)) 60
kill $loop 2>/dev/null; wait $loop 2>/dev/null
tail -n 2 "$TMP/loop" | head -n 1 | frames >"$TMP/got"
check_eq "a loop's delta frames: what a direct refresh shows (a process changed, one gone, one new)" \
	"$(cat "$TMP/want")" "$(cat "$TMP/got")"
check_grep "with the live processes' command lines kept from the held view" 'python3 train.py --lr 0.1 %x' "$TMP/got"
# A daemon restarted under a loop (the loop stopped meanwhile, so no refresh falls between the
# two lives): its kept connection found closed, the loop connects once more to the new daemon
# and shows its views, what a direct refresh shows (a full view: the new daemon's serials are
# never the old one's, so no delta is made against a view the loop does not hold); with no NVML
# in the client, a view not had would have shown the GPUs lost.
GPUCTL_NVML_LIBRARY=$NONVML "$GPUCTL" status -l 0.2 -c 1000 --json >"$TMP/loop" 2>"$TMP/loop.err" &
loop=$!
await_count '^{' "$TMP/loop" 2 60
kill -STOP $loop
daemon_stop
sed -i 's/^used_memory_mib = 20481/used_memory_mib = 20482/' "$TMP/d.machine"
touch -d '+2 seconds' "$TMP/d.machine"
daemon_start
n=$(count_lines "$TMP/loop" '^{')
kill -CONT $loop
direct status --json | frames >"$TMP/want"
await_count '^{' "$TMP/loop" $((n + 2)) 60
kill $loop 2>/dev/null; wait $loop 2>/dev/null
sed -n "$((n + 1))p" "$TMP/loop" | frames >"$TMP/got"
check_eq "a daemon restarted under a loop: its next frame is the new daemon's view, as direct" \
	"$(cat "$TMP/want")" "$(cat "$TMP/got")"
check_eq "and nothing said on stderr (no view lost, no leases missing)" "" "$(cat "$TMP/loop.err")"
# The table loop copies the rows of a GPU whose processes a delta kept from its last frame
# (table.h's cache): a frame after a change is still what a direct table shows, the changed
# GPU's rows made again and the others' copied; and after a second change, back, the same.
# A frame begins at its "driver" line; the clock at its end is taken off.
table_frame() { awk '/^driver /{k++} {f[k] = f[k] $0 "\n"} END {printf "%s", f[k - 1]}' "$1" |
	sed -E '/^$/d; s/ *[0-9]{2}:[0-9]{2}:[0-9]{2}$//'; }
GPUCTL_NVML_LIBRARY=$NONVML timeout --foreground 120 "$GPUCTL" status -l 0.2 -c 1000 >"$TMP/tloop" 2>"$TMP/tloop.err" &
loop=$!
await_count '^driver ' "$TMP/tloop" 3 60
bump=0
for change in 's/^used_memory_mib = 20482/used_memory_mib = 20483/= 20483 MiB' 's/^pid = 4000199/pid = 4000105/= 4000105 '; do
	mark=${change#*/=} change=${change%=*}
	sed -i "$change" "$TMP/d.machine"
	touch -d "+$((++bump + 2)) seconds" "$TMP/d.machine"
	direct status >"$TMP/tdirect"
	await_line "$mark" "$TMP/tloop" 60
	n=$(count_lines "$TMP/tloop" '^driver ')
	await_count '^driver ' "$TMP/tloop" $((n + 2)) 60
	check_eq "a table loop's frame after a change ($change): what a direct table shows" \
		"$(table_frame <(cat "$TMP/tdirect"; echo "driver "))" "$(table_frame "$TMP/tloop")"
done
kill $loop 2>/dev/null; wait $loop 2>/dev/null
check_grep "the changed process's row in the loop's frames" ' 20483 MiB' "$TMP/tloop"
daemon_stop
kill $s1 $s2 2>/dev/null; wait $s1 $s2 2>/dev/null

# Leases in the snapshot: status's leases come in the snapshot's round trip, `list`'s own answer
# for the asking user (a hostile lease name among them), the output byte for byte the direct one.
use_machine "$MACHINES/h100x8.machine"
daemon_start
mkfifo "$TMP/lgo"
"$GPUCTL" run -q -n 2 --name $'hold\033[31mx' -- "$B/workload" --log "$TMP/llog" --tag hold --until "$TMP/lgo" &
lhold=$!
await_line '^start hold' "$TMP/llog"
same_out() { # LABEL RUNNER...: the direct and the snapshot's output of status and status --json
	local label=$1 f; shift
	for f in "status" "status -l 0.2 -c 2" "status --json"; do
		"$@" env GPUCTL_SNAPSHOT=0 "$GPUCTL" $f >"$TMP/direct" 2>&1
		"$@" env GPUCTL_NVML_LIBRARY=$NONVML "$GPUCTL" $f >"$TMP/snap" 2>&1
		# (the clock in the header and a lease's idle seconds move between the two reads)
		sed -Ei -e 's/ [0-9]{2}:[0-9]{2}:[0-9]{2}$//' -e 's/("idle_seconds": )[0-9]+/\1N/' \
			"$TMP/direct" "$TMP/snap"
		if grep -q 'hold' "$TMP/snap" && cmp -s "$TMP/direct" "$TMP/snap"; then
			ok "$label: gpuctl $f with a lease via the snapshot is the direct output"
		else
			not_ok "$label: gpuctl $f with a lease via the snapshot" "$(diff "$TMP/direct" "$TMP/snap" | head -8)"
		fi
	done
}
same_out root
check_grep "the lease is shown, its hostile name escaped (JSON)" '"name": "hold\\u001b\[31mx"' "$TMP/snap"
if can_switch; then
	chmod 755 "$TMP"
	same_out "a second user" as_nobody
else
	skip "a second user's leases via the snapshot" "needs root and setpriv" 3
fi
if command -v strace >/dev/null; then
	strace -f -e trace=connect,sendmsg,recvmsg,openat,newfstatat,stat -s 200 -o "$TMP/strace" env GPUCTL_NVML_LIBRARY=$NONVML "$GPUCTL" status -l 0.3 -c 4 >/dev/null 2>&1
	# The lease's holder named, and the clock of its grant shown, at every refresh: the name as
	# the daemon's view names the holder's processes (user_name_seed: no lookup here at all),
	# and the zone read once, not /etc/passwd opened and /etc/localtime looked at again each
	# time. (With holders of four uids in turn, 16 "found" leases, a 4-refresh loop opened
	# /etc/passwd 64 times before user_name kept names, 4 before the view's names were used.)
	check_eq "and the names come with the view and the time zone is read once, not at each refresh (/etc/passwd, /etc/localtime)" "0 1" \
		"$(grep -c 'openat(.*"/etc/passwd"' "$TMP/strace") $(grep -cE '(stat|openat)\(.*"/etc/localtime"' "$TMP/strace")"
	check_eq "a loop keeps one connection across its refreshes (4 refreshes)" 1 "$(grep -c "connect(.*$GPUCTL_SOCKET" "$TMP/strace")"
	check_eq "and a refresh is one round trip on it (4 asks, the leases in each answer)" 4 "$(grep -c 'sendmsg(.*"snapshot\\n' "$TMP/strace")"
	check_eq "and each answer a frame laid out by the daemon, with the lease in it (4)" 4 "$(grep -c 'recvmsg(.*"frame\\n' "$TMP/strace")"
	# Each period asks for a view made since the last: its bound under the held view's age, not
	# the period itself (asked at the period, every other frame was the view before). Whether the
	# daemon then makes one is its own duty limit's call (a refresh at most every 4x its cost: on
	# a loaded machine it may serve the view before), so the bounds are checked, and that views
	# made since came, in order.
	asks=$(grep -o 'sendmsg(.*"snapshot\\nid 1\\nage [0-9]*' "$TMP/strace" | grep -o '[0-9]*$' | tr '\n' ' ')
	check_eq "and no ask takes a view older than the period (300 ms; asks: $asks)" "4 yes" \
		"$(awk '{ ok = 1; for (i = 1; i <= NF; i++) if ($i > 300) ok = 0; print NF, ok ? "yes" : "no" }' <<<"$asks")"
	serials=$(grep -o 'recvmsg(.*serial [0-9]*' "$TMP/strace" | grep -o '[0-9]*$' | tr '\n' ' ')
	check_eq "and the views come in order, newer ones among them (serials: $serials)" "yes" \
		"$(awk '{ ok = NF >= 2 && $NF > $1; for (i = 2; i <= NF; i++) if ($i < $(i - 1)) ok = 0; print ok ? "yes" : "no" }' <<<"$serials")"
else
	skip "one connection a loop, one round trip a refresh, bounds and views, names" "no strace" 6
fi
echo go >"$TMP/lgo"
wait $lhold
daemon_stop

# A loop refused its frames (here: no daemon to ask, as after a restart) lays out the view itself
# and asks again every 5 s (FRAME_RETRY_SECONDS, lease/frame.h): a daemon started meanwhile lays
# out its frames from then on. One that did not answer is not asked again: each ask would hold
# the loop up for the whole wait.
use_machine "$MACHINES/h100x8.machine"
"$GPUCTL" status -l 0.1 >"$TMP/rloop" 2>"$TMP/rloop.err" &
rloop=$!
await_line '^driver' "$TMP/rloop"
from=$(wc -l <"$DLOG")
daemon_start
n=$(count_lines "$TMP/rloop" '^driver')
await_count '^driver' "$TMP/rloop" $((n + 70)) 300   # 7 s at least: an ask past the next retry
kill -TERM $rloop
wait $rloop
rc=$?
daemon_stop
frames=$(frames_since "$from")
check "a loop without frames asks again: a daemon started meanwhile laid out its frames ($frames)" \
	test "${frames:-0}" -ge 1
check_eq "  the loop ended cleanly on TERM; on stderr only that the leases were not shown" "0:1:0" \
	"$rc:$(grep -c '^gpuctl status: leases not shown: cannot reach the gpuctl daemon' "$TMP/rloop.err"):$(grep -vc '^gpuctl status: leases not shown' "$TMP/rloop.err")"
if command -v strace >/dev/null; then
	daemon_start
	kill -STOP "$DAEMON"
	strace -f -e trace=sendmsg -s 400 -o "$TMP/strace.hung" "$GPUCTL" status -l 0.25 -c 30 \
		>"$TMP/hloop" 2>"$TMP/hloop.err"
	kill -CONT "$DAEMON"
	check_eq "a daemon that did not answer a frame is not asked for one again (30 refreshes, 7 s)" \
		1 "$(grep -c 'sendmsg(.*\\nframe ' "$TMP/strace.hung")"
	check_eq "  and the loop laid out its 30 refreshes itself" 30 "$(grep -c '^driver' "$TMP/hloop")"
	kill -STOP "$DAEMON"
	# (LeakSanitizer cannot run under ptrace: an ASan build would exit 1 at its end)
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 strace -f -e trace=sendmsg -s 400 \
		-o "$TMP/strace.hung1" "$GPUCTL" status >"$TMP/hone" 2>"$TMP/hone.err"
	rc=$?
	kill -CONT "$DAEMON"
	check_eq "a one-shot whose frame had no answer reads the machine at once: one view asked for, exit 0" \
		"1:0" "$(grep -c 'sendmsg(.*"snapshot\\n' "$TMP/strace.hung1"):$rc"
	daemon_stop
	# A one-shot without a daemon (its frame refused: none to ask) watches no process's exit
	# with a pidfd: that is a loop's way to know a command line read before is still good.
	strace -f -e trace=pidfd_open -o "$TMP/strace.pidfd" "$GPUCTL" status >/dev/null 2>&1
	check_eq "a one-shot laying out the view itself opens no pidfd (a loop's exit watch)" 0 \
		"$(grep -c '^[0-9]* *pidfd_open(' "$TMP/strace.pidfd")"
else
	skip "a loop does not ask a daemon that did not answer again" "no strace" 4
fi

# In another time zone the daemon lays out no frame (the clock's zone is the asker's): the table
# laid out here is the direct one all the same.
from=$(wc -l <"$DLOG")
daemon_start
TZ=Asia/Kolkata direct status >"$TMP/direct" 2>"$TMP/direct.err"; drc=$?
TZ=Asia/Kolkata viasnap status >"$TMP/snap" 2>"$TMP/snap.err"; src=$?
sed -Ei '1s/ [0-9]{2}:[0-9]{2}:[0-9]{2}$//' "$TMP/direct" "$TMP/snap"
if [ "$drc" = "$src" ] && [ -s "$TMP/snap" ] && cmp -s "$TMP/direct" "$TMP/snap" &&
	cmp -s "$TMP/direct.err" "$TMP/snap.err"; then
	ok "another time zone: the one-shot table (its frame refused) is the direct output (exit $drc)"
else
	not_ok "another time zone: the one-shot table (its frame refused) is the direct output" \
		"exit $drc / $src" "$(diff "$TMP/direct" "$TMP/snap" | head -8)"
fi
daemon_stop
check_eq "  and the daemon laid out no frame for it" 0 "$(frames_since "$from")"

# A second user (hostile): a flood of fresh-view requests, and an answer read by half.
if can_switch; then
	gen_machine "$TMP/big.machine" 16 1000 $$
	use_machine "$TMP/big.machine"
	daemon_start
	viasnap status --json >/dev/null 2>&1 # warm
	# Frames (before the flood: it spends the user's share of the daemon's time, which layouts
	# are charged to as well): a user's layouts of one view are bounded (4), each a sealed memfd of the size
	# said; past them refused (the loop then lays out the view itself); another user's layout
	# of the same view is laid out all the same.
	as_nobody python3 "$ROOT/tests/helper/snap_flood.py" frames "$GPUCTL_SOCKET" 80 81 82 83 84 85 >"$TMP/frames" 2>&1
	check_eq "a second user's layouts of a view: four laid out, sealed; then refused (busy)" \
		"sealed sealed sealed sealed error:10 error:10" \
		"$(awk '{print $2 == "frame" ? $3 : $2 ":" $3}' "$TMP/frames" | tr '\n' ' ' | sed 's/ $//')"
	# Frames sent and not read: their descriptors in flight count against the daemon's own
	# limit (past it no descriptor is sent to anyone: lease grants neither), so a connection
	# has one unread at most: the next ask must say the last answer's token.
	as_nobody python3 "$ROOT/tests/helper/snap_flood.py" unread "$GPUCTL_SOCKET" 4 >"$TMP/unread" 2>&1
	check_eq "frames asked for and left unread: one a connection, then refused" "frames 1 refused 3" "$(cat "$TMP/unread")"
	python3 "$ROOT/tests/helper/snap_flood.py" frames "$GPUCTL_SOCKET" 86 >"$TMP/frames" 2>&1
	check_grep "and root's layout of the same view is laid out" '^86 frame sealed [0-9]+$' "$TMP/frames"
	# Layouts made for leases gone are closed: a user asking 4 layouts under each of 10 leases
	# in turn (each lease another list, so 4 new layouts) leaves the daemon 4 open, not 40.
	for i in 1 2 3 4 5 6 7 8 9 10; do
		as_nobody "$GPUCTL" run -q -n 1 --ignore-usage -- python3 "$ROOT/tests/helper/snap_flood.py" \
			frames "$GPUCTL_SOCKET" 70 71 72 73 >>"$TMP/relay" 2>&1
	done
	check_eq "layouts of leases gone are closed: the daemon holds the last 4 (40 laid out)" \
		"40:4" "$(grep -c ' frame sealed ' "$TMP/relay"):$(ls -l /proc/"$DAEMON"/fd | grep -c 'memfd:gpuctl-frame')"
	direct status --query-compute-apps=$QAPPS --format=csv >"$TMP/direct"
	mkfifo "$TMP/hold" "$TMP/hold2"
	as_nobody python3 "$ROOT/tests/helper/snap_flood.py" flood "$GPUCTL_SOCKET" 8 <"$TMP/hold" >"$TMP/flood" 2>&1 &
	flood=$!
	exec 7>"$TMP/hold"
	as_nobody python3 "$ROOT/tests/helper/snap_flood.py" halfread "$GPUCTL_SOCKET" <"$TMP/hold2" >"$TMP/half" 2>&1 7>&- &
	half=$!
	exec 8>"$TMP/hold2"
	await_line '^flooding' "$TMP/flood" 60
	check_grep "the flooder is answered" '^flooding' "$TMP/flood"
	await_line '^holding' "$TMP/half" 60
	check_eq "the half-reader holds an answer of many parts" "holding 2" "$(cat "$TMP/half")"
	good=0
	for i in 1 2 3 4 5 6 7 8 9 10; do
		timeout 60 env GPUCTL_NVML_LIBRARY=$NONVML "$GPUCTL" status --query-compute-apps=$QAPPS \
			--format=csv >"$TMP/snap" 2>"$TMP/snap.err" && cmp -s "$TMP/direct" "$TMP/snap" && good=$((good + 1))
	done
	check_eq "meanwhile root's status is served by the snapshot, whole, every time" 10 "$good"
	viasnap status -l 0.2 -c 5 --query-gpu=index --format=csv,noheader >"$TMP/snap" 2>&1
	check_eq "and root's watch loop too" 80 "$(grep -c '^[0-9]*$' "$TMP/snap")"
	exec 7>&-
	wait $flood
	busy=$(awk '/^busy/{print $2}' "$TMP/flood")
	answers=$(awk '/^answers/{print $2}' "$TMP/flood")
	check "the flood was bounded: refused ($busy) past its rate, answered ($answers)" \
		test "${busy:-0}" -gt 0 -a "${answers:-0}" -gt 0
	check_eq "no other answer than a view or busy" "other 0" "$(grep '^other' "$TMP/flood")"
	exec 8>&-
	wait $half
	check "the daemon still serves after the half-reader left" viasnap status -L
	daemon_stop
	check_eq "the daemon stopped cleanly" 0 "$(grep -c 'AddressSanitizer\|runtime error' "$DLOG")"
else
	skip "a second user's flood and half-read" "needs root and setpriv to act as a second user" 12
fi
