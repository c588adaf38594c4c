"""Opening a file by a client-supplied relative path without ever leaving a folder.

The path is checked as text first (no ``..``, not absolute, no NUL, no drive), then
opened one component at a time relative to a directory descriptor held open since
start-up, each component with ``O_NOFOLLOW``: a symbolic link anywhere on the way is
refused, and a folder swapped for a link after the check cannot redirect the open
(there is no separate check to race).  The final descriptor must be a regular file
(``O_NONBLOCK`` so a FIFO cannot hang the open) or, when asked, a folder.

Where ``dir_fd`` is not supported (Windows) the fallback resolves, opens, then
verifies with ``fstat`` that the opened object is the one inside the folder.
"""
from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_BINARY = getattr(os, "O_BINARY", 0)
_AT_SUPPORTED = os.open in os.supports_dir_fd and bool(_O_NOFOLLOW and _O_DIRECTORY)


def shown(rel: str) -> str:
    """A client path as echoed in a message: short (the client sent it; it is not a
    path of ours)."""
    return rel if len(rel) <= 200 else rel[:200] + "..."


class Refused(Exception):
    """A path the folder does not serve: ``status`` is 400, 403 or 404; the message
    names only the relative path the client sent."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        #: the message without the client's path
        self.reason = message.rpartition(": ")[2]


def split_relative(rel: str) -> list[str]:
    """The components of a client path, or :class:`Refused` (403) when it could name
    anything outside the folder.  Backslashes count as separators (game paths)."""
    if not isinstance(rel, str) or not rel:
        raise Refused(400, "missing path")
    if "\0" in rel or len(rel) > 4096:
        raise Refused(400, "malformed path")
    text = rel.replace("\\", "/")
    if text.startswith("/") or os.path.isabs(rel) or (len(text) > 1 and text[1] == ":"):
        raise Refused(403, "an absolute path: outside the served folder")  # not echoed
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise Refused(403, f"{shown(rel)}: outside the served folder")
    if not parts:
        raise Refused(400, "missing path")
    return parts


class Folder:
    """A folder whose files are opened only beneath it (see the module docstring)."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(os.path.realpath(path))
        if not self.path.is_dir():
            raise FileNotFoundError(f"{path}: not a folder")
        self._fd = os.open(self.path, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC) \
            if _AT_SUPPORTED else None

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def open(self, rel: str, *, folder: bool = False) -> int:
        """A descriptor of ``rel`` (a regular file, or a folder when ``folder``);
        the caller closes it.  Refuses links, special files and anything outside."""
        parts = split_relative(rel)
        if not _AT_SUPPORTED:
            return self._open_fallback(rel, parts, folder)
        fd = os.dup(self._fd)
        try:
            for i, part in enumerate(parts):
                last = i == len(parts) - 1
                flags = os.O_RDONLY | _O_NOFOLLOW | _O_CLOEXEC
                flags |= _O_DIRECTORY if (not last or folder) else _O_NONBLOCK | _O_BINARY
                try:
                    nfd = os.open(part, flags, dir_fd=fd)
                except OSError as e:
                    raise self._refusal(rel, e, fd, part) from None
                os.close(fd)
                fd = nfd
            st = os.fstat(fd)
            if folder and not stat.S_ISDIR(st.st_mode):
                raise Refused(404, f"{shown(rel)}: not a folder")
            if not folder and not stat.S_ISREG(st.st_mode):
                raise Refused(403, f"{shown(rel)}: not a regular file")
            out, fd = fd, -1
            return out
        finally:
            if fd >= 0:
                os.close(fd)

    def _refusal(self, rel: str, e: OSError, dir_fd: int, part: str) -> Refused:
        if e.errno == errno.ELOOP:
            return Refused(403, f"{shown(rel)}: a symbolic link")
        if e.errno == errno.ENOTDIR:
            try:  # O_DIRECTORY | O_NOFOLLOW on a link says ENOTDIR on some kernels
                if stat.S_ISLNK(os.lstat(part, dir_fd=dir_fd).st_mode):
                    return Refused(403, f"{shown(rel)}: a symbolic link")
            except OSError:
                pass
        if e.errno in (errno.EACCES, errno.EPERM):
            return Refused(403, f"{shown(rel)}: not readable")
        return Refused(404, f"{shown(rel)}: no such file")

    def _open_fallback(self, rel: str, parts: list[str], folder: bool) -> int:
        full = self.path.joinpath(*parts)
        real = Path(os.path.realpath(full))
        if real != full:  # a link on the way (or case folding): refuse
            raise Refused(403, f"{shown(rel)}: a symbolic link or outside the served folder")
        try:
            before = os.lstat(full)
            if folder:
                if not stat.S_ISDIR(before.st_mode):
                    raise Refused(404, f"{shown(rel)}: not a folder")
                return -1  # no descriptor for folders without dir_fd; the path was checked
            if not stat.S_ISREG(before.st_mode):
                raise Refused(403, f"{shown(rel)}: not a regular file")
            fd = os.open(full, os.O_RDONLY | _O_BINARY | _O_NOFOLLOW)
        except OSError:
            raise Refused(404, f"{shown(rel)}: no such file") from None
        after = os.fstat(fd)
        if (after.st_dev, after.st_ino) != (before.st_dev, before.st_ino) or \
                not stat.S_ISREG(after.st_mode):
            os.close(fd)
            raise Refused(403, f"{shown(rel)}: changed while opening")
        return fd

    def real(self, rel: str) -> Path:
        """The absolute path of a relative path already opened through :meth:`open`."""
        return self.path.joinpath(*split_relative(rel))
