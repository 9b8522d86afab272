# fake-llama-server.py: a server that fails as a real one may, for
# tests/engine/test-remote.sh.  Prints its port, then serves until killed.
#   hang                    accept, never answer
#   garbage                 every answer is not JSON
#   status CODE             every answer is that HTTP status with
#                           llama-server's error body
#   proxy URL STREAM        everything goes to the real server at URL except
#                           /completion, answered with STREAM's lines as
#                           server-sent events (a stream with a gap, or one
#                           that breaks off into something that is not JSON)
import socket
import sys
import threading
import urllib.error
import urllib.request

mode = sys.argv[1]
code = int(sys.argv[2]) if mode == "status" else 0
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 0))
srv.listen(16)
print(srv.getsockname()[1], flush=True)
held = []


def reply(conn, status, body, ctype=b"application/json"):
    conn.sendall(b"HTTP/1.1 " + status + b"\r\nContent-Type: " + ctype +
                 b"\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body)


def read_request(conn):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(4096)
        if not chunk:
            return None, None, None
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    lines = head.split(b"\r\n")
    method, path = lines[0].split(b" ")[:2]
    length = 0
    for h in lines[1:]:
        if h.lower().startswith(b"content-length:"):
            length = int(h.split(b":")[1])
    while len(body) < length:
        body += conn.recv(4096)
    return method.decode(), path.decode(), body


def answer(conn):
    method, path, body = read_request(conn)
    if method is None:
        return
    if mode == "hang":
        held.append(conn)  # never answered, never closed
        return
    if mode == "garbage":
        reply(conn, b"200 OK", b"<html>this is not JSON")
    elif mode == "status":
        reply(conn, b"%d Failure" % code,
              b'{"error": {"code": %d, "message": "fake failure %d", "type": "server_error"}}' % (code, code))
    elif path == "/completion":
        events = open(sys.argv[3], "rb").read().splitlines()
        out = b"".join(e + b"\n\n" for e in events if e)
        reply(conn, b"200 OK", out, b"text/event-stream")
    else:
        req = urllib.request.Request(sys.argv[2] + path, data=body if method == "POST" else None,
                                     method=method)
        try:
            with urllib.request.urlopen(req) as r:
                reply(conn, b"%d OK" % r.status, r.read())
        except urllib.error.HTTPError as e:
            reply(conn, b"%d Error" % e.code, e.read())
    conn.close()


while True:
    c, _ = srv.accept()
    threading.Thread(target=answer, args=(c,), daemon=True).start()
