#!/usr/bin/env bash
# tools/deb-check.sh: the Debian package, end to end, for CI (.ci/run), as root on a Debian 12
# machine that may be thrown away: builds it from a copy of this checkout (dpkg-buildpackage
# writes into the parent directory, so not beside the checkout), lints it (lintian: no error),
# installs it on this machine with apt, runs `gpuctl --version`, `man -w gpuctl-run` and a status
# on the stand-in NVML, checks the units are installed but not enabled, then purges it and checks
# that none of its files is left. Needs build/fakenvml (make test builds it).
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "deb-check: $*" >&2; exit 1; }
mkdir "$work/gpuctl"
if git rev-parse --git-dir >/dev/null 2>&1; then
	git ls-files -co --exclude-standard -z | tar --null -cf - -T - | tar -xf - -C "$work/gpuctl"
else
	tar --exclude=./build --exclude=./build-asan -cf - . | tar -xf - -C "$work/gpuctl"
fi
start=$SECONDS
(cd "$work/gpuctl" && DEB_BUILD_OPTIONS="parallel=$(nproc) nocheck" dpkg-buildpackage -us -uc -b) \
	>"$work/build.log" 2>&1 || { tail -60 "$work/build.log"; fail "dpkg-buildpackage failed"; }
echo "deb-check: built in $((SECONDS - start)) s"
deb=$(echo "$work"/gpuctl_*_*.deb)
[ -f "$deb" ] || fail "no gpuctl_*.deb in $work"
if command -v lintian >/dev/null; then
	lintian --fail-on error "$deb" || fail "lintian reports errors"
fi
files=$(dpkg-deb -c "$deb" | awk '$1 !~ /^d/ { print $6 }' | sed 's|^\./|/|')

apt-get install -y -qq "$deb" >"$work/install.log" 2>&1 || { cat "$work/install.log"; fail "apt-get install failed"; }
gpuctl --version | grep -qx 'gpuctl [0-9.]*' || fail "gpuctl --version: $(gpuctl --version 2>&1)"
if ! page=$(man -w gpuctl-run 2>&1); then
	# A Debian image made small (docker's) may keep dpkg from unpacking manual pages.
	grep -rqs 'path-exclude.*/usr/share/man' /etc/dpkg/dpkg.cfg.d/ ||
		fail "man -w gpuctl-run: $page"
	echo "deb-check: man -w skipped: dpkg here leaves /usr/share/man out (/etc/dpkg/dpkg.cfg.d)"
else
	echo "deb-check: man -w gpuctl-run: $page"
fi
GPUCTL_NVML_LIBRARY=$src/build/fakenvml/libnvidia-ml.so.1 FAKENVML_MACHINE=$src/tests/fake/machines/h100x8.machine \
	gpuctl status --query-gpu=index,name --format=csv,noheader | grep -q '^7, ' || fail "gpuctl status on the stand-in"
for u in gpuctl gpuctl-exporter; do
	[ -f /lib/systemd/system/$u.service ] || fail "$u.service is not installed"
	[ ! -e /etc/systemd/system/multi-user.target.wants/$u.service ] || fail "$u.service was enabled"
done
/usr/bin/python3 -c 'import gpuctl' || fail "the Python module does not import"
getent passwd gpuctl >/dev/null || fail "no system user gpuctl"
echo "deb-check: installed: gpuctl, the pages, the units (not enabled), the user, the Python module"

apt-get purge -y -qq gpuctl >"$work/purge.log" 2>&1 || { cat "$work/purge.log"; fail "apt-get purge failed"; }
left=
for f in $files /usr/lib/python3/dist-packages/gpuctl; do [ -e "$f" ] && left+=" $f"; done
[ -z "$left" ] || fail "left after purge:$left"
! dpkg -l gpuctl 2>/dev/null | grep -q '^[ri]' || fail "dpkg still lists gpuctl"
echo "deb-check: purged, nothing left (the system user stays, as Debian leaves them)"
