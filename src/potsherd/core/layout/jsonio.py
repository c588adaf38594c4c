"""JSON side of the layout engine: the JSON context, hex/text cells and numpy arrays
in both JSON forms (shared by every storage and by custom family storages)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import JsonFormatError
from ..jsontext import arrays_stay_native


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


_BITS = {2: np.dtype(np.uint16), 4: np.dtype(np.uint32), 8: np.dtype(np.uint64)}


def _np_to_json(a: np.ndarray, ctx: JsonCtx) -> Any:
    """A numeric array as JSON: ints as ints; floats as bit patterns (wire) or
    decimals (readable, falling back to ``{"bits": [...]}`` when any value is
    not finite).  A structured array (a table of fixed records) is an object
    of columns, each converted the same way."""
    names = a.dtype.names
    if names:
        if a.size and arrays_stay_native():
            # (a dump: the columns of native numbers straight to orjson, the rest
            # the general way)
            wire = ctx.form == "wire"
            out = {}
            for n in names:
                col = a[n]
                dt = col.dtype
                if dt.kind in "iu" and dt.isnative:
                    out[n] = np.ascontiguousarray(col)
                elif wire and dt.kind == "f" and dt.isnative and dt.itemsize in _BITS:
                    out[n] = np.ascontiguousarray(col).view(_BITS[dt.itemsize])
                else:
                    out[n] = _np_to_json(col, ctx)
            return out
        return {n: _np_to_json(a[n], ctx) for n in names}
    if a.dtype.kind == "V":  # fixed byte runs of a table row: hex per row
        if a.ndim != 1:
            return [_np_to_json(x, ctx) for x in a]
        # (one hex pass over the column, cut per row)
        text, step = a.tobytes().hex(), 2 * a.dtype.itemsize
        return [text[i:i + step] for i in range(0, len(text), step)] if step else [""] * len(a)
    # inside jsontext.native_arrays() (dump): arrays stay arrays, in native byte
    # order and contiguous, for orjson to write without a Python int per element
    out = _native if arrays_stay_native() else _as_list
    kind = a.dtype.kind
    if kind in "iu":
        return out(a)
    bits_dtype = a.dtype.newbyteorder("=").str.replace("f", "u")
    if ctx.form == "readable" and np.isfinite(a).all():
        return out(a.astype(np.float64))
    bits = out(a.astype(a.dtype.newbyteorder("=")).view(bits_dtype))
    return bits if ctx.form == "wire" else {"bits": bits}


def _as_list(a: np.ndarray) -> list:
    return a.tolist()


def _native(a: np.ndarray) -> np.ndarray | list:
    # (orjson reads an array's memory as it is: native byte order, contiguous)
    if a.dtype.byteorder not in ("=", "|"):
        a = a.astype(a.dtype.newbyteorder("="))
    if a.dtype.kind == "b" or a.size == 0:
        return a.tolist()  # (booleans and empty shapes: as the list form writes them)
    return np.ascontiguousarray(a)


def table_from_columns(o: Any, dtype: np.dtype, ctx: JsonCtx, jpath: str,
                       hooks: dict | None = None) -> np.ndarray:
    """A structured array from its JSON object of columns; ``hooks`` (column
    name -> object with ``from_json(value, field dtype, ctx, jpath)``) read the
    columns a family shows its own way."""
    if not isinstance(o, dict) or set(o) != set(dtype.names):
        raise _jerr(f"expected an object with columns {list(dtype.names)}", jpath)
    hooks = hooks or {}
    cols = [hooks[n].from_json(o[n], dtype[n], ctx, f"{jpath}.{n}") if n in hooks
            else _np_from_json(o[n], dtype[n].base, dtype[n].shape, ctx, f"{jpath}.{n}")
            for n in dtype.names]
    for n, c in zip(dtype.names, cols):
        if len(c) != len(cols[0]):  # the error names the first column that differs
            raise _jerr(f"table columns differ in length: {len(c)} rows, the first "
                        f"column has {len(cols[0])}", f"{jpath}.{n}")
    table = np.zeros(len(cols[0]), dtype=dtype)
    for n, c in zip(dtype.names, cols):
        table[n] = c
    return table


_BOUNDS: dict[np.dtype, tuple[int, int]] = {}


def _int_bounds(dt: np.dtype) -> tuple[int, int]:
    """(min, max) of an integer dtype, looked up once (``np.iinfo`` is slow)."""
    b = _BOUNDS.get(dt)
    if b is None:
        info = np.iinfo(dt)
        b = _BOUNDS[dt] = (int(info.min), int(info.max))
    return b


def _only_ints(o: Any) -> bool:
    """Whether nested lists ``o`` hold only ints (no bools).  numpy infers
    float64 for a list mixing ints under 2**63 with ints at or over it, so a
    64-bit column (a u64, or a wire f64's bit patterns: any negative double)
    is read again with its dtype, which refuses ints out of its range."""
    stack = [o]
    while stack:
        x = stack.pop()
        if x.__class__ is list:
            stack.extend(x)
        elif x.__class__ is not int:
            return False
    return True


def _np_from_json(o: Any, dtype: np.dtype, shape_tail: tuple, ctx: JsonCtx, jpath: str) -> np.ndarray:
    if dtype.names:  # a table of fixed records: one column per field
        return table_from_columns(o, dtype, ctx, jpath)
    if dtype.kind == "V":
        if not isinstance(o, list) or shape_tail:
            raise _jerr("expected a list of hex strings", jpath)
        raw = [hex_to_bytes(x, f"{jpath}[{i}]") for i, x in enumerate(o)]
        for i, b in enumerate(raw):
            if len(b) != dtype.itemsize:
                raise _jerr(f"needs exactly {dtype.itemsize} bytes", f"{jpath}[{i}]")
        return np.frombuffer(b"".join(raw), dtype=dtype).copy() if raw else np.zeros(0, dtype)
    bits = ctx.form == "wire"
    if isinstance(o, dict) and set(o) == {"bits"}:
        o, bits = o["bits"], True
    if not isinstance(o, list):
        raise _jerr(f"expected a list of numbers, found {type(o).__name__}", jpath)
    try:
        if dtype.kind == "f" and bits:
            udt = np.dtype(dtype.str.replace("f", "u"))
            # one conversion (numpy picks int64/uint64 for integers; floats,
            # booleans-only and mixed lists give another kind and are refused)
            arr = np.array(o) if o else np.zeros((0,) + shape_tail, dtype=udt)
            if arr.dtype.kind in "fO" and udt.itemsize == 8 and _only_ints(o):
                arr = np.array(o, dtype=udt)  # (see _only_ints)
            if arr.dtype.kind not in "iu" and arr.size:
                raise ValueError("bit patterns must be integers")
            if arr.size and (arr.min() < 0 or (udt.itemsize == 4 and arr.max() > 0xFFFFFFFF)):
                raise ValueError("bit pattern out of range")
            arr = arr.astype(udt).view(dtype)
        else:
            arr = np.array(o) if o else np.zeros((0,) + shape_tail, dtype=dtype)
            if arr.size and arr.dtype.kind not in "iuf":
                raise ValueError("not numbers")
            if dtype.kind in "iu":
                if arr.dtype.kind in "fO" and dtype.itemsize == 8 and _only_ints(o):
                    arr = np.array(o, dtype=dtype)  # (see _only_ints)
                if arr.size and arr.dtype.kind == "f":
                    raise ValueError("integers expected")
                lo, hi = _int_bounds(dtype)
                if arr.size and (arr.min() < lo or arr.max() > hi):
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


