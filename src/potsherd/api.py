"""Plain functions under the command line: read a path with limits, walk
inputs, parse ``name=value`` items, check conversion options, write outputs,
stream a document's JSON.

The command line (``cli/``) is argparse and printing on top of these; the
conversion and texture commands and the family command lines use them too, so
no library module needs to import the command line.
"""
from __future__ import annotations

import dataclasses
import errno
import os
import re
import stat
import sys
from typing import IO, Any, Iterable, Iterator

from . import containers, registry
from .core.errors import LimitError, UnknownFormatError
from .core.fileio import atomic_write, output_target, read_stream
from .core.limits import DEFAULT_LIMITS, Limits

#: the path that means standard input (reading commands) or standard output (writing ones)
STDIO = "-"

#: validate fails a file when more than this share of it is undecoded trailing bytes
MAX_TRAILING_SHARE = 0.5


class UsageError(Exception):
    """A mistake in how a command was called (exit code 2)."""


#: characters a terminal acts on: C0/C1 controls, DEL, and the Unicode format
#: characters that reorder or hide text (bidi overrides, line separators)
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069"
                          "\ufeff]")


def printable(text: Any) -> str:
    """``text`` safe to print on a terminal: every control character (ANSI
    escapes, newlines that would forge an output line, bidi overrides) shown
    as ``\\xNN`` / ``\\uNNNN``.  Every name the command line prints from a
    file (member names, paths, error messages) goes through here."""
    text = str(text)
    return _UNPRINTABLE.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                            else f"\\u{ord(m.group()):04x}", text)


def display_path(path: str | os.PathLike) -> str:
    """A path as printable text: names that are not valid UTF-8 (cp949 bytes,
    say) show their undecodable bytes as ``\\xNN`` instead of failing to print,
    and control characters are escaped (:func:`printable`)."""
    raw = os.fsencode(path)
    return printable(raw.decode("utf-8", "backslashreplace"))


def parse_params(items: Iterable[str] | None, flag: str = "--param") -> dict[str, Any]:
    """``name=value`` items to a dict; values that read as int or float become numbers."""
    out: dict[str, Any] = {}
    for k, v in parse_options(items, flag).items():
        val: Any = v
        for conv in (int, float):
            try:
                val = conv(v)
                break
            except ValueError:
                continue
        out[k] = val
    return out


def parse_options(items: Iterable[str] | None, flag: str = "--option") -> dict[str, str]:
    """``name=value`` items as text; conversion options are typed by their declaration."""
    out: dict[str, str] = {}
    for item in items or []:
        if "=" not in item:
            raise UsageError(f"{flag} expects name=value, got {item!r}")
        k, v = item.split("=", 1)
        if not k.strip():
            raise UsageError(f"{flag} expects name=value, got {item!r}")
        out[k.strip()] = v
    return out


def make_limits(**changes: int | None) -> Limits:
    """Default limits with the given (non-None) fields replaced."""
    changes = {k: v for k, v in changes.items() if v is not None}
    if "max_inflated" in changes:   # a raised --max-inflated is the whole document's too
        changes.setdefault("max_document_inflated", changes["max_inflated"])
    return DEFAULT_LIMITS.replace(**changes) if changes else DEFAULT_LIMITS


LIMIT_FLAGS = ("max_depth", "max_elements", "max_inflated", "max_input")


#: how a file to read privately is opened: never waiting on a FIFO's writer
#: (one is reopened the usual way), never becoming the controlling terminal
_PRIVATE_OPEN = (os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)
                 | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0))


def read_input(path: str, limits: Limits = DEFAULT_LIMITS, *, stdio: bool = True,
               private: bool = False) -> bytes:
    """The bytes of ``path`` (``-``: standard input unless ``stdio`` is False),
    refusing before reading what is larger than ``limits.max_input``.  A folder
    or a device is an ``OSError`` naming the path; a FIFO named explicitly is read.

    ``private``: a regular file comes back as a
    :class:`~potsherd.core.fastpath.PrivateBuffer` (fresh memory no caller
    holds, which the document decoded from it may keep views of), read with
    one open and one ``fstat`` of the descriptor; anything else as bytes."""
    if private and not (stdio and path == STDIO):
        data = _read_private(path, limits, stdio)
        if data is not None:
            return data
    if stdio and path == STDIO:
        data = read_stream(sys.stdin.buffer, limits.max_input)
        if len(data) > limits.max_input:
            raise LimitError(f"standard input exceeds the limit of {limits.max_input} bytes "
                             f"(--max-input)", offset=0)
        return data
    if containers.split_member_path(path)[1]:  # "game.vol::shape.dts": a member, read in place
        return containers.read_input(path, limits)
    st = os.stat(path)
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
        raise OSError(errno.EINVAL, "not a regular file", path)
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size > limits.max_input:  # refuse before reading it into memory
            raise LimitError(f"input of {size} bytes exceeds the limit of {limits.max_input} "
                             f"(--max-input)", offset=0, path=None if stdio else path)
        if stat.S_ISREG(st.st_mode):
            return f.read(size)  # exactly the file: no allocation sized by the limit
        data = read_stream(f, limits.max_input)
        if len(data) > limits.max_input:
            raise LimitError(f"{display_path(path)} exceeds the limit of {limits.max_input} bytes "
                             f"(--max-input)", offset=0, path=None if stdio else path)
        return data




def _read_private(path: str, limits: Limits, stdio: bool):
    """A regular file's bytes in a new PrivateBuffer, or None for what
    :func:`read_input` handles the usual way (member paths, folders, FIFOs,
    devices, a path that cannot be opened: its error is worded there)."""
    if containers.SEPARATOR in path and not os.path.exists(path):
        return None  # "game.vol::shape.dts": a member
    try:
        # (a device is never opened: opening one can act, e.g. start a watchdog
        # or rewind a tape; the descriptor's fstat below covers a swap in between)
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        fd = os.open(path, _PRIVATE_OPEN)
    except (OSError, ValueError):
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        size = st.st_size
        if size > limits.max_input:  # refuse before reading it into memory
            raise LimitError(f"input of {size} bytes exceeds the limit of {limits.max_input} "
                             f"(--max-input)", offset=0, path=None if stdio else path)
        buf = (_PRIVATE_BUFFER or _private_buffer_type())(size)
        got = _read_into(fd, buf) if size else 0
        if got < size:  # a short read: go on until the end (or the file shrank)
            with memoryview(buf) as view:
                while got < size:
                    n = _read_into(fd, view[got:])
                    if n == 0:
                        break
                    got += n
            del buf[got:]
        return buf
    finally:
        os.close(fd)


_PRIVATE_BUFFER = None


def _private_buffer_type():
    """:class:`~potsherd.core.fastpath.PrivateBuffer`, imported on the first private
    read (importing this module stays free of the compiled decoders)."""
    global _PRIVATE_BUFFER
    from .core.fastpath.runtime import PrivateBuffer
    _PRIVATE_BUFFER = PrivateBuffer
    return PrivateBuffer


def _read_into(fd: int, buf) -> int:
    """Read from ``fd`` into ``buf``; the count of bytes read (0 at the end)."""
    if hasattr(os, "readv"):
        return os.readv(fd, [buf])
    with open(fd, "rb", buffering=0, closefd=False) as f:  # where readv is missing
        return f.readinto(buf) or 0


def read_document(source: str | os.PathLike | bytes, format: str | None = None, *,
                  limits: Limits = DEFAULT_LIMITS, **params: Any) -> Any:
    """:func:`potsherd.read`: decode a file (path, never standard input) or bytes."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return registry.decode(bytes(source), format=format, limits=limits, **params)
    path = os.fspath(source)
    try:  # picked before reading when the name (or format) decides it
        codec = registry.codec_before_reading(path, format)
    except (UnknownFormatError, TypeError):
        codec = None  # (the refusal comes after reading, as it always did)
    if codec is None:
        data = read_input(path, limits, stdio=False)
        return registry.decode(data, format=format, path=path, limits=limits, **params)
    # a codec taking a private buffer decodes the file in place: the document's
    # arrays are views of memory only it holds, editable without copies
    data = read_input(path, limits, stdio=False, private=codec.private_input)
    return registry.decode_as(codec, data, path=path, limits=limits, **params)


def read_doc(path: str, *, limits: Limits = DEFAULT_LIMITS, format: str | None = None,
             params: dict | None = None) -> tuple[bytes, Any]:
    """``(bytes, Document)`` of a file (``-``: standard input)."""
    data = read_input(path, limits)
    try:
        doc = registry.decode(data, format=format, path=None if path == STDIO else path,
                              limits=limits, **(params or {}))
    except UnknownFormatError as e:
        if path == STDIO and format is None:
            e.message = (f"{e.message} (standard input has no file name: say the format "
                         "with --format)")
            e.args = (e.message,)
        raise
    return data, doc


def summary_stream(output: str) -> IO[str]:
    """Where to print a command's one-line summary: stderr when the output
    itself goes to a stream (``-``, ``/dev/stdout``, a FIFO), else stdout."""
    if output == STDIO:
        return sys.stderr
    try:
        kind, _ = output_target(output)
    except OSError:
        return sys.stdout
    return sys.stderr if kind == "stream" else sys.stdout


def write_output(path: str, data: bytes) -> None:
    """Write ``data`` atomically to ``path`` (``-``: standard output)."""
    if path == STDIO:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    else:
        atomic_write(path, data)


# ----------------------------------------------------------------------------
# walking inputs

@dataclasses.dataclass(frozen=True)
class Entry:
    """One input of a folder walk: a file to process, one skipped (with why),
    or a failure (an unreadable folder, with the reason)."""

    path: str
    skipped: str | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.skipped is None and self.error is None


#: why a walk passes over a file whose name no codec claims
UNKNOWN_NAME = "with no codec for their name"


def walk_inputs(paths: Iterable[str], want=None, *, report_unwanted: bool = False
                ) -> Iterator[Entry]:
    """Files named, and the regular files under named folders (sorted).

    Walks never follow a symbolic link to a folder (so a link loop cannot
    trap them), follow links to regular files, skip FIFOs, devices, sockets
    and dangling or looping links with the reason, and report an unreadable
    folder as an error.  ``want(path)`` filters walked files by name (files
    named explicitly are always yielded); with ``report_unwanted`` the others are
    yielded as skipped (:data:`UNKNOWN_NAME`), so a command can count them."""
    for p in paths:
        if p != STDIO and os.path.isdir(p) and not _is_link_loop(p):
            yield from _walk_folder(p, want, report_unwanted)
        else:
            yield Entry(p)


def _is_link_loop(p: str) -> bool:
    try:
        os.stat(p)
        return False
    except OSError:
        return True


def _walk_folder(top: str, want, report_unwanted: bool = False) -> Iterator[Entry]:
    errors: list[OSError] = []
    for root, dirs, files in os.walk(top, onerror=errors.append):
        while errors:
            e = errors.pop(0)
            yield Entry(e.filename or root, error=e.strerror or str(e))
        dirs.sort()
        for d in list(dirs):
            full = os.path.join(root, d)
            if os.path.islink(full):
                dirs.remove(d)
                yield Entry(full, skipped="symbolic link to a folder (not followed)")
        names = sorted(files)
        for name in names:
            full = os.path.join(root, name)
            if want is not None and not want(full):
                if report_unwanted:
                    yield Entry(full, skipped=UNKNOWN_NAME)
                continue
            reason = _not_regular(full)
            yield Entry(full, skipped=reason) if reason else Entry(full)
    while errors:
        e = errors.pop(0)
        yield Entry(e.filename or top, error=e.strerror or str(e))


def _not_regular(path: str) -> str | None:
    """Why a walked name is not a regular file to read, or None."""
    try:
        st = os.stat(path)
    except OSError as e:
        if e.errno == errno.ELOOP:
            return "symbolic link loop"
        if e.errno == errno.ENOENT and os.path.islink(path):
            return "dangling symbolic link"
        return e.strerror or str(e)
    m = st.st_mode
    if stat.S_ISREG(m):
        return None
    if stat.S_ISFIFO(m):
        return "FIFO (not read)"
    if stat.S_ISCHR(m) or stat.S_ISBLK(m):
        return "device (not read)"
    if stat.S_ISSOCK(m):
        return "socket (not read)"
    if stat.S_ISDIR(m):
        return "folder"
    return "not a regular file"


# ----------------------------------------------------------------------------
# conversion options

def describe_options(declared: Iterable[registry.Option]) -> list[str]:
    """One line per option: ``name=TYPE  help (default ...)``."""
    out = []
    for o in declared:
        default = f" (default {o.default})" if o.default is not None else ""
        out.append(f"{o.name}={o.type.__name__.upper()}  {o.help}{default}")
    return out


def scene_options(codec: registry.Codec, given: dict, *, strict: bool = True) -> dict:
    """``given`` checked against ``codec.export_options`` and typed.

    ``strict``: an undeclared name is a :class:`UsageError` naming the valid
    ones; otherwise (a batch over several formats) undeclared names are left
    out, the batch having checked that some format declares them."""
    declared = tuple(codec.export_options)
    if not strict:
        names = {o.name for o in declared}
        given = {k: v for k, v in given.items() if k in names}
    try:
        return registry.coerce_options(declared, given, what=codec.name)
    except ValueError as e:
        raise UsageError(str(e)) from None


# ----------------------------------------------------------------------------
# JSON output without building the whole text

_CHUNK = 1 << 20


def trailing_share(doc: Any, size: int) -> float:
    """The share of a file that is undecoded trailing bytes."""
    return len(doc.trailing) / size if size else 0.0


def _utf8_buffer(out: IO[str]) -> Any:
    """The binary buffer under a UTF-8 text stream, or None."""
    buf = getattr(out, "buffer", None)
    enc = (getattr(out, "encoding", None) or "").lower().replace("-", "").replace("_", "")
    return buf if buf is not None and enc == "utf8" else None


def write_json(doc: Any, form: str, out: IO[str], *, indent: int | None = 2) -> None:
    """Write ``doc``'s JSON form to a text stream: the text of
    ``doc.dumps(form, indent)`` (``indent`` 2 or None); a UTF-8 stream with a
    binary buffer gets the bytes directly.

    Trailing bytes over 1 MiB are written as hex in 1 MiB slices, each
    envelope value separately, so a file of mostly opaque bytes costs about its
    own size in memory instead of several times the JSON text."""
    from .core import jsontext
    trailing = doc.trailing
    if len(trailing) <= _CHUNK:  # (the usual case: the text in one piece)
        with jsontext.native_arrays():
            obj = doc.to_json(form)
        raw = _utf8_buffer(out)
        if raw is not None:  # (a UTF-8 file: its bytes, no text copy in between)
            out.flush()
            raw.write(jsontext.dumps_bytes(obj, indent))
        else:
            out.write(jsontext.dumps(obj, indent))
        return
    doc.trailing = b""
    try:
        with jsontext.native_arrays():
            obj = doc.to_json(form)
    finally:
        doc.trailing = trailing
    nl = "\n" if indent is not None else ""
    pad = " " * (indent or 0)
    sep = "," + nl
    out.write("{" + nl)
    first = True
    for key, value in obj.items():
        if not first:
            out.write(sep)
        first = False
        out.write(f"{pad}{jsontext.dumps(key)}:{' ' if indent is not None else ''}")
        if key == "trailing" and trailing:
            out.write('"')
            view = memoryview(trailing)
            for i in range(0, len(view), _CHUNK):
                out.write(view[i:i + _CHUNK].hex())
            out.write('"')
            continue
        out.write(jsontext.dumps(value, indent, depth=1))
    out.write(nl + "}")
