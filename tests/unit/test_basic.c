/* test_basic.c: number parsers, JSON escaping and PCI bus id forms: data-driven cases. */
#include "config/config.h"
#include "machine/gpu.h"
#include "base/json.h"
#include "tap.h"
#include "base/util.h"

#include <stdlib.h>

void test_util(void)
{
	static const struct { const char *in; bool ok; unsigned long v; } u[] = {
		{"0", true, 0}, {"42", true, 42}, {"", false, 0}, {"-1", false, 0}, {"+1", false, 0},
		{"1x", false, 0}, {" 1", false, 0}, {"99999999999999999999999", false, 0},
	};
	for (size_t i = 0; i < ARRAY_SIZE(u); i++) {
		unsigned long v = 7;
		bool ok = parse_uint(u[i].in, &v);
		CHECK(ok == u[i].ok && (!ok || v == u[i].v));
	}
	static const struct { const char *in; bool ok; double v; } s[] = {
		{"1", true, 1}, {"0.5", true, 0.5}, {".25", true, 0.25}, {"2.", true, 2},
		{"-1", false, 0}, {"nan", false, 0}, {"inf", false, 0}, {"1s", false, 0}, {"", false, 0},
		/* every wait converts to int milliseconds: no exponent, and at most MAX_SECONDS */
		{"1e300", false, 0}, {"1e3", false, 0}, {"0x10", false, 0}, {".", false, 0},
		{"1000000", true, 1000000}, {"1000000.5", false, 0}, {"99999999999999999999", false, 0},
	};
	for (size_t i = 0; i < ARRAY_SIZE(s); i++) {
		double v = -7;
		bool ok = parse_seconds(s[i].in, &v);
		CHECK(ok == s[i].ok && (!ok || v == s[i].v));
	}
}

void test_json(void)
{
	static const struct { const char *in, *out; } esc[] = {
		{"plain", "\"plain\""},
		{"a\"b\\c", "\"a\\\"b\\\\c\""},
		{"tab\tnl\n", "\"tab\\tnl\\n\""},
		{"\x01\x1f\x7f", "\"\\u0001\\u001f\\u007f\""},
		{"caf\xc3\xa9", "\"caf\xc3\xa9\""},                 /* valid UTF-8 kept */
		{"\xe2\x82\xac", "\"\xe2\x82\xac\""},
		{"\xf0\x9f\x98\x80", "\"\xf0\x9f\x98\x80\""},
		{"bad\xff", "\"bad\\ufffd\""},                      /* invalid byte */
		{"\xc0\xaf", "\"\\ufffd\\ufffd\""},                 /* overlong */
		{"\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\""},      /* surrogate */
		{"\xe2\x82", "\"\\ufffd\\ufffd\""},                 /* truncated */
		/* Bidi overrides and other invisible format characters: the same string, escaped. */
		{"a\xe2\x80\xae" "b", "\"a\\u202eb\""},
		{"\xe2\x81\xa6x\xe2\x81\xa9\xe2\x80\x8f", "\"\\u2066x\\u2069\\u200f\""},
		{"\xf3\xa0\x80\x81", "\"\\udb40\\udc01\""},     /* U+E0001, a tag: a surrogate pair */
		{"\xe2\x80\x8d", "\"\xe2\x80\x8d\""},              /* the zero-width joiner stays */
		{"csi\xc2\x9b" "1m\xc2\xa0", "\"csi\\u009b1m\xc2\xa0\""},  /* C1 control escaped, NBSP kept */
	};
	for (size_t i = 0; i < ARRAY_SIZE(esc); i++) {
		struct strbuf sb = {0};
		json_escape(&sb, esc[i].in);
		CHECK_STR(sb.buf, esc[i].out);
		sb_free(&sb);
	}
	struct strbuf sb = {0};
	struct json j;
	json_init(&j, &sb, false);
	json_obj(&j, NULL);
	json_str(&j, "a", NULL);
	json_arr(&j, "b");
	json_uint(&j, NULL, 1);
	json_obj(&j, NULL);
	json_end_obj(&j);
	json_arr(&j, NULL);
	json_end_arr(&j);
	json_end_arr(&j);
	json_num(&j, "c", 1.5, 3);
	json_bool(&j, "d", true);
	json_end_obj(&j);
	CHECK_STR(sb.buf, "{\"a\":null,\"b\":[1,{},[]],\"c\":1.500,\"d\":true}");
	sb_reset(&sb);
	json_init(&j, &sb, true);
	json_obj(&j, NULL);
	json_arr(&j, "x");
	json_uint(&j, NULL, 1);
	json_end_arr(&j);
	json_end_obj(&j);
	CHECK_STR(sb.buf, "{\n  \"x\": [\n    1\n  ]\n}");
	sb_free(&sb);
}

void test_pci(void)
{
	static const struct { const char *in; bool ok; unsigned d, b, dv, f; } c[] = {
		{"00000000:3B:00.0", true, 0, 0x3b, 0, 0},
		{"0000:3b:00.0", true, 0, 0x3b, 0, 0},
		{"0001:af:1f.7", true, 1, 0xaf, 0x1f, 7},
		{"0000:3B:00", true, 0, 0x3b, 0, 0},
		{"3B:00.0", true, 0, 0x3b, 0, 0},
		{"3B:00", false, 0, 0, 0, 0},
		{"0000:3B:00.8", false, 0, 0, 0, 0},
		{"0000:3B:20.0", false, 0, 0, 0, 0},
		{"0000:100:00.0", false, 0, 0, 0, 0},
		{"0000:3B:00.0x", false, 0, 0, 0, 0},
		{"GPU-abc", false, 0, 0, 0, 0},
		{"", false, 0, 0, 0, 0},
		{"000000000:3B:00.0", false, 0, 0, 0, 0},
	};
	for (size_t i = 0; i < ARRAY_SIZE(c); i++) {
		unsigned d = 99, b = 99, dv = 99, f = 99;
		bool ok = parse_pci_bus_id(c[i].in, &d, &b, &dv, &f);
		CHECK(ok == c[i].ok && (!ok || (d == c[i].d && b == c[i].b && dv == c[i].dv && f == c[i].f)));
	}
}

void test_config_values(void)
{
	static const struct { const char *in; bool ok; uint64_t mib; } sizes[] = {
		{"20G", true, 20480}, {"20g", true, 20480}, {"512M", true, 512}, {"1024", true, 1024},
		{"1.5G", true, 1536}, {"2T", true, 2097152}, {"20GiB", true, 20480}, {"20GB", true, 20480},
		{"", false, 0}, {"G", false, 0}, {"-1G", false, 0}, {"20X", false, 0}, {"20 G", false, 0},
		/* issue 11.18: no overflow into a lease (UBSan saw it), no exponent or hex */
		{"20000000000000T", false, 0}, {"1e300T", false, 0}, {"1e3G", false, 0},
		{"0x10G", false, 0}, {"infG", false, 0}, {"1024T", true, 1073741824ULL},
		{"1024.5T", false, 0}, {"18446744073709551616", false, 0}, {".5G", true, 512},
	};
	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		uint64_t v = 7;
		bool ok = parse_size_mib(sizes[i].in, &v);
		CHECK(ok == sizes[i].ok && (!ok || v == sizes[i].mib));
	}
	static const struct { const char *in; bool ok; double s; } durs[] = {
		{"90", true, 90}, {"30s", true, 30}, {"5m", true, 300}, {"2h", true, 7200}, {"0.5", true, 0.5},
		{"", false, 0}, {"5d", false, 0}, {"-1", false, 0}, {"m", false, 0}, {"1h30m", false, 0},
		{"1e400", false, 0}, {"1e306h", false, 0}, {"8760h", true, 31536000}, {"8761h", false, 0},
		{"99999999999999999999999999999999999999999999999999999999999999999s", false, 0},
	};
	for (size_t i = 0; i < ARRAY_SIZE(durs); i++) {
		double v = -7;
		bool ok = parse_duration(durs[i].in, &v);
		CHECK(ok == durs[i].ok && (!ok || v == durs[i].s));
	}
	enum prefer p;
	CHECK(config_parse_prefer("free-memory", &p) && p == PREFER_FREE_MEMORY);
	CHECK(config_parse_prefer("index", &p) && p == PREFER_INDEX);
	CHECK(config_parse_prefer("util", &p) && p == PREFER_UTIL);
	CHECK(!config_parse_prefer("fastest", &p));
}
