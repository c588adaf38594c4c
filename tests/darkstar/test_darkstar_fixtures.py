"""Every class/version the package knows, from documents written in the tests:
the encoder's bytes are compared with bytes packed independently
(``dts_fixtures``), then decoded back to the same document."""
from __future__ import annotations

import copy
import json
import struct

import numpy as np
import pytest

import potsherd
from potsherd.formats.darkstar import geometry
from potsherd.formats.darkstar.structs import structures

from dts_fixtures import (CDCD, MESH_FOR, NAME_TAIL, envelope, matlist_bytes,
                          matlist_doc, mesh_bytes, mesh_doc, pers, shape_bytes, shape_doc)

SHAPE_VERSIONS = [2, 3, 4, 5, 6, 7, 8]


def _encode(root: dict, fmt: str = "dts") -> bytes:
    return potsherd.write(potsherd.from_json(envelope(root, fmt)))


def _with_sizes(doc_root: dict, decoded_json_root: dict) -> dict:
    """The test document with the size words the encoder computed filled in."""
    out = copy.deepcopy(doc_root)

    def walk(a: dict, b: dict) -> None:
        a["size"] = b["size"]
        if isinstance(a["payload"], dict):
            for ma, mb in zip(a["payload"].get("meshes", []), b["payload"].get("meshes", [])):
                walk(ma, mb)
            if isinstance(a["payload"].get("materials"), dict) and "className" in a["payload"]["materials"]:
                walk(a["payload"]["materials"], b["payload"]["materials"])
    walk(out, decoded_json_root)
    return out


def _check(doc_root: dict, expected: bytes, fmt: str = "dts") -> potsherd.Document:
    data = _encode(doc_root, fmt)
    assert data == expected
    doc = potsherd.read(data, format=fmt)
    assert doc.trailing == b"" and doc.warnings == []
    assert potsherd.write(doc) == expected
    back = doc.to_json("readable")["root"]
    assert back == _with_sizes(doc_root, back)
    wire = json.loads(json.dumps(doc.to_json("wire")))
    assert potsherd.write(potsherd.from_json(wire)) == expected
    return doc


@pytest.mark.parametrize("v", SHAPE_VERSIONS)
def test_shape_versions(v: int):
    doc = _check(shape_doc(v), shape_bytes(v))
    p = doc.root["payload"]
    assert doc.root["className"] == b"TS::Shape" and doc.root["version"] == v
    assert doc.root["namePad"] == b"\0"
    assert doc.root["size"] == len(shape_bytes(v)) - 8
    assert p["nodes"]["fParent"].tolist() == [-1, 0]
    assert bytes(p["names"]["name"][1]) == b"root\0" + NAME_TAIL
    assert p["meshes"][0]["version"] == MESH_FOR[v]
    assert p["hasMaterials"] == 1 and p["materials"]["className"] == b"TS::MaterialList"
    assert ("frameTriggers" in p) == (v >= 4)
    assert ("fnDefaultMaterials" in p) == (v >= 5)
    assert ("fAlwaysNode" in p) == (v >= 6)
    assert ("fBoundsMaxZ" in p) == (v >= 8)
    assert p["sequences"].dtype.itemsize == {2: 16, 3: 16, 4: 24}.get(v, 32)
    assert p["objects"].dtype.itemsize == (28 if v >= 8 else 72)
    assert p["transitions"].dtype.itemsize == {8: 40, 7: 52}.get(v, 60)
    assert p["transforms"].dtype.itemsize == {8: 20, 7: 32}.get(v, 40)
    assert p["keyframes"].dtype.itemsize == {8: 8, 2: 8}.get(v, 12)


def test_shape_v8_object_pad_and_transition():
    p = potsherd.read(shape_bytes(8), format="dts").root["payload"]
    assert bytes(p["objects"]["_pad0"][0]) == b"\x12\x00"
    assert p["objects"]["fObjectOffsetZ"][0] == 3.0
    assert list(p["transitions"].dtype.names) == [
        "fStartSequence", "fEndSequence", "fStartPosition", "fEndPosition", "fDuration",
        "fRotateX", "fRotateY", "fRotateZ", "fRotateW", "fTranslateX", "fTranslateY", "fTranslateZ"]
    assert p["transitions"]["fTranslateX"][0] == 0.5
    assert p["keyframes"]["fMatIndex"].tolist() == [0x8000, 0x2001]


def test_shape_without_materials():
    data = shape_bytes(8, materials=False)
    doc = _check(shape_doc(8, materials=False), data)
    assert data[-4:] == b"\0\0\0\0"
    assert "materials" not in doc.root["payload"]
    assert doc.info()["materials"] == []


@pytest.mark.parametrize("v", [1, 2, 3])
def test_mesh_versions(v: int):
    doc = _check(mesh_doc(v), mesh_bytes(v))
    m = doc.root
    assert m["className"] == b"TS::CelAnimMesh"
    pos = geometry.frame_positions(m)
    if v >= 3:
        expected = [[[-1.0, 0.25, 7.0], [126.5, 0.5, 8.0]], [[10.0, 7.0, 7.0], [20.0, 9.0, 8.0]]]
    else:  # one scale/origin in the header for every frame
        expected = [[[-1.0, 0.25, 7.0], [126.5, 0.5, 8.0]], [[4.0, 0.75, 9.0], [9.0, 1.0, 10.0]]]
    assert pos.dtype == np.float32
    assert pos.tolist() == expected
    nrm = geometry.frame_normals(m)
    assert nrm.shape == (2, 2, 3)
    assert nrm[0, 0].tolist() == geometry.NORMALS[0].tolist()
    assert nrm[1, 0].tolist() == nrm[0, 1].tolist()  # 111 duplicates 17
    fi = geometry.face_indices(m)
    assert fi["local"].tolist() == [[0, 1, 1]]
    assert fi["vertex"].tolist() == [[[0, 1, 1]], [[2, 3, 3]]]
    assert fi["texture"].tolist() == [[2, 1, 0]]
    assert fi["material"].tolist() == [1]
    assert geometry.texture_verts_per_frame(m) == 3
    assert geometry.texture_coords(m).tolist() == [[0.0, 0.25], [1.0, 0.75], [0.5, 1.0]]


def test_mesh_unset_texture_verts_per_frame():
    doc = _check(mesh_doc(3, tvpf=CDCD), mesh_bytes(3, tvpf=CDCD))
    assert doc.root["payload"]["mTextureVertsPerFrame"] == CDCD
    assert geometry.texture_verts_per_frame(doc.root) is None
    with pytest.raises(potsherd.FormatError, match="unset"):
        geometry.face_indices(doc.root, mat_frame=1)


def test_mesh_material_frame_offsets_texture_indices():
    d = mesh_doc(3, tvpf=1)
    d["payload"]["faces"].update(ti1=[1], ti2=[0], ti3=[0])
    m = potsherd.read(_encode(d), format="dts").root
    assert geometry.face_indices(m)["texture"].tolist() == [[1, 0, 0]]
    assert geometry.face_indices(m, mat_frame=1)["texture"].tolist() == [[2, 1, 1]]
    with pytest.raises(potsherd.FormatError, match="texture vertex outside") as ei:
        geometry.face_indices(m, mat_frame=2)   # 1 + 2 >= 3 texture verts
    assert ei.value.path == "faces[0]"


def test_mesh_frames_may_share_vertex_blocks():
    d = mesh_doc(3)
    d["payload"]["frames"]["firstVert"] = [2, 2]
    m = potsherd.read(_encode(d), format="dts").root
    assert geometry.frame_vertex_index(m).tolist() == [[2, 3], [2, 3]]
    d["payload"]["frames"]["firstVert"] = [0, 3]
    m = potsherd.read(_encode(d), format="dts").root
    with pytest.raises(potsherd.FormatError) as ei:
        geometry.frame_positions(m)
    assert ei.value.path == "frames[1].firstVert"


@pytest.mark.parametrize("v", [2, 3, 4])
def test_material_list_versions(v: int):
    doc = _check(matlist_doc(v), matlist_bytes(v), fmt="dml")
    m = doc.root["payload"]["materials"]
    assert m.dtype.itemsize == {2: 48, 3: 60, 4: 64}[v]
    assert bytes(m["fName"][1]) == b"x.bmp\0" + b"AB" + bytes(24)
    info = doc.info()
    assert info["class"] == "TS::MaterialList" and info["version"] == v
    assert [(x["map"], x["type"], x["rgb"]) for x in info["materials"]] == [
        ("WOOD1.bmp", "texture", "#000000"), ("x.bmp", "rgb", "#FF8040")]


def test_material_list_counts_details_times_materials():
    _check(matlist_doc(4, details=2, count=1), matlist_bytes(4, details=2, count=1), fmt="dml")
    _check(matlist_doc(3, details=2, count=3), matlist_bytes(3, details=2, count=3), fmt="dml")


def test_readable_name_forms():
    j = potsherd.read(shape_bytes(7), format="dts").to_json("readable")
    assert j["root"]["payload"]["names"]["name"] == [
        "bounds", {"text": "root", "tail": NAME_TAIL.hex()}, "run"]
    w = potsherd.read(shape_bytes(7), format="dts").to_json("wire")
    assert w["root"]["payload"]["names"]["name"][0] == (b"bounds" + bytes(18)).hex()
    assert w["root"]["payload"]["fRadius"] == struct.unpack("<I", struct.pack("<f", 2.5))[0]


def test_info_shape():
    info = potsherd.read(shape_bytes(8), format="dts").info()
    assert info["class"] == "TS::Shape" and info["version"] == 8
    assert info["node_tree"] == ["bounds", "  root"]
    assert info["sequences"] == [{"name": "run", "duration": 1.5, "cyclic": True}]
    assert info["objects"] == [{"name": "root", "node": "root", "mesh": 0,
                                "mesh_class": "TS::CelAnimMesh v3", "verts_per_frame": 2,
                                "faces": 1, "frames": 2}]
    assert info["details"] == [{"root": "bounds", "size": 64.0}]
    assert info["material_list"] == "TS::MaterialList v4"
    assert [m["map"] for m in info["materials"]] == ["WOOD1.bmp", "x.bmp"]


def test_transforms_helper():
    for v in (6, 7, 8):
        p = potsherd.read(shape_bytes(v), format="dts").root["payload"]
        t = geometry.transforms(p, v)
        if v >= 7:
            assert t["rotation"][1].tolist() == pytest.approx([0, 0, 23170 / 32767, 23170 / 32767])
        else:
            assert t["rotation"][1].tolist() == [0.0, 0.0, 0.5, 0.75]
        assert t["translation"][1].tolist() == [1.0, 2.0, 3.0]
        assert t["scale"][1].tolist() == ([1.0, 1.0, 1.0] if v == 8 else [2.0, 2.0, 2.0])


def test_normal_table():
    n = geometry.NORMALS
    assert n.shape == (256, 3) and n.dtype == np.float32
    assert n[0].tolist() == np.float32([0.565061, -0.270644, -0.779396]).tolist()
    assert n[255].tolist() == np.float32([0.194979, -0.059120, 0.979024]).tolist()
    for a, b in [(17, 111), (22, 97), (36, 142), (51, 219), (64, 205), (132, 153)]:
        assert n[a].tolist() == n[b].tolist()
    assert len({tuple(r) for r in n.tolist()}) == 250
    assert geometry.normal_vectors([[0, 255]]).shape == (1, 2, 3)


def test_structures_record_corrections():
    s = structures()
    obj8 = s["structures"]["TS::Shape"]["versions"]["8"]["members"]["Object"]
    assert obj8["format"] == "<hhih2x3fhh" and "note 1.2" in obj8["correction"]
    assert struct.calcsize(obj8["format"]) == 28
    assert "fScaleX" not in s["structures"]["TS::Shape"]["versions"]["8"]["members"]["Transition"]["keys"]
    assert s["structures"]["TS::Shape"]["versions"]["2"]["members"]["Header"]["format"] == "<10l"
    assert len(s["corrections"]) >= 10
    # every member's keys match its format
    for cls, cdef in s["structures"].items():
        for ver, vdef in (cdef.get("versions") or {}).items():
            for name, m in vdef["members"].items():
                fmt = m["format"]
                n_values = len(struct.unpack(fmt, bytes(struct.calcsize(fmt))))
                assert n_values == len(m["keys"].split()), (cls, ver, name)


def test_frames_times_vertices_is_bounded():
    """Frames may reuse one vertex block, so frames x vertices-per-frame is not
    bounded by the file size: decoding positions refuses absurd products."""
    vpf = 1 << 12
    n_frames = (geometry.MAX_FRAME_VERTICES // vpf) + 1
    payload = (struct.pack("<6if", vpf, vpf, 0, 0, n_frames, 0, 1.0) + bytes(4 * vpf)
               + struct.pack("<i6f", 0, 1, 1, 1, 0, 0, 0) * n_frames)
    from dts_fixtures import pers
    m = potsherd.read(pers("TS::CelAnimMesh", 3, payload), format="dts").root
    with pytest.raises(potsherd.LimitError) as ei:
        geometry.frame_positions(m)
    assert ei.value.path == "frames"


@pytest.mark.parametrize("v", [1, 2])
def test_old_mesh_without_frames_has_the_engine_implied_frame(v: int):
    d = mesh_doc(v)
    d["payload"]["frames"]["firstVert"] = []
    m = potsherd.read(_encode(d), format="dts").root
    assert m["payload"]["numFrames"] == 0
    assert geometry.first_verts(m).tolist() == [0]
    assert geometry.frame_positions(m).tolist() == [[[-1.0, 0.25, 7.0], [126.5, 0.5, 8.0]]]
    assert geometry.face_indices(m)["vertex"].tolist() == [[[0, 1, 1]]]
    d3 = mesh_doc(3)
    d3["payload"]["frames"] = {k: [] for k in d3["payload"]["frames"]}
    m3 = potsherd.read(_encode(d3), format="dts").root
    assert geometry.frame_positions(m3).shape == (0, 2, 3)    # v3 has no implied frame
