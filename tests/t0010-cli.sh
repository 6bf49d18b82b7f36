#!/usr/bin/env bash
# t0010-cli.sh: the command line tells the truth (issue 21): env binds its lease to the shell
# that runs it, also from a command substitution that forks a subshell for a redirection or a
# pipeline (else the GPUs are given away a moment later), and speaks fish to fish; --help lists
# every variable gpuctl reads; config keys, sections and profiles get a did-you-mean; kill --pid
# of no GPU process is an error; a short letter means one thing across the commands.
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/daemon.sh"
plan 38
H=$MACHINES/h100x8.machine
use_machine "$H"
daemon_setup
daemon_start

# env_form NAME SHELL BODY: BODY runs in SHELL with $0 gpuctl, $1 a file and $2 a FIFO: it leases
# through env, writes "$$ ..." to $1 once the $(...) has returned, and waits on $2. The lease is
# bound to that shell (the daemon's bound_pid) and ends with it.
env_form() {
	local name=$1 sh=$2 body=$3 ended pid
	ended=$(count_lines "$DLOG" 'lease [0-9a-f]+ ended')
	rm -f "$TMP/form" "$TMP/go"
	mkfifo "$TMP/go"
	"$sh" -c "$body" "$GPUCTL" "$TMP/form" "$TMP/go" &
	pid=$!
	await_line '^[0-9]+' "$TMP/form"
	check_eq "$name: the lease is bound to the shell" "$pid" \
		"$("$GPUCTL" leases --json | jq -c '[.leases[].bound_pid] | join(",")' -r)"
	echo go >"$TMP/go"
	wait $pid
	wait_ended $((ended + 1))
	check_eq "$name: released when the shell exits" 0 "$(live_leases)"
}

env_form 'bash, x=$(env 2>&1)' bash 'x=$("$0" env -q -n 1 2>&1); eval "$x"; echo "$$ $CUDA_VISIBLE_DEVICES" >"$1"; read -r _ <"$2"'
env_form 'bash, docker $(env --format=docker 2>/dev/null)' bash 'out=$1; docker() { echo "$*" >"$out.docker"; }
	docker run $("$0" env -q --format=docker 2>/dev/null) img; echo "$$" >"$1"; read -r _ <"$2"'
check_grep "the docker words" '^run --gpus "device=[0-9]" -e CUDA_VISIBLE_DEVICES=GPU-[^ ]* .* img$' "$TMP/form.docker"
if command -v dash >/dev/null; then
	env_form 'dash, x=$(env 2>&1)' dash 'x=$("$0" env -q -n 1 2>&1); eval "$x"; echo "$$ $CUDA_VISIBLE_DEVICES" >"$1"; read -r _ <"$2"'
	env_form 'dash, x=$(env | cat)' dash 'x=$("$0" env -q -n 1 | cat); eval "$x"; echo "$$ $CUDA_VISIBLE_DEVICES" >"$1"; read -r _ <"$2"'
else
	skip "env from dash" "no dash here" 4
fi

# Unsure which shell it is (env's parent looks like a copy of its own parent, but their maps
# cannot be read: a process made non-dumpable, seen by another user than root), env refuses and
# names --hold-pid $$, instead of guessing.
if can_switch; then
	as_nobody python3 -c '
import ctypes, os, subprocess, sys
pid = os.fork()
if pid == 0:
    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE: /proc/PID/auxv is root'"'"'s now
    r = subprocess.run([sys.argv[1], "env", "-q", "-n", "1"], stderr=subprocess.PIPE, text=True)
    sys.stderr.write(r.stderr)
    os._exit(r.returncode)
sys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))' "$GPUCTL" 2>"$TMP/err"
	check_eq "unsure of the shell: refused (exit 2)" 2 $?
	check_grep "and names --hold-pid \$\$" 'cannot tell which shell the lease is for: .*eval "\$\(gpuctl env --hold-pid \$\$ \.\.\.\)"' "$TMP/err"
	# A user's bash whose parent is root's bash (setpriv and runuser exec it): the same name, a map
	# it cannot read, but another user's: no copy of it, so env binds to the user's own bash.
	as_nobody bash -c '"$0" env -q -n 1 --dry-run; echo "rc $?"' "$GPUCTL" >"$TMP/out" 2>"$TMP/err"
	check_eq "a user's shell under root's shell of the same name: env works" "rc 0" \
		"$(tail -1 "$TMP/out")$(head -1 "$TMP/err")"
else
	skip "env unsure of its shell" "needs root to act as a second user (nobody)" 3
fi

# fish: env speaks fish to fish unasked ($argv: gpuctl, the file, the FIFO); --format=sh still
# forces sh.
if command -v fish >/dev/null; then
	env_form 'fish, gpuctl env | source' fish '$argv[1] env -q -n 1 | source; echo $fish_pid $CUDA_VISIBLE_DEVICES >$argv[2]; read -l x <$argv[3]'
	check_grep "fish: the shell got CUDA_VISIBLE_DEVICES" '^[0-9]+ [0-9]$' "$TMP/form"
	fish -c '$argv[1] env -q -n 1 --dry-run' "$GPUCTL" >"$TMP/out"
	check_grep "fish: fish syntax by default" "^set -gx CUDA_VISIBLE_DEVICES '[0-9]';$" "$TMP/out"
	fish -c '$argv[1] env -q -n 1 --dry-run --format=sh' "$GPUCTL" >"$TMP/out"
	check_grep "fish: --format=sh forces sh" "^export CUDA_VISIBLE_DEVICES='[0-9]';$" "$TMP/out"
else
	skip "env from fish" "no fish here" 5
fi

# gpuctl --help lists every GPUCTL_ variable gpuctl reads: the names getenv'd in src/ (directly or
# through a macro) and by the Python module. GPUCTL_READY_FD alone is not a user's: gpuctl sets it
# for the private daemon it starts (base/peer.h).
"$GPUCTL" --help >"$TMP/help"
read_names() {
	grep -rhoE '(getenv|environ\.get|environ\[)\(?"GPUCTL_[A-Z_]+"' "$ROOT/src" "$ROOT/python" | grep -oE 'GPUCTL_[A-Z_]+'
	grep -rhoE 'getenv\([A-Z_]+\)' "$ROOT/src" | sed 's/getenv(\(.*\))/\1/' | while read -r m; do
		grep -rhoE "#define $m \"GPUCTL_[A-Z_]+\"" "$ROOT/src" | grep -oE 'GPUCTL_[A-Z_]+'
	done
}
read_names | sort -u | grep -vx GPUCTL_READY_FD >"$TMP/names"
missing=$(while read -r v; do grep -q "^  $v " "$TMP/help" || echo "$v"; done <"$TMP/names")
check_eq "--help lists every GPUCTL_ variable read ($(wc -l <"$TMP/names") of them)" "" "$missing"
check_grep "--help: GPUCTL_STATE_DIR is the private daemon's directory" '^  GPUCTL_STATE_DIR +where your private daemon keeps' "$TMP/help"

# Did you mean, for config keys, sections and profile names, as for commands.
mkdir -p "$XDG_CONFIG_HOME/gpuctl"
printf '[defaults]\nprefr = index\n[profile train]\ncuont = 2\n[profile big]\ncount = 4\n[slurm]\ngres_by_memry = a100:40G\n[defualts]\nwait = no\n[slurm extra]\ngres_by_memory = a100:40G\n' >"$XDG_CONFIG_HOME/gpuctl/config"
printf '[daemon]\nmax_gpu_per_user = 2\n' >"$TMP/system.conf"
env -u GPUCTL_CONFIG_NOSYSTEM GPUCTL_SYSTEM_CONFIG="$TMP/system.conf" "$GPUCTL" config >/dev/null 2>"$TMP/err"
check_grep "a [defaults] key" "config:2: unknown key 'prefr' in \[defaults\] \(did you mean 'prefer'\?\); ignored" "$TMP/err"
check_grep "a profile's key" "config:4: unknown key 'cuont' in \[profile train\] \(did you mean 'count'\?\)" "$TMP/err"
check_grep "a [slurm] key" "unknown key 'gres_by_memry' in \[slurm\] \(did you mean 'gres_by_memory'\?\)" "$TMP/err"
check_grep "a section" "unknown section \[defualts\] \(did you mean \[defaults\]\?\)" "$TMP/err"
check_grep "a section that takes no name, given one: the section without it, not the same line" \
	"unknown section \[slurm extra\] \(did you mean \[slurm\]\?\)" "$TMP/err"
check_grep "a [daemon] key" "system.conf:2: unknown key 'max_gpu_per_user' \(did you mean 'max_gpus_per_user'\?\)" "$TMP/err"
check_exit "--profile with a typo" 2 "$GPUCTL" run --profile trian -- true
check_grep "names the profile meant" "no \[profile trian\] .*; did you mean --profile train\?" "$TMP/stderr"
check_exit "--profile far from any" 2 "$GPUCTL" run --profile zzzzzz -- true
check_grep "says where they are listed" "no \[profile zzzzzz\] in .* \(\`gpuctl config\` lists the profiles\)$" "$TMP/stderr"
rm "$XDG_CONFIG_HOME/gpuctl/config"

# kill --pid of no GPU process: an error that names it (exit 2), and nothing signalled even when
# another pid of the list is a GPU process.
check_exit "kill --pid of no process" 2 "$GPUCTL" kill --pid 99999999
check_grep "says there is no such process" '^gpuctl kill: --pid 99999999: no such process' "$TMP/stderr"
"$B/sleeper" & sl=$!
await_line "^$sl\$" "$SLEEPER_READY"
CUDA_VISIBLE_DEVICES=1 "$B/workload" --mem 1000 & wl=$!
await_workload $wl
check_exit "kill --pid of a process on no GPU" 2 "$GPUCTL" kill --pid $wl,$sl
check_grep "says it is not a GPU process" "^gpuctl kill: --pid $sl: process $sl \(sleeper\) is not a GPU process" "$TMP/stderr"
check "and signals nothing" kill -0 $wl
check_exit "kill --pid of the GPU process alone" 0 "$GPUCTL" kill --pid $wl
wait $wl 2>/dev/null
kill $sl; wait $sl 2>/dev/null || :

# Short letters: one meaning each across the commands (every command's --help, "-X, --long"),
# but for the exceptions gpuctl(1) lists (CONVENTIONS) (status -l is nvidia-smi's loop and release -l the
# lease; logs -n and -f are tail's; kill -n is --dry-run); --user and --mine are -u and -m
# wherever they are offered.
cmds=$("$GPUCTL" --help | awk '/^Commands:/{f=1;next} f&&/^  [a-z]/{print $1} f&&/^$/{exit}')
for c in $cmds; do "$GPUCTL" $c --help | grep -oE '^ +(-[A-Za-z], )?--[a-z-]+' | sed -E "s/^ +//; s/^/$c /"; done >"$TMP/opts"
clash=$(awk 'NF==3{print $2, $3}' "$TMP/opts" | sort -u | awk '{n[$1]++; l[$1]=l[$1] " " $2} END{for (k in n) if (n[k] > 1) print k l[k]}' |
	grep -vxE -- '-n, --count --dry-run --lines|-l, --lease --loop|-f, --follow --format' | sort)
check_eq "a short letter means one thing (but gpuctl(1)'s exceptions)" "" "$clash"
bare=$(awk '$NF == "--user" || $NF == "--mine" { if (NF == 2) print $1, $2 }' "$TMP/opts")
check_eq "--user and --mine have -u and -m wherever offered" "" "$bare"
check_exit "top -u NAME -m" 0 "$GPUCTL" top -u nobody -m --help
