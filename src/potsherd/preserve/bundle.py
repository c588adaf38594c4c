"""``potsherd bundle``: a game folder as a BagIt package (RFC 8493) for an archive.

The package::

    PACKAGE/bagit.txt, bag-info.txt, manifest-sha256.txt, tagmanifest-sha256.txt
    PACKAGE/data/master/<path>            every file of the game, untouched
    PACKAGE/data/access/<path>.glb        models, levels, terrain (glTF)
    PACKAGE/data/access/<path>/<name>.png textures
    PACKAGE/data/access/<path>.csv        tables (codecs with ``to_csv``)
    PACKAGE/data/access/<path>.json       everything else potsherd reads (lossless JSON)
    PACKAGE/data/metadata/<path>.json     what the file is: format id, version, size,
                                          SHA-256, basis, what the access copies lost

Which access copies a file gets is read from its codec's declared hooks
(``to_scene``, ``textures``, ``to_csv``), never from a list of formats.

Each file is one job for the conversion batch's worker processes
(:func:`potsherd.convert.run_in_workers`); a job writes the master, the
access copies and, last, the metadata record, each atomically.  A file whose
record exists is finished: ``resume`` skips it.  The manifest is written at the
end from the records (the hashes the jobs computed while copying), streamed, so
memory stays flat in the number of files and no payload byte is read twice.
The tag files follow BagIt 0.97 as the Library of Congress ``bagit`` library
writes them; :func:`verify` validates the package with that library.
"""
from __future__ import annotations

import hashlib
import json
import os
import stat
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import orjson

from .._version import __version__
from ..core.errors import FormatError
from ..core.fileio import (TEMP_PREFIX, TEMP_SUFFIX, atomic_write, forget_folders, owned_open,
                           owned_write)
from ..core.limits import DEFAULT_LIMITS, Limits

#: written at the start, removed when the package is complete
INCOMPLETE = "potsherd-bundle-incomplete.json"
MANIFEST = "manifest-sha256.txt"
TAGMANIFEST = "tagmanifest-sha256.txt"
BAGIT_TXT = "BagIt-Version: 0.97\nTag-File-Character-Encoding: UTF-8\n"
#: files per batch handed to the workers: bounds the plan held in memory
BATCH = 1024
_COPY_CHUNK = 1 << 20


class BundleError(Exception):
    """A package that cannot be made or resumed as asked (usage-level)."""


@dataclass
class BundleSummary:
    files: int = 0
    done: int = 0
    skipped_finished: int = 0
    failed: int = 0
    identified: int = 0
    access_copies: int = 0
    payload_bytes: int = 0
    payload_files: int = 0
    seconds: float = 0.0
    failures: list = field(default_factory=list)


def _manifest_path(rel: str) -> str:
    """A payload path as a BagIt manifest line names it (CR, LF and % encoded)."""
    return rel.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _walk(game_dir: str) -> Iterator[str]:
    """Regular files under ``game_dir`` (sorted, relative, '/'-separated);
    symbolic links are not followed (nothing outside the folder is read)."""
    for root, dirs, files in os.walk(game_dir):
        dirs[:] = sorted(d for d in dirs if not os.path.islink(os.path.join(root, d)))
        for name in sorted(files):
            full = os.path.join(root, name)
            try:
                st = os.lstat(full)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                yield os.path.relpath(full, game_dir).replace(os.sep, "/")


def _record_path(package: str, rel: str) -> str:
    return os.path.join(package, "data", "metadata", *rel.split("/")) + ".json"


def _copy_times(fd: int, dst: str) -> None:
    """The master keeps the original's permission bits and times (extended
    attributes are not copied)."""
    st = os.fstat(fd)
    os.chmod(dst, stat.S_IMODE(st.st_mode))
    os.utime(dst, ns=(st.st_atime_ns, st.st_mtime_ns))


def _copy_master(src: str, dst: str, limits: Limits) -> tuple[str, int, bytes | None]:
    """Copy ``src`` to ``dst`` atomically (timestamps kept), hashing it on the
    way: ``(sha256, size, the bytes)``; a file over the input limit is copied
    in chunks and its bytes are not returned (it is not identified)."""
    with open(src, "rb") as fi:
        size = os.fstat(fi.fileno()).st_size
        if size <= limits.max_input:
            data = fi.read(size + 1)
            if len(data) <= limits.max_input:
                owned_write(dst, data)
                _copy_times(fi.fileno(), dst)
                return hashlib.sha256(data).hexdigest(), len(data), data
            fi.seek(0)
        h = hashlib.sha256()
        total = 0
        with owned_open(dst, "master") as fo:
            for chunk in iter(lambda: fi.read(_COPY_CHUNK), b""):
                h.update(chunk)
                fo.write(chunk)
                total += len(chunk)
            fo.flush()
            _copy_times(fi.fileno(), fo.name)
    return h.hexdigest(), total, None


def _write(path: str, data: bytes) -> dict:
    owned_write(path, data)
    return {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}


def _safe_name(name: str) -> str:
    from ..export.textures import _safe
    return _safe(name)


def access_copies(doc: Any, base: str) -> tuple[list[tuple[str, str, bytes]], list[str]]:
    """The access copies of a decoded document, from its codec's declared hooks:
    ``[(kind, path relative to the access folder, bytes)]`` and the warnings
    saying what they lost.  ``base`` is the master's relative path."""
    codec = doc.codec
    out: list[tuple[str, str, bytes]] = []
    warnings: list[str] = []
    if codec.to_scene is not None:
        from ..export import gltf
        try:
            scene = gltf.document_scene(doc, None)
            out.append(("glb", f"{base}.glb", gltf.glb_bytes(*gltf.scene_to_gltf(scene, True))))
            warnings += [f"glb: {w}" for w in scene.warnings]
        except gltf.NoSceneError as e:
            warnings.append(f"glb: none ({e})")
    if codec.textures is not None:
        from ..export.textures import _png_bytes
        seen: set[str] = set()
        for name, image in codec.textures(doc):
            stem = _safe_name(os.path.splitext(os.path.basename(str(name)))[0] or "texture")
            png, n = f"{stem}.png", 1
            while png in seen:
                n += 1
                png = f"{stem}-{n}.png"
            seen.add(png)
            out.append(("png", f"{base}/{png}", _png_bytes(image)))
    to_csv = getattr(codec, "to_csv", None)
    if to_csv is not None:
        text = to_csv(doc)
        out.append(("csv", f"{base}.csv", text.encode("utf-8") if isinstance(text, str)
                    else bytes(text)))
    if not out and codec.can_json and not hasattr(codec, "member_names"):
        # formats with no other view: their lossless readable JSON
        out.append(("json", f"{base}.json", doc.dumps("readable").encode("utf-8")))
    return out, warnings


def bundle_file(rel: str, package: str, options: dict) -> tuple[str, Any]:
    """One file's job (in a worker): master, access copies, then its record.
    Never raises: ``("ok"|"failed"|"fatal", summary or message)``."""
    from .identify import identify_bytes
    try:
        return "ok", _bundle_file(rel, package, options, identify_bytes)
    except KeyboardInterrupt:
        raise
    except OSError as e:
        return "fatal", f"{rel}: {type(e).__name__}: {e}"
    except Exception as e:  # noqa: BLE001 - one file's failure is reported, the batch goes on
        return "failed", f"{rel}: {type(e).__name__}: {e}"


def _bundle_file(rel: str, package: str, options: dict, identify_bytes: Callable) -> dict:
    limits: Limits = options.get("limits") or DEFAULT_LIMITS
    src = os.path.join(options["game_dir"], *rel.split("/"))
    master = os.path.join(package, "data", "master", *rel.split("/"))
    sha, size, data = _copy_master(src, master, limits)
    record: dict = {"potsherd": __version__, "path": rel, "size": size, "sha256": sha,
                    "master": f"data/master/{rel}", "access": [], "warnings": []}
    ident: dict = {}
    doc = None
    if data is None:
        ident = {"format": None,
                 "error": f"not identified: {size} bytes exceed the input limit of "
                          f"{limits.max_input}"}
    else:
        # access copies need the decoded document; without them the fast mode
        # names formats by signature or extension alone (no decode)
        deep = options.get("deep", True) or options.get("access", True)
        found = identify_bytes(data, src, deep=deep, limits=limits)
        doc = found.__dict__.pop("_doc", None)
        ident = dict(found.__dict__)
        if found.format is not None and found.valid and doc is not None:
            doc.source = src      # referenced files resolve in the game tree
        del data
    record.update({k: ident.get(k) for k in ("family", "format", "version", "id", "basis",
                                              "valid", "error", "note", "opaque_bytes")})
    record["warnings"] = list(ident.get("warnings") or [])
    if doc is not None and hasattr(doc.codec, "member_names"):
        record["members"] = list(doc.codec.member_names(doc))
    if doc is not None and options.get("access", True):
        try:
            copies, lost = access_copies(doc, rel)
        except FormatError as e:
            copies, lost = [], [f"access copy failed: {type(e).__name__}: {e}"]
        except Exception as e:  # noqa: BLE001 - the master is kept; the record says why
            copies, lost = [], [f"access copy failed: {type(e).__name__}: {e}"]
        record["warnings"] += lost
        for kind, path, blob in copies:
            where = os.path.join(package, "data", "access", *path.split("/"))
            record["access"].append({"kind": kind, "path": f"data/access/{path}",
                                     **_write(where, blob)})
    del doc
    text = orjson.dumps(record, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)
    _write(_record_path(package, rel), text)
    return {"identified": record["format"] is not None, "access": len(record["access"])}


def _batches(items: Iterator[str], n: int) -> Iterator[list[str]]:
    batch: list[str] = []
    for it in items:
        batch.append(it)
        if len(batch) >= n:
            yield batch
            batch = []
    if batch:
        yield batch


def bundle(game_dir: str, package: str, *, resume: bool = False, access: bool = True,
           workers: int = 1, limits: Limits = DEFAULT_LIMITS, deep: bool = True,
           progress: Callable[[str, str, Any], None] | None = None,
           stop_after: int | None = None) -> BundleSummary:
    """Bag ``game_dir`` into ``package``.  ``resume`` continues a package an
    interruption left incomplete, skipping finished files.  ``deep=False``
    (with ``access=False``): identify without decoding (formats without a
    signature by extension only, versions only from signatures).  ``stop_after``
    (tests): stop as an interruption would after that many new files."""
    t0 = time.perf_counter()
    game_dir = os.path.abspath(game_dir)
    package = os.path.abspath(package)
    if not os.path.isdir(game_dir):
        raise BundleError(f"{game_dir}: not a folder")
    if package == game_dir or package.startswith(game_dir + os.sep):
        raise BundleError("the package cannot be inside the game folder it bags")
    marker = os.path.join(package, INCOMPLETE)
    if os.path.exists(package) and os.listdir(package):
        if not resume:
            raise BundleError(f"{package} exists; --resume continues an interrupted bundle")
        if not os.path.exists(marker):
            raise BundleError(f"{package} is not an incomplete potsherd bundle")
        with open(marker, encoding="utf-8") as f:
            state = json.load(f)
        if os.path.abspath(state.get("game_dir", "")) != game_dir:
            raise BundleError(f"{package} bags {state.get('game_dir')}, not {game_dir}")
        if bool(state.get("access", True)) != access:
            raise BundleError(f"{package} was started {'with' if state.get('access', True) else 'without'} "
                              "access copies; resume it the same way")
    os.makedirs(package, exist_ok=True)
    atomic_write(marker, json.dumps({"game_dir": game_dir, "access": access,
                                     "potsherd": __version__}).encode("utf-8"))
    for name in (MANIFEST, TAGMANIFEST, "bag-info.txt", "bagit.txt"):
        try:   # a resumed package is not a bag until it is complete again
            os.remove(os.path.join(package, name))
        except FileNotFoundError:
            pass
    if resume:
        _remove_leftovers(package)
    forget_folders()
    summary = BundleSummary()
    options = {"game_dir": game_dir, "access": access, "limits": limits, "deep": deep}

    def todo() -> Iterator[str]:
        for rel in _walk(game_dir):
            summary.files += 1
            if os.path.exists(_record_path(package, rel)):
                summary.skipped_finished += 1
                continue
            yield rel

    new = 0
    for batch in _batches(todo(), BATCH):
        if stop_after is not None:
            batch = batch[:max(0, stop_after - new)]
            if not batch:
                break
        for rel, status, res in _run(batch, package, options, workers):
            if status == "ok":
                summary.done += 1
                summary.identified += bool(res["identified"])
                summary.access_copies += res["access"]
            else:
                summary.failed += 1
                summary.failures.append(res)
                if status == "fatal":
                    raise OSError(res)
            if progress is not None:
                progress(rel, status, res)
        new += len(batch)
        if stop_after is not None and new >= stop_after:
            summary.seconds = time.perf_counter() - t0
            return summary           # interrupted on purpose: the package stays incomplete
    if summary.failed:
        summary.seconds = time.perf_counter() - t0
        return summary               # incomplete: --resume retries the failed files
    _finish(package, game_dir, summary)
    os.remove(marker)
    summary.seconds = time.perf_counter() - t0
    return summary


#: a worker gets up to this many files (or bytes) per message: small files cost
#: less than the round trip between processes on a busy machine
CHUNK_FILES = 16
CHUNK_BYTES = 4 << 20


def bundle_chunk(rels: tuple, package: str, options: dict) -> tuple[str, list]:
    """Several files' jobs in one message: ``("ok", [(rel, status, result)])``."""
    return "ok", [(rel, *bundle_file(rel, package, options)) for rel in rels]


def _chunks(batch: list[str], game_dir: str) -> list[tuple]:
    out: list[tuple] = []
    cur: list[str] = []
    size = 0
    for rel in batch:
        try:
            n = os.path.getsize(os.path.join(game_dir, *rel.split("/")))
        except OSError:
            n = 0
        if cur and (len(cur) >= CHUNK_FILES or size + n > CHUNK_BYTES):
            out.append(tuple(cur))
            cur, size = [], 0
        cur.append(rel)
        size += n
    if cur:
        out.append(tuple(cur))
    return out


def _run(batch: list[str], package: str, options: dict, workers: int) -> Iterator[tuple]:
    if workers <= 1 or len(batch) == 1:
        for rel in batch:
            yield (rel, *bundle_file(rel, package, options))
        return
    from .. import registry
    from ..convert import run_in_workers
    registry.codecs()   # imported once here: every batch's forked workers inherit them
    plan = [(chunk, package) for chunk in _chunks(batch, options["game_dir"])]
    for chunk, status, res in run_in_workers(plan, "bundle", options, workers,
                                             job=bundle_chunk):
        if status == "ok":
            yield from res
        else:      # the worker died: every file of its chunk is reported failed
            for rel in chunk:
                yield rel, "failed", f"{rel}: {res}"


def _records(package: str) -> Iterator[tuple[str, dict]]:
    """Every metadata record (its path in the bag, the record), in sorted order."""
    top = os.path.join(package, "data", "metadata")
    for root, dirs, files in os.walk(top):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".json"):
                full = os.path.join(root, name)
                with open(full, "rb") as f:
                    raw = f.read()
                rel = os.path.relpath(full, package).replace(os.sep, "/")
                yield rel, raw


def _remove_leftovers(package: str) -> int:
    """Delete the temporary files of jobs killed mid-write (an interruption):
    they are not part of the package.  A master that only looks like one (it
    has a record) is kept."""
    removed = 0
    data = os.path.join(package, "data")
    for root, dirs, files in os.walk(data):
        for name in files:
            if not (name.startswith(TEMP_PREFIX) and name.endswith(TEMP_SUFFIX)):
                continue
            full = os.path.join(root, name)
            rel = os.path.relpath(full, os.path.join(data, "master"))
            if not rel.startswith(".." + os.sep) and \
                    os.path.exists(_record_path(package, rel.replace(os.sep, "/"))):
                continue
            os.remove(full)
            removed += 1
    return removed


def _finish(package: str, game_dir: str, summary: BundleSummary) -> None:
    """Write the manifest from the records (no payload byte read again) and the tag files."""
    total_bytes = total_files = 0
    with owned_open(os.path.join(package, MANIFEST), "manifest") as out:
        for rel, raw in _records(package):
            rec = json.loads(raw)
            lines = [(rec["sha256"], rec["master"], rec["size"])]
            lines += [(a["sha256"], a["path"], a["bytes"]) for a in rec.get("access", ())]
            lines.append((hashlib.sha256(raw).hexdigest(), rel, len(raw)))
            for digest, path, size in lines:
                out.write(f"{digest}  {_manifest_path(path)}\n".encode("utf-8"))
                total_bytes += size
                total_files += 1
    summary.payload_bytes, summary.payload_files = total_bytes, total_files
    import bagit
    info = {
        "Bag-Software-Agent": f"potsherd {__version__} (bagit {bagit.VERSION} layout)",
        "Bagging-Date": time.strftime("%Y-%m-%d"),
        "External-Description": "Game files as masters (data/master), access copies "
                                "(data/access: glTF, PNG, CSV, JSON) and per-file metadata "
                                "(data/metadata) made by potsherd",
        "External-Identifier": os.path.basename(game_dir.rstrip(os.sep)),
        "Payload-Oxum": f"{total_bytes}.{total_files}",
    }
    atomic_write(os.path.join(package, "bagit.txt"), BAGIT_TXT.encode("utf-8"))
    atomic_write(os.path.join(package, "bag-info.txt"),
                 "".join(f"{k}: {v}\n" for k, v in info.items()).encode("utf-8"))
    tags = []
    for name in ("bagit.txt", "bag-info.txt", MANIFEST):
        h = hashlib.sha256()
        with open(os.path.join(package, name), "rb") as f:
            for chunk in iter(lambda: f.read(_COPY_CHUNK), b""):
                h.update(chunk)
        tags.append(f"{h.hexdigest()}  {name}\n")
    atomic_write(os.path.join(package, TAGMANIFEST), "".join(tags).encode("utf-8"))


@dataclass
class VerifyResult:
    ok: bool
    problems: list[str]


def verify(package: str, *, workers: int = 1) -> VerifyResult:
    """Validate the package with the ``bagit`` library (every payload file's
    SHA-256 and the Payload-Oxum), naming each file that differs or is missing."""
    import bagit
    if os.path.exists(os.path.join(package, INCOMPLETE)):
        return VerifyResult(False, [f"{package}: an incomplete bundle (resume it with --resume)"])
    try:
        bag = bagit.Bag(package)
    except bagit.BagError as e:
        return VerifyResult(False, [str(e)])
    problems: list[str] = []
    try:
        bag.validate(processes=max(1, workers))
        return VerifyResult(True, [])
    except bagit.BagValidationError as e:
        problems = [str(d) for d in (getattr(e, "details", None) or ())] or [str(e)]
    if "Payload-Oxum" in bag.info and not any(":" in p and "data/" in p for p in problems):
        # the count-and-size check failed first, naming no file: validate again
        # without it, for bagit to name the missing, unexpected or altered files
        bag.info.pop("Payload-Oxum")
        try:
            bag.validate(processes=max(1, workers))
        except bagit.BagValidationError as e:
            problems += [str(d) for d in (getattr(e, "details", None) or ())]
    return VerifyResult(False, problems)
