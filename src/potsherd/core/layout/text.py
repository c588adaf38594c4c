"""The ``.layout`` table notation: tab-separated rows of JSON cells."""
from __future__ import annotations

import json
from typing import Any


# ----------------------------------------------------------------------------
# The layout


def parse_layout_text(text: str) -> dict[str, list[tuple[str, Any, Any]]]:
    """Parse the spec's table notation.

    A line without a tab names a record; ``Field<TAB>Storage<TAB>Condition``
    headers are skipped; each row is ``name<TAB>storage<TAB>condition`` with
    JSON cells, optionally followed by ``<TAB># comment``.  ``#`` starts a
    comment line.
    """
    records: dict[str, list[tuple[str, Any, Any]]] = {}
    current: list | None = None
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if "\t" not in line:
            name = line.strip()
            if name in records:
                raise ValueError(f"line {lineno}: record {name!r} defined twice")
            current = records[name] = []
            continue
        cells = line.split("\t")
        if cells[0] == "Field":
            continue
        if current is None:
            raise ValueError(f"line {lineno}: field outside a record")
        cells = [c for c in cells if c != ""]
        if len(cells) > 3 and cells[3].startswith("#"):
            cells = cells[:3]
        if len(cells) != 3:
            raise ValueError(f"line {lineno}: expected field, storage, condition")
        try:
            current.append((cells[0], json.loads(cells[1]), json.loads(cells[2])))
        except json.JSONDecodeError as e:
            raise ValueError(f"line {lineno}: {e}") from None
    return records
