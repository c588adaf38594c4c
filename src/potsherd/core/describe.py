"""A layout as text for people: the record tree with where each field is
declared, one field found from an error's path, the generated fast-path code.

What ``potsherd layout FORMAT [--field PATH] [--source]`` prints; it sits above
both engine packages (it reads records and asks the fast path for its source).
"""
from __future__ import annotations

import json
import linecache
import re
from typing import Any, Iterator

from .errors import FormatError
from .expr import source_text
from .fastpath import fast_layout
from .layout import Array, Choice, Field, Layout, Record


def _children(st: Any) -> list[tuple[str, Any]]:
    """Records reachable from a storage, with a label (``item``, ``yes``...)."""
    if isinstance(st, Record):
        return [("", st)]
    if isinstance(st, Array):
        return _children(st.item)
    if isinstance(st, Choice):
        return [(k, r) for branch, k in ((st.yes, "yes"), (st.no, "no")) for _, r in _children(branch)]
    record = getattr(st, "record", None)  # a family storage backed by a record (KO tables)
    return [("", record)] if isinstance(record, Record) else []


def _condition(f: Field) -> str:
    src = f.cond_src
    if src in (None, "always"):
        return ""
    return f"  if {source_text(src)}"


def _field_line(f: Field, indent: str) -> str:
    return f"{indent}{f.name:<22} {f.storage.describe():<34} {f.defined_at or '?'}{_condition(f)}"


def record_tree(layout: Layout, root: str) -> Iterator[str]:
    """Lines of the tree under ``root``: each record once (later uses say so)."""
    seen: set[int] = set()

    def walk(rec: Record, indent: str) -> Iterator[str]:
        yield f"{indent}{rec.name}"
        if id(rec) in seen:
            yield f"{indent}  (fields listed above)"
            return
        seen.add(id(rec))
        for f in rec.fields:
            yield _field_line(f, indent + "  ")
            for _label, sub in _children(f.storage):
                yield from walk(sub, indent + "    ")

    yield from walk(layout.record(root), "")


def find_field(layout: Layout, root: str, path: str) -> list[Field]:
    """The fields along ``path`` (``n3pmesh.collapses[3].next``, the root name
    optional, indices ignored), outermost first; FormatError if one is unknown."""
    parts = [p for p in re.sub(r"\[[^\]]*\]", "", path).split(".") if p]
    if parts and parts[0] == root:
        parts = parts[1:]
    if not parts:
        raise FormatError(f"no field named in {path!r}", path=path)
    recs = [layout.record(root)]
    out: list[Field] = []
    for i, name in enumerate(parts):
        hits = [f for r in recs for f in r.fields if f.name == name]
        if not hits:
            where = ".".join([root] + parts[:i])
            known = sorted({f.name for r in recs for f in r.fields})
            raise FormatError(f"no field {name!r} in {where} (fields: {', '.join(known)})",
                              path=".".join([root] + parts[: i + 1]))
        out.append(hits[0])
        recs = [sub for f in hits for _, sub in _children(f.storage)]
    return out


def field_report(layout: Layout, root: str, path: str) -> Iterator[str]:
    """The fields along ``path`` with their places, then the last one's subtree."""
    chain = find_field(layout, root, path)
    for depth, f in enumerate(chain):
        yield _field_line(f, "  " * depth)
    last = chain[-1]
    for _label, sub in _children(last.storage):
        for line in record_tree(layout, sub.name) if sub.name in layout.records else ():
            yield "  " * len(chain) + line


def fast_source(layout: Layout, root: str) -> str:
    """The generated decoder and encoder of ``root`` (compiled on demand), as
    registered in :mod:`linecache`; empty when the layout has no fast path."""
    fast = fast_layout(layout)
    if fast is None:
        return ""
    fast.dec[root]
    fast.enc[root]
    out = []
    for name in fast.gen.filenames:
        out.append(f"# {name}\n")
        out.extend(linecache.getlines(name))
    return "".join(out)
