"""Knight Online glTF export fidelity (issue 13, KO part): the X mirror, ``lod``,
unique names, and the error for a character with nothing resolvable."""
from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

import potsherd
from potsherd import FormatError
from potsherd.scene.xform import (mirror_x, mirror_x_matrix, mirror_x_quat, quat_to_matrix,
                                  trs_to_matrix)
from corpus_paths import CORPUS_ROOT
from ko_bytes import f32, i32, s

CORPUS = CORPUS_ROOT / "ko" / "data"


def one_triangle_at(x, y, z) -> bytes:
    """An n3pmesh with one triangle around (x, y, z), front face toward N3 -Z
    (clockwise seen from its normal, the D3D front-face rule)."""
    corners = [(x, y, z), (x, y + 1, z), (x + 1, y, z)]      # clockwise seen from -Z
    vb = b"".join(f32(*p, 0, 0, -1, 0, 0) for p in corners)
    return s(b"tri") + i32(0, 0, 3, 3, 3, 3) + vb + struct.pack("<3H", 0, 1, 2) + i32(0)


def test_mesh_at_plus3_0_plus5_lands_at_minus3_0_plus5_and_winds_ccw():
    doc = potsherd.read(one_triangle_at(3.0, 0.0, 5.0), format="n3pmesh")
    prim = doc.codec.to_scene(doc).meshes[0].primitives[0]
    assert prim.positions[0].tolist() == [-3.0, 0.0, 5.0]
    assert prim.positions.tolist() == [[-3, 0, 5], [-3, 1, 5], [-4, 0, 5]]
    assert prim.normals.tolist() == [[0, 0, -1]] * 3
    tri = prim.positions[prim.indices.reshape(-1, 3)][0].astype(float)
    face = np.cross(tri[1] - tri[0], tri[2] - tri[0])
    assert face.tolist() == [0.0, 0.0, -1.0]                  # CCW around the normal
    assert np.dot(face, prim.normals[0]) > 0
    # negative control: without the winding swap the face would point the other way
    raw = prim.positions[prim.indices.reshape(-1, 3)[:, ::-1]][0].astype(float)
    assert np.dot(np.cross(raw[1] - raw[0], raw[2] - raw[0]), prim.normals[0]) < 0


def test_mirror_x_helpers_agree_with_each_other():
    q = np.array([0.1, 0.2, 0.3, 0.9]) / np.linalg.norm([0.1, 0.2, 0.3, 0.9])
    assert mirror_x([[1, 2, 3]]).tolist() == [[-1, 2, 3]]
    assert mirror_x_quat(q).tolist() == pytest.approx([q[0], -q[1], -q[2], q[3]])
    m = trs_to_matrix([1, 2, 3], q, [1, 1, 1])
    mirrored = mirror_x_matrix(m)
    assert mirrored[:3, 3].tolist() == [-1, 2, 3]
    assert mirrored[:3, :3] == pytest.approx(quat_to_matrix(mirror_x_quat(q)))
    assert mirror_x_matrix(mirrored) == pytest.approx(m)       # its own inverse


def pmesh(name):
    path = CORPUS / name
    if not path.is_file():
        pytest.skip("KO corpus not present")
    return potsherd.read(path)


def test_lod_option_gives_each_lod_records_triangle_count():
    doc = pmesh("Item/1_6901_00_0.n3pmesh")
    assert [int(l["vertexCount"]) for l in doc.root["lods"]] == [95, 68, 36, 0]
    counts = []
    for lod in range(3):
        prim = doc.codec.to_scene(doc, lod=lod).meshes[0].primitives[0]
        counts.append((len(prim.positions), len(prim.indices) // 3))
    assert counts == [(95, 58), (68, 42), (36, 24)]
    assert not doc.codec.to_scene(doc, lod=3).meshes            # LOD 3 holds 0 vertices
    with pytest.raises(FormatError, match=r"lod 4 is out of range: valid LODs are 0\.\.3"):
        doc.codec.to_scene(doc, lod=4)
    big = pmesh("Object/obj_co_xmastree_gift.n3pmesh")
    tris = [len(big.codec.to_scene(big, lod=n).meshes[0].primitives[0].indices) // 3
            for n in range(3)]
    assert tris == [1224, 637, 74]


def test_skin_lod_out_of_range_is_an_error():
    path = CORPUS / "Item" / "mob_kenta_lower.n3cskins"
    if not path.is_file():
        pytest.skip("KO corpus not present")
    doc = potsherd.read(path)
    faces = [len(doc.codec.to_scene(doc, lod=n).meshes[0].primitives[0].indices) // 3
             for n in range(4)]
    assert faces == [int(l["faceCount"]) for l in doc.root["lods"]]
    with pytest.raises(FormatError, match=r"lod 99 is out of range: valid LODs are 0\.\.3"):
        doc.codec.to_scene(doc, lod=99)


def chr_bytes(parts, plugs=()):
    t = s(b"hero") + f32(0, 0, 0) + f32(0, 0, 0, 1) + f32(1, 1, 1) + i32(0, 0, 0) + s(b"") + s(b"")
    return (t + s(b"chr\\nowhere.n3joint") + i32(len(parts)) + b"".join(s(p) for p in parts)
            + i32(len(plugs)) + b"".join(s(p) for p in plugs) + s(b"chr\\nowhere.n3anim")
            + i32(0, 0, 0, 0))


def test_character_with_nothing_resolvable_is_an_error_naming_data_root(tmp_path):
    path = tmp_path / "hero.n3chr"
    path.write_bytes(chr_bytes([b"item\\hero_body.n3cpart"], [b"item\\sword.n3cplug"]))
    doc = potsherd.read(path)
    with pytest.raises(FormatError, match="--data-root") as e:
        doc.codec.to_scene(doc, source_path=str(path))
    assert "hero_body.n3cpart" in str(e.value)


def test_character_missing_parts_exports_what_exists_with_one_warning(tmp_path):
    """mob_harppy.n3chr (issue 38): its part is missing from the client but its
    skeleton exists: the export keeps the skeleton, naming the missing files once."""
    (tmp_path / "chr").mkdir()
    joint = s(b"root") + f32(0, 0, 0) + f32(0, 0, 0, 1) + f32(1, 1, 1) + i32(0, 0, 0, 0) + i32(0)
    (tmp_path / "chr" / "nowhere.n3joint").write_bytes(joint)
    path = tmp_path / "chr" / "hero.n3chr"
    path.write_bytes(chr_bytes([b"item\\hero_body.n3cpart", b"item\\hero_legs.n3cpart"]))
    doc = potsherd.read(path)
    sc = doc.codec.to_scene(doc, source_path=str(path))
    assert [n.name for n in sc.nodes] == ["hero", "root"] and not sc.meshes
    missing = [w for w in sc.warnings if "missing" in w]
    assert len(missing) == 1 and not any(w.endswith("not found") for w in sc.warnings)
    assert "hero_body.n3cpart" in missing[0] and "hero_legs.n3cpart" in missing[0]
    assert "nowhere.n3anim" in missing[0] and "skeleton of 1 joints" in missing[0]
    # negative control: without the skeleton nothing resolves: refused, naming the folders
    (tmp_path / "chr" / "nowhere.n3joint").unlink()
    with pytest.raises(FormatError, match="searched case-insensitively under") as e:
        doc.codec.to_scene(doc, source_path=str(path))
    assert str(tmp_path / "chr") in str(e.value) and "nowhere.n3joint" in str(e.value)


def test_duplicate_joint_and_clip_names_are_made_unique():
    path = CORPUS / "Chr" / "mob_kenta.n3chr"
    if not path.is_file():
        pytest.skip("KO corpus not present")
    doc = potsherd.read(path)
    sc = doc.codec.to_scene(doc, source_path=str(path))
    names = [n.name for n in sc.nodes]
    assert len(names) == len(set(names))
    renamed = [(n.name, n.extras["originalName"]) for n in sc.nodes if "originalName" in n.extras]
    assert renamed == [(f"end_site.{k}", "end_site") for k in range(1, 8)]
    clips = [a.name for a in sc.animations]
    assert len(clips) == len(set(clips)) == 11
    assert [(a.name, a.extras["originalName"]) for a in sc.animations
            if "originalName" in a.extras] == [("run.1", "run")]
    # negative control: the file itself does repeat the names
    raw = [c["name"] for c in potsherd.read(path.with_suffix(".n3anim")).root["clips"]]
    assert len(set(bytes(r) for r in raw)) < len(raw)


def test_export_options_are_declared():
    from potsherd.formats.ko.codecs import CODECS
    codecs = {c.name: c for c in CODECS}
    for fmt, expected in {"n3pmesh": {"lod", "data_root"},
                          "n3chr": {"lod", "data_root", "fx_meshes"},
                          "n3cpart": {"lod", "skeleton", "animation", "data_root"}}.items():
        assert expected <= {o.name for o in codecs[fmt].export_options}
    assert codecs["uif"].export_options == ()                 # no glTF export there
