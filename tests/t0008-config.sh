#!/usr/bin/env bash
# t0008-config.sh: bad numbers are clear errors, never a lease (issue 11.18); configuration files
# that cannot be read, or are not files (issue 11.20); profiles that set their jobs' environment,
# and `gpuctl config` showing every effective setting with the file:line it came from (11.22),
# the daemon's [daemon] policy among them.
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/daemon.sh"
. "$ROOT/tests/lib/jobs.sh"
plan 69
use_machine "$MACHINES/h100x8.machine" # free: GPUs 1, 4 and 7
daemon_setup
daemon_start
CONF=$XDG_CONFIG_HOME/gpuctl/config
mkdir -p "$(dirname "$CONF")"

# Sizes, durations and seconds: overflow is an error (exit 2), not a lease. The release build
# leased with --min-free-memory 20000000000000T (UBSan: a double past uint64_t in config.c).
for v in 20000000000000T 1e300T 0x10G; do
	check_exit "--min-free-memory $v: exit 2" 2 "$GPUCTL" run --dry-run --min-free-memory "$v" -- true
done
check_grep "the error says what a size is, and the largest" "min-free-memory wants a size such as 20G or 512M \(at most 1024T\), not '0x10G'" "$TMP/stderr"
check_exit "--min-free-memory 1024T is a size (no GPU has it: busy)" 10 "$GPUCTL" run --dry-run --min-free-memory 1024T -- true
for v in 1e400 1e306h 9000h; do
	check_exit "--wait=$v: exit 2" 2 "$GPUCTL" run --wait="$v" -- true
done
# --wait's duration is optional, so joined: `--wait 2m -- CMD` waited with no limit, then ran "2m".
check_exit "run --wait 2m -- CMD: exit 2, before any lease" 2 timeout 30 "$GPUCTL" run --wait 2m -- true
check_grep "  saying how to write it" "run: --wait takes its duration joined to it: --wait=2m \('2m' would be run as the command" "$TMP/stderr"
check_exit "status --loop 1e300: exit 2" 2 timeout 10 "$GPUCTL" status --loop 1e300 -c 2
check_exit "status --loop-ms 18446744073709551615: exit 2" 2 timeout 10 "$GPUCTL" status --loop-ms 18446744073709551615 -c 2
check_exit "kill --grace 1e300: exit 2" 2 "$GPUCTL" kill --mine --grace 1e300
GPUCTL_DAEMON_TIMEOUT=1e300 check_exit "GPUCTL_DAEMON_TIMEOUT=1e300 is not a timeout: the default" 0 "$GPUCTL" leases
check_grep "  said, never taken silently" "^gpuctl: warning: GPUCTL_DAEMON_TIMEOUT='1e300' is not a duration over 0 .*; the daemon's answers are waited for 5 s\$" "$TMP/stderr"
# gpuctl's other variables alike: the value, what it wants, what is done instead; once.
GPUCTL_SNAPSHOT=maybe check_exit "GPUCTL_SNAPSHOT=maybe: status still works" 0 "$GPUCTL" status -l 0.2 -c 2
check_eq "  said once, not per refresh" 1 "$(grep -c "^gpuctl: warning: GPUCTL_SNAPSHOT='maybe' is not 0, 1, on, off, yes or no" "$TMP/stderr")"
GPUCTL_SNAPSHOT_AGE=999 check_exit "GPUCTL_SNAPSHOT_AGE=999: status still works" 0 "$GPUCTL" status
check_grep "  said" "^gpuctl: warning: GPUCTL_SNAPSHOT_AGE='999' is not a duration of at most 60 s" "$TMP/stderr"
GPUCTL_SNAPSHOT=OFF check_exit "GPUCTL_SNAPSHOT=OFF is understood" 0 "$GPUCTL" status
check_eq "  without a word" "" "$(cat "$TMP/stderr")"
printf '[profile huge]\nmin_free_memory = 1e300T\n' >"$CONF"
check_exit "a profile's min_free_memory = 1e300T: exit 2" 2 "$GPUCTL" run --dry-run -- true
check_grep "naming file and line" "config:2: bad value '1e300T' for min_free_memory" "$TMP/stderr"

# Configuration files: a user's file that cannot be read is a warning (HOME pointing at another
# user's home under sudo); a FIFO or a device in its place neither hangs nor eats memory.
if can_switch; then
	mkdir -p "$TMP/roots/gpuctl" && echo '[defaults]' >"$TMP/roots/gpuctl/config" && chmod 700 "$TMP/roots"
	as_nobody env XDG_CONFIG_HOME="$TMP/roots" "$GPUCTL" run --dry-run -q -n 1 -- true >"$TMP/stdout" 2>"$TMP/stderr"
	check_eq "another user's unreadable config: the run goes on" 0 $?
	check_grep "with a warning naming it" "warning: cannot read $TMP/roots/gpuctl/config: Permission denied; going on without it" "$TMP/stderr"
else
	skip "unreadable config" "needs root and setpriv to act as a second user" 2
fi
rm -f "$CONF"
mkfifo "$CONF"
check_exit "a FIFO as the config: no hang" 0 timeout 10 "$GPUCTL" run --dry-run -q -- true
check_grep "a warning says why it was not read" 'config: not a regular file; going on without it' "$TMP/stderr"
rm -f "$CONF"
ln -s /dev/zero "$CONF"
check_exit "/dev/zero as the config: no endless read" 0 timeout 10 "$GPUCTL" run --dry-run -q -- true
rm -f "$CONF"
{ echo '[defaults]'; head -c 1100000 /dev/zero | tr '\0' '#' | fold -w 100; echo; } >"$CONF"
check_exit "a config over 1 MiB is not read" 0 timeout 10 "$GPUCTL" run --dry-run -q -- true
check_grep "and says so" 'larger than 1 MiB' "$TMP/stderr"
mkfifo "$TMP/daemon.fifo"
check_exit "the daemon refuses a FIFO for --config, at once" 2 timeout 10 "$GPUCTL" daemon --socket "$TMP/d2.sock" \
	--state-dir "$TMP/d2" --config "$TMP/daemon.fifo"
check_grep "saying why" 'daemon.fifo: not a regular file' "$TMP/stderr"

# Profiles set their jobs' environment: framework memory settings beside the GPU choice.
cat >"$CONF" <<'INI'
[defaults]
prefer = util
[profile tf]
count = 1
env.TF_FORCE_GPU_ALLOW_GROWTH = true
env.PYTORCH_CUDA_ALLOC_CONF = expandable_segments:True
env.XLA_FLAGS = --xla_gpu_cuda_data_dir='/opt/cuda 12' $HOME
[defaults]
prefer = index
INI
out=$("$GPUCTL" run -q --profile tf -- sh -c 'printf "%s|%s|%s|%s" "$TF_FORCE_GPU_ALLOW_GROWTH" "$PYTORCH_CUDA_ALLOC_CONF" "$XLA_FLAGS" "$CUDA_VISIBLE_DEVICES"')
check_eq "run: the profile's variables reach the job" "true|expandable_segments:True|--xla_gpu_cuda_data_dir='/opt/cuda 12' \$HOME|1" "$out"
"$B/sleeper" & holdp=$!
out=$(sh -c 'eval "$("$0" env -q --profile tf --hold-pid "$1")"; printf "%s|%s" "$XLA_FLAGS" "$TF_FORCE_GPU_ALLOW_GROWTH"' "$GPUCTL" $holdp)
check_eq "env: exported, quoted for sh" "--xla_gpu_cuda_data_dir='/opt/cuda 12' \$HOME|true" "$out"
if command -v fish >/dev/null; then
	"$GPUCTL" env -q --profile tf --dry-run --format=fish >"$TMP/fish"
	out=$(fish -c "source $TMP/fish; printf '%s|%s' \$XLA_FLAGS \$PYTORCH_CUDA_ALLOC_CONF")
	check_eq "env: quoted for fish" "--xla_gpu_cuda_data_dir='/opt/cuda 12' \$HOME|expandable_segments:True" "$out"
else
	skip "env --format=fish" "fish is not installed" 1
fi
"$GPUCTL" env -q --profile tf --dry-run --format=json >"$TMP/out"
check_eq "env: in JSON" '["true","--xla_gpu_cuda_data_dir='"'"'/opt/cuda 12'"'"' $HOME"]' "$(jqv '[.TF_FORCE_GPU_ALLOW_GROWTH, .XLA_FLAGS]')"
"$GPUCTL" env -q --profile tf --dry-run --format=docker >"$TMP/out" 2>"$TMP/err"
check_grep "env --format=docker: -e words for what survives word splitting" '^--gpus "device=[0-9]" -e CUDA_VISIBLE_DEVICES=GPU-[^ ]* .*-e TF_FORCE_GPU_ALLOW_GROWTH=true -e PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True$' "$TMP/out"
check_grep "and says which variable it cannot pass" 'XLA_FLAGS is not passed to docker' "$TMP/err"
kill $holdp
id=$("$GPUCTL" submit --profile tf -- sh -c 'printf "%s|%s\n" "$TF_FORCE_GPU_ALLOW_GROWTH" "$XLA_FLAGS"')
"$GPUCTL" wait "$id"
check_eq "submit: a detached job gets them too" 0 $?
check_eq "with its own environment's quoting intact" "true|--xla_gpu_cuda_data_dir='/opt/cuda 12' \$HOME" "$("$GPUCTL" logs "$id")"
printf '[profile bad]\nenv.CUDA_VISIBLE_DEVICES = 3\n' >"$TMP/bad"
cp "$TMP/bad" "$CONF"
check_exit "a profile cannot set the lease's own variables" 2 "$GPUCTL" run --dry-run -- true
check_grep "and is told why, with file and line" 'config:2: env.CUDA_VISIBLE_DEVICES: set by the lease itself' "$TMP/stderr"
printf '[profile bad]\nenv.2X = 1\n' >"$CONF"
check_exit "nor a name that is no variable" 2 "$GPUCTL" run --dry-run -- true

# gpuctl config: every effective setting, where it came from (the last line that set it wins).
cat >"$CONF" <<'INI'
[defaults]
prefer = util
[profile tf]
count = 1
env.TF_FORCE_GPU_ALLOW_GROWTH = true
[defaults]
prefer = index
INI
check_exit "gpuctl config" 0 "$GPUCTL" config
check_grep "a key set twice: its value and the line that set it last" "^file:$CONF:7	defaults.prefer=index\$" "$TMP/stdout"
check_grep "a built-in default, so marked" '^default	defaults.wait=no$' "$TMP/stdout"
check_grep "a profile's job variable, with its line" "^file:$CONF:5	profile.tf.env.TF_FORCE_GPU_ALLOW_GROWTH=true\$" "$TMP/stdout"
check_grep "the profiles listed" '^# profiles: tf$' "$TMP/stdout"
check_grep "the system file skipped, and why" '^# /etc/gpuctl.conf: not read: GPUCTL_CONFIG_NOSYSTEM is set$' "$TMP/stdout"
check_grep "the environment that matters" "^environment	GPUCTL_SOCKET=$GPUCTL_SOCKET\$" "$TMP/stdout"
"$GPUCTL" config --json >"$TMP/out"
check_eq "config --json" "[\"index\",\"$CONF:7\"]" "$(jqv '.settings[] | select(.key == "defaults.prefer") | [.value, .origin]')"
check_grep "the daemon's file skipped too, and why" '^# daemon: /etc/gpuctl.conf: not read: GPUCTL_CONFIG_NOSYSTEM is set; the file.s values' "$TMP/stdout"
check "and no daemon setting is claimed" test "$(grep -c '	daemon\.' "$TMP/stdout")" = 0

# The daemon's policy: [daemon] of the system file (GPUCTL_SYSTEM_CONFIG here), with its lines,
# the admin keys an older file keeps in [defaults], and the daemon's built-in values.
SYS=$TMP/system.conf
printf '[defaults]\nreserved_gpus = 7\n[daemon]\nqueue = fifo\nfree_max_util = 20\noffer_timeout = 5s\nofer_timeout = 1s\n' >"$SYS"
check_exit "gpuctl config with a system file" 0 env -u GPUCTL_CONFIG_NOSYSTEM GPUCTL_SYSTEM_CONFIG="$SYS" "$GPUCTL" config
check_grep "a [daemon] key with its file and line" "^file:$SYS:4	daemon.queue=fifo\$" "$TMP/stdout"
check_grep "an admin key of [defaults] is the daemon's" "^file:$SYS:2	daemon.reserved_gpus=7\$" "$TMP/stdout"
check_grep "a misspelt [daemon] key: a warning with its line" "system.conf:7: unknown key 'ofer_timeout' \(did you mean 'offer_timeout'\?\); ignored" "$TMP/stderr"
check_grep "a daemon default, so marked" '^default	daemon.orphan_grace=30s$' "$TMP/stdout"
check_grep "which file, and that a running daemon may use another" "^# daemon: $SYS: read; the file's values: .*--config FILE" "$TMP/stdout"
env -u GPUCTL_CONFIG_NOSYSTEM GPUCTL_SYSTEM_CONFIG="$SYS" "$GPUCTL" config --json >"$TMP/out"
check_eq "config --json: the daemon's settings" "[\"5s\",\"$SYS:6\",\"none\",\"default\",\"$SYS\"]" \
	"$(jqv '[(.settings[] | select(.key == "daemon.offer_timeout") | .value, .origin), (.settings[] | select(.key == "daemon.max_wait") | .value, .origin), .daemon.path]')"
printf '[daemon]\nqueue = lifo\n' >"$SYS"
check_exit "a bad [daemon] value: exit 2 (the daemon would not start)" 2 env -u GPUCTL_CONFIG_NOSYSTEM GPUCTL_SYSTEM_CONFIG="$SYS" "$GPUCTL" config
check_grep "naming file and line" "system.conf:2: bad value 'lifo' for queue" "$TMP/stderr"

# A line longer than the INI parser's buffer (199 bytes) came in pieces, each parsed as a line:
# the tail of a commented-out setting became live, at a line the file does not have. A long
# comment is a comment; a long setting fails the file at its own line.
python3 -c "print('[daemon]'); print('# ' + 'x' * 197 + 'max_gpus_per_user = 1'); print('max_gpus_per_user = 2')" >"$SYS"
check_exit "a long comment line: still a comment" 0 env -u GPUCTL_CONFIG_NOSYSTEM GPUCTL_SYSTEM_CONFIG="$SYS" "$GPUCTL" config
check_grep "  nothing of it set (the next line's value, at line 3)" "^file:$SYS:3	daemon.max_gpus_per_user=2\$" "$TMP/stdout"
python3 -c "print('[daemon]'); print('max_gpus_per_user = 2' + ' ' * 200 + 'x'); print('# one more')" >"$SYS"
check_exit "a setting's line over 199 bytes: exit 2" 2 env -u GPUCTL_CONFIG_NOSYSTEM GPUCTL_SYSTEM_CONFIG="$SYS" "$GPUCTL" config
check_grep "  naming its line and the limit" "system.conf:2: a line of 222 bytes: a setting's line may have at most 199\$" "$TMP/stderr"
check_eq "  and nothing else said (no line 3 of pieces)" 1 "$(wc -l <"$TMP/stderr")"
printf 'wait = 5m\n[defaults]\nwait = 1m\n' >"$CONF"
check_exit "a key before any section: a warning, not an error" 0 "$GPUCTL" config
check_grep "  saying where it belongs (it said 'unknown section []')" "config:1: wait = \.\.\. comes before any section: it belongs under \[defaults\], \[profile NAME\] or \[slurm\]; ignored" "$TMP/stderr"
