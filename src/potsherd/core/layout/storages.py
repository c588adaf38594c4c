"""Storage kinds without nested items: the base class, primitives, fixed groups,
strings, byte runs, tails, parameters and choices."""
from __future__ import annotations

import struct
from typing import Any

import numpy as np

from ..errors import CountError, EncodeError, JsonFormatError, TruncatedError
from ..expr import Scope, compile_expr
from ..stream import Reader, Writer, cached_struct
from ..values import (F32NaN, F64NaN, RawString, f32_from_bits, f32_to_bits, f64_from_bits, f64_to_bits)
from .jsonio import JsonCtx, _jerr, hex_to_bytes, text_or_hex, text_or_hex_back
from ..expr import source_text


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
    #: (a Prim, the ints accepted) when this custom storage writes an accepted
    #: int exactly as that primitive does: the fast path then packs such values
    #: inline with their neighbours and leaves any other value to ``encode``
    packs_as: "tuple[Prim, frozenset[int]] | None" = None

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


class Group(Storage):
    """A fixed group of one primitive (``vec3``, ``quat``, ``rect``): a list."""

    def __init__(self, name: str, prim: Prim, n: int) -> None:
        self.name = name
        self.prim = prim
        self.n = n
        self.st = cached_struct("<" + str(n) + prim.st.format[-1])
        self.size = self.min_size = self.st.size
        self.dtype = np.dtype((prim.dtype, (n,)))
        #: the group's floats as unsigned bit patterns (the wire form), in one call
        self.bits_st = cached_struct("<" + str(n) + {4: "I", 8: "Q"}[prim.size]) \
            if prim.kind == "f" else None

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
        # wire form of finite floats: one pack/unpack for the group (a NaN sum
        # sends NaNs, whose bits are kept, and inf - inf to the per-value path)
        if self.bits_st is not None and ctx.form == "wire" and len(v) == self.n:
            try:
                total = sum(v)
                if total == total:
                    return list(self.bits_st.unpack(self.st.pack(*v)))
            except (TypeError, OverflowError, struct.error):
                pass
        return [self.prim.to_json(x, ctx) for x in v]

    def from_json(self, o: Any, ctx: JsonCtx, jpath: str) -> Any:
        if not isinstance(o, list) or len(o) != self.n:
            raise _jerr(f"{self.name} needs a list of {self.n} values", jpath)
        if self.bits_st is not None and ctx.form == "wire" and bool not in map(type, o):
            try:  # (struct refuses floats, negatives and too-large ints)
                vals = list(self.st.unpack(self.bits_st.pack(*o)))
            except struct.error:
                vals = None  # out of range: the per-value path words the error
            if vals is not None and sum(vals) == sum(vals):
                return vals
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
        return f"bytes[{source_text(self.count_src)}]"

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
        b = hex_to_bytes(o, jpath)
        if self.size is not None and len(b) != self.size:  # a fixed run: refused here, by its JSON path
            raise _jerr(f"needs exactly {self.size} bytes, found {len(b)}", jpath)
        return b


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


