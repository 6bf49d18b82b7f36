/* exporter-guard.c: the exporter's connection guard (the design is in exporter-guard.h). */
#include "cmd/exporter-guard.h"
#include "base/util.h"

#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

void http_guard_init(struct http_guard *gd, unsigned max, double deadline)
{
	*gd = (struct http_guard){.max = max < HTTP_GUARD_MAX ? max : HTTP_GUARD_MAX, .deadline = deadline,
			     .logged = -60};
	pthread_mutex_init(&gd->lock, NULL);
}

static void conn_address(struct http_conn *k, const struct sockaddr *sa)
{
	k->family = sa ? sa->sa_family : AF_UNSPEC;
	if (k->family == AF_INET)
		memcpy(k->addr, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	else if (k->family == AF_INET6)
		memcpy(k->addr, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
}

static bool same_address(const struct http_conn *a, const struct http_conn *b)
{
	return a->family == b->family && !memcmp(a->addr, b->addr, sizeof a->addr);
}

/* Whether the client's bytes wait in the kernel, not yet read by the serving thread: its request
 * (or part of it) is in, and the exporter has not come to it. */
static bool conn_unread(const struct http_conn *c)
{
	int n = 0;
	return c->fd >= 0 && ioctl(c->fd, FIONREAD, &n) == 0 && n > 0;
}

/* Whether its client has closed its end: the connection holds no client's place, only an
 * answer libmicrohttpd has sent and not yet finished (it does that in a later pass over its
 * connections, by which time a crowd of scrapers has reconnected). */
static bool conn_gone(const struct http_conn *c)
{
	struct pollfd p = {.fd = c->fd, .events = POLLRDHUP};
	return c->fd >= 0 && poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* The connections that count against a bound (those of k's address when same_addr): neither
 * dropped nor, where the count passes limit, left by their clients (a poll each, only then). */
static unsigned live_count(const struct http_guard *gd, const struct http_conn *k, bool same_addr,
			   unsigned limit)
{
	unsigned n = 0;
	for (const struct http_conn *c = gd->head; c; c = c->next)
		n += !c->dropped && (!same_addr || same_address(c, k));
	if (n <= limit)
		return n;
	n = 0;
	for (const struct http_conn *c = gd->head; c; c = c->next)
		n += !c->dropped && (!same_addr || same_address(c, k)) && (c == k || !conn_gone(c));
	return n;
}

/* Whether a whole request header waits in the kernel, not yet read by the serving thread (the
 * blank line that ends it is among the unread bytes): the client has asked and waits on the
 * exporter. A slowloris's trickled bytes never end a header: once they do, it is a request that
 * is answered. Peeked, so libmicrohttpd still reads every byte. */
static bool conn_asked(const struct http_conn *c)
{
	char buf[4096];
	if (c->fd < 0)
		return false;
	ssize_t n = recv(c->fd, buf, sizeof buf, MSG_PEEK | MSG_DONTWAIT);
	if (n <= 0)
		return false;
	return memmem(buf, (size_t)n, "\r\n\r\n", 4) != NULL;
}

/* The connection to drop for newcomer k: the longest connected waiting one (of k's address when
 * same_addr), one that never had an answer before an idle keep-alive one; NULL when every other
 * is being answered or has its request in, unread (then k itself is dropped: refused). Being
 * connected longest is not enough: on a starved machine a scraper's request waits unread while a
 * slowloris reconnects a thousand times (t5006: scrapers from an attacker's address dropped at
 * 0.9 s, their whole requests unread). Unread bytes alone say nothing (a slowloris's trickled
 * byte waits unread as often as a scraper's request); a whole header does. A peek each, only of
 * the candidates ahead of the victim. */
static struct http_conn *http_guard_victim(struct http_guard *gd, const struct http_conn *k, bool same_addr)
{
	struct http_conn *fresh = NULL, *idle = NULL;
	for (struct http_conn *c = gd->head; c && !fresh; c = c->next) {
		if (c == k || c->busy || c->dropped || (same_addr && !same_address(c, k)))
			continue;
		if ((c->served && idle) || conn_asked(c))
			continue;
		if (!c->served)
			fresh = c;
		else
			idle = c;
	}
	return fresh ? fresh : idle;
}

static void http_guard_drop(struct http_guard *gd, struct http_conn *c)
{
	shutdown(c->fd, SHUT_RDWR);
	c->dropped = true;
	gd->live--;
}

void http_guard_log(struct http_guard *gd, double now, bool stopping)
{
	if ((!gd->evicted && !gd->expired) || (now - gd->logged < 60 && !stopping))
		return;
	char expired[96] = "", evicted[160] = "";
	if (gd->expired)
		snprintf(expired, sizeof expired, "%llu whose request was not in within the %g s "
			 "timeout%s", gd->expired, gd->deadline, gd->evicted ? ", " : "");
	if (gd->evicted)
		snprintf(evicted, sizeof evicted, "%llu waiting ones to make room for newer (at most %u "
			 "connections, %u per client address)", gd->evicted, gd->max, (unsigned)HTTP_GUARD_PER_ADDR);
	fprintf(stderr, "gpuctl exporter: dropped connections: %s%s\n", expired, evicted);
	gd->expired = gd->evicted = 0;
	gd->logged = now;
}

struct http_conn *http_guard_open(struct http_guard *gd, int fd, const struct sockaddr *sa, double now)
{
	struct http_conn *k = xcalloc(1, sizeof *k);
	k->fd = fd;
	conn_address(k, sa);
	k->since = now;
	pthread_mutex_lock(&gd->lock);
	k->prev = gd->tail;
	if (gd->tail)
		gd->tail->next = k;
	else
		gd->head = k;
	gd->tail = k;
	gd->live++;
	bool addr_full = live_count(gd, k, true, HTTP_GUARD_PER_ADDR) > HTTP_GUARD_PER_ADDR;
	if (addr_full || (gd->live > gd->max && live_count(gd, k, false, gd->max) > gd->max)) {
		struct http_conn *v = http_guard_victim(gd, k, addr_full);
		http_guard_drop(gd, v ? v : k);
		gd->evicted++;
	}
	http_guard_log(gd, now, false);
	pthread_mutex_unlock(&gd->lock);
	return k;
}

void http_guard_close(struct http_guard *gd, struct http_conn *k)
{
	pthread_mutex_lock(&gd->lock);
	if (!k->dropped)
		gd->live--;
	if (k->prev)
		k->prev->next = k->next;
	else
		gd->head = k->next;
	if (k->next)
		k->next->prev = k->prev;
	else
		gd->tail = k->prev;
	pthread_mutex_unlock(&gd->lock);
	free(k);
}

bool http_guard_busy(struct http_guard *gd, struct http_conn *k, bool busy, double now)
{
	pthread_mutex_lock(&gd->lock);
	bool live = !k->dropped;
	k->busy = busy;
	if (!busy) {
		k->served = true;
		k->since = now;
	}
	pthread_mutex_unlock(&gd->lock);
	return live;
}

void http_guard_sweep(struct http_guard *gd, double now)
{
	pthread_mutex_lock(&gd->lock);
	for (struct http_conn *c = gd->head; c; c = c->next)
		if (!c->busy && !c->dropped && now - c->since > gd->deadline &&
		    (now - c->since > 2 * gd->deadline || !conn_unread(c))) {
			http_guard_drop(gd, c);
			gd->expired++;
		}
	http_guard_log(gd, now, false);
	pthread_mutex_unlock(&gd->lock);
}
