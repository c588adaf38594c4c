"""The viewer's files: a :class:`Site` serves one folder (or one file) to the page,
opening paths confined to it, decoding documents and converting them to glTF under
semaphores with byte-bounded caches (conversions in worker processes,
:mod:`.worker`), and answering the API's questions about them; :mod:`.server`
speaks HTTP in front of it."""
from __future__ import annotations

import io
import json
import logging
import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

from ..core.errors import FormatError
from ..core.limits import DEFAULT_LIMITS, Limits
from .confine import Folder, Refused, shown, split_relative
from .tree import DocTree

#: internal errors go to the log (stderr unless the application configures it)
_log = logging.getLogger("potsherd.view")

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
#: declared ``str`` options that are plain text, not file names; every other ``str``
#: option is treated as a file (a new codec's option is confined unless listed here)
TEXT_OPTIONS = frozenset({"name", "moveable"})
#: file-valued options that name a folder rather than a file
FOLDER_OPTIONS = frozenset({"data_root"})


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
    def _recent(self, cache: OrderedDict, key):
        """``cache[key]`` marked as just used, or None (a least-recently-used cache)."""
        with self._lock:
            hit = cache.get(key)
            if hit is not None:
                cache.move_to_end(key)
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

            return self._once(("doc", key), lambda k: self._recent(self._docs, k[1]), compute,
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
                _log.error("potsherd view: internal error converting %s", dkey[0])
                raise ApiError(422, "SceneExportError", f"{dkey[0]}: internal error in the "
                               f"{doc.codec.name} export (see the server's console)") from None
            except FormatError as e:
                raise ApiError(422, type(e).__name__, self.scrub(str(e)), **_where(e)) \
                    from None
            except (MemoryError, RecursionError):
                raise ApiError(422, "LimitError", f"{dkey[0]}: too large or deep to convert") \
                    from None
            return data

        return self._once(key, lambda k: self._recent(self._glbs, k), compute, self.converting)

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
