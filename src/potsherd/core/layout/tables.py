"""Fixed-record tables and the one parser of Python struct format strings; the
notation of the three storage kinds built on them (the sized kind lives in
:mod:`.sized`):

``{"kind":"table","count":E,"item":R}``
    ``count`` records of a fixed record ``R`` (a record name, or a struct
    format: ``{"kind":"table","count":E,"format":F,"keys":K}``) as **one numpy
    structured array**: one ``frombuffer`` to decode, one ``tobytes`` to
    encode, float bit patterns (NaN payloads, -0.0) and pad bytes kept as
    stored.  JSON is an object with one column per field.  Editing::

        t = doc.root["collapses"]          # numpy structured array
        t["index"][3] = 7                  # a column, or t[3]["index"] = 7
        doc.root["collapses"] = np.append(t, t[:1])   # add a row; the count follows

    A list of dicts (one per record, as the record's own encoder takes them)
    is accepted wherever a table is encoded, so code that builds documents
    by hand need not know about numpy.

``{"kind":"sized","size":E,"item":S}`` (``"repeat": true``: items back to back)
    A sub-stream of ``E`` bytes whose content ``S`` is read from a bounded
    reader.  When the content does not parse, or does not fill the bytes
    exactly, the bytes are kept raw (:class:`Unparsed`; JSON ``{"raw": hex}``)
    with a warning, so the file still round-trips.  On encode the content is
    written first and the size field (``E`` = ``name`` or ``name * k``) is
    regenerated from what it took.

``{"kind":"struct","format":F,"keys":K}``
    One record from a struct format string, built as an ordinary record of
    primitive fields (so it reaches the fast path like any other record).
"""
from __future__ import annotations

import re
from typing import Any

import numpy as np

from ..errors import EncodeError, FormatError
from ..expr import Scope
from ..stream import Reader, Writer
from .jsonio import JsonCtx, _jerr, _np_to_json, table_from_columns
from .storages import PRIMS, Bytes, Group, Prim, Storage
from .arrays import Array, encode_each
from .records import Record
from ..expr import source_text

# ----------------------------------------------------------------------------
# struct format strings

#: struct letter -> (layout primitive, numpy type code)
STRUCT_CODES = {"b": ("i8", "i1"), "B": ("u8", "u1"), "?": ("u8", "u1"), "h": ("i16", "i2"),
                "H": ("u16", "u2"), "i": ("i32", "i4"), "I": ("u32", "u4"), "l": ("i32", "i4"),
                "L": ("u32", "u4"), "q": ("i64", "i8"), "Q": ("u64", "u8"), "f": ("f32", "f4"),
                "d": ("f64", "f8")}


def parse_struct(fmt: str, keys: str | list[str]) -> list[tuple[str, str, int]]:
    """``(name, code, n)`` per field of a struct format and its key names:
    ``code`` is a struct letter (one value each) or ``s``/``x`` (``n`` raw
    bytes).  ``x`` runs take the names ``_pad0``, ``_pad1``..."""
    names = keys.split() if isinstance(keys, str) else list(keys)
    body = fmt[1:] if fmt[:1] in "<>=!@" else fmt
    out: list[tuple[str, str, int]] = []
    ki = pad = 0
    for m in re.finditer(r"\s*(\d*)([a-zA-Z?])", body):
        cnt = int(m.group(1)) if m.group(1) else 1
        code = m.group(2)
        if code in "sxp":
            if code == "x":
                out.append((f"_pad{pad}", "x", cnt))
                pad += 1
            else:
                if ki >= len(names):
                    raise ValueError(f"struct {fmt!r}: more fields than keys")
                out.append((names[ki], "s", cnt))
                ki += 1
            continue
        if code not in STRUCT_CODES:
            raise ValueError(f"struct code {code!r} in {fmt!r} is not supported")
        for _ in range(cnt):
            if ki >= len(names):
                raise ValueError(f"struct {fmt!r}: more fields than keys")
            out.append((names[ki], code, 1))
            ki += 1
    if ki != len(names):
        raise ValueError(f"struct {fmt!r}: {len(names)} keys for {ki} fields")
    return out


def struct_big_endian(fmt: str) -> bool:
    return fmt[:1] in ">!"


def struct_rows(fmt: str, keys: str | list[str]) -> list[tuple[str, Any, str]]:
    """Layout rows for one struct record: a primitive per value, ``bytes`` for
    ``s`` and ``x`` runs (the same document the struct module would give)."""
    big = struct_big_endian(fmt)
    rows: list[tuple[str, Any, str]] = []
    for name, code, n in parse_struct(fmt, keys):
        if code in "sx":
            rows.append((name, {"kind": "bytes", "count": n}, "always"))
            continue
        prim = STRUCT_CODES[code][0]
        if big and prim not in ("u8", "i8"):
            if prim + "be" not in PRIMS:
                raise ValueError(f"struct {fmt!r}: no big-endian {prim}")
            prim += "be"
        rows.append((name, prim, "always"))
    return rows


def struct_dtype(fields: list[tuple[str, str, int]], big: bool = False) -> np.dtype:
    """A packed numpy record dtype for parsed struct fields (``s``/``x`` -> ``V<n>``)."""
    order = ">" if big else "<"
    return np.dtype([(name, f"V{n}") if code in "sx" else (name, order + STRUCT_CODES[code][1])
                     for name, code, n in fields])


def record_dtype(rec: Storage) -> np.dtype | None:
    """The packed structured dtype of a record of unconditional fixed fields
    (primitives, groups, fixed numeric arrays, fixed byte runs, nested such
    records), or None when the record cannot be one table row."""
    if not isinstance(rec, Record) or not rec.fields:
        return None
    spec = []
    seen = set()
    for f in rec.fields:
        st = f.storage
        if f.cond is not None or f.is_param or f.name in seen:
            return None
        seen.add(f.name)
        if type(st) in (Prim, Group):
            spec.append((f.name, st.dtype))
        elif type(st) is Array and st.dtype is not None:
            spec.append((f.name, st.dtype))
        elif type(st) is Bytes and st.size:
            spec.append((f.name, f"V{st.size}"))
        elif isinstance(st, Record):
            sub = record_dtype(st)
            if sub is None:
                return None
            spec.append((f.name, sub))
        else:
            return None
    dt = np.dtype(spec)
    if rec.size is not None and dt.itemsize != rec.size:
        return None
    return dt


# ----------------------------------------------------------------------------
# tables


class ColumnJson:
    """How one table column is shown in JSON when the numeric/hex default does
    not say enough (e.g. fixed name slots shown as text): a family passes one
    per column name (``{"kind":"table",...,"columns":{name: hook}}``)."""

    def to_json(self, col: np.ndarray, ctx: JsonCtx) -> Any:
        raise NotImplementedError

    def from_json(self, o: Any, dtype: np.dtype, ctx: JsonCtx, jpath: str) -> np.ndarray:
        """The column (1-D, of ``dtype``) from its JSON form."""
        raise NotImplementedError


def records_from_json(item: Record, o: list, ctx: JsonCtx, jpath: str, build: Any) -> Any:
    """A column-wise value (table, ragged table) from its JSON as a list of
    one object per record (easier to write by hand): each object loaded as
    ``item``, then ``build(records)``, whose refusal is worded at ``jpath``."""
    fj = item.from_json
    recs = [fj(x, ctx, f"{jpath}[{i}]") for i, x in enumerate(o)]
    try:
        return build(recs)
    except FormatError as e:
        raise _jerr(e.message, jpath) from None


class Table(Array):
    """``count`` fixed records as one numpy structured array (see the module)."""

    def __init__(self, count: Any, item: Storage,
                 columns: dict[str, ColumnJson] | None = None) -> None:
        super().__init__(count, item)
        self._dtype: np.dtype | None = None
        #: per-column JSON hooks (columns not named use the default form)
        self.columns: dict[str, ColumnJson] = dict(columns or {})

    @property
    def table_dtype(self) -> np.dtype:
        """The row dtype (computed once the item record is compiled)."""
        if self._dtype is None:
            dt = record_dtype(self.item)
            if dt is None:
                raise ValueError(f"table of {self.item.describe()}: the record is not "
                                 "a run of unconditional fixed fields")
            self._dtype = dt
        return self._dtype

    def describe(self) -> str:
        return f"table[{source_text(self.count_src)}] of {self.item.describe()}"

    def decode(self, r: Reader, s: Scope) -> Any:
        return r.array(self.table_dtype, self._n(s, self.count), self.item.describe())

    def as_table(self, v: Any, s: Scope | None = None) -> np.ndarray:
        """``v`` as an array of the row dtype: a structured array (columns cast
        by name), or a list of records (each through the record's encoder, so
        values are checked exactly as for a single record)."""
        dt = self.table_dtype
        if v.__class__ is np.ndarray and v.dtype is dt and v.ndim == 1:
            return v  # (the table as decoded)
        if isinstance(v, np.ndarray) and v.dtype.names is not None:
            if v.dtype == dt and v.ndim == 1:
                return v
            if set(v.dtype.names) != set(dt.names) or v.ndim != 1:
                raise EncodeError(f"table has columns {list(v.dtype.names)} and shape {v.shape}, "
                                  f"expected the columns {list(dt.names)}")
            out = np.zeros(len(v), dtype=dt)
            for name in dt.names:
                try:
                    col = v[name]
                    if col.dtype.kind == "f" and dt[name].base.kind in "iu" and col.size:
                        raise EncodeError("integer column holds floats", path=name)
                    out[name] = col
                except (ValueError, TypeError) as e:
                    raise EncodeError(f"column cannot be stored as {dt[name]}: {e}", path=name) from None
            return out
        if isinstance(v, list):
            w = Writer()
            encode_each(self.item, v, w, s or Scope({}))
            return np.frombuffer(w.getvalue(), dtype=dt).copy()
        raise EncodeError(f"expected a table (numpy structured array or list of records), "
                          f"found {type(v).__name__}")

    def encode(self, w: Writer, v: Any, s: Scope) -> None:
        n = self._n(s, self.count)
        t = self.as_table(v, s)
        if len(t) != n:
            raise EncodeError(f"table has {len(t)} rows, its count says {n}")
        w.write(t.tobytes())

    def to_json(self, v: Any, ctx: JsonCtx) -> Any:
        t = self.as_table(v)
        if not self.columns:
            return _np_to_json(t, ctx)
        hooks = self.columns
        return {n: hooks[n].to_json(t[n], ctx) if n in hooks else _np_to_json(t[n], ctx)
                for n in t.dtype.names}

    def from_json(self, o: Any, ctx: JsonCtx, jpath: str) -> Any:
        if isinstance(o, list):
            return records_from_json(self.item, o, ctx, jpath, self.as_table)
        return table_from_columns(o, self.table_dtype, ctx, jpath, self.columns)

    def opaque_size(self, v: Any) -> int:
        return 0
