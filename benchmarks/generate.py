"""Large benchmark inputs made with the project's own encoders.

Used when ``../shared/corpus/<family>`` is absent, and for the "large file"
rows (corpus files are small; throughput on a few MB shows the per-byte cost
rather than the per-call overhead).  Documents are built as plain trees and
written by the registered codec, so the bytes are valid by construction.
"""
from __future__ import annotations

import numpy as np

from potsherd.core.values import RawString
from potsherd.document import Document
from potsherd.registry import get_codec


def n3pmesh_bytes(vertices: int = 200_000, seed: int = 1) -> bytes:
    rng = np.random.default_rng(seed)
    nidx = vertices * 3
    ncol = vertices // 2
    collapses = [{"indicesToLose": int(a), "indicesToChange": int(b), "verticesToLose": 1,
                  "indexChangesOffset": int(c), "collapseTo": int(d), "shouldCollapse": 1,
                  "padding": b"\x00\x00\x00"}
                 for a, b, c, d in rng.integers(0, 1000, size=(ncol, 4)).tolist()]
    root = {
        "name": RawString(b"generated_mesh"), "collapseCount": ncol, "changeCount": nidx // 4,
        "vertexCount": vertices, "indexCount": nidx, "minVertexCount": 3, "minIndexCount": 3,
        "vertices": rng.random(vertices * 8, dtype=np.float32),
        "indices": rng.integers(0, vertices, nidx).astype("<u2"),
        "collapses": collapses,
        "indexChanges": rng.integers(0, nidx, nidx // 4).astype("<i4"),
        "lodCount": 2, "lods": [{"distance": 10.0, "vertexCount": vertices},
                                {"distance": 50.0, "vertexCount": vertices // 2}],
    }
    return get_codec("n3pmesh").encode(Document("n3pmesh", root))


def n3cskins_bytes(vertices: int = 40_000, seed: int = 2) -> bytes:
    rng = np.random.default_rng(seed)
    lods = []
    for lod in range(4):
        nv = max(vertices >> lod, 3)
        nf = nv * 2
        bindings = []
        counts = rng.integers(1, 4, nv).tolist()
        for c in counts:
            b = {"origin": [0.5, 1.5, -2.0], "count": c, "pointerPlaceholders": bytes(8),
                 "joints": rng.integers(0, 40, c).astype("<i4")}
            if c > 1:
                b["weights"] = np.full(c, 1.0 / c, dtype="<f4")
            bindings.append(b)
        lods.append({"name": RawString(b"lod%d" % lod), "faceCount": nf, "vertexCount": nv,
                     "uvCount": nv, "positionNormals": rng.random(nv * 6, dtype=np.float32),
                     "vertexIndices": rng.integers(0, nv, nf * 3).astype("<u2"),
                     "uvs": rng.random(nv * 2, dtype=np.float32),
                     "uvIndices": rng.integers(0, nv, nf * 3).astype("<u2"),
                     "bindings": bindings})
    root = {"name": RawString(b"generated_skins"), "lods": lods}
    return get_codec("n3cskins").encode(Document("n3cskins", root))


def uif_bytes(nodes: int = 20_000, seed: int = 3) -> bytes:
    """A wide UI tree: a root with ``nodes`` children of every node type."""
    rng = np.random.default_rng(seed)
    types = [0, 1, 2, 4, 6, 8, 9, 14]

    def node(t: int, children: list) -> dict:
        n = {"name": RawString(b"node"), "childCount": len(children), "versionWord": 1,
             "children": children, "id": RawString(b"id_%d" % int(rng.integers(1 << 20))),
             "region": [0, 0, 64, 32], "movable": [0, 0, 0, 0], "style": 0, "reserved": 0,
             "tooltip": RawString(b""), "soundOpen": RawString(b""), "soundClose": RawString(b"")}
        if t == 1:
            n["clickRect"] = [1, 2, 3, 4]
            n["soundOn"] = RawString(b"ui\\on.wav")
        if t in (1, 2, 8):
            n["soundClick"] = RawString(b"ui\\click.wav")
        if t == 4:
            n["texture"] = RawString(b"ui\\image.dxt")
            n["uv"] = np.array([0, 0, 1, 1], dtype="<f4")
            n["animationFrame"] = 0.0
        if t in (6, 14):
            n["fontName"] = RawString(b"Arial")
            n["fontHeight"] = 12
            if t == 6:
                n["fontFlags"] = 0
            else:
                n["fontColor"], n["fontBold"], n["fontItalic"] = 0xFFFFFFFF, 0, 0
        if t == 6:
            n["color"] = 0xFF00FF00
            n["text"] = RawString(b"some label text")
            n["lineSpacing"] = 2
        if t == 8:
            n["soundTyping"] = RawString(b"ui\\type.wav")
        if t == 9:
            n["areaType"] = 3
        return n

    kids = [{"type": t, "node": node(t, [])} for t in rng.choice(types, nodes).tolist()]
    root = {"root": node(0, kids)}
    return get_codec("uif").encode(Document("uif", root, {"fileVersion": 1264, "spacingPresent": 0,
                                                          "type": 0}))


GENERATORS = {"n3pmesh": n3pmesh_bytes, "n3cskins": n3cskins_bytes, "uif": uif_bytes}
