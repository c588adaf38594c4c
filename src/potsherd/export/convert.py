"""``potsherd convert``: to glTF, or between encodings of one family.

``potsherd convert IN OUT.glb`` converts one file (target from OUT's
extension or ``--to``).  ``potsherd convert SRC_DIR DST_DIR --to glb``
mirrors a tree: every file whose format can reach the target is converted in
parallel (``--jobs``), failures are listed at the end (exit code 1), and
every output is written atomically, so an interrupted batch leaves only
complete files.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import os
import sys
import time
from typing import Any

from ..core.errors import FormatError
from ..core.fileio import atomic_write

GLTF_TARGETS = ("glb", "gltf")

#: argparse fields that are safe and useful to ship to worker processes
_PLAIN = (str, int, float, bool, type(None), list, tuple)


def _target_of(args) -> str:
    if args.to:
        return args.to.lower().lstrip(".")
    ext = os.path.splitext(args.output)[1].lstrip(".").lower()
    return ext


def _plain_options(args) -> dict:
    """CLI values for workers and ``to_scene``; ``--option k=v`` become top-level keys."""
    from ..cli import parse_params
    out = {k: v for k, v in vars(args).items() if isinstance(v, _PLAIN) and k != "func"}
    extra = parse_params(out.pop("option", None) or [])
    out.update(extra)
    return out


def convert_file(src: str, dst: str, target: str, options: dict) -> dict:
    """Convert one file; returns a summary dict.  Raises FormatError on bad data."""
    from ..cli import read_doc, UsageError
    args = argparse.Namespace(**options)
    data, doc = read_doc(src, args)
    if target in GLTF_TARGETS:
        from . import gltf
        summary = gltf.export_document(doc, dst, binary=(target == "glb"), options=options)
        summary["in_bytes"] = len(data)
        return summary
    from .. import importer
    if importer.goes_through_scene(doc, target):       # e.g. IN.n3chr OUT.fbx
        summary = importer.convert_via_scene(doc, dst, target, options)
        summary["in_bytes"] = len(data)
        return summary
    conv = getattr(doc.codec, "convert", None)
    if conv is None:
        raise UsageError(f"{doc.format} cannot be converted to {target!r}")
    out = conv(doc, target, options=options)
    atomic_write(dst, out)
    return {"path": dst, "bytes": len(out), "in_bytes": len(data), "warnings": []}


def _worker(src: str, dst: str, target: str, options: dict) -> tuple:
    """Process-pool entry: never raises; returns (status, summary-or-error-text) with
    status "ok", "failed" or "skipped" (a valid file with nothing to export)."""
    from .gltf import NoSceneError
    try:
        return "ok", convert_file(src, dst, target, options)
    except NoSceneError as e:
        return "skipped", str(e)
    except FormatError as e:
        return "failed", f"{type(e).__name__}: {e}"
    except KeyboardInterrupt:
        raise
    except Exception as e:  # noqa: BLE001 - keep the batch going, report the file
        return "failed", f"{type(e).__name__}: {e}"


def _can_reach(path: str, target: str) -> bool:
    """Whether any codec claiming this extension can produce ``target``."""
    from .. import registry
    ext = os.path.splitext(path)[1].lower()
    cands = [c for c in registry.codecs() if ext in c.extensions]
    if target in GLTF_TARGETS:
        return any(getattr(c, "to_scene", None) is not None for c in cands)
    return any(getattr(c, "convert", None) is not None for c in cands)


def plan_folder(src_dir: str, dst_dir: str, target: str) -> tuple:
    """(jobs [(src, dst)], skipped [(src, reason)]) mirroring ``src_dir`` in ``dst_dir``."""
    from .. import registry
    jobs, skipped = [], []
    for root, dirs, files in os.walk(src_dir):
        dirs.sort()
        for name in sorted(files):
            src = os.path.join(root, name)
            if not registry.known_extension(src):
                continue
            if not _can_reach(src, target):
                skipped.append((src, f"no {target} conversion for this format"))
                continue
            jobs.append(src)
    out_ext = "." + target if target in GLTF_TARGETS else None
    dsts: dict = {}
    for src in jobs:
        rel = os.path.relpath(src, src_dir)
        stem, ext = os.path.splitext(rel)
        dst = stem + (out_ext or ext)
        dsts.setdefault(os.path.normcase(dst), []).append(src)
    plan = []
    for src in jobs:
        rel = os.path.relpath(src, src_dir)
        stem, ext = os.path.splitext(rel)
        dst = stem + (out_ext or ext)
        if len(dsts[os.path.normcase(dst)]) > 1:   # a.n3chr and a.n3pmesh: keep both
            dst = stem + "_" + ext.lstrip(".") + (out_ext or ext)
        plan.append((src, os.path.join(dst_dir, dst)))
    return plan, skipped


class Progress:
    """A progress line on stderr: a bar when stderr is a terminal, else a
    plain line every few seconds (and at the end)."""

    def __init__(self, total: int, stream=None, interval: float = 5.0) -> None:
        self.total = total
        self.stream = stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.start = time.monotonic()
        self.last = 0.0
        self.interval = 0.1 if self.tty else interval
        self.done = self.failed = self.bytes = 0

    def update(self, ok: bool, nbytes: int) -> None:
        self.done += 1
        self.failed += 0 if ok else 1
        self.bytes += nbytes
        now = time.monotonic()
        if now - self.last >= self.interval or self.done == self.total:
            self.last = now
            self.show()

    def line(self) -> str:
        el = max(time.monotonic() - self.start, 1e-9)
        pct = 100.0 * self.done / self.total if self.total else 100.0
        return (f"{self.done}/{self.total} files ({pct:.0f}%), {self.failed} failed, "
                f"{self.done / el:.1f} files/s, {self.bytes / el / 1e6:.2f} MB/s in, "
                f"{el:.1f} s")

    def show(self) -> None:
        if self.tty:
            width = 30
            fill = int(width * self.done / self.total) if self.total else width
            self.stream.write(f"\r[{'#' * fill}{'.' * (width - fill)}] {self.line()}\033[K")
            if self.done == self.total:
                self.stream.write("\n")
        else:
            self.stream.write(f"convert: {self.line()}\n")
        self.stream.flush()


def validate_outputs(paths: list, stream=None) -> int:
    """Run the Khronos validator on written glTF files; 0 when none has errors."""
    from .validate import ValidatorUnavailable, format_report, validate_many
    err = stream or sys.stderr
    try:
        reports = []
        for i in range(0, len(paths), 100):
            reports += validate_many(paths[i:i + 100])
    except ValidatorUnavailable as e:
        print(f"validate: cannot validate: {e}", file=err)
        return 2
    bad = [r for r in reports if r["errors"]]
    print(f"validate: {len(reports)} files, {sum(r['errors'] for r in reports)} errors, "
          f"{sum(r['warnings'] for r in reports)} warnings (Khronos glTF validator "
          f"{reports[0].get('validator_version') if reports else '-'})", file=err)
    for r in bad:
        print(format_report(r, limit=5), file=err)
    return 1 if bad else 0


def convert_folder(src_dir: str, dst_dir: str, target: str, options: dict, *,
                   jobs: int = 0, stream=None, validate: bool = False) -> int:
    """Batch conversion; returns the exit code (0 all converted, 1 some failed)."""
    err = stream or sys.stderr
    plan, skipped = plan_folder(src_dir, dst_dir, target)
    if not plan:
        print(f"convert: nothing to convert to {target} in {src_dir} "
              f"({len(skipped)} files of formats without a {target} conversion)", file=err)
        return 0
    sizes = {src: os.path.getsize(src) for src, _ in plan}
    progress = Progress(len(plan), err)
    failures: list = []
    not_exported: list = []
    written: list = []
    warned = 0
    workers = jobs if jobs and jobs > 0 else (os.cpu_count() or 1)
    workers = min(workers, len(plan))

    def record(src: str, status: str, res: Any) -> None:
        nonlocal warned
        if status == "ok":
            warned += 1 if res.get("warnings") else 0
            written.append(res["path"])
        elif status == "skipped":
            not_exported.append((src, res))
        else:
            failures.append((src, res))
        progress.update(status != "failed", sizes[src])

    if workers <= 1:
        try:
            for src, dst in plan:
                status, res = _worker(src, dst, target, options)
                record(src, status, res)
        except KeyboardInterrupt:
            print(f"\nconvert: interrupted after {progress.done} of {len(plan)} files; "
                  "written files are complete, no partial files were left", file=err)
            return 130
    else:
        pool = cf.ProcessPoolExecutor(max_workers=workers)
        try:
            futs = {pool.submit(_worker, src, dst, target, options): src for src, dst in plan}
            for fut in cf.as_completed(futs):
                src = futs[fut]
                try:
                    status, res = fut.result()
                except cf.process.BrokenProcessPool as e:
                    status, res = "failed", f"worker process died: {e}"
                record(src, status, res)
        except KeyboardInterrupt:
            pool.shutdown(wait=True, cancel_futures=True)
            print(f"\nconvert: interrupted after {progress.done} of {len(plan)} files; "
                  "written files are complete, no partial files were left", file=err)
            return 130
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
    print(f"convert: {len(written)} of {len(plan)} files converted to {target} in {dst_dir}"
          + (f" ({warned} with warnings)" if warned else "")
          + (f"; {len(skipped)} files skipped (format has no {target} conversion)"
             if skipped else ""), file=err)
    if not_exported:
        print(f"convert: {len(not_exported)} files hold nothing to export:", file=err)
        for src, msg in sorted(not_exported):
            print(f"  {src}: {msg}", file=err)
    rc = 0
    if failures:
        print(f"convert: {len(failures)} files failed:", file=err)
        for src, msg in sorted(failures):
            print(f"  {src}: {msg}", file=err)
        rc = 1
    if validate and target in GLTF_TARGETS and written:
        rc = max(rc, validate_outputs(sorted(written), err))
    return rc


def run(args) -> int:
    from ..cli import UsageError
    options = _plain_options(args)
    if os.path.isdir(args.input):
        if os.path.exists(args.output) and not os.path.isdir(args.output):
            raise UsageError(f"{args.output} exists and is not a folder")
        if not args.to:
            raise UsageError("folder conversion needs --to (e.g. --to glb)")
    target = _target_of(args)
    if not target:
        raise UsageError("say the target with --to (glb, gltf, binary, ascii) or an output "
                         "file extension")
    if os.path.isdir(args.input):
        return convert_folder(args.input, args.output, target, options, jobs=args.jobs or 0,
                              validate=bool(getattr(args, "validate", False)))
    from .. import importer
    if target not in GLTF_TARGETS and importer.is_gltf_path(args.input):
        return importer.run_cli(args, target)      # glTF -> a game format
    output = args.output
    if os.path.isdir(output):
        stem = os.path.splitext(os.path.basename(args.input))[0]
        ext = ("." + target) if target in GLTF_TARGETS else os.path.splitext(args.input)[1]
        output = os.path.join(output, stem + ext)
    summary = convert_file(args.input, output, target, options)
    for w in summary.get("warnings", []):
        print(f"potsherd: warning: {w}", file=sys.stderr)
    print(f"{output}: {summary['bytes']} bytes", flush=True)
    if getattr(args, "validate", False) and target in GLTF_TARGETS:
        return validate_outputs([output])
    return 0
