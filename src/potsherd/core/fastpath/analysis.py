"""What the generators ask about storages: kinds, references, fixed runs."""
from __future__ import annotations

from typing import Any, Iterator


from ..expr import references

from . import kinds as L


def _has_names(e: Any) -> bool:
    return bool(references(e))


def _storage_references(st: Any, seen: set | None = None) -> set[str]:
    """Names used by the expressions of a storage (not of records it refers to)."""
    out: set[str] = set()
    k = _kind(st)
    if k is L.Array:
        out |= references(st.count_src) | _storage_references(st.item)
    elif k is L.Bytes:
        out |= references(st.count_src)
    elif k is L.Choice:
        out |= references(st.cond_src) | _storage_references(st.yes) | _storage_references(st.no)
    elif k is L.Sized:
        out |= references(st.size_src) | _storage_references(st.item)
    elif type(st) in (L.Table, L.RaggedTable):
        out |= references(st.count_src)
    return out


def _is_int(st: Any) -> bool:
    k = _kind(st)
    if k is L.Prim:
        return st.kind == "i"
    if k is L.Choice:
        return _is_int(st.yes) and _is_int(st.no)
    return False


def _is_plain_number(st: Any) -> bool:
    """Values of this storage are int/float (``_num`` is the identity)."""
    k = _kind(st)
    if k is L.Prim:
        return True
    if k is L.Choice:
        return _is_plain_number(st.yes) and _is_plain_number(st.no)
    return False


def _type_test(prim: "L.Prim", x: str) -> str:
    """Source of a test that is true when ``x`` is not a value the fast path
    packs exactly as Prim.encode would (the reference then decides)."""
    if prim.kind == "i":
        return f"{x}.__class__ is not int"
    return f"({x}.__class__ is not float and {x}.__class__ is not int)"


_KINDS = None


def _kind(st: Any) -> type | None:
    """The engine class whose decode/encode ``st`` uses unchanged (a subclass
    that only changes the JSON view, like a family's string, still counts),
    or None for custom storages (delegated to their own methods)."""
    global _KINDS
    if _KINDS is None:
        _KINDS = (L.Prim, L.Group, L.String, L.Bytes, L.Tail, L.Record, L.Choice,
                  L.Sized, L.Array)
    for k in _KINDS:
        if isinstance(st, k):
            t = type(st)
            if t.decode is k.decode and t.encode is k.encode:
                return k
            return None
    return None


def _ident(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)


def _field_groups(fields: list) -> Iterator[tuple[str, Any]]:
    """Split a record's fields for code generation, in order: ``("param", f)``
    for a parameter, ``("run", [f...])`` for two or more consecutive
    unconditional fixed scalars of one byte order (one struct call), and
    ``("field", f)`` for anything else.  Decoder and encoder share it so they
    always agree on the byte layout of a run."""
    i = 0
    while i < len(fields):
        f = fields[i]
        if f.is_param:
            yield "param", f
            i += 1
            continue
        j = i
        order = None
        while j < len(fields) and fields[j].cond is None and not fields[j].is_param:
            o = _run_order(fields[j].storage)
            if o is None or (order is not None and o != order):
                break
            order = o
            j += 1
        if j - i >= 2:
            yield "run", fields[i:j]
            i = j
        else:
            yield "field", f
            i += 1


def _run_order(st: "L.Storage") -> str | None:
    """The struct byte order of a fixed scalar storage that can join a run."""
    t = _kind(st)
    if t is L.Prim:
        return st.st.format[0]
    if t is L.Group:
        return st.prim.st.format[0]
    if t is L.Bytes and st.size is not None and st.size > 0:
        return "<"
    return None


def _fixed_record_fields(item: Any) -> list | None:
    """For a record of unconditional fixed scalars:
    [(name, storage-or-size, kind, order)], else None."""
    if _kind(item) is not L.Record or not item.fields:
        return None
    out = []
    order = None
    for f in item.fields:
        entry = _scalar_entry(f)
        if entry is None:
            return None
        o = entry[3]
        if o is not None:
            if order is not None and o != order:
                return None
            order = o
        out.append(entry)
    if len({e[0] for e in out}) != len(out):
        return None
    order = order or "<"
    return [(n, s, k, order) for n, s, k, _o in out]


def _scalar_entry(f: Any) -> tuple | None:
    """``(name, storage-or-size, kind, byte order or None)`` of an
    unconditional fixed scalar field (kind "prim" | "group" | "bytes"), else
    None: the fields both record fast paths pack with ``struct``."""
    if f.cond is not None or f.is_param:
        return None
    st = f.storage
    t = _kind(st)
    if t is L.Prim:
        return f.name, st, "prim", st.st.format[0]
    if t is L.Group:
        return f.name, st, "group", st.prim.st.format[0]
    if t is L.Bytes and st.size is not None and st.size > 0:
        return f.name, st.size, "bytes", None
    return None


#: operators a per-element count may use without a scope (no lookups, no stream state)
_LOCAL_OPS = frozenset({"gt", "lt", "ge", "eq", "ne", "and", "or", "not", "minus", "plus",
                        "product", "min", "max", "mask", "choose"})


def _local_expression(e: Any, names: set[str]) -> bool:
    """``e`` uses only ``names`` and operators computed from values alone."""
    if isinstance(e, str):
        return e in names
    if isinstance(e, (bool, int, float)):
        return True
    if isinstance(e, list):
        return all(_local_expression(a, names) for a in e)
    if isinstance(e, dict) and len(e) == 1:
        (op, arg), = e.items()
        return op in _LOCAL_OPS and _local_expression(arg, names)
    return False


def _counted_record_fields(item: Any) -> list | None:
    """For a record of unconditional fields, each a fixed scalar, a custom
    storage packed as a primitive (``Storage.packs_as``) or a numeric array
    counted by an expression of the scalars before it (a TR polygon: shape,
    3 or 4 indices, then fixed fields again): [(name, storage, kind, order)],
    kind "prim" | "group" | "bytes" | "packs_as" | "array"; else None.  Such
    records are written one struct call per fixed run and one ``tobytes`` per
    array, with no scope frame (their counts need no lookups)."""
    if _kind(item) is not L.Record or not item.fields or item.derivations \
            or item.size_derivations:
        return None
    out, scalars, arrays = [], set(), 0
    for f in item.fields:
        if f.cond is not None or f.is_param:
            return None
        st = f.storage
        t = _kind(st)
        entry = _scalar_entry(f)
        if entry is not None:
            if entry[2] == "prim":
                scalars.add(f.name)
        elif t is None and getattr(st, "packs_as", None) is not None:
            entry = (f.name, st, "packs_as", st.packs_as[0].st.format[0])
            scalars.add(f.name)
        elif t is L.Array and st.elem_dtype is not None \
                and _local_expression(st.count_src, scalars):
            entry = (f.name, st, "array", None)
            arrays += 1
        else:
            return None
        out.append(entry)
    if not arrays or len({e[0] for e in out}) != len(out):
        return None
    return out
