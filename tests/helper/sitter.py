#!/usr/bin/env python3
"""sitter.py SOCKET GO: a client of gpuctl's daemon whose first offer lapses (it asks for one GPU
and never takes it), so that it is backed off; then it asks again, prints "offered again" at the
offer its back-off allows, and waits until the file GO exists. It prints "withdrawn" if that
offer was taken back meanwhile (an error on its request), "lapsed" if it lapsed first, else
"kept" (tests/t2010-offers.sh)."""
import os, select, socket, sys

path, go = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(path)


def ask(ident):
    s.send(b"acquire\nid %d\ncount 1\nignore_usage 1\nkind run" % ident)


def message():
    return s.recv(70000).decode(errors="replace")


def verb():
    return message().split("\n", 1)[0]


ask(1)
first = verb()
lapsed = verb()  # an error: the offer lapsed, it is backed off now
print("first %s then %s" % (first, lapsed), flush=True)
ask(2)
v = verb()
print("offered again" if v == "offer" else "answered " + v, flush=True)
while not os.path.exists(go):
    if select.select([s], [], [], 0.02)[0]:
        m = message()
        # (a machine so slow that the offer lapsed first: no withdrawal could be seen)
        print("withdrawn" if "another%20user" in m else "lapsed" if "error" in m else "other",
              flush=True)
        sys.exit()
print("kept", flush=True)
