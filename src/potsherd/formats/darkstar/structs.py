"""Darkstar records as data: the spec's struct strings turned into layout storages.

The package carries ``structures.json``: the spec's own JSON form (member ->
``keys`` + Python ``struct`` format per class and version), corrected and
completed from the format documentation, docs/formats/darkstar.md (every change carries a ``correction`` string),
plus a ``payload`` list per class giving the order of a block's payload.
:func:`payload_rows` turns one (class, version) into layout-engine rows:

* a lone ``member`` becomes one primitive row per key (so counts in a header
  are plain fields the array counts can refer to, and are regenerated from
  edited arrays like any layout count);
* ``field`` + ``member``/``members`` + ``count`` becomes a :class:`StructTable`:
  all records in one ``numpy.frombuffer`` call (a structured array; JSON is a
  column per key);
* ``blocks``/``block`` become nested PERS blocks (the ``pers`` storage).
"""
from __future__ import annotations

import json
import re
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np

from ...core.errors import EncodeError, JsonFormatError
from ...core.expr import Scope, compile_expr
from ...core.layout import Array, JsonCtx, Storage, _np_from_json, _np_to_json, hex_to_bytes
from ...core.stream import Reader, Writer

_CODES = {"b": ("i8", "i1"), "B": ("u8", "u1"), "h": ("i16", "i2"), "H": ("u16", "u2"),
          "i": ("i32", "i4"), "I": ("u32", "u4"), "l": ("i32", "i4"), "L": ("u32", "u4"),
          "q": ("i64", "i8"), "Q": ("u64", "u8"), "f": ("f32", "f4"), "d": ("f64", "f8")}


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


def parse_struct(fmt: str, keys: str | list[str]) -> list[tuple[str, str, int]]:
    """``(name, code, n)`` per field of a struct format: ``code`` is a struct
    letter (one value) or ``s``/``x`` (``n`` raw bytes).  ``x`` runs take the
    names ``_pad0``, ``_pad1``... (the same names the core ``struct`` storage uses)."""
    names = keys.split() if isinstance(keys, str) else list(keys)
    body = fmt[1:] if fmt[:1] in "<>=!@" else fmt
    out: list[tuple[str, str, int]] = []
    ki = pad = 0
    for m in re.finditer(r"\s*(\d*)([a-zA-Z?])", body):
        cnt = int(m.group(1)) if m.group(1) else 1
        code = m.group(2)
        if code in "sx":
            if code == "x":
                out.append((f"_pad{pad}", "x", cnt))
                pad += 1
            else:
                out.append((names[ki], "s", cnt))
                ki += 1
            continue
        if code not in _CODES:
            raise ValueError(f"struct code {code!r} in {fmt!r} is not supported")
        for _ in range(cnt):
            if ki >= len(names):
                raise ValueError(f"struct {fmt!r}: more fields than keys")
            out.append((names[ki], code, 1))
            ki += 1
    if ki != len(names):
        raise ValueError(f"struct {fmt!r}: {len(names)} keys for {ki} fields")
    return out


def struct_dtype(fields: list[tuple[str, str, int]], big: bool = False) -> np.dtype:
    """A packed numpy record dtype for parsed struct fields (``s``/``x`` -> ``V<n>``)."""
    order = ">" if big else "<"
    spec = []
    for name, code, n in fields:
        if code in "sx":
            spec.append((name, f"V{n}"))
        else:
            spec.append((name, order + _CODES[code][1]))
    return np.dtype(spec)


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


# ----------------------------------------------------------------------------


class StructTable(Array):
    """``count`` records of one struct format as a numpy structured array.

    One ``frombuffer`` decodes the table and one ``tobytes`` writes it, so float
    bit patterns (NaN payloads, -0.0), pad bytes and raw name slots survive.
    JSON is an object with one column per key.  It subclasses the engine's
    ``Array`` so the record's count field is regenerated from an edited table.
    """

    def __init__(self, count: Any, fmt: str, keys: str | list[str], label: str = "") -> None:
        self.count_src = count
        self.count = compile_expr(count)
        self.item = None
        self.inner_count = None
        self.elem_dtype = None
        self.fmt = fmt
        self.label = label or fmt
        self.fields = parse_struct(fmt, keys)
        self.table_dtype = struct_dtype(self.fields, fmt[:1] in ">!")
        self.min_size = 0
        self.slots = {name: n for name, code, n in self.fields if code in "sx"}
        self.texty = {name for name, code, n in self.fields if code == "s"}

    def describe(self) -> str:
        return f"table[{self.count_src}] of {self.label}"

    def decode(self, r: Reader, s: Scope) -> Any:
        n = self._n(s, self.count)
        r.check_count(n, self.table_dtype.itemsize, self.label)
        p = r.pos
        r.pos = p + n * self.table_dtype.itemsize
        return np.frombuffer(r.buf, dtype=self.table_dtype, count=n, offset=p).copy()

    def coerce(self, v: Any) -> np.ndarray:
        if not isinstance(v, np.ndarray) or v.dtype.names is None:
            raise EncodeError(f"{self.label} table must be a numpy record array")
        if v.dtype != self.table_dtype:
            if set(v.dtype.names) != set(self.table_dtype.names):
                raise EncodeError(f"{self.label} table has columns {list(v.dtype.names)}, "
                                  f"expected {list(self.table_dtype.names)}")
            out = np.zeros(v.shape, dtype=self.table_dtype)
            for name in self.table_dtype.names:
                out[name] = v[name]
            v = out
        return v

    def encode(self, w: Writer, v: Any, s: Scope) -> None:
        n = self._n(s, self.count)
        v = self.coerce(v)
        if v.shape != (n,):
            raise EncodeError(f"{self.label} table has {len(v)} rows, its count says {n}")
        w.write(v.tobytes())

    def to_json(self, v: Any, ctx: JsonCtx) -> Any:
        out = {}
        for name in self.table_dtype.names:
            col = v[name]
            if name in self.slots:
                raw = [bytes(x) for x in col]
                if name in self.texty:
                    out[name] = [slot_to_json(b, ctx) for b in raw]
                else:
                    out[name] = [b.hex() for b in raw]
            else:
                out[name] = _np_to_json(np.ascontiguousarray(col), ctx)
        return out

    def from_json(self, o: Any, ctx: JsonCtx, jpath: str) -> Any:
        if not isinstance(o, dict):
            raise JsonFormatError(f"{self.label} table: expected an object of columns", path=jpath)
        names = self.table_dtype.names
        extra = set(o) - set(names)
        if extra:
            raise JsonFormatError(f"unknown columns {sorted(extra)}", path=jpath)
        missing = [n for n in names if n not in o]
        if missing:
            raise JsonFormatError(f"missing columns {missing}", path=jpath)
        cols = {}
        rows = None
        for name in names:
            cp = f"{jpath}.{name}"
            val = o[name]
            if name in self.slots:
                if not isinstance(val, list):
                    raise JsonFormatError("expected a list", path=cp)
                n = self.slots[name]
                if name in self.texty:
                    raw = [slot_from_json(x, n, ctx, f"{cp}[{i}]") for i, x in enumerate(val)]
                else:
                    raw = [hex_to_bytes(x, f"{cp}[{i}]") for i, x in enumerate(val)]
                    for i, b in enumerate(raw):
                        if len(b) != n:
                            raise JsonFormatError(f"needs exactly {n} bytes", path=f"{cp}[{i}]")
                col = np.frombuffer(b"".join(raw), dtype=f"V{n}") if raw else np.zeros(0, f"V{n}")
            else:
                col = _np_from_json(val, self.table_dtype[name], (), ctx, cp)
            if col.ndim != 1:
                raise JsonFormatError("a column is a flat list", path=cp)
            if rows is None:
                rows = len(col)
            elif len(col) != rows:
                raise JsonFormatError(f"column has {len(col)} rows, others have {rows}", path=cp)
            cols[name] = col
        out = np.zeros(rows or 0, dtype=self.table_dtype)
        for name, col in cols.items():
            out[name] = col
        return out

    def opaque_size(self, v: Any) -> int:
        return 0


def member_rows(member: dict) -> list[tuple[str, Any, Any]]:
    """Flat layout rows for a lone member: one primitive per key."""
    rows = []
    for name, code, n in parse_struct(member["format"], member["keys"]):
        if code in "sx":
            rows.append((name, {"kind": "bytes", "count": n}, "always"))
        else:
            rows.append((name, _CODES[code][0], "always"))
    return rows


def payload_rows(cls: str, version: str, pers: Storage) -> list[tuple[str, Any, Any]] | None:
    """Layout rows of a (class, version) payload, from the structures data."""
    cdef = structures()["structures"].get(cls) or {}
    return _rows_from(cdef, version, pers, cls)


def _rows_from(cdef: dict, version: str, pers: Storage, cls: str = "") -> list | None:
    vdef = (cdef.get("versions") or {}).get(version)
    if vdef is None:
        return None
    members = vdef["members"]
    rows: list[tuple[str, Any, Any]] = []
    for entry in cdef["payload"]:
        when = entry.get("when", "always")
        if when != "always":  # a conditional entry: its rows carry the condition
            for name, storage, _ in payload_rows_of_entry(entry, members, pers):
                rows.append((name, storage, when))
            continue
        if "blocks" in entry:
            rows.append((entry["field"], {"kind": "array", "count": entry["blocks"], "item": pers},
                         "always"))
        elif "block" in entry:
            rows.append((entry["field"], pers, entry["block"]))
        elif "field" in entry:
            names = entry.get("members") or [entry["member"]]
            present = [members[n] for n in names if n in members]
            if not present or entry.get("member", names[0]) not in members:
                continue
            fmt = "<" + "".join(m["format"].lstrip("<>=!@") for m in present)
            keys = " ".join(m["keys"] for m in present)
            if any(m["format"][:1] in ">!" and re.search(r"[^\ds]", m["format"][1:]) for m in present):
                raise ValueError(f"{cls} v{version} {names}: big-endian numeric member")
            label = "+".join(n for n in names if n in members)
            rows.append((entry["field"], StructTable(entry["count"], fmt, keys, label), "always"))
        else:
            m = members.get(entry["member"])
            if m is not None:
                rows.extend(member_rows(m))
    return rows


def normal_table() -> np.ndarray:
    """The engine's 256 encoded normals, float32 (256, 3)."""
    return np.asarray(structures()["normalTable"], dtype=np.float32)



def payload_rows_of_entry(entry: dict, members: dict, pers: Storage) -> list[tuple[str, Any, Any]]:
    """The rows of one unconditional payload entry (used for ``when`` entries)."""
    rest = {k: v for k, v in entry.items() if k != "when"}
    cdef = {"payload": [rest], "versions": {"_": {"members": members}}}
    return _rows_from(cdef, "_", pers)
