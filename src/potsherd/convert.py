"""``potsherd convert``: to glTF, or between encodings of one family.

``potsherd convert IN OUT.glb`` converts one file (target from OUT's
extension or ``--to``).  ``potsherd convert SRC_DIR DST_DIR --to glb``
mirrors a tree: every file whose format can reach the target is converted in
parallel (``--jobs``), failures are listed at the end (exit code 1), and
every output is written atomically, so an interrupted batch leaves only
complete files.  With a game format as the target (``--to n3cplug``) the
tree's ``.glb``/``.gltf`` files are imported, each with its companion files
beside it; ``--like ORIGINALS_DIR`` pairs each with the original of the same
relative name (the folder the glTFs were exported from), whose format it takes
and whose fields glTF cannot express it keeps, so a whole exported folder
comes back byte for byte where it was not edited.
"""
from __future__ import annotations

import collections
import errno
import os
import signal
import time
from dataclasses import dataclass, field
from typing import Any, Iterator

from . import api
from .api import UsageError, display_path
from .core.errors import FormatError
from .core.fileio import remove_temporaries
from .errors import NoGeometryError

GLTF_TARGETS = ("glb", "gltf")

#: OS errors after which a batch stops at once (every later file would fail the same way)
FATAL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS})


def convert_file(src: str, dst: str, target: str, options: dict) -> dict:
    """Convert one file; returns a summary dict.  Raises FormatError on bad data,
    :class:`~potsherd.api.UsageError` for an undeclared option, OSError for the
    file system."""
    limits = api.make_limits(**(options.get("limits") or {}))
    given = options.get("scene_options") or {}
    if target not in GLTF_TARGETS and _is_gltf_name(src):     # a folder import
        from . import importer
        like = (options.get("like_of") or {}).get(src)
        try:
            summary = importer.import_gltf(src, dst, format=target or None, like=like,
                                           options=given, limits=limits)
        except importer.OptionError as e:
            raise UsageError(str(e)) from None
        summary["in_bytes"] = os.path.getsize(src)
        return summary
    data, doc = api.read_doc(src, limits=limits, format=options.get("format"),
                             params=options.get("params"))
    if target in GLTF_TARGETS:
        opts = api.scene_options(doc.codec, given, strict=options.get("strict_options", True))
        from .export import gltf
        scene = gltf.document_scene(doc, opts)
        _check_geometry(src, scene)
        summary = export_gltf(doc, dst, binary=(target == "glb"), options=None,
                                  scene=scene)
        summary["in_bytes"] = len(data)
        return summary
    from . import importer
    if importer.goes_through_scene(doc, target):       # e.g. IN.n3chr OUT.fbx
        summary = importer.convert_via_scene(doc, dst, target, given,
                                             version=options.get("target_version"))
        summary["in_bytes"] = len(data)
        return summary
    conv = doc.codec.convert
    if conv is None:
        raise UsageError(f"{doc.format} cannot be converted to {target!r}")
    out = conv(doc, target, options={"target_version": options.get("target_version"),
                                     "param": options.get("param"), **given})
    api.write_output(dst, out)
    return {"path": dst, "bytes": len(out), "in_bytes": len(data), "warnings": []}


def export_gltf(doc: Any, out_path: str, *, binary: bool = True,
                options: dict | None = None, scene: Any = None) -> dict:
    """Export a decoded document (or its already converted ``scene``) to glTF;
    ``-`` writes a .glb to standard output."""
    from .export import gltf
    if scene is None:
        scene = gltf.document_scene(doc, options)
    if out_path == api.STDIO:
        if not binary:
            raise UsageError("a .gltf needs a file beside its .bin: write a .glb to "
                             "standard output (--to glb)")
        data = gltf.glb_bytes(*gltf.scene_to_gltf(scene, True))
        api.write_output(api.STDIO, data)
        return {"path": api.STDIO, "bytes": len(data), "nodes": len(scene.nodes),
                "meshes": len(scene.meshes), "animations": len(scene.animations),
                "warnings": list(scene.warnings)}
    return gltf.write_exported(scene, out_path, binary=binary)


def _check_geometry(src: str, scene) -> None:
    """Refuse to write an empty model when its referenced files were not found."""
    if scene.meshes:
        return
    missing = [w for w in scene.warnings if w.endswith(" not found")]
    if missing:
        raise NoGeometryError(f"no geometry to export: {len(missing)} "
                              f"referenced file(s) not found (first: {missing[0]}); pass "
                              "--data-root with the game's data folder")


def _fatal(e: OSError) -> bool:
    return e.errno in FATAL_ERRNOS


def _os_message(e: OSError) -> str:
    where = f"{display_path(e.filename)}: " if e.filename is not None else ""
    return f"{type(e).__name__}: {where}{e.strerror or e}"


def _worker(src: str, dst: str, target: str, options: dict) -> tuple:
    """Convert one file and never raise: ``(status, summary-or-error-text)`` with
    status "ok", "failed", "skipped" (a valid file with nothing to export) or
    "fatal" (an OS error such as a full disk that stops the batch)."""
    from .export.gltf import NoSceneError
    try:
        return "ok", convert_file(src, dst, target, options)
    except NoSceneError as e:
        return "skipped", str(e)
    except FormatError as e:
        return "failed", f"{type(e).__name__}: {e}"
    except OSError as e:
        if _fatal(e):
            return "fatal", (e.errno, display_path(e.filename if e.filename is not None
                                                   else dst), e.strerror or str(e))
        return "failed", _os_message(e)
    except KeyboardInterrupt:
        raise
    except Exception as e:  # noqa: BLE001 - keep the batch going, report the file
        return "failed", f"{type(e).__name__}: {e}"


def _serve(conn, target: str, options: dict, job=None) -> None:
    """Worker process body: convert the ``(src, dst)`` pairs received until
    ``None``.  Ctrl-C is the parent's to handle; SIGTERM (a timeout or an
    interrupted batch) unwinds so the atomic writer removes its temporary file."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def _term(signum, frame):
        raise SystemExit(143)
    signal.signal(signal.SIGTERM, _term)
    try:
        while True:
            item = conn.recv()
            if item is None:
                break
            conn.send(_worker(item[0], item[1], target, options) if job is None
                      else job(item[0], item[1], options))
    except (EOFError, BrokenPipeError):
        pass
    finally:
        conn.close()


class _Slot:
    """One worker process and the file it is converting."""

    def __init__(self, ctx, target: str, options: dict, job=None) -> None:
        self.conn, child = ctx.Pipe(duplex=True)
        self.proc = ctx.Process(target=_serve, args=(child, target, options, job), daemon=True)
        self.proc.start()
        child.close()
        self.job: tuple | None = None
        self.t0 = 0.0

    def give(self, src: str, dst: str) -> None:
        self.job = (src, dst)
        self.t0 = time.monotonic()
        self.conn.send(self.job)

    def stop(self) -> None:
        """End the process (SIGTERM, then SIGKILL) and remove what it left half-written."""
        with _suppress():
            self.conn.close()
        proc = self.proc
        if proc.is_alive():
            proc.terminate()
            proc.join(2.0)
            if proc.is_alive():
                proc.kill()
        proc.join()
        if self.job is not None:
            remove_temporaries(os.path.dirname(os.path.abspath(self.job[1])), proc.pid)

    def close(self) -> None:
        """Let an idle worker exit on its own."""
        with _suppress():
            self.conn.send(None)
            self.conn.close()
        self.proc.join(5.0)
        if self.proc.is_alive():
            self.stop()


def _suppress():
    import contextlib
    return contextlib.suppress(OSError, ValueError, EOFError)


def run_in_workers(plan: list, target: str, options: dict, workers: int,
                   timeout: float | None = None, started=None, job=None) -> Iterator[tuple]:
    """Convert ``plan`` [(src, dst)] in worker processes, yielding
    ``(src, status, result)`` as files finish.

    Workers are forked (nothing is imported again) and live for the batch; a
    file still running after ``timeout`` seconds has its worker killed (and its
    temporary files removed) and is reported as failed, a fresh worker taking
    its place, so the batch goes on.  Closing the generator (a fatal error,
    Ctrl-C) stops every worker.  ``job(src, dst, options) -> (status, result)``
    replaces the conversion for other batch work (``potsherd bundle``); like
    :func:`_worker` it must never raise."""
    # imported here: one-file conversions never start workers (5 ms of a short process)
    import multiprocessing
    import multiprocessing.connection
    ctx = multiprocessing.get_context("fork")
    pending = collections.deque(plan)
    slots = [_Slot(ctx, target, options, job) for _ in range(max(1, min(workers, len(plan))))]
    try:
        while pending or any(s.job for s in slots):
            for i, slot in enumerate(slots):
                if slot.job is None and pending:
                    src, dst = pending.popleft()
                    try:
                        slot.give(src, dst)
                    except OSError:                # the worker died while idle
                        slot.stop()
                        slots[i] = slot = _Slot(ctx, target, options, job)
                        slot.give(src, dst)
                    if started is not None:
                        started(src)
            busy = {s.conn: s for s in slots if s.job is not None}
            wait = 0.5 if timeout is None else max(0.01, min(0.5, timeout / 4))
            for conn in multiprocessing.connection.wait(list(busy), timeout=wait):
                slot = busy[conn]
                src = slot.job[0]
                try:
                    status, res = conn.recv()
                    slot.job = None
                except (EOFError, OSError):
                    slot.proc.join(1.0)
                    status, res = "failed", f"worker process died (exit code {slot.proc.exitcode})"
                    slot.stop()
                    slots[slots.index(slot)] = _Slot(ctx, target, options, job)
                yield src, status, res
            if timeout is not None:
                now = time.monotonic()
                for i, slot in enumerate(slots):
                    if slot.job is not None and now - slot.t0 > timeout:
                        src = slot.job[0]
                        slot.stop()
                        slots[i] = _Slot(ctx, target, options, job)
                        yield src, "failed", f"timed out after {timeout:g} s (--timeout)"
    except BaseException:
        for slot in slots:
            slot.stop()
        raise
    else:
        for slot in slots:
            slot.close()


def _is_gltf_name(path: str) -> bool:
    return path.lower().endswith((".glb", ".gltf"))


def _import_codec(target: str) -> Any:
    """The codec a folder import writes for ``target``, or None when it cannot import."""
    from . import importer
    try:
        return importer.target_codec("out." + target, target)
    except (importer.OptionError, FormatError):
        return None


def _can_reach(path: str, target: str) -> bool:
    """Whether any codec claiming this extension can produce ``target``."""
    from . import registry
    cands = registry.codecs_claiming(path)
    if target in GLTF_TARGETS:
        return any(c.to_scene is not None for c in cands)
    return any(c.convert is not None for c in cands)


def plan_folder(src_dir: str, dst_dir: str, target: str) -> tuple:
    """(jobs [(src, dst)], skipped [(src, reason)]) mirroring ``src_dir`` in ``dst_dir``."""
    plan, skipped, _ = plan_folder_walk(src_dir, dst_dir, target)
    return plan, skipped


class Originals:
    """The originals a folder of glTF files was exported from (``--like DIR``):
    ``a/x.glb`` pairs with ``DIR/a/x.EXT`` for an extension some codec imports
    (the target's, when one is given), names compared without case as the
    games look files up.  The export names ``x_n3chr.glb`` when ``x.n3chr`` and
    ``x.n3pmesh`` lie side by side, and that name finds ``x.n3chr``."""

    def __init__(self, root: str, target: str) -> None:
        from . import registry
        self.root = root
        codecs = [c for c in registry.codecs() if c.from_scene is not None]
        if target:
            want = _import_codec(target)
            codecs = [want] if want is not None else []
        self.exts = {e for c in codecs for e in c.extensions}
        # what a glb of a plain name can come from: the export suffixes the names of
        # several exportable files of one stem, so only one of these is exportable
        self.exportable = {e for c in codecs if c.to_scene is not None for e in c.extensions}
        self.listings: dict = {}

    def _entries(self, folder: str) -> tuple:
        """({(stem, ext): path} of importable files, {stem: [other game files]})."""
        from . import registry
        if folder not in self.listings:
            found: dict = {}
            others: dict = {}
            try:
                for e in os.scandir(folder):
                    stem, ext = os.path.splitext(e.name)
                    if not e.is_file():
                        continue
                    if ext.lower() in self.exts:
                        found.setdefault((stem.lower(), ext.lower()), e.path)
                    elif registry.known_extension(e.name):
                        others.setdefault(stem.lower(), []).append(e.name)
            except OSError:
                pass
            self.listings[folder] = (found, others)
        return self.listings[folder]

    def find(self, rel: str) -> tuple:
        """``(path or None, problem or None, problem is an error)`` of the original
        of glTF ``rel``: an ambiguous one is an error, an unimportable one a skip."""
        folder = os.path.join(self.root, os.path.dirname(rel))
        stem = os.path.splitext(os.path.basename(rel))[0].lower()
        entries, others = self._entries(folder)
        hits = sorted(p for (s, e), p in entries.items() if s == stem)
        if len(hits) > 1:
            hits = [h for h in hits if os.path.splitext(h)[1].lower() in self.exportable] or hits
        if not hits and "_" in stem:
            base, ext = stem.rsplit("_", 1)
            hits = [p for (s, e), p in entries.items() if s == base and e == "." + ext]
        if len(hits) > 1:
            return None, ("several originals: " + ", ".join(os.path.basename(h) for h in hits)
                          + " (name the glTF x_EXT.glb, as the export does)"), True
        if not hits and stem in others:
            return None, (f"its original {sorted(others[stem])[0]} is not a format glTF "
                          "imports into"), False
        return (hits[0] if hits else None), None, False


def _walk_files(src_dir: str, wanted, notes: list) -> Iterator[str]:
    """The regular files under ``src_dir`` that ``wanted`` takes; what the walk
    skipped or could not read goes to ``notes`` as ``(path, reason, is_error)``."""
    for entry in api.walk_inputs([src_dir], wanted):
        if entry.error is not None:
            notes.append((entry.path, entry.error, True))
        elif entry.skipped is not None:
            notes.append((entry.path, entry.skipped, False))
        else:
            yield entry.path


def plan_folder_walk(src_dir: str, dst_dir: str, target: str) -> tuple:
    """:func:`plan_folder` plus what the walk skipped or could not read:
    ``(plan, skipped, walk_notes)`` with walk notes ``(path, reason, is_error)``."""
    from . import registry
    jobs, skipped, notes = [], [], []
    # (a game-format target that imports: the tree's glTF files are walked too)
    import_codec = _import_codec(target) if target not in GLTF_TARGETS else None

    def wanted(path: str) -> bool:
        return registry.known_extension(path) or (import_codec is not None and _is_gltf_name(path))
    for src in _walk_files(src_dir, wanted, notes):
        if not (_is_gltf_name(src) or _can_reach(src, target)):   # (glTF: walked only to import)
            skipped.append((src, f"no {target} conversion for this format"))
            continue
        jobs.append(src)
    out_ext = "." + target if target in GLTF_TARGETS else None
    import_ext = import_codec.extensions[0] if import_codec is not None else None

    def dst_of(src: str) -> tuple:
        stem, ext = os.path.splitext(os.path.relpath(src, src_dir))
        new = import_ext if import_ext and _is_gltf_name(src) else (out_ext or ext)
        return stem, ext, stem + new, new
    dsts: dict = {}
    for src in jobs:
        dst = dst_of(src)[2]
        dsts.setdefault(os.path.normcase(dst), []).append(src)
    plan = []
    for src in jobs:
        stem, ext, dst, new_ext = dst_of(src)
        if len(dsts[os.path.normcase(dst)]) > 1:   # a.n3chr and a.n3pmesh: keep both
            dst = stem + "_" + ext.lstrip(".") + new_ext
        plan.append((src, os.path.join(dst_dir, dst)))
    return plan, skipped, notes


def plan_like(src_dir: str, dst_dir: str, target: str, like_dir: str) -> tuple:
    """``(plan, skipped, notes, like_of)`` of a folder import paired with its
    originals (:class:`Originals`): each glTF goes to its original's name and
    format; one without an original goes to the target's extension when
    ``target`` is given and is skipped with a note otherwise."""
    originals = Originals(like_dir, target)
    import_ext = None
    if target:
        codec = _import_codec(target)
        import_ext = codec.extensions[0] if codec is not None else "." + target
    plan, skipped, notes, like_of = [], [], [], {}
    for src in _walk_files(src_dir, _is_gltf_name, notes):
        rel = os.path.relpath(src, src_dir)
        original, problem, is_error = originals.find(rel)
        if problem is not None and is_error:
            notes.append((src, problem, True))
            continue
        if problem is not None:
            skipped.append((src, problem))
            continue
        if original is not None:
            dst = os.path.join(dst_dir, os.path.dirname(rel), os.path.basename(original))
        elif import_ext is not None:
            dst = os.path.join(dst_dir, os.path.splitext(rel)[0] + import_ext)
        else:
            skipped.append((src, f"no original in {display_path(like_dir)} (give --to to "
                                 "import it as a new file)"))
            continue
        plan.append((src, dst))
        like_of[src] = original
    return plan, skipped, notes, like_of


def _check_batch_options(plan: list, given: dict, target: str = "",
                         like_of: dict | None = None) -> None:
    """Every option name must be declared by some format the batch will convert."""
    from . import registry
    if not given:
        return
    exts = {os.path.splitext(src)[1].lower() for src, _ in plan}
    declared = {o.name for c in registry.codecs() if set(c.extensions) & exts
                for o in c.export_options}
    if exts & {".glb", ".gltf"}:              # a folder import: the target's import options
        codec = _import_codec(target) if target else None
        declared |= {o.name for o in codec.import_options} if codec is not None else set()
        for dst_ext in {os.path.splitext(dst)[1].lower() for _, dst in plan} if like_of else ():
            declared |= {o.name for c in registry.codecs() if c.from_scene is not None
                         and dst_ext in c.extensions for o in c.import_options}
    unknown = sorted(set(given) - declared)
    if unknown:
        raise UsageError(f"unknown option {unknown[0]!r} for the formats of this folder; "
                         f"valid options: {', '.join(sorted(declared)) or 'none'}")


@dataclass
class BatchResult:
    """What a folder conversion did, for the caller to report (the command
    line prints it in :mod:`potsherd.cli.batch`).  Paths are as walked;
    each list holds ``(source, reason)`` pairs unless said otherwise."""
    src_dir: str
    dst_dir: str
    target: str
    like: bool
    planned: int = 0
    notes: list = field(default_factory=list)          # files the walk passed over (not errors)
    skipped: list = field(default_factory=list)        # no conversion to the target / no original
    written: list = field(default_factory=list)        # output paths
    warned: list = field(default_factory=list)         # (source, [warnings])
    not_exported: list = field(default_factory=list)   # files that hold nothing to export
    failures: list = field(default_factory=list)
    fatal: tuple | None = None                         # (where, reason): the batch stopped
    interrupted: bool = False

    @property
    def what(self) -> str:
        return self.target or "their originals' formats"

    @property
    def exit_code(self) -> int:
        """0 all converted, 1 some failed (or a fatal stop), 130 interrupted."""
        if self.interrupted:
            return 130
        return 1 if self.fatal or self.failures else 0


class BatchEvents:
    """What a folder conversion tells its caller while it runs (every method
    optional to override): the plan, each file started and each finished."""

    def planned(self, result: BatchResult) -> None:
        pass

    def started(self, src: str) -> None:
        pass

    def finished(self, ok: bool, nbytes: int, src: str) -> None:
        pass


def validate_files(paths: list) -> list[dict]:
    """The Khronos validator's reports for written glTF files (in batches of
    100).  Raises :class:`~potsherd.export.validate.ValidatorUnavailable`."""
    from .export.validate import validate_many
    reports: list[dict] = []
    for i in range(0, len(paths), 100):
        reports += validate_many(paths[i:i + 100])
    return reports


def convert_folder(src_dir: str, dst_dir: str, target: str, options: dict, *,
                   jobs: int = 0, timeout: float | None = None, like_dir: str | None = None,
                   events: BatchEvents | None = None) -> BatchResult:
    """Batch conversion of a tree (module docstring).  A full disk (or a
    read-only or over-quota one) stops the batch at once (``fatal``); earlier
    outputs stay complete.  ``like_dir``: a folder import paired with its
    originals (:func:`plan_like`), ``target`` then optional.  Ctrl-C ends it
    with ``interrupted`` set (written files are complete)."""
    events = events or BatchEvents()
    like_of = None
    if like_dir is not None:
        plan, skipped, notes, like_of = plan_like(src_dir, dst_dir, target, like_dir)
    else:
        plan, skipped, notes = plan_folder_walk(src_dir, dst_dir, target)
    _check_batch_options(plan, options.get("scene_options") or {}, target, like_of)
    options = {**options, "strict_options": False, "like_of": like_of or {}}
    result = BatchResult(src_dir, dst_dir, target, like_dir is not None, planned=len(plan),
                         notes=[(p, r) for p, r, is_error in notes if not is_error],
                         skipped=list(skipped),
                         failures=[(p, r) for p, r, is_error in notes if is_error])
    events.planned(result)
    if not plan:
        return result
    sizes = {}
    for src, _ in plan:
        try:
            sizes[src] = os.path.getsize(src)
        except OSError:
            sizes[src] = 0
    workers = jobs if jobs and jobs > 0 else (os.cpu_count() or 1)
    workers = min(workers, len(plan))

    def record(src: str, status: str, res: Any) -> None:
        if status == "ok":
            if res.get("warnings"):
                result.warned.append((src, list(res["warnings"])))
            result.written.append(res["path"])
        elif status == "skipped":
            result.not_exported.append((src, res))
        else:
            result.failures.append((src, res))
        events.finished(status != "failed", sizes[src], src)

    if workers <= 1 and timeout is None:
        results = _in_process(plan, target, options, events.started)
    else:
        results = run_in_workers(plan, target, options, workers, timeout, events.started)
    try:
        for src, status, res in results:
            if status == "fatal":
                _, where, reason = res
                result.fatal = (where, reason)
                return result
            record(src, status, res)
    except KeyboardInterrupt:
        result.interrupted = True
    finally:
        results.close()
    return result


def _in_process(plan: list, target: str, options: dict, started) -> Iterator[tuple]:
    for src, dst in plan:
        started(src)
        status, res = _worker(src, dst, target, options)
        yield src, status, res
