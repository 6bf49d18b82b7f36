#!/usr/bin/env python3
"""pynvml_check.py: NVIDIA's own Python bindings (pynvml) read the stand-in libnvidia-ml.so.1.

A third client, written by NVIDIA: it must read the simulated H200 under load (FAKENVML_MACHINE,
LD_LIBRARY_PATH set by the caller) as the machine file says. Prints "ok - ..." / "not ok - ...".
"""
import pynvml as N

failed = False


def check(name, cond, detail=""):
    global failed
    print(("ok - " if cond else "not ok - ") + "pynvml: " + name)
    if not cond:
        failed = True
        print("#   " + str(detail))


def val(b):
    return b.decode() if isinstance(b, bytes) else b


N.nvmlInit()
h = N.nvmlDeviceGetHandleByIndex(0)
check("driver and NVML versions", (val(N.nvmlSystemGetDriverVersion()), val(N.nvmlSystemGetNVMLVersion()))
      == ("590.48.01", "13.590.48.01"))
check("name, serial, VBIOS", (val(N.nvmlDeviceGetName(h)), val(N.nvmlDeviceGetSerial(h)), val(N.nvmlDeviceGetVbiosVersion(h)))
      == ("NVIDIA H200", "0000000000000", "96.00.A5.00.03"))
m = N.nvmlDeviceGetMemoryInfo(h)
check("memory (v1: used includes reserved)", (m.total, m.used + m.free) == (150754820096, 150754820096), (m.total, m.used, m.free))
check("power: usage, requested, enforced, default, constraints",
      (N.nvmlDeviceGetPowerUsage(h), N.nvmlDeviceGetPowerManagementLimit(h), N.nvmlDeviceGetEnforcedPowerLimit(h),
       N.nvmlDeviceGetPowerManagementDefaultLimit(h), list(N.nvmlDeviceGetPowerManagementLimitConstraints(h)))
      == (531882, 700000, 700000, 700000, [200000, 700000]))
check("clocks and max clocks, video included",
      ([N.nvmlDeviceGetClockInfo(h, k) for k in range(4)], [N.nvmlDeviceGetMaxClockInfo(h, k) for k in range(4)])
      == ([1980, 1980, 3201, 1545], [1980, 1980, 3201, 1545]))
check("thresholds", [N.nvmlDeviceGetTemperatureThreshold(h, k) for k in range(4)] == [97, 94, 95, 89])
check("performance state and clock event (throttle) reasons",
      (N.nvmlDeviceGetPerformanceState(h), N.nvmlDeviceGetCurrentClocksThrottleReasons(h),
       N.nvmlDeviceGetSupportedClocksThrottleReasons(h)) == (0, 0, 0x1FF))
check("PCIe link and throughput",
      (N.nvmlDeviceGetCurrPcieLinkGeneration(h), N.nvmlDeviceGetMaxPcieLinkWidth(h),
       N.nvmlDeviceGetPcieThroughput(h, 0), N.nvmlDeviceGetPcieThroughput(h, 1)) == (5, 16, 41285, 2318452))
check("encoder and decoder", list(N.nvmlDeviceGetEncoderUtilization(h))[0] == 0 and list(N.nvmlDeviceGetDecoderUtilization(h))[0] == 0)
fv = N.nvmlDeviceGetFieldValues(h, [82])
check("memory temperature through field values", fv[0].nvmlReturn == 0 and fv[0].value.uiVal == 48)
procs = sorted((p.pid, p.usedGpuMemory) for p in N.nvmlDeviceGetComputeRunningProcesses(h))
check("compute processes", procs == [(4010291, 2566 << 20), (4010305, 29796 << 20)], procs)
samples = sorted((s.pid, s.smUtil, s.memUtil) for s in N.nvmlDeviceGetProcessUtilization(h, 0))
check("per-process utilisation samples", (4010305, 97, 38) in samples and (4010291, 0, 3) in samples, samples)
N.nvmlShutdown()
raise SystemExit(1 if failed else 0)
