#!/usr/bin/env python3
"""check_schedule.py LOG JOBS: checks a workload log from the lease stress tests.

JOBS lines: "TAG COUNT [USER]" for every job that must have run. Prints ok/not ok lines:
no GPU ever had two jobs at once, every listed job ran, and equal requests were granted in the
order they arrived (GPUCTL_QUEUED_AT, or the grant itself when they did not wait): across all
users (a `queue = fifo` daemon), or, when the lines name users (the fair queue), each user's.
"""
import sys

log, jobs = sys.argv[1], sys.argv[2]
rows = [line.split() for line in open(jobs) if line.strip()]
want = {r[0]: r[1] for r in rows}
user = {r[0]: r[2] if len(r) > 2 else "" for r in rows}
per_user = any(user.values())
start, end, gpus, arrival, granted = {}, {}, {}, {}, {}
for line in open(log):
    f = line.split()
    if f[0] == "start":
        start[f[1]] = int(f[2])
        granted[f[1]] = int(f[4]) or int(f[2])
        arrival[f[1]] = int(f[3]) or granted[f[1]]
        gpus[f[1]] = f[5:]
    elif f[0] == "end":
        end[f[1]] = int(f[2])

def check(name, cond, detail=""):
    print(("ok - " if cond else "not ok - ") + name)
    if not cond and detail:
        print("#   " + str(detail)[:2000])

missing = [t for t in want if t not in start or t not in end]
check("every job ran (%d)" % len(want), not missing, missing)
wrong = [t for t in want if t in gpus and len(gpus[t]) != int(want[t])]
check("every job got the GPUs it asked for", not wrong, wrong)
by_gpu = {}
for t in start:
    if t in end:
        for g in gpus[t]:
            by_gpu.setdefault(g, []).append((start[t], end[t], t))
overlaps = []
for g, iv in by_gpu.items():
    iv.sort()
    for a, b in zip(iv, iv[1:]):
        if b[0] < a[1]:
            overlaps.append((g[:12], a[2], b[2]))
check("no GPU ever had two jobs at once (%d intervals)" % sum(map(len, by_gpu.values())), not overlaps, overlaps)
bad = []
for n, u in set((want[t], user[t]) for t in want):
    same = sorted((arrival[t], granted[t], t) for t in want
                  if want[t] == n and user[t] == u and t in start)
    for a, b in zip(same, same[1:]):
        if b[1] < a[1]:
            bad.append((n, a[2], b[2]))
check("equal requests %swere granted in arrival order" % ("of one user " if per_user else ""),
      not bad, bad)
waits = sorted(((granted[t] - arrival[t]) / 1e9, t, want[t]) for t in want if t in start)
if waits:
    print("# longest waits:", ", ".join("%s (%s GPUs) %.2fs" % (t, n, w) for w, t, n in waits[-3:]))
