"""Compiled JSON loading of records: the counterpart of :mod:`jsoncompile`.

``Record.from_json`` walks a record's fields one storage call at a time,
building a JSON path string for every value in case it is wrong.  Loading a
large document is mostly that walk.  Here each record gets one generated
function per JSON form and text encoding that reads the usual values inline
(ints in range, wire float bit patterns, hex and text strings, numeric arrays
of the storage's shape) and builds no paths.

The generated path never words an error.  On anything it does not expect (a
wrong type, a value out of range, an unknown key, a NaN in the readable form)
it raises, and ``Record.from_json`` loads that record again field by field,
which gives the value or the error with its JSON path, exactly as before.
So a value it returns is the value the field-by-field path returns, and a
document the field-by-field path refuses is refused the same way.

Records are dicts whose keys follow the JSON object's order, and a record's
JSON objects come in few key sequences (which conditional fields are
present).  Each record keeps one function per key sequence it has met,
generated on first sight (at most :data:`SHAPES_PER_RECORD`; a record with
more loads the rest field by field)."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..values import RawString
from .arrays import Array
from .jsoncompile import Program
from .jsonio import JsonCtx, _int_bounds
from .storages import Bytes, Group, Prim, String, Tail

#: key sequences a record gets generated functions for
SHAPES_PER_RECORD = 64
#: numeric lists this long or shorter are checked in Python, longer ones by numpy
SMALL_ARRAY = 16


class Unusual(Exception):
    """The generated path met something it leaves to the field-by-field path."""


def load_key(ctx: JsonCtx) -> tuple:
    """What a generated loader depends on: the form and the text encoding."""
    return ctx.form, ctx.encoding


def record_load_function(record: Any, ctx: JsonCtx, plain_record: Any) -> Callable[[Any], Any] | None:
    """The generated loader of ``record`` (and of every record it reaches) for
    this form and encoding, or None when ``record`` has two fields of one name
    (exclusive conditions: only the field-by-field path tries each).  Each
    record keeps its loader in ``_load_fns``; ``plain_record`` is
    ``Record.from_json``."""
    wire = ctx.form == "wire"
    # (_bnew(RawString, b): the string without RawString.__new__, a Python call)
    names: dict[str, Any] = {"CTX": ctx, "RawString": RawString, "FROMHEX": bytes.fromhex,
                             "_bnew": bytes.__new__, "Unusual": Unusual}
    program = Program(names, "L", "_e")
    const, fresh = program.const, program.fresh
    programs, fn_of = program.records, program.fn_of

    def record_fn(rec: Any) -> str | None:
        fields = [f for f in rec.fields if not f.is_param]
        if len({f.name for f in fields}) != len(fields):
            return None  # (two fields of one name: the field-by-field path only)
        return program.record_fn(rec)

    def expr(st: Any, x: str) -> str:
        """A Python expression loading variable ``x`` as storage ``st``: the
        value, or an ``Unusual`` raised; what is not inlined is the storage's
        own ``from_json`` (its errors send the record to the slow path)."""
        cls = type(st)
        method = f"{const(st.from_json, 'm')}({x}, CTX, '')"
        if cls.from_json is plain_record:
            fn = record_fn(st)
            return f"{fn}({x})" if fn else method
        if cls.from_json is Prim.from_json:
            if st.kind == "i":
                lo, hi = _int_bounds(st.dtype)
                return f"({x} if {x}.__class__ is int and {lo} <= {x} <= {hi} else {method})"
            if wire:
                fb = const(st.float_bits[0], "fb")
                return f"({fb}({x}) if {x}.__class__ is int and 0 <= {x} < {1 << (8 * st.size)} " \
                       f"else {method})"
            if st.size == 8:
                return f"({x} if {x}.__class__ is float else {method})"
            big = float(np.finfo(np.float32).max)
            return f"({x} if {x}.__class__ is float and {-big!r} <= {x} <= {big!r} else {method})"
        if cls.from_json is Group.from_json and type(st.prim).from_json is Prim.from_json:
            n = st.n
            if wire and st.bits_st is not None:
                # (as Group.from_json: one pack/unpack, NaNs by the slow way)
                pk, up = const(st.bits_st.pack, "pk"), const(st.st.unpack, "up")
                return f"(_g if {x}.__class__ is list and len({x}) == {n} and bool not in map(type, {x}) " \
                       f"and (_t := sum(_g := list({up}({pk}(*{x}))))) == _t else {method})"
            y = fresh()
            return f"([{expr(st.prim, y)} for {y} in {x}] if {x}.__class__ is list and len({x}) == {n} " \
                   f"else {method})"
        if cls.from_json is String.from_json or getattr(st, "json_str_is_plain", False):
            if wire:
                return f"(_bnew(RawString, FROMHEX({x})) if {x}.__class__ is str else {method})"
            enc = const(ctx.encoding, "enc")
            return f"(_bnew(RawString, {x}.encode({enc})) if {x}.__class__ is str else {method})"
        if cls.from_json is Tail.from_json or (cls.from_json is Bytes.from_json
                                               and getattr(st, "size", None) is None):
            return f"(FROMHEX({x}) if {x}.__class__ is str else {method})"
        if cls.from_json is Bytes.from_json:
            return f"(_b if {x}.__class__ is str and len(_b := FROMHEX({x})) == {st.size} " \
                   f"else {method})"
        if cls.from_json is Array.from_json:
            if st.elem_dtype is not None or st.inner_count is not None:
                conv = numeric_array_loader(st, ctx)
                return f"{const(conv, 'na')}({x})" if conv is not None else method
            y = fresh()
            return f"([{expr(st.item, y)} for {y} in {x}] if {x}.__class__ is list else {method})"
        return method

    def generate(rec: Any) -> str:
        """The dispatcher of one record: its key sequence picks a generated
        shape function; a new sequence of known keys gets one made."""
        name = fn_of[id(rec)]
        fields = {f.name: f for f in rec.fields if not f.is_param}
        shapes: dict[tuple, Callable] = {}
        names[name + "_shapes"] = shapes

        def new_shape(o: Any) -> Any:
            keys = tuple(o)
            if len(shapes) >= SHAPES_PER_RECORD or not all(k.__class__ is str and k in fields
                                                           for k in keys):
                raise Unusual
            more = len(programs)  # (records first met in this shape get theirs below)
            lines = [f"def {name}_shape(o):"]
            lines += [f"    x{i} = o[{k!r}]" for i, k in enumerate(keys)]
            items = ", ".join(f"{k!r}: {expr(fields[k].storage, f'x{i}')}" for i, k in enumerate(keys))
            lines.append(f"    return {{{items}}}")
            exec(compile("\n".join(lines), f"<potsherd load {rec.name}>", "exec"), names)
            while more < len(programs):
                exec(compile(generate(programs[more]), f"<potsherd load {programs[more].name}>",
                             "exec"), names)
                more += 1
            fn = shapes[keys] = names.pop(f"{name}_shape")
            return fn(o)

        names[name + "_new"] = new_shape
        return "\n".join([
            f"def {name}(o):",
            "    if o.__class__ is not dict:",
            "        raise Unusual",
            f"    fn = {name}_shapes.get(tuple(o))",
            f"    return fn(o) if fn is not None else {name}_new(o)"])

    top = record_fn(record)
    if top is None:
        return None
    done = 0
    while done < len(programs):
        rec = programs[done]
        exec(compile(generate(rec), f"<potsherd load {rec.name}>", "exec"), names)
        done += 1
    for rec in programs:
        rec.__dict__.setdefault("_load_fns", {})[load_key(ctx)] = (rec.fields, names[fn_of[id(rec)]])
    return names[top]


def numeric_array_loader(st: Array, ctx: JsonCtx) -> Callable[[Any], Any] | None:
    """``st.from_json`` of a numeric array as a closure for the usual JSON: a
    list of ints (or of rows of ints) of the storage's shape, ints in range,
    for an int array or a wire float array (bit patterns).  Anything else
    (readable floats, ``{"bits"}``, no rows, out of range) is the storage's
    own ``from_json``."""
    fixed = st.elem_dtype is not None
    dt = st.elem_dtype.base if fixed else st.inner_dtype
    tail = tuple(st.elem_dtype.shape) if fixed else None
    if dt.names or dt.kind not in "iuf" or (dt.kind == "f" and ctx.form != "wire"):
        return None
    udt = np.dtype(dt.str.replace("f", "u")) if dt.kind == "f" else dt
    lo, hi = _int_bounds(udt)
    as_float = dt if dt.kind == "f" else None
    generic = st.from_json
    array, zeros, ndarray_min, ndarray_max = np.array, np.zeros, np.ndarray.min, np.ndarray.max

    def checked(x: list) -> np.ndarray:
        a = array(x)  # (numpy's inference: int64/uint64 only for integer lists)
        if a.dtype.kind not in "iu" or ndarray_min(a) < lo or ndarray_max(a) > hi:
            raise Unusual
        return a.astype(udt)

    # (no rows: the dtype's empty array; a counted 2-D array's width comes
    # from its first row, so an empty one is 0 wide)
    empty_shape = (0,) + tail if fixed else (0, 0)

    def conv(x: Any) -> Any:
        if x.__class__ is list:
            if not x:
                return zeros(empty_shape, dt)
            first = x[0]
            if first.__class__ is list:
                want = tail if fixed else (len(first),)
                small = len(x) <= SMALL_ARRAY and all(e.__class__ is int for r in x for e in r)
            else:
                want = tail if fixed else (0,)
                small = len(x) <= SMALL_ARRAY and all(e.__class__ is int for e in x)
            # (numpy refuses ints out of the dtype's range: OverflowError)
            a = array(x, dtype=udt) if small else checked(x)
            if a.size and a.shape[1:] == want:
                return a.view(as_float) if as_float is not None else a
        return generic(x, ctx, "")
    return conv


