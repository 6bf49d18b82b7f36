/* test_httpguard.c: the exporter's connection guard (cmd/exporter-guard.c), on socket pairs with
 * a clock of the test's own: the header deadline gives a connection whose bytes wait unread (it
 * waits on the exporter, not on its client) one more deadline; a connection past a bound takes
 * the place of the longest waiting one, never of one being answered; a connection whose client
 * has gone counts against no bound. */
#include "cmd/exporter-guard.h"
#include "tap.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

struct end {
	int ours, theirs;               /* the exporter's side, the client's */
	struct http_conn *k;
};

/* A connection from 127.0.0.1 (or from 10.0.0.2 when other) accepted at t; its client has sent
 * a request's first bytes when sent. */
static void connect_at(struct http_guard *g, struct end *e, double t, bool sent, bool other)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
		e->ours = e->theirs = -1;
		e->k = NULL;
		return;
	}
	e->ours = sv[0];
	e->theirs = sv[1];
	e->k = NULL;
	if (sent && write(e->theirs, "GET /met", 8) != 8)
		return;         /* (k NULL: the caller's checks fail) */
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(other ? 0x0a000002 : 0x7f000001)};
	e->k = http_guard_open(g, e->ours, (struct sockaddr *)&sa, t);
}

/* Whether the guard has dropped the connection: its client reads the end. */
static bool hung_up(const struct end *e)
{
	char c;
	return e->k->dropped && read(e->theirs, &c, 1) == 0;
}

static void hang_up(struct http_guard *g, struct end *e)
{
	if (e->k)
		http_guard_close(g, e->k);
	close(e->ours);
	if (e->theirs >= 0)     /* (-1: the test closed it, its client gone) */
		close(e->theirs);
}

static void test_deadline(void)
{
	struct http_guard g;
	http_guard_init(&g, 16, 1.0);
	g.logged = 0;   /* nothing said on stderr within the test's minute */
	struct end idle, in, busy, served;
	connect_at(&g, &idle, 0, false, false);
	connect_at(&g, &in, 0, true, false);
	connect_at(&g, &busy, 0, true, false);
	connect_at(&g, &served, 0, false, false);
	CHECK(idle.k && in.k && busy.k && served.k);
	if (!idle.k || !in.k || !busy.k || !served.k)
		return;
	CHECK(http_guard_busy(&g, busy.k, true, 0.5));
	CHECK(http_guard_busy(&g, served.k, true, 0.2));
	CHECK(http_guard_busy(&g, served.k, false, 0.8));       /* answered at 0.8: waits again */
	CHECK(g.live == 4);
	http_guard_sweep(&g, 0.9);
	CHECK(g.expired == 0);                                /* none waited past 1 s */
	http_guard_sweep(&g, 1.5);
	CHECK(hung_up(&idle));                                /* nothing in after 1.5 s */
	CHECK(!in.k->dropped);                                /* its bytes wait on us */
	CHECK(!busy.k->dropped);                              /* being answered */
	CHECK(!served.k->dropped);                            /* waits since its answer at 0.8 */
	CHECK(g.expired == 1 && g.live == 3);
	char buf[8];
	CHECK(read(in.ours, buf, sizeof buf) == 8);           /* read, the request still not whole */
	http_guard_sweep(&g, 1.6);
	CHECK(hung_up(&in));                                  /* now it waits on its client */
	http_guard_sweep(&g, 1.9);
	CHECK(hung_up(&served));
	CHECK(!busy.k->dropped);
	CHECK(!http_guard_busy(&g, idle.k, true, 2.0));        /* a dropped one is not answered */
	CHECK(g.expired == 3 && g.live == 1);
	/* Bytes always unread (a body streamed as fast as it is read): one more deadline, no more. */
	struct end stream;
	connect_at(&g, &stream, 3.0, true, false);
	http_guard_sweep(&g, 4.9);
	CHECK(stream.k && !stream.k->dropped);
	CHECK(write(stream.theirs, "rics", 4) == 4);
	http_guard_sweep(&g, 5.1);
	CHECK(stream.k && hung_up(&stream));
	CHECK(!busy.k->dropped && g.expired == 4);
	hang_up(&g, &idle);
	hang_up(&g, &in);
	hang_up(&g, &busy);
	hang_up(&g, &served);
	hang_up(&g, &stream);
	CHECK(g.head == NULL && g.tail == NULL && g.live == 0);
}

static void test_evict(void)
{
	struct http_guard g;
	http_guard_init(&g, 3, 60);
	g.logged = 0;
	struct end in, keep, fresh, n1, n2, n3, n4;
	connect_at(&g, &in, 0, true, false);       /* the oldest, its bytes in and unread */
	connect_at(&g, &keep, 1, false, false);    /* an idle keep-alive connection */
	CHECK(keep.k && http_guard_busy(&g, keep.k, true, 1) && http_guard_busy(&g, keep.k, false, 1));
	connect_at(&g, &fresh, 2, false, false);   /* never asked */
	CHECK(in.k && fresh.k && g.live == 3 && g.evicted == 0);
	connect_at(&g, &n1, 3, true, false);
	CHECK(hung_up(&in));                       /* the longest waiting, unread bytes or not */
	CHECK(!keep.k->dropped && !fresh.k->dropped && n1.k && !n1.k->dropped);
	connect_at(&g, &n2, 4, true, false);
	CHECK(hung_up(&fresh));                    /* the next one that never had an answer */
	CHECK(n2.k && http_guard_busy(&g, n1.k, true, 4) && http_guard_busy(&g, n2.k, true, 4));
	connect_at(&g, &n3, 5, true, false);
	CHECK(hung_up(&keep));                     /* then the idle one; never those being answered */
	CHECK(!n1.k->dropped && !n2.k->dropped && n3.k && !n3.k->dropped);
	connect_at(&g, &n4, 6, true, false);
	CHECK(hung_up(&n3) && n4.k && !n4.k->dropped);
	CHECK(g.evicted == 4 && g.live == 3);
	struct end *all[] = {&in, &keep, &fresh, &n1, &n2, &n3, &n4};
	for (size_t i = 0; i < sizeof all / sizeof *all; i++)
		hang_up(&g, all[i]);
	/* Every other one being answered: the newcomer itself is refused. */
	http_guard_init(&g, 1, 60);
	g.logged = 0;
	struct end a, b;
	connect_at(&g, &a, 0, true, true);
	CHECK(a.k && http_guard_busy(&g, a.k, true, 0));
	connect_at(&g, &b, 1, true, false);
	CHECK(b.k && hung_up(&b) && !a.k->dropped && g.live == 1);
	hang_up(&g, &a);
	hang_up(&g, &b);
}

/* A scraper's whole request waiting unread (a starved serving thread) is never the victim, however
 * long it has waited: the half-open one behind it is (t5006: scrapers from an attacker's address
 * were dropped so, their requests unread, while the slowloris reconnected). */
static void test_asked(void)
{
	struct http_guard g;
	http_guard_init(&g, 2, 60);
	g.logged = 0;
	struct end asked, half, n1, n2;
	connect_at(&g, &asked, 0, true, false);
	CHECK(asked.k && write(asked.theirs, "rics HTTP/1.1\r\nHost: x\r\n\r\n", 27) == 27);
	connect_at(&g, &half, 1, true, false);     /* "GET /met", never finished */
	connect_at(&g, &n1, 2, true, false);
	CHECK(half.k && hung_up(&half));           /* younger, but it has not asked */
	CHECK(!asked.k->dropped && n1.k && !n1.k->dropped);
	CHECK(n1.k && http_guard_busy(&g, n1.k, true, 2));
	connect_at(&g, &n2, 3, true, false);       /* the others asked or being answered: refused */
	CHECK(n2.k && hung_up(&n2) && !asked.k->dropped && g.evicted == 2 && g.live == 2);
	struct end *all[] = {&asked, &half, &n1, &n2};
	for (size_t i = 0; i < sizeof all / sizeof *all; i++)
		hang_up(&g, all[i]);
	CHECK(g.head == NULL && g.live == 0);
}

/* n connections from one address accepted at t, each being answered; how many were made. */
static size_t busy_crowd(struct http_guard *g, struct end *ends, size_t n, double t)
{
	size_t made = 0;
	for (; made < n; made++) {
		connect_at(g, &ends[made], t, true, false);
		if (!ends[made].k || !http_guard_busy(g, ends[made].k, true, t))
			break;
	}
	return made;
}

/* A crowd that got its pages and reconnected at once: the old connections, their clients gone,
 * are still being finished, and count against no bound. */
static void test_gone(void)
{
	enum { N = HTTP_GUARD_PER_ADDR };
	static struct end old[N];
	struct http_guard g;
	http_guard_init(&g, HTTP_GUARD_MAX, 60);
	g.logged = 0;
	size_t made = busy_crowd(&g, old, N, 0);
	CHECK(made == N);
	for (size_t i = 0; i < 200 && i < made; i++) {       /* answered, their clients gone */
		close(old[i].theirs);
		old[i].theirs = -1;
	}
	struct end fresh;
	connect_at(&g, &fresh, 1, true, false);
	CHECK(fresh.k && !fresh.k->dropped);                  /* 57 of the address's, not 257 */
	CHECK(g.evicted == 0);
	/* Where the clients are all still there, the bound holds: the newcomer is refused. */
	for (size_t i = 0; i < made; i++)
		hang_up(&g, &old[i]);
	hang_up(&g, &fresh);
	made = busy_crowd(&g, old, N, 2);
	struct end late;
	connect_at(&g, &late, 3, true, false);
	CHECK(made == N && late.k && late.k->dropped && g.evicted == 1);
	for (size_t i = 0; i < made; i++)
		hang_up(&g, &old[i]);
	hang_up(&g, &late);
	CHECK(g.head == NULL && g.live == 0);
}

void test_httpguard(void)
{
	test_deadline();
	test_evict();
	test_asked();
	test_gone();
}
