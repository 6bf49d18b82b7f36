#!/usr/bin/env python3
"""hangup_pty.py SCRIPT MARKER: runs `bash SCRIPT` as the leader of a new session on a pty (as an
SSH login is), waits until it prints MARKER, then hangs the session up as a dropped connection
does: SIGHUP to its process group and the terminal's master side closed. Prints one ok/not ok
line: the shell ended by SIGHUP. The wait for MARKER is bounded (60 s)."""
import os, pty, signal, sys, time

script, marker = sys.argv[1], sys.argv[2].encode()
pid, fd = pty.fork()
if pid == 0:
    os.execvp("bash", ["bash", script])
out, end = b"", time.monotonic() + 60
while time.monotonic() < end and marker not in out:
    try:
        out += os.read(fd, 4096)
    except OSError:
        break
os.killpg(pid, signal.SIGHUP)
os.close(fd)
_, status = os.waitpid(pid, 0)
hung = marker in out and os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGHUP
print(("ok - " if hung else "not ok - ") + "the submitting session on a pty was hung up (SIGHUP)")
if not hung:
    print("#   status %d, output %r" % (status, out[-500:]))
