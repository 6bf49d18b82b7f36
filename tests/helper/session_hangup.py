#!/usr/bin/env python3
"""session_hangup.py SESSION CONTROL: a real session hang-up, as when an SSH connection drops.

Starts an interactive bash (job control on, no rc files) on a new pseudo-terminal that is its
controlling terminal, types the lines of the file SESSION into it, and waits until the session
prints SESSION-42 (the session's last line must `echo SESSION-$((6*7))`: the typed text echoes
the expression, not the number). Then it waits for a line on the FIFO CONTROL (the test checks
first that what the session started is running), and closes the terminal's master side: the
kernel hangs up the terminal and sends SIGHUP to the session's shell, which, as interactive
shells do, sends SIGHUP to all its jobs and exits. Prints how the shell ended ("shell: signal N"
or "shell: exit N") and exits 0."""
import os, pty, sys, time

session, control = sys.argv[1], sys.argv[2]
pid, fd = pty.fork()
if pid == 0:
    os.environ.update(PS1="$ ", HISTFILE="/dev/null", TERM="dumb")
    # A login shell, as SSH starts, with huponexit: whether bash sees the hang-up's SIGHUP or
    # the terminal's end first (a race), it hangs up its jobs.
    os.execvp("bash", ["bash", "--norc", "--noprofile", "-i", "-l", "-O", "huponexit"])
with open(session, "rb") as f:
    os.write(fd, f.read())
out, end = b"", time.monotonic() + 60  # reached only when something is wrong
while b"SESSION-42" not in out and time.monotonic() < end:
    try:
        out += os.read(fd, 4096)
    except OSError:
        break
if b"SESSION-42" not in out:
    print("# the session did not start: %r" % out[-500:])
    sys.stdout.flush()
with open(control, "rb") as c:  # blocks until the test says: hang up now
    c.readline()
os.close(fd)  # the hang-up: the kernel sends SIGHUP to the session leader, the shell
_, status = os.waitpid(pid, 0)
if os.WIFSIGNALED(status):
    print("shell: signal %d" % os.WTERMSIG(status))
else:
    print("shell: exit %d" % os.WEXITSTATUS(status))
