"""JSON text of documents through orjson, byte for byte what the standard
library writes.

``json.dumps(obj, indent=1, ensure_ascii=False)`` (what ``dump`` writes) runs
the standard library's pure-Python encoder: most of a dump's time.  orjson
(a maintained C/Rust encoder that also writes numpy arrays without a Python
list per element) produces the same tokens with different spacing and a
different float notation; both are normalised here so the text is identical:

* indentation: orjson indents by two spaces; every newline it writes is
  structural (newlines in strings are escaped), so halving the indentation is
  a handful of whole-text substitutions, one per depth;
* compact text: the standard library separates with ``", "`` and ``": "``;
* floats: both write the shortest digits that round-trip, and differ only in
  notation for exponents and magnitudes below 1e-4 (``1e-05``/``0.00001``,
  ``1e+16``/``1e16``).  With one value per line in indented text, float
  tokens are found by an anchored pattern (a line's value, after an optional
  complete key string) and only those in such a notation are rewritten with
  ``repr``.

Large numeric arrays (:class:`LargeArray`, what ``to_json`` gives inside
:func:`native_arrays`) are not indented by orjson: each stands in the text as a
marker string, the (much shorter) rest is normalised as above, and each array is
then written compactly by orjson and spread over lines with a few whole-text
substitutions for the depth its marker is found at.  Indenting then
re-indenting one line per number was most of a dump's time.

Anything orjson refuses (non-string keys, integers beyond 64 bits, lone
surrogates, NaN) goes to the standard library, which decides as before.
"""
from __future__ import annotations

import contextlib
import contextvars
import json
import os
import re
from typing import Any, Iterator

import numpy as np

try:  # a declared dependency; the standard library keeps working without it
    import orjson
except ImportError:  # pragma: no cover - exercised only where orjson is missing
    orjson = None

_INDENT = orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY if orjson else 0

#: Float notation.  Both libraries write the shortest round-trip digits; they
#: differ in the exponent (``e16``/``e+16``, ``e-7``/``e-07``) and for
#: 1e-5 <= |x| < 1e-4, written positionally by orjson.  In indented text every
#: value ends its line, and no text inside a string can (strings hold no raw
#: newline and end with a quote): an exponent or a ``0.0000`` fraction right
#: before ``,``/newline/end is a number's.  Patterns start with a literal, so
#: the scan is quick even over megabytes of hex.
_END = rb"(?=,?\n|,?$)"
_EXPONENT = re.compile(rb"e(-?)(\d+)" + _END)
_TAB_TO_SPACE = bytes.maketrans(b"\t", b" ")
#: (not after a digit or a point: 10.00001 is written the same by both)
_SMALL = re.compile(rb"(?<![\d.])0\.0000\d+" + _END)
#: the same inside a compact array of numbers, where every ``e`` is an exponent
_EXPONENT_ANYWHERE = re.compile(rb"e(-?)(\d+)")
_SMALL_ANYWHERE = re.compile(rb"(?<![\d.])0\.0000\d+")
_NATIVE = contextvars.ContextVar("potsherd_native_arrays", default=False)


@contextlib.contextmanager
def native_arrays() -> Iterator[None]:
    """Inside the block, ``to_json`` leaves numeric numpy arrays as arrays
    (orjson writes them directly); outside it returns plain lists."""
    token = _NATIVE.set(True)
    try:
        yield
    finally:
        _NATIVE.reset(token)


def arrays_stay_native() -> bool:
    return _NATIVE.get()


def _python_float(m: re.Match) -> bytes:
    return repr(float(m.group())).encode()


def _python_exponent(m: re.Match) -> bytes:
    """``e16``/``e-7`` (orjson) as ``e+16``/``e-07`` (``repr``)."""
    digits = m.group(2)
    return (b"e-" if m.group(1) else b"e+") + (digits if len(digits) > 1 else b"0" + digits)


def _python_floats(raw: bytes, exponent: re.Pattern = _EXPONENT, small: re.Pattern = _SMALL) -> bytes:
    """orjson's float notation rewritten as ``repr`` writes it."""
    if b"e" in raw:
        raw = exponent.sub(_python_exponent, raw)
    if b"0.0000" in raw:
        raw = small.sub(_python_float, raw)
    return raw


class LargeArray:
    """A numeric numpy array (native byte order, contiguous, not empty) that
    :func:`dumps` writes in bulk rather than through orjson's indentation."""

    __slots__ = ("array",)

    def __init__(self, array: np.ndarray) -> None:
        self.array = array


#: arrays of fewer values go to orjson as they are (a marker costs more)
LARGE = 32


def _array_text(a: np.ndarray, depth: int, indent: int | None) -> bytes:
    """``json.dumps(a.tolist(), indent=indent)`` for an array whose opening
    bracket is at ``depth`` (so its values are at ``depth + ndim``)."""
    text = orjson.dumps(a, option=orjson.OPT_SERIALIZE_NUMPY)
    if a.dtype.kind == "f":
        if b"null" in text:
            raise _NotFinite
        text = _python_floats(text, _EXPONENT_ANYWHERE, _SMALL_ANYWHERE)
    if indent is None:
        return text.replace(b",", b", ")
    k = a.ndim
    pad = [b"\n" + b" " * (indent * (depth + m)) for m in range(k + 1)]
    if k == 1:
        return b"[" + pad[1] + text[1:-1].replace(b",", b"," + pad[1]) + pad[0] + b"]"
    # separators of level j (outermost first) are "]"*(k-1-j) + "," + "["*(k-1-j):
    # longest first, each through a one-byte stand-in (no such byte in numbers)
    body = text[k:-k]
    for j in range(k - 1):
        n = k - 1 - j
        body = body.replace(b"]" * n + b"," + b"[" * n, bytes([j + 1]))
    body = body.replace(b",", b"," + pad[k])
    for j in range(k - 1):
        closes = b"".join(pad[m] + b"]" for m in range(k - 1, j, -1))
        opens = b"".join(pad[m] + b"[" for m in range(j + 1, k))
        body = body.replace(bytes([j + 1]), closes + b"," + opens + pad[k])
    head = b"[" + b"".join(pad[m] + b"[" for m in range(1, k)) + pad[k]
    tail = b"".join(pad[m] + b"]" for m in range(k - 1, 0, -1)) + pad[0] + b"]"
    return head + body + tail


class _NotFinite(Exception):
    """A large float array holds a NaN or an infinity: the standard library
    writes the document (orjson would write null)."""


def _tab_indent(text: bytes) -> bytes:
    """Two-space indentation to one tab per level.  Deepest level first, so that
    no shallower pattern matches a converted line again; no raw tab is in JSON
    text otherwise (strings escape theirs)."""
    depth = 1
    while b"\n" + b"  " * (depth + 1) in text:
        depth += 1
    for n in range(depth, 0, -1):
        text = text.replace(b"\n" + b"  " * n, b"\n" + b"\t" * n)
    return text


def _reindent(raw: bytes, keep: int) -> bytes | None:
    """orjson's two-space indentation as ``keep`` spaces per level (0 or 1), in
    a few numpy passes over the text; None when the text is not shaped as
    expected (the caller then uses :func:`_tab_indent`).

    A line's depth follows from its neighbours: one deeper after a line ending
    in ``[`` or ``{``, one shallower on a line that only closes (``]``/``}``
    after its indentation; an inline ``[]``/``{}`` has its opener before it)."""
    arr = np.frombuffer(raw, np.uint8)
    n = arr.size
    nl = np.flatnonzero(arr == 10)
    if nl.size == 0:
        return raw
    starts = nl + 1
    ends = np.empty_like(nl)
    ends[:-1] = nl[1:]
    ends[-1] = n
    last = ends - 1
    comma = arr[last] == 44
    last = last - comma
    closer = arr[last]
    before = arr[np.maximum(last - 1, 0)]
    closing = ((closer == 93) | (closer == 125)) & ((before == 32) | (before == 10))
    opener = arr[nl - 1]
    opening = (opener == 91) | (opener == 123)
    depth = np.cumsum(opening.astype(np.int64) - closing)
    if depth.size and depth.min() < 0:
        return None
    # check: exactly 2*depth spaces open every line
    pos = starts + 2 * depth
    if pos.max() >= n or (arr[pos] == 32).any():
        return None
    deep = depth > 0
    if (arr[starts[deep] + 2 * depth[deep] - 1] != 32).any():
        return None
    mask = np.ones(n, dtype=bool)
    drop = depth * (2 - keep)
    for k in range(int(drop.max(initial=0))):
        sel = drop > k
        mask[starts[sel] + k] = False
    return arr[mask].tobytes()


def _plain(obj: Any) -> Any:
    """numpy arrays as lists, for the standard library fallback."""
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_plain(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, LargeArray):
        return obj.array.tolist()
    return obj


def _with_markers(obj: Any) -> tuple[bytes, list[np.ndarray], bytes]:
    """orjson's indented text of ``obj`` with each :class:`LargeArray` as a
    marker string (a random tag, so no string of the document can be one)."""
    arrays: list[np.ndarray] = []
    tag = b"\x00potsherd-array-" + os.urandom(6).hex().encode()
    tag_text = tag.decode()

    def marker(o: Any) -> Any:
        if isinstance(o, LargeArray):
            arrays.append(o.array)
            return f"{tag_text}-{len(arrays) - 1}"
        raise TypeError
    raw = orjson.dumps(obj, option=_INDENT, default=marker)
    return raw, arrays, b'"\\u0000' + tag[1:] + b"-"


def _put_arrays(text: bytes, arrays: list[np.ndarray], marker: bytes, indent: int | None) -> bytes:
    """Each marker (a line's value) replaced by its array, written for the
    depth of that line (its indentation, ``indent`` spaces per level)."""
    pieces = text.split(marker)
    out = [pieces[0]]
    for piece in pieces[1:]:
        end = piece.index(b'"')
        a = arrays[int(piece[:end])]
        depth = 0
        if indent:
            prev = out[-1]
            line = prev[prev.rfind(b"\n") + 1:]
            depth = (len(line) - len(line.lstrip(b" "))) // indent
        out.append(_array_text(a, depth, indent))
        out.append(piece[end + 1:])
    return b"".join(out)


#: texts shorter than this are re-indented by bytes substitutions, not numpy
_SMALL_TEXT = 4096
_SCALARS = (str, int)


def dumps(obj: Any, indent: int | None = 1) -> str:
    """``json.dumps(obj, indent=indent, ensure_ascii=False)``, the same text.

    numpy arrays in ``obj`` are written as their ``tolist()``; they must be in
    native byte order (orjson reads the memory as it is), as the documents'
    ``to_json`` gives them inside :func:`native_arrays`."""
    if orjson is None or indent not in (None, 1) or obj.__class__ in _SCALARS:
        # (a string or an int, e.g. one envelope value of write_json: the
        # standard library's C encoder, at no cost)
        return json.dumps(_plain(obj), indent=indent, ensure_ascii=False)
    try:
        raw, arrays, marker = _with_markers(obj)
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(_plain(obj), indent=indent, ensure_ascii=False)
    if b"null" in raw:
        # orjson writes a NaN or an infinity as null, the standard library as
        # NaN/Infinity; a document with nulls is written the standard way
        return json.dumps(_plain(obj), indent=indent, ensure_ascii=False)
    raw = _python_floats(raw)
    if len(raw) < _SMALL_TEXT:
        # a few whole-text substitutions beat numpy's per-call cost on short texts
        raw = _tab_indent(raw)
        if indent is None:
            raw = raw.replace(b"\t", b"").replace(b",\n", b", ").replace(b"[\n", b"[")
            raw = raw.replace(b"{\n", b"{").replace(b"\n]", b"]").replace(b"\n}", b"}")
        else:
            raw = raw.translate(_TAB_TO_SPACE)
    elif indent is None:
        out = _reindent(raw, 0)
        raw = out if out is not None else _tab_indent(raw).replace(b"\t", b"")
        raw = raw.replace(b",\n", b", ").replace(b"[\n", b"[").replace(b"{\n", b"{")
        raw = raw.replace(b"\n]", b"]").replace(b"\n}", b"}")
    else:
        out = _reindent(raw, 1)
        raw = out if out is not None else _tab_indent(raw).translate(_TAB_TO_SPACE)
    if arrays:
        try:
            raw = _put_arrays(raw, arrays, marker, indent)
        except _NotFinite:
            return json.dumps(_plain(obj), indent=indent, ensure_ascii=False)
    return raw.decode("utf-8")


def loads(text: str | bytes) -> Any:
    """``json.loads``, through orjson when it agrees (same values); anything it
    refuses is decided by the standard library (same result or same error)."""
    if orjson is not None:
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    return json.loads(text)
