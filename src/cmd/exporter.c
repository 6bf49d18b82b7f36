/* exporter.c: `gpuctl exporter`: Prometheus metrics over HTTP, served by libmicrohttpd.
 * libmicrohttpd (and the TLS stack it links) is loaded only here, at run time, so the other
 * commands do not pay for it at every start. NVML stays open for the life of the exporter, and
 * so do the command lines of processes that are still the same (proc.c). One cached response is
 * shared by every scrape within the cache period, so a crowd of scrapers costs one refresh; the
 * response is reference counted by libmicrohttpd, so serving it copies nothing. */
#include "base/dl.h"
#include "machine/gpu.h"
#include "cmd/cmd.h"
#include "lease/view.h"
#include "view/metrics.h"

#include <arpa/inet.h>
#include <limits.h>
#include <malloc.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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
	};
	const char *const sonames[] = {"libmicrohttpd.so.12", NULL};
	char err[1024];
	if (dl_load(sonames, syms, ARRAY_SIZE(syms), err, sizeof err))
		return true;
	fprintf(stderr, "gpuctl exporter: %s; install libmicrohttpd (Debian: apt-get install "
			"libmicrohttpd12)\n", err);
	return false;
}

/* The cached page, and the one refresh that may be under way. A refresh runs outside the lock,
 * on the thread of the scrape that found the page too old; the scrapes that arrive meanwhile
 * wait for it (or, when it began before they arrived and cache-ms is 0, for the one after it,
 * which they then share), so concurrent scrapes cost one refresh between them, not one each. */
struct exporter {
	pthread_mutex_t lock;
	pthread_cond_t done;            /* a refresh finished */
	bool refreshing;
	struct MHD_Response *metrics;   /* the cached page */
	double page_time;               /* monotonic seconds when its refresh began */
	double cache_s;
	/* Used only by the refreshing thread. */
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

/* A new page from a new refresh. Called by one thread at a time (x->refreshing), without the
 * lock. */
static struct MHD_Response *refresh(struct exporter *x)
{
	double t0 = now_mono();
	gpu_set_refresh(x->set, REFRESH_PROCS | REFRESH_EXTRA | REFRESH_PROC_UTIL | REFRESH_ENGINES |
				REFRESH_MEM_TEMP | REFRESH_PERF | REFRESH_PCIE | REFRESH_SLURM);
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

/* Queues the page for a scrape that arrived at time t: one no older than the cache period, or
 * for cache-ms 0 one whose refresh began after t. */
static enum MHD_Result serve_metrics(struct exporter *x, struct MHD_Connection *c)
{
	pthread_mutex_lock(&x->lock);
	double t = now_mono();
	while (!x->metrics || x->page_time < t - x->cache_s) {
		if (x->refreshing) {
			pthread_cond_wait(&x->done, &x->lock);
			continue;
		}
		x->refreshing = true;
		double began = now_mono();
		pthread_mutex_unlock(&x->lock);
		struct MHD_Response *r = refresh(x);
		pthread_mutex_lock(&x->lock);
		if (x->metrics)
			H.destroy_response(x->metrics); /* freed once the scrapes still sending it finish */
		x->metrics = r;
		x->page_time = began;
		x->refreshing = false;
		pthread_cond_broadcast(&x->done);
	}
	/* Under the lock: queueing takes the page's reference before a refresh can drop ours. */
	enum MHD_Result ret = H.queue_response(c, MHD_HTTP_OK, x->metrics);
	pthread_mutex_unlock(&x->lock);
	return ret;
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
		*state = (void *)1;
		return MHD_YES;
	}
	if (*upload_size) {     /* a body we do not want */
		*upload_size = 0;
		return MHD_YES;
	}
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return send_static(c, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", "only GET and HEAD\n");
	if (!strcmp(url, "/"))
		return send_static(c, MHD_HTTP_OK, "text/html; charset=utf-8", index_html);
	if (strcmp(url, "/metrics"))
		return send_static(c, MHD_HTTP_NOT_FOUND, "text/plain", "not found: try /metrics\n");
	return serve_metrics(x, c);
}

static void log_error(void *cls, const char *fmt, va_list ap)
{
	(void)cls;
	fputs("gpuctl exporter: ", stderr);
	vfprintf(stderr, fmt, ap);
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
	int rc = cmd_open(c);
	if (rc != EXIT_OK)
		return rc;
	struct exporter x = {.lock = PTHREAD_MUTEX_INITIALIZER, .done = PTHREAD_COND_INITIALIZER,
			     .cache_s = cache_ms / 1000.0, .set = c->set};
#ifdef M_ARENA_MAX
	/* Refreshes run on whichever serving thread needs one: with an arena per thread, each
	 * would keep its own free pages and the RSS would creep up over a day of scrapes. */
	mallopt(M_ARENA_MAX, 1);
#endif
	if (args_get(a, O_HOST))
		snprintf(x.hostname, sizeof x.hostname, "%s", args_get(a, O_HOST));
	else
		gethostname(x.hostname, sizeof x.hostname - 1);
	x.mo = (struct metrics_opts){.hostname = x.hostname, .max_procs = (unsigned)maxp};
	x.page_time = now_mono();
	x.metrics = refresh(&x);
	/* Block the stop signals before libmicrohttpd starts its threads: only sigwait sees them. */
	sigset_t stop;
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);
	signal(SIGPIPE, SIG_IGN);
	unsigned idle_s = (unsigned)timeout; /* MHD counts whole seconds: a fraction rounds up */
	idle_s += timeout > idle_s;
	struct MHD_Daemon *d = H.start_daemon(
		MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG | (v6 ? MHD_USE_IPv6 : 0), 0, NULL, NULL,
		handle, &x,
		MHD_OPTION_EXTERNAL_LOGGER, log_error, NULL, /* first, or MHD logs its own way */
		MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
		MHD_OPTION_THREAD_POOL_SIZE, (unsigned)threads,
		MHD_OPTION_CONNECTION_TIMEOUT, idle_s,
		MHD_OPTION_CONNECTION_LIMIT, 1000U,
		MHD_OPTION_PER_IP_CONNECTION_LIMIT, 0U,
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
		int sig;
		sigwait(&stop, &sig);
		fprintf(stderr, "gpuctl exporter: stopping (signal %d)\n", sig);
		H.stop_daemon(d);
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
		 "  --timeout DURATION   drop a connection idle this long (default 10 s)\n"
		 "  --max-processes N    process samples per GPU; the rest as pid=\"other\" (default 20)\n"
		 "  --threads N          serving threads (default 4)\n"
		 "  --hostname NAME      the hostname label (default: the machine's host name); the\n"
		 "                       cluster view (status --prometheus) groups GPUs by it\n",
	.args = {.longs = longopts},
	.flags = CMD_NVML,
	.exec = exporter,
};
