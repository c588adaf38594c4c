"""The TR4 WAD family and WadMerger's ``.trwad`` as layout tables.

The records are the ``.layout`` files beside this module (``layouts/*.layout``,
the spec-table notation ``field<TAB>storage<TAB>condition``) and are
interpreted by :mod:`potsherd.core.layout`; every field's ``defined_at`` is its
row there.  ``common.layout`` holds the records the WAD and the ``.trwad``
share.  Python storages exist only for what a table cannot say:

* ``poly_shape``: the polygon shape word, which must be 8 (triangle) or 9 (quad);
* ``quad_pad``: the WAD's 2 pad bytes after a mesh with an odd number of quads;
* ``state_change_list``: the ``.trwad`` state changes, which have no count of
  their own (the count is the sum of the animations' ``state_change_count``).

See ``docs/formats/trle.md`` for the field meanings and the spec corrections applied.
"""
from __future__ import annotations

from importlib import resources
from typing import Any

import numpy as np

from ...core.errors import CountError, EncodeError, JsonFormatError, ValueFormatError, FormatError
from ...core.expr import Scope
from ...core.layout import JsonCtx, Layout, Storage, hex_to_bytes, PRIMS, parse_layout_text
from ...core.layout.text import LayoutRows
from ...core.stream import Reader, Writer


# --------------------------------------------------------------------------
# Custom storages


class PolyShape(Storage):
    """The u16 polygon shape: only 8 and 9 exist; anything else desynchronises."""

    size = min_size = 2
    SHAPES = (8, 9)
    #: (a record of polygons is then packed by the fast path, not one call per shape)
    packs_as = (PRIMS["u16"], frozenset(SHAPES))

    def decode(self, r: Reader, s: Scope) -> Any:
        p = r.pos
        v = r.unpack(PRIMS["u16"].st)[0]
        if v not in self.SHAPES:
            raise ValueFormatError(f"polygon shape {v} (expected 8 or 9)", offset=p,
                                   expected="8 or 9", found=v)
        return v

    def encode(self, w: Writer, v: Any, s: Scope) -> None:
        if v not in self.SHAPES or isinstance(v, bool):
            raise EncodeError(f"polygon shape must be 8 or 9, found {v!r}")
        PRIMS["u16"].encode(w, v, s)

    def to_json(self, v: Any, ctx: JsonCtx) -> Any:
        return int(v)

    def from_json(self, o: Any, ctx: JsonCtx, jpath: str) -> Any:
        if o not in (8, 9) or isinstance(o, bool):
            raise JsonFormatError("polygon shape must be 8 or 9", path=jpath)
        return o


def odd_quads(polygons: list) -> bool:
    shape = getattr(polygons, "shape", None)     # (an import's PolygonColumns)
    if isinstance(shape, np.ndarray):
        return int((shape == 9).sum()) % 2 == 1
    return sum(1 for p in polygons if p["shape"] == 9) % 2 == 1


class QuadPad(Storage):
    """WAD meshes with an odd number of quads end with 2 pad bytes (kept)."""

    def _needed(self, s: Scope) -> bool:
        return odd_quads(s.frames[-1]["polygons"])

    def decode(self, r: Reader, s: Scope) -> Any:
        return r.read(2) if self._needed(s) else b""

    def encode(self, w: Writer, v: Any, s: Scope) -> None:
        if not isinstance(v, (bytes, bytearray)):
            raise EncodeError(f"pad must be bytes, found {type(v).__name__}")
        n = 2 if self._needed(s) else 0
        if len(v) != n:
            raise EncodeError(f"pad holds {len(v)} bytes, the mesh's quads need {n}")
        w.write(bytes(v))

    def to_json(self, v: Any, ctx: JsonCtx) -> Any:
        return bytes(v).hex()

    def from_json(self, o: Any, ctx: JsonCtx, jpath: str) -> Any:
        return hex_to_bytes(o, jpath)


class StateChangeList(Storage):
    """``.trwad`` state changes: as many as the animations' counts add up to."""

    min_size = 0

    def __init__(self) -> None:
        self.layout: Layout | None = None

    @staticmethod
    def expected(s: Scope) -> int:
        anims = s.lookup("animations")
        if isinstance(anims, np.ndarray) and anims.dtype.names:
            return int(anims["state_change_count"].sum(dtype=np.int64))
        return sum(int(a["state_change_count"]) for a in anims)  # a list of records

    def decode(self, r: Reader, s: Scope) -> Any:
        n = self.expected(s)
        r.check_count(n, 6, "state changes")
        item = self.layout.record("state_change")
        out = []
        for i in range(n):
            try:
                out.append(item.decode(r, s))
            except FormatError as e:
                raise e.prepend(f"[{i}]")
        return out

    def encode(self, w: Writer, v: Any, s: Scope) -> None:
        if not isinstance(v, list):
            raise EncodeError(f"state_changes must be a list, found {type(v).__name__}")
        n = self.expected(s)
        if len(v) != n:
            raise EncodeError(f"{len(v)} state changes, the animations count {n}")
        item = self.layout.record("state_change")
        for i, x in enumerate(v):
            try:
                item.encode(w, x, s)
            except FormatError as e:
                raise e.prepend(f"[{i}]")

    def to_json(self, v: Any, ctx: JsonCtx) -> Any:
        item = self.layout.record("state_change")
        return [item.to_json(x, ctx) for x in v]

    def from_json(self, o: Any, ctx: JsonCtx, jpath: str) -> Any:
        if not isinstance(o, list):
            raise JsonFormatError("state_changes must be a list", path=jpath)
        item = self.layout.record("state_change")
        return [item.from_json(x, ctx, f"{jpath}[{i}]") for i, x in enumerate(o)]


class _LayoutFiles(LayoutRows):
    """The rows of several ``.layout`` files as one set, each row placed in its own file."""

    def __init__(self, names: tuple[str, ...]) -> None:
        super().__init__()
        self.parts: list[LayoutRows] = []
        for name in names:
            path = resources.files(__package__).joinpath(f"layouts/{name}")
            part = parse_layout_text(path.read_text(encoding="utf-8"), source=str(path))
            for record in part:
                if record in self:
                    raise ValueError(f"{name}: record {record!r} defined twice")
            self.update(part)
            self.parts.append(part)

    def places(self, declared_in: str | None, fallback: str | None) -> dict[tuple[str, int], str]:
        out: dict[tuple[str, int], str] = {}
        for part in self.parts:
            out.update(part.places(declared_in, fallback))
        return out


def _make_layout(*names: str) -> Layout:
    changes = StateChangeList()
    layout = Layout(_LayoutFiles(names), {"poly_shape": PolyShape(), "quad_pad": QuadPad(),
                                          "state_change_list": changes})
    changes.layout = layout
    return layout


WAD_LAYOUT = _make_layout("wad.layout", "common.layout")
TRWAD_LAYOUT = _make_layout("trwad.layout", "common.layout")
SWD_LAYOUT = _make_layout("swd.layout")
SFX_LAYOUT = _make_layout("sfx.layout")

__all__ = ["WAD_LAYOUT", "TRWAD_LAYOUT", "SWD_LAYOUT", "SFX_LAYOUT", "odd_quads", "CountError"]
