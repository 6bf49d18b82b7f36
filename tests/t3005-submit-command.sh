#!/usr/bin/env bash
# t3005-submit-command.sh: what submit records and checks of the command (issue 21): jobs and
# leases show it quoted as a shell would read it back (`sh -c 'echo boom; exit 3'`), and a program
# the job would not find (looked up in PATH as the job will, in the submit's directory) or may
# not run is refused at submit (exit 2), nothing queued.
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/daemon.sh"
. "$ROOT/tests/lib/jobs.sh"
jobs_yield
plan 15
quiet_machine "$TMP/m4" 4
use_machine "$TMP/m4"
daemon_setup
daemon_start
G=$GPUCTL
cd "$TMP" || exit 1

id=$("$G" submit -- sh -c 'echo boom; exit 3')
"$G" wait "$id" 2>/dev/null
check_eq "the job ran as given" 3 $?
check_eq "jobs --json: the command quoted as typed" "\"sh -c 'echo boom; exit 3'\"" "$(job_field "$id" .command)"
"$G" jobs "$id" >"$TMP/out"
check_grep "jobs: the command quoted" "sh -c 'echo boom; exit 3'$" "$TMP/out"
id=$("$G" submit -- printf '%s\n' "it's" '' plain)
"$G" wait "$id"
check_eq "a quote, an empty word, a plain one" "\"printf '%s\\\\n' 'it'\\\\''s' '' plain\"" "$(job_field "$id" .command)"
id=$("$G" submit -- printf '%s\n' =x a=b)
"$G" wait "$id" >/dev/null
check_eq "a word beginning with = is quoted (zsh expands =x to x's path); a later a=b is plain" \
	"\"printf '%s\\\\n' '=x' a=b\"" "$(job_field "$id" .command)"

# run's lease shows its command the same way.
mkfifo "$TMP/go"
"$G" run -q -- sh -c 'read x <"$0"' "$TMP/go" &
r=$!
wait_leases 1
check_eq "leases: run's command quoted" "\"sh -c 'read x <\\\"\$0\\\"' $TMP/go\"" "$("$G" leases --json | jq '.leases[0].command')"
echo >"$TMP/go"
wait $r

# A program the job would not find is refused now, not after its wait in the queue.
n0=$("$G" jobs --json | jq '.jobs | length')
check_exit "submit of a program not in PATH" 2 "$G" submit -- no-such-program-here --x
check_grep "says so, with the PATH" "^gpuctl submit: cannot run 'no-such-program-here': not found in the job's PATH \($PATH\); give its path \(\./no-such-program-here\) or fix PATH; nothing was submitted$" "$TMP/stderr"
check_exit "submit of a path that does not exist" 2 "$G" submit -- ./missing.sh
check_grep "says so" "cannot run './missing.sh': No such file or directory; nothing was submitted" "$TMP/stderr"
printf '#!/bin/sh\necho ok\n' >"$TMP/script.sh"
check_exit "submit of a file that is not executable" 2 "$G" submit -- ./script.sh
check_grep "says so" "cannot run './script.sh': not executable" "$TMP/stderr"
check_eq "nothing was queued" "$n0" "$("$G" jobs --json | jq '.jobs | length')"
chmod +x "$TMP/script.sh"
id=$("$G" submit -- ./script.sh)
"$G" wait "$id"
check_eq "the same file, executable, is accepted and runs" 0 $?
# The job's PATH is the profile's env.PATH when it sets one.
mkdir -p "$XDG_CONFIG_HOME/gpuctl" "$TMP/bin"
cp "$TMP/script.sh" "$TMP/bin/only-here"
printf '[profile p]\nenv.PATH = %s\n' "$TMP/bin:/usr/bin:/bin" >"$XDG_CONFIG_HOME/gpuctl/config"
id=$("$G" submit --profile p -- only-here)
"$G" wait "$id"
check_eq "found in the profile's PATH" 0 $?
