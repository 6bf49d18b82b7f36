/* top.c: `gpuctl top`: the full-screen view of the GPUs, their processes, leases and the
 * queue, refreshed every --delay seconds, with sorting, filters, a tree of each job, history
 * graphs, and the actions: signal a process (kill.c's safe path), release a lease, a process's
 * details. The parts are in tui-*.c (tui.h has the map). Here: the options, and one loop that
 * sleeps in ppoll on the terminal, the pidfds of processes being signalled and the signals
 * (INT, TERM, HUP: quit cleanly; WINCH: resize), until the next refresh is due. A refresh reads
 * only the NVML groups the layout shows, /proc once per process (the stat files only of the rows
 * on screen, unless the order needs them all), and asks the daemon for its list
 * once; the answer is awaited in the same ppoll, never in a blocking call: a daemon that accepts
 * but does not answer leaves the screen live and q / Ctrl-C prompt, and is asked again only
 * after LEASE_RETRY_SECONDS. */
#include "machine/gpu.h"
#include "cmd/cmd.h"
#include "lease/snapshot.h"
#include "base/term.h"
#include "tui/act.h"
#include "tui/curses.h"
#include "tui/draw.h"

#include <errno.h>
#include <langinfo.h>
#include <locale.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LEASE_RETRY_SECONDS 30.0    /* after the daemon did not answer: ask again this much later */

static volatile sig_atomic_t got_quit, got_winch;

static void on_signal(int sig)
{
	if (sig == SIGWINCH)
		got_winch = 1;
	else
		got_quit = 1;
}

struct top {
	struct gpu_set *set;
	struct tui_model m;
	struct tui_view v;
	struct tui_layout L;
	struct tui_screen scr;
	struct tui_acts acts;
	struct leaseview lv;         /* the daemon's last answer (kept while the next is awaited) */
	struct leaseview_query lq;   /* the question in flight, if any */
	double lease_retry;          /* monotonic: the daemon did not answer; not asked before this */
	bool lease_warned;
	unsigned last_what;          /* the groups the last refresh read */
	double next;                 /* monotonic: the next refresh */
};

/* The daemon's answer arrived (done 1) or not (-1): use it, or say why there is none. */
static void lease_answer(struct top *t, int done, struct leaseview *nv, const struct gpu_error *err)
{
	double now = now_mono();
	if (done >= 0) {
		leaseview_free(&t->lv);
		t->lv = *nv;   /* in place: the model's pointer to t->lv stays right */
		t->lease_retry = 0;
		if (!strncmp(t->v.msg, "leases: ", 8))
			t->v.msg_until = 0;
	} else if (err->code == EXIT_TIMEOUT) {
		/* Leases are extra: the GPUs still show, and a stuck daemon is not asked at each refresh. */
		t->lease_retry = now + LEASE_RETRY_SECONDS;
		leaseview_free(&t->lv);
	} else if (!t->lease_warned) {
		tui_message(&t->v, ST_WARN, "leases not shown: %s", err->msg);
		t->lease_warned = true;
	}
}

/* Keeps the status line saying why leases are missing while top waits to ask again. */
static void lease_status(struct top *t)
{
	double now = now_mono();
	if (t->lease_retry <= now || (t->v.msg_until > now && strncmp(t->v.msg, "leases: ", 8)))
		return;
	t->v.now = now;
	tui_message(&t->v, ST_WARN, "leases: the daemon did not answer (retrying in %.0f s)",
		    t->lease_retry - now + 0.5);
	t->v.msg_until = t->lease_retry < now + 1.0 ? t->lease_retry : now + 1.0;
}

static void refresh(struct top *t)
{
	tui_layout(&t->L, t->scr.rows, t->scr.cols, &t->m, &t->v);
	unsigned what = tui_refresh_needs(&t->L);
	bool pcie = (what & REFRESH_PCIE) && tui_pcie_due(&t->m, t->v.delay, now_mono());
	gpu_set_refresh(t->set, what | (pcie ? REFRESH_PCIE_THROUGHPUT : 0));
	t->last_what = what;
	if (!t->lq.dc && now_mono() >= t->lease_retry) {
		struct gpu_error err = {0};
		struct leaseview nv;
		int r = leaseview_query_start(&t->lq, &nv, &err);
		if (r <= 0)
			lease_answer(t, r == 0 ? 0 : -1, &nv, &err);
	}
	tui_model_update(&t->m, &t->lv, pcie, t->v.tree, time(NULL), now_mono());
	tui_model_order(&t->m, &t->v);
}

/* Whatever has come of the question in flight. */
static void lease_step(struct top *t)
{
	if (!t->lq.dc)
		return;
	struct gpu_error err = {0};
	struct leaseview nv;
	int r = leaseview_query_step(&t->lq, &nv, &err);
	if (r == 0)
		return;
	lease_answer(t, r > 0 ? 1 : -1, &nv, &err); /* the model reads t->lv: shown at the next draw */
	tui_model_order(&t->m, &t->v);
}

static void draw(struct top *t)
{
	struct tui_frame f;
	t->v.now = now_mono();
	tui_layout(&t->L, t->scr.rows, t->scr.cols, &t->m, &t->v);
	/* The stat files of the rows on screen (and of a process a question is about): the
	 * refresh read the others' only when the order needs them. */
	tui_model_stats(&t->m, t->v.proc_top, (size_t)tui_proc_rows(&t->L), t->v.act_pid);
	tui_frame_init(&f, t->scr.rows, t->scr.cols, t->v.utf8);
	tui_render(&f, &t->L, &t->m, &t->v);
	tui_screen_draw(&t->scr, &f);
	tui_frame_free(&f);
}

/* Keys waiting on the terminal. false: quit. *refresh set when the machine must be read now. */
static bool keys(struct top *t, bool *refresh_now, bool *got_any)
{
	int key;
	while ((key = tui_screen_key(&t->scr)) != -1) {
		*got_any = true;
		if (key == KEY_RESIZE)
			continue;    /* SIGWINCH is ours: handled in the loop */
		switch (tui_key(&t->v, &t->m, key)) {
		case ACT_QUIT: return false;
		case ACT_REFRESH: *refresh_now = true; break;
		case ACT_REPAINT: tui_screen_repaint(&t->scr); break;
		case ACT_KILL_ASK: tui_kill_ask(&t->v, &t->m); break;
		case ACT_KILL: tui_kill(&t->acts, &t->v, &t->m); break;
		case ACT_RELEASE_ASK: tui_release_ask(&t->v, &t->m); break;
		case ACT_RELEASE: tui_release(&t->acts, &t->v, &t->m); break;
		case ACT_INFO: tui_info(&t->v, &t->m); break;
		case ACT_REDRAW: case ACT_NONE: break;
		}
		tui_model_order(&t->m, &t->v);
	}
	return true;
}

/* A view that now shows more (a bigger terminal, the selected GPU's card) is read at once. */
static bool shows_more(struct top *t)
{
	tui_layout(&t->L, t->scr.rows, t->scr.cols, &t->m, &t->v);
	return (tui_refresh_needs(&t->L) & ~t->last_what) != 0;
}

static int run(struct top *t, const sigset_t *waitmask)
{
	refresh(t);
	t->next = now_mono() + t->v.delay;
	int idle_wakes = 0;
	for (;;) {
		draw(t);
		double now = now_mono(), wake = t->next, d = tui_acts_deadline(&t->acts);
		if (d && d < wake)
			wake = d;
		if (t->v.msg[0] && t->v.msg_until > now && t->v.msg_until < wake)
			wake = t->v.msg_until;
		if (t->lq.dc && t->lq.deadline < wake)
			wake = t->lq.deadline;
		struct pollfd fds[66] = {{.fd = STDIN_FILENO, .events = POLLIN},
					 {.fd = leaseview_query_fd(&t->lq), .events = POLLIN}};
		nfds_t n = 2 + (nfds_t)tui_acts_fds(&t->acts, fds + 2, ARRAY_SIZE(fds) - 2);
		double left = wake > now ? wake - now : 0;
		struct timespec ts = {(time_t)left, (long)((left - (double)(time_t)left) * 1e9)};
		int r = ppoll(fds, n, &ts, waitmask);
		if (got_quit)
			return EXIT_OK;
		if (r < 0 && errno != EINTR)
			return EXIT_FAIL;
		if (got_winch) {
			got_winch = 0;
			tui_screen_resize(&t->scr);
		}
		/* The terminal went away (hung up, closed): nothing to draw on any more. */
		if (r > 0 && (fds[0].revents & (POLLHUP | POLLERR | POLLNVAL)))
			return EXIT_OK;
		bool refresh_now = false, got = false;
		if (r > 0 && (fds[0].revents & POLLIN)) {
			if (!keys(t, &refresh_now, &got))
				return EXIT_OK;
			/* Readable but nothing to read, again and again: end of input. */
			idle_wakes = got ? 0 : idle_wakes + 1;
			if (idle_wakes > 100)
				return EXIT_OK;
		}
		lease_step(t);
		t->v.now = now_mono();
		lease_status(t);
		if (tui_acts_step(&t->acts, &t->v) || shows_more(t))
			refresh_now = true;
		now = now_mono();
		if (refresh_now || now >= t->next) {
			refresh(t);
			if (now >= t->next) {
				/* Absolute deadlines: the period does not drift by what a refresh takes. */
				t->next += t->v.delay;
				if (t->next < now)
					t->next = now + t->v.delay;
			}
		}
	}
}

/* -u and -m as kill's (a short letter means one thing in every command: gpuctl(1), CONVENTIONS). */
enum { O_USER = 'u', O_MINE = 'm', O_SORT = 256, O_REVERSE, O_FILTER, O_TREE, O_GRAPHS, O_COLOR,
       O_GRACE };

static int top(struct cmd *c)
{
	struct args *a = &c->args;
	struct top t = {0};
	tui_view_init(&t.v);
	int sort = args_choice(a, O_SORT, tui_col_names, COL_GMEM);
	int color = args_choice(a, O_COLOR, color_when_names, COLOR_AUTO);
	if (sort < 0 || color < 0 || !args_seconds(a, 'd', 0.05, &t.v.delay) ||
	    !args_seconds(a, O_GRACE, 0, &t.v.grace))
		return cmd_args_error(c);
	t.v.sort = (enum tui_col)sort;
	t.v.reverse = args_has(a, O_REVERSE);
	t.v.mine_only = args_has(a, O_MINE);
	t.v.tree = args_has(a, O_TREE);
	snprintf(t.v.filter, sizeof t.v.filter, "%s", args_get(a, O_FILTER) ? args_get(a, O_FILTER) : "");
	snprintf(t.v.user, sizeof t.v.user, "%s", args_get(a, O_USER) ? args_get(a, O_USER) : "");
	const char *term = getenv("TERM");
	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
		fprintf(stderr, "gpuctl top: needs a terminal on its input and output; for scripts, "
			"`gpuctl status --json --details --loop 1` gives the same facts\n");
		return EXIT_USAGE;
	}
	if (!term || !*term || !strcmp(term, "dumb")) {
		fprintf(stderr, "gpuctl top: the terminal (TERM=%s) cannot draw a full screen; set TERM "
			"to your terminal's type, or use `gpuctl status --loop 1`\n", term ? term : "");
		return EXIT_USAGE;
	}
	/* The daemon's shared view where it serves one, as fresh as the refresh period. */
	c->snap = true;
	c->snap_what = REFRESH_PROCS | REFRESH_PROC_UTIL;
	c->snap_age = snapshot_max_age(t.v.delay);
	int rc = cmd_open(c);
	if (rc != EXIT_OK)
		return rc;
	t.set = c->set;
	gpu_set_watch_exits(t.set, 2); /* issue 22: no stat per process and refresh */
	if (args_has(a, O_GRAPHS))
		for (size_t i = 0; i < t.set->ngpus && i < 64; i++)
			t.v.graphs |= 1ULL << i;
	/* Wide characters (block glyphs, names as they are) only on a UTF-8 terminal. */
	setlocale(LC_CTYPE, "");
	t.v.utf8 = !strcmp(nl_langinfo(CODESET), "UTF-8");
	t.v.color = use_color((enum color_when)color, STDOUT_FILENO);
	/* The signals wait blocked and arrive only inside ppoll: no race with the checks. Our
	 * handlers are in place before curses starts, so it installs none of its own for them. */
	const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGWINCH};
	sigset_t block, orig, waitmask;
	sigemptyset(&block);
	for (size_t i = 0; i < ARRAY_SIZE(sigs); i++)
		sigaddset(&block, sigs[i]);
	sigprocmask(SIG_BLOCK, &block, &orig);
	waitmask = orig;   /* ppoll's: ours open, even if our parent left them blocked */
	struct sigaction sa = {.sa_handler = on_signal}, old[4];
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < ARRAY_SIZE(sigs); i++) {
		sigdelset(&waitmask, sigs[i]);
		sigaction(sigs[i], &sa, &old[i]);
	}
	char err[512];
	if (!tui_screen_open(&t.scr, t.v.color, err, sizeof err)) {
		fprintf(stderr, "gpuctl top: %s\n", err);
		rc = EXIT_FAIL;
	} else {
		tui_model_init(&t.m, t.set, getuid());
		rc = run(&t, &waitmask);
		tui_screen_close(&t.scr);
	}
	for (size_t i = 0; i < ARRAY_SIZE(sigs); i++)
		sigaction(sigs[i], &old[i], NULL);
	sigprocmask(SIG_SETMASK, &orig, NULL);
	tui_acts_report(&t.acts);
	tui_acts_free(&t.acts);
	tui_layout_free(&t.L);
	tui_model_free(&t.m);
	tui_view_free(&t.v);
	leaseview_query_cancel(&t.lq);
	leaseview_free(&t.lv);
	return rc;
}

static const struct option longopts[] = {
	{"delay", required_argument, NULL, 'd'}, {"sort", required_argument, NULL, O_SORT},
	{"reverse", no_argument, NULL, O_REVERSE}, {"filter", required_argument, NULL, O_FILTER},
	{"user", required_argument, NULL, O_USER}, {"mine", no_argument, NULL, O_MINE},
	{"tree", no_argument, NULL, O_TREE}, {"graphs", no_argument, NULL, O_GRAPHS},
	{"color", required_argument, NULL, O_COLOR}, {"grace", required_argument, NULL, O_GRACE},
	{0},
};

const struct cmd_entry cmd_top_entry = {
	.name = "top",
	.summary = "full-screen view of GPUs, processes, leases and the queue",
	.usage = "top [-d SECONDS] [--sort COL] [--filter TEXT] [--user NAME] [--mine] [--tree]\n"
		 "           [--graphs] [-g LIST]\n\n"
		 "A full-screen view, refreshed every -d seconds: each GPU's use, memory, temperature,\n"
		 "power, fan, clocks, encoder/decoder, PCIe, throttle reasons and lease (its holder,\n"
		 "age, and its idle time once idle a minute or warned), with history graphs; its\n"
		 "processes (user, pid, GPU, GPU memory, SM and memory use, host CPU,\n"
		 "RSS, run time, command) to sort, filter, see as a tree, inspect and signal; the\n"
		 "lease queue. Press ? inside for every key. It shows nothing `gpuctl status --json\n"
		 "--details` does not tell. Needs a terminal (not TERM=dumb) and ncurses\n"
		 "(libncursesw6).\n\n"
		 CMD_GPUS_HELP
		 "  -d, --delay SECONDS        between refreshes (default 1; fractions or units: 0.5, 500ms)\n"
		 "      --sort COL             user, pid, gpu, gmem (default), sm, mem, enc, dec, cpu,\n"
		 "                             rss, time or command\n"
		 "      --reverse              the other way round\n"
		 "      --filter TEXT          processes whose command, user or pid contains TEXT\n"
		 "  -u, --user NAME            only NAME's processes\n"
		 "  -m, --mine                 only your processes\n"
		 "      --tree                 each job's processes under their parent\n"
		 "      --graphs               history graphs of every GPU\n"
		 "      --grace SECONDS        from SIGTERM to SIGKILL when signalling (default 10)\n"
		 "      --color=auto|always|never   colour (NO_COLOR is respected)\n\n"
		 "Keys: q quit, ? help, arrows move, Tab GPU/process pane, < > sort, / filter,\n"
		 "u user, g GPU, m mine, c clear filters, t tree, Enter details, k signal (TERM,\n"
		 "then KILL), G/H history graphs, R release your lease. Exit: q, Ctrl-C, SIGTERM\n"
		 "or a lost terminal end it with status 0; not on a terminal, or TERM=dumb: 2.\n",
	.args = {.shorts = "d:u:m", .longs = longopts},
	.flags = CMD_NVML | CMD_GPUS | CMD_GUARD_VIEW,
	.exec = top,
};
