"""tests/helper/pykernel.py OUT CTL: drives a real IPython kernel (jupyter_client, ipykernel) for
t5005-python.sh. The kernel is the one named gpuctl-test (a spec the test writes on
$JUPYTER_PATH), started with this process's environment. Appends to OUT:
  "leased KERNEL_PID LEASE_ID CUDA_VISIBLE_DEVICES" after a cell ran gpuctl.lease(),
then waits for "restart" on the fifo CTL, restarts the kernel as Jupyter's menu does, and appends
  "restarted KERNEL_PID CUDA_VISIBLE_DEVICES" from a cell of the new kernel,
then waits for "exit". A failure appends "error ..." and exits 1."""

import sys

from jupyter_client.manager import KernelManager


def say(line):
    with open(sys.argv[1], "a") as out:
        out.write(line + "\n")


def cell(kc, code):
    """Runs code in the kernel: its stdout, or an error naming the exception."""
    text = []

    def hook(msg):
        if msg["msg_type"] == "stream" and msg["content"]["name"] == "stdout":
            text.append(msg["content"]["text"])
        elif msg["msg_type"] == "error":
            text.append("%s: %s" % (msg["content"]["ename"], msg["content"]["evalue"]))

    reply = kc.execute_interactive(code, output_hook=hook, timeout=60)
    if reply["content"]["status"] != "ok":
        raise RuntimeError("cell failed: " + "".join(text))
    return "".join(text).strip()


def wait_for(word):
    with open(sys.argv[2]) as ctl:
        for line in ctl:
            if line.strip() == word:
                return


def main():
    km = KernelManager(kernel_name="gpuctl-test")
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
        say("leased " + cell(kc, "import gpuctl, os\n"
                                 "lease = gpuctl.lease(name='notebook')\n"
                                 "print(os.getpid(), lease.id, os.environ['CUDA_VISIBLE_DEVICES'])"))
        wait_for("restart")
        km.restart_kernel()  # as Kernel > Restart: a shutdown request, then a new process
        kc.wait_for_ready(timeout=60)
        say("restarted " + cell(kc, "import os\n"
                                    "print(os.getpid(), os.environ.get('CUDA_VISIBLE_DEVICES'))"))
        wait_for("exit")
    except Exception as e:
        say("error %s: %s" % (type(e).__name__, e))
        sys.exit(1)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


main()
