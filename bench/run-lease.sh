#!/usr/bin/env bash
# bench/run-lease.sh: what `gpuctl run -n 1 -- true` adds to `true` (issue 22; target: at most
# 3 ms of wall time), with a shared daemon serving a 1-GPU fake machine. The two commands are
# alternated in one loop, each run spaced 0.2-0.5 s from the last (as a person's or a script's,
# never back to back: a warm cache and a daemon that has just answered would flatter the figure),
# and what is reported is the median of the per-round differences, so that a load that comes and
# goes on the machine moves both sides of a round alike. CPU is the children's from wait4(2)'s
# rusage (microseconds), never clock ticks. Then the same with 1,000 idle connections open to the
# daemon (it must not slow down for them). Each figure is printed beside its target.
# Usage: bench/run-lease.sh [ROUNDS] (default 60). BEFORE=/path/to/an/older/gpuctl adds its
# `run` to the same rounds (against the same daemon), for a before/after taken under one load.
set -eu
cd "$(dirname "$0")/.."
B=${B:-build}
G=$PWD/$B/gpuctl
ROUNDS=${1:-60}
tmp=$(mktemp -d)
daemon=
cleanup() { if [ -n "$daemon" ]; then kill "$daemon" 2>/dev/null || true; wait "$daemon" 2>/dev/null || true; fi; rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
export GPUCTL_NVML_LIBRARY=$PWD/$B/fakenvml/libnvidia-ml.so.1 GPUCTL_CONFIG_NOSYSTEM=1
export GPUCTL_SYSTEM_CONFIG=$tmp/none XDG_CONFIG_HOME=$tmp/xdg GPUCTL_SOCKET=$tmp/run/gpuctl.sock
unset FAKENVML_PROC_DIR FAKENVML_STATS
mkdir -p "$tmp/run"
bash tests/fake/gen-machine.sh "$tmp/m1" 1 0
sed -i 's/^memory_used_mib = .*/memory_used_mib = 0/; s/^util_gpu = .*/util_gpu = 0/' "$tmp/m1"
export FAKENVML_MACHINE=$tmp/m1
"$G" daemon --socket "$GPUCTL_SOCKET" --state-dir "$tmp/run/state" --config /dev/null \
	>>"$tmp/daemon.log" 2>&1 &
daemon=$!
for _ in $(seq 500); do [ -S "$GPUCTL_SOCKET" ] && grep -q serving "$tmp/daemon.log" && break; sleep 0.01; done
grep -q serving "$tmp/daemon.log" || { echo "bench: the daemon did not start" >&2; cat "$tmp/daemon.log" >&2; exit 1; }
"$G" run -q -n 1 -- /bin/true || { echo "bench: gpuctl run does not work here" >&2; exit 1; }

# One process per command, spawned and reaped here: wall from spawn to reap, CPU from its rusage.
python3 - "$ROUNDS" "$G" "${BEFORE:-}" <<'EOF'
import os, random, resource, socket, statistics, sys, time
rounds, g, before = int(sys.argv[1]), sys.argv[2], sys.argv[3]
cmds = {"true": ["/bin/true"], "run": [g, "run", "-q", "-n", "1", "--", "/bin/true"]}
if before:
    cmds["before"] = [before] + cmds["run"][1:]
def one(argv):
    t0 = time.perf_counter_ns()
    pid = os.posix_spawn(argv[0], argv, os.environ)
    _, status, ru = os.wait4(pid, 0)
    wall = time.perf_counter_ns() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("bench: %s failed" % " ".join(argv))
    return wall / 1e6, (ru.ru_utime + ru.ru_stime) * 1e3
def rounds_of(rounds):
  dw, dc = {n: [] for n in cmds if n != "true"}, {n: [] for n in cmds if n != "true"}
  for i in range(rounds):
    order = random.sample(list(cmds), len(cmds))  # no command always first (or after the other)
    got = {}
    for name in order:
        time.sleep(random.uniform(0.2, 0.5))
        got[name] = one(cmds[name])
    for n in dw:
        dw[n].append(got[n][0] - got["true"][0])
        dc[n].append(got[n][1] - got["true"][1])
  return dw, dc
def row(label, fig, target, ok):
    print("  %-46s %-26s %-14s %s" % (label, fig, "target " + target if target else "", ok))
def report(what, rounds, dw, dc):
    print("run -n 1 -- true against true%s, %d interleaved rounds spaced 0.2-0.5 s, load %.1f "
          "(a shared 2-core machine is noisy: the spread says how much)"
          % (what, rounds, os.getloadavg()[0]))
    for n, label in (("run", "gpuctl run"), ("before", "BEFORE's run")):
        if n not in dw:
            continue
        mw, mc = statistics.median(dw[n]), statistics.median(dc[n])
        q = statistics.quantiles(dw[n], n=4)
        row("%s: wall added (median per-round)" % label, "%.2f ms (IQR %.2f..%.2f)" % (mw, q[0], q[2]),
            "<= 3 ms", "ok" if mw <= 3 else "over")
        row("%s: CPU added (children's rusage)" % label, "%.2f ms" % mc, "", "")
    if "before" in dw:
        # Paired in each round, so the load of the moment cancels out of the difference.
        pw = statistics.median(a - b for a, b in zip(dw["run"], dw["before"]))
        pc = statistics.median(a - b for a, b in zip(dc["run"], dc["before"]))
        row("gpuctl run minus BEFORE's (median per-round)", "wall %+.2f ms, CPU %+.2f ms" % (pw, pc),
            "", "")
report("", rounds, *rounds_of(rounds))
# The same while 1,000 idle connections are open to the daemon (it drops idle ones after 30 s:
# these rounds take less, about 0.7 s each).
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 1100), hard))
idle = [socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) for _ in range(1000)]
for s in idle:
    s.connect(os.environ["GPUCTL_SOCKET"])
time.sleep(0.5)
n = min(rounds, 25)
report(", 1000 idle connections open", n, *rounds_of(n))
EOF
