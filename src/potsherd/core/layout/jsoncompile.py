"""Compiled JSON conversion of records: one generated function per record
and JSON context, instead of a ``Storage.to_json`` call per field and value."""
from __future__ import annotations

import struct
from typing import Any

import numpy as np

from ..jsontext import LAZY_MIN, LazyItems, arrays_stay_native
from ..values import F32NaN, F64NaN, RawString
from .arrays import Array
from .jsonio import JsonCtx
from .storages import Bytes, Choice, Group, Prim, String, Tail


def record_json_function(record: Any, ctx: JsonCtx, plain_record: Any) -> Any:
    """``record.to_json(v, ctx)`` as one generated Python function per record
    reachable from ``record`` (for this form and text encoding): fields are
    read by constant keys and scalars converted inline (ints, wire float bit
    patterns, hex strings) instead of a ``Storage.to_json`` call per value.

    The functions of one program call each other directly (recursive records
    included); storages without an inline form are called through their own
    ``to_json``.  Each record keeps its function in ``_json_fns``.
    ``plain_record`` is ``Record.to_json`` (records whose class keeps it are
    generated; this module does not import records, which imports it)."""

    native = arrays_stay_native()
    key = json_key(ctx)
    wire = ctx.form == "wire"
    names: dict[str, Any] = {"CTX": ctx, "F32NaN": F32NaN, "F64NaN": F64NaN, "RawString": RawString,
                             "bytes": bytes, "struct_error": struct.error,
                             "LazyItems": LazyItems, "ndarray": np.ndarray}
    program = Program(names, "rec", "_v")
    const, record_fn, fresh = program.const, program.record_fn, program.fresh
    programs, fn_of = program.records, program.fn_of

    def expr(st: Any, x: str) -> str:
        """A Python expression converting variable ``x`` stored as ``st``."""
        cls = type(st)
        if cls.to_json is plain_record:
            return f"{record_fn(st)}({x})"
        if cls.to_json is Choice.to_json:
            return expr(st.yes, x)
        if cls.to_json is Prim.to_json:
            if st.kind == "i":
                return f"({x} if {x}.__class__ is int else int({x}))"
            if wire and st.size in (4, 8):
                nan = "F32NaN" if st.size == 4 else "F64NaN"
                pack = const((struct.Struct("<f") if st.size == 4 else struct.Struct("<d")).pack, "pk")
                unpack = const((struct.Struct("<I") if st.size == 4 else struct.Struct("<Q")).unpack, "up")
                return f"({x}.bits if isinstance({x}, {nan}) else {unpack}({pack}({x}))[0])"
            if not wire:
                m = const(st.to_json, "m")
                return f"(_f if (_f := float({x})) - _f == 0.0 else {m}({x}, CTX))"
        if cls.to_json is Group.to_json and type(st.prim).to_json is Prim.to_json and \
                (st.prim.kind == "i" or not wire):
            # (ints, or readable floats: Group.to_json's per-value list, written out)
            y = fresh()
            return f"[{expr(st.prim, y)} for {y} in {x}]"
        if not wire and (cls.to_json is String.to_json or getattr(st, "wire_json_is_string", False)):
            # (readable: an empty string is "" unless it keeps a stored length;
            # other text through the storage, which checks how it round-trips)
            m = const(st.to_json, "m")
            return f"('' if {x}.__class__ is RawString and not {x} and {x}.raw_len is None " \
                   f"else {m}({x}, CTX))"
        if cls.to_json is String.to_json or (wire and getattr(st, "wire_json_is_string", False)):
            if wire:
                m = const(st.to_json, "m")
                # (an empty string is "" unless it keeps a stored length <= 0)
                return f"({x}.hex() if {x}.__class__ is bytes or ({x}.__class__ is RawString " \
                       f"and ({x} or {x}.raw_len is None)) else {m}({x}, CTX))"
        if cls.to_json in (Bytes.to_json, Tail.to_json):
            m = const(st.to_json, "m")
            return f"({x}.hex() if {x}.__class__ is bytes else {m}({x}, CTX))"
        if cls.to_json is Array.to_json and (st.elem_dtype is not None or st.inner_count is not None):
            conv = numeric_array(st, ctx, native)
            if conv is not None:
                inline = native_inline(st, ctx) if native else None
                if inline is not None:
                    # (the usual case written out: an array of the storage's own
                    # dtype, not empty; orjson writes it, contiguous or not)
                    dt_name, bits_name = const(inline[0], "dt"), inline[1] and const(inline[1], "bt")
                    value = f"{x}.view({bits_name})" if bits_name else x
                    # (an array with no rows is [] whatever its dtype, as the list form writes it)
                    return f"({value} if {x}.__class__ is ndarray and {x}.dtype is {dt_name} " \
                           f"and {x}.size else [] if {x}.__class__ is ndarray and {x}.ndim " \
                           f"and not {x}.shape[0] else {const(conv, 'na')}({x}))"
                return f"{const(conv, 'na')}({x})"
        if cls.to_json is Array.to_json and st.elem_dtype is None and st.inner_count is None:
            y = fresh()
            if native and type(st.item).to_json is plain_record:
                # a long list of records is converted a record at a time as it
                # is written (jsontext.LazyItems), a short one at once
                fn = record_fn(st.item)
                return f"(LazyItems({x}, {fn}) if {x}.__class__ is list and len({x}) >= {LAZY_MIN} " \
                       f"else [{fn}({y}) for {y} in {x}])"
            return f"[{expr(st.item, y)} for {y} in {x}]"
        return f"{const(st.to_json, 'm')}({x}, CTX)"

    def scalar_codes(st: Any) -> tuple[str, str, int] | None:
        """(pack code, unpack code, values) of a field that a fixed run of the
        wire form can convert with one struct call, else None."""
        if type(st).to_json is Prim.to_json and type(st) is Prim:
            code = st.st.format[-1]
            if st.kind == "f":
                return (code, {"f": "I", "d": "Q"}[code], 1) if code in "fd" else None
            return code, code, 1
        if type(st).to_json is Group.to_json and type(st.prim) is Prim:
            pc, uc, _ = scalar_codes(st.prim) or ("", "", 0)
            return (pc, uc, st.n) if pc else None
        return None

    def fixed_run(rec: Any, name: str, slow: str) -> str | None:
        """Wire form of a record of unconditional numbers and groups: one
        pack/unpack for all its values (the generic function when a value is
        NaN, of another length or not a number)."""
        fields = rec.fields
        if not wire or len(fields) < 2 or len({f.name for f in fields}) != len(fields):
            return None
        codes = []
        for f in fields:
            c = None if f.cond is not None or f.is_param else scalar_codes(f.storage)
            if c is None:
                return None
            codes.append(c)
        pack = const(struct.Struct("<" + "".join(c[0] * c[2] for c in codes)).pack, "pk")
        unpack = const(struct.Struct("<" + "".join(c[1] * c[2] for c in codes)).unpack, "up")
        lines = [f"def {name}(v):", "    try:"]
        lines += [f"        f{i} = v[{f.name!r}]" for i, f in enumerate(fields)]
        groups = [i for i, c in enumerate(codes) if isinstance(fields[i].storage, Group)]
        checks = [f"len(f{i}) == {codes[i][2]}" for i in groups]
        floats = [f"sum(f{i})" if i in groups else f"f{i}" for i, c in enumerate(codes) if c[0] in "fd"]
        if floats:
            checks.append(f"(_t := {' + '.join(floats)}) == _t")
        lines.append(f"        if {' and '.join(checks) or 'True'}:")
        args = ", ".join(f"*f{i}" if i in groups else f"f{i}" for i in range(len(fields)))
        lines.append(f"            b = {unpack}({pack}({args}))")
        items, pos = [], 0
        for f, c in zip(fields, codes):
            if isinstance(f.storage, Group):
                items.append(f"{f.name!r}: [{', '.join(f'b[{pos + j}]' for j in range(c[2]))}]")
            else:
                items.append(f"{f.name!r}: b[{pos}]")
            pos += c[2]
        lines.append("            return {" + ", ".join(items) + "}")
        lines.append("    except (KeyError, TypeError, OverflowError, struct_error):")
        lines.append("        pass")
        lines.append(f"    return {slow}(v)")
        return "\n".join(lines)

    def generate(rec: Any) -> str:
        name = fn_of[id(rec)]
        fast = fixed_run(rec, name, name + "_fields")
        if fast is None:
            fast = all_present(rec, name, name + "_fields")
        if fast is not None:
            return fast + "\n\n" + generic(rec, name + "_fields")
        return generic(rec, name)

    def field_expr(st: Any, x: str) -> str:
        """``expr``, with a wire group of floats through one pack/unpack."""
        if wire and type(st).to_json is Group.to_json and st.bits_st is not None:
            return f"{const(float_group(st, ctx), 'fg')}({x})"
        return expr(st, x)

    def all_present(rec: Any, name: str, slow: str) -> str | None:
        """A record whose unconditional fields all come first: those read in
        one ``try`` and written as one dict display, then each conditional one
        when present (the generic function when a field is missing)."""
        fields = rec.fields
        if len({f.name for f in fields}) != len(fields):
            return None
        plain = [f for f in fields if f.cond is None and not f.is_param]
        if len(plain) < 2 or fields[:len(plain)] != plain:
            return None
        lines = [f"def {name}(v):", "    try:"]
        lines += [f"        x{i} = v[{f.name!r}]" for i, f in enumerate(plain)]
        lines += ["    except KeyError:", f"        return {slow}(v)"]
        items = ", ".join(f"{f.name!r}: {field_expr(f.storage, f'x{i}')}" for i, f in enumerate(plain))
        rest = fields[len(plain):]
        if not rest:
            lines.append(f"    return {{{items}}}")
            return "\n".join(lines)
        lines.append(f"    out = {{{items}}}")
        for f in rest:
            k = repr(f.name)
            lines += [f"    if {k} in v:", f"        x = v[{k}]", f"        out[{k}] = {field_expr(f.storage, 'x')}"]
        lines.append("    return out")
        return "\n".join(lines)

    def generic(rec: Any, name: str) -> str:
        lines = [f"def {name}(v):", "    out = {}"]
        seen = set()
        for f in rec.fields:
            if f.name in seen:  # (the first field of a name converts it, as Record.to_json)
                continue
            seen.add(f.name)
            k = repr(f.name)
            lines.append(f"    if {k} in v:")
            lines.append(f"        x = v[{k}]")
            lines.append(f"        out[{k}] = {field_expr(f.storage, 'x')}")
        lines.append("    return out")
        return "\n".join(lines)

    record_fn(record)
    sources = []
    done = 0
    while done < len(programs):  # generating a record may discover more records
        sources.append(generate(programs[done]))
        done += 1
    code = "\n\n".join(sources)
    names["__source__"] = code  # (for reading what was generated)
    exec(compile(code, f"<potsherd json {record.name}>", "exec"), names)
    for rec in programs:
        rec.__dict__.setdefault("_json_fns", {})[key] = (rec.fields, names[fn_of[id(rec)]])
    return names[fn_of[id(record)]]


class Program:
    """The namespace of one generated program: constants by identity, one
    function name per record (the records in discovery order: each needs its
    function generated), fresh local names.  Shared by the generated JSON
    converters and loaders (jsonload)."""

    __slots__ = ("names", "consts", "fn_of", "records", "fn_prefix", "var_prefix")

    def __init__(self, names: dict[str, Any], fn_prefix: str, var_prefix: str) -> None:
        self.names = names
        self.consts: dict[int, str] = {}
        self.fn_of: dict[int, str] = {}
        self.records: list[Any] = []
        self.fn_prefix, self.var_prefix = fn_prefix, var_prefix

    def const(self, obj: Any, prefix: str) -> str:
        """The name ``obj`` has in the program (bound once per object)."""
        name = self.consts.get(id(obj))
        if name is None:
            name = self.consts[id(obj)] = f"{prefix}{len(self.consts)}"
            self.names[name] = obj
        return name

    def record_fn(self, rec: Any) -> str:
        """The name of ``rec``'s function (the record is queued the first time)."""
        name = self.fn_of.get(id(rec))
        if name is None:
            name = self.fn_of[id(rec)] = f"{self.fn_prefix}{len(self.fn_of)}"
            self.names["_keep" + name] = rec
            self.records.append(rec)
        return name

    def fresh(self) -> str:
        """A local name not used yet (for comprehension variables)."""
        self.names["_n"] = self.names.get("_n", 0) + 1
        return f"{self.var_prefix}{self.names['_n']}"


def float_group(g: Group, ctx: JsonCtx) -> Any:
    """The wire form of a group of floats (a vec3, a quaternion): one
    pack/unpack when it is finite and of its length, else ``g.to_json``."""
    m, pack, unpack, n = g.to_json, g.st.pack, g.bits_st.unpack, g.n

    def conv(x: Any) -> Any:
        try:
            if len(x) == n and (t := sum(x)) == t:
                return list(unpack(pack(*x)))
        except (TypeError, OverflowError, struct.error):
            pass
        return m(x, ctx)
    return conv


def json_key(ctx: JsonCtx) -> tuple:
    """What a generated function depends on: the form, the text encoding and
    whether numeric arrays stay arrays (``jsontext.native_arrays``)."""
    return ctx.form, ctx.encoding, arrays_stay_native()


def native_inline(st: Array, ctx: JsonCtx) -> tuple[np.dtype, np.dtype | None] | None:
    """(dtype, bit-pattern dtype or None) of a numeric array whose dump value
    is the array itself (ints) or its bit-pattern view (wire floats), for the
    generated code to test and convert inline; None when not that simple."""
    dt = st.elem_dtype.base if st.elem_dtype is not None else st.inner_dtype
    if dt.names or dt.kind not in "iuf" or not dt.isnative:
        return None
    dt = np.dtype(dt.str)  # (the shared instance decoded arrays carry: an `is` test)
    if dt.kind in "iu":
        return dt, None
    if ctx.form == "wire":
        return dt, np.dtype(dt.str.replace("f", "u"))
    return None


def numeric_array(st: Array, ctx: JsonCtx, native: bool) -> Any:
    """``st.to_json`` for a numeric array as a closure that handles the usual
    case (an array of the storage's own native-order dtype) without the
    general checks; anything else goes to ``st.to_json``."""
    dt = st.elem_dtype.base if st.elem_dtype is not None else st.inner_dtype
    if dt.names or dt.kind not in "iuf" or not dt.isnative:
        return None
    generic = st.to_json
    ndarray = np.ndarray
    if dt.kind in "iu":
        def values(a: np.ndarray) -> Any:
            return a
    elif ctx.form == "wire":
        bits = np.dtype(dt.str.replace("f", "u"))

        def values(a: np.ndarray) -> Any:
            return a.view(bits)
    else:
        return None  # (readable floats: finite checks and {"bits"} stay in _np_to_json)
    if native:
        def conv(v: Any) -> Any:
            if v.__class__ is ndarray and v.dtype == dt:
                if not v.size:
                    return v.tolist()  # (empty: as the list form writes it)
                return values(v)  # (orjson writes a strided array through its tolist)
            return generic(v, ctx)
    else:
        def conv(v: Any) -> Any:
            if v.__class__ is ndarray and v.dtype == dt:
                return values(v).tolist()
            return generic(v, ctx)
    return conv
