/* proc.c: owner and command line of GPU processes from /proc, read once per pid per refresh
 * (a process on eight GPUs costs one read, not eight), with user names cached for the run since
 * getpwuid can be slow under LDAP. */
#include "pid.h"
#include "proc.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct user_ent {
	uid_t uid;
	char *name;
};

struct proc_cache {
	struct proc_info *ents;
	size_t n, cap;
	unsigned *slots;       /* open addressing: index+1 into ents, 0 = empty */
	size_t nslots;
	struct user_ent *users;
	size_t nusers, users_cap;
};

struct proc_cache *proc_cache_new(void)
{
	return xcalloc(1, sizeof(struct proc_cache));
}

void proc_cache_begin(struct proc_cache *pc)
{
	for (size_t i = 0; i < pc->n; i++) {
		free(pc->ents[i].cmdline);
		free(pc->ents[i].name);
	}
	pc->n = 0;
	if (pc->slots)
		memset(pc->slots, 0, pc->nslots * sizeof *pc->slots);
}

void proc_cache_free(struct proc_cache *pc)
{
	if (!pc)
		return;
	proc_cache_begin(pc);
	free(pc->ents);
	free(pc->slots);
	for (size_t i = 0; i < pc->nusers; i++)
		free(pc->users[i].name);
	free(pc->users);
	free(pc);
}

/* User names are cached for the run: getpwuid can be slow under LDAP. */
static const char *proc_user_name(struct proc_cache *pc, uid_t uid)
{
	for (size_t i = 0; i < pc->nusers; i++)
		if (pc->users[i].uid == uid)
			return pc->users[i].name;
	char buf[256];
	char *name = xstrdup(user_name(uid, buf, sizeof buf));
	pc->users = grow_array(pc->users, &pc->users_cap, pc->nusers + 1, sizeof *pc->users);
	pc->users[pc->nusers++] = (struct user_ent){uid, name};
	return name;
}

static void read_proc(struct proc_cache *pc, struct proc_info *pi)
{
	char path[64];
	struct stat st;
	snprintf(path, sizeof path, "/proc/%u", pi->pid);
	if (stat(path, &st) != 0)
		return;
	pi->found = true;
	pi->uid = st.st_uid;
	pi->user = proc_user_name(pc, st.st_uid);
	size_t len = 0;
	snprintf(path, sizeof path, "/proc/%u/cmdline", pi->pid);
	char *cmd = read_file(path, &len);
	while (cmd && len && cmd[len - 1] == '\0')
		len--;
	if (cmd && len) {
		pi->name = xstrdup(cmd);
		for (size_t i = 0; i < len; i++)
			if (cmd[i] == '\0')
				cmd[i] = ' ';
		cmd[len] = '\0';
		pi->cmdline = cmd;
		return;
	}
	free(cmd);
	/* Zombies and kernel threads have no command line: show [comm] as ps does. */
	snprintf(path, sizeof path, "/proc/%u/comm", pi->pid);
	char *comm = read_file(path, &len);
	if (comm) {
		comm[strcspn(comm, "\n")] = '\0';
		pi->cmdline = xasprintf("[%s]", comm);
		pi->name = xstrdup(pi->cmdline);
		free(comm);
	}
}

static void rehash(struct proc_cache *pc)
{
	free(pc->slots);
	pc->nslots = pc->nslots ? pc->nslots * 2 : 256;
	pc->slots = xcalloc(pc->nslots, sizeof *pc->slots);
	for (size_t i = 0; i < pc->n; i++) {
		size_t h = (pc->ents[i].pid * 2654435761U) & (pc->nslots - 1);
		while (pc->slots[h])
			h = (h + 1) & (pc->nslots - 1);
		pc->slots[h] = (unsigned)i + 1;
	}
}

const struct proc_info *proc_lookup(struct proc_cache *pc, unsigned pid)
{
	if (2 * (pc->n + 1) > pc->nslots)
		rehash(pc);
	size_t h = (pid * 2654435761U) & (pc->nslots - 1);
	while (pc->slots[h]) {
		struct proc_info *pi = &pc->ents[pc->slots[h] - 1];
		if (pi->pid == pid)
			return pi;
		h = (h + 1) & (pc->nslots - 1);
	}
	pc->ents = grow_array(pc->ents, &pc->cap, pc->n + 1, sizeof *pc->ents);
	struct proc_info *pi = &pc->ents[pc->n];
	*pi = (struct proc_info){.pid = pid};
	pc->slots[h] = (unsigned)++pc->n;
	read_proc(pc, pi);
	return pi;
}
