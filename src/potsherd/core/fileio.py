"""Output files that are never half-written and never replace what is not a file.

A regular file is written to a temporary file beside it and renamed into
place only on success, so an interrupted or failing write leaves the old file
(or nothing) and no temporary file.  The rename only ever replaces a regular
file: a symbolic link is written *through* (the temporary file sits beside its
target, the link stays), and a character device or FIFO is written directly
(a FIFO without a reader is refused at once instead of blocking).  A folder,
a block device or a socket is refused.

Temporary names carry the writing process's id (``.potsherd-PID-*.part``) so
that a batch driver that had to kill a worker can remove what it left.
"""
from __future__ import annotations

import contextlib
import errno
import functools
import glob
import os
import stat
import tempfile
from typing import IO, Iterator

TEMP_PREFIX = ".potsherd-"
TEMP_SUFFIX = ".part"


#: pieces in which a stream of unknown size (standard input, a FIFO) is read
STREAM_CHUNK = 1 << 20


def read_stream(f: IO[bytes], limit: int) -> bytes:
    """Up to ``limit + 1`` bytes of a stream (standard input, a FIFO) read in
    1 MiB pieces, so memory follows what is actually sent, not the limit
    (one ``read(limit + 1)`` asks the allocator for the whole limit)."""
    parts: list[bytes] = []
    total = 0
    while total <= limit:
        chunk = f.read(min(STREAM_CHUNK, limit + 1 - total))
        if not chunk:
            break
        parts.append(chunk)
        total += len(chunk)
    return b"".join(parts)


def atomic_write(path: str | os.PathLike, data: bytes) -> None:
    with atomic_open(path) as f:
        f.write(data)


@functools.lru_cache(maxsize=1024)
def _ensure_dir(path: str) -> None:
    """``os.makedirs`` once per folder (recent ones remembered, bounded)."""
    os.makedirs(path, exist_ok=True)


@contextlib.contextmanager
def owned_open(path: str, tag: str = "put") -> Iterator:
    """Yield a binary file that replaces ``path`` when the block succeeds, for
    a folder potsherd itself is creating (a preservation package): a temporary
    name, then a rename, without :func:`atomic_open`'s checks of what ``path``
    points to (a package of 100,000 files would pay for them 100,000 times).
    One writer per process and ``tag`` at a time."""
    folder = os.path.dirname(path)
    _ensure_dir(folder)
    tmp = os.path.join(folder, f"{TEMP_PREFIX}{os.getpid()}-{tag}{TEMP_SUFFIX}")
    try:
        try:
            f = open(tmp, "wb")
        except FileNotFoundError:   # a folder removed since it was remembered
            _ensure_dir.cache_clear()
            os.makedirs(folder, exist_ok=True)
            f = open(tmp, "wb")
        with f:
            yield f
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


def owned_write(path: str, data: bytes) -> None:
    """:func:`owned_open` for one buffer."""
    with owned_open(path) as f:
        f.write(data)


def forget_folders() -> None:
    """Forget the folders :func:`owned_open` has made (after removing some)."""
    _ensure_dir.cache_clear()


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP held back (delivered when the block ends), so a
    group of renames is not cut in the middle.  Blocking them in this thread is
    not enough: a signal sent to the process may be taken by another thread, and
    Python then runs the handler in the main thread at once.  So the Python
    handlers are also swapped for ones that note the signal, and the noted
    signal's own handler runs when the block ends."""
    import signal
    import threading
    sigs = {getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n)}
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    noted: list[int] = []
    handlers = {}
    for sig in sigs:
        handler = signal.getsignal(sig)
        if callable(handler):
            handlers[sig] = handler
            signal.signal(sig, lambda signum, frame: noted.append(signum))
    block = getattr(signal, "pthread_sigmask", None)
    old = block(signal.SIG_BLOCK, sigs) if block is not None else None
    try:
        yield
    finally:
        if block is not None:
            block(signal.SIG_SETMASK, old)
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
        if noted:
            handlers[noted[0]](noted[0], None)


def atomic_write_all(items: "list[tuple[str | os.PathLike, bytes]]") -> None:
    """Write several files as one output (``.gltf`` + ``.bin`` + images, a
    character and its parts): every temporary file is written first, then all
    are renamed into place with interruptions held back, in the order given
    (put the file that names the others last).  An interruption or error
    before the renames leaves every old file and no temporary file."""
    staged: list[tuple[str, str]] = []
    streams: list[tuple[str, bytes]] = []
    try:
        for path, data in items:
            path = os.fspath(path)
            kind, real = output_target(path)
            if kind == "stream":
                streams.append((path, data))
                continue
            folder = os.path.dirname(os.path.abspath(real))
            try:
                os.makedirs(folder, exist_ok=True)
                fd, tmp = tempfile.mkstemp(prefix=f"{TEMP_PREFIX}{os.getpid()}-",
                                           suffix=TEMP_SUFFIX, dir=folder)
            except OSError as e:
                raise _named(e, path) from None
            staged.append((tmp, real))
            try:
                mode = stat.S_IMODE(os.stat(real).st_mode)
            except OSError:
                mode = 0o666 & ~_umask()
            os.chmod(tmp, mode)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        with _signals_held():
            while staged:
                tmp, real = staged[0]
                os.replace(tmp, real)
                staged.pop(0)
    except BaseException:
        for tmp, _ in staged:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise
    for path, data in streams:
        with _open_stream(path) as f:
            f.write(data)


def output_target(path: str | os.PathLike) -> tuple[str, str]:
    """``(kind, real_path)`` for an output path: ``"file"`` (regular, or absent;
    ``real_path`` is the symlink's target when ``path`` is a link), or
    ``"stream"`` (a character device, a FIFO, or a ``/proc`` / ``/dev/fd``
    descriptor alias such as ``/dev/stdout``).  Raises ``OSError`` (naming
    ``path``) for a folder, a block device, a socket or a symlink loop."""
    path = os.fspath(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):            # dangling link: create its target
            return "file", os.path.realpath(path)
        return "file", path
    except OSError as e:
        raise _named(e, path) from None
    mode = st.st_mode
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        return "stream", path
    if stat.S_ISREG(mode):
        if _descriptor_alias(path):     # /dev/stdout of a shell redirection to a file
            return "stream", path
        return "file", os.path.realpath(path) if os.path.islink(path) else path
    what = "a block device" if stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode) \
        else "a special file"
    raise OSError(errno.EINVAL, f"is {what}; refusing to write to it", path)


def _descriptor_alias(path: str) -> bool:
    """True for names of an open descriptor (``/dev/stdout``, ``/dev/fd/N``,
    ``/proc/self/fd/N``): replacing what they resolve to would detach the file
    from the descriptor the caller redirected."""
    absolute = os.path.abspath(path)
    if absolute.startswith(("/dev/fd/", "/proc/")) or absolute in ("/dev/stdout", "/dev/stderr"):
        return True
    link = absolute
    for _ in range(8):                  # follow the link chain by hand, stopping at /proc
        if not os.path.islink(link):
            return False
        link = os.path.join(os.path.dirname(link), os.readlink(link))
        if link.startswith(("/proc/", "/dev/fd/")):
            return True
    return False


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike) -> Iterator:
    """Yield a binary file; it replaces ``path`` only if the block succeeds.

    OS errors raised while writing name ``path`` (not the temporary file), so
    callers can print ``PATH: reason``."""
    path = os.fspath(path)
    kind, real = output_target(path)
    if kind == "stream":
        with _open_stream(path) as f:
            yield f
        return
    folder = os.path.dirname(os.path.abspath(real))
    try:
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f"{TEMP_PREFIX}{os.getpid()}-", suffix=TEMP_SUFFIX,
                                   dir=folder)
    except OSError as e:
        raise _named(e, path) from None
    try:
        try:
            mode = stat.S_IMODE(os.stat(real).st_mode)   # keep the mode of the file replaced
        except OSError:
            mode = 0o666 & ~_umask()          # mkstemp makes 0600; new outputs get normal modes
        os.chmod(tmp, mode)
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
        os.replace(tmp, real)
    except BaseException as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(e, OSError) and e.filename in (None, tmp):
            raise _named(e, path) from None
        raise


@contextlib.contextmanager
def _open_stream(path: str) -> Iterator:
    """A device or FIFO opened for writing without blocking on a FIFO with no reader."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as e:
        if e.errno == errno.ENXIO:
            raise OSError(errno.ENXIO, "FIFO has no reader", path) from None
        raise _named(e, path) from None
    os.set_blocking(fd, True)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
    except OSError as e:
        if e.filename is None:
            raise _named(e, path) from None
        raise


def _named(e: OSError, path: str) -> OSError:
    """The same OS error, naming ``path``."""
    err = type(e)(e.errno, e.strerror or str(e), path)
    return err


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where the program is so that every ``finally``
    and :func:`atomic_open`'s cleanup runs, as for Ctrl-C."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _terminate(signum, frame) -> None:
    raise Terminated(signum)


def install_cleanup_signals() -> None:
    """Make SIGTERM and SIGHUP unwind like Ctrl-C (temporary files removed,
    nothing half-renamed).  A signal the parent set to be ignored (``nohup``)
    stays ignored; only the main thread can install handlers."""
    import signal
    import threading
    if threading.current_thread() is not threading.main_thread():
        return
    for name in ("SIGTERM", "SIGHUP"):
        sig = getattr(signal, name, None)
        if sig is None:
            continue
        try:
            if signal.getsignal(sig) is signal.SIG_DFL:
                signal.signal(sig, _terminate)
        except (OSError, ValueError):
            pass


def remove_temporaries(folder: str | os.PathLike, pid: int) -> list[str]:
    """Delete the temporary files a (killed) process ``pid`` left in ``folder``."""
    removed = []
    pattern = os.path.join(glob.escape(os.fspath(folder)), f"{TEMP_PREFIX}{pid}-*{TEMP_SUFFIX}")
    for p in glob.glob(pattern):
        with contextlib.suppress(OSError):
            os.unlink(p)
            removed.append(p)
    return removed


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
