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

Anything orjson refuses (non-string keys, integers beyond 64 bits, lone
surrogates, NaN) goes to the standard library, which decides as before.
"""
from __future__ import annotations

import contextlib
import contextvars
import json
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
_EXPONENTS = [
    (re.compile(rb"e(\d)" + _END), rb"e+0\1"),
    (re.compile(rb"e(\d\d+)" + _END), rb"e+\1"),
    (re.compile(rb"e-(\d)" + _END), rb"e-0\1"),
]
_TAB_TO_SPACE = bytes.maketrans(b"\t", b" ")
_SMALL = re.compile(rb"0\.0000\d+" + _END)
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


def _python_floats(raw: bytes) -> bytes:
    """orjson's float notation rewritten as ``repr`` writes it."""
    if b"e" in raw:
        for pattern, repl in _EXPONENTS:
            raw = pattern.sub(repl, raw)
    if b"0.0000" in raw:
        raw = _SMALL.sub(_python_float, raw)
    return raw


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
    return obj


def dumps(obj: Any, indent: int | None = 1) -> str:
    """``json.dumps(obj, indent=indent, ensure_ascii=False)``, the same text.

    numpy arrays in ``obj`` are written as their ``tolist()``; they must be in
    native byte order (orjson reads the memory as it is), as the documents'
    ``to_json`` gives them inside :func:`native_arrays`."""
    if orjson is None or indent not in (None, 1):
        return json.dumps(_plain(obj), indent=indent, ensure_ascii=False)
    try:
        raw = orjson.dumps(obj, option=_INDENT)
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(_plain(obj), indent=indent, ensure_ascii=False)
    if b"null" in raw:
        # orjson writes a NaN or an infinity as null, the standard library as
        # NaN/Infinity; a document with nulls is written the standard way
        return json.dumps(_plain(obj), indent=indent, ensure_ascii=False)
    raw = _python_floats(raw)
    if indent is None:
        out = _reindent(raw, 0)
        raw = out if out is not None else _tab_indent(raw).replace(b"\t", b"")
        raw = raw.replace(b",\n", b", ").replace(b"[\n", b"[").replace(b"{\n", b"{")
        raw = raw.replace(b"\n]", b"]").replace(b"\n}", b"}")
    else:
        out = _reindent(raw, 1)
        raw = out if out is not None else _tab_indent(raw).translate(_TAB_TO_SPACE)
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
