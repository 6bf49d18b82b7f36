# bash completion for gpuctl. The candidates come from the binary itself, `gpuctl __complete
# WORDS...` (src/cmd/complete.c): commands, options and their values from the command table at
# the time of the TAB, GPUs from this machine, profiles, leases and job ids. Installed as
# /usr/share/bash-completion/completions/gpuctl (bash-completion loads it on first use).
_gpuctl() {
	local cur prev words cword
	if declare -F _init_completion >/dev/null; then
		_init_completion -n =: || return
	else
		words=("${COMP_WORDS[@]}") cword=$COMP_CWORD cur=${COMP_WORDS[COMP_CWORD]}
	fi
	local line lines
	lines=$("${words[0]}" __complete "${words[@]:1:cword}" 2>/dev/null) || return
	case $lines in
	:files)
		compopt -o filenames 2>/dev/null
		mapfile -t COMPREPLY < <(compgen -f -- "$cur")
		return ;;
	:commands)
		compopt -o filenames 2>/dev/null
		mapfile -t COMPREPLY < <(compgen -c -- "$cur")
		return ;;
	esac
	COMPREPLY=()
	while IFS= read -r line; do
		line=${line%%$'\t'*}
		[[ $line == "$cur"* ]] && COMPREPLY+=("$line")
	done <<<"$lines"
	# Readline replaces only what follows the last '=' or ':' of the word: drop what precedes.
	local pre=${cur%"${cur##*[=:]}"} i
	if [[ -n $pre && $COMP_WORDBREAKS == *"${pre: -1}"* ]]; then
		for i in "${!COMPREPLY[@]}"; do COMPREPLY[i]=${COMPREPLY[i]#"$pre"}; done
	fi
	# An option that takes a value, alone: no space after "--format=".
	[[ ${#COMPREPLY[@]} -eq 1 && ${COMPREPLY[0]} == *= ]] && compopt -o nospace 2>/dev/null
	return 0
}
complete -F _gpuctl gpuctl
