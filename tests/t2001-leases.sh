#!/usr/bin/env bash
# t2001-leases.sh: gpuctl run, env, leases, release through the daemon: choice, environment,
# exclusivity, a lease outliving gpuctl and the daemon, signals and exit codes, env leases and
# cleaning the shell, what another user may not do, user config and the daemon's policy.
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/daemon.sh"
plan 99
H=$MACHINES/h100x8.machine
use_machine "$H"
daemon_setup
daemon_start
U=($(awk '/^uuid = GPU/{print $3}' "$H"))
WL=$B/workload
LOG=$TMP/log

# Choice and environment. Free by default thresholds: GPUs 1, 4, 7.
out=$("$GPUCTL" run -q -n 1 -- sh -c 'echo "$CUDA_VISIBLE_DEVICES|$CUDA_DEVICE_ORDER|$NVIDIA_VISIBLE_DEVICES|${GPUCTL_LEASE_ID:+id}|$GPUCTL_LEASE_GPUS"')
check_eq "run: the job's environment" "1|PCI_BUS_ID|1|id|${U[1]}" "$out"
"$GPUCTL" run -n 1 -- true 2>"$TMP/err"
check_grep "run says on stderr what it leased" '^gpuctl run: leased GPU 1 \(lease [0-9a-f]{16}\)$' "$TMP/err"
out=$("$GPUCTL" run -q -n 3 --uuid --prefer index -- sh -c 'echo "$CUDA_VISIBLE_DEVICES"')
check_eq "run --uuid: UUIDs of the free GPUs" "${U[1]},${U[4]},${U[7]}" "$out"
check_exit "run: not enough free GPUs" 10 "$GPUCTL" run -n 4 -- true
check_grep "says why each GPU is not free" 'GPU 0 \(GPU-6513270e\): memory in use \(71234 MiB used, 98% util, 1 process\)' "$TMP/stderr"
check_grep "suggests --wait" 'Use --wait to queue' "$TMP/stderr"
check_exit "run: more GPUs than exist" 2 "$GPUCTL" run -n 9 -- true
out=$("$GPUCTL" run -q -n 8 --ignore-usage -- sh -c 'echo "$CUDA_VISIBLE_DEVICES"')
check_eq "--ignore-usage: every GPU" "0,1,2,3,4,5,6,7" "$out"
out=$("$GPUCTL" run -q -g 0 --ignore-usage -- sh -c 'echo "$CUDA_VISIBLE_DEVICES"')
check_eq "-g names the GPU" "0" "$out"
check_exit "-g a busy GPU" 10 "$GPUCTL" run -g 0 -- true
out=$(CUDA_VISIBLE_DEVICES=7,4 "$GPUCTL" run -q -n 1 --prefer index -- sh -c 'echo "$CUDA_VISIBLE_DEVICES"')
check_eq "the caller's CUDA_VISIBLE_DEVICES restricts the choice" "4" "$out"
CUDA_VISIBLE_DEVICES=0 check_exit "restricted to a busy GPU" 10 "$GPUCTL" run -- true
CUDA_VISIBLE_DEVICES= check_exit "restricted to nothing" 2 "$GPUCTL" run -- true
check_exit "--min-free-memory no GPU has" 10 "$GPUCTL" run --min-free-memory 90G -- true
out=$("$GPUCTL" run -q --min-free-memory 79G --prefer index -- sh -c 'echo "$CUDA_VISIBLE_DEVICES"')
check_eq "--min-free-memory" "1" "$out"
"$GPUCTL" run -n 2 --dry-run --prefer index -- train.py >"$TMP/out"
check_grep "--dry-run shows the choice" '^would lease: GPU 1 .* GPU 4 ' "$TMP/out"
check_grep "--dry-run shows the environment" '^CUDA_VISIBLE_DEVICES=1,4$' "$TMP/out"
check_eq "--dry-run leases nothing" 0 "$(live_leases)"
check_exit "run without a command" 2 "$GPUCTL" run -n 1

# Exit status and signals.
check_exit "the job's exit status" 7 "$GPUCTL" run -q -- sh -c 'exit 7'
check_exit "128+N when the job dies of signal N" 143 "$GPUCTL" run -q -- sh -c 'kill -TERM $$'
check_exit "a command that does not exist" 127 "$GPUCTL" run -q -- /nonexistent/cmd
check_grep "says why" "cannot run '/nonexistent/cmd': No such file" "$TMP/stderr"
# issue 22: the job is cloned without copying gpuctl (lease/spawn.c), which searches PATH and
# reports the exec's failure itself, as execvp and the forked job did.
printf 'echo plain-script\n' >"$TMP/noshebang"
cp "$TMP/noshebang" "$TMP/noexec"
chmod 755 "$TMP/noshebang"
chmod 644 "$TMP/noexec"
check_exit "a file that is not executable: 126" 126 "$GPUCTL" run -q -- "$TMP/noexec"
check_grep "says why" "cannot run '$TMP/noexec': Permission denied" "$TMP/stderr"
check_exit "a name found nowhere in PATH: 127" 127 "$GPUCTL" run -q -- gpuctl-no-such-command
check_eq "a script without #! runs under /bin/sh, found in PATH" plain-script \
	"$(PATH="$TMP:$PATH" "$GPUCTL" run -q -- noshebang)"
# The job commits its own lease before its exec (on run's connection, its pid attested by the
# kernel): once it runs, the daemon names it, and no other process, as the holder.
out=$("$GPUCTL" run -q -- sh -c 'echo $$; "$1" leases --json | jq --arg id "$GPUCTL_LEASE_ID" ".leases[] | select(.id == \$id) | .pid"' sh "$GPUCTL")
check_eq "the job is the lease's holder as soon as it runs" "$(echo "$out" | sed -n 1p)" "$(echo "$out" | sed -n 2p)"
for sig in USR1 USR2 HUP TERM INT QUIT; do
	: >"$TMP/sig"
	env --default-signal=INT,QUIT "$GPUCTL" run -q -- bash -c "trap 'echo got-$sig >>$TMP/sig; kill \$!; exit 0' $sig; echo ready >>$TMP/sig; sleep 600 & wait" &
	p=$!
	await_line ready "$TMP/sig"
	kill -$sig $p
	wait $p
	check_eq "SIG$sig reaches the job" "ready got-$sig" "$(tr '\n' ' ' <"$TMP/sig" | sed 's/ $//')"
done

# No NVML in the client: the daemon describes the machine and chooses, so the process the job is
# forked from (gpuctl run, the job's parent) never maps the driver's library, whether or not -g
# or CUDA_VISIBLE_DEVICES restrict the choice; env and its holder neither (issue 22).
nvml_mapped() { grep -c 'libnvidia-ml' "$1" || true; }
"$GPUCTL" run -q -n 1 -- sh -c 'cat /proc/$PPID/maps' >"$TMP/maps"
check_eq "run: the job's parent has the C library mapped (the maps were read)" 1 "$(grep -c -m1 'libc' "$TMP/maps")"
check_eq "run: the job's parent never loaded NVML" 0 "$(nvml_mapped "$TMP/maps")"
CUDA_VISIBLE_DEVICES=7,4 "$GPUCTL" run -q -n 1 --prefer index -g 4,7 -- sh -c 'cat /proc/$PPID/maps; echo "cvd=$CUDA_VISIBLE_DEVICES"' >"$TMP/maps"
check_eq "run -g under CUDA_VISIBLE_DEVICES: chosen as before, without NVML" "1 0" \
	"$(grep -c '^cvd=4$' "$TMP/maps") $(nvml_mapped "$TMP/maps")"
FAKENVML_STATS=$TMP/envstats "$GPUCTL" env -n 1 --dry-run >/dev/null
check "env --dry-run: NVML never loaded (the stand-in's log stays unwritten)" test ! -e "$TMP/envstats"
FAKENVML_STATS=$TMP/runstats "$GPUCTL" run -q -n 1 -- true
check "run: NVML never loaded in gpuctl run" test ! -e "$TMP/runstats"

# Exclusivity, and the lease outliving a killed gpuctl and a killed daemon.
"$GPUCTL" run -q -g 1 --name holder -- "$WL" --log "$LOG" --tag holder &
runner=$!
await_line '^start holder' "$LOG"
check_exit "a leased GPU is not given twice" 10 "$GPUCTL" run -g 1 --ignore-usage -- true
check_grep "names the holder" "GPU 1 \(GPU-d23f0824\): leased by $(id -un), pid [0-9]+ 'holder'" "$TMP/stderr"
"$GPUCTL" leases --json >"$TMP/out"
check_eq "leases lists it" "[[1],\"holder\",\"run\"]" "$(jqv '.leases[0] | [[.gpus[].index], .name, .kind]')"
job=$(jqv '.leases[0].pid')
check_eq "the lease's pid is the job itself" "$(pgrep -f "^$WL --log $LOG --tag holder")" "$job"
"$GPUCTL" status --json >"$TMP/out"
check_eq "status shows the holder" '"holder"' "$(jqv '.gpus[1].lease.name')"
kill -KILL $runner
wait $runner 2>/dev/null
check "after SIGKILL of gpuctl the job runs on" kill -0 "$job"
check_exit "and still holds the lease" 10 "$GPUCTL" run -g 1 --ignore-usage -- true
kill -KILL "$DAEMON"
wait "$DAEMON" 2>/dev/null
daemon_start
check_grep "a restarted daemon finds the lease again" 'recovered 1 live lease' "$DLOG"
check_exit "and the GPU is still not given twice" 10 "$GPUCTL" run -g 1 --ignore-usage -- true
check_eq "the record still names it" '"holder"' "$("$GPUCTL" leases --json | jq -c '.leases[0].name')"
ended=$(count_lines "$DLOG" 'lease [0-9a-f]+ ended')
kill -TERM "$job"
wait_ended $((ended + 1))
check_eq "once the job ends nothing stays leased" 0 "$(live_leases)"
check_exit "and the GPU can be leased again" 0 "$GPUCTL" run -q -g 1 -- true

# env leases.
ended=$(count_lines "$DLOG" 'lease [0-9a-f]+ ended')
mkfifo "$TMP/go"
bash -c 'eval "$("$0" env -q -n 1 --prefer index --name nb)"; echo "$CUDA_VISIBLE_DEVICES $CUDA_DEVICE_ORDER" >"$1"; read -r _ <"$2"' "$GPUCTL" "$TMP/envout" "$TMP/go" &
shell=$!
await_line PCI_BUS_ID "$TMP/envout"
check_eq "env: exports in the shell" "1 PCI_BUS_ID" "$(cat "$TMP/envout")"
check_eq "env: leased while the shell lives" '["env","nb"]' "$("$GPUCTL" leases --json | jq -c '[.leases[0].kind,.leases[0].name]')"
echo go >"$TMP/go"
wait $shell
wait_ended $((ended + 1))
check_eq "env: released when the shell exits" 0 "$(live_leases)"
"$B/sleeper" & holdp=$!
"$GPUCTL" env -n 2 --hold-pid $holdp --format=json >"$TMP/out" 2>"$TMP/err"
check_eq "env --format=json" '["PCI_BUS_ID",2]' "$(jqv '[.CUDA_DEVICE_ORDER, (.CUDA_VISIBLE_DEVICES | split(",") | length)]')"
check_grep "env says what it leased, on stderr" 'leased GPU [0-9],[0-9] \(lease [0-9a-f]{16}\) until process' "$TMP/err"
"$GPUCTL" env -q -n 1 --hold-pid $holdp --format=docker >"$TMP/out"
check_grep "env --format=docker: --gpus, then the lease's variables (CUDA's by UUID)" \
	'^--gpus "device=[0-9]" -e CUDA_VISIBLE_DEVICES=GPU-[^ ,]* -e CUDA_DEVICE_ORDER=PCI_BUS_ID -e GPUCTL_LEASE_ID=[0-9a-f]{16} ' "$TMP/out"
"$GPUCTL" env -q -n 1 --hold-pid $holdp --format=fish --ignore-usage -g 0 >"$TMP/out"
check_grep "env --format=fish" "^set -gx CUDA_VISIBLE_DEVICES '0';$" "$TMP/out"
check_eq "three env leases" 3 "$(live_leases)"
if can_switch; then
	as_nobody "$GPUCTL" release --gpu 0 >"$TMP/stdout" 2>"$TMP/stderr"
	check_eq "another user cannot release a lease" 12 $?
	check_grep "and is told whose it is" "refused: the lease on 0 belongs to root" "$TMP/stderr"
	as_nobody "$GPUCTL" release --user root >"$TMP/stdout" 2>"$TMP/stderr"
	check_eq "nor name its owner to release it" 12 $?
	id0=$("$GPUCTL" leases --json | jq -r '.leases[] | select(.gpus[0].index == 0) | .id')
	as_nobody "$GPUCTL" release --lease "$id0" >"$TMP/stdout" 2>"$TMP/stderr"
	check_eq "nor name the lease by its id" "12 refused: lease $id0 belongs to root" \
		"$? $(grep -o 'refused: lease [0-9a-f]* belongs to [a-z]*' "$TMP/stderr")"
	as_nobody "$GPUCTL" run -g 0 --ignore-usage -- true 2>"$TMP/stderr"
	check_eq "nor take the GPU over" 10 $?
	out=$(as_nobody "$GPUCTL" run -q -g 3 --ignore-usage -- sh -c 'echo $CUDA_VISIBLE_DEVICES')
	check_eq "but leases a free GPU" "3" "$out"
	"$GPUCTL" leases --json >"$TMP/out"
	check_eq "a lease's user is the kernel's word" '[]' "$(jqv '[.leases[] | select(.user != "root")]')"
else
	skip "another user" "needs root and setpriv" 7
fi
check_exit "release --gpu 0" 0 "$GPUCTL" release --gpu 0
check_eq "one released" 2 "$(live_leases)"
check_exit "release --gpu 9 is an unknown GPU, as for status" 6 "$GPUCTL" release --gpu 9
# release --lease ID: that lease and no other (the Python module ends exactly the one it took).
"$GPUCTL" env -q -g 0 --ignore-usage --hold-pid $holdp --format=json >"$TMP/out"
a=$(jq -r .GPUCTL_LEASE_ID "$TMP/out")
others=$("$GPUCTL" leases --json | jq -c "[.leases[].id | select(. != \"$a\")]")
check_exit "release --lease ID" 0 "$GPUCTL" release --lease "$a"
check_grep "names it" "^released lease $a \(1 GPU\)$" "$TMP/stdout"
check_eq "ends exactly that lease" "$others" "$("$GPUCTL" leases --json | jq -c '[.leases[].id]')"
check_exit "release --lease of a lease that has ended" 0 "$GPUCTL" release --lease "$a"
check_grep "says so" "no env lease $a of yours to release \(it has ended, or never was\)" "$TMP/stderr"
check_exit "release (all of mine)" 0 "$GPUCTL" release
check_eq "all released" 0 "$(live_leases)"
kill $holdp
# The shell an env lease is for exits while the request is queued and its pid is reused: the
# lease is not bound to that other process (the pid's start time is taken when env starts).
if [ "$(id -u)" = 0 ] && unshare --pid --fork --mount-proc true 2>/dev/null; then
	mkfifo "$TMP/reuse"
	"$GPUCTL" run -q -g 0 --ignore-usage -- "$WL" --log "$LOG" --tag reuse --until "$TMP/reuse" & rr=$!
	await_line '^start reuse' "$LOG"
	unshare --pid --fork --mount-proc python3 "$ROOT/tests/helper/env_reuse.py" "$GPUCTL" "$B/sleeper" "$TMP/reuse"
	wait $rr
else
	skip "env, pid reuse" "needs root and a PID namespace of its own (unshare --pid)" 2
fi

# Releasing the lease this shell exports says how to clean the shell, or does it.
mkfifo "$TMP/go2"
bash -c 'eval "$("$0" env -q -n 1)"; "$0" release 2>"$1.err"; echo "[$CUDA_VISIBLE_DEVICES]" >"$1"
	eval "$("$0" env -q -n 1)"; eval "$("$0" release --format=sh 2>/dev/null)"; echo "[${CUDA_VISIBLE_DEVICES-unset}]" >>"$1"' "$GPUCTL" "$TMP/shell"
check_grep "release warns that the shell still exports the lease" 'this shell still exports lease [0-9a-f]+.s CUDA_VISIBLE_DEVICES=1' "$TMP/shell.err"
check_grep "and gives the line that cleans it" '^  unset CUDA_VISIBLE_DEVICES NVIDIA_VISIBLE_DEVICES GPUCTL_LEASE_ID' "$TMP/shell.err"
check_eq "release --format=sh cleans the shell" "[1] [unset]" "$(tr '\n' ' ' <"$TMP/shell" | sed 's/ $//')"

"$GPUCTL" run -q -n 1 -- "$WL" --log "$LOG" --tag runlease & runner=$!
await_line '^start runlease' "$LOG"
check_exit "release refuses a run lease" 12 "$GPUCTL" release --gpu 1
check_grep "it ends with its job" 'ends when the job does' "$TMP/stderr"
check_exit "named by its id too" 12 "$GPUCTL" release --lease "$("$GPUCTL" leases --json | jq -r '.leases[0].id')"
kill $runner; wait $runner 2>/dev/null

# A user's config: defaults and profiles; the machine's rules belong to the daemon.
mkdir -p "$XDG_CONFIG_HOME/gpuctl"
printf '[defaults]\nprefer = index\nbogus = 1\n[profile big]\ncount = 2\nprefer = index\n' >"$XDG_CONFIG_HOME/gpuctl/config"
out=$("$GPUCTL" run -q --profile big -- sh -c 'echo $CUDA_VISIBLE_DEVICES' 2>"$TMP/err")
check_eq "user config: a profile" "1,4" "$out"
check_grep "an unknown key is a warning naming file and line" "config:3: unknown key 'bogus'" "$TMP/err"
printf '[defaults]\nprefer = lots\n' >"$XDG_CONFIG_HOME/gpuctl/config"
check_exit "a bad value is an error" 2 "$GPUCTL" run -- true
check_grep "naming file and line" 'config:2: bad value .lots. for prefer' "$TMP/stderr"
printf '[defaults]\nmax_gpus_per_user = 8\nfree_max_util = 100\n' >"$XDG_CONFIG_HOME/gpuctl/config"
"$GPUCTL" run -q -- true 2>"$TMP/err"
check_grep "admin keys are ignored in a user's config" 'max_gpus_per_user is the administrator.s, honoured only in /etc/gpuctl.conf' "$TMP/err"
check_exit "and change nothing" 10 "$GPUCTL" run -q -g 6 -- true
rm -f "$XDG_CONFIG_HOME/gpuctl/config"
daemon_stop
printf '[daemon]\nreserved_gpus = 1,4\nmax_gpus_per_user = 2\nfree_max_util = 20\nfree_allow_processes = true\n' >"$TMP/daemon.conf"
daemon_start
out=$("$GPUCTL" run -q -n 1 --prefer index -- sh -c 'echo $CUDA_VISIBLE_DEVICES')
check_eq "the daemon's free rule and reserved GPUs" "3" "$out"
check_exit "the per-user cap" 2 "$GPUCTL" run -n 3 --ignore-usage -- true
check_grep "explains the cap" 'caps each user at 2' "$TMP/stderr"
check_exit "a request for reserved GPUs only is refused, not queued" 2 "$GPUCTL" run -g 1 --wait -- true
check_grep "and says why" 'reserves some' "$TMP/stderr"
check_exit "unknown profile" 2 "$GPUCTL" run --profile nope -- true
check_exit "release --lease '': a usage error (it said 'no env lease  of yours ... has ended')" 2 "$GPUCTL" release --lease ''
check_exit "release --lease of no lease: nothing to do (0)" 0 "$GPUCTL" release --lease 0123456789abcdef
check_grep "  saying it has ended, or never was" "^gpuctl release: no env lease 0123456789abcdef of yours to release \(it has ended, or never was\)\$" "$TMP/stderr"
