"""A mesh's TR polygons as columns, the importer's form of ``mesh["polygons"]``.

An imported moveable has tens of thousands of polygons; a dict and a small
numpy array per polygon, each packed again by the encoder, cost more than the
rest of the import.  :class:`PolygonColumns` holds them as arrays, reads as
the list of polygon dicts a decoded file has (so every reader of a mesh sees
the same records), and packs itself in one pass for the compiled encoder."""
from __future__ import annotations

from typing import Any

import numpy as np

from ...core.layout import RecordColumns

# the polygon record of layouts/common.layout, a quad's 14 bytes and a triangle's 12
_QUAD = np.dtype([("shape", "<u2"), ("vertices", "<u2", 4), ("texture", "<u2"),
                  ("attributes", "u1"), ("unknown", "u1")])
_TRI = np.dtype([("shape", "<u2"), ("vertices", "<u2", 3), ("texture", "<u2"),
                 ("attributes", "u1"), ("unknown", "u1"), ("gap", "u1", 2)])


class PolygonColumns(RecordColumns):
    """Polygons as columns: ``shape`` (8 triangle, 9 quad), ``vertices`` (n, 4)
    uint16 (a triangle's fourth unused), ``texture``, ``attributes``, ``unknown``."""

    def __init__(self, shape: np.ndarray, vertices: np.ndarray, texture: np.ndarray,
                 attributes: np.ndarray, unknown: np.ndarray) -> None:
        self.shape = np.asarray(shape, np.int64)
        self.vertices = np.asarray(vertices, np.uint16).reshape(-1, 4)
        self.texture = np.asarray(texture, np.int64)
        self.attributes = np.asarray(attributes, np.int64)
        self.unknown = np.asarray(unknown, np.int64)

    def __len__(self) -> int:
        return len(self.shape)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        shape = int(self.shape[i])
        return {"shape": shape, "vertices": self.vertices[i, :4 if shape == 9 else 3].copy(),
                "texture": int(self.texture[i]), "attributes": int(self.attributes[i]),
                "unknown": int(self.unknown[i])}

    def __iter__(self) -> Any:
        return (self[i] for i in range(len(self)))

    def packed(self, record: str) -> bytes | None:
        """The ``polygon`` records' bytes in one pass; None (the dicts are then
        encoded, and a bad value refused with the reference's error) for any
        shape or value the record cannot hold."""
        if record != "polygon":
            return None
        n = len(self)
        quad = self.shape == 9
        if not (quad | (self.shape == 8)).all() or not all(
                (c >= 0).all() and (c <= top).all() for c, top in
                ((self.texture, 0xFFFF), (self.attributes, 0xFF), (self.unknown, 0xFF))):
            return None
        rows = np.zeros(n, _QUAD)
        rows["shape"] = self.shape
        rows["vertices"] = self.vertices
        rows["texture"] = self.texture
        rows["attributes"] = self.attributes
        rows["unknown"] = self.unknown
        tri = ~quad
        if tri.any():       # a triangle: its three indices, the rest moved up by 2 bytes
            t = np.zeros(int(tri.sum()), _TRI)
            for f in ("shape", "texture", "attributes", "unknown"):
                t[f] = rows[f][tri]
            t["vertices"] = rows["vertices"][tri, :3]
            rows[tri] = t.view(_QUAD)
        keep = np.ones((n, 14), bool)
        keep[tri, 12:] = False
        return rows.view(np.uint8).reshape(n, 14)[keep].tobytes()
