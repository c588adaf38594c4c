"""Tribes / Starsiege missions (``.mis``): the script that builds a mission's
object tree, ``instant Class "name" { key = "value"; ... };`` blocks nested in
SimGroups, plus a few script statements around them.

The document is lossless: every object and field keeps the whitespace and
comments around its tokens (``lead`` before it, ``ws*`` between its tokens),
values are kept as written (escapes included), and text the parser does not
model (``exec(objectives);``) is kept verbatim as a ``text`` item.  The bytes
are read as latin-1 so any byte survives (missions are not always UTF-8).
:func:`objects` gives typed access (class, name, fields, positions, rotations)
and :func:`set_field` edits a value in place.
"""
from __future__ import annotations

import math
import re
from typing import Any, Iterator, NamedTuple

from ...core.errors import EncodeError, LimitError
from ...core.limits import DEFAULT_LIMITS, Limits
from .tree import need_dict, need_list

_GAP = re.compile(r"(?:\s+|//[^\n]*)*")
_IDENT = re.compile(r"[A-Za-z_$][A-Za-z0-9_:$]*(?:\[[^\]\n;]*\])*")
_QUOTED = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
_BARE = re.compile(r'[^;\s{}"]+')
_WS = re.compile(r"[ \t\r\n]*")


def _gap(s: str, i: int) -> int:
    return _GAP.match(s, i).end()


class _Parser:
    def __init__(self, text: str, limits: Limits) -> None:
        self.s = text
        self.max_depth = min(limits.max_depth, 256)

    def items(self, i: int, depth: int) -> tuple[list, str, int]:
        """Items until ``}`` (depth > 0) or the end; returns (items, end gap, pos)."""
        s, n = self.s, len(self.s)
        out: list[dict] = []
        while True:
            g = _gap(s, i)
            lead = s[i:g]
            if g >= n or (depth and s[g] == "}"):
                return out, lead, g
            item, j = self.item(g, depth)
            out.append({"lead": lead, **item})
            i = j

    def item(self, i: int, depth: int) -> tuple[dict, int]:
        s = self.s
        obj = self.object(i, depth) if s.startswith("instant", i) else None
        if obj is not None:
            return obj
        fld = self.field(i)
        if fld is not None:
            return fld
        # anything else: verbatim to the next ';' (inclusive), newline or closing brace
        j = i
        n = len(s)
        while j < n and s[j] not in ";\n" and not (depth and s[j] == "}"):
            j += 1
        if j < n and s[j] == ";":
            j += 1
        if j == i:      # a lone '}' at top level
            j += 1
        return {"kind": "text", "text": s[i:j]}, j

    def _name(self, i: int) -> tuple[str, bool, int] | None:
        m = _QUOTED.match(self.s, i)
        if m:
            return m.group(1), True, m.end()
        m = _BARE.match(self.s, i)
        if m:
            return m.group(0), False, m.end()
        return None

    def object(self, i: int, depth: int) -> tuple[dict, int] | None:
        s = self.s
        j = i + len("instant")
        w1 = _WS.match(s, j).end()
        if w1 == j:
            return None
        m = _IDENT.match(s, w1)
        if not m:
            return None
        cls = m.group(0)
        w2 = _WS.match(s, m.end()).end()
        if s.startswith(("{", ";"), w2):     # an unnamed object
            name, quoted, k = None, False, w2
        else:
            nm = self._name(w2)
            if nm is None:
                return None
            name, quoted, k = nm
        w3 = _WS.match(s, k).end()
        node = {"kind": "object", "ws1": s[j:w1], "class": cls, "ws2": s[m.end():w2],
                "name": name, "quoted": quoted, "ws3": s[k:w3]}
        if s.startswith(";", w3):
            node["body"] = None
            return node, w3 + 1
        if not s.startswith("{", w3):
            return None
        if depth + 1 > self.max_depth:
            raise LimitError(f"mission objects nested deeper than {self.max_depth}",
                             offset=w3, path="items")
        body, end, p = self.items(w3 + 1, depth + 1)
        node["body"] = body
        node["end"] = end
        if p >= len(s):     # the file ends inside the object: kept as it is, unclosed
            node["closed"] = False
            return node, p
        w4 = _WS.match(s, p + 1).end()
        if s.startswith(";", w4):
            node["ws4"] = s[p + 1:w4]
            return node, w4 + 1
        node["ws4"] = None      # "}" without ";"
        return node, p + 1

    def field(self, i: int) -> tuple[dict, int] | None:
        s = self.s
        m = _IDENT.match(s, i)
        if not m or m.group(0) == "instant":
            return None
        w1 = _WS.match(s, m.end()).end()
        if not s.startswith("=", w1) or s.startswith("==", w1):
            return None
        w2 = _WS.match(s, w1 + 1).end()
        nm = self._name(w2)
        if nm is None:
            return None
        value, quoted, k = nm
        w3 = _WS.match(s, k).end()
        if not s.startswith(";", w3):
            return None
        return {"kind": "field", "key": m.group(0), "ws1": s[m.end():w1],
                "ws2": s[w1 + 1:w2], "value": value, "quoted": quoted,
                "ws3": s[k:w3]}, w3 + 1


def parse(data: bytes, limits: Limits = DEFAULT_LIMITS) -> dict:
    text = bytes(data).decode("latin-1")
    items, end, _ = _Parser(text, limits).items(0, 0)
    return {"items": items, "end": end}


def _s(v: Any, path: str) -> str:
    if not isinstance(v, str):
        raise EncodeError(f"expected a string, found {type(v).__name__}", path=path)
    return v


#: the keys an item of each kind must have (the others have defaults)
_REQUIRED = {"text": ("text",), "field": ("key", "value"), "object": ("class",)}


def _emit(items: list, out: list[str], path: str, depth: int = 0) -> None:
    if depth > 512:
        raise EncodeError("mission nested too deeply", path=path)
    for n, it in enumerate(need_list(items, path)):
        p = f"{path}[{n}]"
        it = need_dict(it, p, ("kind",))
        out.append(_s(it.get("lead", ""), p + ".lead"))
        kind = it["kind"]
        if not isinstance(kind, str) or kind not in _REQUIRED:
            raise EncodeError(f"unknown item kind {kind!r}", path=p + ".kind")
        need_dict(it, p, _REQUIRED[kind])
        if kind == "text":
            out.append(_s(it["text"], p + ".text"))
        elif kind == "field":
            v = _s(it["value"], p + ".value")
            q = '"' if it.get("quoted", True) else ""
            out += [_s(it["key"], p + ".key"), _s(it.get("ws1", ""), p), "=",
                    _s(it.get("ws2", ""), p), q, v, q, _s(it.get("ws3", ""), p), ";"]
        elif kind == "object":
            q = '"' if it.get("quoted", True) else ""
            name = it.get("name")
            out += ["instant", _s(it.get("ws1", " "), p), _s(it["class"], p + ".class"),
                    _s(it.get("ws2", " "), p)]
            if name is not None:
                out += [q, _s(name, p + ".name"), q]
            out.append(_s(it.get("ws3", ""), p))
            if it.get("body") is None:
                out.append(";")
            else:
                out.append("{")
                _emit(it["body"], out, p + ".body", depth + 1)
                out.append(_s(it.get("end", ""), p + ".end"))
                if it.get("closed", True) is False:
                    continue
                out.append("}")
                ws4 = it.get("ws4", "")
                if ws4 is not None:
                    out += [_s(ws4, p + ".ws4"), ";"]
        else:
            raise EncodeError(f"unknown item kind {kind!r}", path=p + ".kind")


def unparse(root: Any) -> bytes:
    root = need_dict(root, "$", ("items",))
    out: list[str] = []
    _emit(root["items"], out, "$.items")
    out.append(_s(root.get("end", ""), "$.end"))
    try:
        return "".join(out).encode("latin-1")
    except UnicodeEncodeError as e:
        raise EncodeError(f"mission text holds a character outside latin-1 ({e.reason})") from None


# ----------------------------------------------------------------------------
# typed access


def unescape(v: str) -> str:
    """A value as the script means it (``\\"`` -> ``"``, ``\\\\`` -> ``\\``)."""
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), v)


class MissionObject(NamedTuple):
    cls: str
    name: str
    fields: dict            #: key -> unescaped value (last one wins)
    groups: tuple           #: names of the enclosing objects, outermost first
    node: dict              #: the document item (edit it with :func:`set_field`)

    def vector(self, key: str, n: int = 3) -> tuple[float, ...] | None:
        """A ``"x y z"`` field as floats (None when absent or malformed)."""
        v = self.fields.get(key)
        if v is None:
            return None
        try:
            parts = [float(x) for x in v.split()]
        except ValueError:
            return None
        if len(parts) < n or not all(math.isfinite(x) for x in parts[:n]):
            return None
        return tuple(parts[:n])

    @property
    def position(self) -> tuple[float, float, float] | None:
        return self.vector("position")

    @property
    def rotation(self) -> tuple[float, float, float] | None:
        """Euler angles in radians (x, y, z), as the mission writes them."""
        return self.vector("rotation")

    @property
    def file_name(self) -> str | None:
        return self.fields.get("fileName")

    @property
    def datablock(self) -> str | None:
        return self.fields.get("dataBlock")


def objects(root: dict) -> Iterator[MissionObject]:
    """Every ``instant`` object of the mission, depth first, in file order."""
    stack: list[tuple[list, tuple]] = [(root["items"], ())]
    while stack:
        items, groups = stack.pop()
        later = []
        for it in items:
            if it.get("kind") != "object":
                continue
            fields = {}
            body = it.get("body") or []
            for f in body:
                if f.get("kind") == "field":
                    fields[f["key"]] = unescape(f["value"])
            name = unescape(it["name"]) if it.get("name") is not None else ""
            yield MissionObject(it["class"], name, fields, groups, it)
            if body:
                later.append((body, groups + (name,)))
        stack.extend(reversed(later))


def set_field(node: dict, key: str, value: str) -> None:
    """Set (or append) ``key = "value";`` in an object item, escaping quotes."""
    raw = value.replace("\\", "\\\\").replace('"', '\\"')
    body = node.get("body")
    if body is None:
        node["body"] = body = []
        node["end"] = "\n"
        node["ws4"] = ""
    for f in body:
        if f.get("kind") == "field" and f["key"] == key:
            f["value"] = raw
            f["quoted"] = True
            return
    indent = "\n\t"
    if body:
        indent = body[-1].get("lead", indent)
    body.append({"kind": "field", "lead": indent, "key": key, "ws1": " ", "ws2": " ",
                 "value": raw, "quoted": True, "ws3": ""})


def globals_(root: dict) -> dict:
    """Top-level ``$name = value;`` assignments (mission type, names)."""
    return {it["key"]: unescape(it["value"]) for it in root["items"]
            if it.get("kind") == "field"}
