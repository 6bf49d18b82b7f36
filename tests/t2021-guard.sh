#!/usr/bin/env bash
# t2021-guard.sh: leases that bind (issue 25). With [daemon] guard = acl the daemon, owner of the
# device nodes under --dev-dir, gives a lease's user an ACL entry on the nodes of its GPUs and on
# the control nodes, and takes it away when the lease ends, however it ends; after a SIGKILL and a
# restart exactly the live leases' access remains. The stand-in NVML (FAKENVML_DEV_DIR) opens a
# GPU only where the caller can open its node, as the driver does, so NVML's view follows too.
# Second users: nobody (65534) and bin (2); the daemon runs as 'daemon', the nodes' owner.
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/daemon.sh"
PLAN=47
plan $PLAN
quiet_machine "$TMP/m4" 4
use_machine "$TMP/m4"
daemon_setup
if ! can_switch || [ "$DUSER" = "$(id -un)" ] || ! id bin >/dev/null 2>&1; then
	skip "device guard" "needs root, setpriv and the users daemon and bin" $PLAN
	exit 0
fi
as_bin() { setpriv --reuid=2 --regid=2 --clear-groups env HOME=/nonexistent "$@"; }
DEV=$TMP/dev
mkdir -p "$DEV"
chmod 755 "$DEV"
# Character devices where mknod is allowed (the null device: opening it does nothing), regular
# files elsewhere; either way owned by the daemon's user, mode 0660 as gpuctl-daemon(8)'s set-up leaves them.
NODES="nvidia0 nvidia1 nvidia2 nvidia3 nvidiactl nvidia-uvm nvidia-uvm-tools"
for n in $NODES; do
	mknod "$DEV/$n" c 1 3 2>/dev/null || : >"$DEV/$n"
	chown "$DUSER:" "$DEV/$n"
	chmod 0660 "$DEV/$n"
done
export FAKENVML_DEV_DIR=$DEV
# opens WHO NODE: WHO (as_nobody, as_bin) can open DEV/NODE for reading and writing.
opens() { "$1" sh -c '(: 3<>"$1") 2>/dev/null' sh "$DEV/$2"; }
shuts() { ! opens "$@"; }
# Bad settings stop the daemon with a clear word, before it touches anything.
printf '[daemon]\nguard = yes\n' >"$TMP/bad.conf"
check_exit "guard = yes: refused" 2 "$GPUCTL" daemon --socket "$TMP/bad.sock" --state-dir "$TMP/bad" \
	--config "$TMP/bad.conf" --dev-dir "$DEV"
printf '[daemon]\nguard = acl\nguard_admin_group = no-such-group-x\n' >"$TMP/bad.conf"
"$GPUCTL" daemon --socket "$TMP/bad.sock" --state-dir "$TMP/bad" --config "$TMP/bad.conf" \
	--dev-dir "$DEV" 2>"$TMP/bad.err"
check_eq "an admin group that does not exist: refused, named" "2 1" \
	"$? $(grep -c "guard_admin_group: no group 'no-such-group-x'" "$TMP/bad.err")"
printf '[daemon]\nguard = acl\n' >"$TMP/daemon.conf"
daemon_start --dev-dir "$DEV"
if grep -q 'has no POSIX ACLs' "$DLOG"; then # a TMPDIR on a file system without them
	skip "device guard" "$DEV's file system has no POSIX ACLs" $((PLAN - 2))
	daemon_stop
	exit 0
fi
check_grep "the daemon guards the 7 nodes" "guard: acl on 7 device nodes under $DEV \(0 not guarded\)" "$DLOG"
check "without a lease nobody cannot open GPU 0's node" shuts as_nobody nvidia0
check "nor the control node" shuts as_nobody nvidiactl
"$GPUCTL" leases --json >"$TMP/out"
check_eq "leases says the guard binds" '"acl" true' "$(jqv '.guard.mode, .guard.binding' | tr '\n' ' ' | sed 's/ $//')"

# A lease on GPU 0: its job opens GPU 0 and the control nodes, not GPU 1; NVML agrees.
mkfifo -m 666 "$TMP/go1" "$TMP/go2" "$TMP/go3"
: >"$TMP/acc"; : >"$TMP/acc.json"; chmod 666 "$TMP/acc" "$TMP/acc.json"
as_nobody "$GPUCTL" run -q -g 0 -- sh -c '
for n in nvidia0 nvidia1 nvidiactl nvidia-uvm; do
	if (: 3<>"$1/$n") 2>/dev/null; then echo "$n yes"; else echo "$n no"; fi
done >>"$2"
"$3" status --json >"$2.json" 2>/dev/null; echo "status $?" >>"$2"
read x <"$4"' sh "$DEV" "$TMP/acc" "$GPUCTL" "$TMP/go1" &
j1=$!
await_line '^status ' "$TMP/acc"
check_eq "the job opens GPU 0's node, not GPU 1's, and the control nodes" \
	"nvidia0 yes nvidia1 no nvidiactl yes nvidia-uvm yes" "$(grep -v status "$TMP/acc" | tr '\n' ' ' | sed 's/ $//')"
check_eq "in the job, status shows GPU 0's values and GPU 1 as the guard's, and exits 0" \
	'81559 "guard" 0' "$(jq -r '.gpus[0].memory_total_mib, (.gpus[1].no_access | tojson)' "$TMP/acc.json" | tr '\n' ' ')$(awk '/^status/{print $2}' "$TMP/acc")"
check "access is the user's: another process of nobody opens GPU 0 while the lease lives" opens as_nobody nvidia0
check "another user (bin) does not" shuts as_bin nvidia0
check "nor the control node" shuts as_bin nvidiactl
# status as nobody: from the daemon's snapshot every GPU with its values, those no lease of
# nobody's covers marked; read directly (GPUCTL_SNAPSHOT=0) NVML's NO_PERMISSION, said so.
# served_status FILE ARGS: status as nobody into FILE, asked again (5 times at most) when every
# GPU's memory is not there: under load the daemon's snapshot may miss its 1 s bound, and status
# then reads NVML itself (the direct path, checked on its own below); rc: its exit status.
served_status() {
	local f=$1 k; shift
	for k in 1 2 3 4 5; do
		as_nobody "$GPUCTL" status "$@" >"$f" 2>/dev/null
		rc=$?
		[ "$(grep -c 'MiB' "$f")" = 4 ] || [ "$(jq '[.gpus[].memory_total_mib | numbers] | length' "$f" 2>/dev/null)" = 4 ] && return
	done
}
served_status "$TMP/out" --json
check_eq "status as nobody (the daemon's view): every GPU's values, GPUs 1-3 marked as the guard's" \
	'[81559,81559,81559,81559] [null,"guard","guard","guard"]' \
	"$(jqv '[.gpus[].memory_total_mib]') $(jqv '[.gpus[].no_access]')"
GPUCTL_SNAPSHOT=0 as_nobody "$GPUCTL" status >"$TMP/st" 2>"$TMP/st.err"
rc=$?
check_eq "status as nobody read here: GPU 0 with its values, GPUs 1-3 said to be the guard's, exit 0" \
	"1 3 0" "$(grep -c '^  0 .*%' "$TMP/st") $(grep -c "NO ACCESS: gpuctl's device guard" "$TMP/st") $rc"
echo go >"$TMP/go1"
wait $j1
wait_ended 1
check "once the job has ended, nobody cannot open GPU 0's node" shuts as_nobody nvidia0
check "nor the control node" shuts as_nobody nvidiactl

# The job SIGKILLed: its lease ends with it, and the access.
as_nobody "$GPUCTL" run -q -g 1 -- "$B/workload" --tag k &
jk=$!
await_line '^ready [0-9]+$' "$WORKLOAD_READY"
wl=$(awk '/^ready/ {p = $2} END {print p}' "$WORKLOAD_READY")
wait_granted 2
check "a job on GPU 1: nobody opens GPU 1's node" opens as_nobody nvidia1
kill -KILL "$wl"
wait_ended 2
check "the job SIGKILLed: GPU 1's node is shut again" shuts as_nobody nvidia1
check "and the control node" shuts as_nobody nvidiactl
wait $jk

# gpuctl env's holder SIGKILLed.
n=$(count_lines "$SLEEPER_READY" '^[0-9]+$')
as_nobody "$B/sleeper" &
sp=$!
await_count '^[0-9]+$' "$SLEEPER_READY" $((n + 1))
shell=$(grep -E '^[0-9]+$' "$SLEEPER_READY" | sed -n "$((n + 1))p")
as_nobody "$GPUCTL" env -q -g 2 --ignore-usage --hold-pid "$shell" >/dev/null
check "env's lease on GPU 2: nobody opens its node" opens as_nobody nvidia2
holder=$("$GPUCTL" leases --json | jq -r '.leases[] | select(.kind == "env") | .pid')
kill -KILL "$holder"
wait_ended 3
check "env's holder SIGKILLed: GPU 2's node is shut again" shuts as_nobody nvidia2
kill "$shell"
wait $sp 2>/dev/null

# A SIGKILLed daemon, two leases live (nobody on GPU 0, bin on GPU 1), bin's ended meanwhile.
as_nobody "$GPUCTL" run -q -g 0 -- sh -c 'read x <"$0"' "$TMP/go2" &
ja=$!
as_bin "$GPUCTL" run -q -g 1 -- sh -c 'read x <"$0"' "$TMP/go3" &
jb=$!
wait_granted 5
check "two leases: nobody opens GPU 0" opens as_nobody nvidia0
check "bin opens GPU 1" opens as_bin nvidia1
check "bin does not open GPU 0" shuts as_bin nvidia0
kill -KILL "$DAEMON"
wait "$DAEMON" 2>/dev/null
echo go >"$TMP/go3"
wait $jb
check "while no daemon runs, bin's ended lease still opens GPU 1 (nobody to take it back)" opens as_bin nvidia1
daemon_start --dev-dir "$DEV"
check_grep "the restarted daemon recovered one live lease" 'recovered 1 live lease' "$DLOG"
check "after the restart bin's ended lease opens GPU 1 no more" shuts as_bin nvidia1
check "nor the control node" shuts as_bin nvidiactl
check "nobody's live lease still opens GPU 0" opens as_nobody nvidia0
check "and the control node" opens as_nobody nvidiactl
check "and not GPU 1" shuts as_nobody nvidia1
echo go >"$TMP/go2"
wait $ja

# doctor and status as a user without any lease (NVML cannot start for them: nvidiactl is shut).
# (bin's lease ended while no daemon ran: the restarted one logs no end for it.)
wait_ended 4
# Memory shares (issue 23): two users' shares of GPU 3 both open its node; neither after.
mkfifo -m 666 "$TMP/go4" "$TMP/go5"
as_nobody "$GPUCTL" run -q -g 3 --mem 10G -- sh -c 'read x <"$0"' "$TMP/go4" &
js1=$!
as_bin "$GPUCTL" run -q -g 3 --mem 10G -- sh -c 'read x <"$0"' "$TMP/go5" &
js2=$!
wait_granted 7
both_open() { opens as_nobody nvidia3 && opens as_bin nvidia3; }
neither_opens() { shuts as_nobody nvidia3 && shuts as_bin nvidia3; }
check "two users' memory shares of GPU 3: both open its node" both_open
echo go >"$TMP/go4"; echo go >"$TMP/go5"
wait $js1 $js2
wait_ended 6
check "the shares ended: neither opens it" neither_opens
served_status "$TMP/st"
check_eq "status as nobody without a lease: exit 0, all 4 GPUs with their values (the daemon's view)" \
	"0 4" "$rc $(grep -c '^  [0-3] .*%.*MiB' "$TMP/st")"
check_grep "and the guard's line says leases bind and none is nobody's to open" \
	'^  guard: leases bind.*you may open none of them' "$TMP/st"
GPUCTL_SNAPSHOT=0 as_nobody "$GPUCTL" status >"$TMP/st" 2>"$TMP/st.err"
check_eq "read here (NVML cannot start: nvidiactl is shut): exit 0, all 4 GPUs listed as the guard's" \
	"0 4" "$? $(grep -c "NO ACCESS: gpuctl's device guard" "$TMP/st")"
as_nobody "$GPUCTL" doctor >"$TMP/doc" 2>&1
check_grep "doctor as nobody: leases bind" 'leases_bind.*leases bind' "$TMP/doc"
GPUCTL_SNAPSHOT=0 as_nobody "$GPUCTL" doctor >"$TMP/doc" 2>&1
check_eq "read here (NVML refused): exit 0, no GPU called inaccessible for the guard's doing" "0 0" \
	"$? $(grep -c gpu_inaccessible "$TMP/doc")"
"$GPUCTL" doctor --json >"$TMP/out"
check_eq "doctor (root) names the nodes it looked at: owned by the daemon's user, 0660, with an ACL" \
	"\"leases_bind\"" "$(jqv '.findings[] | select(.code == "leases_bind") | .code')"
check_grep "... in its message" "nvidia0 .*$DUSER.*0660" "$TMP/out"

start_exporter --cache-ms 0
curl -s "http://127.0.0.1:$PORT/metrics" >"$TMP/prom"
stop_exporter
check_grep "the exporter says leases bind: gpuctl_guard_binding 1" '^gpuctl_guard_binding\{hostname="[^"]*"\} 1$' "$TMP/prom"

# Access that got past the guard: root's process on GPU 3, with no lease.
CUDA_VISIBLE_DEVICES=3 "$B/workload" --mem 300 &
rw=$!
await_workload $rw
"$GPUCTL" doctor --json >"$TMP/out"
check_eq "doctor names a process on a GPU no lease of its user covers" "$rw" \
	"$(jqv '.findings[] | select(.code == "guard_bypass") | .pids[0]')"
kill $rw; wait $rw 2>/dev/null

# A node the daemon cannot guard: a clear log line and state, no crash.
chown root: "$DEV/nvidia3"
wait_for sh -c "\"$GPUCTL\" leases --json | jq -e '.guard.binding == false'"
"$GPUCTL" leases --json >"$TMP/out"
check_grep "a node owned by another user: the daemon logs it" "guard: $DEV/nvidia3 belongs to uid 0" "$DLOG"
check_eq "and leases says the guard does not bind, naming it" "true" \
	"$(jq '.guard.errors[0] | contains("nvidia3")' "$TMP/out")"
check_exit "leasing still works" 0 as_nobody "$GPUCTL" run -q -g 0 -- true
chown "$DUSER:" "$DEV/nvidia3"

# The guard off: nothing of this. The nodes' ACLs stay as they were; leases shows no guard line.
daemon_stop
: >"$TMP/daemon.conf"
chmod 0666 "$DEV/nvidia2"
before=$(getfacl -cp "$DEV/nvidia2" 2>/dev/null || stat -c %a "$DEV/nvidia2")
daemon_start --dev-dir "$DEV"
as_nobody "$GPUCTL" run -q -g 2 -- true
check_eq "guard off: a lease leaves the node's ACL as it was" "$before" \
	"$(getfacl -cp "$DEV/nvidia2" 2>/dev/null || stat -c %a "$DEV/nvidia2")"
check_eq "and leases prints what it always did" "no leases" "$("$GPUCTL" leases)"
"$GPUCTL" doctor >"$TMP/doc" 2>&1
check_grep "doctor: leases are advisory" 'leases_advisory.*leases are advisory' "$TMP/doc"
daemon_stop
finish_script
