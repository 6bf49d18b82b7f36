#!/usr/bin/env python3
"""kill_reuse.py GPUCTL WORKLOAD SLEEPER: a pid that exits and is reused between gpuctl kill's
listing and its signal must not be signalled. gpuctl kill runs on a pseudo-terminal, so it lists
and then asks; while it waits for the answer the victim dies and a new process is given the very
same pid (through /proc/sys/kernel/ns_last_pid, as root: t0009 runs this in a PID namespace of its
own, so no other process on the machine sees its pids reused); then we answer yes. Prints ok/skip."""
import os, pty, signal, subprocess, sys, time

gpuctl, workload, sleeper = sys.argv[1:4]
victim = subprocess.Popen([workload, "--mem", "700"])
# Wait for the workload's "ready PID" line (tests/lib/lib.sh: WORKLOAD_READY), followed with tail -F.
tail = subprocess.Popen(["timeout", "20", "tail", "-n", "+1", "-F", os.environ["WORKLOAD_READY"]],
                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
for line in tail.stdout:
    if line.decode().strip() == "ready %d" % victim.pid:
        break
tail.kill()
tail.wait()

pid, fd = pty.fork()
if pid == 0:
    os.execv(gpuctl, [gpuctl, "kill", "--pid", str(victim.pid), "--grace", "1"])
out = b""
while b"[y/N]" not in out:
    out += os.read(fd, 4096)

victim.kill()
victim.wait()
reused = None
for _ in range(50):   # other processes may fork in between: try again
    try:
        with open("/proc/sys/kernel/ns_last_pid", "w") as f:
            f.write(str(victim.pid - 1))
    except OSError as e:
        print("ok - pid reuse # SKIP cannot set ns_last_pid (%s)\n" % e * 2, end="")
        os.write(fd, b"n\n")
        sys.exit(0)
    p = subprocess.Popen([sleeper])
    if p.pid == victim.pid:
        reused = p
        break
    p.kill()
    p.wait()
if not reused:
    print("ok - pid reuse # SKIP could not get pid %d again\n" % victim.pid * 2, end="")
    os.write(fd, b"n\n")
    sys.exit(0)
os.write(fd, b"y\n")
_, status = os.waitpid(pid, 0)
try:
    while True:
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        out += chunk
except OSError:
    pass
alive = reused.poll() is None
print(("ok - " if alive else "not ok - ") + "the process that took the reused pid was not signalled")
print(("ok - " if b"already gone" in out else "not ok - ") + "the victim is reported as already gone")
if not (alive and b"already gone" in out):
    print("#   " + out.decode(errors="replace").replace("\n", "\n#   "))
reused.kill()
