#!/usr/bin/env python3
"""hoard.py SOCKET SECONDS: a hostile client of gpuctl's daemon that asks for GPUs and never takes
them (tests/t2010-offers.sh): an `acquire` of one GPU, not waiting, every 50 ms for SECONDS,
never a `take`. Prints "offered" at its first offer, "holding 4" once 4 are open (none lapsed
yet; else "lapsed before holding 4"), "offer N" at each (the Nth), then, at the end, how many
offers, busy answers and errors it got, and the first error's text."""
import select, socket, sys, time, urllib.parse

path, seconds = sys.argv[1], float(sys.argv[2])


def connect():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(path)
    return s


s = connect()
counts = {"offer": 0, "busy": 0, "error": 0}
first_error = ""
end = time.monotonic() + seconds
ident = 0
next_ask = 0.0
while time.monotonic() < end:
    now = time.monotonic()
    if now >= next_ask:
        ident += 1
        try:
            s.send(b"acquire\nid %d\ncount 1\nignore_usage 1\nkind run" % ident)
        except OSError:
            s.close()
            s = connect()
        next_ask = now + 0.05
    if not select.select([s], [], [], max(0.0, next_ask - time.monotonic()))[0]:
        continue
    try:
        m = s.recv(70000)
    except OSError:
        m = b""
    if not m:
        s.close()
        s = connect()
        continue
    verb = m.split(b"\n", 1)[0].decode(errors="replace")
    if verb in counts:
        counts[verb] += 1
    if verb == "offer" and counts["offer"] == 1:
        print("offered", flush=True)
    if verb == "offer":
        print("offer %d" % counts["offer"], flush=True)
    if verb == "offer" and counts["offer"] == 4 and not counts["error"]:
        print("holding 4", flush=True)
    if verb == "error" and counts["error"] == 1 and counts["offer"] < 4:
        print("lapsed before holding 4", flush=True)
    if verb == "error" and not first_error:
        first_error = urllib.parse.unquote(m.decode(errors="replace")).replace("\n", " | ")
print("offers %d busy %d errors %d" % (counts["offer"], counts["busy"], counts["error"]))
print("first error: " + first_error, flush=True)
