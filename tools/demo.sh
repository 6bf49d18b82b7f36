#!/usr/bin/env bash
# tools/demo.sh (`make demo`): runs `gpuctl status`. With an NVIDIA driver it shows the real GPUs;
# without one it says so and shows the simulated 8-GPU H100 server that the tests use, with a few
# stand-in job processes so the process lines have real users and command lines.
set -u
cd "$(dirname "$0")/.."
B=${B:-build}
if [ -z "${GPUCTL_NVML_LIBRARY:-}" ] && ldconfig -p 2>/dev/null | grep -q 'libnvidia-ml\.so\.1'; then
	exec "$B/gpuctl" status
fi
cat >&2 <<MSG
NOTE: no NVIDIA driver (libnvidia-ml.so.1) on this machine. What follows is gpuctl against the
SIMULATED 8-GPU H100 server in tests/fake/machines/h100x8.machine (test code, not real GPUs).
MSG
tmp=$(mktemp -d)
jobs_=()
trap 'kill "${jobs_[@]}" 2>/dev/null; rm -rf "$tmp"' EXIT
start() { bash -c 'a0=$1; shift; exec -a "$a0" "$0" "$@"' "$B/sleeper" "$@" & jobs_+=($!); }
start python3 train.py --model llama-7b --batch 32
start python3 -m torch.distributed.run --nproc_per_node 2 finetune.py
start python3 eval.py --ckpt runs/42/last.pt
start python3 -m torch.distributed.run --nproc_per_node 2 finetune.py --rank 1
sleep 0.1
sed -e "s/^pid = 4000101$/pid = ${jobs_[0]}/" -e "s/^pid = 4000102$/pid = ${jobs_[1]}/" \
    -e "s/^pid = 4000103$/pid = ${jobs_[3]}/" -e "s/^pid = 4000105$/pid = ${jobs_[2]}/" \
    tests/fake/machines/h100x8.machine >"$tmp/demo.machine"
FAKENVML_MACHINE=$tmp/demo.machine GPUCTL_NVML_LIBRARY=$PWD/$B/fakenvml/libnvidia-ml.so.1 \
	"$B/gpuctl" status "$@"
