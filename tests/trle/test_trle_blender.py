"""A potsherd export that went through Blender (default settings) comes back as
the original with ``--like``: Blender drops every extras, resamples animations at
24 fps (rotations lerped per component), turns the joints into bones pointing at
their children, sorts children by name, splits vertices and writes the PNG anew.
Simulated here in Python (every change at once) and, where Blender is installed,
done by Blender itself; an edit made on the way is what changes."""
from __future__ import annotations

import copy
import io
import math
import shutil

import numpy as np
import pytest

import potsherd
import srgb_formula
from potsherd.core.errors import FormatError
from potsherd.document import Document
from potsherd.export.gltf import write_glb
from potsherd.formats.trle.codecs import TRWAD, WAD
from potsherd.formats.trle.moveables import extract, view_from_wad
from potsherd.scene import (Animation, Channel, Mesh, Primitive, Scene, Skin,
                            quat_from_axis_angle, quat_to_matrix)
from potsherd.scene.gltf_read import read_gltf
from potsherd.scene.ops import sample_channel
from potsherd.scene.reorient import reorient_joints
from potsherd.scene.xform import quat_continuous, quat_multiply, quat_normalize

from blender_sim import renumber_nodes, run_blender
from corpus_paths import CORPUS_ROOT
from trle_fixtures import tiny_trwad_bytes

CORPUS = CORPUS_ROOT / "tr4wad"
TUT1 = CORPUS / "tut1" / "tut1.WAD"
COLOR = CORPUS / "poyu" / "TR4 color.wad"
BLENDER = shutil.which("blender")


# --------------------------------------------------------------------------
# what Blender does to a glTF it imports and exports with its defaults


def _resampled(ch: Channel, times: np.ndarray) -> np.ndarray:
    if ch.path != "rotation" or len(ch.times) < 2:
        return sample_channel(ch, times)
    t = np.asarray(ch.times, np.float64)
    v = quat_continuous(np.asarray(ch.values, np.float64).reshape(len(t), 4))
    return quat_normalize(np.stack([np.interp(times, t, v[:, k]) for k in range(4)], 1))


def _byte_colours(c: np.ndarray) -> np.ndarray:
    """Linear colours through Blender's 8-bit sRGB attribute, written as u16."""
    c = np.clip(np.asarray(c, np.float64), 0, 1)
    s = np.round(np.where(c <= 0.0031308, 12.92 * c, 1.055 * c ** (1 / 2.4) - 0.055) * 255) / 255
    lin = np.where(s <= 0.04045, s / 12.92, ((s + 0.055) / 1.055) ** 2.4)
    if lin.shape[1] == 3:
        lin = np.concatenate([lin, np.ones((len(lin), 1))], 1)
    return np.round(lin * 65535).astype(np.uint16)


def _split(p: Primitive, rng: np.random.Generator) -> None:
    """Every corner its own vertex; triangles shuffled, each from another first
    corner (the winding kept).  Colours: 8-bit sRGB, and each corner gets the
    colour of the corner whose number is its vertex's (Blender 3.4's exporter
    indexes its CORNER-domain colours by vertex)."""
    corners = np.asarray(p.indices, np.int64).reshape(-1)
    tris = corners.reshape(-1, 3)[rng.permutation(len(corners) // 3)]
    turn = rng.integers(0, 3, len(tris))
    tris = np.stack([np.roll(t, -int(k)) for t, k in zip(tris, turn)]).reshape(-1)
    if p.colors is not None:
        p.colors = _byte_colours(np.asarray(p.colors)[corners][tris])
    for name in ("positions", "normals", "joints", "weights"):
        if getattr(p, name) is not None:
            setattr(p, name, np.asarray(getattr(p, name))[tris])
    p.uvs = [np.asarray(uv)[tris] for uv in p.uvs]
    p.indices = np.arange(len(tris), dtype=np.uint32)


def _reencoded(data: bytes) -> bytes:
    from PIL import Image as PILImage
    rgba = np.asarray(PILImage.open(io.BytesIO(data)).convert("RGBA")).copy()
    rgba[rgba[..., 3] == 0, :3] = 0           # transparent texels lose their colour
    buf = io.BytesIO()
    PILImage.fromarray(rgba, "RGBA").save(buf, format="PNG", compress_level=1)
    return buf.getvalue()


def _nodes_reversed(s: Scene) -> None:
    renumber_nodes(s, list(range(len(s.nodes)))[::-1])


def blenderised(scene: Scene, seed: int = 7) -> Scene:
    s = copy.deepcopy(scene)
    rng = np.random.default_rng(seed)
    for group in (s.nodes, s.materials, s.meshes, s.animations, s.skins, s.images):
        for x in group:
            x.extras = {}
    for m in s.meshes:
        for p in m.primitives:
            p.extras = {}
            _split(p, rng)
    s.extras = {}
    for a in s.animations:                       # 24 fps, up to the last whole frame
        times = np.arange(int(math.floor(a.duration * 24 + 1e-6)) + 1) / 24.0
        for ch in a.channels:
            ch.values = _resampled(ch, times).astype(np.float32)
            ch.times = times.astype(np.float32)
    joints = sorted({j for sk in s.skins for j in sk.joints})
    turns = {j: quat_to_matrix(quat_from_axis_angle(rng.normal(size=3), rng.uniform(0.3, 3)))
             [:3, :3] for j in joints}
    assert reorient_joints(s, turns)
    for img in s.images:
        img.data = _reencoded(img.data)
    for nd in s.nodes:
        nd.children.sort(key=lambda c: s.nodes[c].name)
    s.animations.sort(key=lambda a: a.name)
    _nodes_reversed(s)
    return s


def _back(scene: Scene, tmp_path, name: str = "b.glb") -> Scene:
    write_glb(scene, tmp_path / name)
    return read_gltf(tmp_path / name)


def _exported(doc: Document, **options) -> Scene:
    return doc.codec.to_scene(doc, **options)


def _tiny() -> Document:
    return potsherd.read(tiny_trwad_bytes())


def _lever() -> Document:
    wad = potsherd.read(str(TUT1))
    return Document("trwad", extract(wad.root, 318), {"mesh_pad": 0})


MOVEABLES = [pytest.param(_tiny, id="tiny"),
             pytest.param(_lever, id="lever", marks=pytest.mark.skipif(
                 not TUT1.is_file(), reason="shared tr4wad corpus not present"))]


# --------------------------------------------------------------------------
# (a) simulated


@pytest.mark.parametrize("make", MOVEABLES)
def test_an_unedited_blender_round_trip_is_the_original(tmp_path, make):
    doc = make()
    src = _exported(doc)
    scene = _back(blenderised(src), tmp_path)
    assert not any(n.extras for n in scene.nodes) and scene.images[0].data != src.images[0].data
    out = TRWAD.from_scene(scene, like=doc)
    assert out.encode() == doc.encode()
    assert any("turned back" in w for w in scene.warnings)
    # control: without the original the moveable is another one (bones, textures...)
    bare = TRWAD.from_scene(_back(blenderised(src), tmp_path, "c.glb"))
    assert bare.encode() != doc.encode()


def _skinned_positions(s: Scene, joint_name: str) -> tuple:
    """(primitive, vertex) of a vertex bound to the joint of that name."""
    for nd in s.nodes:
        if nd.skin is None:
            continue
        joints = s.skins[nd.skin].joints
        for p in s.meshes[nd.mesh].primitives:
            for v, j in enumerate(np.asarray(p.joints)[:, 0]):
                if s.nodes[joints[int(j)]].name == joint_name:
                    return p, v
    raise AssertionError(joint_name)


@pytest.mark.parametrize("make", MOVEABLES)
def test_a_moved_vertex_is_the_only_change(tmp_path, make):
    doc = make()
    scene = blenderised(_exported(doc))
    name = scene.nodes[next(i for i, n in enumerate(scene.nodes) if n.name.endswith("_1"))].name
    p, v = _skinned_positions(scene, name)
    moved = np.asarray(p.positions, np.float64).copy()
    at = moved[v].copy()
    moved[np.all(np.isclose(moved, at), axis=1)] += (0.0, 20.0 / 512.0, 0.0)   # 20 TR units
    p.positions = moved.astype(np.float32)
    new = TRWAD.from_scene(_back(scene, tmp_path), like=doc).root
    old = doc.root
    kept = [_same_record(a, b) for a, b in zip(new["meshes"], old["meshes"])]
    assert kept == [True, False] + [True] * (len(kept) - 2)
    a, b = (np.asarray(m["vertices"]).reshape(-1, 3) for m in (new["meshes"][1],
                                                               old["meshes"][1]))
    gone = {tuple(x) for x in b.tolist()} - {tuple(x) for x in a.tolist()}
    came = {tuple(x) for x in a.tolist()} - {tuple(x) for x in b.tolist()}
    assert len(gone) == len(came) == 1                       # the edit is in the output
    assert abs(np.linalg.norm(np.subtract(list(came)[0], list(gone)[0])) - 20) < 1.5
    assert _same_textures(new, old)
    assert np.array_equal(new["keyframe_words"], old["keyframe_words"])


def _same_record(a, b) -> bool:
    """Deep equality of decoded records (dicts, lists, arrays, numbers, bytes)."""
    if isinstance(a, dict):
        return isinstance(b, dict) and set(a) - {"pad"} == set(b) - {"pad"} and \
            all(_same_record(a[k], b[k]) for k in a if k != "pad")
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(_same_record, a, b))
    return np.array_equal(np.asarray(a), np.asarray(b))


def _same_textures(a: dict, b: dict) -> bool:
    return [bytes(t["pixels"]) for t in a["textures"]] == [bytes(t["pixels"]) for t in
                                                           b["textures"]]


def _words(root: dict) -> list:
    """Per animation its keyframe words."""
    anims = root["animations"]
    base, words = root["moveable"]["keyframe_offset"], np.asarray(root["keyframe_words"])
    ends = [a["keyframe_offset"] for a in anims[1:]] + [base + 2 * len(words)]
    return [words[(a["keyframe_offset"] - base) // 2:(e - base) // 2].tolist()
            for a, e in zip(anims, ends)]


@pytest.mark.parametrize("make", MOVEABLES)
def test_an_edited_key_is_the_only_change(tmp_path, make):
    doc = make()
    scene = blenderised(_exported(doc))
    ai = max(range(len(scene.animations)), key=lambda k: scene.animations[k].duration)
    name = scene.animations[ai].name
    ch = next(c for c in scene.animations[ai].channels
              if c.path == "rotation" and scene.nodes[c.node].name.endswith("_1"))
    k = len(ch.times) - 1
    v = np.asarray(ch.values, np.float64).copy()
    v[k] = quat_multiply(v[k], quat_from_axis_angle((1, 0, 0), math.radians(20)))
    ch.values = v.astype(np.float32)
    new = TRWAD.from_scene(_back(scene, tmp_path), like=doc).root
    old = doc.root
    order = [a.name for a in _exported(doc).animations]
    edited = order.index(name)
    same = [a == b for a, b in zip(_words(new), _words(old))]
    assert same == [i != edited for i in range(len(same))]
    assert _same_record(new["meshes"], old["meshes"]) and _same_textures(new, old)


@pytest.mark.parametrize("make", MOVEABLES)
def test_a_repainted_texture_is_the_only_change(tmp_path, make):
    from PIL import Image as PILImage
    doc = make()
    src = _exported(doc)
    holder = next(n for n in src.nodes if "tr4_moveable" in n.extras)
    x, y, w, h = holder.extras["tr4_textures"][0]["atlas"]
    scene = blenderised(src)
    rgba = np.asarray(PILImage.open(io.BytesIO(scene.images[0].data)).convert("RGBA")).copy()
    rgba[y:y + h, x:x + w] = (12, 200, 34, 255)
    buf = io.BytesIO()
    PILImage.fromarray(rgba, "RGBA").save(buf, format="PNG")
    scene.images[0].data = buf.getvalue()
    new = TRWAD.from_scene(_back(scene, tmp_path), like=doc).root
    old = doc.root
    assert bytes(new["textures"][0]["pixels"]) == bytes([34, 200, 12]) * (w * h)   # BGR
    assert [bytes(t["pixels"]) for t in new["textures"][1:]] == \
        [bytes(t["pixels"]) for t in old["textures"][1:]]
    assert _same_record(new["meshes"], old["meshes"]) and _words(new) == _words(old)


def test_repainted_shades_are_the_change(tmp_path):
    doc = _tiny()
    scene = blenderised(_exported(doc))
    shaded = [p for m in scene.meshes for p in m.primitives if p.colors is not None
              and np.asarray(p.colors).dtype == np.uint16 and (np.asarray(p.colors) < 65535).any()]
    assert shaded
    for p in shaded:
        p.colors = np.full_like(np.asarray(p.colors), 13107)       # all 0.2 (linear)
    new = TRWAD.from_scene(_back(scene, tmp_path), like=doc).root
    old = doc.root
    assert _same_record(new["meshes"][0], old["meshes"][0])
    # linear 0.2 is the display brightness encode(0.2) = 0.4845 the game multiplies by
    assert set(np.asarray(new["meshes"][1]["shades"]).tolist()) == {
        int(round(8191 - float(srgb_formula.encode(13107 / 65535)) * 8191))} == {4222}
    assert np.asarray(old["meshes"][1]["shades"]).tolist() == [0, 4096, 8191]


@pytest.mark.skipif(not COLOR.is_file(), reason="shared tr4wad corpus not present")
def test_a_whole_wad_through_blender_is_the_wad_and_an_edit_changes_one_moveable(tmp_path):
    wad = potsherd.read(str(COLOR))
    src = _exported(wad)
    scene = _back(blenderised(src), tmp_path)
    assert WAD.from_scene(scene, like=wad).encode() == COLOR.read_bytes()
    edited = blenderised(src)
    p, v = _skinned_positions(edited, "HAIR_2")
    p.positions = np.asarray(p.positions).copy()
    p.positions[v] += np.float32(30 / 512)
    new = WAD.from_scene(_back(edited, tmp_path, "e.glb"), like=wad).root
    for oid in (8, 9, 10):
        assert view_from_wad(new, oid) == view_from_wad(wad.root, oid)
    assert view_from_wad(new, 30) != view_from_wad(wad.root, 30)


@pytest.mark.skipif(not COLOR.is_file(), reason="shared tr4wad corpus not present")
def test_one_moveable_of_a_wad_through_blender_goes_back_into_the_wad_or_a_trwad(tmp_path):
    """Exported alone (``--option moveable=LARA_SKIN_JOINTS``) its animations are named
    without the moveable's prefix: the original is compared with that export."""
    wad = potsherd.read(str(COLOR))
    scene = _back(blenderised(_exported(wad, moveable="LARA_SKIN_JOINTS")), tmp_path)
    assert WAD.from_scene(copy.deepcopy(scene), like=wad).encode() == COLOR.read_bytes()
    one = Document("trwad", extract(wad.root, 9), {"mesh_pad": 0})
    assert TRWAD.from_scene(scene, like=one).encode() == one.encode()


@pytest.mark.skipif(not COLOR.is_file(), reason="shared tr4wad corpus not present")
def test_a_whole_wad_export_through_blender_into_a_trwad_keeps_its_own_animations(tmp_path):
    """Only the ``--like`` .trwad's moveable is recognised; the other moveables'
    animations are not its own, and its animations are named with its prefix."""
    wad = potsherd.read(str(COLOR))
    scene = _back(blenderised(_exported(wad)), tmp_path)
    one = Document("trwad", extract(wad.root, 9), {"mesh_pad": 0})
    new = TRWAD.from_scene(scene, like=one).root
    assert new["animation_count"] == 1 == one.root["animation_count"]
    assert _words(new) == _words(one.root)
    assert _same_record(new["animations"], one.root["animations"])


# --------------------------------------------------------------------------
# (c) a keyframe's word count is a byte


def _chain(bones: int) -> Scene:
    """A skinned chain of ``bones`` joints, every one turning about two axes."""
    s = Scene()
    parent = None
    joints = []
    for k in range(bones):
        joints.append(s.add_node(name=f"b{k}", parent=parent,
                                 translation=(0.0, 0.1 if k else 0.0, 0.0)))
        parent = joints[-1]
    tri = np.array([[0, 0, 0], [0.05, 0, 0], [0, 0, 0.05]], np.float32)
    pos = np.concatenate([tri + (0, 0.1 * k, 0) for k in range(bones)])
    jnt = np.zeros((3 * bones, 4), np.uint16)
    jnt[:, 0] = np.repeat(np.arange(bones), 3)
    wts = np.zeros((3 * bones, 4), np.float32)
    wts[:, 0] = 1
    mesh = s.add_mesh(Mesh(name="chain", primitives=[Primitive(positions=pos, joints=jnt,
                                                               weights=wts)]))
    ibm = np.stack([np.linalg.inv(np.array([[1, 0, 0, 0], [0, 1, 0, 0.1 * k], [0, 0, 1, 0],
                                            [0, 0, 0, 1.0]])) for k in range(bones)])
    s.add_node(name="chain", mesh=mesh, skin=s.add_skin(Skin(joints=joints,
                                                             inverse_bind_matrices=ibm)))
    q = quat_multiply(quat_from_axis_angle((1, 0, 0), 0.3), quat_from_axis_angle((0, 0, 1), 0.2))
    s.add_animation(Animation(name="bend", channels=[
        Channel(j, "rotation", np.array([0.0, 1.0]),
                np.array([[0, 0, 0, 1], q], np.float32)) for j in joints]))
    return s


def test_a_moveable_beyond_the_frame_size_byte_is_refused_by_name():
    """tut1.WAD's whole export through Blender, without the extras that mark its
    moveables, was one moveable of 453 bones: a 915-word keyframe, which only
    the encoder noticed ("cannot store 915 as u8").  The importer now says so."""
    with pytest.raises(FormatError, match=r"frame size is a byte: at most 255 words"):
        WAD.from_scene(_chain(124))
    doc = TRWAD.from_scene(_chain(123))            # 9 + 2 * 123 = 255: fits
    assert doc.root["animations"][0]["frame_size"] == 255
    assert potsherd.read(doc.encode()).encode() == doc.encode()


# --------------------------------------------------------------------------
# (b) real Blender


@pytest.mark.skipif(BLENDER is None, reason="Blender not installed")
@pytest.mark.skipif(not (COLOR.is_file() and TUT1.is_file()),
                    reason="shared tr4wad corpus not present")
def test_real_blender_round_trips_are_byte_exact(tmp_path):
    wad = potsherd.read(str(COLOR))
    write_glb(_exported(wad), tmp_path / "color.glb")
    run_blender(tmp_path / "color.glb", tmp_path / "color_b.glb", tmp_path)
    scene = read_gltf(tmp_path / "color_b.glb")
    assert not any(n.extras for n in scene.nodes)             # Blender dropped them
    out = WAD.from_scene(scene, like=wad)
    assert out.encode() == COLOR.read_bytes()
    assert not any("shrunk" in w for w in scene.warnings)
    # .trwad moveables: animated (LEVER_SWITCH); shaded, whose colours Blender 3.4
    # moves to other corners (TEETH_SPIKES); without animations, so only the root
    # bone's rest pose (which Blender writes in world space) places it (GUNSHELL)
    tut1 = potsherd.read(str(TUT1))
    for oid in (318, 132, 386):
        one = Document("trwad", extract(tut1.root, oid), {"mesh_pad": 0})
        write_glb(_exported(one), tmp_path / f"{oid}.glb")
        run_blender(tmp_path / f"{oid}.glb", tmp_path / f"{oid}_b.glb", tmp_path)
        assert TRWAD.from_scene(read_gltf(tmp_path / f"{oid}_b.glb"), like=one).encode() == \
            one.encode(), oid
