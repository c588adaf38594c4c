"""The condition / count expression language, compiled once to closures.

Expressions are JSON values (the notation of the Knight Online wire layout):

* a number is a constant, a string is a field reference;
* ``{"op": [args...]}`` applies an operator.

Operators of the spec: ``gt eq and or minus mask length select product divide
float choose``.  Extensions the project needs for real files (documented in
``docs``/layout comments where used): ``ge lt ne not plus present remaining
min max``.

A field reference resolves in the current record, then in each enclosing
record outward, then among the parameters (:class:`Scope`).
"""
from __future__ import annotations

import json

import math
from typing import Any, Callable

from .errors import EncodeError, FormatError, LimitError, ValueFormatError
from .limits import DEFAULT_LIMITS, Limits

Compiled = Callable[["Scope"], Any]

_MISSING = object()


class Scope:
    """Name resolution for expressions while decoding or encoding.

    ``frames[0]`` is the parameter frame; each record being decoded pushes its
    (partially filled) dict.  ``remaining`` answers the bytes left in decode
    mode; in encode mode it answers 1 when the field being written is present
    in the document, which makes "optional tail" symmetric.
    """

    __slots__ = ("frames", "reader", "present", "warnings", "limits", "free_items", "spans",
                 "encoded", "reference")

    def __init__(self, params: dict, reader=None, limits: Limits = DEFAULT_LIMITS,
                 warnings: list | None = None) -> None:
        self.frames: list[dict] = [params]
        self.reader = reader
        self.present = False
        self.warnings: list[str] = [] if warnings is None else warnings
        self.limits = limits
        #: array items that may still decode from zero bytes (each costs memory
        #: but no input, so nested counts could multiply them): bounded by the input
        self.free_items = 65536 + (reader.remaining if reader is not None else 0)
        #: a :class:`potsherd.core.spans.SpanMap` when the caller wants byte spans
        self.spans = None
        #: id(value) -> bytes of sized contents already encoded to regenerate their size field
        self.encoded: dict[int, bytes] | None = None
        #: the caller asked for the reference interpreter only (no compiled parts)
        self.reference = False

    def push(self, frame: dict) -> None:
        if len(self.frames) > self.limits.max_depth:
            raise LimitError(f"nesting deeper than {self.limits.max_depth} levels",
                             offset=self.reader.pos if self.reader else None)
        self.frames.append(frame)

    def pop(self) -> None:
        self.frames.pop()

    def lookup(self, name: str) -> Any:
        frames = self.frames
        for i in range(len(frames) - 1, -1, -1):
            v = frames[i].get(name, _MISSING)
            if v is not _MISSING:
                return v
        if self.reader is None:     # encoding: the document (or its params) lacks it
            raise EncodeError(f"expression refers to unknown or absent field {name!r}")
        raise FormatError(f"expression refers to unknown or absent field {name!r}",
                          offset=self.reader.pos)

    def has(self, name: str) -> bool:
        return any(name in f for f in self.frames)

    def remaining(self) -> int:
        if self.reader is not None:
            return self.reader.remaining
        return 1 if self.present else 0


def _num(v: Any) -> Any:
    if isinstance(v, (bytes, bytearray)):
        return len(v)
    if isinstance(v, bool):
        return int(v)
    return v


def _int_div(a, b, scope: Scope):
    if b == 0:
        raise ValueFormatError("division by zero in a count expression",
                               offset=scope.reader.pos if scope.reader else None)
    if isinstance(a, float) or isinstance(b, float):
        q = a / b
        if not math.isfinite(q):
            raise ValueFormatError(f"non-finite value {q} in a count expression",
                                   offset=scope.reader.pos if scope.reader else None)
        return math.ceil(q)  # engine loops `for x = 0; x < W; x += cell`: round up
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def split_operator(e: Any) -> tuple[str, Any, list]:
    """An operator expression as (op, arg, args): a bare list is an implicit
    ``and``; a name operator (``length float present``) gets its name in
    ``arg``.  Shared by this compiler and the code generator of fastpath."""
    if isinstance(e, list):
        # the spec never writes one; harmless
        e = {"and": e}
    if not isinstance(e, dict) or len(e) != 1:
        raise ValueError(f"bad expression {e!r}")
    (op, arg), = e.items()
    args = arg if isinstance(arg, list) else [arg]
    if op in ("length", "float", "present") and not isinstance(arg, str):
        if not (isinstance(arg, list) and len(arg) == 1 and isinstance(arg[0], str)):
            raise ValueError(f"{op} takes a field name, got {arg!r}")
        arg = arg[0]
    return op, arg, args


def compile_expr(e: Any) -> Compiled:
    """Compile a JSON expression into a closure ``f(scope) -> value``."""
    if isinstance(e, bool):
        v = int(e)
        return lambda s: v
    if isinstance(e, (int, float)):
        return lambda s: e
    if isinstance(e, str):
        name = e
        return lambda s: s.lookup(name)
    op, arg, args = split_operator(e)
    if op == "length":
        name = arg
        return lambda s: len(s.lookup(name))
    if op == "present":
        name = arg
        return lambda s: 1 if s.has(name) else 0
    if op == "float":
        name = arg
        return lambda s: float(s.lookup(name))
    if op == "remaining":
        return lambda s: s.remaining()
    f = [compile_expr(a) for a in args]
    if op in ("gt", "lt", "ge", "eq", "ne"):
        if len(f) != 2:
            raise ValueError(f"{op} takes two operands")
        a, b = f
        if op == "gt":
            return lambda s: 1 if _num(a(s)) > _num(b(s)) else 0
        if op == "lt":
            return lambda s: 1 if _num(a(s)) < _num(b(s)) else 0
        if op == "ge":
            return lambda s: 1 if _num(a(s)) >= _num(b(s)) else 0
        if op == "eq":
            return lambda s: 1 if _num(a(s)) == _num(b(s)) else 0
        return lambda s: 1 if _num(a(s)) != _num(b(s)) else 0
    if op == "and":
        def _and(s, f=tuple(f)):
            for g in f:
                if not _num(g(s)):
                    return 0
            return 1
        return _and
    if op == "or":
        def _or(s, f=tuple(f)):
            for g in f:
                if _num(g(s)):
                    return 1
            return 0
        return _or
    if op == "not":
        g = f[0]
        return lambda s: 0 if _num(g(s)) else 1
    if op == "minus":
        a, b = f
        return lambda s: _num(a(s)) - _num(b(s))
    if op == "plus":
        def _plus(s, f=tuple(f)):
            t = 0
            for g in f:
                t += _num(g(s))
            return t
        return _plus
    if op == "product":
        def _product(s, f=tuple(f)):
            t = 1
            for g in f:
                t *= _num(g(s))
            return t
        return _product
    if op == "min":
        return lambda s: min(_num(g(s)) for g in f)
    if op == "max":
        return lambda s: max(_num(g(s)) for g in f)
    if op == "mask":
        a, b = f
        return lambda s: int(_num(a(s))) & int(_num(b(s)))
    if op == "divide":
        a, b = f
        return lambda s: _int_div(_num(a(s)), _num(b(s)), s)
    if op == "select":
        idx, *cases = f

        def _select(s, cases=tuple(cases)):
            i = _num(idx(s))
            if isinstance(i, int) and 0 <= i < len(cases):
                return cases[i](s)
            return None  # "no case": the caller decides (an array reads nothing)
        return _select
    if op == "choose":
        c, a, b = f
        return lambda s: a(s) if _num(c(s)) else b(s)
    raise ValueError(f"unknown operator {op!r}")


def references(e: Any) -> set[str]:
    """Field names an expression refers to (for count regeneration)."""
    if isinstance(e, str):
        return {e}
    if isinstance(e, list):
        out: set[str] = set()
        for a in e:
            out |= references(a)
        return out
    if isinstance(e, dict):
        out = set()
        for v in e.values():
            out |= references(v)
        return out
    return set()


def linear_count(e: Any) -> tuple[str, int] | None:
    """If ``e`` is ``name`` or ``product(name, k...)``, return (name, k).

    Those are the count expressions an encoder can invert to regenerate a
    count field from an edited array.
    """
    if isinstance(e, str):
        return (e, 1)
    if isinstance(e, dict) and len(e) == 1 and "product" in e:
        names = [a for a in e["product"] if isinstance(a, str)]
        consts = [a for a in e["product"] if isinstance(a, int) and not isinstance(a, bool)]
        if len(names) == 1 and len(names) + len(consts) == len(e["product"]):
            k = 1
            for c in consts:
                k *= c
            if k > 0:
                return (names[0], k)
    return None


def source_text(src: Any) -> str:
    """An expression as it is written in a layout table: a name or number as itself, an
    operator as its compact JSON (``{"product":["vertexCount",8]}``), never a Python repr."""
    if isinstance(src, str):
        return src
    return json.dumps(src, separators=(",", ":"), ensure_ascii=False)
