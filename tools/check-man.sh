#!/usr/bin/env bash
# tools/check-man.sh BINARY MANDIR SRCDIR: the manual pages in MANDIR say what the binary and the
# sources do (tests/t0013-man.sh runs it, and on doctored copies, to see it fail):
#  - the pages are the binary's list (`gpuctl __man --list`) and gpuctl.conf.5: a page for a
#    command that does not exist is an error, and so is a command without its page;
#  - each renders without a warning (mandoc -T lint, groff -ww, man --warnings: those installed);
#  - each option of a command's getopt template (`gpuctl __complete CMD -`) is in its page;
#  - gpuctl(1) has every command, every variable and every exit code `gpuctl --help` lists;
#  - gpuctl.conf(5) has every section and key the parsers in SRCDIR/config accept (their
#    strcmp(k, "KEY") chains), each [defaults] and [daemon] built-in value as `gpuctl config`
#    shows it, and no key they do not accept.
# Prints each problem; exits 1 when there is one. CHECK_MAN_LINT=no skips the rendering checks.
set -u
bin=$1 dir=$2 src=$3
bad=0
fail() { echo "$*"; bad=1; }
# roff to the words a reader sees (fonts, escapes and \& dropped).
plain() { sed -e 's/\\f[BIRP]//g' -e 's/\\-/-/g' -e 's/\\e/\\/g' -e 's/\\&//g' -e 's/\\(ga/`/g' "$1"; }

pages=$("$bin" __man --list) || fail "gpuctl __man --list failed"
for p in $pages gpuctl.conf.5; do
	[ -f "$dir/$p" ] || fail "$p: missing (the command table has it)"
done
for f in "$dir"/*.[0-9]; do
	p=${f##*/}
	grep -qxF "$p" <<<"$pages" || [ "$p" = gpuctl.conf.5 ] ||
		fail "$p: a page for a command that does not exist (not in gpuctl __man --list)"
	[ "${CHECK_MAN_LINT:-yes}" = no ] && continue
	if command -v mandoc >/dev/null; then
		out=$(mandoc -T lint -W warning "$f" 2>&1) || [ -z "$out" ] || fail "$p: mandoc -T lint: $out"
		[ -z "$out" ] || fail "$p: mandoc -T lint: $out"
	fi
	if command -v groff >/dev/null; then
		out=$(groff -ww -man -z "$f" 2>&1)
		[ -z "$out" ] || fail "$p: groff -ww: $out"
	fi
	if command -v man >/dev/null; then
		out=$(MANWIDTH=80 man --warnings -l "$f" 2>&1 >/dev/null)
		[ -z "$out" ] || fail "$p: man --warnings -l: $out"
	fi
done

# Each command's options, as its getopt template has them, in its page.
for p in $pages; do
	[ "$p" = gpuctl.1 ] && continue
	[ -f "$dir/$p" ] || continue
	cmd=${p%.*}
	cmd=${cmd#gpuctl-}
	text=$(plain "$dir/$p")
	while IFS=$'\t' read -r opt _; do
		grep -qE -- "(^|[^A-Za-z0-9-])$opt([^A-Za-z0-9-]|\$)" <<<"$text" ||
			fail "$p: option $opt of \`gpuctl $cmd\` is not in its page (its usage text does not show it)"
	done < <("$bin" __complete "$cmd" -)
done

# gpuctl(1): the commands, the environment and the exit codes of --help.
if [ -f "$dir/gpuctl.1" ]; then
	text=$(plain "$dir/gpuctl.1")
	help=$("$bin" --help)
	for p in $pages; do
		[ "$p" = gpuctl.1 ] && continue
		n=${p%.*}
		grep -qF -- "$n(${p##*.})" <<<"$text" || fail "gpuctl.1: no command ${n#gpuctl-}"
	done
	for code in $(sed -n '/^Exit status:/,/^$/p' <<<"$help" | sed -nE 's/^ +([0-9]+)  .*/\1/p'); do
		grep -qxE "\.B $code" "$dir/gpuctl.1" || fail "gpuctl.1: no exit code $code"
	done
	for var in $(sed -n '/^Environment:/,$p' <<<"$help" | sed -nE 's/^  ([A-Z_]+) .*/\1/p'); do
		grep -qx -- "$var" <<<"$(sed -n '/^\.SH ENVIRONMENT/,/^\.SH/p' "$dir/gpuctl.1" | plain /dev/stdin | sed -n 's/^\.B //p')" ||
			fail "gpuctl.1: no variable $var"
	done
fi

# gpuctl.conf(5): every section and key the parsers accept, their defaults, and no other key.
conf=$dir/gpuctl.conf.5
if [ -f "$conf" ]; then
	text=$(plain "$conf")
	keys=$(grep -ohE 'strcmp\(k, "[a-z0-9_]+"\)' "$src"/config/*.c | sed -E 's/.*"(.*)".*/\1/' | sort -u)
	[ -n "$keys" ] || fail "no strcmp(k, \"KEY\") in $src/config: the key check reads nothing"
	# The key entries of the page: ".B KEY" or ".B KEY = DEFAULT" lines under a [section] heading.
	documented=$(sed -n '/^\.SH \[/,/^\.SH [A-Z]/p' <<<"$text" | awk 'tp && /^\.B / { print } { tp = /^\.TP/ }' |
		     sed -nE 's/^\.B ([a-z0-9_.A-Z]+)( =.*)?$/\1/p' | sort -u)
	for k in $keys; do
		grep -qxF "$k" <<<"$documented" || fail "gpuctl.conf.5: key $k (src/config) is not documented"
	done
	# Keys named by a prefix (env.NAME; strncmp(k, "env.", 4)): documented as PREFIX.SOMETHING.
	prefixes=$(grep -ohE 'strncmp\(k, "[a-z_]+\.", [0-9]+\)' "$src"/config/*.c | sed -E 's/.*"(.*)".*/\1/' | sort -u)
	for p in $prefixes; do
		grep -q "^${p//./\\.}" <<<"$documented" || fail "gpuctl.conf.5: keys ${p}NAME (src/config) are not documented"
	done
	for k in $documented; do
		if [ "${k#*.}" != "$k" ]; then
			grep -qxF "${k%%.*}." <<<"$prefixes" || fail "gpuctl.conf.5: documents $k, but no parser in $src/config takes ${k%%.*}.NAME keys"
			continue
		fi
		grep -qxF "$k" <<<"$keys" || fail "gpuctl.conf.5: documents $k, which no parser in $src/config accepts"
	done
	for s in $(grep -ohE 'strcmp\(section, "[a-z]+"\)' "$src"/config/*.c | sed -E 's/.*"(.*)".*/\1/' | sort -u); do
		grep -qxF ".SH [$s]" <<<"$text" || fail "gpuctl.conf.5: no section [$s]"
	done
	grep -qF '.SH [profile NAME]' <<<"$text" || fail "gpuctl.conf.5: no section [profile NAME]"
	while IFS='=' read -r key value; do
		k=${key#*.}
		want=".B $k =${value:+ $value}"
		grep -qxF -- "$want" <<<"$text" || fail "gpuctl.conf.5: $key's default is '$value' (gpuctl config); the page lacks the line '$want'"
	done < <(env -u GPUCTL_CONFIG_NOSYSTEM GPUCTL_SYSTEM_CONFIG=/nonexistent XDG_CONFIG_HOME=/nonexistent "$bin" config |
		 sed -nE 's/^default\t((defaults|daemon)\..*)$/\1/p')
fi
exit $bad
