"""gpuctl.lease(): GPUs leased for the life of this process (a script, a notebook's kernel).

`gpuctl env --format=json --hold-pid <this pid>` takes the lease: a holder process of its own
keeps it until this process ends (a kernel restart is a new process) or `release()`. The
variables it prints go into os.environ, where CUDA finds them when it starts; if CUDA has
already started they can no longer take effect, and lease() says so instead of pretending.
"""

import json
import os
import re
import threading
import time as _time
import warnings
from typing import NamedTuple, Optional

from . import _binary, _cuda
from ._binary import Error

# What `gpuctl env` exports; a lease replaces all of them (a stale GPUCTL_QUEUED_AT goes too).
LEASE_VARS = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "NVIDIA_VISIBLE_DEVICES",
              "GPUCTL_LEASE_ID", "GPUCTL_LEASE_GPUS", "GPUCTL_LEASE_NAME", "GPUCTL_LEASED_AT",
              "GPUCTL_QUEUED_AT", "GPUCTL_LEASE_MEM", "GPUCTL_LEASE_MEM_FRACTION", "GPUCTL_LEASE_MIG",
              "GPUCTL_LEASE_UNTIL")
# Memory shares (mem=..., issue 23): what `gpuctl env` adds for a share, set only by a share's
# lease (a whole-GPU lease leaves the user's own values of the frameworks' variables alone).
SHARE_VARS = ("XLA_PYTHON_CLIENT_MEM_FRACTION",
              "XLA_CLIENT_MEM_FRACTION", "XLA_PYTHON_CLIENT_PREALLOCATE",
              "TF_FORCE_GPU_ALLOW_GROWTH")


class GPU(NamedTuple):
    """A leased GPU: its nvidia-smi index, UUID and name. ``lease.gpus[i]`` is CUDA device i."""
    index: int
    uuid: str
    name: Optional[str]


class CudaAlreadyInitialized(Error):
    """CUDA started in this process before the lease: the new CUDA_VISIBLE_DEVICES cannot take
    effect. ``reasons`` says how that is known. The lease was given back."""

    def __init__(self, message, reasons):
        super().__init__(message)
        self.reasons = reasons


_lock = threading.Lock()
_ours = {}  # lease id -> Lease: every lease this process took (released ones too)


class Lease:
    """GPUs leased until this process ends or ``release()``; also a context manager. A dry run's
    (``dry_run``) says which GPUs a lease would get, and holds nothing."""

    dry_run = False

    def __init__(self, env, gpus):
        self.env = dict(env)  # the variables gpuctl gave, as put into os.environ
        self.id = env["GPUCTL_LEASE_ID"]
        self.name = env.get("GPUCTL_LEASE_NAME")
        self.gpus = tuple(gpus)
        self._pid = os.getpid()
        self._before = {}
        self._released = False
        self._cuda_started = True  # had CUDA started when it was taken? (set by lease())
        self._call = None  # the call that took it: the same call again returns it (issue 24)
        # Its time limit (--time, time=): CLOCK_REALTIME seconds, None: none. At the limit
        # gpuctl ends the lease; a warning says so here, where the holder sees it.
        until = env.get("GPUCTL_LEASE_UNTIL")
        self.until = int(until) if until and until.isdigit() else None
        self._timer = None

    def _watch_limit(self):
        if self.until is None:
            return
        def at_limit():
            if not self._released:
                warnings.warn("lease %s reached its time limit (time=) and has ended: GPU %s may "
                              "be given to someone else now; stop using it (restart the kernel, "
                              "or let the script end)"
                              % (self.id, ",".join(str(g.index) for g in self.gpus)),
                              RuntimeWarning, 2)
        self._timer = threading.Timer(max(0.0, self.until - _time.time()), at_limit)
        self._timer.daemon = True
        self._timer.start()

    @property
    def cuda_visible_devices(self):
        return self.env["CUDA_VISIBLE_DEVICES"]

    @property
    def mem(self):
        """A share's claim on each of its GPUs, in MiB (mem=...); None for whole GPUs."""
        v = self.env.get("GPUCTL_LEASE_MEM")
        return int(v) if v and v.isdigit() else None

    def limit_torch(self):
        """A share's limit applied to PyTorch, the one line to call after `import torch`:
        torch.cuda.set_per_process_memory_fraction on each leased GPU, the claim over that GPU's
        total memory, so PyTorch's caching allocator raises OutOfMemoryError past the claim
        instead of taking other shares' memory. PyTorch reads no variable for this (JAX and
        TensorFlow get theirs from the environment). It starts CUDA in this process, as any
        use of the GPU does. Returns the fractions set; None for a whole-GPU lease."""
        if self.mem is None:
            return None
        import torch  # the caller's; gpuctl itself needs only the standard library
        fractions = []
        for i in range(len(self.gpus)):
            total = torch.cuda.get_device_properties(i).total_memory
            fraction = min(1.0, self.mem * 1048576 / total)
            torch.cuda.set_per_process_memory_fraction(fraction, i)
            fractions.append(fraction)
        return fractions

    @property
    def released(self):
        return self._released

    def _current(self, env):
        """Does env still hold this lease's variables (nobody changed them since)?"""
        return (env.get("GPUCTL_LEASE_ID") == self.id
                and env.get("CUDA_VISIBLE_DEVICES") == self.cuda_visible_devices)

    def release(self):
        """End the lease now (it ends anyway when this process does). os.environ gets back what
        it had before, if it still shows this lease. Calling it again does nothing."""
        if self._released:
            return
        if os.getpid() != self._pid:
            raise Error("lease %s belongs to process %d, which took it; this is process %d (a "
                        "child?), which cannot end it" % (self.id, self._pid, os.getpid()))
        # Exit 0 also when it has already ended (`gpuctl release` from a shell, say).
        _binary.run(["release", "--lease=" + self.id], forward_stderr=False)
        self._released = True
        if self._timer is not None:
            self._timer.cancel()
        if self._current(os.environ) and _cuda.cuda_initialized():
            warnings.warn(
                "lease %s has ended, but CUDA has started in this process and keeps using GPU %s "
                "(and its memory there) until the process ends: gpuctl may now give that GPU to "
                "someone else. Restart the kernel (or let the script end) to let go of it."
                % (self.id, ",".join(str(g.index) for g in self.gpus)), RuntimeWarning, 2)
        with _lock:
            # os.environ goes back to what it was before this lease, and before any released
            # lease under it, to the newest lease still held (or none).
            current = self if self._current(os.environ) else None
            while current is not None and current._released:
                _restore(os.environ, current._before)
                current = _ours.get(os.environ.get("GPUCTL_LEASE_ID"))
                if current is not None and not current._current(os.environ):
                    current = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()
        return False

    def __repr__(self):
        gpus = ", ".join("%d %s" % (g.index, g.uuid) for g in self.gpus)
        return "<gpuctl.Lease %s%s: GPU %s%s>" % (
            self.id, " %r" % self.name if self.name else "", gpus,
            " (dry run)" if self.dry_run else " (released)" if self._released else "")


def _restore(env, before):
    for key, value in before.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value


def _unwind(environ):
    """environ without the variables of this process's own leases: what a new lease chooses
    under (a Slurm step's or a container's CUDA_VISIBLE_DEVICES still restricts it; our own
    earlier lease does not)."""
    env = dict(environ)
    seen = set()
    while True:
        lease = _ours.get(env.get("GPUCTL_LEASE_ID"))
        if lease is None or lease.id in seen or not lease._current(env):
            return env
        seen.add(lease.id)
        _restore(env, lease._before)


def held():
    """The leases this process holds (taken by lease(), not released), oldest first."""
    with _lock:
        return [lease for lease in _ours.values() if not lease._released]


def _arg(option, value):
    return "--%s=%s" % (option, value)


def _gpu_list(gpus):
    if isinstance(gpus, (str, int)) and not isinstance(gpus, bool):
        return str(gpus)
    try:
        items = list(gpus)
    except TypeError:
        raise TypeError("gpus: a list of indices, UUIDs or bus ids, or a string such as '0,1', "
                        "not %r" % (gpus,)) from None
    return ",".join(str(g) for g in items)


def _wait_arg(wait):
    if wait is True:
        return "--wait"
    if wait is False:
        raise ValueError("wait=False: leave wait out (None) for your configured default, which "
                         "is not to wait unless your gpuctl config says otherwise")
    if isinstance(wait, (int, float)):
        if not wait > 0:
            raise ValueError("wait: seconds above 0, a duration such as '30m', or True (as long "
                             "as it takes), not %r" % (wait,))
        return _arg("wait", "%rs" % wait)
    if not isinstance(wait, str):
        raise TypeError("wait: True, seconds, or a duration such as '30m', not %r" % (wait,))
    return _arg("wait", wait)  # gpuctl reads the duration


def _call_text(n, kwargs):
    """The call, as a line to type again."""
    parts = [] if n is None else [repr(n)]
    parts += ["%s=%r" % (k, v) for k, v in kwargs.items() if v is not None and v is not False]
    return "gpuctl.lease(%s)" % ", ".join(parts)


# lease()'s keywords and the `gpuctl env` options they stand for (src/cmd/leaseopts.h, the
# options `run`, `env` and `submit` share): True for a flag. The arguments are built from this
# table, and gpuctl's words about the options are told back in these keywords (_keywords).
OPTIONS = (("n", "count", False), ("gpus", "gpus", False),
           ("min_free_memory", "min-free-memory", False), ("max_util", "max-util", False),
           ("prefer", "prefer", False), ("ignore_usage", "ignore-usage", True),
           ("uuid", "uuid", True), ("name", "name", False), ("wait", "wait", True),
           ("profile", "profile", False), ("dry_run", "dry-run", True),
           ("time", "time", False),  # time: the lease's limit (issue 24)
           # memory shares and MIG instances (issue 23)
           ("mem", "mem", False), ("mig", "mig", False))
PREFER = ("free-memory", "index", "util", "topology")   # topology: issue 26
_SHORT = {"-n": "count", "-g": "gpus"}
_FLAG_RE = re.compile(r"(?<![\w-])(--[a-z][a-z-]*[a-z]|-[ng])(?![\w-])")


def _keywords(line, advice):
    """The gpuctl options a line of gpuctl's names, told as lease()'s keywords, outside single
    quotes (a value quoted back is left as it was given): in advice, what to pass (--wait:
    wait=True, --max-util: max_util); in a refusal, the keyword refused (--wait: wait)."""
    words = {"--" + opt: kw + ("=True" if flag and advice else "") for kw, opt, flag in OPTIONS}
    words.update({short: words["--" + long] for short, long in _SHORT.items()})

    def told(text):
        text = text.replace("--wait alone", "wait=True")  # "--wait alone waits as long as ..."
        return _FLAG_RE.sub(lambda m: words.get(m.group(1), m.group(1)), text)
    parts = re.split(r"('[^']*')", line)
    return "".join(p if i % 2 else told(p) for i, p in enumerate(parts))


def _in_python(e):
    """gpuctl's message as a Python caller reads it: NoFreeGPU's advice (its last line: "Use
    --wait to queue, or --ignore-usage to ...") and a refused value's line (exit 2: "--wait
    wants a duration ...") in lease()'s keywords, and no `gpuctl env --help` to try. Only those
    lines, which gpuctl writes from its own words: the lines between may quote names other users
    chose, which are left exactly as they are."""
    lines = e.message.split("\n")
    if e.code == _binary.EXIT_BUSY:
        lines[-1] = _keywords(lines[-1], True)
    elif e.code == _binary.EXIT_USAGE:
        lines = [line for line in lines if line and not line.startswith("Try `gpuctl ")]
        lines[0] = _keywords(lines[0], False)
        lines.append("help(gpuctl.lease) lists the keywords.")
    e.message = "\n".join(lines)
    e.args = (e.message,)


def _check_options(n, min_free_memory, max_util, prefer, flags, texts):
    """What gpuctl would refuse, refused here in the keywords' own terms (TypeError for a
    wrong kind of value, ValueError for a value out of range)."""
    if n is not None and (isinstance(n, bool) or not isinstance(n, int)):
        raise TypeError("n: a number of GPUs, not %r" % (n,))
    if max_util is not None:
        if isinstance(max_util, bool) or not isinstance(max_util, int):
            raise TypeError("max_util: a percentage (an int from 0 to 100: a GPU busier than "
                            "this is not free), not %r" % (max_util,))
        if not 0 <= max_util <= 100:
            raise ValueError("max_util: a percentage from 0 to 100 (a GPU busier than this is "
                             "not free), not %r" % (max_util,))
    if min_free_memory is not None and (isinstance(min_free_memory, bool)
                                        or not isinstance(min_free_memory, (int, str))):
        raise TypeError("min_free_memory: MiB (an int) or a size such as '20G', not %r"
                        % (min_free_memory,))
    if prefer is not None and prefer not in PREFER:
        raise ValueError("prefer: which free GPUs first, one of %s, not %r"
                         % (", ".join(repr(p) for p in PREFER), prefer))
    for key, value in flags.items():
        if not isinstance(value, bool):
            raise TypeError("%s: True or False, not %r" % (key, value))
    for key, value in texts.items():
        if value is not None and not isinstance(value, str):
            raise TypeError("%s: a string, not %r" % (key, value))


def _describe(uuids):
    """GPU(index, uuid, name) for each UUID, in the lease's order (CUDA's order under it)."""
    doc = json.loads(_binary.run(["status", "--json", "--no-processes",
                                  _arg("gpus", ",".join(uuids))], ok=(0, 5)))
    by_uuid = {g.get("uuid"): g for g in doc.get("gpus", [])}
    missing = [u for u in uuids if u not in by_uuid]
    if missing:
        raise Error("gpuctl status does not show the leased GPU %s" % ",".join(missing))
    return [GPU(by_uuid[u]["index"], u, by_uuid[u].get("name")) for u in uuids]


def _visible(cvd, order):
    """What CUDA makes visible under these two values, as `gpuctl map` reads them."""
    env = dict(os.environ)
    for key, value in (("CUDA_VISIBLE_DEVICES", cvd), ("CUDA_DEVICE_ORDER", order)):
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    doc = json.loads(_binary.run(["map", "--json"], env=env, forward_stderr=False))
    devs = doc.get("devices", [])
    names = [("%s:%s" % (d.get("nvml_index"), d["mig_index"])) if "mig_index" in d
             else str(d.get("nvml_index")) for d in devs]
    return {d.get("uuid") for d in devs}, names


def _check_cuda(gpus, call):
    """Raises CudaAlreadyInitialized unless CUDA has not started, or whatever value of
    CUDA_VISIBLE_DEVICES it started with shows exactly these GPUs."""
    reasons = _cuda.cuda_initialized()
    if not reasons:
        return
    now = (os.environ.get("CUDA_VISIBLE_DEVICES"), os.environ.get("CUDA_DEVICE_ORDER"))
    mine = _ours.get(os.environ.get("GPUCTL_LEASE_ID"))
    if (mine is not None and not mine._released and not mine._cuda_started
            and mine._current(os.environ)):
        # CUDA started after our lease set these, and nobody has changed them since.
        views = [("as lease %s set it before CUDA started" % mine.id,) + now]
    else:
        # When CUDA started is not known: with the values the process started with, or with
        # those of os.environ now. Only when both show the leased GPUs does the lease hold.
        start = _cuda.startup_environ()
        views = []
        if start is not None:
            views.append(("as this process started", start.get("CUDA_VISIBLE_DEVICES"),
                          start.get("CUDA_DEVICE_ORDER")))
        if not views or views[0][1:] != now:
            views.append(("as os.environ says now",) + now)
    seen = []
    for when, cvd, order in views:
        uset, names = _visible(cvd, order)
        seen.append((when, cvd, uset, names))
    if all(uset == {g.uuid for g in gpus} for _, _, uset, _ in seen):
        return
    sees = " or ".join(
        "GPU %s (CUDA_VISIBLE_DEVICES%s, %s)" % (",".join(names) or "none",
                                                 " unset" if cvd is None else "=%r" % cvd, when)
        for when, cvd, _, names in seen)
    msg = ("CUDA has already started in this process (%s), and CUDA reads CUDA_VISIBLE_DEVICES "
           "only when it starts: setting it now cannot take effect. This process sees %s, not "
           "GPU %s just leased; that lease has been given back."
           % ("; ".join(reasons), sees, ",".join(str(g.index) for g in gpus)))
    restart = "Restart the kernel"
    for lease in held():
        if all(uset == {g.uuid for g in lease.gpus} for _, _, uset, _ in seen):
            msg += ("\nThis process already holds lease %s on GPU %s, which is what CUDA uses "
                    "here: keep using it (gpuctl.held() lists it)."
                    % (lease.id, ",".join(str(g.index) for g in lease.gpus)))
            restart = "For another lease, restart the kernel"
            break
    msg += ("\n%s (Jupyter: Kernel > Restart; a script: start it again) and run these lines "
            "first, before anything imports torch, tensorflow or jax:\n"
            "    import gpuctl\n    %s\n" % (restart, call))
    raise CudaAlreadyInitialized(msg, reasons)


def _parse(out):
    try:
        env = json.loads(out)
        if (not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values())
                or "GPUCTL_LEASE_ID" not in env or "CUDA_VISIBLE_DEVICES" not in env):
            raise ValueError
    except ValueError:
        raise Error("gpuctl env printed what is not its JSON object of variables: %r"
                    % out[:200]) from None
    return env


def _end(lease_id):
    """Ends a lease this process got but will not use."""
    try:
        _binary.run(["release", "--lease=" + lease_id], forward_stderr=False)
    except Error:
        pass  # it ends with this process anyway


def _give_back(out):
    """A lease granted just as the wait was interrupted."""
    try:
        _end(_parse(out)["GPUCTL_LEASE_ID"])
    except Error:
        pass  # nothing to end, or it ends with this process


def lease(n=None, *, gpus=None, min_free_memory=None, max_util=None, prefer=None,
          ignore_usage=False, uuid=False, wait=None, profile=None, name=None, dry_run=False,
          time=None, mem=None, mig=None):
    """Lease GPUs for the life of this process and put CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER
    and NVIDIA_VISIBLE_DEVICES (and GPUCTL_LEASE_*) into os.environ. Call it before anything
    starts CUDA (before `import torch` in a notebook's first cell).

    The keywords are the lease options of `gpuctl run` and `gpuctl env`:
    n: how many GPUs (default 1, or as many as ``gpus`` names, or the profile's count).
    gpus: choose among these (indices, UUIDs or unique prefixes, bus ids; a list or '0,1').
    min_free_memory: MiB (int) or a size such as '20G'.
    max_util: a GPU busier than this percentage is not free (default: the daemon's).
    prefer: which free GPUs first: 'topology' (the daemon's default), 'free-memory',
        'index' or 'util'.
    ignore_usage: True: only leases count, not the memory, load or processes observed.
    uuid: True: CUDA_VISIBLE_DEVICES names the GPUs by UUID instead of index.
    wait: None: the configured default (no waiting, unless your gpuctl config says otherwise);
      True: queue until the GPUs are free; seconds, or a duration such as '30m': at most that.
    profile, name: a [profile NAME] of the gpuctl config; the name `gpuctl leases` shows.
    dry_run: True: only say which GPUs it would lease; nothing is leased and os.environ is left
      as it is (the Lease returned is not held: ``dry_run`` and ``released`` are True).
    time: the lease's time limit, seconds or a duration such as '2h' (default: the daemon's
      default_time); at the limit the lease ends and a RuntimeWarning says so.
    mem: a share: MiB (int) or a size such as '20G' of each GPU's memory rather than the whole
      GPU; other shares may use the rest. GPUCTL_LEASE_MEM and JAX's and TensorFlow's limits go
      into os.environ; for PyTorch call ``lease.limit_torch()`` after `import torch`.
    mig: a MIG instance of this profile (e.g. '3g.71gb'); gpus='0:1' or gpus='MIG-<uuid>' names
      one. CUDA_VISIBLE_DEVICES is then the instance's MIG UUID.

    The same call again in this process (a notebook cell run twice) returns the lease it took,
    while that lease is held and os.environ still shows it, instead of taking more GPUs.

    Returns a Lease (``gpus``, ``id``, ``release()``; a context manager). Raises NoFreeGPU,
    WaitTimeout, CudaAlreadyInitialized, BinaryNotFound or Error, with gpuctl's own words (its
    advice told in these keywords: "Use wait=True to queue"); TypeError or ValueError for a
    keyword's value that is not one gpuctl takes."""
    _check_options(n, min_free_memory, max_util, prefer,
                   {"ignore_usage": ignore_usage, "uuid": uuid, "dry_run": dry_run},
                   {"profile": profile, "name": name})
    if time is not None and (isinstance(time, bool) or not isinstance(time, (int, float, str))):
        raise TypeError("time: seconds or a duration such as '2h', not %r" % (time,))
    if isinstance(time, (int, float)):
        if not time > 0:
            raise ValueError("time: seconds above 0, or a duration such as '2h', not %r" % (time,))
        time = "%rs" % time
    if mem is not None and (isinstance(mem, bool) or not isinstance(mem, (int, str))):
        raise TypeError("mem: MiB (an int) or a size such as '20G', not %r" % (mem,))
    if mig is not None and not isinstance(mig, str):
        raise TypeError("mig: a MIG profile such as '3g.71gb', not %r" % (mig,))
    given = {"mem": mem, "mig": mig, "n": n, "gpus": gpus, "min_free_memory": min_free_memory, "max_util": max_util,
             "prefer": prefer, "ignore_usage": ignore_usage, "uuid": uuid, "wait": wait,
             "profile": profile, "name": name, "dry_run": dry_run, "time": time}
    args = ["env", "--format=json", "--quiet", "--hold-pid=%d" % os.getpid()]
    # The holder's word on the lease (idle warnings, release, the time limit) comes back on a
    # pipe, told here as warnings (issue 24).
    events_r, events_w = (None, None) if dry_run else os.pipe()
    if events_w is not None:
        args.append("--events-fd=%d" % events_w)
    for key, option, flag in OPTIONS:
        value = given[key]
        if value is None or (flag and value is False and key != "wait"):
            continue  # not given (wait=False is refused by _wait_arg)
        if key == "wait":
            args.append(_wait_arg(value))
        elif flag:
            args.append("--" + option)
        elif key == "gpus":
            args.append(_arg(option, _gpu_list(value)))
        else:
            args.append(_arg(option, value))
    call = _call_text(n, {k: v for k, v in given.items() if k != "n"})
    if not dry_run:
        for old in held():
            # The same call again (a notebook cell run twice): the lease it holds (issue 24).
            if old._call == call and old._current(os.environ):
                return old
    with _lock:
        env = _unwind(os.environ)
    try:
        try:
            granted = _parse(_binary.run(args, env=env, on_interrupt=_give_back,
                                         pass_fds=() if events_w is None else (events_w,)))
        finally:
            if events_w is not None:
                os.close(events_w)
    except BaseException as e:
        if events_r is not None:
            os.close(events_r)
        if not isinstance(e, Error):
            raise
        if e.code in (_binary.EXIT_BUSY, _binary.EXIT_USAGE):
            _in_python(e)  # the advice in this call's keywords, not the command line's
        raise
    if dry_run:
        uuids = [u for u in granted.get("GPUCTL_LEASE_GPUS", "").split(",") if u]
        shown = Lease(granted, _describe(uuids))
        shown.dry_run = shown._released = True
        return shown
    try:
        uuids = [u for u in granted.get("GPUCTL_LEASE_GPUS", "").split(",") if u]
        new = Lease(granted, _describe(uuids))
        _check_cuda(new.gpus, call)
        new._cuda_started = bool(_cuda.cuda_initialized())
    except BaseException:
        _end(granted["GPUCTL_LEASE_ID"])
        if events_r is not None:
            os.close(events_r)
        raise
    for old in held():
        # A notebook cell run twice: the first lease would hold its GPUs unused till the end.
        warnings.warn("this process already holds lease %s on GPU %s, which stays held until its "
                      "release() or the end of this process (gpuctl.held() lists them)"
                      % (old.id, ",".join(str(g.index) for g in old.gpus)), RuntimeWarning, 2)
    with _lock:
        keys = LEASE_VARS + (SHARE_VARS if "GPUCTL_LEASE_MEM" in granted else ())
        new._before = {k: os.environ.get(k) for k in keys}
        for key in keys:
            if key in granted:
                os.environ[key] = granted[key]
            else:
                os.environ.pop(key, None)
        _ours[new.id] = new
    new._call = call
    new._watch_limit()
    _watch_events(new, events_r)
    return new


def _watch_events(lease, fd):
    """What the lease's holder reports (one line per event: `idle-warn IDLE RELEASE_IN`,
    `idle-release IDLE`), told as RuntimeWarnings where the notebook shows them."""
    if fd is None:
        return

    def told():
        with os.fdopen(fd, "r", encoding="utf-8", errors="replace") as f:
            for line in f:
                words = line.split()
                if not words or lease._released:
                    continue
                gpus = ",".join(str(g.index) for g in lease.gpus)
                if words[0] == "idle-warn":
                    left = int(words[2]) if len(words) > 2 and words[2].isdigit() else 0
                    warnings.warn("lease %s on GPU %s has been idle for %s s (no process of yours "
                                  "uses it)%s; release() it if you are done"
                                  % (lease.id, gpus, words[1] if len(words) > 1 else "?",
                                     "; it will be released in %d s unless used" % left
                                     if left else ""), RuntimeWarning, 2)
                elif words[0] == "idle-release":
                    warnings.warn("lease %s on GPU %s was idle too long and has been released "
                                  "(the daemon's idle_release): its GPU may go to someone else; "
                                  "stop using it" % (lease.id, gpus), RuntimeWarning, 2)
    threading.Thread(target=told, daemon=True, name="gpuctl-lease-%s" % lease.id).start()
