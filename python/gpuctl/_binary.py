"""Finding the gpuctl binary, running it, and turning its exit codes into exceptions.

Every rule (which GPU is free, the queue, what CUDA_VISIBLE_DEVICES means) lives in the binary;
this module only passes arguments and reads JSON. gpuctl's own message (stderr) becomes the
exception's text, its exit status the exception's ``code``: nothing is ever guessed instead.
"""

import os
import shutil
import signal
import subprocess
import sys

# The exit codes of gpuctl(1)'s EXIT STATUS that get a class of their own (10, 11), or
# whose message lease() tells in its keywords (2: a value gpuctl refused).
EXIT_USAGE = 2
EXIT_BUSY = 10
EXIT_TIMEOUT = 11


class Error(Exception):
    """gpuctl failed. ``code``: its exit status (None when it never ran); ``message``: what it
    said (its stderr), which names what failed and what to do."""

    def __init__(self, message, code=None, argv=None):
        super().__init__(message)
        self.message = message
        self.code = code
        self.argv = argv


class NoFreeGPU(Error):
    """Not enough free GPUs, and no ``wait`` (exit status 10). The message says who holds what."""


class WaitTimeout(Error):
    """The ``wait`` duration ran out before the GPUs were free (exit status 11)."""


class BinaryNotFound(Error):
    """The gpuctl binary is not installed where this process looks ($GPUCTL_BINARY, then PATH)."""


def binary():
    """The gpuctl binary's path: $GPUCTL_BINARY when set, else the first gpuctl on PATH."""
    path = os.environ.get("GPUCTL_BINARY")
    if path:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
        raise BinaryNotFound("GPUCTL_BINARY=%r is not an executable file: point it at the gpuctl "
                             "binary, or unset it to look on PATH" % path)
    found = shutil.which("gpuctl")
    if not found:
        raise BinaryNotFound(
            "the gpuctl binary is not on PATH (%s): install it (`make install` in the gpuctl "
            "sources) or set GPUCTL_BINARY=/path/to/gpuctl; a Jupyter kernel started from a "
            "desktop may have a shorter PATH than your shell" % os.environ.get("PATH", "unset"))
    return found


# Lines gpuctl says by the way (the private-daemon note, a config warning): passed on to
# sys.stderr once per process, not repeated at every call nor mixed into an exception's text.
_ASIDES = ("gpuctl: note: ", "gpuctl: warning: ")
_said = set()


def _pass_on(lines):
    out = [line for line in lines if line not in _said]
    _said.update(out)
    if out:
        sys.stderr.write("".join(line + "\n" for line in out))
        sys.stderr.flush()


def _error(argv, code, err):
    lines = err.decode("utf-8", "replace").rstrip().splitlines()
    _pass_on([line for line in lines if line.startswith(_ASIDES)])
    text = "\n".join(line for line in lines if not line.startswith(_ASIDES)).strip()
    if code < 0:
        sig = -code
        try:
            sig = signal.Signals(sig).name
        except ValueError:
            pass
        text = "%s%sgpuctl %s was ended by signal %s" % (text, "\n" if text else "", argv[1], sig)
    elif not text:
        text = "gpuctl %s failed with exit status %d and said nothing" % (argv[1], code)
    cls = {EXIT_BUSY: NoFreeGPU, EXIT_TIMEOUT: WaitTimeout}.get(code, Error)
    return cls(text, code, argv)


def run(args, env=None, ok=(0,), forward_stderr=True, on_interrupt=None, pass_fds=()):
    """Runs `gpuctl ARGS...` and returns its stdout (bytes). An exit status outside ``ok`` raises
    Error (or the subclass for its code). On success what gpuctl said on stderr (a note, a
    warning) is passed on to sys.stderr, which a notebook shows under the cell, once.

    Ctrl-C (a notebook's "interrupt") while gpuctl waits: gpuctl gets SIGINT, leaves the queue
    and exits; should it have been granted at that very moment, ``on_interrupt(stdout)`` undoes
    what it did. Then KeyboardInterrupt goes on up."""
    argv = [binary()] + list(args)
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=env, pass_fds=pass_fds)
    except OSError as e:
        raise Error("cannot run %s: %s" % (argv[0], e.strerror or e), None, argv) from None
    try:
        out, err = proc.communicate()
    except KeyboardInterrupt:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        if proc.returncode == 0 and on_interrupt is not None:
            on_interrupt(out)
        raise
    if proc.returncode not in ok:
        raise _error(argv, proc.returncode, err)
    if forward_stderr and err:
        _pass_on(err.decode("utf-8", "replace").rstrip().splitlines())
    return out
