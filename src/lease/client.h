/* client.h: how commands talk to `gpuctl daemon`: find it (the shared daemon at $GPUCTL_SOCKET
 * or /run/gpuctl/gpuctl.sock, waited for while it is installed but down; or else, none being
 * installed, this user's private one, started on demand), send a request, and wait for the
 * answer with a deadline that names the daemon when it runs out. */
#ifndef GPUCTL_CLIENT_H
#define GPUCTL_CLIENT_H

#include "base/proto.h"
#include "base/util.h"

#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

#define DEFAULT_SOCKET "/run/gpuctl/gpuctl.sock"

struct dclient {
	int fd;
	char *path;               /* the socket connected to */
	bool private_mode;        /* this user's own daemon: leases coordinate only their jobs */
	pid_t daemon_pid;         /* the kernel's word (SO_PEERCRED) */
	double timeout;           /* seconds to wait for an answer */
	uint64_t next_id;
	const char *peer;         /* who answers, for messages (NULL: "the gpuctl daemon") */
	bool more;                /* a message just came: the next (a reply's later part) may be
				     there already, and is read before any wait (issue 22) */
};

enum dclient_mode {
	DC_READ,                  /* only look: no daemon running (and no private one's lease
				     records left) means nothing is leased */
	DC_LEASE,                 /* about to lease: start the private daemon if there is no shared one */
	DC_LEASE_NOW,             /* the same, but a shared daemon that refuses (restarting) is not
				   * waited for: the caller (the job runner) tries again later */
};

/* false with err->code EXIT_OK (DC_READ only) when no daemon runs; otherwise false means err. */
bool dclient_open(struct dclient *dc, enum dclient_mode mode, struct gpu_error *err);
/* Connects to the daemon at path, as found before (a lease's holder committing). */
bool dclient_open_at(struct dclient *dc, const char *path, struct gpu_error *err);
void dclient_close(struct dclient *dc);
bool dclient_send(struct dclient *dc, const struct strbuf *msg, struct gpu_error *err);
/* The same with descriptors (at most 4) sent along. */
bool dclient_send_fds(struct dclient *dc, const struct strbuf *msg, const int *fds, size_t nfds,
		      struct gpu_error *err);
/* Waits up to timeout_ms (-1: no limit) for one message, with the descriptors sent along.
 * sigmask (may be NULL) is the signal mask while waiting (ppoll): a signal it lets through ends
 * the wait. Returns 1 (a message: the caller frees it), 0 (time out or signal), -1 (err). */
int dclient_recv(struct dclient *dc, struct msg *m, int *fds, size_t *nfds, int timeout_ms,
		 const sigset_t *sigmask, struct gpu_error *err);
/* One request, one answer within the timeout; an `error` answer becomes err (false). */
bool dclient_call(struct dclient *dc, const struct strbuf *req, struct msg *reply,
		  struct gpu_error *err);
/* The socket path clients use. */
const char *client_socket_path(void);
/* connect() to the SEQPACKET socket at path without blocking on a full backlog (a stopped
 * peer's): 0, or an errno. dc is set up as dclient_open leaves it, but for what the caller adds. */
int client_connect(struct dclient *dc, const char *path);
/* Starts `/proc/self/exe ARGS` in a session of its own, detached (stdin /dev/null, output to
 * DIR/LOGNAME), and waits until it writes a byte to the descriptor $GPUCTL_READY_FD names (it
 * listens: peer_ready) or exits. false with err when it did not start in time; true otherwise (connect to see
 * whether it, or a rival started at the same moment, serves). what names it in messages. */
bool client_spawn(const char *dir, const char *logname, const char *const *args, const char *what,
		  struct gpu_error *err);
/* Once per session (the terminal's: a marker in dir says it was given), on stderr: leases are
 * private (no shared daemon at shared; state in dir). */
void client_private_notice(const char *shared, const char *dir);

#endif
