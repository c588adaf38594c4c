"""An item file's row in the client's item table (``Data/Item_Org.tbl``).

The engine names an item's files from the table, not the other way round
(CGameBase::MakeResrcFileNameForUPC): resource id ``dwIDResrc`` becomes
``Item\\A_BBBB_CC_D.ext`` with ``A = id / 10^7``, ``BBBB = id / 1000 % 10^4``,
``CC = id / 10 % 100``, ``D = id % 10``; a part (``.n3cpart``) made for a race
adds the race code to ``BBBB``.  So the lookup inverts that: the row whose
resource id formats to the file's name (for a part, also with one of the
engine's race codes taken off ``BBBB``).

Table columns (``__TABLE_ITEM_BASIC``): 0 id, 1 extension index, 2 name,
3 remark, then the resource id -- column 6 in the 1298 tables, which insert
two unknown columns (dword, byte) before it, else column 4.

The table is the one in the client root that holds the file (found by its
layout, like every other reference), read through the resolver's confinement
and limits.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from ...core.errors import FormatError

ITEM_NAME = re.compile(r"^(\d)_(\d{4})_(\d{2})_(\d)\.(n3cplug|n3cpart)$", re.IGNORECASE)
#: e_Race codes (GameDef.h): Karus 1-4, El Morad 11-13
RACES = (1, 2, 3, 4, 11, 12, 13)
TABLE = ("Data", "Item_Org.tbl")


def resource_ids(file_name: str) -> list[tuple[int, int | None]]:
    """(resource id, race or None) an item file's name can come from, best first."""
    m = ITEM_NAME.match(Path(file_name).name)
    if not m:
        return []
    a, b, c, d = (int(g) for g in m.groups()[:4])
    out: list[tuple[int, int | None]] = [(a * 10_000_000 + b * 1000 + c * 10 + d, None)]
    if m.group(5).lower() == "n3cpart":
        out += [(a * 10_000_000 + (b - r) * 1000 + c * 10 + d, r) for r in RACES if b >= r]
    return out


def resource_column(types: list[int]) -> int | None:
    """The resource id column of an item table's column types, or None."""
    if len(types) > 6 and types[2] == types[3] == 7 and types[4] in (5, 6) and \
            types[5] == 2 and types[6] in (5, 6):
        return 6
    if len(types) > 4 and types[2] == 7 and types[4] in (5, 6):
        return 4
    return None


def find_item_table(source: str, *, limits: Any = None, data_root: str | None = None) -> Any:
    """The resolver and path of the client's ``Data/Item_Org.tbl`` for a file, or
    (resolver, None)."""
    from .resolver import Resolver
    res = Resolver(source, data_root, limits=limits)
    hit = None
    for root in res.roots:
        cand = res.listings.walk(root, list(TABLE))
        if res._ok(cand):
            hit = cand
            break
    return res, hit


def item_row(source: str, *, limits: Any = None, data_root: str | None = None) -> dict | None:
    """The item table row of an item file (``Item/1_6901_00_0.n3cplug``): table,
    row, id, name (text in the table's code page), resource id and race; None
    when the name is not an item's, or no table or row is found.  A table that
    does not decode raises its FormatError."""
    ids = resource_ids(source)
    if not ids:
        return None
    res, path = find_item_table(source, limits=limits, data_root=data_root)
    if path is None:
        return None
    from .table import CODEC
    doc = CODEC.decode(res.read(path, "\\".join(TABLE)), limits=res.limits)
    types = doc.root["columnTypes"]
    col = resource_column(types)
    if col is None:
        raise FormatError(f"{path.name}: columns {types[:8]} are not an item table's",
                          path="tbl.columnTypes")
    cols = doc.root["columns"]
    resrc = np.asarray(cols[col]).astype(np.int64)
    enc = CODEC.encoding_of(doc)
    for rid, race in ids:
        hits = np.flatnonzero(resrc == rid)
        if len(hits):
            k = int(hits[0])
            out = {"table": str(path), "row": k, "id": int(cols[0][k]),
                   "name": bytes(cols[2][k]).decode(enc, "replace"), "resource": rid}
            if race is not None:
                out["race"] = race
            if len(hits) > 1:
                out["otherRows"] = [int(i) for i in hits[1:8]]
            return out
    return None
