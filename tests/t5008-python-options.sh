#!/usr/bin/env bash
# t5008-python-options.sh: gpuctl.lease() takes every lease option of `gpuctl run` and `env`
# (src/cmd/leaseopts.h) as a keyword: max_util, ignore_usage, prefer, uuid, dry_run beside the
# older ones, each checked in Python with an error that names the keyword; NoFreeGPU's advice,
# and a value gpuctl refuses, name the keywords (wait=True, ignore_usage=True), not the command
# line's flags; and the exceptions are gpuctl's own (gpuctl.NoFreeGPU in a traceback, the class
# `except` catches).
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/daemon.sh"
plan 20

# Four GPUs: 0 busy by its load alone (20% > the daemon's 10%), 1 and 2 free (2 with the most
# free memory, 1 the least loaded), 3 with memory used by a process that holds no lease.
M=$TMP/m4
{
	echo "driver_version = 550.54.15"
	echo "cuda_driver_version = 12040"
	for i in 0 1 2 3; do
		printf '[gpu]\nname = NVIDIA H100 80GB HBM3\nuuid = GPU-%08x-1111-2222-3333-444444444444\n' "$i"
		printf 'pci_bus_id = 00000000:%02X:00.0\nmemory_total_mib = 81559\n' $((0x18 + i))
		printf 'memory_used_mib = %s\nutil_gpu = %s\n' "$(echo "0 500 0 5000" | cut -d' ' -f$((i + 1)))" \
			"$(echo "20 0 5 0" | cut -d' ' -f$((i + 1)))"
		printf 'util_memory = 0\ntemperature = 35\npower_mw = 70000\npower_limit_mw = 700000\n'
		printf 'compute_mode = Default\nmig_mode = 0\n\n'
	done
	printf '[process]\ngpu = 3\npid = 4000001\nused_memory_mib = 5000\n'
} >"$M"
use_machine "$M"
daemon_setup
daemon_start
PY=$("${PYTHON:-python3}" -c 'import sys; print(sys.executable)')
export PYTHONPATH=$ROOT/python GPUCTL_BINARY=$GPUCTL PYTHONDONTWRITEBYTECODE=1

# One process tries each call in turn; a line per call: what it leased (and what it put into
# os.environ), or the exception's class and text. After each release it waits until the daemon
# shows no lease, so that the next choice is made among all four again.
"$PY" - "$B/fakecuda/libcuda.so.1" >"$TMP/out.txt" 2>"$TMP/err.txt" <<'PY'
import ctypes, json, os, sys, time
import gpuctl

def settle():
    end = time.monotonic() + 30  # reached only when something is wrong
    while gpuctl.leases()["leases"] and time.monotonic() < end:
        time.sleep(0.02)

def attempt(label, **kw):
    try:
        lease = gpuctl.lease(**kw)
    except Exception as e:
        print(label, type(e).__name__, json.dumps(str(e)), flush=True)
        return
    print(label, "leased", ",".join(str(g.index) for g in lease.gpus),
          os.environ.get("CUDA_VISIBLE_DEVICES"), lease.dry_run, lease.released,
          len(gpuctl.leases()["leases"]), flush=True)
    lease.release()
    settle()

attempt("busy", gpus=[0])
attempt("max_util", gpus=[0], max_util=30)
attempt("used", gpus=[3])
attempt("ignore_usage", gpus=[3], ignore_usage=True)
attempt("prefer-default")
attempt("prefer-index", prefer="index")
attempt("prefer-util", prefer="util")
attempt("uuid", gpus=[1], uuid=True)
attempt("dry_run", dry_run=True)
attempt("bad-max_util", max_util=101)
attempt("bad-max_util-type", max_util="50")
attempt("bad-prefer", prefer="fast")
attempt("bad-ignore_usage", ignore_usage="yes")
attempt("bad-wait", wait=0)
attempt("refused-wait", wait="soon")
names = ("Error", "NoFreeGPU", "WaitTimeout", "BinaryNotFound", "CudaAlreadyInitialized")
print("modules", " ".join(getattr(gpuctl, n).__module__ + "." + getattr(gpuctl, n).__qualname__
                          for n in names))
print("same", gpuctl.NoFreeGPU is gpuctl._binary.NoFreeGPU)
# The retype line of the late-CUDA error carries the new keywords too.
ctypes.CDLL(sys.argv[1])
attempt("late", gpus=[0], max_util=30, ignore_usage=True)
PY
res() { sed -n "s/^$1 //p" "$TMP/out.txt"; }
msg() { res "$1" | sed 's/^[A-Za-z]* //' | jq -r .; }
check_eq "a GPU busier than the daemon's max_util: NoFreeGPU" NoFreeGPU "$(res busy | cut -d' ' -f1)"
check_eq "max_util=30: leased" "leased 0 0 False False 1" "$(res max_util)"
check_eq "a GPU with memory in use: NoFreeGPU" NoFreeGPU "$(res used | cut -d' ' -f1)"
msg used >"$TMP/used.msg"
check_grep "with gpuctl's words" '^gpuctl env: 1 GPU wanted, not enough free now' "$TMP/used.msg"
check_eq "its advice names the keywords, not the flags" \
	"Use wait=True to queue, or ignore_usage=True to disregard observed use." "$(tail -1 "$TMP/used.msg")"
check_eq "ignore_usage=True: leased" "leased 3 3 False False 1" "$(res ignore_usage)"
check_eq "prefer: free-memory (the default), index, util" "2 1 1" \
	"$(for p in default index util; do res prefer-$p | cut -d' ' -f2; done | xargs)"
check_eq "uuid=True: CUDA_VISIBLE_DEVICES by UUID" "leased 1 GPU-00000001-1111-2222-3333-444444444444 False False 1" \
	"$(res uuid)"
check_eq "dry_run=True: the choice, nothing leased, os.environ untouched" "leased 2 None True True 0" \
	"$(res dry_run)"
check_eq "max_util out of range: ValueError naming it" \
	'ValueError "max_util: a percentage from 0 to 100 (a GPU busier than this is not free), not 101"' \
	"$(res bad-max_util)"
check_eq "max_util not an int: TypeError" \
	"TypeError \"max_util: a percentage (an int from 0 to 100: a GPU busier than this is not free), not '50'\"" \
	"$(res bad-max_util-type)"
check_eq "prefer not one of gpuctl's: ValueError listing them" \
	"ValueError \"prefer: which free GPUs first, one of 'free-memory', 'index', 'util', 'topology', not 'fast'\"" \
	"$(res bad-prefer)"
check_eq "ignore_usage not a bool: TypeError" "TypeError \"ignore_usage: True or False, not 'yes'\"" \
	"$(res bad-ignore_usage)"
check_eq "wait not above 0: ValueError" \
	"ValueError \"wait: seconds above 0, a duration such as '30m', or True (as long as it takes), not 0\"" \
	"$(res bad-wait)"
msg refused-wait >"$TMP/refused.msg"
check_grep "a value gpuctl refuses: its words, naming the keyword" \
	"^gpuctl env: wait wants a duration such as 90, 30s, 5m or 2h \(at most [0-9]+h; wait=True waits as long as it takes\), not 'soon'$" \
	"$TMP/refused.msg"
check_eq "and no command line's --help to try, but the keywords' help" \
	"help(gpuctl.lease) lists the keywords. 0" "$(tail -1 "$TMP/refused.msg") $(grep -c -- '--' "$TMP/refused.msg")"
check_eq "the exceptions are gpuctl's own (module gpuctl)" \
	"gpuctl.Error gpuctl.NoFreeGPU gpuctl.WaitTimeout gpuctl.BinaryNotFound gpuctl.CudaAlreadyInitialized" \
	"$(res modules)"
check_eq "gpuctl.NoFreeGPU is the class raised" True "$(res same)"
check_grep "CUDA started first: the line to run again has the new keywords" \
	"gpuctl.lease\(gpus=\[0\], max_util=30, ignore_usage=True\)" <(msg late)

# Uncaught, a traceback names it gpuctl.NoFreeGPU.
"$PY" -c 'import gpuctl; gpuctl.lease(gpus=[3])' >/dev/null 2>"$TMP/tb.txt"
check_grep "a traceback says gpuctl.NoFreeGPU" '^gpuctl\.NoFreeGPU: gpuctl env: 1 GPU wanted, not enough free now' \
	"$TMP/tb.txt"
