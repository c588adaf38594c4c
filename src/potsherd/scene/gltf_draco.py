"""``KHR_draco_mesh_compression``: a primitive's attributes and indices decoded
with Google's Draco library (the ``DracoPy`` binding), so a Draco-compressed
glTF (Blender's and glTF-Transform's compression option, many web assets)
reads like any other.

The extension names a buffer view holding the Draco mesh and maps each glTF
attribute to a Draco attribute by its unique id; the primitive's accessors
keep their component type, type and ``normalized`` flag and have no buffer
view of their own.  The decoded values take those accessors' places, so the
rest of the reader (counts, normalisation, morph targets, limits) is the same
for compressed and plain primitives.  The decoded vertex count is Draco's
(its encoder may split or merge vertices; the accessors' counts are those of
the encoded mesh, which writers usually make agree).
"""
from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np

from ..core.errors import FormatError, LimitError

EXTENSION = "KHR_draco_mesh_compression"


def available() -> bool:
    """Whether the Draco decoder is installed."""
    return importlib.util.find_spec("DracoPy") is not None


def decode_primitive(reader: Any, p: dict, path: str) -> None:
    """Decode primitive ``p``'s Draco mesh and put its values in the reader's
    accessor cache under the accessors the primitive names (attributes and
    indices).  Raises :class:`FormatError` naming the extension's JSON path for
    a missing decoder, bad Draco data or an attribute the mesh lacks."""
    epath = f"{path}.extensions.{EXTENSION}"
    ext = reader.get(p["extensions"], EXTENSION, f"{path}.extensions", "object", required=True)
    try:
        import DracoPy
    except ImportError:
        raise reader.fail(epath, f"{EXTENSION} needs the Draco decoder: pip install DracoPy "
                          "(or decompress the file first, e.g. with gltf-transform)",
                          cls=FormatError) from None
    vi = reader.index(ext, "bufferView", epath, "bufferViews", required=True)
    data, _ = reader.view_bytes(vi, epath + ".bufferView")
    try:
        mesh = DracoPy.decode(bytes(data))
    except Exception as e:  # noqa: BLE001 - the binding raises several kinds for bad data
        raise reader.fail(epath + ".bufferView", f"the Draco data does not decode ({e})",
                          cls=FormatError) from None
    points = np.asarray(mesh.points)
    if points.ndim != 2:
        raise reader.fail(epath + ".bufferView", "the Draco data holds no points",
                          cls=FormatError)
    if len(points) > reader.limits.max_elements:
        raise LimitError("Draco mesh over the element limit", path=epath,
                         expected=f"<= {reader.limits.max_elements}", found=len(points))
    mapping = reader.get(ext, "attributes", epath, "object", required=True)
    attrs = reader.get(p, "attributes", path, "object", required=True)
    for semantic, uid in mapping.items():
        if semantic not in attrs:
            continue                    # (a Draco attribute glTF does not use)
        spath = f"{epath}.attributes.{semantic}"
        if not isinstance(uid, int) or isinstance(uid, bool):
            raise reader.fail(spath, "a Draco attribute id must be an integer", found=uid)
        found = mesh.get_attribute_by_unique_id(uid)
        if found is None:
            raise reader.fail(spath, "the Draco mesh has no attribute of this id", found=uid,
                              cls=FormatError)
        ai = reader.index(attrs, semantic, f"{path}.attributes", "accessors", required=True)
        _place(reader, ai, np.asarray(found["data"]), spath)
    ii = reader.index(p, "indices", path, "accessors")
    faces = getattr(mesh, "faces", None)
    if ii is not None and faces is not None:
        _place(reader, ii, np.asarray(faces, np.int64).reshape(-1, 1), epath)


def _place(reader: Any, ai: int, values: np.ndarray, path: str) -> None:
    """Decoded ``values`` as accessor ``ai`` (its component type and flag)."""
    from .gltf_access import _COMPONENTS, _NCOMP
    a = reader.items("accessors")[ai]
    apath = f"$.accessors[{ai}]"
    dt = _COMPONENTS.get(reader.get(a, "componentType", apath, "integer", required=True))
    ncomp = _NCOMP.get(reader.get(a, "type", apath, "string", required=True))
    if dt is None or ncomp is None:
        raise reader.fail(apath, "unknown componentType or type")
    if values.ndim == 0 or values.dtype.kind not in "iuf":
        raise reader.fail(path, "the Draco attribute holds no numbers", cls=FormatError)
    values = values.reshape(len(values), -1)
    if values.shape[1] != ncomp:
        raise reader.fail(path, f"the Draco attribute has {values.shape[1]} components, its "
                          f"accessor {ncomp}", expected=ncomp, found=values.shape[1])
    normalized = bool(reader.get(a, "normalized", apath, "boolean", False))
    if dt.kind in "iu" and values.dtype.kind == "f":     # dequantized into an integer accessor
        values = np.rint(values * (np.iinfo(dt).max if normalized else 1))
        if not np.isfinite(values).all():
            raise reader.fail(path, "non-finite Draco values for an integer accessor")
        values = np.clip(values, np.iinfo(dt).min, np.iinfo(dt).max)
    reader._accessor_cache[ai] = (values.astype(dt.newbyteorder("="), copy=False), normalized)
