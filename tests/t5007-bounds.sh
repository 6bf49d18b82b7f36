#!/usr/bin/env bash
# t5007-bounds.sh: what gpuctl takes from others is bounded, and its units are valid.
# status --prometheus against a hostile server: an answer larger than what the query can
# legitimately get back (promapi.h: 8 MiB for the targets; 1 MiB and 512 KiB per target for a
# query) is refused with exit 14 and the bound named, reading stops there (bounded memory). The
# cluster view takes an exporter's gpuctl_daemon_up 0 as leases unknown, never free. The
# systemd units in contrib/ pass systemd-analyze verify, and the exporter's has the video group
# the daemon's has (NVML opens /dev/nvidia*, group video where the driver restricts them).
. "$(dirname "$0")/lib/lib.sh"
plan 12

# hostile MODE SIZE: the stand-in's URL in $URL, its pid in $HOSTILE.
hostile() {
	rm -f "$TMP/hostile.port"
	python3 "$ROOT/tests/helper/prom_hostile.py" "$1" "$2" "$TMP/hostile.port" & HOSTILE=$!
	await_line '^[0-9]+$' "$TMP/hostile.port"
	URL=http://127.0.0.1:$(cat "$TMP/hostile.port")
}

# One target, so a query may answer 1.5 MiB; the server offers 24 MiB, never wholly sent to a
# client that keeps to its bound (before the bound, gpuctl read and parsed it all).
hostile big-query $((24 << 20))
if [ -x /usr/bin/time ]; then T="/usr/bin/time -v -o $TMP/time"; else T=""; fi
check_exit "a query answer past its bound: exit 14" 14 $T "$GPUCTL" status --prometheus="$URL"
check_grep "... naming the bound" "larger than the 1\.5 MiB allowed for it \(1 MiB and 0\.5 MiB per scrape target" "$TMP/stderr"
if [ -n "$T" ] && rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$TMP/time") && [ -n "$rss" ]; then
	# About 12 MiB here (libcurl, json-c, a 1.5 MiB answer); the 24 MiB answer read and parsed whole was 470.
	check "memory stays bounded (max RSS ${rss} KiB < 64 MiB)" test "$rss" -lt 65536
else
	skip "memory stays bounded" "no /usr/bin/time -v (Debian: apt-get install time)"
fi
kill $HOSTILE; wait $HOSTILE 2>/dev/null

# The targets' answer announces 9 MiB, past its 8: refused before it is read.
hostile big-targets $((9 << 20))
check_exit "a targets answer past its bound: exit 14" 14 "$GPUCTL" status --prometheus="$URL" --json
check_grep "... naming the bound" "larger than the 8\.0 MiB allowed for it \(the list of scrape targets\)" "$TMP/stderr"
kill $HOSTILE; wait $HOSTILE 2>/dev/null

# An exporter that could not ask its daemon (gpuctl_daemon_up 0) leaves its lease series out:
# the cluster view shows its GPUs' leases as unknown and never free; with the daemon up, free.
hostile cluster-daemon-down 0
check_exit "daemon down on the host: its idle GPU is not free (exit 10)" 10 "$GPUCTL" status --prometheus="$URL" --free
"$GPUCTL" status --prometheus="$URL" --color=never >"$TMP/table" 2>&1
check_grep "... its lease shown as unknown" "lease: unknown \(the host's exporter could not ask its gpuctl daemon\)" "$TMP/table"
"$GPUCTL" status --prometheus="$URL" --json >"$TMP/out" 2>&1
check_eq "... and the host's daemon_up false in the JSON" false "$(jqv '.hosts[0].daemon_up')"
kill $HOSTILE; wait $HOSTILE 2>/dev/null
hostile cluster-daemon-up 0
check_exit "daemon up, nothing leased: the GPU is free" 0 "$GPUCTL" status --prometheus="$URL" --free
kill $HOSTILE; wait $HOSTILE 2>/dev/null

# The systemd units. systemd-analyze verify exits 0 even on an unknown key or a bad value (it
# logs "FILE:LINE: ..." and ignores the line), so its output is read: a line naming one of the
# units (its file, or "UNIT.service:") fails the check; anything else is the environment's
# (a unit of the host's own that does not parse, no systemd running in a container) and is shown
# but tolerated. The units' @BINDIR@ is the build's directory, so ExecStart names a real program.
check_grep "the exporter's unit has the video group (as the daemon's)" '^SupplementaryGroups=.*\bvideo\b' "$ROOT/contrib/gpuctl-exporter.service"
if command -v systemd-analyze >/dev/null; then
	mkdir -p "$TMP/units"
	for u in gpuctl gpuctl-exporter; do
		sed "s|@BINDIR@|$B|g" "$ROOT/contrib/$u.service" >"$TMP/units/$u.service"
	done
	# verify UNIT...: the lines about these units (none: valid), the others as comments.
	verify() {
		local out names
		out=$(systemd-analyze verify "$@" 2>&1)
		names=$(for f in "$@"; do printf '%s\n' "$f" "${f##*/}"; done)
		grep -F -- "$names" <<<"$out" | grep -E -- "$(sed 's/[.[\*^$]/\\&/g; s/$/:/' <<<"$names" | paste -sd'|')"
		grep -vF -- "$names" <<<"$out" | sed -n 's/./# tolerated: &/p' >&2
		return 0
	}
	check_eq "systemd-analyze verify: gpuctl.service and gpuctl-exporter.service" "" \
		"$(verify "$TMP/units/gpuctl.service" "$TMP/units/gpuctl-exporter.service")"
	# The check sees what it must: a unit with an unknown key and a bad value is caught.
	sed -e 's/^Restart=on-failure/Restart=sometimes/' -e '/^\[Service\]/a NoSuchKey=1' \
		"$TMP/units/gpuctl-exporter.service" >"$TMP/units/broken.service"
	check_eq "... and it catches an unknown key and a bad value" 2 \
		"$(verify "$TMP/units/broken.service" | wc -l)"
else
	skip "systemd-analyze verify" "systemd-analyze is not installed (Debian: apt-get install systemd)" 2
fi
