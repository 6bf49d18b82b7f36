#!/bin/sh
# tools/rmdirs.sh TOP DIR...: for `make uninstall`: each DIR, and each of its parents below TOP,
# removed while it is empty. TOP itself (DESTDIR/PREFIX) and anything not empty are left alone.
set -eu
top=${1%/}
shift
for d in "$@"; do
	d=${d%/}
	while [ "$d" != "$top" ] && [ "${d#"$top"/}" != "$d" ] && [ -d "$d" ]; do
		rmdir "$d" 2>/dev/null || break
		d=${d%/*}
	done
done
