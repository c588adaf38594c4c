"""The front end: :class:`Layout` builds records from rows and runs whole inputs
through the compiled fast path first, the reference interpreter otherwise."""
from __future__ import annotations

import sys
from typing import Any

from ..errors import EncodeError, FormatError
from ..expr import Scope
from ..limits import DEFAULT_LIMITS, Limits
from ..stream import Reader, Writer
from .jsonio import JsonCtx
from .storages import GROUPS, PRIMS, Bytes, Choice, Param, Storage, String, Tail
from .arrays import Array
from .sized import Sized
from .records import Record
from .ragged import RaggedTable
from .tables import Table, struct_rows
from .text import LayoutRows, parse_layout_text, short_place


class Layout:
    """A compiled set of records plus custom storages."""

    def __init__(self, records: dict[str, list[tuple[str, Any, Any]]] | str,
                 storages: dict[str, Storage] | None = None, *, source: str | None = None) -> None:
        """``records``: rows per record, or ``.layout`` text (``source``: the file it
        was read from).  Every field learns where it is declared: its row in
        ``source``, else its row in the Python literal of the module that built
        this layout, else this call's ``file:line`` (rows built in Python)."""
        caller = sys._getframe(1)
        while caller.f_code.co_filename == __file__ and caller.f_back is not None:
            caller = caller.f_back
        caller_file = caller.f_code.co_filename
        #: where this layout is built (the place of rows without their own)
        self.declared_at = short_place(caller_file, caller.f_lineno)
        if isinstance(records, str):
            records = parse_layout_text(records, source)
        #: (record, row index) -> "file:line"
        self.where: dict[tuple[str, int], str] = (
            records.places(caller_file, self.declared_at) if isinstance(records, LayoutRows) else {})
        self.rows = records
        self.custom: dict[str, Storage] = dict(storages or {})
        self.records: dict[str, Record] = {}
        #: records without a name of their own (struct formats), by their format
        self.anonymous: dict[str, Record] = {}
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
                return self.struct_record(spec["format"], spec["keys"])
            if kind == "table":
                item = (self.struct_record(spec["format"], spec["keys"]) if "format" in spec
                        else self.storage(spec["item"]))
                if not isinstance(item, Record):
                    raise ValueError(f"a table's item must be a record: {spec!r}")
                return Table(spec["count"], item, spec.get("columns"))
            if kind == "ragged":
                item = self.storage(spec["item"])
                if not isinstance(item, Record):
                    raise ValueError(f"a ragged table's item must be a record: {spec!r}")
                return RaggedTable(spec["count"], item)
            if kind == "sized":
                return Sized(spec["size"], self.storage(spec["item"]), bool(spec.get("repeat")))
        raise ValueError(f"unknown storage {spec!r}")

    def struct_record(self, fmt: str, keys: str | list[str]) -> Record:
        """A record from a struct format string: its fields are primitives and
        byte runs (:func:`~.tables.struct_rows`), shared by every use of the same
        format and keys."""
        name = f"struct{fmt}:{keys if isinstance(keys, str) else ' '.join(keys)}"
        rec = self.anonymous.get(name)
        if rec is None:
            rec = self.anonymous[name] = Record(f"struct{fmt}", self)
            rec.compile(struct_rows(fmt, keys))
        return rec

    def fast_encoder(self, record: str):
        """The compiled encoder function of one named record, or None (used by
        storages that encode records inside their own bytes, like sized blocks)."""
        if record not in self.records:
            return None
        fast = _fast_layout(self)
        return fast.enc[record] if fast is not None else None

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
            if done:
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

    def trial_decode(self, root: str, data: bytes, params: dict | None = None,
                     limits: Limits = DEFAULT_LIMITS, warnings: list | None = None,
                     ) -> tuple[Any, int, dict] | None:
        """:meth:`decode` for callers that try several parameter sets and keep the
        first that works (format variants): None when the compiled decoder proves
        ``data`` cannot be decoded (it ends before bytes that must be read), without
        the reference run whose only product would be the wording of an error the
        caller throws away.  Otherwise exactly :meth:`decode` (same results, same
        errors)."""
        fast = _fast_layout(self)
        done = fast.decode(root, data, params, limits, 0) if fast is not None else None
        if done is False:
            return None
        if done:
            v, end, p, warns = done
            if warnings is not None:
                warnings.extend(warns)
            return v, end, p
        return self.decode(root, data, params, limits, warnings, reference=True)

    def encode(self, root: str, value: Any, params: dict | None = None,
               limits: Limits = DEFAULT_LIMITS, *, reference: bool = False) -> bytes:
        if not reference:
            fast = _fast_layout(self)
            done = fast.encode(root, value, params, limits) if fast is not None else None
            if done is not None:
                return done
        w = Writer()
        s = Scope(dict(params or {}), None, limits)
        s.reference = reference
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
    """The layout's compiled form (see :mod:`potsherd.core.fastpath`).

    Imported on first use: the fast path builds on the storage modules, and the
    front end sits above both (the dependency goes front -> fastpath -> storages)."""
    global _fast_layout
    from ..fastpath.compiled import fast_layout
    _fast_layout = fast_layout  # import once; later calls go straight there
    return fast_layout(layout)
