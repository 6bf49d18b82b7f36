#!/usr/bin/env python3
"""pty_run.py [--rows R] [--cols C] [--answer PROMPT TEXT] OUTFILE CMD [ARGS...]

Runs CMD on a new pseudo-terminal of R x C (default 24 x 80) that is its controlling
terminal, writes everything the terminal showed to OUTFILE, and exits with CMD's status (128+N
when signal N ended it). --answer types TEXT once PROMPT has appeared (a y/N question). The
terminal is what a person sees: tests check what reaches it (escapes, screen size, colour).
"""
import fcntl, os, pty, struct, sys, termios, time

args = sys.argv[1:]
rows, cols, prompt, answer = 24, 80, None, None
while args and args[0].startswith("--"):
    if args[0] == "--rows":
        rows, args = int(args[1]), args[2:]
    elif args[0] == "--cols":
        cols, args = int(args[1]), args[2:]
    elif args[0] == "--answer":
        prompt, answer, args = args[1].encode(), args[2].encode(), args[3:]
    else:
        sys.exit("pty_run.py: unknown option " + args[0])
outfile, cmd = args[0], args[1:]

pid, fd = pty.fork()
if pid == 0:
    fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    os.environ.pop("COLUMNS", None)
    os.environ.pop("LINES", None)
    os.execvp(cmd[0], cmd)

out = b""
deadline = time.monotonic() + 60  # reached only when something is wrong
while time.monotonic() < deadline:
    try:
        chunk = os.read(fd, 65536)
    except OSError:  # EIO: the last process on the terminal has gone
        break
    if not chunk:
        break
    out += chunk
    if prompt is not None and prompt in out:
        os.write(fd, answer)
        prompt = None
_, status = os.waitpid(pid, 0)
with open(outfile, "wb") as f:
    f.write(out)
sys.exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))
