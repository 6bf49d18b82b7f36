#!/usr/bin/env python3
"""progress_tty.py GPUCTL: on a terminal, a waiting `gpuctl run --wait` shows a one-line
progress (place in queue, time waited); Ctrl-C leaves the queue. Prints ok/not ok lines."""
import os, pty, signal, sys, time

pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], [sys.argv[1], "run", "-n", "1", "--wait", "--", "true"])
out, end = b"", time.monotonic() + 60  # reached only when something is wrong
while time.monotonic() < end and b"in queue, 0:01" not in out:
    try:
        out += os.read(fd, 4096)
    except OSError:
        break
ok = b"waiting for 1 GPU, 1st in queue, 0:0" in out and b"\r" in out
print(("ok - " if ok else "not ok - ") + "a waiter on a terminal shows where it is in the queue")
if not ok:
    print("#   %r" % out[-300:])
os.kill(pid, signal.SIGINT)
_, status = os.waitpid(pid, 0)
code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)
print(("ok - " if code == 130 else "not ok - ") + "Ctrl-C on the terminal leaves the queue (exit %d)" % code)
