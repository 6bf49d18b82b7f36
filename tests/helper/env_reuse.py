#!/usr/bin/env python3
"""env_reuse.py GPUCTL SLEEPER FIFO: an env lease's shell that exits while the request is queued,
its pid then given to another process, must not leave the lease bound to that stranger. GPU 0 is
leased by a job that ends when FIFO is written; `gpuctl env -g 0 --wait --hold-pid B` queues
behind it; B exits and a new process is given the very same pid (through
/proc/sys/kernel/ns_last_pid, as root: t2001 runs this in a PID namespace of its own, so no other
process on the machine sees its pids reused); then the job ends and env is granted. Prints TAP."""
import json, os, subprocess, sys, time

gpuctl, sleeper, fifo = sys.argv[1:4]


def leases():
    out = subprocess.run([gpuctl, "leases", "--json"], stdout=subprocess.PIPE, check=True).stdout
    return json.loads(out)


def until(pred, secs=10.0):
    """Polls `gpuctl leases` (the daemon's word; no event to follow) for at most secs."""
    end = time.monotonic() + secs
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.02)
    return False


def ready(pid):
    """Waits for the sleeper's line in SLEEPER_READY (it runs, /proc/PID/stat is its own)."""
    tail = subprocess.Popen(["timeout", "20", "tail", "-n", "+1", "-F", os.environ["SLEEPER_READY"]],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    for line in tail.stdout:
        if line.decode().strip() == str(pid):
            break
    tail.kill()
    tail.wait()


def start_time(pid):
    """Field 22 of /proc/PID/stat: clock ticks after boot (10 ms steps)."""
    with open("/proc/%d/stat" % pid) as f:
        return f.read().rsplit(")", 1)[1].split()[19]


def end_job():
    """Writes FIFO: the job on GPU 0 ends. Never waits for a reader: one that is gone (the job
    ended on its own) is said, not waited for forever."""
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as e:
        print("# the job on GPU 0 no longer reads %s (%s): it ended early" % (fifo, e))
        return
    os.write(fd, b"\n")
    os.close(fd)


def skip(why):
    print("ok - env lease, bound pid reused # SKIP %s\n" % why * 2, end="")
    end_job()
    sys.exit(0)


bound = subprocess.Popen([sleeper])
ready(bound.pid)
env = subprocess.Popen([gpuctl, "env", "-q", "-g", "0", "--ignore-usage", "--wait=60",
                        "--hold-pid", str(bound.pid), "--format=json"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
if not until(lambda: len(leases()["queue"]) == 1):
    env.kill()
    print("not ok - env queues behind the job on GPU 0\n#   %r\nnot ok - (not run)" % env.communicate()[1])
    end_job()
    sys.exit(0)
bound_start = start_time(bound.pid)
bound.kill()
bound.wait()
stranger = None
for _ in range(50):   # other processes may fork in between: try again
    try:
        with open("/proc/sys/kernel/ns_last_pid", "w") as f:
            f.write(str(bound.pid - 1))
    except OSError as e:
        skip("cannot set ns_last_pid (%s)" % e)
    p = subprocess.Popen([sleeper])
    if p.pid == bound.pid:
        stranger = p
        break
    p.kill()
    p.wait()
if not stranger:
    skip("could not get pid %d again" % bound.pid)
ready(stranger.pid)
if start_time(stranger.pid) == bound_start:   # a pid and start time alone cannot tell them apart
    print("# the stranger started in the bound process's clock tick: the same pid and start time")
end_job()   # the job on GPU 0 ends: env is granted
out, err = env.communicate(timeout=30)
said = b"exited before the lease was granted" in err
print(("ok - " if env.returncode == 1 and said and not out else "not ok - ") +
      "env refuses a lease whose shell exited while queued (pid reused): exit 1, nothing exported")
if env.returncode != 1 or not said:
    print("#   exit %d, stdout %r, stderr %r" % (env.returncode, out, err))
gone = until(lambda: not leases()["leases"])
print(("ok - " if gone else "not ok - ") + "and no lease stays bound to the process that took the pid")
stranger.kill()
stranger.wait()
