/* recover.c: what a daemon learns when it starts (design: daemon.h): the leases of the records a
 * previous daemon left whose FIFO still has a writer; the lock files of leases that ended while
 * no daemon ran, retired; and GPUs no record accounts for that are held all the same (their lock
 * file locked, or a process on them: the records or the whole state directory removed). Those
 * are "found" leases of the uid the lock file or NVML names, until both are gone (probed every
 * PROBE_SECONDS); a GPU locked by nobody anyone can name is held_unknown. */
#include "daemon/daemon.h"
#include "machine/pid.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PROBE_SECONDS 5.0          /* how often GPUs held with no lease granted are looked at */

/* A compute process of uid on slot i, as the last refresh with process owners saw it (NULL:
 * none). uid (uid_t)-1: anyone's. */
static const struct gpu_proc *proc_on(const struct daemon *d, size_t i, uid_t uid)
{
	const struct gpu *g = &d->set->gpus[i];
	for (size_t j = 0; j < g->nprocs; j++) {
		const struct gpu_proc *p = &g->procs[j];
		if ((p->type & PROC_COMPUTE) && p->uid_valid && (uid == (uid_t)-1 || p->uid == uid))
			return p;
	}
	return NULL;
}

static bool any_found(const struct daemon *d)
{
	for (size_t i = 0; i < d->nleases; i++)
		if (d->leases[i]->found)
			return true;
	return false;
}

/* STATE/lost says the state was lost and leases were found on GPUs by their processes: kept
 * while any found lease lives (they have no records), so a daemon restarted meanwhile finds them
 * again; removed with the last. */
static void state_found(struct daemon *d, bool lost)
{
	if (lost && d->state_lost) {
		static const char note[] = "state lost: leases found by their processes on the GPUs\n";
		daemon_write_state(d, "lost", note, sizeof note - 1);
	} else if (!lost && d->state_lost) {
		unlinkat(d->dirfd, "lost", 0);
		d->state_lost = false;
	}
}

void lease_probe_unknown(struct daemon *d)
{
	d->probe_due = 0;
	if (any_found(d))
		gpu_set_refresh(d->set, REFRESH_PROCS);
	for (size_t k = 0; k < d->nleases;) {
		struct lease *l = d->leases[k];
		bool held = !l->found;
		for (size_t i = 0; !held && i < d->nslots; i++)
			held = (l->gpus >> i & 1) && (lease_lock_held(d, &d->slots[i]) || proc_on(d, i, l->uid));
		if (held) {
			k++;
			continue;
		}
		for (size_t i = 0; i < d->nslots; i++)
			if (l->gpus >> i & 1)
				fprintf(stderr, "gpuctl daemon: GPU %u, found held by uid %u with no record, is "
					"free: its lock and that user's processes on it are gone\n",
					d->slots[i].index, (unsigned)l->uid);
		lease_end(d, l); /* removes it from the array */
	}
	if (any_found(d))
		d->probe_due = d->now + PROBE_SECONDS;
	else
		state_found(d, false);
	for (size_t i = 0; i < d->nslots; i++) {
		struct slot *s = &d->slots[i];
		if (s->held_unknown && !lease_lock_held(d, s)) {
			s->held_unknown = false;
			d->sched_due = true;
			fprintf(stderr, "gpuctl daemon: GPU %u is no longer held\n", s->index);
		}
		if (s->held_unknown)
			d->probe_due = d->now + PROBE_SECONDS;
	}
}

/* A record of a previous daemon: its lease lives on if anyone still has its FIFO open. Returns
 * the GPUs of a lease that ended while no daemon ran (their lock files are to be retired): its
 * FIFO there, with no writer left. A FIFO gone proves nothing: its lock may still be held. */
static uint64_t recover_one(struct daemon *d, const char *file, bool by_position, bool *later)
{
	char fifo[64];
	snprintf(fifo, sizeof fifo, "%s.fifo", file);
	int fd = openat(d->dirfd, file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	char buf[PROTO_MAX_MSG], why[128];
	ssize_t n = -1;
	if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid())
		n = read(fd, buf, sizeof buf);
	if (fd >= 0)
		close(fd);
	struct msg m = {0};
	struct lease *l = NULL;
	int r = -1;
	bool hung_up = false;
	if (n > 0 && msg_decode(&m, buf, (size_t)n, why, sizeof why) && !strcmp(msg_verb(&m), "lease") &&
	    msg_get(&m, "id") && strlen(msg_get(&m, "id")) == 16 && msg_get(&m, "token")) {
		l = xcalloc(1, sizeof *l);
		l->ev = EV_LEASE;
		l->bound_fd = -1;
		snprintf(l->id, sizeof l->id, "%s", msg_get(&m, "id"));
		snprintf(l->token, sizeof l->token, "%s", msg_get(&m, "token"));
		uint64_t v;
		l->uid = msg_get_u64(&m, "uid", UINT32_MAX, &v) ? (uid_t)v : (uid_t)-1;
		l->pid = msg_get_u64(&m, "pid", INT32_MAX, &v) ? (pid_t)v : 0;
		pid_t bound = msg_get_u64(&m, "bound", INT32_MAX, &v) ? (pid_t)v : 0;
		lease_bind(l, bound, msg_get_u64(&m, "bound_start", UINT64_MAX, &v) ? v : 0);
		l->start = msg_get_u64(&m, "start", UINT64_MAX, &v) ? v : 0;
		l->since = msg_get_u64(&m, "since", INT64_MAX, &v) ? (time_t)v : 0;
		l->seq = msg_get_u64(&m, "seq", UINT64_MAX, &v) ? v : 0;
		snprintf(l->kind, sizeof l->kind, "%s", msg_get(&m, "kind") ? msg_get(&m, "kind") : "run");
		l->name = msg_get(&m, "name") ? xstrndup(msg_get(&m, "name"), REQ_NAME_MAX) : NULL;
		l->command = msg_get(&m, "command") ? xstrndup(msg_get(&m, "command"), REQ_COMMAND_MAX) : NULL;
		if (msg_get_u64(&m, "until", UINT64_MAX, &v)) /* time limits (issue 24) */
			lease_set_limit(d, l, 0, v);
		/* memory shares (issue 23): a share's claim */
		l->mem_mib = msg_get_u64(&m, "mem", MAX_SIZE_MIB, &v) ? v : 0;
		l->mig = msg_get_u64(&m, "mig", 64, &v) ? (int)v : 0; /* MIG instances */
		if (msg_get(&m, "mig_uuid"))
			snprintf(l->mig_uuid, sizeof l->mig_uuid, "%s", msg_get(&m, "mig_uuid"));
		/* review 4b: records that name their instance by UUID first, an older daemon's
		 * (position only) after them: a position shifted onto a UUID record's instance is
		 * then the one refused (mig_twice below), not the lease that truly holds it. */
		if (!by_position && l->mig > 0 && !l->mig_uuid[0]) {
			*later = true;
			msg_free(&m);
			lease_free(l);
			return 0;
		}
		for (size_t i = 1; i < m.nlines; i++)
			for (size_t k = 0; k < d->nslots; k++)
				if (!strcmp(m.lines[i].w[0], "gpu") && m.lines[i].nwords > 1 &&
				    !strcmp(m.lines[i].w[1], d->slots[k].uuid))
					l->gpus |= 1ULL << k;
		/* Reopen the read end, then open and close a writer once: from then on POLLHUP
		 * means no writer is left (an O_NONBLOCK reader sees no hang-up before a writer). */
		l->fifo = openat(d->dirfd, fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
		if (l->fifo >= 0 && fstat(l->fifo, &st) == 0 && S_ISFIFO(st.st_mode) &&
		    st.st_uid == geteuid() && (r = openat(d->dirfd, fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC)) >= 0) {
			close(r);
			struct pollfd p = {.fd = l->fifo, .events = POLLIN};
			hung_up = poll(&p, 1, 0) == 1 && (p.revents & POLLHUP);
			r = hung_up ? -1 : 0;
		} else {
			r = -1;
		}
	}
	msg_free(&m);
	/* A MIG lease whose instance is gone (destroyed while no daemon ran) holds nothing: it
	 * ends here, said in the log. Kept, it would have to name some instance; its job, whose
	 * CUDA_VISIBLE_DEVICES names the gone one, can reach none (the driver refuses to destroy
	 * an instance a process uses, so nothing of it ran there), and its GPU's other instances
	 * are other leases' to grant. */
	int was_mig = l ? l->mig : 0;
	bool had_uuid = l && l->mig_uuid[0];
	bool mig_gone = r == 0 && l->gpus && !mig_recover(d, l);
	if (mig_gone)
		fprintf(stderr, "gpuctl daemon: lease %s of uid %u ended: its MIG instance %s is gone "
			"(the GPU's instances were changed while no daemon ran)\n", l->id,
			(unsigned)l->uid, l->mig_uuid[0] ? l->mig_uuid : "(by position)");
	/* review 4b: two records naming one instance (an older daemon's record read by position,
	 * which the positions' shift pointed at another lease's instance; an edited record) would
	 * be two holders of it: the first recovered keeps it, the other ends, said in the log. */
	bool mig_twice = false;
	for (size_t k = 0; r == 0 && l->gpus && !mig_gone && l->mig > 0 && k < d->nslots; k++)
		mig_twice |= (l->gpus >> k & 1) && (d->slots[k].mig_busy >> (l->mig - 1) & 1);
	if (mig_twice) {
		fprintf(stderr, "gpuctl daemon: lease %s of uid %u ended: its MIG instance %s is "
			"another recovered lease's (two records named it)\n", l->id, (unsigned)l->uid,
			l->mig_uuid);
		mig_gone = true;
	}
	if (r == 0 && l->gpus && !mig_gone) {
		lease_add(d, l);
		/* review 4b: a record read by position (an older daemon's) or whose instance moved is
		 * written again with the UUID and position found: left as it was, the next restart
		 * read it by position again, after another change of instances perhaps onto another
		 * lease's instance. */
		if (l->mig > 0 && (!had_uuid || l->mig != was_mig))
			lease_record_save(d, l);
		return 0;
	}
	uint64_t ended = l && (hung_up || mig_gone) ? l->gpus : 0;
	if (l && (hung_up || mig_gone) && (l->mem_mib || l->mig)) /* its own lock files, which nothing else retires */
		share_retire_locks(d, l);
	if (l && l->fifo >= 0)
		close(l->fifo);
	lease_free(l);
	unlinkat(d->dirfd, file, 0);
	unlinkat(d->dirfd, fifo, 0);
	return ended;
}

/* What the lock file of slot s says of its lease (lock_content): false when it says nothing. */
static bool lock_says(struct daemon *d, const struct slot *s, struct lease *l)
{
	char name[128], buf[1024], why[64];
	lease_lock_name(s, name, sizeof name, "");
	int fd = openat(d->dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	ssize_t n = -1;
	if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid())
		n = read(fd, buf, sizeof buf);
	if (fd >= 0)
		close(fd);
	struct msg m;
	uint64_t v;
	if (n <= 0 || !msg_decode(&m, buf, (size_t)n, why, sizeof why))
		return false;
	bool ok = !strcmp(msg_verb(&m), "lock") && msg_get_u64(&m, "uid", UINT32_MAX - 1, &v);
	if (ok) {
		l->uid = (uid_t)v;
		l->pid = msg_get_u64(&m, "pid", INT32_MAX, &v) ? (pid_t)v : 0;
		l->since = msg_get_u64(&m, "since", INT64_MAX, &v) ? (time_t)v : 0;
	}
	msg_free(&m);
	return ok;
}

/* Whether a process that started at start (clock ticks after boot) started after when. */
static bool started_after(unsigned long long start, time_t when)
{
	FILE *f = fopen("/proc/uptime", "r");
	double up = 0;
	bool ok = f && fscanf(f, "%lf", &up) == 1;
	if (f)
		fclose(f);
	double at = (double)time(NULL) - up + (double)start / (double)sysconf(_SC_CLK_TCK);
	return ok && at > (double)when + 2; /* ticks and seconds rounded, a little clock skew */
}

/* Slot i, which no record accounts for, is held after all: by a lock (what its file says names
 * the holder) or by a process NVML shows on it. It is accounted to that uid as a lease of kind
 * "found" (counted against max_gpus_per_user, shown in `leases`) until both are gone; false
 * when nobody can be named (the slot is then held_unknown). */
static bool found_lease(struct daemon *d, size_t i, bool locked)
{
	struct lease *l = xcalloc(1, sizeof *l);
	l->ev = EV_LEASE;
	l->fifo = -1;
	l->bound_fd = -1;
	l->found = true;
	l->uid = (uid_t)-1;
	bool named = locked && lock_says(d, &d->slots[i], l);
	/* A process on the GPU is a lease's job only where the state was lost (d->state_lost): on
	 * a first start (a private daemon, a boot) the processes already there are nobody's lease,
	 * and usage rules (--ignore-usage, max_util) decide about them as before. */
	const struct gpu_proc *p = named || d->state_lost ? proc_on(d, i, named ? l->uid : (uid_t)-1) : NULL;
	if (!named && p)
		l->uid = p->uid;
	if (!named && !p) {
		lease_free(l);
		return false;
	}
	if (p) {
		l->pid = (pid_t)p->pid;
		if (p->cmdline || p->name)
			l->command = xstrndup(p->cmdline ? p->cmdline : p->name, REQ_COMMAND_MAX);
	}
	if (!l->since)
		l->since = time(NULL);
	l->start = lease_proc_start(l->pid);
	/* The lock names the grantee's pid as of the grant. With no process of its user on the GPU
	 * to name instead, that pid may be another process by now (an exited `gpuctl env`'s,
	 * reused, perhaps by another user): named as the holder, `leases` would show it and
	 * `release` would aim at it. It is kept only while it runs as the lease's user and
	 * started before the lease. */
	if (named && !p && l->pid > 0 && (!l->start || !pid_runs_as((unsigned)l->pid, l->uid) ||
					  started_after(l->start, l->since)))
		l->pid = 0, l->start = 0;
	lease_random_hex(l->id, 8);
	lease_random_hex(l->token, 16);
	snprintf(l->kind, sizeof l->kind, "found");
	l->name = xstrdup(locked ? "unrecorded: its lock is held" : "unrecorded: in use on the GPU");
	l->gpus = 1ULL << i;
	lease_add(d, l);
	fprintf(stderr, "gpuctl daemon: GPU %u has no record but is %s: accounted to uid %u (pid %d) "
		"until it is free\n", d->slots[i].index, locked ? "locked" : "in use", (unsigned)l->uid,
		(int)l->pid);
	return true;
}

void leases_recover(struct daemon *d)
{
	int dfd = dup(d->dirfd);
	DIR *dir = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (dir) /* (a dup shares the offset: another scan of the directory leaves it at the end) */
		rewinddir(dir);
	char **names = NULL;
	size_t n = 0, cap = 0;
	for (struct dirent *e; dir && (e = readdir(dir));) {
		const char *s = e->d_name;
		size_t len = strlen(s);
		if (!strncmp(s, "lease-", 6) && len == 22)
			;
		else if ((len > 4 && !strcmp(s + len - 4, ".tmp")) || (len > 4 && !strcmp(s + len - 4, ".new")))
			; /* half-written files of a daemon that died: removed below */
		else if (!strncmp(s, "lease-", 6) && len == 27 && !strcmp(s + 22, ".fifo"))
			continue; /* handled with its record */
		else
			continue;
		names = grow_array(names, &cap, n + 1, sizeof *names);
		names[n++] = xstrdup(s);
	}
	if (dir)
		closedir(dir);
	else if (dfd >= 0)
		close(dfd);
	uint64_t ended = 0;
	bool *later = xcalloc(n + 1, sizeof *later);
	for (size_t i = 0; i < n; i++) {
		if (!strncmp(names[i], "lease-", 6) && strlen(names[i]) == 22)
			ended |= recover_one(d, names[i], false, &later[i]);
		else
			unlinkat(d->dirfd, names[i], 0);
	}
	for (size_t i = 0; i < n; i++) {
		if (later[i]) /* (MIG records by position: after those by UUID) */
			ended |= recover_one(d, names[i], true, &later[i]);
		free(names[i]);
	}
	free(later);
	free(names);
	/* FIFOs whose record is gone belong to no lease. */
	dfd = dup(d->dirfd);
	dir = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (dir)
		rewinddir(dir);
	for (struct dirent *e; dir && (e = readdir(dir));) {
		size_t len = strlen(e->d_name);
		if (strncmp(e->d_name, "lease-", 6) || len != 27 || strcmp(e->d_name + 22, ".fifo"))
			continue;
		bool known = false;
		for (size_t i = 0; i < d->nleases; i++)
			known |= !strncmp(d->leases[i]->id, e->d_name + 6, 16);
		if (!known)
			unlinkat(d->dirfd, e->d_name, 0);
	}
	if (dir)
		closedir(dir);
	else if (dfd >= 0)
		close(dfd);
	/* Leases that ended while no daemon ran: a lock kept past its FIFO is retired with them. */
	for (size_t i = 0; i < d->nslots; i++)
		if (d->slots[i].holder || d->slots[i].nshares || d->slots[i].mig_busy)
			ended &= ~(1ULL << i);
	lease_retire_locks(d, ended);
	/* A GPU no record accounts for is not free while its lock is held or a process runs on it
	 * (the records removed, or the whole directory: issue 21). Who holds it is what the lock
	 * file says, or the owner of the process NVML shows. */
	size_t recovered = d->nleases, found = 0, unknown = 0;
	gpu_set_refresh(d->set, REFRESH_PROCS);
	for (size_t i = 0; i < d->nslots; i++) {
		struct slot *s = &d->slots[i];
		if (s->holder || s->nshares || s->mig_busy) /* (its processes are its shares') */
			continue;
		bool locked = lease_lock_held(d, s);
		if (found_lease(d, i, locked)) {
			found++;
		} else if (locked) {
			s->held_unknown = true;
			unknown++;
		}
	}
	state_found(d, found > 0);
	if (unknown || found)
		d->probe_due = d->now + PROBE_SECONDS;
	if (recovered || found || unknown)
		fprintf(stderr, "gpuctl daemon: recovered %zu live lease%s; %zu GPU%s held with no record, "
			"accounted to their holders; %zu GPU%s held by processes nobody can be named for\n",
			recovered, recovered == 1 ? "" : "s", found, found == 1 ? "" : "s", unknown,
			unknown == 1 ? "" : "s");
}
