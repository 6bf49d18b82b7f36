/* frame.c: the client of the daemon's frames (frame.h). One connection kept across a loop's
 * refreshes, as the snapshot's; an answer is one message with the frame's sealed memfd, which is
 * checked (its size as said, its seals against writes and shrinking) and mapped. Anything else
 * is no frame, and the caller lays out the view itself: for a while after a refusal (the
 * daemon's answer, or no daemon to connect to), for good after no answer or one not read. */
#include "lease/frame.h"
#include "lease/client.h"
#include "lease/snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define FRAME_MAX_BYTES (1ULL << 30)   /* more is no frame of ours */

struct frame_source {
	struct dclient dc;
	double made;              /* monotonic: when the last frame's view was made (0: none yet) */
	uint64_t token;           /* the last frame's, said in the next ask (0: none) */
	bool settled;             /* no frame to ask again for: see frame_source_settled */
	bool hung;                /* the last ask had no answer in time */
};

struct frame_source *frame_source_new(void)
{
	struct frame_source *fs = xcalloc(1, sizeof *fs);
	fs->dc = (struct dclient){.fd = -1};
	return fs;
}

void frame_source_free(struct frame_source *fs)
{
	if (!fs)
		return;
	dclient_close(&fs->dc);
	free(fs);
}

bool frame_source_settled(const struct frame_source *fs)
{
	return fs->settled;
}

bool frame_source_hung(const struct frame_source *fs)
{
	return fs->hung;
}

void frame_release(struct frame *f)
{
	if (f->bytes && f->len)
		munmap((void *)f->bytes, f->len);
	*f = (struct frame){0};
}

/* The answer m (with nfds descriptors) as a frame. */
static bool take(const struct msg *m, const int *fds, size_t nfds, struct frame *f,
		 double *made, uint64_t *token, struct gpu_error *err)
{
	uint64_t bytes, age;
	*token = 0;
	msg_get_u64(m, "token", UINT64_MAX, token);
	err->code = EXIT_DAEMON;
	if (!strcmp(msg_verb(m), "error")) {
		msg_error_read(m, "the gpuctl daemon refused a frame", err);
		return false;
	}
	if (strcmp(msg_verb(m), "frame") || nfds != 1 ||
	    !msg_get_u64(m, "bytes", FRAME_MAX_BYTES, &bytes) || !bytes ||
	    !msg_get_u64(m, "age", UINT32_MAX, &age)) {
		snprintf(err->msg, sizeof err->msg, "the gpuctl daemon's answer to a frame is not one "
			 "this gpuctl reads ('%.40s')", msg_verb(m));
		return false;
	}
	struct stat st;
	int seals = fcntl(fds[0], F_GET_SEALS);
	int need = F_SEAL_SHRINK | F_SEAL_WRITE;
	if (fstat(fds[0], &st) || seals < 0 || (seals & need) != need || (uint64_t)st.st_size != bytes) {
		snprintf(err->msg, sizeof err->msg, "the gpuctl daemon's frame is not sealed at its size");
		return false;
	}
	void *p = mmap(NULL, bytes, PROT_READ, MAP_SHARED, fds[0], 0);
	if (p == MAP_FAILED) {
		snprintf(err->msg, sizeof err->msg, "the frame could not be mapped: %s", strerror(errno));
		return false;
	}
	/* the first line ends in the clock's 8 columns, which the caller writes over */
	const char *nl = memchr(p, '\n', bytes);
	if (!nl || nl - (const char *)p < 8) {
		munmap(p, bytes);
		snprintf(err->msg, sizeof err->msg, "the gpuctl daemon's frame has no clock");
		return false;
	}
	*f = (struct frame){.bytes = p, .len = bytes};
	*made = now_mono() - (double)age / 1000;
	return true;
}

int frame_fetch(struct frame_source *fs, const struct snap_frame_ask *a, double max_age,
		struct frame *f, struct gpu_error *err)
{
	*f = (struct frame){0};
	fs->hung = false;
	bool reused = fs->dc.fd >= 0;
	if (!reused && !snapshot_connect(&fs->dc, err))
		return 0;
	struct strbuf req = {0};
	snapshot_ask_begin(&req, a->what & ~(unsigned)(REFRESH_COMPUTE_NAMES | REFRESH_NO_PROC_INFO),
			   snapshot_ask_age(max_age, fs->made));
	snap_frame_ask_add(&req, a);
	/* the last frame read: its token says so (a new connection's daemon asks none: harmless) */
	if (fs->token)
		msg_add_u64(&req, "token", fs->token);
	bool ok = snapshot_send(&fs->dc, &reused, &req, err);
	double until = now_mono() + SNAPSHOT_TIMEOUT;
	int got = 0;
	while (ok && !got) {
		struct msg m;
		int fds[PROTO_MAX_FDS];
		size_t nfds = 0;
		if (snapshot_stop_asked()) {
			sb_free(&req);
			return -1;
		}
		double left = until - now_mono();
		int r = left > 0 ? dclient_recv(&fs->dc, &m, fds, &nfds, (int)(left * 1000) + 1, NULL, err)
				 : 0;
		if (r == 0 && (snapshot_stop_asked() || now_mono() < until))
			continue;
		if (r < 0 && reused) {   /* closed before answering: once more, anew */
			dclient_close(&fs->dc);
			reused = false;
			ok = snapshot_connect(&fs->dc, err) && dclient_send(&fs->dc, &req, err);
			until = now_mono() + SNAPSHOT_TIMEOUT;
			continue;
		}
		if (r == 0) {
			err->code = EXIT_DAEMON;
			snprintf(err->msg, sizeof err->msg, "the gpuctl daemon (pid %d) sent no frame "
				 "within %.1f s", (int)fs->dc.daemon_pid, SNAPSHOT_TIMEOUT);
			ok = false;
			fs->settled = fs->hung = true;
		} else if (r < 0) {
			ok = false;
		} else {
			ok = take(&m, fds, nfds, f, &fs->made, &fs->token, err);
			got = ok;
			fs->settled = !ok && strcmp(msg_verb(&m), "error");
			for (size_t i = 0; i < nfds; i++)
				close(fds[i]);
			msg_free(&m);
		}
	}
	sb_free(&req);
	if (!ok)
		dclient_close(&fs->dc);
	return got;
}
