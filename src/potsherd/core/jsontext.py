"""The JSON text of documents: orjson's, written in bulk and in chunks.

The text is what ``orjson.dumps(obj, option=OPT_INDENT_2)`` writes (two
spaces per level, ``": "`` after keys, the shortest digits that round-trip
for floats) or, compact, ``orjson.dumps(obj)``.  orjson is a maintained C/Rust
encoder that writes numpy arrays without a Python list per element; its own
layout is used as it is, because rewriting it into another (the standard
library's one-space indentation, its float notation) cost more than writing
the text did.

Two things keep a dump fast and its memory near the size of the text:

* numeric numpy arrays stay arrays (``to_json`` inside :func:`native_arrays`)
  and orjson writes them directly;
* a long list of records stays a :class:`LazyItems` (the records and their
  converter): its items are converted to JSON values and written
  :data:`CHUNK` at a time, so the objects of one chunk are freed before the
  next is built.  A whole tree of small dicts and lists would be kept alive
  while it is written, and the garbage collector would walk it again and
  again as it grows (three quarters of the time of a large ``.opd``).

What orjson refuses (non-string keys, integers beyond 64 bits, lone
surrogates) and documents holding a NaN or an infinity (orjson writes them as
``null``, like ``None``) are written by the standard library with the same layout
(``indent=2``, or ``separators=(",", ":")`` when compact); only its float
notation differs (``1e-05`` where orjson writes ``1e-5``), the values are the
same.
"""
from __future__ import annotations

import contextlib
import contextvars
import json
import os
import re
from typing import Any, Callable, Iterator, Sequence

import numpy as np

try:  # a declared dependency; the standard library keeps working without it
    import orjson
except ImportError:  # pragma: no cover - exercised only where orjson is missing
    orjson = None

#: the indentation of the text (spaces per level), orjson's only one
INDENT = 2
_OPT_INDENTED = orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY if orjson else 0
_OPT_COMPACT = orjson.OPT_SERIALIZE_NUMPY if orjson else 0
#: records converted per chunk of a :class:`LazyItems`: small enough that a
#: chunk's objects die young (the collector runs every 700 new containers)
CHUNK = 48
#: ``null`` as a value.  Indented text: after a key or an indentation and
#: ending its line; no string can hold that, because every newline of the
#: text is structural (strings escape theirs).  Compact text: after ``:``,
#: ``[`` or ``,`` and before ``,``, ``]``, ``}`` or the end, which a string
#: can also hold (``"a,null]"``): such a document goes to the standard
#: library too, the same values in a slower way.
_NULL_INDENTED = re.compile(rb"(?:: |\n *|^)null(?=,\n|\n|$)")
_NULL_COMPACT = re.compile(rb"(?:[:\[,]|^)null(?=[,\]}]|$)")
_NATIVE = contextvars.ContextVar("potsherd_native_arrays", default=False)


@contextlib.contextmanager
def native_arrays() -> Iterator[None]:
    """Inside the block, ``to_json`` leaves numeric numpy arrays as arrays and
    long record lists as :class:`LazyItems` (what :func:`dumps` writes in
    bulk); outside it returns plain lists."""
    token = _NATIVE.set(True)
    try:
        yield
    finally:
        _NATIVE.reset(token)


def arrays_stay_native() -> bool:
    return _NATIVE.get()


class LazyItems:
    """A JSON list given as its items and the function converting one item to
    its JSON value; :func:`dumps` converts and writes a chunk at a time."""

    __slots__ = ("items", "convert")

    def __init__(self, items: Sequence[Any], convert: Callable[[Any], Any]) -> None:
        self.items = items
        self.convert = convert

    def tolist(self) -> list:
        convert = self.convert
        return [convert(x) for x in self.items]


#: lists shorter than this are converted at once (a chunk costs more)
LAZY_MIN = 2 * CHUNK


class _Refused(Exception):
    """orjson cannot write the document as the standard library would read it
    back: the standard library writes it."""


_FLOAT_ARRAY_KINDS = "fc"


def _non_finite(obj: Any) -> bool:
    """Whether ``obj`` holds a NaN or an infinity (which orjson writes as
    ``null``, like ``None``); lazy lists are not entered: their chunks are
    checked as they are written."""
    stack = [obj]
    pop, extend = stack.pop, stack.extend
    while stack:
        o = pop()
        cls = o.__class__
        if cls is dict:
            extend(o.values())
        elif cls is list or cls is tuple:
            extend(o)
        elif cls is float:
            if o - o != 0.0:
                return True
        elif isinstance(o, np.ndarray):
            if o.dtype.kind in _FLOAT_ARRAY_KINDS and not np.isfinite(o).all():
                return True
            if o.dtype.kind == "O":
                extend(o.ravel().tolist())
        elif isinstance(o, np.generic):
            if o.dtype.kind in _FLOAT_ARRAY_KINDS and not np.isfinite(o):
                return True
        elif isinstance(o, dict):
            extend(o.values())
        elif isinstance(o, (list, tuple)):
            extend(o)
        elif isinstance(o, float) and o - o != 0.0:
            return True
    return False


def _plain(obj: Any) -> Any:
    """numpy arrays and lazy lists as lists, for the standard library."""
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_plain(v) for v in obj]
    if isinstance(obj, (np.ndarray, np.generic)):
        return obj.tolist()
    if isinstance(obj, LazyItems):
        return [_plain(v) for v in obj.tolist()]
    return obj


def _std(obj: Any, indent: int | None) -> str:
    return json.dumps(_plain(obj), indent=indent, ensure_ascii=False,
                      separators=(",", ":") if indent is None else None)


class _Writer:
    """One :func:`dumps` call: orjson's text of each piece, with the lazy lists
    found in it (as marker strings) written in their place, chunk by chunk."""

    def __init__(self, indented: bool) -> None:
        self.indented = indented
        self.option = _OPT_INDENTED if indented else _OPT_COMPACT
        self.null = _NULL_INDENTED if indented else _NULL_COMPACT
        # a random tag, so that no string of the document can be a marker
        tag = "\x00potsherd-items-" + os.urandom(6).hex() + "-"
        self.tag = tag
        self.marker = b'"\\u0000' + tag[1:].encode()

    def text(self, obj: Any, depth: int) -> list:
        """The pieces (bytes-like, in order) of the text of ``obj`` as the value
        of a line at ``depth``: every line after its first indented for that
        depth.  Pieces are joined once, at the end, not at every level.

        orjson indents from depth 0 only: ``obj`` is written inside ``depth``
        one-item lists, whose brackets are then cut, so that orjson itself
        writes the indentation of every line (no pass over the text after)."""
        found: list[LazyItems] = []
        tag = self.tag

        def default(o: Any) -> Any:
            if o.__class__ is LazyItems:
                found.append(o)
                return f"{tag}{len(found) - 1}"
            if isinstance(o, (np.ndarray, np.generic)):  # (what orjson does not write natively)
                return o.tolist()
            raise TypeError
        wrapped = obj
        if self.indented:
            for _ in range(depth):
                wrapped = [wrapped]
        try:
            raw = orjson.dumps(wrapped, option=self.option, default=default)
        except (TypeError, orjson.JSONEncodeError) as e:
            raise _Refused from e
        if b"null" in raw and self.null.search(raw) and _non_finite(obj):
            raise _Refused
        pieces = raw.split(self.marker) if found else [raw]
        out: list = []
        for k, piece in enumerate(pieces):
            if k:
                end = piece.index(b'"')
                ind = 0
                if self.indented:  # the marker's line: its indentation, orjson's own
                    before = pieces[k - 1]
                    line = before[before.rfind(b"\n") + 1:]
                    ind = (len(line) - len(line.lstrip(b" "))) // INDENT
                out += self.items(found[int(piece[:end])], ind)
                piece = memoryview(piece)[end + 1:]
            out.append(piece)
        if self.indented and depth:
            # "[" + newline + indentation per wrapping level before, newline +
            # indentation + "]" per level after
            head = sum(2 + INDENT * (k + 1) for k in range(depth))
            tail = sum(2 + INDENT * k for k in range(depth))
            out[0] = memoryview(out[0])[head:]
            out[-1] = memoryview(out[-1])[:len(out[-1]) - tail]
        return out

    def items(self, lazy: LazyItems, depth: int) -> list:
        """The pieces of a lazy list whose ``[`` is on a line at ``depth``."""
        seq, convert = lazy.items, lazy.convert
        n = len(seq)
        if not n:
            return [b"[]"]
        # each chunk is written as a list at the same depth; its brackets and
        # the indentation around them are cut (views, not copies)
        if self.indented:
            inner = b" " * (INDENT * (depth + 1))
            head, tail = 2 + len(inner), 2 + INDENT * depth
            out = [b"[\n" + inner]
            join = b",\n" + inner
        else:
            head, tail, join = 1, 1, b","
            out = [b"["]
        for s in range(0, n, CHUNK):
            chunk = [convert(x) for x in seq[s:s + CHUNK]]
            pieces = self.text(chunk, depth)
            del chunk
            if s:
                out.append(join)
            # (the first piece starts with the chunk's "[", the last ends with its "]")
            pieces[0] = memoryview(pieces[0])[head:]
            pieces[-1] = memoryview(pieces[-1])[:len(pieces[-1]) - tail]
            out += pieces
        out.append(b"\n" + b" " * (INDENT * depth) + b"]" if self.indented else b"]")
        return out


_SCALARS = (str, int)


def dumps(obj: Any, indent: int | None = INDENT, *, depth: int = 0) -> str:
    """The JSON text of ``obj``: indented (``indent=2``, the only indentation
    orjson writes) or compact (``indent=None``).

    numpy arrays in ``obj`` are written as their ``tolist()`` and
    :class:`LazyItems` as their lists.  ``depth`` indents every line after the
    first for a value nested that deep (a piece of a larger text).  Any other
    ``indent`` is written by the standard library."""
    if orjson is None or indent not in (None, INDENT) or obj.__class__ in _SCALARS:
        # (a string or an int, e.g. one envelope value of write_json: the
        # standard library's C encoder, at no cost)
        text = _std(obj, indent)
    else:
        try:
            return b"".join(_Writer(indent is not None).text(obj, depth)).decode("utf-8")
        except _Refused:
            text = _std(obj, indent)
    if depth and indent:
        text = text.replace("\n", "\n" + " " * (indent * depth))
    return text


def loads(text: str | bytes) -> Any:
    """``json.loads``, through orjson when it agrees (same values); anything it
    refuses is decided by the standard library (same result or same error)."""
    if orjson is not None:
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    return json.loads(text)
