#!/usr/bin/env python3
"""queue_requests.py SOCKET N CONNS: N waiting requests for one GPU each, over CONNS connections
to gpuctl's daemon (many requests share a connection, as a job runner's do). Prints "queued N"
once the daemon has answered every one, then holds them until stdin closes."""
import select, socket, sys

path, n, nconn = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
conns = []
for _ in range(nconn):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(path)
    conns.append(s)
for i in range(n):
    conns[i % nconn].send(b"acquire\nid %d\ncount 1\nwait 1\nkind job\nname bench%d" % (i, i))
answered = 0
while answered < n:
    for s in select.select(conns, [], [], 30)[0]:
        m = s.recv(70000)
        if not m:
            sys.exit("the daemon closed a connection")
        answered += m.startswith(b"queued") or m.startswith(b"busy") or m.startswith(b"error")
print("queued %d" % n, flush=True)
sys.stdin.read()
