#!/usr/bin/env python3
"""prom_hostile.py MODE SIZE READY: a hostile stand-in for a Prometheus server, for the bounds of
status --prometheus. It writes its port to READY once it listens, then answers until killed.
  big-query:   /api/v1/targets is a valid answer with one target; /api/v1/query is a valid answer
               of SIZE bytes, its end marked by closing the connection (no Content-Length: the
               client can stop only by counting what it reads)
  big-targets: /api/v1/targets announces Content-Length SIZE and streams it
The body is made as it is sent and sending stops when the client hangs up, so a client that
keeps to its bound is sent little more than the bound (and the socket buffers)."""
import http.server, json, sys

mode, size, ready = sys.argv[1], int(sys.argv[2]), sys.argv[3]
TARGETS = json.dumps({"status": "success", "data": {"activeTargets": [{
    "labels": {"job": "gpuctl", "instance": "gpu-a:9400"}, "health": "up", "lastError": "",
    "lastScrape": "2024-05-01T12:00:00Z", "scrapeInterval": "15s", "scrapeTimeout": "10s"}]}}).encode()
SERIES = b'{"metric":{"__name__":"gpuctl_gpu_temperature_celsius","gpu":"0","job":"gpuctl",' \
         b'"instance":"gpu-a:9400"},"value":[1714564800,"40"]}'

def answer(total):
    """A valid Prometheus vector answer of exactly total bytes, in chunks."""
    head, tail = b'{"status":"success","data":{"resultType":"vector","result":[', b"]}}"
    n = max(1, (total - len(head) - len(tail)) // (len(SERIES) + 1))
    yield head + SERIES
    chunk = (b"," + SERIES) * 1000
    left = n - 1
    while left > 0:
        k = min(left, 1000)
        yield chunk[:k * (len(SERIES) + 1)]
        left -= k
    yield tail

class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    def log_message(self, *a):
        pass
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        try:
            if self.path.startswith("/api/v1/targets") and mode == "big-targets":
                self.send_header("Content-Length", str(size))
                self.end_headers()
                for c in answer(size):
                    self.wfile.write(c)
            elif self.path.startswith("/api/v1/targets"):
                self.send_header("Content-Length", str(len(TARGETS)))
                self.end_headers()
                self.wfile.write(TARGETS)
            else:
                self.end_headers()
                for c in answer(size):
                    self.wfile.write(c)
        except (BrokenPipeError, ConnectionResetError):
            pass

s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
with open(ready, "w") as f:
    f.write("%d\n" % s.server_address[1])
s.serve_forever()
