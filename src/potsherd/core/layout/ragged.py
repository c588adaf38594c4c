"""Ragged tables: records with variable-length numeric arrays, column-wise.

``{"kind":"ragged","count":E,"item":R}``
    ``count`` records of ``R`` back to back, where ``R`` is a run of fixed
    fields (unconditional primitives, groups, fixed numeric arrays, fixed byte
    runs) followed by numeric arrays whose counts and conditions are integer
    expressions of those fixed fields only, e.g. a skin binding::

        origin vec3 | count i32 | pad bytes[8] | joints i32[count] | weights f32[count] if count > 1

    The value is a :class:`Ragged`: ``rows``, one numpy structured array of the
    fixed fields (one row per record), and one flat array per variable field
    holding every record's values one after the other (the CSR form of sparse
    matrices).  Decoding walks the records once to find where each starts
    (each start depends on the counts before it) and then gathers every column
    with numpy; encoding scatters them back.  Bytes are kept exactly (float bit
    patterns, pad bytes).  JSON is an object with one entry per field: the fixed
    ones as columns, the variable ones flat.  Editing::

        b = lod["bindings"]                   # Ragged
        b["weights"][:4]                      # flat values of all records
        b.split("joints")[7]                  # record 7's joints
        b.record(7)                           # record 7 as a dict (the list form)

    A record's arrays are as long as its count fields say: to change how many
    values a record has, edit its count and the flat array together (or build
    a list of dicts, which encoding accepts, each record through the record's
    own encoder, counts regenerated).
"""
from __future__ import annotations

from typing import Any, Iterator

import numpy as np

from ..errors import EncodeError, FormatError, LimitError, TruncatedError
from ..expr import Scope, references, split_operator
from ..stream import Reader, Writer
from ..values import f32_from_bits, f64_from_bits
from .arrays import Array, encode_each
from .jsonio import JsonCtx, _jerr, _np_from_json, _np_to_json, table_from_columns
from .records import Record
from .storages import Bytes, Group, Prim, Storage
from .tables import records_from_json
from ..expr import source_text


def _floats_keeping_nan_bits(a: np.ndarray) -> Any:
    """``a.tolist()``, with each NaN as the document value of its own bits
    (``values.f32_from_bits``/``f64_from_bits``: an F32NaN/F64NaN)."""
    a = np.asarray(a)
    if a.dtype.kind != "f" or not np.isnan(a).any():
        return a.tolist()
    from_bits, bits = (f32_from_bits, np.uint32) if a.dtype.itemsize == 4 else (f64_from_bits, np.uint64)
    out = a.astype(object)
    nan = np.isnan(a)
    out[nan] = [from_bits(int(b)) for b in np.ascontiguousarray(a).view(bits)[nan]]
    return out.tolist()


class Ragged:
    """The value of a ragged table: ``rows`` (the fixed fields, a structured
    array) and ``flat[name]`` (each variable field, all records concatenated)."""

    __slots__ = ("rows", "flat", "_storage")

    def __init__(self, rows: np.ndarray, flat: dict[str, np.ndarray], storage: "RaggedTable") -> None:
        self.rows = rows
        self.flat = flat
        self._storage = storage

    def __len__(self) -> int:
        return len(self.rows)

    def copy(self) -> "Ragged":
        return Ragged(self.rows.copy(), {k: np.array(v, copy=True) for k, v in self.flat.items()},
                      self._storage)

    def __copy__(self) -> "Ragged":
        return Ragged(self.rows, dict(self.flat), self._storage)

    def __deepcopy__(self, memo: dict) -> "Ragged":
        return self.copy()  # (the layout storage it belongs to is shared, not copied)

    def keys(self) -> list[str]:
        """The field names, in the record's order."""
        return [f.name for f in self._storage.item.fields]

    def __getitem__(self, name: str | int) -> Any:
        """A field by name (a column, or a variable field's flat values), or a
        record by index (a dict, a copy: as with a table, ``t[i]`` reads and
        ``t["field"]`` is what to edit)."""
        if isinstance(name, (int, np.integer)):
            n = len(self.rows)
            if not -n <= name < n:
                raise IndexError(f"record {name} of {n}")
            return self.record(int(name) % n)
        if name in self.flat:
            return self.flat[name]
        if self.rows.dtype.names and name in self.rows.dtype.names:
            return self.rows[name]
        raise KeyError(name)

    def __setitem__(self, name: str, value: Any) -> None:
        if name in self.flat:
            self.flat[name] = value
        elif self.rows.dtype.names and name in self.rows.dtype.names:
            self.rows[name] = value
        else:
            raise KeyError(name)

    def __contains__(self, name: object) -> bool:
        return name in self.keys()

    def __iter__(self) -> Iterator[dict]:
        """The records, as dicts (see :meth:`records`)."""
        return iter(self.records())

    def lengths(self, name: str) -> np.ndarray:
        """How many values of the variable field ``name`` each record has."""
        plan = self._storage.plan
        return plan.lengths(self.rows)[plan.var_names.index(name)]

    def split(self, name: str) -> list[np.ndarray]:
        """The values of the variable field ``name``, one array per record."""
        cuts = np.cumsum(self.lengths(name))[:-1]
        return np.split(np.asarray(self.flat[name]), cuts)

    def record(self, i: int) -> dict:
        """Record ``i`` as a dict, as a plain array of records would give it."""
        plan = self._storage.plan
        row = self.rows[i]
        out: dict[str, Any] = {}
        for f in plan.fixed:
            v = row[f.name]
            if isinstance(v, np.void):
                v = bytes(v)
            elif isinstance(v, np.ndarray):
                v = _floats_keeping_nan_bits(v)
            elif isinstance(v, np.floating) and v != v:
                v = _floats_keeping_nan_bits(np.asarray(v))
            else:
                v = v.item()
            out[f.name] = v
        lens = plan.lengths(self.rows[i:i + 1])
        for k, f in enumerate(plan.var):
            if not plan.present(f, self.rows[i:i + 1])[0]:
                continue
            start = int(plan.lengths(self.rows[:i])[k].sum()) if i else 0
            out[f.name] = np.asarray(self.flat[f.name])[start:start + int(lens[k][0])].copy()
        return out

    def records(self) -> list[dict]:
        """Every record as a dict (the list form).  A NaN float keeps its bit
        pattern (``F32NaN``/``F64NaN``, as the decoder gives it): through a Python
        float a signalling NaN would come back quiet, one bit changed."""
        plan = self._storage.plan
        fixed = self.rows.tolist()
        for col, f in enumerate(plan.fixed):
            a = self.rows[f.name]
            if a.dtype.base.kind == "f" and np.isnan(a).any():
                for i in np.flatnonzero(np.isnan(a).reshape(len(a), -1).any(axis=1)):
                    row = list(fixed[i])
                    row[col] = _floats_keeping_nan_bits(a[i])
                    fixed[i] = tuple(row)
        per = [self.split(f.name) for f in plan.var]
        present = [plan.present(f, self.rows) for f in plan.var]
        out = []
        for i, row in enumerate(fixed):
            rec = {}
            for f, v in zip(plan.fixed, row):
                rec[f.name] = v.tolist() if isinstance(v, np.ndarray) else v
            for k, f in enumerate(plan.var):
                if present[k][i]:
                    rec[f.name] = per[k][i].copy()
            out.append(rec)
        return out

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Ragged):
            return NotImplemented
        return (self.rows.dtype == other.rows.dtype and self.rows.tobytes() == other.rows.tobytes()
                and self.flat.keys() == other.flat.keys()
                and all(np.array_equal(np.asarray(self.flat[k]).view(np.uint8),
                                       np.asarray(other.flat[k]).view(np.uint8)) for k in self.flat))

    def __repr__(self) -> str:
        return f"Ragged({len(self)} records: {', '.join(self.keys())})"


# ----------------------------------------------------------------------------
# the expressions a ragged record may use for its counts and conditions

#: operator -> (Python source template for scalars, for numpy columns)
_BINARY = {"gt": ">", "lt": "<", "ge": ">=", "eq": "==", "ne": "!=", "minus": "-", "mask": "&"}
_NARY = {"plus": "+", "product": "*"}


def _source(e: Any, names: dict[str, str], vector: bool) -> str:
    """Python source computing ``e`` over local variables (``names``: field ->
    variable); the same source works for ints and for int64 numpy columns,
    except ``min``/``max``/``and``/``or``/``not``, written for each."""
    if isinstance(e, bool):
        return str(int(e))
    if isinstance(e, int):
        return repr(e)
    if isinstance(e, str):
        if e not in names:
            raise ValueError(f"a ragged record's counts may use its own fixed integer "
                             f"fields only, not {e!r}")
        return names[e]
    op, _arg, args = split_operator(e)
    parts = [_source(a, names, vector) for a in args]
    if op in _BINARY and len(parts) == 2:
        return f"(({parts[0]}) {_BINARY[op]} ({parts[1]}))"
    if op in _NARY and parts:
        return "(" + f" {_NARY[op]} ".join(f"({p})" for p in parts) + ")"
    if op == "and":
        return "(" + " & ".join(f"(({p}) != 0)" for p in parts) + ")" if vector else \
            "(" + " and ".join(f"(({p}) != 0)" for p in parts) + ")"
    if op == "or":
        return "(" + " | ".join(f"(({p}) != 0)" for p in parts) + ")" if vector else \
            "(" + " or ".join(f"(({p}) != 0)" for p in parts) + ")"
    if op == "not" and len(parts) == 1:
        return f"(({parts[0]}) == 0)"
    if op in ("min", "max") and parts:
        fn = ("_np." + ("minimum" if op == "min" else "maximum")) if vector else op
        out = parts[0]
        for p in parts[1:]:
            out = f"{fn}({out}, {p})"
        return out
    raise ValueError(f"operator {op!r} is not supported in a ragged record's counts")


class _Plan:
    """What a ragged record is: its fixed prefix, its variable fields and the
    generated functions that walk, measure and check it."""

    def __init__(self, item: Record) -> None:
        from .tables import record_dtype
        fields = item.fields
        if len({f.name for f in fields}) != len(fields):
            raise ValueError(f"ragged record {item.name}: field names repeat")
        k = 0
        while k < len(fields) and fields[k].cond is None and not fields[k].is_param \
                and _fixed(fields[k].storage):
            k += 1
        self.fixed, self.var = fields[:k], fields[k:]
        if not self.fixed or not self.var:
            raise ValueError(f"ragged record {item.name}: needs fixed fields then variable arrays")
        prefix = Record(item.name + ".fixed", item.layout)
        prefix.fields, prefix._compiled = self.fixed, True
        prefix.size = sum(f.storage.size for f in self.fixed)
        dt = record_dtype(prefix)
        if dt is None or dt.itemsize == 0:
            raise ValueError(f"ragged record {item.name}: its fixed fields are not one table row")
        self.dtype, self.size = dt, dt.itemsize
        self.var_names = [f.name for f in self.var]
        self.elems: list[tuple[np.dtype, tuple]] = []   # (element dtype, shape of one value)
        for f in self.var:
            st = f.storage
            if f.is_param or type(st) is not Array:
                raise ValueError(f"ragged record {item.name}: {f.name} is not a numeric array")
            if st.elem_dtype is not None:
                self.elems.append((st.elem_dtype.base, st.elem_dtype.shape))
            elif st.inner_count is not None and isinstance(st.item.count_src, int) \
                    and not isinstance(st.item.count_src, bool):
                self.elems.append((st.inner_dtype, (max(st.item.count_src, 0),)))
            else:
                raise ValueError(f"ragged record {item.name}: {f.name} is not a numeric array")
        ints = {f.name: f.storage for f in self.fixed
                if type(f.storage) is Prim and f.storage.kind == "i" and f.storage.size <= 4}
        scalar = {n: f"v_{i}" for i, n in enumerate(ints)}
        vector = {n: f"cols[{n!r}]" for n in ints}
        used: set[str] = set()
        counts, conds, vcounts, vconds = [], [], [], []
        for f in self.var:
            src = f.storage.count_src
            used |= references(src)
            counts.append(_source(src, scalar, False))
            vcounts.append(_source(src, vector, True))
            if f.cond is not None:
                used |= references(f.cond_src)
                conds.append(_source(f.cond_src, scalar, False))
                vconds.append(_source(f.cond_src, vector, True))
            else:
                conds.append(None)
                vconds.append(None)
        self.item_sizes = [int(dt.itemsize * int(np.prod(shape, dtype=np.int64))) for dt, shape in self.elems]
        offsets = {f.name: int(self.dtype.fields[f.name][1]) for f in self.fixed}
        ns: dict[str, Any] = {"_np": np}
        lines = ["def walk(buf, pos, end, n):",
                 "    starts = [0] * n"]
        lines += [f"    L{j} = [0] * n" for j in range(len(self.var))]
        lines += ["    i = 0", "    while i < n:",
                  f"        if end - pos < {self.size}: return i, pos, -1, starts, {self._ls()}"]
        for name in sorted(used):
            st = ints[name]
            ns[f"U_{scalar[name]}"] = st.st.unpack_from
            lines.append(f"        {scalar[name]}, = U_{scalar[name]}(buf, pos + {offsets[name]})")
        lines.append(f"        q = pos + {self.size}")
        for j, (c, cond) in enumerate(zip(counts, conds)):
            lines.append(f"        c = {c}")
            if cond is not None:
                lines.append(f"        if not ({cond}): c = 0")
            lines += ["        if c < 0: c = 0", f"        L{j}[i] = c", f"        q += c * {self.item_sizes[j]}",
                      f"        if q > end: return i, pos, {j}, starts, {self._ls()}"]
        lines += ["        starts[i] = pos", "        pos = q", "        i += 1",
                  f"    return n, pos, None, starts, {self._ls()}"]
        lines += ["", "def lengths(cols):"]
        outs = []
        for j, (c, cond) in enumerate(zip(vcounts, vconds)):
            lines.append(f"    c{j} = _np.maximum(_np.asarray({c}, dtype=_np.int64), 0)")
            if cond is not None:
                lines.append(f"    c{j} = _np.where(_np.asarray({cond}) != 0, c{j}, 0)")
            outs.append(f"_np.broadcast_to(c{j}, (len(cols),)).astype(_np.int64)")
        lines.append(f"    return [{', '.join(outs)}]")
        lines += ["", "def present(j, cols):"]
        for j, cond in enumerate(vconds):
            lines.append(f"    if j == {j}: return _np.broadcast_to(_np.asarray("
                         f"{cond if cond is not None else 1}) != 0, (len(cols),))")
        self.source = "\n".join(lines)
        exec(compile(self.source, f"<potsherd ragged {item.name}>", "exec"), ns)
        self.walk, self._lengths, self._present = ns["walk"], ns["lengths"], ns["present"]

    def _ls(self) -> str:
        return "(" + "".join(f"L{j}, " for j in range(len(self.var))) + ")"

    def lengths(self, rows: np.ndarray) -> list[np.ndarray]:
        """Per variable field, each record's count of values."""
        cols = _Columns(rows)
        return self._lengths(cols)

    def present(self, f: Any, rows: np.ndarray) -> np.ndarray:
        return self._present(self.var.index(f), _Columns(rows))


class _Columns:
    """Integer columns of the fixed rows, as int64, for the generated
    ``lengths`` (a count may multiply two 32-bit fields)."""

    __slots__ = ("rows", "cache")

    def __init__(self, rows: np.ndarray) -> None:
        self.rows = rows
        self.cache: dict[str, np.ndarray] = {}

    def __getitem__(self, name: str) -> np.ndarray:
        c = self.cache.get(name)
        if c is None:
            c = self.cache[name] = self.rows[name].astype(np.int64)
        return c

    def __len__(self) -> int:
        return len(self.rows)


def _fixed(st: Storage) -> bool:
    t = type(st)
    return t in (Prim, Group) or (t is Array and st.dtype is not None) or (t is Bytes and bool(st.size))


def _element_index(starts: np.ndarray, lens: np.ndarray, size: int) -> np.ndarray:
    """Byte index (values x size) of every value of one variable field, given
    where each record's values start and how many it has."""
    total = int(lens.sum())
    before = np.cumsum(lens) - lens
    first = np.repeat(starts - before * size, lens) + np.arange(total, dtype=np.int64) * size
    return first[:, None] + np.arange(size, dtype=np.int64)


class RaggedTable(Array):
    """``count`` records of fixed fields and variable numeric arrays, as a
    :class:`Ragged` (see the module)."""

    def __init__(self, count: Any, item: Storage) -> None:
        super().__init__(count, item)
        self._plan: _Plan | None = None

    @property
    def plan(self) -> _Plan:
        if self._plan is None:
            if not isinstance(self.item, Record):
                raise ValueError(f"a ragged table's item must be a record: {self.item.describe()}")
            self._plan = _Plan(self.item)
        return self._plan

    def describe(self) -> str:
        return f"ragged[{source_text(self.count_src)}] of {self.item.describe()}"

    # --- decode -------------------------------------------------------
    def decode(self, r: Reader, s: Scope) -> Any:
        return self.read(r, self._n(s, self.count))

    def read(self, r: Reader, n: int) -> Ragged:
        """``n`` records from ``r``."""
        plan = self.plan
        r.check_count(n, plan.size, "ragged table")
        start = r.pos
        done, pos, failed, starts, lens = plan.walk(r.buf, start, r.end, n)
        if failed is not None:
            if failed < 0:
                raise TruncatedError(f"input ends: record needs {plan.size} bytes, {r.end - pos} left",
                                     offset=pos, path=f"[{done}]", expected=plan.size,
                                     found=r.end - pos)
            f = plan.var[failed]
            raise TruncatedError(f"input ends: {f.name} of {lens[failed][done]} values "
                                 f"exceeds the bytes left", offset=pos, path=f"[{done}].{f.name}",
                                 found=lens[failed][done])
        u8 = np.frombuffer(r.buf, np.uint8)
        st = np.array(starts, dtype=np.int64)
        rows = u8[st[:, None] + np.arange(plan.size, dtype=np.int64)].view(plan.dtype).reshape(n)
        flat: dict[str, np.ndarray] = {}
        off = st + plan.size
        for j, f in enumerate(plan.var):
            lj = np.array(lens[j], dtype=np.int64)
            size = plan.item_sizes[j]
            total = int(lj.sum())
            if total > r.limits.max_elements:
                raise LimitError(f"{f.name}: {total} values exceed the limit of "
                                 f"{r.limits.max_elements} elements", offset=start, found=total)
            dt, shape = plan.elems[j]
            if total and size:
                flat[f.name] = u8[_element_index(off, lj, size)].view(dt).reshape((total,) + shape)
            else:
                flat[f.name] = np.zeros((total,) + shape, dt)
            off = off + lj * size
        r.pos = pos
        return Ragged(rows, flat, self)

    # --- encode -------------------------------------------------------
    def as_ragged(self, v: Any, s: Scope | None = None) -> Ragged:
        """``v`` as a :class:`Ragged` of this table's dtypes: one, or a list of
        records (each through the record's own encoder, so values are checked
        and counts regenerated exactly as for a plain array of records)."""
        plan = self.plan
        if isinstance(v, Ragged):
            rows = v.rows
            if rows.dtype != plan.dtype or rows.ndim != 1:
                rows = _coerce_rows(rows, plan.dtype)
            flat = {}
            for (dt, shape), f in zip(plan.elems, plan.var):
                if f.name not in v.flat:
                    raise EncodeError(f"the flat values of {f.name} are missing", path=f.name)
                try:
                    a = np.asarray(v.flat[f.name])
                    if a.dtype != dt:
                        if a.size and a.dtype.kind == "f" and dt.kind in "iu":
                            raise EncodeError("integer array holds floats", path=f.name)
                        a = a.astype(dt)
                except (ValueError, TypeError) as e:
                    raise EncodeError(f"not a numeric array: {e}", path=f.name) from None
                if a.shape[1:] != shape and not (a.size == 0):
                    raise EncodeError(f"values have shape {a.shape[1:]}, expected {shape}", path=f.name)
                flat[f.name] = a.reshape((-1,) + shape) if a.size == 0 else a
            return Ragged(rows, flat, self)
        if isinstance(v, list):
            w = Writer()
            encode_each(self.item, v, w, s or Scope({}))
            data = w.getvalue()
            r = Reader(data)
            try:
                out = self.read(r, len(v))
            except FormatError as e:  # pragma: no cover - the record encoder wrote them
                raise EncodeError(f"records do not read back: {e.message}") from None
            if r.pos != len(data):  # pragma: no cover
                raise EncodeError("records do not read back")
            return out
        raise EncodeError(f"expected a ragged table (Ragged or list of records), "
                          f"found {type(v).__name__}")

    def encode(self, w: Writer, v: Any, s: Scope) -> None:
        n = self._n(s, self.count)
        t = self.as_ragged(v, s)
        plan = self.plan
        if len(t) != n:
            raise EncodeError(f"ragged table has {len(t)} records, its count says {n}")
        lens = plan.lengths(t.rows)
        sizes = np.full(n, plan.size, dtype=np.int64)
        for j, f in enumerate(plan.var):
            want = int(lens[j].sum())
            have = len(t.flat[f.name])
            if want != have:
                raise EncodeError(f"{f.name} has {have} values, the records' counts say {want}",
                                  path=f.name)
            sizes += lens[j] * plan.item_sizes[j]
        total = int(sizes.sum())
        out = np.empty(total, np.uint8)
        starts = np.cumsum(sizes) - sizes
        if n:
            out[starts[:, None] + np.arange(plan.size, dtype=np.int64)] = \
                np.ascontiguousarray(t.rows).view(np.uint8).reshape(n, plan.size)
        off = starts + plan.size
        for j, f in enumerate(plan.var):
            size = plan.item_sizes[j]
            a = t.flat[f.name]
            if len(a) and size:
                out[_element_index(off, lens[j], size)] = \
                    np.ascontiguousarray(a).view(np.uint8).reshape(len(a), size)
            off = off + lens[j] * size
        w.write(out.tobytes())

    # --- JSON ---------------------------------------------------------
    def to_json(self, v: Any, ctx: JsonCtx) -> Any:
        t = self.as_ragged(v)
        cols = _np_to_json(t.rows, ctx) if len(t.rows) else \
            {name: [] for name in t.rows.dtype.names}
        out = {}
        for f in self.item.fields:
            out[f.name] = cols[f.name] if f.name in cols else _np_to_json(np.asarray(t.flat[f.name]), ctx)
        return out

    def from_json(self, o: Any, ctx: JsonCtx, jpath: str) -> Any:
        plan = self.plan
        if isinstance(o, list):
            return records_from_json(self.item, o, ctx, jpath, self.as_ragged)
        names = [f.name for f in self.item.fields]
        if not isinstance(o, dict) or set(o) != set(names):
            raise _jerr(f"expected an object with {names}", jpath)
        rows = table_from_columns({f.name: o[f.name] for f in plan.fixed}, plan.dtype, ctx, jpath)
        flat = {f.name: _np_from_json(o[f.name], dt, shape, ctx, f"{jpath}.{f.name}")
                for f, (dt, shape) in zip(plan.var, plan.elems)}
        return Ragged(rows, flat, self)

    def opaque_size(self, v: Any) -> int:
        return 0


def _coerce_rows(rows: Any, dt: np.dtype) -> np.ndarray:
    rows = np.asarray(rows)
    if rows.dtype.names is None or set(rows.dtype.names) != set(dt.names) or rows.ndim != 1:
        raise EncodeError(f"rows have columns {rows.dtype.names} and shape {rows.shape}, "
                          f"expected the columns {list(dt.names)}")
    out = np.zeros(len(rows), dtype=dt)
    for name in dt.names:
        try:
            out[name] = rows[name]
        except (ValueError, TypeError) as e:
            raise EncodeError(f"column cannot be stored as {dt[name]}: {e}", path=name) from None
    return out
