/* gpuctl.h: the commands of the table in main.c (each cmd-*.c file exports one entry), and the
 * map of the modules: which file owns what, in the order data flows.
 *
 * Dispatch
 *   main.c          the command table and main()
 *   cmd.c, args.c   lookup (prefixes, no abbreviation of kill/release, did-you-mean), options
 *                   parsed once from each entry's template, cmd_open (NVML and -g resolved once),
 *                   the shared errors and the top-level help; cmd.h declares it all
 *   cmd-*.c         one file per command; cmd-cuda-probe.c is the internal child of map --verify
 * The machine
 *   gpu.c, gpu.h    the vendor-neutral model with validity bits, the backend vtable, and the one
 *                   parser of GPU lists (indices, UUID prefixes, bus ids)
 *   nvml.c          the NVIDIA backend (nvml_abi.h: NVML's ABI, declared here, loaded at run time)
 *   dl.c            loading a shared library and resolving its functions (NVML, libmicrohttpd,
 *                   libcuda, ncurses)
 *   proc.c          owner and command line of the GPU processes, once per pid and refresh; for
 *                   top (REFRESH_PROC_STATS) parent, start, host CPU and RSS
 *   pid.c           one process by pid: /proc/PID/stat, its environment, pidfds; user names
 *   kill.c          the safe path of signalling a listed process (kill, top): who may, a pidfd
 *                   checked against the start time, TERM escalating to KILL
 *   slurm.c         Slurm on a node: a process's job from its cgroup (read by proc.c on Slurm
 *                   nodes only), the allocation we run in (SLURM_*_GPUS: run/env, map, which),
 *                   a job's GPUs from scontrol (doctor), Slurm's tools through exec
 * Pure cores (no I/O: unit-tested directly)
 *   visibility.c    CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER as the driver reads them
 *   alloc.c         the free-GPU rule and the fair queue
 *   query.c         nvidia-smi's --query-* fields and CSV
 *   json.c          the JSON writer; metrics.c: the Prometheus exposition; table.c: the
 *                   status table, laid out for the terminal's width (and height, in a loop)
 * Glue
 *   visenv.c        the visibility model on this machine and an environment (the caller's, the
 *                   options', a running process's): map, which, doctor, run
 *   doctor.c        the doctor's findings (the command prints them; top shows one process's)
 *   status-json.c   the keys of status --json --details: what top shows beyond the plain JSON
 *   cudaprobe.c     map --verify's side of the CUDA probe
 *   config.c        settings (inih) and where each came from (cmd-config.c lists them);
 *                   config-daemon.c the daemon's policy ([daemon]), sharing config-parse.h;
 *                   term.c: colour, width and height; util.c: the exit codes, errors,
 *                   allocation, string buffers, number parsers, MiB
 * Leases: the daemon (one trusted writer; its design is the comment in daemon.h)
 *   daemon.c        the event loop: the socket, connections and their bounds, dispatch
 *   daemon-lease.c  the lease table: lock files, FIFOs, records, recovery after a restart
 *   daemon-queue.c  requests, the scheduling pass (alloc.c), offers, timeouts
 *   daemon-order.c  the queue's order (fair share or first come) and the positions users see
 *   daemon-list.c   `list` for clients, the queue file kept across a restart, job ids
 *   proto.c         the one message format (and its strict decoder) of socket and state files
 * Leases: the clients
 *   client.c        finding the daemon (shared, or the user's private one, started on demand)
 *   grant.c         a request through the queue to the lease's descriptors; grant-env.c: the
 *                   candidates, why GPUs are busy, the job's environment
 *   lreq.c          one request's exchange with the daemon, as a state machine without I/O:
 *                   grant.c drives one (run, env), the job runner one per queued job
 *   leaseview.c     who holds what and who waits (`list`): status, leases, release, doctor,
 *                   the exporter; leaseopts.c: the options run, env and submit share
 *   escape.c        another user's text made safe for a terminal
 * The full-screen view (gpuctl top; tui.h has its map)
 *   tui-text.c, tui-model.c, tui-layout.c, tui-gpus.c, tui-procs.c, tui-keys.c: pure (frames,
 *                   the model, what goes where, the cards, the table and overlays, the keys)
 *   tui-act.c       signal, release, details; tui-draw.c the one file that calls curses, which
 *                   tui-curses.c loads at run time (tui-curses.h: the ABI and why)
 * The cluster view (status --prometheus)
 *   promapi.c       Prometheus's HTTP API: libcurl and json-c loaded at run time (dl.c)
 *   cluster.c       the model: targets, GPUs current and last known, staleness, host names;
 *                   cluster-view.c shows it (table by host, JSON, --free)
 * Detached jobs (submit, jobs, logs, cancel, wait)
 *   jobbackend.h    where a job runs, behind one table of functions (as gpu.h for GPUs): this
 *                   machine (jobs-local.c) or Slurm (slurm-jobs.c); ids "17" and "slurm:42"
 *   jobset.c        the jobs a command names, across backends, and one loop that waits on them
 *   job.c           a job's record and the user's jobs directories; jobspec.c its parsers (the
 *                   spec file, id lists of both kinds, --file lines)
 *   jobs-local.c    the local backend: the user's job runner and the shared daemon
 *   jobconn.c       what it shares with the runner: reaching it, reading records, exit statuses
 *   runner*.c       the per-user job runner (runner.h has the design): its loop, submits,
 *                   requests and dependencies, starting and reaping jobs
 *   slurm-jobs.c    the Slurm backend: the user's Slurm jobs from squeue/scontrol, cancel,
 *                   watching; slurm-submit.c: one sbatch a job; slurm-jobspec.c (pure: sbatch's
 *                   argv, the squeue/scontrol parsers, the site's memory mappings);
 *                   slurm-sacct.c: Slurm's accounting (sacct) on jobs slurmctld forgot
 *
 * Flow: main -> cmd_main -> cmd_find -> args_parse -> exec (checks its option values) ->
 * cmd_open (gpu_set_open: backend open; gpu_set_select) -> gpu_set_refresh (backend refresh,
 * then proc.c) -> the command's view (query/json/metrics, visenv -> visibility) -> stdout;
 * cmd_main frees what cmd_open opened. Leasing: run/env -> grant_acquire -> client (socket) ->
 * daemon: queue_acquire -> queue_schedule (usage_refresh, alloc_schedule) -> offer -> take ->
 * lease_grant (descriptors) -> the job (grant_hold: commit) ... FIFO hang-up -> lease end. */
#ifndef GPUCTL_H
#define GPUCTL_H

#include "cmd/cmd.h"

extern const struct cmd_entry cmd_status_entry;
extern const struct cmd_entry cmd_map_entry;
extern const struct cmd_entry cmd_which_entry;
extern const struct cmd_entry cmd_run_entry;
extern const struct cmd_entry cmd_env_entry;
extern const struct cmd_entry cmd_leases_entry;
extern const struct cmd_entry cmd_release_entry;
extern const struct cmd_entry cmd_doctor_entry;
extern const struct cmd_entry cmd_kill_entry;
extern const struct cmd_entry cmd_top_entry;
extern const struct cmd_entry cmd_exporter_entry;
extern const struct cmd_entry cmd_daemon_entry;
extern const struct cmd_entry cmd_submit_entry;
extern const struct cmd_entry cmd_jobs_entry;
extern const struct cmd_entry cmd_logs_entry;
extern const struct cmd_entry cmd_cancel_entry;
extern const struct cmd_entry cmd_wait_entry;
extern const struct cmd_entry cmd_runner_entry;
extern const struct cmd_entry cmd_config_entry;
extern const struct cmd_entry cmd_cuda_probe_entry;

#endif
