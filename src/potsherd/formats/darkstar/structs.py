"""Darkstar records as data: the spec's struct strings turned into layout storages.

The package carries ``structures.json``: the spec's own JSON form (member ->
``keys`` + Python ``struct`` format per class and version), corrected and
completed from the format documentation, docs/formats/darkstar.md (every change carries a ``correction`` string),
plus a ``payload`` list per class giving the order of a block's payload.
:func:`payload_rows` turns one (class, version) into layout-engine rows:

* a lone ``member`` becomes one primitive row per key (so counts in a header
  are plain fields the array counts can refer to, and are regenerated from
  edited arrays like any layout count);
* ``field`` + ``member``/``members`` + ``count`` becomes a core ``table``
  (:class:`potsherd.core.layout.Table`): all records in one ``numpy.frombuffer``
  call (a structured array; JSON is a column per key, name slots shown as text
  by :class:`SlotColumn`);
* ``blocks``/``block`` become nested PERS blocks (the ``pers`` storage);
* ``field`` + ``tail`` keeps the rest of the payload raw (a ``tail`` storage);
* ``field`` + ``member`` + ``count`` + ``lzh`` is a table stored as one LZH
  stream (:class:`.lzh_table.LzhTable`).
"""
from __future__ import annotations

import json
import re
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np

from ...core.errors import JsonFormatError
from ...core.layout import ColumnJson, JsonCtx, Storage, hex_to_bytes, parse_struct, struct_rows

@lru_cache(maxsize=None)
def structures() -> dict:
    """The package's corrected copy of the spec structures (parsed once)."""
    text = resources.files(__package__).joinpath("structures.json").read_text("utf-8")
    data = json.loads(text)
    data["structures"].update(_extra_structures("itr_structures.json"))
    return data


def _extra_structures(name: str) -> dict:
    """Further PERS classes kept in their own data file (interiors), in the same
    form; a version ``{"same_as": "N"}`` reuses version N's members."""
    extra = json.loads(resources.files(__package__).joinpath(name).read_text("utf-8"))
    classes = extra["structures"]
    for cdef in classes.values():
        versions = cdef.get("versions") or {}
        for ver, vdef in list(versions.items()):
            if "same_as" in vdef:
                versions[ver] = versions[vdef["same_as"]]
    return classes


# ----------------------------------------------------------------------------
# raw byte slots (names, map files): hex in wire JSON, text + raw tail readable


def slot_to_json(raw: bytes, ctx: JsonCtx) -> Any:
    """A fixed-size name slot.  Readable: ``"text"`` when every byte after the
    first NUL is zero, else ``{"text": ..., "tail": hex}`` (the bytes after
    that NUL); wire: hex of the whole slot."""
    if ctx.form == "wire":
        return raw.hex()
    cut = raw.find(b"\0")
    text = raw if cut < 0 else raw[:cut]
    tail = b"" if cut < 0 else raw[cut + 1:]
    t = text.decode(ctx.encoding, errors="replace")
    if t.encode(ctx.encoding, errors="replace") != text:
        return {"hex": raw.hex()}
    if tail.count(0) == len(tail):
        return t
    return {"text": t, "tail": tail.hex()}


def slot_from_json(o: Any, n: int, ctx: JsonCtx, jpath: str) -> bytes:
    if isinstance(o, str) and ctx.form == "wire":
        raw = hex_to_bytes(o, jpath)
    elif isinstance(o, str):
        try:
            raw = o.encode(ctx.encoding)
        except UnicodeEncodeError:
            raise JsonFormatError(f"text cannot be encoded as {ctx.encoding}", path=jpath) from None
        if len(raw) > n or b"\0" in raw:
            raise JsonFormatError(f"name longer than its {n}-byte slot (or holds a NUL)", path=jpath)
        raw = raw + bytes(n - len(raw))
    elif isinstance(o, dict) and set(o) == {"hex"}:
        raw = hex_to_bytes(o["hex"], jpath + ".hex")
    elif isinstance(o, dict) and set(o) == {"text", "tail"} and isinstance(o["text"], str):
        try:
            text = o["text"].encode(ctx.encoding)
        except UnicodeEncodeError:
            raise JsonFormatError(f"text cannot be encoded as {ctx.encoding}", path=jpath) from None
        if b"\0" in text:
            raise JsonFormatError("name text holds a NUL", path=jpath + ".text")
        raw = text + b"\0" + hex_to_bytes(o["tail"], jpath + ".tail")
    else:
        raise JsonFormatError("expected a name: text, {\"text\",\"tail\"} or {\"hex\"}", path=jpath)
    if len(raw) != n:
        raise JsonFormatError(f"name slot must be exactly {n} bytes, found {len(raw)}", path=jpath)
    return raw


class SlotColumn(ColumnJson):
    """A table column of fixed name slots: text in readable JSON (see
    :func:`slot_to_json`), hex in wire JSON."""

    def to_json(self, col: np.ndarray, ctx: JsonCtx) -> Any:
        return [slot_to_json(bytes(x), ctx) for x in col]

    def from_json(self, o: Any, dtype: np.dtype, ctx: JsonCtx, jpath: str) -> np.ndarray:
        if not isinstance(o, list):
            raise JsonFormatError("expected a list", path=jpath)
        n = dtype.itemsize
        raw = [slot_from_json(x, n, ctx, f"{jpath}[{i}]") for i, x in enumerate(o)]
        return np.frombuffer(b"".join(raw), dtype=dtype).copy() if raw else np.zeros(0, dtype)


SLOT_COLUMN = SlotColumn()


def table_spec(count: Any, fmt: str, keys: str, item: str | None = None) -> dict:
    """The core ``table`` storage of ``count`` records of a struct format (or of
    the record named ``item``, declared with :func:`struct_rows`), its ``s``
    slots (names) shown as text."""
    slots = {name: SLOT_COLUMN for name, code, _ in parse_struct(fmt, keys) if code == "s"}
    spec = ({"kind": "table", "count": count, "item": item} if item else
            {"kind": "table", "count": count, "format": fmt, "keys": keys})
    if slots:
        spec["columns"] = slots
    return spec


def member_rows(member: dict) -> list[tuple[str, Any, Any]]:
    """Flat layout rows for a lone member: one primitive per key."""
    return struct_rows(member["format"], member["keys"])


def payload_rows(cls: str, version: str, pers: Storage,
                 places: list | None = None) -> list[tuple[str, Any, Any]] | None:
    """Layout rows of a (class, version) payload, from the structures data;
    ``places`` (when given) receives the ``file:line`` declaring each row; a
    table row then names its own row record, ``(file:line, {key: file:line},
    record name, record rows)``, for the caller to declare (so each member's
    columns say which line declares them, and errors name the member)."""
    cdef = structures()["structures"].get(cls) or {}
    return _rows_from(cdef, version, pers, cls, places, f"{cls} v{version}")


def _rows_from(cdef: dict, version: str, pers: Storage, cls: str = "",
               places: list | None = None, prefix: str = "") -> list | None:
    vdef = (cdef.get("versions") or {}).get(version)
    if vdef is None:
        return None
    members = vdef["members"]
    where = declared_places()
    rows: list[tuple[str, Any, Any]] = []

    def add(row: tuple, declared: Any) -> None:
        rows.append(row)
        if places is not None:
            places.append(where.get(id(declared), ""))

    for entry in cdef["payload"]:
        when = entry.get("when", "always")
        if when != "always":  # a conditional entry: its rows carry the condition
            sub: list = []
            for (name, storage, _), place in zip(payload_rows_of_entry(entry, members, pers, sub,
                                                                       prefix), sub):
                rows.append((name, storage, when))
                if places is not None:
                    places.append(place)
            continue
        if "blocks" in entry:
            add((entry["field"], {"kind": "array", "count": entry["blocks"], "item": pers},
                 "always"), entry)
        elif "tail" in entry:  # the rest of the payload, kept raw (counted as opaque)
            add((entry["field"], {"kind": "tail"}, "always"), entry)
        elif "lzh" in entry:  # a table stored as one LZH stream, decoded into rows
            from .lzh_table import LzhTable
            m = members[entry["member"]]
            add((entry["field"], LzhTable(entry["count"], m["format"], m["keys"]), "always"), m)
        elif "block" in entry:
            add((entry["field"], pers, entry["block"]), entry)
        elif "field" in entry:
            names = entry.get("members") or [entry["member"]]
            present = [members[n] for n in names if n in members]
            if not present or entry.get("member", names[0]) not in members:
                continue
            fmt = "<" + "".join(m["format"].lstrip("<>=!@") for m in present)
            keys = " ".join(m["keys"] for m in present)
            if any(m["format"][:1] in ">!" and re.search(r"[^\ds]", m["format"][1:]) for m in present):
                raise ValueError(f"{cls} v{version} {names}: big-endian numeric member")
            item = f"{prefix} {'+'.join(n for n in names if n in members)}" \
                if places is not None and prefix else None
            add((entry["field"], table_spec(entry["count"], fmt, keys, item), "always"), present[0])
            if item:  # the row record, and where each of its keys is declared
                places[-1] = (places[-1], {k: where.get(id(m), "") for m in present
                                           for k in m["keys"].split()}, item, struct_rows(fmt, keys))
        else:
            m = members.get(entry["member"])
            if m is not None:
                for row in member_rows(m):
                    add(row, m)
    return rows


@lru_cache(maxsize=None)
def declared_places() -> dict[int, str]:
    """``id(member or payload entry)`` -> ``file:line`` of its declaration in the
    structures data files, so layout fields (and the errors they raise) name
    the line of the data that declares them."""
    from ...core.layout.text import short_place
    data = structures()["structures"]
    out: dict[int, str] = {}
    for fname in ("structures.json", "itr_structures.json"):
        res = resources.files(__package__).joinpath(fname)
        path = str(res)
        cls = ver = None
        in_payload = False
        entry_no = 0
        in_structures = False
        for n, line in enumerate(res.read_text("utf-8").splitlines(), 1):
            indent = len(line) - len(line.lstrip(" "))
            text = line.strip()
            if indent == 1:
                in_structures = text.startswith('"structures"')
                continue
            if not in_structures:
                continue
            key = text.split('"')[1] if text.startswith('"') else None
            if indent == 2 and key is not None:
                cls, ver, in_payload = key, None, False
            elif indent == 3 and key is not None:
                in_payload, entry_no = key == "payload", 0
            elif indent == 4 and in_payload and text.startswith("{"):
                cdef = data.get(cls) or {}
                if entry_no < len(cdef.get("payload", ())):
                    out[id(cdef["payload"][entry_no])] = short_place(path, n)
                entry_no += 1
            elif indent == 4 and key is not None:
                ver = key
            elif indent == 6 and key is not None and ver is not None:
                vdef = ((data.get(cls) or {}).get("versions") or {}).get(ver) or {}
                m = vdef.get("members", {}).get(key)
                if m is not None and id(m) not in out:
                    out[id(m)] = short_place(path, n)
    return out


def normal_table() -> np.ndarray:
    """The engine's 256 encoded normals, float32 (256, 3)."""
    return np.asarray(structures()["normalTable"], dtype=np.float32)



def payload_rows_of_entry(entry: dict, members: dict, pers: Storage,
                          places: list | None = None, prefix: str = "") -> list[tuple[str, Any, Any]]:
    """The rows of one unconditional payload entry (used for ``when`` entries)."""
    rest = {k: v for k, v in entry.items() if k != "when"}
    cdef = {"payload": [rest], "versions": {"_": {"members": members}}}
    rows = _rows_from(cdef, "_", pers, "", places, prefix)
    if places is not None and "member" not in rest and "members" not in rest:
        place = declared_places().get(id(entry), "")
        places[:] = [p or place for p in places]
    return rows
