"""``--like`` after an editor's unedited re-save: what Blender 3.4's glTF import and
export change (measured on the corpus) must not count as an edit, and the original
bytes come back; a real edit still counts, is in the rebuilt shape, and leaves the
rest of the shape as the original has it.

Blender's changes, simulated here on a shape the package's own importer built:
every extra dropped (names made unique by the export keep their ``.N``), nodes
listed children first with siblings sorted by name, an empty top-level node left
per skinned mesh, vertices re-split and re-ordered with each triangle starting at
another corner and float32 noise, clips resampled at 24 fps (quaternions
component-wise) and cut at their last whole frame, every bone keyed in every clip,
bones turned toward their children (bind matrices and keys making up for it), and
the skeleton's rest read with the export's axis change applied twice (the skin
names the ``z-up`` wrapper as its skeleton; keyed channels are not affected).
The corpus tier runs Blender itself when it is installed."""
from __future__ import annotations

import copy
import math
import shutil

import numpy as np
import pytest

import potsherd
from potsherd.export.gltf import write_glb
from potsherd.formats.darkstar import DTS
from potsherd.formats.darkstar.geometry import name_text
from potsherd.formats.darkstar.model import sample, shape_model
from potsherd.formats.darkstar.scene import to_scene
from potsherd.formats.darkstar.skinning import world_matrices
from potsherd.scene import (Z_UP_Y_FORWARD_TO_GLTF, Animation, Channel, Material, Mesh, Primitive,
                            Scene, decompose_matrix, quat_from_axis_angle, quat_multiply,
                            quat_normalize, trs_to_matrix)
from potsherd.scene.gltf_read import read_gltf

from blender_sim import renumber_nodes, run_blender
from corpus_paths import corpus_path

FPS = 24


# ---- the original: a small shape the importer builds ---------------------------------


def _box(centre, size: float, material: int) -> Primitive:
    """A box of 6 faces with their own corners (24 vertices, 12 triangles)."""
    pos, nrm, uv, idx = [], [], [], []
    for axis in range(3):
        for sign in (-1.0, 1.0):
            n = np.zeros(3)
            n[axis] = sign
            u, v = np.roll(np.eye(3), 1, axis=0)[axis], np.roll(np.eye(3), 2, axis=0)[axis]
            base = len(pos)
            for a, b in ((-1, -1), (1, -1), (1, 1), (-1, 1)):
                pos.append(np.asarray(centre) + size * (n + a * u + b * v) / 2)
                nrm.append(n)
                uv.append(((a + 1) / 2, (b + 1) / 2))
            quad = [0, 1, 2, 0, 2, 3] if sign > 0 else [0, 2, 1, 0, 3, 2]
            idx += [base + k for k in quad]
    return Primitive(positions=np.array(pos, np.float32), normals=np.array(nrm, np.float32),
                     uvs=[np.array(uv, np.float32)], indices=np.array(idx, np.uint32),
                     material=material)


def _original_scene() -> Scene:
    s = Scene(name="walker")
    steel = s.add_material(Material(name="steel", base_color=(0.6, 0.6, 0.7, 1.0)))
    glow = s.add_material(Material(name="glow", base_color=(1.0, 0.5, 0.0, 1.0)))

    def part(name, parent, at, size, mats):
        mesh = s.add_mesh(Mesh(name=name, primitives=[_box((0.0, 0.0, 0.0), size, m) for m in mats]))
        return s.add_node(name=name, parent=parent, translation=list(at), mesh=mesh)

    hull = part("hull", None, (0.0, 0.5, 0.0), 1.0, [steel])
    turret = part("turret", hull, (0.0, 0.8, 0.0), 0.6, [steel, glow])   # siblings not sorted
    arm = part("arm", hull, (0.9, 0.2, 0.0), 0.3, [steel])
    part("leg", hull, (-0.6, -0.6, 0.0), 0.4, [steel])
    gun = part("gun", turret, (0.0, 0.1, 0.6), 0.2, [glow])
    ten = np.arange(7) / 10.0                                   # 10 fps keys, 0.6 s
    spin = quat_from_axis_angle(np.tile([0.0, 1.0, 0.0], (7, 1)), ten * math.pi * 1.5)
    slide = np.array([[0.9, 0.2, 0.0], [0.9, 0.5, 0.1], [0.9, 0.2, 0.0]], np.float32)
    s.add_animation(Animation(name="spin", channels=[
        Channel(turret, "rotation", ten, spin.astype(np.float32)),
        Channel(arm, "translation", np.array([0.0, 0.25, 0.5]), slide)]))
    thirty = np.arange(10) / 30.0                              # 30 fps keys: denser than 24
    nod = quat_from_axis_angle(np.tile([1.0, 0.0, 0.0], (10, 1)), 0.5 * np.sin(thirty * 12))
    s.add_animation(Animation(name="nod", channels=[Channel(gun, "rotation", thirty,
                                                            nod.astype(np.float32))]))
    return s


def _original() -> tuple[potsherd.Document, bytes]:
    made = DTS.from_scene(_original_scene())
    data = made.codec.encode(made)
    return potsherd.read(data, format="dts"), data


# ---- what Blender does to it ------------------------------------------------------------


def _nlerp(times, values, at):
    """Component-wise interpolation, held outside (how Blender's curves run)."""
    times, values = np.asarray(times, np.float64), np.asarray(values, np.float64)
    out = np.stack([np.interp(at, times, values[:, k]) for k in range(values.shape[1])], axis=1)
    return out


def _step(times, values, at):
    i = np.clip(np.searchsorted(np.asarray(times, np.float64), at + 1e-9, side="right") - 1,
                0, len(times) - 1)
    return np.asarray(values, np.float64).reshape(len(times), -1)[i]


def _resample(anim: Animation, scene: Scene, joints: list) -> dict:
    """Every channel at 24 fps up to the last whole frame; every joint keyed (held at
    its rest where the clip does not key it).  Returns which joint paths were held."""
    end = max(float(np.max(c.times)) for c in anim.channels)
    grid = np.arange(int(math.floor(end * FPS + 1e-6)) + 1) / FPS
    keyed = {(c.node, c.path) for c in anim.channels}
    for c in anim.channels:
        if c.interpolation == "STEP":
            c.values = _step(c.times, c.values, grid)
            c.interpolation = "STEP" if c.path == "weights" else "LINEAR"
        else:
            c.values = _nlerp(c.times, c.values, grid)
            if c.path == "rotation":
                c.values = quat_normalize(c.values)
        c.times = grid
    held = {}
    for j in joints:
        n = scene.nodes[j]
        for path, rest in (("rotation", n.rotation or (0, 0, 0, 1)), ("translation", n.translation or (0, 0, 0)),
                           ("scale", n.scale or (1, 1, 1))):
            if (j, path) not in keyed:
                anim.channels.append(Channel(j, path, grid, np.tile(np.asarray(rest, np.float64), (len(grid), 1))))
                held[(j, path)] = True
    return held


def _turn_bones(scene: Scene, held: list, rng) -> None:
    """Each joint's frame turned by a rotation C (a bone pointing elsewhere), the
    skeleton root's rest also by the axis change once more; bind matrices, vertices
    and keys make up for it so every keyed pose draws the same."""
    skin = scene.skins[0]
    joints = list(skin.joints)
    parents = scene.parents()
    worlds = world_matrices(scene)
    turn = {j: trs_to_matrix(rotation=quat_normalize(rng.normal(size=4))) for j in joints}
    again = trs_to_matrix(rotation=np.array(Z_UP_Y_FORWARD_TO_GLTF))
    wrap = parents[joints[0]]
    while wrap is not None and wrap in turn:
        wrap = parents[wrap]
    zup = worlds[wrap] if wrap is not None else np.eye(4)
    k = zup @ again @ np.linalg.inv(zup)            # the rest picture, turned as a whole
    roots = [j for j in joints if parents[j] not in turn]

    def local(n):
        return trs_to_matrix(n.translation or (0, 0, 0), n.rotation or (0, 0, 0, 1), n.scale or (1, 1, 1))

    def left(j):
        return np.eye(4) if j in roots else np.linalg.inv(turn[parents[j]])

    new_local = {j: (again @ local(scene.nodes[j]) @ turn[j] if j in roots
                     else left(j) @ local(scene.nodes[j]) @ turn[j]) for j in joints}
    for a, hold in zip(scene.animations, held):
        by = {(c.node, c.path): c for c in a.channels}
        for j in joints:
            r, t, sc = by[(j, "rotation")], by[(j, "translation")], by[(j, "scale")]
            mats = left(j)[None] @ trs_to_matrix(t.values, quat_normalize(r.values), sc.values) @ turn[j][None]
            tv, qv, sv = decompose_matrix(mats)
            rest = decompose_matrix(new_local[j])
            for c, v, rv in ((t, tv, rest[0]), (r, qv, rest[1]), (sc, sv, rest[2])):
                c.values = np.tile(rv, (len(c.times), 1)) if hold.get((j, c.path)) else v
    for j in joints:
        t, q, sc = decompose_matrix(new_local[j])
        n = scene.nodes[j]
        n.translation, n.rotation, n.scale = t.tolist(), q.tolist(), sc.tolist()
    worlds = world_matrices(scene)
    skin.inverse_bind_matrices = np.stack([np.linalg.inv(worlds[j]) for j in joints])
    for n in scene.nodes:
        if n.skin is None:
            continue
        for p in scene.meshes[n.mesh].primitives:
            p.positions = np.asarray(p.positions, np.float64) @ k[:3, :3].T + k[:3, 3]
            p.normals = np.asarray(p.normals, np.float64) @ k[:3, :3].T
            for tg in p.targets:
                tg.positions = np.asarray(tg.positions, np.float64) @ k[:3, :3].T


def _resplit(prim: Primitive, rng, noise: float) -> None:
    """Corners re-welded (every other triangle split off), vertices shuffled, each
    triangle started at its second corner, triangles shuffled, float noise added."""
    n = len(prim.positions)
    tri = (np.arange(n) if prim.indices is None else np.asarray(prim.indices, np.int64)).reshape(-1, 3)
    tri = tri[:, [1, 2, 0]][rng.permutation(len(tri))]
    corners = tri.reshape(-1)
    tag = np.repeat(np.where(np.arange(len(tri)) % 2 == 0, np.arange(len(tri)), -1), 3)[:, None]
    arrays = [prim.positions, prim.normals, prim.uvs[0]] + [t.positions for t in prim.targets]
    arrays += [a for a in (prim.joints, prim.weights) if a is not None]
    key = np.concatenate([np.asarray(a, np.float64)[corners] for a in arrays] + [tag], axis=1)
    _, first, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
    perm = rng.permutation(len(first))
    pick = corners[first[perm]]
    prim.indices = np.argsort(perm)[inverse.reshape(-1)].astype(np.uint32)
    pos = np.asarray(prim.positions, np.float64)[pick]
    prim.positions = (pos + rng.normal(scale=noise, size=pos.shape)).astype(np.float32)
    prim.normals = np.asarray(prim.normals, np.float32)[pick]
    prim.uvs = [np.asarray(prim.uvs[0], np.float32)[pick]]
    for t in prim.targets:
        t.positions = np.asarray(t.positions, np.float32)[pick]
    if prim.joints is not None:
        prim.joints, prim.weights = np.asarray(prim.joints)[pick], np.asarray(prim.weights)[pick]


def _nodes_children_first(scene: Scene) -> None:
    """The node list in Blender's order: children before parents, siblings by name."""
    order: list = []

    def visit(i):
        for c in sorted(scene.nodes[i].children, key=lambda c: scene.nodes[c].name):
            visit(c)
        order.append(i)
    for r in sorted(scene.roots, key=lambda r: scene.nodes[r].name):
        visit(r)
    renumber_nodes(scene, order)
    for n in scene.nodes:
        n.children.sort(key=lambda c: scene.nodes[c].name)


def blender_resave(scene: Scene, seed: int = 1) -> Scene:
    s = copy.deepcopy(scene)
    rng = np.random.default_rng(seed)
    joints = list(s.skins[0].joints) if s.skins else []
    s.animations.sort(key=lambda a: a.name)
    held = [_resample(a, s, joints) for a in s.animations]
    if joints:
        _turn_bones(s, held, rng)
        for n in [n for n in s.nodes if n.skin is not None]:
            s.add_node(name=n.name + ".2")              # the empty Blender leaves behind
    extent = max(float(np.abs(p.positions).max()) for m in s.meshes for p in m.primitives)
    for m in s.meshes:
        for p in m.primitives:
            _resplit(p, rng, 1e-7 * extent)
    for x in [s] + s.nodes + s.meshes + s.materials + s.animations + s.skins:
        x.extras = {}
    for m in s.meshes:
        for p in m.primitives:
            p.extras = {}
    _nodes_children_first(s)
    return s


def _through_glb(scene: Scene, tmp_path, name: str = "b.glb") -> Scene:
    write_glb(scene, tmp_path / name)
    return read_gltf(tmp_path / name)


def _bytes(doc: potsherd.Document) -> bytes:
    return doc.codec.encode(doc)


# ---- unedited: the original -------------------------------------------------------------


@pytest.mark.parametrize("skin", [None, False], ids=["skinned", "nodes"])
def test_a_blender_like_resave_gives_back_the_original_bytes(skin, tmp_path):
    doc, original = _original()
    exported = to_scene(doc, skin=skin)
    assert bool(exported.skins) == (skin is None)
    saved = _through_glb(blender_resave(exported), tmp_path)
    assert [a.name for a in saved.animations] == ["nod", "spin"]
    assert all(len(c.times) > 7 for c in saved.animations[1].channels)      # resampled
    out = DTS.from_scene(saved, like=doc)
    assert _bytes(out) == original
    assert not any("differs" in w for w in saved.warnings)


# ---- edited: rebuilt, with the edit, the rest kept ---------------------------------------


def _mesh_blocks(doc: potsherd.Document) -> list:
    return [_bytes(potsherd.Document("dts", m, {}, b"", [])) for m in doc.root["payload"]["meshes"]]


def _blocks_by_object(doc: potsherd.Document) -> dict:
    p, blocks, names = doc.root["payload"], _mesh_blocks(doc), _names(doc)
    return {names[int(r["fName"])]: blocks[int(r["fMeshIndex"])] for r in p["objects"]}


def _node_names(doc: potsherd.Document) -> list:
    names = _names(doc)
    return [names[int(n["fName"])] for n in doc.root["payload"]["nodes"]]


def _names(doc: potsherd.Document) -> list:
    return [name_text(bytes(x)) for x in doc.root["payload"]["names"]["name"]]


def _object_corners(doc: potsherd.Document) -> dict:
    m = shape_model(to_scene(doc, skin=False), version=int(doc.root["version"]))
    return {o.name: o.frames[0] for o in m.objects}


def _edit_and_rebuild(tmp_path, edit):
    doc, original = _original()
    saved = _through_glb(blender_resave(to_scene(doc)), tmp_path)
    edit(saved)
    out = potsherd.read(_bytes(DTS.from_scene(saved, like=doc)), format="dts")
    assert _bytes(out) != original
    assert any("differs from the original" in w for w in saved.warnings)
    return doc, out


STEEL, GLOW = (0.6, 0.6, 0.7), (1.0, 0.5, 0.0)


def _material(scene: Scene, rgb: tuple) -> int:
    """The scene material of that colour (the shape's list names RGB materials by index)."""
    return int(np.argmin([np.abs(np.asarray(m.base_color[:3]) - rgb).max() for m in scene.materials]))


def _holder_of(scene: Scene, rgb: tuple) -> Primitive:
    """The biggest primitive of that material (the hull's, in this shape)."""
    k = _material(scene, rgb)
    return max((p for m in scene.meshes for p in m.primitives if p.material == k),
               key=lambda p: len(p.positions))


def test_a_moved_vertex_is_rebuilt_and_only_its_object_changes(tmp_path):
    moved = {}

    def edit(s):
        prim = _holder_of(s, STEEL)
        prim.positions = np.array(prim.positions, np.float32)
        hit = np.all(prim.positions == prim.positions[0], axis=1)    # the vertex (all its copies)
        moved["at"] = prim.positions[0].copy()
        prim.positions[hit] += np.float32(0.2)
    doc, out = _edit_and_rebuild(tmp_path, edit)
    before, after = _object_corners(doc), _object_corners(out)
    assert sorted(before) == sorted(after)
    changed = [n for n in before if before[n].shape != after[n].shape
               or np.abs(np.sort(before[n], axis=0) - np.sort(after[n], axis=0)).max() > 1e-3]
    assert len(changed) == 1
    shift = np.abs(np.sort(after[changed[0]], axis=0) - np.sort(before[changed[0]], axis=0)).max()
    assert 0.05 < shift < 0.3
    # every other object keeps its original mesh block, byte for byte (the bounds box
    # is made anew: the moved corner is on it)
    a, b = _blocks_by_object(doc), _blocks_by_object(out)
    assert sorted(a) == sorted(b)
    assert sorted(n for n in a if a[n] != b[n]) == sorted([changed[0], "bounds"])
    # and the clips keep the original's keys (not Blender's 24 fps samples)
    p, o = out.root["payload"], doc.root["payload"]
    assert len(p["keyframes"]) == len(o["keyframes"])
    assert _names(out) == _names(doc)


def test_an_edited_key_is_rebuilt_with_the_edit(tmp_path):
    def edit(s):
        spin = next(a for a in s.animations if a.name == "spin")
        ch = max((c for c in spin.channels if c.path == "rotation"),
                 key=lambda c: np.ptp(np.asarray(c.values), axis=0).max())     # the turret
        v = np.array(ch.values, np.float64)
        k = len(v) // 2
        extra = quat_from_axis_angle(np.array([1.0, 0.0, 0.0]), 0.6)
        v[k] = quat_multiply(v[k], extra)
        ch.values = v.astype(np.float32)
    doc, out = _edit_and_rebuild(tmp_path, edit)
    a = shape_model(to_scene(doc, skin=False))
    b = shape_model(to_scene(out, skin=False))
    sa = next(s for s in a.sequences if s.name == "spin")
    sb = next(s for s in b.sequences if s.name == "spin")
    node = next(i for i, n in enumerate(a.nodes) if n.name == "turret")
    node_b = next(i for i, n in enumerate(b.nodes) if n.name == "turret")
    ta, qa = sa.node_keys[node][0], sa.node_keys[node][1]
    tb, qb = sb.node_keys[node_b][0], sb.node_keys[node_b][1]
    at = np.linspace(0, 0.55, 23)
    qa_t = sample(ta, qa, "LINEAR", at, rotation=True)
    qb_t = sample(tb, qb, "LINEAR", at, rotation=True)
    gap = 2 * np.degrees(np.arccos(np.clip(np.abs((qa_t * qb_t).sum(axis=1)), 0, 1)))
    assert gap.max() > 20                                   # the edit is there
    assert gap.min() < 0.5                                  # and the rest of the clip is not moved
    # the other clip is the original's, key for key
    na = next(s for s in a.sequences if s.name == "nod")
    nb = next(s for s in b.sequences if s.name == "nod")
    gun_a = next(i for i, n in enumerate(a.nodes) if n.name == "gun")
    gun_b = next(i for i, n in enumerate(b.nodes) if n.name == "gun")
    np.testing.assert_allclose(na.node_keys[gun_a][0], nb.node_keys[gun_b][0], atol=1e-6)
    np.testing.assert_allclose(np.abs((na.node_keys[gun_a][1] * nb.node_keys[gun_b][1]).sum(axis=1)), 1,
                               atol=1e-6)


def test_a_renamed_node_is_rebuilt_under_its_new_name(tmp_path):
    def edit(s):
        next(n for n in s.nodes if n.name == "arm").name = "claw"
    doc, out = _edit_and_rebuild(tmp_path, edit)
    before, after = _node_names(doc), _node_names(out)
    assert "claw" in after and "arm" not in after and "arm" in before
    assert sorted(after) == sorted("claw" if n == "arm" else n for n in before)


def test_a_changed_material_is_rebuilt_with_its_colour(tmp_path):
    def edit(s):
        s.materials[_material(s, GLOW)].base_color = (0.0, 0.0, 1.0, 1.0)
    doc, out = _edit_and_rebuild(tmp_path, edit)
    rows = out.root["payload"]["materials"]["payload"]["materials"]
    blue = [(int(r["fRed"]), int(r["fGreen"]), int(r["fBlue"])) for r in rows]
    assert (0, 0, 255) in blue


def test_a_vertex_moved_within_float_noise_is_not_an_edit(tmp_path):
    """Control of the tolerance from the other side: noise well under the shape's
    quantisation step leaves the original (a step is extent / 255)."""
    doc, original = _original()
    saved = _through_glb(blender_resave(to_scene(doc)), tmp_path)
    prim = _holder_of(saved, STEEL)
    prim.positions = np.array(prim.positions, np.float32) + np.float32(2e-6)
    assert _bytes(DTS.from_scene(saved, like=doc)) == original


# ---- the real Blender, on corpus shapes ---------------------------------------------------

DTS_DIR = corpus_path("darkstar")
BLENDER_SHAPES = ["starsiege/arrow5.DTS", "starsiege/pr_ara.DTS",
                  "tribesrebirth/entities_vol/plasma.DTS", "tribesrebirth/entities_vol/larmor.dts"]


@pytest.mark.skipif(shutil.which("blender") is None, reason="Blender not installed")
@pytest.mark.skipif(not DTS_DIR.is_dir(), reason="shared Darkstar corpus not present")
def test_corpus_shapes_through_blender_come_back_byte_exact(tmp_path):
    """A static shape, a skinned Starsiege walker, a Tribes weapon with visibility
    clips and a Tribes armor (12 clips) exported, re-saved by Blender unedited and
    imported with ``--like``: the original bytes."""
    for rel in BLENDER_SHAPES:
        path = DTS_DIR / rel
        doc = potsherd.read(path)
        src, back = tmp_path / "in.glb", tmp_path / "out.glb"
        write_glb(to_scene(doc), src)
        back.unlink(missing_ok=True)
        run_blender(src, back, tmp_path)
        scene = read_gltf(back)
        out = DTS.from_scene(scene, like=doc)
        assert _bytes(out) == path.read_bytes(), (rel, scene.warnings)
