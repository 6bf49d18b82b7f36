#!/usr/bin/env python3
"""late_take.py SOCKET DAEMON_PID SECONDS: a client whose `take` reaches the daemon in time but
is read late (tests/t2010-offers.sh). It asks for one GPU, and at the offer stops the daemon
(SIGSTOP), sends its take at once, keeps the daemon stopped SECONDS (past offer_timeout), then
lets it go on (SIGCONT): the daemon's late look must find the take, not lapse the offer. Prints
the verb of the answer to the take ("grant", or "error ..." with its text)."""
import os, signal, socket, sys, time, urllib.parse

path, pid, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(path)
s.settimeout(60)
s.send(b"acquire\nid 1\ncount 1\nignore_usage 1\nkind run")
m = s.recv(70000)
if not m.startswith(b"offer"):
    print("no offer: " + m.decode(errors="replace").replace("\n", " | "))
    sys.exit(1)
offer = [l for l in m.split(b"\n") if l.startswith(b"offer ")]
os.kill(pid, signal.SIGSTOP)
try:
    s.send(b"take\nid 1\n" + (offer[0] if offer else b"offer 0"))
    time.sleep(seconds)  # the daemon stopped: the time passing is what is tested
finally:
    os.kill(pid, signal.SIGCONT)
m = s.recv(70000)
verb = m.split(b"\n", 1)[0].decode(errors="replace")
print(verb if verb != "error" else "error " + urllib.parse.unquote(m.decode(errors="replace")).replace("\n", " | "))
