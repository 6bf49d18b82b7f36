/* test_client.c: lease/client.c's send and receive on a real SEQPACKET socket pair: a request
 * goes at once where the socket has room and waits (within the timeout, then says so) where it
 * has none; a reply's parts come whole and in order, a later part read without a wait where it
 * is there already (issue 22) and waited for where it is not, the caller's signals let through
 * that wait; a peer that closed is said. */
#include "lease/client.h"
#include "tap.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void put(int fd, const char *text)
{
	CHECK(send(fd, text, strlen(text), 0) == (ssize_t)strlen(text));
}

/* One message into m: its verb, "" on 0, "-" on -1. */
static const char *get(struct dclient *dc, struct msg *m, int timeout_ms, int *r)
{
	int fds[PROTO_MAX_FDS];
	size_t nfds = 0;
	struct gpu_error err = {0};
	*r = dclient_recv(dc, m, fds, &nfds, timeout_ms, NULL, &err);
	return *r == 1 ? msg_verb(m) : *r == 0 ? "" : "-";
}

static volatile sig_atomic_t usr1;

static void on_usr1(int sig)
{
	(void)sig;
	usr1++;
}

void test_client(void)
{
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
	struct dclient dc = {.fd = sv[0], .timeout = 0.2, .next_id = 1};
	struct gpu_error err = {0};
	struct strbuf req = {0};
	msg_begin(&req, "ping");
	msg_add_u64(&req, "id", 1);

	/* A request, and the reply's two parts already there: both, in order. */
	CHECK(dclient_send(&dc, &req, &err));
	char got[64] = "";
	CHECK(recv(sv[1], got, sizeof got - 1, 0) == (ssize_t)req.len);
	CHECK(!memcmp(got, req.buf, req.len));
	CHECK(!dc.more);   /* a new request: its answer is waited for first */
	put(sv[1], "part\nid 1\nn 1");
	put(sv[1], "part\nid 1\nn 2");
	struct msg m;
	uint64_t n = 0;
	int r;
	CHECK_STR(get(&dc, &m, 1000, &r), "part");
	CHECK(r == 1 && msg_get_u64(&m, "n", 9, &n) && n == 1);
	if (r == 1)
		msg_free(&m);
	CHECK(dc.more);
	CHECK_STR(get(&dc, &m, 1000, &r), "part");
	CHECK(r == 1 && msg_get_u64(&m, "n", 9, &n) && n == 2);
	if (r == 1)
		msg_free(&m);
	/* Nothing more there: the read without a wait finds none, and then it waits (for the
	 * timeout: a lower bound, the kernel's, never a speed), the caller's signals let through:
	 * one pending ends it, its handler run. */
	double t0 = now_mono();
	CHECK_STR(get(&dc, &m, 150, &r), "");
	CHECK(now_mono() - t0 >= 0.1);
	CHECK(!dc.more);
	struct sigaction sa = {.sa_handler = on_usr1}, old;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, &old);
	sigset_t block, prev, during;
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	sigprocmask(SIG_BLOCK, &block, &prev);
	raise(SIGUSR1);
	during = prev;
	sigdelset(&during, SIGUSR1);
	dc.more = true;
	int fds[PROTO_MAX_FDS];
	size_t nfds = 0;
	CHECK(dclient_recv(&dc, &m, fds, &nfds, 5000, &during, &err) == 0);
	CHECK(usr1 == 1);
	sigprocmask(SIG_SETMASK, &prev, NULL);
	sigaction(SIGUSR1, &old, NULL);
	/* More there after a wait that found none: read after the wait. */
	put(sv[1], "late\nid 1");
	CHECK_STR(get(&dc, &m, 1000, &r), "late");
	if (r == 1)
		msg_free(&m);

	/* A socket with no room: the request waits up to the timeout and says so. */
	int sndbuf = 4096;
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
	char fill[1024];
	memset(fill, 'x', sizeof fill);
	int k = 0;
	while (k < 100000 && send(sv[0], fill, sizeof fill, MSG_DONTWAIT) > 0)
		k++;
	CHECK(k < 100000 && (errno == EAGAIN || errno == ENOBUFS));
	CHECK(!dclient_send(&dc, &req, &err));
	CHECK(strstr(err.msg, "does not take requests") != NULL);

	/* The peer gone: a kept "more" read says the connection closed. */
	close(sv[1]);
	dc.more = true;
	CHECK_STR(get(&dc, &m, 1000, &r), "-");
	err = (struct gpu_error){0};
	CHECK(!dclient_send(&dc, &req, &err));
	CHECK(strstr(err.msg, "closed the connection") != NULL);
	sb_free(&req);
	close(sv[0]);
}
