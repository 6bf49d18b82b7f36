#!/usr/bin/env python3
"""commit_other.py SOCKET MODE: a client of gpuctl's daemon that takes a lease, then commits it
on a connection whose process is not the one that connected, as the daemon sees it when the
process that connected has exited and its pid was reused:
  uid UID   (run as root) the process that connected becomes user UID, then commits
  exited    the connection is made by a child that exits; the parent commits on it
Prints the commit's answer's first line, then the lease id; holds the lease until stdin closes.
"""
import array, os, socket, sys

path, mode = sys.argv[1], sys.argv[2]


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
if mode == "uid":
    uid = int(sys.argv[3])
    c = conn()                 # connected as root: the kernel records this pid and uid
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)  # the pid now runs as another user
else:
    a, b = socket.socketpair()
    child = os.fork()
    if child == 0:             # connects (the kernel records its pid), hands it over, exits
        try:
            mine = conn()
            socket.send_fds(a, [b"c"], [mine.fileno()])
        finally:
            os._exit(0)
    b.settimeout(30)
    _, fds2, _, _ = socket.recv_fds(b, 10, 1)
    os.waitpid(child, 0)
    c = socket.socket(fileno=fds2[0])
c.send(b"commit\nlease " + words[b"lease"] + b"\ntoken " + words[b"token"])
print(c.recv(70000).split(b"\n")[0].decode())
print(words[b"lease"].decode())
sys.stdout.flush()
sys.stdin.read()
