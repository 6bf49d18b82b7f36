/* keys.c: what a key does to top's view (pure: what needs the machine or another process,
 * signalling, releasing, reading a process's details, is returned as an action for act.c), and
 * the help: every key here is listed in tui_help, beside them (a unit test holds the two
 * together). */
#include "tui/curses.h"
#include "tui/tui.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* At most 21 lines of at most 79 columns: the whole help on an 80x24 terminal (the header, the
 * title and the footer take 3 rows); t5009 reads it there. */
const char *const tui_help[] = {
	"q  Q  F10       quit (also Ctrl-C)",
	"?  h  F1        this help (q or ? closes it too)",
	"Esc             close a prompt, the help or the details; clear a message",
	"Up Down PgUp PgDn Home End   move in the pane that has the focus",
	"Tab Shift-Tab   move the focus between the processes and the GPUs",
	"<  >  F6  I     sort by the column to the left / right; I inverts the order",
	"M  S  P  T  N   sort by GPU memory, SM use, host CPU, run time, pid",
	"/               filter: processes whose command, user or pid contains the text",
	"u  g            only a user's processes / those on GPUs (e.g. 0,2); empty: all",
	"m  c            only my processes (on / off) / clear every filter",
	"t               tree view: each job's processes under their parent (on / off)",
	"Enter  i        details of the selected process: command line, environment,",
	"                CUDA visibility and what gpuctl doctor --pid finds",
	"k  F9           signal the selected process through gpuctl kill's safe path:",
	"                SIGTERM, then SIGKILL after the grace period; your own only",
	"                (root types the owner's name to confirm)",
	"G  H            history graphs of the selected GPU / of every GPU (on / off)",
	"R               release your env lease on the selected GPU",
	"Ctrl-L          draw the whole screen again",
	"Red from 90%, yellow from 50%, yours bold (NO_COLOR, --color=never: no colour).",
	"N/A: the driver gives no value; '-': no utilisation sample for 1 s (idle, MIG).",
	NULL,
};

enum { KEY_ESC = 27, KEY_CTRL_L = 12, KEY_CTRL_U = 21, KEY_DEL = 127, KEY_CTRL_H = 8 };

void tui_view_init(struct tui_view *v)
{
	*v = (struct tui_view){.delay = 1, .grace = 10, .sort = COL_GMEM, .sel_gpu = -1};
}

void tui_view_free(struct tui_view *v)
{
	sb_free(&v->info);
}

void tui_message(struct tui_view *v, enum tui_style st, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(v->msg, sizeof v->msg, fmt, ap);
	va_end(ap);
	v->msg_style = st;
	v->msg_until = v->now + 5;
}

static void move_proc(struct tui_view *v, const struct tui_model *m, long by)
{
	if (!m->nshown)
		return;
	long at = (long)v->sel + by;
	at = at < 0 ? 0 : at >= (long)m->nshown ? (long)m->nshown - 1 : at;
	v->sel = (size_t)at;
	const struct tui_row *r = tui_selected(m, v);
	v->sel_pid = r->pid;
	v->sel_gpu = r->g ? (int)r->g->index : -1;
}

static void move_gpu(struct tui_view *v, const struct tui_model *m, long by)
{
	const struct gpu_set *set = m->set;
	long at = (long)v->gpu_sel;
	while (by) {
		long step = by > 0 ? 1 : -1, next = at + step;
		while (next >= 0 && next < (long)set->ngpus && !set->gpus[next].selected)
			next += step;
		if (next < 0 || next >= (long)set->ngpus)
			break;
		at = next;
		by -= step;
	}
	v->gpu_sel = (size_t)at;
}

/* "0,2": a mask of GPU indices; false on anything else. */
static bool parse_gpus(const char *s, const struct gpu_set *set, uint64_t *mask)
{
	*mask = 0;
	while (*s) {
		unsigned long i = 0;
		const char *start = s;
		while (*s >= '0' && *s <= '9')
			i = i * 10 + (unsigned long)(*s++ - '0');
		if (s == start || i >= set->ngpus || i >= 64)
			return false;
		*mask |= 1ULL << i;
		while (*s == ' ')
			s++;
		if (*s == ',')
			s++;
		while (*s == ' ')
			s++;
	}
	return true;
}

/* A prompt's line is complete: apply it. */
static enum tui_action prompt_done(struct tui_view *v, const struct tui_model *m)
{
	enum tui_prompt p = v->prompt;
	v->prompt = PR_NONE;
	switch (p) {
	case PR_FILTER:
		snprintf(v->filter, sizeof v->filter, "%s", v->input);
		break;
	case PR_USER:
		snprintf(v->user, sizeof v->user, "%.*s", (int)sizeof v->user - 1, v->input);
		break;
	case PR_GPU:
		if (!parse_gpus(v->input, m->set, &v->gpu_mask)) {
			v->gpu_mask = 0;
			tui_message(v, ST_WARN, "not a list of GPU indices (0 to %zu): '%s'",
				    m->set->ngpus ? m->set->ngpus - 1 : 0, v->input);
		}
		break;
	case PR_KILL_NAME:
		return ACT_KILL;     /* act.c compares the name */
	default:
		break;
	}
	return ACT_REDRAW;
}

static enum tui_action prompt_key(struct tui_view *v, const struct tui_model *m, int key)
{
	if (v->prompt == PR_KILL || v->prompt == PR_RELEASE) {   /* one key answers */
		enum tui_prompt p = v->prompt;
		v->prompt = PR_NONE;
		if (key == 'y' || key == 'Y')
			return p == PR_KILL ? ACT_KILL : ACT_RELEASE;
		tui_message(v, ST_NORMAL, "%s", p == PR_KILL ? "not signalled" : "not released");
		return ACT_REDRAW;
	}
	size_t len = strlen(v->input);
	if (key == KEY_ESC) {
		v->prompt = PR_NONE;
	} else if (key == '\n' || key == '\r' || key == KEY_ENTER) {
		return prompt_done(v, m);
	} else if (key == KEY_BACKSPACE || key == KEY_DEL || key == KEY_CTRL_H) {
		/* Back over one character, continuation bytes of UTF-8 included. */
		while (len > 0 && ((unsigned char)v->input[len - 1] & 0xC0) == 0x80)
			v->input[--len] = '\0';
		if (len > 0)
			v->input[--len] = '\0';
	} else if (key == KEY_CTRL_U) {
		v->input[0] = '\0';
	} else if (key >= 0x20 && key < 0x100 && key != KEY_DEL && len + 1 < sizeof v->input) {
		v->input[len] = (char)key;
		v->input[len + 1] = '\0';
	} else {
		return ACT_NONE;
	}
	return ACT_REDRAW;
}

static void ask(struct tui_view *v, enum tui_prompt p, const char *current)
{
	v->prompt = p;
	snprintf(v->input, sizeof v->input, "%.*s", (int)sizeof v->input - 1, current);
}

static enum tui_action overlay_key(struct tui_view *v, int key)
{
	switch (key) {
	case KEY_ESC: case 'q': case '?': case 'h': case KEY_F1: case '\n': case '\r': case KEY_ENTER:
		v->overlay = OV_NONE;
		break;
	case KEY_UP: v->ov_scroll = v->ov_scroll > 0 ? v->ov_scroll - 1 : 0; break;
	case KEY_DOWN: v->ov_scroll++; break;
	case KEY_PPAGE: v->ov_scroll = v->ov_scroll > 10 ? v->ov_scroll - 10 : 0; break;
	case KEY_NPAGE: v->ov_scroll += 10; break;
	case KEY_HOME: v->ov_scroll = 0; break;
	case KEY_CTRL_L: return ACT_REPAINT;
	default: return ACT_NONE;
	}
	return ACT_REDRAW;
}

static void sort_by(struct tui_view *v, enum tui_col c)
{
	if (v->sort == c)
		v->reverse = !v->reverse;
	else
		v->sort = c, v->reverse = false;
}

enum tui_action tui_key(struct tui_view *v, const struct tui_model *m, int key)
{
	if (v->prompt != PR_NONE)
		return prompt_key(v, m, key);
	if (v->overlay != OV_NONE)
		return overlay_key(v, key);
	bool gpus = v->focus == FOCUS_GPUS;
	const struct gpu *g;
	switch (key) {
	case 'q': case 'Q': case KEY_F10:
		return ACT_QUIT;
	case '?': case 'h': case KEY_F1:
		v->overlay = OV_HELP;
		v->ov_scroll = 0;
		break;
	case '\t': case KEY_BTAB:
		v->focus = gpus ? FOCUS_PROCS : FOCUS_GPUS;
		break;
	case KEY_UP: case KEY_DOWN: case KEY_PPAGE: case KEY_NPAGE: case KEY_HOME: case KEY_END: {
		long by = key == KEY_UP ? -1 : key == KEY_DOWN ? 1 : key == KEY_PPAGE ? -10
			  : key == KEY_NPAGE ? 10 : key == KEY_HOME ? -100000 : 100000;
		if (gpus)
			move_gpu(v, m, by);
		else
			move_proc(v, m, by);
		break;
	}
	case '<': case '>': case KEY_F6:
		v->sort = (enum tui_col)((v->sort + (key == '<' ? COL_N - 1 : 1)) % COL_N);
		v->reverse = false;
		break;
	case 'I': v->reverse = !v->reverse; break;
	case 'M': sort_by(v, COL_GMEM); break;
	case 'S': sort_by(v, COL_SM); break;
	case 'P': sort_by(v, COL_CPU); break;
	case 'T': sort_by(v, COL_TIME); break;
	case 'N': sort_by(v, COL_PID); break;
	case '/': ask(v, PR_FILTER, v->filter); break;
	case 'u': ask(v, PR_USER, v->user); break;
	case 'g': {
		char cur[200] = "";
		size_t len = 0;
		for (unsigned i = 0; i < 64 && len < sizeof cur; i++)
			if (v->gpu_mask >> i & 1)
				len += (size_t)snprintf(cur + len, sizeof cur - len, "%s%u", len ? "," : "", i);
		ask(v, PR_GPU, cur);
		break;
	}
	case 'm': v->mine_only = !v->mine_only; break;
	case 'c':
		v->filter[0] = v->user[0] = '\0';
		v->gpu_mask = 0;
		v->mine_only = false;
		break;
	case 't':
		v->tree = !v->tree;
		return ACT_REFRESH;  /* the parents of jobs are looked up at a refresh */
	case '\n': case '\r': case KEY_ENTER: case 'i':
		return ACT_INFO;
	case 'k': case KEY_F9:
		return ACT_KILL_ASK;
	case 'R':
		return ACT_RELEASE_ASK;
	case 'G':
		g = tui_focus_gpu(m, v);
		if (!g) {
			tui_message(v, ST_NORMAL, "select a GPU (Tab) or a process first");
			break;
		}
		v->graphs ^= g->index < 64 ? 1ULL << g->index : 0;
		break;
	case 'H': {
		uint64_t all = 0;
		for (size_t i = 0; i < m->set->ngpus && i < 64; i++)
			if (m->set->gpus[i].selected)
				all |= 1ULL << i;
		v->graphs = (v->graphs & all) == all ? 0 : all;
		break;
	}
	case KEY_CTRL_L:
		return ACT_REPAINT;
	case KEY_ESC:
		v->msg[0] = '\0';
		break;
	default:
		return ACT_NONE;
	}
	return ACT_REDRAW;
}
