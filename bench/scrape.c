/* scrape.c: Prometheus-like load on `gpuctl exporter`, without a client language's own overhead.
 *
 *   bench-scrape PORT CLIENTS SCRAPES GAP_MIN_MS GAP_MAX_MS
 *
 * CLIENTS threads each open one keep-alive connection and GET /metrics SCRAPES times, waiting a
 * random GAP between the end of one answer and the next request (0:0 = back to back). Prints
 *
 *   scrapes N bytes B wall_s W p50_ms P p99_ms Q max_ms M
 *
 * latency being from the request's first byte sent to the body's last byte received. Exit 1 on
 * any failed or short answer. Bench code only. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int port, scrapes;
static double gap_min, gap_max;
static double *lat;
static size_t body_bytes;
static int failed;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* One answer: headers up to the blank line, then Content-Length bytes. */
static long get(int fd, char *buf, size_t cap)
{
	static const char req[] = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: bench-scrape\r\n\r\n";
	if (send(fd, req, sizeof req - 1, MSG_NOSIGNAL) != (ssize_t)(sizeof req - 1))
		return -1;
	size_t have = 0;
	char *end = NULL;
	while (!end) {
		ssize_t r = recv(fd, buf + have, cap - have - 1, 0);
		if (r <= 0)
			return -1;
		have += (size_t)r;
		buf[have] = '\0';
		end = strstr(buf, "\r\n\r\n");
		if (!end && have + 1 >= cap)
			return -1;
	}
	if (strncmp(buf, "HTTP/1.1 200", 12))
		return -1;
	const char *cl = strcasestr(buf, "\r\nContent-Length:");
	if (!cl)
		return -1;
	size_t len = strtoul(cl + 17, NULL, 10), head = (size_t)(end + 4 - buf);
	size_t got = have - head;
	while (got < len) {
		ssize_t r = recv(fd, buf, cap - 1 < len - got ? cap - 1 : len - got, 0);
		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return (long)len;
}

static void *client(void *arg)
{
	size_t id = (size_t)arg;
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
		perror("bench-scrape: connect");
		__atomic_store_n(&failed, 1, __ATOMIC_RELAXED);
		return NULL;
	}
	size_t cap = 1 << 20;
	char *buf = malloc(cap);
	unsigned short seed[3] = {(unsigned short)id, (unsigned short)getpid(), 7};
	/* Spread the clients' first requests over one gap, as independent scrapers would be. */
	double first = erand48(seed) * gap_max;
	struct timespec ts = {(time_t)(first / 1e3), (long)(first * 1e6) % 1000000000L};
	nanosleep(&ts, NULL);
	for (int i = 0; i < scrapes; i++) {
		double t0 = now();
		long n = get(fd, buf, cap);
		double t1 = now();
		if (n < 0) {
			fprintf(stderr, "bench-scrape: client %zu: scrape %d failed\n", id, i);
			__atomic_store_n(&failed, 1, __ATOMIC_RELAXED);
			break;
		}
		lat[id * (size_t)scrapes + (size_t)i] = (t1 - t0) * 1e3;
		body_bytes = (size_t)n;
		double gap = gap_min + erand48(seed) * (gap_max - gap_min);
		if (gap > 0) {
			ts = (struct timespec){(time_t)(gap / 1e3), (long)(gap * 1e6) % 1000000000L};
			nanosleep(&ts, NULL);
		}
	}
	free(buf);
	close(fd);
	return NULL;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	if (argc != 6) {
		fprintf(stderr, "usage: bench-scrape PORT CLIENTS SCRAPES GAP_MIN_MS GAP_MAX_MS\n");
		return 2;
	}
	port = atoi(argv[1]);
	int clients = atoi(argv[2]);
	scrapes = atoi(argv[3]);
	gap_min = atof(argv[4]);
	gap_max = atof(argv[5]);
	if (clients < 1 || scrapes < 1 || gap_max < gap_min)
		return 2;
	size_t n = (size_t)clients * (size_t)scrapes;
	lat = calloc(n, sizeof *lat);
	pthread_t *t = calloc((size_t)clients, sizeof *t);
	double t0 = now();
	for (int i = 0; i < clients; i++)
		pthread_create(&t[i], NULL, client, (void *)(size_t)i);
	for (int i = 0; i < clients; i++)
		pthread_join(t[i], NULL);
	double wall = now() - t0;
	if (failed)
		return 1;
	qsort(lat, n, sizeof *lat, cmp);
	printf("scrapes %zu bytes %zu wall_s %.3f p50_ms %.3f p99_ms %.3f max_ms %.3f\n", n, body_bytes,
	       wall, lat[n / 2], lat[(size_t)((double)n * 0.99)], lat[n - 1]);
	return 0;
}
