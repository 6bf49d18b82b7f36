#!/usr/bin/env bash
# t0013-man.sh: the manual pages cannot drift from the program (issue 29). tools/check-man.sh
# holds build/man to the binary and the sources: every command has its page and no page names a
# command that does not exist, every option of a command's getopt template is in its page,
# every exit code, variable and command in gpuctl(1), every config key and section the parsers
# accept in gpuctl.conf(5) (with the built-in defaults) and no other key, and each page renders
# without a warning. Then the same check on doctored copies fails, naming what is wrong; and
# `gpuctl help CMD` and `man gpuctl-CMD` show the same synopsis and options. The references
# between the documents (README, doc/, the man parts) hold: tools/check-doc-links.sh.
. "$(dirname "$0")/lib/lib.sh"
plan 14
MAN=$B/man
CHECK=$ROOT/tools/check-man.sh

if out=$("$CHECK" "$GPUCTL" "$MAN" "$ROOT/src" 2>&1); then ok "the pages are true to the program"; else
	not_ok "the pages are true to the program" "$out"; fi

# doctored COPY-NAME: a copy of the pages to spoil; then `expect_fail NAME PATTERN`.
doctored() { rm -rf "$TMP/$1"; cp -r "$MAN" "$TMP/$1"; D=$TMP/$1; }
expect_fail() {
	local out rc
	out=$(CHECK_MAN_LINT=${LINT:-no} "$CHECK" "$GPUCTL" "$D" "$ROOT/src" 2>&1)
	rc=$?
	if [ $rc -ne 0 ] && grep -qE -- "$2" <<<"$out"; then ok "$1"; else
		not_ok "$1" "exit $rc; wanted a line matching: $2" "$out"; fi
}
doctored frob
sed 's/gpuctl\\-run/gpuctl\\-frobnicate/g' "$D/gpuctl-run.1" >"$D/gpuctl-frobnicate.1"
expect_fail "a page for a command that does not exist fails" 'gpuctl-frobnicate.1: a page for a command that does not exist'
doctored nopage
rm "$D/gpuctl-kill.1"
expect_fail "a command without its page fails" 'gpuctl-kill.1: missing'
doctored noopt
sed -i '/dry\\-run/d' "$D/gpuctl-run.1"
expect_fail "an option missing from its page fails" 'gpuctl-run.1: option --dry-run'
doctored nokey
sed -i '/^\.B head_reserve/d' "$D/gpuctl.conf.5"
expect_fail "a config key missing from gpuctl.conf(5) fails" 'key head_reserve .* not documented'
doctored default
sed -i 's/^\.B max_connections = 8192$/.B max_connections = 100/' "$D/gpuctl.conf.5"
expect_fail "a wrong default in gpuctl.conf(5) fails" "daemon.max_connections's default is '8192'"
doctored nocode
sed -i '/^\.B 13$/d' "$D/gpuctl.1"
expect_fail "an exit code missing from gpuctl(1) fails" 'gpuctl.1: no exit code 13'
doctored lint
printf '.TP\n.BOGUS x\n' >>"$D/gpuctl-map.1"
LINT=yes expect_fail "a page that renders with a warning fails" 'gpuctl-map.1: (mandoc|groff|man)'

# The documents' links, page and section names and tree paths (tools/check-doc-links.sh); a
# document naming what is not there fails it.
if out=$("$ROOT/tools/check-doc-links.sh" "$ROOT" "$MAN" 2>&1); then ok "the documents' references hold"; else
	not_ok "the documents' references hold" "$out"; fi
printf 'See [it](nope.md), gpuctl-frobnicate(1), gpuctl-daemon(8), NO SUCH SECTION, `tests/t9999-none.sh`.\n' >"$TMP/bad.md"
out=$("$ROOT/tools/check-doc-links.sh" "$ROOT" "$MAN" "$TMP/bad.md" 2>&1)
check_eq "... and a document naming what is not there fails, naming each" \
	"nope.md: no such file|gpuctl-frobnicate(1): no such page|has no section NO SUCH SECTION|tests/t9999-none.sh\`: no such file" \
	"$(grep -oE 'nope.md: no such file|gpuctl-frobnicate\(1\): no such page|has no section NO SUCH SECTION|tests/t9999-none.sh`: no such file' <<<"$out" | paste -sd'|')"

# tools/man.sh refuses a hand-written part for a page that does not exist.
cp -r "$ROOT/doc/man" "$TMP/doc"
printf '.SH EXAMPLES\nx\n' >"$TMP/doc/gpuctl-frobnicate.1.in"
check_exit "a hand-written part for no command fails the build" 1 "$ROOT/tools/man.sh" "$GPUCTL" "$TMP/doc" "$TMP/out"
check_grep "... naming it" 'gpuctl-frobnicate.1.in .*no such command' "$TMP/stderr"
check_exit "gpuctl __man of no command: exit 2" 2 "$GPUCTL" __man frobnicate

# `gpuctl help CMD` and `man gpuctl-CMD` agree: the same synopsis, the same option lines.
# (Rendered by man as a user reads it: wide, no hyphenation, fonts dropped.)
render() { MANWIDTH=200 man -l "$1" 2>/dev/null | col -b | sed 's/\xe2\x80\x90//g'; }
if command -v man >/dev/null && command -v col >/dev/null; then
	bad=
	for p in $("$GPUCTL" __man --list); do
		[ "$p" = gpuctl.1 ] && continue
		cmd=${p%.*}; cmd=${cmd#gpuctl-}
		help=$("$GPUCTL" help "$cmd")
		page=$(render "$MAN/$p")
		syn=$(head -1 <<<"$help" | sed -e 's/^usage: //' -e 's/ *(alias: [a-z]*)//' -e 's/  */ /g')
		grep -qxF -- "$syn" <<<"$(sed -n '/^SYNOPSIS/,/^DESCRIPTION/p' <<<"$page" | sed -e 's/^ *//' -e 's/  */ /g')" ||
			bad+="$cmd: synopsis '$syn' not in its page; "
		# Each option line's tag as help prints it ("-n, --count N"), up to its text.
		while read -r tag; do
			grep -qF -- "$tag" <<<"$page" || bad+="$cmd: option '$tag' not in its page; "
		done < <(grep -E '^ {1,8}-' <<<"$help" | sed -E 's/^ +//' | grep -E '  ' | sed -E 's/ {2,}.*//')
	done
	check_eq "gpuctl help CMD and man gpuctl-CMD agree" "" "$bad"
else
	skip "gpuctl help CMD and man gpuctl-CMD agree" "no man or col here"
fi
