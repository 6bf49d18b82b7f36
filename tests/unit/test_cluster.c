/* test_cluster.c: the parsers of the cluster view (src/cluster/cluster.c) for Prometheus's answers: its
 * RFC 3339 times (Go's, with any zone, and its zero time for "never"). Its durations are read by
 * parse_duration (test_basic.c). */
#include "cluster/model.h"
#include "tap.h"

#include <math.h>

void test_cluster(void)
{
	CHECK(cl_parse_time("2026-11-30T20:25:34Z") == 1796070334.0);
	CHECK(fabs(cl_parse_time("2026-11-30T20:25:34.250123456Z") - 1796070334.250123456) < 1e-6);
	CHECK(cl_parse_time("2026-11-30T21:25:34+01:00") == 1796070334.0);
	CHECK(cl_parse_time("2026-11-30T15:25:34.5-05:00") == 1796070334.5);
	CHECK(isnan(cl_parse_time("0001-01-01T00:00:00Z")));
	CHECK(isnan(cl_parse_time("yesterday")));
	CHECK(isnan(cl_parse_time("2026-11-30T20:25:34")));
	CHECK(isnan(cl_parse_time(NULL)));
}
