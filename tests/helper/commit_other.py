#!/usr/bin/env python3
"""commit_other.py SOCKET UID: a client of gpuctl's daemon (run as root) that takes a lease,
then commits it on a connection whose process has become another user (UID) since it connected:
what the daemon sees when the process that connected is gone and its pid now names another
user's process. Prints the commit's answer's first line, then the lease id; holds the lease
until stdin closes.
"""
import array, os, socket, sys

path, uid = sys.argv[1], int(sys.argv[2])


def conn():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(path)
    return s


s = conn()
s.send(b"acquire\nid 1\ncount 1\nkind run\nname other")
r = s.recv(70000)
offer = [l.split(b" ")[1] for l in r.split(b"\n") if l.startswith(b"offer ")][0]
s.send(b"take\nid 1\noffer " + offer)
fds = array.array("i")
msg, anc, _, _ = s.recvmsg(70000, socket.CMSG_SPACE(8 * fds.itemsize))
for level, typ, data in anc:
    fds.frombytes(data[:len(data) - len(data) % fds.itemsize])
words = dict(l.split(b" ", 1) for l in msg.split(b"\n")[1:] if b" " in l)
c = conn()                     # connected as root: the kernel records this pid and uid
os.setresgid(uid, uid, uid)
os.setresuid(uid, uid, uid)    # the pid now runs as another user
c.send(b"commit\nlease " + words[b"lease"] + b"\ntoken " + words[b"token"])
print(c.recv(70000).split(b"\n")[0].decode())
print(words[b"lease"].decode())
sys.stdout.flush()
sys.stdin.read()
