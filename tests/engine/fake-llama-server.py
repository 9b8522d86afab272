# fake-llama-server.py: a server that fails as a real one may, for
# tests/engine/test-remote.sh: hang (accept, never answer), garbage (every
# answer is not JSON), or status CODE (every answer is that HTTP status with
# llama-server's error body).  Prints its port, then serves until killed.
#   python3 fake-llama-server.py hang | garbage | status 500
import socket
import sys
import threading

mode = sys.argv[1]
code = int(sys.argv[2]) if mode == "status" else 0
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 0))
srv.listen(16)
print(srv.getsockname()[1], flush=True)
held = []


def answer(conn):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(4096)
        if not chunk:
            return
        data += chunk
    if mode == "hang":
        held.append(conn)  # never answered, never closed
        return
    if mode == "garbage":
        body = b"<html>this is not JSON"
        status = b"200 OK"
    else:
        body = b'{"error": {"code": %d, "message": "fake failure %d", "type": "server_error"}}' % (code, code)
        status = b"%d Failure" % code
    conn.sendall(b"HTTP/1.1 " + status + b"\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body)
    conn.close()


while True:
    c, _ = srv.accept()
    threading.Thread(target=answer, args=(c,), daemon=True).start()
