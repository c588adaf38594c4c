"""Knight Online glTF import (issue 15): from_scene for the mesh, skin, skeleton,
clip, part, plug and character formats, as the exact inverse of the export."""
from __future__ import annotations

import copy
import io
import os
import re
from pathlib import Path

import numpy as np
import pytest

import potsherd
import srgb_formula
from potsherd import FormatError
from potsherd.export.gltf import write_glb
from potsherd.formats.ko.codecs import CODECS
from potsherd.formats.ko.pmgen import build_progressive, replay
from potsherd.scene import Animation, Channel, Material, Mesh, Primitive, Scene, Skin
from potsherd.scene.gltf_read import read_gltf
from potsherd.scene.ops import triangle_sets, world_matrices
from corpus_paths import CORPUS_ROOT

ROOT = CORPUS_ROOT.parent
KO = ROOT / "corpus" / "ko" / "data"
GLB = ROOT / "corpus" / "glb"
SPEC = ROOT / "specs" / "knight-online-wire-layout.txt"
CODEC = {c.name: c for c in CODECS}


def corpus(rel: str) -> Path:
    path = KO / rel
    if not path.is_file():
        pytest.skip(f"{path} absent")
    return path


def via_glb(scene: Scene, tmp_path: Path) -> Scene:
    """What a user's glb holds: the scene written by potsherd's writer and read back."""
    out = tmp_path / "via.glb"
    write_glb(scene, out)
    return read_gltf(out)


def export(path: Path, **options) -> Scene:
    doc = potsherd.read(path)
    return doc.codec.to_scene(doc, source_path=str(path), **options)


def corner_set(scene: Scene, digits: int = 4) -> list:
    """Every triangle as its sorted world-space corners (position, uv), rounded:
    comparable across vertex orders and corner rotations."""
    out = []
    for s in triangle_sets(scene):
        uv = s.uvs[0] if s.uvs else np.zeros((len(s.positions), 2))
        key = np.concatenate([s.positions, uv], axis=1).round(digits)
        for t in s.indices.reshape(-1, 3):
            out.append(tuple(sorted(map(tuple, key[t]))))
    return sorted(out)


def write_all(files, folder: Path) -> None:
    for name, doc in files:
        data = doc.encode()
        assert potsherd.read(data, format=doc.format).encode() == data   # byte-exact re-encode
        (folder / name).write_bytes(data)


# ---- progressive mesh generation ----------------------------------------------------------

def grid(n=8):
    xs, zs = np.meshgrid(np.arange(n, dtype=float), np.arange(n, dtype=float))
    pos = np.stack([xs.ravel(), np.sin(xs.ravel()) * 0.3, zs.ravel()], 1)
    tris = []
    for i in range(n - 1):
        for j in range(n - 1):
            a = i * n + j
            tris += [(a, a + 1, a + n), (a + 1, a + n + 1, a + n)]
    return pos, np.array(tris)


def canon(tris):
    return sorted(tuple(np.roll(t, -int(np.argmin(t)))) for t in np.asarray(tris).reshape(-1, 3))


def test_progressive_mesh_replays_to_the_input_and_every_lod_is_valid():
    pos, tris = grid()
    p = build_progressive(pos, tris)
    assert (p.min_vertices, p.min_indices) == (0, 0)          # collapsed to nothing, as the engine's tool
    assert sum(c["verticesToLose"] for c in p.collapses) == len(pos)
    assert sum(c["indicesToLose"] for c in p.collapses) == tris.size
    nv, ni, idx = replay(p)
    assert (nv, ni) == (64, 294)
    assert canon(p.order[idx[:ni]]) == canon(tris)             # full detail = the input, winding kept
    for target in (48, 20, 6):
        nv, ni, idx = replay(p, target)
        live = idx[:ni].reshape(-1, 3)
        assert nv <= target and (live < nv).all()              # only live vertices referenced
        assert (live[:, 0] != live[:, 1]).all() and (live[:, 1] != live[:, 2]).all()
    # negative control: one wrong index change breaks the full-detail replay
    p.index_changes[0] = (p.index_changes[0] + 3) % tris.size
    nv, ni, idx = replay(p)
    assert canon(p.order[idx[:ni]]) != canon(tris)


def test_uv_seam_partners_collapse_together_and_are_flagged():
    """Two coincident vertex columns (a UV seam): their collapses follow each
    other at no extra cost, so the engine never stops between them."""
    pos, tris = grid(6)
    seam = pos[:, 0] == 2.0
    extra = np.flatnonzero(seam)
    pos2 = np.concatenate([pos, pos[extra]])
    remap = np.arange(len(pos))
    remap[extra] = len(pos) + np.arange(len(extra))
    right = pos[tris].mean(axis=1)[:, 0] > 2.0               # faces right of the seam use the copies
    tris2 = tris.copy()
    tris2[right] = remap[tris[right]]
    p = build_progressive(pos2, tris2)
    flagged = sum(c["shouldCollapse"] for c in p.collapses)
    assert flagged >= 1
    nv, ni, idx = replay(p)
    assert canon(p.order[idx[:ni]]) == canon(tris2)


def test_progressive_mesh_of_triangle_soups_replays_exactly():
    """Non-manifold, duplicated and coincident input (what hand-made files hold):
    every replay ends at the input, every level references live vertices only."""
    rng = np.random.default_rng(0)
    checked = 0
    for _ in range(120):
        nv, nt = int(rng.integers(3, 30)), int(rng.integers(1, 40))
        pos = rng.integers(0, 4, (nv, 3)).astype(float)
        tris = rng.integers(0, nv, (nt, 3))
        tris = tris[(tris[:, 0] != tris[:, 1]) & (tris[:, 1] != tris[:, 2]) & (tris[:, 0] != tris[:, 2])]
        if not len(tris):
            continue
        used = np.unique(tris)
        remap = np.full(nv, -1)
        remap[used] = np.arange(len(used))
        pos, tris = pos[used], remap[tris]
        p = build_progressive(pos, tris)
        v, i, idx = replay(p)
        assert v == len(pos) and canon(p.order[idx[:i]]) == canon(tris)
        for target in range(0, len(pos) + 1, 3):
            v, i, idx = replay(p, target)
            assert (idx[:i] < v).all()
        checked += 1
    assert checked > 100


# ---- .n3pmesh -------------------------------------------------------------------------------

def spec_layout():
    if not SPEC.is_file():
        pytest.skip("specification absent")
    from potsherd.core.layout import Layout
    text = SPEC.read_text(encoding="utf-8")
    keep, out, current = {"collapse", "lod", "n3pmesh"}, [], None
    for line in text.splitlines():
        if line and "\t" not in line:
            current = line.strip()
            if current in keep:
                out.append(current)
            continue
        if current in keep and "\t" in line:
            out.append(line)
    return Layout("\n".join(out))


def assert_spec_parses(data: bytes) -> dict:
    value, end, _ = spec_layout().decode("n3pmesh", data, reference=True)
    assert end == len(data)
    return value


def hand_scene() -> Scene:
    """Shaped like a Blender/assimp file: two primitives, one non-indexed, a
    parent node with scale and rotation."""
    sc = Scene(name="crate")
    pos = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], np.float32)
    uv = np.array([[0, 0], [1, 0], [1, 1], [0, 1]], np.float32)
    a = Primitive(positions=pos, uvs=[uv], indices=np.array([0, 1, 2, 0, 2, 3], np.uint32))
    tri = np.array([[0, 0, 1], [1, 0, 1], [0, 1, 1]], np.float32)
    b = Primitive(positions=tri, uvs=[uv[:3], uv[:3]])           # non-indexed, 2 UV sets
    m = sc.add_mesh(Mesh(name="crate", primitives=[a, b]))
    root = sc.add_node(name="root", scale=[2.0, 2.0, 2.0], rotation=[0, 0.7071068, 0, 0.7071068])
    sc.add_node(name="crate", mesh=m, parent=root, translation=[0.0, 0.5, 0.0])
    return sc


def test_pmesh_from_a_hand_built_scene(tmp_path):
    sc = hand_scene()
    doc = CODEC["n3pmesh"].from_scene(sc, out_name="crate.n3pmesh")
    data = doc.encode()
    spec = assert_spec_parses(data)
    assert spec["vertexCount"] == 7 and spec["indexCount"] == 9 and spec["collapseCount"] > 0
    assert bytes(spec["name"]) == b"crate"
    assert any("TEXCOORD_1" in w for w in sc.warnings)
    back = potsherd.read(data, format="n3pmesh")
    out = back.codec.to_scene(back)
    assert corner_set(out) == corner_set(hand_scene())          # world-space triangles and UVs
    nolod = CODEC["n3pmesh"].from_scene(hand_scene(), no_lod=True).root
    assert len(nolod["collapses"]) == 0 and nolod["minIndexCount"] == 9 and len(nolod["lods"]) == 0
    assert nolod["collapses"].dtype.names[0] == "indicesToLose"  # tables, as decoding gives


@pytest.mark.parametrize("rel", ["Object/obj_ka_01_lamp_body.n3pmesh", "Item/1_6901_00_0.n3pmesh",
                                 "Object/obj_ka_transmark_kalluga.n3pmesh",
                                 "Object/obj_co_xmastree_gift.n3pmesh"])
def test_corpus_pmesh_round_trip_generates_collapses(rel, tmp_path):
    path = corpus(rel)
    orig = potsherd.read(path)
    scene = via_glb(export(path), tmp_path)
    doc = CODEC["n3pmesh"].from_scene(scene, out_name=path.name)
    data = doc.encode()
    spec = assert_spec_parses(data)
    assert len(orig.root["collapses"]) > 0 and spec["collapseCount"] > 0
    assert spec["minVertexCount"] == 0 and spec["lodCount"] == 4
    back = potsherd.read(data, format="n3pmesh")
    assert back.encode() == data
    again = back.codec.to_scene(back)
    assert corner_set(again) == corner_set(export(path))
    # the LOD records are reachable: each gives fewer triangles than the one before
    tris = [len(back.codec.to_scene(back, lod=k).meshes[0].primitives[0].indices) // 3
            for k in range(3)]
    assert tris[0] == len(corner_set(again)) and tris[0] > tris[1] > tris[2] > 0


def test_like_reproduces_every_corpus_pmesh_and_skins(tmp_path):
    files = sorted(KO.rglob("*.n3pmesh")) + sorted(KO.rglob("*.n3cskins")) if KO.is_dir() else []
    if not files:
        pytest.skip("KO corpus absent")
    exact = 0
    for path in files:
        orig = potsherd.read(path)
        scene = via_glb(export(path), tmp_path)
        doc = orig.codec.from_scene(scene, like=orig, out_name=path.name)
        assert doc.encode() == path.read_bytes(), path
        exact += 1
    assert exact == 48                                           # 18 meshes, 30 skins


def test_like_keeps_names_and_lod_distances_of_an_edited_mesh(tmp_path):
    path = corpus("Object/obj_ka_01_lamp_body.n3pmesh")
    orig = potsherd.read(path)
    scene = via_glb(export(path), tmp_path)
    scene.meshes[0].primitives[0].positions[:, 1] *= 1.5          # an edit in Blender
    doc = orig.codec.from_scene(scene, like=orig)
    assert doc.encode() != path.read_bytes()
    assert bytes(doc.root["name"]) == bytes(orig.root["name"])
    assert [l["distance"] for l in doc.root["lods"]] == [l["distance"] for l in orig.root["lods"]]
    assert any("geometry edited" in w for w in scene.warnings)


# ---- characters -------------------------------------------------------------------------------

def character(tmp_path: Path, rel: str = "Chr/mob_kenta.n3chr", like=None):
    path = corpus(rel)
    src = export(path)
    scene = via_glb(src, tmp_path)
    files = CODEC["n3chr"].from_scene(scene, like=like, out_name=path.name)
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    write_all(files, out)
    return path, src, files, out


def rest_world(scene: Scene) -> dict:
    w = world_matrices(scene)
    return {n.name: w[i] for i, n in enumerate(scene.nodes)
            if n.mesh is None and n.skin is None}


def test_character_round_trip_keeps_triangles_weights_joints_and_clips(tmp_path):
    path, src, files, out = character(tmp_path)
    names = [n for n, _ in files]
    assert names[0] == "mob_kenta.n3chr"
    formats = sorted(d.format for _, d in files)
    assert formats == sorted(["n3chr", "n3joint", "n3anim", "n3cpart", "n3cskins", "dxt",
                              "n3cpart", "n3cskins", "dxt", "n3cplug", "n3pmesh", "dxt"])
    new = export(out / "mob_kenta.n3chr", data_root=str(out))
    assert not [w for w in new.warnings if "not found" in w]
    assert corner_set(new, 3) == corner_set(src, 3)
    # joints at rest (frame 0 = bind pose) to 1e-5
    a, b = rest_world(src), rest_world(new)
    joints = [k for k in a if k in b and k not in ("mob_kenta",)]
    assert len(joints) == 43
    for k in joints:
        assert np.allclose(a[k], b[k], atol=1e-5), k
    # clips: count, names, durations
    assert [x.name for x in new.animations] == [x.name for x in src.animations]
    assert np.allclose([x.duration for x in new.animations], [x.duration for x in src.animations],
                       atol=1e-6)
    # skin weights per corner (joint index -> weight), to 1e-4
    def influences(scene):
        out = {}
        for s in triangle_sets(scene):
            if s.joints is None:
                continue
            for v in range(len(s.positions)):
                key = tuple(s.positions[v].round(4))
                out[key] = {int(j): float(w) for j, w in zip(s.joints[v], s.weights[v]) if w > 0}
        return out
    wa, wb = influences(src), influences(new)
    assert wa.keys() == wb.keys() and len(wa) > 300
    for key in wa:
        assert wa[key].keys() == wb[key].keys()
        assert all(abs(wa[key][j] - wb[key][j]) < 1e-4 for j in wa[key])


def test_character_animation_matches_after_import(tmp_path):
    """Posed at mid-clip, the imported character's joints are where the original's are."""
    from potsherd.scene.ops import sample_node_trs
    path, src, files, out = character(tmp_path)
    new = export(out / "mob_kenta.n3chr", data_root=str(out))
    idx_a = {n.name: i for i, n in enumerate(src.nodes)}
    idx_b = {n.name: i for i, n in enumerate(new.nodes)}
    for k in (0, 3):
        t = src.animations[k].duration * np.array([0.0, 0.37, 1.0])
        for name in ("head", "FLankle", "tail3"):
            ta, ra, _ = sample_node_trs(src, src.animations[k], idx_a[name], t)
            tb, rb, _ = sample_node_trs(new, new.animations[k], idx_b[name], t)
            assert np.allclose(ta, tb, atol=2e-3), name
            assert (np.abs(np.einsum("ij,ij->i", ra, rb)) > 1 - 1e-4).all(), name


def test_imported_character_renders_like_the_original(tmp_path):
    from potsherd.export import render as rd
    path, src, files, out = character(tmp_path)
    new = export(out / "mob_kenta.n3chr", data_root=str(out))
    write_glb(src, tmp_path / "a.glb")
    write_glb(new, tmp_path / "b.glb")
    images = []
    for name in ("a.glb", "b.glb"):
        g = rd.Gltf(str(tmp_path / name))
        tris = rd.scene_triangles(g, None, 0.0)
        d, up = rd.VIEWS["front (+Z)"]
        basis = rd._basis(d, up)
        if not images:
            q = np.concatenate([t["pos"].reshape(-1, 3) for t in tris]) @ basis.T
            bounds = (q.min(0), q.max(0))
        images.append(rd._raster(tris, basis, 96, bounds))
    bg = np.array([0.22, 0.24, 0.27])
    cov = [~np.all(np.abs(im - bg) < 1e-9, axis=2) for im in images]
    iou = (cov[0] & cov[1]).sum() / (cov[0] | cov[1]).sum()
    assert iou > 0.99, iou
    diff = np.abs(images[0] - images[1])[cov[0] & cov[1]].mean()
    assert diff < 0.03, diff                                    # DXT re-compression only
    # negative control: a character turned half round does not match
    flipped = [dict(t, pos=t["pos"] * np.array([-1.0, 1.0, -1.0])) for t in
               rd.scene_triangles(rd.Gltf(str(tmp_path / "b.glb")), None, 0.0)]
    other = rd._raster(flipped, basis, 96, bounds)
    cov_o = ~np.all(np.abs(other - bg) < 1e-9, axis=2)
    assert np.abs(images[0] - other)[cov[0] & cov_o].mean() > diff * 2


def test_like_reproduces_every_exportable_corpus_character_set(tmp_path):
    from potsherd.formats.ko.scene import Resolver, UnresolvedReferencesError
    files = sorted(KO.rglob("*.n3chr")) if KO.is_dir() else []
    if not files:
        pytest.skip("KO corpus absent")
    exact = unresolvable = partial = 0
    for path in files:
        orig = potsherd.read(path)
        try:
            exported = export(path)
        except UnresolvedReferencesError:
            unresolvable += 1
            continue
        if not exported.meshes:
            # a skeleton (and clips) whose parts are all missing: exported, with the
            # missing files named, but there is no character set to rebuild from it
            assert any("referenced files missing" in w for w in exported.warnings)
            partial += 1
            continue
        scene = via_glb(exported, tmp_path)
        out = orig.codec.from_scene(scene, like=orig, out_name=path.name)
        res = Resolver(str(path), None)
        for name, doc in out:
            original = path if name == out[0][0] else (
                res.find("item\\" + name) or res.find("chr\\" + name) or res.find(name))
            assert original is not None, name
            assert doc.encode() == Path(original).read_bytes(), (path.name, name)
        exact += 1
    assert (exact, unresolvable + partial) == (5, 11) and partial >= 1


def test_character_without_skeleton_is_refused():
    with pytest.raises(FormatError, match="skeleton"):
        CODEC["n3chr"].from_scene(hand_scene())
    with pytest.raises(FormatError, match="no triangles"):
        CODEC["n3pmesh"].from_scene(Scene())


# ---- skeleton and clips alone ----------------------------------------------------------------

def rig_scene() -> Scene:
    """A two-joint rig with one skinned triangle and a LINEAR + a STEP clip."""
    sc = Scene(name="rig")
    root = sc.add_node(name="hips", translation=[0.0, 1.0, 0.0])
    arm = sc.add_node(name="arm", parent=root, translation=[0.5, 0.0, 0.0])
    ibm = np.stack([np.linalg.inv(world_matrices(sc)[i]) for i in (root, arm)])
    skin = sc.add_skin(Skin(joints=[root, arm], inverse_bind_matrices=ibm))
    prim = Primitive(positions=np.array([[0, 1, 0], [1, 1, 0], [0, 2, 0]], np.float32),
                     indices=np.array([0, 1, 2], np.uint32),
                     joints=np.array([[0, 1], [1, 0], [0, 0]], np.uint16),
                     weights=np.array([[0.75, 0.25], [1, 0], [1, 0]], np.float32))
    sc.add_node(name="body", mesh=sc.add_mesh(Mesh(name="body", primitives=[prim])), skin=skin)
    q = [0.0, np.sin(np.pi / 4), 0.0, np.cos(np.pi / 4)]
    sc.add_animation(Animation(name="turn", channels=[
        Channel(node=arm, path="rotation", times=np.array([0.0, 1.0], np.float32),
                values=np.array([[0, 0, 0, 1], q], np.float32))]))
    sc.add_animation(Animation(name="hop", channels=[
        Channel(node=root, path="translation", times=np.array([0.0, 0.5], np.float32),
                values=np.array([[0, 1, 0], [0, 2, 0]], np.float32), interpolation="STEP")]))
    return sc


def test_joint_and_anim_from_a_rig():
    sc = rig_scene()
    joint = CODEC["n3joint"].from_scene(sc)
    anim = CODEC["n3anim"].from_scene(sc)
    r = joint.root
    assert bytes(r["name"]) == b"hips" and r["childCount"] == 1
    assert r["position"] == [-0.0, 1.0, 0.0]                      # the X mirror
    clips = anim.root["clips"]
    assert [(bytes(c["name"]), c["start"], c["end"], c["fps"]) for c in clips] == \
        [(b"turn", 1.0, 31.0, 30.0), (b"hop", 32.0, 47.0, 30.0)]
    arm = r["children"][0]
    rot = arm["keys"][1]
    assert rot["count"] == 48 and rot["samplingRate"] == 30.0
    # frame 0 is the rest pose, frame 31 the end of "turn" (mirrored: (x, -y, -z, w))
    assert np.allclose(rot["values"][0], [0, 0, 0, 1])
    assert np.allclose(rot["values"][31], [0, -np.sin(np.pi / 4), 0, np.cos(np.pi / 4)], atol=1e-6)
    assert np.allclose(rot["values"][16], [0, -np.sin(np.pi / 8), 0, np.cos(np.pi / 8)], atol=1e-6)
    pos = r["keys"][0]["values"]                                  # STEP holds until its key
    assert pos[32:47, 1].tolist() == [1.0] * 15 and pos[47, 1] == 2.0
    for doc in (joint, anim):
        data = doc.encode()
        assert potsherd.read(data, format=doc.format).encode() == data


def test_rig_to_character_and_back_keeps_influences(tmp_path):
    files = CODEC["n3chr"].from_scene(rig_scene(), out_name="rig.n3chr")
    write_all(files, tmp_path)
    back = export(tmp_path / "rig.n3chr", data_root=str(tmp_path))
    skins = potsherd.read(tmp_path / "rig_body.n3cskins").root["lods"][0]
    b = skins["bindings"]
    assert [int(x["count"]) for x in b] == [2, 1, 1]
    assert b[0]["joints"].tolist() == [0, 1] and np.allclose(b[0]["weights"], [0.75, 0.25])
    assert b[0]["origin"] == [-0.0, 1.0, 0.0]
    assert len(back.animations) == 2


def test_vertices_without_skin_weight_keep_their_bind_position(tmp_path):
    """A vertex whose weights are all zero has no skinning matrix in glTF's
    formula (the zero matrix: its normal's inverse used to raise "LinAlgError:
    Singular matrix" out of every KO target).  It is kept where the mesh has it
    (rigid on its mesh node), with a warning naming the count, and in N3 it is
    bound to the root joint."""
    sc = rig_scene()
    prim = sc.meshes[0].primitives[0]
    prim.normals = np.tile(np.float32([0, 0, 1]), (3, 1))
    prim.weights = np.array([[0.75, 0.25], [1, 0], [0, 0]], np.float32)   # vertex 2: none
    want = [[0.0, 1.0, 0.0], [-1.0, 1.0, 0.0], [-0.0, 2.0, 0.0]]         # N3: x mirrored
    note = ("1 skinned vertices have no skin weight (all zero); kept rigid on their mesh node, "
            "at their bind position")
    # negative control: the glTF formula as written leaves vertex 2 no invertible matrix
    w = np.asarray(prim.weights, np.float64)
    blend = np.einsum("vk,vkij->vij", w, np.eye(4)[None, None].repeat(2, 1).repeat(3, 0))
    with pytest.raises(np.linalg.LinAlgError):
        np.linalg.inv(blend[:, :3, :3])
    for fmt in ("n3pmesh", "n3cskins", "n3cplug", "n3chr"):
        scene = rig_scene()
        scene.meshes[0].primitives[0] = prim
        out = CODEC[fmt].from_scene(scene, out_name=f"z.{fmt}")
        assert note in scene.warnings, fmt
        if fmt == "n3pmesh":
            v = np.asarray(out.root["vertices"], np.float32).reshape(-1, 8)[:, :3]
            assert sorted(v.tolist()) == sorted(want)
        elif fmt in ("n3cskins", "n3chr"):
            docs = [out] if fmt == "n3cskins" else [d for _, d in out if d.format == "n3cskins"]
            lod = docs[0].root["lods"][0]
            b = lod["bindings"]
            got = sorted((x["origin"], x["joints"].tolist()) for x in b)
            assert got == sorted([(want[0], [0, 1]), (want[1], [1]), (want[2], [0])])
    # and the character animates with that vertex on the root joint
    files = CODEC["n3chr"].from_scene(scene, out_name="z.n3chr")
    write_all(files, tmp_path)
    back = export(tmp_path / "z.n3chr", data_root=str(tmp_path))
    (ts,) = triangle_sets(back)
    assert np.allclose(sorted(ts.positions.tolist()), sorted(np.asarray(prim.positions).tolist()),
                       atol=1e-6)


def _rig_under(layout: str) -> Scene:
    """A two-joint bending bar whose root joint's parent is not a joint: an
    "Armature" node turned -90 degrees about X and scaled 0.01 with the root
    joint turned back and scaled 100 (assimp's layout for FBX files), the same
    Armature also sliding along X, or the skinned mesh node itself with a
    translation (three.js's layout)."""
    import math as _math
    from potsherd.scene import quat_from_axis_angle
    s = Scene()
    qx = lambda a: [float(x) for x in quat_from_axis_angle([1, 0, 0], a)]   # noqa: E731
    if layout == "under_mesh":
        top = s.add_node(name="body", translation=(0.5, 0.0, 0.0))
        b0 = s.add_node(name="b0", parent=top)
    else:
        top = s.add_node(name="Armature", rotation=qx(-_math.pi / 2), scale=(0.01, 0.01, 0.01))
        b0 = s.add_node(name="b0", parent=top, rotation=qx(_math.pi / 2), scale=(100, 100, 100))
    b1 = s.add_node(name="b1", parent=b0, translation=(0.0, 1.0, 0.0))
    w = world_matrices(s)
    sk = s.add_skin(Skin(joints=[b0, b1], inverse_bind_matrices=np.linalg.inv(w[[b0, b1]])))
    pos = np.array([[0, 0, 0], [0.2, 0, 0], [0.2, 2, 0], [0, 2, 0], [0.2, 1, 0], [0, 1, 0]],
                   np.float32)
    prim = Primitive(positions=pos, indices=np.array([0, 1, 4, 0, 4, 5, 5, 4, 2, 5, 2, 3],
                                                     np.uint32),
                     joints=np.array([[0, 1]] * 2 + [[1, 0]] * 2 + [[0, 1]] * 2, np.uint8),
                     weights=np.array([[1, 0]] * 4 + [[0.5, 0.5]] * 2, np.float32))
    mesh = s.add_mesh(Mesh(primitives=[prim]))
    if layout == "under_mesh":
        s.nodes[top].mesh, s.nodes[top].skin = mesh, sk
    else:
        s.add_node(name="body", mesh=mesh, skin=sk)
    qz = [0.0, 0.0, _math.sin(_math.pi / 4), _math.cos(_math.pi / 4)]
    channels = [Channel(node=b1, path="rotation", times=np.array([0.0, 1.0], np.float32),
                        values=np.array([[0, 0, 0, 1], qz], np.float32))]
    if layout == "moving_armature":
        channels.append(Channel(node=top, path="translation",
                                times=np.array([0.0, 1.0], np.float32),
                                values=np.array([[0, 0, 0], [3, 0, 0]], np.float32)))
    s.add_animation(Animation(name="bend", channels=channels))
    return s


def _posed_corners(scene: Scene, t: float) -> list:
    """The triangles' world-space corners with every node posed at ``t`` of the
    first animation (sorted, rounded: comparable across vertex orders)."""
    from potsherd.scene.ops import sample_node_trs
    from potsherd.scene.xform import trs_to_matrix
    a = scene.animations[0]
    local = np.stack([trs_to_matrix(*(x[0] for x in sample_node_trs(scene, a, i, [t])))
                      for i in range(len(scene.nodes))])
    sets = triangle_sets(scene, world=world_matrices(scene, local))
    return sorted(tuple(sorted(map(tuple, s.positions[tri].round(5).tolist())))
                  for s in sets for tri in s.indices.reshape(-1, 3))


@pytest.mark.parametrize("layout", ["armature", "under_mesh", "moving_armature"])
def test_root_joint_under_a_non_joint_node_animates_like_the_source(tmp_path, layout):
    """The root joint's parent node (not a joint) used to be dropped from the
    N3 skeleton: the rest pose was right (the skin binds at frame 0) but every
    animated frame pivoted in the wrong frame (assimp's Armature: bent out to
    x = 100; three.js's mesh-node parent: 0.5 off).  Its transform, and its
    animation, are now baked into the root joint."""
    src = _rig_under(layout)
    files = CODEC["n3chr"].from_scene(src, out_name="bar.n3chr")
    write_all(files, tmp_path)
    back = export(tmp_path / "bar.n3chr", data_root=str(tmp_path))
    for t in (0.0, 10 / 30, 0.5, 1.0):               # on the 30 frame/s timeline
        want = _posed_corners(src, t)
        assert _posed_corners(back, t) == want, t
    assert any("are baked into joint 'b0'" in w for w in src.warnings)
    # at t = 1 the bar's top half has turned 90 degrees about Z round b1: its
    # corner (0.2, 2, 0) is at (-1, 1.2, 0), on the Armature slid 3 along X, or,
    # with b1 at (0.5, 1, 0) under the mesh node, at (-0.5, 0.7, 0)
    corner = {"armature": (-1.0, 1.2, 0.0), "under_mesh": (-0.5, 0.7, 0.0),
              "moving_armature": (2.0, 1.2, 0.0)}[layout]
    assert any(corner in tri for tri in want)
    root = next(d for n, d in files if d.format == "n3joint").root
    if layout == "under_mesh":
        assert root["position"] == [-0.5, 0.0, 0.0]          # the mesh node's, X mirrored
        assert root["keys"][0]["count"] == 0               # nothing moves the root
    if layout == "armature":
        assert np.allclose(root["rotation"], [0, 0, 0, 1], atol=1e-7)   # -90 then +90
        assert np.allclose(root["scale"], 1, atol=1e-6)
    if layout == "moving_armature":
        keys = root["keys"][0]["values"]
        assert np.allclose(keys[[0, 16, 31], 0], [0.0, -1.5, -3.0], atol=1e-5)   # mirrored X


# ---- textures ------------------------------------------------------------------------------------

def picture(alpha: str):
    from PIL import Image
    rng = np.random.default_rng(5)
    rgb = (rng.random((32, 32, 3)) * 6 + np.linspace(0, 200, 32)[None, :, None]
           + np.linspace(0, 40, 32)[:, None, None]).astype(np.uint8)
    a = np.full((32, 32, 1), 255, np.uint8)
    if alpha == "cut":
        a[:16] = 0
    elif alpha == "smooth":
        a[:, :, 0] = np.linspace(0, 255, 32).astype(np.uint8)[None, :]
    return Image.fromarray(np.concatenate([rgb, a], axis=2), "RGBA")


@pytest.mark.parametrize("alpha, fourcc", [("opaque", b"DXT1"), ("cut", b"DXT3"),
                                           ("smooth", b"DXT5")])
@pytest.mark.parametrize("encrypt", [False, True])
def test_png_to_ntf_decodes_back_with_the_existing_decoder(alpha, fourcc, encrypt):
    from potsherd.formats.ko.textures import record_rgba
    from potsherd.formats.ko.textures_encode import encode_ntf
    img = picture(alpha)
    rec = encode_ntf(img, "pic", encrypt=encrypt)
    assert rec["format"].to_bytes(4, "little") == fourcc
    assert rec["version"] == (7 if encrypt else 3)
    assert [len(x) for x in rec["levels"]] == ([512, 128, 32, 8] if fourcc == b"DXT1"
                                               else [1024, 256, 64, 16])
    data = potsherd.Document("dxt", rec, {}, b"", [], {}).encode()
    doc = potsherd.read(data, format="dxt")
    assert doc.encode() == data
    got = record_rgba(doc.root).astype(int)
    want = np.asarray(img).astype(int)
    # the existing decoder and Pillow's agree texel for texel on the level-0 blocks
    from PIL import Image
    dds = io.BytesIO()
    img.save(dds, "DDS", pixel_format=fourcc.decode())
    pillow = np.asarray(Image.open(io.BytesIO(dds.getvalue())).convert("RGBA")).astype(int)
    assert dds.getvalue()[128:128 + len(rec["levels"][0])] == (
        encode_ntf(img, "pic")["levels"][0])
    assert np.array_equal(got[..., :3], pillow[..., :3])
    assert np.abs(got[..., :3] - want[..., :3]).mean() < 6
    if alpha == "cut":
        assert (got[..., 3] == want[..., 3]).all()
    if alpha == "smooth":
        assert np.abs(got[..., 3] - want[..., 3]).max() <= 8
    if encrypt:   # negative control: the ciphertext is not the plain level
        plain = encode_ntf(img, "pic")["levels"][0]
        assert rec["levels"][0] != plain


# ---- files from other tools --------------------------------------------------------------------

def glb_files():
    return sorted(GLB.glob("*.glb")) if GLB.is_dir() else []


@pytest.mark.parametrize("path", glb_files(), ids=lambda p: p.name)
def test_blender_and_assimp_files_import_and_export_back(path, tmp_path):
    src = read_gltf(path)
    sets = triangle_sets(src)
    want = np.concatenate([s.positions for s in sets])
    tris = sum(s.triangle_count for s in sets)
    targets = ["n3pmesh"] + (["n3chr"] if src.skins else [])
    for fmt in targets:
        scene = read_gltf(path)
        out = CODEC[fmt].from_scene(scene, out_name=f"x.{fmt}")
        files = out if isinstance(out, list) else [(f"x.{fmt}", out)]
        folder = tmp_path / fmt
        folder.mkdir()
        write_all(files, folder)
        back = export(folder / f"x.{fmt}", data_root=str(folder))
        got = np.concatenate([s.positions for s in triangle_sets(back)])
        assert sum(s.triangle_count for s in triangle_sets(back)) == tris
        ext = np.ptp(want, axis=0)
        tol = 0.02 * ext.max()
        assert np.allclose(got.min(0), want.min(0), atol=tol)
        assert np.allclose(got.max(0), want.max(0), atol=tol)
        if fmt == "n3chr":
            assert len(back.animations) == len(src.animations)
        else:
            assert src.animations == [] or any("dropped" in w for w in scene.warnings)


@pytest.mark.parametrize("ext, exact, empty", [("n3cpart", 22, 8), ("n3cplug", 3, 9),
                                                ("n3joint", 29, 0)])
def test_like_reproduces_corpus_parts_plugs_and_skeletons(ext, exact, empty, tmp_path):
    """Each file and what it references (skins, plug mesh, textures kept) comes back
    byte for byte; ``empty`` files reference geometry the corpus does not hold."""
    from potsherd.formats.ko.scene import Resolver
    files = sorted(KO.rglob(f"*.{ext}")) if KO.is_dir() else []
    if not files:
        pytest.skip("KO corpus absent")
    got = skipped = 0
    for path in files:
        orig = potsherd.read(path)
        src = export(path)
        if ext != "n3joint" and not src.meshes:
            skipped += 1
            continue
        out = orig.codec.from_scene(via_glb(src, tmp_path), like=orig, out_name=path.name)
        out = out if isinstance(out, list) else [(path.name, out)]
        res = Resolver(str(path), None)
        for name, doc in out:
            original = path if name == out[0][0] else (
                res.find("item\\" + name) or res.find("chr\\" + name) or res.find(name))
            assert original is not None and doc.encode() == Path(original).read_bytes(), name
        got += 1
    assert (got, skipped) == (exact, empty)


def test_plug_alone_keeps_its_transform_and_joint(tmp_path):
    path = corpus("Item/1_6901_00_0.n3cplug")
    orig = potsherd.read(path)
    src = export(path)
    files = CODEC["n3cplug"].from_scene(via_glb(src, tmp_path), out_name="sword.n3cplug")
    write_all(files, tmp_path)
    plug = potsherd.read(tmp_path / "sword.n3cplug").root
    assert plug["joint"] == orig.root["joint"]
    back = export(tmp_path / "sword.n3cplug", data_root=str(tmp_path))
    assert corner_set(back, 3) == corner_set(src, 3)             # same world-space weapon
    assert np.allclose(world_matrices(back)[0], world_matrices(src)[0], atol=1e-5)


def _blade(scene: Scene):
    """The world-space triangles of the node named "blade" (triangle_sets applies
    glTF's rule that a mirroring world matrix reverses the front-face winding)."""
    (ts,) = [t for t in triangle_sets(scene) if scene.nodes[t.node].name == "blade"]
    return ts.positions[ts.indices.reshape(-1, 3)]


def _signed_volume(tris: np.ndarray) -> float:
    """Positive when the fronts face outwards."""
    return float(np.einsum("ij,ij->i", tris[:, 0], np.cross(tris[:, 1], tris[:, 2])).sum()) / 6


def _tetrahedron() -> Primitive:
    pos = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], np.float32)
    tris = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]], np.uint32)   # outward fronts
    return Primitive(positions=pos, indices=tris.reshape(-1))


@pytest.mark.parametrize("chr_", [False, True], ids=["n3cplug", "n3chr plug"])
def test_a_mirrored_plug_keeps_its_faces_outward(tmp_path, chr_):
    """A plug node scaled (-1, 2, 1): glTF draws it with reversed winding, so its
    signed volume stays +2/6.  The import used to reverse the winding (as
    triangle_sets does for the world-space mesh) and then also keep the
    mirroring matrix: inside-out, -2/6.  Now the mirror is baked into the mesh
    and the plug matrix has a positive determinant."""
    s = rig_scene() if chr_ else Scene()
    parent = 1 if chr_ else None                       # the rig's "arm" joint
    s.add_node(name="blade", mesh=s.add_mesh(Mesh(primitives=[_tetrahedron()])), parent=parent,
               translation=(0.0, 0.5, 2.0), scale=(-1.0, 2.0, 1.0))
    src = _blade(s)
    assert np.isclose(_signed_volume(src), 2 / 6)
    fmt = "n3chr" if chr_ else "n3cplug"
    files = CODEC[fmt].from_scene(s, out_name=f"w.{fmt}", **({} if chr_ else {"name": "blade"}))
    write_all(files, tmp_path)
    back = _blade(export(tmp_path / f"w.{fmt}", data_root=str(tmp_path)))
    assert np.isclose(_signed_volume(back), 2 / 6, atol=1e-6)
    key = lambda t: sorted(map(tuple, t.reshape(-1, 3).round(5).tolist()))   # noqa: E731
    assert key(back) == key(src)                         # the same world-space weapon
    assert any("the plug's transform mirrors" in w for w in s.warnings)
    plug = next(d for n, d in files if d.format == "n3cplug").root
    assert np.linalg.det(np.asarray(plug["rotation"], np.float64).reshape(4, 4)[:3, :3]) > 0


def test_a_mesh_beside_the_armature_becomes_a_plug_on_the_root_joint(tmp_path):
    """A character with a loose mesh (a sibling of the armature, as Blender
    exports a prop nobody parented) used to lose it with a warning.  It is now
    a plug on the root joint, in that joint's frame: at rest it lands where it
    was, and it rides the root's motion in the game."""
    s = rig_scene()
    s.add_node(name="blade", mesh=s.add_mesh(Mesh(primitives=[_tetrahedron()])),
               translation=(0.25, 0.5, 2.0))
    src = _blade(s)
    files = CODEC["n3chr"].from_scene(s, out_name="w.n3chr")
    write_all(files, tmp_path)
    assert any("written as a plug on the root joint 'hips'" in w for w in s.warnings)
    plug = next(d for n, d in files if d.format == "n3cplug").root
    assert plug["joint"] == 0                                # hips, the root
    # in the root's frame: the root stands at (0, 1, 0), the blade at (0.25, 0.5, 2)
    # (x mirrored into N3's left-handed frame)
    assert np.allclose(np.asarray(plug["position"]), [-0.25, -0.5, 2.0])
    back = _blade(export(tmp_path / "w.n3chr", data_root=str(tmp_path)))
    key = lambda t: sorted(map(tuple, t.reshape(-1, 3).round(5).tolist()))   # noqa: E731
    assert key(back) == key(src)                             # the same world-space blade


def test_hostile_scenes_are_clear_errors():
    bad = hand_scene()
    bad.meshes[0].primitives[0].positions[1, 0] = np.nan
    with pytest.raises(FormatError, match=r"POSITION of vertex 1 is non-finite \(nan\)"):
        CODEC["n3pmesh"].from_scene(bad)
    big = Scene()
    n = 70000                                    # over the engine's 16-bit indices
    pos = np.random.default_rng(1).random((n, 3)).astype(np.float32)
    prim = Primitive(positions=pos, indices=np.arange(n - n % 3, dtype=np.uint32))
    big.add_node(name="big", mesh=big.add_mesh(Mesh(primitives=[prim])))
    with pytest.raises(FormatError, match="at most 65535: decimate the mesh"):
        CODEC["n3pmesh"].from_scene(big, no_lod=True)
    # negative control: the same scene cut below the limit imports
    small = Scene()
    prim = Primitive(positions=pos[:300], indices=np.arange(300, dtype=np.uint32))
    small.add_node(name="small", mesh=small.add_mesh(Mesh(primitives=[prim])))
    assert CODEC["n3pmesh"].from_scene(small, no_lod=True).root["vertexCount"] == 300


def test_import_options_are_declared_and_coerced():
    from potsherd.registry import coerce_options
    names = {o.name for o in CODEC["n3chr"].import_options}
    assert {"lod", "no_lod", "encrypt", "textures", "name", "folder"} <= names
    assert coerce_options(CODEC["n3pmesh"].import_options, {"lod": "0"}) == {"lod": 0}
    with pytest.raises(ValueError, match="valid options"):
        coerce_options(CODEC["n3pmesh"].import_options, {"detail": "1"})


def test_edited_character_with_like_changes_only_the_edited_part(tmp_path):
    path = corpus("Chr/mob_kenta.n3chr")
    orig = potsherd.read(path)
    scene = via_glb(export(path), tmp_path)
    lower = [n for n in scene.nodes if n.name == "lower"][0]
    scene.meshes[lower.mesh].primitives[0].positions[:, 1] += 0.25     # lift the lower body
    out = orig.codec.from_scene(scene, like=orig, out_name=path.name)
    from potsherd.formats.ko.scene import Resolver
    res = Resolver(str(path), None)
    changed = []
    for name, doc in out:
        original = path if name == out[0][0] else (res.find("item\\" + name) or
                                                    res.find("chr\\" + name))
        if doc.encode() != Path(original).read_bytes():
            changed.append(name)
    assert changed == ["mob_kenta_lower.n3cskins"]
    lods = potsherd.read(doc_bytes := dict(out)["mob_kenta_lower.n3cskins"].encode(),
                         format="n3cskins").root["lods"]
    assert len(doc_bytes) > 0 and [int(l["faceCount"]) for l in lods][0] == 412
    assert lods[0]["bindings"][0]["count"] >= 1                   # still bound to the skeleton


BLENDER_ROUND_TRIP = """
import numpy; numpy.bool = bool
import bpy, sys
args = sys.argv[sys.argv.index('--') + 1:]
bpy.ops.wm.read_factory_settings(use_empty=True)
bpy.ops.import_scene.gltf(filepath=args[0])
bpy.ops.export_scene.gltf(filepath=args[1], export_format='GLB')
"""


def test_character_through_blender_imports_back(tmp_path):
    """A KO character exported, opened and re-exported by Blender (its own rest
    pose, bind matrices, action order and names), then imported as .n3chr."""
    import shutil
    import subprocess
    blender = shutil.which("blender")
    if blender is None:
        pytest.skip("Blender not installed")
    path = corpus("Chr/mob_kenta.n3chr")
    write_glb(export(path), tmp_path / "kenta.glb")
    script = tmp_path / "rt.py"
    script.write_text(BLENDER_ROUND_TRIP)
    # Debian's Blender finds its numpy only with the system Python first on PATH
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYENV", "PYTHON"))}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if ".pyenv" not in p and "venv" not in p)
    subprocess.run([blender, "-b", "--python", str(script), "--", str(tmp_path / "kenta.glb"),
                    str(tmp_path / "blender.glb")], check=True, capture_output=True, timeout=600,
                   env=env)
    if not (tmp_path / "blender.glb").is_file():
        pytest.skip("Blender could not run its glTF add-on here")
    src = read_gltf(tmp_path / "blender.glb")
    files = CODEC["n3chr"].from_scene(read_gltf(tmp_path / "blender.glb"), out_name="k.n3chr")
    out = tmp_path / "out"
    out.mkdir()
    write_all(files, out)
    back = export(out / "k.n3chr", data_root=str(out))
    a = np.concatenate([s.positions for s in triangle_sets(src)])
    b = np.concatenate([s.positions for s in triangle_sets(back)])
    assert sum(s.triangle_count for s in triangle_sets(back)) == \
        sum(s.triangle_count for s in triangle_sets(src))
    tol = 0.02 * np.ptp(a, axis=0).max()
    assert np.allclose(a.min(0), b.min(0), atol=tol) and np.allclose(a.max(0), b.max(0), atol=tol)
    assert len(back.animations) == len(src.animations) == 11
    assert sorted(x.name for x in back.animations) == sorted(x.name for x in src.animations)


def test_skinned_mesh_with_two_materials_becomes_two_parts(tmp_path):
    sc = rig_scene()
    body = [n for n in sc.nodes if n.name == "body"][0]
    sc.materials += [Material(name="skin"), Material(name="cloth")]
    first = sc.meshes[body.mesh].primitives[0]
    first.material = 0
    second = Primitive(positions=first.positions + np.float32([0, 0, 1]), indices=first.indices,
                       joints=first.joints, weights=first.weights, material=1)
    sc.meshes[body.mesh].primitives.append(second)
    files = CODEC["n3chr"].from_scene(sc, out_name="rig.n3chr")
    chr_root = dict(files)["rig.n3chr"].root
    assert [bytes(p) for p in chr_root["parts"]] == [b"item\\rig_body_skin.n3cpart",
                                                     b"item\\rig_body_cloth.n3cpart"]
    write_all(files, tmp_path)
    back = export(tmp_path / "rig.n3chr", data_root=str(tmp_path))
    assert sum(s.triangle_count for s in triangle_sets(back)) == 2


def _two_material_plank() -> Scene:
    """Two quads side by side: the left with a texture of four solid quadrants
    (UVs 0..1), the right untextured and green; a weapon's blade and grip."""
    import io as _io
    from PIL import Image as PILImage
    from potsherd.scene import Image as SceneImage, TextureRef
    quads = np.zeros((16, 16, 3), np.uint8)    # quadrants of two DXT blocks a side
    quads[:8, :8], quads[:8, 8:] = (250, 0, 0), (0, 0, 250)      # top: red, blue
    quads[8:, :8], quads[8:, 8:] = (250, 250, 0), (250, 250, 250)  # bottom: yellow, white
    buf = _io.BytesIO()
    PILImage.fromarray(quads).save(buf, "PNG")
    s = Scene()
    img = s.add_image(SceneImage(name="quadrants", data=buf.getvalue()))
    tex = s.add_material(Material(name="blade", base_color_texture=TextureRef(img)))
    green = s.add_material(Material(name="grip", base_color=(0.0, 1.0, 0.0, 1.0)))
    tri = np.array([0, 1, 2, 0, 2, 3], np.uint32)
    uv = np.array([[0, 1], [1, 1], [1, 0], [0, 0]], np.float32)     # v down: image top at y = 1
    left = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], np.float32)
    prims = [Primitive(positions=left, uvs=[uv], indices=tri, material=tex),
             Primitive(positions=left + [1, 0, 0], uvs=[uv], indices=tri, material=green)]
    s.add_node(name="plank", mesh=s.add_mesh(Mesh(name="plank", primitives=prims)))
    return s


def _drawn_colour(scene: Scene, point: np.ndarray) -> np.ndarray:
    """The texel colour (RGB 0..255) a render shows at world ``point`` lying on a
    triangle of ``scene``: its UV interpolated and the base colour texture sampled."""
    import io as _io
    from PIL import Image as PILImage
    for ts in triangle_sets(scene):
        mat = scene.materials[ts.material]
        pic = np.asarray(PILImage.open(_io.BytesIO(scene.images[mat.base_color_texture.image].data))
                         .convert("RGB"), np.float64)
        for a, b, c in ts.indices.reshape(-1, 3):
            p = ts.positions[[a, b, c]]
            m = np.array([p[1] - p[0], p[2] - p[0]]).T[:2]
            if abs(np.linalg.det(m)) < 1e-12:
                continue
            u, v = np.linalg.solve(m, (point - p[0])[:2])
            if u >= -1e-9 and v >= -1e-9 and u + v <= 1 + 1e-9:
                uv = ts.uvs[0][a] + u * (ts.uvs[0][b] - ts.uvs[0][a]) + v * (ts.uvs[0][c] - ts.uvs[0][a])
                h, w = pic.shape[:2]
                return pic[min(int(uv[1] * h), h - 1), min(int(uv[0] * w), w - 1)]
    raise AssertionError(f"no triangle at {point}")


@pytest.mark.parametrize("fmt", ["n3cplug", "n3cpart"])
def test_several_materials_become_one_texture_atlas(tmp_path, fmt):
    """A part or plug has one texture: two glTF materials used to leave the second
    painted with the first's texels.  Now each material is a cell of one atlas
    texture, so the exported model shows every quadrant where the glTF has it and
    the grip green."""
    scene = _two_material_plank()
    files = CODEC[fmt].from_scene(scene, out_name=f"plank.{fmt}")
    write_all(files, tmp_path)
    assert [n for n, _ in files if n.endswith(".dxt")] == ["plank.dxt"]
    assert any("2 materials (blade, grip) merged" in w for w in scene.warnings)
    tex = potsherd.read(tmp_path / "plank.dxt").root
    w, h = tex["width"], tex["height"]
    assert w & (w - 1) == 0 and h & (h - 1) == 0                  # powers of two
    back = export(tmp_path / f"plank.{fmt}", data_root=str(tmp_path))
    # N3 mirrors X on import and the export mirrors it back: glTF coordinates again
    for point, want in [((0.25, 0.75, 0), (250, 0, 0)), ((0.75, 0.75, 0), (0, 0, 250)),
                        ((0.25, 0.25, 0), (250, 250, 0)), ((0.75, 0.25, 0), (250, 250, 250)),
                        ((1.5, 0.5, 0), (0, 255, 0)), ((1.1, 0.9, 0), (0, 255, 0))]:
        got = _drawn_colour(back, np.array(point, float))
        assert np.abs(got - want).max() <= 12, (point, got)       # DXT1's 5:6:5 rounding
    # the control: without the atlas, the grip drew the blade's texture
    plain = _two_material_plank()
    plain.meshes[0].primitives[1].material = 0
    files = CODEC[fmt].from_scene(plain, out_name=f"one.{fmt}")
    write_all(files, tmp_path)
    one = export(tmp_path / f"one.{fmt}", data_root=str(tmp_path))
    assert np.abs(_drawn_colour(one, np.array([1.25, 0.75, 0])) - (250, 0, 0)).max() <= 12


def test_an_untextured_material_gets_its_colour_sRGB_encoded_in_the_atlas(tmp_path):
    """The grip's colour is a linear factor; its atlas cell holds texels, which
    are sRGB-encoded, so the cell is the factor encoded (it drew darker before)."""
    import srgb_formula as srgb
    scene = _two_material_plank()
    grip = (0.2140, 0.5, 0.0331)
    scene.materials[1].base_color = (*grip, 1.0)
    write_all(CODEC["n3cplug"].from_scene(scene, out_name="plank.n3cplug"), tmp_path)
    back = export(tmp_path / "plank.n3cplug", data_root=str(tmp_path))
    got = _drawn_colour(back, np.array([1.5, 0.5, 0]))
    want = srgb.encode(np.array(grip)) * 255                     # (128, 188, 51)
    assert np.abs(got - want).max() <= 12, got                   # DXT1's 5:6:5 rounding
    assert np.abs(got - np.array(grip) * 255).max() > 40          # control: the factor as bytes


def test_a_skinned_weapon_becomes_a_plug_on_its_strongest_joint(tmp_path):
    """A weapon exported with its armature (a skinned mesh, every vertex on the
    hand bone) used to be refused as a plug ("no rigid mesh").  It is now taken in
    its rest pose in the hand joint's frame, with that joint's N3 index, which the
    engine's plug follows."""
    import math as _math
    from potsherd.scene import quat_from_axis_angle
    s = Scene()
    root = s.add_node(name="hips")
    s.add_node(name="spine", parent=root, translation=(0.0, 0.5, 0.0))
    hand = s.add_node(name="hand", parent=root, translation=(0.3, 1.0, 0.0),
                      rotation=np.asarray(quat_from_axis_angle([0, 0, 1], _math.pi / 2)))
    world = world_matrices(s)
    sk = s.add_skin(Skin(joints=[root, 1, hand],
                         inverse_bind_matrices=np.stack([np.linalg.inv(world[j]) for j in (root, 1, hand)])))
    pos = np.array([[0.3, 1.0, 0.0], [0.3, 2.0, 0.0], [0.4, 2.0, 0.0], [0.4, 1.0, 0.0]], np.float32)
    prim = Primitive(positions=pos, indices=np.array([0, 1, 2, 0, 2, 3], np.uint32),
                     joints=np.array([[2, 0]] * 4, np.uint8),
                     weights=np.array([[1.0, 0.0]] * 4, np.float32))
    s.add_node(name="sword", mesh=s.add_mesh(Mesh(primitives=[prim])), skin=sk)
    files = CODEC["n3cplug"].from_scene(s, out_name="sword.n3cplug")
    write_all(files, tmp_path)
    plug = potsherd.read(tmp_path / "sword.n3cplug").root
    assert plug["joint"] == 2                          # pre-order: hips 0, spine 1, hand 2
    assert any("strongest joint 'hand' (joint 2)" in w for w in s.warnings)
    assert np.allclose(np.asarray(plug["position"]), 0) and np.allclose(plug["scale"], 1)
    mesh = export(tmp_path / "sword.n3pmesh")
    got = np.unique(np.concatenate([t.positions for t in triangle_sets(mesh)]).round(5), axis=0)
    # the blade in the hand's frame: the hand is turned 90 degrees about Z, so the
    # blade (world +Y) runs along the hand's +X, from the hand's origin
    local = (np.c_[pos, np.ones(4)] @ np.linalg.inv(world[hand]).T)[:, :3]
    assert np.allclose(local[0], 0, atol=1e-6) and np.allclose(local[1], [1, 0, 0], atol=1e-6)
    assert np.allclose(got, np.unique(local.round(5), axis=0), atol=1e-5)
    assert not np.allclose(got, np.unique(pos.round(5), axis=0), atol=1e-3)   # not world space
    # no usable weight at all (every influence 0): the skin's first joint, not a crash
    prim.weights = np.zeros((4, 2), np.float32)
    files = CODEC["n3cplug"].from_scene(s, out_name="limp.n3cplug")
    assert files[0][1].root["joint"] == 0


def test_a_skinned_weapon_on_a_scaled_rig_keeps_its_size(tmp_path):
    """An FBX-converted rig scales its armature by 0.01 (bones in centimetres).
    A weapon skinned to its hand came out of the plug import 100 times its
    size, in the joint's scaled frame; the engine hangs a plug on a joint of
    some character's skeleton, so the plug holds the weapon in metres: its
    joint's frame without the scale."""
    s = Scene()
    arm = s.add_node(name="Armature", scale=(0.01, 0.01, 0.01))
    hand = s.add_node(name="hand", parent=arm, translation=(30.0, 100.0, 0.0))
    world = world_matrices(s)
    sk = s.add_skin(Skin(joints=[hand], inverse_bind_matrices=np.linalg.inv(world[hand])[None]))
    pos = np.array([[0.3, 1.0, 0.0], [0.3, 2.0, 0.0], [0.4, 2.0, 0.0]], np.float32)   # metres
    prim = Primitive(positions=pos, indices=np.array([0, 1, 2], np.uint32),
                     joints=np.zeros((3, 2), np.uint8), weights=np.array([[1.0, 0.0]] * 3, np.float32))
    s.add_node(name="sword", mesh=s.add_mesh(Mesh(primitives=[prim])), skin=sk)
    write_all(CODEC["n3cplug"].from_scene(s, out_name="sword.n3cplug"), tmp_path)
    mesh = export(tmp_path / "sword.n3pmesh")
    got = np.concatenate([t.positions for t in triangle_sets(mesh)])
    assert np.allclose(np.ptp(got, axis=0), np.ptp(pos, axis=0), atol=1e-5)    # 1 m long, not 100
    assert np.allclose(got.min(axis=0), [0, 0, 0], atol=1e-5)    # from the hand's origin


def test_atlas_with_hostile_uvs_and_images_gives_a_file_or_a_format_error():
    """Random multi-material parts with UVs up to 1e30, NaN or infinite, unreadable
    images and colours outside 0..1: every import writes a part or refuses with a
    FormatError naming the non-finite UVs.  (Huge UV ranges once reached numpy as a
    negative tile count.)"""
    import io as _io
    from PIL import Image as PILImage
    from potsherd.scene import Image as SceneImage, TextureRef
    buf = _io.BytesIO()
    PILImage.new("RGB", (16, 16), (200, 0, 0)).save(buf, "PNG")
    rng = np.random.default_rng(7)
    made = refused = 0
    for trial in range(60):
        s = Scene()
        img = s.add_image(SceneImage(name="t", data=buf.getvalue() if trial % 5 else b"garbage"))
        prims = []
        for k in range(int(rng.integers(2, 5))):
            mat = s.add_material(Material(name=f"m{k}", base_color=tuple(rng.random(4) * 2 - 0.5),
                                          base_color_texture=TextureRef(img) if rng.random() < 0.7 else None))
            uv = rng.choice([1.0, 10.0, 1e6, 1e30]) * rng.normal(size=(4, 2))
            if rng.random() < 0.1:
                uv[0, 0] = np.nan
            if rng.random() < 0.1:
                uv[1, 1] = np.inf
            prims.append(Primitive(positions=rng.normal(size=(4, 3)).astype(np.float32),
                                   uvs=[uv.astype(np.float32)], material=mat,
                                   indices=np.array([0, 1, 2, 0, 2, 3], np.uint32)))
        s.add_node(name="x", mesh=s.add_mesh(Mesh(primitives=prims)))
        try:
            files = CODEC["n3cpart"].from_scene(s, out_name="f.n3cpart")
        except FormatError as e:
            assert re.search(r"TEXCOORD_0 of vertex \d is non-finite", str(e))
            refused += 1
            continue
        tex = [d for n, d in files if n.endswith(".dxt")][0].root
        assert max(tex["width"], tex["height"]) <= 2048
        made += 1
    assert made > 30 and refused > 5, (made, refused)


# ---- material colour: the engine modulates by the diffuse, the glTF by baseColorFactor ---------

def _colours(scene: Scene) -> list:
    return sorted(tuple(np.round(m.base_color, 6)) for m in scene.materials)


@pytest.mark.parametrize("fmt", ["n3chr", "n3cplug"])
def test_an_untextured_colour_survives_import_and_export(tmp_path, fmt):
    """An untextured glTF material came back white: the import wrote its colour
    to the diffuse, but the export did not show the diffuse.  The engine draws an
    untextured part in its lit diffuse colour (``CN3CPart::Render``)."""
    sc = rig_scene()
    sc.materials.append(Material(name="paint", base_color=(0.25, 0.5, 0.75, 1.0)))
    sc.meshes[0].primitives[0].material = 0
    files = CODEC[fmt].from_scene(sc, out_name=f"rig.{fmt}")
    write_all(files, tmp_path)
    mats = [d.root["material"] for n, d in files if d.format in ("n3cpart", "n3cplug")]
    # the factor is linear light, the diffuse a display value D3D multiplies by
    shown = [*srgb_formula.encode([0.25, 0.5, 0.75]).tolist(), 1.0]
    assert len(mats) == 1 and mats[0]["diffuse"] == pytest.approx(shown, abs=1e-12)
    assert mats[0]["diffuse"][0] == pytest.approx(0.5371, abs=1e-4)
    back = export(tmp_path / f"rig.{fmt}", data_root=str(tmp_path))
    assert _colours(back) == [(0.25, 0.5, 0.75, 1.0)]
    # and back once more through a glb: the exported extras keep the same diffuse
    files2 = CODEC[fmt].from_scene(via_glb(back, tmp_path), out_name=f"again.{fmt}")
    again = [d.root["material"]["diffuse"] for n, d in files2 if d.format in ("n3cpart", "n3cplug")]
    assert len(again) == 1 and again[0] == pytest.approx(shown, abs=1e-6)


def test_an_edited_colour_wins_over_the_exported_material(tmp_path):
    """Exported n3Material extras keep the whole record, but a colour changed in
    Blender is the diffuse the new file gets; alpha stays the record's when textured."""
    path = corpus("Item/1_6901_00_0.n3cplug")
    src = via_glb(export(path), tmp_path)
    assert [m.base_color for m in src.materials] == [(1.0, 1.0, 1.0, 1.0)]
    unedited = dict(CODEC["n3cplug"].from_scene(src, out_name="a.n3cplug"))["a.n3cplug"].root
    assert unedited["material"] == potsherd.read(path).root["material"]   # the record as it was
    src.materials[0].base_color = (0.5, 0.25, 0.125, 0.5)
    edited = dict(CODEC["n3cplug"].from_scene(src, out_name="b.n3cplug"))["b.n3cplug"].root
    assert edited["material"]["diffuse"] == pytest.approx(
        [*srgb_formula.encode([0.5, 0.25, 0.125]).tolist(), 1.0], abs=1e-12)
    assert {k: v for k, v in edited["material"].items() if k != "diffuse"} == \
        {k: v for k, v in unedited["material"].items() if k != "diffuse"}


def test_base_colour_of_an_n3_material_follows_its_texture_stage():
    from potsherd.formats.ko.scene_materials import n3_base_color
    def lin(*rgba):      # a display-space diffuse as glTF's linear factor (alpha as is)
        return pytest.approx((*srgb_formula.decode(rgba[:3]).tolist(), rgba[3]), abs=1e-12)

    m = {"diffuse": [0.5, 0.25, 2.0, 0.5], "colorOp": 4, "colorArg1": 0, "colorArg2": 2}
    assert n3_base_color(m, textured=False, stage_from_file=False) == lin(0.5, 0.25, 1.0, 0.5)
    assert n3_base_color(m, textured=True, stage_from_file=False) == lin(0.5, 0.25, 1.0, 1.0)
    assert n3_base_color(m, textured=True, stage_from_file=True) == lin(0.5, 0.25, 1.0, 1.0)
    assert n3_base_color(m, textured=True, stage_from_file=False)[0] == pytest.approx(0.2140, abs=1e-4)
    x2 = dict(m, colorOp=5)                                      # MODULATE2X
    assert n3_base_color(x2, textured=True, stage_from_file=True) == lin(1.0, 0.5, 1.0, 1.0)
    assert n3_base_color(x2, textured=True, stage_from_file=False) == lin(0.5, 0.25, 1.0, 1.0)
    select = dict(m, colorOp=2, colorArg1=2)                     # SELECTARG1 TEXTURE
    assert n3_base_color(select, textured=True, stage_from_file=True) == (1.0, 1.0, 1.0, 1.0)
    assert n3_base_color(select, textured=False, stage_from_file=True) == lin(0.5, 0.25, 1.0, 0.5)
    nan = {"diffuse": [None, 0.5, -1.0, 1.0]}                    # non-finite and out of range
    assert n3_base_color(nan, textured=False, stage_from_file=False) == lin(1.0, 0.5, 0.0, 1.0)


def test_names_outside_the_code_page_name_the_files_as_the_references_do(tmp_path):
    """References inside N3 files are cp949: a mesh named 'Körper_身体' gave files
    named with 'ö' and '体' while the character referred to 'K?rper_??', so it
    found none of its parts.  Such characters are '_' on disk and in references."""
    sc = rig_scene()
    body = next(n for n in sc.nodes if n.name == "body")
    body.name = "Körper_身体"
    files = CODEC["n3chr"].from_scene(sc, out_name="Grüße.n3chr")    # ß is in cp949, ü is not
    names = [n for n, _ in files]
    assert "Gr_ße_K_rper_身.n3cpart" in names and all(n.encode("cp949") for n in names)
    write_all(files, tmp_path)
    chr_root = files[0][1].root
    assert [bytes(p) for p in chr_root["parts"]] == [b"item\\" + "Gr_ße_K_rper_身.n3cpart".encode("cp949")]
    back = export(tmp_path / files[0][0], data_root=str(tmp_path))
    assert sum(s.triangle_count for s in triangle_sets(back)) == 1     # the part is found


@pytest.mark.parametrize("fmt", ["n3cskins", "n3cpart", "n3cplug"])
def test_formats_without_clips_say_the_animations_are_dropped(fmt):
    sc = rig_scene()                                     # two clips
    CODEC[fmt].from_scene(sc, out_name=f"x.{fmt}")
    assert any(w.startswith(f"{fmt}: 2 animation(s) dropped") for w in sc.warnings)
    still = rig_scene()
    still.animations = []                                # the control
    CODEC[fmt].from_scene(still, out_name=f"x.{fmt}")
    assert not any("animation(s) dropped" in w for w in still.warnings)
    chr_scene = rig_scene()                              # a character keeps them: no warning
    CODEC["n3chr"].from_scene(chr_scene, out_name="x.n3chr")
    assert not any("animation(s) dropped" in w for w in chr_scene.warnings)


def test_a_clip_between_frames_still_ends_in_its_last_pose():
    """A clip keyed off every frame rate is sampled at 30 frames/s: 0.871 s took
    26 frames, ending at 0.867 s short of the final pose; it takes 27 now, the
    last holding the end."""
    sc = rig_scene()
    sc.animations = sc.animations[:1]
    sc.animations[0].channels[0].times = np.array([0.0, 0.871], np.float32)
    clips = CODEC["n3anim"].from_scene(sc).root["clips"]
    assert [(c["start"], c["end"]) for c in clips] == [(1.0, 28.0)]      # 27 frames after 1
    rot = CODEC["n3joint"].from_scene(sc).root["children"][0]["keys"][1]["values"]
    end = [0, -np.sin(np.pi / 4), 0, np.cos(np.pi / 4)]                  # mirrored (x, -y, -z, w)
    assert np.allclose(rot[28], end, atol=1e-6) and not np.allclose(rot[27], end, atol=1e-3)
    sc.animations[0].channels[0].times = np.array([0.0, 0.9], np.float32)  # on a frame: 27 too
    assert [(c["start"], c["end"]) for c in CODEC["n3anim"].from_scene(sc).root["clips"]] == \
        [(1.0, 28.0)]


def test_skeleton_takes_the_skins_the_shown_meshes_use():
    """A skin no shown mesh uses (another glTF scene's) adds no joints; with no
    skin in use at all, every skin still counts (a skeleton-only file)."""
    from potsherd.formats.ko.importing.rig import skeleton_order
    s = Scene()
    a0 = s.add_node(name="a0")
    a1 = s.add_node(name="a1", parent=a0, translation=(0, 1, 0))
    b0 = s.add_node(name="b0", translation=(5, 0, 0))
    used = s.add_skin(Skin(joints=[a0, a1], inverse_bind_matrices=np.tile(np.eye(4), (2, 1, 1))))
    s.add_skin(Skin(joints=[b0], inverse_bind_matrices=np.eye(4)[None]))
    p = Primitive(positions=np.eye(3, dtype=np.float32), indices=np.array([0, 1, 2], np.uint32),
                  joints=np.zeros((3, 4), np.uint16), weights=np.tile([1.0, 0, 0, 0], (3, 1)))
    s.add_node(name="body", mesh=s.add_mesh(Mesh(name="body", primitives=[p])), skin=used)
    assert skeleton_order(s) == [a0, a1]
    s.nodes[-1].skin = None                               # (control: no skin in use)
    assert skeleton_order(s) == [a0, a1, b0]


@pytest.mark.parametrize("rate", [24.0, 25.0, 30.0, 60.0])
def test_a_clip_keyed_at_a_common_frame_rate_is_written_at_it(rate):
    """Blender samples clips at 24 frames/s: on the 30 frame/s timeline a key
    between two frames was lost.  A clip whose every key sits on one common
    rate's frames is written at that rate (the clip's fps), each key a frame."""
    sc = rig_scene()
    sc.animations = sc.animations[:1]
    ch = sc.animations[0].channels[0]
    n = 9
    ch.times = (np.arange(n) / rate).astype(np.float32)
    angles = np.where(np.arange(n) % 2, 0.6, -0.4)              # a zigzag: every key a peak
    ch.values = np.stack([np.zeros(n), np.sin(angles / 2), np.zeros(n), np.cos(angles / 2)],
                         axis=1).astype(np.float32)
    clip = CODEC["n3anim"].from_scene(sc).root["clips"][0]
    assert clip["fps"] == rate and (clip["start"], clip["end"]) == (1.0, 1.0 + n - 1)
    rot = CODEC["n3joint"].from_scene(sc).root["children"][0]["keys"][1]["values"]
    want = np.stack([np.zeros(n), -np.sin(angles / 2), np.zeros(n), np.cos(angles / 2)], axis=1)
    assert np.allclose(rot[1:1 + n], want, atol=1e-6)            # every peak kept


def test_a_clip_off_every_common_rate_stays_at_30_frames_per_second():
    from potsherd.formats.ko.importing.rig import key_rate
    sc = rig_scene()
    a = sc.animations[0]
    a.channels[0].times = np.array([0.0, 1 / 24, 1 / 30, 0.5], np.float32)   # two grids mixed
    assert key_rate(a) == 30.0
    a.channels[0].times = np.array([0.0, 0.5, 1.0], np.float32)               # on 30's frames
    assert key_rate(a) == 30.0
    a.channels[0].times = np.array([0.0, 1 / 48, 0.5], np.float32)
    assert key_rate(a) == 48.0


def _corner_drift(a: np.ndarray, b: np.ndarray) -> float:
    """How far the corners of one pose are from the other's nearest (both ways)."""
    d = np.sqrt(((a[:, None, :] - b[None, :, :]) ** 2).sum(-1))
    return float(max(d.min(0).max(), d.min(1).max()))


def _clip_corners(scene: Scene, animation, t: float) -> np.ndarray:
    from potsherd.scene.compare import _worlds
    world = _worlds(scene, animation, np.array([t]))[0]
    return np.unique(np.concatenate([np.asarray(s.positions, np.float64)[s.indices]
                                     for s in triangle_sets(scene, world=world)]).round(5), axis=0)


@pytest.mark.parametrize("rest_at_bind", [True, False])
def test_a_character_resting_off_its_bind_pose_animates_as_the_gltf_does(tmp_path, monkeypatch,
                                                                        rest_at_bind):
    """The engine binds skins at frame 0.  A glTF that rests in another pose than
    it binds in (Kenney's Maya character: arms down at rest, a T pose bound) was
    written with frame 0 at rest, and a vertex shared by two joints drifted as
    soon as a clip moved them apart; frame 0 is the bind pose now.  Negative
    control: without that step the shared vertices drift."""
    from rig_scenes import rest_off_bind_rig
    if not rest_at_bind:
        import potsherd.formats.ko.importing as importer
        monkeypatch.setattr(importer, "rest_at_bind", lambda scene: [])
    source = rest_off_bind_rig()
    files = CODEC["n3chr"].from_scene(copy.deepcopy(source), out_name="rig.n3chr")
    write_all(files, tmp_path)
    back = export(tmp_path / "rig.n3chr", data_root=str(tmp_path))
    drift = 0.0
    for a, b in zip(source.animations, back.animations):
        for t in (0.0, 0.2, 0.5, 1.0):                           # (frames of 30 frames/s)
            if t <= a.duration:
                drift = max(drift, _corner_drift(_clip_corners(source, a, t),
                                                 _clip_corners(back, b, t)))
    assert (drift < 1e-4) == rest_at_bind, drift


KENNEY = CORPUS_ROOT / "fbx" / "ufbx__maya_kenney_character_7700_binary.fbx"


@pytest.mark.skipif(not KENNEY.is_file(), reason="the Kenney FBX is not in the corpus")
def test_kenneys_character_animates_in_knight_online_as_in_its_fbx(tmp_path):
    """A real file that rests off its bind pose (36 joints; frame 0 held the rest
    pose and the arms were drawn out into blades in the walk).  At every frame
    of the 30 frames/s timeline that is also a key of the source, every posed
    corner is where the FBX's own scene puts it."""
    doc = potsherd.read(KENNEY)
    source = doc.codec.to_scene(doc)
    files = CODEC["n3chr"].from_scene(copy.deepcopy(source), out_name="kenney.n3chr")
    write_all(files, tmp_path)
    back = export(tmp_path / "kenney.n3chr", data_root=str(tmp_path))
    a, b = source.animations[0], back.animations[0]
    keys = np.unique(np.concatenate([np.asarray(c.times, np.float64) for c in a.channels]))
    on_frames = keys[np.abs(keys * 30 - np.round(keys * 30)) < 1e-4]
    assert len(on_frames) >= 15
    size = float(np.ptp(_clip_corners(source, a, 0.0), axis=0).max())
    drift = [_corner_drift(_clip_corners(source, a, t), _clip_corners(back, b, t))
             for t in on_frames]
    assert max(drift) < 1e-5 * size, drift
