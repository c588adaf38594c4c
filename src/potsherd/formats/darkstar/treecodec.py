"""Base class of the Darkstar world codecs whose documents are value trees
(:mod:`.tree`): decoding walks chunks by hand, JSON is the generic tree form.
Parts kept opaque are stored under the key ``raw`` (counted by
``opaque_bytes``)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ...core.errors import EncodeError, FormatError, JsonFormatError, MagicError
from ...core.limits import DEFAULT_LIMITS, Limits
from ...core.stream import Reader
from ...document import Document
from ...registry import Codec
from . import tree


def raw_size(v: Any) -> int:
    """Bytes held under ``raw`` keys anywhere in a tree."""
    if isinstance(v, dict):
        return sum(len(x) if k == "raw" and isinstance(x, (bytes, bytearray)) else raw_size(x)
                   for k, x in v.items())
    if isinstance(v, list):
        return sum(raw_size(x) for x in v)
    return 0


class TreeCodec(Codec):
    family = "darkstar"
    #: magic bytes accepted (the first is ``magic``, used for detection)
    magics: tuple[bytes, ...] = ()

    def __init__(self, name: str, extensions: tuple[str, ...], description: str,
                 magics: tuple[bytes, ...]) -> None:
        self.name = name
        self.extensions = extensions
        self.description = description
        self.magics = magics
        self.magic = magics[0]

    def sniff(self, data: bytes) -> bool:
        return any(data.startswith(m) for m in self.magics)

    def declared_signatures(self) -> tuple:
        """Every accepted magic is a signature (unless declared otherwise)."""
        if self.signatures is not None:
            return tuple(self.signatures)
        from ...registry import ByteSequence, Signature
        # an empty magic (a text format's) is no signature: it matches anything
        return tuple(Signature("", (ByteSequence(0, m),)) for m in self.magics if m)

    # subclasses: decode_tree(r, warnings) -> tree ; encode_tree(tree) -> bytes
    def decode_tree(self, r: Reader, warnings: list[str]) -> Any:
        raise NotImplementedError

    def encode_tree(self, root: Any) -> bytes:
        raise NotImplementedError

    def decode(self, data: bytes, *, limits: Limits = DEFAULT_LIMITS, **params: Any) -> Document:
        if not self.sniff(data):
            raise MagicError(f"not a {self.description}: it starts with {data[:4].hex(' ')}",
                             offset=0, expected=self.magic.hex(), found=data[:4].hex())
        r = Reader(data, limits=limits)
        warnings: list[str] = []
        root = self.decode_tree(r, warnings)
        trailing = r.tail()
        if trailing:
            warnings.append(f"{len(trailing)} bytes after the {self.name} structure "
                            f"(offset {len(data) - len(trailing)}) kept raw")
        return Document(self.name, root, {}, trailing, warnings)

    def encode(self, doc: Document) -> bytes:
        try:
            return self.encode_tree(doc.root) + bytes(doc.trailing)
        except FormatError:
            raise
        except (TypeError, ValueError, KeyError, AttributeError, OverflowError) as e:
            raise EncodeError(f"{self.name}: malformed document ({type(e).__name__}: {e})") from None

    def to_json(self, doc: Document, form: str = "wire") -> dict:
        env_ctx = tree.JsonCtx(form, self.text_encoding)
        return self.json_envelope(doc, form, tree.to_json(doc.root, env_ctx))

    def from_json(self, obj: dict) -> Document:
        env = self.parse_envelope(obj)
        if "root" not in obj:
            raise JsonFormatError("missing root", path="$.root")
        try:
            root = tree.from_json(obj["root"], env.ctx)
        except (TypeError, ValueError, KeyError, OverflowError) as e:
            raise JsonFormatError(f"malformed {self.name} document: {type(e).__name__}: {e}",
                                  path="$.root") from None
        return Document(self.name, root, env.params, env.trailing, [], env.meta)

    def opaque_bytes(self, doc: Document) -> int:
        return len(doc.trailing) + raw_size(doc.root)


def u32_at(data: bytes, off: int) -> int:
    return int.from_bytes(data[off:off + 4], "little")


def as_u8(data: bytes | memoryview) -> np.ndarray:
    return np.frombuffer(bytes(data), dtype=np.uint8).copy()
