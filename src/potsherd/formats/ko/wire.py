"""The Knight Online wire layout (``layouts/ko.layout``) and the storages it needs
beyond the engine's: KO strings and the NTF lightmaps."""
from __future__ import annotations

from importlib import resources
from typing import Any

import numpy as np

from ...core.layout import Layout, Table, parse_layout_text
from .ntf import NTF_STORAGE  # the gtd lightmaps
from .text import KoString


# ----------------------------------------------------------------------------
# the layout


def _load_layout() -> Layout:
    path = resources.files(__package__).joinpath("layouts/ko.layout")
    rows = parse_layout_text(path.read_text(encoding="utf-8"), source=str(path))
    return Layout(rows, {"ntf": NTF_STORAGE, "string": KoString()})


LAYOUT = _load_layout()


_TABLES: dict[str, Table] = {}


def record_table(record: str, rows: Any = ()) -> np.ndarray:
    """``rows`` (a table, or a list of dicts of the record's fields) as a table
    of ``record``: one numpy structured array with the layout's row dtype, so
    code reading decoded and hand-built documents sees one shape."""
    table = _TABLES.get(record)
    if table is None:
        table = _TABLES[record] = Table(0, LAYOUT.records[record])
    return table.as_table(rows if isinstance(rows, np.ndarray) else list(rows))


def record_columns(table: Any, record: str, *names: str) -> list[list]:
    """Columns ``names`` of a table (or list of dicts) as Python lists, for the
    loops that must run in file order (progressive-mesh replays)."""
    t = record_table(record, table)
    return [t[n].tolist() for n in names]
