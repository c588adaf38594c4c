"""Run-time side of the generated code: the on/off switch, the fallback signal and
the small helpers generated functions call."""
from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

import numpy as np


from . import kinds as L


#: the fast path is used unless switched off (tests, benchmarks, debugging)
_ENABLED = True

def set_enabled(flag: bool) -> bool:
    """Switch the fast path on or off globally; returns the previous setting."""
    global _ENABLED
    old, _ENABLED = _ENABLED, bool(flag)
    return old


@contextlib.contextmanager
def reference_only() -> Iterator[None]:
    """Run the block on the reference interpreter only."""
    old = set_enabled(False)
    try:
        yield
    finally:
        set_enabled(old)


class PrivateBuffer(bytearray):
    """Input bytes no one but the document being decoded holds (a file read
    into fresh memory): the generated decoders take its arrays as writable
    views of it instead of copies.  Any other input (bytes, a caller's
    buffer) is copied from, so editing a document never changes it."""

    __slots__ = ()


class _Fallback(Exception):
    """Raised by generated code: let the reference interpreter decide."""


class _Short(_Fallback):
    """Raised by generated code when the input ends before bytes that must be read
    next: the reference, reading the same fields in the same order, fails too.
    Callers that only need to know *whether* an input decodes (trying variants)
    then skip the reference run that would word an error nobody reads."""


class _MissingName:
    """Stand-in for a name an expression cannot resolve: any use falls back."""

    __slots__ = ()

    def _fail(self, *a: Any) -> Any:
        raise _Fallback

    __bool__ = __eq__ = __ne__ = __lt__ = __gt__ = __le__ = __ge__ = _fail
    __hash__ = None  # type: ignore[assignment]


def _patch(b: bytes, nans: list) -> bytes:
    """Write kept NaN bit patterns over the 0.0 placeholders of a packed run."""
    if not nans:
        return b
    out = bytearray(b)
    for pack_into, off, bits in nans:
        pack_into(out, off, bits)
    return bytes(out)


_MISSING_NAME = _MissingName()


def _select(i: Any, cases: tuple) -> Any:  # noqa: D103 - the "select" operator
    if i.__class__ is _MissingName:
        raise _Fallback
    if isinstance(i, int) and 0 <= i < len(cases):
        return cases[i]
    return None


def _nan_positions(buf: bytes, pos: int, n: int, itemsize: int, off: int, dt: np.dtype) -> np.ndarray:
    """Indices of the records whose float at ``off`` is a NaN (one numpy pass)."""
    view = np.ndarray((n,), dtype=dt, buffer=buf, offset=pos + off, strides=(itemsize,))
    return np.flatnonzero(np.isnan(view))


def _bits_reader(prim: "L.Prim") -> Callable[[bytes, int], float]:
    """Decode a NaN float at an offset keeping its bit pattern (as Prim.decode)."""
    from_bits = prim.float_bits[0]
    unpack = prim.bits_st.unpack_from
    return lambda b, p: from_bits(unpack(b, p)[0])


class _Unset:
    """A field of the current record not read (or written) yet."""

    __slots__ = ()


_UNSET = _Unset()


def _lookup_or_missing(frames: list, name: str) -> Any:
    for frame in reversed(frames):  # (innermost first)
        v = frame.get(name, _UNSET)
        if v is not _UNSET:
            return v
    return _MISSING_NAME
