# fish completion for gpuctl: the candidates come from the binary itself, `gpuctl __complete
# WORDS...` (src/cmd/complete.c), as "value<TAB>description" lines; commands, options and
# their values from the command table at the time of the TAB, GPUs from this machine, profiles,
# leases and job ids. Installed as /usr/share/fish/vendor_completions.d/gpuctl.fish.
function __gpuctl_complete
	set -l words (commandline -opc)
	set -l cur (commandline -ct)
	set -l out ($words[1] __complete $words[2..-1] "$cur" 2>/dev/null)
	switch "$out[1]"
		case :files
			__fish_complete_path "$cur"
		case :commands
			__fish_complete_command
		case '*'
			printf '%s\n' $out
	end
end
complete -c gpuctl -f -a '(__gpuctl_complete)'
