"""Has CUDA already started in this process?

CUDA reads CUDA_VISIBLE_DEVICES once, when the driver library initialises; a value put into
os.environ after that changes nothing for this process (the mistake `gpuctl doctor` reports as
late_visibility). The robust sign is the driver library, libcuda.so, mapped into the process:
every framework loads it to use a GPU. The frameworks' own flags are asked too, but only of
modules already imported: importing torch here could itself be what starts CUDA.
"""

import os
import sys


def libcuda_mapped():
    """The paths of the CUDA driver libraries (libcuda.so*) mapped into this process."""
    found = []
    try:
        with open("/proc/self/maps", "rb") as maps:
            for line in maps:
                fields = line.split(None, 5)
                if len(fields) < 6:
                    continue
                path = fields[5].rstrip(b"\n").decode("utf-8", "replace")
                base = os.path.basename(path.split(" (deleted)")[0])
                if (base == "libcuda.so" or base.startswith("libcuda.so.")) and path not in found:
                    found.append(path)
    except OSError:
        pass
    return found


def _torch():
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    try:
        return bool(cuda is not None and cuda.is_initialized())
    except Exception:  # a broken or partial import: it says nothing either way
        return False


def _tensorflow():
    context = sys.modules.get("tensorflow.python.eager.context")
    ctx = getattr(context, "_context", None)  # the global context, only if TF made it
    if ctx is None or getattr(ctx, "_context_handle", None) is None:
        return False
    try:
        return any(d.device_type == "GPU" for d in (ctx._physical_devices or ()))
    except Exception:
        return False


def _jax():
    bridge = sys.modules.get("jax._src.xla_bridge")
    backends = getattr(bridge, "_backends", None) or {}
    try:
        return any(k in ("cuda", "gpu", "rocm") for k in backends)
    except Exception:
        return False


def cuda_initialized():
    """Why CUDA is known to have started in this process: a tuple of reasons, empty (false)
    when nothing says so. Never imports a framework."""
    reasons = ["%s is loaded" % p for p in libcuda_mapped()]
    if _torch():
        reasons.append("torch has initialised CUDA (torch.cuda.is_initialized())")
    if _tensorflow():
        reasons.append("tensorflow has initialised its GPU devices")
    if _jax():
        reasons.append("jax has initialised its GPU backend")
    return tuple(reasons)


def startup_environ():
    """This process's environment as it was started (/proc/self/environ): what CUDA saw if it
    started before anyone changed os.environ. None when it cannot be read."""
    try:
        with open("/proc/self/environ", "rb") as f:
            raw = f.read()
    except OSError:
        return None
    env = {}
    for entry in raw.split(b"\0"):
        key, eq, value = entry.partition(b"=")
        if eq:
            env[os.fsdecode(key)] = os.fsdecode(value)
    return env
