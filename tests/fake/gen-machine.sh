#!/usr/bin/env bash
# gen-machine.sh FILE NGPUS NPROCS [PID...]: writes a simulated machine (tests/fake/machines/README.md)
# with NGPUS H100s and NPROCS compute processes spread over them: first the given pids (live
# processes, so /proc lookups do real work), then fictional ones. For tests and bench/.
set -eu
out=$1 ngpus=$2 nprocs=$3; shift 3
pids=("$@")
{
	echo "driver_version = 550.54.15"
	echo "cuda_driver_version = 12040"
	for ((i = 0; i < ngpus; i++)); do
		printf '[gpu]\nname = NVIDIA H100 80GB HBM3\nuuid = GPU-%08x-1111-2222-3333-%012x\n' "$((0x5000 + i))" "$i"
		printf 'pci_bus_id = 00000000:%02X:00.0\npci_device_id = 0x233010DE\n' "$((0x10 + i * 8))"
		printf 'memory_total_mib = 81559\nmemory_used_mib = %d\nmemory_reserved_mib = 512\n' "$((i * 1000))"
		printf 'util_gpu = %d\nutil_memory = 5\ntemperature = 40\npower_mw = 150000\n' "$((i * 5 % 101))"
		printf 'power_limit_mw = 700000\ncompute_mode = Default\ncc = 9.0\ncores = 16896\nmig_mode = 0\n'
		printf 'persistence = 1\nclock_sm = 1980\nclock_graphics = 1980\nclock_memory = 2619\necc = 1\n\n'
	done
	for ((p = 0; p < nprocs; p++)); do
		if ((p < ${#pids[@]})); then pid=${pids[p]}; else pid=$((3000000 + p)); fi
		printf '[process]\ngpu = %d\npid = %d\nused_memory_mib = %d\n\n' "$((p % ngpus))" "$pid" "$((100 + p))"
	done
} >"$out"
