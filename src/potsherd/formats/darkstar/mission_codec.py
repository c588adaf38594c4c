"""The ``.mis`` codec: a mission script as a lossless object tree
(:mod:`.mission`), exported to glTF by :mod:`.mission_scene`."""
from __future__ import annotations

from typing import Any

from ...core.errors import JsonFormatError
from ...core.limits import DEFAULT_LIMITS, Limits
from ...document import Document
from .mission import objects, parse, unparse
from .treecodec import TreeCodec


def _text_bytes(items: list) -> int:
    n = 0
    for it in items:
        if it.get("kind") == "text":
            n += len(it["text"])
        elif it.get("kind") == "object" and it.get("body"):
            n += _text_bytes(it["body"])
    return n


class MissionCodec(TreeCodec):
    """``.mis``: a mission script as a lossless object tree."""

    magic = None

    def __init__(self) -> None:
        super().__init__("mis", (".mis",), "Tribes/Starsiege mission (instant Class \"name\" "
                         "{ key = \"value\"; } object tree, kept byte for byte)", (b"",))
        self.magic = None

    def sniff(self, data: bytes) -> bool:
        head = bytes(data[:4096]).lstrip()
        return head.startswith((b"instant ", b"//")) and b"instant " in bytes(data[:65536])

    def decode(self, data: bytes, *, limits: Limits = DEFAULT_LIMITS, **params: Any) -> Document:
        return Document(self.name, parse(data, limits), {}, b"", [])

    def encode_tree(self, root: Any) -> bytes:
        return unparse(root)

    def to_json(self, doc: Document, form: str = "wire") -> dict:
        # the tree is plain JSON already (strings, booleans, None)
        return self.json_envelope(doc, form, doc.root)

    def from_json(self, obj: dict) -> Document:
        env = self.parse_envelope(obj)
        root = obj.get("root")
        if not isinstance(root, dict):
            raise JsonFormatError("missing root object", path="$.root")
        unparse(root)       # refuses a malformed tree now, with its path
        return Document(self.name, root, env.params, env.trailing, [], env.meta)

    def opaque_bytes(self, doc: Document) -> int:
        return _text_bytes(doc.root["items"])

    def info(self, doc) -> dict:
        counts: dict[str, int] = {}
        for o in objects(doc.root):
            counts[o.cls] = counts.get(o.cls, 0) + 1
        return {"format": self.name, "family": self.family, "objects": sum(counts.values()),
                "classes": dict(sorted(counts.items(), key=lambda kv: -kv[1])),
                "volumes": [o.file_name for o in objects(doc.root) if o.cls == "SimVolume"],
                "terrain": next((o.fields.get("tedFileName") for o in objects(doc.root)
                                 if o.cls == "SimTerrain"), None)}

    @property
    def export_options(self):
        from .mission_scene import MISSION_OPTIONS
        return MISSION_OPTIONS

    def to_scene(self, doc, **options: Any):
        from .mission_scene import mission_scene
        return mission_scene(doc, **options)


MIS = MissionCodec()
MISSION_CODECS = [MIS]
