#!/usr/bin/env python3
"""pass_requests.py SOCKET N: N requests that do not wait (one GPU, a time limit), one after the
other on one connection: each runs one scheduling pass of the daemon and is answered `busy`
(every GPU is leased). Prints "done N" (issue 24's bench: the CPU of a pass)."""
import socket, sys

path, n = sys.argv[1], int(sys.argv[2])
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(path)
for i in range(n):
    s.send(b"acquire\nid %d\ncount 1\ntime_ms 60000\nkind run" % (i + 1))
    while True:
        m = s.recv(70000)
        if not m:
            sys.exit("the daemon closed the connection")
        if m.startswith(b"busy") or m.startswith(b"error") or m.startswith(b"offer"):
            break
print("done %d" % n, flush=True)
