/* test_peer.c: the servers' loop (base/peer.c) on real sockets: a client is accepted with the
 * kernel's word on who it is; output to a peer that does not read is queued up to its bound
 * (or, with none, drops the peer at once), with the descriptors it carries closed in every
 * case; queued output goes once the peer reads; the wait's timeout and the linger. The signalfd
 * is left out (peer_loop_open would block TERM and INT in the test process). */
#include "base/peer.h"
#include "tap.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static bool fd_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

static int admitted;
static uid_t admitted_uid;

static void admit(void *arg, int fd, const struct ucred *cr)
{
	struct peer_loop *l = arg;
	struct peer *p = xcalloc(1, sizeof *p);
	admitted++;
	admitted_uid = cr->uid;
	if (peer_add(l, p, 7, fd, cr, 0)) {
		peer_close(p);
	}
	free(p);
}

static void test_accept(struct peer_loop *l)
{
	char dir[] = "/tmp/gpuctl-peer-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	char *path = xasprintf("%s/s.sock", dir);
	CHECK(!peer_path_fits("/a/path/far/too/long/for/a/unix/socket/address/since/sun_path/holds/"
			      "only/one/hundred/and/eight/bytes/with/its/nul"));
	CHECK(peer_listen(l, path, 0177, 8));
	int c = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
	CHECK(connect(c, (struct sockaddr *)&sa, sizeof sa) == 0);
	CHECK(peer_accept(l, 16, admit, l) == 0);
	CHECK(admitted == 1);
	CHECK(admitted_uid == geteuid());
	close(c);
	peer_unlisten(l);
	CHECK(l->lfd == -1);
	unlink(path);
	rmdir(dir);
	free(path);
}

/* A peer on one end of a socketpair whose other end (*other) nobody reads. */
static void pair(struct peer_loop *l, struct peer *p, size_t out_max, int *other)
{
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0);
	int small = 4096;
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
	struct ucred cr = {.pid = getpid(), .uid = geteuid(), .gid = getegid()};
	CHECK(peer_add(l, p, 1, sv[0], &cr, out_max));
	*other = sv[1];
}

/* Sends msg until the socket is full: what the last peer_send said. */
static enum peer_sent fill(struct peer *p, const struct strbuf *msg)
{
	enum peer_sent r = PEER_SENT;
	for (int k = 0; k < 10000 && r == PEER_SENT; k++)
		r = peer_send(p, msg, NULL, 0, 1.0);
	return r;
}

static void test_output(struct peer_loop *l)
{
	struct strbuf msg = {0};
	for (int i = 0; i < 1000; i++)
		sb_add(&msg, "x", 1);
	struct peer p;
	int other, fds[2];

	/* No bound: the first message that cannot go now drops the peer, its descriptor closed. */
	pair(l, &p, 0, &other);
	CHECK(fill(&p, &msg) == PEER_OVER);
	CHECK(p.dead);
	CHECK(!p.out);
	CHECK(pipe2(fds, O_CLOEXEC) == 0);
	CHECK(peer_send(&p, &msg, &fds[0], 1, 1.0) == PEER_LOST);
	CHECK(!fd_open(fds[0]));
	close(fds[1]);
	peer_close(&p);
	close(other);

	/* A bound of 3 messages (what each costs queued: its bytes and its record): queued (with a
	 * descriptor) until past it. */
	pair(l, &p, 3 * PEER_MSG_COST(msg.len), &other);
	CHECK(fill(&p, &msg) == PEER_QUEUED);
	CHECK(p.want_out);
	CHECK(p.out_moved == 1.0);
	CHECK(pipe2(fds, O_CLOEXEC) == 0);
	CHECK(peer_send(&p, &msg, &fds[0], 1, 2.0) == PEER_QUEUED);
	CHECK(fd_open(fds[0]));
	CHECK(p.out_bytes == 2 * PEER_MSG_COST(msg.len));
	CHECK(p.out_moved == 1.0);
	/* Read all, then flush: the queue goes, the descriptor along (closed here once sent). */
	char buf[2048];
	while (recv(other, buf, sizeof buf, MSG_DONTWAIT) > 0)
		;
	peer_flush(&p, 3.0);
	CHECK(!p.out && p.out_bytes == 0);
	CHECK(!p.want_out);
	CHECK(!p.dead);
	CHECK(!fd_open(fds[0]));
	close(fds[1]);
	/* Full again: the fourth message queued is past the bound, and the peer is dropped. */
	CHECK(fill(&p, &msg) == PEER_QUEUED);
	CHECK(peer_send(&p, &msg, NULL, 0, 4.0) == PEER_QUEUED);
	CHECK(peer_send(&p, &msg, NULL, 0, 4.0) == PEER_QUEUED);
	CHECK(pipe2(fds, O_CLOEXEC) == 0);
	CHECK(peer_send(&p, &msg, &fds[0], 1, 4.0) == PEER_OVER);
	CHECK(p.dead);
	CHECK(!fd_open(fds[0]));
	close(fds[1]);
	peer_close(&p);
	CHECK(!p.out && p.fd == -1);
	close(other);
	sb_free(&msg);
}

static void test_timeout(struct peer_loop *l)
{
	CHECK(peer_timeout(l, 0, 10.0) == -1);
	CHECK(peer_timeout(l, 9.0, 10.0) == 0);
	CHECK(peer_timeout(l, 10.5, 10.0) == 501);
	CHECK(peer_timeout(l, 1e9, 10.0) == 3600000);
	peer_linger_start(l, 2.0, 10.0);
	CHECK(!peer_linger(l, true, 11.0));
	CHECK(peer_timeout(l, 0, 11.0) == -1);
	CHECK(!peer_linger(l, false, 12.0));
	CHECK(peer_timeout(l, 0, 12.0) == 1001);
	CHECK(peer_timeout(l, 12.5, 12.0) == 501);
	CHECK(peer_linger(l, false, 13.0));
	peer_linger_start(l, 0, 10.0);
	CHECK(!peer_linger(l, false, 100.0));
	CHECK(peer_timeout(l, 0, 100.0) == -1);
}

void test_peer(void)
{
	struct peer_loop l;
	peer_loop_init(&l);
	l.epfd = epoll_create1(EPOLL_CLOEXEC);
	CHECK(l.epfd >= 0);
	test_accept(&l);
	test_output(&l);
	test_timeout(&l);
	struct peer_event ev[4];
	CHECK(peer_wait(&l, ev, 4, 0) == 0);
	peer_loop_free(&l);
	CHECK(l.epfd == -1 && l.lfd == -1 && l.reserve == -1);
}
