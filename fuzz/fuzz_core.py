"""Fuzz harness for the layout engine itself, through a synthetic codec.

The ``fuzzcore`` layout uses every storage kind the families build on
(primitives, groups, strings with signed lengths, counted bytes, numeric and
2-D arrays, arrays of records, choices, struct records, a recursive node tree,
optional tails, parameters, custom storages) so engine holes show up before any
family codec lands.  It is registered only while a campaign or test runs.

    python fuzz/run.py --family core --seconds 60
"""
from __future__ import annotations

import contextlib
import struct
from typing import Any, Iterator

from potsherd import registry
from potsherd.core.errors import EncodeError, JsonFormatError
from potsherd.core.layout import JsonCtx, Layout, Storage
from potsherd.core.stream import Reader, Writer

FAMILY = "core"


class Pascal16(Storage):
    """A custom storage (u16 length + bytes), as families write them."""

    min_size = 2

    def decode(self, r: Reader, s) -> Any:
        n = r.unpack(struct.Struct("<H"))[0]
        return r.read(n)

    def encode(self, w: Writer, v: Any, s) -> None:
        if not isinstance(v, (bytes, bytearray)) or len(v) > 0xFFFF:
            raise EncodeError("pascal16 needs at most 65535 bytes")
        w.write(struct.pack("<H", len(v)) + bytes(v))

    def to_json(self, v: Any, ctx: JsonCtx) -> Any:
        return bytes(v).hex()

    def from_json(self, o: Any, ctx: JsonCtx, jpath: str) -> Any:
        if not isinstance(o, str):
            raise JsonFormatError("expected hex", path=jpath)
        try:
            return bytes.fromhex(o)
        except ValueError:
            raise JsonFormatError("invalid hex", path=jpath) from None


LAYOUT_TEXT = "\n".join([
    "file",
    "magic\t{\"kind\":\"bytes\",\"count\":4}\t\"always\"",
    "version\t\"u16\"\t\"always\"",
    "flags\t\"u8\"\t\"always\"",
    "scale\t\"f32\"\t\"always\"",
    "pos\t\"vec3\"\t\"always\"",
    "name\t\"string\"\t\"always\"",
    "short\t{\"kind\":\"string\",\"prefix\":\"u8\"}\t\"always\"",
    "label\t\"pascal16\"\t\"always\"",
    "vertexCount\t\"i32\"\t\"always\"",
    "vertices\t{\"kind\":\"array\",\"count\":{\"product\":[\"vertexCount\",3]},\"item\":\"f32\"}\t\"always\"",
    "indexCount\t\"u16\"\t\"always\"",
    "indices\t{\"kind\":\"array\",\"count\":\"indexCount\",\"item\":\"u16\"}\t\"always\"",
    "indexFlags\t{\"kind\":\"array\",\"count\":\"indexCount\",\"item\":\"u8\"}\t\"always\"",
    "width\t\"u8\"\t\"always\"",
    "rowCount\t\"i32\"\t\"always\"",
    "rows\t{\"kind\":\"array\",\"count\":\"rowCount\",\"item\":{\"kind\":\"array\",\"count\":\"width\",\"item\":\"i16\"}}\t\"always\"",
    "partCount\t\"i32\"\t\"always\"",
    "parts\t{\"kind\":\"array\",\"count\":\"partCount\",\"item\":\"part\"}\t\"always\"",
    "blobSize\t\"u32\"\t\"always\"",
    "blob\t{\"kind\":\"bytes\",\"count\":{\"divide\":[\"blobSize\",2]}}\t\"always\"",
    "sel\t{\"kind\":\"choice\",\"condition\":{\"gt\":[\"version\",1]},\"yes\":\"i32\",\"no\":\"u8\"}\t\"always\"",
    "opt\t\"i32\"\t{\"mask\":[\"flags\",1]}",
    "root\t\"node\"\t{\"mask\":[\"flags\",2]}",
    "stats\t{\"kind\":\"struct\",\"format\":\"<2hf4s\",\"keys\":\"lo hi avg tag\"}\t\"always\"",
    "pick\t{\"kind\":\"array\",\"count\":{\"select\":[\"flags\",0,1,2]},\"item\":\"u8\"}\t\"always\"",
    "extra\t{\"kind\":\"parameter\",\"name\":\"extra\",\"default\":0}\t\"always\"",
    "bonus\t\"u32\"\t{\"gt\":[\"extra\",0]}",
    "rest\t{\"kind\":\"tail\"}\t\"optional tail\"",
    "",
    "part",
    "kind\t\"u8\"\t\"always\"",
    "id\t\"i32\"\t{\"eq\":[\"kind\",1]}",
    "title\t\"string\"\t{\"eq\":[\"kind\",2]}",
    "keyCount\t\"i32\"\t{\"ge\":[\"kind\",3]}",
    "keys\t{\"kind\":\"array\",\"count\":\"keyCount\",\"item\":\"quat\"}\t{\"ge\":[\"kind\",3]}",
    "inherited\t{\"kind\":\"array\",\"count\":\"width\",\"item\":\"empty\"}\t{\"eq\":[\"kind\",0]}",
    "",
    "empty",
    "maybe\t\"u8\"\t{\"gt\":[\"version\",5]}",
    "",
    "node",
    "value\t\"i32\"\t\"always\"",
    "childCount\t\"u8\"\t\"always\"",
    "children\t{\"kind\":\"array\",\"count\":\"childCount\",\"item\":\"node\"}\t\"always\"",
    "",
])

LAYOUT = Layout(LAYOUT_TEXT, {"pascal16": Pascal16()})
CODEC = registry.LayoutCodec("fuzzcore", LAYOUT, "file", family=FAMILY, extensions=[".fzc"],
                             magic=b"FZC1", description="synthetic layout for fuzzing the engine",
                             parameters=["extra"])


@contextlib.contextmanager
def registered() -> Iterator[registry.LayoutCodec]:
    """Register the synthetic codec for the duration of a block."""
    registry.codecs()  # load the real families first
    if registry._CODECS.get(CODEC.name) is not None:  # nested: the outer block owns it
        yield registry._CODECS[CODEC.name]
        return
    registry.register(CODEC)
    try:
        yield CODEC
    finally:
        registry._CODECS.pop(CODEC.name, None)


def _node(depth: int, fan: int) -> dict:
    kids = [_node(depth - 1, fan) for _ in range(fan)] if depth else []
    return {"value": depth, "childCount": len(kids), "children": kids}


def document(*, version: int = 2, flags: int = 3, parts=None, depth: int = 2, fan: int = 2,
             rest: str | None = "c0ffee") -> dict:
    """A readable-form JSON document of the synthetic format."""
    root = {
        "magic": "465a4331", "version": version, "flags": flags, "scale": 0.5,
        "pos": [1.0, -2.0, 3.5], "name": "fuzz\u00e9", "short": "s", "label": "6c6162",
        "vertexCount": 2, "vertices": [0.0, 1.0, 2.0, 3.0, 4.0, 5.0],
        "indexCount": 3, "indices": [0, 1, 1], "indexFlags": [4, 5, 6],
        "width": 2, "rowCount": 2, "rows": [[1, -2], [3, -4]],
        "partCount": 0, "parts": [],
        "blobSize": 7, "blob": "010203",
        "sel": -5 if version > 1 else 5,
        "stats": {"lo": -1, "hi": 2, "avg": 0.25, "tag": "61626364"},
        "pick": [9] * [0, 1, 2, 0][flags & 3] if flags < 3 else [],
    }
    if parts is None:
        parts = [{"kind": 1, "id": 7}, {"kind": 2, "title": "t"},
                 {"kind": 3, "keyCount": 1, "keys": [[0.0, 0.0, 0.0, 1.0]]},
                 {"kind": 0, "inherited": [{"maybe": 1}, {"maybe": 2}] if version > 5 else [{}, {}]}]
    root["parts"] = parts
    root["partCount"] = len(parts)
    if flags & 1:
        root["opt"] = 42
    if flags & 2:
        root["root"] = _node(depth, fan)
    if rest is not None:
        root["rest"] = rest
    return {"potsherd": 1, "format": "fuzzcore", "form": "readable", "params": {},
            "meta": {}, "trailing": "", "root": root}


def seed_documents() -> dict:
    return {
        "full": document,
        "v1-no-tree": lambda: document(version=1, flags=0, rest=None),
        "v6-deep": lambda: document(version=6, flags=3, depth=6, fan=1),
        "no-parts": lambda: document(parts=[], flags=1),
        "wide-tree": lambda: document(depth=2, fan=4, rest=None),
    }
