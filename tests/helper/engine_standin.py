#!/usr/bin/env python3
"""engine_standin.py SOCKET CONTAINERS.json [--hang] [--chunked]: test code, a stand-in for the
Docker Engine API (and Podman's compatible one) on a unix socket, answering as the documented API
does (https://docs.docker.com/reference/api/engine/): GET /_ping, and GET [/vX.Y]/containers/ID/json
with the inspect object of a container the JSON file names ({"ID": {"Name": "/n", "Labels": {...},
"Pid": N}}), 404 {"message": "No such container: ID"} otherwise. Each request is appended to
SOCKET.log, so a test can tell who was asked. --hang: accept and never answer (a runtime that
is stuck); --huge: an answer of 4 MiB, a name longer than any bound; --chunked: answer with Transfer-Encoding: chunked, as the daemon may. Ready once
SOCKET exists."""
import json, os, re, socket, sys, threading, time

path, table = sys.argv[1], json.load(open(sys.argv[2]))
hang, chunked, huge = "--hang" in sys.argv, "--chunked" in sys.argv, "--huge" in sys.argv

def answer(conn, status, body):
    data = json.dumps(body).encode()
    head = "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nApi-Version: 1.43\r\n" % (
        status, "OK" if status == 200 else "Not Found")
    if chunked:
        head += "Transfer-Encoding: chunked\r\n\r\n"
        mid = len(data) // 2
        payload = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in (data[:mid], data[mid:]) if p)
        conn.sendall(head.encode() + payload + b"0\r\n\r\n")
    else:
        conn.sendall((head + "Content-Length: %d\r\n\r\n" % len(data)).encode() + data)

def serve(conn):
    with conn:
        buf = b""
        while b"\r\n\r\n" not in buf:
            part = conn.recv(4096)
            if not part:
                return
            buf += part
        line = buf.split(b"\r\n", 1)[0].decode("latin-1")
        with open(path + ".log", "a") as log:
            log.write(line + "\n")
        if hang:
            time.sleep(3600)
            return
        if huge:
            try:
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 4194320\r\n\r\n{\"Name\":\"/" +
                             b"a" * 4194304 + b"\"}")
            except OSError:
                pass  # gpuctl stopped reading: as it should
            return
        m = re.match(r"GET (?:/v[0-9.]+)?/containers/([0-9a-f]{64})/json HTTP/1\.[01]$", line)
        if line.startswith("GET /_ping") or line.startswith("HEAD /_ping"):
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nApi-Version: 1.43\r\n\r\nOK")
        elif m and m.group(1) in table:
            c = table[m.group(1)]
            answer(conn, 200, {"Id": m.group(1), "Name": c["Name"],
                               "State": {"Running": True, "Pid": c.get("Pid", 0)},
                               "Config": {"Labels": c.get("Labels", {}),
                                          "Env": ["Name=not-this-one"]}})
        else:
            answer(conn, 404, {"message": "No such container: %s" % (m.group(1) if m else line)})

tmp = path + ".tmp"
s = socket.socket(socket.AF_UNIX)
s.bind(tmp)
s.listen(64)
os.rename(tmp, path)
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
