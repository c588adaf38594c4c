"""What ``potsherd convert SRC_DIR DST_DIR`` prints: the progress line while
:func:`potsherd.convert.convert_folder` runs, then its summary, and the glTF
validator's verdict.  The library returns a :class:`~potsherd.convert.BatchResult`;
every line about it is written here."""
from __future__ import annotations

import sys
import time

from ..api import display_path
from ..convert import GLTF_TARGETS, BatchEvents, BatchResult, convert_folder, validate_files
from ..core.wording import count


class Progress:
    """A progress line on stderr: a bar when stderr is a terminal, else a
    plain line every few seconds (and at the end).  The line names a file
    being worked on, so a slow or stuck file is visible while it runs."""

    def __init__(self, total: int, stream=None, interval: float = 5.0) -> None:
        self.total = total
        self.stream = stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.start = time.monotonic()
        self.last = 0.0
        self.interval = 0.1 if self.tty else interval
        self.done = self.failed = self.bytes = 0
        self.running: dict[str, float] = {}

    def started(self, src: str) -> None:
        """A file began converting (shown when the line is next due)."""
        self.running[src] = time.monotonic()
        now = time.monotonic()
        if now - self.last >= self.interval:
            self.last = now
            self.show()

    def update(self, ok: bool, nbytes: int, src: str | None = None) -> None:
        self.done += 1
        self.failed += 0 if ok else 1
        self.bytes += nbytes
        if src is not None:
            self.running.pop(src, None)
        now = time.monotonic()
        if now - self.last >= self.interval or self.done == self.total:
            self.last = now
            self.show()

    def current(self) -> str:
        """The file running longest (and how many others run beside it)."""
        if not self.running or self.done == self.total:
            return ""
        src, t0 = min(self.running.items(), key=lambda kv: kv[1])
        more = f" (+{len(self.running) - 1} more)" if len(self.running) > 1 else ""
        return f", working on {display_path(src)} for {time.monotonic() - t0:.1f} s{more}"

    def line(self) -> str:
        el = max(time.monotonic() - self.start, 1e-9)
        pct = 100.0 * self.done / self.total if self.total else 100.0
        return (f"{self.done}/{self.total} files ({pct:.0f}%), {self.failed} failed, "
                f"{self.done / el:.1f} files/s, {self.bytes / el / 1e6:.2f} MB/s in, "
                f"{el:.1f} s{self.current()}")

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


class _ProgressEvents(BatchEvents):
    """The batch's events as the progress line, the walk's notes before it."""

    def __init__(self, stream) -> None:
        self.stream = stream
        self.progress: Progress | None = None

    def planned(self, result: BatchResult) -> None:
        for p, r in result.notes:
            print(f"convert: skip {display_path(p)}: {r}", file=self.stream)
        self.progress = Progress(result.planned, self.stream)

    def started(self, src: str) -> None:
        self.progress.started(src)

    def finished(self, ok: bool, nbytes: int, src: str) -> None:
        self.progress.update(ok, nbytes, src)


def print_validation(paths: list, stream=None) -> int:
    """Run the Khronos validator on written glTF files and say what it found;
    0 when none has errors, 2 when it cannot run."""
    from ..export.validate import ValidatorUnavailable, format_report
    err = stream or sys.stderr
    try:
        reports = validate_files(paths)
    except ValidatorUnavailable as e:
        print(f"validate: cannot validate: {e}", file=err)
        return 2
    bad = [r for r in reports if r["errors"]]
    print(f"validate: {count(len(reports), 'file')}, "
          f"{count(sum(r['errors'] for r in reports), 'error')}, "
          f"{count(sum(r['warnings'] for r in reports), 'warning')} (Khronos glTF validator "
          f"{reports[0].get('validator_version') if reports else '-'})", file=err)
    for r in bad:
        print(format_report(r, limit=5), file=err)
    return 1 if bad else 0


def report(result: BatchResult, progress: Progress | None, err) -> None:
    """The batch's closing lines (what was written, skipped, warned, failed)."""
    what, target = result.what, result.target
    lead = "\n" if progress is not None and progress.tty else ""
    if result.interrupted:
        done = progress.done if progress is not None else 0
        print(lead + f"potsherd: interrupted after {done} of {count(result.planned, 'file')}; "
              "written files are complete, no partial files were left", file=err)
        return
    if result.fatal:
        where, reason = result.fatal
        print(lead + f"potsherd: error: {where}: {reason}", file=err)
        return
    skipped, like = result.skipped, result.like
    if not result.planned:
        print(f"convert: nothing to convert to {what} in {display_path(result.src_dir)} "
              + (f"({count(len(skipped), 'glTF file')} without an original)" if like
                 else f"({count(len(skipped), 'file')} of formats without a {target} conversion)"),
              file=err)
        for p, r in skipped if like else ():
            print(f"  {display_path(p)}: {r}", file=err)
        for p, r in result.failures:
            print(f"  {display_path(p)}: {r}", file=err)
        return
    print(f"convert: {len(result.written)} of {count(result.planned, 'file')} converted to {what} "
          f"in {display_path(result.dst_dir)}"
          + (f" ({len(result.warned)} with warnings)" if result.warned else "")
          + (f"; {count(len(skipped), 'file')} skipped (format has no {target} conversion)"
             if skipped and not like else ""), file=err)
    if skipped and like:
        print(f"convert: {count(len(skipped), 'glTF file')} skipped:", file=err)
        for src, msg in sorted(skipped):
            print(f"  {display_path(src)}: {msg}", file=err)
    if result.warned:
        print(f"convert: {count(len(result.warned), 'file')} converted with warnings:", file=err)
        for src, ws in sorted(result.warned):
            more = f" (+{len(ws) - 3} more)" if len(ws) > 3 else ""
            print(f"  {display_path(src)}: {'; '.join(ws[:3])}{more}", file=err)
    if result.not_exported:
        n = len(result.not_exported)
        print(f"convert: {count(n, 'file')} {'holds' if n == 1 else 'hold'} nothing to export:",
              file=err)
        for src, msg in sorted(result.not_exported):
            print(f"  {display_path(src)}: {msg}", file=err)
    if result.failures:
        print(f"convert: {count(len(result.failures), 'file')} failed:", file=err)
        for src, msg in sorted(result.failures):
            print(f"  {display_path(src)}: {msg}", file=err)


def run_convert_folder(src_dir: str, dst_dir: str, target: str, options: dict, *,
                       jobs: int = 0, stream=None, validate: bool = False,
                       timeout: float | None = None, like_dir: str | None = None) -> int:
    """Convert a folder, showing progress and the summary; the exit code (0 all
    converted, 1 some failed, 130 interrupted; the validator's verdict after)."""
    err = stream or sys.stderr
    events = _ProgressEvents(err)
    result = convert_folder(src_dir, dst_dir, target, options, jobs=jobs, timeout=timeout,
                            like_dir=like_dir, events=events)
    report(result, events.progress, err)
    rc = result.exit_code
    if result.interrupted or result.fatal or not result.planned:
        return rc
    if validate and target in GLTF_TARGETS and result.written:
        rc = max(rc, print_validation(sorted(result.written), err))
    return rc
