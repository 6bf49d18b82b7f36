#!/usr/bin/env python3
"""exporter_slowloris.py PORT TIMEOUT: a slowloris against a running gpuctl exporter, and real
scrapers beside it. Prints TAP lines (4 checks), or "skip REASON" when this machine's open-file
limit cannot hold the attack.
First the header deadline alone: a few half-open connections trickling a byte every 0.2 s (each
resets an idle timeout) are dropped once TIMEOUT has passed, not before.
The attacker opens PER_ADDR half-open connections ("GET /metr", never finished) from each of
ADDRS loopback addresses (127.0.0.2...), more than the exporter's bounds (256 per address, 1,024 in
all, or half the open-file limit), and trickles a byte on each every 0.5 s, which resets an idle timeout; a connection the
exporter closes is opened again, as a real slowloris does. Meanwhile 10 scrapers, half from
127.0.0.1 and half from one of the attacker's own addresses, scrape in parallel: all must be
answered. Then every connection the attacker opened first must have been dropped (the header
deadline or room for newcomers), within a bound that only a hang reaches. No check is of a speed."""
import http.client, resource, select, socket, sys, threading, time

port, timeout = int(sys.argv[1]), float(sys.argv[2])
PER_ADDR, SCRAPERS, HANG = 300, 10, 60

# The exporter's bound in all is 1,024, or half its open-file limit (the same hard limit as
# ours) where that is lower: the attack exceeds it by 300, from addresses of 300 each (past the
# per-address 256), 1,800 from six where the limit allows.
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
bound = 1024 if hard == resource.RLIM_INFINITY else min(1024, (hard - 64) // 2)
ADDRS = max(2, -(-(bound + 300) // PER_ADDR))
need = ADDRS * PER_ADDR + 100
if hard != resource.RLIM_INFINITY and hard < need:
    print("skip the open-file limit (%d) cannot hold %d connections" % (hard, need))
    sys.exit()
resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, need), hard))

def check(name, cond, detail=""):
    print(("ok - " if cond else "not ok - ") + name)
    if not cond and detail:
        print("#   %s" % (detail,))

def source(i):
    return "127.0.0.%d" % (2 + i)

def half_open(addr):
    s = socket.socket()
    s.bind((addr, 0))
    s.settimeout(HANG)
    s.connect(("127.0.0.1", port))
    s.setblocking(False)
    try:
        s.send(b"GET /metr")
    except OSError:
        pass
    return s

try:
    half_open(source(ADDRS - 1)).close()
except OSError as e:
    print("skip cannot connect from %s (%s)" % (source(ADDRS - 1), e))
    sys.exit()

# The header deadline alone: five connections, far below every bound, trickling.
t0 = time.monotonic()
few = [half_open("127.0.0.1") for _ in range(5)]
ages = []
while few and time.monotonic() < t0 + timeout + HANG:
    p = select.poll()
    for s in few:
        p.register(s, select.POLLIN)
    for fd, _ in p.poll(200):
        s = next(k for k in few if k.fileno() == fd)
        few.remove(s)
        ages.append(time.monotonic() - t0)
        s.close()
    for s in few:
        try:
            s.send(b"x")
        except OSError:
            pass
check("half-open connections trickling bytes are dropped at the %g s header deadline, not before "
      "(%s)" % (timeout, ", ".join("%.1f s" % a for a in ages)),
      not few and len(ages) == 5 and min(ages) >= timeout * 0.9)
for s in few:
    s.close()

lock = threading.Lock()
first = {}          # socket -> its address: the connections opened first
live = {}           # socket -> its address: all open now
for i in range(ADDRS):
    for _ in range(PER_ADDR):
        s = half_open(source(i))
        first[s] = live[s] = source(i)
stop = threading.Event()
gone_first = set()

def trickle():
    """A byte on each connection every 0.5 s; one the server closed is opened again."""
    while not stop.is_set():
        with lock:
            socks = list(live)
        p = select.poll()
        for s in socks:
            p.register(s, select.POLLIN)
        by_fd = {s.fileno(): s for s in socks}
        # Readable: the server closed it (it never answers a request that is not finished).
        closed = [by_fd[fd] for fd, _ in p.poll(0)]
        for s in socks:
            if s in closed:
                continue
            try:
                s.send(b"x")
            except OSError:
                closed.append(s)
        with lock:
            for s in closed:
                addr = live.pop(s)
                if s in first:
                    gone_first.add(s)
                else:
                    s.close()
                if not stop.is_set():
                    try:
                        n = half_open(addr)
                        live[n] = addr
                    except OSError:
                        pass
        stop.wait(0.5)

t = threading.Thread(target=trickle)
t.start()

results = []
def scrape(addr):
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=HANG, source_address=(addr, 0))
        c.request("GET", "/metrics")
        r = c.getresponse()
        body = r.read()
        c.close()
        results.append(r.status if b"gpuctl_gpu_info" in body else "status %d, no metrics" % r.status)
    except Exception as e:
        results.append(repr(e))
scrapers = [threading.Thread(target=scrape, args=("127.0.0.1" if k % 2 else source(0),))
            for k in range(SCRAPERS)]
for s in scrapers: s.start()
for s in scrapers: s.join()
with lock:
    holding = len(live)
check("%d scrapes in parallel beside %d half-open trickling connections from %d addresses: all "
      "answered (%d)" % (SCRAPERS, ADDRS * PER_ADDR, ADDRS, results.count(200)),
      results == [200] * SCRAPERS, [r for r in results if r != 200][:3])

# Every first connection is dropped: made room for, or past the header deadline.
end = time.monotonic() + timeout + HANG
while time.monotonic() < end:
    with lock:
        if len(gone_first) == len(first):
            break
    time.sleep(0.1)
with lock:
    n_gone = len(gone_first)
check("the trickling connections are dropped, bytes or not (%d of %d; %s s deadline)"
      % (n_gone, len(first), timeout), n_gone == len(first))
stop.set()
t.join()
with lock:
    for s in list(live) + list(first):
        s.close()
try:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=HANG)
    c.request("GET", "/metrics")
    st = c.getresponse().status
except Exception as e:
    st = repr(e)
check("and the exporter serves once the attack ends", st == 200, st)
