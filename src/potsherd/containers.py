"""Paths into archives: ``game.vol::shapes/tank.dts`` names a member of a
container file, so every command that reads a file reads members in place.

The syntax lives here and only here: :func:`read_input` is what the command
line and :func:`potsherd.read` call.  A container is any codec with
``member_names(doc)`` and ``read_member(doc, name)`` (the Darkstar volume
today); the part after ``::`` may itself name a member of a nested container.
"""
from __future__ import annotations

import hashlib
import os
import re
import stat

from .core.errors import FormatError, LimitError
from .core.limits import DEFAULT_LIMITS, Limits

SEPARATOR = "::"


def split_member_path(path: str) -> tuple[str, list[str]]:
    """``(file on disk, [member, nested member, ...])``; a path that exists on
    disk as written is a plain file even if it contains ``::``."""
    if SEPARATOR not in path or os.path.exists(path):
        return path, []
    head, *members = path.split(SEPARATOR)
    return head, members


def read_file_bytes(path: str, limits: Limits = DEFAULT_LIMITS) -> bytes:
    with open(path, "rb") as f:
        st = os.fstat(f.fileno())
        size = st.st_size
        if size > limits.max_input:  # refuse before reading it into memory
            raise LimitError(f"input of {size} bytes exceeds the limit of {limits.max_input}",
                             offset=0, path=path)
        if stat.S_ISREG(st.st_mode):
            return f.read(size)  # exactly the file's size, not a buffer sized by the limit
        from .core.fileio import read_stream
        data = read_stream(f, limits.max_input)
        if len(data) > limits.max_input:
            raise LimitError(f"input exceeds the limit of {limits.max_input}", offset=0, path=path)
        return data


def open_container(data: bytes, path: str, limits: Limits = DEFAULT_LIMITS):
    """Decode ``data`` as a container; a FormatError when its codec is not one."""
    from . import registry
    doc = registry.decode(data, path=path, limits=limits)
    if not hasattr(doc.codec, "read_member"):
        raise FormatError(f"{path}: a {doc.format} file is not an archive "
                          f"(no members to name after '{SEPARATOR}')")
    return doc


def read_input(path: str, limits: Limits = DEFAULT_LIMITS) -> bytes:
    """The bytes a path names: a file, or a member of a container file."""
    disk, members = split_member_path(path)
    data = read_file_bytes(disk, limits)
    where = disk
    for name in members:
        doc = open_container(data, where, limits)
        data = doc.codec.read_member(doc, name)
        where = f"{where}{SEPARATOR}{name}"
    return data


def member_name(path: str) -> str:
    """The name detection should use for a path (the last member's name)."""
    disk, members = split_member_path(path)
    return members[-1] if members else disk


# ----------------------------------------------------------------------------
# where extracted members go

#: longest file or folder name written (bytes of its UTF-8 form; file systems allow 255)
MAX_NAME_BYTES = 200
_CONTROL = re.compile("[\x00-\x1f\x7f]")


def _short_name(part: str) -> str:
    """A name of at most MAX_NAME_BYTES, kept apart from others by a hash of the whole."""
    if len(part.encode("utf-8", "surrogateescape")) <= MAX_NAME_BYTES:
        return part
    stem, dot, ext = part.rpartition(".")
    if not dot or len(ext) > 16:
        stem, ext = part, ""
    tag = "~" + hashlib.sha1(part.encode("utf-8", "surrogateescape")).hexdigest()[:8]
    tail = ("." + ext if ext else "")
    room = MAX_NAME_BYTES - len(tag.encode()) - len(tail.encode("utf-8", "surrogateescape"))
    cut = stem.encode("utf-8", "surrogateescape")[:room].decode("utf-8", "ignore")
    return cut + tag + tail


def _numbered(name: str, k: int) -> str:
    stem, dot, ext = name.rpartition(".")
    if not dot or not stem:
        return f"{name}~{k}"
    return f"{stem}~{k}.{ext}"


def member_paths(names: list[str]) -> list[tuple[list[str], str | None]]:
    """Where each archive member is extracted, relative to the output folder:
    ``(path parts, why it differs from the stored name or None)``.

    Names are split at either slash; empty, ``.`` and ``..`` parts are dropped
    (nothing is written outside the folder), control characters become ``_``,
    long names are shortened (a hash keeps them apart), an empty name becomes
    ``member``.  Paths are unique ignoring case (the engines look names up
    that way; some file systems too): a repeat becomes ``name~1``, ``name~2``...,
    and a file and a folder of one name never collide (the later one is
    renamed), so extraction never stops half-way on a name."""
    files: set = set()
    dirs: set = set()
    dir_alias: dict = {}
    out: list = []
    for name in names:
        why: list[str] = []
        raw = [p for p in name.replace("\\", "/").split("/")]
        if name[:1] in ("/", "\\"):
            why.append("leading separator dropped")
        parts = []
        for p in raw:
            if p in ("", "."):
                continue
            if p == "..":
                why.append("'..' dropped")
                continue
            q = _CONTROL.sub("_", p)
            if q != p:
                why.append("control characters replaced")
            r = _short_name(q)
            if r != q:
                why.append("name shortened")
            parts.append(r)
        if not parts:
            parts = ["member"]
            why.append("empty name")
        # folders: the same folder for every member in it; renamed where a file has its name
        folders: list[str] = []
        for i, p in enumerate(parts[:-1]):
            key = tuple(x.lower() for x in parts[:i + 1])
            alias = dir_alias.get(key)
            if alias is None:
                cand, k = p, 0
                while tuple(x.lower() for x in folders) + (cand.lower(),) in files:
                    k += 1
                    cand = _numbered(p, k)
                if k:
                    why.append(f"folder {p!r} renamed (a file has its name)")
                alias = cand
                dir_alias[key] = alias
            folders.append(alias)
            dirs.add(tuple(x.lower() for x in folders))
        base, k, cand = parts[-1], 0, parts[-1]
        prefix = tuple(x.lower() for x in folders)
        if prefix + (cand.lower(),) in dirs:
            why.append("a folder has its name")
        elif prefix + (cand.lower(),) in files:
            why.append("name already used")
        while prefix + (cand.lower(),) in files or prefix + (cand.lower(),) in dirs:
            k += 1
            cand = _numbered(base, k)
        files.add(prefix + (cand.lower(),))
        final = folders + [cand]
        # (either slash is a separator: a stored "dir\\file" is no rename)
        out.append((final, "; ".join(dict.fromkeys(why)) if why else None))
    return out
