"""glTF files made here, each with one feature a glTF leaves implicit or a
target cannot hold, imported into every game format and exported back; each
fix is held by a measure taken by potsherd's renderer (an independent glTF
reader) on the source and on the way back, with a negative control showing
the measure fails on the wrong answer (issue 44).

Measures: how far stored normals agree with their faces (area-weighted mean
cosine), area and bounding box of the posed triangles, and heights at several
times of a clip."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import potsherd
from corpus_paths import corpus_path
from potsherd.export import render as rd
from potsherd.export.gltf import write_glb
from potsherd.importer import import_gltf
from potsherd.scene import (Animation, Channel, Image, Material, Mesh, MorphTarget, Primitive,
                            Scene, Skin, TextureRef)
from potsherd.scene.import_prep import Holds, flat_normals, prepare, read_sidecar

MESH_TARGETS = ("n3pmesh", "n3shape", "n3cplug", "dts", "trwad", "fbx")


# ---- scenes ----------------------------------------------------------------------

def _box(size: float = 1.0) -> tuple:
    """A cube (24 corners, a face's four apart), counter-clockwise outward."""
    pos, idx = [], []
    for ax in range(3):
        for s in (-1, 1):
            u, v = (ax + 1) % 3, (ax + 2) % 3
            base = len(pos)
            for a, b in ((-1, -1), (1, -1), (1, 1), (-1, 1)):
                p = [0.0, 0.0, 0.0]
                p[ax], p[u], p[v] = s, a, b
                pos.append(p)
            q = [base, base + 1, base + 2, base, base + 2, base + 3]
            idx += q if s > 0 else [q[0], q[2], q[1], q[3], q[5], q[4]]
    return np.array(pos, np.float32) * (size / 2), np.array(idx, np.uint32)


def _shared_box() -> tuple:
    """A cube on its 8 corners only (smooth normals would point along diagonals)."""
    pos, idx = _box()
    keys, inverse = np.unique(pos, axis=0, return_inverse=True)
    return keys.astype(np.float32), inverse.reshape(-1)[idx].astype(np.uint32)


def scene_without_normals(size: float = 1.0) -> Scene:
    pos, idx = _shared_box()
    s = Scene(name="plain")
    s.add_material(Material(name="red", base_color=(0.8, 0.2, 0.2, 1.0)))
    m = s.add_mesh(Mesh(name="box", primitives=[Primitive(positions=pos * size, indices=idx,
                                                          material=0)]))
    s.add_node(name="box", mesh=m)
    return s


def scene_with_colours() -> Scene:
    s = scene_without_normals()
    p = s.meshes[0].primitives[0]
    p.colors = np.clip(p.positions + 0.5, 0, 1).astype(np.float32)
    return s


def _grid(n: int = 6) -> tuple:
    xs = np.linspace(-1, 1, n)
    x, z = np.meshgrid(xs, xs)
    pos = np.stack([x.ravel(), np.zeros(x.size), z.ravel()], 1).astype(np.float32)
    idx = []
    for r in range(n - 1):
        for c in range(n - 1):
            a = r * n + c
            idx += [a, a + n, a + 1, a + 1, a + n, a + n + 1]
    return pos, np.array(idx, np.uint32)


def scene_with_held_morphs(animated: bool) -> Scene:
    """A grid with a bulge and a shear target, both held at 0.5 by default; when
    ``animated``, a clip takes the bulge from 0 to 1."""
    pos, idx = _grid()
    s = Scene(name="morph")
    s.add_material(Material(name="m"))
    bulge = np.zeros_like(pos)
    bulge[:, 1] = 1 - (pos[:, 0] ** 2 + pos[:, 2] ** 2) / 2
    shear = np.zeros_like(pos)
    shear[:, 0] = 0.5 * pos[:, 2]
    nrm = np.tile([0.0, 1.0, 0.0], (len(pos), 1)).astype(np.float32)
    m = s.add_mesh(Mesh(name="g", weights=[0.5, 0.5], primitives=[Primitive(
        positions=pos, indices=idx, normals=nrm, material=0,
        targets=[MorphTarget("bulge", bulge), MorphTarget("shear", shear)])]))
    s.add_node(name="g", mesh=m)
    if animated:
        s.add_animation(Animation(name="rise", channels=[Channel(
            0, "weights", np.array([0.0, 1.0], np.float32),
            np.array([0, 0, 1, 0], np.float32))]))
    return s


def _png(colour: tuple, size: int = 8) -> bytes:
    import io
    from PIL import Image as PILImage
    buf = io.BytesIO()
    PILImage.new("RGB", (size, size), colour).save(buf, "PNG")
    return buf.getvalue()


def scene_with_emissive_map(with_map: bool = True) -> Scene:
    s = scene_without_normals()
    s.add_image(Image(name="glow", data=_png((0, 200, 40))))
    mat = s.materials[0]
    if with_map:
        mat.emissive = (1.0, 1.0, 1.0)
        mat.emissive_texture = TextureRef(image=0)
    else:
        mat.emissive = (0.2, 0.0, 0.0)
    p = s.meshes[0].primitives[0]
    p.uvs = [np.clip(p.positions[:, :2] + 0.5, 0, 1).astype(np.float32)]
    return s


def skinned_column(depth: int = 4, normals: bool = True) -> Scene:
    """``depth`` boxes stacked on a chain of joints, a clip bending every joint."""
    s = Scene(name=f"column{depth}")
    s.add_material(Material(name="m"))
    pos, idx, joints = [], [], []
    for k in range(depth):
        p, i = _box()
        p = p.copy()
        p[:, 1] += k + 0.5
        idx.append(i + 24 * k)
        pos.append(p)
        joints.append(np.tile([k, 0, 0, 0], (24, 1)))
    prim = Primitive(positions=np.concatenate(pos), indices=np.concatenate(idx).astype(np.uint32),
                     joints=np.concatenate(joints).astype(np.uint16),
                     weights=np.tile([1.0, 0, 0, 0], (24 * depth, 1)).astype(np.float32),
                     material=0)
    if not normals:
        prim.normals = None
    else:
        prim = flat_normals(prim)
    m = s.add_mesh(Mesh(name="body", primitives=[prim]))
    chain, parent = [], None
    for k in range(depth):
        parent = s.add_node(name=f"j{k}", translation=(0.0, 1.0 if k else 0.0, 0.0), parent=parent)
        chain.append(parent)
    ibm = np.stack([np.linalg.inv(np.array([[1, 0, 0, 0], [0, 1, 0, k], [0, 0, 1, 0],
                                            [0, 0, 0, 1]], float)) for k in range(depth)])
    sk = s.add_skin(Skin(joints=chain, inverse_bind_matrices=ibm))
    s.add_node(name="body", mesh=m, skin=sk)
    t = np.array([0.0, 0.5, 1.0], np.float32)
    a = np.array([0.0, 0.3, 0.6])
    rot = np.stack([np.zeros(3), np.zeros(3), np.sin(a / 2), np.cos(a / 2)], 1).astype(np.float32)
    s.add_animation(Animation(name="bend", channels=[Channel(j, "rotation", t, rot)
                                                     for j in chain[1:]]))
    return s


# ---- measures ---------------------------------------------------------------------

def measure(path: Path, animation=None, t: float = 0.0) -> dict:
    """Area, bounding box and normal agreement of what the renderer draws."""
    tris = rd.scene_triangles(rd.Gltf(str(path)), animation, t)
    area, agree, weight, pts = 0.0, 0.0, 0.0, []
    for tr in tris:
        p = tr["pos"]
        f = np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])
        a = np.linalg.norm(f, axis=1)
        area += a.sum() / 2
        pts.append(p.reshape(-1, 3))
        if tr["nrm"] is not None:
            fn = f / np.maximum(a, 1e-12)[:, None]
            n = tr["nrm"] / np.maximum(np.linalg.norm(tr["nrm"], axis=2, keepdims=True), 1e-12)
            agree += (np.einsum("ti,tci->t", fn, n) / 3 * a).sum()
            weight += a.sum()
    pts = np.concatenate(pts)
    return {"area": area, "lo": pts.min(0), "hi": pts.max(0),
            "normals": agree / weight if weight else None}


def round_trip(scene: Scene, target: str, tmp: Path, **options) -> tuple:
    """(source glb, the target exported back as glb, import summary)."""
    tmp.mkdir(parents=True, exist_ok=True)
    src = tmp / "src.glb"
    write_glb(scene, src)
    out = tmp / target / f"out.{target}"
    out.parent.mkdir()
    summary = import_gltf(src, out, options=options)
    main = out if target != "n3cplug" else next(out.parent.glob("*.n3pmesh"))
    doc = potsherd.read(main)
    back = tmp / target / "back.glb"
    write_glb(doc.codec.to_scene(doc), back)
    return src, back, summary


# ---- the shared layer --------------------------------------------------------------

def test_flat_normals_are_the_faces_and_coplanar_corners_weld_again():
    pos, idx = _shared_box()
    p = flat_normals(Primitive(positions=pos, indices=idx))
    assert len(p.positions) == 24              # 8 corners, 3 faces each: 24, not 36
    tri = np.asarray(p.indices).reshape(-1, 3)
    q = np.asarray(p.positions, np.float64)
    face = np.cross(q[tri[:, 1]] - q[tri[:, 0]], q[tri[:, 2]] - q[tri[:, 0]])
    face /= np.linalg.norm(face, axis=1, keepdims=True)
    for c in range(3):
        assert np.allclose(p.normals[tri[:, c]], face, atol=1e-6)
    # the same triangles, same winding
    assert np.allclose(q[tri], pos[idx.reshape(-1, 3)])


def test_flat_normals_of_non_finite_triangles_are_up_without_a_warning():
    """Hypothesis found corners whose cross product meets inf - inf (numpy's
    "invalid value" warning, an error in the FBX importer): such triangles take
    the degenerate normal; the finite one beside them keeps its own."""
    pos = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0],             # finite: +Z
                    [np.inf, np.inf, 0], [np.inf, 0, 0], [0, np.nan, 1],
                    [0, 0, 0], [np.inf, 0, 0], [0, 1, 0]], np.float32)
    idx = np.arange(9, dtype=np.uint32)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        p = flat_normals(Primitive(positions=pos, indices=idx))
    tri = np.asarray(p.indices).reshape(-1, 3)
    assert np.array_equal(p.normals[tri[0]], [[0, 0, 1]] * 3)
    assert np.array_equal(p.normals[tri[1]], [[0, 1, 0]] * 3)
    assert np.array_equal(p.normals[tri[2]], [[0, 1, 0]] * 3)


def test_prepare_leaves_the_given_scene_alone_and_warns_once():
    s = scene_with_colours()
    holds = Holds("thing")
    got = prepare(s, holds)
    again = prepare(got, holds)
    assert s.meshes[0].primitives[0].normals is None          # not changed in place
    assert got.meshes[0].primitives[0].normals is not None
    assert again.warnings is s.warnings
    said = [w for w in s.warnings if "vertex colours" in w]
    assert len(said) == 1 and "thing" in said[0]
    # a format with colours and its own reading of missing normals: nothing to say or fill
    s2 = scene_with_colours()
    assert prepare(s2, Holds("x", vertex_colors=True, shades=True)) is s2
    assert s2.warnings == []


# ---- 2: flat normals where the glTF has none ----------------------------------------

@pytest.mark.parametrize("target", MESH_TARGETS)
def test_no_normals_come_back_flat(target, tmp_path):
    """glTF: a primitive without normals has flat normals.  A cube on 8 shared
    corners comes back lit by its faces (smooth normals along the diagonals
    would agree at 0.58; the .dts's table of 256 directions at 0.99)."""
    src, back, _ = round_trip(scene_without_normals(), target, tmp_path)
    got = measure(back)
    assert got["normals"] is not None and got["normals"] > 0.98, got
    assert got["area"] == pytest.approx(6.0, rel=1e-3)


def test_normal_measure_negative_control():
    """The measure sees smooth normals on the shared cube, and inward ones."""
    pos, idx = _shared_box()
    from potsherd.scene import compute_normals
    for nrm, lo, hi in ((compute_normals(pos, idx), 0.5, 0.7),
                        (-flat_normals(Primitive(positions=pos, indices=idx)).normals, -1.01, -0.99)):
        s = scene_without_normals()
        p = s.meshes[0].primitives[0]
        if len(nrm) != len(p.positions):
            s.meshes[0].primitives[0] = flat_normals(p)
        s.meshes[0].primitives[0].normals = nrm
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            write_glb(s, Path(d) / "x.glb")
            assert lo <= measure(Path(d) / "x.glb")["normals"] <= hi


@pytest.mark.parametrize("target", ("n3shape", "n3chr", "dts", "trwad", "fbx"))
@pytest.mark.parametrize("depth,normals", ((4, True), (4, False), (24, True)))
def test_skinned_normals_and_pose_come_back(target, depth, normals, tmp_path):
    """A skinned column (deep chains too, with and without normals): normals
    agree with faces, and the posed shape matches at several times of its
    clip (for the formats with clips)."""
    scene = skinned_column(depth, normals)
    src, back, _ = round_trip(scene, target, tmp_path)
    rest = measure(back)
    assert rest["normals"] > 0.98, rest
    assert rest["area"] == pytest.approx(6.0 * depth, rel=0.02)
    if target in ("n3chr", "dts", "trwad", "fbx"):
        for t in (0.25, 0.5, 1.0):
            want, got = measure(src, 0, t), measure(back, 0, t)
            assert np.allclose(got["hi"], want["hi"], atol=0.05 * depth ** 0.5), (t, got, want)
            assert np.allclose(got["lo"], want["lo"], atol=0.05 * depth ** 0.5), (t, got, want)
        # negative control: the clip does move the column
        assert not np.allclose(measure(src, 0, 1.0)["hi"], measure(src, 0, 0.0)["hi"], atol=0.1)


# ---- 4: vertex colours are named where dropped ---------------------------------------

@pytest.mark.parametrize("target", ("n3pmesh", "n3shape", "n3cplug", "n3chr", "dts"))
def test_vertex_colours_a_target_cannot_hold_are_named_once(target, tmp_path):
    scene = scene_with_colours() if target != "n3chr" else skinned_column(2)
    if target == "n3chr":
        p = scene.meshes[0].primitives[0]
        p.colors = np.ones((len(p.positions), 4), np.float32)
    src = tmp_path / "src.glb"
    write_glb(scene, src)
    out = tmp_path / f"out.{target}"
    said = import_gltf(src, out)["warnings"]
    assert sum("vertex colours" in w for w in said) == 1, said
    # negative control: the same scene without colours says nothing of them
    p = scene.meshes[0].primitives[0]
    p.colors = None
    write_glb(scene, src)
    said = import_gltf(src, tmp_path / f"again.{target}")["warnings"]
    assert not any("vertex colours" in w for w in said), said


def test_fbx_keeps_vertex_colours(tmp_path):
    src, back, summary = round_trip(scene_with_colours(), "fbx", tmp_path)
    tris = rd.scene_triangles(rd.Gltf(str(back)), None, 0.0)
    colours = np.concatenate([t["color"].reshape(-1, 4) for t in tris])
    # the gradient is there (the renderer multiplies by the base colour 0.8, 0.2, 0.2)
    assert (np.ptp(colours[:, :3], axis=0) / [0.8, 0.2, 0.2]).min() > 0.9
    assert not any("vertex colours" in w for w in summary["warnings"])


# ---- 6: default morph weights at rest ------------------------------------------------

@pytest.mark.parametrize("animated", (False, True))
def test_dts_holds_default_morph_weights_at_rest(animated, tmp_path):
    scene = scene_with_held_morphs(animated)
    src, back, _ = round_trip(scene, "dts", tmp_path)
    want, got = measure(src), measure(back)
    assert want["hi"][1] == pytest.approx(0.48, abs=0.01)       # the bulge at 0.5
    assert np.allclose(got["hi"], want["hi"], atol=0.01) and np.allclose(got["lo"], want["lo"], atol=0.01)
    assert got["area"] == pytest.approx(want["area"], rel=0.01)
    if animated:
        for t in (0.0, 0.5, 1.0):
            w, g = measure(src, 0, t), measure(back, 0, t)
            assert g["hi"][1] == pytest.approx(w["hi"][1], abs=0.01), t
    # negative control: the base mesh (no weight) is flat
    scene.meshes[0].weights = [0.0, 0.0]
    write_glb(scene, tmp_path / "flat.glb")
    assert measure(tmp_path / "flat.glb")["hi"][1] == pytest.approx(0.0, abs=1e-6)


@pytest.mark.parametrize("target", ("n3pmesh", "n3shape", "n3cplug", "trwad", "fbx"))
def test_formats_without_morphs_keep_the_held_shape_and_say_so(target, tmp_path):
    src, back, summary = round_trip(scene_with_held_morphs(False), target, tmp_path)
    want, got = measure(src), measure(back)
    assert np.allclose(got["hi"], want["hi"], atol=0.01) and np.allclose(got["lo"], want["lo"], atol=0.01)
    if target != "fbx":
        assert sum("morph targets" in w for w in summary["warnings"]) == 1, summary["warnings"]


# ---- 1: FBX keeps the emissive map -------------------------------------------------

def test_fbx_keeps_the_emissive_map(tmp_path):
    src, back, _ = round_trip(scene_with_emissive_map(), "fbx", tmp_path)
    tris = rd.scene_triangles(rd.Gltf(str(back)), None, 0.0)
    assert tris[0]["etex"] is not None, "emissive texture lost"
    g = rd.Gltf(str(back))
    mat = g.json["materials"][0]
    assert mat["emissiveFactor"] == [1.0, 1.0, 1.0]
    # the texture behind it is the glow picture: sampled at a known UV
    img = g.json["images"][g.json["textures"][mat["emissiveTexture"]["index"]]["source"]]
    import io
    from PIL import Image as PILImage
    data = g.buffer_view(img["bufferView"]) if hasattr(g, "buffer_view") else None
    if data is None:
        from potsherd.scene.gltf_read import read_gltf
        sc = read_gltf(back)
        data = sc.images[sc.materials[0].emissive_texture.image].data
    assert PILImage.open(io.BytesIO(bytes(data))).convert("RGB").getpixel((4, 4)) == (0, 200, 40)


def test_fbx_without_emissive_map_keeps_its_factor(tmp_path):
    """Negative control: a plain emissive factor stays and no map appears."""
    src, back, _ = round_trip(scene_with_emissive_map(with_map=False), "fbx", tmp_path)
    mat = rd.Gltf(str(back)).json["materials"][0]
    assert "emissiveTexture" not in mat
    assert mat["emissiveFactor"] == pytest.approx([0.2, 0.0, 0.0])


# ---- 3: the TR unit scale travels with the file --------------------------------------

def test_trwad_gives_back_the_size_it_imported(tmp_path):
    """A 600 m box does not fit TR4's 16-bit units at 1/512 m: the import picks
    a larger unit, writes it beside the file, and the export reads it back."""
    src, back, summary = round_trip(scene_without_normals(600.0), "trwad", tmp_path)
    out = tmp_path / "trwad" / "out.trwad"
    unit = read_sidecar(str(out)).get("unit_scale")
    assert unit and unit > 1 / 512
    want, got = measure(src), measure(back)
    assert got["area"] == pytest.approx(want["area"], rel=0.01)
    assert np.allclose(got["hi"] - got["lo"], want["hi"] - want["lo"], rtol=0.01)
    # negative control: without the sidecar the export is at 1/512 m per unit
    Path(str(out) + ".potsherd.json").unlink()
    doc = potsherd.read(out)
    write_glb(doc.codec.to_scene(doc), tmp_path / "bare.glb")
    assert measure(tmp_path / "bare.glb")["area"] < 0.5 * want["area"]


def test_trwad_at_the_default_unit_writes_no_sidecar(tmp_path):
    round_trip(scene_without_normals(2.0), "trwad", tmp_path)
    assert not (tmp_path / "trwad" / "out.trwad.potsherd.json").exists()


# ---- the corpus tier -----------------------------------------------------------------

CORPUS = corpus_path("glb") if corpus_path("glb").is_dir() else None


@pytest.mark.corpus
@pytest.mark.skipif(CORPUS is None, reason="glb corpus not present")
@pytest.mark.parametrize("target", MESH_TARGETS)
def test_corpus_glb_come_back_lit_and_sized(target, tmp_path):
    """Every glb Blender and assimp wrote: what comes back is lit as the source
    (normal agreement within 0.02; the .dts table within 0.01 more) and of its
    area (1%; the .trwad's whole units and rigid parts 2%)."""
    files = sorted(Path(CORPUS).glob("*.glb"))
    assert files
    for f in files:
        want = measure(f)
        d = tmp_path / f.stem
        d.mkdir()
        out = d / f"out.{target}"
        import_gltf(f, out)
        main = out if target != "n3cplug" else next(d.glob("*.n3pmesh"))
        doc = potsherd.read(main)
        write_glb(doc.codec.to_scene(doc), d / "back.glb")
        got = measure(d / "back.glb")
        if want["normals"] is not None:
            assert got["normals"] >= want["normals"] - (0.03 if target == "dts" else 0.02), (f.name, got)
        if target == "n3cplug" and "max_tangent" in f.name:
            continue            # a plug holds its node's scale apart (not drawn by to_scene)
        assert got["area"] == pytest.approx(want["area"], rel=0.02 if target == "trwad" else 0.01), f.name


# ---- 5: TR texture packing keeps each polygon's texture undistorted ------------------

def _logo(w: int = 128, h: int = 128) -> bytes:
    """Four colours in quadrants and a diagonal white stripe: skew moves them."""
    import io
    from PIL import Image as PILImage
    a = np.zeros((h, w, 3), np.uint8)
    a[: h // 2, : w // 2] = (220, 30, 30)
    a[: h // 2, w // 2:] = (30, 220, 30)
    a[h // 2:, : w // 2] = (30, 30, 220)
    a[h // 2:, w // 2:] = (220, 220, 30)
    yy, xx = np.mgrid[:h, :w]
    a[np.abs(xx - yy) < 6] = (255, 255, 255)
    buf = io.BytesIO()
    PILImage.fromarray(a).save(buf, "PNG")
    return buf.getvalue()


def scene_with_large_quad(uv_corners) -> Scene:
    """A 4 m x 2 m panel (two triangles) whose UVs are ``uv_corners`` (nw, ne,
    se, sw), facing +Z."""
    s = Scene(name="panel")
    s.add_image(Image(name="logo", data=_logo()))
    s.add_material(Material(name="logo", base_color_texture=TextureRef(image=0)))
    pos = np.array([[-2, 1, 0], [2, 1, 0], [2, -1, 0], [-2, -1, 0]], np.float32)
    uv = np.array(uv_corners, np.float32)
    idx = np.array([0, 2, 1, 0, 3, 2], np.uint32)
    nrm = np.tile([0.0, 0, 1], (4, 1)).astype(np.float32)
    m = s.add_mesh(Mesh(name="panel", primitives=[Primitive(positions=pos, indices=idx,
                                                            normals=nrm, uvs=[uv], material=0)]))
    s.add_node(name="panel", mesh=m)
    return s


def _colours_at(path: Path, points: np.ndarray) -> np.ndarray:
    """The texture colour the renderer's triangles show at ``points`` (on the
    z = const panel): the triangle holding each point, its UVs interpolated,
    nearest texel."""
    out = np.full((len(points), 3), -1.0)
    for tr in rd.scene_triangles(rd.Gltf(str(path)), None, 0.0):
        if tr["tex"] is None:
            continue
        p = tr["pos"][:, :, :2]
        tex = np.asarray(tr["tex"], np.float64)
        h, w = tex.shape[:2]
        for k, q in enumerate(points):
            a, b, c = p[:, 0], p[:, 1], p[:, 2]
            v0, v1, v2 = b - a, c - a, q[None] - a
            d = v0[:, 0] * v1[:, 1] - v0[:, 1] * v1[:, 0]
            ok = np.abs(d) > 1e-12
            u = np.where(ok, (v2[:, 0] * v1[:, 1] - v2[:, 1] * v1[:, 0]) / np.where(ok, d, 1), -1)
            v = np.where(ok, (v0[:, 0] * v2[:, 1] - v0[:, 1] * v2[:, 0]) / np.where(ok, d, 1), -1)
            inside = np.flatnonzero((u >= -1e-6) & (v >= -1e-6) & (u + v <= 1 + 1e-6))
            if not len(inside):
                continue
            t = inside[0]
            uv = tr["uv"][t, 0] + u[t] * (tr["uv"][t, 1] - tr["uv"][t, 0]) + \
                v[t] * (tr["uv"][t, 2] - tr["uv"][t, 0])
            x = int(np.clip(np.floor(uv[0] * w), 0, w - 1))
            y = int(np.clip(np.floor(uv[1] * h), 0, h - 1))
            out[k] = tex[y, x, :3] * (255 if tex.max() <= 1.0 else 1)
    return out


#: points on the panel away from colour edges (a texel of error is not a skew)
_PROBES = np.array([[x, y] for x in np.linspace(-1.8, 1.8, 9) for y in np.linspace(-0.9, 0.9, 5)])


def _match(src: Path, back: Path) -> float:
    a, b = _colours_at(src, _PROBES), _colours_at(back, _PROBES)
    assert (a >= 0).all() and (b >= 0).all()
    return float((np.abs(a - b).max(axis=1) < 48).mean())


@pytest.mark.parametrize("uv", (
    [(0, 0), (1, 0), (1, 1), (0, 1)],                  # the whole logo
    [(0.1, 0.0), (0.9, 0.1), (1.0, 0.9), (0.0, 1.0)],  # a non-affine (perspective-like) map
))
def test_trwad_keeps_a_large_quads_texture_undistorted(uv, tmp_path):
    """The panel's texture sampled at 45 known points comes back the same colour
    at nearly all of them (a 64-texel block loses detail, not place); the
    shrink is warned with its measured texel loss."""
    src, back, summary = round_trip(scene_with_large_quad(uv), "trwad", tmp_path)
    assert _match(src, back) >= 0.9
    said = [w for w in summary["warnings"] if "shrunk" in w]
    assert said and "% of the" in said[0]


def test_texture_probe_negative_control(tmp_path):
    """The probe sees a skew: the same panel with its UVs turned a quarter."""
    a = scene_with_large_quad([(0, 0), (1, 0), (1, 1), (0, 1)])
    b = scene_with_large_quad([(1, 0), (1, 1), (0, 1), (0, 0)])
    write_glb(a, tmp_path / "a.glb")
    write_glb(b, tmp_path / "b.glb")
    assert _match(tmp_path / "a.glb", tmp_path / "b.glb") < 0.6


# ---- strips and fans -----------------------------------------------------------------

def _strip_fan_glb() -> bytes:
    """A hand-made glb: a bent ribbon as a TRIANGLE_STRIP and a cone as a
    TRIANGLE_FAN, neither with normals (flat, by glTF's rule)."""
    import json
    import struct
    n = 8
    x = np.repeat(np.linspace(-1, 1, n), 2)
    ribbon = np.stack([x, np.tile([0.0, 1.0], n), 0.3 * x ** 2], 1).astype(np.float32)
    ang = np.linspace(0, 2 * np.pi, 9)
    cone = np.concatenate([[[0, 2.5, 0]], np.stack([np.cos(ang), np.full(9, 1.5), np.sin(ang)], 1)]
                          ).astype(np.float32)
    # the fan's rim turns clockwise seen from the tip: front faces point outwards
    cone[1:] = cone[1:][::-1]
    blob = ribbon.tobytes() + cone.tobytes()
    gl = {"asset": {"version": "2.0"}, "scene": 0, "scenes": [{"nodes": [0]}],
          "nodes": [{"mesh": 0, "name": "shapes"}],
          "buffers": [{"byteLength": len(blob)}],
          "bufferViews": [{"buffer": 0, "byteOffset": 0, "byteLength": ribbon.nbytes},
                          {"buffer": 0, "byteOffset": ribbon.nbytes, "byteLength": cone.nbytes}],
          "accessors": [{"bufferView": 0, "componentType": 5126, "count": len(ribbon),
                         "type": "VEC3", "min": ribbon.min(0).tolist(), "max": ribbon.max(0).tolist()},
                        {"bufferView": 1, "componentType": 5126, "count": len(cone),
                         "type": "VEC3", "min": cone.min(0).tolist(), "max": cone.max(0).tolist()}],
          "materials": [{"name": "m", "doubleSided": False}],
          "meshes": [{"name": "shapes", "primitives": [
              {"attributes": {"POSITION": 0}, "mode": 5, "material": 0},
              {"attributes": {"POSITION": 1}, "mode": 6, "material": 0}]}]}
    js = json.dumps(gl).encode()
    js += b" " * (-len(js) % 4)
    blob += b"\0" * (-len(blob) % 4)
    body = struct.pack("<II", len(js), 0x4E4F534A) + js + struct.pack("<II", len(blob), 0x004E4942) + blob
    return struct.pack("<III", 0x46546C67, 2, 12 + len(body)) + body


@pytest.mark.parametrize("target", MESH_TARGETS)
def test_strips_and_fans_come_back_lit_by_their_faces(target, tmp_path):
    src = tmp_path / "src.glb"
    src.write_bytes(_strip_fan_glb())
    want = measure(src)
    assert want["normals"] is None                 # the source has none: flat by the rule
    out = tmp_path / f"out.{target}"
    import_gltf(src, out)
    main = out if target != "n3cplug" else next(tmp_path.glob("*.n3pmesh"))
    doc = potsherd.read(main)
    write_glb(doc.codec.to_scene(doc), tmp_path / "back.glb")
    got = measure(tmp_path / "back.glb")
    assert got["normals"] > 0.97, got
    # (the .dts stores vertices in 255 steps per mesh axis, the .trwad whole units)
    assert got["area"] == pytest.approx(want["area"], rel={"trwad": 0.02, "dts": 0.01}.get(target, 1e-3))
