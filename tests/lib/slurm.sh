# tests/lib/slurm.sh: a real Slurm (slurmctld + slurmd + munge, Debian's slurm-wlm 22.05) for a test
# script, on loopback, with simulated GPUs: character devices of major 195 (the NVIDIA major) in a
# private directory, named by gres.conf, so Slurm schedules them and sets CUDA_VISIBLE_DEVICES,
# SLURM_JOB_GPUS and SLURM_STEP_GPUS as on a real GPU node. Sourced after lib.sh:
#
#   slurm_usable || { skip ... ; }     # why not in $SLURM_WHY
#   slurm_up [NGPUS]                   # starts it all; the EXIT trap stops it, whatever happens
#   sbatch ...; squeue ...             # SLURM_CONF is exported: every client finds it
#   slurm_down                         # stops it now (also safe to call twice)
#
# Everything lives in $TMP/slurm (config, state, spool, logs, pid files, devices). Ports are
# chosen free by the kernel. Slurm scripts run one at a time: a lock ($SLURM_LOCK) is held from
# slurm_up to slurm_down, since munged is the machine's (/run/munge) and, with proctrack/cgroup,
# Slurm's cgroups (/sys/fs/cgroup/freezer/slurm) are too. Processes of jobs are tracked with
# cgroup v1 where the machine has it (SLURM_CGROUP=1 then: attribution can be checked live), else
# by /proc (proctrack/linuxproc). Facts and pitfalls: shared/reference/ci-services.md.
SLURM_LOCK=${SLURM_LOCK:-${TMPDIR:-/tmp}/gpuctl-test-slurm.lock}
SLURM_BASE=$TMP/slurm
SLURM_NODE=$(hostname -s)
SLURM_WHY=
SLURM_CGROUP=0
SLURM_STARTED_MUNGE=0

slurm_usable() {
	local t
	for t in slurmctld slurmd munged munge sbatch squeue scontrol sinfo mknod flock; do
		command -v "$t" >/dev/null 2>&1 || [ -x "/usr/sbin/$t" ] || {
			SLURM_WHY="$t is not installed (Debian: slurmctld slurmd slurm-client munge)"
			return 1
		}
	done
	[ "$(id -u)" = 0 ] || { SLURM_WHY="Slurm's daemons need root"; return 1; }
	mkdir -p "$SLURM_BASE/dev"
	mknod "$SLURM_BASE/dev/probe" c 195 0 2>/dev/null || {
		SLURM_WHY="mknod is not allowed here (simulated GPUs are character devices)"
		return 1
	}
	rm -f "$SLURM_BASE/dev/probe"
}


# A daemon is running (not a zombie: a killed daemon is re-parented to PID 1, which may reap it
# late, and kill -0 succeeds on a zombie).
slurm_running() {
	local st
	st=$(ps -o stat= -p "$1" 2>/dev/null)
	[ -n "$st" ] && [ "${st#Z}" = "$st" ]
}

# The freezer hierarchy of cgroup v1 is where proctrack/cgroup puts each job's processes.
slurm_cgroup_ok() {
	[ -d /sys/fs/cgroup/freezer ] && [ -w /sys/fs/cgroup/freezer ] &&
		grep -q ' /sys/fs/cgroup/freezer cgroup ' /proc/mounts
}

slurm_write_conf() {
	local ngpus=$1 last=$(($1 - 1)) proctrack=proctrack/linuxproc
	[ "$SLURM_CGROUP" = 1 ] && proctrack=proctrack/cgroup
	local cport dport
	cport=$(free_port)
	dport=$(free_port)
	while [ "$dport" = "$cport" ]; do dport=$(free_port); done
	cat >"$SLURM_BASE/etc/slurm.conf" <<CONF
ClusterName=gpuctltest
SlurmctldHost=$SLURM_NODE(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CryptoType=crypto/munge
SlurmctldPort=$cport
SlurmdPort=$dport
StateSaveLocation=$SLURM_BASE/state
SlurmdSpoolDir=$SLURM_BASE/spool
SlurmctldPidFile=$SLURM_BASE/run/slurmctld.pid
SlurmdPidFile=$SLURM_BASE/run/slurmd.pid
SlurmctldLogFile=$SLURM_BASE/log/slurmctld.log
SlurmdLogFile=$SLURM_BASE/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
MailProg=/bin/true
ProctrackType=$proctrack
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
ReturnToService=2
SchedulerParameters=batch_sched_delay=0
SlurmdParameters=config_overrides
NodeName=$SLURM_NODE NodeAddr=127.0.0.1 CPUs=8 Sockets=1 CoresPerSocket=8 ThreadsPerCore=1 RealMemory=1000 Gres=gpu:$ngpus State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
	echo "NodeName=$SLURM_NODE Name=gpu File=$SLURM_BASE/dev/nvidia[0-$last]" >"$SLURM_BASE/etc/gres.conf"
	cat >"$SLURM_BASE/etc/cgroup.conf" <<CONF
CgroupPlugin=cgroup/v1
CgroupMountpoint=/sys/fs/cgroup
ConstrainCores=no
ConstrainRAMSpace=no
ConstrainDevices=no
CONF
}

# slurm_fail WHAT: Slurm did not come up: the log's last lines as TAP comments, and WHAT with
# the first error the daemons logged in SLURM_WHY, the skip's reason in the summary.
slurm_fail() {
	local first
	echo "# slurm_up: $*"
	tail -n 15 "$SLURM_BASE"/log/*.log 2>/dev/null | sed 's/^/#   /'
	# The cause first: a fatal line, else errors other than Slurm's usual PMIx plugin noise.
	first=$( { grep -hi 'fatal' "$SLURM_BASE"/log/*.log; grep -hi 'error' "$SLURM_BASE"/log/*.log |
		grep -viE 'pmix|plugin name for mpi'; } 2>/dev/null | head -n 2 | tr '\n' ' ')
	SLURM_WHY="$*${first:+ (log: ${first% })}"
	slurm_down
	return 1
}

# slurm_up [NGPUS]: munge (unless the machine's is running), slurmctld and slurmd, and waits until
# the node is idle. Bounded: every client call is under `timeout` (a dead slurmctld makes them
# hang for MessageTimeout) and every wait has a deadline.
slurm_up() {
	local ngpus=${1:-4} i
	exec {SLURM_LOCK_FD}>>"$SLURM_LOCK"
	timeout 120 flock "$SLURM_LOCK_FD" || { SLURM_WHY="another Slurm test held $SLURM_LOCK"; return 1; }
	SLURM_LOCKED=1
	mkdir -p "$SLURM_BASE"/{etc,state,spool,log,run,dev,out}
	for ((i = 0; i < ngpus; i++)); do mknod "$SLURM_BASE/dev/nvidia$i" c 195 "$i" || { SLURM_WHY="mknod of a simulated GPU failed"; return 1; }; done
	slurm_cgroup_ok && SLURM_CGROUP=1
	# slurmd makes slurm_NODE in each hierarchy it uses and leaves it: removed by slurm_down
	# unless it was there before (then this machine runs Slurm of its own).
	SLURM_CGROUP_NEW=0
	[ "$SLURM_CGROUP" = 1 ] && [ ! -e "/sys/fs/cgroup/freezer/slurm_$SLURM_NODE" ] && SLURM_CGROUP_NEW=1
	slurm_write_conf "$ngpus"
	export SLURM_CONF=$SLURM_BASE/etc/slurm.conf
	if ! munge -n >/dev/null 2>&1; then
		mkdir -p /run/munge && chown munge:munge /run/munge
		[ -s /etc/munge/munge.key ] || { mungekey -c -f && chown munge:munge /etc/munge/munge.key; }
		runuser -u munge -- /usr/sbin/munged || { slurm_fail "munged did not start"; return 1; }
		SLURM_STARTED_MUNGE=1
		for i in $(seq 100); do munge -n >/dev/null 2>&1 && break; sleep 0.05; done
	fi
	slurmctld -i || { slurm_fail "slurmctld did not start"; return 1; }
	for i in $(seq 100); do
		[ -s "$SLURM_BASE/run/slurmctld.pid" ] && timeout 3 scontrol ping 2>/dev/null | grep -q 'is UP' && break
		sleep 0.05
	done
	slurm_running "$(cat "$SLURM_BASE/run/slurmctld.pid" 2>/dev/null)" || { slurm_fail "slurmctld died"; return 1; }
	slurmd -N "$SLURM_NODE" || { slurm_fail "slurmd did not start"; return 1; }
	for i in $(seq 200); do
		[ "$(timeout 3 sinfo -h -n "$SLURM_NODE" -o %T 2>/dev/null)" = idle ] && return 0
		slurm_running "$(cat "$SLURM_BASE/run/slurmd.pid" 2>/dev/null)" || break
		sleep 0.05
	done
	slurm_fail "node $SLURM_NODE not idle: $(timeout 3 sinfo -N -h -o '%T %E' 2>&1)"
}

# Stops what slurm_up started (jobs are cancelled first, so no job outlives the test).
slurm_down() {
	local pids="" f p i alive
	[ -n "${SLURM_CONF:-}" ] && [ -s "$SLURM_BASE/run/slurmctld.pid" ] &&
		timeout 3 scancel --full --quiet --user=root >/dev/null 2>&1
	for f in "$SLURM_BASE/run/slurmd.pid" "$SLURM_BASE/run/slurmctld.pid"; do
		[ -s "$f" ] && pids="$pids $(cat "$f")"
		rm -f "$f"
	done
	[ "$SLURM_STARTED_MUNGE" = 1 ] && [ -s /run/munge/munged.pid ] && pids="$pids $(cat /run/munge/munged.pid)"
	SLURM_STARTED_MUNGE=0
	[ -n "$pids" ] && kill $pids 2>/dev/null
	for i in $(seq 200); do
		alive=0
		for p in $pids; do slurm_running "$p" && alive=1; done
		[ $alive = 0 ] && break
		sleep 0.05
	done
	for p in $pids; do slurm_running "$p" && kill -9 "$p" 2>/dev/null; done
	# Job cgroups are removed by slurmstepd; the node's own directory, made by this slurmd, here.
	if [ "${SLURM_CGROUP_NEW:-0}" = 1 ]; then
		find /sys/fs/cgroup/*/"slurm_$SLURM_NODE" -depth -type d -exec rmdir {} + 2>/dev/null
		SLURM_CGROUP_NEW=0
	fi
	if [ "${SLURM_LOCKED:-0}" = 1 ]; then
		exec {SLURM_LOCK_FD}>&-
		SLURM_LOCKED=0
	fi
	return 0
}

# slurm_await_state JOBID STATE...: wait until squeue shows the job in one of the states
# (RUNNING, PENDING, ...) or it has left the queue (state "gone"). Slurm tells no one: a
# bounded poll of its controller.
slurm_await_state() {
	local job=$1 i st; shift
	for i in $(seq 300); do
		st=$(timeout 3 squeue -h -j "$job" -o %T 2>/dev/null)
		[ -z "$st" ] && st=gone
		for s in "$@"; do [ "$st" = "$s" ] && return 0; done
		sleep 0.05
	done
	echo "# job $job: state $st after 15 s, wanted $*"
	return 1
}

# Stop Slurm on every exit of the script, before lib.sh removes $TMP.
trap 'main_shell && { slurm_down; finish_script; }' EXIT
