#!/usr/bin/env bash
# t0014-completion.sh: the shells complete gpuctl from its command table (issue 29): in a real
# interactive bash with bash-completion (driven in a private tmux), in fish (its own completion
# engine, `complete -C`) and in zsh, `gpuctl st<TAB>` completes status, `gpuctl run -<TAB>` lists
# run's options, `gpuctl run -g <TAB>` offers the simulated machine's GPUs (indices and UUIDs,
# as NVML lists them), and an option's choices complete (`env --format=j<TAB>`).
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/tmux.sh"
. "$ROOT/tests/lib/daemon.sh"
. "$ROOT/tests/lib/jobs.sh"
plan 21
use_machine "$MACHINES/h100x8.machine"
COMP=$ROOT/contrib/completion
export PATH=$B:$PATH
uuids=$("$GPUCTL" status --query-gpu=uuid --format=csv,noheader)
first=$(head -1 <<<"$uuids") last=$(tail -1 <<<"$uuids")
trap '"${TM[@]}" kill-server 2>/dev/null; jobs_cleanup; finish_script' EXIT

# shell_at NAME CMD...: a new tmux session running CMD, 200x50, once its prompt "$ " shows.
shell_at() {
	local s=$1; shift
	"${TM[@]}" new-session -d -s "$s" -x 200 -y 50 "$@"
	await_screen "$s" '^\$ ?$'
}
# tab NAME TEXT KEYS...: type TEXT, then the keys (Tab, Tab Tab).
tab() { local s=$1; typed "$s" "$2"; shift 2; local k; for k in "$@"; do keys "$s" "$k"; done; }
# screen_has NAME CHECK PATTERN: a check that the screen comes to show PATTERN.
screen_has() {
	local out
	if out=$(await_screen "$1" "$3" 20); then ok "$2"; else not_ok "$2" "$out"; fi
}

# ---- bash, with bash-completion ----
if ! command -v tmux >/dev/null; then
	skip "bash completion" "no tmux here" 6
elif [ ! -f /usr/share/bash-completion/bash_completion ]; then
	skip "bash completion" "no bash-completion here (apt-get install bash-completion)" 6
else
	cat >"$TMP/bashrc" <<-RC
	PS1='\$ '
	. /usr/share/bash-completion/bash_completion
	. "$COMP/gpuctl.bash"
	RC
	bashn() { shell_at "$1" bash --noprofile --rcfile "$TMP/bashrc" -i; }
	bashn b1; tab b1 'gpuctl st' Tab
	screen_has b1 "bash: gpuctl st<TAB> completes status" '^\$ gpuctl status ?$'
	bashn b2; tab b2 'gpuctl run -' Tab Tab
	screen_has b2 "bash: gpuctl run -<TAB> lists run's options" '--dry-run.*|--min-free-memory'
	check_grep "bash: ... and only run's (no --follow)" '--count' <("${TM[@]}" capture-pane -p -t b2 | grep -v -- '--follow')
	bashn b3; tab b3 'gpuctl run -g ' Tab Tab
	screen_has b3 "bash: gpuctl run -g <TAB> offers the machine's GPUs (first UUID)" "$first"
	screen_has b3 "bash: ... and the last one" "$last"
	bashn b4; tab b4 'gpuctl env --format=j' Tab
	screen_has b4 "bash: gpuctl env --format=j<TAB> completes json" '^\$ gpuctl env --format=json ?$'
fi

# ---- fish ----
if command -v fish >/dev/null; then
	fc() { fish --no-config -c "source $COMP/gpuctl.fish; complete -C '$1'"; }
	check_eq "fish: gpuctl st<TAB> completes status" "status" "$(fc 'gpuctl st' | cut -f1)"
	out=$(fc 'gpuctl run -' | cut -f1)
	check_grep "fish: gpuctl run -<TAB> lists run's options" '^--dry-run$' <(echo "$out")
	check_eq "fish: ... and only run's" "" "$(grep -x -- '--follow' <<<"$out")"
	out=$(fc 'gpuctl run -g ' | cut -f1)
	check_eq "fish: gpuctl run -g <TAB> offers every GPU, by index and UUID" \
		"$( (seq 0 7; echo "$uuids") | sort)" "$(grep -E '^([0-9]+|GPU-.*)$' <<<"$out" | sort)"
	check_eq "fish: gpuctl run -g 0,7,<TAB>: the GPUs not yet in the list" "1 2 3 4 5 6" \
		"$(fc 'gpuctl run -g 0,7,' | cut -f1 | sed -n 's/^0,7,\([0-9]*\)$/\1/p' | sort -n | tr '\n' ' ' | sed 's/ $//')"
	check_eq "fish: gpuctl env --format=j<TAB> completes json" "--format=json" "$(fc 'gpuctl env --format=j' | cut -f1)"
	mkdir -p "$XDG_CONFIG_HOME/gpuctl"
	printf '[profile big]\ncount = 4\n[profile small]\ncount = 1\n' >"$XDG_CONFIG_HOME/gpuctl/config"
	check_eq "fish: gpuctl run --profile <TAB> offers the configuration's profiles" "big small" \
		"$(fc 'gpuctl run --profile ' | cut -f1 | sort | tr '\n' ' ' | sed 's/ $//')"
	# A lease of this script's own daemon: release --lease <TAB> offers its id.
	daemon_setup
	daemon_start
	"$B/sleeper" & holdp=$!
	# Its name, which shows in the menu, is hostile: a terminal title and colour sequence.
	"$GPUCTL" env -q -n 1 --name $'comp\e]0;owned\a\e[31mtest' --hold-pid $holdp >/dev/null
	check_eq "fish: gpuctl release --lease <TAB> offers the live lease's id" \
		"$("$GPUCTL" leases --json | jq -r '.leases[].id')" "$(fc 'gpuctl release --lease ' | cut -f1)"
	check_eq "... and its hostile name reaches the menu escaped" "0 comp\\e]0;owned" \
		"$("$GPUCTL" __complete release --lease '' | grep -c $'\e') $("$GPUCTL" __complete release --lease '' | grep -o 'comp\\e]0;owned')"
	kill $holdp
	# A job of this user's: logs <TAB> and submit --after <TAB> offer its id.
	job=$("$GPUCTL" submit -n 1 -- true 2>/dev/null)
	await_ended "$job"
	check_eq "fish: gpuctl logs <TAB> offers the user's job ids" "$job" "$(fc 'gpuctl logs ' | cut -f1)"
	check_eq "fish: gpuctl submit --after <TAB> too" "$job" "$(fc 'gpuctl submit --after ' | cut -f1)"
else
	skip "fish completion" "no fish here" 11
fi

# ---- zsh ----
if command -v zsh >/dev/null && command -v tmux >/dev/null; then
	mkdir -p "$TMP/zdot"
	cat >"$TMP/zdot/.zshrc" <<-RC
	fpath=("$COMP" \$fpath)
	autoload -Uz compinit && compinit -u -D
	PS1='\$ '
	RC
	shell_at z1 env ZDOTDIR="$TMP/zdot" zsh -i
	tab z1 'gpuctl st' Tab
	screen_has z1 "zsh: gpuctl st<TAB> completes status" '^\$ gpuctl status ?$'
	shell_at z2 env ZDOTDIR="$TMP/zdot" zsh -i
	tab z2 'gpuctl run -g ' Tab
	screen_has z2 "zsh: gpuctl run -g <TAB> offers the machine's GPUs" "$first"
else
	skip "zsh completion" "no zsh (or tmux) here" 2
fi

# The helper the three scripts share, directly: a command that is not one completes nothing.
check_eq "gpuctl __complete of no command: nothing" "" "$("$GPUCTL" __complete frobnicate -)"
check_exit "gpuctl __complete with no words: exit 0" 0 "$GPUCTL" __complete
