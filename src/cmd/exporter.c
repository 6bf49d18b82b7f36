/* exporter.c: `gpuctl exporter`: Prometheus metrics over HTTP, served by libmicrohttpd.
 * libmicrohttpd (and the TLS stack it links) is loaded only here, at run time, so the other
 * commands do not pay for it at every start. NVML stays open for the life of the exporter, and
 * so do the command lines of processes that are still the same (proc.c). One cached response is
 * shared by every scrape within the cache period, so a crowd of scrapers costs one refresh; the
 * response is reference counted by libmicrohttpd, so serving it copies nothing. Refreshes run on
 * a thread of their own, never on a serving thread: a scrape waiting for one is suspended, and
 * the serving threads go on reading and answering the others.
 * Connections are bounded (exporter-guard.h): libmicrohttpd's own limits refuse a new connection
 * when full, which lets a slowloris keep every scraper out, and its timeout is an idle one that a
 * byte every few seconds resets. */
#include "base/dl.h"
#include "machine/exitwatch.h"
#include "machine/gpu.h"
#include "cmd/cmd.h"
#include "cmd/exporter-guard.h"
#include "lease/snapshot.h"
#include "lease/view.h"
#include "view/metrics.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define EXPORTER_REFRESH (REFRESH_PROCS | REFRESH_EXTRA | REFRESH_PROC_UTIL | REFRESH_ENGINES | \
			  REFRESH_MEM_TEMP | REFRESH_PERF | REFRESH_PCIE | REFRESH_SLURM | REFRESH_CONTAINERS)

/* The libmicrohttpd functions used, resolved from libmicrohttpd.so.12. */
static struct {
	struct MHD_Daemon *(*start_daemon)(unsigned int, uint16_t, MHD_AcceptPolicyCallback, void *,
					   MHD_AccessHandlerCallback, void *, ...);
	void (*stop_daemon)(struct MHD_Daemon *);
	struct MHD_Response *(*create_response_from_buffer)(size_t, void *, enum MHD_ResponseMemoryMode);
	enum MHD_Result (*add_response_header)(struct MHD_Response *, const char *, const char *);
	enum MHD_Result (*queue_response)(struct MHD_Connection *, unsigned int, struct MHD_Response *);
	void (*destroy_response)(struct MHD_Response *);
	const union MHD_DaemonInfo *(*get_daemon_info)(struct MHD_Daemon *, enum MHD_DaemonInfoType, ...);
	const union MHD_ConnectionInfo *(*get_connection_info)(struct MHD_Connection *,
							       enum MHD_ConnectionInfoType, ...);
	void (*suspend_connection)(struct MHD_Connection *);
	void (*resume_connection)(struct MHD_Connection *);
} H;

static bool load_mhd(void)
{
	const struct dl_sym syms[] = {
		{&H.start_daemon, {"MHD_start_daemon"}},
		{&H.stop_daemon, {"MHD_stop_daemon"}},
		{&H.create_response_from_buffer, {"MHD_create_response_from_buffer"}},
		{&H.add_response_header, {"MHD_add_response_header"}},
		{&H.queue_response, {"MHD_queue_response"}},
		{&H.destroy_response, {"MHD_destroy_response"}},
		{&H.get_daemon_info, {"MHD_get_daemon_info"}},
		{&H.get_connection_info, {"MHD_get_connection_info"}},
		{&H.suspend_connection, {"MHD_suspend_connection"}},
		{&H.resume_connection, {"MHD_resume_connection"}},
	};
	const char *const sonames[] = {"libmicrohttpd.so.12", NULL};
	char err[1024];
	if (dl_load(sonames, syms, ARRAY_SIZE(syms), err, sizeof err))
		return true;
	fprintf(stderr, "gpuctl exporter: %s; install libmicrohttpd (Debian: apt-get install "
			"libmicrohttpd12)\n", err);
	return false;
}

/* The guard's side of libmicrohttpd's connection notices: a connection in its table from when
 * it starts until it closes. */
static void on_connection(void *cls, struct MHD_Connection *mc, void **ctx,
			  enum MHD_ConnectionNotificationCode what)
{
	struct http_guard *gd = cls;
	if (what == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *fd = H.get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
		const union MHD_ConnectionInfo *ad = H.get_connection_info(mc, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
		*ctx = http_guard_open(gd, fd ? fd->connect_fd : -1, ad ? ad->client_addr : NULL, now_mono());
	} else if (*ctx) {
		http_guard_close(gd, *ctx);
		*ctx = NULL;
	}
}

static struct http_conn *conn_of(struct MHD_Connection *mc)
{
	const union MHD_ConnectionInfo *i = H.get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return i ? i->socket_context : NULL;
}

/* Room for the connections: the soft open-file limit raised to the hard one (systemd's soft
 * default is 1024), and guard.max within half of it (libmicrohttpd's own limit, the other half,
 * also counts the connections dropped and not yet closed). */
static unsigned guard_max(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return 256;
	rlim_t want = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > 65536 ? 65536 : rl.rlim_max;
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
		rl.rlim_cur = want;
		setrlimit(RLIMIT_NOFILE, &rl);
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	rlim_t n = rl.rlim_cur == RLIM_INFINITY ? 65536 : rl.rlim_cur;
	/* Half of what is left beside what the refresh's exit watch may hold (main: a quarter) */
	rlim_t watch = exit_watch_budget(4);
	n = n > 128 ? (n - 64 - watch) / 2 : 32;
	return n < HTTP_GUARD_MAX ? (unsigned)n : HTTP_GUARD_MAX;
}

/* A scrape's request, from the first call of its handler to its end (the request's state in
 * libmicrohttpd): when it asked for the page, and its place among the scrapes waiting for one. */
struct scrape {
	struct scrape *next;            /* the next one waiting */
	struct MHD_Connection *c;
	double asked;                   /* monotonic; 0: it has not asked yet */
	bool waiting;                   /* in the list, its connection suspended */
};

/* The cached page, and the scrapes waiting for a newer one. Refreshes run on a thread of their
 * own (refresher): a scrape that finds the page too old is suspended and the serving thread goes
 * on with its other connections, so a slow driver holds up no request but those that need the
 * new page. The refresher makes one refresh for all the scrapes waiting when it begins, so a
 * crowd of scrapers costs one refresh, not one each. */
struct exporter {
	pthread_mutex_t lock;
	pthread_cond_t wake;            /* a scrape waits, or the exporter stops */
	struct scrape *waiting;
	bool stopping;                  /* no scrape is suspended any more */
	struct MHD_Response *metrics;   /* the cached page */
	double page_time;               /* monotonic seconds: when the view it shows was made */
	double page_began;              /* when its refresh began (0: the first, before any scrape) */
	double cache_s;
	struct http_guard guard;
	/* Used only by the refresher (and by the first refresh, before there is one). */
	struct gpu_set *set;
	struct metrics_opts mo;
	size_t page_size;               /* the last page's, to size the next one's buffer */
	char hostname[256];
	bool lease_error_logged;        /* the daemon is known not to answer: said once */
	bool lost_logged[GPU_MAX];
};

static const char index_html[] =
	"<!DOCTYPE html><html><head><title>gpuctl exporter</title></head><body>"
	"<h1>gpuctl exporter</h1><p><a href=\"/metrics\">Metrics</a></p></body></html>\n";

/* A new page from a new refresh, and in *made when the view it shows was made: when the refresh
 * began, or, from the daemon's snapshot, when the daemon made the view it served (up to the
 * cache period before: dated from the refresh, a page could be served twice the cache period
 * after its view was made). A view older than that is the freshest the daemon gives now (it
 * refreshes at most every few refreshes' lengths: src/daemon/snapshot.c), and is dated from the
 * refresh: dated from the view, the page would be out of date at once, and every scrape would
 * ask for the same view again, until the daemon's bound per user refused. Called by one thread
 * at a time (the refresher), without the lock. */
static struct MHD_Response *refresh(struct exporter *x, double *made)
{
	double t0 = now_mono();
	bool via_daemon = snapshot_serves(x->set);
	gpu_set_refresh(x->set, EXPORTER_REFRESH);
	if (via_daemon && !snapshot_serves(x->set))   /* for the rest of its life: said once */
		fprintf(stderr, "gpuctl exporter: the gpuctl daemon's view failed (%s): the GPUs are read "
			"here from now on (restart the exporter to use the daemon's view again)\n",
			snapshot_left_why());
	double view = snapshot_made(x->set);   /* 0: read here, during this refresh */
	*made = view > 0 && view < t0 && view >= t0 - x->cache_s ? view : t0;
	x->mo.slurm = x->set->slurm;
	struct leaseview lv;
	struct gpu_error err = {0};
	if (!leaseview_load(&lv, &err) || !lv.present) {
		/* No daemon answered: who holds what is unknown (leases outlive a stopped daemon), so
		 * the lease series are left out and gpuctl_daemon_up says 0. Logged once per outage. */
		x->mo.lease_errors++;
		if (!x->lease_error_logged)
			fprintf(stderr, "gpuctl exporter: lease metrics left out (gpuctl_daemon_up 0): %s\n",
				err.code != EXIT_OK ? err.msg : "no gpuctl daemon is running");
		x->lease_error_logged = true;
	} else if (x->lease_error_logged) {
		fprintf(stderr, "gpuctl exporter: the gpuctl daemon answers again: lease metrics back\n");
		x->lease_error_logged = false;
	}
	for (size_t i = 0; i < x->set->ngpus; i++) {
		const struct gpu *g = &x->set->gpus[i];
		if (g->lost && !x->lost_logged[i]) {
			fprintf(stderr, "gpuctl exporter: GPU %u (%s) is lost: %s; still serving the others\n",
				g->index, g->pci_bus_id, g->error ? g->error : "");
			x->lost_logged[i] = true;
		}
	}
	x->mo.refreshes++;
	/* One allocation of about the last page's size, not a doubling series each time. */
	struct strbuf sb = {.cap = x->page_size + x->page_size / 8 + 4096};
	sb.buf = xmalloc(sb.cap);
	metrics_render(&sb, x->set, &lv, &x->mo);
	leaseview_free(&lv);
	x->mo.refresh_seconds = now_mono() - t0;
	x->page_size = sb.len;
	struct MHD_Response *r = H.create_response_from_buffer(sb.len, sb.buf, MHD_RESPMEM_MUST_FREE);
	H.add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8");
	return r;
}

/* Whether the page is new enough for sc: its refresh was made for sc (began after sc asked: a
 * view from the daemon is then as fresh as it gives, its age within the daemon's own bound), or
 * its view was made no earlier than the cache period before sc asked (for cache-ms 0, after it
 * asked). Under the lock. */
static bool page_serves(const struct exporter *x, const struct scrape *sc)
{
	return sc->asked <= x->page_began || x->page_time >= sc->asked - x->cache_s;
}

/* Queues the page for sc when it is new enough. Otherwise sc's connection is suspended until the
 * refresher has a page for it, and resumed then: libmicrohttpd calls the handler again, and this
 * queues that page. */
static enum MHD_Result serve_metrics(struct exporter *x, struct MHD_Connection *c, struct scrape *sc)
{
	enum MHD_Result ret = MHD_YES;
	pthread_mutex_lock(&x->lock);
	if (!sc->asked)
		sc->asked = now_mono();
	if (page_serves(x, sc)) {
		/* Under the lock: queueing takes the page's reference before a refresh drops ours. */
		ret = x->metrics ? H.queue_response(c, MHD_HTTP_OK, x->metrics) : MHD_NO;
	} else if (x->stopping) {
		ret = MHD_NO;   /* closed unanswered: the exporter stops */
	} else {
		sc->c = c;
		sc->next = x->waiting;
		sc->waiting = true;
		x->waiting = sc;
		H.suspend_connection(c);
		pthread_cond_signal(&x->wake);
	}
	pthread_mutex_unlock(&x->lock);
	return ret;
}

/* Under the lock: resumes the waiting scrapes that the page serves (all of them when the
 * exporter stops: libmicrohttpd must not be stopped with a connection suspended). */
static void resume_waiting(struct exporter *x, bool all)
{
	for (struct scrape **p = &x->waiting; *p;) {
		struct scrape *sc = *p;
		if (all || page_serves(x, sc)) {
			*p = sc->next;
			sc->waiting = false;
			H.resume_connection(sc->c);
		} else {
			p = &sc->next;
		}
	}
}

/* The refresher thread: a refresh whenever a scrape waits, then the scrapes that the new page
 * serves resumed. Those that asked more than the cache period after it began wait for the
 * next, which begins at once. */
static void *refresher(void *arg)
{
	struct exporter *x = arg;
	pthread_mutex_lock(&x->lock);
	for (;;) {
		while (!x->waiting && !x->stopping)
			pthread_cond_wait(&x->wake, &x->lock);
		if (x->stopping)
			break;
		double began = now_mono(), made;
		pthread_mutex_unlock(&x->lock);
		struct MHD_Response *r = refresh(x, &made);
		pthread_mutex_lock(&x->lock);
		if (x->metrics)
			H.destroy_response(x->metrics); /* freed once the scrapes still sending it finish */
		x->metrics = r;
		x->page_time = made;
		x->page_began = began;
		resume_waiting(x, false);
	}
	resume_waiting(x, true);
	pthread_mutex_unlock(&x->lock);
	return NULL;
}

/* The stop's wait for the refresher (stopping set): the refresh under way, at most
 * STOP_WAIT_S. A driver stuck on a GPU that fell off the bus may never return from a call, and
 * a stop must not hang on it (systemd would kill the exporter only after its own stop timeout).
 * False when it is still in its refresh: the waiting scrapes are then resumed here, to be
 * closed unanswered, so that libmicrohttpd may stop (never with a connection suspended). */
#define STOP_WAIT_S 5
static bool stop_refresher(struct exporter *x, pthread_t t)
{
	struct timespec until;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += STOP_WAIT_S;
	if (!pthread_clockjoin_np(t, NULL, CLOCK_MONOTONIC, &until))
		return true;
	fprintf(stderr, "gpuctl exporter: the refresh under way has not returned in %d s (the driver "
		"does not answer: a GPU fallen off the bus? see `dmesg` for Xid errors); stopping "
		"without it\n", STOP_WAIT_S);
	pthread_mutex_lock(&x->lock);
	resume_waiting(x, true);
	pthread_mutex_unlock(&x->lock);
	return false;
}

/* A request ends: its connection waits on its client again (the guard's deadline), and its
 * state is freed. A suspended one is never ended by libmicrohttpd; it leaves the list all the
 * same, should a version of it end one. */
static void on_completed(void *cls, struct MHD_Connection *mc, void **state,
			 enum MHD_RequestTerminationCode why)
{
	struct exporter *x = cls;
	struct scrape *sc = *state;
	(void)why;
	struct http_conn *k = conn_of(mc);
	if (k)
		http_guard_busy(&x->guard, k, false, now_mono());
	pthread_mutex_lock(&x->lock);
	for (struct scrape **p = &x->waiting; sc && sc->waiting && *p; p = &(*p)->next)
		if (*p == sc) {
			*p = sc->next;
			break;
		}
	pthread_mutex_unlock(&x->lock);
	free(sc);
	*state = NULL;
}

static enum MHD_Result send_static(struct MHD_Connection *c, unsigned code, const char *type,
				   const char *body)
{
	struct MHD_Response *r = H.create_response_from_buffer(strlen(body), (void *)body,
								   MHD_RESPMEM_PERSISTENT);
	H.add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	enum MHD_Result ret = H.queue_response(c, code, r);
	H.destroy_response(r);
	return ret;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
			      const char *version, const char *upload, size_t *upload_size, void **state)
{
	struct exporter *x = cls;
	(void)version, (void)upload;
	if (!*state) {          /* first call: headers only; answer on the next */
		*state = xcalloc(1, sizeof(struct scrape));
		return MHD_YES;
	}
	if (*upload_size) {     /* a body we do not want */
		*upload_size = 0;
		return MHD_YES;
	}
	/* The request is wholly in: no longer subject to the guard, unless it has dropped it. */
	struct http_conn *k = conn_of(c);
	if (k && !http_guard_busy(&x->guard, k, true, now_mono()))
		return MHD_NO;
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return send_static(c, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", "only GET and HEAD\n");
	if (!strcmp(url, "/"))
		return send_static(c, MHD_HTTP_OK, "text/html; charset=utf-8", index_html);
	if (strcmp(url, "/metrics"))
		return send_static(c, MHD_HTTP_NOT_FOUND, "text/plain", "not found: try /metrics\n");
	return serve_metrics(x, c, *state);
}

/* libmicrohttpd's messages, at most LOG_BURST a minute: it writes one per connection that ends
 * badly, and a client that opens thousands (or the guard dropping them) must not flood the
 * journal. What was left out is counted in the next minute's first line. */
enum { LOG_BURST = 20 };
static struct {
	pthread_mutex_t lock;
	double window;                  /* when this minute began */
	unsigned n;                     /* messages in it */
	unsigned long long left_out;
} mhd_log = {PTHREAD_MUTEX_INITIALIZER, -60, 0, 0};

/* Under mhd_log.lock: a new minute (or the end) says what the last one left out. */
static void log_window(double now, bool stopping)
{
	if (now - mhd_log.window < 60 && !stopping)
		return;
	if (mhd_log.left_out)
		fprintf(stderr, "gpuctl exporter: (%llu more messages of libmicrohttpd left out in the "
			"last minute)\n", mhd_log.left_out);
	mhd_log.window = now;
	mhd_log.n = 0;
	mhd_log.left_out = 0;
}

static void log_error(void *cls, const char *fmt, va_list ap)
{
	(void)cls;
	pthread_mutex_lock(&mhd_log.lock);
	log_window(now_mono(), false);
	if (mhd_log.n++ < LOG_BURST) {
		char line[512];  /* one write: the other threads' lines do not come in between */
		vsnprintf(line, sizeof line, fmt, ap);
		fprintf(stderr, "gpuctl exporter: %s", line);
	} else {
		mhd_log.left_out++;
	}
	pthread_mutex_unlock(&mhd_log.lock);
}

/* ADDR:PORT, [IPV6]:PORT, localhost:PORT or :PORT (loopback). */
static bool parse_listen(const char *s, struct sockaddr_storage *ss, bool *v6)
{
	char host[64];
	const char *colon = strrchr(s, ':');
	unsigned long port;
	if (!colon || (size_t)(colon - s) >= sizeof host || !parse_uint(colon + 1, &port) || port > 65535)
		return false;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = '\0';
	memset(ss, 0, sizeof *ss);
	*v6 = host[0] == '[';
	if (*v6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
		size_t n = strlen(host);
		if (n < 3 || host[n - 1] != ']')
			return false;
		host[n - 1] = '\0';
		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)port);
		return inet_pton(AF_INET6, host + 1, &a->sin6_addr) == 1;
	}
	struct sockaddr_in *a = (struct sockaddr_in *)ss;
	a->sin_family = AF_INET;
	a->sin_port = htons((uint16_t)port);
	return inet_pton(AF_INET, !*host || !strcmp(host, "localhost") ? "127.0.0.1" : host, &a->sin_addr) == 1;
}

enum { O_LISTEN = 'l', O_CACHE = 'c', O_TIMEOUT = 't', O_MAXP = 'p', O_THREADS = 'T', O_HOST = 'H' };

static int exporter(struct cmd *c)
{
	struct args *a = &c->args;
	const char *listen = args_get(a, O_LISTEN) ? args_get(a, O_LISTEN) : "127.0.0.1:9400";
	unsigned long cache_ms = 1000, maxp = 20, threads = 4;
	double timeout = 10;
	if (!args_uint(a, O_CACHE, 0, ULONG_MAX, &cache_ms) ||
	    !args_seconds(a, O_TIMEOUT, 1, &timeout) ||
	    !args_uint(a, O_MAXP, 1, UINT_MAX, &maxp) || !args_uint(a, O_THREADS, 1, 64, &threads))
		return cmd_args_error(c);
	struct sockaddr_storage sa;
	bool v6;
	if (!parse_listen(listen, &sa, &v6))
		return cmd_bad_usage(c->entry, "--listen wants ADDRESS:PORT or [IPV6]:PORT, not '%s'",
				     listen);
	if (!load_mhd())
		return EXIT_FAIL;
	/* The daemon's shared view where it serves one, no older than a cached page may be. */
	c->snap = true;
	c->snap_server = true;
	c->snap_what = EXPORTER_REFRESH;
	c->snap_age = snapshot_max_age(cache_ms / 1000.0);
	int rc = cmd_open(c);
	if (rc != EXIT_OK)
		return rc;
	struct exporter x = {.lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER,
			     .cache_s = cache_ms / 1000.0, .set = c->set};
	http_guard_init(&x.guard, guard_max(), timeout);
#ifdef M_ARENA_MAX
	/* The refresher and the serving threads each allocate: with an arena per thread, each
	 * would keep its own free pages and the RSS would creep up over a day of scrapes. */
	mallopt(M_ARENA_MAX, 1);
#endif
	if (args_get(a, O_HOST))
		snprintf(x.hostname, sizeof x.hostname, "%s", args_get(a, O_HOST));
	else
		gethostname(x.hostname, sizeof x.hostname - 1);
	x.mo = (struct metrics_opts){.hostname = x.hostname, .max_procs = (unsigned)maxp};
	/* Each uncached scrape refreshes: its processes are watched for their exit instead of a
	 * stat of each (issue 22: at 1,000 processes the stats were a third of a scrape), with a
	 * quarter of the descriptors, after guard_max raised the limit and left that quarter out
	 * of the connections' share. */
	gpu_set_watch_exits(x.set, 4);
	x.metrics = refresh(&x, &x.page_time);
	/* Block the stop signals before libmicrohttpd starts its threads: only sigwait sees them. */
	sigset_t stop;
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);
	signal(SIGPIPE, SIG_IGN);
	pthread_t refresh_thread;
	int err = pthread_create(&refresh_thread, NULL, refresher, &x);
	if (err) {
		fprintf(stderr, "gpuctl exporter: cannot start its refresh thread: %s\n", strerror(err));
		H.destroy_response(x.metrics);
		return EXIT_FAIL;
	}
	/* libmicrohttpd's own idle timeout is the last resort, for an answer whose client does not
	 * read it: the guard keeps the header deadline. Twice --timeout, the guard's allowance for
	 * bytes that wait unread: at --timeout, libmicrohttpd closed connections whose requests
	 * were in but not yet read on a starved machine. Whole seconds: a fraction rounds up. */
	unsigned idle_s = (unsigned)(2 * timeout);
	idle_s += 2 * timeout > idle_s;
	struct MHD_Daemon *d = H.start_daemon(
		MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME |
		(v6 ? MHD_USE_IPv6 : 0), 0, NULL, NULL,
		handle, &x,
		MHD_OPTION_EXTERNAL_LOGGER, log_error, NULL, /* first, or MHD logs its own way */
		MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
		MHD_OPTION_THREAD_POOL_SIZE, (unsigned)threads,
		MHD_OPTION_CONNECTION_TIMEOUT, idle_s,
		/* Above the guard's, which decides: libmicrohttpd's would refuse the newcomer. */
		MHD_OPTION_CONNECTION_LIMIT, 2 * x.guard.max + 16,
		MHD_OPTION_PER_IP_CONNECTION_LIMIT, 0U,
		MHD_OPTION_NOTIFY_CONNECTION, on_connection, &x.guard,
		MHD_OPTION_NOTIFY_COMPLETED, on_completed, &x,
		MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024U,
		MHD_OPTION_STRICT_FOR_CLIENT, 1, /* malformed requests get 400, not a silent close */
		MHD_OPTION_END);
	if (!d) {
		fprintf(stderr, "gpuctl exporter: cannot listen on %s (in use, or not allowed?)\n", listen);
		rc = EXIT_FAIL;
	} else {
		/* Port 0 is the kernel's choice: say which it made, so the address can be used. */
		const union MHD_DaemonInfo *bound = H.get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
		char where[80];
		snprintf(where, sizeof where, "%.*s:%u", (int)(strrchr(listen, ':') - listen), listen,
			 bound ? (unsigned)bound->port : 0U);
		fprintf(stderr, "gpuctl exporter: serving http://%s/metrics (%zu GPUs, cache %lu ms)\n",
			bound ? where : listen, x.set->ngpus, cache_ms);
		/* The header deadline is kept from here, between the stop signals. */
		const struct timespec tick = {0, 250 * 1000 * 1000};
		int sig;
		while ((sig = sigtimedwait(&stop, NULL, &tick)) < 0)
			if (errno == EAGAIN)
				http_guard_sweep(&x.guard, now_mono());
		fprintf(stderr, "gpuctl exporter: stopping (signal %d)\n", sig);
	}
	/* The refresher resumes the waiting scrapes as it ends, and none is suspended after. */
	pthread_mutex_lock(&x.lock);
	x.stopping = true;
	pthread_cond_signal(&x.wake);
	pthread_mutex_unlock(&x.lock);
	bool joined = stop_refresher(&x, refresh_thread);
	if (d) {
		H.stop_daemon(d);
		http_guard_log(&x.guard, now_mono(), true); /* its threads are gone: no lock needed */
		log_window(now_mono(), true);
	}
	if (!joined) {
		/* A refresh stuck in the driver: the scrapes it was for were closed, and the exporter
		 * ends without it. Its thread still holds x (on this stack) and the driver's state:
		 * the process ends here, with nothing run at exit beneath it. */
		fflush(NULL);
		_exit(EXIT_FAIL);
	}
	if (x.metrics)
		H.destroy_response(x.metrics);
	return rc;
}

static const struct option longopts[] = {
	{"listen", required_argument, NULL, O_LISTEN}, {"cache-ms", required_argument, NULL, O_CACHE},
	{"timeout", required_argument, NULL, O_TIMEOUT},
	{"max-processes", required_argument, NULL, O_MAXP},
	{"threads", required_argument, NULL, O_THREADS},
	{"hostname", required_argument, NULL, O_HOST}, {0},
};

const struct cmd_entry cmd_exporter_entry = {
	.name = "exporter",
	.summary = "serve GPU, process and lease metrics to Prometheus",
	.usage = "exporter [--listen ADDR:PORT] [--cache-ms MS] [--timeout DURATION] [--max-processes N]\n"
		 "                [--threads N] [--hostname NAME]\n\n"
		 "Serve /metrics in the Prometheus text format (and / with a link to it) until\n"
		 "SIGINT or SIGTERM. Logs go to stderr.\n\n"
		 "  --listen ADDR:PORT   default 127.0.0.1:9400 ([::1]:9400 for IPv6); other\n"
		 "                       addresses only when given; port 0: any free port (the log\n"
		 "                       line says which)\n"
		 "  --cache-ms MS        scrapes within MS share one NVML refresh (default 1000)\n"
		 "  --timeout DURATION   drop a connection idle this long, or whose request is not\n"
		 "                       all in this long after it connected or was last answered\n"
		 "                       (default 10 s)\n"
		 "  --max-processes N    process samples per GPU; the rest as pid=\"other\" (default 20)\n"
		 "  --threads N          serving threads (default 4)\n"
		 "  --hostname NAME      the hostname label (default: the machine's host name); the\n"
		 "                       cluster view (status --prometheus) groups GPUs by it\n",
	.args = {.longs = longopts},
	.flags = CMD_NVML,
	.exec = exporter,
};
