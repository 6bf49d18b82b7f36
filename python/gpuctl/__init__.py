"""gpuctl for Python: lease GPUs from a script or a Jupyter kernel, before CUDA starts.

    import gpuctl
    lease = gpuctl.lease(1)          # before `import torch` (a notebook's first cell)
    import torch                     # sees exactly the leased GPU, as cuda:0

The lease lasts as long as this process (a kernel restart ends it) or until lease.release().
Two processes never get the same GPU; with wait=... they queue fairly with everyone else.
It drives the gpuctl binary (`gpuctl env --format=json --hold-pid <this pid>`): every rule is
the binary's, and every failure is an exception carrying gpuctl's own message and exit status.
Standard library only.
"""

import json

from ._binary import BinaryNotFound, Error, NoFreeGPU, WaitTimeout, binary
from ._binary import run as _run
from ._cuda import cuda_initialized
from ._lease import GPU, CudaAlreadyInitialized, Lease, held, lease
from ._lease import _gpu_list

__version__ = "0.1.0"

# The classes are gpuctl's own, wherever they are defined: a traceback says
# "gpuctl.NoFreeGPU: ...", the name to catch (`except gpuctl.NoFreeGPU`), not a private module's.
for _cls in (Error, NoFreeGPU, WaitTimeout, BinaryNotFound, CudaAlreadyInitialized, Lease, GPU):
    _cls.__module__ = __name__
del _cls

__all__ = ["lease", "held", "status", "leases", "cuda_initialized", "binary", "Lease", "GPU",
           "Error", "NoFreeGPU", "WaitTimeout", "CudaAlreadyInitialized", "BinaryNotFound"]


def status(gpus=None):
    """The `gpuctl status --json` document (gpuctl-status(1): JSON) as Python data; ``gpus``
    restricts it as -g does. A lost GPU is marked in it ("lost": true), as gpuctl marks it."""
    args = ["status", "--json"]
    if gpus is not None:
        args.append("--gpus=" + _gpu_list(gpus))
    return json.loads(_run(args, ok=(0, 5)))


def leases():
    """The `gpuctl leases --json` document: every live lease and the queue."""
    return json.loads(_run(["leases", "--json"]))
