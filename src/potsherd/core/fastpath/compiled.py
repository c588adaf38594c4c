"""The compiled layout: generated functions cached per layout, run optimistically."""
from __future__ import annotations

import threading
from typing import Any, Callable


from . import kinds as L
from . import runtime
from .runtime import PrivateBuffer, _Short
from .decoder import _DecoderGen
from .encoder import _EncoderGen


_CACHE_ATTR = "_fastpath_cache"


_MISSING_CACHE = object()


class _Gen(_DecoderGen, _EncoderGen):
    """Source generator for one layout (both directions)."""


def fast_layout(layout: "L.Layout") -> "FastLayout | None":
    """The compiled form of ``layout`` (built once, cached on the layout).

    Returns None when the layout cannot be compiled (it then always runs on
    the reference interpreter), or while the fast path is switched off."""
    if not runtime._ENABLED:
        return None
    cached = layout.__dict__.get(_CACHE_ATTR, _MISSING_CACHE)
    if cached is _MISSING_CACHE:
        try:
            cached = FastLayout(layout)
        except Exception:  # noqa: BLE001 - an uncompilable layout still works, slowly
            cached = None
        layout.__dict__[_CACHE_ATTR] = cached
    return cached


class _Compiled(dict):
    """root name -> generated function, compiled on first lookup."""

    def __init__(self, owner: "FastLayout", kind: str) -> None:
        super().__init__()
        self.owner, self.kind = owner, kind

    def __missing__(self, root: str) -> Callable | None:
        fn = self[root] = self.owner.compile(self.kind, root)
        return fn


class FastLayout:
    """The compiled decoder/encoder of one :class:`Layout`."""

    def __init__(self, layout: "L.Layout") -> None:
        self.layout = layout
        self.gen = _Gen(layout)
        self.dec = _Compiled(self, "dec")
        self.enc = _Compiled(self, "enc")
        self.lock = threading.Lock()
        self.broken = False

    @property
    def source(self) -> str:
        return self.gen.source

    def compile(self, kind: str, root: str) -> Callable | None:
        """The generated function for ``root`` (code generated on first use:
        a root and the records it reaches)."""
        rec = self.layout.records.get(root)
        if rec is None or self.broken:
            return None
        with self.lock:
            try:
                name = self.gen.dec_record_fn(rec) if kind == "dec" else self.gen.enc_record_fn(rec)
                self.gen.build(f"{root}:{'decode' if kind == 'dec' else 'encode'}")
                return self.gen.ns[name]
            except Exception:  # noqa: BLE001 - never worse than the interpreter
                self.broken = True
                return None

    def decode(self, root: str, data: bytes, params: dict | None, limits: Any,
               start: int) -> tuple[Any, int, dict, list] | bool | None:
        """(value, end, params, warnings); False when the input certainly does not
        decode (it ends before bytes that must be read); None: the reference
        must decide."""
        fn = self.dec[root]
        if fn is None or len(data) - start > limits.max_elements:
            # (the generated code relies on: an array that fits in the input
            # has fewer than max_elements items, items being >= 1 byte)
            return None
        p = dict(params or {})
        r = L.Reader(data, start, limits=limits)
        warnings: list[str] = []
        s = L.Scope(p, r, limits, warnings)
        try:
            # a private buffer is read in place (its arrays become views of it);
            # the reader keeps a bytes copy for the storages run by the reference
            v, pos = fn(data if data.__class__ is PrivateBuffer else r.buf, start, r.end, s, r)
        except _Short:  # the input ends too early: the reference fails as well
            return False
        except Exception:  # noqa: BLE001 - any surprise: the reference decides
            return None
        return v, pos, p, warnings

    def decode_within(self, root: str, r: Any, s: Any) -> tuple[Any] | None:
        """Decode ``root`` at ``r.pos`` up to ``r.end`` in the caller's scope
        (a record read inside a family's own storage, e.g. a bounded block):
        ``(value,)`` with ``r.pos`` moved past it, or None, with ``r``, the
        scope's frames and its warnings as they were, when the reference must
        decide."""
        fn = self.dec[root]
        if fn is None or s.spans is not None or r.end - r.pos > s.limits.max_elements:
            return None
        pos0, depth, nwarn = r.pos, len(s.frames), len(s.warnings)
        try:
            v, pos = fn(r.buf, pos0, r.end, s, r)
        except Exception:  # noqa: BLE001 - any surprise: the reference decides
            r.pos = pos0
            del s.frames[depth:]
            del s.warnings[nwarn:]
            return None
        r.pos = pos
        return (v,)

    def encode(self, root: str, value: Any, params: dict | None, limits: Any) -> bytes | None:
        fn = self.enc[root]
        if fn is None:
            return None
        w = L.Writer()
        s = L.Scope(dict(params or {}), None, limits)
        try:
            fn(w.write, value, s, w)
        except Exception:  # noqa: BLE001 - the reference decides (and words the error)
            return None
        return w.getvalue()
