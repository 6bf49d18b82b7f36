#!/usr/bin/env bash
# tools/check-doc-links.sh ROOT MANDIR [FILE...]: the references between the documents hold
# (tests/t0013-man.sh runs it, and on a doctored copy, to see it fail). In README.md, doc/*.md,
# tests/README.md and the hand-written man parts (doc/man/*.in, gpuctl.conf.5), or in the FILEs:
#  - a Markdown link to a relative path names a file or folder of ROOT;
#  - a page named as gpuctl-NAME(N), gpuctl(1) or gpuctl.conf(5), or `man [N] gpuctl-NAME`, is a
#    page in MANDIR (what `make man` wrote);
#  - "gpuctl-NAME(N), SECTION" or "gpuctl-NAME(N): SECTION" (SECTION in capitals, as the pages
#    title theirs) is a section of that page;
#  - a path of the tree in backquotes (`tests/...`, `doc/...`, `contrib/...`, `src/...`, ...)
#    exists, unless it is a pattern (NNNN, *, {, <).
# Prints each broken reference as FILE: what; exits 1 when there is one.
set -u
root=$1 man=$2
shift 2
bad=0
fail() { echo "$*"; bad=1; }
if [ $# -eq 0 ]; then
	set -- "$root/README.md" "$root"/doc/*.md "$root/tests/README.md" "$root"/doc/man/*.in "$root/doc/man/gpuctl.conf.5"
fi
# roff to plain words, so that references read the same in Markdown and in man parts.
plain() { sed -e 's/\\f[BIRP]//g' -e 's/\\-/-/g' -e 's/\\e/\\/g' -e 's/\\&//g' -e 's/\\(ga/`/g' "$1"; }
for f in "$@"; do
	name=${f#"$root"/}
	dir=$(dirname "$f")
	text=$(plain "$f")
	# roff's ".BR gpuctl-daemon (8)" is the page gpuctl-daemon(8), too.
	text+=$'\n'$(sed -nE 's/^\.BR (gpuctl[a-z.-]*) \(([1-8])\).*/\1(\2)/p' <<<"$text")
	while read -r link; do
		[ -n "$link" ] || continue
		target=${link%%#*}
		case $target in http://* | https://* | mailto:* | "") continue ;; esac
		[ -e "$dir/$target" ] || fail "$name: link to $target: no such file"
	done < <(grep -oE '\]\([^)]+\)' <<<"$text" | sed -E 's/^\]\((.*)\)$/\1/')
	while read -r ref; do
		[ -n "$ref" ] || continue
		page=${ref%%(*}
		sec=${ref#*(}
		sec=${sec%%)*}
		[ -f "$man/$page.$sec" ] || fail "$name: $ref: no such page in $man"
	done < <(grep -oE 'gpuctl(-[a-z]+|\.conf)?\([1-8]\)' <<<"$text" | sort -u)
	while read -r ref; do
		[ -n "$ref" ] || continue
		page=${ref##* }
		n=$(ls "$man/$page".[1-8] 2>/dev/null | head -1)
		[ -n "$n" ] || fail "$name: 'man $ref': no such page in $man"
	done < <(grep -oE 'man( [1-8])? gpuctl(-[a-z]+|\.conf)?\b' <<<"$text" | sed -E 's/^man( [1-8])? //' | sort -u)
	while IFS=$'\t' read -r page title; do
		[ -f "$man/$page" ] || continue
		grep -qxF -- ".SH $title" "$man/$page" || fail "$name: ${page%.*}(${page##*.}) has no section $title"
	done < <(grep -oE 'gpuctl(-[a-z]+)?\([1-8]\)[,:] [A-Z][A-Z:, -]*[A-Z]\b' <<<"$text" |
		 sed -E 's/^(gpuctl(-[a-z]+)?)\(([1-8])\)[,:] (.*)$/\1.\3\t\4/' | sort -u)
	while read -r path; do
		[ -n "$path" ] || continue
		case $path in *NNNN* | *'*'* | *'{'* | *'<'* | *N.job | *ID.* | *HOST*) continue ;; esac
		[ -e "$root/${path%/}" ] || fail "$name: \`$path\`: no such file in the tree"
	done < <(grep -oE '`(tests|tools|contrib|src|bench|doc|debian|python)/[^` ]+`' <<<"$text" | tr -d '`' | sort -u)
done
exit $bad
