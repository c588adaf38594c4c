"""``potsherd info`` summaries of the Knight Online formats (and the progressive-mesh
replay they and the scene builder share)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ...core.layout import Ragged
from ...document import Document
from .text import text
from .wire import record_columns


# ----------------------------------------------------------------------------
# info


def _s(v: Any, enc: str) -> str:
    return text(v, enc)


def _keys_info(keys: list) -> list[dict]:
    out = []
    for k in keys:
        d = {"count": int(k["count"])}
        if k["count"] > 0:
            d["type"] = {0: "vector", 1: "quaternion"}.get(k["keyType"], k["keyType"])
            d["samplingRate"] = float(k["samplingRate"])
        out.append(d)
    return out


def _transform_info(t: dict, enc: str) -> dict:
    return {"name": _s(t["name"], enc), "position": [float(x) for x in t["position"]],
            "keys": [int(k["count"]) for k in t["keys"]],
            "collisionMesh": _s(t["collisionMesh"], enc), "climbMesh": _s(t["climbMesh"], enc)}


def replay_pmesh(m: dict) -> tuple[int, int, np.ndarray]:
    """Full detail of a progressive mesh (docs/formats/knight-online.md): replay every
    collapse in file order from the stored lowest-detail index buffer.
    Returns (vertex count, index count, index buffer)."""
    idx = np.array(m["indices"], dtype=np.int64)
    changes = np.asarray(m["indexChanges"], dtype=np.int64)
    nv, ni = int(m["minVertexCount"]), int(m["minIndexCount"])
    columns = record_columns(m["collapses"], "collapse", "indicesToLose", "verticesToLose",
                             "indexChangesOffset", "indicesToChange")
    for lose_i, lose_v, offset, change in zip(*columns):
        ni += lose_i
        nv += lose_v
        lo = max(offset, 0)
        sel = changes[lo:lo + max(change, 0)]
        sel = sel[(sel >= 0) & (sel < len(idx))]
        idx[sel] = nv - 1
    return nv, ni, idx


def info_n3pmesh(doc: Document, enc: str) -> dict:
    m = doc.root
    nv, ni, _ = replay_pmesh(m)
    return {"name": _s(m["name"], enc), "vertices": int(m["vertexCount"]),
            "indices": int(m["indexCount"]), "faces": int(m["indexCount"]) // 3,
            "minVertices": int(m["minVertexCount"]), "minFaces": int(m["minIndexCount"]) // 3,
            "collapses": len(m["collapses"]),
            "fullDetail": {"vertices": nv, "faces": ni // 3},
            "lods": [{"distance": float(l["distance"]), "vertices": int(l["vertexCount"])}
                     for l in m["lods"]]}


def _skin_info(s: dict) -> dict:
    d = {"faces": int(s["faceCount"]), "vertices": int(s["vertexCount"]), "uvs": int(s["uvCount"])}
    b = s.get("bindings")
    if b is not None and len(b):
        counts = b["count"] if isinstance(b, Ragged) else [int(x["count"]) for x in b]
        d["maxWeightsPerVertex"] = int(max(counts))
    return d


def info_n3cskins(doc: Document, enc: str) -> dict:
    r = doc.root
    if "lods" not in r:  # a single skin / imesh
        return {"name": _s(r["name"], enc), **_skin_info(r)}
    return {"name": _s(r["name"], enc),
            "lods": [{"name": _s(s["name"], enc), **_skin_info(s)} for s in r["lods"]]}


def _joint_tree(j: dict, enc: str, counter: list) -> dict:
    index = counter[0]
    counter[0] += 1
    node = {"index": index, "name": _s(j["name"], enc),
            "keys": [int(k["count"]) for k in j["keys"]]}
    kids = [_joint_tree(c, enc, counter) for c in j["children"]]
    if kids:
        node["children"] = kids
    return node


def info_n3joint(doc: Document, enc: str) -> dict:
    counter = [0]
    tree = _joint_tree(doc.root, enc, counter)
    return {"joints": counter[0], "keysPerJoint": int(doc.params.get("jointKeys", 4)), "tree": tree}


def info_n3anim(doc: Document, enc: str) -> dict:
    clips = []
    for c in doc.root["clips"]:
        clips.append({"name": _s(c["name"], enc), "start": float(c["start"]),
                      "end": float(c["end"]), "fps": float(c["fps"])})
    return {"clips": clips}


def info_n3chr(doc: Document, enc: str) -> dict:
    r = doc.root
    out = {"name": _s(r["transform"]["name"], enc), "joint": _s(r["joint"], enc),
           "parts": [_s(p, enc) for p in r["parts"]], "plugs": [_s(p, enc) for p in r["plugs"]],
           "animation": _s(r["animationControl"], enc),
           "jointPartStarts": [int(x) for x in r["jointPartStarts"]],
           "jointPartEnds": [int(x) for x in r["jointPartEnds"]]}
    if "fxPlug" in r:
        out["fxPlug"] = _s(r["fxPlug"], enc)
    return out


def info_n3cpart(doc: Document, enc: str) -> dict:
    r = doc.root
    return {"name": _s(r["name"], enc), "texture": _s(r["texture"], enc),
            "skins": _s(r["geometry"], enc)}


def info_n3cplug(doc: Document, enc: str) -> dict:
    r = doc.root
    out = {"name": _s(r["name"], enc), "type": int(r["type"]), "joint": int(r["joint"]),
           "mesh": _s(r["geometry"], enc), "texture": _s(r["texture"], enc)}
    if "traceStep" in r:
        out["traceStep"] = int(r["traceStep"])
    if "useVMesh" in r:
        out["useVMesh"] = int(r["useVMesh"])
    if "vmesh" in r:
        m = r["vmesh"]
        out["vmesh"] = {"vertices": int(m["vertexCount"]), "faces": int(m["indexCount"]) // 3}
    return out


def info_n3shape(doc: Document, enc: str) -> dict:
    r = doc.root
    parts = [{"mesh": _s(p["mesh"], enc), "textures": [_s(t, enc) for t in p["textures"]]}
             for p in r["parts"]]
    meta = {k: int(r[k]) for k in ("belong", "eventID", "eventType", "npcID", "npcStatus") if k in r}
    return {"transform": _transform_info(r["transform"], enc), "parts": parts,
            "metadataInts": len(meta), "metadata": meta}


def info_n3sky(doc: Document, enc: str) -> dict:
    r = doc.root
    return {"suns": [_s(x, enc) for x in r["suns"]], "clouds": [_s(x, enc) for x in r["clouds"]],
            "moon": _s(r["moon"], enc), "dayChanges": len(r["dayChanges"])}


def info_n3fxplug(doc: Document, enc: str) -> dict:
    r = doc.root
    return {"name": _s(r["name"], enc),
            "parts": [{"name": _s(p["name"], enc), "bundle": _s(p["bundle"], enc),
                       "joint": int(p["jointIndex"])} for p in r["parts"]]}


FX_TYPES = {0: "empty", 1: "particle", 2: "billboard", 3: "mesh", 4: "bottomBoard"}


def info_fxb(doc: Document, enc: str) -> dict:
    r = doc.root
    out = {"version": int(r["version"])}
    if "slots" in r:
        out["slots"] = [{"type": FX_TYPES.get(s["type"], s["type"]),
                         **({"partVersion": s["version"], "baseVersion": s["baseVersion"]}
                            if s["type"] > 0 else {})} for s in r["slots"]]
    else:
        out["opaqueBody"] = len(r.get("body", b""))
    return out


def info_gtd(doc: Document, enc: str) -> dict:
    r = doc.root
    out = {"header": bool(doc.params.get("gtdHeader")), "mapSize": int(r["mapSize"])}
    if "version" in r:
        out["version"] = int(r["version"])
        out["name"] = _s(r["name"], enc)
    out["zoneName"] = text(bytes(r["zoneName"]).split(b"\0", 1)[0], enc)
    ti = r.get("tileInfo")
    if ti is not None:
        out["tiles"] = int(ti["tileCount"])
        out["tileSources"] = [text(bytes(s).split(b"\0", 1)[0], enc) for s in ti.get("sources", [])]
    for k in ("lightmaps", "rivers", "ponds"):
        if k in r:
            out[k] = len(r[k])
    out["legacyRivers"] = int(doc.params.get("legacyRivers", 0))
    out["legacyPonds"] = int(doc.params.get("legacyPonds", 0))
    return out


def info_opd(doc: Document, enc: str) -> dict:
    r = doc.root
    out = {"header": bool(doc.params.get("opdHeader")), "width": float(r["width"]),
           "length": float(r["height"]), "triangles": int(r["triangleCount"]),
           "cells": len(r["cells"]), "cellsPresent": sum(1 for c in r["cells"] if c["present"] > 0),
           "objects": len(r["objects"])}
    if "version" in r:
        out["version"] = int(r["version"])
        out["name"] = _s(r["name"], enc)
    return out


UI_TYPES = {0: "base", 1: "button", 2: "static", 3: "progress", 4: "image", 5: "scrollbar",
            6: "string", 7: "trackbar", 8: "edit", 9: "area", 10: "tooltip", 13: "iconslot",
            14: "list"}


def _ui_tree(node: dict, typ: int, enc: str, counter: list, depth: int = 0) -> dict:
    counter[0] += 1
    out = {"type": UI_TYPES.get(typ & 0xFFFF, typ), "id": _s(node["id"], enc)}
    if node.get("name"):
        out["name"] = _s(node["name"], enc)
    if typ & 0xFFFF == 6 and "text" in node:
        out["text"] = _s(node["text"], enc)
    kids = [_ui_tree(c["node"], int(c["type"]), enc, counter, depth + 1) for c in node["children"]]
    if kids:
        out["children"] = kids
    return out


def info_uif(doc: Document, enc: str) -> dict:
    counter = [0]
    tree = _ui_tree(doc.root["root"], int(doc.params.get("type", 0)), enc, counter)
    return {"textEncoding": enc, "nodes": counter[0], "tree": tree}




# ----------------------------------------------------------------------------
# tool-side and zone side files


def _plain_transform_info(t: dict, enc: str) -> dict:
    return {"name": _s(t["name"], enc), "position": [float(x) for x in t["position"]],
            "keys": [int(k["count"]) for k in t["keys"]]}


_LIGHT_TYPES = {1: "point", 2: "spot", 3: "directional"}


def _light_info(lt: dict, enc: str) -> dict:
    d = lt["light"]
    return {**_plain_transform_info(lt["transform"], enc),
            "type": _LIGHT_TYPES.get(int(d["type"]), int(d["type"])),
            "number": int(d["number"]), "on": bool(d["on"]),
            "diffuse": [round(float(x), 4) for x in d["diffuse"]]}


def info_n3vmesh(doc: Document, enc: str) -> dict:
    r = doc.root
    n = int(r["indexCount"]) if int(r["indexCount"]) > 0 else max(int(r["vertexCount"]), 0)
    return {"name": _s(r["name"], enc), "vertices": int(r["vertexCount"]),
            "indexed": int(r["indexCount"]) > 0, "triangles": n // 3}


def info_n3light(doc: Document, enc: str) -> dict:
    return _light_info(doc.root, enc)


def info_n3camera(doc: Document, enc: str) -> dict:
    r = doc.root
    c = r["camera"]
    return {**_plain_transform_info(r["transform"], enc),
            "at": [float(x) for x in r["at"]], "fov": float(c["fov"]),
            "near": float(c["nearPlane"]), "far": float(c["farPlane"]),
            "fog": bool(r["fogUse"])}


def info_n3scene(doc: Document, enc: str) -> dict:
    r = doc.root
    return {"frames": [float(r["frameStart"]), float(r["frameEnd"])],
            **{k: [_s(x, enc) for x in r[k]] for k in ("cameras", "lights", "shapes",
                                                         "characters")}}


def info_glo(doc: Document, enc: str) -> dict:
    return {"version": int(doc.root["version"]),
            "lights": [_light_info(lt, enc) for lt in doc.root["lights"]]}


def info_opdext(doc: Document, enc: str) -> dict:
    r = doc.root
    cells = r["cells"]
    return {"version": int(r["version"]), "name": _s(r["name"], enc),
            "size": [float(r["width"]), float(r["height"])],
            "collisionTriangles": int(r["triangleCount"]), "cells": len(cells),
            "cellsUsed": sum(1 for c in cells if c["flags"])}
