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
    the family's declared export options (``lod``, ``moveable``, ...; unknown: 400).
``GET /api/bytes?path=REL&offset=N&length=M``
    raw bytes (``application/octet-stream``, at most 65,536 per request).

Errors are JSON ``{"error": KIND, "message"[, "offset", "path"]}`` with status
400 (bad request), 403 (a path outside the served folder: ``..``, absolute
paths, symlinks that leave it), 404 (no such file or node), 422 (the file does
not decode or convert: the decoder's own error, offset and field path).
Reads go through the same :class:`~potsherd.core.limits.Limits` as the CLI.
"""
from __future__ import annotations

import json
import mimetypes
import os
import threading
from collections import OrderedDict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from ..core.errors import FormatError
from ..core.limits import DEFAULT_LIMITS, Limits
from .tree import DocTree

STATIC = Path(__file__).resolve().parent / "static"
MAX_BYTES = 65536
CACHE = 8  #: decoded documents kept (the viewer asks for one file many times)


class ApiError(Exception):
    def __init__(self, status: int, kind: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status, self.body = status, {"error": kind, "message": message, **extra}


def vendor_dir() -> Path | None:
    """Where ``npm ci --prefix tools/viewer`` put three.js (None: not installed)."""
    env = os.environ.get("POTSHERD_VIEWER_MODULES")
    candidates = [Path(env)] if env else []
    candidates.append(Path(__file__).resolve().parents[3] / "tools" / "viewer" / "node_modules")
    for c in candidates:
        if (c / "three" / "build" / "three.module.js").is_file():
            return c
    return None


class Site:
    """What one server serves: a folder (or one file), its limits and a small cache."""

    def __init__(self, root: str | os.PathLike, limits: Limits = DEFAULT_LIMITS) -> None:
        path = Path(root)
        real = Path(os.path.realpath(path))
        if real.is_file():
            self.folder, self.single = real.parent, real.name
        elif real.is_dir():
            self.folder, self.single = real, None
        else:
            raise FileNotFoundError(f"{root}: no such file or folder")
        self.limits = limits
        self._cache: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    # --- paths ----------------------------------------------------------
    def resolve(self, rel: str | None) -> Path:
        """``rel`` inside the served folder, or an :class:`ApiError` (403/404)."""
        if not rel:
            raise ApiError(400, "BadRequest", "missing path parameter")
        if "\0" in rel or rel.startswith(("/", "\\")) or os.path.isabs(rel) or \
                any(part == ".." for part in rel.replace("\\", "/").split("/")):
            raise ApiError(403, "Forbidden", f"{rel}: outside the served folder")
        full = Path(os.path.realpath(self.folder / rel))
        try:
            full.relative_to(self.folder)
        except ValueError:
            raise ApiError(403, "Forbidden", f"{rel}: outside the served folder") from None
        if self.single is not None and full != self.folder / self.single:
            raise ApiError(403, "Forbidden", f"{rel}: not the served file")
        if not full.is_file():
            raise ApiError(404, "NotFound", f"{rel}: no such file")
        return full

    def files(self) -> dict:
        from .. import registry
        names = [self.single] if self.single else None
        out, skipped = [], 0
        if names is None:
            names = []
            for dirpath, dirs, files in os.walk(self.folder, followlinks=False):
                dirs.sort()
                for f in sorted(files):
                    names.append(os.path.relpath(os.path.join(dirpath, f), self.folder))
        for rel in names:
            full = self.folder / rel
            if full.is_symlink() or not full.is_file():
                skipped += 1
                continue
            try:
                with open(full, "rb") as fh:
                    head = fh.read(64)
                codec = registry.detect(head, str(full))
            except (OSError, FormatError):
                skipped += 1
                continue
            out.append({"path": rel.replace(os.sep, "/"), "size": full.stat().st_size,
                        "format": codec.name, "family": codec.family})
        return {"root": self.folder.name, "files": out, "skipped": skipped}

    # --- documents --------------------------------------------------------
    def _read(self, full: Path) -> bytes:
        size = full.stat().st_size
        if size > self.limits.max_input:
            raise ApiError(422, "LimitError", f"input of {size} bytes exceeds the limit of "
                           f"{self.limits.max_input}")
        with open(full, "rb") as fh:
            return fh.read(size)

    def document(self, rel: str):
        """(document, DocTree) of a file, decoded once with byte spans."""
        from .. import registry
        full = self.resolve(rel)
        key = (str(full), full.stat().st_mtime_ns)
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                return hit
        data = self._read(full)
        try:
            doc, spans = registry.decode_with_spans(data, path=str(full), limits=self.limits)
        except FormatError as e:
            raise ApiError(422, type(e).__name__, str(e), **_where(e)) from None
        tree = DocTree(doc.root, spans, doc.meta.get("text_encoding", doc.codec.text_encoding))
        with self._lock:
            self._cache[key] = (doc, tree)
            while len(self._cache) > CACHE:
                self._cache.popitem(last=False)
        return doc, tree

    def doc_json(self, rel: str, node: str, offset: int) -> dict:
        doc, tree = self.document(rel)
        try:
            level = tree.node(node or "/root", offset=offset)
        except KeyError:
            raise ApiError(404, "NotFound", f"no node {node!r} in {rel}") from None
        codec = doc.codec
        try:
            opaque = codec.opaque_bytes(doc)
        except Exception:  # noqa: BLE001 - a report, not a decode
            opaque = None
        return {"path": rel, "format": codec.name, "family": codec.family,
                "size": self.resolve(rel).stat().st_size, "warnings": list(doc.warnings),
                "opaque": opaque, "trailing": len(doc.trailing),
                "exportable": codec.to_scene is not None, "tree": level}

    def field(self, rel: str, offset: int) -> dict:
        _, tree = self.document(rel)
        hit = tree.field_at(offset)
        if hit is None:
            raise ApiError(404, "NotFound", f"no decoded field holds byte {offset}")
        return hit

    def glb(self, rel: str, options: dict) -> bytes:
        from ..export.gltf import document_scene, glb_bytes, scene_to_gltf
        from ..registry import coerce_options
        doc, _ = self.document(rel)
        declared = doc.codec.export_options
        try:
            options = coerce_options(declared, options, what=doc.codec.name)
        except ValueError as e:
            raise ApiError(400, "BadRequest", str(e)) from None
        if "data_root" in {o.name for o in declared}:  # references resolve inside the tree
            options.setdefault("data_root", str(self.folder))
        try:
            scene = document_scene(doc, options)
            gl, binary = scene_to_gltf(scene, True)
        except FormatError as e:
            raise ApiError(422, type(e).__name__, str(e), **_where(e)) from None
        return glb_bytes(gl, binary)

    def raw(self, rel: str, offset: int, length: int) -> bytes:
        full = self.resolve(rel)
        if offset < 0 or length < 0:
            raise ApiError(400, "BadRequest", "offset and length must be >= 0")
        with open(full, "rb") as fh:
            fh.seek(offset)
            return fh.read(min(length, MAX_BYTES))


def _where(e: FormatError) -> dict:
    out = {}
    if e.offset is not None:
        out["offset"] = e.offset
    if e.path:
        out["fieldPath"] = e.path
    return out


def _int(q: dict, name: str, default: int | None = None) -> int:
    vals = q.get(name)
    if not vals:
        if default is None:
            raise ApiError(400, "BadRequest", f"missing {name} parameter")
        return default
    try:
        return int(vals[0])
    except ValueError:
        raise ApiError(400, "BadRequest", f"{name} must be an integer") from None


class Handler(BaseHTTPRequestHandler):
    site: Site
    server_version = "potsherd-view"

    def log_message(self, fmt: str, *args: Any) -> None:  # quiet; errors go to the page
        pass

    def _send(self, status: int, body: bytes, ctype: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, obj: Any) -> None:
        self._send(status, json.dumps(obj, ensure_ascii=False).encode("utf-8"),
                   "application/json; charset=utf-8")

    def do_GET(self) -> None:  # noqa: N802 - the http.server name
        url = urlsplit(self.path)
        q = parse_qs(url.query)
        site = self.site
        try:
            if url.path == "/api/files":
                return self._json(200, site.files())
            if url.path == "/api/doc":
                return self._json(200, site.doc_json(q.get("path", [""])[0],
                                                     q.get("node", ["/root"])[0],
                                                     _int(q, "offset", 0)))
            if url.path == "/api/field":
                return self._json(200, site.field(q.get("path", [""])[0], _int(q, "offset")))
            if url.path == "/api/glb":
                opts = {k: v[0] for k, v in q.items() if k != "path"}
                return self._send(200, site.glb(q.get("path", [""])[0], opts),
                                  "model/gltf-binary")
            if url.path == "/api/bytes":
                return self._send(200, site.raw(q.get("path", [""])[0], _int(q, "offset", 0),
                                                _int(q, "length", 4096)),
                                  "application/octet-stream")
            if url.path.startswith("/api/"):
                raise ApiError(404, "NotFound", f"no endpoint {url.path}")
            return self._static(url.path)
        except ApiError as e:
            return self._json(e.status, e.body)
        except OSError as e:
            return self._json(404 if isinstance(e, FileNotFoundError) else 500,
                              {"error": type(e).__name__, "message": str(e)})
        except Exception as e:  # noqa: BLE001 - a bad file must not kill the server
            return self._json(500, {"error": "InternalError",
                                    "message": f"{type(e).__name__}: {e}"})

    def _static(self, path: str) -> None:
        if path in ("", "/"):
            path = "/index.html"
        if path.startswith("/vendor/"):
            base = vendor_dir()
            if base is None:
                raise ApiError(404, "NotFound", "three.js is not installed: run "
                               "npm ci --prefix tools/viewer")
            rel = path[len("/vendor/"):]
        else:
            base, rel = STATIC, path.lstrip("/")
        if ".." in rel.split("/"):
            raise ApiError(403, "Forbidden", path)
        full = (base / rel).resolve()
        if not full.is_file() or base.resolve() not in full.parents:
            raise ApiError(404, "NotFound", path)
        ctype = mimetypes.guess_type(full.name)[0] or "application/octet-stream"
        if full.suffix == ".js":
            ctype = "text/javascript"
        self._send(200, full.read_bytes(), ctype)


def make_server(root: str | os.PathLike, *, host: str = "127.0.0.1", port: int = 0,
                limits: Limits = DEFAULT_LIMITS) -> ThreadingHTTPServer:
    """A server for ``root`` (not yet serving); ``port=0`` picks a free port."""
    site = Site(root, limits)
    handler = type("SiteHandler", (Handler,), {"site": site})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server


def serve(root: str | os.PathLike, *, host: str = "127.0.0.1", port: int = 8765,
          open_browser: bool = True, limits: Limits = DEFAULT_LIMITS, out=None) -> int:
    """Serve until Ctrl-C; prints the address."""
    import sys
    server = make_server(root, host=host, port=port, limits=limits)
    url = f"http://{server.server_address[0]}:{server.server_address[1]}/"
    print(f"potsherd view: serving {root} at {url} (Ctrl-C to stop)", file=out or sys.stdout,
          flush=True)
    if vendor_dir() is None:
        print("potsherd view: three.js not installed (npm ci --prefix tools/viewer): the 3D "
              "view is off, the tree and hex panes work", file=out or sys.stderr, flush=True)
    if open_browser:
        import webbrowser
        threading.Timer(0.3, webbrowser.open, (url,)).start()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
