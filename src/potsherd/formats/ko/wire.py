"""The Knight Online wire layout (``layouts/ko.layout``) and the storages it needs
beyond the engine's: fixed-size record tables (terrain) and the NTF lightmaps."""
from __future__ import annotations

from importlib import resources

import numpy as np

from ...core.layout import GROUPS, PRIMS, Layout, Storage, parse_layout_text
from .ntf import NTF_STORAGE  # the gtd lightmaps
from .text import KoString


# ----------------------------------------------------------------------------
# the layout


class RecordTable(Storage):
    """A record of fixed primitive fields as a numpy structured dtype.

    Used for records that occur by the hundred thousand (the gtd height
    grid): an array of them decodes with one ``frombuffer`` into a table
    (JSON: one column per field) instead of one dict per item.  The record's
    rows in the layout stay the description; a single value (outside an
    array) goes through the layout's own record."""

    def __init__(self, name: str, rows: list) -> None:
        fields = []
        for fname, spec, cond in rows:
            if cond != "always" or not isinstance(spec, str) or spec not in PRIMS and spec not in GROUPS:
                raise ValueError(f"{name}.{fname}: a record table needs fixed primitive fields")
            if spec in PRIMS:
                fields.append((fname, PRIMS[spec].dtype))
            else:
                g = GROUPS[spec]
                fields.append((fname, g.prim.dtype, (g.n,)))
        self.name = name
        self.dtype = np.dtype(fields)
        self.size = self.min_size = self.dtype.itemsize
        self.record: Storage | None = None  # set once the layout is built

    def describe(self) -> str:
        return self.name

    def decode(self, r, s):
        return self.record.decode(r, s)

    def encode(self, w, v, s):
        self.record.encode(w, v, s)

    def to_json(self, v, ctx):
        return self.record.to_json(v, ctx)

    def from_json(self, o, ctx, jpath):
        return self.record.from_json(o, ctx, jpath)


#: records decoded as numpy tables inside arrays (bulk data)
TABLE_RECORDS = ("terrainPoint", "terrainPatch", "terrainTile")


def _load_layout() -> Layout:
    path = resources.files(__package__).joinpath("layouts/ko.layout")
    rows = parse_layout_text(path.read_text(encoding="utf-8"), source=str(path))
    tables = {n: RecordTable(n, rows[n]) for n in TABLE_RECORDS}
    layout = Layout(rows, {"ntf": NTF_STORAGE, "string": KoString(), **tables})
    for n, t in tables.items():
        t.record = layout.records[n]
    return layout


LAYOUT = _load_layout()


