#!/usr/bin/env python3
"""fake-hub.py: a stand-in for the Hugging Face Hub on 127.0.0.1, for the
tests of `elmchat pull` (the real Hub cannot be reached from the test
machines).  It serves the endpoints and headers elmchat relies on, as the
Hub documents and answers them:

  GET  /api/models/OWNER/NAME/revision/REV   {"id", "sha", "siblings"}
  GET  /api/models/OWNER/NAME/tree/REV?recursive=true
       [{"type", "path", "size", "oid", "lfs": {"oid", "size", "pointerSize"}}]
       (paged: Link: <...>; rel="next" when --page N is given)
  POST /api/models/OWNER/NAME/paths-info/REV {"paths": [...]}
       the same entries for those paths (huggingface.js asks this way)
  GET  /OWNER/NAME/resolve/REV/PATH
       a plain file: 200, ETag "GIT-OID", X-Repo-Commit
       an LFS file: 302 to /cdn/SHA256 with X-Linked-Etag "SHA256",
       X-Linked-Size, X-Repo-Commit; /cdn/ honours Range (206)
  401 with X-Error-Code/X-Error-Message for a private repo without the
  token (Authorization: Bearer), 404 RepoNotFound for an unknown one.

A repository is a folder ROOT/OWNER/NAME; ROOT/OWNER/NAME.private makes it
private.  Files ending in .safetensors or .gguf are LFS files.

Faults for the tests: --drop-once (each LFS file's first download is cut
in the middle), --corrupt PATH (that file's bytes are served with one byte
changed), --rate BYTES (downloads are throttled to that many bytes a
second), --fail N (the first N API requests answer 503), --stall (API
requests get no answer at all: the connection stays open, silent, until the
client leaves), --huge-size BYTES (the file list gives every LFS file that
size, e.g. 2^62: a hostile listing).  Every request is logged to --log as
METHOD PATH RANGE AUTH.
"""
import argparse
import hashlib
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlparse, parse_qs

ARGS = None
LOCK = threading.Lock()
DROPPED = set()
FAILS_LEFT = [0]


def is_lfs(path):
    return path.endswith(".safetensors") or path.endswith(".gguf")


def repo_files(repo_dir):
    out = []
    for base, dirs, files in os.walk(repo_dir):
        dirs.sort()
        for f in sorted(files):
            full = os.path.join(base, f)
            out.append(os.path.relpath(full, repo_dir).replace(os.sep, "/"))
    return sorted(out)


INFO = {}


def file_info(repo_dir, path):
    full = os.path.join(repo_dir, path)
    st = os.stat(full)
    key = (full, st.st_size, st.st_mtime_ns)
    with LOCK:
        if key in INFO:
            return dict(INFO[key])
    data = open(full, "rb").read()
    git = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
    info = {"type": "file", "path": path, "size": len(data), "oid": git}
    if is_lfs(path):
        size = ARGS.huge_size or len(data)
        info["size"] = size
        info["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": size,
                       "pointerSize": 134}
    with LOCK:
        INFO[key] = info
    return dict(info)


def commit_of(repo_dir):
    h = hashlib.sha1()
    for p in repo_files(repo_dir):
        h.update(p.encode() + b"\0" + file_info(repo_dir, p)["oid"].encode())
    return h.hexdigest()


class Hub(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def log_message(self, fmt, *a):
        pass

    def log_request_line(self):
        if ARGS.log:
            with LOCK, open(ARGS.log, "a") as f:
                f.write("%s %s %s %s\n" % (self.command, self.path,
                                           self.headers.get("Range", "-"),
                                           "auth" if self.headers.get("Authorization") else "-"))

    def answer(self, status, body=b"", headers=None, ctype="application/json"):
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def error(self, status, code, message):
        body = json.dumps({"error": message}).encode()
        self.answer(status, body, {"X-Error-Code": code, "X-Error-Message": message})

    def repo(self, owner, name):
        """The repository's folder, or None after answering the error."""
        d = os.path.join(ARGS.root, owner, name)
        if not os.path.isdir(d):
            self.error(404, "RepoNotFound", "Repository not found")
            return None
        if os.path.exists(d + ".private"):
            auth = self.headers.get("Authorization", "")
            if auth != "Bearer " + (ARGS.token or ""):
                self.error(401, "RepoNotFound", "Invalid credentials in Authorization header"
                           if auth else "Repository not found")
                return None
        return d

    def do_HEAD(self):
        self.do_GET()

    def do_POST(self):
        """POST /api/models/OWNER/NAME/paths-info/REV {"paths": [...]}: the
        entries of those paths, as /tree lists them (huggingface.js asks so)."""
        self.log_request_line()
        parts = [unquote(p) for p in urlparse(self.path).path.split("/")[1:]]
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length) if length else b""
        if parts[:2] != ["api", "models"] or len(parts) < 6 or parts[4] != "paths-info":
            return self.error(404, "EntryNotFound", "no such endpoint")
        d = self.repo(parts[2], parts[3])
        if d is None:
            return
        try:
            paths = json.loads(body or b"{}").get("paths", [])
        except ValueError:
            return self.error(400, "BadRequest", "the body is not JSON")
        files = repo_files(d)
        out = [file_info(d, p) for p in paths if p in files]
        self.answer(200, json.dumps(out).encode())

    def do_GET(self):
        self.log_request_line()
        url = urlparse(self.path)
        parts = [unquote(p) for p in url.path.split("/")[1:]]
        if parts[:2] == ["api", "models"] and len(parts) >= 6:
            with LOCK:
                fail = FAILS_LEFT[0] > 0
                if fail:
                    FAILS_LEFT[0] -= 1
            if fail:
                return self.error(503, "Unavailable", "Service temporarily unavailable")
            if ARGS.stall:
                # read nothing more, say nothing: wait until the client hangs up
                self.connection.settimeout(None)
                while self.connection.recv(4096):
                    pass
                self.close_connection = True
                return
            owner, name, kind, rev = parts[2], parts[3], parts[4], parts[5]
            d = self.repo(owner, name)
            if d is None:
                return
            commit = commit_of(d)
            if rev not in ("main", commit):
                return self.error(404, "RevisionNotFound", "Invalid rev id: " + rev)
            if kind == "revision":
                body = {"id": owner + "/" + name, "sha": commit,
                        "siblings": [{"rfilename": p} for p in repo_files(d)]}
                return self.answer(200, json.dumps(body).encode())
            if kind == "tree":
                files = [file_info(d, p) for p in repo_files(d)]
                page = int(parse_qs(url.query).get("cursor", ["0"])[0])
                headers = {}
                if ARGS.page:
                    chunk = files[page * ARGS.page:(page + 1) * ARGS.page]
                    if (page + 1) * ARGS.page < len(files):
                        headers["Link"] = '<http://%s/api/models/%s/%s/tree/%s?recursive=true&cursor=%d>; rel="next"' % (
                            self.headers.get("Host"), owner, name, rev, page + 1)
                    files = chunk
                return self.answer(200, json.dumps(files).encode(), headers)
            return self.error(404, "EntryNotFound", "no such endpoint")
        if len(parts) >= 5 and parts[2] == "resolve":
            owner, name, rev, path = parts[0], parts[1], parts[3], "/".join(parts[4:])
            d = self.repo(owner, name)
            if d is None:
                return
            commit = commit_of(d)
            if rev not in ("main", commit) or not os.path.isfile(os.path.join(d, path)):
                return self.error(404, "EntryNotFound", "Entry not found")
            info = file_info(d, path)
            if "lfs" in info:
                sha = info["lfs"]["oid"]
                loc = "/cdn/%s/%s/%s?file=%s" % (owner, name, sha, path)
                return self.answer(302, b"", {"Location": loc, "X-Repo-Commit": commit,
                                              "X-Linked-Etag": '"%s"' % sha,
                                              "X-Linked-Size": str(info["size"]),
                                              "ETag": '"%s"' % info["oid"]})
            return self.send_file(d, path, {"ETag": '"%s"' % info["oid"],
                                            "X-Repo-Commit": commit})
        if parts and parts[0] == "cdn" and len(parts) >= 4:
            d = os.path.join(ARGS.root, parts[1], parts[2])
            path = parse_qs(url.query).get("file", [""])[0]
            if not os.path.isfile(os.path.join(d, path)):
                return self.answer(404, b"not found", ctype="text/plain")
            return self.send_file(d, path, {"ETag": '"cdn-%s"' % parts[3][:8]}, cdn=True)
        self.error(404, "EntryNotFound", "no such endpoint")

    def send_file(self, d, path, headers, cdn=False):
        data = open(os.path.join(d, path), "rb").read()
        if path in (ARGS.corrupt or []):
            data = data[:-1] + bytes([data[-1] ^ 0xFF]) if data else data
        start, end, status = 0, len(data) - 1, 200
        rng = self.headers.get("Range")
        if rng and rng.startswith("bytes=") and "-" in rng and "," not in rng:
            a, b = rng[6:].split("-", 1)
            start = int(a)
            end = min(int(b), len(data) - 1) if b else len(data) - 1
            if start >= len(data) or start > end:
                return self.answer(416, b"", {"Content-Range": "bytes */%d" % len(data)})
            status = 206
            headers = dict(headers, **{"Content-Range": "bytes %d-%d/%d" % (start, end, len(data))})
        body = data[start:end + 1]
        drop = False
        if cdn and ARGS.drop_once and start == 0 and len(body) > 1:
            with LOCK:
                drop = path not in DROPPED
                DROPPED.add(path)
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        if self.command == "HEAD":
            return
        if drop:
            body = body[:len(body) // 2]
        step = 4096
        for off in range(0, len(body), step):
            self.wfile.write(body[off:off + step])
            if ARGS.rate:
                self.wfile.flush()
                time.sleep(step / ARGS.rate)
        if drop:
            self.wfile.flush()
            self.close_connection = True


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # a client that went away (Ctrl-C, a full disk) is part of the tests
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--token")
    ap.add_argument("--log")
    ap.add_argument("--page", type=int, default=0)
    ap.add_argument("--drop-once", action="store_true")
    ap.add_argument("--corrupt", action="append")
    ap.add_argument("--rate", type=float, default=0)
    ap.add_argument("--fail", type=int, default=0)
    ap.add_argument("--stall", action="store_true")
    ap.add_argument("--huge-size", type=int, default=0)
    ARGS = ap.parse_args()
    FAILS_LEFT[0] = ARGS.fail
    srv = Server(("127.0.0.1", 0), Hub)
    tmp = ARGS.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(tmp, ARGS.port_file)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
