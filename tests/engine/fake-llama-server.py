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
#   endless TOKENIZER N_CTX N_VOCAB ELMCHAT
#                           a hostile server on its own (no real one): it
#                           passes the connect checks (n_ctx N_CTX, the
#                           vocabulary size N_VOCAB and the ids of TOKENIZER,
#                           tokenized by ELMCHAT) and answers /completion with a
#                           stream that never ends, whatever n_predict says
import json
import socket
import subprocess
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


def endless(conn, path, body):
    tok, n_ctx, n_vocab, elmchat = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]

    def ids(text):
        out = subprocess.run([elmchat, "tokenize", "--tokenizer", tok], input=text.encode(),
                             capture_output=True, check=True).stdout.split()
        return [int(i) for i in out]

    if path == "/health":
        return reply(conn, b"200 OK", b'{"status":"ok"}')
    if path == "/props":
        return reply(conn, b"200 OK", json.dumps({
            "total_slots": 1, "model_path": "/fake/endless.gguf",
            "default_generation_settings": {"n_ctx": n_ctx}}).encode())
    if path == "/v1/models":
        return reply(conn, b"200 OK", json.dumps({"data": [{"id": "endless", "meta": {
            "n_vocab": n_vocab, "n_ctx_train": n_ctx}}]}).encode())
    if path == "/tokenize":
        content = json.loads(body or b"{}").get("content", "")
        return reply(conn, b"200 OK", json.dumps({"tokens": ids(content)}).encode())
    if path.startswith("/slots"):
        return reply(conn, b"501 Not Implemented",
                     b'{"error": {"code": 501, "message": "no slot save path", "type": "not_supported_error"}}')
    if path != "/completion":
        return reply(conn, b"404 Not Found", b'{"error": {"code": 404, "message": "no"}}')
    req = json.loads(body or b"{}")
    a = ids("A")[0]
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n")
    n = 0
    try:
        while True:  # n_predict is not honoured: the client has to stop
            n += 1
            ev = {"index": 0, "stop": False, "id_slot": 0, "content": "A", "tokens": [a],
                  "tokens_predicted": n, "tokens_evaluated": len(req.get("prompt", []))}
            conn.sendall(b"data: " + json.dumps(ev).encode() + b"\n\n")
    except OSError:
        pass  # the client hung up: what it should do


def answer(conn):
    method, path, body = read_request(conn)
    if method is None:
        return
    if mode == "endless":
        endless(conn, path, body)
    elif mode == "hang":
        held.append(conn)  # never answered, never closed
        return
    elif mode == "garbage":
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
