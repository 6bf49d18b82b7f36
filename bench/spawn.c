/* spawn.c: live processes for the benchmarks. `bench-spawn SLEEPER N NGPUS PIDFILE` starts N
 * copies of tests/helper/sleeper.c with the command lines, environments and owners of a shared GPU server
 * (python and torchrun jobs, a few very long java command lines, Ray workers; root, nobody and
 * users without a passwd entry; CUDA_VISIBLE_DEVICES naming the GPU that process I uses in the
 * machine file, I % NGPUS), writes their pids to PIDFILE once every one of them has exec'd, and
 * waits. SIGTERM, SIGINT, SIGHUP or the death of its own parent ends it: it kills and reaps every
 * child first, and each child also dies with it (PR_SET_PDEATHSIG), so nothing outlives a bench
 * run, even one that was killed. Bench code only. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAXARGS 64

static pid_t *kids;
static size_t nkids;

static void reap_all(void)
{
	for (size_t i = 0; i < nkids; i++)
		kill(kids[i], SIGKILL);
	while (wait(NULL) > 0 || errno == EINTR)
		;
}

/* Splits a command line at spaces into argv (the strings live in buf). */
static void split(char *buf, char **argv)
{
	int n = 0;
	for (char *save = NULL, *t = strtok_r(buf, " ", &save); t && n < MAXARGS - 1;
	     t = strtok_r(NULL, " ", &save))
		argv[n++] = t;
	argv[n] = NULL;
}

static void command_line(size_t i, char *buf, size_t n)
{
	unsigned u = 1000 + (unsigned)(i % 37);
	switch (i % 50) {
	case 0: { /* java with a classpath of a few KiB (the long tail) */
		int k = snprintf(buf, n, "java -Xmx16g -Dlog4j.configurationFile=/etc/infer/log4j2.xml -cp ");
		for (int j = 0; j < 60 && (size_t)k < n - 200; j++)
			k += snprintf(buf + k, n - (size_t)k, "%s/opt/infer/lib/dependency-%02d-1.%d.%d.jar",
				      j ? ":" : "", j, j % 7, (int)(i % 13));
		snprintf(buf + k, n - (size_t)k, " com.example.infer.Server --port %zu", 20000 + i % 1000);
		break;
	}
	case 1: case 2: case 3: case 4: case 5: case 6: case 7: case 8:
		snprintf(buf, n, "/opt/conda/envs/torch/bin/python -u -m torch.distributed.run "
			 "--nproc_per_node=8 --master_port=%zu finetune.py --model meta-llama/Llama-2-7b-hf "
			 "--data /data/shards/%05zu --output /scratch/u%u/run%zu --bf16 --gradient_checkpointing "
			 "--per_device_train_batch_size 4", 29500 + i % 100, i, u, i);
		break;
	case 9: case 10: case 11:
		snprintf(buf, n, "ray::TrainWorker.train()");
		break;
	case 12: case 13:
		snprintf(buf, n, "./bin/llama-server -m /models/llama-3-8b-instruct.Q4_K_M.gguf --port %zu -ngl 99 -c 8192",
			 8000 + i % 1000);
		break;
	default:
		snprintf(buf, n, "python3 train.py --config configs/exp%04zu.yaml --lr 3e-4 --batch-size %zu "
			 "--seed %zu", i, (size_t)32 << (i % 4), i);
	}
}

static void environment(size_t i, unsigned ngpus, char *buf, size_t n, char **envp)
{
	unsigned u = 1000 + (unsigned)(i % 37);
	static const char *const fixed[] = {
		"SHELL=/bin/bash", "LANG=en_US.UTF-8", "LC_ALL=en_US.UTF-8", "TERM=xterm-256color",
		"PATH=/opt/conda/envs/torch/bin:/opt/conda/condabin:/usr/local/cuda/bin:/usr/local/sbin:"
		"/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/nvidia/lib:/usr/local/nvidia/lib64",
		"CONDA_EXE=/opt/conda/bin/conda", "CONDA_PREFIX=/opt/conda/envs/torch",
		"CONDA_DEFAULT_ENV=torch", "CONDA_SHLVL=2", "CONDA_PYTHON_EXE=/opt/conda/bin/python",
		"PYTHONUNBUFFERED=1", "OMP_NUM_THREADS=8", "NCCL_DEBUG=WARN", "NCCL_IB_DISABLE=0",
		"NCCL_SOCKET_IFNAME=eth0", "HF_HOME=/data/hf-cache", "TORCH_HOME=/data/torch-cache",
		"WANDB_MODE=offline", "SLURM_CLUSTER_NAME=gpu", "SLURM_PARTITION=a100",
		"SLURM_NNODES=1", "SLURM_NTASKS=8", "SLURM_CPUS_PER_TASK=8", "SLURM_MEM_PER_NODE=512000",
		"SLURM_SUBMIT_HOST=login01", "SLURM_JOB_NODELIST=gpu042", "SLURMD_NODENAME=gpu042",
		"SLURM_TOPOLOGY_ADDR=gpu042", "SLURM_GTIDS=0,1,2,3,4,5,6,7", "SLURM_PRIO_PROCESS=0",
		"LS_COLORS=rs=0:di=01;34:ln=01;36:mh=00:pi=40;33:so=01;35:do=01;35:bd=40;33;01:cd=40;33;"
		"01:or=40;31;01:mi=00:su=37;41:sg=30;43:ca=00:tw=30;42:ow=34;42:st=37;44:ex=01;32",
		"CUDA_DEVICE_ORDER=PCI_BUS_ID",
		NULL};
	int k = 0, e = 0;
	for (; fixed[e]; e++)
		envp[e] = (char *)fixed[e];
	/* Variables of their own, in one buffer: each string ends with its NUL. */
#define VAR(...) (envp[e++] = buf + k, k += snprintf(buf + k, n - (size_t)k, __VA_ARGS__) + 1)
	VAR("HOME=/home/u%u", u);
	VAR("USER=u%u", u);
	VAR("LOGNAME=u%u", u);
	VAR("PWD=/home/u%u/proj/exp%zu", u, i % 100);
	VAR("SLURM_JOB_ID=%zu", 4400000 + i / 8);
	VAR("SLURM_JOB_USER=u%u", u);
	VAR("SLURM_PROCID=%zu", i % 8);
	VAR("SLURM_LOCALID=%zu", i % 8);
	VAR("MASTER_PORT=%zu", 29500 + i % 100);
	VAR("CUDA_VISIBLE_DEVICES=%zu", i % ngpus);
#undef VAR
	envp[e] = NULL;
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: bench-spawn SLEEPER N NGPUS PIDFILE\n");
		return 2;
	}
	const char *sleeper = argv[1], *pidfile = argv[4];
	size_t n = strtoul(argv[2], NULL, 10);
	unsigned ngpus = (unsigned)strtoul(argv[3], NULL, 10);
	if (!ngpus)
		ngpus = 1;
	/* Die with the bench script: its EXIT trap may never run (SIGKILL). */
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	sigset_t stop;
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGHUP);
	sigprocmask(SIG_BLOCK, &stop, NULL); /* taken by sigwait, and blocked in no child */

	/* Every child holds the write end until its exec closes it: EOF = all of them exec'd. */
	int ready[2];
	if (pipe2(ready, O_CLOEXEC) != 0) {
		perror("bench-spawn: pipe");
		return 1;
	}
	kids = calloc(n ? n : 1, sizeof *kids);
	static char cmd[8192], envbuf[2048], *cargv[MAXARGS], *cenv[64];
	pid_t me = getpid();
	for (size_t i = 0; i < n; i++) {
		command_line(i, cmd, sizeof cmd);
		split(cmd, cargv);
		environment(i, ngpus, envbuf, sizeof envbuf, cenv);
		/* Owners: a quarter root, a quarter nobody, the rest users with no passwd entry. */
		uid_t uid = i % 4 == 0 ? 0 : i % 4 == 1 ? 65534 : (uid_t)(2000 + i % 4);
		pid_t p = fork();
		if (p < 0) {
			fprintf(stderr, "bench-spawn: fork #%zu: %s (raise ulimit -u, kernel.pid_max?)\n", i,
				strerror(errno));
			reap_all();
			return 1;
		}
		if (p == 0) {
			sigprocmask(SIG_UNBLOCK, &stop, NULL);
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() != me)
				_exit(0);
			if (uid && (setgid(uid) != 0 || setuid(uid) != 0))
				_exit(126);
			int null = open("/dev/null", O_RDWR);
			dup2(null, 0), dup2(null, 1), dup2(null, 2);
			execve(sleeper, cargv, cenv);
			_exit(127);
		}
		kids[nkids++] = p;
	}
	close(ready[1]);
	char c;
	while (read(ready[0], &c, 1) < 0 && errno == EINTR)
		;
	close(ready[0]);
	for (size_t i = 0; i < nkids; i++) {
		int st;
		if (waitpid(kids[i], &st, WNOHANG) != 0) {
			fprintf(stderr, "bench-spawn: child %d did not start (exit %d)\n", (int)kids[i],
				WIFEXITED(st) ? WEXITSTATUS(st) : -1);
			reap_all();
			return 1;
		}
	}
	char tmp[4096];
	snprintf(tmp, sizeof tmp, "%s.tmp", pidfile);
	FILE *f = fopen(tmp, "w");
	for (size_t i = 0; f && i < nkids; i++)
		fprintf(f, "%d\n", (int)kids[i]);
	if (!f || fclose(f) != 0 || rename(tmp, pidfile) != 0) {
		perror("bench-spawn: pid file");
		reap_all();
		return 1;
	}
	int sig;
	sigwait(&stop, &sig);
	reap_all();
	return 0;
}
