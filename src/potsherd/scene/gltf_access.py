"""The byte and JSON layer of the glTF reader: the .glb container, buffers and data
URIs, accessors (strided, sparse, normalised) and JSON access that names the path of
every refusal (``$.accessors[3].count``).  :mod:`.gltf_read` builds the scene on it."""
from __future__ import annotations

import base64
import json
import math
import re
import os
import struct
from typing import Any, Optional

import urllib.parse
import numpy as np

from ..core.errors import (CountError, FormatError, JsonFormatError, LimitError, MagicError,
                           TruncatedError)
from ..core.limits import Limits

GLB_MAGIC = b"glTF"

_CHUNK_JSON = 0x4E4F534A

_CHUNK_BIN = 0x004E4942

_COMPONENTS = {5120: np.dtype("<i1"), 5121: np.dtype("<u1"), 5122: np.dtype("<i2"),
               5123: np.dtype("<u2"), 5125: np.dtype("<u4"), 5126: np.dtype("<f4")}

_NCOMP = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4, "MAT2": 4, "MAT3": 9, "MAT4": 16}

_MATRIX_COLUMNS = {"MAT2": 2, "MAT3": 3, "MAT4": 4}

#: key values (times and outputs) all animation channels may take per input byte
KEYS_PER_BYTE = 4

def _kind(value: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean"}.get(
        type(value), "number" if isinstance(value, (int, float)) else "null")

#: the suffix ``export.gltf.unique_names`` gives a repeated name
UNIQUE_SUFFIX = re.compile(r"\.\d{3}")

def _to_float(arr: np.ndarray, normalized: bool) -> np.ndarray:
    if arr.dtype == np.float32:
        return arr
    if not normalized:
        return arr.astype(np.float32)
    info = np.iinfo(arr.dtype)
    out = arr.astype(np.float32) / np.float32(info.max)
    if info.min < 0:
        out = np.maximum(out, np.float32(-1.0))
    return out


class GltfAccess:
    """Checked access to one glTF document's JSON and binary data (bounded by limits)."""

    def __init__(self, data: bytes, folder: Optional[str], limits: Limits) -> None:
        self.data = data
        self.folder = folder
        self.limits = limits
        #: where referenced files may be read (made on the first external URI)
        self.confinement = None
        self.bin_chunk: Optional[bytes] = None
        self.bin_offset = 0
        self.gl: dict = {}
        self.buffers: list = []
        self._accessor_cache: dict = {}
        #: top-level arrays already checked by items() (the JSON is not changed)
        self._items: dict = {}
        self.warnings: list = []
        # elements not backed by bytes (accessors without a bufferView)
        self.zero_budget = 65536 + len(data)
        #: bytes of external buffers read (they count as input for the read budget)
        self.external_bytes = 0
        #: bytes accessors may still copy out of the buffers (set on the first read):
        #: many accessors over one view must not multiply the input
        self.read_left: Optional[int] = None
        #: key values animation channels have taken so far (see charge_keys)
        self.keys_taken = 0

    # JSON helpers -------------------------------------------------------------
    def fail(self, path: str, message: str, *, expected: Any = None, found: Any = None,
             cls: type = JsonFormatError) -> FormatError:
        return cls(message, path=path, expected=expected, found=found)

    def get(self, obj: dict, key: str, path: str, kind: str, default: Any = None,
            required: bool = False) -> Any:
        if key not in obj:
            if required:
                raise self.fail(f"{path}.{key}", f"required property {key!r} is missing")
            return default
        v = obj[key]
        ok = {"object": isinstance(v, dict), "array": isinstance(v, list),
              "string": isinstance(v, str), "boolean": isinstance(v, bool),
              "number": isinstance(v, (int, float)) and not isinstance(v, bool),
              "integer": (isinstance(v, int) and not isinstance(v, bool))
              or (isinstance(v, float) and v.is_integer())}[kind]
        if not ok:
            raise self.fail(f"{path}.{key}", f"{key!r} must be {'an' if kind[0] in 'aeio' else 'a'} "
                            f"{kind}", expected=kind, found=_kind(v))
        if kind == "integer":
            v = int(v)
        if kind == "number" and not math.isfinite(v):
            raise self.fail(f"{path}.{key}", f"{key!r} is not finite", found=v)
        return v

    def index(self, obj: dict, key: str, path: str, list_name: str, required: bool = False
              ) -> Optional[int]:
        i = self.get(obj, key, path, "integer", required=required)
        if i is None:
            return None
        n = len(self.items(list_name))      # (checked: an array of objects)
        if not 0 <= i < n:
            raise self.fail(f"{path}.{key}", f"{key} {i} does not exist",
                            expected=f"0 <= {key} < {n} ({list_name})", found=i)
        return i

    def items(self, name: str) -> list:
        """The top-level array ``name``, every item checked to be an object
        once (it is asked for per accessor, per view, per node...: checking
        it each time made a file of many nodes quadratic)."""
        done = self._items.get(name)
        if done is not None:
            return done
        v = self.gl.get(name, [])
        if not isinstance(v, list):
            raise self.fail(f"$.{name}", f"{name!r} must be an array", found=_kind(v))
        for i, item in enumerate(v):
            if not isinstance(item, dict):
                raise self.fail(f"$.{name}[{i}]", "must be an object", found=_kind(item))
        self._items[name] = v
        return v

    def numbers(self, obj: dict, key: str, path: str, n: int, default: Any) -> Any:
        v = self.get(obj, key, path, "array")
        if v is None:
            return default
        if len(v) != n or not all(isinstance(x, (int, float)) and not isinstance(x, bool)
                                  and math.isfinite(x) for x in v):
            raise self.fail(f"{path}.{key}", f"{key!r} must be {n} finite numbers",
                            found=v if len(v) <= 16 else f"{len(v)} items")
        return [float(x) for x in v]

    def extras(self, obj: dict) -> dict:
        e = obj.get("extras")
        if isinstance(e, dict):
            return dict(e)
        return {} if e is None else {"value": e}

    def named(self, d: dict, path: str) -> tuple[str, dict]:
        """A node's or animation's name and extras, undoing the writer's renaming of
        repeated names (``run.001`` with ``extras.originalName = "run"``)."""
        name = self.get(d, "name", path, "string", "")
        extras = self.extras(d)
        orig = extras.get("originalName")
        if isinstance(orig, str) and UNIQUE_SUFFIX.fullmatch(name[len(orig):] or "-") \
                and name.startswith(orig):
            del extras["originalName"]
            name = orig
        return name, extras

    # container ------------------------------------------------------------------
    def parse_container(self) -> None:
        d = self.data
        if d[:4] == GLB_MAGIC:
            if len(d) < 12:
                raise TruncatedError("GLB header shorter than 12 bytes", offset=len(d),
                                     path="glb.header")
            _, version, length = struct.unpack_from("<III", d, 0)
            if version != 2:
                raise FormatError(f"GLB version {version} (only 2 is glTF 2.0)", offset=4,
                                  path="glb.version", expected=2, found=version)
            if length > len(d) or length < 12:
                raise TruncatedError("GLB length field disagrees with the data", offset=8,
                                     path="glb.length", expected=f"<= {len(d)}", found=length)
            pos, chunk_no, json_bytes = 12, 0, None
            while pos < length:
                if pos + 8 > length:
                    raise TruncatedError("chunk header runs past the end", offset=pos,
                                         path=f"glb.chunks[{chunk_no}]")
                clen, ctype = struct.unpack_from("<II", d, pos)
                if pos + 8 + clen > length:
                    raise CountError("chunk length runs past the end", offset=pos,
                                     path=f"glb.chunks[{chunk_no}].chunkLength",
                                     expected=f"<= {length - pos - 8}", found=clen)
                body = d[pos + 8:pos + 8 + clen]
                if chunk_no == 0:
                    if ctype != _CHUNK_JSON:
                        raise MagicError("first GLB chunk is not JSON", offset=pos + 4,
                                         path="glb.chunks[0].chunkType",
                                         expected="JSON", found=hex(ctype))
                    json_bytes = body
                elif ctype == _CHUNK_BIN and self.bin_chunk is None and chunk_no == 1:
                    self.bin_chunk = body
                    self.bin_offset = pos + 8
                pos += 8 + clen
                chunk_no += 1
            if json_bytes is None:
                raise TruncatedError("GLB has no JSON chunk", offset=12, path="glb.chunks")
            self.gl = self.parse_json(json_bytes, 20)
        else:
            start = d.lstrip()[:1]
            if start != b"{":
                raise MagicError("neither a GLB (glTF magic) nor a glTF JSON object",
                                 offset=0, expected="'glTF' or '{'", found=d[:4])
            self.gl = self.parse_json(d, 0)

    def parse_json(self, raw: bytes, offset: int) -> dict:
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as e:
            raise JsonFormatError(f"glTF JSON is not UTF-8: {e.reason}", offset=offset + e.start,
                                  path="$") from None
        try:
            gl = json.loads(text)
        except json.JSONDecodeError as e:
            raise JsonFormatError(f"invalid JSON: {e.msg} (line {e.lineno}, column {e.colno})",
                                  offset=offset + e.pos, path="$") from None
        except RecursionError:
            raise LimitError("glTF JSON nested too deeply", path="$") from None
        if not isinstance(gl, dict):
            raise JsonFormatError("glTF JSON must be an object", path="$", found=_kind(gl))
        return gl

    # buffers ----------------------------------------------------------------------
    def load_uri(self, uri: str, path: str) -> bytes:
        """A buffer's or image's bytes: a data URI (bounded by the input it is
        part of), or a relative file inside the glTF's folder tree, read by the
        one rule for referenced files (:class:`potsherd.resolve.Confinement`)."""
        if uri[:5].lower() == "data:":
            head, sep, payload = uri.partition(",")
            if not sep:
                raise self.fail(path, "data URI without a comma")
            if len(payload) > self.limits.max_input:
                raise LimitError("data URI over the input limit", path=path,
                                 expected=f"<= {self.limits.max_input}", found=len(payload))
            if head.endswith(";base64"):
                try:
                    return base64.b64decode(payload, validate=False)
                except (ValueError, TypeError) as e:
                    raise self.fail(path, f"bad base64 data URI: {e}") from None
            return urllib.parse.unquote_to_bytes(payload)
        from ..resolve import ReferenceRefused, uri_path
        rel = uri_path(uri)
        if rel is None:
            raise self.fail(path, "only relative file URIs and data URIs are read", found=uri,
                            cls=ReferenceRefused)
        if self.folder is None:
            raise self.fail(path, "external URI in a glTF given as bytes (no folder to read "
                            "from)", found=uri, cls=ReferenceRefused)
        if self.confinement is None:
            from ..resolve import Confinement
            self.confinement = Confinement([self.folder], self.limits)
        try:
            return self.confinement.read(os.path.join(self.folder, rel), uri)
        except LimitError as e:
            raise LimitError(f"{uri!r}: {e.message}", path=path) from None
        except ReferenceRefused as e:
            raise ReferenceRefused(e.message, path=path, found=uri) from None

    def read_buffers(self) -> None:
        for i, b in enumerate(self.items("buffers")):
            path = f"$.buffers[{i}]"
            length = self.get(b, "byteLength", path, "integer", required=True)
            if length < 0:
                raise self.fail(path + ".byteLength", "negative byteLength", found=length)
            uri = self.get(b, "uri", path, "string")
            if uri is None:
                if i != 0 or self.bin_chunk is None:
                    raise self.fail(path, "buffer without uri and no GLB BIN chunk for it",
                                    cls=FormatError)
                data = self.bin_chunk
            else:
                data = self.load_uri(uri, path + ".uri")
                if uri[:5].lower() != "data:":
                    self.external_bytes += len(data)
            if len(data) < length:
                raise CountError("buffer is shorter than its byteLength", path=path + ".byteLength",
                                 expected=f"<= {len(data)}", found=length)
            self.buffers.append(memoryview(data)[:length])

    def view_bytes(self, vi: int, path: str) -> tuple:
        """(memoryview of the buffer view, byteStride or None)."""
        views = self.items("bufferViews")
        v = views[vi]
        vpath = f"$.bufferViews[{vi}]"
        bi = self.index(v, "buffer", vpath, "buffers", required=True)
        off = self.get(v, "byteOffset", vpath, "integer", 0)
        length = self.get(v, "byteLength", vpath, "integer", required=True)
        stride = self.get(v, "byteStride", vpath, "integer")
        buf = self.buffers[bi]
        if off < 0 or length < 0 or off + length > len(buf):
            raise CountError("buffer view runs past its buffer", path=vpath + ".byteLength",
                             expected=f"byteOffset + byteLength <= {len(buf)}",
                             found=f"{off} + {length}")
        if stride is not None and not (4 <= stride <= 252 and stride % 4 == 0):
            raise self.fail(vpath + ".byteStride", "byteStride must be a multiple of 4 in 4..252",
                            found=stride)
        return buf[off:off + length], stride

    # accessors --------------------------------------------------------------------
    def accessor(self, ai: int, path: str = "") -> tuple:
        """Accessor ``ai`` as ``(array (count, ncomp) of its component type, normalized)``."""
        if ai in self._accessor_cache:
            return self._accessor_cache[ai]
        a = self.items("accessors")[ai]
        apath = f"$.accessors[{ai}]"
        ct = self.get(a, "componentType", apath, "integer", required=True)
        if ct not in _COMPONENTS:
            raise self.fail(apath + ".componentType", "unknown componentType",
                            expected=sorted(_COMPONENTS), found=ct)
        dt = _COMPONENTS[ct]
        typ = self.get(a, "type", apath, "string", required=True)
        if typ not in _NCOMP:
            raise self.fail(apath + ".type", "unknown accessor type", expected=sorted(_NCOMP),
                            found=typ)
        ncomp = _NCOMP[typ]
        count = self.get(a, "count", apath, "integer", required=True)
        if count < 1:
            raise self.fail(apath + ".count", "count must be at least 1", found=count)
        if count > self.limits.max_elements:
            raise LimitError("accessor count over the element limit", path=apath + ".count",
                             expected=f"<= {self.limits.max_elements}", found=count)
        normalized = self.get(a, "normalized", apath, "boolean", False)
        if normalized and dt.kind == "f" or normalized and ct == 5125:
            raise self.fail(apath + ".normalized", "normalized is only for 8/16-bit integers")
        vi = self.index(a, "bufferView", apath, "bufferViews")
        if vi is None:
            if count * ncomp > self.zero_budget:
                raise LimitError("accessor without bufferView larger than the input allows",
                                 path=apath + ".count", expected=f"<= {self.zero_budget} values",
                                 found=count * ncomp)
            self.zero_budget -= count * ncomp
            arr = np.zeros((count, ncomp), dt.newbyteorder("="))
        else:
            arr = self.read_strided(vi, self.get(a, "byteOffset", apath, "integer", 0), count,
                                    typ, dt, apath)
        sparse = self.get(a, "sparse", apath, "object")
        if sparse is not None:
            arr = self.apply_sparse(arr, sparse, apath + ".sparse", dt, typ, count)
        out = (arr, bool(normalized))
        self._accessor_cache[ai] = out
        return out

    def read_strided(self, vi: int, off: int, count: int, typ: str, dt: np.dtype,
                     apath: str) -> np.ndarray:
        ncomp = _NCOMP[typ]
        view, stride = self.view_bytes(vi, apath)
        if off < 0:
            raise self.fail(apath + ".byteOffset", "negative byteOffset", found=off)
        if off % dt.itemsize:
            raise self.fail(apath + ".byteOffset", "byteOffset is not a multiple of the "
                            "component size", found=off)
        cols = _MATRIX_COLUMNS.get(typ)
        if cols is not None:            # matrix columns start on 4-byte boundaries
            col_bytes = -(-cols * dt.itemsize // 4) * 4
            elem = col_bytes * cols
        else:
            col_bytes, elem = 0, ncomp * dt.itemsize
        step = stride if stride else elem
        if stride and stride < elem:
            raise self.fail(f"$.bufferViews[{vi}].byteStride", "byteStride smaller than the "
                            "element", expected=f">= {elem}", found=stride)
        need = off + step * (count - 1) + elem
        if need > len(view):
            raise CountError("accessor runs past its buffer view", path=apath + ".count",
                             expected=f"<= {max(0, (len(view) - off - elem) // step + 1)}",
                             found=count)
        self.charge_read(count * ncomp * dt.itemsize, apath)
        raw = np.frombuffer(view, np.uint8, count=need - off, offset=off)
        if cols is not None and col_bytes != cols * dt.itemsize:
            rows = np.lib.stride_tricks.as_strided(raw, (count, elem), (step, 1))
            per_col = rows.reshape(count, cols, col_bytes)[:, :, :cols * dt.itemsize]
            return np.ascontiguousarray(per_col).view(dt).reshape(count, ncomp).astype(
                dt.newbyteorder("="))
        rows = np.lib.stride_tricks.as_strided(raw, (count, elem), (step, 1))
        return np.ascontiguousarray(rows).view(dt).reshape(count, ncomp).astype(
            dt.newbyteorder("="))

    def charge_read(self, nbytes: int, path: str) -> None:
        """Count ``nbytes`` copied out of the buffers against one budget per
        document (:meth:`Limits.document_budget` of the input and its external
        buffers): each accessor is bounded by its view, but thousands of
        accessors over one big view would multiply it."""
        total = self.limits.document_budget(len(self.data) + self.external_bytes)
        if self.read_left is None:
            self.read_left = total
        if nbytes > self.read_left:
            raise LimitError("accessors read more bytes than the input allows in total "
                             "(many accessors over the same data)", path=path + ".count",
                             expected=f"<= {total} bytes in total",
                             found=total - self.read_left + nbytes)
        self.read_left -= nbytes

    def charge_keys(self, n: int, path: str) -> None:
        """Count ``n`` key values (times and outputs) of one animation channel.
        Channels share samplers by reference, so a few bytes per channel can
        repeat one big sampler without end, and importers resample every
        channel: the total is bounded by :data:`KEYS_PER_BYTE` x the input (its
        external buffers included; real files take each key once, 4 bytes)."""
        budget = min(self.limits.max_elements,
                     KEYS_PER_BYTE * (len(self.data) + self.external_bytes + (1 << 20)))
        self.keys_taken += n
        if self.keys_taken > budget:
            raise LimitError("animation channels take more keys than the input holds (channels "
                             "repeating one sampler)", path=path,
                             expected=f"<= {budget} key values in total", found=self.keys_taken)

    def apply_sparse(self, arr: np.ndarray, sparse: dict, spath: str, dt: np.dtype,
                     typ: str, count: int) -> np.ndarray:
        n = self.get(sparse, "count", spath, "integer", required=True)
        if not 1 <= n <= count:
            raise self.fail(spath + ".count", "sparse count must be 1..accessor count",
                            expected=f"1..{count}", found=n)
        ind = self.get(sparse, "indices", spath, "object", required=True)
        val = self.get(sparse, "values", spath, "object", required=True)
        ipath, vpath = spath + ".indices", spath + ".values"
        ict = self.get(ind, "componentType", ipath, "integer", required=True)
        if ict not in (5121, 5123, 5125):
            raise self.fail(ipath + ".componentType", "sparse indices must be unsigned",
                            found=ict)
        ivi = self.index(ind, "bufferView", ipath, "bufferViews", required=True)
        idx = self.read_strided(ivi, self.get(ind, "byteOffset", ipath, "integer", 0), n,
                                "SCALAR", _COMPONENTS[ict], ipath)[:, 0].astype(np.int64)
        if idx.max() >= count:
            raise CountError("sparse index outside the accessor", path=ipath,
                             expected=f"< {count}", found=int(idx.max()))
        if n > 1 and np.any(np.diff(idx) <= 0):
            raise self.fail(ipath, "sparse indices must be strictly increasing")
        vvi = self.index(val, "bufferView", vpath, "bufferViews", required=True)
        vals = self.read_strided(vvi, self.get(val, "byteOffset", vpath, "integer", 0), n,
                                 typ, dt, vpath)
        arr = arr.copy()
        arr[idx] = vals
        return arr

    def floats(self, ai: int, path: str, ncomp: tuple) -> np.ndarray:
        """Accessor as float32 (normalized integers mapped to [0, 1] / [-1, 1])."""
        arr, norm = self.accessor(ai, path)
        if arr.shape[1] not in ncomp:
            raise self.fail(path, f"accessor {ai} has {arr.shape[1]} components",
                            expected=" or ".join(map(str, ncomp)), found=arr.shape[1])
        return _to_float(arr, norm)
