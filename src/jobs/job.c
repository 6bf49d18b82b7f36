/* job.c: a job's record (see job.h; the user's jobs directory is dir.c's). A record is one message in
 * proto.h's format, so names, commands and paths of any content survive intact; keys a reader
 * does not know are skipped, so an older gpuctl still reads a newer record. */
#include "jobs/job.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const state_names[] = {"queued", "running", "done", "failed", "cancelled", "lost",
					  "unknown"};

const char *job_state_name(enum job_state s)
{
	return (size_t)s < ARRAY_SIZE(state_names) ? state_names[s] : "?";
}

void job_how(const struct job *j, char *buf, size_t n)
{
	if (j->exit_code >= 0)
		snprintf(buf, n, "%s, exit status %d", job_state_name(j->state), j->exit_code);
	else if (j->signal)
		snprintf(buf, n, "%s, killed by signal %d (%s)", job_state_name(j->state), j->signal,
			 strsignal(j->signal));
	else
		snprintf(buf, n, "%s", job_state_name(j->state));
}

bool job_state_parse(const char *s, enum job_state *out)
{
	for (size_t i = 0; i < ARRAY_SIZE(state_names); i++)
		if (!strcmp(s, state_names[i])) {
			*out = (enum job_state)i;
			return true;
		}
	return false;
}

void job_free(struct job *j)
{
	free(j->name);
	free(j->command);
	free(j->cwd);
	free(j->log);
	free(j->after);
	free(j->cand);
	free(j->uuids);
	free(j->reason);
	free(j->warning);
	free(j->node);
	free(j->slurm_state);
	free(j->notify); /* issue 24 */
	free(j->mig);
	memset(j, 0, sizeof *j);
}

void jobs_free(struct job *jobs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		job_free(&jobs[i]);
	free(jobs);
}

uint64_t job_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

const char *job_boot_id(void)
{
	static char id[40];
	if (!id[0]) {
		char *s = read_file("/proc/sys/kernel/random/boot_id", NULL);
		snprintf(id, sizeof id, "%.*s", s ? (int)strcspn(s, "\n") : 7, s ? s : "unknown");
		free(s);
	}
	return id;
}

/* ---- the record ---- */

static void add_str(struct strbuf *sb, const char *key, const char *v)
{
	if (v)
		msg_add(sb, key, v, NULL);
}

static void add_num(struct strbuf *sb, const char *key, uint64_t v)
{
	if (v)
		msg_add_u64(sb, key, v);
}

/* Lists go 15 values to a line (a line holds 16 words). */
static void add_ids(struct strbuf *sb, const char *key, const uint64_t *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (i % 15 == 0)
			msg_key(sb, key);
		msg_word_u64(sb, v[i]);
	}
}

static void add_uuids(struct strbuf *sb, const char *key, char (*v)[96], size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (i % 15 == 0)
			msg_key(sb, key);
		msg_word(sb, v[i]);
	}
}

void job_encode(const struct job *j, struct strbuf *out)
{
	msg_begin(out, "job");
	msg_add_u64(out, "id", j->id);
	msg_add_u64(out, "uid", j->uid);
	msg_add(out, "state", job_state_name(j->state), NULL);
	msg_add(out, "boot", j->boot, NULL);
	add_str(out, "name", j->name);
	add_str(out, "command", j->command);
	add_str(out, "cwd", j->cwd);
	add_str(out, "log", j->log);
	add_num(out, "ownlog", j->own_log);
	add_ids(out, "after", j->after, j->nafter);
	add_num(out, "retries", j->retries);
	add_num(out, "attempt", j->attempt);
	msg_add_u64(out, "umask", j->umask);
	msg_add_u64(out, "count", j->count);
	add_uuids(out, "cand", j->cand, j->ncand);
	add_num(out, "min_free", j->min_free_mib);
	add_num(out, "mem", j->mem_mib); /* memory shares (issue 23) */
	add_str(out, "mig", j->mig);     /* MIG instances (issue 23) */
	if (j->max_util >= 0)
		msg_add_u64(out, "max_util", (uint64_t)j->max_util);
	if (j->prefer >= 0)
		msg_add_u64(out, "prefer", (uint64_t)j->prefer);
	add_num(out, "ignore_usage", j->ignore_usage);
	add_num(out, "uuid", j->uuid);
	add_num(out, "time", j->time_ms); /* time limits (issue 24) */
	add_str(out, "notify", j->notify); /* notifications (issue 24) */
	add_num(out, "cpu", j->cpu_only); /* a CPU-only step (issue 24) */
	add_num(out, "bind_cpus", j->bind_cpus);   /* issue 26 */
	add_num(out, "submitted", j->submitted);
	add_num(out, "queued", j->queued_at);
	add_num(out, "started", j->started);
	add_num(out, "ended", j->ended);
	if (j->pid) {
		msg_key(out, "pid");
		msg_word_u64(out, (uint64_t)j->pid);
		msg_word_u64(out, j->pid_start);
	}
	if (j->exit_code >= 0)
		msg_add_u64(out, "exit", (uint64_t)j->exit_code);
	add_num(out, "signal", (uint64_t)j->signal);
	for (size_t i = 0; i < j->ngpus; i++) {
		if (i % 15 == 0)
			msg_key(out, "gpus");
		msg_word_u64(out, j->gpus[i]);
	}
	add_uuids(out, "uuids", j->uuids, j->uuids ? j->ngpus : 0); /* a Slurm job has indices only */
	if (j->lease[0])
		msg_add(out, "lease", j->lease, NULL);
	if (j->ticket[0])
		msg_add(out, "ticket", j->ticket, NULL);
	add_str(out, "reason", j->reason);
	add_str(out, "warning", j->warning);
	add_num(out, "again", j->again_of);
	add_str(out, "node", j->node);
	add_str(out, "sstate", j->slurm_state);
	add_num(out, "never", j->never);
}

static bool num(const struct msg_line *l, size_t w, uint64_t max, uint64_t *v)
{
	return w < l->nwords && word_u64(l->w[w], max, v);
}

static void take_uuids(char (**list)[96], size_t *n, const struct msg_line *l)
{
	for (size_t w = 1; w < l->nwords && *n < GPU_MAX; w++) {
		*list = xrealloc(*list, (*n + 1) * sizeof **list);
		snprintf((*list)[(*n)++], sizeof **list, "%s", l->w[w]);
	}
}

/* The keys a record holds, looked up once per line (a chain of up to 30 strcmp per line made
 * strcmp 7% of `jobs`' samples with a thousand records). K_NUM and up are plain numbers. */
enum key {
	K_AFTER, K_GPUS, K_CAND, K_UUIDS, K_NAME, K_COMMAND, K_CWD, K_LOG, K_REASON, K_WARNING,
	K_NODE, K_SSTATE, K_STATE, K_BOOT, K_LEASE, K_TICKET, K_PID,
	K_MIG, /* MIG instances (issue 23) */
	K_NUM, K_ID = K_NUM, K_UID, K_OWNLOG, K_RETRIES, K_ATTEMPT, K_UMASK, K_COUNT, K_MIN_FREE,
	K_MAX_UTIL, K_PREFER, K_IGNORE_USAGE, K_UUID, K_SUBMITTED, K_QUEUED, K_STARTED, K_ENDED,
	K_EXIT, K_SIGNAL, K_NEVER, K_AGAIN,
	K_TIME, /* time limits (issue 24) */
	K_NOTIFY, /* notifications (issue 24) */
	K_CPU, /* a CPU-only step (issue 24) */
	K_MEM, /* memory shares (issue 23) */
	K_BIND_CPUS,   /* issue 26 */
	K_NKEYS
};

static const struct {
	const char *name;
	uint64_t max;             /* numbers only */
} keys[K_NKEYS] = {
	[K_AFTER] = {"after", UINT64_MAX}, [K_GPUS] = {"gpus", UINT32_MAX}, [K_CAND] = {"cand", 0},
	[K_UUIDS] = {"uuids", 0}, [K_NAME] = {"name", 0}, [K_COMMAND] = {"command", 0},
	[K_CWD] = {"cwd", 0}, [K_LOG] = {"log", 0}, [K_REASON] = {"reason", 0},
	[K_WARNING] = {"warning", 0}, [K_NODE] = {"node", 0}, [K_SSTATE] = {"sstate", 0},
	[K_STATE] = {"state", 0}, [K_BOOT] = {"boot", 0}, [K_LEASE] = {"lease", 0},
	[K_TICKET] = {"ticket", 0}, [K_PID] = {"pid", 0},
	[K_MIG] = {"mig", 0}, /* MIG instances (issue 23) */
	[K_ID] = {"id", UINT64_MAX}, [K_UID] = {"uid", UINT32_MAX}, [K_OWNLOG] = {"ownlog", 1},
	[K_RETRIES] = {"retries", 1000}, [K_ATTEMPT] = {"attempt", 1001}, [K_UMASK] = {"umask", 0777},
	[K_COUNT] = {"count", GPU_MAX}, [K_MIN_FREE] = {"min_free", UINT64_MAX},
	[K_MAX_UTIL] = {"max_util", 100}, [K_PREFER] = {"prefer", 3 /* PREFER_TOPOLOGY */}, [K_IGNORE_USAGE] = {"ignore_usage", 1},
	[K_UUID] = {"uuid", 1}, [K_SUBMITTED] = {"submitted", UINT64_MAX},
	[K_QUEUED] = {"queued", UINT64_MAX}, [K_STARTED] = {"started", UINT64_MAX},
	[K_ENDED] = {"ended", UINT64_MAX}, [K_EXIT] = {"exit", 255}, [K_SIGNAL] = {"signal", 64},
	[K_NEVER] = {"never", 1}, [K_AGAIN] = {"again", UINT64_MAX},
	[K_TIME] = {"time", (uint64_t)1e10}, /* time limits (issue 24) */
	[K_NOTIFY] = {"notify", 0}, /* notifications (issue 24) */
	[K_CPU] = {"cpu", 1}, /* issue 24 */
	[K_MEM] = {"mem", UINT64_MAX}, /* memory shares (issue 23) */
	[K_BIND_CPUS] = {"bind_cpus", 1},   /* issue 26 */
};

/* The key's number, K_NKEYS for one a newer gpuctl wrote. Keys are short and differ early:
 * the first byte rules out all but a few before a compare. */
static enum key key_of(const char *k)
{
	for (int i = 0; i < K_NKEYS; i++)
		if (keys[i].name[0] == k[0] && !strcmp(keys[i].name, k))
			return (enum key)i;
	return K_NKEYS;
}

static char **str_field(struct job *j, enum key k)
{
	switch (k) {
	case K_NAME: return &j->name;
	case K_COMMAND: return &j->command;
	case K_CWD: return &j->cwd;
	case K_LOG: return &j->log;
	case K_REASON: return &j->reason;
	case K_WARNING: return &j->warning;
	case K_NODE: return &j->node;
	case K_SSTATE: return &j->slurm_state;
	case K_NOTIFY: return &j->notify; /* issue 24 */
	case K_MIG: return &j->mig;
	default: return NULL;
	}
}

static bool decode_line(struct job *j, const struct msg_line *l, size_t *nuuids)
{
	const char *v = l->nwords > 1 ? l->w[1] : NULL;
	enum key k = key_of(l->w[0]);
	uint64_t n = 0;
	if (k == K_AFTER || k == K_GPUS) {
		if (k == K_AFTER && l->nwords > 1)
			j->after = xrealloc(j->after, (j->nafter + l->nwords - 1) * sizeof *j->after);
		for (size_t w = 1; w < l->nwords; w++) {
			if (!word_u64(l->w[w], keys[k].max, &n))
				return false;
			if (k == K_AFTER)
				j->after[j->nafter++] = n;
			else if (j->ngpus < GPU_MAX)
				j->gpus[j->ngpus++] = (unsigned)n;
		}
		return true;
	}
	if (k == K_CAND || k == K_UUIDS) {
		take_uuids(k == K_CAND ? &j->cand : &j->uuids, k == K_CAND ? &j->ncand : nuuids, l);
		return true;
	}
	if (!v || k == K_NKEYS)
		return true; /* no value, or a newer gpuctl's key */
	char **str = str_field(j, k);
	if (str) {
		free(*str);
		*str = xstrdup(v);
		return true;
	}
	switch (k) {
	case K_STATE:
		return job_state_parse(v, &j->state);
	case K_BOOT:
		snprintf(j->boot, sizeof j->boot, "%s", v);
		return true;
	case K_LEASE:
	case K_TICKET: {
		char *dst = k == K_LEASE ? j->lease : j->ticket;
		size_t cap = k == K_LEASE ? sizeof j->lease : sizeof j->ticket, len = strlen(v);
		if (len >= cap)
			return false;
		memcpy(dst, v, len + 1);
		return true;
	}
	case K_PID: {
		uint64_t st;
		if (!num(l, 1, INT32_MAX, &n) || !num(l, 2, UINT64_MAX, &st))
			return false;
		j->pid = (pid_t)n;
		j->pid_start = st;
		return true;
	}
	default:
		break;
	}
	if (!word_u64(v, keys[k].max, &n))
		return false;
	switch (k) {
	case K_ID: j->id = n; break;
	case K_UID: j->uid = (uid_t)n; break;
	case K_OWNLOG: j->own_log = n; break;
	case K_RETRIES: j->retries = (unsigned)n; break;
	case K_ATTEMPT: j->attempt = (unsigned)n; break;
	case K_UMASK: j->umask = (unsigned)n; break;
	case K_COUNT: j->count = (unsigned)n; break;
	case K_MIN_FREE: j->min_free_mib = n; break;
	case K_MEM: j->mem_mib = n; break;
	case K_MAX_UTIL: j->max_util = (int)n; break;
	case K_PREFER: j->prefer = (int)n; break;
	case K_IGNORE_USAGE: j->ignore_usage = n; break;
	case K_UUID: j->uuid = n; break;
	case K_SUBMITTED: j->submitted = n; break;
	case K_QUEUED: j->queued_at = n; break;
	case K_STARTED: j->started = n; break;
	case K_ENDED: j->ended = n; break;
	case K_EXIT: j->exit_code = (int)n; break;
	case K_SIGNAL: j->signal = (int)n; break;
	case K_NEVER: j->never = n; break;
	case K_TIME: j->time_ms = n; break; /* time limits (issue 24) */
	case K_CPU: j->cpu_only = n; break; /* issue 24 */
	case K_BIND_CPUS: j->bind_cpus = n; break;   /* issue 26 */
	default: j->again_of = n; break;
	}
	return true;
}

bool job_decode(struct job *j, const char *buf, size_t len, char *why, size_t whylen)
{
	struct msg m;
	*j = (struct job){.exit_code = -1, .max_util = -1, .prefer = -1};
	if (!msg_decode(&m, buf, len, why, whylen))
		return false;
	bool ok = !strcmp(msg_verb(&m), "job");
	size_t nuuids = 0;
	for (size_t i = 1; ok && i < m.nlines; i++)
		if (!decode_line(j, &m.lines[i], &nuuids)) {
			snprintf(why, whylen, "bad value on line %zu (%s)", i + 1, m.lines[i].w[0]);
			ok = false;
		}
	msg_free(&m);
	if (ok && (!j->id || !j->command || !j->boot[0] || nuuids != (j->uuids ? j->ngpus : 0))) {
		snprintf(why, whylen, "id, command, boot or GPU lines missing");
		ok = false;
	}
	if (!ok)
		job_free(j);
	return ok;
}
