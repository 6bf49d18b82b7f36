#!/usr/bin/env bash
# t0015-install.sh: `make install` and `make uninstall` with PREFIX and DESTDIR (issue 29):
# install puts the binary, a manual page per command (gpuctl __man --list) and gpuctl.conf(5),
# the bash, zsh and fish completions, both systemd units (naming the installed binary), the
# sysusers and tmpfiles entries, the example configuration and the Grafana dashboard, and the
# Python module in Debian's python3 dist-packages; man finds the pages; the example sets every
# key the parsers know, and gpuctl reads it without a warning; uninstall leaves only the
# directories that were there before.
. "$(dirname "$0")/lib/lib.sh"
plan 12
if ! command -v make >/dev/null; then
	skip "make install" "no make here" 12
	exit 0
fi
PY=$(command -v /usr/bin/python3 python3 | head -1)
root=$TMP/root
mkdir -p "$root/usr/local"
before=$(cd "$root" && find . | sort)
# -o all: the build is the suite's (never remade under the other scripts), as it is.
mk() { make -s -o all -C "$ROOT" B="$B" PYTHON="$PY" "$@"; }
check "make install DESTDIR PREFIX=/usr/local" mk install DESTDIR="$root" PREFIX=/usr/local
P=$root/usr/local
pydir=$("$PY" "$ROOT/python/install-dir.py" /usr/local 2>/dev/null)
{
	echo bin/gpuctl
	for p in $("$GPUCTL" __man --list) gpuctl.conf.5; do echo "share/man/man${p##*.}/$p"; done
	echo share/bash-completion/completions/gpuctl
	echo share/zsh/vendor-completions/_gpuctl
	echo share/fish/vendor_completions.d/gpuctl.fish
	echo lib/systemd/system/gpuctl.service
	echo lib/systemd/system/gpuctl-exporter.service
	echo lib/sysusers.d/gpuctl.conf
	echo lib/tmpfiles.d/gpuctl.conf
	echo share/doc/gpuctl/gpuctl.conf.example
	echo share/doc/gpuctl/grafana-gpuctl.json
	for f in "$ROOT"/python/gpuctl/*.py; do echo "${pydir#/usr/local/}/gpuctl/${f##*/}"; done
} | sort >"$TMP/want"
(cd "$P" && find . -type f | sed 's|^\./||' | sort) >"$TMP/got"
check_eq "the installed files, each where Debian looks" "$(cat "$TMP/want")" "$(cat "$TMP/got")"
check_grep "the Python module in Debian's dist-packages" 'dist-packages/gpuctl/__init__.py$' "$TMP/got"
check_grep "the daemon's unit runs the installed binary" '^ExecStart=/usr/local/bin/gpuctl daemon$' "$P/lib/systemd/system/gpuctl.service"
if command -v man >/dev/null; then
	check_eq "man -w finds gpuctl-run(1) there" "$P/share/man/man1/gpuctl-run.1" \
		"$(MANPATH=$P/share/man man -w gpuctl-run 2>&1)"
else
	skip "man -w finds gpuctl-run(1) there" "no man here (man-db)"
fi
cmp -s "$P/bin/gpuctl" "$GPUCTL" && ok "the binary is the build's" || not_ok "the binary is the build's"

# The example: every key the parsers accept is in it, and set as it shows them gpuctl reads it
# without a warning.
keys=$(grep -ohE 'strcmp\(k, "[a-z0-9_]+"\)' "$ROOT"/src/config/*.c | sed -E 's/.*"(.*)".*/\1/' | grep -vx state_dir | sort -u)
missing=
for k in $keys; do grep -qE "^; $k =( |$)" "$P/share/doc/gpuctl/gpuctl.conf.example" || missing+=" $k"; done
check_eq "the example has every key" "" "$missing"
sed -E -e 's/^; ([A-Za-z_.]+ = )/\1/' -e 's/^; (\[profile big\])/\1/' "$P/share/doc/gpuctl/gpuctl.conf.example" >"$TMP/all.conf"
GPUCTL_CONFIG_NOSYSTEM= GPUCTL_SYSTEM_CONFIG=$TMP/all.conf "$GPUCTL" config >"$TMP/config.out" 2>"$TMP/config.err"
check_eq "every key of the example, set, is read without a warning" "0:" "$?:$(cat "$TMP/config.err")"

check "make uninstall DESTDIR PREFIX=/usr/local" mk uninstall DESTDIR="$root" PREFIX=/usr/local
check_eq "uninstall leaves only the directories that were there" "$before" "$(cd "$root" && find . | sort)"

# PREFIX=/usr: Debian's own python3 path (deb_system), as the package has it.
root2=$TMP/root2
check "make install PREFIX=/usr" mk install DESTDIR="$root2" PREFIX=/usr
if "$PY" -c 'import sysconfig, sys; sys.exit("deb_system" not in sysconfig.get_scheme_names())'; then
	check_eq "PREFIX=/usr: the module in /usr/lib/python3/dist-packages" yes \
		"$([ -f "$root2/usr/lib/python3/dist-packages/gpuctl/__init__.py" ] && echo yes)"
else
	skip "PREFIX=/usr: the module in /usr/lib/python3/dist-packages" "$PY is not Debian's"
fi
