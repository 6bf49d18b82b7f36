#!/usr/bin/env python3
"""prom_hostile.py MODE SIZE READY: a hostile (or just small) stand-in for a Prometheus server,
for status --prometheus. It writes its port to READY once it listens, then answers until killed.
  cluster-daemon-down, cluster-daemon-up: one exporter (gpu-a:9400, up, scraped now) with one idle
               GPU, whose gpuctl_daemon_up is 0 (no lease series) or 1 (gpuctl_gpu_leased 0)
  big-query:   /api/v1/targets is a valid answer with one target; /api/v1/query is a valid answer
               of SIZE bytes, its end marked by closing the connection (no Content-Length: the
               client can stop only by counting what it reads)
  big-targets: /api/v1/targets announces Content-Length SIZE and streams it
The body is made as it is sent and sending stops when the client hangs up, so a client that
keeps to its bound is sent little more than the bound (and the socket buffers)."""
import http.server, json, sys, time, urllib.parse

mode, size, ready = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def targets():
    return json.dumps({"status": "success", "data": {"activeTargets": [{
        "labels": {"job": "gpuctl", "instance": "gpu-a:9400"}, "health": "up", "lastError": "",
        "lastScrape": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "scrapeInterval": "15s",
        "scrapeTimeout": "10s"}]}}).encode()

def cluster(query):
    """The two queries of the cluster view: the lookback (last_over_time, gpuctl_field) or now."""
    now = time.time()
    lookback = "last_over_time" in query
    gpu = {"gpu": "0", "uuid": "GPU-00000000-1111-2222-3333-000000000000", "job": "gpuctl",
           "name": "NVIDIA H100 80GB HBM3", "hostname": "gpu-a", "instance": "gpu-a:9400"}
    series = [("gpuctl_gpu_info", gpu, "1"), ("gpuctl_gpu_memory_total_bytes", gpu, str(81559 << 20)),
              ("gpuctl_gpu_memory_used_bytes", gpu, "0"), ("gpuctl_gpu_utilization_percent", gpu, "0"),
              ("gpuctl_gpu_lost", gpu, "0")]
    host = {"hostname": "gpu-a", "job": "gpuctl", "instance": "gpu-a:9400"}
    if not lookback:
        up = mode == "cluster-daemon-up"
        series.append(("gpuctl_daemon_up", host, "1" if up else "0"))
        if up:
            series.append(("gpuctl_gpu_leased", gpu, "0"))
    result = [{"metric": dict(labels, **({"gpuctl_field": name} if lookback else {"__name__": name})),
               "value": [now, value]} for name, labels, value in series]
    return json.dumps({"status": "success", "data": {"resultType": "vector", "result": result}}).encode()
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
                t = targets()
                self.send_header("Content-Length", str(len(t)))
                self.end_headers()
                self.wfile.write(t)
            elif mode.startswith("cluster"):
                a = cluster(urllib.parse.unquote(self.path))
                self.send_header("Content-Length", str(len(a)))
                self.end_headers()
                self.wfile.write(a)
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
