#!/usr/bin/env bash
# t2019-share.sh: memory shares (`--mem SIZE`, issue 23) on a simulated 2-GPU 80 GB machine with
# [daemon] share_margin = 10G, two users (root and nobody): six 20G shares run three per GPU at
# once and the seventh waits; a share killed with SIGKILL leaves its room to the next at once;
# whole-GPU and shared leases wait for each other; memory used outside gpuctl leaves room for what
# is left; a share over its claim is shown over it; the job's environment; the JSON contract; and
# the escape hatch `--ignore-usage --min-free-memory` on observed free memory.
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/daemon.sh"
. "$ROOT/tests/lib/tmux.sh"
plan 64
if ! can_switch; then
	skip "memory shares across users" "needs root and setpriv to act as two users" 64
	exit 0
fi
quiet_machine "$TMP/m2" 2
# 80 GiB each, nothing reserved: the arithmetic of the checks is the daemon's own.
sed -i 's/^memory_total_mib = .*/memory_total_mib = 81920/; s/^memory_reserved_mib = .*/memory_reserved_mib = 0/' "$TMP/m2"
use_machine "$TMP/m2"
daemon_setup
WL=$B/workload
LOG=$TMP/log
: >"$LOG"; chmod 666 "$LOG"
: >"$TMP/errors"; chmod 666 "$TMP/errors"
export WORKLOAD_READY=$TMP/ready
: >"$WORKLOAD_READY"; chmod 666 "$WORKLOAD_READY"
printf '[daemon]\nshare_margin = 10G\noffer_timeout = 20s\nusage_poll = 200ms\n' >"$TMP/daemon.conf"
daemon_start
UUID0=$("$GPUCTL" status --json | jq -r '.gpus[0].uuid')
UUID1=$("$GPUCTL" status --json | jq -r '.gpus[1].uuid')
declare -A PID DONE
# job WHO TAG [gpuctl run options...]: a job of root or nobody (b) that runs until `release TAG`.
job() {
	local who=$1 tag=$2 run=()
	shift 2
	[ "$who" = b ] && run=(as_nobody)
	mkfifo -m 666 "$TMP/fifo-$tag"
	"${run[@]}" "$GPUCTL" run -q "$@" -- "$WL" --log "$LOG" --tag "$tag" --mem 1000 \
		--until "$TMP/fifo-$tag" 2>>"$TMP/errors" &
	PID[$tag]=$!
}
release() { [ -n "${DONE[$1]:-}" ] || echo >"$TMP/fifo-$1"; DONE[$1]=1; }
# The GPU (UUID) the job TAG started on, and the tags started on UUID.
gpu_of() { awk -v t="$1" '$1 == "start" && $2 == t {print $6}' "$LOG"; }
on_gpu() { awk -v u="$1" '$1 == "start" && $6 == u {print $2}' "$LOG" | sort | tr '\n' ' '; }
started() { grep -c "^start $1 " "$LOG"; }
# The pid of job TAG's workload (the job itself, not the gpuctl run that started it).
wl_of() { pgrep -f -- "^$WL --log $LOG --tag $1 " | head -1; }
shares_json() { "$GPUCTL" leases --json | jq -c "$1"; }

# ---- six shares of two users, three a GPU; the seventh waits ----
n=0
for t in a1 b1 a2 b2 a3 b3; do
	job "${t:0:1}" $t --mem 20G --wait
	n=$((n + 1))
	await_count '^start [ab]' "$LOG" $n
done
check_eq "six 20G shares of two users run at once" 6 "$(grep -c '^start [ab]' "$LOG")"
check_eq "best fit: the first three fill GPU 0, the next three GPU 1, both users on each" \
	"a1 a2 b1 |a3 b2 b3 " "$(on_gpu "$UUID0")|$(on_gpu "$UUID1")"
job a a7 --mem 20G --wait
wait_queue 1
check_eq "the seventh waits (80G - 3 x 20G - 10G margin leaves 10G)" "0" "$(started a7)"
"$GPUCTL" leases --json >"$TMP/out"
check_eq "leases --json: each GPU has 3 shares, 60G claimed, 10G left to claim" \
	'[[3,61440,10240],[3,61440,10240]]' "$(jqv '[.shares[] | [.count, .claimed_mib, .room_mib]]')"
check_eq "leases --json: a share's claim and its use; a whole lease's are null" \
	'[20480,false,[1000]]' "$(jqv '[.leases[0].mem_mib, .leases[0].over_claim, .leases[0].used_mib]')"
check_eq "leases --json: the old keys are all still there" "true" \
	"$(jqv '.leases[0] | has("id") and has("gpus") and has("user") and has("pid") and has("kind") and has("holder_alive")')"
"$GPUCTL" leases >"$TMP/table"
check_grep "leases: a share's line says its claim" 'share of 20480 MiB per GPU' "$TMP/table"
check_grep "leases: the shared GPUs say what is left" 'GPU 0: 3 shares, 61440 MiB claimed, 0 MiB used outside them, 10240 MiB left' "$TMP/table"
"$GPUCTL" status --json >"$TMP/out"
check_eq "status --json: GPU 0's shares, who holds each; its whole-GPU lease is null" \
	'[3,10240,3,null]' "$(jqv '.gpus[0] | [.shares.count, .shares.room_mib, (.shares.leases | length), .lease]')"
"$GPUCTL" status >"$TMP/table"
check_grep "status: a GPU's shares and each share's holder" \
	'shared: 3 shares, 61440 MiB claimed, 10240 MiB left to claim' "$TMP/table"
if command -v tmux >/dev/null; then
	"${TM[@]}" new-session -d -s top -x 160 -y 50 -e LC_ALL=C "$GPUCTL" top -d 0.2
	check "top: a GPU's shares, what is left and their holders" \
		await_screen top "shared: 3, 10240 MiB left .*(root|nobody) 20480M"
	"${TM[@]}" kill-server
else
	skip "top: a GPU's shares" "no tmux"
fi
start_exporter
curl -sf "http://127.0.0.1:$PORT/metrics" >"$TMP/metrics"
stop_exporter
check_eq "exporter: shares per GPU and the room left" "3 3 10737418240" \
	"$(awk '/^gpuctl_gpu_shares\{gpu="0"/ {a=$NF} /^gpuctl_gpu_shares\{gpu="1"/ {b=$NF}
		/^gpuctl_gpu_share_room_bytes\{gpu="0"/ {c=$NF} END {print a, b, c}' "$TMP/metrics")"
check_eq "exporter: a GPU with shares counts as leased" "1 1" \
	"$(awk '/^gpuctl_gpu_leased\{/ {printf "%s%s", s, $NF; s=" "}' "$TMP/metrics")"
check_eq "exporter: each share's claim, with its holder (three of nobody's)" "6 3" \
	"$(grep -c '^gpuctl_share_claim_bytes{.*} 21474836480$' "$TMP/metrics") $(grep -c '^gpuctl_share_claim_bytes{.*holder="nobody"' "$TMP/metrics")"

# ---- a share killed with SIGKILL: its room goes to the seventh at once ----
victim=$(on_gpu "$UUID0" | awk '{print $1}')
vpid=$(wl_of "$victim")
kill -KILL "$vpid"
DONE[$victim]=1
await_line '^start a7 ' "$LOG" 30
check_eq "SIGKILL ends the share; the seventh takes its room on that GPU" "$UUID0" "$(gpu_of a7)"

# ---- a whole-GPU request waits until a GPU has no share ----
job a x1 -n 1 --wait --ignore-usage
wait_queue 1
check_eq "a whole-GPU request waits while both GPUs hold shares" 0 "$(started x1)"
for t in $(on_gpu "$UUID1"); do release "$t"; done
await_line '^start x1 ' "$LOG" 30
check_eq "it gets the GPU whose shares ended" "$UUID1" "$(gpu_of x1)"

# ---- and a share waits until a GPU is not leased whole ----
for t in $(on_gpu "$UUID0"); do release "$t"; done
wait_leases 1
job b x2 -n 1 --wait --ignore-usage
await_line '^start x2 ' "$LOG" 30
job b s1 --mem 20G --wait
wait_queue 1
check_eq "a share waits while both GPUs are leased whole" 0 "$(started s1)"
release x2
await_line '^start s1 ' "$LOG" 30
check_eq "it gets the GPU freed" "$UUID0" "$(gpu_of s1)"
release s1
release x1
wait_leases 0

# ---- memory used outside gpuctl: 50G on GPU 1 leaves room for one 20G share there ----
mkfifo -m 666 "$TMP/fifo-outside"
CUDA_VISIBLE_DEVICES=1 "$WL" --mem 51200 --tag outside --until "$TMP/fifo-outside" &
PID[outside]=$!
await_workload $!
job a o1 -g 1 --mem 20G
await_line '^start o1 ' "$LOG" 30
check_eq "one 20G share fits beside 50G used outside gpuctl (80 - 50 - 10 margin)" "$UUID1" "$(gpu_of o1)"
check_exit "a second one does not, and is refused at once" 10 "$GPUCTL" run -q -g 1 --mem 20G -- true
check_grep "the refusal says why" 'not enough memory left to claim \(0 MiB left to claim\)' "$TMP/stderr"
check_eq "and does not offer --ignore-usage, which changes nothing for a share" 0 \
	"$(grep -c -- '--ignore-usage' "$TMP/stderr")"
"$GPUCTL" leases --json >"$TMP/out"
check_eq "leases --json: GPU 1's use outside its share is the 50G process" '[1,51200,0]' \
	"$(jqv "[.shares[] | select(.uuid == \"$UUID1\") | .count, .outside_mib, .room_mib]")"

# ---- a job that grows past its claim is shown over it ----
opid=$(wl_of o1)
printf '[process]\ngpu = 1\npid = %d\nused_memory_mib = 25000\n' "$opid" >"$TMP/procs/$opid.tmp"
mv "$TMP/procs/$opid.tmp" "$TMP/procs/$opid"
over() { [ "$(shares_json '.leases[0].over_claim')" = true ]; }
wait_for over
check_eq "a share using 25000 MiB of its 20480 is shown over its claim" '[true,[25000]]' \
	"$(shares_json '[.leases[0].over_claim, .leases[0].used_mib]')"
"$GPUCTL" leases >"$TMP/table"
check_grep "leases says so" 'its processes use 25000 MiB: OVER ITS CLAIM' "$TMP/table"
"$GPUCTL" doctor --json >"$TMP/out"
check_eq "doctor finds the share over its claim" '"share_over_claim"' \
	"$(jqv '[.findings[] | select(.code == "share_over_claim") | .code][0]')"
"$GPUCTL" status >"$TMP/table"
check_grep "status shows it over" 'share: root, pid [0-9]+, 20480 MiB, uses 25000 MiB, OVER ITS CLAIM' "$TMP/table"
release o1
release outside
wait_leases 0

# ---- what the job gets ----
"$GPUCTL" run -q --mem 20G -- env >"$TMP/env"
check_eq "GPUCTL_LEASE_MEM is the claim in MiB" "GPUCTL_LEASE_MEM=20480" "$(grep '^GPUCTL_LEASE_MEM=' "$TMP/env")"
check_eq "JAX's memory fraction is the claim's share of the GPU" "XLA_PYTHON_CLIENT_MEM_FRACTION=0.250" \
	"$(grep '^XLA_PYTHON_CLIENT_MEM_FRACTION=' "$TMP/env")"
check_eq "TensorFlow grows its memory instead of taking the GPU" "TF_FORCE_GPU_ALLOW_GROWTH=true" \
	"$(grep '^TF_FORCE_GPU_ALLOW_GROWTH=' "$TMP/env")"
check_exit "-n 2 --mem 20G: two GPUs, 20G on each" 0 \
	"$GPUCTL" run -q -n 2 --mem 20G -- sh -c 'echo "$CUDA_VISIBLE_DEVICES $GPUCTL_LEASE_MEM"'
check_eq "the job sees both, and its claim on each" "0,1 20480" "$(cat "$TMP/stdout")"
"$GPUCTL" run -q --dry-run --mem 40G >"$TMP/dry"
check_eq "--dry-run shows the same variables" "GPUCTL_LEASE_MEM=40960 XLA_PYTHON_CLIENT_MEM_FRACTION=0.500" \
	"$(grep -E '^(GPUCTL_LEASE_MEM|XLA_PYTHON_CLIENT_MEM_FRACTION)=' "$TMP/dry" | tr '\n' ' ' | sed 's/ $//')"

# ---- env, submit and the Python module take --mem too ----
"$GPUCTL" env -q --mem 10G --format=json --hold-pid $$ >"$TMP/out" 2>>"$TMP/errors"
check_eq "env --mem: the share's variables" '["10240","0.125"]' \
	"$(jqv '[.GPUCTL_LEASE_MEM, .GPUCTL_LEASE_MEM_FRACTION]')"
check_exit "and it is released by its id" 0 "$GPUCTL" release --lease="$(jq -r .GPUCTL_LEASE_ID "$TMP/out")"
id=$(cd "$TMP" && "$GPUCTL" submit --mem 30G -- sh -c 'echo "mem=$GPUCTL_LEASE_MEM"' 2>>"$TMP/errors")
"$GPUCTL" wait "$id" >/dev/null 2>&1
check_eq "submit --mem: the job ran on a share of 30G" "mem=30720" "$("$GPUCTL" logs "$id" 2>&1)"
mkdir -p "$TMP/pystub/torch"
cat >"$TMP/pystub/torch/__init__.py" <<'PY'
calls = []
class _Props:
    total_memory = 81920 * 1048576
class cuda:
    @staticmethod
    def get_device_properties(i):
        return _Props()
    @staticmethod
    def set_per_process_memory_fraction(f, i):
        calls.append((f, i))
PY
PYTHONPATH=$ROOT/python:$TMP/pystub GPUCTL_BINARY=$GPUCTL PYTHONDONTWRITEBYTECODE=1 python3 -c '
import os, gpuctl
lease = gpuctl.lease(mem="20G")
print(os.environ["GPUCTL_LEASE_MEM"], lease.mem, os.environ["XLA_PYTHON_CLIENT_MEM_FRACTION"])
import torch
print(lease.limit_torch(), torch.calls)
lease.release()
print("XLA_PYTHON_CLIENT_MEM_FRACTION" in os.environ)
' >"$TMP/py.out" 2>>"$TMP/errors"
check_eq "gpuctl.lease(mem=...): the claim in os.environ; limit_torch() sets PyTorch's fraction" \
	"20480 20480 0.250|[0.25] [(0.25, 0)]|False" "$(paste -sd'|' "$TMP/py.out")"

# ---- an env shell's share: the processes it starts are its share's ----
mkfifo -m 666 "$TMP/fifo-e1"
bash -c 'x=$("$0" env -q --mem 10G 2>&1); eval "$x"; "$1" --log "$2" --tag e1 --mem 3000 --until "$3"; true' \
	"$GPUCTL" "$WL" "$LOG" "$TMP/fifo-e1" 2>>"$TMP/errors" &
PID[e1]=$!
await_line '^start e1 ' "$LOG" 30
e1_used() { [ "$(shares_json '[.leases[] | select(.mem_mib == 10240) | .used_mib[0]][0]')" = 3000 ]; }
wait_for e1_used
check_eq "a process the env shell started counts as its share's use, not as outside" '[3000,0]' \
	"$(shares_json "[(.leases[] | select(.mem_mib == 10240) | .used_mib[0]), (.shares[0].outside_mib)]")"
release e1
wait "${PID[e1]}"
wait_leases 0

# ---- the escape hatch: --ignore-usage --min-free-memory reads the observed free memory ----
mkfifo -m 666 "$TMP/fifo-busy"
CUDA_VISIBLE_DEVICES=0 "$WL" --mem 70000 --tag busy --until "$TMP/fifo-busy" &
PID[busy]=$!
await_workload $!
check_exit "--ignore-usage --min-free-memory 20G leases the GPU with 20G free" 0 \
	"$GPUCTL" run -q -n 1 --ignore-usage --min-free-memory 20G -- sh -c 'echo $CUDA_VISIBLE_DEVICES'
check_eq "which is GPU 1 (GPU 0 has 11.6G free)" "1" "$(cat "$TMP/stdout")"
release busy

for t in "${!PID[@]}"; do release "$t"; done
for t in "${!PID[@]}"; do wait "${PID[$t]}" 2>/dev/null; done
daemon_stop
check_eq "no client saw an error" "" "$(grep -v 'not enough memory' "$TMP/errors" | head -3)"

# ---- a hostile second user's bad claims over the socket ----
daemon_start
as_nobody python3 "$ROOT/tests/helper/daemon_attack.py" share "$GPUCTL_SOCKET"
daemon_stop

# ---- share_overuse = stop: the job's own `gpuctl run` stops it once it is over its claim ----
printf '[daemon]\nshare_margin = 10G\nusage_poll = 200ms\nshare_overuse = stop\nmax_gpus_per_user = 2\nshare_mps = 0\n' >"$TMP/daemon.conf"
daemon_start
# MPS on GPU 0 (the admin's share_mps): a share there also gets MPS's own limit; on GPU 1, not.
"$GPUCTL" run -q -g 0 --mem 20G -- env >"$TMP/env0"
"$GPUCTL" run -q -g 1 --mem 20G -- env >"$TMP/env1"
check_eq "share_mps: CUDA_MPS_PINNED_DEVICE_MEM_LIMIT on an MPS GPU only" \
	"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=20480MB|" \
	"$(grep '^CUDA_MPS_PINNED' "$TMP/env0")|$(grep '^CUDA_MPS_PINNED' "$TMP/env1")"
# A share counts as a GPU toward max_gpus_per_user; bad sizes are refused, naming the option.
job b c1 --mem 5G --wait
job b c2 --mem 5G --wait
await_count '^start c[12] ' "$LOG" 2
check_exit "a share counts as one GPU toward the per-user cap (2): the third waits" 10 \
	as_nobody "$GPUCTL" run -q --mem 5G -- true
check_grep "and says so" 'you are at the per-user GPU cap' "$TMP/stderr"
# A restarted daemon learns its shares back from their records and FIFOs.
daemon_stop
daemon_start
"$GPUCTL" leases --json >"$TMP/out"
check_eq "after a restart the shares are shares again, with their claims" '[5120,5120]' \
	"$(jqv '[.leases[].mem_mib]')"
check_exit "and a whole-GPU request still cannot take their GPU" 10 \
	"$GPUCTL" run -q -g "$(gpu_of c1)" --ignore-usage -- true
release c1; release c2
wait "${PID[c1]}" "${PID[c2]}" 2>/dev/null
wait_leases 0
check_exit "--mem 0 is refused" 2 as_nobody "$GPUCTL" run -q --mem 0 -- true
check_exit "a share larger than any GPU (less the margin) is refused at once" 2 \
	as_nobody "$GPUCTL" run -q --mem 75G --wait -- true
check_grep "naming the margin" 'share_margin, 10240 MiB' "$TMP/stderr"
job b g1 --mem 20G
await_line '^start g1 ' "$LOG" 30
gpid=$(wl_of g1)
check_eq "within its claim it runs on" 0 "$(grep -c '^end g1 ' "$LOG")"
printf '[process]\ngpu = 0\npid = %d\nused_memory_mib = 30000\n' "$gpid" >"$TMP/procs/$gpid.tmp"
mv "$TMP/procs/$gpid.tmp" "$TMP/procs/$gpid"
await_line '^end g1 ' "$LOG" 30
check_grep "over it, its run says why and stops it (as the job's own user)" \
	'gpuctl run: the job.s processes use 30000 MiB of a GPU, over its share of 20480 MiB: stopping it' \
	"$TMP/errors"
wait "${PID[g1]}" 2>/dev/null
DONE[g1]=1
wait_leases 0
check_eq "and its share ends with it" 0 "$(live_leases)"
# A detached job's runner (the job's user too) stops it the same way.
mkfifo -m 666 "$TMP/fifo-j1"
id=$(cd "$TMP" && "$GPUCTL" submit --mem 20G -- "$WL" --log "$LOG" --tag j1 --mem 1000 \
	--until "$TMP/fifo-j1" 2>>"$TMP/errors")
await_line '^start j1 ' "$LOG" 30
jpid=$(wl_of j1)
printf '[process]\ngpu = 0\npid = %d\nused_memory_mib = 30000\n' "$jpid" >"$TMP/procs/$jpid.tmp"
mv "$TMP/procs/$jpid.tmp" "$TMP/procs/$jpid"
await_line '^end j1 ' "$LOG" 30
"$GPUCTL" wait "$id" >/dev/null 2>&1
check_eq "submit: its runner stops a job over its claim, and says why" \
	'["failed","stopped: its processes used more of a GPU'"'"'s memory than its share (--mem) claims, and the administrator'"'"'s share_overuse is stop"]' \
	"$("$GPUCTL" jobs --json "$id" | jq -c '.jobs[0] | [.state, .reason]')"
daemon_stop
