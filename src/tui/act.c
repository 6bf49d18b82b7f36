/* act.c: top's actions that reach outside the view. Signalling the selected process goes
 * through machine/kill.c, the path `gpuctl kill` takes (one's own processes only, another user's only
 * when root names the owner; a pidfd checked against the start time the refresh read, so a pid
 * reused since is never hit): asked first, SIGTERM, then SIGKILL if it still runs after the grace
 * period. Releasing one's env lease goes through leaseview_end_holder, as `gpuctl release` does.
 * Neither blocks the screen: each pidfd is watched by the main loop's poll. The details of a
 * process come from /proc (its environment as it was started) and from view/doctor.c, run on the
 * refresh already made. */
#include "view/doctor.h"
#include "base/escape.h"
#include "machine/kill.h"
#include "machine/pid.h"
#include "tui/act.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { RELEASE_WAIT = 5 };   /* seconds, as gpuctl release waits */

/* The variables that decide which GPUs a process sees, and their usual company. */
static const char *const env_names[] = {
	"CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "NVIDIA_VISIBLE_DEVICES",
	"CUDA_MPS_PIPE_DIRECTORY", "GPUCTL_LEASE_ID", "GPUCTL_LEASE_NAME", "GPUCTL_LEASE_GPUS",
	"SLURM_JOB_ID", "SLURM_STEP_GPUS", "RANK", "LOCAL_RANK", "WORLD_SIZE",
};

static const struct tui_row *find_row(const struct tui_model *m, unsigned pid, int gpu)
{
	for (size_t i = 0; i < m->nrows; i++)
		if (m->rows[i].pid == pid && (m->rows[i].g ? (int)m->rows[i].g->index : -1) == gpu)
			return &m->rows[i];
	return NULL;
}

void tui_kill_ask(struct tui_view *v, const struct tui_model *m)
{
	const struct tui_row *r = tui_selected(m, v);
	if (!r) {
		tui_message(v, ST_NORMAL, "no process selected");
		return;
	}
	if (!r->p) {
		tui_message(v, ST_WARN, "pid %u uses no GPU: top signals GPU processes only, as gpuctl kill "
			    "does", r->pid);
		return;
	}
	if (!r->uid_valid) {
		tui_message(v, ST_WARN, "pid %u is not visible here (another PID namespace?): left alone",
			    r->pid);
		return;
	}
	v->act_pid = r->pid;
	v->act_gpu = (int)r->g->index;
	v->act_start = r->start;
	v->input[0] = '\0';
	if (r->uid == m->me) {
		v->prompt = PR_KILL;
		/* What to answer first, the command after it: on 80 columns a long command line
		 * would otherwise push the [y/N] off the screen. */
		char head[64];
		snprintf(v->question, sizeof v->question, "Send SIGTERM to pid %u, then SIGKILL after %g s? "
			 "[y/N]  %s", r->pid, v->grace,
			 text_head(head, sizeof head, r->cmd ? r->cmd : "?", 60));
	} else if (m->me == 0) {
		v->prompt = PR_KILL_NAME;
		snprintf(v->question, sizeof v->question, "pid %u is %s's: to signal it (TERM, then KILL), "
			 "type %s and Enter: ", r->pid, r->user ? r->user : "?", r->user ? r->user : "?");
	} else {
		tui_message(v, ST_WARN, "refused: pid %u is %s's; only your own processes can be "
			    "signalled (root may, naming the user)", r->pid, r->user ? r->user : "?");
	}
}

static void pend(struct tui_acts *a, const struct tui_pending *p)
{
	a->p = grow_array(a->p, &a->cap, a->n + 1, sizeof *a->p);
	a->p[a->n++] = *p;
}

void tui_kill(struct tui_acts *a, struct tui_view *v, const struct tui_model *m)
{
	const struct tui_row *r = find_row(m, v->act_pid, v->act_gpu);
	if (!r || !r->p) {
		tui_message(v, ST_NORMAL, "pid %u is no longer listed: left alone", v->act_pid);
		return;
	}
	/* The answer is about the process that was asked about: a refresh since may list a new
	 * process under the same pid (the old one exited, its pid reused). */
	if (r->start != v->act_start) {
		tui_message(v, ST_NORMAL, "pid %u has exited since you asked (its pid now names another "
			    "process): left alone", v->act_pid);
		return;
	}
	bool named = false;
	if (r->uid != m->me) {
		named = m->me == 0 && r->user && !strcmp(v->input, r->user);
		if (!named) {
			tui_message(v, ST_NORMAL, "not signalled: '%s' is not pid %u's owner", v->input,
				    r->pid);
			return;
		}
	}
	struct tui_pending p = {.stage = PEND_TERM,
				.k = {.pid = r->pid, .uid = r->uid, .uid_valid = r->uid_valid,
				      .start = v->act_start}};
	kill_target_open(&p.k, m->me, named, r->uid);
	switch (p.k.state) {
	case KS_PENDING:
		break;
	case KS_REFUSED:
		tui_message(v, ST_WARN, "refused: pid %u is another user's process", r->pid);
		return;
	case KS_HIDDEN:
		tui_message(v, ST_WARN, "pid %u is not visible here (another PID namespace?): left alone",
			    r->pid);
		return;
	case KS_NO_PIDFD:
		tui_message(v, ST_WARN, "pid %u left alone: %s", r->pid, PID_NO_PIDFD);
		return;
	default:
		tui_message(v, ST_NORMAL, "pid %u has already exited (or its pid was reused): left alone",
			    r->pid);
		return;
	}
	if (!kill_target_signal(&p.k, SIGTERM)) {
		int e = errno;
		tui_message(v, ST_WARN, "pid %u: %s", r->pid, p.k.state == KS_GONE ? "already gone"
			    : strerror(e));
		kill_target_close(&p.k);
		return;
	}
	snprintf(p.what, sizeof p.what, "pid %u", r->pid);
	p.deadline = v->now + v->grace;
	pend(a, &p);
	tui_message(v, ST_NORMAL, "SIGTERM sent to pid %u; SIGKILL follows in %g s if it still runs",
		    r->pid, v->grace);
}

void tui_release_ask(struct tui_view *v, const struct tui_model *m)
{
	const struct gpu *g = tui_focus_gpu(m, v);
	if (!g) {
		tui_message(v, ST_NORMAL, "select a GPU (Tab) or a process on it first");
		return;
	}
	const struct lease_info *l = tui_lease(m, g);
	if (!l) {
		tui_message(v, ST_NORMAL, "GPU %u is not leased%s", g->index,
			    m->lv && m->lv->present ? "" : " (no gpuctl daemon runs)");
	} else if (l->uid != m->me) {
		tui_message(v, ST_WARN, "refused: the lease on GPU %u is %s's; only they can release it",
			    g->index, l->user);
	} else if (strcmp(l->kind, "env")) {
		tui_message(v, ST_NORMAL, "GPU %u is leased to a running job (pid %d): the lease ends "
			    "with it (select the job, then k)", g->index, (int)l->pid);
	} else {
		v->prompt = PR_RELEASE;
		snprintf(v->act_lease, sizeof v->act_lease, "%s", l->id);
		char head[48];
		snprintf(v->question, sizeof v->question, "Release lease %s (%zu GPU%s, holder pid %d gets "
			 "SIGTERM)? [y/N]%s%s%s", l->id, l->ngpus, l->ngpus == 1 ? "" : "s", (int)l->pid,
			 l->name ? "  '" : "", text_head(head, sizeof head, l->name ? l->name : "", 40),
			 l->name ? "'" : "");
	}
}

void tui_release(struct tui_acts *a, struct tui_view *v, const struct tui_model *m)
{
	const struct lease_info *l = NULL;
	for (size_t i = 0; m->lv && i < m->lv->nleases; i++)
		if (!strcmp(m->lv->leases[i].id, v->act_lease))
			l = &m->lv->leases[i];
	if (!l || l->uid != m->me || strcmp(l->kind, "env")) {
		tui_message(v, ST_NORMAL, "lease %s has ended already", v->act_lease);
		return;
	}
	char why[512];
	struct tui_pending p = {.stage = PEND_RELEASE, .k = {.pidfd = -1}};
	p.k.pidfd = leaseview_end_holder(l, why, sizeof why);
	if (p.k.pidfd < 0) {
		tui_message(v, ST_WARN, "%s", why);
		return;
	}
	snprintf(p.what, sizeof p.what, "lease %s", l->id);
	p.deadline = v->now + RELEASE_WAIT;
	pend(a, &p);
	tui_message(v, ST_NORMAL, "SIGTERM sent to the holder of lease %s (pid %d)", l->id, (int)l->pid);
}

size_t tui_acts_fds(const struct tui_acts *a, struct pollfd *fds, size_t max)
{
	size_t n = 0;
	for (size_t i = 0; i < a->n && n < max; i++)
		fds[n++] = (struct pollfd){.fd = a->p[i].k.pidfd, .events = POLLIN};
	return n;
}

double tui_acts_deadline(const struct tui_acts *a)
{
	double d = 0;
	for (size_t i = 0; i < a->n; i++)
		if (!d || a->p[i].deadline < d)
			d = a->p[i].deadline;
	return d;
}

/* Whether the pidfd says the process has ended (it becomes readable then). */
static bool ended(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	return poll(&p, 1, 0) == 1;
}

bool tui_acts_step(struct tui_acts *a, struct tui_view *v)
{
	bool changed = false;
	for (size_t i = 0; i < a->n;) {
		struct tui_pending *p = &a->p[i];
		bool done = true;
		if (ended(p->k.pidfd)) {
			tui_message(v, ST_NORMAL, "%s %s", p->what, p->stage == PEND_TERM ? "ended"
				    : p->stage == PEND_KILL ? "killed with SIGKILL after the grace period"
				    : "released");
			changed = true;
		} else if (v->now < p->deadline) {
			done = false;
		} else if (p->stage == PEND_TERM) {
			if (kill_target_signal(&p->k, SIGKILL)) {
				p->stage = PEND_KILL;
				p->deadline = v->now + KILL_LAND_SECONDS;
				tui_message(v, ST_WARN, "%s still runs after %g s: SIGKILL sent", p->what,
					    v->grace);
				done = false;
			} else {
				tui_message(v, ST_NORMAL, "%s ended", p->what);
				changed = true;
			}
		} else {
			tui_message(v, ST_WARN, "%s still runs after %s", p->what, p->stage == PEND_KILL
				    ? "SIGKILL" : "SIGTERM to its holder");
		}
		if (done) {
			kill_target_close(&p->k);
			a->p[i] = a->p[--a->n];
		} else {
			i++;
		}
	}
	return changed;
}

void tui_acts_report(const struct tui_acts *a)
{
	for (size_t i = 0; i < a->n; i++) {
		const struct tui_pending *p = &a->p[i];
		if (ended(p->k.pidfd))
			continue;
		if (p->stage == PEND_TERM)
			fprintf(stderr, "gpuctl top: %s got SIGTERM and still runs; top quit before its grace "
				"period ended, so no SIGKILL was sent (gpuctl kill --pid %u sends TERM, then "
				"KILL)\n", p->what, p->k.pid);
		else if (p->stage == PEND_KILL)
			fprintf(stderr, "gpuctl top: %s got SIGKILL and had not ended yet when top quit\n",
				p->what);
		else
			fprintf(stderr, "gpuctl top: %s: its holder got SIGTERM and had not ended yet when "
				"top quit (gpuctl leases shows whether the lease is still held)\n", p->what);
	}
}

void tui_acts_free(struct tui_acts *a)
{
	for (size_t i = 0; i < a->n; i++)
		kill_target_close(&a->p[i].k);
	free(a->p);
	*a = (struct tui_acts){0};
}

/* ---- details ---- */

static void line(struct strbuf *sb, const char *fmt, ...) PRINTF(2, 3);
static void line(struct strbuf *sb, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	sb_adds(sb, buf);
	sb_addc(sb, '\n');
}

/* Text another user controls, escaped, on a line of its own after an indent. */
static void hostile_line(struct strbuf *sb, const char *indent, const char *s)
{
	sb_adds(sb, indent);
	esc_printable(sb, s);
	sb_addc(sb, '\n');
}

void tui_info(struct tui_view *v, struct tui_model *m)
{
	const struct tui_row *r = tui_selected(m, v);
	if (!r) {
		tui_message(v, ST_NORMAL, "no process selected");
		return;
	}
	struct strbuf *sb = &v->info;
	sb_reset(sb);
	char when[16], a[32], b[32];
	struct tm tm;
	localtime_r(&m->now, &tm);
	strftime(when, sizeof when, "%H:%M:%S", &tm);
	if (r->g && r->p && r->p->gi != NO_INSTANCE)
		line(sb, "Process %u on GPU %u, MIG instance %u/%u (as of %s)", r->pid, r->g->index,
		     r->p->gi, r->p->ci, when);
	else if (r->g)
		line(sb, "Process %u on GPU %u (as of %s)", r->pid, r->g->index, when);
	else
		line(sb, "Process %u, the parent of GPU processes (as of %s)", r->pid, when);
	sb_adds(sb, "  user ");
	esc_printable(sb, r->user ? r->user : "?");
	if (r->uid_valid)
		sb_addf(sb, " (uid %u)", (unsigned)r->uid);
	if (r->stat_valid) {
		tui_duration(a, sizeof a, r->elapsed);
		tui_bytes(b, sizeof b, r->rss);
		sb_addf(sb, "  parent %d  running for %s  host memory (RSS) %s", r->ppid, a, b);
	}
	if (r->cpu_valid)
		sb_addf(sb, "  host CPU %.1f%%", r->cpu_pct);
	sb_addc(sb, '\n');
	if (r->p) {
		const struct gpu_proc *p = r->p;
		sb_addf(sb, "  GPU memory %s  type %s", p->mem_valid ? mib_text(p->used_mem).s : "N/A",
			proc_type_name(p->type));
		if (p->util_valid)
			sb_addf(sb, "  sm %u%%  memory %u%%  encoder %u%%  decoder %u%%", p->sm_util,
				p->mem_util, p->enc_util, p->dec_util);
		else
			sb_adds(sb, "  no utilisation sample in the last second");
		sb_addc(sb, '\n');
	}
	line(sb, "Command line:");
	hostile_line(sb, "  ", r->cmd ? r->cmd : "(not in /proc: exited, or another PID namespace)");
	line(sb, "Environment, as it was started:");
	char *values[ARRAY_SIZE(env_names)], msg[512];
	if (pid_getenv(r->pid, env_names, values, ARRAY_SIZE(env_names), msg, sizeof msg)) {
		bool any = false;
		for (size_t i = 0; i < ARRAY_SIZE(env_names); i++) {
			if (!values[i])
				continue;
			any = true;
			sb_addf(sb, "  %s=", env_names[i]);
			esc_printable(sb, values[i]);
			sb_addc(sb, '\n');
			free(values[i]);
		}
		if (!any)
			line(sb, "  none of CUDA_VISIBLE_DEVICES and the like is set: it sees every GPU");
	} else {
		hostile_line(sb, "  ", msg);
	}
	line(sb, "gpuctl doctor --pid %u:", r->pid);
	static const struct leaseview none;
	struct doctor_report rep = {0};
	doctor_pid(&rep, m->set, m->lv ? m->lv : &none, r->pid);
	for (size_t i = 0; i < rep.n; i++) {
		const struct doctor_finding *f = &rep.f[i];
		sb_addf(sb, "  %s [%s] ", vis_severity_name(f->sev), f->code);
		esc_printable(sb, f->message);
		sb_addc(sb, '\n');
		hostile_line(sb, "      fix: ", f->fix);
	}
	doctor_report_free(&rep);
	v->overlay = OV_INFO;
	v->ov_scroll = 0;
}
