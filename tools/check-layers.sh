#!/usr/bin/env bash
# tools/check-layers.sh OBJDIR [SRCDIR]: the rank rule of src/gpuctl.h, checked against what the
# code really does, so that it cannot drift (`make check-layers`, run by `make test`).
#
# The ranks are read from SRCDIR/gpuctl.h (the block after "Ranks"), so the map and the check are
# one text. Two graphs are read:
#   - the link graph: for the object under OBJDIR of every source under SRCDIR, the symbols it needs (nm's U) that another
#     object defines; an arrow from the needing object to the defining one;
#   - the include graph: every #include "FOLDER/file.h" of every file under SRCDIR.
# An arrow between two folders must run to a lower rank: an arrow to the same rank (siblings) or a
# higher one fails, as does an arrow into a program's folder ("Programs:") from outside cmd/ and
# main.c. A circle of objects (tsort's loops, inside one folder since ranks order the folders)
# fails too. A folder is the first path component under src/ (machine/nvml/ is machine's);
# main.c and gpuctl.h, at the top, are "main". Prints each broken rule and exits 1, or exits 0.
set -u
objdir=${1:?usage: check-layers.sh OBJDIR [SRCDIR]}
srcdir=${2:-src}
map=$srcdir/gpuctl.h
[ -d "$objdir" ] || { echo "check-layers: no $objdir: build first (make)" >&2; exit 2; }
[ -r "$map" ] || { echo "check-layers: no $map to read the ranks from" >&2; exit 2; }

# "0 base" ... from the lines " *   N folder folder" after " * Ranks"; "Programs: a b".
ranks=$(awk '/^ \* Ranks/ { on = 1; next }
	on && /^ \*   [0-9]+ [a-z]/ { r = $2; for (i = 3; i <= NF; i++) print $i, r; next }
	on { exit }' "$map")
programs=$(sed -n 's/^ \* Programs: *//p' "$map")
[ -n "$ranks" ] || { echo "check-layers: $map has no Ranks block" >&2; exit 2; }

# The objects of today's sources only: one left behind by a renamed file is not the code.
objs=$(cd "$srcdir" && find . -name '*.c' | sed 's|^\./||; s|\.c$|.o|' | sort)
for o in $objs; do
	[ -e "$objdir/$o" ] || { echo "check-layers: no $objdir/$o: build first (make)" >&2; exit 2; }
done

# One line per arrow, "FROM TO WHAT" (objects or files, then the symbol or header).
links=$(cd "$objdir" && nm -A -P $objs 2>/dev/null | awk '
	{ f = $1; sub(/:$/, "", f); s = $2; t = $3 }
	t == "U" { need[f, s] = 1; next }
	t ~ /^[TDBRVWCG]$/ && !(s in def) { def[s] = f }
	END { for (k in need) { split(k, p, SUBSEP); if ((p[2] in def) && def[p[2]] != p[1])
		print p[1], def[p[2]], p[2] } }' | sort)
includes=$(cd "$srcdir" && grep -HoE '^#include "[^"]+"' $(find . -name '*.[ch]' | sed 's|^\./||' | sort) |
	sed -E 's/:#include "(.*)"$/ \1/')

fail=0
report() { echo "check-layers: $*" >&2; fail=1; }

# The rule, once, for both graphs: FROM's folder may use TO's only downwards.
verdicts=$( { echo "$ranks" | sed 's/^/rank /'; echo "programs $programs"
	echo "$links" | sed 's/^/link /'; echo "$includes" | sed 's/^/inc /'; } | awk '
	function folder(p) { return (p ~ /\//) ? substr(p, 1, index(p, "/") - 1) : "main" }
	$1 == "rank" { rank[$2] = $3; next }
	$1 == "programs" { for (i = 2; i <= NF; i++) prog[$i] = 1; next }
	{
		a = folder($2); b = folder($3)
		if (a == b) next
		how = ($1 == "link") ? "uses " $4 " of" : "includes"
		if (!(a in rank) && a != "main") { print $2 ": folder " a " has no rank in gpuctl.h"; next }
		if (!(b in rank) && b != "main") { print $3 ": folder " b " has no rank in gpuctl.h"; next }
		ra = (a == "main") ? 1e9 : rank[a]; rb = (b == "main") ? 1e9 : rank[b]
		if (rb > ra) print $2 " " how " " $3 ": an upward arrow (" a ", rank " ra ", above " b ")"
		else if (rb == ra) print $2 " " how " " $3 ": siblings of rank " ra " (" a ", " b ") never use each other"
		else if ((b in prog) && a != "cmd" && a != "main")
			print $2 " " how " " $3 ": " b "/ is a program, entered from cmd/ only"
	}')
[ -n "$verdicts" ] && while IFS= read -r v; do report "$v"; done <<<"$verdicts"

# Circles of objects: tsort names each loop it breaks, one edge at a time; loops that share an
# object are one circle (union-find), printed once with its objects sorted.
loops=$(echo "$links" | awk '{ print $1, $2 }' | sort -u | tsort 2>&1 >/dev/null | awk '
	function find(x) { while (up[x] != x) x = up[x]; return x }
	/input contains a loop/ { prev = ""; next }
	{ sub(/^tsort: /, ""); if (!($0 in up)) up[$0] = $0
	  if (prev != "") up[find($0)] = find(prev); prev = $0 }
	END { for (x in up) set[find(x)] = set[find(x)] " " x
	      for (r in set) print set[r] }' | while read -r l; do tr ' ' '\n' <<<"$l" | sort | tr '\n' ' '; echo; done | sort)
[ -n "$loops" ] && while IFS= read -r l; do report "a circle of objects: ${l% }"; done <<<"$loops"

[ "$fail" -eq 0 ] && echo "check-layers: $(echo "$objs" | wc -l) objects, $(echo "$links" | grep -c .) links, $(echo "$includes" | grep -c .) includes: every arrow runs down, no circle"
exit "$fail"
