"""Sized sub-streams: ``{"kind":"sized","size":E,"item":S}`` (see :mod:`.tables`
for the notation).  Defined before records so a record can regenerate its
size fields from them."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

from ..errors import EncodeError, FormatError, LimitError
from ..expr import Scope, compile_expr, linear_count
from ..stream import Reader, Writer
from .arrays import encode_each
from .jsonio import JsonCtx, _jerr, hex_to_bytes
from .storages import Storage
from ..expr import source_text


def bounded_reader(r: Reader, start: int, n: int) -> Reader:
    """A reader of the ``n`` bytes at ``start`` of ``r``'s buffer (the caller
    has checked that they lie within ``r``): offsets stay those of the file."""
    return Reader(r.buf, start, start + n, r.limits)


@contextmanager
def reading(s: Scope, sub: Reader) -> Iterator[Reader]:
    """Make ``sub`` the scope's reader (what ``remaining`` answers) while the
    block runs, the previous one again afterwards."""
    saved = s.reader
    s.reader = sub
    try:
        yield sub
    finally:
        s.reader = saved


class Unparsed(bytes):
    """The bytes of a sized sub-stream whose content did not parse: kept raw."""

    def __repr__(self) -> str:
        return f"Unparsed({len(self)} bytes)"


class Sized(Storage):
    """A sub-stream of ``size`` bytes holding ``item`` (or items back to back)."""

    min_size = 0

    def __init__(self, size: Any, item: Storage, repeat: bool = False) -> None:
        self.size_src = size
        self.size_expr = compile_expr(size)
        self.item = item
        self.repeat = repeat
        #: (size field name, bytes per unit) when the size field can be regenerated
        self.derivation = linear_count(size)

    def describe(self) -> str:
        what = f"{self.item.describe()}..." if self.repeat else self.item.describe()
        return f"sized[{source_text(self.size_src)}] of {what}"

    def byte_count(self, s: Scope) -> int:
        n = self.size_expr(s)
        if isinstance(n, bool) or not isinstance(n, int):
            raise FormatError(f"size {self.size_src!r} is not an integer ({n!r})")
        return n

    # --- decode -------------------------------------------------------
    def decode(self, r: Reader, s: Scope) -> Any:
        n = self.byte_count(s)
        r.check_count(n, 1, "sized block")
        start = r.pos
        sub = bounded_reader(r, start, n)
        try:
            with reading(s, sub):
                value = self.decode_content(sub, s)
            if sub.remaining:
                raise FormatError(f"content ends {sub.remaining} bytes before its size", offset=sub.pos)
        except LimitError:
            raise
        except FormatError as e:
            s.warnings.append(f"{self.item.describe()}: {n} bytes do not parse as their content "
                              f"({e}); kept raw")
            value = Unparsed(r.buf[start:start + n])
        r.pos = start + n
        return value

    def decode_content(self, sub: Reader, s: Scope) -> Any:
        if not self.repeat:
            return self.item.decode(sub, s)
        out = []
        dec = self.item.decode
        while sub.remaining > 0:
            p = sub.pos
            try:
                out.append(dec(sub, s))
            except FormatError as e:
                raise e.prepend(f"[{len(out)}]")
            if sub.pos == p:
                raise FormatError("an item of a sized block reads no bytes", offset=p)
        return out

    # --- encode -------------------------------------------------------
    def content_bytes(self, v: Any, s: Scope) -> bytes:
        """The encoded content (raw bytes as they are)."""
        if isinstance(v, (bytes, bytearray)):
            return bytes(v)
        if self.repeat and not isinstance(v, list):
            raise EncodeError(f"expected a list of {self.item.describe()}, found {type(v).__name__}")
        fast = self.compiled_content(v, s)
        if fast is not None:
            return fast
        w = Writer()
        if self.repeat:
            encode_each(self.item, v, w, s)
        else:
            self.item.encode(w, v, s)
        return w.getvalue()

    def compiled_content(self, v: Any, s: Scope) -> bytes | None:
        """The content through the item record's compiled encoder (on this scope),
        or None when there is none or it declines (the reference then encodes,
        and words any error)."""
        layout = getattr(self.item, "layout", None)
        fast = layout.fast_encoder(self.item.name) if layout is not None and not s.reference else None
        if fast is None:
            return None
        w = Writer()
        depth = len(s.frames)
        try:
            for x in (v if self.repeat else (v,)):
                fast(w.write, x, s, w)
        except Exception:  # noqa: BLE001 - the reference decides
            del s.frames[depth:]
            return None
        return w.getvalue()

    def encode(self, w: Writer, v: Any, s: Scope) -> None:
        cache = s.encoded
        data = cache.pop(id(v), None) if cache else None
        if data is None:
            data = self.content_bytes(v, s)
        n = self.byte_count(s)
        if len(data) != n:
            raise EncodeError(f"content takes {len(data)} bytes, its size says {n}")
        w.write(data)

    # --- JSON ---------------------------------------------------------
    def to_json(self, v: Any, ctx: JsonCtx) -> Any:
        if isinstance(v, (bytes, bytearray)):
            return {"raw": bytes(v).hex()}
        if self.repeat:
            tj = self.item.to_json
            return [tj(x, ctx) for x in v]
        return self.item.to_json(v, ctx)

    def from_json(self, o: Any, ctx: JsonCtx, jpath: str) -> Any:
        if isinstance(o, dict) and set(o) == {"raw"}:
            return Unparsed(hex_to_bytes(o["raw"], jpath + ".raw"))
        if self.repeat:
            if not isinstance(o, list):
                raise _jerr("expected a list, or {\"raw\": hex}", jpath)
            fj = self.item.from_json
            return [fj(x, ctx, f"{jpath}[{i}]") for i, x in enumerate(o)]
        return self.item.from_json(o, ctx, jpath)

    def opaque_size(self, v: Any) -> int:
        if isinstance(v, (bytes, bytearray)):
            return len(v)
        if self.repeat:
            return sum(self.item.opaque_size(x) for x in v)
        return self.item.opaque_size(v)
