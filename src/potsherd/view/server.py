"""``potsherd view``: a local HTTP server for the viewer page and its JSON API.

The API (stable; the page uses nothing else):

``GET /api/files``
    ``{"root": NAME, "files": [{"path", "size", "format", "family"}...], "skipped": N}``:
    the regular files under the served folder (or the one served file) that a
    codec recognises by extension or magic bytes.
``GET /api/doc?path=REL[&node=/root/a/3][&offset=N]``
    one level of the document tree: ``{"format", "family", "size", "warnings",
    "opaque", "tree": {name, path, kind, span: [start, end) or null, count,
    children: [...], more}}``; ``node`` expands a deeper node, ``offset`` pages
    through its children (200 at a time).
``GET /api/field?path=REL&offset=N``
    ``{"path", "span"[, "item", "itemSpan"]}`` of the deepest field holding byte N.
``GET /api/glb?path=REL[&NAME=VALUE...]``
    the file converted to glTF binary (``model/gltf-binary``); other parameters are
    the codec's declared export options (``lod``, ``moveable``, ...; unknown: 400).
    File-valued options (``palette``, ``skeleton``, ``data_root``, ...) are paths
    relative to the served folder, opened like ``path``.
``GET /api/palettes?path=REL[&NAME=VALUE...]``
    the palettes the model's bitmaps were drawn with (Darkstar; the same options as
    ``/api/glb``, whose cached result it reads): ``{"palette": the option given or "",
    "images": [{"image", "palette", "paletteIndex", "alternatives"}...], "choices":
    [...]}``; palettes as ``palette=`` values relative to the served folder (``None``
    when outside it), ``choices`` every offered one (the used and those holding an index).
``GET /api/texture?path=REL[&palette=FILE]``
    a Darkstar Phoenix bitmap (``pbmp``) drawn as PNG with the palette the engine's rule
    picks, or the ``palette=`` given (confined like ``/api/glb``'s); ``/api/palettes`` of
    a bitmap answers for this drawing.
``GET /api/bytes?path=REL&offset=N&length=M``
    raw bytes (``application/octet-stream``, at most 65,536 per request).

Errors are JSON ``{"error": KIND, "message"[, "offset", "fieldPath"]}`` with status
400 (bad request), 403 (a path outside the served folder: ``..``, absolute
paths, symbolic links, special files; or a foreign Host/Origin, or a missing token),
404 (no such file or node), 422 (the file does not decode or convert: the decoder's
own error, offset and field path), 503 (busy).  Messages name paths relative to the
served folder and never carry an exception's text or a file's content.

Threat model (see SECURITY.md): any web page the user visits can make the browser send
requests to 127.0.0.1, and can rebind its own name to 127.0.0.1; so every request
must carry ``Host`` naming the loopback address and port served (and ``Origin``,
when present, the same), else 403.  Binding another address needs ``allow_remote``
and then every request needs the random token printed at start-up.  Connections are
read by one selector thread until their request head is complete (bounded size and
time, so idle and slow clients cost a buffer, not a thread), then handed to a small
fixed pool; decoding and conversion run under semaphores with a byte-bounded cache, and
conversions in child processes under memory and time limits (:mod:`.worker`).
"""
from __future__ import annotations

import hmac
import io
import json
import logging
import mimetypes
import os
import secrets
import selectors
import socket
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler
from typing import Any, Callable
from urllib.parse import parse_qs, quote, urlsplit

from ..core.limits import DEFAULT_LIMITS, Limits
from .confine import Refused, split_relative
from .site import ApiError, STATIC, Site, _KINDS, _int, three_missing, vendor_dir

#: internal errors go to the log (stderr unless the application configures it)
_log = logging.getLogger("potsherd.view")

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
TOKEN_PARAM, TOKEN_HEADER, TOKEN_COOKIE = "token", "X-Potsherd-Token", "potsherd_token"


class RemoteBindRefused(ValueError):
    """A non-loopback address without ``allow_remote`` (a usage error)."""


class _Writer(io.RawIOBase):
    """Everything written goes out with ``sendall`` (the socket's timeout bounds it)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def writable(self) -> bool:
        return True

    def write(self, b) -> int:
        self.sock.sendall(b)
        return len(b)


class _Request:
    __slots__ = ("sock", "head")

    def __init__(self, sock: socket.socket, head: bytes) -> None:
        self.sock, self.head = sock, head


class Handler(BaseHTTPRequestHandler):
    """One request whose head the selector has already read (no body is accepted)."""

    site: Site
    server_version = "potsherd-view"
    protocol_version = "HTTP/1.0"   # one request per connection: no idle keep-alive
    default_request_version = "HTTP/1.0"  # malformed lines get a status line too
    extra_cookie: str | None = None

    def setup(self) -> None:
        self.connection = self.request.sock
        self.rfile = io.BytesIO(self.request.head)
        self.wfile = _Writer(self.request.sock)

    def finish(self) -> None:
        pass

    def version_string(self) -> str:
        return self.server_version  # no Python version

    def log_message(self, fmt: str, *args: Any) -> None:  # quiet; errors go to the page
        pass

    def _send(self, status: int, body: bytes, ctype: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("X-Frame-Options", "DENY")
        self.send_header("Cross-Origin-Resource-Policy", "same-origin")
        if status == 503:
            self.send_header("Retry-After", "2")
        if self.extra_cookie:
            self.send_header("Set-Cookie", self.extra_cookie)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, obj: Any) -> None:
        self._send(status, json.dumps(obj, ensure_ascii=False).encode("utf-8"),
                   "application/json; charset=utf-8")

    # --- who may ask --------------------------------------------------------
    def _check_caller(self, q: dict) -> None:
        srv: ViewServer = self.server
        host = (self.headers.get("Host") or "").strip().lower()
        if not srv.host_allowed(host):
            raise ApiError(403, "Forbidden", "this server answers only requests addressed to "
                           "it by its loopback address (Host header refused)")
        origin = self.headers.get("Origin")
        if origin is not None and origin.strip().lower() != "http://" + host:
            raise ApiError(403, "Forbidden", "cross-origin request refused")
        if srv.token is not None:
            given = (q.get(TOKEN_PARAM) or [""])[0] or self.headers.get(TOKEN_HEADER) or \
                _cookie(self.headers.get("Cookie") or "", TOKEN_COOKIE)
            if not given or not hmac.compare_digest(given.encode(), srv.token.encode()):
                raise ApiError(403, "Forbidden", "missing or wrong token (printed by "
                               "potsherd view at start-up)")
            if (q.get(TOKEN_PARAM) or [""])[0]:
                self.extra_cookie = (f"{TOKEN_COOKIE}={srv.token}; Path=/; HttpOnly; "
                                     f"SameSite=Strict")

    def do_HEAD(self) -> None:  # noqa: N802
        self.do_GET()

    def do_GET(self) -> None:  # noqa: N802 - the http.server name
        try:
            url = urlsplit(self.path)
            q = parse_qs(url.query, keep_blank_values=True, max_num_fields=64)
        except ValueError:
            return self._json(400, {"error": "BadRequest", "message": "malformed query"})
        site = self.site
        try:
            self._check_caller(q)
            one = {k: v[0] for k, v in q.items() if k != TOKEN_PARAM}
            if url.path == "/api/files":
                return self._json(200, site.files())
            if url.path == "/api/doc":
                return self._json(200, site.doc_json(one.get("path", ""),
                                                     one.get("node", "/root"),
                                                     _int(q, "offset", 0)))
            if url.path == "/api/field":
                return self._json(200, site.field(one.get("path", ""), _int(q, "offset")))
            if url.path == "/api/glb":
                opts = {k: v for k, v in one.items() if k != "path"}
                return self._send(200, site.glb(one.get("path", ""), opts),
                                  "model/gltf-binary")
            if url.path == "/api/palettes":
                opts = {k: v for k, v in one.items() if k != "path"}
                return self._json(200, site.palettes(one.get("path", ""), opts))
            if url.path == "/api/texture":
                opts = {k: v for k, v in one.items() if k != "path"}
                return self._send(200, site.texture(one.get("path", ""), opts)[0], "image/png")
            if url.path == "/api/bytes":
                return self._send(200, site.raw(one.get("path", ""), _int(q, "offset", 0),
                                                _int(q, "length", 4096)),
                                  "application/octet-stream")
            if url.path.startswith("/api/"):
                raise ApiError(404, "NotFound", "no such endpoint")
            return self._static(url.path)
        except ApiError as e:
            return self._json(e.status, e.body)
        except OSError as e:
            if isinstance(e, (BrokenPipeError, ConnectionError, TimeoutError)):
                raise
            return self._json(404 if isinstance(e, FileNotFoundError) else 500,
                              {"error": "NotFound" if isinstance(e, FileNotFoundError)
                               else "InternalError", "message": "cannot read the file"})
        except Exception as e:  # noqa: BLE001 - a bad file must not kill the server
            _log.error("potsherd view: internal error (%s) on %s", type(e).__name__, url.path)
            return self._json(500, {"error": "InternalError",
                                    "message": "internal error (see the server's console)"})

    def _static(self, path: str) -> None:
        if path in ("", "/"):
            path = "/index.html"
        if path.startswith("/vendor/"):
            base = vendor_dir()
            if base is None:
                raise ApiError(404, "NotFound", three_missing())
            rel = path[len("/vendor/"):]
        else:
            base, rel = STATIC, path.lstrip("/")
        try:
            parts = split_relative(rel)
        except Refused as e:
            raise ApiError(403 if e.status == 403 else 404, _KINDS.get(e.status, "NotFound"),
                           "no such page") from None
        full = (base / "/".join(parts)).resolve()
        if not full.is_file() or base.resolve() not in full.parents:
            raise ApiError(404, "NotFound", "no such page")
        ctype = mimetypes.guess_type(full.name)[0] or "application/octet-stream"
        if full.suffix in (".js", ".mjs"):
            ctype = "text/javascript"
        self._send(200, full.read_bytes(), ctype)


def _cookie(header: str, name: str) -> str:
    for part in header.split(";"):
        k, _, v = part.strip().partition("=")
        if k == name:
            return v
    return ""


def is_loopback(host: str) -> bool:
    import ipaddress
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class _Conn:
    __slots__ = ("sock", "buf", "deadline")

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self.sock, self.buf, self.deadline = sock, bytearray(), deadline


class ViewServer:
    """The HTTP server: one selector thread reads request heads, three fixed pools answer
    (static files and bytes; documents; conversions), so a long conversion never
    delays the tree or the hex pane.

    ``max_pending`` connections may be reading their head at once (the oldest is
    dropped for a new one), each for at most ``head_timeout`` seconds and
    ``MAX_HEAD`` bytes; at most ``max_queued`` complete requests wait for a worker
    (more: 503).  Responses are written with ``write_timeout`` seconds in all."""

    MAX_HEAD = 16384
    DOCS = ("/api/doc", "/api/field", "/api/files")
    CONVERT = ("/api/glb", "/api/palettes", "/api/texture")

    def __init__(self, site: Site, host: str = "127.0.0.1", port: int = 0, *,
                 allow_remote: bool = False, token: str | None = None, workers: int = 4,
                 doc_workers: int = 4, convert_workers: int = 4, backlog: int = 128, max_pending: int = 256,
                 max_queued: int = 512, head_timeout: float = 10.0,
                 write_timeout: float = 60.0) -> None:
        if not is_loopback(host) and not allow_remote:
            raise RemoteBindRefused(f"{host} is not a loopback address: binding it needs "
                                  "allow_remote (--allow-remote) and a token")
        self.site = site
        self.remote = not is_loopback(host)
        self.token = token if token is not None else (
            secrets.token_urlsafe(24) if self.remote else None)
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.socket = socket.socket(family, socket.SOCK_STREAM)
        try:
            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.socket.bind((host.strip("[]"), port))
            self.socket.listen(backlog)
            self.socket.setblocking(False)
        except OSError:
            self.socket.close()
            raise
        self.server_address = self.socket.getsockname()[:2]
        self.port = self.server_address[1]
        self.handler = type("SiteHandler", (Handler,), {"site": site})
        self.max_pending, self.max_queued = max_pending, max_queued
        self.head_timeout, self.write_timeout = head_timeout, write_timeout
        self._light = ThreadPoolExecutor(workers, thread_name_prefix="potsherd-view")
        self._docs = ThreadPoolExecutor(doc_workers, thread_name_prefix="potsherd-doc")
        self._convert = ThreadPoolExecutor(convert_workers, thread_name_prefix="potsherd-glb")
        self.pools = (self._light, self._docs, self._convert)
        self._pending: OrderedDict[socket.socket, _Conn] = OrderedDict()
        self._queued = 0
        self._qlock = threading.Lock()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._stop = threading.Event()
        self._stopped = threading.Event()
        self._stopped.set()
        names = LOOPBACK_NAMES
        self._hosts = {f"{n}:{self.port}" for n in names}

    # --- policy ------------------------------------------------------------
    def host_allowed(self, host: str) -> bool:
        if host in self._hosts:
            return True
        if not self.remote:
            return False
        # a remote bind is reached by names we cannot know; the token is the guard
        return host.rpartition(":")[2] == str(self.port)

    @property
    def url(self) -> str:
        host = self.server_address[0]
        if self.remote:
            host = socket.gethostname() if host in ("0.0.0.0", "::") else host
        else:
            host = "127.0.0.1" if ":" not in host else "::1"
        if ":" in host:
            host = f"[{host}]"
        url = f"http://{host}:{self.port}/"
        return url + (f"?{TOKEN_PARAM}={quote(self.token)}" if self.token else "")

    # --- the loop ----------------------------------------------------------
    def serve_forever(self, poll_interval: float = 0.5) -> None:
        self._stop.clear()
        self._stopped.clear()
        sel = selectors.DefaultSelector()
        sel.register(self.socket, selectors.EVENT_READ, None)
        sel.register(self._wake_r, selectors.EVENT_READ, None)
        try:
            while not self._stop.is_set():
                now = time.monotonic()
                wait = poll_interval
                if self._pending:
                    first = next(iter(self._pending.values()))
                    wait = max(0.0, min(wait, first.deadline - now))
                for key, _ in sel.select(wait):
                    if key.fileobj is self.socket:
                        self._accept(sel)
                    elif key.fileobj is self._wake_r:
                        try:
                            self._wake_r.recv(4096)
                        except OSError:
                            pass
                    else:
                        self._read(sel, key.fileobj)
                self._expire(sel, time.monotonic())
        finally:
            for sock in list(self._pending):
                self._drop(sel, sock)
            sel.close()
            self._stopped.set()

    def _accept(self, sel) -> None:
        for _ in range(64):
            try:
                sock, _addr = self.socket.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:  # out of descriptors: drop the oldest waiting head and go on
                if self._pending:
                    self._drop(sel, next(iter(self._pending)))
                else:  # all in use by answers under way: wait for one, do not spin
                    time.sleep(0.05)
                return
            sock.setblocking(False)
            while len(self._pending) >= self.max_pending:
                self._drop(sel, next(iter(self._pending)))
            self._pending[sock] = _Conn(sock, time.monotonic() + self.head_timeout)
            sel.register(sock, selectors.EVENT_READ, None)

    def _read(self, sel, sock: socket.socket) -> None:
        conn = self._pending.get(sock)
        if conn is None:
            return
        try:
            data = sock.recv(self.MAX_HEAD + 1 - len(conn.buf))
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self._drop(sel, sock)
            return
        conn.buf += data
        end = conn.buf.find(b"\r\n\r\n")
        if end < 0:
            end = conn.buf.find(b"\n\n")
        if end < 0:
            if len(conn.buf) > self.MAX_HEAD:
                self._quick(sel, sock, 431, "request head too large")
            return
        sel.unregister(sock)
        del self._pending[sock]
        with self._qlock:
            if self._queued >= self.max_queued:
                busy = True
            else:
                busy = False
                self._queued += 1
        if busy:
            self._quick(None, sock, 503, "the server is busy; try again")
            return
        head = bytes(conn.buf)
        line = head.split(b"\r\n", 1)[0].split(b" ")
        target = line[1].split(b"?", 1)[0].decode("latin-1") if len(line) > 1 else ""
        pool = self._docs if target in self.DOCS else \
            self._convert if target in self.CONVERT else self._light
        try:
            pool.submit(self._handle, sock, head)
        except RuntimeError:  # shutting down
            with self._qlock:
                self._queued -= 1
            sock.close()

    def _quick(self, sel, sock: socket.socket, status: int, message: str) -> None:
        """A short refusal sent without blocking (best effort), then close."""
        body = json.dumps({"error": "Busy" if status == 503 else "BadRequest",
                           "message": message}).encode()
        head = (f"HTTP/1.0 {status} {'Service Unavailable' if status == 503 else 'Error'}\r\n"
                f"Server: potsherd-view\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\nRetry-After: 2\r\n\r\n").encode()
        try:
            sock.send(head + body)
        except OSError:
            pass
        if sel is not None:
            self._drop(sel, sock)
        else:
            sock.close()

    def _drop(self, sel, sock: socket.socket) -> None:
        self._pending.pop(sock, None)
        try:
            sel.unregister(sock)
        except (KeyError, ValueError):
            pass
        sock.close()

    def _expire(self, sel, now: float) -> None:
        while self._pending:
            sock, conn = next(iter(self._pending.items()))
            if conn.deadline > now:
                return
            self._drop(sel, sock)  # slow or idle: no thread was ever spent on it

    def _handle(self, sock: socket.socket, head: bytes) -> None:
        try:
            sock.setblocking(True)
            sock.settimeout(self.write_timeout)
            self.handler(_Request(sock, head), sock.getpeername()[:2], self)
        except Exception:  # noqa: BLE001 - a vanished client is not the server's problem
            pass
        finally:
            try:
                sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            sock.close()
            with self._qlock:
                self._queued -= 1

    # --- life ----------------------------------------------------------------
    def shutdown(self) -> None:
        """Stop :meth:`serve_forever` (from another thread) and wait for it."""
        self._stop.set()
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass
        self._stopped.wait()

    def server_close(self) -> None:
        for pool in self.pools:
            pool.shutdown(wait=False, cancel_futures=True)
        for s in (self.socket, self._wake_r, self._wake_w):
            s.close()
        self.site.close()

    def __enter__(self) -> "ViewServer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server_close()


def make_server(root: str | os.PathLike, *, host: str = "127.0.0.1", port: int = 0,
                limits: Limits = DEFAULT_LIMITS, allow_remote: bool = False,
                token: str | None = None, **tuning: Any) -> ViewServer:
    """A server for ``root`` (not yet serving); ``port=0`` picks a free port.  A
    non-loopback ``host`` needs ``allow_remote`` and then requires a token."""
    from .. import registry
    registry.codecs()  # import every family now: lazy imports from many threads race
    site_options = {k: tuning.pop(k) for k in ("isolate", "convert_timeout", "convert_memory")
                    if k in tuning}
    site = Site(root, limits, **site_options)
    try:
        server = ViewServer(site, host, port, allow_remote=allow_remote, token=token, **tuning)
    except BaseException:
        site.close()
        raise
    if site.workers is not None:
        threading.Thread(target=site.workers.prestart, daemon=True).start()
    return server


def serve(root: str | os.PathLike, *, host: str = "127.0.0.1", port: int = 0,
          open_browser: bool = True, limits: Limits = DEFAULT_LIMITS,
          allow_remote: bool = False,
          on_ready: Callable[[ViewServer], None] | None = None) -> int:
    """Serve until Ctrl-C.  ``on_ready(server)`` runs once it listens: the
    command line prints ``server.url`` (with the token when remote) there."""
    server = make_server(root, host=host, port=port, limits=limits, allow_remote=allow_remote)
    if on_ready is not None:
        on_ready(server)
    if open_browser:
        import webbrowser
        threading.Timer(0.3, webbrowser.open, (server.url,)).start()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
