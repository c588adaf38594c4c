"""glTF -> TR4 moveable (``from_scene``): the inverse of the export, checked as a
pair on the tiny fixture and on every moveable of the corpus wads, plus
hand-built scenes shaped like Blender/assimp output and the corpus glTF files."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import potsherd
import srgb_formula
from potsherd.core.errors import FormatError
from potsherd.document import Document
from potsherd.export.gltf import write_glb
from potsherd.formats.trle import model
from potsherd.formats.trle.codecs import TRWAD, WAD
from potsherd.formats.trle.importing import euler_yxz, rotation_words
from potsherd.formats.trle.moveables import extract, view_from_wad
from potsherd.scene import (Animation, Channel, Image, Material, Mesh, Primitive, Scene,
                            Skin, TextureRef, quat_from_axis_angle, quat_to_matrix)
from potsherd.scene.gltf_read import read_gltf
from potsherd.scene.ops import triangle_sets

from trle_fixtures import tiny_trwad_bytes
from corpus_paths import CORPUS_ROOT

ROOT = CORPUS_ROOT
CORPUS = ROOT / "tr4wad"
WADS = [CORPUS / "tut1" / "tut1.WAD", CORPUS / "poyu" / "TR4 color.wad"]
GLBS = sorted((ROOT / "glb").glob("*.glb")) if (ROOT / "glb").is_dir() else []


def _through_glb(scene: Scene, tmp_path: Path) -> Scene:
    out = tmp_path / "m.glb"
    write_glb(scene, out)
    return read_gltf(out)


def triangles(t: dict) -> list:
    """Per mesh the sorted triangles as TR integer corner triples (quads split as
    the engine draws them), each rotated to start at its smallest corner."""
    out = []
    for m in t["meshes"]:
        v = np.asarray(m["vertices"]).reshape(-1, 3).tolist()
        tris = []
        for p in m["polygons"]:
            i = [int(x) for x in p["vertices"]]
            for tri in ([i[:3]] if p["shape"] == 8 else [i[:3], [i[0], i[2], i[3]]]):
                c = [tuple(v[k]) for k in tri]
                r = min(range(3), key=lambda k: c[k])
                tris.append(tuple(c[r:] + c[:r]))
        out.append(sorted(tris))
    return out


def keyframes(t: dict) -> list:
    """Per animation (count, root offsets, quaternions) decoded from the words."""
    out = []
    anims = t["animations"]
    base, total = t["moveable"]["keyframe_offset"], 2 * len(t["keyframe_words"])
    for i, a in enumerate(anims):
        start = a["keyframe_offset"] - base
        end = anims[i + 1]["keyframe_offset"] - base if i + 1 < len(anims) else total
        count = model.keyframe_count(start, a["frame_size"], end)
        if not count:
            out.append((0, None, None))
            continue
        kf = model.decode_keyframes(np.asarray(t["keyframe_words"])[start // 2:], a["frame_size"],
                                    count, t["moveable"]["mesh_count"])
        out.append((count, kf["offset"].tolist(), model.quaternions_yxz(kf["rotation"])))
    return out


def assert_same_moveable(new: dict, old: dict) -> None:
    n = old["moveable"]["mesh_count"]
    assert new["moveable"]["mesh_count"] == n
    assert triangles(new) == triangles(old)
    assert np.array_equal(new["link_words"][:4 * (n - 1)], old["link_words"][:4 * (n - 1)])
    assert len(new["animations"]) == len(old["animations"])
    for (c1, o1, q1), (c2, o2, q2) in zip(keyframes(new), keyframes(old)):
        assert c1 == c2 and o1 == o2
        if c1:  # the same rotations after the engine's quantisation
            assert np.abs((q1 * q2).sum(-1)).min() > 1 - 1e-9
    fields = ("state_id", "frame_duration", "speed", "accel", "speed_lateral", "accel_lateral",
              "frame_start", "frame_end", "next_anim", "next_frame", "state_change_count",
              "command_count")
    assert [[a[k] for k in fields] for a in new["animations"]] == \
        [[a[k] for k in fields] for a in old["animations"]]
    assert np.array_equal(new["commands"], old["commands"])
    assert [(s["state_id"], s["dispatches"].tolist()) for s in new["state_changes"]] == \
        [(s["state_id"], s["dispatches"].tolist()) for s in old["state_changes"]]


# --------------------------------------------------------------------------
# the tiny fixture


@pytest.mark.parametrize("skin", [True, False])
def test_tiny_moveable_comes_back(tmp_path, skin):
    orig = potsherd.read(tiny_trwad_bytes())
    scene = _through_glb(orig.codec.to_scene(orig, skin=skin), tmp_path)
    doc = TRWAD.from_scene(scene)
    data = doc.encode()
    assert potsherd.read(data).encode() == data            # re-encodes byte-exactly
    assert_same_moveable(doc.root, orig.root)
    r = doc.root
    assert r["moveable"] == orig.root["moveable"]          # source indices from extras
    assert r["link_words"].tolist() == [2, 10, -20, 30, 1900574, 786832, 2146160]
    assert r["textures"] == orig.root["textures"]          # texinfos, flips, BGR pixels
    assert [[(p["shape"], p["texture"], p["attributes"]) for p in m["polygons"]]
            for m in r["meshes"]] == [[(9, 0, 1), (8, 0xA001, 22)], [(8, 0, 0)]]
    assert r["meshes"][1]["shades"].tolist() == [8191, 0, 4096]     # shades, not normals
    assert r["meshes"][0]["normals"].tolist() == [[0, 0, 16384]] * 4
    assert r["meshes"][0]["flags"] == 1                    # the radius field's high half
    # without --like the fixture's synthetic boxes (far from the meshes) are recomputed
    assert data != tiny_trwad_bytes() and len(data) == len(tiny_trwad_bytes())
    assert r["keyframe_words"][:6].tolist() == [0, 256, -130, -66, -256, 44]
    # with the original as --like an unedited round trip gives its bytes back
    assert TRWAD.from_scene(scene, like=orig).encode() == tiny_trwad_bytes()


def test_like_supplies_the_state_machine_the_gltf_lacks(tmp_path):
    orig = potsherd.read(tiny_trwad_bytes())
    scene = _through_glb(orig.codec.to_scene(orig), tmp_path)
    for a in scene.animations:
        for key in ("state_changes", "commands", "next_anim", "next_frame", "state_id"):
            a.extras.pop(key)
    for n in scene.nodes:
        if "tr4_moveable" in n.extras:
            n.extras["tr4_moveable"].pop("object_id")
            n.extras.pop("object_id")
    bare = TRWAD.from_scene(scene).root
    assert bare["moveable"]["object_id"] == 0
    assert bare["state_changes"] == [] and bare["command_count"] == 0
    assert [a["next_anim"] for a in bare["animations"]] == [50, 51]     # each loops on itself
    kept = TRWAD.from_scene(scene, like=orig).root
    assert kept["moveable"]["object_id"] == 47
    assert_same_moveable(kept, orig.root)
    assert TRWAD.from_scene(scene, like=orig, object_id=9).root["moveable"]["object_id"] == 9


def test_import_options_are_declared_and_checked():
    assert {o.name for o in TRWAD.import_options} == {"unit_scale", "frame_rate", "object_id",
                                                      "moveable"}
    orig = potsherd.read(tiny_trwad_bytes())
    with pytest.raises(ValueError, match="frame_rat"):
        TRWAD.from_scene(orig.codec.to_scene(orig), frame_rat=15)


# --------------------------------------------------------------------------
# rotations


def test_rotation_words_recover_every_packed_and_single_axis_angle():
    rng = np.random.default_rng(7)
    packed = rng.integers(0, 1024, (4000, 3))
    packed[:50, 0] = 256          # gimbal lock: X = +90 degrees
    packed[50:100, 0] = 768       # X = -90 degrees
    angles = packed * 2 * math.pi / 1024
    q = model.quaternions_yxz(angles)
    r = np.stack([quat_to_matrix(x)[:3, :3] for x in q.astype(np.float32)])
    words = rotation_words(euler_yxz(r))
    back = []
    for w in words:
        if len(w) == 2:
            p = (w[0] << 16) | w[1]
            back.append([(p >> 20) & 0x3FF, (p >> 10) & 0x3FF, p & 0x3FF])
        else:
            a = [0, 0, 0]
            a[(w[0] >> 14) - 1] = (w[0] & 0xFFF) / 4
            back.append(a)
    q2 = model.quaternions_yxz(np.asarray(back, np.float64) * 2 * math.pi / 1024)
    assert np.abs((q * q2).sum(-1)).min() > 1 - 1e-12
    # the same angles where X is within +-90 degrees (away from gimbal lock); other X
    # have a second, equal triple (pi - x, y + pi, z + pi), which is what comes out
    principal = (packed[:, 0] < 256) | (packed[:, 0] > 768)
    assert principal.sum() > 1500
    assert np.array_equal(np.asarray(back)[principal], packed[principal])
    # single-axis 12-bit angles stay single-axis with the same value
    assert rotation_words(np.array([[0, 1234 * 2 * math.pi / 4096, 0]])) == [[0x8000 | 1234]]
    assert rotation_words(np.array([[0.0, 0.0, 0.0]])) == [[0x4000]]


# --------------------------------------------------------------------------
# scenes shaped like Blender / assimp output


def _blender_like_scene() -> Scene:
    """A 2-bone skinned strip, the skeleton in centimetres (root scale 0.01), the
    bind-space vertices in metres, non-indexed, 4
    weights per vertex, two primitives (a textured one and a base-colour one), a
    LINEAR rotation and a STEP translation over one second."""
    s = Scene()
    root = s.add_node(name="Armature", scale=(0.01, 0.01, 0.01))
    hip = s.add_node(name="hip", parent=root)
    knee = s.add_node(name="knee", parent=hip, translation=(0.0, 0.0, 100.0))
    pos = np.array([[0, 0, 0], [0, 0, 100], [10, 0, 100], [0, 0, 0], [10, 0, 100], [10, 0, 0],
                    [0, 0, 100], [0, 0, 200], [10, 0, 200], [0, 0, 100], [10, 0, 200],
                    [10, 0, 100]], np.float32) / 100
    joints = np.zeros((12, 4), np.uint16)
    joints[:, 1] = 1
    weights = np.zeros((12, 4), np.float32)
    weights[:6] = [0.75, 0.25, 0, 0]
    weights[6:] = [0.25, 0.75, 0, 0]
    uv = np.array([[0, 0], [0, 1], [1, 1], [0, 0], [1, 1], [1, 0]] * 2, np.float32)
    from PIL import Image as PILImage
    checker = np.zeros((8, 8, 3), np.uint8)
    checker[::2, ::2] = checker[1::2, 1::2] = 255
    img = s.add_image(Image.from_pil(PILImage.fromarray(checker, "RGB")))
    tex = s.add_material(Material(name="checker", base_color_texture=TextureRef(image=img)))
    red = s.add_material(Material(name="red", base_color=(1.0, 0.0, 0.0, 1.0)))
    prims = [Primitive(positions=pos[:6], uvs=[uv[:6]], joints=joints[:6], weights=weights[:6],
                       material=tex),
             Primitive(positions=pos[6:], uvs=[uv[6:]], joints=joints[6:], weights=weights[6:],
                       material=red)]
    mesh = s.add_mesh(Mesh(name="strip", primitives=prims))
    rest = np.linalg.inv(np.array([np.diag([0.01, 0.01, 0.01, 1.0]),
                                   np.diag([0.01, 0.01, 0.01, 1.0]) @ np.array(
                                       [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 100.0],
                                        [0, 0, 0, 1]])]))
    skin = s.add_skin(Skin(joints=[hip, knee], inverse_bind_matrices=rest))
    s.add_node(name="strip", mesh=mesh, skin=skin)
    quarter = quat_from_axis_angle((1, 0, 0), math.pi / 2)
    s.add_animation(Animation(name="bend", channels=[
        Channel(knee, "rotation", np.array([0.0, 1.0]),
                np.array([[0, 0, 0, 1], quarter], np.float32)),
        Channel(hip, "translation", np.array([0.0, 0.5]),
                np.array([[0, 0, 0], [0, 50, 0]], np.float32), "STEP")]))
    s.add_animation(Animation(name="still", channels=[
        Channel(hip, "rotation", np.array([0.0]), np.array([[0, 0, 0, 1]], np.float32))]))
    return s


def test_blender_like_skinned_scene_becomes_a_two_mesh_moveable():
    s = _blender_like_scene()
    r = TRWAD.from_scene(s).root
    assert r["moveable"]["mesh_count"] == 2 and r["animation_count"] == 2
    # knee: 100 cm along +Z = 1 m = 512 units in front (+Z stays +Z)
    assert r["link_words"].tolist() == [0, 0, 0, 512, 0, 0, 0]
    # each primitive's two triangles: one bone each (dominant joint), one planar quad each
    assert [[p["shape"] for p in m["polygons"]] for m in r["meshes"]] == [[9], [9]]
    assert sorted(map(tuple, r["meshes"][1]["vertices"].tolist())) == [
        (-51, 0, 0), (-51, 0, 512), (0, 0, 0), (0, 0, 512)]      # 10 cm = 51.2 -> 51 units
    # textures: the checker baked onto the quad's rectangle, red as a solid block
    t0, t1 = r["textures"]
    assert (t0["w"] + 1, t0["h"] + 1) == (8, 8) and (t1["w"] + 1, t1["h"] + 1) == (4, 4)
    assert t1["pixels"] == bytes([0, 0, 255]) * 16                 # BGR red
    assert set(t0["pixels"]) == {0, 255}
    # 1 s at 30 fps: 31 keyframes of frame_duration 1; the still one: 1 keyframe
    a0, a1 = r["animations"]
    assert (a0["frame_duration"], a0["frame_start"], a0["frame_end"]) == (1, 0, 30)
    assert a0["next_anim"] == 0 and a1["next_anim"] == 1               # loops
    (c0, off0, q0), (c1, _, _) = keyframes(r)
    assert (c0, c1) == (31, 1)
    assert off0[14] == [0, 0, 0] and off0[15] == [0, -256, 0]       # STEP at 0.5 s; +Y up -> -Y
    # knee at 0.5 s: 45 degrees about X; glTF X is TR -X: packed X = 1024 - 128
    expected = model.quaternions_yxz(np.array([896 * 2 * math.pi / 1024, 0, 0]))
    assert abs(float(np.dot(q0[15, 1], expected))) > 1 - 1e-9
    # frame_rate=15: every 2 game frames, 16 keyframes
    r15 = TRWAD.from_scene(s, frame_rate=15).root
    assert r15["animations"][0]["frame_duration"] == 2 and keyframes(r15)[0][0] == 16
    doc = TRWAD.from_scene(s)
    assert potsherd.read(doc.encode()).encode() == doc.encode()


def test_refusals_are_format_errors():
    with pytest.raises(FormatError, match="no mesh"):
        TRWAD.from_scene(Scene())
    s = _blender_like_scene()
    with pytest.raises(FormatError, match="coordinate range"):
        TRWAD.from_scene(s, unit_scale=1e-6)
    with pytest.raises(FormatError, match="frame_rate"):
        TRWAD.from_scene(s, frame_rate=-1)


# --------------------------------------------------------------------------
# corpus


@pytest.mark.skipif(not CORPUS.is_dir(), reason="shared tr4wad corpus not present")
@pytest.mark.parametrize("path", WADS, ids=lambda p: p.name)
def test_every_corpus_moveable_round_trips_through_glb(tmp_path, path):
    wad = potsherd.read(str(path))
    exact = 0
    for m in wad.root["moveables"]:
        t = extract(wad.root, int(m["object_id"]))
        src = Document("trwad", t, {"mesh_pad": 0})
        scene = _through_glb(src.codec.to_scene(potsherd.read(src.encode())), tmp_path)
        new = TRWAD.from_scene(scene)
        data = new.encode()
        assert potsherd.read(data).encode() == data
        assert_same_moveable(new.root, t)
        # and back to glb: the same triangle count
        again = new.codec.to_scene(potsherd.read(data))
        assert sum(x.triangle_count for x in triangle_sets(again)) == \
            sum(x.triangle_count for x in triangle_sets(scene))
        exact += TRWAD.from_scene(scene, like=src).encode() == src.encode()
    assert exact == len(wad.root["moveables"])   # with --like: every one byte-identical


@pytest.mark.skipif(not CORPUS.is_dir(), reason="shared tr4wad corpus not present")
def test_gltf_moveable_inserted_into_its_own_wad(tmp_path):
    path = WADS[0]
    raw = path.read_bytes()
    wad = potsherd.read(str(path))
    scene = _through_glb(wad.codec.to_scene(wad, moveable="MUMMY"), tmp_path)
    assert WAD.from_scene(scene, like=wad).encode() == raw   # unchanged: the same wad
    # an edited mummy (mesh 0 moved 3 units along TR +Z, state machine stripped):
    bind0 = np.linalg.inv(scene.skins[0].inverse_bind_matrices[0])   # joint 0 -> glTF world
    delta = (bind0[:3, :3] @ [0.0, 0.0, 3.0]).astype(np.float32)
    for n in scene.nodes:
        if n.skin is not None:
            for p in scene.meshes[n.mesh].primitives:
                sel = p.joints[:, 0] == 0
                p.positions[sel] = p.positions[sel] + delta
    for a in scene.animations:
        a.extras.pop("state_changes")
        a.extras.pop("commands")
    doc = WAD.from_scene(scene, like=wad)
    data = doc.encode()
    assert data != raw and potsherd.read(data).encode() == data    # the wad round-trips
    new, old = view_from_wad(doc.root, 47), view_from_wad(wad.root, 47)
    assert new["animations"] == old["animations"]     # state machine and commands from --like
    assert new["keyframe_words"] == old["keyframe_words"] and new["links"] == old["links"]
    moved = [tuple(v[:2]) + (v[2] - 3,) for v in new["meshes"][0]["vertices"]]
    assert sorted(moved) == sorted(map(tuple, old["meshes"][0]["vertices"]))
    assert new["meshes"][1:] == old["meshes"][1:]
    assert [m["object_id"] for m in doc.root["moveables"]] == \
        [m["object_id"] for m in wad.root["moveables"]]


@pytest.mark.skipif(not GLBS, reason="shared glb corpus not present")
@pytest.mark.parametrize("path", GLBS, ids=lambda p: p.name)
def test_corpus_gltf_imports_with_same_triangles_bbox_and_animations(path):
    scene = read_gltf(path)
    unit = 1 / 16 if path.name.startswith("assimp_assimp__huesitos") else 1 / 512  # in cm
    doc = TRWAD.from_scene(scene, unit_scale=unit)
    data = doc.encode()
    assert potsherd.read(data).encode() == data
    back = doc.codec.to_scene(potsherd.read(data), unit_scale=unit)

    def stats(s):
        ts = triangle_sets(s)
        pts = np.concatenate([t.positions[t.indices] for t in ts])
        return sum(t.triangle_count for t in ts), pts.min(0), pts.max(0)
    n0, lo0, hi0 = stats(scene)
    n1, lo1, hi1 = stats(back)
    assert n1 == n0
    size = (hi0 - lo0).max()
    assert np.abs(lo1 - lo0).max() < 0.02 * size and np.abs(hi1 - hi0).max() < 0.02 * size
    assert len(back.animations) == len(scene.animations)


@pytest.mark.parametrize("damage", ["textures", "commands", "dispatch", "link_flags", "sphere"])
def test_malformed_extras_are_format_errors_or_ignored(tmp_path, damage):
    orig = potsherd.read(tiny_trwad_bytes())
    scene = _through_glb(orig.codec.to_scene(orig), tmp_path)
    holder = next(n for n in scene.nodes if "tr4_moveable" in n.extras)
    if damage == "textures":
        holder.extras["tr4_textures"] = [{"atlas": "x"}]
    elif damage == "commands":
        scene.animations[0].extras["commands"] = [{"type": "play_sound"}]
    elif damage == "dispatch":
        scene.animations[0].extras["state_changes"] = [{"state_id": 1, "dispatches": [7]}]
    elif damage == "link_flags":
        scene.nodes[3].extras["link_flags"] = "push"
    else:
        scene.nodes[2].extras["tr4_sphere"] = [1, 2]
    try:
        doc = TRWAD.from_scene(scene)
    except FormatError as e:
        assert "not usable" in str(e)
        assert damage in ("textures", "commands", "dispatch")
    else:   # ignored: the computed value is used instead
        assert damage in ("link_flags", "sphere")
        if damage == "link_flags":   # the tree's own encoding: one child needs no push
            assert doc.root["link_words"][:4].tolist() == [0, 10, -20, 30]
        else:                        # a sphere enclosing the mesh, flags 0
            assert doc.root["meshes"][0]["radius"] == 182
            assert doc.root["meshes"][0]["flags"] == 0
        data = doc.encode()
        assert potsherd.read(data).encode() == data


def _posed_triangles(scene: Scene, time: float, rigid: bool = False) -> np.ndarray:
    """(T, 3, 3) world triangles of ``scene`` posed by animation 0 at ``time``;
    ``rigid`` binds every vertex to its dominant joint only."""
    import copy
    from potsherd.scene.ops import sample_node_trs
    s = copy.deepcopy(scene)
    anim = s.animations[0]
    for n in {c.node for c in anim.channels}:
        t, r, sc = sample_node_trs(s, anim, n, [time])
        nd = s.nodes[n]
        nd.translation, nd.rotation, nd.scale, nd.matrix = t[0], r[0], sc[0], None
    if rigid:
        for m in s.meshes:
            for p in m.primitives:
                if p.joints is not None:
                    w, j = np.asarray(p.weights), np.asarray(p.joints)
                    p.joints = np.zeros_like(j)
                    p.joints[:, 0] = j[np.arange(len(j)), w.argmax(1)]
                    p.weights = np.zeros_like(w)
                    p.weights[:, 0] = 1
    return np.concatenate([x.positions[x.indices].reshape(-1, 3, 3) for x in triangle_sets(s)])


@pytest.mark.skipif(not GLBS or not CORPUS.is_dir(), reason="shared corpus not present")
def test_blender_skinned_gltf_pasted_over_mummy_poses_like_the_source(tmp_path):
    """Blender's huesitos (11 bones, smooth skin) replacing tut1's MUMMY: the
    moveable taken back out of the wad poses like the source with rigid weights
    (triangles whose corners share a dominant joint, 4 times of its 1.6 s clip;
    measured within 2.1 cm of a 5.4 m model), although MUMMY's own animation 0 has
    another frame_duration (the timing is the glTF's)."""
    src = read_gltf(ROOT / "glb" / "blender_assimp__huesitos.glb")
    wad = potsherd.read(str(WADS[0]))
    assert wad.root["animations"][wad.root["moveables"][
        [m["object_id"] for m in wad.root["moveables"]].index(47)]["anim_index"]][
        "frame_duration"] != 1
    doc = WAD.from_scene(read_gltf(ROOT / "glb" / "blender_assimp__huesitos.glb"), like=wad,
                         object_id=47)
    back = _through_glb(doc.codec.to_scene(doc, moveable="MUMMY"), tmp_path)
    p = src.meshes[0].primitives[0]
    w, j = np.asarray(p.weights), np.asarray(p.joints)
    dom = j[np.arange(len(j)), w.argmax(1)][np.asarray(p.indices).reshape(-1, 3)]
    uniform = (dom[:, 0] == dom[:, 1]) & (dom[:, 1] == dom[:, 2])
    assert uniform.sum() == 42
    for time in (0.0, 0.5, 1.0, 1.5):
        a = _posed_triangles(src, time, rigid=True)[uniform].mean(1)
        b = _posed_triangles(back, time).mean(1)
        miss = np.linalg.norm(a[:, None] - b[None], axis=2).min(1)
        assert miss.max() < 0.03, (time, miss.max())
    # control: another time of the source does not match
    a = _posed_triangles(src, 0.5, rigid=True)[uniform].mean(1)
    b = _posed_triangles(back, 1.5).mean(1)
    assert np.linalg.norm(a[:, None] - b[None], axis=2).min(1).max() > 0.2


def test_large_texture_areas_are_shrunk_with_a_warning():
    from PIL import Image as PILImage
    s = Scene()
    pixels = np.random.default_rng(3).integers(0, 255, (512, 512, 3), dtype=np.uint8)
    img = s.add_image(Image.from_pil(PILImage.fromarray(pixels, "RGB")))
    mat = s.add_material(Material(base_color_texture=TextureRef(image=img)))
    pos = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float32)
    for uv, name in ((np.array([[0, 0], [1, 0], [0, 1]], np.float32), "big"),
                     (np.array([[0, 0], [0.05, 0], [0, 0.05]], np.float32), "small")):
        mesh = s.add_mesh(Mesh(primitives=[Primitive(positions=pos, uvs=[uv], material=mat)]))
        s.add_node(name=name, mesh=mesh)
    r = TRWAD.from_scene(s).root
    sizes = sorted((t["w"] + 1, t["h"] + 1) for t in r["textures"])
    assert sizes == [(26, 26), (64, 64)]       # 512 px shrunk to 64; 25.6 px -> 26
    # the loss measured: 64 x 64 / 2 + 26 x 26 / 2 texels kept of 512 x 512 / 2 + 25.6 x 25.6 / 2
    assert "1 polygon textures were shrunk to at most 64x64 pixels: 98% of the 131400 source " \
        "texels the baked polygons cover are lost" in s.warnings


def test_hostile_scenes_are_refused_before_allocating():
    s = _blender_like_scene()
    s.animations[0].channels[0].times = np.array([0.0, 1e12])   # 3e13 game frames
    with pytest.raises(FormatError, match="game frames"):
        TRWAD.from_scene(s)
    s = _blender_like_scene()
    s.animations[0].channels[0].times = np.array([0.0, np.inf])
    with pytest.raises(FormatError, match=r"time of key 1 is non-finite \(inf\)"):
        TRWAD.from_scene(s)
    s = _blender_like_scene()
    s.meshes[0].primitives[0].positions[0, 0] = np.nan
    with pytest.raises(FormatError, match="non-finite"):
        TRWAD.from_scene(s)


def _rotated_quad_scene(animated: bool) -> Scene:
    """One rigid quad on a node turned 90 degrees about +X (a Blender object with a
    rotation; Khronos' Cameras sample turns its mesh 45 degrees the same way)."""
    s = Scene()
    pos = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], np.float32)
    mi = s.add_mesh(Mesh(name="quad", primitives=[Primitive(
        positions=pos, indices=np.array([0, 1, 2, 0, 2, 3], np.uint32))]))
    q = quat_from_axis_angle([1, 0, 0], math.pi / 2)
    node = s.add_node(name="quad", mesh=mi, rotation=np.asarray(q))
    if animated:   # a still clip holding the same rotation
        s.add_animation(Animation(name="still", channels=[Channel(
            node=node, path="rotation", times=np.array([0.0], np.float32),
            values=np.asarray([q], np.float32))]))
    return s


def _drawn_points(doc: Document) -> np.ndarray:
    """World points of the encoded moveable as potsherd's own export draws it."""
    back = potsherd.read(doc.encode())
    scene = back.codec.to_scene(back)
    pts = [ts.positions[ts.indices.reshape(-1)] for ts in triangle_sets(scene)]
    return np.unique(np.concatenate(pts).round(3), axis=0)


@pytest.mark.parametrize("animated", [False, True])
def test_a_rotated_rigid_node_keeps_its_rotation(animated):
    """Only keyframes hold a bone's rotation in a moveable.  Without animations
    the node's rest rotation is baked into its mesh; with one, the mesh stays in
    the bone's frame and the keyframe turns it.  Both draw the quad in the x-z
    plane (+Y rotated to +Z), where the glTF shows it."""
    doc = TRWAD.from_scene(_rotated_quad_scene(animated))
    r = doc.root
    verts = np.asarray(r["meshes"][0]["vertices"]).reshape(-1, 3)
    if animated:
        assert r["animation_count"] == 1
        assert set(np.abs(verts[:, 2]).tolist()) == {0}                # still in the bone's x-y
    else:
        assert r["animation_count"] == 0
        assert set(np.abs(verts[:, 1]).tolist()) == {0}                # baked: no TR y extent
        assert np.abs(verts[:, 2]).max() > 0
    drawn = _drawn_points(doc)
    want = np.array([[0, 0, 0], [1, 0, 0], [1, 0, 1], [0, 0, 1]], float)
    unit = 1 / 512.0
    assert drawn.shape == (4, 3)
    assert np.abs(np.sort(drawn, axis=0) - np.sort(want, axis=0)).max() <= 2 * unit


@pytest.mark.parametrize("parent_scale", [(2.0, 1.0, 0.5), (2.0, 2.0, 2.0)],
                         ids=["non-uniform", "uniform"])
def test_a_bone_turning_under_a_squashed_parent_is_named(parent_scale):
    """A Blender object spinning under a parent scaled (2, 1, 0.5), its scale
    not applied: the parent's squash shears the spinner differently at each
    angle, which a rigid TR bone (rotation and the root's offset) cannot draw;
    the moveable came back up to 0.2 of its size off with no word.  The import
    now names the bone and the remedy.  A uniformly scaled parent (the control)
    only makes the spinner larger, which its vertices hold."""
    s = Scene()
    box = Primitive(positions=np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], np.float32),
                    indices=np.array([0, 1, 2, 0, 2, 3], np.uint32))
    base = s.add_node(name="base", mesh=s.add_mesh(Mesh(primitives=[box])), scale=parent_scale)
    spin = s.add_node(name="spinner", mesh=s.add_mesh(Mesh(primitives=[box])), parent=base,
                      translation=(0.0, 2.0, 0.0))
    turns = [quat_from_axis_angle([0, 1, 0], a) for a in (0.0, math.pi / 4, math.pi / 2)]
    s.add_animation(Animation(name="spin", channels=[Channel(
        node=spin, path="rotation", times=np.array([0.0, 0.5, 1.0], np.float32),
        values=np.asarray(turns, np.float32))]))
    TRWAD.from_scene(s)
    named = [w for w in s.warnings if "bone 'spinner' changes shape" in w]
    assert len(named) == (1 if parent_scale[0] != parent_scale[2] else 0), s.warnings


# --------------------------------------------------------------------------
# a whole wad's export (every moveable side by side) imported back


def _two_moveable_wad() -> Document:
    """The tiny moveable (object id 47) and a copy of it as HAIR (30) with its
    vertices moved, so the two differ."""
    import copy
    from potsherd.formats.trle.moveables import insert
    from trle_fixtures import tiny_wad_root
    t = potsherd.read(tiny_trwad_bytes(), format="trwad").root
    other = copy.deepcopy(t)
    other["moveable"]["object_id"] = 30
    for m in other["meshes"]:
        m["vertices"] = (np.asarray(m["vertices"]) + 100).astype(np.asarray(m["vertices"]).dtype)
    root = insert(tiny_wad_root(), other)
    return potsherd.read(Document("tr4wad", root, {"mesh_pad": 1}).encode(), format="tr4wad")


def _whole_wad_round_trip(wad: Document, tmp_path: Path) -> None:
    raw = wad.encode()
    scene = _through_glb(wad.codec.to_scene(wad), tmp_path)
    ids = [int(m["object_id"]) for m in wad.root["moveables"]]
    assert WAD.from_scene(scene, like=wad).encode() == raw       # unedited: the same wad
    fresh = WAD.from_scene(scene).root                           # no original: every moveable
    assert [int(m["object_id"]) for m in fresh["moveables"]] == ids
    for oid in ids:
        assert_same_moveable(extract(fresh, oid), extract(wad.root, oid))
    # each moveable alone, as --option moveable picks it
    for oid in ids:
        one = TRWAD.from_scene(scene, moveable=str(oid)).root
        assert_same_moveable(one, extract(wad.root, oid))


def test_a_whole_wads_export_imports_back_moveable_by_moveable(tmp_path):
    """A wad exports all its moveables side by side; importing that glTF took the
    first moveable with every other moveable's triangles on its root bone and
    every animation of the scene, so no moveable came back.  Each is now its own
    subtree with its own animations, and a wad import pastes every one."""
    _whole_wad_round_trip(_two_moveable_wad(), tmp_path)


def _ancestors(parents: list, i: int) -> list:
    out = []
    while i is not None:
        out.append(i)
        i = parents[i]
    return out


def test_an_edited_moveable_of_a_whole_wad_export_is_the_only_change(tmp_path):
    wad = _two_moveable_wad()
    scene = _through_glb(wad.codec.to_scene(wad), tmp_path)
    hair = next(i for i, n in enumerate(scene.nodes)
                if n.extras.get("tr4_moveable", {}).get("object_id") == 30)
    parents = scene.parents()
    for n in scene.nodes:                    # HAIR's meshes twice as large
        joints = scene.skins[n.skin].joints if n.skin is not None else []
        if n.mesh is not None and hair in _ancestors(parents, joints[0] if joints else
                                                     scene.nodes.index(n)):
            for prim in scene.meshes[n.mesh].primitives:
                prim.positions = prim.positions * np.float32(2.0)
    new = WAD.from_scene(scene, like=wad).root
    assert view_from_wad(new, 47) == view_from_wad(wad.root, 47)   # the other one untouched
    assert triangles(extract(new, 30)) != triangles(extract(wad.root, 30))
    assert [int(m["object_id"]) for m in new["moveables"]] == \
        [int(m["object_id"]) for m in wad.root["moveables"]]


def test_a_trwad_from_a_whole_wad_export_takes_the_moveable_of_its_original(tmp_path):
    wad = _two_moveable_wad()
    scene = _through_glb(wad.codec.to_scene(wad), tmp_path)
    hair = Document("trwad", extract(wad.root, 30), {"mesh_pad": 0})
    assert TRWAD.from_scene(scene, like=hair).encode() == hair.encode()
    assert not any("moveables" in w for w in scene.warnings)
    first = TRWAD.from_scene(scene).root                         # no original: the first, said
    assert first["moveable"]["object_id"] == int(wad.root["moveables"][0]["object_id"]) == 30
    assert any("holds 2 moveables; imported the first, HAIR" in w for w in scene.warnings)


@pytest.mark.skipif(not CORPUS.is_dir(), reason="shared tr4wad corpus not present")
def test_the_corpus_wad_exported_whole_imports_back_byte_exact(tmp_path):
    _whole_wad_round_trip(potsherd.read(str(WADS[1])), tmp_path)


# --------------------------------------------------------------------------
# foreign glTF details: integer colours, big meshes, the root's placement


def _grey_triangle_scene(colors: np.ndarray) -> Scene:
    """One triangle without normals whose vertex colours are its shades."""
    s = Scene()
    pos = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float32)
    mi = s.add_mesh(Mesh(primitives=[Primitive(positions=pos, colors=colors)]))
    s.add_node(name="tri", mesh=mi)
    return s


def _shades_by_x_y(r: dict) -> list:
    m = r["meshes"][0]
    return sorted(zip(np.asarray(m["vertices"]).reshape(-1, 3)[:, :2].tolist(),
                      np.asarray(m["shades"]).tolist()))


@pytest.mark.parametrize("dtype, grey", [(np.uint8, (64, 128, 255)),
                                         (np.uint16, (16384, 32768, 65535))],
                         ids=["u8", "u16"])
def test_normalized_integer_colours_are_shades_of_their_range(dtype, grey):
    """Blender and gltf-transform write COLOR_0 as normalised u8/u16 VEC4; read
    as such they must be divided by 255 or 65535 (they all came out white,
    shade 0).  A shade is a display brightness, so shade = 8191 * (1 - encode(grey))."""
    colors = np.array([[g, g, g, np.iinfo(dtype).max] for g in grey], dtype)
    r = TRWAD.from_scene(_grey_triangle_scene(colors)).root
    assert r["meshes"][0]["normal_count"] == -3
    unit = np.asarray(grey, np.float64) / np.iinfo(dtype).max
    want = np.round(8191 * (1 - srgb_formula.encode(unit))).astype(int).tolist()
    assert want == ([3784, 2157, 0] if dtype == np.uint8 else [3792, 2168, 0])
    # vertices (0,0) (1,0) (0,1) in glTF -> TR (0,0) (-512,0) (0,-512)
    assert _shades_by_x_y(r) == sorted(zip([[0, 0], [-512, 0], [0, -512]], want))
    floats = (colors / np.float32(np.iinfo(dtype).max)).astype(np.float32)
    assert _shades_by_x_y(TRWAD.from_scene(_grey_triangle_scene(floats)).root) == \
        _shades_by_x_y(r)                          # the float twin gives the same shades


def _uv_sphere(rings: int, segments: int, radius: float = 30.0) -> Scene:
    """A closed UV sphere: (rings - 1) * segments + 2 vertices (30 m: no two of
    them round to the same TR position)."""
    theta = np.linspace(0, math.pi, rings + 1)[1:-1]
    phi = np.linspace(0, 2 * math.pi, segments, endpoint=False)
    t, p = np.meshgrid(theta, phi, indexing="ij")
    body = np.stack([np.sin(t) * np.cos(p), np.cos(t), np.sin(t) * np.sin(p)], -1).reshape(-1, 3)
    pos = np.concatenate([[[0, 1, 0]], body, [[0, -1, 0]]]) * radius
    ring = lambda r: 1 + r * segments + (np.arange(segments) % segments)   # noqa: E731
    tris = []
    for k in range(segments):
        k1 = (k + 1) % segments
        tris.append([0, 1 + k1, 1 + k])
        tris.append([len(pos) - 1, 1 + (rings - 2) * segments + k,
                     1 + (rings - 2) * segments + k1])
    tris = [np.array(tris)]
    for r in range(rings - 2):
        a, b = ring(r), ring(r + 1)
        a1, b1 = np.roll(a, -1), np.roll(b, -1)
        tris += [np.stack([a, a1, b], 1), np.stack([a1, b1, b], 1)]
    s = Scene()
    # smooth normals: one vertex per position (without normals glTF means flat
    # ones, a vertex per face corner)
    mi = s.add_mesh(Mesh(primitives=[Primitive(
        positions=pos.astype(np.float32), normals=(pos / radius).astype(np.float32),
        indices=np.concatenate(tris).astype(np.uint32).ravel())]))
    s.add_node(name="sphere", mesh=mi)
    return s


@pytest.mark.parametrize("rings, segments", [(161, 256), (321, 512)], ids=["41k", "164k"])
def test_a_mesh_beyond_the_tr4_vertex_count_is_refused_before_encoding(rings, segments):
    """40,962 vertices failed inside the encoder ("cannot store 40962 as i16",
    the normal count) and 163,842 with a bare OverflowError (a u16 vertex index)."""
    s = _uv_sphere(rings, segments)
    count = (rings - 1) * segments + 2
    assert sum(len(ts.positions) for ts in triangle_sets(s)) == count
    with pytest.raises(FormatError) as e:
        TRWAD.from_scene(s)
    assert str(e.value) == (
        f"the mesh of bone 'sphere' has {count} vertices; a TR4 mesh holds at most 32767 "
        "(its normal or shade count, one per vertex, is a signed 16-bit number): decimate "
        "the mesh (Blender: Decimate modifier) or split it among more bones")


def _strip(n: int) -> Scene:
    """A flat strip of n distinct vertices (two rows), n - 2 triangles."""
    i = np.arange(n)
    pos = np.stack([i // 2, i % 2, np.zeros(n)], 1).astype(np.float32) / 512
    a = np.arange(n - 2)
    tris = np.where((a % 2 == 0)[:, None], np.stack([a, a + 1, a + 2], 1),
                    np.stack([a, a + 2, a + 1], 1))
    s = Scene()
    mi = s.add_mesh(Mesh(primitives=[Primitive(positions=pos,
                                               indices=tris.astype(np.uint32).ravel())]))
    s.add_node(name="strip", mesh=mi)
    return s


def test_the_tr4_vertex_limit_is_32767_per_mesh():
    doc = TRWAD.from_scene(_strip(32767))
    back = potsherd.read(doc.encode()).root["meshes"][0]
    assert (back["vertex_count"], back["normal_count"]) == (32767, 32767)
    with pytest.raises(FormatError, match="has 32768 vertices; a TR4 mesh holds at most 32767"):
        TRWAD.from_scene(_strip(32768))


def _placed_quad_scene(animated: bool, roots: int = 1) -> tuple[Scene, np.ndarray]:
    """Quads centred on their nodes, each node moved off the scene origin (as
    glTF-Transform's quantize and Blender's object location do), and the world
    points the glTF shows."""
    s = Scene()
    pos = np.array([[-0.5, -0.5, 0], [0.5, -0.5, 0], [0.5, 0.5, 0], [-0.5, 0.5, 0]], np.float32)
    mi = s.add_mesh(Mesh(name="quad", primitives=[Primitive(
        positions=pos, indices=np.array([0, 1, 2, 0, 2, 3], np.uint32))]))
    want = []
    for k in range(roots):
        t = np.array([1.0 + 3 * k, 1.0, 0.0])
        node = s.add_node(name=f"quad{k}", mesh=mi, translation=t)
        want.append(pos + t)
        if animated:   # a still clip holding the rest pose
            s.add_animation(Animation(name=f"still{k}", channels=[Channel(
                node=node, path="rotation", times=np.array([0.0], np.float32),
                values=np.asarray([[0, 0, 0, 1]], np.float32))]))
    return s, np.unique(np.concatenate(want).round(3), axis=0)


@pytest.mark.parametrize("animated", [False, True], ids=["static", "animated"])
@pytest.mark.parametrize("roots", [1, 2])
def test_a_root_node_keeps_its_place_relative_to_the_scene_origin(animated, roots):
    """The moveable's origin is the item's place on the floor, the glTF scene's
    origin.  A single root's offset from it was dropped without animations (the
    root bone's frame became the origin), re-centring the model; several roots
    kept theirs.  Now the offset goes into the vertices (no keyframes to hold
    it) or into the keyframes' offset, and the model is drawn where the glTF
    shows it."""
    s, want = _placed_quad_scene(animated, roots)
    doc = TRWAD.from_scene(s)
    r = doc.root
    drawn = _drawn_points(doc)
    assert drawn.shape == want.shape
    assert np.abs(drawn - want).max() <= 1 / 512.0
    if roots == 1:
        verts = np.asarray(r["meshes"][0]["vertices"]).reshape(-1, 3)
        if animated:      # the mesh around its bone, the bone at the keyframe offset
            assert sorted(verts.tolist()) == [[-256, -256, 0], [-256, 256, 0],
                                              [256, -256, 0], [256, 256, 0]]
            assert keyframes(r)[0][1] == [[-512, -512, 0]]
        else:             # x 0.5..1.5 m, y up 0.5..1.5 m: TR -x, -y
            assert sorted(verts.tolist()) == [[-768, -768, 0], [-768, -256, 0],
                                              [-256, -768, 0], [-256, -256, 0]]


def _turning_quad(duration: float, extra: list | None = None) -> Scene:
    """The quad turning 0 -> 90 degrees about +Y over ``duration`` seconds."""
    s = _rotated_quad_scene(False)
    s.nodes[0].rotation = None
    q = quat_from_axis_angle([0, 1, 0], math.pi / 2)
    s.add_animation(Animation(name="turn", channels=[Channel(
        node=0, path="rotation", times=np.array([0.0, duration], np.float32),
        values=np.asarray([[0, 0, 0, 1], q], np.float32)), *(extra or [])]))
    return s


def test_a_clip_between_keyframes_still_ends_in_its_last_pose():
    """Keyframes are spaced by frame_duration: a 0.875 s clip took 27 keyframes at
    30/s, the last at 0.867 s, short of the final pose; it now takes one more,
    which holds the end (a STEP clip's last pose was lost altogether)."""
    r = TRWAD.from_scene(_turning_quad(0.875)).root
    (count, _, quats), = keyframes(r)
    assert count == 28                                   # 0, 1/30, ..., 27/30 >= 0.875 s
    q = quat_from_axis_angle([0, 1, 0], math.pi / 2)
    last = quats[-1, 0]
    tr_end = [q[0], -q[1], -q[2], q[3]]                  # glTF -> TR axes (Y and Z flipped)
    assert abs(abs(float(np.dot(last, tr_end))) - 1) < 1e-9   # the end pose, exactly
    assert abs(abs(float(np.dot(quats[-2, 0], tr_end))) - 1) > 1e-5   # the one before is not
    r2 = TRWAD.from_scene(_turning_quad(0.9)).root       # on a keyframe: no extra one
    assert keyframes(r2)[0][0] == 28


def test_motion_a_keyframe_cannot_hold_is_named():
    s = _turning_quad(1.0, [Channel(node=0, path="scale", times=np.array([0.0, 1.0], np.float32),
                                    values=np.array([[1, 1, 1], [2, 2, 2]], np.float32))])
    TRWAD.from_scene(s)
    assert any(w.startswith("scale keys dropped (first in animation 'turn')") for w in s.warnings)
    quiet = _turning_quad(1.0, [Channel(node=0, path="scale", times=np.array([0.0, 1.0], np.float32),
                                        values=np.ones((2, 3), np.float32))])
    TRWAD.from_scene(quiet)                              # the control: a constant scale says nothing
    assert not any("dropped" in w for w in quiet.warnings)


def test_blended_skin_weights_are_named_when_each_triangle_follows_one_joint():
    from export_scenes import skinned_cube_scene
    s = skinned_cube_scene()          # 24 seam vertices (4 corners x 3 faces x 2 boxes) blend 50/50
    TRWAD.from_scene(s)
    assert any(w.startswith("24 skinned vertices blend several joints") for w in s.warnings)
    one = skinned_cube_scene()
    p = one.meshes[0].primitives[0]
    p.weights = np.zeros_like(p.weights)
    p.weights[:, 0] = 1.0                                 # the control: one joint each
    TRWAD.from_scene(one)
    assert not any("blend several joints" in w for w in one.warnings)


def test_triangles_with_corners_on_two_joints_are_named():
    """Rigid weights (each vertex on one joint) still stretch a triangle whose
    corners are on two joints; a moveable's triangle follows one, so say how
    many (8 side triangles of the upper box).  The control: none spans."""
    from export_scenes import rigid_spanning_scene
    s = rigid_spanning_scene()
    TRWAD.from_scene(s)
    assert any(w.startswith("8 skinned triangles have corners on different joints")
               for w in s.warnings)
    assert not any("blend several joints" in w for w in s.warnings)
    still = rigid_spanning_scene(span=False)
    TRWAD.from_scene(still)
    assert not any("corners on different joints" in w for w in still.warnings)


def test_base_colour_factors_are_baked_as_srgb_texels():
    """glTF's baseColorFactor is linear light and texels are sRGB: a flat colour
    is encoded, and a tinted texture is multiplied in linear light.  Blender's
    light blue (0.514, 0.606, 0.891) was baked as (131, 155, 227), its linear
    values times 255, which every viewer draws darker; it is (190, 204, 242)."""
    from PIL import Image as PILImage
    factor = (0.5140066, 0.6060802, 0.8912759, 1.0)
    s = Scene()
    grey = s.add_image(Image.from_pil(PILImage.fromarray(np.full((8, 8, 3), 188, np.uint8))))
    flat = s.add_material(Material(base_color=factor))
    tinted = s.add_material(Material(base_color=(0.5, 0.5, 0.5, 1.0),
                                     base_color_texture=TextureRef(image=grey)))
    plain = s.add_material(Material(base_color_texture=TextureRef(image=grey)))
    pos = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float32)
    uv = np.array([[0, 0], [1, 0], [0, 1]], np.float32)
    for k, mat in enumerate((flat, tinted, plain)):
        mesh = s.add_mesh(Mesh(primitives=[Primitive(positions=pos + k, uvs=[uv], material=mat)]))
        s.add_node(name=f"m{k}", mesh=mesh)
    r = TRWAD.from_scene(s).root
    colours = {tuple(model.bgr_block(t)[0, 0].tolist()) for t in r["textures"]}
    # sRGB 188 is linear 0.5; half of it is linear 0.25, sRGB 137 (the old
    # product in sRGB, 94, is the negative control); an untinted texel stays
    assert colours == {(190, 204, 242), (137, 137, 137), (188, 188, 188)}, colours


def test_every_shade_survives_linear_colour_and_back():
    """The export writes a shade's display brightness sRGB-decoded as float32
    COLOR_0, and the import encodes it back: all 8,192 shades come back exactly
    (16-bit integer colours would merge the darkest ones)."""
    from potsherd.formats.trle.importing import _brightness
    from potsherd.scene.bake_colors import lit_colors
    shades = np.arange(8192)
    grey = np.repeat(((8191 - shades) / 8191)[:, None], 3, axis=1)
    colour = lit_colors(grey)
    assert colour.dtype == np.float32
    np.testing.assert_allclose(colour[:, 0], srgb_formula.decode(grey[:, 0]), rtol=1e-6, atol=1e-9)
    back = np.round(8191 - _brightness(colour) * 8191).astype(int)
    assert back.tolist() == shades.tolist()
    # negative control: the same colours quantised to u16 lose dark shades
    u16 = np.round(colour.astype(np.float64) * 65535).astype(np.uint16)
    lossy = np.round(8191 - _brightness(u16) * 8191).astype(int)
    assert (lossy != shades).sum() > 10
