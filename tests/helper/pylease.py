"""tests/helper/pylease.py OUT CTL [KWARGS_JSON]: a Python process that leases with the gpuctl module
(t5005-python.sh). It appends to OUT "start PID", then "leased {...}" (its pid, the lease id and
GPUs, and the lease's variables as os.environ has them), "error {class, code, message}" or
"interrupted {env}" (SIGINT, as a notebook's interrupt, while it waited), then
does what lines written to the fifo CTL say: "release" (then "released {env}"), "exit"."""

import json
import os
import signal
import sys

import gpuctl

VARS = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "NVIDIA_VISIBLE_DEVICES", "GPUCTL_LEASE_ID")


def say(word, data):
    with open(sys.argv[1], "a") as out:
        out.write("%s %s\n" % (word, json.dumps(data)))


def env():
    return {k: os.environ.get(k) for k in VARS}


signal.signal(signal.SIGINT, signal.default_int_handler)  # a background job starts ignoring it
say("start", os.getpid())
kwargs = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
try:
    lease = gpuctl.lease(**kwargs)
except gpuctl.Error as e:
    say("error", {"class": type(e).__name__, "code": e.code, "message": str(e)})
    sys.exit(0)
except KeyboardInterrupt:
    say("interrupted", {"env": env()})
    sys.exit(0)
say("leased", {"pid": os.getpid(), "id": lease.id, "gpus": [list(g) for g in lease.gpus],
               "env": env()})
while True:
    with open(sys.argv[2]) as ctl:
        for line in ctl:
            if line.strip() == "release":
                lease.release()
                say("released", {"env": env(), "released": lease.released})
            elif line.strip() == "exit":
                sys.exit(0)
