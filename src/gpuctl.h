/* gpuctl.h: the map of the source, a folder per layer, and the rank rule between the folders.
 * Each folder's design is the comment at the top of its first header (named below); this is the
 * one place that says how they stand to each other.
 *
 * Ranks (checked by `make check-layers`, tools/check-layers.sh, which reads this block):
 *   0 base
 *   1 config machine
 *   2 cuda daemon cluster
 *   3 lease
 *   4 view jobs
 *   5 tui runner
 *   6 cmd
 * Programs: daemon runner
 * A file uses its own folder and lower ranks only (calls and includes alike); folders of one rank
 * never use each other; main.c, at the top, uses cmd/. The three programs (the CLI, `gpuctl
 * daemon`, `gpuctl runner`) are one binary: daemon/ and runner/ are entered from cmd/ only, so no
 * program calls into another's; the daemon and its clients (the CLI, and the runner, which leases
 * for its jobs through lease/) speak only through base/ (the wire format, the peer module), and
 * share the machine and config layers below. Only cmd/ reads argv or prints usage; everything
 * below returns an error (struct gpu_error) that a command prints (cmd_fail, cmd_bad_usage). No
 * circle of objects or of includes. The unit tests and the test workload link all but cmd/ and
 * main.c (the Makefile's LIBOBJ), so the core cannot come to need a command.
 *
 * base/      rank 0, no gpuctl concept (util.h): exit codes, errors, allocation, string buffers,
 *            number, size and duration parsers (util.c); loading a shared library and resolving
 *            its functions (dl.c); another user's text made safe for a terminal (escape.c); the
 *            JSON writer (json.c); one field of a JSON text read with bounds (jsonscan.c);
 *            colour and size of the terminal (term.c); the one message format of socket and state
 *            files (proto.c); running a tool with an argv and a deadline (exec.c); the peer
 *            module under both servers: sockets, peers known by the kernel's credentials, bounded
 *            out-queues, the loop (peer.c, as tmux's proc.c)
 * config/    rank 1 (config.h): the users' settings and profiles and where each came from
 *            (config.c), the INI reading (parse.c), the daemon's policy (daemon.c)
 * machine/   rank 1 (gpu.h): the vendor-neutral GPU model with validity bits and the one parser
 *            of GPU lists (gpu.c); the facade a command opens and refreshes (machine.c); owner and
 *            command line of the GPU processes (proc.c; its reading of /proc in proc-read.c);
 *            one process by pid (pid.c); signalling a listed process safely (kill.c); Slurm on
 *            a node (slurm.c); a process's container from its cgroup (container.c) and its name
 *            from the runtime (runtime.c); the model as the daemon's shared snapshot carries
 *            it, both sides' one encoding (snap.c); the topology model (topo.c); nvml/: the
 *            NVIDIA backend, NVML's ABI declared by us (abi.h), loaded at run time (lib.c), read
 *            into the model (backend.c, fields.c, topo.c)
 * cuda/      rank 2 (visibility.h): CUDA_VISIBLE_DEVICES as the driver reads it, pure
 *            (visibility.c); that model on this machine and an environment (visenv.c); map
 *            --verify's probe (probe.c)
 * daemon/    rank 2, `gpuctl daemon`, the one trusted writer (design: daemon.h): the free-GPU rule
 *            and fair queue, pure (alloc.c); connections (conn.c); the lease table (lease.c)
 *            and its state directory (statedir.c); requests, offers and timeouts (queue.c); the
 *            queue table (qtable.c) and the scheduling pass over it (sched.c); the queue's order
 *            (order.c); `list`, job ids (list.c), the queue file (queuefile.c); the shared
 *            snapshot of the machine for status, top, doctor and the exporter (snapshot.c); the
 *            loop and dispatch (daemon.c);
 *            topology- and preference-aware picks, pure (place.c), their daemon side
 *            (placement.c)
 * cluster/   rank 2, the cluster view of status --prometheus (cluster.h): Prometheus's HTTP API
 *            (promapi.c), the model (cluster.c), its table and JSON (view.c)
 * lease/     rank 3, the daemon's clients (grant.h): finding or starting the daemon (client.c);
 *            one request's exchange as a state machine without I/O (request.c); the candidates,
 *            why GPUs are busy, the job's environment (choose.c); a lease acquired and held
 *            (grant.c); who holds what and who waits (view.c); the machine from the daemon's
 *            shared snapshot, a GPU backend (snapshot.c); --bind-cpus (bind.c); a holder's
 *            idle watch (holder.c), a share's claim watched (watch.c), the notify hook of a
 *            run or env lease (hook.c), and `run`'s job started without copying gpuctl, its
 *            lease committed by the job itself (spawn.c)
 * view/      rank 4, what the machine commands print: nvidia-smi's --query-* fields (query.c),
 *            the status table (table.c), the Prometheus exposition (metrics.c; its text pieces
 *            in metrics-text.c), status's JSON (status-json.c), the doctor's findings (doctor.c;
 *            the machine's in doctor-machine.c, the guard's in doctor-guard.c), a process's
 *            container in each of them (container.c), `topo` (topo.c)
 * jobs/      rank 4, detached jobs (design: backend.h): the record (job.c) and the user's
 *            directories (dir.c), its parsers (spec.c), the jobs a command names and the wait
 *            on them (set.c); this machine's backend (local.c, local-conn.c) and Slurm's
 *            (slurm.c, slurm-*.c)
 * tui/       rank 5, `gpuctl top` (design: tui.h)
 * runner/    rank 5, `gpuctl runner`, the user's job runner (design: runner.h)
 * cmd/       rank 6, git's builtin/ (cmd.h): lookup, options parsed once from each entry's
 *            template (args.c), the shared work and errors (cmd.c), the options several commands
 *            share (leaseopts.c, visopts.c), and one file per command
 *
 * Flow: main -> cmd_main -> cmd_find -> args_parse -> exec (checks its option values) ->
 * cmd_open (gpu_set_open: backend open; gpu_set_select) -> gpu_set_refresh (backend refresh,
 * then proc.c) -> the command's view (query/json/metrics, visenv -> visibility) -> stdout;
 * cmd_main frees what cmd_open opened. Leasing: run/env -> grant_acquire -> client (socket) ->
 * daemon: `gpus` (the machine described: the client loads no NVML) -> queue_acquire ->
 * queue_schedule (usage_refresh, alloc_schedule) -> offer -> take ->
 * lease_grant (descriptors) -> the job (grant_hold: commit) ... FIFO hang-up -> lease end. */
#ifndef GPUCTL_H
#define GPUCTL_H

#include "cmd/cmd.h"

#endif
