#!/usr/bin/env bash
# t2007-private.sh: leasing without a shared daemon: a private daemon of the user's own, started
# on demand, said so once per command with the fix; leases it left when it exited idle still seen
# and released; its directory must be the user's and private; an installed shared daemon that is
# down is waited for and reported, never bypassed.
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/daemon.sh"
plan 21
quiet_machine "$TMP/m2" 2
use_machine "$TMP/m2"
use_state
unset GPUCTL_STATE_DIR
export GPUCTL_SOCKET=$TMP/none/gpuctl.sock

out=$("$GPUCTL" run -q -n 1 -- sh -c 'echo $CUDA_VISIBLE_DEVICES' 2>"$TMP/err")
check_eq "no shared daemon: the lease still works" "0" "$out"
check_eq "and says so once" 1 "$(grep -c 'no gpuctl daemon at' "$TMP/err")"
check_grep "with the fix" 'systemctl enable --now gpuctl' "$TMP/err"
check_grep "private state in XDG_RUNTIME_DIR" "private state in $XDG_RUNTIME_DIR/gpuctl" "$TMP/err"
check_eq "the private directory is the user's alone" "700" "$(stat -c %a "$XDG_RUNTIME_DIR/gpuctl")"
mkfifo "$TMP/go"
"$GPUCTL" run -q -n 1 --name mine -- "$B/workload" --log "$TMP/log" --tag mine --until "$TMP/go" &
await_line '^start mine' "$TMP/log"
"$GPUCTL" leases --json >"$TMP/out" 2>"$TMP/err"
check_eq "leases shows the private lease" '[true,"mine"]' "$(jqv '[.private, .leases[0].name]')"
check_eq "reading says nothing about it" "" "$(cat "$TMP/err")"
echo go >"$TMP/go"
wait

# A private daemon exits when idle; an env lease it granted lives on in its holder and must still
# be seen and released: a reading command starts the daemon again, which recovers it.
plog=$XDG_RUNTIME_DIR/gpuctl/daemon.log
n=$(grep -c 'stopped; 1 lease held on' "$plog")
"$B/sleeper" &
holder=$!
"$GPUCTL" env -q -n 1 --name left --hold-pid $holder --format=json >"$TMP/out"
id=$(jq -r .GPUCTL_LEASE_ID "$TMP/out")
await_count 'stopped; 1 lease held on' "$plog" $((n + 1))
check_eq "the private daemon gone idle: its lease is still shown" "[\"$id\",\"left\"]" \
	"$("$GPUCTL" leases --json | jq -c '[.leases[] | .id, .name]')"
check_exit "and can be released" 0 "$GPUCTL" release --lease "$id"
check_grep "its holder has let go" "^released lease $id \(1 GPU\)$" "$TMP/stdout"
kill $holder
wait $holder

# The directory must be the user's and private: never one another user could have made.
mkdir -m 777 "$TMP/open"
GPUCTL_STATE_DIR=$TMP/open check_exit "a directory others can write is refused" 1 "$GPUCTL" run -q -- true
check_grep "saying why" 'is not a private directory of yours' "$TMP/stderr"
ln -s "$XDG_RUNTIME_DIR/gpuctl" "$TMP/link"
GPUCTL_STATE_DIR=$TMP/link check_exit "so is a symbolic link" 1 "$GPUCTL" run -q -- true
if can_switch; then
	mkdir -m 700 "$TMP/theirs" && chown nobody: "$TMP/theirs"
	GPUCTL_STATE_DIR=$TMP/theirs check_exit "and another user's directory" 1 "$GPUCTL" run -q -- true
else
	skip "and another user's directory" "needs root to make one"
fi

# No XDG_RUNTIME_DIR: /tmp/gpuctl-UID, which another user may make first (here root, for
# nobody), and which then made every private lease fail (the user cannot remove it from a
# sticky /tmp). Then ~/.gpuctl-private is used, and kept while it is there.
sq=/tmp/gpuctl-65534
if can_switch && [ ! -e "$sq" ]; then
	mkdir -m 700 "$sq"
	mkdir -m 700 "$TMP/nbhome" && chown nobody: "$TMP/nbhome"
	chmod 755 "$TMP"
	chmod 644 "$TMP/m2"
	nb() {
		setpriv --reuid=65534 --regid=65534 --clear-groups env -u XDG_RUNTIME_DIR -u GPUCTL_STATE_DIR \
			-u XDG_CONFIG_HOME -u XDG_STATE_HOME HOME="$TMP/nbhome" GPUCTL_SOCKET="$TMP/nbhome/none.sock" "$@"
	}
	check_exit "/tmp/gpuctl-UID made by another user: private leases still work" 0 nb "$GPUCTL" run -q -n 1 -- true
	check_grep "  with their state in ~/.gpuctl-private" "private state in $TMP/nbhome/.gpuctl-private" "$TMP/stderr"
	rmdir "$sq"
	check_exit "  kept once it is there, the squatter gone" 0 nb "$GPUCTL" leases --json
	check_eq "  (the same private daemon: its leases listed as private)" true "$(jq .private "$TMP/stdout")"
	check "  /tmp/gpuctl-UID was not made" test ! -e "$sq"
else
	skip "/tmp/gpuctl-UID made by another user" "needs root, and $sq not there" 5
fi

# A shared daemon installed but down (its socket is there): waited for, then exit 13.
mkdir "$TMP/down"
python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET); s.bind(sys.argv[1])' "$TMP/down/gpuctl.sock"
GPUCTL_SOCKET=$TMP/down/gpuctl.sock GPUCTL_DAEMON_TIMEOUT=0.5 check_exit "a shared daemon that is down: exit 13, no private fallback" 13 "$GPUCTL" run -q -- true
check_grep "it says what to do" 'it is not running .*systemctl start gpuctl' "$TMP/stderr"
