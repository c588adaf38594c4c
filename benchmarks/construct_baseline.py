"""Baseline: the same layout records as Construct (PyPI ``construct``) definitions.

The definitions are derived mechanically from the layout rows, one Construct
per storage, written the way a Construct user would: ``Struct`` per record,
``Array(n, Float32l)`` for numeric arrays, ``If``/``IfThenElse`` for
conditions, ``LazyBound`` for recursive records.  Conditions and counts are
evaluated with the project's own expression compiler over Construct's
context (a field is looked up in the current struct, then each enclosing one,
then in the parse keyword arguments -- the layout's parameters), so both
sides agree on what the bytes mean.  The baseline is checked to parse the
corpus files to their end.
"""
from __future__ import annotations

from typing import Any

import construct as C

from potsherd.core.expr import compile_expr

PRIMS = {
    "u8": C.Int8ul, "i8": C.Int8sl, "u16": C.Int16ul, "i16": C.Int16sl,
    "u32": C.Int32ul, "i32": C.Int32sl, "u64": C.Int64ul, "i64": C.Int64sl,
    "f32": C.Float32l, "f64": C.Float64l, "u16be": C.Int16ub, "i16be": C.Int16sb,
    "u32be": C.Int32ub, "i32be": C.Int32sb, "f32be": C.Float32b,
}
GROUPS = {"vec3": ("f32", 3), "quat": ("f32", 4), "rect": ("i32", 4)}


class _ContextScope:
    """What an expression needs (lookup/has/remaining) over a Construct context."""

    __slots__ = ("ctx", "reader", "warnings")

    def __init__(self, ctx: Any) -> None:
        self.ctx = ctx
        self.reader = None
        self.warnings: list = []

    def lookup(self, name: str) -> Any:
        c = self.ctx
        while c is not None:
            v = c.get(name)
            if v is not None:
                return v
            c = c.get("_")
        raise KeyError(name)

    def has(self, name: str) -> bool:
        try:
            self.lookup(name)
            return True
        except KeyError:
            return False

    def remaining(self) -> int:
        c = self.ctx
        io = c.get("_io")
        while io is None and c is not None:
            c = c.get("_")
            io = c.get("_io") if c is not None else None
        buf = io.getbuffer()
        return len(buf) - io.tell()


def _fn(expr: Any):
    f = compile_expr(expr)
    return lambda ctx: f(_ContextScope(ctx))


def _count(expr: Any):
    if isinstance(expr, int) and not isinstance(expr, bool):
        return max(expr, 0)
    f = compile_expr(expr)

    def count(ctx):
        n = f(_ContextScope(ctx))
        return n if isinstance(n, int) and n > 0 else 0
    return count


def _string(prefix: str = "i32"):
    return C.Struct("length" / PRIMS[prefix], "data" / C.Bytes(lambda c: max(c.length, 0)))


class ConstructLayout:
    """Construct definitions for every record of a layout (rows as parsed)."""

    def __init__(self, rows: dict, aliases: dict | None = None) -> None:
        self.rows = rows
        self.aliases = aliases or {}   # custom storage name -> record name with the same bytes
        self.records: dict[str, Any] = {}
        for name in rows:
            self.records[name] = C.LazyBound(lambda name=name: self._built(name))
        self._done: dict[str, Any] = {}

    def _built(self, name: str):
        st = self._done.get(name)
        if st is None:
            st = self._done[name] = self._record(name)
        return st

    def _record(self, name: str):
        fields = []
        for fname, spec, cond in self.rows[name]:
            sub = self.storage(spec)
            if isinstance(spec, dict) and spec.get("kind") == "parameter":
                pname, default = spec["name"], spec.get("default")
                fields.append(fname / C.Computed(
                    lambda c, pname=pname, default=default: _param(c, pname, default)))
                continue
            if cond == "optional tail":
                sub = C.If(lambda c: _ContextScope(c).remaining() > 0, sub)
            elif cond not in (None, "always"):
                sub = C.If(_fn(cond), sub)
            fields.append(fname / sub)
        return C.Struct(*fields)

    def storage(self, spec: Any):
        if isinstance(spec, str):
            if spec in PRIMS:
                return PRIMS[spec]
            if spec in GROUPS:
                prim, n = GROUPS[spec]
                return C.Array(n, PRIMS[prim])
            if spec == "string":
                return _string()
            if spec in self.aliases:
                return self.records[self.aliases[spec]]
            if spec in self.records:
                return self.records[spec]
            raise ValueError(f"no Construct equivalent for storage {spec!r}")
        kind = spec.get("kind")
        if kind in ("array", "table", "ragged"):  # (the same records, one after the other)
            return C.Array(_count(spec["count"]), self.storage(spec["item"]))
        if kind == "bytes":
            return C.Bytes(_count(spec["count"]))
        if kind == "tail":
            return C.GreedyBytes
        if kind == "string":
            return _string(spec.get("prefix", "i32"))
        if kind == "choice":
            return C.IfThenElse(_fn(spec["condition"]), self.storage(spec["yes"]),
                                self.storage(spec["no"]))
        if kind == "parameter":
            return C.Pass
        raise ValueError(f"no Construct equivalent for storage {spec!r}")

    def parse(self, root: str, data: bytes, **params: Any):
        return self._built(root).parse(data, **params)

    def parse_to_end(self, root: str, data: bytes, **params: Any) -> int:
        """Parse and return the number of bytes consumed (for the sanity check)."""
        st = C.Struct("value" / self._built(root), "end" / C.Tell)
        return st.parse(data, **params).end


def _param(ctx: Any, name: str, default: Any) -> Any:
    """A layout parameter: a parse keyword argument (top context), else its default."""
    c = ctx
    while c.get("_") is not None:
        c = c["_"]
    v = c.get(name)
    return default if v is None else v
