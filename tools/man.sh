#!/bin/sh
# tools/man.sh BINARY DOCDIR OUTDIR: the manual pages, for `make man`. The binary writes each
# page from its own command table (`gpuctl __man`, src/cmd/man.c), pasting in the hand-written
# part doc/man/PAGE.in when there is one; gpuctl.conf.5 is hand-written whole. The pages are the
# binary's list (`gpuctl __man --list`), so a command added to the table gets its page at the
# next build; a doc/man/PAGE.in for no such page is an error (a command renamed or removed).
# The date on the pages: $GPUCTL_MAN_DATE, else SOURCE_DATE_EPOCH's (reproducible builds:
# dpkg-buildpackage sets it), else the last commit's, else today.
set -eu
bin=$1 doc=$2 out=$3
if [ -z "${GPUCTL_MAN_DATE:-}" ]; then
	epoch=${SOURCE_DATE_EPOCH:-$(git -C "$doc" log -1 --format=%ct 2>/dev/null || date +%s)}
	GPUCTL_MAN_DATE=$(date -u -d "@$epoch" +%Y-%m-%d)
fi
version=$("$bin" --version | sed 's/^gpuctl //')
tmp=$out.tmp
rm -rf "$tmp"
mkdir -p "$tmp"
for page in $("$bin" __man --list); do
	name=${page%.*}
	frag=
	[ -f "$doc/$page.in" ] && frag=$doc/$page.in
	"$bin" __man --date "$GPUCTL_MAN_DATE" "${name#gpuctl-}" $frag >"$tmp/$page"
done
sed -e "s/@DATE@/$GPUCTL_MAN_DATE/" -e "s/@VERSION@/$version/" "$doc/gpuctl.conf.5" >"$tmp/gpuctl.conf.5"
for f in "$doc"/*.in; do
	[ -e "$f" ] || continue
	p=$(basename "$f" .in)
	if [ ! -f "$tmp/$p" ]; then
		echo "tools/man.sh: $f is a part of $p, which is no page: no such command (gpuctl __man --list)" >&2
		rm -rf "$tmp"
		exit 1
	fi
done
rm -rf "$out"
mv "$tmp" "$out"
