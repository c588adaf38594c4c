"""Records: ordered fields with conditions, the unit every layout row belongs to."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import EncodeError, FormatError, JsonFormatError
from ..expr import Scope, compile_expr, linear_count
from ..stream import Reader, Writer
from .jsoncompile import json_key, record_json_function
from .jsonload import load_key, record_load_function
from .jsonio import JsonCtx, _jerr
from .storages import Bytes, Choice, Param, Prim, Storage
from .arrays import Array
from .sized import Sized


class Field:
    """One row of a record: name, storage, condition, and where it is declared
    (``defined_at``: ``file:line`` of the row, or of the Python declaration)."""

    __slots__ = ("name", "storage", "cond", "cond_src", "is_param", "defined_at")

    def __init__(self, name: str, storage: Storage, cond: Any, defined_at: str | None = None) -> None:
        self.name = name
        self.defined_at = defined_at
        self.storage = storage
        self.cond_src = cond
        self.is_param = isinstance(storage, Param)
        if cond in (None, "always"):
            self.cond = None
        elif cond == "optional tail":
            self.cond = compile_expr({"gt": [{"remaining": []}, 0]})
        else:
            self.cond = compile_expr(cond)


class Record(Storage):
    """A named record: ordered fields with conditions; decodes to a dict."""

    def __init__(self, name: str, layout: Any) -> None:  # the front end's Layout
        self.name = name
        self.layout = layout
        self.fields: list[Field] = []
        self._compiled = False
        self.derivations: list[tuple[str, str, int]] = []
        #: (size field, sized field, bytes per unit, its Sized storage): sizes
        #: regenerated from encoded content
        self.size_derivations: list[tuple[str, str, int, Sized]] = []

    def describe(self) -> str:
        return self.name

    def compile(self, rows: list[tuple[str, Any, Any]]) -> None:
        where = self.layout.where
        self.fields = [Field(n, self.layout.storage(st), c,
                             where.get((self.name, i), self.layout.declared_at))
                       for i, (n, st, c) in enumerate(rows)]
        self.derivations = []
        self.size_derivations = []
        names_before: dict[str, Field] = {}
        for f in self.fields:
            st = f.storage
            if isinstance(st, Sized) and st.derivation and st.derivation[0] in names_before:
                cst = names_before[st.derivation[0]].storage
                if isinstance(cst, Prim) and cst.kind == "i":
                    self.size_derivations.append((st.derivation[0], f.name, st.derivation[1], st))
            if isinstance(st, (Array, Bytes)):
                lc = linear_count(st.count_src)
                if lc and lc[0] in names_before:
                    cf = names_before[lc[0]]
                    cst = cf.storage
                    if isinstance(cst, Prim) and cst.kind == "i" or isinstance(cst, Choice):
                        self.derivations.append((lc[0], f.name, lc[1]))
            names_before.setdefault(f.name, f)
        fixed = all(f.cond is None and f.storage.size is not None for f in self.fields)
        if fixed:
            self.size = sum(f.storage.size for f in self.fields)
        self.min_size = sum(f.storage.min_size for f in self.fields if f.cond is None)
        self._compiled = True

    # --- decode -------------------------------------------------------
    def decode(self, r: Reader, s: Scope) -> Any:
        rec: dict[str, Any] = {}
        spans = s.spans
        s.push(rec)
        try:
            for f in self.fields:
                if f.is_param:
                    p = s.frames[0]
                    if f.name not in p:
                        p[f.name] = f.storage.default
                    continue
                try:
                    if f.cond is not None and not f.cond(s):
                        continue
                    start = r.pos
                    rec[f.name] = f.storage.decode(r, s)
                    if spans is not None:
                        spans.add(rec, f.name, start, r.pos)
                except FormatError as e:
                    if e.offset is None:
                        e.offset = r.pos
                    if e.defined_at is None:
                        e.defined_at = f.defined_at
                    raise e.prepend(f.name)
        finally:
            s.pop()
        return rec

    # --- encode -------------------------------------------------------
    def regenerate_counts(self, rec: dict) -> dict:
        """Count fields follow their arrays when the arrays were edited.

        A count is kept as stored when it already describes its arrays (so an
        unedited document keeps odd counts such as -1 for an empty array)."""
        if not self.derivations:
            return rec
        out = rec
        by_count: dict[str, list[tuple[str, int]]] = {}
        for cname, aname, k in self.derivations:
            by_count.setdefault(cname, []).append((aname, k))
        for cname, arrays in by_count.items():
            cur = rec.get(cname)
            implied = set()
            consistent = True
            for aname, k in arrays:
                if aname not in rec:
                    continue
                v = rec[aname]
                try:
                    items = v.shape[0] if isinstance(v, np.ndarray) and v.ndim > 1 else len(v)
                except TypeError:
                    continue
                if items % k:
                    raise EncodeError(f"{aname} has {items} values, not a multiple of {k}", path=aname)
                implied.add(items // k)
                if not isinstance(cur, int) or isinstance(cur, bool) or max(cur, 0) * k != items:
                    consistent = False
            if consistent and cname in rec:
                continue
            if len(implied) > 1:
                raise EncodeError(f"arrays counted by {cname} disagree on its value: {sorted(implied)}",
                                  path=cname)
            if implied:
                if out is rec:
                    out = dict(rec)
                out[cname] = implied.pop()
        return out

    def regenerate_sizes(self, rec: dict, s: Scope) -> dict:
        """Size fields of sized sub-streams follow their content: each content is
        encoded once here (kept on the scope for its own field's encode) and its
        size field set to what it takes."""
        out = rec
        for cname, aname, k, sized in self.size_derivations:
            if aname not in rec:
                continue
            content = rec[aname]
            s.push(rec)  # the content may refer to this record's fields
            try:
                data = sized.content_bytes(content, s)
            except FormatError as e:
                raise e.prepend(aname)
            finally:
                s.pop()
            if s.encoded is None:
                s.encoded = {}
            s.encoded[id(content)] = data
            if len(data) % k:
                raise EncodeError(f"{aname} takes {len(data)} bytes, not a multiple of {k}", path=aname)
            cur = rec.get(cname)
            if cur != len(data) // k or cur.__class__ is not int:
                if out is rec:
                    out = dict(rec)
                out[cname] = len(data) // k
        return out

    def encode(self, w: Writer, v: Any, s: Scope) -> None:
        if not isinstance(v, dict):
            raise EncodeError(f"expected a record ({self.name}), found {type(v).__name__}")
        v = self.regenerate_counts(v)
        if self.size_derivations:
            v = self.regenerate_sizes(v, s)
        cur: dict[str, Any] = {}
        s.push(cur)
        try:
            known = set()
            for f in self.fields:
                known.add(f.name)
                if f.is_param:
                    p = s.frames[0]
                    if f.name not in p:
                        p[f.name] = f.storage.default
                    continue
                try:
                    s.present = f.name in v
                    if f.cond is not None and not f.cond(s):
                        continue
                    if f.name not in v:
                        raise EncodeError("missing field (its condition is true)")
                    x = v[f.name]
                    f.storage.encode(w, x, s)
                    cur[f.name] = x
                except FormatError as e:
                    if e.defined_at is None:
                        e.defined_at = f.defined_at
                    raise e.prepend(f.name)
            extra = set(v) - known
            if extra:
                raise EncodeError(f"unknown fields {sorted(extra)} in {self.name}")
        finally:
            s.pop()

    # --- JSON ---------------------------------------------------------
    def _generated(self, cache: str, key: tuple, build: Any) -> Any:
        """The function ``build()`` makes for this record and ``key``, kept in
        the record's ``cache`` dict beside the fields it was made for (made
        again when the fields are recompiled; other keys stay)."""
        fns = self.__dict__.get(cache)
        entry = fns.get(key) if fns else None
        if entry is None or entry[0] is not self.fields:
            if fns and any(e[0] is not self.fields for e in fns.values()):
                fns.clear()  # (fields recompiled)
            entry = (self.fields, build())
            self.__dict__.setdefault(cache, {})[key] = entry
        return entry[1]

    def to_json(self, v: Any, ctx: JsonCtx) -> Any:
        # through a function generated once per record and JSON context (see
        # jsoncompile.record_json_function); the loop below says what it does
        fn = self._generated("_json_fns", json_key(ctx),
                             lambda: record_json_function(self, ctx, Record.to_json))
        return fn(v)

    def to_json_by_field(self, v: Any, ctx: JsonCtx) -> Any:
        """The generic conversion the generated functions stand for."""
        out = {}
        for f in self.fields:
            if f.name in v and f.name not in out:
                out[f.name] = f.storage.to_json(v[f.name], ctx)
        return out

    def _fields_by_name(self) -> dict[str, tuple[Field, ...]]:
        """JSON key -> the fields it may be (several under exclusive conditions);
        built once per compiled record."""
        by_name = self.__dict__.get("_by_name")
        if by_name is None or by_name[0] is not self.fields:
            table: dict[str, list[Field]] = {}
            for f in self.fields:
                if not f.is_param:
                    table.setdefault(f.name, []).append(f)
            by_name = (self.fields, {k: tuple(v) for k, v in table.items()})
            self._by_name = by_name
        return by_name[1]

    def from_json(self, o: Any, ctx: JsonCtx, jpath: str) -> Any:
        # through a loader generated once per record, form and encoding
        # (jsonload.record_load_function); anything it does not expect is
        # loaded again by from_json_by_field, which words the error
        # (None for fields sharing a name: only the path below tries each)
        fn = self._generated("_load_fns", load_key(ctx),
                             lambda: record_load_function(self, ctx, Record.from_json))
        if fn is not None:
            try:
                return fn(o)
            except RecursionError:  # (the path below nests deeper still)
                raise
            except Exception:  # (an error or an unusual value: the path below)
                pass
        return self.from_json_by_field(o, ctx, jpath)

    def from_json_by_field(self, o: Any, ctx: JsonCtx, jpath: str) -> Any:
        """The field-by-field loading the generated loaders stand for: every
        value through its storage, errors with their JSON path."""
        if not isinstance(o, dict):
            raise _jerr(f"expected an object ({self.name}), found {type(o).__name__}", jpath)
        out = {}
        by_name = self._fields_by_name()
        for k, val in o.items():
            fs = by_name.get(k)
            if fs is None:
                raise _jerr(f"unknown field {k!r} in {self.name}", jpath)
            if len(fs) == 1:
                try:
                    out[k] = fs[0].storage.from_json(val, ctx, f"{jpath}.{k}")
                except JsonFormatError as e:
                    if e.defined_at is None:
                        e.defined_at = fs[0].defined_at
                    raise
                continue
            # fields may share a name under exclusive conditions: try each storage
            err = None
            for f in fs:
                try:
                    out[k] = f.storage.from_json(val, ctx, f"{jpath}.{k}")
                    err = None
                    break
                except JsonFormatError as e:
                    err = err or e
            if err is not None:
                if err.defined_at is None:
                    err.defined_at = fs[0].defined_at
                raise err
        return out

    def opaque_size(self, v: Any) -> int:
        total = 0
        for f in self.fields:
            if f.name in v:
                total += f.storage.opaque_size(v[f.name])
        return total

