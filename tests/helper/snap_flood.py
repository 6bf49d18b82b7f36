#!/usr/bin/env python3
"""snap_flood.py MODE SOCKET [ARGS]: a hostile user's use of the daemon's shared snapshot
(`snapshot` requests, issue 22), speaking its socket directly (SOCK_SEQPACKET), for
tests/t2018-snapshot.sh. Prints "KEY value" lines the script reads.

  flood C         C connections asking for a fresh view (age 0) as fast as the daemon answers,
                  each reading its answers whole; prints "flooding" once each had one answer,
                  goes on until stdin closes, then prints "answers N", "busy N", "other N"
  halfread        asks once for a view and reads only its first part; prints "holding PARTS"
                  (1 when the answer was one part), holds the connection until stdin closes
  bad             malformed requests; prints each answer's verb and code: "bad-age error 2"
  frames W...     on one connection, a table frame (machine/snap.h) of the view there is (age
                  60 s) laid out W columns wide for each W; prints "W frame SEALED BYTES" (SEALED:
                  "sealed" where the memfd refuses writes and is the size said) or "W error CODE"
  unread K        one connection asks K times for a frame (80 columns) before it reads; then
                  prints "frames N refused M" (refused: "read the last one first")
"""
import array, os, socket, sys, threading, time

mode, path = sys.argv[1], sys.argv[2]


def conn():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(path)
    return s


def ask(s, i, age=0, want=1):
    s.send(b"snapshot\nid %d\nage %d\nwant %d" % (i, age, want))


def answer(s):
    """Reads one whole answer: 'ok', 'busy' or 'other'."""
    s.settimeout(60)
    while True:
        m = s.recv(70000)
        if not m:
            return "other"
        if m.startswith(b"error"):
            return "busy" if b"\ncode 10" in m else "other"
        if not m.startswith(b"snapshot"):
            return "other"
        if m.endswith(b"\nend"):
            return "ok"


if mode == "flood":
    n = int(sys.argv[3])
    counts = {"ok": 0, "busy": 0, "other": 0}
    lock = threading.Lock()
    stop = threading.Event()
    ready = threading.Barrier(n + 1)

    def run(k):
        s = conn()
        i = 0
        first = True
        while not stop.is_set():
            i += 1
            try:
                ask(s, i)
                r = answer(s)
            except OSError:
                r = "other"
                s.close()
                s = conn()
            with lock:
                counts[r] += 1
            if first:
                first = False
                ready.wait()

    ts = [threading.Thread(target=run, args=(k,), daemon=True) for k in range(n)]
    for t in ts:
        t.start()
    ready.wait()
    print("flooding", flush=True)
    sys.stdin.read()
    stop.set()
    for t in ts:
        t.join(70)
    print("answers %d" % counts["ok"])
    print("busy %d" % counts["busy"])
    print("other %d" % counts["other"], flush=True)
elif mode == "halfread":
    s = conn()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    ask(s, 1, want=1)
    s.settimeout(60)
    m = s.recv(70000)
    print("holding %d" % (1 if m.endswith(b"\nend") else 2), flush=True)
    sys.stdin.read()
elif mode == "bad":
    for name, req in (("bad-age", b"snapshot\nid 1\nage 99999999\nwant 1"),
                      ("bad-want", b"snapshot\nid 2\nage 0\nwant x"),
                      ("bad-frame", b"snapshot\nid 3\nage 0\nwant 1\nframe 1 80 0")):
        s = conn()
        s.send(req)
        s.settimeout(60)
        m = s.recv(70000).split(b"\n")
        code = [l.split(b" ")[1].decode() for l in m if l.startswith(b"code ")]
        print("%s %s %s" % (name, m[0].decode(), code[0] if code else "-"), flush=True)
        s.close()
elif mode == "frames":
    s = conn()
    s.settimeout(60)
    tm = time.localtime()
    token = b""
    for i, w in enumerate(sys.argv[3:]):
        s.send(b"snapshot\nid %d\nage 60000\nwant 1\nframe 1 %s 0 0 %d %s%s" %
               (i + 1, w.encode(), tm.tm_gmtoff + 86400, (tm.tm_zone or "-").encode(), token))
        fds = array.array("i")
        m, anc, _, _ = s.recvmsg(70000, socket.CMSG_SPACE(4 * fds.itemsize))
        for level, kind, data in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(data[:len(data) - len(data) % fds.itemsize])
        lines = m.split(b"\n")
        token = b"".join(b"\n" + l for l in lines if l.startswith(b"token ")) or token
        if lines[0] == b"frame" and len(fds) == 1:
            size = [int(l.split(b" ")[1]) for l in lines if l.startswith(b"bytes ")][0]
            try:
                os.write(fds[0], b"x")
                sealed = "writable"
            except OSError:
                sealed = "sealed" if os.fstat(fds[0]).st_size == size else "resized"
            print("%s frame %s %d" % (w, sealed, size), flush=True)
        else:
            code = [l.split(b" ")[1].decode() for l in lines if l.startswith(b"code ")]
            print("%s %s %s" % (w, lines[0].decode(), code[0] if code else "-"), flush=True)
        for fd in fds:
            os.close(fd)
elif mode == "unread":
    tm = time.localtime()
    s = conn()
    k = int(sys.argv[3])
    for i in range(k):
        s.send(b"snapshot\nid %d\nage 60000\nwant 1\nframe 1 80 0 0 %d %s" %
               (i + 1, tm.tm_gmtoff + 86400, (tm.tm_zone or "-").encode()))
    frames = refused = 0
    s.settimeout(60)
    for i in range(k):
        m, anc, _, _ = s.recvmsg(70000, socket.CMSG_SPACE(4 * 4))
        for level, kind, data in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                for j in range(len(data) // 4):
                    os.close(int.from_bytes(data[4 * j:4 * j + 4], sys.byteorder))
        frames += m.startswith(b"frame\n")
        refused += m.startswith(b"error") and b"read%20the%20last%20one%20first" in m
    print("frames %d refused %d" % (frames, refused), flush=True)
