#!/usr/bin/env python3
"""list_flood.py MODE SOCKET [ARGS]: a hostile user's `list` and `jobid` attacks on gpuctl's
daemon, speaking its socket directly (SOCK_SEQPACKET), for tests/t2011-list-bounds.sh and
tests/t2012-jobid-bounds.sh. Prints ok/not ok lines and "KEY value" lines the script reads.

  big N           N waiters that can never be served (min_free 1 PiB), each with a name and a
                  command of the daemon's maximum length, every byte one that travels escaped
                  (a ~13 KB record each); prints "queued N", then holds them until stdin closes
  flood W C K [small|B]  W such waiters on one connection (small: all with short names and
                  commands; B: all but the last B), then C connections that each ask `list` K
                  times and never read; prints "flooding", holds them until stdin closes, then
                  reads each connection's K replies, quits and prints what the daemon answered
  tries N         N requests that do not wait, each refused at once (min_free 1 PiB); prints
                  "answered N"
  jobid MIN [N]   N `jobid` asks (count 100000) with min MIN; prints "first F" of the last answer
"""
import socket, sys, time

mode, path = sys.argv[1], sys.argv[2]
NAME = ("\x1b]0;pwned\x07" + "% \n\t" * 64)[:256]   # every byte but "]0;pwned" escaped
CMD = ("% \n\t" * 1100)[:4096]
# flood W C K small | B: short names and commands (all, or all but the last B): the queue file,
# rewritten with each waiter, stays small while they are queued (maximal ones took ~17 s for 300)
SMALL = 0
if len(sys.argv) > 6:
    SMALL = int(sys.argv[3]) - int(sys.argv[6]) if sys.argv[6].isdigit() else 1 << 30


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
        name, cmd = ("w", "sleep 1") if i < SMALL else (NAME, CMD)
        s.send(b"acquire\nid %d\ncount 1\nwait 1\nmin_free 1073741824\nkind run\nname " % (i + 1)
               + enc(name) + b"\ncommand " + enc(cmd))
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
        sent = 0
        for i in range(k):
            try:
                t.send(b"list\nid %d" % (i + 1))
                sent += 1
            except BlockingIOError:
                break
        socks.append((t, sent))
    print("flooding")
    sys.stdout.flush()
    hold()
    # What the daemon answered the flood, read only now: lists, and refusals of more. Each ask
    # gets one reply (a list's last part ends "end"); a connection the daemon dropped ends early.
    lists = refused = 0
    why = {}
    for t, sent in socks:
        t.setblocking(True)
        t.settimeout(10)
        got = 0
        try:
            while got < sent:
                m = t.recv(70000)
                if not m:
                    break
                end = m.startswith(b"list") and b"\nend" in m
                err = m.startswith(b"error")
                lists += end
                refused += err
                got += end or err
                if err:  # which bound refused it
                    w = ("unread" if b"previous%20answer" in m else "user-unread" if
                         b"KiB%20of%20answers" in m else "rate" if b"lists%20a%20second" in m
                         else m.split(b"\n")[-1].decode(errors="replace")[:40])
                    why[w] = why.get(w, 0) + 1
        except (socket.timeout, OSError):
            pass
        t.close()
    print("refused by " + " ".join("%s %d" % kv for kv in sorted(why.items())))
    s.close()
    print("answered %d refused %d" % (lists, refused))
elif mode == "tries":
    s = conn()
    answered = 0
    for i in range(int(sys.argv[3])):
        s.send(b"acquire\nid %d\ncount 1\nmin_free 1073741824\nkind run" % (i + 1))
        answered += bool(recv_one(s))
    print("answered %d" % answered)
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
