#!/usr/bin/env bash
# t5005-python.sh: the Python module (python/gpuctl) in real python3 processes: a lease for the
# life of the process (gone after exit and SIGKILL), release() and the context manager, two
# processes never sharing a GPU, wait= and its errors, the late-CUDA mistake caught (a stand-in
# libcuda.so.1 loaded first), a missing binary, the private daemon; `pip install ./python` into a
# venv, `make install`; and a real Jupyter kernel, whose restart ends the lease.
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/daemon.sh"
plan 42
H=$MACHINES/h100x8.machine
use_machine "$H"
daemon_setup
daemon_start
U=($(awk '/^uuid = GPU/{print $3}' "$H"))
PY=$("${PYTHON:-python3}" -c 'import sys; print(sys.executable)')
export PYTHONPATH=$ROOT/python GPUCTL_BINARY=$GPUCTL PYTHONDONTWRITEBYTECODE=1

# The slow parts run meanwhile; the kernel with a daemon of its own, so that its lease does not
# change what the rest sees.
venv_ok=
if "$PY" -c 'import ensurepip, venv' 2>/dev/null; then
	venv_ok=1
	cp -r "$ROOT/python" "$TMP/python" # a copy: nothing is written into the checkout
	(
		PIP_NO_COMPILE=1 "$PY" -m venv "$TMP/venv" && cd "$TMP" &&
			PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 "$TMP/venv/bin/pip" install -q --no-compile \
				--no-index ./python &&
			env -u PYTHONPATH GPUCTL_STATE_DIR="$TMP/vstate" "$TMP/venv/bin/python" -c '
import sys, gpuctl
print(gpuctl.__file__.startswith(sys.prefix + "/"), len(gpuctl.status()["gpus"]))'
		echo "done $?"
	) >"$TMP/venv.out" 2>&1 &
fi
KPY=
for p in "$PY" /usr/bin/python3; do
	if "$p" -c 'import ipykernel, jupyter_client' 2>/dev/null; then KPY=$p; break; fi
done
if [ -n "$KPY" ]; then
	mkdir -p "$TMP/jupyter/kernels/gpuctl-test"
	printf '{"argv": ["%s", "-m", "ipykernel_launcher", "-f", "{connection_file}"], "display_name": "t", "language": "python"}\n' \
		"$KPY" >"$TMP/jupyter/kernels/gpuctl-test/kernel.json"
	mkfifo "$TMP/kernel.ctl"
	KENV=(GPUCTL_SOCKET="$TMP/kernel.sock")
	klog=$TMP/kernel-daemon.log
	"$GPUCTL" daemon --socket "$TMP/kernel.sock" --state-dir "$TMP/kstate" --config "$TMP/daemon.conf" \
		>"$klog" 2>&1 &
	kdaemon=$!
	await_line 'serving' "$klog" 20
	env "${KENV[@]}" JUPYTER_PATH="$TMP/jupyter" "$KPY" "$ROOT/tests/helper/pykernel.py" \
		"$TMP/kernel.out" "$TMP/kernel.ctl" 2>"$TMP/kernel.err" &
	kdriver=$!
fi

# Without a shared daemon, the Python process's lease is the private daemon's, which exits when
# idle: the lease lives on in its holder, and must still be seen and released (checked last).
PENV=(GPUCTL_SOCKET="$TMP/none.sock" GPUCTL_STATE_DIR="$TMP/pstate")
plog=$TMP/pstate/daemon.log
mkfifo "$TMP/p.ctl"
env "${PENV[@]}" "$PY" "$ROOT/tests/helper/pylease.py" "$TMP/p.out" "$TMP/p.ctl" '{}' 2>"$TMP/p.err" &
ppid=$!

# start_py TAG [KWARGS]: tests/helper/pylease.py in the background (its pid: $PYPID); it reports in
# $TMP/TAG.out and obeys $TMP/TAG.ctl. got TAG FILTER: jq on its "leased" line.
start_py() {
	local kw=${2:-}
	rm -f "$TMP/$1.out" "$TMP/$1.ctl"
	mkfifo "$TMP/$1.ctl"
	"$PY" "$ROOT/tests/helper/pylease.py" "$TMP/$1.out" "$TMP/$1.ctl" "${kw:-"{}"}" &
	PYPID=$!
}
tell() { echo "$2" >"$TMP/$1.ctl"; }
got() { sed -n "s/^${3:-leased} //p" "$TMP/$1.out" | jq -c "$2"; }
ended() { count_lines "$DLOG" 'lease [0-9a-f]+ ended'; }
lease_ids() { "$GPUCTL" leases --json | jq -c '[.leases[].id]'; }
queued() { [ "$(queue_len)" = "$1" ]; }

# The module drives the binary: status() is `status --json`; where the binary is found. One
# process, its environment changed between the calls (binary() looks each time).
"$GPUCTL" status --json | jq -c '[.gpus[].uuid]' >"$TMP/want"
mkdir -p "$TMP/bin" && ln -s "$GPUCTL" "$TMP/bin/gpuctl"
"$PY" - "$TMP" >"$TMP/bin.out" 2>&1 <<'PY'
import json, os, sys, gpuctl
print("status", json.dumps([g["uuid"] for g in gpuctl.status()["gpus"]], separators=(",", ":")))
del os.environ["GPUCTL_BINARY"]
os.environ["PATH"] = sys.argv[1] + "/bin"
print("path", gpuctl.binary())
os.environ["PATH"] = sys.argv[1]
try:
    gpuctl.lease()
except gpuctl.BinaryNotFound as e:
    print("missing", type(e).__name__, e)
os.environ["GPUCTL_BINARY"] = "/nonexistent/gpuctl"
try:
    gpuctl.status()
except gpuctl.BinaryNotFound as e:
    print("wrong", e)
PY
check_eq "status() is the status --json document" "status $(cat "$TMP/want")" "$(grep '^status' "$TMP/bin.out")"
check_eq "the binary is found on PATH" "path $TMP/bin/gpuctl" "$(grep '^path' "$TMP/bin.out")"
check_grep "a missing binary: BinaryNotFound when called, saying what to do" \
	'^missing BinaryNotFound the gpuctl binary is not on PATH .*install it .*GPUCTL_BINARY=' "$TMP/bin.out"
check_eq "a wrong GPUCTL_BINARY is named" "wrong GPUCTL_BINARY='/nonexistent/gpuctl' is not an executable file: point it at the gpuctl binary, or unset it to look on PATH" \
	"$(grep '^wrong' "$TMP/bin.out")"

# A lease for the life of a script: os.environ, the Lease, `gpuctl leases`; gone once it exits.
n=$(ended)
start_py s '{"name": "script"}'
await_line '^(leased|error)' "$TMP/s.out"
check_eq "lease(): CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER, NVIDIA_VISIBLE_DEVICES in os.environ" \
	'["1","PCI_BUS_ID","1"]' "$(got s '[.env.CUDA_VISIBLE_DEVICES, .env.CUDA_DEVICE_ORDER, .env.NVIDIA_VISIBLE_DEVICES]')"
check_eq "the Lease: its GPUs (index, uuid, name) and id" \
	"[[[1,\"${U[1]}\",\"NVIDIA H100 80GB HBM3\"]],true]" "$(got s '[.gpus, (.id == .env.GPUCTL_LEASE_ID)]')"
"$GPUCTL" leases --json >"$TMP/out"
check_eq "gpuctl leases: an env lease bound to the Python process" \
	"[\"$(got s .id | tr -d '"')\",\"env\",$PYPID,\"script\"]" "$(jqv '.leases[0] | [.id, .kind, .bound_pid, .name]')"
tell s exit
wait $PYPID
wait_ended $((n + 1))
check_eq "gone after the script exits" "[]" "$(lease_ids)"

# release(): the lease ends and os.environ is as before; the context manager.
n=$(ended)
start_py r
await_line '^(leased|error)' "$TMP/r.out"
tell r release
await_line '^released' "$TMP/r.out"
check_eq "release(): os.environ as before the lease" '{"env":{"CUDA_VISIBLE_DEVICES":null,"CUDA_DEVICE_ORDER":null,"NVIDIA_VISIBLE_DEVICES":null,"GPUCTL_LEASE_ID":null},"released":true}' \
	"$(got r . released)"
wait_ended $((n + 1))
check_eq "and the lease has ended, the process running on" "[] running" "$(lease_ids) $(kill -0 $PYPID && echo running)"
tell r exit
wait $PYPID
n=$(ended)
out=$("$PY" -c '
import gpuctl, os
with gpuctl.lease(2) as lease:
    print(len(gpuctl.leases()["leases"]), os.environ["CUDA_VISIBLE_DEVICES"], lease.released)
print(lease.released, os.environ.get("CUDA_VISIBLE_DEVICES"))')
check_eq "the context manager: leased inside, released after" "1 1,4 False True None" "$(echo $out)"
wait_ended $((n + 1))

# Two Python processes at once never share a GPU; SIGKILL ends a lease too.
n=$(ended)
start_py c1; c1=$PYPID
start_py c2; c2=$PYPID
await_line '^(leased|error)' "$TMP/c1.out"
await_line '^(leased|error)' "$TMP/c2.out"
check_eq "two concurrent processes: different GPUs" "2" \
	"$(cat <(got c1 '.gpus[0][0]') <(got c2 '.gpus[0][0]') | sort -u | grep -c .)"
"$GPUCTL" leases --json >"$TMP/out"
check_eq "each lease bound to its own process" "$(printf '%s\n' $c1 $c2 | sort -n | tr '\n' ' ')" \
	"$(jqv '.leases[].bound_pid' | sort -n | tr '\n' ' ')"
kill -KILL $c1
wait $c1 2>/dev/null
wait_ended $((n + 1))
check_eq "gone after SIGKILL of the Python process" "[$(got c2 .id)]" "$(lease_ids)"
tell c2 exit
wait $c2
wait_ended $((n + 2))

# wait=: queued while the GPU is held, leased when it is let go; NoFreeGPU, WaitTimeout.
n=$(ended)
start_py a '{"gpus": [1]}'; a=$PYPID
await_line '^(leased|error)' "$TMP/a.out"
check_exit "(GPU 1 is held)" 10 "$GPUCTL" run -q -g 1 -- true
start_py w '{"gpus": "1", "wait": 60}'; w=$PYPID
wait_for queued 1
check_eq "wait=: queued while the GPU is held, not leased" "1 0" \
	"$(queue_len) $(grep -c '^leased' "$TMP/w.out")"
start_py i '{"gpus": [1], "wait": true}'; i=$PYPID
wait_for queued 2
kill -INT $i
await_line '^(interrupted|leased|error)' "$TMP/i.out"
wait $i
wait_for queued 1
check_eq "SIGINT while waiting (a notebook's interrupt): KeyboardInterrupt, out of the queue" \
	"interrupted 1 1" "$(cut -d' ' -f1 <"$TMP/i.out" | grep -v start) $(queue_len) $(live_leases)"
start_py t '{"gpus": [1], "wait": 0.2}'
await_line '^(leased|error)' "$TMP/t.out"
check_eq "wait= running out: WaitTimeout, exit status 11" '["WaitTimeout",11]' "$(got t '[.class, .code]' error)"
check_grep "with gpuctl's message" '"message": "gpuctl env: ' "$TMP/t.out"
start_py b '{"n": 3}'
await_line '^(leased|error)' "$TMP/b.out"
check_eq "without wait: NoFreeGPU, exit status 10" '["NoFreeGPU",10]' "$(got b '[.class, .code]' error)"
got b .message error | jq -r . >"$TMP/b.msg"
check_grep "and gpuctl's words" '^gpuctl env: 3 GPUs wanted, not enough free now' "$TMP/b.msg"
check_grep "who holds what" '^  GPU 1 \(GPU-d23f0824\): leased by ' "$TMP/b.msg"
tell a release
await_line '^released' "$TMP/a.out"
await_line '^(leased|error)' "$TMP/w.out"
check_eq "wait=: leased once the GPU is let go" "[[1,\"${U[1]}\"]]" "$(got w '[.gpus[] | .[0:2]]')"
tell a exit
tell w exit
wait $a $w
wait_ended $((n + 2))

# The classic mistake: CUDA already started (a library named libcuda.so.1 loaded) before lease().
n=$(ended)
mkfifo "$TMP/late.ctl"
"$PY" - "$B/fakecuda/libcuda.so.1" "$TMP/late.ctl" >"$TMP/late.out" 2>&1 <<'PY' &
import ctypes, os, sys, gpuctl
ctypes.CDLL(sys.argv[1])
try:
    gpuctl.lease(1, name="late")
    print("leased")
except gpuctl.CudaAlreadyInitialized as e:
    print("CudaAlreadyInitialized", e.reasons)
    print(e)
print("environ", os.environ.get("CUDA_VISIBLE_DEVICES"), os.environ.get("GPUCTL_LEASE_ID"), flush=True)
open(sys.argv[2]).read()  # alive until the test has looked
PY
late=$!
await_line '^environ' "$TMP/late.out"
check_grep "lease() after CUDA started: CudaAlreadyInitialized, libcuda loaded" \
	"^CudaAlreadyInitialized \('$B/fakecuda/libcuda.so.1 is loaded',\)" "$TMP/late.out"
check_grep "says the setting can no longer take effect, and what the process sees" \
	"setting it now cannot take effect. This process sees GPU 0,1,2,3,4,5,6,7 \(CUDA_VISIBLE_DEVICES unset, as this process started\), not GPU 1 just leased" "$TMP/late.out"
check_grep "says to restart the kernel" '^Restart the kernel \(Jupyter: Kernel > Restart; a script: start it again\) and run these lines first, before anything imports torch' "$TMP/late.out"
check_eq "with the lines to run first" "    import gpuctl|    gpuctl.lease(1, name='late')" \
	"$(grep -A1 '^    import gpuctl$' "$TMP/late.out" | tr '\n' '|' | sed 's/|$//')"
check_grep "os.environ untouched" '^environ None None$' "$TMP/late.out"
wait_ended $((n + 1))
check_eq "the lease was given back, the process still running" "[] running" \
	"$(lease_ids) $(kill -0 $late && echo running)"
echo >"$TMP/late.ctl"
wait $late
n=$(ended)
out=$(CUDA_VISIBLE_DEVICES=4 CUDA_DEVICE_ORDER=PCI_BUS_ID "$PY" - "$B/fakecuda/libcuda.so.1" <<'PY'
import ctypes, sys, gpuctl
ctypes.CDLL(sys.argv[1])
print([g.index for g in gpuctl.lease().gpus])
PY
)
check_eq "unless CUDA already sees exactly the leased GPUs" "[4]" "$out"
wait_ended $((n + 1))
"$PY" - "$B/fakecuda/libcuda.so.1" >"$TMP/again.out" 2>&1 <<'PY'
import ctypes, sys, gpuctl
first = gpuctl.lease()
ctypes.CDLL(sys.argv[1])  # CUDA starts under the first lease, as `import torch; torch.zeros(1).cuda()`
try:
    gpuctl.lease(name="again")  # another request (the same one returns the lease held: t2043)
except gpuctl.CudaAlreadyInitialized as e:
    print(e)
print("held", [l.id == first.id for l in gpuctl.held()])
PY
check_grep "the cell run again after CUDA started: keep the lease CUDA uses" \
	"CUDA_VISIBLE_DEVICES='1', as lease [0-9a-f]{16} set it before CUDA started\), not GPU [0-9] just leased.*
This process already holds lease [0-9a-f]{16} on GPU 1, which is what CUDA uses here: keep using it" \
	<(tr '\n' ' ' <"$TMP/again.out"; echo; grep -A1 'just leased' "$TMP/again.out")
check_grep "and it is still held" '^held \[True\]$' "$TMP/again.out"
"$PY" -W always - >"$TMP/twice.out" 2>&1 <<'PY'
import gpuctl
a = gpuctl.lease()
b = gpuctl.lease()
print("same", a is b, len(gpuctl.held()))
c = gpuctl.lease(name="other")
print("two", len(gpuctl.held()))
PY
check_grep "another request while the first is held: a warning" \
	'RuntimeWarning: this process already holds lease [0-9a-f]{16} on GPU 1, which stays held until its release\(\) or the end of this process' "$TMP/twice.out"
check_eq "the same request again returns the lease held (issue 24); another takes a second" \
	"same True 1|two 2" "$(grep -E '^(same|two) ' "$TMP/twice.out" | tr '\n' '|' | sed 's/|$//')"

# The private daemon, gone since, left the lease to its holder: it is shown, and release() ends it.
await_line '^(leased|error)' "$TMP/p.out"
await_line 'stopped; 1 lease held on' "$plog"
pid=$(got p .id | tr -d '"')
check_eq "private daemon gone idle: gpuctl leases still shows the lease" "[\"$pid\",$ppid]" \
	"$(env "${PENV[@]}" "$GPUCTL" leases --json | jq -c '[.leases[] | .id, .bound_pid]')"
tell p release
await_line '^released' "$TMP/p.out"
await_line "lease $pid ended" "$plog"
check_eq "and release() ends it" "1 0" \
	"$(count_lines "$plog" "lease $pid ended") $(env "${PENV[@]}" "$GPUCTL" leases --json | jq '.leases | length')"
tell p exit
wait $ppid

# pip install ./python into a venv (python3 -m venv: Debian's python3-venv), then import.
if [ -n "$venv_ok" ]; then
	await_line '^done' "$TMP/venv.out" 120
	check_eq "pip install ./python into a venv, then import works from there" "True 8|done 0" \
		"$(grep -v '^ *$' "$TMP/venv.out" | tail -2 | tr '\n' '|' | sed 's/|$//')"
else
	skip "pip install ./python into a venv" "no venv/ensurepip for $PY (Debian: python3-venv)"
fi

# make install: the module where python3 looks under PREFIX (its own prefix here), DESTDIR kept.
pfx=$("$PY" -c 'import sys; print(sys.prefix)')
env -u MAKEFLAGS -u MAKELEVEL make -s -C "$ROOT" install-python PYTHON="$PY" PREFIX="$pfx" \
	DESTDIR="$TMP/dest" >"$TMP/install.out" 2>&1
init=$(find "$TMP/dest" -path '*/gpuctl/__init__.py')
dir=${init%/gpuctl/__init__.py}
check_eq "make install-python: under DESTDIR, in a directory on python3's path" "True" \
	"$("$PY" -c 'import sys; print(sys.argv[1] in sys.path)' "${dir#"$TMP/dest"}")"
check_eq "and the module there imports" "$init" \
	"$(cd "$TMP" && env -u PYTHONPATH PYTHONPATH="$dir" "$PY" -c 'import gpuctl; print(gpuctl.__file__)')"

# A real Jupyter kernel: a lease in a cell; the kernel restarted; the lease gone.
if [ -n "$KPY" ]; then
	await_line '^(leased|error)' "$TMP/kernel.out" 120
	read -r kword kpid kid kcvd <"$TMP/kernel.out"
	env "${KENV[@]}" "$GPUCTL" leases --json >"$TMP/out"
	check_eq "kernel: a lease in a cell, bound to the kernel process" \
		"[\"$kid\",$kpid,\"notebook\"] 1" "$(jqv '.leases[0] | [.id, .bound_pid, .name]') $kcvd"
	tell kernel restart
	await_line '^(restarted|error)' "$TMP/kernel.out" 120
	await_line "lease $kid ended" "$klog"
	read -r kword2 kpid2 kcvd2 < <(tail -1 "$TMP/kernel.out")
	check_eq "kernel restarted: a new process, without the variables" "restarted new None" \
		"$kword2 $([ "$kpid2" != "$kpid" ] && echo new) $kcvd2"
	check_eq "and the lease gone" 0 "$(env "${KENV[@]}" "$GPUCTL" leases --json | jq '.leases | length')"
	tell kernel exit
	wait $kdriver
	kill $kdaemon
else
	skip "Jupyter kernel" "no ipykernel/jupyter_client (Debian: python3-ipykernel python3-jupyter-client)" 3
fi
