"""Decoding helpers for Darkstar meshes and shapes (numpy, vectorised).

These read decoded documents (never bytes) and feed glTF export:

* :data:`NORMALS` - the engine's 256-entry normal table (``structures.json``);
* :func:`frame_positions` - quantised vertices -> positions, one row per frame
  (``vert.xyz * scale + origin``; scale/origin per frame in mesh v3, shared in
  the mesh header in v1-v2), float32 arithmetic like the engine;
* :func:`frame_normals` / :func:`normal_vectors` - normal index -> unit vector;
* :func:`face_indices` - faces -> per-frame absolute vertex indices, texture
  indices for a material (IFL) frame, and material per face;
* :func:`transforms` - shape transforms -> float quaternion, translation, scale.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...core.errors import FormatError, LimitError, ValueFormatError
from .structs import normal_table
from ...scene.geometry import lexicographic_labels, row_groups, vector_lengths

NORMALS: np.ndarray = normal_table()
NORMALS.setflags(write=False)

#: ``fnTextureVertsPerFrame`` written by exporters that never set it (MSVC fill)
UNSET_TVPF = -0x32323233  # 0xCDCDCDCD as an i32

QUAT16_SCALE = 32767.0

#: most frame vertices decoded at once (real shapes stay far below: tens of frames
#: of a few hundred vertices)
MAX_FRAME_VERTICES = 1 << 22


def _payload(mesh: dict) -> tuple[dict, int]:
    """(payload, version) of a decoded ``TS::CelAnimMesh`` block."""
    if not isinstance(mesh, dict) or not isinstance(mesh.get("payload"), dict):
        raise FormatError("not a decoded PERS block with a payload")
    if bytes(mesh.get("className", b"")) != b"TS::CelAnimMesh":
        raise FormatError(f"not a TS::CelAnimMesh block: {bytes(mesh.get('className', b''))!r}")
    return mesh["payload"], mesh["version"]


def first_verts(mesh: dict) -> np.ndarray:
    """First vertex of every frame.  A v1-v2 mesh with no frames has one
    implied frame starting at vertex 0 (the engine's reader adds it; seen in
    real files, e.g. every mesh of the Starsiege ``flame.DTS``)."""
    p, version = _payload(mesh)
    if version < 3 and len(p["frames"]) == 0:
        return np.zeros(1, np.int64)
    return p["frames"]["firstVert"].astype(np.int64)


def frame_vertex_index(mesh: dict) -> np.ndarray:
    """(nFrames, nVertsPerFrame) indices into ``verts`` (frames may share blocks)."""
    p, _ = _payload(mesh)
    vpf = int(p["mVertsPerFrame"])
    first = first_verts(mesh)
    n_verts = len(p["verts"])
    if vpf < 0:
        raise ValueFormatError(f"negative vertices per frame {vpf}", path="mVertsPerFrame")
    if len(first) * vpf > MAX_FRAME_VERTICES:
        # frames may all reuse one vertex block, so this product is not bounded by the file size
        raise LimitError(f"{len(first)} frames x {vpf} vertices exceed {MAX_FRAME_VERTICES} "
                         "decoded vertices", path="frames")
    if first.size and (first.min() < 0 or first.max() + vpf > n_verts):
        bad = int(np.nonzero((first < 0) | (first + vpf > n_verts))[0][0])
        raise ValueFormatError(f"frame {bad} reads vertices {first[bad]}..{first[bad] + vpf - 1} "
                               f"of {n_verts}", path=f"frames[{bad}].firstVert")
    return first[:, None] + np.arange(vpf, dtype=np.int64)[None, :]


def scale_origin(mesh: dict) -> tuple[np.ndarray, np.ndarray]:
    """(nFrames, 3) scale and origin of each frame, float32."""
    p, version = _payload(mesh)
    n = len(first_verts(mesh))
    if version >= 3:
        fr = p["frames"]
        scale = np.stack([fr["scaleX"], fr["scaleY"], fr["scaleZ"]], axis=1)
        origin = np.stack([fr["originX"], fr["originY"], fr["originZ"]], axis=1)
    else:
        scale = np.tile(np.array([p["scaleX"], p["scaleY"], p["scaleZ"]], np.float32), (n, 1))
        origin = np.tile(np.array([p["originX"], p["originY"], p["originZ"]], np.float32), (n, 1))
    return scale.astype(np.float32), origin.astype(np.float32)


def frame_positions(mesh: dict) -> np.ndarray:
    """(nFrames, nVertsPerFrame, 3) float32 positions of every frame."""
    idx = frame_vertex_index(mesh)
    p, _ = _payload(mesh)
    v = p["verts"]
    xyz = np.stack([v["x"], v["y"], v["z"]], axis=1).astype(np.float32)
    scale, origin = scale_origin(mesh)
    with np.errstate(over="ignore", invalid="ignore"):   # garbage floats give inf/nan, as in the engine
        return xyz[idx] * scale[:, None, :] + origin[:, None, :]


def normal_vectors(indices: Any) -> np.ndarray:
    """Unit vectors for normal indices (any shape of u8 indices -> shape + (3,))."""
    return NORMALS[np.asarray(indices, dtype=np.uint8)]


def frame_normals(mesh: dict) -> np.ndarray:
    """(nFrames, nVertsPerFrame, 3) float32 vertex normals of every frame."""
    idx = frame_vertex_index(mesh)
    p, _ = _payload(mesh)
    return NORMALS[p["verts"]["normal"][idx]]


def texture_verts_per_frame(mesh: dict) -> int | None:
    """Texture vertices per material frame, or None when the field is unused
    (``0xCDCDCDCD``, or not positive).  Mesh v1 has no field: ``numTexVerts``."""
    p, version = _payload(mesh)
    if version < 2:
        return int(p["numTexVerts"])
    t = int(p["mTextureVertsPerFrame"])
    return t if t > 0 and t != UNSET_TVPF else None


def face_indices(mesh: dict, mat_frame: int = 0) -> dict[str, np.ndarray]:
    """Per-face indices.

    ``vertex``: (nFrames, nFaces, 3) indices into ``verts`` (face indices are
    relative to the frame); ``local``: (nFaces, 3) the stored frame-relative
    indices; ``texture``: (nFaces, 3) indices into ``textureVerts`` for
    material frame ``mat_frame``; ``material``: (nFaces,) material index.
    """
    p, _ = _payload(mesh)
    f = p["faces"]
    local = np.stack([f["vi1"], f["vi2"], f["vi3"]], axis=1).astype(np.int64)
    tex = np.stack([f["ti1"], f["ti2"], f["ti3"]], axis=1).astype(np.int64)
    vpf = int(p["mVertsPerFrame"])
    if local.size and (local.min() < 0 or local.max() >= vpf):
        bad = int(np.nonzero(((local < 0) | (local >= vpf)).any(axis=1))[0][0])
        raise ValueFormatError(f"face {bad} uses vertex outside 0..{vpf - 1}", path=f"faces[{bad}]")
    if mat_frame:
        tvpf = texture_verts_per_frame(mesh)
        if tvpf is None:
            raise ValueFormatError("material frames need fnTextureVertsPerFrame, which is unset",
                                   path="mTextureVertsPerFrame")
        tex = tex + mat_frame * tvpf
    n_tex = len(p["textureVerts"])
    if tex.size and (tex.min() < 0 or tex.max() >= n_tex):
        bad = int(np.nonzero(((tex < 0) | (tex >= n_tex)).any(axis=1))[0][0])
        raise ValueFormatError(f"face {bad} uses a texture vertex outside 0..{n_tex - 1}",
                               path=f"faces[{bad}]")
    first = first_verts(mesh)
    return {"vertex": first[:, None, None] + local[None, :, :], "local": local,
            "texture": tex, "material": f["material"].astype(np.int64)}


def texture_coords(mesh: dict) -> np.ndarray:
    """(numTexVerts, 2) float32 u, v."""
    p, _ = _payload(mesh)
    t = p["textureVerts"]
    return np.stack([t["x"], t["y"]], axis=1).astype(np.float32)


def transforms(shape_payload: dict, version: int) -> dict[str, np.ndarray]:
    """Shape transforms as float arrays: ``rotation`` (n, 4) x y z w as stored
    (Quat16 / 32767 in v7-v8, floats before), ``translation`` (n, 3), ``scale``
    (n, 3; ones in v8, which stores none)."""
    t = shape_payload["transforms"]
    rot = np.stack([t["fRotateX"], t["fRotateY"], t["fRotateZ"], t["fRotateW"]], axis=1)
    rot = rot.astype(np.float32)
    if version >= 7:
        rot = rot / np.float32(QUAT16_SCALE)
    tr = np.stack([t["fTranslateX"], t["fTranslateY"], t["fTranslateZ"]], axis=1).astype(np.float32)
    if "fScaleX" in t.dtype.names:
        sc = np.stack([t["fScaleX"], t["fScaleY"], t["fScaleZ"]], axis=1).astype(np.float32)
    else:
        sc = np.ones_like(tr)
    return {"rotation": rot, "translation": tr, "scale": sc}


def name_text(raw: bytes, encoding: str = "latin-1") -> str:
    """The C string in a raw name slot (bytes after the first NUL dropped)."""
    raw = bytes(raw)
    cut = raw.find(b"\0")
    return (raw if cut < 0 else raw[:cut]).decode(encoding, errors="replace")


def nearest_normals(n: np.ndarray) -> np.ndarray:
    """Index of the nearest table normal per row (Euclidean, lowest index on a tie).

    Each distinct direction once; a matrix product finds its three nearest
    candidates and the exact distances (the ones a plain search computes, so
    ties break the same) decide among them."""
    n = np.asarray(n, np.float64).reshape(-1, 3)
    if not len(n):
        return np.zeros(0, np.uint8)
    # each distinct row once (corners share their vertex's normal), grouped by its
    # bytes (-0.0 made 0.0), made unit, then sorted in np.unique(axis=0)'s order
    # (lexicographic by value) with rows of equal unit values merged
    groups = row_groups((n + 0.0).view(np.uint8).reshape(len(n), -1))
    if groups is None:                       # a hash collision: sort all the rows
        every = np.arange(len(n))
        groups = (every, every)
    first, grp = groups
    raw = n[first]
    length = vector_lengths(raw)[:, None]
    reps = np.where(length > 0, raw / np.where(length > 0, length, 1), 0.0)
    uniq, rank = lexicographic_labels(reps)
    inverse = rank[grp]
    table = NORMALS.astype(np.float64)
    table_sq = (table * table).sum(axis=1)
    best = np.empty(len(uniq), np.int64)
    for a in range(0, len(uniq), 16384):          # (rows, 256) at a time, memory bounded
        u = uniq[a:a + 16384]
        approx = table_sq[None, :] - 2.0 * (u @ table.T)
        cand = np.argpartition(approx, 2, axis=1)[:, :3]
        exact = ((u[:, None, :] - table[cand]) ** 2).sum(axis=2)
        low = exact.min(axis=1, keepdims=True)
        best[a:a + 16384] = np.where(exact == low, cand, len(table)).min(axis=1)
    return best[inverse.reshape(-1)].astype(np.uint8)
