"""Atomic output: a temp file in the destination folder, renamed on success."""
from __future__ import annotations

import contextlib
import os
import tempfile
from typing import Iterator


def atomic_write(path: str | os.PathLike, data: bytes) -> None:
    with atomic_open(path) as f:
        f.write(data)


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike) -> Iterator:
    """Yield a binary file; it replaces ``path`` only if the block succeeds."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".potsherd-", suffix=".part", dir=folder)
    try:
        os.chmod(tmp, 0o666 & ~_umask())    # mkstemp makes 0600; outputs get normal modes
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
