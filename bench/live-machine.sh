#!/usr/bin/env bash
# bench/live-machine.sh FILE NGPUS NPROCS: writes a simulated machine (tests/fake/machines/README.md)
# whose NPROCS process entries are real live processes with realistic command lines, owners and
# environments (bench/spawn.c), spread over NGPUS GPUs, and keeps them alive until interrupted;
# they end with it, however it ends. For trying gpuctl on a big machine by hand:
#   bench/live-machine.sh /tmp/m64 64 10000 &
#   FAKENVML_MACHINE=/tmp/m64 GPUCTL_NVML_LIBRARY=build/fakenvml/libnvidia-ml.so.1 build/gpuctl status
# 10,000 processes need about 1 GiB of memory and `ulimit -u` above 10,000; run as root to give
# them several owners.
. "$(dirname "$0")/lib.sh"
[ $# -eq 3 ] || { echo "usage: bench/live-machine.sh FILE NGPUS NPROCS" >&2; exit 2; }
file=$(realpath -m "$1")
live_machine "$file" "$2" "$3"
echo "bench: $3 live processes on $2 GPUs in $file; interrupt to end them" >&2
wait "$spawner"
