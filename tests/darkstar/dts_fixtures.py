"""Small Darkstar documents for the tests, and their bytes packed independently.

Each ``*_doc`` function returns a block in the readable JSON form (what a user
writes); each ``*_bytes`` function packs the same content with hand-written
``struct`` calls following the format note (not the package's structures), so
the tests compare the package's encoder against an independent description.
"""
from __future__ import annotations

import struct

P = struct.pack

NAME_TAIL = bytes([0xE4, 0x12, 0x00, 0xE3, 0xD7, 0xB4, 0x01]) + bytes(12)   # 19 bytes
MAP_TAIL = b"AB" + bytes(24)                                                   # 26 bytes
CDCD = -0x32323233


def pers(cls: str, version: int, payload: bytes, *, flag: bool = False) -> bytes:
    name = cls.encode() + (b"\0" if len(cls) % 2 else b"")
    data = P("<h", len(cls)) + name + P("<i", version) + payload
    size = len(data) | (0x80000000 if flag else 0)
    return b"PERS" + P("<I", size) + data + bytes((-len(data)) % (4 if flag else 2))


def block_doc(cls: str, version: int, payload, *, size: int = 0) -> dict:
    """A readable block; size 0 lets the encoder compute the size word."""
    return {"tag": "PERS", "size": size, "className": cls, "namePad": "00" if len(cls) % 2 else "",
            "version": version, "payload": payload, "slack": "", "pad": ""}


def envelope(root: dict, fmt: str = "dts", form: str = "readable", trailing: str = "") -> dict:
    return {"potsherd": 1, "format": fmt, "form": form, "params": {}, "meta": {},
            "trailing": trailing, "root": root}


# ----------------------------------------------------------------------------
# TS::CelAnimMesh v1-v3: 4 verts, 2 per frame, 3 texture verts, 1 face, 2 frames

MESH_SCALE = (0.5, 0.25, 1.0)
MESH_ORIGIN = (-1.0, 0.0, 2.0)


def mesh_doc(v: int, tvpf: int = 3) -> dict:
    p: dict = {"numVerts": 4, "mVertsPerFrame": 2, "numTexVerts": 3, "numFaces": 1, "numFrames": 2}
    if v >= 2:
        p["mTextureVertsPerFrame"] = tvpf
    if v < 3:
        p.update(zip(("scaleX", "scaleY", "scaleZ", "originX", "originY", "originZ"),
                     MESH_SCALE + MESH_ORIGIN))
    p["radius"] = 1.5
    p["verts"] = {"x": [0, 255, 10, 20], "y": [1, 2, 3, 4], "z": [5, 6, 7, 8], "normal": [0, 17, 111, 255]}
    p["textureVerts"] = {"x": [0.0, 1.0, 0.5], "y": [0.25, 0.75, 1.0]}
    p["faces"] = {"vi1": [0], "ti1": [2], "vi2": [1], "ti2": [1], "vi3": [1], "ti3": [0], "material": [1]}
    if v >= 3:
        p["frames"] = {"firstVert": [0, 2], "scaleX": [0.5, 1.0], "scaleY": [0.25, 2.0],
                       "scaleZ": [1.0, 1.0], "originX": [-1.0, 0.0], "originY": [0.0, 1.0],
                       "originZ": [2.0, 0.0]}
    else:
        p["frames"] = {"firstVert": [0, 2]}
    return block_doc("TS::CelAnimMesh", v, p)


def mesh_bytes(v: int, tvpf: int = 3) -> bytes:
    b = P("<5i", 4, 2, 3, 1, 2)
    if v >= 2:
        b += P("<i", tvpf)
    if v < 3:
        b += P("<6f", *MESH_SCALE, *MESH_ORIGIN)
    b += P("<f", 1.5)
    b += bytes([0, 1, 5, 0, 255, 2, 6, 17, 10, 3, 7, 111, 20, 4, 8, 255])
    b += P("<6f", 0.0, 0.25, 1.0, 0.75, 0.5, 1.0)
    b += P("<7i", 0, 2, 1, 1, 1, 0, 1)
    if v >= 3:
        b += P("<i6f", 0, 0.5, 0.25, 1.0, -1.0, 0.0, 2.0) + P("<i6f", 2, 1.0, 2.0, 1.0, 0.0, 1.0, 0.0)
    else:
        b += P("<2i", 0, 2)
    return pers("TS::CelAnimMesh", v, b)


# ----------------------------------------------------------------------------
# TS::MaterialList v2-v4: fnDetails x fnMaterials records


MATERIALS = [
    dict(fFlags=0x103, fAlpha=1.0, fIndex=0, fRed=0, fGreen=0, fBlue=0, fRGBFlags=0,
         fName="WOOD1.bmp", fType=0, fElasticity=1.0, fFriction=1.0, fUseDefaultProps=1),
    dict(fFlags=0x202, fAlpha=0.5, fIndex=7, fRed=255, fGreen=128, fBlue=64, fRGBFlags=1,
         fName={"text": "x.bmp", "tail": MAP_TAIL.hex()}, fType=14, fElasticity=0.5, fFriction=0.25,
         fUseDefaultProps=0),
]
MAT_KEYS = "fFlags fAlpha fIndex fRed fGreen fBlue fRGBFlags fName".split()


def matlist_doc(v: int, details: int = 1, count: int = 2) -> dict:
    rows = [MATERIALS[i % 2] for i in range(details * count)]
    keys = MAT_KEYS + (["fType", "fElasticity", "fFriction"] if v >= 3 else []) + \
        (["fUseDefaultProps"] if v >= 4 else [])
    return block_doc("TS::MaterialList", v, {"fnDetails": details, "fnMaterials": count,
                                             "materials": {k: [r[k] for r in rows] for k in keys}})


def matlist_bytes(v: int, details: int = 1, count: int = 2) -> bytes:
    recs = [
        P("<ifi4B", 0x103, 1.0, 0, 0, 0, 0, 0) + b"WOOD1.bmp".ljust(32, b"\0")
        + (P("<iff", 0, 1.0, 1.0) if v >= 3 else b"") + (P("<I", 1) if v >= 4 else b""),
        P("<ifi4B", 0x202, 0.5, 7, 255, 128, 64, 1) + b"x.bmp\0" + MAP_TAIL
        + (P("<iff", 14, 0.5, 0.25) if v >= 3 else b"") + (P("<I", 0) if v >= 4 else b""),
    ]
    body = b"".join(recs[i % 2] for i in range(details * count))
    return pers("TS::MaterialList", v, P("<2i", details, count) + body)


# ----------------------------------------------------------------------------
# TS::Shape v2-v8: 2 nodes, 1 sequence, 1 sub-sequence, 2 keyframes, 2 transforms,
# 3 names, 1 object, 1 detail, 1 transition, 1 frame trigger (v >= 4)

MESH_FOR = {2: 1, 3: 2, 4: 3, 5: 2, 6: 3, 7: 3, 8: 3}
MATS_FOR = {2: 2, 3: 2, 4: 3, 5: 2, 6: 2, 7: 3, 8: 4}


def _quat(v: int, q16: tuple, qf: tuple) -> tuple:
    return q16 if v >= 7 else qf


def shape_doc(v: int, materials: bool = True) -> dict:
    p: dict = {"nNodes": 2, "nSeqs": 1, "nSubSeqs": 1, "nKeyframes": 2, "nTransforms": 2, "nNames": 3,
               "nObjects": 1, "nDetails": 1, "nMeshes": 1, "nTransitions": 1}
    if v >= 4:
        p["nFrameTriggers"] = 1
    p.update(fRadius=2.5, fCentreX=0.5, fCentreY=-1.0, fCentreZ=0.25)
    if v >= 8:
        p.update(fBoundsMinX=-1.0, fBoundsMinY=-2.0, fBoundsMinZ=-3.0,
                 fBoundsMaxX=1.0, fBoundsMaxY=2.0, fBoundsMaxZ=3.0)
    p["nodes"] = {"fName": [0, 1], "fParent": [-1, 0], "fnSubSequences": [0, 1],
                  "fFirstSubSequence": [0, 0], "fDefaultTransform": [0, 1]}
    seq = {"fName": [2], "fCyclic": [1], "fDuration": [1.5], "fPriority": [0]}
    if v >= 4:
        seq.update(fFirstFrameTrigger=[0], fNumFrameTriggers=[1])
    if v >= 5:
        seq.update(fNumIFLSubSequences=[0], fFirstIFLSubSequence=[0])
    p["sequences"] = seq
    p["subSequences"] = {"fSequenceIndex": [0], "fnKeyframes": [2], "fFirstKeyframe": [0]}
    if v == 2:
        p["keyframes"] = {"fPosition": [0.0, 1.0], "fKeyValue": [0x80000000, 1]}
    else:
        vis = 0x8000 if v >= 8 else 0x80000000
        p["keyframes"] = {"fPosition": [0.0, 1.0], "fKeyValue": [0, 1],
                          "fMatIndex": [vis, (vis >> 2) | 1]}
    q0 = _quat(v, (0, 0, 0, 32767), (0.0, 0.0, 0.0, 1.0))
    q1 = _quat(v, (0, 0, 23170, 23170), (0.0, 0.0, 0.5, 0.75))
    t = {"fRotateX": [q0[0], q1[0]], "fRotateY": [q0[1], q1[1]], "fRotateZ": [q0[2], q1[2]],
         "fRotateW": [q0[3], q1[3]], "fTranslateX": [0.0, 1.0], "fTranslateY": [0.0, 2.0],
         "fTranslateZ": [0.0, 3.0]}
    if v < 8:
        t.update(fScaleX=[1.0, 2.0], fScaleY=[1.0, 2.0], fScaleZ=[1.0, 2.0])
    p["transforms"] = t
    p["names"] = {"name": ["bounds", {"text": "root", "tail": NAME_TAIL.hex()}, "run"]}
    if v >= 8:
        p["objects"] = {"fName": [1], "fFlags": [0], "fMeshIndex": [0], "fNodeIndex": [1],
                        "_pad0": ["1200"], "fObjectOffsetX": [1.0], "fObjectOffsetY": [2.0],
                        "fObjectOffsetZ": [3.0], "fnSubSequences": [0], "fFirstSubSequence": [0]}
    else:
        ob = {"fName": [1], "fFlags": [1], "fMeshIndex": [0], "fNodeIndex": [1], "fDepFlags": [0]}
        for k, val in zip(("fDep0X fDep0Y fDep0Z fDep1X fDep1Y fDep1Z fDep2X fDep2Y fDep2Z "
                           "fObjectOffsetX fObjectOffsetY fObjectOffsetZ").split(),
                          (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 2.0, 3.0)):
            ob[k] = [val]
        ob.update(fnSubSequences=[0], fFirstSubSequence=[0])
        p["objects"] = ob
    p["details"] = {"fRootNodeIndex": [0], "fSize": [64.0]}
    qt = _quat(v, (0, 0, 0, 32767), (0.0, 0.0, 0.0, 1.0))
    tr = {"fStartSequence": [0], "fEndSequence": [0], "fStartPosition": [0.0], "fEndPosition": [1.0],
          "fDuration": [0.25], "fRotateX": [qt[0]], "fRotateY": [qt[1]], "fRotateZ": [qt[2]],
          "fRotateW": [qt[3]], "fTranslateX": [0.5], "fTranslateY": [0.0], "fTranslateZ": [0.0]}
    if v < 8:
        tr.update(fScaleX=[1.0], fScaleY=[1.0], fScaleZ=[1.0])
    p["transitions"] = tr
    if v >= 4:
        p["frameTriggers"] = {"fPosition": [-0.5], "fValue": [2]}
    if v >= 5:
        p["fnDefaultMaterials"] = 1
    if v >= 6:
        p["fAlwaysNode"] = -1
    p["meshes"] = [mesh_doc(MESH_FOR[v])]
    p["hasMaterials"] = 1 if materials else 0
    if materials:
        p["materials"] = matlist_doc(MATS_FOR[v])
    return block_doc("TS::Shape", v, p)


def shape_bytes(v: int, materials: bool = True) -> bytes:
    counts = [2, 1, 1, 2, 2, 3, 1, 1, 1, 1] + ([1] if v >= 4 else [])
    b = P(f"<{len(counts)}i", *counts) + P("<4f", 2.5, 0.5, -1.0, 0.25)
    if v >= 8:
        b += P("<6f", -1.0, -2.0, -3.0, 1.0, 2.0, 3.0)
    nf = "<5h" if v >= 8 else "<5i"
    b += P(nf, 0, -1, 0, 0, 0) + P(nf, 1, 0, 1, 0, 1)
    if v >= 5:
        b += P("<2if5i", 2, 1, 1.5, 0, 0, 1, 0, 0)
    elif v == 4:
        b += P("<2if3i", 2, 1, 1.5, 0, 0, 1)
    else:
        b += P("<2ifi", 2, 1, 1.5, 0)
    b += P("<3h" if v >= 8 else "<3i", 0, 2, 0)
    if v >= 8:
        b += P("<fHH", 0.0, 0, 0x8000) + P("<fHH", 1.0, 1, 0x2001)
    elif v >= 3:
        b += P("<fII", 0.0, 0, 0x80000000) + P("<fII", 1.0, 1, 0x20000001)
    else:
        b += P("<fI", 0.0, 0x80000000) + P("<fI", 1.0, 1)
    if v >= 8:
        b += P("<4h3f", 0, 0, 0, 32767, 0.0, 0.0, 0.0) + P("<4h3f", 0, 0, 23170, 23170, 1.0, 2.0, 3.0)
    elif v == 7:
        b += P("<4h6f", 0, 0, 0, 32767, 0, 0, 0, 1, 1, 1) + P("<4h6f", 0, 0, 23170, 23170, 1, 2, 3, 2, 2, 2)
    else:
        b += P("<10f", 0, 0, 0, 1, 0, 0, 0, 1, 1, 1) + P("<10f", 0, 0, 0.5, 0.75, 1, 2, 3, 2, 2, 2)
    b += b"bounds".ljust(24, b"\0") + b"root\0" + NAME_TAIL + b"run".ljust(24, b"\0")
    if v >= 8:
        b += P("<hhih", 1, 0, 0, 1) + b"\x12\x00" + P("<3fhh", 1.0, 2.0, 3.0, 0, 0)
    else:
        b += P("<hhii", 1, 1, 0, 1) + P("<i9f3f", 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 2, 3) + P("<ii", 0, 0)
    b += P("<if", 0, 64.0)
    b += P("<2i3f", 0, 0, 0.0, 1.0, 0.25)
    if v >= 8:
        b += P("<4h3f", 0, 0, 0, 32767, 0.5, 0, 0)
    elif v == 7:
        b += P("<4h6f", 0, 0, 0, 32767, 0.5, 0, 0, 1, 1, 1)
    else:
        b += P("<10f", 0, 0, 0, 1, 0.5, 0, 0, 1, 1, 1)
    if v >= 4:
        b += P("<fi", -0.5, 2)
    if v >= 5:
        b += P("<i", 1)
    if v >= 6:
        b += P("<i", -1)
    b += mesh_bytes(MESH_FOR[v])
    b += P("<i", 1 if materials else 0)
    if materials:
        b += matlist_bytes(MATS_FOR[v])
    return pers("TS::Shape", v, b)
