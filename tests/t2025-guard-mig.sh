#!/usr/bin/env bash
# t2025-guard-mig.sh: the device guard binds MIG instances, not only whole GPUs (issue 25's
# capability nodes; review 1, item 7). On the simulated H200 with MIG on (GPU instance 1 with
# compute instance 0; GPU instance 2 with compute instances 0 and 1), the test makes the
# driver's capability files (--proc-dir: capabilities/gpu0/mig/giG[/ciC]/access, each saying
# "DeviceFileMinor: N" as the driver's nv-caps.c numbers them) and the nodes
# nvidia-caps/nvidia-capN under --dev-dir, owned by the daemon's user. Two users lease the two
# compute instances of GPU instance 2: each opens its GPU instance's node and its own compute
# instance's, never the other's, nor GPU instance 1's; both open the GPU's node (a MIG device is
# reached through it); a lease's end takes its access away; a lease of the whole GPU opens all.
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/daemon.sh"
PLAN=16
plan $PLAN
use_machine "$MACHINES/h200-mig.machine"
daemon_setup
if ! can_switch || [ "$DUSER" = "$(id -un)" ] || ! id bin >/dev/null 2>&1; then
	skip "device guard of MIG instances" "needs root, setpriv and the users daemon and bin" $PLAN
	exit 0
fi
as_bin() { setpriv --reuid=2 --regid=2 --clear-groups env HOME=/nonexistent "$@"; }
DEV=$TMP/dev PROC=$TMP/proc
mkdir -p "$DEV/nvidia-caps"
chmod 755 "$DEV" "$DEV/nvidia-caps"
# minors as the driver's table gives them: 3 + 135 x GPU + 9 x GI (+ 1 + CI)
for c in gi1:12 gi1/ci0:13 gi2:21 gi2/ci0:22 gi2/ci1:23; do
	mkdir -p "$PROC/capabilities/gpu0/mig/${c%:*}"
	printf 'DeviceFileMinor: %s\nDeviceFileMode: 292\nDeviceFileModify: 0\n' "${c#*:}" \
		>"$PROC/capabilities/gpu0/mig/${c%:*}/access"
done
chmod -R a+rX "$PROC"
for n in nvidia0 nvidiactl nvidia-uvm nvidia-uvm-tools nvidia-caps/nvidia-cap12 nvidia-caps/nvidia-cap13 \
	nvidia-caps/nvidia-cap21 nvidia-caps/nvidia-cap22 nvidia-caps/nvidia-cap23; do
	mknod "$DEV/$n" c 1 3 2>/dev/null || : >"$DEV/$n"
	chown "$DUSER:" "$DEV/$n"
	chmod 0660 "$DEV/$n"
done
# reads WHO NODE...: the nodes WHO can open for reading, "yes"/"no" each, in one line.
reads() {
	local who=$1 n out=()
	shift
	for n in "$@"; do
		if "$who" sh -c '(: 3<"$1") 2>/dev/null' sh "$DEV/$n"; then out+=(yes); else out+=(no); fi
	done
	echo "${out[*]}"
}
CAPS="nvidia-caps/nvidia-cap12 nvidia-caps/nvidia-cap13 nvidia-caps/nvidia-cap21 nvidia-caps/nvidia-cap22 nvidia-caps/nvidia-cap23"
printf '[daemon]\nguard = acl\noffer_timeout = 20s\n' >"$TMP/daemon.conf"
daemon_start --dev-dir "$DEV" --proc-dir "$PROC"
if grep -q 'has no POSIX ACLs' "$DLOG"; then
	skip "device guard of MIG instances" "$DEV's file system has no POSIX ACLs" $PLAN
	daemon_stop
	exit 0
fi
check_grep "the daemon guards the GPU's node, the control nodes and the 5 capability nodes" \
	"guard: acl on 9 device nodes under $DEV \(0 not guarded\)" "$DLOG"
# shellcheck disable=SC2086
check_eq "without a lease nobody reads no capability node" "no no no no no" "$(reads as_nobody $CAPS)"

mkfifo -m 666 "$TMP/go-a" "$TMP/go-b"
: >"$TMP/seen"; chmod 666 "$TMP/seen"
as_nobody "$GPUCTL" run -q -g 0:1 -- sh -c 'echo "a $CUDA_VISIBLE_DEVICES" >>"$1"; read x <"$2"' sh \
	"$TMP/seen" "$TMP/go-a" 2>>"$TMP/errors" &
ja=$!
as_bin "$GPUCTL" run -q -g 0:2 -- sh -c 'echo "b $CUDA_VISIBLE_DEVICES" >>"$1"; read x <"$2"' sh \
	"$TMP/seen" "$TMP/go-b" 2>>"$TMP/errors" &
jb=$!
await_count '^[ab] MIG-' "$TMP/seen" 2
# shellcheck disable=SC2086
check_eq "nobody (GI 2, CI 0): GI 2's node and CI 0's, not CI 1's nor GI 1's" "no no yes yes no" \
	"$(reads as_nobody $CAPS)"
# shellcheck disable=SC2086
check_eq "bin (GI 2, CI 1): GI 2's node and CI 1's, not CI 0's nor GI 1's" "no no yes no yes" \
	"$(reads as_bin $CAPS)"
check_eq "both open the GPU's own node and the control node" "yes yes yes yes" \
	"$(reads as_nobody nvidia0 nvidiactl) $(reads as_bin nvidia0 nvidiactl)"
check "nobody cannot write a capability node (read access is what the driver asks)" \
	as_nobody sh -c '! (: 3>"$1") 2>/dev/null' sh "$DEV/nvidia-caps/nvidia-cap22"
"$GPUCTL" leases --json >"$TMP/out"
check_eq "leases: the guard binds" 'true' "$(jqv '.guard.binding')"
echo >"$TMP/go-b"
wait $jb
wait_ended 1
# shellcheck disable=SC2086
check_eq "bin's lease ended: bin reads no capability node; nobody's access is as it was" \
	"no no no no no / no no yes yes no" "$(reads as_bin $CAPS) / $(reads as_nobody $CAPS)"
echo >"$TMP/go-a"
wait $ja
wait_ended 2
# shellcheck disable=SC2086
check_eq "nobody's ended too: nobody reads none" "no no no no no" "$(reads as_nobody $CAPS)"
# A lease of the whole GPU (no instance leased; --ignore-usage: GI 1 has a process) opens all.
as_nobody "$GPUCTL" run -q -g 0 --ignore-usage -- sh -c 'echo "w $CUDA_VISIBLE_DEVICES" >>"$1"; read x <"$2"' sh \
	"$TMP/seen" "$TMP/go-a" 2>>"$TMP/errors" &
jw=$!
await_line '^w ' "$TMP/seen"
# shellcheck disable=SC2086
check_eq "a lease of the whole GPU reads every capability node of it" "yes yes yes yes yes" \
	"$(reads as_nobody $CAPS)"
echo >"$TMP/go-a"
wait $jw
wait_ended 3
# A capability file with no minor: said, and the guard is not binding.
daemon_stop
printf 'DeviceFileMode: 292\n' >"$PROC/capabilities/gpu0/mig/gi2/ci1/access"
rm "$DEV/nvidia-caps/nvidia-cap12"
daemon_start --dev-dir "$DEV" --proc-dir "$PROC"
check_grep "an access file without a minor number: logged, that instance not guarded" \
	"gi2/ci1/access gives no DeviceFileMinor: that MIG instance's capability node is not known" "$DLOG"
check_grep "a capability node missing: logged, with how to make it" \
	"nvidia-cap12 is missing: make it \(nvidia-modprobe -f" "$DLOG"
"$GPUCTL" leases --json >"$TMP/out"
check_eq "and leases says the guard does not fully bind" 'false' "$(jqv '.guard.binding')"
daemon_stop
# review 4b: hostile files under --proc-dir. GI 1's access file a FIFO (its open would block the
# daemon's start), and gi2/ci1's access file naming gi1/ci0's minor (13): that node, named twice,
# is nobody's, so bin's lease of GI 2 / CI 1 gives no access to GI 1 / CI 0's capability.
rm "$PROC/capabilities/gpu0/mig/gi1/access"
mkfifo -m 644 "$PROC/capabilities/gpu0/mig/gi1/access"
printf 'DeviceFileMinor: 13\nDeviceFileMode: 292\nDeviceFileModify: 0\n' \
	>"$PROC/capabilities/gpu0/mig/gi2/ci1/access"
daemon_start --dev-dir "$DEV" --proc-dir "$PROC"
check_grep "an access file that is a FIFO is not read: the daemon starts, that node unknown" \
	"gi1/access gives no DeviceFileMinor" "$DLOG"
as_bin "$GPUCTL" run -q -g 0:2 -- sh -c 'echo "c $CUDA_VISIBLE_DEVICES" >>"$1"; read x <"$2"' sh \
	"$TMP/seen" "$TMP/go-b" 2>>"$TMP/errors" &
jb=$!
await_count '^c MIG-' "$TMP/seen" 1
check_eq "a node two access files name is given to nobody (bin's lease of CI 1 does not open it)" \
	"1 no" "$(grep -c '^c MIG-' "$TMP/seen") $(reads as_bin nvidia-caps/nvidia-cap13)"
check_grep "and that is said" "nvidia-cap13 is named by two MIG instances' capability access files" \
	"$DLOG"
echo >"$TMP/go-b"
wait $jb
daemon_stop
