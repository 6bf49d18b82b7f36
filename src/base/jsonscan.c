/* jsonscan.c: a bounded, tree-less reader of one JSON value by its path of keys (jsonscan.h).
 * A cursor walks the text; values it does not want are skipped by the same grammar, nested at
 * most JSONSCAN_DEPTH deep, so a hostile answer costs one pass over its bytes and no memory. */
#include "base/jsonscan.h"

#include <string.h>

struct cur {
	const char *p, *end;
};

static void ws(struct cur *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
		c->p++;
}

static int hexv(char ch)
{
	return ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 :
	       ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
}

static void put(char *out, size_t outlen, size_t *k, const char *s, size_t n)
{
	for (size_t i = 0; i < n && out && *k + 1 < outlen; i++)
		out[(*k)++] = s[i];
}

/* A string at the cursor (on its '"'), decoded into out when out is not NULL. */
static bool string(struct cur *c, char *out, size_t outlen)
{
	size_t k = 0;
	if (c->p >= c->end || *c->p != '"')
		return false;
	for (c->p++; c->p < c->end; c->p++) {
		char ch = *c->p;
		if (ch == '"') {
			c->p++;
			if (out && outlen)
				out[k] = '\0';
			return true;
		}
		if ((unsigned char)ch < 0x20)
			return false;
		if (ch != '\\') {
			put(out, outlen, &k, &ch, 1);
			continue;
		}
		if (++c->p >= c->end)
			return false;
		static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
		const char *e = strchr(from, *c->p);
		if (e && *c->p) {
			put(out, outlen, &k, &to[e - from], 1);
			continue;
		}
		if (*c->p != 'u' || c->end - c->p < 5)
			return false;
		unsigned u = 0;
		for (int i = 1; i <= 4; i++) {
			int v = hexv(c->p[i]);
			if (v < 0)
				return false;
			u = u * 16 + (unsigned)v;
		}
		c->p += 4;
		if (u == 0 || (u >= 0xD800 && u <= 0xDFFF))
			u = 0xFFFD; /* surrogates are not paired up: the replacement character */
		char b[3];
		size_t n = 0;
		if (u < 0x80)
			b[n++] = (char)u;
		else if (u < 0x800)
			b[n++] = (char)(0xC0 | u >> 6), b[n++] = (char)(0x80 | (u & 0x3F));
		else
			b[n++] = (char)(0xE0 | u >> 12), b[n++] = (char)(0x80 | (u >> 6 & 0x3F)),
			b[n++] = (char)(0x80 | (u & 0x3F));
		put(out, outlen, &k, b, n);
	}
	return false;
}

static bool value(struct cur *c, int depth);

static bool container(struct cur *c, int depth, char close)
{
	if (depth >= JSONSCAN_DEPTH)
		return false;
	c->p++;
	ws(c);
	if (c->p < c->end && *c->p == close) {
		c->p++;
		return true;
	}
	for (;;) {
		ws(c);
		if (close == '}') {
			if (!string(c, NULL, 0))
				return false;
			ws(c);
			if (c->p >= c->end || *c->p++ != ':')
				return false;
		}
		if (!value(c, depth + 1))
			return false;
		ws(c);
		if (c->p >= c->end)
			return false;
		char ch = *c->p++;
		if (ch == close)
			return true;
		if (ch != ',')
			return false;
	}
}

static bool value(struct cur *c, int depth)
{
	ws(c);
	if (c->p >= c->end)
		return false;
	switch (*c->p) {
	case '"':
		return string(c, NULL, 0);
	case '{':
		return container(c, depth, '}');
	case '[':
		return container(c, depth, ']');
	default: {
		const char *s = c->p;
		while (c->p < c->end && strchr("+-0123456789.eEtruefalsn", *c->p) && *c->p)
			c->p++;
		return c->p > s;
	}
	}
}

/* The cursor on the value at keys[0..n), or false. */
static bool find(struct cur *c, const char *const *keys, size_t n)
{
	for (size_t level = 0; level < n; level++) {
		ws(c);
		if (c->p >= c->end || *c->p != '{')
			return false;
		c->p++;
		bool found = false;
		for (;;) {
			ws(c);
			char key[256];
			if (c->p < c->end && *c->p == '}')
				return false;
			/* a key longer than key[] is cut: it cannot equal a wanted one of that length */
			const char *kstart = c->p;
			if (!string(c, key, sizeof key))
				return false;
			bool cut = c->p - kstart > (long)sizeof key;
			ws(c);
			if (c->p >= c->end || *c->p++ != ':')
				return false;
			if (!cut && !strcmp(key, keys[level])) {
				found = true;
				break;
			}
			if (!value(c, (int)level + 1))
				return false;
			ws(c);
			if (c->p >= c->end)
				return false;
			char ch = *c->p++;
			if (ch == '}')
				return false;
			if (ch != ',')
				return false;
		}
		if (!found)
			return false;
	}
	ws(c);
	return c->p < c->end;
}

bool jsonscan_str(const char *text, size_t len, const char *const *keys, size_t n, char *out,
		  size_t outlen)
{
	struct cur c = {text, text + len};
	if (!outlen || !find(&c, keys, n))
		return false;
	return string(&c, out, outlen);
}

bool jsonscan_int(const char *text, size_t len, const char *const *keys, size_t n, long long *out)
{
	struct cur c = {text, text + len};
	if (!find(&c, keys, n))
		return false;
	bool neg = c.p < c.end && *c.p == '-';
	c.p += neg;
	long long v = 0;
	int digits = 0;
	while (c.p < c.end && *c.p >= '0' && *c.p <= '9' && digits < 18) {
		v = v * 10 + (*c.p++ - '0');
		digits++;
	}
	if (!digits || digits > 18 || (c.p < c.end && strchr(".eE0123456789", *c.p) && *c.p))
		return false;
	*out = neg ? -v : v;
	return true;
}
