"""The decoded document: a plain tree plus what the writer needs to rebuild it."""
from __future__ import annotations

import dataclasses
from typing import Any


def _no_registry(name: str):
    raise RuntimeError(f"no codec table to find {name!r} in: encode with potsherd.write(doc), "
                       "or import potsherd.registry first")


#: ``name -> Codec``; :mod:`potsherd.registry` sets it to its ``get_codec``
codec_lookup = _no_registry


@dataclasses.dataclass
class Document:
    """A decoded file.

    ``root`` is a plain tree (dicts, lists, numpy arrays, bytes, numbers).
    ``params`` holds the variant decisions and decoder inputs (never stored in
    the file itself, but needed to write it back).  ``trailing`` keeps bytes
    after the parsed structure.  ``warnings`` are shown by ``info``/``validate``.
    """

    format: str
    root: Any
    params: dict = dataclasses.field(default_factory=dict)
    trailing: bytes = b""
    warnings: list = dataclasses.field(default_factory=list)
    meta: dict = dataclasses.field(default_factory=dict)
    source: str | None = None
    #: the limits it was decoded with: the files it refers to are read within them
    limits: Any = dataclasses.field(default=None, compare=False, repr=False)

    @property
    def codec(self):
        """The codec of ``format``, looked up through the registry (which installs
        the lookup when it is imported, so this module does not import it)."""
        return codec_lookup(self.format)

    def encode(self) -> bytes:
        """The file's bytes.  Only :class:`EncodeError` (a FormatError) escapes."""
        from .core.errors import EncodeError, FormatError, InternalEncodeError
        codec = self.codec
        try:
            return codec.encode(self)
        except FormatError:
            raise
        except RecursionError:
            raise EncodeError("document nested too deeply to encode") from None
        except MemoryError:
            raise EncodeError("out of memory while encoding") from None
        except Exception as e:  # noqa: BLE001 - a bug or an impossible edit, never a traceback
            raise InternalEncodeError(f"internal error in the {codec.name} encoder: "
                                      f"{type(e).__name__}: {e}") from e

    def to_json(self, form: str = "wire") -> dict:
        """The JSON form (``wire`` or ``readable``) as a JSON-ready dict."""
        return self.codec.to_json(self, form)

    def dumps(self, form: str = "wire", indent: int | None = 2) -> str:
        """The JSON text of ``self.to_json(form)``: orjson's, indented by two
        spaces or compact (``indent=None``), see core.jsontext."""
        from .core import jsontext
        with jsontext.native_arrays():
            obj = self.to_json(form)
        return jsontext.dumps(obj, indent)

    def info(self) -> dict:
        return self.codec.info(self)
