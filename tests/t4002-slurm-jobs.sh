#!/usr/bin/env bash
# t4002-slurm-jobs.sh: Slurm as the backend of detached jobs, on a real slurmctld + slurmd + munge
# (tests/lib/slurm.sh; four simulated GPUs, character devices of major 195): `submit --slurm -n 2`
# lands on two GPUs with the CUDA variables right; two such jobs run at once on disjoint GPUs; a
# third waits for resources and is shown queued; jobs/logs/cancel/wait and their exit statuses;
# --after chains, and the job after a failed one cancelled, never run; Slurm's refusal of an
# impossible request in its own words, exit 18; a job slurmctld forgot shown as unknown, never
# done; a second user refused; hostile names escaped; `jobs` listing this machine's jobs beside;
# the backend chosen by [defaults], a profile (whose env.NAME reaches the job) or --local.
# Slurm tells no one when a job starts or ends: the jobs announce themselves in their logs
# (events, awaited with inotify), and only Slurm's own view (queued for Resources) is polled for,
# with a deadline.
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/daemon.sh"
. "$ROOT/tests/lib/jobs.sh"
. "$ROOT/tests/lib/slurm.sh"
trap 'main_shell && { slurm_down; jobs_cleanup; finish_script; }' EXIT
plan 64
N=64
if ! slurm_usable; then
	skip "real Slurm" "$SLURM_WHY" $N
	exit 0
fi
quiet_machine "$TMP/m4" 4
use_machine "$TMP/m4"
use_state
chmod 755 "$TMP"
if ! slurm_up 4; then
	skip "real Slurm" "it did not start here: ${SLURM_WHY:-see its log above}" $N
	exit 0
fi
G=$GPUCTL
W="$TMP/work dir"
mkdir -p "$W"
cd "$W" || exit 1
mkfifo go1 go2 goa
# field ID FILTER: a field of `gpuctl jobs --json ID`.
field() { "$G" jobs --json "$1" | jq -c ".jobs[0] | $2"; }
# await_field ID FILTER VALUE: Slurm's own view, asked until it says so (30 s at most).
await_field() {
	local i v
	for i in $(seq 150); do
		v=$(field "$1" "$2" 2>/dev/null)
		[ "$v" = "$3" ] && return 0
		sleep 0.2
	done
	echo "# job $1: $2 is $v after 30 s, wanted $3"
	return 1
}
log_of() { echo "$W/slurm-${1#slurm:}.out"; }
say_env='echo "cvd=$CUDA_VISIBLE_DEVICES jobgpus=$SLURM_JOB_GPUS order=$CUDA_DEVICE_ORDER id=$GPUCTL_JOB_ID foo=$FOO pwd=$(pwd)"'

# Two jobs of two GPUs each: both run, on disjoint GPUs, with the CUDA variables right.
check_exit "submit --slurm -n 2 succeeds" 0 env FOO='bar baz' "$G" submit --slurm -n 2 --name two -- \
	sh -c "$say_env; read x <go1; echo bye; exit 3"
j1=$(cat "$TMP/stdout")
check "it prints the id alone on stdout, as slurm:N" grep -qxE 'slurm:[0-9]+' "$TMP/stdout"
check_eq "and nothing on stderr" "" "$(cat "$TMP/stderr")"
j2=$("$G" submit --slurm -n 2 --name $'ev\e[31mil' -- sh -c "$say_env; read x <go2")
await_line '^cvd=' "$(log_of "$j1")" 30
await_line '^cvd=' "$(log_of "$j2")" 30
cvd1=$(sed -n 's/^cvd=\([^ ]*\) .*/\1/p' "$(log_of "$j1")")
cvd2=$(sed -n 's/^cvd=\([^ ]*\) .*/\1/p' "$(log_of "$j2")")
check_grep "job 1: two GPUs, SLURM_JOB_GPUS alike, PCI order, its id, the submit's environment and directory" \
	"^cvd=[0-3],[0-3] jobgpus=$cvd1 order=PCI_BUS_ID id=$j1 foo=bar baz pwd=$W\$" "$(log_of "$j1")"
check_grep "job 2: two GPUs too" "^cvd=[0-3],[0-3] jobgpus=$cvd2 " "$(log_of "$j2")"
check_eq "on disjoint GPUs: all four" "0,1,2,3" "$(echo "$cvd1,$cvd2" | tr , '\n' | sort -n | paste -sd,)"
"$G" jobs --json "$j1" "$j2" >"$TMP/out"
check_eq "jobs --json: both running, with their GPUs and node" \
	"[[\"$j1\",\"running\",[${cvd1}],\"$SLURM_NODE\"],[\"$j2\",\"running\",[${cvd2}],\"$SLURM_NODE\"]]" \
	"$(jqv '[.jobs[] | [.id, .state, .gpus, .node]]')"
check_eq "jobs --json: the name as given, by the JSON writer" '"ev\u001b[31mil"' "$(jqv '.jobs[1].name')"
"$G" jobs >"$TMP/table"
check_grep "jobs: a hostile name escaped on the terminal" "^ *$j2 ev\\\\e\\[31mil +running" "$TMP/table"
check_eq "and no escape byte reaches it" 0 "$(grep -c $'\e' "$TMP/table")"

# A third job waits for resources: shown queued, with Slurm's reason; logs has nothing yet.
j3=$("$G" submit --slurm -n 1 -- echo never)
check "a job pending for resources" await_field "$j3" .reason '"Slurm: Resources"'
"$G" jobs >"$TMP/table"
check_grep "jobs shows it queued" "^ *$j3 - +queued +- " "$TMP/table"
check_grep "and why, in Slurm's word" "^ +Slurm: Resources$" "$TMP/table"
check_exit "logs of a job not started: nothing yet, exit 0" 0 "$G" logs "$j3"
check_grep "it says so" "job $j3 has not started \(queued\): no output yet" "$TMP/stderr"
j4=$("$G" submit --slurm --after "$j1" -- echo after-the-failure)
"$G" jobs >"$TMP/table"
check_grep "a job --after a running one: queued, after" "^ *$j4 - +queued, after " "$TMP/table"
check_grep "naming it" "^ +after job $j1$" "$TMP/table"

# Another user sees nothing of root's jobs through gpuctl, and Slurm agrees.
if can_switch; then
	check_exit "a second user: jobs of root's Slurm job refused (12)" 12 as_nb "$G" jobs "$j1"
	check_grep "by name" "job $j1 is root's, not yours" "$TMP/stderr"
	check_exit "cancel: refused (12)" 12 as_nb "$G" cancel "$j2"
	check "Slurm refuses that user's scancel of it too" \
		sh -c "! setpriv --reuid=65534 --regid=65534 --clear-groups scancel ${j2#slurm:} 2>/dev/null"
	check_eq "the job runs on" '"running"' "$(field "$j2" .state)"
else
	skip "a second user" "needs root and setpriv" 5
fi

# cancel: a queued job; a running one (Slurm's scancel).
check_exit "cancel a queued Slurm job" 0 "$G" cancel "$j3"
check_grep "it says so" "^job $j3 cancelled \(it was queued\)$" "$TMP/stdout"
check_eq "jobs: cancelled, never started" '["cancelled",null]' "$(field "$j3" '[.state, .started_at]')"

# logs -f follows job 1 and ends with it; wait returns its exit status; the job after it is
# cancelled, never run.
"$G" logs -f "$j1" >"$TMP/follow" 2>&1 &
lf=$!
await_line '^cvd=' "$TMP/follow" 30
echo >go1
wait $lf
check_eq "logs -f ends when the job does" 0 $?
check_grep "having printed what it wrote last" '^bye$' "$TMP/follow"
check_exit "wait: the job's exit status (3)" 3 "$G" wait "$j1"
check_grep "wait says how it ended" "job $j1 failed with exit status 3" "$TMP/stderr"
check_exit "wait for the job after it: cancelled (15)" 15 "$G" wait "$j4"
check_grep "because the job before it failed" "job $j4 cancelled: a job it was to run after did not succeed" "$TMP/stderr"
check_eq "never run" '["cancelled",null,null]' "$(field "$j4" '[.state, .started_at, .exit_code]')"
check_exit "submit --after the failed job is refused (2)" 2 "$G" submit --slurm --after "$j1" -- true
check_grep "it could never start" "job $j1 did not succeed \(failed, exit status 3\), so this job could never start" "$TMP/stderr"
check_exit "cancel a running Slurm job" 0 "$G" cancel "$j2"
check_grep "it says how it ended" "^job $j2 cancelled: ended by signal 15 " "$TMP/stdout"
check_exit "wait for it: 15" 15 "$G" wait "$j2"

# --after chains: each starts after the one before it succeeded. A job killed by a signal: 128+N.
a=$("$G" submit --slurm -- sh -c 'echo started; read x <goa; echo a >>chain')
b=$("$G" submit --slurm --after "$a" -- sh -c 'echo b >>chain')
c=$("$G" submit --slurm --after "$a,$b" -- sh -c 'echo c >>chain')
k=$("$G" submit --slurm -- sh -c 'kill -KILL $$')
await_line '^started' "$(log_of "$a")" 30
check_eq "the job after a running one waits" '"queued"' "$(field "$b" .state)"
echo >goa
check_exit "wait for the end of the chain" 0 "$G" wait "$c"
check_eq "each ran after the one before it" "a b c" "$(tr '\n' ' ' <chain | sed 's/ $//')"
check_exit "a job killed by SIGKILL: wait says 137" 137 "$G" wait "$k"
sa=$(SBATCH_ARRAY_INX=1-2 "$G" submit --slurm -- true)
check_exit "SBATCH_ARRAY_INX left in the shell does not make the job an array" 0 "$G" wait "$sa"
"$G" jobs --json "$a" "$b" "$c" >"$TMP/out"
check_eq "jobs: the chain done, each with its after" "[[\"done\",0,[]],[\"done\",0,[\"$a\"]],[\"done\",0,[\"$a\",\"$b\"]]]" \
	"$(jqv '[.jobs[] | [.state, .exit_code, .after]]')"

# Slurm's refusals, in its own words, exit 18; bad input is refused before Slurm is asked.
check_exit "an impossible request: Slurm refuses it (18)" 18 "$G" submit --slurm -n 9 -- true
check_grep "in its own words" "^gpuctl submit: Slurm refused the job: sbatch: error: .*Requested node configuration is not available" "$TMP/stderr"
check_exit "-g has no meaning for Slurm (2)" 2 "$G" submit --slurm -g 1 -- true
check_exit "--min-free-memory without the site's mapping (2)" 2 "$G" submit --slurm --min-free-memory 20G -- true
check_grep "says what to set" "gres_by_memory or features_by_memory" "$TMP/stderr"
mkdir -p "$XDG_CONFIG_HOME/gpuctl"
printf '[defaults]\nbackend = slurm\n[slurm]\nfeatures_by_memory = gpu40g:40G gpu80g:80G\n' >"$XDG_CONFIG_HOME/gpuctl/config"
check_exit "backend = slurm in the config, --min-free-memory as node features: Slurm's word (18)" 18 \
	"$G" submit --min-free-memory 50G -- true
check_grep "the constraint reached Slurm" "Slurm refused the job: sbatch: error: .*(feature|constraint)" "$TMP/stderr"
"$G" config >"$TMP/config" 2>&1
check_grep "gpuctl config lists the [slurm] key" "	slurm.features_by_memory=gpu40g:40G gpu80g:80G\$" "$TMP/config"
lj=$("$G" submit --local -- true 2>"$TMP/err")
check "--local overrides backend = slurm in [defaults]: a job of this machine" grep -qxE '[0-9]+' <<<"$lj"
# A profile's backend and variables.
printf '[profile p]\nbackend = slurm\nenv.PROFILE_VAR = from profile\n' >"$XDG_CONFIG_HOME/gpuctl/config"
pj=$("$G" submit --profile p -- sh -c 'echo "pv=$PROFILE_VAR"' 2>"$TMP/err")
check "--profile with backend = slurm: a Slurm job" grep -qxE 'slurm:[0-9]+' <<<"$pj"
"$G" wait "$pj" "$lj"
check_grep "the profile's env.NAME reached the Slurm job" '^pv=from profile$' "$(log_of "$pj")"
printf '[defaults]\nbackend = pbs\n' >"$XDG_CONFIG_HOME/gpuctl/config"
check_exit "backend = pbs: a configuration error (2)" 2 "$G" submit -- true
check_grep "naming the values it takes" "local or slurm" "$TMP/stderr"
rm "$XDG_CONFIG_HOME/gpuctl/config"
check_exit "an id Slurm does not know: 17" 17 "$G" wait slurm:999999
check_exit "a malformed id: 2" 2 "$G" logs slurm:x

# A job that slurmctld forgot before gpuctl saw it end: unknown, never done; wait says 16.
sd=$XDG_STATE_HOME/gpuctl/slurm
sed "s/^id ${j3#slurm:}\$/id 999998/; s/^state .*/state running/" "$sd/${j3#slurm:}.job" >"$sd/999998.job"
check_exit "wait for a job Slurm forgot: 16" 16 "$G" wait slurm:999998
check_grep "saying why" "job slurm:999998 unknown: Slurm no longer knows it" "$TMP/stderr"
check_eq "jobs: unknown" '"unknown"' "$(field slurm:999998 .state)"

# jobs lists this machine's jobs beside Slurm's; --clean forgets the finished ones of both.
l=$("$G" submit -- true 2>"$TMP/err")
"$G" wait "$l"
"$G" jobs --json >"$TMP/out"
check_eq "jobs: this machine's id as a number, Slurm's as slurm:N" "[\"number\",\"local\"] [\"string\",\"slurm\"]" \
	"$(jq -c "[.jobs[] | select(.id == $l or .id == \"$j1\") | [(.id | type), .backend]] | .[0], .[1]" "$TMP/out" | tr '\n' ' ' | sed 's/ $//')"
check_exit "jobs --clean" 0 "$G" jobs --clean
check_eq "nothing finished is left" 0 "$("$G" jobs --json | jq '.jobs | length')"
slurm_down
