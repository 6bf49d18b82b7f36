#!/usr/bin/env bash
# tools/check-layers.sh OBJDIR [SRCDIR]: the rank rule of src/gpuctl.h, checked against what the
# code really does, so that it cannot drift (`make check-layers`, run by `make test`).
#
# The ranks are read from SRCDIR/gpuctl.h (the block after "Ranks"), so the map and the check are
# one text; a folder's design comment that restates its rank ("base/: rank 0") must agree. Two
# graphs are read:
#   - the link graph: for the object under OBJDIR of every source under SRCDIR, the symbols it
#     needs (nm's U, and w/v: a weak reference is a need too) that another object defines; an
#     arrow from the needing object to the defining one. A symbol defined in two objects fails
#     (a weak definition below and a strong one above would hide an arrow);
#   - the include graph: every #include of every file under SRCDIR that names a file under it
#     (however spelt: "", <>, spaces, ..); a computed #include fails, as does a lookup of a
#     symbol at run time (RTLD_DEFAULT, RTLD_NEXT): neither graph could see its arrow.
# An arrow between two folders must run to a lower rank: an arrow to the same rank (siblings) or a
# higher one fails, as does an arrow into a program's folder ("Programs:") from anywhere but cmd/.
# A circle fails: of objects, and of includes; since ranks order the folders, such a circle lies
# inside one. (A header's include one way and a call the other are not counted as a circle: a
# folder's design header, daemon.h or runner.h, declares the functions of all its files, as
# tmux.h does, and every file includes it.) A folder is the first path component under src/
# (machine/nvml/ is machine's); main.c and gpuctl.h, at the top, are "main". Prints each broken
# rule on stderr and exits 1, or says what it read and exits 0.
set -u
objdir=${1:?usage: check-layers.sh OBJDIR [SRCDIR]}
srcdir=${2:-src}
map=$srcdir/gpuctl.h
[ -d "$objdir" ] || { echo "check-layers: no $objdir: build first (make)" >&2; exit 2; }
[ -r "$map" ] || { echo "check-layers: no $map to read the ranks from" >&2; exit 2; }

# "base 0" ... from the lines " *   N folder folder" after " * Ranks"; "Programs: a b".
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
files=$(cd "$srcdir" && find . -type f | sed 's|^\./||' | sort)

fail=0
report() { echo "check-layers: $*" >&2; fail=1; }

# One line per arrow, "FROM TO WHAT" (objects, then the symbol); "dup SYMBOL A B" for a symbol
# two objects define.
nmout=$(cd "$objdir" && nm -A -P $objs 2>/dev/null | awk '
	{ f = $1; sub(/:$/, "", f); s = $2; t = $3 }
	t == "U" || t == "w" || t == "v" { need[f, s] = 1; next }
	t ~ /^[TDBRVWCGS]$/ {
		if ((s in def) && def[s] != f) print "dup", s, def[s], f
		else def[s] = f
	}
	END { for (k in need) { split(k, p, SUBSEP); if ((p[2] in def) && def[p[2]] != p[1])
		print "link", p[1], def[p[2]], p[2] } }' | sort)
links=$(sed -n 's/^link //p' <<<"$nmout")
while read -r _ s a b; do
	[ -n "$s" ] && report "$s is defined in both $a and $b"
done < <(grep '^dup ' <<<"$nmout")

# "FILE HEADER" per include of a file under SRCDIR, the path made plain (a/../b is b).
# One grep and one awk over all the files (a process per file cost seconds on a loaded machine).
includes=$(cd "$srcdir" && grep -HnE '^[[:space:]]*#[[:space:]]*include' $files 2>/dev/null | awk '
	function plain(p,   n, i, k, part, out) {
		n = split(p, part, "/"); k = 0
		for (i = 1; i <= n; i++) {
			if (part[i] == "" || part[i] == ".") continue
			if (part[i] == "..") { if (k > 0) k--; continue }
			out[++k] = part[i]
		}
		p = ""; for (i = 1; i <= k; i++) p = p (i > 1 ? "/" : "") out[i]
		return p
	}
	{
		split($0, h, ":"); file = h[1]; line = h[2]
		rest = substr($0, length(file) + length(line) + 3)
		if (match(rest, /include[[:space:]]*["<][^">]+[">]/)) {
			inc = substr(rest, RSTART, RLENGTH); sub(/^include[[:space:]]*["<]/, "", inc)
			sub(/[">]$/, "", inc); inc = plain(inc)
			if ((getline junk < inc) >= 0) { close(inc); print file, inc }
		} else {
			print "computed", file ":" line
		}
	}')
while read -r _ where; do
	[ -n "$where" ] && report "$where: an #include of a macro: the include graph cannot see it"
done < <(grep '^computed ' <<<"$includes")
includes=$(grep -v '^computed ' <<<"$includes")
while IFS= read -r hit; do
	[ -n "$hit" ] && report "$hit: a symbol looked up at run time by name: the link graph cannot see it"
done < <(cd "$srcdir" && grep -HnE 'RTLD_(DEFAULT|NEXT)' $files 2>/dev/null)

# The rule, once, for both graphs: FROM's folder may use TO's only downwards; and each design
# comment's rank, as gpuctl.h has it.
verdicts=$( { echo "$ranks" | sed 's/^/rank /'; echo "programs $programs"
	echo "$links" | sed 's/^/link /'; echo "$includes" | sed 's/^/inc /'
	cd "$srcdir" && awk 'FNR <= 3 && match($0, /^\/\* [a-z]+\/:? \(?rank [0-9]+/) {
		s = substr($0, 4, RLENGTH - 3); f = s; sub(/\/.*/, "", f)
		r = s; sub(/.*rank /, "", r); print "said", FILENAME, f, r }' $files; } | awk '
	function folder(p) { return (p ~ /\//) ? substr(p, 1, index(p, "/") - 1) : "main" }
	$1 == "rank" { rank[$2] = $3; next }
	$1 == "programs" { for (i = 2; i <= NF; i++) prog[$i] = 1; next }
	$1 == "said" {
		if (!($3 in rank)) print $2 ": says " $3 "/ has rank " $4 "; gpuctl.h ranks no " $3
		else if (rank[$3] != $4) print $2 ": says " $3 "/ has rank " $4 "; gpuctl.h says " rank[$3]
		next
	}
	{
		a = folder($2); b = folder($3)
		if (a == b) next
		how = ($1 == "link") ? "uses " $4 " of" : "includes"
		if (!(a in rank) && a != "main") { print $2 ": folder " a " has no rank in gpuctl.h"; next }
		if (!(b in rank) && b != "main") { print $3 ": folder " b " has no rank in gpuctl.h"; next }
		ra = (a == "main") ? 1e9 : rank[a]; rb = (b == "main") ? 1e9 : rank[b]
		if (rb > ra) print $2 " " how " " $3 ": an upward arrow (" a ", rank " ra ", above " b ")"
		else if (rb == ra) print $2 " " how " " $3 ": siblings of rank " ra " (" a ", " b ") never use each other"
		else if ((b in prog) && a != "cmd")
			print $2 " " how " " $3 ": " b "/ is a program, entered from cmd/ only"
	}' | sort -u)
[ -n "$verdicts" ] && while IFS= read -r v; do report "$v"; done <<<"$verdicts"

# circles EDGES WHAT: tsort names each loop it breaks, one edge at a time; loops that share a
# node are one circle (union-find), printed once with its nodes sorted.
circles() {
	local l
	while IFS= read -r l; do
		[ -n "$l" ] && report "a circle of $2: ${l% }"
	done < <(awk '$1 != $2' <<<"$1" | sort -u | tsort 2>&1 >/dev/null | awk '
		function find(x) { while (up[x] != x) x = up[x]; return x }
		/input contains a loop/ { prev = ""; next }
		{ sub(/^tsort: /, ""); if (!($0 in up)) up[$0] = $0
		  if (prev != "") up[find($0)] = find(prev); prev = $0 }
		END { for (x in up) set[find(x)] = set[find(x)] " " x
		      for (r in set) print set[r] }' |
		while read -r l; do tr ' ' '\n' <<<"$l" | sort | tr '\n' ' '; echo; done | sort)
}
circles "$(awk '{ print $1, $2 }' <<<"$links")" objects
circles "$includes" "includes"

[ "$fail" -eq 0 ] && echo "check-layers: $(wc -w <<<"$objs") objects, $(grep -c . <<<"$links") links, $(grep -c . <<<"$includes") includes: every arrow runs down, no circle"
exit "$fail"
