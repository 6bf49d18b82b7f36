#!/usr/bin/env bash
# t0008-leases.sh: gpuctl run, env, leases, release: choice, environment, exclusivity, crashes,
# signals and exit codes, waiting, and what another user may not do.
. "$(dirname "$0")/lib.sh"
plan 68
use_state
H=$MACHINES/h100x8.machine
use_machine "$H"
U=($(awk '/^uuid = GPU/{print $3}' "$H"))
WL=$B/workload

# Choice and environment. Free by default thresholds: GPUs 1, 4, 7.
out=$("$GPUCTL" run -n 1 -- sh -c 'echo "$CUDA_VISIBLE_DEVICES|$CUDA_DEVICE_ORDER|$NVIDIA_VISIBLE_DEVICES|${GPUCTL_LEASE_ID:+id}|$GPUCTL_LEASE_GPUS"')
check_eq "run: the job's environment" "1|PCI_BUS_ID|1|id|${U[1]}" "$out"
out=$("$GPUCTL" run -n 3 --uuid --prefer index -- sh -c 'echo "$CUDA_VISIBLE_DEVICES"')
check_eq "run --uuid: UUIDs of the free GPUs" "${U[1]},${U[4]},${U[7]}" "$out"
check_exit "run: not enough free GPUs" 10 "$GPUCTL" run -n 4 -- true
check_grep "says who and what holds them" 'GPU 0 \(GPU-6513270e\): memory in use' "$TMP/stderr"
check_grep "suggests --wait" 'Use --wait to queue' "$TMP/stderr"
check_exit "run: more GPUs than exist" 2 "$GPUCTL" run -n 9 -- true
out=$("$GPUCTL" run -n 8 --ignore-usage -- sh -c 'echo "$CUDA_VISIBLE_DEVICES"')
check_eq "--ignore-usage: every GPU" "0,1,2,3,4,5,6,7" "$out"
out=$("$GPUCTL" run -g 0 --ignore-usage -- sh -c 'echo "$CUDA_VISIBLE_DEVICES"')
check_eq "-g names the GPU" "0" "$out"
check_exit "-g a busy GPU" 10 "$GPUCTL" run -g 0 -- true
out=$(CUDA_VISIBLE_DEVICES=7,4 "$GPUCTL" run -n 1 --prefer index -- sh -c 'echo "$CUDA_VISIBLE_DEVICES"')
check_eq "the caller's CUDA_VISIBLE_DEVICES restricts the choice" "4" "$out"
CUDA_VISIBLE_DEVICES=0 check_exit "restricted to a busy GPU" 10 "$GPUCTL" run -- true
CUDA_VISIBLE_DEVICES= check_exit "restricted to nothing" 2 "$GPUCTL" run -- true
check_exit "--min-free-memory no GPU has" 10 "$GPUCTL" run --min-free-memory 90G -- true
out=$("$GPUCTL" run --min-free-memory 79G --prefer index -- sh -c 'echo "$CUDA_VISIBLE_DEVICES"')
check_eq "--min-free-memory" "1" "$out"
"$GPUCTL" run -n 2 --dry-run --prefer index -- train.py >"$TMP/out"
check_grep "--dry-run shows the choice" '^would lease: GPU 1 .* GPU 4 ' "$TMP/out"
check_grep "--dry-run shows the environment" '^CUDA_VISIBLE_DEVICES=1,4$' "$TMP/out"
check_eq "--dry-run leases nothing" 0 "$(live_leases)"
check_exit "run without a command" 2 "$GPUCTL" run -n 1

# Exit status and signals.
check_exit "the job's exit status" 7 "$GPUCTL" run -- sh -c 'exit 7'
check_exit "128+N when the job dies of signal N" 143 "$GPUCTL" run -- sh -c 'kill -TERM $$'
check_exit "a command that does not exist" 127 "$GPUCTL" run -- /nonexistent/cmd
check_grep "says why" "cannot run '/nonexistent/cmd': No such file" "$TMP/stderr"
for sig in USR1 USR2 HUP TERM INT QUIT; do
	"$GPUCTL" run -- bash -c "trap 'echo got-$sig; exit 0' $sig; while :; do sleep 0.05; done" >"$TMP/sig" 2>&1 &
	p=$!
	wait_leases 1
	sleep 0.1
	kill -$sig $p
	wait $p
	check_eq "SIG$sig reaches the job" "got-$sig" "$(cat "$TMP/sig")"
done

# Exclusivity, and the lease outliving a killed gpuctl.
"$GPUCTL" run -g 1 --name holder -- "$WL" --seconds 30 &
runner=$!
wait_leases 1
check_exit "a leased GPU is not given twice" 10 "$GPUCTL" run -g 1 --ignore-usage -- true
check_grep "names the holder" "GPU 1 \(GPU-d23f0824\): leased by $(id -un), pid [0-9]+ 'holder'" "$TMP/stderr"
"$GPUCTL" leases --json >"$TMP/out"
check_eq "leases lists it" "[[1],\"holder\",\"run\"]" "$(jqv '.leases[0] | [[.gpus[].index], .name, .kind]')"
"$GPUCTL" status --json >"$TMP/out"
check_eq "status shows the holder" '"holder"' "$(jqv '.gpus[1].lease.name')"
job=$(jq -r '.gpus[1].lease.pid' "$TMP/out")
kill -KILL $runner
wait $runner 2>/dev/null
check "after SIGKILL of gpuctl the job runs on" kill -0 "$job"
check_exit "and still holds the lease" 10 "$GPUCTL" run -g 1 --ignore-usage -- true
check_eq "the record still names it" 1 "$(live_leases)"

# Replacing the lock file under a holder must not admit a second one.
rm -f "$GPUCTL_STATE_DIR/${U[1]}.lock"
check_exit "lock file removed while held: still refused" 10 "$GPUCTL" run -g 1 --ignore-usage -- true
echo > "$GPUCTL_STATE_DIR/${U[1]}.lock.new" && mv "$GPUCTL_STATE_DIR/${U[1]}.lock.new" "$GPUCTL_STATE_DIR/${U[1]}.lock"
check_exit "lock file replaced while held: still refused" 10 "$GPUCTL" run -g 1 --ignore-usage -- true
kill -TERM "$job"
wait_leases 0
check_eq "once the job ends nothing stays leased" 0 "$(live_leases)"
check_exit "and the GPU can be leased again" 0 "$GPUCTL" run -g 1 -- true

# env leases.
bash -c 'eval "$("$0" env -n 1 --prefer index --name nb)"; echo "$CUDA_VISIBLE_DEVICES $CUDA_DEVICE_ORDER" >"$1"; sleep 0.5' "$GPUCTL" "$TMP/envout" &
shell=$!
wait_for test -s "$TMP/envout"
check_eq "env: exports in the shell" "1 PCI_BUS_ID" "$(cat "$TMP/envout")"
check_eq "env: leased while the shell lives" '["env","nb"]' "$("$GPUCTL" leases --json | jq -c '[.leases[0].kind,.leases[0].name]')"
wait $shell
wait_leases 0
check_eq "env: released when the shell exits" 0 "$(live_leases)"
"$B/sleeper" & holdp=$!
"$GPUCTL" env -n 2 --hold-pid $holdp --format=json >"$TMP/out" 2>"$TMP/err"
check_eq "env --format=json" '["PCI_BUS_ID",2]' "$(jqv '[.CUDA_DEVICE_ORDER, (.CUDA_VISIBLE_DEVICES | split(",") | length)]')"
check_grep "env says what it leased, on stderr" 'leased GPU [0-9] GPU [0-9] until process' "$TMP/err"
"$GPUCTL" env -n 1 --hold-pid $holdp --format=docker >"$TMP/out"
check_grep "env --format=docker" "^--gpus '\"device=[0-9]\"'$" "$TMP/out"
"$GPUCTL" env -n 1 --hold-pid $holdp --format=fish --ignore-usage -g 0 >"$TMP/out"
check_grep "env --format=fish" "^set -gx CUDA_VISIBLE_DEVICES '0';$" "$TMP/out"
check_eq "three env leases" 3 "$(live_leases)"
chmod 755 "$TMP"
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/nonexistent "$@"; }
	nobody "$GPUCTL" release --gpu 0 >"$TMP/stdout" 2>"$TMP/stderr"
	check_eq "another user cannot release a lease" 12 $?
	check_grep "and is told whose it is" "refused: the lease on 0 belongs to root" "$TMP/stderr"
	nobody "$GPUCTL" run -g 0 --ignore-usage -- true 2>"$TMP/stderr"
	check_eq "nor take the GPU over" 10 $?
	out=$(nobody "$GPUCTL" run -g 3 --ignore-usage -- sh -c 'echo $CUDA_VISIBLE_DEVICES')
	check_eq "but leases a free GPU in the shared directory" "3" "$out"
	(umask 077; "$GPUCTL" run -g 5 --ignore-usage --name private -- "$B/sleeper") & priv=$!
	wait_leases 4
	check_eq "a lease taken under umask 077 is visible to other users" '"private"' "$(nobody "$GPUCTL" leases --json | jq -c '[.leases[] | select(.name == "private") | .name][0]')"
	nobody "$GPUCTL" run -g 5 --ignore-usage -- true 2>/dev/null
	check_eq "and still excludes them" 10 $?
	kill $priv; wait $priv 2>/dev/null
	wait_leases 3
else
	skip "another user" "needs root and setpriv to act as a second user" 6
fi
check_exit "release --gpu 0" 0 "$GPUCTL" release --gpu 0
check_eq "one released" 2 "$(live_leases)"
check_exit "release (all of mine)" 0 "$GPUCTL" release
check_eq "all released" 0 "$(live_leases)"
kill $holdp
"$GPUCTL" run -n 1 -- "$WL" --seconds 5 2>"$TMP/runerr" & runner=$!
wait_leases 1
check_exit "release refuses a run lease" 12 "$GPUCTL" release --gpu 1
check_grep "it ends with its job" 'ends when the job does' "$TMP/stderr"
kill $runner; wait $runner 2>/dev/null

# Config: thresholds, profiles, admin keys only from /etc.
mkdir -p "$XDG_CONFIG_HOME/gpuctl"
printf '[defaults]\nfree_max_util = 60\nfree_allow_processes = true\nfree_max_memory_used = 50G\nbogus = 1\n[profile big]\ncount = 2\nprefer = index\n' >"$XDG_CONFIG_HOME/gpuctl/config"
out=$("$GPUCTL" run --profile big -- sh -c 'echo $CUDA_VISIBLE_DEVICES' 2>"$TMP/err")
check_eq "user config: thresholds and a profile" "1,2" "$out"
check_grep "an unknown key is a warning naming file and line" "config:5: unknown key 'bogus'" "$TMP/err"
printf '[defaults]\nfree_max_util = lots\n' >"$XDG_CONFIG_HOME/gpuctl/config"
check_exit "a bad value is an error" 2 "$GPUCTL" run -- true
check_grep "naming file and line" 'config:2: bad value .lots. for free_max_util' "$TMP/stderr"
printf '[defaults]\nmax_gpus_per_user = 8\n' >"$XDG_CONFIG_HOME/gpuctl/config"
"$GPUCTL" run -- true 2>"$TMP/err"
check_grep "admin keys are ignored outside /etc" 'honoured only in /etc/gpuctl.conf' "$TMP/err"
rm -f "$XDG_CONFIG_HOME/gpuctl/config"
printf '[defaults]\nreserved_gpus = 1,4\nmax_gpus_per_user = 2\n' >"$GPUCTL_SYSTEM_CONFIG"
out=$("$GPUCTL" run -n 1 -- sh -c 'echo $CUDA_VISIBLE_DEVICES')
check_eq "reserved GPUs are never chosen" "7" "$out"
check_exit "the per-user cap" 2 "$GPUCTL" run -n 3 --ignore-usage -- true
check_grep "explains the cap" 'caps each user at 2' "$TMP/stderr"
rm -f "$GPUCTL_SYSTEM_CONFIG"
check_exit "unknown profile" 2 "$GPUCTL" run --profile nope -- true
