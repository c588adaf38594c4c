"""Counted arrays: numpy arrays for numeric items, lists otherwise."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import EncodeError, FormatError, LimitError
from ..expr import Scope, compile_expr
from ..stream import Reader, Writer
from .jsonio import JsonCtx, _jerr, _np_from_json, _np_to_json
from .storages import Storage
from ..expr import source_text


def encode_each(item: Storage, values: list, w: Writer, s: Scope) -> None:
    """Every value through ``item``'s encoder, one after the other; an error
    names the index (``[i]``) of the value it is in."""
    enc = item.encode
    for i, x in enumerate(values):
        try:
            enc(w, x, s)
        except FormatError as e:
            raise e.prepend(f"[{i}]")


class RecordColumns(Sequence):
    """An array of records its builder holds as columns (an importer's tens of
    thousands of polygons): it reads as a sequence of dicts wherever a list
    of records is read, and the compiled encoder writes :meth:`packed` in one
    piece instead of building and packing a dict per record."""

    def packed(self, record: str) -> bytes | None:
        """The records' bytes as ``record`` encodes them, or None when that is
        not a record these columns know (the dicts are then encoded)."""
        return None


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
        return f"array[{source_text(self.count_src)}] of {self.item.describe()}"

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
        if item.min_size > 0 and spans is None:
            for i in range(n):
                try:
                    append(dec(r, s))
                except FormatError as e:
                    raise e.prepend(f"[{i}]")
            return out
        # items that may read nothing are charged to a per-decode budget (so nested
        # counts cannot multiply allocations); the viewer's decode also notes every
        # item's byte range here
        for i in range(n):
            p = r.pos
            try:
                append(dec(r, s))
            except FormatError as e:
                raise e.prepend(f"[{i}]")
            if spans is not None:
                spans.add(out, i, p, r.pos)
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
        if isinstance(v, RecordColumns):
            v = list(v)
        if not isinstance(v, list):
            raise EncodeError(f"expected a list, found {type(v).__name__}")
        if len(v) != n:
            raise EncodeError(f"array has {len(v)} items, its count says {n}")
        encode_each(self.item, v, w, s)

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
