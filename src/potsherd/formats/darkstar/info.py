"""Summaries for ``potsherd info``: what a shape or material list contains."""
from __future__ import annotations

from typing import Any

from .geometry import name_text
from .pers import class_payload

MAT_TYPES = {0: "null", 1: "palette", 2: "rgb", 3: "texture"}


def _class(block: dict) -> str:
    return bytes(block["className"]).decode("latin-1")


def material_info(payload: dict) -> list[dict]:
    rows = []
    m = payload["materials"]
    for i in range(len(m)):
        r = m[i]
        d: dict[str, Any] = {"index": i, "map": name_text(bytes(r["fName"])),
                             "type": MAT_TYPES.get(int(r["fFlags"]) & 0xF, int(r["fFlags"]) & 0xF),
                             "flags": f"0x{int(r['fFlags']):X}",
                             "rgb": f"#{int(r['fRed']):02X}{int(r['fGreen']):02X}{int(r['fBlue']):02X}",
                             "alpha": round(float(r["fAlpha"]), 6)}
        if "fType" in m.dtype.names:
            d["surface"] = int(r["fType"])
        rows.append(d)
    return rows


def shape_info(block: dict) -> dict:
    p = block["payload"]
    names = [name_text(bytes(n)) for n in p["names"]["name"]]

    def nm(i: int) -> str:
        return names[i] if 0 <= i < len(names) else f"#{i}"

    nodes = p["nodes"]
    parents = nodes["fParent"].tolist()
    children: dict[int, list[int]] = {}
    for i, par in enumerate(parents):
        children.setdefault(par if 0 <= par < len(parents) and par != i else -1, []).append(i)
    tree: list[str] = []
    seen: set[int] = set()
    stack = [(c, 0) for c in reversed(children.get(-1, []))]
    while stack:
        i, depth = stack.pop()
        if i in seen:
            continue
        seen.add(i)
        tree.append("  " * depth + nm(int(nodes["fName"][i])))
        stack.extend((c, depth + 1) for c in reversed(children.get(i, [])))
    for i in range(len(parents)):  # cycles: list what the walk could not reach
        if i not in seen:
            tree.append(f"{nm(int(nodes['fName'][i]))} (unreachable, parent {parents[i]})")

    meshes = p["meshes"]
    objects = []
    ob = p["objects"]
    for i in range(len(ob)):
        mi = int(ob["fMeshIndex"][i])
        ni = int(ob["fNodeIndex"][i])
        d: dict[str, Any] = {"name": nm(int(ob["fName"][i])),
                             "node": nm(int(nodes["fName"][ni])) if 0 <= ni < len(nodes) else ni,
                             "mesh": mi}
        if 0 <= mi < len(meshes):
            mb = meshes[mi]
            d["mesh_class"] = f"{_class(mb)} v{mb['version']}"
            if isinstance(mb["payload"], dict) and _class(mb) == "TS::CelAnimMesh":
                mp = mb["payload"]
                d.update(verts_per_frame=int(mp["mVertsPerFrame"]), faces=int(mp["numFaces"]),
                         frames=int(mp["numFrames"]))
        objects.append(d)

    seq = p["sequences"]
    sequences = [{"name": nm(int(seq["fName"][i])), "duration": round(float(seq["fDuration"][i]), 6),
                  "cyclic": bool(seq["fCyclic"][i])} for i in range(len(seq))]
    det = p["details"]
    details = [{"root": nm(int(nodes["fName"][r])) if 0 <= r < len(nodes) else int(r),
                "size": round(float(s), 6)}
               for r, s in zip(det["fRootNodeIndex"].tolist(), det["fSize"].tolist())]
    out: dict[str, Any] = {
        "radius": round(float(p["fRadius"]), 6),
        "nodes": len(nodes), "node_tree": tree,
        "sequences": sequences, "objects": objects, "details": details,
        "meshes": len(meshes), "keyframes": len(p["keyframes"]), "transforms": len(p["transforms"]),
    }
    if "transitions" in p:
        out["transitions"] = len(p["transitions"])
    if "frameTriggers" in p:
        out["frame_triggers"] = len(p["frameTriggers"])
    mats = p.get("materials")
    if isinstance(mats, dict):
        out["material_list"] = f"{_class(mats)} v{mats['version']}"
        # a damaged file may nest another class here: summarise only a material list
        listed = class_payload(mats, b"TS::MaterialList")
        if listed is not None:
            out["materials"] = material_info(listed)
    else:
        out["materials"] = []
    return out


def block_info(block: dict) -> dict:
    cls = _class(block)
    out: dict[str, Any] = {"class": cls, "version": block["version"]}
    p = block["payload"]
    if not isinstance(p, dict):
        out["opaque_payload_bytes"] = len(p)
        return out
    if cls == "TS::Shape":
        out.update(shape_info(block))
    elif cls == "TS::MaterialList":
        out["details"] = int(p["fnDetails"])
        out["materials"] = material_info(p)
    elif cls == "TS::CelAnimMesh":
        out.update(verts=len(p["verts"]), faces=len(p["faces"]), frames=len(p["frames"]))
    if block["slack"]:
        out["slack_bytes"] = len(block["slack"])
    return out
