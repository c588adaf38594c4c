"""The layout engine: a format described as data decodes and encodes itself.

A *layout* is a set of named records; each record is an ordered list of
``(field, storage, condition)`` rows, exactly the notation of the Knight Online
wire layout reference.  This module turns such data into :class:`Storage`
objects that decode bytes into a plain document tree (dicts, lists, numpy
arrays, bytes), encode that tree back to identical bytes, and convert it to and
from the two JSON forms.  One declaration serves all four directions.

Storage kinds
-------------
* primitives ``u8 i8 u16 i16 u32 i32 u64 i64 f32 f64`` (little-endian) and
  ``u16be i16be u32be i32be f32be``;
* groups ``vec3`` (3 x f32), ``quat`` (4 x f32), ``rect`` (4 x i32);
* ``string``: ``i32`` signed length, then that many raw bytes (a length <= 0
  reads none; a negative length is kept); ``{"kind":"string","prefix":"u8"}``
  for other prefixes;
* ``{"kind":"bytes","count":E}``: opaque bytes; ``{"kind":"tail"}``: the rest;
* ``{"kind":"array","count":E,"item":S}``: arrays of primitives (and arrays of
  fixed groups / fixed inner arrays) are numpy arrays, others are lists;
* ``{"kind":"choice","condition":E,"yes":S,"no":S}``;
* ``{"kind":"parameter","name":N,"default":V}``: an input, never serialised;
* ``{"kind":"struct","format":F,"keys":K}``: a record from a Python struct
  format string (how the Darkstar spec writes its records);
* any record name, and any custom storage a family registers in Python.

Conditions are ``"always"``, ``"optional tail"`` (present while bytes remain)
or an expression (:mod:`potsherd.core.expr`).

Speed: reference interpreter and compiled fast path
---------------------------------------------------
The classes below are the *reference*: they define every document and every
error (message, offset, path).  :meth:`Layout.decode` and
:meth:`Layout.encode` first run the same layout compiled once (cached per
layout) into specialised Python by :mod:`potsherd.core.fastpath`: runs of
fixed fields in one ``struct`` call, numeric arrays in one ``frombuffer``,
arrays of fixed scalar records in one ``iter_unpack``, expressions inlined.
The fast path only ever returns what the reference would; on anything
unusual (any error, a limit, an unexpected value type while encoding) it
steps aside and the reference runs from the start, so errors are the
reference's own.  ``reference=True`` (or ``fastpath.reference_only()``)
forces the interpreter; ``tests/core/test_engine_differential.py`` checks
both agree on every corpus file and on mutated files.  Families calling
``Record.decode`` directly (inside custom storages) get the interpreter.

Document model of record arrays (a deliberate non-change): an array of
records stays a *list of dicts*, also for fixed all-scalar records (the fast
path builds the very same dicts with ``iter_unpack``: about 0.3 us per item,
4x faster than the interpreter).  A numpy structured array is faster still, but
changes value types (``np.float32`` instead of ``float``, no ``F32NaN``)
under code that already uses ``rec["points"][i]["height"]``.  Where the gain
is big (hundreds of thousands of items) a family opts in with a storage whose
``dtype`` is a structured dtype (KO ``RecordTable``): the array is then one
``frombuffer``, encodes with ``tobytes`` and converts to JSON as an object of
columns (``_np_to_json``), losslessly.
"""
from __future__ import annotations

import json
import re
import struct
from typing import Any

import numpy as np

from .errors import (CountError, EncodeError, FormatError, JsonFormatError,
                     LimitError, TruncatedError)
from .expr import Scope, compile_expr, linear_count
from .limits import DEFAULT_LIMITS, Limits
from .stream import Reader, Writer, cached_struct
from .values import (F32NaN, F64NaN, RawString, f32_from_bits, f32_to_bits,
                     f64_from_bits, f64_to_bits)

# ----------------------------------------------------------------------------
# JSON context


class JsonCtx:
    """Options for JSON conversion: the form and the family's text encoding."""

    __slots__ = ("form", "encoding")

    def __init__(self, form: str = "wire", encoding: str = "latin-1") -> None:
        if form not in ("wire", "readable"):
            raise ValueError(f"unknown JSON form {form!r} (wire or readable)")
        self.form = form
        self.encoding = encoding


def _jerr(msg: str, jpath: str) -> JsonFormatError:
    return JsonFormatError(msg, path=jpath)


def hex_to_bytes(obj: Any, jpath: str) -> bytes:
    if not isinstance(obj, str):
        raise _jerr(f"expected a hex string, found {type(obj).__name__}", jpath)
    try:
        return bytes.fromhex(obj)
    except ValueError:
        raise _jerr("invalid hex string", jpath) from None


def text_or_hex(data: bytes, ctx: JsonCtx) -> Any:
    """Readable form of raw text bytes: text where that round-trips, else hex."""
    try:
        t = data.decode(ctx.encoding)
        if t.encode(ctx.encoding) == data:
            return t
    except (UnicodeDecodeError, UnicodeEncodeError, LookupError):
        pass
    return {"hex": data.hex()}


def text_or_hex_back(obj: Any, ctx: JsonCtx, jpath: str) -> bytes:
    if isinstance(obj, str):
        try:
            return obj.encode(ctx.encoding)
        except UnicodeEncodeError:
            raise _jerr(f"text cannot be encoded as {ctx.encoding}", jpath) from None
    if isinstance(obj, dict) and set(obj) == {"hex"}:
        return hex_to_bytes(obj["hex"], jpath + ".hex")
    raise _jerr("expected text or {\"hex\": ...}", jpath)


# ----------------------------------------------------------------------------
# Storage base


class Storage:
    """How one value is laid out.  Subclasses implement all four directions."""

    #: fixed byte size, or None when it depends on the data
    size: int | None = None
    #: smallest possible byte size (for checking counts before allocating)
    min_size: int = 0
    #: numpy dtype when arrays of this storage are numeric arrays
    dtype: np.dtype | None = None
    #: counted as bytes kept opaque (not decoded into fields) by ``validate``
    opaque: bool = False

    def decode(self, r: Reader, s: Scope) -> Any:
        raise NotImplementedError

    def encode(self, w: Writer, v: Any, s: Scope) -> None:
        raise NotImplementedError

    def to_json(self, v: Any, ctx: JsonCtx) -> Any:
        raise NotImplementedError

    def from_json(self, o: Any, ctx: JsonCtx, jpath: str) -> Any:
        raise NotImplementedError

    def describe(self) -> str:
        return type(self).__name__

    def opaque_size(self, v: Any) -> int:
        """Bytes of ``v`` kept opaque (walks nested values)."""
        return 0


# ----------------------------------------------------------------------------
# Primitives


class Prim(Storage):
    """A scalar number."""

    def __init__(self, name: str, fmt: str, dtype: str) -> None:
        self.name = name
        self.st = cached_struct(fmt)
        self.size = self.min_size = self.st.size
        self.dtype = np.dtype(dtype)
        self.kind = "f" if fmt[-1] in "fd" else "i"
        self.float_bits = {4: (f32_from_bits, f32_to_bits), 8: (f64_from_bits, f64_to_bits)}.get(
            self.size) if self.kind == "f" else None
        self.bits_st = cached_struct(fmt[0] + ("I" if self.size == 4 else "Q")) if self.kind == "f" else None

    def describe(self) -> str:
        return self.name

    def decode(self, r: Reader, s: Scope) -> Any:
        p = r.pos
        v = r.unpack(self.st)[0]
        if self.kind == "f" and v != v:
            v = self.float_bits[0](self.bits_st.unpack_from(r.buf, p)[0])
        return v

    def encode(self, w: Writer, v: Any, s: Scope) -> None:
        try:
            if self.kind == "f":
                if isinstance(v, (F32NaN, F64NaN)):
                    w.pack(self.bits_st, v.bits)
                    return
                w.pack(self.st, float(v))
            else:
                if isinstance(v, float) or isinstance(v, bool):
                    raise struct.error("not an integer")
                w.pack(self.st, int(v))
        except (struct.error, TypeError, ValueError, OverflowError) as e:
            raise EncodeError(f"cannot store {v!r} as {self.name}: {e}") from None

    def to_json(self, v: Any, ctx: JsonCtx) -> Any:
        if self.kind == "i":
            return int(v)
        if ctx.form == "wire":
            return self.float_bits[1](v)
        fv = float(v)
        if fv != fv or fv in (float("inf"), float("-inf")):
            return {"bits": self.float_bits[1](v)}
        return fv

    def from_json(self, o: Any, ctx: JsonCtx, jpath: str) -> Any:
        if self.kind == "i":
            if isinstance(o, bool) or not isinstance(o, int):
                raise _jerr(f"{self.name} expects an integer, found {o!r}"[:200], jpath)
            try:
                self.st.pack(o)
            except struct.error:
                raise _jerr(f"{o} does not fit in {self.name}", jpath) from None
            return o
        if isinstance(o, dict) and set(o) == {"bits"}:
            o = o["bits"]
            bits = True
        else:
            bits = ctx.form == "wire"
        if bits:
            if isinstance(o, bool) or not isinstance(o, int) or not 0 <= o < (1 << (8 * self.size)):
                raise _jerr(f"{self.name} bit pattern expected, found {o!r}"[:200], jpath)
            return self.float_bits[0](o)
        if isinstance(o, bool) or not isinstance(o, (int, float)):
            raise _jerr(f"{self.name} expects a number, found {o!r}"[:200], jpath)
        try:
            self.st.pack(float(o))
        except (OverflowError, struct.error):
            raise _jerr(f"{o} does not fit in {self.name}", jpath) from None
        return float(o)


PRIMS: dict[str, Prim] = {}
for _n, _f, _d in [
    ("u8", "<B", "u1"), ("i8", "<b", "i1"), ("u16", "<H", "<u2"), ("i16", "<h", "<i2"),
    ("u32", "<I", "<u4"), ("i32", "<i", "<i4"), ("u64", "<Q", "<u8"), ("i64", "<q", "<i8"),
    ("f32", "<f", "<f4"), ("f64", "<d", "<f8"),
    ("u16be", ">H", ">u2"), ("i16be", ">h", ">i2"), ("u32be", ">I", ">u4"),
    ("i32be", ">i", ">i4"), ("f32be", ">f", ">f4"),
]:
    PRIMS[_n] = Prim(_n, _f, _d)


def _np_to_json(a: np.ndarray, ctx: JsonCtx) -> Any:
    """A numeric array as JSON: ints as ints; floats as bit patterns (wire) or
    decimals (readable, falling back to ``{"bits": [...]}`` when any value is
    not finite).  A structured array (a table of fixed records) is an object
    of columns, each converted the same way."""
    if a.dtype.names:
        return {n: _np_to_json(a[n], ctx) for n in a.dtype.names}
    kind = a.dtype.kind
    if kind in "iu":
        return a.tolist()
    bits_dtype = a.dtype.newbyteorder("=").str.replace("f", "u")
    if ctx.form == "readable" and np.isfinite(a).all():
        return a.astype(np.float64).tolist()
    bits = a.astype(a.dtype.newbyteorder("=")).view(bits_dtype).tolist()
    return bits if ctx.form == "wire" else {"bits": bits}


def _np_from_json(o: Any, dtype: np.dtype, shape_tail: tuple, ctx: JsonCtx, jpath: str) -> np.ndarray:
    if dtype.names:  # a table of fixed records: one column per field
        if not isinstance(o, dict) or set(o) != set(dtype.names):
            raise _jerr(f"expected an object with columns {list(dtype.names)}", jpath)
        cols = [_np_from_json(o[n], dtype[n].base, dtype[n].shape, ctx, f"{jpath}.{n}")
                for n in dtype.names]
        if len({len(c) for c in cols}) > 1:
            raise _jerr("table columns differ in length", jpath)
        table = np.zeros(len(cols[0]), dtype=dtype)
        for n, c in zip(dtype.names, cols):
            table[n] = c
        return table
    bits = ctx.form == "wire"
    if isinstance(o, dict) and set(o) == {"bits"}:
        o, bits = o["bits"], True
    if not isinstance(o, list):
        raise _jerr(f"expected a list of numbers, found {type(o).__name__}", jpath)
    try:
        if dtype.kind == "f" and bits:
            udt = np.dtype(dtype.str.replace("f", "u"))
            raw = np.array(o, dtype=object if not o else None)
            if raw.dtype.kind not in "iu" and raw.size:
                raise ValueError("bit patterns must be integers")
            arr = np.array(o, dtype=np.int64 if udt.itemsize <= 4 else np.uint64) if o else np.zeros(
                (0,) + shape_tail, dtype=udt)
            if arr.size and (arr.min() < 0 or (udt.itemsize == 4 and arr.max() > 0xFFFFFFFF)):
                raise ValueError("bit pattern out of range")
            arr = arr.astype(udt).view(dtype)
        else:
            arr = np.array(o) if o else np.zeros((0,) + shape_tail, dtype=dtype)
            if arr.size and arr.dtype.kind not in "iuf":
                raise ValueError("not numbers")
            if dtype.kind in "iu":
                if arr.size and arr.dtype.kind == "f":
                    raise ValueError("integers expected")
                info = np.iinfo(dtype)
                if arr.size and (arr.min() < info.min or arr.max() > info.max):
                    raise ValueError(f"value out of range for {dtype}")
                arr = arr.astype(dtype)
            else:
                with np.errstate(over="ignore"):
                    src, arr = arr, arr.astype(dtype)
                if arr.size and src.dtype.kind == "f" and \
                        bool((np.isinf(arr) & np.isfinite(src)).any()):
                    raise ValueError(f"value out of range for {dtype}")
    except (ValueError, TypeError, OverflowError) as e:
        raise _jerr(f"bad numeric array: {e}", jpath) from None
    if arr.shape[1:] != shape_tail and not (arr.size == 0):
        raise _jerr(f"array rows must have shape {shape_tail}, found {arr.shape[1:]}", jpath)
    if arr.size == 0:
        rows = arr.shape[0] if arr.ndim == 1 + len(shape_tail) else 0
        if rows and int(np.prod(shape_tail)) or arr.ndim > 1 + len(shape_tail):
            # e.g. [[]] where rows of 4 are needed, or [[], []] for a flat array
            raise _jerr(f"array rows must have shape {shape_tail}, found {arr.shape[1:]}", jpath)
        arr = arr.reshape((rows,) + shape_tail)
    return arr


class Group(Storage):
    """A fixed group of one primitive (``vec3``, ``quat``, ``rect``): a list."""

    def __init__(self, name: str, prim: Prim, n: int) -> None:
        self.name = name
        self.prim = prim
        self.n = n
        self.st = cached_struct("<" + str(n) + prim.st.format[-1])
        self.size = self.min_size = self.st.size
        self.dtype = np.dtype((prim.dtype, (n,)))

    def describe(self) -> str:
        return self.name

    def decode(self, r: Reader, s: Scope) -> Any:
        p = r.pos
        vals = list(r.unpack(self.st))
        if self.prim.kind == "f":
            for i, v in enumerate(vals):
                if v != v:
                    vals[i] = self.prim.decode(Reader(r.buf, p + i * self.prim.size, r.end), s)
        return vals

    def encode(self, w: Writer, v: Any, s: Scope) -> None:
        if not isinstance(v, (list, tuple, np.ndarray)) or len(v) != self.n:
            raise EncodeError(f"{self.name} needs {self.n} values, found {v!r}"[:200])
        for x in v:
            self.prim.encode(w, x, s)

    def to_json(self, v: Any, ctx: JsonCtx) -> Any:
        return [self.prim.to_json(x, ctx) for x in v]

    def from_json(self, o: Any, ctx: JsonCtx, jpath: str) -> Any:
        if not isinstance(o, list) or len(o) != self.n:
            raise _jerr(f"{self.name} needs a list of {self.n} values", jpath)
        return [self.prim.from_json(x, ctx, f"{jpath}[{i}]") for i, x in enumerate(o)]


GROUPS = {
    "vec3": Group("vec3", PRIMS["f32"], 3),
    "quat": Group("quat", PRIMS["f32"], 4),
    "rect": Group("rect", PRIMS["i32"], 4),
}


# ----------------------------------------------------------------------------
# Strings and bytes


class String(Storage):
    """A signed length prefix, then raw bytes (no terminator).

    A length <= 0 reads no bytes; a negative stored length is kept in the
    document (:class:`RawString.raw_len`) so it is written back as it was.
    """

    def __init__(self, prefix: Prim = PRIMS["i32"]) -> None:
        self.prefix = prefix
        self.min_size = prefix.size

    def describe(self) -> str:
        return "string"

    def decode(self, r: Reader, s: Scope) -> Any:
        n = r.unpack(self.prefix.st)[0]
        if n <= 0:
            return RawString(b"", n if n < 0 else None)
        if n > r.remaining:
            raise TruncatedError(f"string of {n} bytes exceeds the {r.remaining} bytes left",
                                 offset=r.pos - self.prefix.size, expected=f"<= {r.remaining}", found=n)
        return RawString(r.read(n))

    def encode(self, w: Writer, v: Any, s: Scope) -> None:
        if not isinstance(v, (bytes, bytearray)):
            raise EncodeError(f"string value must be bytes, found {type(v).__name__}")
        raw = getattr(v, "raw_len", None)
        n = raw if (raw is not None and len(v) == 0) else len(v)
        self.prefix.encode(w, n, s)
        w.write(bytes(v))

    def to_json(self, v: Any, ctx: JsonCtx) -> Any:
        raw = getattr(v, "raw_len", None)
        if raw is not None and len(v) == 0:
            return {"len": raw}
        if ctx.form == "wire":
            return bytes(v).hex()
        return text_or_hex(bytes(v), ctx)

    def from_json(self, o: Any, ctx: JsonCtx, jpath: str) -> Any:
        if isinstance(o, dict) and "len" in o:
            n = o["len"]
            if isinstance(n, bool) or not isinstance(n, int) or n > 0 or set(o) != {"len"}:
                raise _jerr("{\"len\": n} is only for stored lengths <= 0", jpath)
            return RawString(b"", n)
        if ctx.form == "wire":
            return RawString(hex_to_bytes(o, jpath))
        return RawString(text_or_hex_back(o, ctx, jpath))


def _byte_count(n: Any, offset: int | None, error: type = CountError) -> int:
    """A byte count from an expression: None or negative reads nothing; a
    non-integer (an infinite or NaN float from a hostile count) is refused."""
    if n is None:
        return 0
    if isinstance(n, float):
        if n != n or n in (float("inf"), float("-inf")):
            raise error(f"byte count is not a number ({n})", offset=offset)
        n = int(n)
    elif not isinstance(n, int):
        raise error(f"byte count is not an integer ({type(n).__name__})", offset=offset)
    return n if n > 0 else 0


class Bytes(Storage):
    """Opaque bytes of a counted length (hex in JSON)."""

    def __init__(self, count: Any) -> None:
        self.count_src = count
        self.count = compile_expr(count)
        if isinstance(count, int) and not isinstance(count, bool):
            self.size = self.min_size = max(count, 0)

    def describe(self) -> str:
        return f"bytes[{self.count_src}]"

    def decode(self, r: Reader, s: Scope) -> Any:
        n = _byte_count(self.count(s), r.pos)
        if n > r.remaining:
            raise TruncatedError(f"{n} bytes needed, {r.remaining} left", offset=r.pos,
                                 expected=n, found=r.remaining)
        return r.read(n)

    def encode(self, w: Writer, v: Any, s: Scope) -> None:
        if not isinstance(v, (bytes, bytearray)):
            raise EncodeError(f"expected bytes, found {type(v).__name__}")
        n = _byte_count(self.count(s), None, EncodeError)
        if len(v) != n:
            raise EncodeError(f"byte field holds {len(v)} bytes, its count says {n}")
        w.write(bytes(v))

    def to_json(self, v: Any, ctx: JsonCtx) -> Any:
        return bytes(v).hex()

    def from_json(self, o: Any, ctx: JsonCtx, jpath: str) -> Any:
        return hex_to_bytes(o, jpath)


class Tail(Storage):
    """Everything to the end of the input, kept raw."""

    opaque = True

    def describe(self) -> str:
        return "tail"

    def decode(self, r: Reader, s: Scope) -> Any:
        return r.tail()

    def encode(self, w: Writer, v: Any, s: Scope) -> None:
        if not isinstance(v, (bytes, bytearray)):
            raise EncodeError(f"tail must be bytes, found {type(v).__name__}")
        w.write(bytes(v))

    def to_json(self, v: Any, ctx: JsonCtx) -> Any:
        return bytes(v).hex()

    def from_json(self, o: Any, ctx: JsonCtx, jpath: str) -> Any:
        return hex_to_bytes(o, jpath)

    def opaque_size(self, v: Any) -> int:
        return len(v)


# ----------------------------------------------------------------------------
# Structural kinds


class Param(Storage):
    """A decoder input with a default; never serialised."""

    def __init__(self, name: str, default: Any) -> None:
        self.name = name
        self.default = default


class Choice(Storage):
    """One of two storages, picked by a condition."""

    def __init__(self, cond: Any, yes: Storage, no: Storage) -> None:
        self.cond_src = cond
        self.cond = compile_expr(cond)
        self.yes, self.no = yes, no
        self.min_size = min(yes.min_size, no.min_size)
        if yes.size is not None and yes.size == no.size:
            self.size = yes.size

    def pick(self, s: Scope) -> Storage:
        return self.yes if self.cond(s) else self.no

    def describe(self) -> str:
        return f"choice({self.yes.describe()}|{self.no.describe()})"

    def decode(self, r, s):
        return self.pick(s).decode(r, s)

    def encode(self, w, v, s):
        self.pick(s).encode(w, v, s)

    # JSON conversion cannot evaluate the condition (no scope): both sides must
    # accept the value.  Integer choices (the only ones in use) share a form.
    def to_json(self, v, ctx):
        return self.yes.to_json(v, ctx)

    def from_json(self, o, ctx, jpath):
        try:
            return self.yes.from_json(o, ctx, jpath)
        except JsonFormatError:
            return self.no.from_json(o, ctx, jpath)

    def opaque_size(self, v):
        return max(self.yes.opaque_size(v), self.no.opaque_size(v))


class Array(Storage):
    """``count`` items.  Numeric items give a numpy array (2-D for groups and
    fixed inner arrays); other items give a list."""

    def __init__(self, count: Any, item: Storage) -> None:
        self.count_src = count
        self.count = compile_expr(count)
        self.item = item
        self.inner_count = None
        #: element dtype when this array decodes to a numpy array
        self.elem_dtype: np.dtype | None = None
        if item.dtype is not None:
            self.elem_dtype = item.dtype  # numeric items (possibly a sub-array dtype)
        elif isinstance(item, Array) and item.elem_dtype is not None and item.inner_count is None \
                and item.elem_dtype.shape == ():
            # array of arrays of primitives: one 2-D numpy array; the inner count
            # is evaluated once per outer array (it can depend only on the scope)
            self.inner_count = item.count
            self.inner_dtype = item.elem_dtype
        if self.elem_dtype is not None and self.elem_dtype.shape == () and \
                isinstance(count, int) and not isinstance(count, bool) and count > 0:
            # a fixed-count numeric array is itself a fixed numeric item
            self.dtype = np.dtype((self.elem_dtype, (count,)))
        if isinstance(count, int) and not isinstance(count, bool) and item.size is not None:
            self.size = self.min_size = max(count, 0) * item.size
        elif isinstance(count, int) and not isinstance(count, bool):
            self.min_size = max(count, 0) * item.min_size

    def describe(self) -> str:
        return f"array[{self.count_src}] of {self.item.describe()}"

    def _n(self, s: Scope, expr) -> int:
        n = expr(s)
        if n is None:
            s.warnings.append(f"array count {self.count_src!r} selects no case; read as empty")
            return 0
        if isinstance(n, float):
            raise FormatError(f"array count is not an integer ({n})")
        return n if n > 0 else 0

    def decode(self, r: Reader, s: Scope) -> Any:
        n = self._n(s, self.count)
        if self.elem_dtype is not None:
            base = self.elem_dtype.base
            k = int(np.prod(self.elem_dtype.shape)) if self.elem_dtype.shape else 1
            r.check_count(n, self.elem_dtype.itemsize)
            a = r.array(base, n * k)
            return a.reshape((n,) + self.elem_dtype.shape) if self.elem_dtype.shape else a
        if self.inner_count is not None:
            if n == 0:  # the inner count may refer to fields absent when empty
                return np.zeros((0, 0), dtype=self.inner_dtype)
            k = self._n(s, self.inner_count)
            r.check_count(n, k * self.inner_dtype.itemsize)
            return r.array(self.inner_dtype, n * k).reshape(n, k)
        item = self.item
        r.check_count(n, item.min_size)
        out = []
        append = out.append
        dec = item.decode
        spans = s.spans
        if spans is not None:  # the viewer's decode: every item's byte range
            for i in range(n):
                p = r.pos
                try:
                    append(dec(r, s))
                except FormatError as e:
                    raise e.prepend(f"[{i}]")
                spans.add(out, i, p, r.pos)
            return out
        if item.min_size > 0:
            for i in range(n):
                try:
                    append(dec(r, s))
                except FormatError as e:
                    raise e.prepend(f"[{i}]")
            return out
        # items that may read nothing: every one that does is charged to a
        # per-decode budget, so nested counts cannot multiply allocations
        for i in range(n):
            p = r.pos
            try:
                append(dec(r, s))
            except FormatError as e:
                raise e.prepend(f"[{i}]")
            if r.pos == p:
                s.free_items -= 1
                if s.free_items < 0:
                    raise LimitError("too many array items that occupy no bytes "
                                     f"(count {n}); the input is implausible",
                                     offset=p, path=f"[{i}]", found=n)
        return out

    def items_of(self, v: Any) -> int:
        return len(v)

    def encode(self, w: Writer, v: Any, s: Scope) -> None:
        n = self._n(s, self.count)
        if self.elem_dtype is not None or self.inner_count is not None:
            if self.elem_dtype is not None:
                dt, tail = self.elem_dtype.base, self.elem_dtype.shape
            else:
                dt, tail = self.inner_dtype, ((self._n(s, self.inner_count),) if n else (0,))
            try:
                a = np.asarray(v)
                if a.dtype != dt:
                    if a.size and a.dtype.kind == "f" and dt.kind in "iu":
                        raise EncodeError("integer array holds floats")
                    a = a.astype(dt)
            except (ValueError, TypeError) as e:
                raise EncodeError(f"not a numeric array: {e}") from None
            if a.shape != (n,) + tuple(tail) and not (n == 0 and a.size == 0):
                raise EncodeError(f"array has shape {a.shape}, its count says {(n,) + tuple(tail)}")
            w.write(a.tobytes())
            return
        if not isinstance(v, list):
            raise EncodeError(f"expected a list, found {type(v).__name__}")
        if len(v) != n:
            raise EncodeError(f"array has {len(v)} items, its count says {n}")
        enc = self.item.encode
        for i, x in enumerate(v):
            try:
                enc(w, x, s)
            except FormatError as e:
                raise e.prepend(f"[{i}]")

    def to_json(self, v: Any, ctx: JsonCtx) -> Any:
        if self.elem_dtype is not None or self.inner_count is not None:
            return _np_to_json(np.asarray(v), ctx)
        tj = self.item.to_json
        return [tj(x, ctx) for x in v]

    def from_json(self, o: Any, ctx: JsonCtx, jpath: str) -> Any:
        if self.elem_dtype is not None:
            return _np_from_json(o, self.elem_dtype.base, self.elem_dtype.shape, ctx, jpath)
        if self.inner_count is not None:
            if isinstance(o, list) and o and isinstance(o[0], list):
                width = (len(o[0]),)
            elif isinstance(o, dict) and isinstance(o.get("bits"), list) and o["bits"] \
                    and isinstance(o["bits"][0], list):
                width = (len(o["bits"][0]),)
            else:
                width = (0,)
            return _np_from_json(o, self.inner_dtype, width, ctx, jpath)
        if not isinstance(o, list):
            raise _jerr(f"expected a list, found {type(o).__name__}", jpath)
        fj = self.item.from_json
        return [fj(x, ctx, f"{jpath}[{i}]") for i, x in enumerate(o)]

    def opaque_size(self, v: Any) -> int:
        if self.elem_dtype is not None or self.inner_count is not None:
            return 0
        return sum(self.item.opaque_size(x) for x in v)


class StructRecord(Storage):
    """A fixed record from a Python struct format string and its key names.

    ``{"kind":"struct","format":"<2lf5l","keys":"a b c d e f g h"}``: one
    ``struct`` call decodes the whole record into a dict; ``Ns`` fields are
    bytes (hex in JSON), ``x`` pad bytes are kept as a ``_padN`` bytes field.
    """

    _CODES = {"b": "i8", "B": "u8", "h": "i16", "H": "u16", "i": "i32", "I": "u32",
              "l": "i32", "L": "u32", "q": "i64", "Q": "u64", "f": "f32", "d": "f64", "?": "u8"}

    def __init__(self, fmt: str, keys: str | list[str]) -> None:
        order = fmt[0] if fmt and fmt[0] in "<>=!@" else "<"
        body = fmt[1:] if fmt and fmt[0] in "<>=!@" else fmt
        names = keys.split() if isinstance(keys, str) else list(keys)
        self.fields: list[tuple[str, str, int]] = []  # (name, kind, n) kind: prim name or 'bytes'
        new_fmt = order if order != "@" else "<"
        ki = 0
        pad = 0
        for m in re.finditer(r"(\d*)([a-zA-Z?])", body):
            cnt = int(m.group(1)) if m.group(1) else 1
            code = m.group(2)
            if code in ("s", "p"):
                if ki >= len(names):
                    raise ValueError(f"struct {fmt}: more fields than keys")
                self.fields.append((names[ki], "bytes", cnt))
                new_fmt += f"{cnt}s"
                ki += 1
            elif code == "x":
                self.fields.append((f"_pad{pad}", "bytes", cnt))
                new_fmt += f"{cnt}s"
                pad += 1
            elif code in self._CODES:
                for _ in range(cnt):
                    if ki >= len(names):
                        raise ValueError(f"struct {fmt}: more fields than keys")
                    self.fields.append((names[ki], self._CODES[code], 1))
                    new_fmt += ("b" if code == "?" else code if code not in "lL" else
                                {"l": "i", "L": "I"}[code]).replace("?", "B")
                    ki += 1
            else:
                raise ValueError(f"struct code {code!r} is not supported")
        if ki != len(names):
            raise ValueError(f"struct {fmt}: {len(names)} keys for {ki} fields")
        self.st = cached_struct(new_fmt.replace("?", "B"))
        self.size = self.min_size = self.st.size
        self.names = [f[0] for f in self.fields]
        self.big = order in ">!"
        # byte offsets of float fields (for NaN bit preservation)
        offs = []
        pos = 0
        for name, kind, n in self.fields:
            sz = n if kind == "bytes" else PRIMS[kind].size
            offs.append((pos, kind) if kind in ("f32", "f64") else None)
            pos += sz
        self.float_offs = offs
        self.fmt = fmt

    def describe(self) -> str:
        return f"struct{self.fmt}"

    def _prim(self, kind: str) -> Prim:
        return PRIMS[kind + "be"] if self.big and kind + "be" in PRIMS else PRIMS[kind]

    def decode(self, r: Reader, s: Scope) -> Any:
        p = r.pos
        vals = r.unpack(self.st)
        d = dict(zip(self.names, vals))
        for i, fo in enumerate(self.float_offs):
            if fo is not None and vals[i] != vals[i]:
                off, kind = fo
                bits = struct.unpack_from((">" if self.big else "<") + ("I" if kind == "f32" else "Q"),
                                          r.buf, p + off)[0]
                d[self.names[i]] = (f32_from_bits if kind == "f32" else f64_from_bits)(bits)
        return d

    def encode(self, w: Writer, v: Any, s: Scope) -> None:
        if not isinstance(v, dict):
            raise EncodeError(f"expected a record, found {type(v).__name__}")
        for name, kind, n in self.fields:
            if name not in v:
                raise EncodeError("missing field", path=name)
            x = v[name]
            try:
                if kind == "bytes":
                    if not isinstance(x, (bytes, bytearray)) or len(x) != n:
                        raise EncodeError(f"needs exactly {n} bytes")
                    w.write(bytes(x))
                else:
                    self._prim(kind).encode(w, x, s)
            except FormatError as e:
                raise e.prepend(name)
        extra = set(v) - set(self.names)
        if extra:
            raise EncodeError(f"unknown fields {sorted(extra)}")

    def to_json(self, v: Any, ctx: JsonCtx) -> Any:
        out = {}
        for name, kind, n in self.fields:
            x = v[name]
            out[name] = bytes(x).hex() if kind == "bytes" else PRIMS[kind].to_json(x, ctx)
        return out

    def from_json(self, o: Any, ctx: JsonCtx, jpath: str) -> Any:
        if not isinstance(o, dict):
            raise _jerr("expected an object", jpath)
        extra = set(o) - set(self.names)
        if extra:
            raise _jerr(f"unknown fields {sorted(extra)}", jpath)
        out = {}
        for name, kind, n in self.fields:
            if name not in o:
                raise _jerr("missing field", f"{jpath}.{name}")
            if kind == "bytes":
                b = hex_to_bytes(o[name], f"{jpath}.{name}")
                if len(b) != n:
                    raise _jerr(f"needs exactly {n} bytes", f"{jpath}.{name}")
                out[name] = b
            else:
                out[name] = PRIMS[kind].from_json(o[name], ctx, f"{jpath}.{name}")
        return out


class Field:
    __slots__ = ("name", "storage", "cond", "cond_src", "is_param")

    def __init__(self, name: str, storage: Storage, cond: Any) -> None:
        self.name = name
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

    def __init__(self, name: str, layout: "Layout") -> None:
        self.name = name
        self.layout = layout
        self.fields: list[Field] = []
        self._compiled = False
        self.derivations: list[tuple[str, str, int]] = []

    def describe(self) -> str:
        return self.name

    def compile(self, rows: list[tuple[str, Any, Any]]) -> None:
        self.fields = [Field(n, self.layout.storage(st), c) for n, st, c in rows]
        self.derivations = []
        names_before: dict[str, Field] = {}
        for f in self.fields:
            st = f.storage
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

    def encode(self, w: Writer, v: Any, s: Scope) -> None:
        if not isinstance(v, dict):
            raise EncodeError(f"expected a record ({self.name}), found {type(v).__name__}")
        v = self.regenerate_counts(v)
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
                    raise e.prepend(f.name)
            extra = set(v) - known
            if extra:
                raise EncodeError(f"unknown fields {sorted(extra)} in {self.name}")
        finally:
            s.pop()

    # --- JSON ---------------------------------------------------------
    def to_json(self, v: Any, ctx: JsonCtx) -> Any:
        out = {}
        for f in self.fields:
            if f.name in v and f.name not in out:
                out[f.name] = f.storage.to_json(v[f.name], ctx)
        return out

    def from_json(self, o: Any, ctx: JsonCtx, jpath: str) -> Any:
        if not isinstance(o, dict):
            raise _jerr(f"expected an object ({self.name}), found {type(o).__name__}", jpath)
        out = {}
        known = set()
        # fields may share a name under exclusive conditions: try each storage
        by_name: dict[str, list[Field]] = {}
        for f in self.fields:
            if not f.is_param:
                by_name.setdefault(f.name, []).append(f)
        for k, val in o.items():
            fs = by_name.get(k)
            if fs is None:
                raise _jerr(f"unknown field {k!r} in {self.name}", jpath)
            err = None
            for f in fs:
                try:
                    out[k] = f.storage.from_json(val, ctx, f"{jpath}.{k}")
                    err = None
                    break
                except JsonFormatError as e:
                    err = err or e
            if err is not None:
                raise err
            known.add(k)
        return out

    def opaque_size(self, v: Any) -> int:
        total = 0
        for f in self.fields:
            if f.name in v:
                total += f.storage.opaque_size(v[f.name])
        return total


# ----------------------------------------------------------------------------
# The layout


def parse_layout_text(text: str) -> dict[str, list[tuple[str, Any, Any]]]:
    """Parse the spec's table notation.

    A line without a tab names a record; ``Field<TAB>Storage<TAB>Condition``
    headers are skipped; each row is ``name<TAB>storage<TAB>condition`` with
    JSON cells, optionally followed by ``<TAB># comment``.  ``#`` starts a
    comment line.
    """
    records: dict[str, list[tuple[str, Any, Any]]] = {}
    current: list | None = None
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if "\t" not in line:
            name = line.strip()
            if name in records:
                raise ValueError(f"line {lineno}: record {name!r} defined twice")
            current = records[name] = []
            continue
        cells = line.split("\t")
        if cells[0] == "Field":
            continue
        if current is None:
            raise ValueError(f"line {lineno}: field outside a record")
        cells = [c for c in cells if c != ""]
        if len(cells) > 3 and cells[3].startswith("#"):
            cells = cells[:3]
        if len(cells) != 3:
            raise ValueError(f"line {lineno}: expected field, storage, condition")
        try:
            current.append((cells[0], json.loads(cells[1]), json.loads(cells[2])))
        except json.JSONDecodeError as e:
            raise ValueError(f"line {lineno}: {e}") from None
    return records


class Layout:
    """A compiled set of records plus custom storages."""

    def __init__(self, records: dict[str, list[tuple[str, Any, Any]]] | str,
                 storages: dict[str, Storage] | None = None) -> None:
        if isinstance(records, str):
            records = parse_layout_text(records)
        self.rows = records
        self.custom: dict[str, Storage] = dict(storages or {})
        self.records: dict[str, Record] = {}
        for name in records:
            self.records[name] = Record(name, self)
        # twice: the second pass sees the sizes of records referenced before
        # their definition (recursive records simply stay variable-size)
        for _ in range(2):
            for name, rows in records.items():
                self.records[name].compile(rows)

    def record(self, name: str) -> Record:
        try:
            return self.records[name]
        except KeyError:
            raise ValueError(f"unknown record {name!r}") from None

    def storage(self, spec: Any) -> Storage:
        if isinstance(spec, Storage):
            return spec
        if isinstance(spec, str):
            if spec in self.custom:
                return self.custom[spec]
            if spec in PRIMS:
                return PRIMS[spec]
            if spec in GROUPS:
                return GROUPS[spec]
            if spec == "string":
                return String()
            if spec in self.records:
                return self.records[spec]
            raise ValueError(f"unknown storage {spec!r}")
        if isinstance(spec, dict):
            kind = spec.get("kind")
            if kind == "array":
                return Array(spec["count"], self.storage(spec["item"]))
            if kind == "bytes":
                return Bytes(spec["count"])
            if kind == "tail":
                return Tail()
            if kind == "string":
                return String(PRIMS[spec.get("prefix", "i32")])
            if kind == "choice":
                return Choice(spec["condition"], self.storage(spec["yes"]), self.storage(spec["no"]))
            if kind == "parameter":
                return Param(spec["name"], spec.get("default"))
            if kind == "struct":
                return StructRecord(spec["format"], spec["keys"])
        raise ValueError(f"unknown storage {spec!r}")

    # --- whole-input helpers --------------------------------------------
    def decode(self, root: str, data: bytes, params: dict | None = None,
               limits: Limits = DEFAULT_LIMITS, warnings: list | None = None,
               start: int = 0, *, reference: bool = False,
               spans: Any = None) -> tuple[Any, int, dict]:
        """Decode ``root`` from ``data``; returns (value, end offset, params).

        The compiled fast path (:mod:`potsherd.core.fastpath`) runs first; when
        it declines, or ``reference`` is true, the interpreter below decides.
        ``spans`` (a :class:`~potsherd.core.spans.SpanMap`) records every
        field's byte range; it implies the interpreter."""
        if not reference and spans is None:
            fast = _fast_layout(self)
            done = fast.decode(root, data, params, limits, start) if fast is not None else None
            if done is not None:
                v, end, p, warns = done
                if warnings is not None:
                    warnings.extend(warns)
                return v, end, p
        p = dict(params or {})
        r = Reader(data, start, limits=limits)
        s = Scope(p, r, limits, warnings)
        s.spans = spans
        try:
            v = self.record(root).decode(r, s)
        except FormatError as e:
            raise e.prepend(root)
        except RecursionError:
            raise FormatError("nesting too deep", offset=r.pos, path=root) from None
        return v, r.pos, p

    def encode(self, root: str, value: Any, params: dict | None = None,
               limits: Limits = DEFAULT_LIMITS, *, reference: bool = False) -> bytes:
        if not reference:
            fast = _fast_layout(self)
            done = fast.encode(root, value, params, limits) if fast is not None else None
            if done is not None:
                return done
        w = Writer()
        s = Scope(dict(params or {}), None, limits)
        try:
            self.record(root).encode(w, value, s)
        except FormatError as e:
            raise e.prepend(root)
        except RecursionError:
            raise EncodeError("nesting too deep", path=root) from None
        return w.getvalue()

    def to_json(self, root: str, value: Any, ctx: JsonCtx) -> Any:
        return self.record(root).to_json(value, ctx)

    def from_json(self, root: str, obj: Any, ctx: JsonCtx, jpath: str = "$.root") -> Any:
        return self.record(root).from_json(obj, ctx, jpath)

    def opaque_size(self, root: str, value: Any) -> int:
        return self.record(root).opaque_size(value)


def _fast_layout(layout: Layout):
    """The layout's compiled form (see :mod:`potsherd.core.fastpath`)."""
    global _fast_layout
    from .fastpath import fast_layout
    _fast_layout = fast_layout  # import once; later calls go straight there
    return fast_layout(layout)
