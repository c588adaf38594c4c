"""Finding and reading the files a document refers to (skeletons, animations,
textures, companion files), the one way every family does it.

Games store references as Windows paths, relative to a client folder and in any
case; files on a case-sensitive disk must be matched by name, folder by folder.
Referenced files are as hostile as the file that names them, so they are read
within the same :class:`~potsherd.core.limits.Limits` (size checked before reading)
and decoded with them.  Directory listings are cached in a :class:`Listings`
object that a batch can share between the files it converts.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any, Callable, Iterable

from .core.errors import FormatError, LimitError
from .core.limits import DEFAULT_LIMITS, Limits

#: files indexed below a data root when a reference is looked up by bare name
MAX_INDEXED_FILES = 20000
#: parent folders of the source tried as the game tree's root
GAME_TREE_DEPTH = 6


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


def read_bounded(path: str | os.PathLike, limits: Limits = DEFAULT_LIMITS) -> bytes:
    """A regular file's bytes, refused (LimitError) before reading when larger
    than ``limits.max_input``."""
    if not stat.S_ISREG(os.stat(path).st_mode):  # before opening: a FIFO would block
        raise FormatError("a referenced file must be a regular file", path=os.fspath(path))
    with open(path, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise FormatError("a referenced file must be a regular file", path=os.fspath(path))
        if st.st_size > limits.max_input:
            raise LimitError(f"referenced file of {st.st_size} bytes exceeds the limit of "
                             f"{limits.max_input}", offset=0, path=os.fspath(path))
        return f.read(limits.max_input + 1)


class Resolver:
    """Finds what a document refers to: under ``data_root`` first, then beside the
    source and in its parent folders (the game tree), case-insensitively; as a last
    resort the bare file name in the first of those folders, then anywhere below
    ``data_root``.  Decoded documents are cached per path."""

    def __init__(self, source: str | os.PathLike | None = None,
                 data_root: str | os.PathLike | None = None, *,
                 limits: Limits | None = None, listings: Listings | None = None,
                 depth: int = GAME_TREE_DEPTH,
                 name_of: Callable[[Any], str] = ref_text) -> None:
        #: how a stored reference becomes text (a family's text encoding)
        self.name_of = name_of
        self.limits = limits or DEFAULT_LIMITS
        self.listings = listings or Listings()
        self.data_root = Path(os.fspath(data_root)) if data_root else None
        self.roots: list[Path] = [self.data_root] if self.data_root else []
        if source:
            here = Path(os.fspath(source)).resolve().parent
            self.roots.extend([here, *list(here.parents)[:depth]])
        self._docs: dict[Path, Any] = {}

    def find(self, ref: Any) -> Path | None:
        """The file a reference names, or None."""
        if isinstance(ref, (str, os.PathLike)) and self.name_of(ref) and \
                is_regular_file(Path(os.fspath(ref))):
            return Path(os.fspath(ref))  # a path given as an option
        parts = ref_parts(ref, self.name_of)
        if not parts:
            return None
        for root in self.roots:
            hit = self.listings.walk(root, parts)
            if hit is not None and is_regular_file(hit):
                return hit
        if self.roots:
            hit = self.listings.child(self.roots[0], parts[-1])
            if hit is not None and is_regular_file(hit):
                return hit
        if self.data_root is not None:
            hit = self.listings.by_name(self.data_root, parts[-1])
            if hit is not None and is_regular_file(hit):
                return hit
        return None

    def read(self, path: str | os.PathLike) -> bytes:
        """A found file's bytes, within the resolver's limits."""
        return read_bounded(path, self.limits)

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
            doc = registry.decode(self.read(path), path=str(path), limits=self.limits)
        except (FormatError, OSError) as e:
            warnings.append(f"{what} {path.name}: {e}")
            doc = None
        self._docs[path] = doc
        return doc
