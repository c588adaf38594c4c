"""The ``.layout`` table notation: tab-separated rows of JSON cells."""
from __future__ import annotations

import json
import linecache
import os
from typing import Any

_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def short_place(path: str, line: int) -> str:
    """``file:line`` with files inside the potsherd package named from it
    (``potsherd/formats/ko/layouts/ko.layout:212``)."""
    full = os.path.abspath(path)
    if full.startswith(_PACKAGE_ROOT + os.sep):
        path = "potsherd/" + os.path.relpath(full, _PACKAGE_ROOT).replace(os.sep, "/")
    return f"{path}:{line}"


class LayoutRows(dict):
    """Records -> rows, as :func:`parse_layout_text` returns them, remembering
    each row's text line (``lines[(record, index)]``) and raw text, so that a
    :class:`~.front.Layout` can say where each field is declared."""

    def __init__(self, source: str | None = None) -> None:
        super().__init__()
        self.source = source
        self.lines: dict[tuple[str, int], int] = {}
        self.raw: dict[tuple[str, int], str] = {}

    def places(self, declared_in: str | None, fallback: str | None) -> dict[tuple[str, int], str]:
        """``file:line`` of every row: in ``source`` when the text came from a
        file; else found in ``declared_in`` (the Python module whose literal
        holds the text: the record's name line, then each row's field name, in
        order); else ``fallback``."""
        if self.source is not None:
            return {k: short_place(self.source, n) for k, n in self.lines.items()}
        out: dict[tuple[str, int], str] = {}
        if declared_in is None:
            return out
        lines = [ln.strip() for ln in linecache.getlines(declared_in)]
        last = 0
        current = None
        for (record, k), _n in self.lines.items():
            if record != current:
                current = record
                for n in range(last, len(lines)):
                    if lines[n] == record:
                        last = n + 1
                        break
            # a row starts with its field name and a tab (``\t`` in a Python literal)
            name = self.raw[(record, k)].split("\t", 1)[0].strip()
            for n in range(last, len(lines)):
                if lines[n].startswith((name + "\t", name + "\\t")):
                    last = n + 1
                    out[(record, k)] = short_place(declared_in, n + 1)
                    break
            else:
                if fallback is not None:
                    out[(record, k)] = fallback
        return out


def parse_layout_text(text: str, source: str | None = None) -> LayoutRows:
    """Parse the spec's table notation.

    A line without a tab names a record; ``Field<TAB>Storage<TAB>Condition``
    headers are skipped; each row is ``name<TAB>storage<TAB>condition`` with
    JSON cells, optionally followed by ``<TAB># comment``.  ``#`` starts a
    comment line.  ``source`` (the file the text was read from) makes each
    row's place ``source:line``; see :class:`LayoutRows`.
    """
    records = LayoutRows(source)
    current: list | None = None
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if "\t" not in line:
            name = line.strip()
            if name in records:
                raise ValueError(f"line {lineno}: record {name!r} defined twice")
            current = records[name] = []
            record_name = name
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
            key = (record_name, len(current) - 1)
            records.lines[key] = lineno
            records.raw[key] = line
        except json.JSONDecodeError as e:
            raise ValueError(f"line {lineno}: {e}") from None
    return records
