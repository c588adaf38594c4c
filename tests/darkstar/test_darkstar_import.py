"""glTF scene -> Darkstar shape / material list (``from_scene``), tested as the
inverse of the export: exact bytes with ``like``, geometry and animation within
the quantisation step without it, the engine's Quat16 and normal-table packing,
and scenes shaped like Blender's (skinned with 4 weights, non-indexed, several
primitives, scaled armature, LINEAR and STEP keys)."""
from __future__ import annotations

import copy
import math
from pathlib import Path

import numpy as np
import pytest

import potsherd
from potsherd.core.errors import FormatError
from potsherd.export import render as rd
from potsherd.export.gltf import write_glb
from potsherd.formats.darkstar import DML, DTS
from potsherd.formats.darkstar.geometry import NORMALS, name_text
from potsherd.formats.darkstar.importing import nearest_normals, quantise
from potsherd.formats.darkstar.scene import to_scene
from potsherd.scene import (Animation, Channel, Image, Material, Mesh, Primitive, Scene, Skin,
                            TextureRef, trs_to_matrix)
from potsherd.scene.ops import triangle_sets

from dts_fixtures import NAME_TAIL, envelope, shape_doc
from corpus_paths import CORPUS_ROOT

CORPUS = CORPUS_ROOT / "dts"
H = math.sqrt(0.5)
needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason="shared Darkstar corpus not present")


def _doc(root: dict) -> potsherd.Document:
    return potsherd.read(potsherd.write(potsherd.from_json(envelope(root))), format="dts")


def _bytes(doc: potsherd.Document) -> bytes:
    return doc.codec.encode(doc)


def _reencodes(doc: potsherd.Document) -> potsherd.Document:
    """The written file decodes and encodes back to the same bytes."""
    data = _bytes(doc)
    back = potsherd.read(data, format=doc.format)
    assert _bytes(back) == data
    return back


def _as_stored(scene: Scene) -> Scene:
    """The scene with what a .glb stores: float32 transforms and arrays."""
    s = copy.deepcopy(scene)
    for n in s.nodes:
        for k in ("translation", "rotation", "scale"):
            v = getattr(n, k)
            if v is not None:
                setattr(n, k, np.asarray(v, np.float32).astype(np.float64).tolist())
    for sk in s.skins:
        if sk.inverse_bind_matrices is not None:
            sk.inverse_bind_matrices = np.asarray(sk.inverse_bind_matrices, np.float32)
    for a in s.animations:
        for c in a.channels:
            c.times = np.asarray(c.times, np.float32)
            c.values = np.asarray(c.values, np.float32)
    return s


# ---- packing ------------------------------------------------------------------------


@needs_corpus
def test_stock_quat16_are_truncated_which_the_packing_follows():
    """The measured basis of the packing rule: stock Quat16 norms fall short of 32767
    by the mean that truncation predicts (rounding would predict about 0)."""
    rows = []
    for path in _shapes():
        doc = potsherd.read(path)
        if doc.root["version"] >= 7:
            t = doc.root["payload"]["transforms"]
            rows.append(np.stack([t[k] for k in ("fRotateX", "fRotateY", "fRotateZ", "fRotateW")], 1))
    q = np.concatenate(rows).astype(np.float64)
    q = q[q[:, 3] != 32767]
    norm = np.linalg.norm(q, axis=1)
    deficit = float((norm - 32767).mean())
    predicted = float((-0.5 * np.abs(q).sum(axis=1) / norm).mean())
    assert len(q) > 20000 and deficit < -0.5
    assert abs(deficit - predicted) < 0.05


def test_nearest_normal_is_the_table_entry_lowest_index_on_ties():
    idx = nearest_normals(NORMALS.astype(np.float64))
    # every table vector maps to itself, except the second of each duplicated pair
    dup = {111: 17, 97: 22, 142: 36, 219: 51, 205: 64, 153: 132}
    expect = [dup.get(i, i) for i in range(256)]
    assert idx.tolist() == expect
    # a vector between entries goes to the nearest one (checked by brute force)
    v = np.array([[0.3, -0.2, 0.9], [0.0, 0.0, 0.0001], [-1.0, 0.5, 0.0]])
    brute = [int(np.argmin(((NORMALS - x / np.linalg.norm(x)) ** 2).sum(axis=1))) for x in v]
    assert nearest_normals(v).tolist() == brute


def test_quantise_rounds_within_half_a_step():
    frames = np.array([[[0.0, 1.0, 5.0], [2.55, 1.0, 5.0], [1.0, 1.0, 5.0]]])
    q, scale, origin = quantise(frames)
    assert origin.tolist() == [[0.0, 1.0, 5.0]]
    assert scale[0, 0] == np.float32(2.55) / np.float32(255) and scale[0, 1] == 0.0
    assert q[0, :, 0].tolist() == [0, 255, 100] and not q[0, :, 1:].any()
    back = q * scale[:, None] + origin[:, None]
    assert np.abs(back - frames).max() <= scale.max() / 2 + 1e-7


def test_rotation_packs_to_the_conjugate_quat16():
    s = to_scene(_doc(shape_doc(8)), skin=False)
    out = DTS.from_scene(s)
    t = out.root["payload"]["transforms"]
    nodes = out.root["payload"]["nodes"]
    names = [name_text(bytes(n)) for n in out.root["payload"]["names"]["name"]]
    root = [names[int(n["fName"])] for n in nodes].index("root")
    row = t[int(nodes["fDefaultTransform"][root])]
    # the fixture stores (0, 0, 23170, 23170); export gave glTF (0, 0, -H, H); packed like
    # the engine, trunc(H * 32767) = trunc(23169.77) = 23169 (rounding would say 23170)
    assert (int(row["fRotateX"]), int(row["fRotateY"]), int(row["fRotateZ"]), int(row["fRotateW"])) \
        == (0, 0, 23169, 23169)
    assert (float(row["fTranslateX"]), float(row["fTranslateY"]), float(row["fTranslateZ"])) == (1.0, 2.0, 3.0)


# ---- with --like: the original bytes ----------------------------------------------------


def test_like_gives_back_the_fixture_bytes_for_every_version_and_form():
    for v in (2, 5, 6, 7, 8):
        doc = _doc(shape_doc(v))
        original = _bytes(doc)
        for skin in (None, False, True):
            s = _as_stored(to_scene(doc, skin=skin))
            assert _bytes(DTS.from_scene(s, like=doc)) == original, (v, skin)


def test_like_with_an_edit_rebuilds_and_keeps_what_gltf_cannot_hold():
    root = shape_doc(8)
    doc = _doc(root)
    s = to_scene(doc, skin=False)
    holder = next(n for n in s.nodes if n.mesh is not None)
    prim = s.meshes[holder.mesh].primitives[0]
    prim.positions = prim.positions + np.float32(0.5)          # the user moved the mesh
    out = _reencodes(DTS.from_scene(s, like=doc))
    assert _bytes(out) != _bytes(doc)
    assert any("differs from the original" in w for w in s.warnings)
    p = out.root["payload"]
    slots = [bytes(x) for x in p["names"]["name"]]
    assert b"root\0" + NAME_TAIL in slots                      # the name slot's garbage kept
    obj = next(r for r in p["objects"] if int(r["fNodeIndex"]) != 0)
    assert bytes(obj["_pad0"]) == b"\x12\x00"                  # and the object's pad bytes
    # the edit is there: the object's first vertex moved by 0.5 on each axis
    mesh = next(m for m in p["meshes"] if m["payload"]["numFaces"])
    ref = next(m for m in doc.root["payload"]["meshes"] if m["payload"]["numFaces"])
    from potsherd.formats.darkstar.geometry import frame_positions
    moved = frame_positions(mesh)[0]
    orig = frame_positions(ref)[0]
    step = float(mesh["payload"]["frames"]["scaleX"].max())
    assert np.abs(np.sort(moved, axis=0) - np.sort(orig + 0.5, axis=0)).max() <= step
    # negative control: without the edit nothing was rebuilt
    assert _bytes(DTS.from_scene(to_scene(doc, skin=False), like=doc)) == _bytes(doc)


def _shapes():
    return [p for p in sorted(CORPUS.rglob("*")) if p.suffix.lower() == ".dts" and "non_pers" not in p.parts]


@needs_corpus
def test_corpus_like_reproduces_every_original():
    count = 0
    for path in _shapes():
        doc = potsherd.read(path)
        original = path.read_bytes()
        for skin in (None, False):
            s = _as_stored(to_scene(doc, skin=skin))
            assert _bytes(DTS.from_scene(s, like=doc)) == original, (path, skin)
        count += 1
    assert count == 28


# ---- without --like: a new shape ------------------------------------------------------------


def _triangles(scene: Scene, path: Path, anim: int | None, t: float) -> np.ndarray:
    write_glb(scene, path)
    g = rd.Gltf(str(path))
    tris = rd.scene_triangles(g, anim, t)
    return np.concatenate([x["pos"].reshape(-1, 9) for x in tris]) if tris else np.zeros((0, 9))


def _set_distance(a: np.ndarray, b: np.ndarray) -> float:
    """Largest distance from a triangle of either set to the nearest of the other."""
    d = np.sqrt(((a[:, None, :] - b[None, :, :]) ** 2).sum(-1))
    return float(max(d.min(axis=1).max(), d.min(axis=0).max()))


@needs_corpus
def test_corpus_round_trip_without_like(tmp_path):
    """dts -> glTF scene -> new dts -> glTF scene: same triangles, nodes, sequences
    and durations; corners within the new file's quantisation step."""
    for path in _shapes():
        doc = potsherd.read(path)
        s1 = to_scene(doc)
        new = _reencodes(DTS.from_scene(_as_stored(to_scene(doc))))
        assert new.root["version"] == 8 and new.root["payload"]["hasMaterials"] == 1
        s2 = to_scene(new)
        assert len(s2.nodes) == len(s1.nodes), path
        assert [a.name for a in s2.animations] == [a.name for a in s1.animations], path
        np.testing.assert_allclose([a.duration for a in s2.animations],
                                   [a.duration for a in s1.animations], atol=1e-6)
        scales = np.concatenate([np.stack([m["payload"]["frames"][k] for k in ("scaleX", "scaleY", "scaleZ")], 1)
                                 for m in new.root["payload"]["meshes"]])
        step = float(np.linalg.norm(scales, axis=1).max()) * 3   # a triangle's 3 corners, 9 values
        times = [(None, 0.0)] + [(i, a.duration * 0.37) for i, a in enumerate(s1.animations[:2])]
        for anim, t in times:
            a = _triangles(s1, tmp_path / "a.glb", anim, t)
            b = _triangles(s2, tmp_path / "b.glb", anim, t)
            assert a.shape == b.shape, (path, anim)
            assert _set_distance(a, b) <= step, (path, anim, t)


def test_version_option_and_refusals():
    s = to_scene(_doc(shape_doc(8)), skin=False)
    assert DTS.from_scene(s).root["version"] == 8
    v7 = _reencodes(DTS.from_scene(s, version="7"))
    assert v7.root["version"] == 7 and v7.root["payload"]["materials"]["version"] == 3
    with_like = DTS.from_scene(to_scene(_doc(shape_doc(7)), skin=False), like=_doc(shape_doc(7)))
    assert with_like.root["version"] == 7
    with pytest.raises(FormatError, match="v7 .* or v8"):
        DTS.from_scene(s, version=6)
    with pytest.raises(FormatError, match="no triangle geometry"):
        DTS.from_scene(Scene(name="empty"))
    assert [o.name for o in DTS.import_options] == ["version", "details", "palette", "dither"]


# ---- a Blender-shaped scene ------------------------------------------------------------


def _blender_like(blended: bool = True) -> Scene:
    """An armature object scaled 2x (as Blender writes it), two joints, one skinned
    mesh of two primitives, non-indexed, 4 weights per vertex, LINEAR and STEP keys."""
    s = Scene(name="blend")
    red = s.add_material(Material(name="red", base_color=(1.0, 0.0, 0.0, 1.0)))
    from PIL import Image as PILImage
    img = s.add_image(Image.from_pil(PILImage.new("RGB", (2, 2), (200, 150, 100)), name="skin"))
    tex = s.add_material(Material(name="Material.001", alpha_mode="MASK",
                                  base_color_texture=TextureRef(image=img)))
    arm = s.add_node(name="Armature", scale=[2.0, 2.0, 2.0])
    hip = s.add_node(name="hip", parent=arm, translation=[0.0, 1.0, 0.0])
    leg = s.add_node(name="leg", parent=hip, translation=[0.0, -0.5, 0.0])
    worlds = {1: trs_to_matrix([0, 2, 0], None, [2, 2, 2]), 2: trs_to_matrix([0, 1, 0], None, [2, 2, 2])}
    prims = []
    for k, (joint, mat) in enumerate(((0, red), (1, tex))):
        base = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0], [0, 1, 0], [1, 0, 0]], np.float32)
        pos = (base * 0.5 + [0, 2.0 - k, 0.25]).astype(np.float32)          # world, at rest
        joints = np.tile([joint, 1 - joint, 0, 0], (6, 1)).astype(np.uint16)
        weights = np.tile([0.7, 0.3, 0.0, 0.0] if blended else [1.0, 0.0, 0.0, 0.0], (6, 1)).astype(np.float32)
        prims.append(Primitive(positions=pos, normals=np.tile([0, 0, 1.0], (6, 1)).astype(np.float32),
                               uvs=[base[:, :2].copy()], joints=joints, weights=weights, material=mat))
    mesh = s.add_mesh(Mesh(name="Body", primitives=prims))
    ibm = np.stack([np.linalg.inv(worlds[1]), np.linalg.inv(worlds[2])])
    skin = s.add_skin(Skin(joints=[hip, leg], inverse_bind_matrices=ibm))
    s.add_node(name="Body", mesh=mesh, skin=skin)
    turn = np.array([[0, 0, 0, 1], [0, 0, math.sin(0.5), math.cos(0.5)]], np.float32)
    s.add_animation(Animation(name="walk", channels=[
        Channel(leg, "rotation", np.array([0.0, 1.0]), turn),
        Channel(hip, "translation", np.array([0.0, 0.5, 1.0]),
                np.array([[0, 1, 0], [0, 1.5, 0], [0, 1, 0]], np.float32), "STEP")]))
    return s


def test_blender_shaped_scene_imports_with_its_pose_and_keys(tmp_path):
    s = _blender_like()
    made = DTS.from_scene(copy.deepcopy(s))
    new = _reencodes(made)
    p = new.root["payload"]
    names = [name_text(bytes(n)) for n in p["names"]["name"]]
    assert [names[int(n["fName"])] for n in p["nodes"]] == ["bounds", "Armature", "hip", "leg"]
    assert [names[int(o["fName"])] for o in p["objects"]] == ["bounds", "hip", "leg"]
    assert p["objects"]["fNodeIndex"].tolist() == [0, 2, 3]
    assert [names[int(q["fName"])] for q in p["sequences"]] == ["walk"]
    mats = p["materials"]["payload"]["materials"]
    assert (mats["fFlags"] & 0xFFFF).tolist() == [0x402, 0x1403]
    assert [name_text(bytes(x)) for x in mats["fName"]] == ["", "skin.bmp"]
    warned = [w for w in made.warnings if "blended skin weights" in w]
    assert len(warned) == 1
    back = to_scene(new, skin=False)
    # the rest pose is the same picture (the weights do not matter at rest)
    assert _set_distance(_triangles(s, tmp_path / "a.glb", None, 0.0),
                         _triangles(back, tmp_path / "b.glb", None, 0.0)) < 1e-5


def test_rigidly_weighted_blender_scene_keeps_its_animation(tmp_path):
    s = _blender_like(blended=False)
    made = DTS.from_scene(copy.deepcopy(s))
    assert made.warnings == []
    new = _reencodes(made)
    back = to_scene(new, skin=False)
    # same picture through the clip (STEP translation held, rotation slerped)
    for t in (0.0, 0.25, 0.49, 0.75):
        a = _triangles(s, tmp_path / "a.glb", 0, t)
        b = _triangles(back, tmp_path / "b.glb", 0, t)
        assert a.shape == b.shape == (4, 9)
        assert _set_distance(a, b) < 1e-3, t
    # control: the pose at 0.75 differs from rest, so the comparison can fail
    assert _set_distance(_triangles(s, tmp_path / "a.glb", 0, 0.75),
                         _triangles(s, tmp_path / "a.glb", 0, 0.0)) > 0.2


# ---- material lists ---------------------------------------------------------------------


def test_material_list_from_scene_and_like():
    doc = _doc(shape_doc(8))
    s = to_scene(doc, skin=False)
    embedded = doc.root["payload"]["materials"]
    like = potsherd.Document("dml", embedded, {}, b"", [])
    out = DML.from_scene(s, like=like)
    assert _bytes(out) == _bytes(like)                       # unchanged: the original list
    fresh = _reencodes(DML.from_scene(to_scene(doc, skin=False)))
    rows, old = fresh.root["payload"]["materials"], embedded["payload"]["materials"]
    assert fresh.root["version"] == 4
    assert rows["fFlags"].tolist() == old["fFlags"].tolist()
    assert [name_text(bytes(x)) for x in rows["fName"]] == [name_text(bytes(x)) for x in old["fName"]]
    s.materials[1].base_color = (0.0, 1.0, 0.0, 1.0)          # an edit: the list is rebuilt
    edited = DML.from_scene(s, like=like)
    assert edited.root["payload"]["materials"]["fGreen"][1] == 255
    with pytest.raises(FormatError, match="no materials"):
        DML.from_scene(Scene())


# ---- hostile scenes ---------------------------------------------------------------------


def _nan_position(s):
    s.meshes[0].primitives[0].positions[2, 1] = np.nan


def _nan_rotation(s):
    s.nodes[1].rotation = [np.nan, 0.0, 0.0, 1.0]


def _zero_scale(s):
    s.nodes[0].scale = [0.0, 0.0, 0.0]


def _bad_joint(s):
    s.meshes[0].primitives[1].joints[:, 0] = 7


def _bad_indices(s):
    s.meshes[0].primitives[0].indices = np.array([0, 1, 99], np.uint32)


def _lines(s):
    for p in s.meshes[0].primitives:
        p.mode = 1


def _inf_key(s):
    s.animations[0].channels[1].values = np.full((3, 3), np.inf, np.float32)


def _no_ibm(s):
    s.skins[0].inverse_bind_matrices = None


def _cycle(s):
    s.nodes[2].children.append(1)


@pytest.mark.parametrize("mutate", [_nan_position, _nan_rotation, _zero_scale, _bad_joint, _bad_indices,
                                    _lines, _inf_key, _no_ibm, _cycle])
def test_hostile_scene_gives_a_format_error_or_a_valid_shape(mutate):
    s = _blender_like(blended=False)
    mutate(s)
    try:
        doc = DTS.from_scene(s)
    except FormatError as e:
        assert str(e)
        return
    _reencodes(doc)


def test_nan_geometry_is_refused_by_name():
    s = _blender_like(blended=False)
    _nan_position(s)
    with pytest.raises(FormatError, match="mesh 'Body' primitive 0: POSITION of vertex 2 is non-finite"):
        DTS.from_scene(s)


# ---- generated detail levels --------------------------------------------------------------


def test_one_level_scene_gets_coarser_details_by_clustering():
    s = _blender_like(blended=False)
    doc = _reencodes(DTS.from_scene(copy.deepcopy(s), details="64,16,1"))
    p = doc.root["payload"]
    names = [name_text(bytes(n)) for n in p["names"]["name"]]
    assert p["details"]["fSize"].tolist() == [64.0, 16.0, 1.0]
    roots = [names[int(p["nodes"]["fName"][r])] for r in p["details"]["fRootNodeIndex"]]
    assert roots == ["Armature", "Armature 16", "Armature 1"]
    assert len(p["nodes"]) == 1 + 3 * 3                 # bounds + the 3-node subtree per level
    # the copied leg nodes carry the clip's keys too
    legs = [i for i, n in enumerate(p["nodes"]) if names[int(n["fName"])].startswith("leg")]
    assert [int(p["nodes"]["fnSubSequences"][i]) for i in legs] == [1, 1, 1]
    # the copied objects hang on the copied nodes
    objs = [names[int(o["fName"])] for o in p["objects"]]
    assert objs == ["bounds", "hip", "leg", "hip 16", "leg 16", "hip 1", "leg 1"]


def _grid_scene(n: int = 20) -> Scene:
    """One node with an n x n quad grid (2 n^2 triangles) on the unit square."""
    s = Scene(name="grid")
    u = np.linspace(0.0, 1.0, n + 1)
    xx, yy = np.meshgrid(u, u)
    pos = np.stack([xx.ravel(), yy.ravel(), np.zeros(xx.size)], 1).astype(np.float32)
    i = np.arange(n)
    a = (i[:, None] * (n + 1) + i[None, :]).ravel()
    quads = np.stack([a, a + 1, a + n + 2, a, a + n + 2, a + n + 1], 1).reshape(-1)
    mesh = s.add_mesh(Mesh(name="grid", primitives=[Primitive(
        positions=pos, normals=np.tile([0, 0, 1.0], (len(pos), 1)).astype(np.float32),
        uvs=[pos[:, :2].copy()], indices=quads.astype(np.uint32))]))
    root = s.add_node(name="plate")
    s.add_node(name="grid", parent=root, mesh=mesh)
    return s


def test_clustered_levels_have_fewer_triangles_inside_the_same_box():
    doc = _reencodes(DTS.from_scene(_grid_scene(), details="64,8"))
    levels = [to_scene(doc, detail=d, skin=False) for d in (0, 1)]
    tris = [sum(len(pr.indices) // 3 for m in sc.meshes for pr in m.primitives) for sc in levels]
    # 8/64 of 48 cells is 6 per side: the 20 x 20 grid keeps at most 2 * 6 * 6 triangles
    assert tris[0] == 800 and 0 < tris[1] <= 72
    pts = np.concatenate([pr.positions for m in levels[1].meshes for pr in m.primitives])
    assert pts.min() >= -0.01 and pts.max() <= 1.01
    # control: one size given, nothing generated
    single = DTS.from_scene(_grid_scene(), details="64")
    assert len(single.root["payload"]["details"]) == 1


def test_detail_sizes_without_generation_are_applied_with_a_warning():
    doc = _doc(shape_doc(8))
    s = to_scene(doc, skin=False)
    out = DTS.from_scene(s, details="32")
    assert out.root["payload"]["details"]["fSize"].tolist() == [32.0]
    with pytest.raises(FormatError, match="comma-separated sizes"):
        DTS.from_scene(to_scene(doc, skin=False), details="big")


@needs_corpus
def test_like_with_another_version_rebuilds_everything_the_original_has():
    doc = potsherd.read(CORPUS / "tribesrebirth" / "entities_vol" / "larmor.dts")
    s = to_scene(doc)
    out = _reencodes(DTS.from_scene(s, like=doc, version=8))
    p, o = out.root["payload"], doc.root["payload"]
    assert out.root["version"] == 8 and doc.root["version"] == 7
    assert (len(p["nodes"]), len(p["details"]), len(p["sequences"])) == (len(o["nodes"]), 4, 12)
    assert any(w.startswith("version 8 asked of a v7 original") for w in s.warnings)
    # the IFL garbage of the first sequence survives the rebuild, by name
    assert int(p["sequences"]["fFirstIFLSubSequence"][0]) == int(o["sequences"]["fFirstIFLSubSequence"][0])


def _shape_keyed_quad(weights: list, animated: bool) -> Scene:
    """A quad with one morph target raising its top edge by 1, held at ``weights``."""
    from potsherd.scene import MorphTarget
    s = Scene()
    pos = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], np.float32)
    up = np.zeros((4, 3), np.float32)
    up[2:, 1] = 1.0
    prim = Primitive(positions=pos, normals=np.tile([0, 0, 1.0], (4, 1)).astype(np.float32),
                     indices=np.array([0, 1, 2, 0, 2, 3], np.uint32),
                     targets=[MorphTarget("up", positions=up)])
    node = s.add_node(name="quad", mesh=s.add_mesh(Mesh(name="quad", primitives=[prim],
                                                        weights=list(weights))))
    if animated:
        s.add_animation(Animation(name="raise", channels=[Channel(
            node, "weights", np.array([0.0, 1.0]), np.array([[0.0], [1.0]], np.float32), "STEP")]))
    return s


def _drawn_height(doc: potsherd.Document, tmp_path: Path, anim: int | None = None,
                  t: float = 0.0) -> float:
    tris = _triangles(to_scene(_reencodes(doc)), tmp_path / "h.glb", anim, t)
    return float(tris.reshape(-1, 3)[:, 1].max())


def test_a_shape_key_held_at_a_weight_is_the_imported_mesh(tmp_path):
    """A Blender shape key left at 0.5 (a default morph weight, nothing animating
    it) used to come in as the base quad, 1 m tall where every viewer shows 1.5 m.
    Zero weights, or an animation of the weights, keep the targets as mesh frames
    that sequences select (the export's own form): the animated key still raises
    the quad to 2 m at its second key."""
    held = DTS.from_scene(_shape_keyed_quad([0.5], animated=False))
    assert _drawn_height(held, tmp_path) == pytest.approx(1.5, abs=0.02)
    zero = DTS.from_scene(_shape_keyed_quad([0.0], animated=False))
    assert _drawn_height(zero, tmp_path) == pytest.approx(1.0, abs=0.02)
    anim = DTS.from_scene(_shape_keyed_quad([0.5], animated=True))
    assert _drawn_height(anim, tmp_path, 0, 0.0) == pytest.approx(1.0, abs=0.02)
    assert _drawn_height(anim, tmp_path, 0, 1.0) == pytest.approx(2.0, abs=0.02)


def test_a_linear_shape_key_track_plays_its_blends_as_mesh_frames(tmp_path):
    """Blender exports a shape-key animation as LINEAR weights.  They used to be
    rounded to the nearest target, so a key rising from 0 to 1 jumped from the
    mesh to the target halfway.  Each blend is now baked into a mesh frame of its
    own, and sparse keys are sampled at 30 frames/s, so the quad rises steadily;
    one-hot keys still select the targets' own frames (the export's form)."""
    s = _shape_keyed_quad([0.0], animated=False)
    s.add_animation(Animation(name="rise", channels=[Channel(
        0, "weights", np.array([0.0, 1.0]), np.array([[0.0], [1.0]], np.float32), "LINEAR")]))
    doc = DTS.from_scene(s)
    heights = [_drawn_height(doc, tmp_path, 0, t) for t in (0.0, 0.25, 0.5, 0.75, 1.0)]
    # the engine steps between frames 1/30 s apart: within one step's rise of the line
    assert np.allclose(heights, [1.0, 1.25, 1.5, 1.75, 2.0], atol=1 / 30 + 0.01), heights
    mesh = next(m for m in doc.root["payload"]["meshes"] if m["payload"]["numFaces"])
    assert mesh["payload"]["numFrames"] == 2 + 29            # mesh, target, 29 blends
    # negative control: the STEP track of the export's form adds no frame
    step = DTS.from_scene(_shape_keyed_quad([0.0], animated=True))
    mesh = next(m for m in step.root["payload"]["meshes"] if m["payload"]["numFaces"])
    assert mesh["payload"]["numFrames"] == 2


def test_without_a_palette_option_the_game_trees_first_palette_writes_missing_bitmaps(tmp_path):
    """Imported into a game folder, the shape's textures become bitmaps in the
    first palette found there, as the export picks one; a bitmap of the same name
    already there (any case) is the game's and is kept.  A folder without a
    palette gets the shape alone and the warning that asks for one."""
    from export_scenes import textured_quad_scene
    from potsherd.formats.darkstar.world_examples import pl98_bytes
    glb = tmp_path / "quad.glb"
    write_glb(textured_quad_scene(), glb)
    game = tmp_path / "game"
    game.mkdir()
    (game / "world.ppl").write_bytes(pl98_bytes())
    named = DTS.from_scene(textured_quad_scene(), out_name="quad.dts",
                           palette=str(game / "world.ppl"))
    res = potsherd.import_gltf(glb, game / "quad.dts")
    assert (game / "checker.bmp").read_bytes() == named[1][1].encode()
    assert sorted(Path(p).name for p, _ in res["files"]) == ["checker.bmp", "quad.dts"]
    assert any("palette " + str(game / "world.ppl") in w for w in res["warnings"])
    (game / "checker.bmp").unlink()
    (game / "CHECKER.BMP").write_bytes(b"the game's own")
    res = potsherd.import_gltf(glb, game / "quad.dts")
    assert (game / "CHECKER.BMP").read_bytes() == b"the game's own"
    assert not (game / "checker.bmp").exists()
    assert any("1 bitmap(s) already there kept (checker.bmp)" in w for w in res["warnings"])
    bare = tmp_path / "bare"                                     # the control: no palette
    bare.mkdir()
    res = potsherd.import_gltf(glb, bare / "quad.dts")
    assert sorted(p.name for p in bare.iterdir()) == ["quad.dts"]
    assert any("checker.bmp" in w and "palette=FILE" in w for w in res["warnings"])


def test_textures_are_written_as_the_game_bitmaps_with_a_palette(tmp_path):
    """With ``palette=`` the shape's (and a material list's) textures are written
    beside it as Phoenix bitmaps drawn with that palette: power-of-two sides, a
    full mip chain, each texel the palette's nearest colour.  Without one they are
    named and warned about (the colours depend on the world's palette)."""
    import io as _io
    from PIL import Image as PILImage
    from export_scenes import textured_quad_scene
    from potsherd.formats.darkstar.phoenix import mip_levels, palette_colors
    from potsherd.formats.darkstar.textures import quantize
    from potsherd.formats.darkstar.world_examples import pl98_bytes
    pal = tmp_path / "world.ppl"
    pal.write_bytes(pl98_bytes())
    colors = palette_colors(potsherd.read(pal))
    for codec, ext in ((DTS, "dts"), (DML, "dml")):
        scene = textured_quad_scene()
        out = codec.from_scene(scene, out_name=f"quad.{ext}", palette=str(pal))
        names = [n for n, _ in out[1:]]
        assert isinstance(out, list) and out[0][0] == f"quad.{ext}" and names == ["checker.bmp"]
        bm = out[1][1]
        assert bm.format == "pbmp" and potsherd.read(bm.encode()).encode() == bm.encode()
        src = np.asarray(PILImage.open(_io.BytesIO(scene.images[0].data)).convert("RGB"))
        levels = mip_levels(bm.root)
        assert levels[0].shape == src.shape[:2] and len(levels) == src.shape[0].bit_length()
        assert np.array_equal(levels[0], quantize(src, colors))
        # without a palette: the shape alone, and a warning naming the bitmap
        plain = textured_quad_scene()
        alone = codec.from_scene(plain, out_name=f"quad.{ext}")
        assert isinstance(alone, potsherd.Document)
        assert any("checker.bmp" in w and "palette=" in w for w in plain.warnings)


def test_long_and_non_latin_texture_names_fit_the_list_and_name_the_bitmap(tmp_path):
    """A material list holds 31 bytes of latin-1 per map name: a longer name was cut
    in the list while its bitmap was written under the full name (and a name
    outside latin-1 got '?'), so the shape named a file that does not exist."""
    from export_scenes import textured_quad_scene
    from potsherd.formats.darkstar.importing import fit_map_name
    from potsherd.formats.darkstar.world_examples import pl98_bytes
    pal = tmp_path / "world.ppl"
    pal.write_bytes(pl98_bytes())
    long_a, long_b = "character_armour_basecolor_2k", "character_armour_basecolor_4k"
    for name in (long_a, "Körper_身体"):
        scene = textured_quad_scene()
        scene.images[0].name = name
        out = DTS.from_scene(scene, out_name="q.dts", palette=str(pal))
        written = out[1][0]
        listed = [name_text(bytes(r["fName"])) for r in
                  out[0][1].root["payload"]["materials"]["payload"]["materials"]]
        assert listed == [written] and len(written.encode("latin-1")) <= 31
        assert written.endswith(".bmp")
    assert fit_map_name("Körper_身体.bmp") == "Körper___.bmp"
    a, b = fit_map_name(long_a + ".bmp"), fit_map_name(long_b + ".bmp")
    assert a != b and a.startswith("character_armour_bas~") and len(a) == 31
    assert fit_map_name("short.bmp") == "short.bmp"                   # the control


def test_faces_without_a_material_get_a_white_one_not_the_first(tmp_path):
    """glTF draws a primitive without a material in its default white; the shape
    gave those faces material 0, another object's texture."""
    from export_scenes import textured_quad_scene
    scene = textured_quad_scene()
    prim = scene.meshes[0].primitives[0]
    plain = Primitive(positions=prim.positions + np.float32([2, 0, 0]), indices=prim.indices,
                      normals=prim.normals)
    scene.add_node(name="plain", mesh=scene.add_mesh(Mesh(name="plain", primitives=[plain])))
    doc = DTS.from_scene(scene)
    mats = doc.root["payload"]["materials"]["payload"]["materials"]
    assert len(mats) == 2 and name_text(bytes(mats[1]["fName"])) == ""
    assert (int(mats[1]["fRed"]), int(mats[1]["fGreen"]), int(mats[1]["fBlue"])) == (255, 255, 255)
    from potsherd.scene.ops import triangle_sets
    back = to_scene(potsherd.read(doc.encode()))
    by_x = {round(float(t.positions[:, 0].mean())): t.material for t in triangle_sets(back)}
    assert len(by_x) == 2 and len(set(by_x.values())) == 2      # two objects, two materials
    plain_mat = back.materials[by_x[max(by_x)]]                   # the one moved along +X
    assert plain_mat.extras.get("map", "") == "" and plain_mat.base_color[:3] == (1.0, 1.0, 1.0)


# ---- mirrored nodes and skins without bind matrices ----------------------------------


def _box(lo, hi) -> Primitive:
    """A closed box wound counter-clockwise seen from outside (signed volume > 0)."""
    lo, hi = np.asarray(lo, np.float32), np.asarray(hi, np.float32)
    corners = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], np.float32)
    pos = lo + corners * (hi - lo)
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    idx = np.array([[a, b, c, a, c, d] for a, b, c, d in quads], np.uint32).ravel()
    return Primitive(positions=pos, indices=idx)


def _volumes(scene: Scene) -> list:
    """(centre x, signed volume) of every drawn triangle set, left to right: a box
    whose faces point outward has a positive volume, an inside-out one negative."""
    out = []
    for ts in triangle_sets(scene):
        p = ts.positions[ts.indices.reshape(-1, 3)]
        vol = float(np.einsum("ij,ij->i", p[:, 0], np.cross(p[:, 1], p[:, 2])).sum() / 6)
        out.append((round(float(p[..., 0].mean()), 3), round(vol, 3)))
    return sorted(out)


def _mirror_scene(nested: bool, with_normal: bool) -> Scene:
    s = Scene()
    box = s.add_mesh(Mesh(name="box", primitives=[_box([0, 0, -0.25], [1, 2, 0.25])]))
    parent = s.add_node(name="holder", translation=[0.0, 0.0, 0.0]) if nested else None
    s.add_node(name="mirrored", mesh=box, scale=[-1.0, 1.0, 1.0], parent=parent)
    if with_normal:
        s.add_node(name="normal", mesh=box, translation=[3.0, 0.0, 0.0])
    return s


@pytest.mark.parametrize("nested", [False, True], ids=["node", "object"])
@pytest.mark.parametrize("with_normal", [False, True], ids=["alone", "beside-a-normal-one"])
def test_a_mirrored_node_stays_outside_out(nested, with_normal):
    """glTF draws a mirrored node (negative-determinant world matrix) with the
    opposite front face.  v8 shapes have no scale, so the mirror goes into the
    vertices; the winding must go with it, or every face points inward (signed
    volume -1, as the import gave).  A normal mesh beside it is untouched."""
    s = _mirror_scene(nested, with_normal)
    want = [(-0.5, 1.0)] + ([(3.5, 1.0)] if with_normal else [])
    assert _volumes(s) == want
    doc = _reencodes(DTS.from_scene(copy.deepcopy(s)))
    assert _volumes(to_scene(doc, skin=False)) == want
    v7 = _reencodes(DTS.from_scene(copy.deepcopy(s), version="7"))   # the mirror in a scale
    assert _volumes(to_scene(v7, skin=False)) == want


@pytest.mark.parametrize("bind", ["inverse", "identity"])
def test_a_mirrored_joint_keeps_the_skinned_faces_outside_out(bind):
    """Skinned geometry is drawn with its joint matrix (joint world x inverse bind
    matrix), and a negative determinant of that product reverses the front face.
    The import bakes the bind matrix and then the joint's mirror into the vertices,
    turning the winding at each mirror: one in the joint alone turns it once, one
    in both factors twice (not at all); the faces stay outward either way."""
    s = Scene()
    joint = s.add_node(name="joint", scale=[-1.0, 1.0, 1.0], translation=[-2.0, 0.0, 0.0])
    prim = _box([0, 0, -0.25], [1, 2, 0.25])
    prim.joints = np.zeros((8, 4), np.uint16)
    prim.weights = np.tile([1.0, 0, 0, 0], (8, 1)).astype(np.float32)
    ibm = np.linalg.inv(trs_to_matrix([-2.0, 0, 0], None, [-1.0, 1, 1])) if bind == "inverse" \
        else np.eye(4)
    skin = s.add_skin(Skin(joints=[joint], inverse_bind_matrices=ibm[None]))
    s.add_node(name="body", mesh=s.add_mesh(Mesh(name="body", primitives=[prim])), skin=skin)
    want = _volumes(s)
    assert want == ([(0.5, 1.0)] if bind == "inverse" else [(-2.5, 1.0)])
    doc = _reencodes(DTS.from_scene(copy.deepcopy(s)))
    assert _volumes(to_scene(doc, skin=False)) == want


def _two_joint_column(ibm: bool) -> Scene:
    """A 0.5 x 2 x 0.5 column standing on the floor, its top half on joint b1
    (1 m up b0).  Without inverse bind matrices (identity, glTF's default) the
    vertices are in their own joint's space, so the top ones are stored 1 m lower."""
    s = Scene()
    b0 = s.add_node(name="b0")
    b1 = s.add_node(name="b1", parent=b0, translation=[0.0, 1.0, 0.0])
    prim = _box([-0.25, 0, -0.25], [0.25, 2, 0.25])
    top = prim.positions[:, 1] > 1
    prim.joints = np.zeros((8, 4), np.uint16)
    prim.joints[top, 0] = 1
    prim.weights = np.tile([1.0, 0, 0, 0], (8, 1)).astype(np.float32)
    binds = None
    if ibm:
        binds = np.stack([np.eye(4), trs_to_matrix([0.0, -1.0, 0.0])])
    else:
        prim.positions[top, 1] -= 1
    skin = s.add_skin(Skin(joints=[b0, b1], inverse_bind_matrices=binds))
    s.add_node(name="body", mesh=s.add_mesh(Mesh(name="body", primitives=[prim])), skin=skin)
    return s


def _picture(scene: Scene) -> tuple:
    """Box, area and signed volume of the rest pose."""
    p = np.concatenate([ts.positions[ts.indices.reshape(-1, 3)] for ts in triangle_sets(scene)])
    area = float(np.linalg.norm(np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0]), axis=1).sum() / 2)
    vol = float(np.einsum("ij,ij->i", p[:, 0], np.cross(p[:, 1], p[:, 2])).sum() / 6)
    v = p.reshape(-1, 3)
    return (np.round(v.min(0), 4).tolist(), np.round(v.max(0), 4).tolist(), round(area, 4),
            round(vol, 4))


@pytest.mark.parametrize("ibm", [True, False], ids=["with-ibm", "without-ibm"])
def test_a_skin_without_inverse_bind_matrices_keeps_its_rest_pose(ibm):
    """Missing inverseBindMatrices were taken as each joint's rest world inverted,
    which moved b1's vertices (already in b1's space) another metre down: the
    column came back 0..1 m tall with area 2.5 instead of 0..2 m and 4.5.  The
    side faces span both joints; each goes to one, its other corners where their
    own joint poses them."""
    s = _two_joint_column(ibm)
    want = ([-0.25, 0.0, -0.25], [0.25, 2.0, 0.25], 4.5, 0.5)
    assert _picture(s) == want
    doc = _reencodes(DTS.from_scene(copy.deepcopy(s)))
    got = _picture(to_scene(doc, skin=False))
    assert got[:2] == want[:2]
    assert got[2:] == pytest.approx(want[2:], abs=1e-3)        # within the byte quantisation


def test_dither_option_diffuses_the_palette_error(tmp_path):
    """``--option dither=1``: Floyd-Steinberg through the palette instead of each
    texel's nearest colour; a smooth gradient keeps its mean colour better."""
    import io as _io
    from PIL import Image as PILImage
    from export_scenes import textured_quad_scene
    from potsherd.formats.darkstar.phoenix import mip_levels, palette_colors
    from potsherd.formats.darkstar.textures import quantize
    from potsherd.formats.darkstar.world_examples import pl98_bytes
    pal = tmp_path / "world.ppl"
    pal.write_bytes(pl98_bytes())
    colors = palette_colors(potsherd.read(pal))
    ramp = np.zeros((32, 32, 3), np.uint8)
    ramp[..., 0] = np.linspace(0, 255, 32, dtype=np.uint8)[None, :]
    ramp[..., 1] = np.linspace(40, 200, 32, dtype=np.uint8)[:, None]
    ramp[..., 2] = 90
    buf = _io.BytesIO()
    PILImage.fromarray(ramp).save(buf, "PNG")
    got = {}
    for dither in (False, True):
        scene = textured_quad_scene()
        scene.images[0].data = buf.getvalue()
        out = DTS.from_scene(scene, out_name="q.dts", palette=str(pal), dither=dither)
        got[dither] = mip_levels(out[1][1].root)[0]
    assert np.array_equal(got[True], quantize(ramp, colors, dither=True))
    assert np.array_equal(got[False], quantize(ramp, colors))
    assert not np.array_equal(got[True], got[False])               # the control
    err = {d: np.abs(colors[g].astype(float).mean((0, 1)) - ramp.mean((0, 1))).sum()
           for d, g in got.items()}
    assert err[True] < err[False]


def test_triangles_with_corners_on_two_joints_are_named():
    """A shape mesh is rigid on one node: a triangle with corners on two joints
    follows one of them, and the import says how many (the control: none)."""
    from export_scenes import rigid_spanning_scene
    s = rigid_spanning_scene()
    DTS.from_scene(s)
    assert any(w.startswith("mesh 'body': 8 triangles have corners on different joints")
               for w in s.warnings)
    still = rigid_spanning_scene(span=False)
    DTS.from_scene(still)
    assert not any("corners on different joints" in w for w in still.warnings)


@pytest.mark.parametrize("version", ["7", "8"])
def test_repeated_key_poses_share_one_stored_transform(version):
    """A swing that returns to its rest pose (keys A B A B, rest A) stores two
    transforms for the swinging node, not five: a key whose stored transform
    (the packed quaternion, float32 translation and, in v7, scale) was stored
    already refers to it, as the Starsiege exporter's tr_gorg.DTS does (5,723
    of its 6,654 keys share).  The sampled motion is unchanged."""
    a = [0.0, 0.0, 0.0, 1.0]
    b = [0.0, math.sin(0.3), 0.0, math.cos(0.3)]
    s = Scene(name="swing")
    s.add_node(name="arm", mesh=s.add_mesh(Mesh(primitives=[_box((0, 0, 0), (1, 0.2, 0.2))])),
               translation=(0.0, 1.0, 0.0), rotation=a)
    s.add_animation(Animation(name="swing", channels=[Channel(
        node=0, path="rotation", times=np.array([0.0, 0.5, 1.0, 1.5], np.float32),
        values=np.array([a, b, a, b], np.float32))]))
    out = _reencodes(DTS.from_scene(s, version=version))
    p = out.root["payload"]
    node = next(i for i, x in enumerate(p["names"]["name"]) if bytes(x).startswith(b"arm\0"))
    n_row = next(r for r in p["nodes"] if int(r["fName"]) == node)
    keys = np.asarray(p["keyframes"]["fKeyValue"])[-4:]             # the arm's four keys
    assert keys[0] == keys[2] == int(n_row["fDefaultTransform"]) and keys[1] == keys[3]
    assert keys[1] != keys[0]
    assert len(p["transforms"]) == len(p["nodes"]) + 1
    # the motion (in the export's Z-up frame): keys 0 and 2 at rest, 1 and 3 turned
    # 0.6 rad from it, as the source swings
    back = to_scene(out, skin=False)
    (ch,) = [c for c in back.animations[0].channels
             if back.nodes[c.node].name == "arm" and c.path == "rotation"]
    got = np.asarray(ch.values, np.float64)
    rest = np.asarray(next(n for n in back.nodes if n.name == "arm").rotation)
    chord = np.minimum(np.linalg.norm(got - rest, axis=1), np.linalg.norm(got + rest, axis=1))
    turn = 4 * np.arcsin(chord / 2)                 # the angle between the two rotations
    assert np.allclose(turn, [0, 0.6, 0, 0.6], atol=1e-4), turn


def test_rgb_material_bytes_go_through_linear_glTF_and_back():
    """An RGB material's bytes are display values: the scene holds them in
    linear light, and the importer encodes them back to the same bytes."""
    import srgb_formula as srgb
    from potsherd.formats.darkstar.importing import material_list
    from potsherd.scene import Material
    rng = np.random.default_rng(3)
    rgb = rng.integers(0, 256, (64, 3))
    mats = [Material(name=f"m{i}", base_color=(*srgb.decode(c / 255.0), 1.0)) for i, c in enumerate(rgb)]
    rows = material_list(mats, 3, [])["payload"]["materials"]
    got = np.stack([rows["fRed"], rows["fGreen"], rows["fBlue"]], 1).astype(int)
    assert np.array_equal(got, rgb)
    # control: the factors written as bytes straight (the old reading) are other bytes
    assert not np.array_equal(np.round(srgb.decode(rgb / 255.0) * 255).astype(int), rgb)
