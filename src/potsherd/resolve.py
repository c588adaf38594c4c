"""Finding and reading the files a document refers to (skeletons, animations,
textures, companion files), the one way every family does it.

Games store references as Windows paths, relative to a client folder and in any
case; files on a case-sensitive disk must be matched by name, folder by folder.
Referenced files are as hostile as the file that names them, so they are read
within the same :class:`~potsherd.core.limits.Limits` (size checked before reading)
and decoded with them.  Directory listings are cached in a :class:`Listings`
object that a batch can share between the files it converts.

The one rule for every referenced file (glTF buffers and images, FBX textures,
Knight Online parts, Darkstar bitmaps and palettes, TRLE companions...): a
reference is percent-decoded (URIs) and normalised, then must lie inside the
referring file's folder tree, the game tree found by its layout, or an explicit
``data_root`` (:class:`Confinement`).  It is opened without following links
below the allowed root it resolves into (a link whose target stays inside the
roots is followed by resolving it first, never at open time), without blocking
(a FIFO is refused, not waited on), and checked with ``fstat`` *after* opening:
only regular files are read, within ``Limits.max_input`` per file and in total.
A refusal is a :class:`ReferenceRefused` naming the reference, never the
target's bytes or an OS error about a path outside the roots.
"""
from __future__ import annotations

import errno
import os
import posixpath
import stat
import urllib.parse
from pathlib import Path
from typing import Any, Callable, Iterable

from .core.errors import FormatError, LimitError
from .core.limits import DEFAULT_LIMITS, Limits

#: files indexed below a data root when a reference is looked up by bare name
MAX_INDEXED_FILES = 20000
#: parent folders of the source looked at for a game tree's layout (never roots
#: themselves unless their layout says they are the game's root)
GAME_TREE_DEPTH = 6


class ReferenceRefused(FormatError):
    """A referenced file that is outside the allowed folders, not a regular
    file, or over the limits.  The message names the reference as written."""


def ref_text(ref: Any) -> str:
    """A reference as text: stored bytes are read as cp949 (Korean clients),
    falling back to Latin-1, so every byte sequence names something."""
    if isinstance(ref, (bytes, bytearray)):
        raw = bytes(ref).split(b"\0", 1)[0]
        try:
            return raw.decode("cp949")
        except UnicodeDecodeError:
            return raw.decode("latin-1")
    if isinstance(ref, os.PathLike):
        return os.fsdecode(ref)
    return "" if ref is None else str(ref)


def ref_parts(ref: Any, name_of: Callable[[Any], str] = ref_text) -> list[str]:
    """The folder and file names of a reference (either slash, no drive, no ``..``)."""
    parts = [p for p in name_of(ref).replace("\\", "/").strip().split("/")
             if p not in ("", ".")]
    if parts and len(parts[0]) == 2 and parts[0].endswith(":"):
        parts = parts[1:]  # a Windows drive
    return [] if ".." in parts else parts


class Listings:
    """Cached case-insensitive directory listings (share one across a batch)."""

    def __init__(self, max_indexed: int = MAX_INDEXED_FILES) -> None:
        #: files looked at below one root by :meth:`by_name`
        self.max_indexed = max_indexed
        self._entries: dict[Path, dict[str, str]] = {}
        self._index: dict[Path, dict[str, Path]] = {}
        self._trees: dict[tuple, tuple[tuple[str, str], ...]] = {}

    def entries(self, folder: Path) -> dict[str, str]:
        """Lower-case name -> name as stored, for one folder (empty when unreadable)."""
        folder = Path(folder)
        listing = self._entries.get(folder)
        if listing is None:
            try:
                names = sorted(os.listdir(folder))
            except OSError:
                names = []
            listing = {}
            for n in names:
                listing.setdefault(n.lower(), n)
            self._entries[folder] = listing
        return listing

    def child(self, folder: Path, name: str) -> Path | None:
        real = self.entries(folder).get(name.lower())
        return Path(folder) / real if real is not None else None

    def walk(self, root: Path, parts: Iterable[str]) -> Path | None:
        """``root/part/part...`` matched case-insensitively, or None."""
        cur: Path | None = Path(root)
        for part in parts:
            cur = self.child(cur, part)
            if cur is None:
                return None
        return cur

    def tree(self, root: Path, members_of: Callable[[str], list[str]] | None = None
             ) -> tuple[tuple[str, str], ...]:
        """``(lower-case base name, path)`` of the files below ``root`` in sorted
        walk order, at most ``max_indexed`` of them.  With ``members_of`` (a
        container's member names, e.g. a game volume's) each container's members
        follow it as ``CONTAINER::member``, so a bare name finds them too."""
        key = (Path(root), members_of)
        listing = self._trees.get(key)
        if listing is None:
            out: list[tuple[str, str]] = []
            count = 0
            for folder, dirs, files in os.walk(root):
                dirs.sort()
                for f in sorted(files):
                    count += 1
                    if count > self.max_indexed:
                        break
                    p = os.path.join(folder, f)
                    out.append((f.lower(), p))
                    if members_of is not None:
                        out.extend((m.lower().replace("\\", "/").rsplit("/", 1)[-1], f"{p}::{m}")
                                   for m in members_of(p))
                if count > self.max_indexed:
                    break
            listing = self._trees[key] = tuple(out)
        return listing

    def by_name(self, root: Path, name: str) -> Path | None:
        """A file named ``name`` anywhere below ``root`` (the first in sorted walk
        order; at most ``max_indexed`` files are looked at)."""
        root = Path(root)
        index = self._index.get(root)
        if index is None:
            index = {}
            for base, p in self.tree(root):
                index.setdefault(base, Path(p))
            self._index[root] = index
        return index.get(name.lower())

    def sibling(self, path: str | os.PathLike, ext: str) -> Path | None:
        """The file beside ``path`` with the same stem and extension ``ext`` (any case)."""
        p = Path(os.fspath(path))
        return self.child(p.parent, p.stem + ext)


def is_regular_file(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | \
    getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)


def _read_fd(fd: int, limits: Limits, what: str, budget: list | None = None) -> bytes:
    """Bytes of an opened descriptor: a regular file (fstat after opening) no
    larger than ``max_input`` (and than what is left of ``budget``)."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise ReferenceRefused(f"{what}: not a regular file", path=what)
    if st.st_size > limits.max_input:
        raise LimitError(f"referenced file of {st.st_size} bytes exceeds the limit of "
                         f"{limits.max_input}", offset=0, path=what)
    if budget is not None:
        if st.st_size > budget[0]:
            raise LimitError(f"{what}: referenced files exceed the limit of {limits.max_input} "
                             "bytes in total", offset=0, path=what)
        budget[0] -= st.st_size
    os.set_blocking(fd, True)
    with open(fd, "rb", closefd=False) as f:
        data = f.read(st.st_size)   # what fstat said, not what a growing file offers
    return data


def read_bounded(path: str | os.PathLike, limits: Limits = DEFAULT_LIMITS) -> bytes:
    """A regular file's bytes (a path the user named, or one a
    :class:`Confinement` checked), refused (LimitError) before reading when
    larger than ``limits.max_input``; a FIFO or device is refused, not opened
    for blocking reads."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as e:
        raise ReferenceRefused(f"cannot open: {e.strerror or e}", path=os.fspath(path)) from None
    try:
        return _read_fd(fd, limits, os.fspath(path))
    finally:
        os.close(fd)


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def uri_path(uri: str) -> str | None:
    """A relative file URI as a relative path (percent-decoded, then checked):
    None for a scheme, an absolute path, a drive or a NUL, whatever the encoding."""
    if urllib.parse.urlsplit(uri).scheme:
        return None
    text = urllib.parse.unquote(uri.split("#", 1)[0].split("?", 1)[0])
    if "\0" in text or not text:
        return None
    text = text.replace("\\", "/")
    if text.startswith("/") or (len(text) >= 2 and text[1] == ":") or os.path.isabs(text):
        return None
    return text


class Confinement:
    """The folders references may resolve into, and the race-free way of reading
    a file there.  ``roots`` are folders (None entries skipped); a path is
    allowed when its normalised form and its real path (links resolved) are
    both inside one of them.  Every read is counted against one budget of
    ``limits.max_input`` bytes (a document naming one big file a thousand
    times reads it once: results are cached by file identity)."""

    def __init__(self, roots: Iterable[str | os.PathLike | None],
                 limits: Limits = DEFAULT_LIMITS) -> None:
        self.limits = limits
        self.roots: list[str] = []
        for r in roots:
            if not r:
                continue
            try:
                real = os.path.realpath(os.fspath(r))
            except (OSError, ValueError):
                continue
            if os.path.isdir(real) and real not in self.roots:
                self.roots.append(real)
        self._budget = [limits.max_input]
        self._cache: dict[tuple, bytes] = {}

    def allowed(self, path: str | os.PathLike) -> str | None:
        """The real path of ``path`` (links resolved) when it lies inside the
        roots, else None."""
        try:
            real = os.path.realpath(os.path.abspath(os.fspath(path)))
        except (OSError, ValueError):
            return None
        return real if any(_within(real, r) for r in self.roots) else None

    def join(self, folder: str | os.PathLike, relative: str) -> str | None:
        """``folder/relative`` normalised, when it stays inside the roots."""
        p = os.path.normpath(os.path.join(os.fspath(folder), relative))
        return p if self.allowed(p) else None

    def open(self, path: str | os.PathLike, ref: str | None = None) -> int:
        """A descriptor of ``path`` opened component by component from the root
        it resolves into, never following a link (one swapped in after the
        check fails the open), without blocking on a FIFO."""
        what = ref if ref is not None else os.fspath(path)
        real = self.allowed(path)
        if real is None:
            raise ReferenceRefused(f"reference {what!r} leaves the folders potsherd may read "
                                   "(the file's folder tree or --data-root)", path=what)
        root = max((r for r in self.roots if _within(real, r)), key=len)
        parts = [p for p in os.path.relpath(real, root).split(os.sep) if p not in ("", ".")]
        if not parts or ".." in parts:
            raise ReferenceRefused(f"reference {what!r} is not a file", path=what)
        try:
            fd = os.open(root, os.O_RDONLY | _DIRECTORY | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            raise ReferenceRefused(f"reference {what!r}: its folder cannot be opened",
                                   path=what) from None
        try:
            for part in parts[:-1]:
                nxt = os.open(part, os.O_RDONLY | _DIRECTORY | _NOFOLLOW |
                              getattr(os, "O_CLOEXEC", 0), dir_fd=fd)
                os.close(fd)
                fd = nxt
            st = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
            if not stat.S_ISREG(st.st_mode):   # not even opened: a device may act on open
                raise ReferenceRefused(f"reference {what!r} is not a regular file", path=what)
            out = os.open(parts[-1], _OPEN_FLAGS | _NOFOLLOW, dir_fd=fd)
        except ReferenceRefused:
            os.close(fd)
            raise
        except OSError as e:
            os.close(fd)
            reason = "not found" if e.errno == errno.ENOENT else "changed while being opened" \
                if e.errno in (errno.ELOOP, errno.ENOTDIR) else "cannot be opened"
            raise ReferenceRefused(f"reference {what!r}: {reason}", path=what) from None
        os.close(fd)
        return out

    def read(self, path: str | os.PathLike, ref: str | None = None) -> bytes:
        """The bytes of a regular file inside the roots (see :meth:`open`)."""
        what = ref if ref is not None else os.fspath(path)
        fd = self.open(path, ref)
        try:
            st = os.fstat(fd)
            key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
            if key in self._cache:
                return self._cache[key]
            data = _read_fd(fd, self.limits, what, self._budget)
        finally:
            os.close(fd)
        self._cache[key] = data
        return data


def read_spec(spec: str, confinement: Confinement, ref: str | None = None) -> bytes:
    """The bytes of a found reference ``FILE`` or ``ARCHIVE::member``: the file
    read by ``confinement``'s rule, members taken from it within its limits."""
    from .containers import SEPARATOR, open_container
    disk, *members = spec.split(SEPARATOR)
    data = confinement.read(disk, ref)
    where = disk
    for name in members:
        doc = open_container(data, where, confinement.limits)
        data = doc.codec.read_member(doc, name)
        where = f"{where}{SEPARATOR}{name}"
    return data


def decodes_as_image(data: bytes) -> bool:
    """Does Pillow read ``data`` as an image (header and structure checked,
    pixels not decoded)?  KTX2 (kept as data) is told by its magic.  A
    referenced file is embedded as an image only when this holds."""
    if bytes(data[:12]) == b"\xabKTX 20\xbb\r\n\x1a\n":
        return True
    import io
    from PIL import Image as PILImage
    try:
        with PILImage.open(io.BytesIO(data)) as im:
            im.verify()
        return True
    except Exception:  # noqa: BLE001 - anything Pillow refuses is not an image
        return False


def find_game_root(source: str | os.PathLike, markers: Iterable[str],
                   depth: int = GAME_TREE_DEPTH, need: int = 2) -> Path | None:
    """The nearest folder at or above ``source``'s folder that has at least
    ``need`` of the sub-folders ``markers`` (a game client's layout, e.g. Chr,
    Item, Object), or None.  Folders without the layout are never roots."""
    want = {m.lower() for m in markers}
    here = Path(os.path.realpath(os.fspath(source))).parent
    for folder in [here, *list(here.parents)[:depth]]:
        try:
            with os.scandir(folder) as it:
                found = {e.name.lower() for e in it
                         if e.name.lower() in want and e.is_dir(follow_symlinks=False)}
        except OSError:
            continue
        if len(found) >= need:
            return folder
    return None


class Resolver:
    """Finds what a document refers to: under ``data_root`` first, then in the
    source's game tree (the nearest folder above it with the layout
    ``game_layout`` names, when given) and beside the source, case-insensitively;
    as a last resort the bare file name in the first of those folders, then
    anywhere below ``data_root``.  Nothing outside those folders is found or
    read (:class:`Confinement`); ``given`` are paths the user named as options
    (read as named).  Decoded documents are cached per path."""

    def __init__(self, source: str | os.PathLike | None = None,
                 data_root: str | os.PathLike | None = None, *,
                 limits: Limits | None = None, listings: Listings | None = None,
                 depth: int = GAME_TREE_DEPTH,
                 name_of: Callable[[Any], str] = ref_text,
                 game_layout: Iterable[str] = (),
                 given: Iterable[Any] = ()) -> None:
        #: how a stored reference becomes text (a family's text encoding)
        self.name_of = name_of
        self.limits = limits or DEFAULT_LIMITS
        self.listings = listings or Listings()
        self.data_root = Path(os.fspath(data_root)) if data_root else None
        self.roots: list[Path] = [self.data_root] if self.data_root else []
        self.given = {os.fspath(g) for g in given if isinstance(g, (str, os.PathLike)) and g}
        if source:
            here = Path(os.path.realpath(os.fspath(source))).parent
            game = find_game_root(source, game_layout, depth) if game_layout else None
            self.roots.extend([here, game] if game is not None and game != here else [here])
        self.confinement = Confinement(self.roots, self.limits)
        self._docs: dict[Path, Any] = {}

    def _ok(self, hit: Path | None) -> bool:
        return hit is not None and self.confinement.allowed(hit) is not None and \
            is_regular_file(hit)

    def find(self, ref: Any) -> Path | None:
        """The file a reference names (inside the allowed folders), or None."""
        if isinstance(ref, (str, os.PathLike)) and os.fspath(ref) in self.given and \
                is_regular_file(Path(os.fspath(ref))):
            return Path(os.fspath(ref))  # a path the user gave as an option
        parts = ref_parts(ref, self.name_of)
        if not parts:
            return None
        for k in range(len(parts)):   # then a path from a folder above a root (C:\client\...):
            for root in self.roots:         # its tail inside the roots, longest first
                hit = self.listings.walk(root, parts[k:])
                if self._ok(hit):
                    return hit
        if self.roots:
            hit = self.listings.child(self.roots[0], parts[-1])
            if self._ok(hit):
                return hit
        if self.data_root is not None:
            hit = self.listings.by_name(self.data_root, parts[-1])
            if self._ok(hit):
                return hit
        return None

    def read(self, path: str | os.PathLike, ref: Any = None) -> bytes:
        """A found file's bytes, within the resolver's limits and folders."""
        if os.fspath(path) in self.given:
            return read_bounded(path, self.limits)
        return self.confinement.read(path, None if ref is None else self.name_of(ref))

    def load(self, ref: Any, warnings: list[str], what: str):
        """The decoded document a reference names, or None with a warning saying why
        (not found, unreadable, refused by its decoder or by the limits)."""
        if not self.name_of(ref):
            return None
        path = self.find(ref)
        if path is None:
            warnings.append(f"{what} {self.name_of(ref)!r} not found")
            return None
        if path in self._docs:
            return self._docs[path]
        from . import registry
        try:
            doc = registry.decode(self.read(path, ref), path=str(path), limits=self.limits)
        except (FormatError, OSError) as e:
            msg = e.strerror if isinstance(e, OSError) else str(e)
            warnings.append(f"{what} {path.name}: {msg}")
            doc = None
        self._docs[path] = doc
        return doc
