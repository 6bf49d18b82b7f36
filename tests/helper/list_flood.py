#!/usr/bin/env python3
"""list_flood.py MODE SOCKET [ARGS]: a hostile user's `list` and `jobid` attacks on gpuctl's
daemon, speaking its socket directly (SOCK_SEQPACKET), for tests/t2011-list-bounds.sh and
tests/t2012-jobid-bounds.sh. Prints ok/not ok lines and "KEY value" lines the script reads.

  big N           N waiters that can never be served (min_free 1 PiB), each with a name and a
                  command of the daemon's maximum length, every byte one that travels escaped
                  (a ~13 KB record each); prints "queued N", then holds them until stdin closes
  flood W C K [small]  W such waiters (small: with short names and commands) on one connection, then C connections that each ask `list` K
                  times and never read; prints "flooding", holds them until stdin closes, then
                  quits (closing everything) and prints what the daemon answered it
  jobid MIN [N]   N `jobid` asks (count 100000) with min MIN; prints "first F" of the last answer
"""
import socket, sys, time

mode, path = sys.argv[1], sys.argv[2]
NAME = ("\x1b]0;pwned\x07" + "% \n\t" * 64)[:256]   # every byte but "]0;pwned" escaped
CMD = ("% \n\t" * 1100)[:4096]
if len(sys.argv) > 6 and sys.argv[6] == "small":   # flood W C K small: short names, many waiters
    NAME, CMD = "w", "sleep 1"


def conn():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(path)
    return s


def enc(t):
    return "".join("%%%02X" % ord(c) if ord(c) <= 0x20 or c == "%" or ord(c) == 0x7f else c
                   for c in t).encode()


def recv_one(s, timeout=60.0):
    s.settimeout(timeout)
    try:
        return s.recv(70000)
    except socket.timeout:
        return b""


def waiters(s, n):
    """n never-servable waiters on s; returns how many the daemon queued."""
    queued = 0
    for i in range(n):
        s.send(b"acquire\nid %d\ncount 1\nwait 1\nmin_free 1073741824\nkind run\nname " % (i + 1)
               + enc(NAME) + b"\ncommand " + enc(CMD))
        m = recv_one(s)
        queued += m.startswith(b"queued")
        if not m.startswith(b"queued"):
            print("# acquire %d: %r" % (i + 1, m[:200]))
            break
    return queued


def hold():
    sys.stdin.read()


if mode == "big":
    s = conn()
    print("queued %d" % waiters(s, int(sys.argv[3])))
    sys.stdout.flush()
    hold()
elif mode == "flood":
    w, c, k = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    s = conn()
    print("queued %d" % waiters(s, w))
    socks = []
    for _ in range(c):
        t = conn()
        t.setblocking(False)
        for i in range(k):
            try:
                t.send(b"list\nid %d" % (i + 1))
            except BlockingIOError:
                break
        socks.append(t)
    print("flooding")
    sys.stdout.flush()
    hold()
    # What the daemon answered the flood, read only now: lists, and refusals of more.
    lists = refused = 0
    for t in socks:
        t.setblocking(True)
        t.settimeout(0.2)
        try:
            while True:
                m = t.recv(70000)
                if not m:
                    break
                lists += m.startswith(b"list") and b"\nend" in m
                refused += m.startswith(b"error")
        except (socket.timeout, OSError):
            pass
        t.close()
    s.close()
    print("answered %d refused %d" % (lists, refused))
elif mode == "jobid":
    mn, n = int(sys.argv[3]), int(sys.argv[4]) if len(sys.argv) > 4 else 1
    s = conn()
    m = b""
    for i in range(n):
        s.send(b"jobid\nid %d\ncount 100000\nmin %d" % (i + 1, mn))
        m = recv_one(s)
    print("answer " + m.decode(errors="replace").replace("\n", " "))
    for line in m.split(b"\n"):
        if line.startswith(b"first ") or line.startswith(b"count "):
            print(line.decode())
