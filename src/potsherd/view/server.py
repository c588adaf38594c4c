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
import mimetypes
import os
import secrets
import selectors
import socket
import sys
import threading
import time
from collections import OrderedDict, deque
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

from ..core.errors import FormatError
from ..core.limits import DEFAULT_LIMITS, Limits
from .confine import Folder, Refused, shown, split_relative
from .tree import DocTree

STATIC = Path(__file__).resolve().parent / "static"
#: three.js copied into the package at build time (see setup.py)
PACKAGED_VENDOR = Path(__file__).resolve().parents[1] / "_vendor" / "viewer"
MAX_BYTES = 65536
MAX_INT = 1 << 62              #: larger offsets/lengths are a 400, not an overflow
CACHE = 8                      #: decoded documents kept (the viewer asks for one file many times)
DOC_CACHE_BYTES = 256 << 20    #: ... and at most this many input bytes of them
GLB_CACHE_BYTES = 64 << 20     #: converted results kept, in bytes (one entry at most a quarter)
DECODES = 2                    #: documents decoded at once (the rest wait)
CONVERSIONS = 2                #: glTF conversions at once (the rest wait)
FAILED_KEPT = 64               #: refusals remembered (a failing file is not decoded again)
WAIT_FOR_WORK = 120.0          #: seconds a request waits for a conversion slot before a 503
TOKEN_PARAM, TOKEN_HEADER, TOKEN_COOKIE = "token", "X-Potsherd-Token", "potsherd_token"
#: declared ``str`` options that are plain text, not file names; every other ``str``
#: option is treated as a file (a new codec's option is confined unless listed here)
TEXT_OPTIONS = frozenset({"name", "moveable"})
#: file-valued options that name a folder rather than a file
FOLDER_OPTIONS = frozenset({"data_root"})
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


class RemoteBindRefused(ValueError):
    """A non-loopback address without ``allow_remote`` (a usage error)."""


class ApiError(Exception):
    def __init__(self, status: int, kind: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status, self.body = status, {"error": kind, "message": message, **extra}


_KINDS = {400: "BadRequest", 403: "Forbidden", 404: "NotFound"}


def _refused(e: Refused) -> ApiError:
    return ApiError(e.status, _KINDS.get(e.status, "Forbidden"), str(e))


def vendor_dir() -> Path | None:
    """The folder holding ``three/build/three.module.js``: ``POTSHERD_VIEWER_MODULES``,
    the copy inside the installed package, or a checkout's ``tools/viewer/node_modules``
    (``npm ci --prefix tools/viewer``).  None: not available."""
    env = os.environ.get("POTSHERD_VIEWER_MODULES")
    candidates = [Path(env)] if env else []
    candidates.append(PACKAGED_VENDOR)
    candidates.append(Path(__file__).resolve().parents[3] / "tools" / "viewer" / "node_modules")
    for c in candidates:
        if (c / "three" / "build" / "three.module.js").is_file():
            return c
    return None


def three_missing() -> str:
    """Why three.js is not available and how to get it (checkout or installed package)."""
    if (Path(__file__).resolve().parents[3] / "tools" / "viewer" / "package.json").is_file():
        return "three.js not installed in this checkout: run npm ci --prefix tools/viewer"
    return ("this potsherd package was built without three.js (npm was missing at build "
            "time): reinstall from a source tree with npm available, or set "
            "POTSHERD_VIEWER_MODULES to a node_modules folder holding the npm package three")


def _read_fd(fd: int, limit: int) -> bytes:
    size = os.fstat(fd).st_size
    if size > limit:
        raise ApiError(422, "LimitError", f"input of {size} bytes exceeds the limit of {limit}")
    chunks, left = [], size
    while left > 0:
        b = os.read(fd, min(left, 1 << 20))
        if not b:
            break
        chunks.append(b)
        left -= len(b)
    return b"".join(chunks)


class Site:
    """What one server serves: a folder (or one file), its limits and small caches."""

    def __init__(self, root: str | os.PathLike, limits: Limits = DEFAULT_LIMITS, *,
                 isolate: bool | None = None, convert_timeout: float | None = None,
                 convert_memory: int | None = None) -> None:
        """``isolate`` (default on POSIX) converts in child processes under
        ``convert_memory`` bytes of address space and ``convert_timeout`` seconds."""
        path = Path(root)
        real = Path(os.path.realpath(path))
        if real.is_file():
            folder, self.single = real.parent, real.name
        elif real.is_dir():
            folder, self.single = real, None
        else:
            raise FileNotFoundError(f"{root}: no such file or folder")
        self.root = Folder(folder)
        self.folder = self.root.path
        self.limits = limits
        self._docs: OrderedDict = OrderedDict()
        self._glbs: OrderedDict = OrderedDict()
        self._glb_bytes = 0
        self._lock = threading.Lock()
        self._flights: dict = {}
        self._failed: OrderedDict = OrderedDict()
        self.workers = None
        if isolate if isolate is not None else os.name == "posix":
            from . import worker
            self.workers = worker.Workers(
                as_limit=convert_memory or worker.AS_LIMIT,
                timeout=convert_timeout or worker.TIMEOUT, keep=CONVERSIONS)
        self.decoding = threading.BoundedSemaphore(DECODES)
        self.converting = threading.BoundedSemaphore(CONVERSIONS)

    # --- paths ----------------------------------------------------------
    def open(self, rel: str | None) -> tuple[int, str]:
        """A descriptor of ``rel`` inside the served folder and its normalised relative
        path, or an :class:`ApiError` (400/403/404)."""
        if not rel:
            raise ApiError(400, "BadRequest", "missing path parameter")
        try:
            parts = split_relative(rel)
            norm = "/".join(parts)
            if self.single is not None and norm != self.single:
                raise ApiError(403, "Forbidden", f"{shown(rel)}: not the served file")
            return self.root.open(norm), norm
        except Refused as e:
            raise _refused(e) from None

    def resolve(self, rel: str | None) -> Path:
        """The absolute path of a served file (checked by opening it)."""
        fd, norm = self.open(rel)
        os.close(fd)
        return self.root.real(norm)

    def close(self) -> None:
        if self.workers is not None:
            self.workers.close()
        self.root.close()

    def scrub(self, text: str) -> str:
        """``text`` with the served folder's absolute path made relative."""
        return text.replace(str(self.folder) + os.sep, "").replace(str(self.folder), ".")

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
                if len(names) > 200_000:
                    break
        for rel in names:
            rel = rel.replace(os.sep, "/")
            try:
                fd = self.root.open(rel)
            except Refused:
                skipped += 1
                continue
            try:
                head = os.read(fd, 64)
                size = os.fstat(fd).st_size
                codec = registry.detect(head, str(self.folder / rel))
            except (OSError, FormatError):
                skipped += 1
                continue
            finally:
                os.close(fd)
            out.append({"path": rel, "size": size, "format": codec.name, "family": codec.family})
        return {"root": self.folder.name, "files": out, "skipped": skipped}

    # --- shared work ------------------------------------------------------
    def _once(self, key: Any, cache_get, compute, slots: threading.BoundedSemaphore):
        """``compute()`` under the conversion semaphore, once per key at a time:
        concurrent requests for the same key wait for the first one's result."""
        while True:
            failed = self._failed.get(key)
            if failed is not None:   # a file that failed fails again without more work
                raise ApiError(failed.status, failed.body["error"], failed.body["message"],
                               **{k: v for k, v in failed.body.items()
                                  if k not in ("error", "message")})
            hit = cache_get(key)
            if hit is not None:
                return hit
            with self._lock:
                flight = self._flights.get(key)
                mine = flight is None
                if mine:
                    flight = self._flights[key] = threading.Event()
            if not mine:
                if not flight.wait(WAIT_FOR_WORK):
                    raise ApiError(503, "Busy", "the server is busy; try again")
                if key in self._failed:
                    continue   # raised above
                hit = cache_get(key)
                if hit is not None:
                    return hit
                continue  # the first one was not cached (too large): try ourselves
            try:
                if not slots.acquire(timeout=WAIT_FOR_WORK):
                    raise ApiError(503, "Busy", "the server is busy; try again")
                try:
                    return compute()
                except ApiError as e:
                    if e.status == 422:
                        with self._lock:
                            self._failed[key] = e
                            while len(self._failed) > FAILED_KEPT:
                                self._failed.popitem(last=False)
                    raise
                finally:
                    slots.release()
            finally:
                with self._lock:
                    self._flights.pop(key, None)
                flight.set()

    # --- documents --------------------------------------------------------
    def _doc_get(self, key):
        with self._lock:
            hit = self._docs.get(key)
            if hit is not None:
                self._docs.move_to_end(key)
            return hit

    def document(self, rel: str):
        """(document, DocTree, size, key) of a file, decoded once with byte spans."""
        from .. import registry
        fd, norm = self.open(rel)
        try:
            st = os.fstat(fd)
            key = (norm, st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)

            def compute():
                data = _read_fd(fd, self.limits.max_input)
                try:
                    doc, spans = registry.decode_with_spans(
                        data, path=str(self.root.real(norm)), limits=self.limits)
                except FormatError as e:
                    raise ApiError(422, type(e).__name__, self.scrub(str(e)), **_where(e)) \
                        from None
                except (MemoryError, RecursionError):
                    raise ApiError(422, "LimitError", f"{norm}: too large or deep to open") \
                        from None
                tree = DocTree(doc.root, spans, doc.meta.get("text_encoding",
                                                             doc.codec.text_encoding))
                entry = (doc, tree, len(data), key)
                with self._lock:
                    self._docs[key] = entry
                    while len(self._docs) > CACHE or (
                            len(self._docs) > 1 and
                            sum(e[2] for e in self._docs.values()) > DOC_CACHE_BYTES):
                        self._docs.popitem(last=False)
                return entry

            return self._once(("doc", key), lambda k: self._doc_get(k[1]), compute,
                              self.decoding)
        finally:
            os.close(fd)

    def doc_json(self, rel: str, node: str, offset: int) -> dict:
        doc, tree, size, key = self.document(rel)
        try:
            level = tree.node(node or "/root", offset=offset)
        except (KeyError, IndexError, ValueError, TypeError):
            raise ApiError(404, "NotFound", f"no such node in {key[0]}") from None
        codec = doc.codec
        try:
            opaque = codec.opaque_bytes(doc)
        except Exception:  # noqa: BLE001 - a report, not a decode
            opaque = None
        return {"path": key[0], "format": codec.name, "family": codec.family,
                "size": size, "warnings": [self.scrub(str(w)) for w in doc.warnings],
                "opaque": opaque, "trailing": len(doc.trailing),
                "exportable": codec.to_scene is not None, "tree": level}

    def field(self, rel: str, offset: int) -> dict:
        _, tree, _, _ = self.document(rel)
        hit = tree.field_at(offset)
        if hit is None:
            raise ApiError(404, "NotFound", f"no decoded field holds byte {offset}")
        return hit

    # --- conversion ---------------------------------------------------------
    def confine_option(self, name: str, value: str) -> str:
        """A file-valued option's value (relative to the served folder) as the absolute
        path of a regular file (or folder) inside it, or an :class:`ApiError`."""
        folder = name in FOLDER_OPTIONS
        rel, sep, member = value.partition("::")  # ARCHIVE::member names a member
        if folder and sep:
            raise ApiError(400, "BadRequest", f"option {name}: a folder takes no ::member")
        if "\0" in member:
            raise ApiError(400, "BadRequest", f"option {name}: malformed value")
        try:
            parts = split_relative(rel)
            fd = self.root.open("/".join(parts), folder=folder)
        except Refused as e:
            raise ApiError(e.status, _KINDS.get(e.status, "Forbidden"),
                           f"option {name}: {e.reason}") from None
        if fd >= 0:
            os.close(fd)
        return str(self.folder.joinpath(*parts)) + sep + member

    def checked_options(self, codec: Any, given: dict) -> dict:
        """``given`` (text from the query) as the codec's declared export options only,
        file-valued ones confined to the served folder."""
        from ..registry import coerce_options
        declared = {o.name: o for o in codec.export_options}
        for name in given:
            if name not in declared:
                valid = ", ".join(sorted(declared)) or "none"
                raise ApiError(400, "BadRequest", f"unknown option {name[:64]!r} for "
                               f"{codec.name}; valid options: {valid}")
        out = {}
        for name, value in given.items():
            opt = declared[name]
            if opt.type is str and name not in TEXT_OPTIONS:
                if value == "":
                    continue
                value = self.confine_option(name, value)
            out[name] = value
        try:
            out = coerce_options(declared.values(), out, what=codec.name)
        except ValueError as e:
            raise ApiError(400, "BadRequest", str(e)) from None
        if "data_root" in declared:  # references resolve inside the served folder
            out.setdefault("data_root", str(self.folder))
        return out

    def _glb_get(self, key):
        with self._lock:
            hit = self._glbs.get(key)
            if hit is not None:
                self._glbs.move_to_end(key)
            return hit

    def glb(self, rel: str, options: dict) -> bytes:
        from ..errors import SceneExportError
        from ..export.gltf import document_scene, glb_bytes, scene_to_gltf
        doc, _, _, dkey = self.document(rel)
        opts = self.checked_options(doc.codec, options)
        key = ("glb", dkey, tuple(sorted((k, repr(v)) for k, v in opts.items())))

        def isolated() -> bytes:
            from .worker import WorkerError
            fd, norm = self.open(rel)
            try:
                st = os.fstat(fd)
                if (norm, st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size) != dkey:
                    raise ApiError(409, "Conflict", f"{norm}: changed while opening; try again")
                data = _read_fd(fd, self.limits.max_input)
            finally:
                os.close(fd)
            try:
                return self.workers.convert({
                    "data": data, "path": str(self.root.real(norm)), "options": opts,
                    "limits": self.limits, "folder": str(self.folder), "name": norm})
            except WorkerError as e:
                generic = e.kind in ("LimitError", "SceneExportError") and not e.extra
                raise ApiError(e.status, e.kind, f"{norm}: {e}" if generic else str(e),
                               **e.extra) from None

        def compute():
            if self.workers is not None:
                data = isolated()
            else:
                data = in_process()
            if len(data) <= GLB_CACHE_BYTES // 4:
                with self._lock:
                    self._glbs[key] = data
                    self._glb_bytes += len(data)
                    while self._glb_bytes > GLB_CACHE_BYTES:
                        _, old = self._glbs.popitem(last=False)
                        self._glb_bytes -= len(old)
            return data

        def in_process() -> bytes:
            try:
                scene = document_scene(doc, opts)
                scene.warnings[:] = [self.scrub(str(w)) for w in scene.warnings]
                gl, binary = scene_to_gltf(scene, True)
                from .worker import scrub_json
                data = glb_bytes(scrub_json(gl, str(self.folder)), binary)
            except SceneExportError:
                print(f"potsherd view: internal error converting {dkey[0]}", file=sys.stderr)
                raise ApiError(422, "SceneExportError", f"{dkey[0]}: internal error in the "
                               f"{doc.codec.name} export (see the server's console)") from None
            except FormatError as e:
                raise ApiError(422, type(e).__name__, self.scrub(str(e)), **_where(e)) \
                    from None
            except (MemoryError, RecursionError):
                raise ApiError(422, "LimitError", f"{dkey[0]}: too large or deep to convert") \
                    from None
            return data

        return self._once(key, self._glb_get, compute, self.converting)

    def relative_spec(self, spec: str) -> str | None:
        """An absolute palette spec (``FILE`` or ``ARCHIVE::member``) as a ``palette=``
        value relative to the served folder; None when it is outside (not offered)."""
        path, sep, member = spec.partition("::")
        base = str(self.folder) + os.sep
        if path.startswith(base):          # as the finder names it
            path = path[len(base):]
        elif os.path.isabs(path):          # outside the served folder: not offered
            return None
        # (the model's extras already name it relative: the answers are scrubbed)
        try:
            return "/".join(split_relative(path.replace(os.sep, "/"))) + sep + member
        except Refused:
            return None

    def palettes(self, rel: str, options: dict) -> dict:
        """Which palette drew each bitmap of ``rel``'s model and the others that hold
        its index (read from the converted model's image extras)."""
        doc = self.document(rel)[0]
        if doc.format == "pbmp":
            return self.texture(rel, options)[1]
        data = self.glb(rel, options)
        try:
            n = int.from_bytes(data[12:16], "little")
            gl = json.loads(data[20:20 + n])
        except (ValueError, UnicodeDecodeError):
            gl = {}
        images, choices = [], []
        for im in gl.get("images") or []:
            ex = im.get("extras") or {}
            if "palette" not in ex:
                continue
            used = ex["palette"]
            used_rel = "" if used == "grey ramp" else self.relative_spec(str(used))
            alts = [a for a in (self.relative_spec(str(x)) for x in
                                ex.get("paletteAlternatives") or []) if a]
            images.append({"image": im.get("name", ""), "palette": used_rel,
                           "paletteIndex": ex.get("paletteIndex"), "alternatives": alts})
            for c in ([used_rel] if used_rel else []) + alts:
                if c not in choices:
                    choices.append(c)
        return {"palette": options.get("palette", ""), "images": images, "choices": choices}

    def texture(self, rel: str, options: dict) -> tuple[bytes, dict]:
        """(PNG, palette report) of a Phoenix bitmap drawn by the engine's palette rule
        (:func:`potsherd.formats.darkstar.textures.draw_bitmap`)."""
        from ..formats.darkstar.textures import PaletteFinder, draw_bitmap
        doc, _, _, key = self.document(rel)
        if doc.format != "pbmp":
            raise ApiError(400, "BadRequest", f"{key[0]}: not a Phoenix bitmap (no texture view)")
        for name in options:
            if name != "palette":
                raise ApiError(400, "BadRequest", f"unknown option {name[:64]!r} for the "
                               "texture view; valid options: palette")
        given = options.get("palette", "")
        palette = self.confine_option("palette", given) if given else ""
        if not self.converting.acquire(timeout=WAIT_FOR_WORK):
            raise ApiError(503, "Busy", "the server is busy; try again")
        try:
            warnings: list[str] = []
            finder = PaletteFinder(str(self.root.real(key[0])), palette=palette,
                                   data_root=str(self.folder), limits=self.limits,
                                   warnings=warnings)
            rgba, choice = draw_bitmap(doc.root, finder)
            from PIL import Image
            buf = io.BytesIO()
            Image.fromarray(rgba, "RGBA").save(buf, "PNG")
        except FormatError as e:
            raise ApiError(422, type(e).__name__, self.scrub(str(e)), **_where(e)) from None
        finally:
            self.converting.release()
        used = self.relative_spec(choice.spec) if choice.spec else ""
        alts = [a for a in (self.relative_spec(x) for x in choice.alternatives) if a]
        report = {"palette": given, "warnings": [self.scrub(w) for w in warnings],
                  "images": [{"image": key[0].rsplit("/", 1)[-1], "palette": used,
                              "paletteIndex": choice.index, "alternatives": alts}],
                  "choices": ([used] if used else []) + [a for a in alts if a != used]}
        return buf.getvalue(), report

    def raw(self, rel: str, offset: int, length: int) -> bytes:
        fd, _ = self.open(rel)
        try:
            return os.pread(fd, min(length, MAX_BYTES), offset) if hasattr(os, "pread") \
                else _seek_read(fd, offset, min(length, MAX_BYTES))
        finally:
            os.close(fd)


def _seek_read(fd: int, offset: int, n: int) -> bytes:
    os.lseek(fd, offset, os.SEEK_SET)
    return os.read(fd, n)


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
    text = vals[0].strip()
    if not text.isdigit() or len(text) > 19 or int(text) > MAX_INT:
        raise ApiError(400, "BadRequest", f"{name} must be an integer from 0 to {MAX_INT}")
    return int(text)


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
            print(f"potsherd view: internal error ({type(e).__name__}) on {url.path}",
                  file=sys.stderr)
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
          allow_remote: bool = False, out=None) -> int:
    """Serve until Ctrl-C; prints the address (with the token when remote)."""
    server = make_server(root, host=host, port=port, limits=limits, allow_remote=allow_remote)
    say = out or sys.stdout
    if server.remote:
        print(f"potsherd view: WARNING: serving on {host}, reachable from other machines; "
              "anyone with the address and token below can read the served folder",
              file=sys.stderr, flush=True)
    print(f"potsherd view: serving {root} at {server.url} (Ctrl-C to stop)", file=say,
          flush=True)
    if vendor_dir() is None:
        print(f"potsherd view: {three_missing()}: the 3D view is off, the tree and hex panes "
              "work", file=out or sys.stderr, flush=True)
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
