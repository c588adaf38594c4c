"""The JSON text of documents: orjson's, written in one pass.

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
  converter).  orjson meets it as an object it cannot write and asks
  ``default``, which gives a list of references; orjson asks again for each
  reference as it reaches it, and ``default`` converts that one record.  So
  a record's JSON value is built just before it is written and freed just
  after.  A whole tree of small dicts kept alive while it is written would
  have the garbage collector walk it again and again as it grows (three
  quarters of the time of a large ``.opd``).  A reference is a ``complex``
  (record index, a random tag plus the list's index): orjson never writes
  one, and the collector does not track it.

What orjson refuses (non-string keys, integers beyond 64 bits, lone
surrogates) and documents holding a NaN or an infinity (orjson writes them as
``null``, like ``None``) are written by the standard library with the same
layout (``indent=2``, or ``separators=(",", ":")`` when compact); only its float
notation differs (``1e-05`` where orjson writes ``1e-5``), the values are the
same.
"""
from __future__ import annotations

import contextvars
import json
import os
import re
from typing import Any, Callable, Sequence

import numpy as np

try:  # a declared dependency; the standard library keeps working without it
    import orjson
except ImportError:  # pragma: no cover - exercised only where orjson is missing
    orjson = None

#: the indentation of the text (spaces per level), orjson's only one
INDENT = 2
_OPT_INDENTED = orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY if orjson else 0
_OPT_COMPACT = orjson.OPT_SERIALIZE_NUMPY if orjson else 0
#: ``null`` as a value.  Indented text: after a key or an indentation and
#: ending its line; no string can hold that, because every newline of the
#: text is structural (strings escape theirs).  Compact text: after ``:``,
#: ``[`` or ``,`` and before ``,``, ``]``, ``}`` or the end, which a string
#: can also hold (``"a,null]"``): the tree then decides.
_NULL_INDENTED = re.compile(rb"(?:: |\n *|^)null(?=,\n|\n|$)")
_NULL_COMPACT = re.compile(rb"(?:[:\[,]|^)null(?=[,\]}]|$)")
_NULL_ANYWHERE = re.compile(rb"null")
_NATIVE = contextvars.ContextVar("potsherd_native_arrays", default=False)


class native_arrays:
    """``with native_arrays():`` inside the block, ``to_json`` leaves numeric
    numpy arrays as arrays and long record lists as :class:`LazyItems` (what
    :func:`dumps` writes in bulk); outside it returns plain lists.  (A class,
    not a generator context manager: it is entered once per document dumped,
    and a folder of small files dumps thousands.)"""

    __slots__ = ("_token",)

    def __enter__(self) -> None:
        self._token = _NATIVE.set(True)

    def __exit__(self, *exc: Any) -> None:
        _NATIVE.reset(self._token)


def arrays_stay_native() -> bool:
    return _NATIVE.get()


class LazyItems:
    """A JSON list given as its items and the function converting one item to
    its JSON value; :func:`dumps` converts each item just before writing it."""

    __slots__ = ("items", "convert")

    def __init__(self, items: Sequence[Any], convert: Callable[[Any], Any]) -> None:
        self.items = items
        self.convert = convert

    def tolist(self) -> list:
        convert = self.convert
        return [convert(x) for x in self.items]


#: lists shorter than this are converted at once (a reference per item costs more)
LAZY_MIN = 96


class _Refused(Exception):
    """orjson cannot write the document as the standard library would read it
    back: the standard library writes it."""


def _has_null(raw: bytes) -> bool:
    """Whether ``null`` occurs in ``raw``.  Every ``null`` has a ``u``, and a
    text of numbers and hex has few: the first ones are looked at one by one
    (a byte search, many times faster than a search for the word); a text
    with many goes to one regular-expression scan from there."""
    if len(raw) < 1 << 16:  # (a small text: the word search is quicker than the steps below)
        return b"null" in raw
    find = raw.find
    i = find(b"u")
    for _ in range(32):
        if i == -1:
            return False
        if raw[i - 1:i + 3] == b"null":
            return True
        i = find(b"u", i + 1)
    return i != -1 and _NULL_ANYWHERE.search(raw, max(i - 1, 0)) is not None


_FLOAT_KINDS = "fc"


def _list_non_finite(items: Any, push: Callable[[Any], None]) -> bool:
    """Whether a list's own scalars hold a NaN or an infinity; its containers
    are pushed for the walk (a list of scalars, the common case, costs no step
    of the walk per item)."""
    scalars = _SKIP
    for x in items:
        c = x.__class__
        if c in scalars:
            continue
        if c is float:
            if x - x != 0.0:
                return True
            continue
        push(x)
    return False


def _non_finite(obj: Any) -> bool:
    """Whether ``obj`` holds a NaN or an infinity (which orjson writes as
    ``null``, like ``None``); lazy lists are converted item by item to look.
    (Asked only of texts that hold a ``null``: FBX documents, whose empty
    children are ``None``.)"""
    stack = [obj]
    pop, extend = stack.pop, stack.extend
    scalars = _SKIP
    while stack:
        o = pop()
        cls = o.__class__
        if cls in scalars:
            continue
        if cls is list or cls is tuple:
            if _list_non_finite(o, stack.append):
                return True
        elif cls is dict:
            extend(o.values())
        elif cls is float:
            if o - o != 0.0:
                return True
        elif cls is LazyItems:
            convert = o.convert
            for x in o.items:
                if _non_finite(convert(x)):
                    return True
        elif isinstance(o, np.ndarray):
            if o.dtype.kind in _FLOAT_KINDS and not np.isfinite(o).all():
                return True
            if o.dtype.kind == "O":
                extend(o.ravel().tolist())
        elif isinstance(o, np.generic):
            if o.dtype.kind in _FLOAT_KINDS and not np.isfinite(o):
                return True
        elif isinstance(o, dict):
            extend(o.values())
        elif isinstance(o, (list, tuple)):
            extend(o)
        elif isinstance(o, float) and o - o != 0.0:
            return True
    return False


_SKIP = frozenset((str, int, bool, type(None), bytes))

#: containers and scalars the bounded look at a tree visits per byte of its
#: text before it leaves the question to the text (a step costs about as much
#: as scanning a hundred bytes for ``null``)
_TREE_STEPS_PER_BYTE = 1 / 100
#: texts shorter than this are searched for ``null`` first (a byte search of a
#: small text is cheaper than any look at its tree)
_TREE_FIRST_MIN = 1 << 16


def _holds_non_finite(obj: Any, raw: bytes | memoryview, indented: bool) -> bool:
    """Whether ``obj`` (whose orjson text is ``raw``) holds a NaN or an infinity.

    The tree is looked at first, within a budget and without converting lazy
    lists: a tree of a few containers around big numeric arrays (a joint's key
    tracks, a terrain's columns) is answered in well under a millisecond,
    where the text of 18 MB took 8 ms to scan for ``null``.  A small text, a
    tree of many small records, or one holding lazy lists goes to the text: a
    ``null`` value in it, then the whole tree, decide."""
    if len(raw) >= _TREE_FIRST_MIN:
        verdict = _non_finite_within(obj, int(len(raw) * _TREE_STEPS_PER_BYTE))
        if verdict is not None:
            return verdict
    return bool(_has_null(raw) and (_NULL_INDENTED if indented else _NULL_COMPACT).search(raw)
                and _non_finite(obj))


def _non_finite_within(obj: Any, budget: int) -> bool | None:
    """:func:`_non_finite` in at most ``budget`` steps (a container, or a scalar
    of a list); None when that was not enough or a lazy list was met (whose
    items exist only as they are written)."""
    stack = [obj]
    pop, append = stack.pop, stack.append
    scalars = _SKIP
    while stack:
        o = pop()
        budget -= 1
        cls = o.__class__
        if cls in scalars:
            continue
        if cls is list or cls is tuple:
            budget -= len(o)
            if budget < 0:
                return None
            if _list_non_finite(o, append):
                return True
        elif cls is dict:
            budget -= len(o)
            if budget < 0:
                return None
            stack.extend(o.values())
        elif cls is float:
            if o - o != 0.0:
                return True
        elif cls is LazyItems:
            return None
        elif isinstance(o, np.ndarray):
            if o.dtype.kind in _FLOAT_KINDS and not np.isfinite(o).all():
                return True
            if o.dtype.kind == "O":
                return None
        elif isinstance(o, np.generic):
            if o.dtype.kind in _FLOAT_KINDS and not np.isfinite(o):
                return True
        else:  # (a subclass of dict or list, or another object: the whole tree decides)
            return None
        if budget < 0:
            return None
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


def _orjson_text(obj: Any, indented: bool, depth: int) -> bytes | memoryview:
    """orjson's text of ``obj`` with lazy lists expanded as they are written;
    ``depth``: every line after the first indented for a value nested that
    deep (``obj`` is written inside ``depth`` one-item lists whose brackets are
    then cut, so orjson writes every indentation itself)."""
    lazies: list[LazyItems] = []
    # (references carry a random tag, so that no complex of a document can be
    # one; drawn when the first lazy list is met)
    tag = 0.0

    def default(o: Any) -> Any:
        nonlocal tag
        cls = o.__class__
        if cls is complex and lazies:  # a reference: (record index, tag + list index)
            k = o.imag - tag
            if 0 <= k < len(lazies) and k == int(k):
                lazy = lazies[int(k)]
                return lazy.convert(lazy.items[int(o.real)])
        elif cls is LazyItems:
            if not lazies:
                tag = float(2 ** 40 + int.from_bytes(os.urandom(4), "little"))
            lazies.append(o)
            return (np.arange(len(o.items), dtype=np.float64)
                    + 1j * (tag + len(lazies) - 1)).tolist()
        elif isinstance(o, (np.ndarray, np.generic)):  # (what orjson does not write natively)
            return o.tolist()
        raise TypeError
    wrapped = obj
    if indented:
        for _ in range(depth):
            wrapped = [wrapped]
    try:
        raw = orjson.dumps(wrapped, option=_OPT_INDENTED if indented else _OPT_COMPACT,
                           default=default)
    except (TypeError, orjson.JSONEncodeError) as e:
        raise _Refused from e
    if _holds_non_finite(obj, raw, indented):
        raise _Refused
    if indented and depth:
        # "[" + newline + indentation per wrapping level before, newline +
        # indentation + "]" per level after
        head = sum(2 + INDENT * (k + 1) for k in range(depth))
        tail = sum(2 + INDENT * k for k in range(depth))
        return memoryview(raw)[head:len(raw) - tail]
    return raw


_SCALARS = (str, int)


def dumps(obj: Any, indent: int | None = INDENT, *, depth: int = 0) -> str:
    """The JSON text of ``obj``: indented (``indent=2``, the only indentation
    orjson writes) or compact (``indent=None``).

    numpy arrays in ``obj`` are written as their ``tolist()`` and
    :class:`LazyItems` as their lists.  ``depth`` indents every line after the
    first for a value nested that deep (a piece of a larger text).  Any other
    ``indent`` is written by the standard library."""
    text = _text(obj, indent, depth)
    return text if text.__class__ is str else str(text, "utf-8")


def dumps_bytes(obj: Any, indent: int | None = INDENT, *, depth: int = 0) -> bytes | memoryview:
    """:func:`dumps` as UTF-8 bytes (or a view of them): what a file gets,
    without a text copy in between."""
    text = _text(obj, indent, depth)
    return text.encode("utf-8") if text.__class__ is str else text


def _text(obj: Any, indent: int | None, depth: int) -> str | bytes | memoryview:
    if orjson is None or indent not in (None, INDENT) or obj.__class__ in _SCALARS:
        # (a string or an int, e.g. one envelope value of write_json: the
        # standard library's C encoder, at no cost)
        text = _std(obj, indent)
    else:
        try:
            return _orjson_text(obj, indent is not None, depth)
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
