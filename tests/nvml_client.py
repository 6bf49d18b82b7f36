#!/usr/bin/env python3
"""nvml_client.py: a second, independent NVML client for the test stand-in libnvidia-ml.so.1.

Its ctypes structures follow NVIDIA's published nvml.h layouts (as pynvml declares them), not
gpuctl's C declarations, so a layout mistake shared by gpuctl and the stand-in shows up here.
Prints "ok - ..." / "not ok - ..." lines for tests/run.sh.
"""
import ctypes as C
import os
import sys

BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MACHINES = os.path.join(ROOT, "tests", "machines")
failed = 0
checks = 0


def check(name, cond, detail=""):
    global failed, checks
    checks += 1
    print(("ok - " if cond else "not ok - ") + name)
    if not cond:
        failed = 1
        if detail:
            print("#   " + str(detail))


class Memory(C.Structure):          # nvmlMemory_t
    _fields_ = [("total", C.c_ulonglong), ("free", C.c_ulonglong), ("used", C.c_ulonglong)]


class Memory_v2(C.Structure):       # nvmlMemory_v2_t
    _fields_ = [("version", C.c_uint), ("total", C.c_ulonglong), ("reserved", C.c_ulonglong),
                ("free", C.c_ulonglong), ("used", C.c_ulonglong)]


class PciInfo(C.Structure):         # nvmlPciInfo_t (v3)
    _fields_ = [("busIdLegacy", C.c_char * 16), ("domain", C.c_uint), ("bus", C.c_uint),
                ("device", C.c_uint), ("pciDeviceId", C.c_uint), ("pciSubSystemId", C.c_uint),
                ("busId", C.c_char * 32)]


class PciInfo_v1(C.Structure):      # the plain / _v2 layout
    _fields_ = [("busId", C.c_char * 16), ("domain", C.c_uint), ("bus", C.c_uint),
                ("device", C.c_uint), ("pciDeviceId", C.c_uint), ("pciSubSystemId", C.c_uint),
                ("reserved0", C.c_uint), ("reserved1", C.c_uint), ("reserved2", C.c_uint),
                ("reserved3", C.c_uint)]


class ProcessInfo_v1(C.Structure):
    _fields_ = [("pid", C.c_uint), ("usedGpuMemory", C.c_ulonglong)]


class ProcessInfo_v2(C.Structure):
    _fields_ = [("pid", C.c_uint), ("usedGpuMemory", C.c_ulonglong),
                ("gpuInstanceId", C.c_uint), ("computeInstanceId", C.c_uint)]


class ProcessInfo_535(C.Structure):
    _fields_ = ProcessInfo_v2._fields_ + [("usedGpuCcProtectedMemory", C.c_ulonglong)]


class Utilization(C.Structure):
    _fields_ = [("gpu", C.c_uint), ("memory", C.c_uint)]


def read_machine(path):
    """The few facts this client compares against, straight from the machine file."""
    gpus, procs, cur = [], [], None
    for line in open(path):
        line = line.split(" #")[0].strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            cur = {}
            (gpus if line == "[gpu]" else procs if line == "[process]" else []).append(cur)
            continue
        k, v = [x.strip() for x in line.split("=", 1)]
        if cur is not None:
            cur[k] = v
    return gpus, procs


def load(variant, machine):
    os.environ["FAKENVML_MACHINE"] = os.path.join(MACHINES, machine)
    return C.CDLL(os.path.join(ROOT, BUILD, variant, "libnvidia-ml.so.1"))


def fetch_procs(lib, fn, h, struct):
    n = C.c_uint(0)
    r = getattr(lib, fn)(h, C.byref(n), None)
    if r == 0:
        return r, []
    if r != 7:
        return r, None
    first = n.value
    buf = (struct * (2 * first + 5))()
    n = C.c_uint(len(buf))
    r = getattr(lib, fn)(h, C.byref(n), buf)
    return (r, [buf[i] for i in range(n.value)]) if r == 0 else (r, None)


def test_current():
    lib = load("fakenvml", "h100x8.machine")
    gpus, procs = read_machine(os.path.join(MACHINES, "h100x8.machine"))
    lib.nvmlErrorString.restype = C.c_char_p
    n = C.c_uint(0)
    check("calls before init answer UNINITIALIZED", lib.nvmlDeviceGetCount_v2(C.byref(n)) == 1)
    check("nvmlInitWithFlags(0) succeeds", lib.nvmlInitWithFlags(0) == 0)
    check("nvmlInit_v2 nests", lib.nvmlInit_v2() == 0)
    check("count_v2 is the machine's GPU count",
          lib.nvmlDeviceGetCount_v2(C.byref(n)) == 0 and n.value == len(gpus), n.value)
    check("sizeof(nvmlPciInfo_t) == 68", C.sizeof(PciInfo) == 68)
    check("sizeof(nvmlPciInfo_v1) == 52", C.sizeof(PciInfo_v1) == 52)
    check("sizeof(nvmlMemory_v2_t) == 40", C.sizeof(Memory_v2) == 40)
    bad = C.c_void_p()
    check("bad index is INVALID_ARGUMENT",
          lib.nvmlDeviceGetHandleByIndex_v2(len(gpus), C.byref(bad)) == 2)
    for i, g in enumerate(gpus):
        h = C.c_void_p()
        check(f"gpu {i}: handle by index", lib.nvmlDeviceGetHandleByIndex_v2(i, C.byref(h)) == 0)
        name, uuid = C.create_string_buffer(96), C.create_string_buffer(96)
        lib.nvmlDeviceGetName(h, name, 96)
        lib.nvmlDeviceGetUUID(h, uuid, 96)
        check(f"gpu {i}: name and uuid", name.value.decode() == g["name"]
              and uuid.value.decode() == g["uuid"])
        small = C.create_string_buffer(8)
        check(f"gpu {i}: short uuid buffer is INSUFFICIENT_SIZE",
              lib.nvmlDeviceGetUUID(h, small, 8) == 7)
        pci = PciInfo()
        lib.nvmlDeviceGetPciInfo_v3(h, C.byref(pci))
        legacy = "%04X" % int(g["pci_bus_id"].split(":")[0], 16) + g["pci_bus_id"][8:]
        check(f"gpu {i}: v3 busId and busIdLegacy", pci.busId.decode() == g["pci_bus_id"]
              and pci.busIdLegacy.decode() == legacy, (pci.busId, pci.busIdLegacy))
        check(f"gpu {i}: pciDeviceId", pci.pciDeviceId == int(g["pci_device_id"], 16))
        p1 = PciInfo_v1()
        lib.nvmlDeviceGetPciInfo(h, C.byref(p1))
        check(f"gpu {i}: plain PCI layout", p1.busId.decode() == legacy and p1.bus == pci.bus)
        m1, m2 = Memory(), Memory_v2(version=0x02000028)
        r1, r2 = lib.nvmlDeviceGetMemoryInfo(h, C.byref(m1)), lib.nvmlDeviceGetMemoryInfo_v2(h, C.byref(m2))
        mib = 1 << 20
        check(f"gpu {i}: memory v2 fields", r2 == 0 and m2.total == int(g["memory_total_mib"]) * mib
              and m2.used == int(g["memory_used_mib"]) * mib
              and m2.reserved == int(g["memory_reserved_mib"]) * mib
              and m2.total == m2.reserved + m2.free + m2.used)
        check(f"gpu {i}: memory v1 used includes reserved", r1 == 0 and m1.used == m2.used + m2.reserved
              and m1.total == m1.used + m1.free)
        wrong = Memory_v2(version=2)
        check(f"gpu {i}: memory v2 with version 2 is FUNCTION_NOT_FOUND",
              lib.nvmlDeviceGetMemoryInfo_v2(h, C.byref(wrong)) == 13)
        mine = sorted(int(p["pid"]) for p in procs if int(p["gpu"]) == i
                      and p.get("type", "compute") in ("compute", "both"))
        for fn, st in (("nvmlDeviceGetComputeRunningProcesses_v3", ProcessInfo_v2),
                       ("nvmlDeviceGetComputeRunningProcesses_v2", ProcessInfo_v2),
                       ("nvmlDeviceGetComputeRunningProcesses", ProcessInfo_v1)):
            r, got = fetch_procs(lib, fn, h, st)
            check(f"gpu {i}: {fn} two-call protocol and pids", r == 0 and
                  sorted(e.pid for e in got) == mine, (r, got and [e.pid for e in got], mine))
            if got and st is ProcessInfo_v2:
                check(f"gpu {i}: {fn} gi/ci unavailable without MIG",
                      all(e.gpuInstanceId == 0xFFFFFFFF for e in got))
        u = Utilization()
        check(f"gpu {i}: utilisation", lib.nvmlDeviceGetUtilizationRates(h, C.byref(u)) == 0
              and u.gpu == int(g["util_gpu"]))
    fan = C.c_uint()
    h0 = C.c_void_p()
    lib.nvmlDeviceGetHandleByIndex_v2(0, C.byref(h0))
    check("missing fan is NOT_SUPPORTED", lib.nvmlDeviceGetFanSpeed(h0, C.byref(fan)) == 3)
    h = C.c_void_p()
    check("handle by UUID", lib.nvmlDeviceGetHandleByUUID(gpus[3]["uuid"].encode(), C.byref(h)) == 0
          and h.value == (lambda x: (lib.nvmlDeviceGetHandleByIndex_v2(3, C.byref(x)), x.value)[1])(C.c_void_p()))
    check("unknown UUID is NOT_FOUND", lib.nvmlDeviceGetHandleByUUID(b"GPU-nope", C.byref(h)) == 6)
    check("handle by lower-case short bus id",
          lib.nvmlDeviceGetHandleByPciBusId_v2(gpus[1]["pci_bus_id"][9:].lower().encode(), C.byref(h)) == 0)
    check("error string", lib.nvmlErrorString(15) == b"GPU is lost")
    check("shutdown, shutdown", lib.nvmlShutdown() == 0 and lib.nvmlShutdown() == 0)
    check("calls after the last shutdown answer UNINITIALIZED", lib.nvmlDeviceGetCount_v2(C.byref(n)) == 1)
    check("an extra shutdown reports no error", lib.nvmlShutdown() == 0)


def test_mig():
    lib = load("fakenvml", "a100-mig.machine")
    lib.nvmlInit_v2()
    h, mh = C.c_void_p(), C.c_void_p()
    lib.nvmlDeviceGetHandleByIndex_v2(0, C.byref(h))
    cur, pend, mx = C.c_uint(), C.c_uint(), C.c_uint()
    check("mig mode on", lib.nvmlDeviceGetMigMode(h, C.byref(cur), C.byref(pend)) == 0 and cur.value == 1)
    check("max mig count", lib.nvmlDeviceGetMaxMigDeviceCount(h, C.byref(mx)) == 0 and mx.value == 7)
    u = Utilization()
    check("utilisation under MIG is NOT_SUPPORTED", lib.nvmlDeviceGetUtilizationRates(h, C.byref(u)) == 3)
    found = []
    for i in range(mx.value):
        r = lib.nvmlDeviceGetMigDeviceHandleByIndex(h, i, C.byref(mh))
        if r == 6:
            continue
        gi, ci, uuid = C.c_uint(), C.c_uint(), C.create_string_buffer(96)
        lib.nvmlDeviceGetGpuInstanceId(mh, C.byref(gi))
        lib.nvmlDeviceGetComputeInstanceId(mh, C.byref(ci))
        lib.nvmlDeviceGetUUID(mh, uuid, 96)
        found.append((gi.value, ci.value, uuid.value.decode()[:4]))
    check("MIG slots: three instances, empty slots NOT_FOUND",
          found == [(1, 0, "MIG-"), (2, 0, "MIG-"), (7, 0, "MIG-")], found)
    gi = C.c_uint()
    check("GetGpuInstanceId on a full GPU is NOT_SUPPORTED", lib.nvmlDeviceGetGpuInstanceId(h, C.byref(gi)) == 3)
    r, got = fetch_procs(lib, "nvmlDeviceGetComputeRunningProcesses_v3", h, ProcessInfo_v2)
    check("processes carry GI/CI ids", r == 0 and sorted((e.pid, e.gpuInstanceId) for e in got)
          == [(4000301, 1), (4000302, 2)], got and [(e.pid, e.gpuInstanceId) for e in got])
    lib.nvmlDeviceGetMigDeviceHandleByIndex(h, 1, C.byref(mh))
    r, got = fetch_procs(lib, "nvmlDeviceGetComputeRunningProcesses_v3", mh, ProcessInfo_v2)
    check("a MIG handle lists its own processes", r == 0 and [e.pid for e in got] == [4000302])
    lib.nvmlShutdown()


def test_old_and_535():
    old = load("fakenvml-old", "h100x8.machine")
    check("old driver: no nvmlInit_v2", not hasattr(old, "nvmlInit_v2"))
    check("old driver: no _v3 process list",
          not hasattr(old, "nvmlDeviceGetComputeRunningProcesses_v3")
          and not hasattr(old, "nvmlDeviceGetComputeRunningProcesses_v2"))
    check("old driver: plain init works", old.nvmlInit() == 0)
    h = C.c_void_p()
    old.nvmlDeviceGetHandleByIndex(0, C.byref(h))
    r, got = fetch_procs(old, "nvmlDeviceGetComputeRunningProcesses", h, ProcessInfo_v1)
    check("old driver: 16-byte entries", r == 0 and [e.pid for e in got] == [4000101])
    old.nvmlShutdown()
    r535 = load("fakenvml-r535", "h100x8.machine")
    check("535: no detail list", not hasattr(r535, "nvmlDeviceGetRunningProcessDetailList")
          and hasattr(r535, "nvmlDeviceGetConfComputeMemSizeInfo"))
    r535.nvmlInit_v2()
    r535.nvmlDeviceGetHandleByIndex_v2(2, C.byref(h))
    r, got = fetch_procs(r535, "nvmlDeviceGetComputeRunningProcesses_v3", h, ProcessInfo_535)
    check("535: 32-byte _v3 entries", r == 0 and sorted(e.pid for e in got) == [4000102, 4000103]
          and all(e.usedGpuMemory == 20480 << 20 for e in got))
    r535.nvmlShutdown()


test_current()
test_mig()
test_old_and_535()
print("1..%d" % checks)   # the plan last (TAP allows it): a run that dies early has none
sys.exit(failed)
