/* proto.c: encoding and the strict decoder of gpuctl's message format (see proto.h). The decoder
 * sees bytes from other users (the daemon) and from the daemon (clients): it trusts nothing,
 * bounds everything and allocates once per message. */
#include "base/proto.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static bool needs_escape(unsigned char c)
{
	return c <= 0x20 || c == '%' || c == 0x7f;
}

static int hexval(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static bool fail(char *why, size_t whylen, const char *fmt, size_t at)
{
	snprintf(why, whylen, fmt, at);
	return false;
}

/* The decoder's classes of bytes: most are copied as they are, and the loop over a word stops
 * only at one of the others (issue 22: a snapshot of 1,000 processes is a quarter of a megabyte,
 * and a byte-by-byte test of each against every rule was most of a client's time). */
enum { C_TEXT, C_SP, C_NL, C_PCT, C_BAD };
static const unsigned char byte_class[256] = {
	[0x00 ... 0x09] = C_BAD, ['\n'] = C_NL, [0x0b ... 0x1f] = C_BAD, [' '] = C_SP, ['%'] = C_PCT,
	[0x7f] = C_BAD,
};

/* How many bytes from p (n of them) are C_TEXT, the copy made into out as they are counted:
 * eight at a time where all eight are (a snapshot's words are long runs of them), the rest one
 * by one. out has 8 bytes of room past any byte it is given (msg_decode's store). The tests of
 * eight at once are exact at the first byte they flag (they may flag more past it, not fewer):
 * below 0x21 (controls, space, newline), '%' and DEL. */
static size_t text_run(const unsigned char *p, size_t n, char *out)
{
	size_t i = 0;
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
	for (; i + 8 <= n; i += 8) {
		uint64_t x, pct, del;
		memcpy(&x, p + i, 8);
		memcpy(out + i, &x, 8);
		pct = x ^ (ones * '%');
		del = x ^ (ones * 0x7f);
		uint64_t hit = ((x - ones * 0x21) & ~x) | ((pct - ones) & ~pct) | ((del - ones) & ~del);
		hit &= highs;
		if (hit)
			return i + (size_t)__builtin_ctzll(hit) / 8;
	}
#endif
	for (; i < n && byte_class[p[i]] == C_TEXT; i++)
		out[i] = (char)p[i];
	return i;
}

bool msg_decode(struct msg *m, const char *buf, size_t len, char *why, size_t whylen)
{
	*m = (struct msg){0};
	if (len == 0)
		return fail(why, whylen, "empty message%.0zu", 0);
	if (len > PROTO_MAX_MSG)
		return fail(why, whylen, "message of %zu bytes is over the limit", len);
	if (buf[len - 1] == '\n')
		len--;
	size_t nlines = 1;
	for (const char *p = buf, *e = buf + len; (p = memchr(p, '\n', (size_t)(e - p))); p++)
		nlines++;
	if (nlines > PROTO_MAX_LINES)
		return fail(why, whylen, "%zu lines is over the limit", nlines);
	m->lines = xmalloc(nlines * sizeof *m->lines);   /* each made as it is reached */
	m->store = xmalloc(len + nlines * PROTO_MAX_WORDS + 1 + 8);   /* 8: text_run's room */
	char *out = m->store;
	const unsigned char *s = (const unsigned char *)buf;
	size_t pos = 0;
	/* Each line: words separated by one space; each word its bytes, "%XX" escapes decoded ("%"
	 * alone: the empty word). At a word's end the byte there (space, newline, or the end) says
	 * what follows. */
	while (m->nlines < nlines) {
		if (pos == len || s[pos] == '\n') {
			msg_free(m);
			return fail(why, whylen, "empty line at byte %zu", pos);
		}
		struct msg_line *ln = &m->lines[m->nlines++];
		ln->nwords = 0;
		for (;;) {   /* a word at pos */
			if (pos == len || s[pos] == ' ' || s[pos] == '\n') {
				msg_free(m);
				return fail(why, whylen, "empty word at byte %zu", pos);
			}
			if (ln->nwords == PROTO_MAX_WORDS) {
				msg_free(m);
				return fail(why, whylen, "too many words on the line at byte %zu", pos);
			}
			ln->w[ln->nwords++] = out;
			size_t w0 = pos;
			int cls = C_TEXT;
			while (pos < len) {
				size_t run = text_run(s + pos, len - pos, out);
				out += run;
				pos += run;
				if (pos == len)
					break;
				unsigned char c = s[pos];
				cls = byte_class[c];
				if (cls != C_PCT)
					break;
				/* the end of the word: len, or a space or newline */
				size_t wend = pos + 1;
				while (wend < len && wend < pos + 3 && s[wend] != ' ' && s[wend] != '\n')
					wend++;
				if (pos == w0 && wend == pos + 1)
					break;   /* "%" alone: the empty word */
				if (wend < pos + 3) {
					msg_free(m);
					return fail(why, whylen, "truncated %%-escape at byte %zu", pos);
				}
				int h = hexval(s[pos + 1]), l = hexval(s[pos + 2]);
				if (h < 0 || l < 0) {
					msg_free(m);
					return fail(why, whylen, "bad %%-escape at byte %zu", pos);
				}
				c = (unsigned char)(h << 4 | l);
				if (c == 0) {
					msg_free(m);
					return fail(why, whylen, "NUL byte (%%00) at byte %zu", pos);
				}
				*out++ = (char)c;
				pos += 3;
				cls = C_TEXT;
			}
			if (cls == C_PCT)   /* "%" alone */
				pos++;
			*out++ = '\0';
			if (pos < len && byte_class[s[pos]] == C_BAD) {
				msg_free(m);
				return fail(why, whylen, "unescaped control byte at byte %zu", pos);
			}
			if (pos < len && s[pos] == ' ') {
				pos++;
				continue;
			}
			break;   /* the line's end (a newline, or the message's) */
		}
		pos++;       /* past the newline */
	}
	return true;
}

void msg_free(struct msg *m)
{
	free(m->lines);
	free(m->store);
	*m = (struct msg){0};
}

const char *msg_verb(const struct msg *m)
{
	return m->nlines ? m->lines[0].w[0] : "";
}

const struct msg_line *msg_line(const struct msg *m, const char *key)
{
	for (size_t i = 1; i < m->nlines; i++)
		if (!strcmp(m->lines[i].w[0], key))
			return &m->lines[i];
	return NULL;
}

const char *msg_get(const struct msg *m, const char *key)
{
	const struct msg_line *l = msg_line(m, key);
	return l && l->nwords > 1 ? l->w[1] : NULL;
}

bool word_u64(const char *w, uint64_t max, uint64_t *out)
{
	if (!w || *w < '0' || *w > '9' || strlen(w) > 20)
		return false;
	errno = 0;
	char *end;
	unsigned long long v = strtoull(w, &end, 10);
	if (errno || *end || v > max)
		return false;
	*out = v;
	return true;
}

bool msg_get_u64(const struct msg *m, const char *key, uint64_t max, uint64_t *out)
{
	return word_u64(msg_get(m, key), max, out);
}

/* ---- encoding ---- */

void msg_word(struct strbuf *sb, const char *w)
{
	if (sb->len && sb->buf[sb->len - 1] != '\n')
		sb_addc(sb, ' ');
	if (!*w) {
		sb_addc(sb, '%');
		return;
	}
	for (const unsigned char *p = (const unsigned char *)w; *p; p++)
		if (needs_escape(*p))
			sb_addf(sb, "%%%02X", *p);
		else
			sb_addc(sb, (char)*p);
}

void msg_word_u64(struct strbuf *sb, uint64_t v)
{
	char buf[24];
	snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
	msg_word(sb, buf);
}

void msg_key(struct strbuf *sb, const char *key)
{
	if (sb->len && sb->buf[sb->len - 1] != '\n')
		sb_addc(sb, '\n');
	msg_word(sb, key);
}

void msg_begin(struct strbuf *sb, const char *verb)
{
	sb_reset(sb);
	msg_word(sb, verb);
}

void msg_error(struct strbuf *sb, uint64_t id, int code, const char *text)
{
	msg_begin(sb, "error");
	msg_add_u64(sb, "id", id);
	msg_add_u64(sb, "code", (uint64_t)code);
	msg_add(sb, "message", text, NULL);
}

void msg_verrorf(struct strbuf *sb, uint64_t id, int code, const char *fmt, va_list ap)
{
	char text[2048];
	vsnprintf(text, sizeof text, fmt, ap);
	msg_error(sb, id, code, text);
}

void msg_error_read(const struct msg *m, const char *fallback, struct gpu_error *err)
{
	uint64_t code = EXIT_FAIL;
	msg_get_u64(m, "code", 255, &code);
	const char *text = msg_get(m, "message");
	err->code = code ? (int)code : EXIT_FAIL;
	snprintf(err->msg, sizeof err->msg, "%s", text ? text : fallback);
}

void msg_add(struct strbuf *sb, const char *key, ...)
{
	va_list ap;
	msg_key(sb, key);
	va_start(ap, key);
	for (const char *w; (w = va_arg(ap, const char *));)
		msg_word(sb, w);
	va_end(ap);
}

void msg_add_u64(struct strbuf *sb, const char *key, uint64_t v)
{
	msg_key(sb, key);
	msg_word_u64(sb, v);
}

void msg_add_i64(struct strbuf *sb, const char *key, int64_t v)
{
	char buf[24];
	snprintf(buf, sizeof buf, "%lld", (long long)v);
	msg_key(sb, key);
	msg_word(sb, buf);
}

ssize_t proto_recv(int sock, char *buf, size_t len, int *fds, size_t maxfds, size_t *nfds, bool *cut)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * PROTO_MAX_FDS)];
		struct cmsghdr align;
	} u;
	struct iovec iov = {buf, len};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			    .msg_controllen = sizeof u.buf};
	ssize_t n = recvmsg(sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	*nfds = 0;
	*cut = n >= 0 && (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC));
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); n >= 0 && cm; cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof fd);
			if (*nfds < maxfds)
				fds[(*nfds)++] = fd;
			else
				close(fd);
		}
	}
	return n;
}

ssize_t proto_send(int sock, const void *buf, size_t len, const int *fds, size_t nfds, int flags)
{
	struct iovec iov = {(void *)buf, len};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	union {
		char buf[CMSG_SPACE(sizeof(int) * PROTO_MAX_FDS)];
		struct cmsghdr align;
	} u;
	if (nfds > PROTO_MAX_FDS) {
		errno = EINVAL;
		return -1;
	}
	if (nfds) {
		memset(&u, 0, sizeof u); /* CMSG_SPACE pads past the fds, and the kernel copies it all */
		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
	}
	ssize_t n;
	do
		n = sendmsg(sock, &mh, flags);
	while (n < 0 && errno == EINTR);
	return n;
}
