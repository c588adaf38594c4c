"""Paths into archives: ``game.vol::shapes/tank.dts`` names a member of a
container file, so every command that reads a file reads members in place.

The syntax lives here and only here: :func:`read_input` is what the command
line and :func:`potsherd.read` call.  A container is any codec with
``member_names(doc)`` and ``read_member(doc, name)`` (the Darkstar volume
today); the part after ``::`` may itself name a member of a nested container.
"""
from __future__ import annotations

import os
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
