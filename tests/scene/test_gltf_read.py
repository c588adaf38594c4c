"""glTF reader: the inverse of the writer, other tools' files, crafted cases, hostile input."""
from __future__ import annotations

import base64
import json
import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scene_compare import assert_scene_matches
from export_scenes import checker_png, morph_scene, skinned_cube_scene, textured_quad_scene

import potsherd
from potsherd import registry
from potsherd.core.errors import (CountError, FormatError, InternalDecodeError, JsonFormatError,
                                  LimitError, MagicError, TruncatedError)
from potsherd.core.limits import Limits
from potsherd.export.gltf import document_scene, glb_bytes, scene_to_gltf, write_gltf
from potsherd.scene import (Animation, Channel, Image, Material, Mesh, MorphTarget, Node,
                            Primitive, Scene, Skin, TextureRef, quat_from_axis_angle)
from potsherd.scene.gltf_read import read_gltf
from potsherd.scene.ops import triangle_sets
from corpus_paths import CORPUS_ROOT

CORPUS = CORPUS_ROOT


def roundtrip(scene: Scene) -> Scene:
    gl, b = scene_to_gltf(scene, True)
    return read_gltf(glb_bytes(gl, b))


# ---- the writer's own scenes ---------------------------------------------------

@pytest.mark.parametrize("make", [skinned_cube_scene, morph_scene, textured_quad_scene])
def test_writer_scenes_read_back(make):
    assert_scene_matches(make(), roundtrip(make()))


def test_gltf_with_external_files(tmp_path):
    scene = textured_quad_scene()
    write_gltf(scene, tmp_path / "quad.gltf")
    back = read_gltf(tmp_path / "quad.gltf")
    assert_scene_matches(textured_quad_scene(), back)
    assert back.images[0].uri.startswith("quad_")          # the file it came from


def test_gltf_with_data_uris(tmp_path):
    write_gltf(textured_quad_scene(), tmp_path / "q.gltf", external_images=False)
    gl = json.loads((tmp_path / "q.gltf").read_text())
    bin_data = (tmp_path / "q.bin").read_bytes()
    gl["buffers"][0]["uri"] = ("data:application/octet-stream;base64,"
                               + base64.b64encode(bin_data).decode())
    back = read_gltf(json.dumps(gl).encode())               # bytes: no folder needed
    assert_scene_matches(textured_quad_scene(), back)


# ---- property: random scenes -> write -> read -------------------------------------

@st.composite
def scenes(draw):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    s = Scene(name=draw(st.sampled_from(["", "s", "сцена"])))
    nmat = draw(st.integers(0, 2))
    for i in range(nmat):
        s.add_material(Material(name=f"m{i}", base_color=tuple(rng.random(4).round(3)),
                                alpha_mode=draw(st.sampled_from(["OPAQUE", "MASK", "BLEND"])),
                                alpha_cutoff=0.25, double_sided=draw(st.booleans()),
                                unlit=draw(st.booleans()), metallic=0.5, roughness=0.75))
    nmesh = draw(st.integers(0, 3))
    for mi in range(nmesh):
        prims = []
        ntargets = draw(st.integers(0, 2))
        for _ in range(draw(st.integers(1, 3))):
            nv = draw(st.integers(3, 40))
            p = Primitive(positions=rng.normal(size=(nv, 3)).astype(np.float32))
            if draw(st.booleans()):
                p.normals = rng.normal(size=(nv, 3)) + 0.1
            p.uvs = [rng.random((nv, 2)).astype(np.float32) for _ in range(draw(st.integers(0, 2)))]
            kind = draw(st.sampled_from(["none", "u8", "f3", "f4"]))
            if kind == "u8":
                p.colors = rng.integers(0, 256, (nv, 4)).astype(np.uint8)
            elif kind != "none":
                p.colors = rng.random((nv, 3 if kind == "f3" else 4)).astype(np.float32)
            if draw(st.booleans()):
                p.indices = rng.integers(0, nv, 3 * draw(st.integers(1, 30))).astype(np.uint32)
            if nmat and draw(st.booleans()):
                p.material = draw(st.integers(0, nmat - 1))
            p.targets = [MorphTarget(positions=rng.normal(size=(nv, 3)).astype(np.float32))
                         for _ in range(ntargets)]
            prims.append(p)
        s.add_mesh(Mesh(name=f"mesh{mi}", primitives=prims,
                        weights=[0.5] * ntargets if ntargets else None,
                        target_names=[f"t{k}" for k in range(ntargets)] if ntargets else None))
    nnodes = draw(st.integers(1, 8))
    for ni in range(nnodes):
        parent = None if ni == 0 or draw(st.booleans()) else draw(st.integers(0, ni - 1))
        kw = {}
        if draw(st.booleans()):
            kw["translation"] = rng.normal(size=3)
            kw["rotation"] = quat_from_axis_angle(rng.normal(size=3) + 0.01, rng.random() * 3)
            kw["scale"] = rng.random(3) + 0.5
        elif draw(st.booleans()):
            m = np.eye(4)
            m[:3, :3] = rng.normal(size=(3, 3))
            m[:3, 3] = rng.normal(size=3)
            kw["matrix"] = m
        if nmesh and draw(st.booleans()):
            kw["mesh"] = draw(st.integers(0, nmesh - 1))
        s.add_node(parent=parent, name=f"n{ni}", extras={"k": ni}, **kw)
    if draw(st.booleans()):
        joints = list(range(nnodes))
        nv = 12
        p = Primitive(positions=rng.normal(size=(nv, 3)).astype(np.float32),
                      joints=rng.integers(0, nnodes, (nv, 8)).astype(np.uint16),
                      weights=rng.random((nv, 8)).astype(np.float32) + 0.01)
        mesh = s.add_mesh(Mesh(name="skinned", primitives=[p]))
        sk = s.add_skin(Skin(joints=joints, inverse_bind_matrices=np.tile(np.eye(4), (nnodes, 1, 1)),
                             name="rig"))
        s.add_node(name="skinned", mesh=mesh, skin=sk)
    for ai in range(draw(st.integers(0, 2))):
        a = Animation(name=f"a{ai}")
        for node in range(nnodes):
            if s.nodes[node].matrix is not None:
                continue
            interp = draw(st.sampled_from(["LINEAR", "STEP", "CUBICSPLINE"]))
            k = draw(st.integers(1, 6))
            times = np.cumsum(rng.random(k) + 0.01).astype(np.float32)
            per = 3 if interp == "CUBICSPLINE" else 1
            path = draw(st.sampled_from(["translation", "rotation", "scale"]))
            vals = rng.normal(size=(k * per, 4 if path == "rotation" else 3))
            a.channels.append(Channel(node, path, times, vals, interp))
        s.add_animation(a)
    return s


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenes())
def test_random_scenes_round_trip(scene):
    import copy
    orig = copy.deepcopy(scene)
    back = roundtrip(scene)
    assert_scene_matches(orig, back)
    for i, n in enumerate(orig.nodes):
        assert back.nodes[i].extras == n.extras


# ---- crafted glTF (the cases other exporters produce) ----------------------------

class Builder:
    """A tiny glTF assembler for hand-made cases (views exactly as given)."""

    def __init__(self):
        self.gl = {"asset": {"version": "2.0"}, "accessors": [], "bufferViews": [],
                   "buffers": [{"byteLength": 0}]}
        self.bin = bytearray()

    def view(self, data: bytes, stride: int | None = None) -> int:
        self.bin += b"\0" * ((-len(self.bin)) % 4)
        v = {"buffer": 0, "byteOffset": len(self.bin), "byteLength": len(data)}
        if stride:
            v["byteStride"] = stride
        self.bin += data
        self.gl["bufferViews"].append(v)
        return len(self.gl["bufferViews"]) - 1

    def acc(self, view, ctype, count, typ, offset=0, **kw) -> int:
        a = {"componentType": ctype, "count": count, "type": typ, **kw}
        if view is not None:
            a["bufferView"] = view
        if offset:
            a["byteOffset"] = offset
        self.gl["accessors"].append(a)
        return len(self.gl["accessors"]) - 1

    def glb(self) -> bytes:
        self.gl["buffers"][0]["byteLength"] = len(self.bin)
        return glb_bytes(self.gl, bytes(self.bin))


def _quad_positions():
    return np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], np.float32)


def test_interleaved_stride_normalized_uv_and_colors():
    b = Builder()
    pos = _quad_positions()
    uv16 = np.array([[0, 0], [65535, 0], [65535, 65535], [0, 65535]], np.uint16)
    col = np.array([[255, 0, 0, 255], [0, 255, 0, 128], [0, 0, 255, 0], [1, 2, 3, 4]], np.uint8)
    rec = np.zeros(4, dtype=[("p", "<f4", 3), ("uv", "<u2", 2), ("c", "u1", 4)])  # 20 bytes
    rec["p"], rec["uv"], rec["c"] = pos, uv16, col
    v = b.view(rec.tobytes(), stride=20)
    ap = b.acc(v, 5126, 4, "VEC3")
    au = b.acc(v, 5123, 4, "VEC2", offset=12, normalized=True)
    ac = b.acc(v, 5121, 4, "VEC4", offset=16, normalized=True)
    b.gl["meshes"] = [{"primitives": [{"attributes": {"POSITION": ap, "TEXCOORD_0": au,
                                                      "COLOR_0": ac}}]}]
    b.gl["nodes"] = [{"mesh": 0}]
    s = read_gltf(b.glb())
    p = s.meshes[0].primitives[0]
    assert np.array_equal(p.positions, pos)
    assert np.array_equal(p.uvs[0], [[0, 0], [1, 0], [1, 1], [0, 1]])
    assert p.colors.dtype == np.uint8 and np.array_equal(p.colors, col)
    assert p.indices is None and s.roots == [0]


def test_sparse_accessor_and_no_buffer_view():
    b = Builder()
    base = b.view(_quad_positions().tobytes())
    idx = b.view(np.array([1, 3], np.uint16).tobytes())
    val = b.view(np.array([[5, 5, 5], [7, 7, 7]], np.float32).tobytes())
    sparse = {"count": 2, "indices": {"bufferView": idx, "componentType": 5123},
              "values": {"bufferView": val}}
    a1 = b.acc(base, 5126, 4, "VEC3", sparse=sparse)
    a2 = b.acc(None, 5126, 4, "VEC3", sparse=sparse)       # zeros + sparse, no view
    b.gl["meshes"] = [{"primitives": [{"attributes": {"POSITION": a1},
                                       "targets": [{"POSITION": a2}]}], "weights": [0.25]}]
    s = read_gltf(b.glb())
    p = s.meshes[0].primitives[0]
    want = _quad_positions()
    want[1], want[3] = 5, 7
    assert np.array_equal(p.positions, want)
    assert np.array_equal(p.targets[0].positions, [[0, 0, 0], [5, 5, 5], [0, 0, 0], [7, 7, 7]])
    assert s.meshes[0].weights == [0.25]


def _two_scene_file(default: int | None) -> bytes:
    """Two triangles meshes, one node each, one scene each, plus an orphan node
    (in no scene) carrying the second mesh again."""
    b = Builder()
    tri = b.acc(b.view(_quad_positions()[:3].tobytes()), 5126, 3, "VEC3")
    quad = b.acc(b.view(_quad_positions().tobytes()), 5126, 4, "VEC3")
    b.gl["meshes"] = [{"primitives": [{"attributes": {"POSITION": tri}}]},
                      {"primitives": [{"attributes": {"POSITION": quad}}]}]
    b.gl["nodes"] = [{"mesh": 0}, {"children": [3]}, {"mesh": 1}, {"mesh": 1}]
    b.gl["scenes"] = [{"nodes": [0]}, {"nodes": [1]}]
    if default is not None:
        b.gl["scene"] = default
    return b.glb()


@pytest.mark.parametrize("default, shown", [(None, [0]), (0, [0]), (1, [3])])
def test_only_the_chosen_scene_has_meshes(default, shown):
    """Meshes of another scene's nodes, and of nodes in no scene, are not part of
    the scene the file shows: importers must not bake them into a model (glTF's
    MultipleScenes sample: 3 triangles imported where the file shows 2)."""
    s = read_gltf(_two_scene_file(default))
    assert [i for i, n in enumerate(s.nodes) if n.mesh is not None] == shown
    assert len(s.nodes) == 4 and len(s.meshes) == 2          # indices unchanged
    dropped = 3 - len(shown)
    assert any(f"{dropped} mesh node(s) outside scene" in w for w in s.warnings)
    from potsherd.scene.ops import triangle_sets
    assert [t.node for t in triangle_sets(s)] == shown


def test_a_file_without_scenes_shows_every_root():
    """The control: with no ``scenes`` every parentless node is a root and keeps its mesh."""
    b = Builder()
    a = b.acc(b.view(_quad_positions()[:3].tobytes()), 5126, 3, "VEC3")
    b.gl["meshes"] = [{"primitives": [{"attributes": {"POSITION": a}}]}]
    b.gl["nodes"] = [{"mesh": 0}, {"mesh": 0}]
    s = read_gltf(b.glb())
    assert s.roots == [0, 1] and [n.mesh for n in s.nodes] == [0, 0]
    assert not any("outside scene" in w for w in s.warnings)


def test_strip_and_fan_become_triangles():
    b = Builder()
    pos = b.acc(b.view(np.arange(15, dtype=np.float32).tobytes()), 5126, 5, "VEC3")
    ind = b.acc(b.view(np.array([0, 1, 2, 3, 4], np.uint8).tobytes()), 5121, 5, "SCALAR")
    b.gl["meshes"] = [{"primitives": [{"attributes": {"POSITION": pos}, "indices": ind, "mode": 5},
                                      {"attributes": {"POSITION": pos}, "mode": 6},
                                      {"attributes": {"POSITION": pos}, "mode": 3}]}]
    s = read_gltf(b.glb())
    strip, fan, lines = s.meshes[0].primitives
    assert strip.indices.tolist() == [0, 1, 2, 1, 3, 2, 2, 3, 4]   # spec: odd ones re-wound
    assert fan.indices.tolist() == [0, 1, 2, 0, 2, 3, 0, 3, 4]
    assert strip.mode == fan.mode == 4
    assert lines.mode == 1 and lines.indices.tolist() == [0, 1, 1, 2, 2, 3, 3, 4]
    assert any("line strip" in w for w in s.warnings)


def test_matrix_node_materials_extensions_samplers():
    b = Builder()
    png = checker_png(2, 2)
    iv = b.view(png)
    pos = b.acc(b.view(_quad_positions().tobytes()), 5126, 4, "VEC3")
    b.gl.update({
        "images": [{"bufferView": iv, "mimeType": "image/png", "name": "chk"}],
        "samplers": [{"magFilter": 9728, "minFilter": 9987, "wrapS": 33071, "wrapT": 33648}],
        "textures": [{"source": 0, "sampler": 0}, {"source": 0}],
        "materials": [{"name": "m", "pbrMetallicRoughness": {
            "baseColorTexture": {"index": 0, "texCoord": 1, "extensions": {
                "KHR_texture_transform": {"scale": [2, 2]}}},
            "metallicRoughnessTexture": {"index": 1}},
            "normalTexture": {"index": 1, "scale": 0.5}, "occlusionTexture": {"index": 1},
            "emissiveTexture": {"index": 1}, "emissiveFactor": [1, 0.5, 0],
            "alphaMode": "MASK", "alphaCutoff": 0.3, "doubleSided": True,
            "extensions": {"KHR_materials_unlit": {}}}],
        "meshes": [{"primitives": [{"attributes": {"POSITION": pos}, "material": 0}]}],
        "nodes": [{"matrix": [2, 0, 0, 0, 0, 2, 0, 0, 0, 0, 2, 0, 1, 2, 3, 1], "mesh": 0}],
        "extensionsUsed": ["KHR_materials_unlit", "KHR_texture_transform", "EXT_foo"],
    })
    s = read_gltf(b.glb())
    m = s.materials[0]
    assert m.unlit and m.double_sided and m.alpha_mode == "MASK" and m.alpha_cutoff == 0.3
    assert m.metallic == 1.0 and m.roughness == 1.0          # glTF defaults when omitted
    assert m.emissive == (1.0, 0.5, 0.0)
    t = m.base_color_texture
    assert (t.image, t.texcoord, t.mag_filter, t.min_filter, t.wrap_s, t.wrap_t) == \
        (0, 0, 9728, 9987, 33071, 33648)             # texCoord 1 is made set 0 (below)
    assert t.extras["sourceTexCoord"] == 1 and m.metallic_roughness_texture.texcoord == 1
    assert any("reads TEXCOORD_1, which the primitive does not have" in w for w in s.warnings)
    assert t.extras["KHR_texture_transform"] == {"scale": [2, 2]}
    assert m.normal_texture.extras["scale"] == 0.5
    assert m.occlusion_texture.extras["strength"] == 1.0
    assert m.metallic_roughness_texture.image == 0 and m.emissive_texture.image == 0
    assert not any("KHR_texture_transform" in w for w in s.warnings)   # base colour: baked
    assert s.images[0].data == png and s.images[0].name == "chk"
    want = np.diag([2.0, 2, 2, 1])
    want[:3, 3] = (1, 2, 3)
    assert np.array_equal(s.nodes[0].matrix, want)
    assert s.extras["extensionsUsed"] == ["EXT_foo"]


def _transformed_quad(base_ext: dict | None, emissive_ext: dict | None = None) -> bytes:
    """A quad with UV sets 0 and 1 whose material's textures carry the given
    KHR_texture_transform objects."""
    b = Builder()
    pos = b.acc(b.view(_quad_positions().tobytes()), 5126, 4, "VEC3")
    uv0 = b.acc(b.view(np.array([[0, 0], [1, 0], [1, 1], [0, 1]], np.float32).tobytes()),
                5126, 4, "VEC2")
    uv1 = b.acc(b.view(np.array([[0.5, 0.5]] * 4, np.float32).tobytes()), 5126, 4, "VEC2")
    base = {"index": 0}
    if base_ext is not None:
        base["extensions"] = {"KHR_texture_transform": base_ext}
    mat = {"pbrMetallicRoughness": {"baseColorTexture": base}}
    if emissive_ext is not None:
        mat["emissiveTexture"] = {"index": 0, "extensions": {"KHR_texture_transform": emissive_ext}}
        mat["emissiveFactor"] = [1, 1, 1]
    b.gl.update({
        "images": [{"bufferView": b.view(checker_png(2, 2)), "mimeType": "image/png"}],
        "textures": [{"source": 0}], "materials": [mat],
        "meshes": [{"primitives": [{"attributes": {"POSITION": pos, "TEXCOORD_0": uv0,
                                                   "TEXCOORD_1": uv1}, "material": 0},
                                   {"attributes": {"POSITION": pos, "TEXCOORD_0": uv0}}]}],
        "nodes": [{"mesh": 0}], "extensionsUsed": ["KHR_texture_transform"]})
    return b.glb()


def test_base_colour_texture_transform_is_baked_into_its_uvs():
    """uv' = T(offset) · R(rotation) · S(scale) · uv, as KHR_texture_transform
    defines it (Blender writes it for a mapping node): a quarter turn, scale 2 and
    offset (0.5, 0): (1, 0) -> S (2, 0) -> R (0, -2) -> T (0.5, -2).  The
    primitive without that material keeps its UVs (the same accessor)."""
    tt = {"offset": [0.5, 0.0], "rotation": np.pi / 2, "scale": [2.0, 3.0]}
    s = read_gltf(_transformed_quad(tt))
    textured, plain = s.meshes[0].primitives
    want = [[0.5, 0], [0.5, -2], [3.5, -2], [3.5, 0]]    # u' = 3v + 0.5, v' = -2u
    assert np.allclose(textured.uvs[0], want, atol=1e-6)
    assert np.array_equal(textured.uvs[1], [[0.5, 0.5]] * 4)            # the other set unchanged
    assert np.array_equal(plain.uvs[0], [[0, 0], [1, 0], [1, 1], [0, 1]])
    assert not any("texture_transform" in w.lower() for w in s.warnings)
    # texCoord in the extension picks the set it applies to (and the texture then
    # reads), which then comes first (base_colour_uv_first)
    s = read_gltf(_transformed_quad({"texCoord": 1, "offset": [1.0, 2.0]}))
    p = s.meshes[0].primitives[0]
    assert s.materials[0].base_color_texture.texcoord == 0
    assert np.array_equal(p.uvs[0], [[1.5, 2.5]] * 4)
    assert np.array_equal(p.uvs[1], [[0, 0], [1, 0], [1, 1], [0, 1]])
    # the control: no extension, no change
    s = read_gltf(_transformed_quad(None))
    assert np.array_equal(s.meshes[0].primitives[0].uvs[0], [[0, 0], [1, 0], [1, 1], [0, 1]])


def _uv_sets_quad(base_texcoord: int, emissive_texcoord: int | None = None,
                  others: bool = True) -> bytes:
    """A quad with three UV sets (set k holds the constant k + 0.25 for recognition,
    but set 2 the real corners) and a second primitive of the same material with
    only one set, and a third primitive without a material with three sets."""
    b = Builder()
    pos = b.acc(b.view(_quad_positions().tobytes()), 5126, 4, "VEC3")
    corners = np.array([[0, 0], [1, 0], [1, 1], [0, 1]], np.float32)
    sets = [np.full((4, 2), 0.25, np.float32), np.full((4, 2), 1.25, np.float32), corners]
    uv = [b.acc(b.view(a.tobytes()), 5126, 4, "VEC2") for a in sets]
    mat = {"pbrMetallicRoughness": {"baseColorTexture": {"index": 0, "texCoord": base_texcoord}}}
    if emissive_texcoord is not None:
        mat["emissiveTexture"] = {"index": 0, "texCoord": emissive_texcoord}
    attrs = {"POSITION": pos, **{f"TEXCOORD_{k}": a for k, a in enumerate(uv)}}
    b.gl.update({
        "images": [{"bufferView": b.view(checker_png(2, 2)), "mimeType": "image/png"}],
        "textures": [{"source": 0}], "materials": [mat],
        "meshes": [{"primitives": [{"attributes": attrs, "material": 0}] + (
            [{"attributes": {"POSITION": pos, "TEXCOORD_0": uv[0]}, "material": 0},
             {"attributes": attrs}] if others else [])}],
        "nodes": [{"mesh": 0}]})
    return b.glb()


def test_base_colour_uv_set_comes_first():
    """A base colour texture on ``texCoord: 2`` (Blender's second UV map is
    TEXCOORD_1): importers keep uvs[0] only, so that set is moved first in the
    primitives of its material, the others after it in their order, and the
    texture references renumbered (uv2.glb drew one dark texel in n3pmesh)."""
    s = read_gltf(_uv_sets_quad(2, emissive_texcoord=0))
    m = s.materials[0]
    assert m.base_color_texture.texcoord == 0 and m.base_color_texture.extras["sourceTexCoord"] == 2
    assert m.emissive_texture.texcoord == 1                 # set 0 is now set 1
    textured, short, plain = s.meshes[0].primitives
    assert np.array_equal(textured.uvs[0], [[0, 0], [1, 0], [1, 1], [0, 1]])
    assert [float(u[0, 0]) for u in textured.uvs[1:]] == [0.25, 1.25]
    assert textured.extras["uvSetOrder"] == [2, 0, 1]
    assert len(short.uvs) == 1 and "uvSetOrder" not in short.extras
    assert any("primitives[1]" in w and "TEXCOORD_2" in w for w in s.warnings), s.warnings
    assert [float(u[0, 0]) for u in plain.uvs] == [0.25, 1.25, 0.0]     # no material: as is
    # the control: texCoord 0 changes nothing
    s = read_gltf(_uv_sets_quad(0))
    assert [float(u[0, 0]) for u in s.meshes[0].primitives[0].uvs] == [0.25, 1.25, 0.0]
    assert "uvSetOrder" not in s.meshes[0].primitives[0].extras and not s.warnings


def test_negative_texcoord_is_refused_by_path():
    """``texCoord: -1`` moved the last UV set first (Python's negative index), and
    raised IndexError in a primitive without UVs (InternalDecodeError, found by
    fuzzing the import)."""
    with pytest.raises(JsonFormatError) as e:
        read_gltf(_uv_sets_quad(-1))
    assert e.value.path == "$.materials[0].pbrMetallicRoughness.baseColorTexture.texCoord"
    assert e.value.found == -1 and "0 or more" in e.value.message


def test_second_uv_set_texture_survives_a_single_uv_format(tmp_path):
    """uv2.glb's case end to end: a box whose texture reads TEXCOORD_1 into
    .n3pmesh (one UV set) and back keeps the UVs the texture was drawn with."""
    from potsherd.importer import import_gltf
    from potsherd.scene.ops import triangle_sets
    src = _uv_sets_quad(1, others=False)
    (tmp_path / "q.glb").write_bytes(src)
    import_gltf(tmp_path / "q.glb", tmp_path / "q.n3pmesh")
    from potsherd.api import read_doc
    from potsherd.convert import export_gltf
    export_gltf(read_doc(str(tmp_path / "q.n3pmesh"))[1], str(tmp_path / "back.glb"))
    back = read_gltf(tmp_path / "back.glb")
    uvs = np.concatenate([t.uvs[0] for t in triangle_sets(back)])
    assert np.allclose(uvs, 1.25)                        # set 1 (1.25), not set 0 (0.25)


@pytest.mark.parametrize("bad", [{"scale": [2]}, {"rotation": "x"}, {"texCoord": -1}, [1, 2]])
def test_malformed_texture_transform_is_reported_and_ignored(bad):
    s = read_gltf(_transformed_quad(bad))
    assert np.array_equal(s.meshes[0].primitives[0].uvs[0], [[0, 0], [1, 0], [1, 1], [0, 1]])
    assert any("KHR_texture_transform" in w for w in s.warnings), s.warnings


def test_other_slots_transforms_are_reported_not_baked():
    s = read_gltf(_transformed_quad(None, {"scale": [4.0, 4.0]}))
    assert np.array_equal(s.meshes[0].primitives[0].uvs[0], [[0, 0], [1, 0], [1, 1], [0, 1]])
    assert any("emissiveTexture" in w and "not applied" in w for w in s.warnings), s.warnings


def _instanced_triangle(ext: dict | None = None, parent_t=(0.0, 0.0, 10.0)) -> tuple:
    """A triangle on a node moved by ``parent_t`` carrying three
    EXT_mesh_gpu_instancing instances: float translations, normalized int16
    rotations (a quarter turn about Z on the second), float scales."""
    b = Builder()
    pos = b.acc(b.view(np.array([[1, 0, 0], [0, 1, 0], [0, 0, 0]], np.float32).tobytes()),
                5126, 3, "VEC3")
    t = b.acc(b.view(np.array([[0, 0, 0], [5, 0, 0], [0, 7, 0]], np.float32).tobytes()),
              5126, 3, "VEC3")
    h = 23170                                        # 32767 * sin(45°): (0, 0, 0.7071, 0.7071)
    r = b.acc(b.view(np.array([[0, 0, 0, 32767], [0, 0, h, h], [0, 0, 0, 32767]],
                              np.int16).tobytes()), 5122, 3, "VEC4", normalized=True)
    sc = b.acc(b.view(np.array([[1, 1, 1], [1, 1, 1], [2, 2, 2]], np.float32).tobytes()),
               5126, 3, "VEC3")
    b.gl["meshes"] = [{"primitives": [{"attributes": {"POSITION": pos}}]}]
    if ext is None:
        ext = {"attributes": {"TRANSLATION": t, "ROTATION": r, "SCALE": sc}}
    b.gl["nodes"] = [{"mesh": 0, "translation": list(parent_t), "name": "tree",
                      "extensions": {"EXT_mesh_gpu_instancing": ext}}]
    b.gl["extensionsUsed"] = ["EXT_mesh_gpu_instancing"]
    return b, (t, r, sc)


def test_gpu_instances_are_nodes_at_their_world_positions():
    """EXT_mesh_gpu_instancing (``gltf-transform instance`` writes it): the mesh is
    drawn once per instance at node world x instance TRS, and not at the node
    itself.  Every importer sees the copies through triangle_sets."""
    from potsherd.scene.ops import triangle_sets
    b, _ = _instanced_triangle()
    s = read_gltf(b.glb())
    assert not s.warnings
    assert s.nodes[0].mesh is None and s.nodes[0].children == [1, 2, 3]
    assert [n.name for n in s.nodes[1:]] == ["tree.instance0", "tree.instance1", "tree.instance2"]
    assert [n.mesh for n in s.nodes] == [None, 0, 0, 0]
    tris = {t.node: t.positions for t in triangle_sets(s)}
    assert sorted(tris) == [1, 2, 3]
    np.testing.assert_allclose(tris[1], [[1, 0, 10], [0, 1, 10], [0, 0, 10]], atol=1e-6)
    # a quarter turn about Z: (1, 0) -> (0, 1), (0, 1) -> (-1, 0); then + (5, 0, 10)
    np.testing.assert_allclose(tris[2], [[5, 1, 10], [4, 0, 10], [5, 0, 10]], atol=1e-4)
    np.testing.assert_allclose(tris[3], [[2, 7, 10], [0, 9, 10], [0, 7, 10]], atol=1e-6)
    assert s.nodes[0].extras["EXT_mesh_gpu_instancing"] == {"first": 1, "count": 3}
    # only TRANSLATION given: rotation and scale are the identity
    b, _ = _instanced_triangle({"attributes": {"TRANSLATION": 1}})
    s = read_gltf(b.glb())
    tris = [ts.positions for ts in triangle_sets(s)]
    np.testing.assert_allclose(tris[2], [[1, 7, 10], [0, 8, 10], [0, 7, 10]], atol=1e-6)


def test_without_instancing_the_node_draws_its_mesh_once():
    """The control: the same file without the extension is one triangle on node 0."""
    from potsherd.scene.ops import triangle_sets
    b, _ = _instanced_triangle()
    del b.gl["nodes"][0]["extensions"]
    s = read_gltf(b.glb())
    assert len(s.nodes) == 1 and [t.node for t in triangle_sets(s)] == [0]


@pytest.mark.parametrize("edit,cls,path", [
    (lambda e, a: e.update(attributes=[]), JsonFormatError, "attributes"),
    (lambda e, a: e.update(attributes={}), JsonFormatError, "attributes"),
    (lambda e, a: e["attributes"].update(TRANSLATION=99), JsonFormatError,
     "attributes.TRANSLATION"),
    (lambda e, a: e["attributes"].update(SCALE="0"), JsonFormatError, "attributes.SCALE"),
    (lambda e, a: e["attributes"].update(SCALE=a[1]), JsonFormatError, "attributes.SCALE"),
    (lambda e, a: a[0].update(count=2), CountError, "attributes"),
    (lambda e, a: a[0].update(count=10**9), LimitError, "$.accessors[1].count"),
    (lambda e, a: a[1].update(normalized=False), JsonFormatError, "attributes.ROTATION"),
    (lambda e, a: a[1].pop("bufferView"), JsonFormatError, "attributes.ROTATION"),
    (lambda e, a: a[0].update(componentType=5130), JsonFormatError, "$.accessors[1].componentType"),
])
def test_hostile_instancing_is_a_format_error(edit, cls, path):
    b, (t, r, sc) = _instanced_triangle()
    ext = b.gl["nodes"][0]["extensions"]["EXT_mesh_gpu_instancing"]
    edit(ext, [b.gl["accessors"][t], b.gl["accessors"][r]])
    with pytest.raises(cls) as e:
        read_gltf(b.glb())
    assert e.value.path.endswith(path), str(e.value)
    assert not isinstance(e.value, InternalDecodeError)


def test_instancing_copies_are_bounded():
    """Three copies of a 3-vertex triangle are 9 vertices: over a limit of 8 it is
    a LimitError at the extension (a few bytes per instance can copy a big mesh);
    the control: a limit of 9 reads."""
    b, _ = _instanced_triangle()
    with pytest.raises(LimitError) as e:
        read_gltf(b.glb(), limits=Limits(max_elements=8))
    assert e.value.path == "$.nodes[0].extensions.EXT_mesh_gpu_instancing" and e.value.found == 9
    assert len(read_gltf(b.glb(), limits=Limits(max_elements=9)).nodes) == 4


def test_hostile_instancing_extension_object():
    b, _ = _instanced_triangle()
    b.gl["nodes"][0]["extensions"]["EXT_mesh_gpu_instancing"] = [1]
    with pytest.raises(JsonFormatError) as e:
        read_gltf(b.glb())
    assert e.value.path == "$.nodes[0].extensions.EXT_mesh_gpu_instancing"
    b, (_, _, sc) = _instanced_triangle()
    at = b.gl["bufferViews"][b.gl["accessors"][sc]["bufferView"]]["byteOffset"]
    b.bin[at:at + 4] = struct.pack("<f", float("nan"))
    with pytest.raises(JsonFormatError) as e:
        read_gltf(b.glb())
    assert "finite" in e.value.message


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_fuzzed_instancing_only_raises_format_errors(data):
    b, (t, r, sc) = _instanced_triangle()
    ext = b.gl["nodes"][0]["extensions"]["EXT_mesh_gpu_instancing"]
    junk = st.one_of(st.integers(-3, 8), st.none(), st.text(max_size=3), st.booleans(),
                     st.floats(-1e3, 1e3), st.lists(st.integers(0, 5), max_size=3),
                     st.dictionaries(st.sampled_from(["TRANSLATION", "ROTATION", "SCALE", "_ID"]),
                                     st.integers(-1, 6)))
    for _ in range(data.draw(st.integers(1, 4))):
        where = data.draw(st.sampled_from(["attr", "acc", "ext"]))
        if where == "attr" and isinstance(ext.get("attributes"), dict):
            ext["attributes"][data.draw(st.sampled_from(["TRANSLATION", "ROTATION", "SCALE"]))] = \
                data.draw(junk)
        elif where in ("acc", "attr"):
            a = b.gl["accessors"][data.draw(st.sampled_from([t, r, sc]))]
            a[data.draw(st.sampled_from(["count", "componentType", "type", "normalized",
                                         "byteOffset"]))] = data.draw(junk)
        else:
            ext[data.draw(st.sampled_from(["attributes", "extra"]))] = data.draw(junk)
    try:
        read_gltf(b.glb())
    except InternalDecodeError as e:            # a reader bug
        raise AssertionError(str(e)) from e
    except FormatError:
        pass


KTX2_MAGIC = b"\xabKTX 20\xbb\r\n\x1a\n"


def webp_bytes(rgb=(255, 0, 0)) -> bytes:
    import io
    from PIL import Image as PILImage
    buf = io.BytesIO()
    PILImage.new("RGB", (2, 2), rgb).save(buf, "WEBP", lossless=True)
    return buf.getvalue()


def _extension_image_file(ext: str, data: bytes, required=None) -> bytes:
    """A quad whose only texture names its image in ``extensions.<ext>.source``
    (no ``source``), as gltf-transform webp / toktx write it."""
    b = Builder()
    pos = b.acc(b.view(_quad_positions().tobytes()), 5126, 4, "VEC3")
    b.gl.update({
        "images": [{"bufferView": b.view(data)}],
        "textures": [{"extensions": {ext: {"source": 0}}}],
        "materials": [{"pbrMetallicRoughness": {"baseColorTexture": {"index": 0}}}],
        "meshes": [{"primitives": [{"attributes": {"POSITION": pos}, "material": 0}]}],
        "nodes": [{"mesh": 0}], "extensionsUsed": [ext],
        "extensionsRequired": [ext] if required is None else required})
    return b.glb()


def test_required_webp_texture_is_used_without_a_false_warning():
    """EXT_texture_webp required (gt_webp.glb): the WebP image is the base colour
    texture and Pillow decodes it, so nothing is ignored and nothing is said."""
    from potsherd.scene.ops import base_color_picture
    data = webp_bytes()
    s = read_gltf(_extension_image_file("EXT_texture_webp", data))
    assert s.warnings == []
    assert s.materials[0].base_color_texture.image == 0
    assert s.images[0].data == data and s.images[0].mime_type == "image/webp"
    _, pic, problem = base_color_picture(s, s.materials[0])
    assert problem is None and pic.convert("RGB").getpixel((0, 0)) == (255, 0, 0)
    assert "extensionsUsed" not in s.extras


def test_required_basisu_texture_is_said_to_be_used_not_ignored():
    data = KTX2_MAGIC + bytes(64)
    s = read_gltf(_extension_image_file("KHR_texture_basisu", data))
    assert s.materials[0].base_color_texture.image == 0 and s.images[0].mime_type == "image/ktx2"
    assert s.warnings == ["required extension KHR_texture_basisu: its 1 image(s) used as "
                          "textures, kept as image/ktx2 data that cannot be decoded here "
                          "(importers report them untextured)"]


def test_a_decodable_image_extension_is_preferred():
    """A texture offering both KTX2 (basisu) and WebP images without a plain
    ``source`` shows the WebP one, which can be decoded, although by name
    EXT_texture_avif (and KHR_texture_basisu's key order here) would come first."""
    b = Builder()
    pos = b.acc(b.view(_quad_positions().tobytes()), 5126, 4, "VEC3")
    b.gl.update({
        "images": [{"bufferView": b.view(KTX2_MAGIC + bytes(16))},
                   {"bufferView": b.view(webp_bytes())}],
        "textures": [{"extensions": {"EXT_texture_avif": {"source": 0},
                                     "KHR_texture_basisu": {"source": 0},
                                     "EXT_texture_webp": {"source": 1}}}],
        "materials": [{"pbrMetallicRoughness": {"baseColorTexture": {"index": 0}}}],
        "meshes": [{"primitives": [{"attributes": {"POSITION": pos}, "material": 0}]}],
        "nodes": [{"mesh": 0}]})
    s = read_gltf(b.glb())
    assert s.materials[0].base_color_texture.image == 1 and s.images[1].mime_type == "image/webp"


def test_a_required_extension_that_is_not_read_is_still_ignored():
    """The control: a required extension nothing here reads keeps its warning."""
    s = read_gltf(_extension_image_file("EXT_texture_webp", webp_bytes(),
                                        required=["EXT_texture_webp", "EXT_foo"]))
    assert s.warnings == ["required extension EXT_foo ignored"]


def _spec_gloss_file(material: dict) -> bytes:
    b = Builder()
    pos = b.acc(b.view(_quad_positions().tobytes()), 5126, 4, "VEC3")
    b.gl.update({
        "images": [{"bufferView": b.view(checker_png(2, 2)), "mimeType": "image/png"},
                   {"bufferView": b.view(checker_png(4, 2)), "mimeType": "image/png"}],
        "textures": [{"source": 0}, {"source": 1}], "materials": [material],
        "meshes": [{"primitives": [{"attributes": {"POSITION": pos}, "material": 0}]}],
        "nodes": [{"mesh": 0}], "extensionsUsed": ["KHR_materials_pbrSpecularGlossiness"]})
    return b.glb()


def test_specular_glossiness_diffuse_is_the_base_colour_when_nothing_else_is():
    """Older exporters write only KHR_materials_pbrSpecularGlossiness: its diffuse
    map and factor are the colour a game format needs (the texture was lost)."""
    sg = {"KHR_materials_pbrSpecularGlossiness": {
        "diffuseFactor": [0.5, 0.25, 1.0, 1.0], "diffuseTexture": {"index": 1},
        "specularFactor": [1, 1, 1], "glossinessFactor": 0.5}}
    m = read_gltf(_spec_gloss_file({"name": "old", "extensions": sg})).materials[0]
    assert m.base_color == (0.5, 0.25, 1.0, 1.0) and m.base_color_texture.image == 1
    assert "KHR_materials_pbrSpecularGlossiness" in m.extras["extensions"]      # still kept
    # both given (assimp writes both): the metallic-roughness values stand
    both = {"pbrMetallicRoughness": {"baseColorFactor": [0.1, 0.2, 0.3, 1.0],
                                     "baseColorTexture": {"index": 0}}, "extensions": sg}
    m = read_gltf(_spec_gloss_file(both)).materials[0]
    assert m.base_color == (0.1, 0.2, 0.3, 1.0) and m.base_color_texture.image == 0
    # the control: no extension, glTF's defaults
    m = read_gltf(_spec_gloss_file({"name": "plain"})).materials[0]
    assert m.base_color == (1.0, 1.0, 1.0, 1.0) and m.base_color_texture is None


def _per_node_animations(names=(None, None, None), targets=(0, 1, 2), ends=(1.0, 1.0, 1.0)) -> bytes:
    """Three nodes and one animation per entry, each turning ``targets[k]`` over 0..``ends[k]``."""
    b = Builder()
    pos = b.acc(b.view(_quad_positions().tobytes()), 5126, 4, "VEC3")
    anims = []
    for k, (name, node, end) in enumerate(zip(names, targets, ends)):
        t = b.acc(b.view(np.array([0, end], np.float32).tobytes()), 5126, 2, "SCALAR")
        q = b.acc(b.view(np.array([[0, 0, 0, 1], [0, 0, 1, 0]], np.float32).tobytes()), 5126, 2, "VEC4")
        a = {"samplers": [{"input": t, "output": q}],
             "channels": [{"sampler": 0, "target": {"node": node, "path": "rotation"}}]}
        if name:
            a["name"] = name
        anims.append(a)
    b.gl.update({"meshes": [{"primitives": [{"attributes": {"POSITION": pos}}]}],
                 "nodes": [{"children": [1], "mesh": 0}, {"children": [2]}, {}],
                 "animations": anims})
    return b.glb()


def test_one_motion_split_per_node_is_one_clip():
    """COLLADA2GLTF writes one unnamed animation per animated node (Khronos'
    RiggedFigure: 19 of them); a game format got a clip per bone.  They are one
    clip now, with a warning."""
    s = read_gltf(_per_node_animations())
    assert len(s.animations) == 1
    assert sorted(c.node for c in s.animations[0].channels) == [0, 1, 2]
    assert any("3 unnamed animations" in w for w in s.warnings)


@pytest.mark.parametrize("case", [
    dict(names=("walk", None, None)),            # a name: clips the author meant
    dict(targets=(0, 1, 1)),                     # two animations move the same node
    dict(ends=(1.0, 1.0, 2.0)),                  # different time ranges
])
def test_real_clips_stay_apart(case):
    s = read_gltf(_per_node_animations(**case))
    assert len(s.animations) == 3
    assert not any("unnamed animations" in w for w in s.warnings)


def test_animation_samplers_and_weights_channel():
    b = Builder()
    t = b.acc(b.view(np.array([0, 1], np.float32).tobytes()), 5126, 2, "SCALAR")
    q = b.acc(b.view(np.array([[0, 0, 0, 32767], [0, 32767, 0, 0]], np.int16).tobytes()),
              5122, 2, "VEC4", normalized=True)
    cub = b.acc(b.view(np.arange(18, dtype=np.float32).tobytes()), 5126, 6, "VEC3")
    w = b.acc(b.view(np.array([0, 1, 1, 0], np.float32).tobytes()), 5126, 4, "SCALAR")
    pos = b.acc(b.view(_quad_positions().tobytes()), 5126, 4, "VEC3")
    b.gl.update({
        "meshes": [{"primitives": [{"attributes": {"POSITION": pos},
                                    "targets": [{"POSITION": pos}, {"POSITION": pos}]}]}],
        "nodes": [{"name": "a", "children": [1]}, {"name": "b", "mesh": 0}],
        "scenes": [{"nodes": [0], "name": "main"}], "scene": 0,
        "animations": [{"name": "go", "samplers": [
            {"input": t, "output": q, "interpolation": "STEP"},
            {"input": t, "output": cub, "interpolation": "CUBICSPLINE"},
            {"input": t, "output": w}],
            "channels": [{"sampler": 0, "target": {"node": 0, "path": "rotation"}},
                         {"sampler": 1, "target": {"node": 1, "path": "translation"}},
                         {"sampler": 2, "target": {"node": 1, "path": "weights"}},
                         {"sampler": 2, "target": {"path": "pointer"}}]}],
    })
    s = read_gltf(b.glb())
    assert s.name == "main" and s.roots == [0]
    a = s.animations[0]
    assert a.name == "go" and len(a.channels) == 3 and a.duration == 1.0
    rot, tr, wt = a.channels
    assert rot.interpolation == "STEP" and np.array_equal(rot.values, [[0, 0, 0, 1], [0, 1, 0, 0]])
    assert tr.interpolation == "CUBICSPLINE" and tr.values.shape == (6, 3)
    assert wt.values.tolist() == [[0, 1], [1, 0]]


def test_corpus_glb_from_other_tools():
    folder = CORPUS / "glb"
    files = sorted(folder.glob("*.glb")) if folder.is_dir() else []
    if not files:
        pytest.skip("no glb corpus")
    for f in files:
        s = read_gltf(f)
        data = f.read_bytes()
        jlen = struct.unpack_from("<I", data, 12)[0]
        gl = json.loads(data[20:20 + jlen])
        assert len(s.nodes) == len(gl.get("nodes", [])), f.name
        assert len(s.animations) == len(gl.get("animations", [])), f.name
        tris = 0
        for m in gl["meshes"]:
            for p in m["primitives"]:
                n = gl["accessors"][p["indices"]]["count"] if "indices" in p else \
                    gl["accessors"][p["attributes"]["POSITION"]]["count"]
                tris += n // 3
        assert sum(len(p.indices) // 3 for m in s.meshes for p in m.primitives) == tris, f.name
        for sk in s.skins:                # bind pose sanity: IBM inverts the joint matrices
            assert np.all(np.isfinite(sk.inverse_bind_matrices))
        again = roundtrip(s)             # the reader's scene is writable and reads back
        import copy
        assert_scene_matches(copy.deepcopy(read_gltf(f)), again)


FAMILY_SAMPLES = {"ko": ("*.n3chr", "*.n3pmesh"), "dts": ("*.dts",), "fbx": ("*.fbx",),
                  "tr4wad": ("*.wad", "*.trwad")}


@pytest.mark.parametrize("family", sorted(FAMILY_SAMPLES))
def test_family_exports_read_back(family):
    folder = CORPUS / family
    if not folder.is_dir():
        pytest.skip(f"no {family} corpus")
    for pattern in FAMILY_SAMPLES[family]:
        for src in sorted(folder.rglob(pattern))[:3]:
            try:
                doc = registry.decode(src.read_bytes(), path=str(src))
                scene = document_scene(doc, {"source_path": str(src)})
            except FormatError:
                continue
            import copy
            orig = copy.deepcopy(scene)
            assert_scene_matches(orig, roundtrip(scene))
            return
    pytest.skip(f"no {family} file converts")


# ---- hostile input -----------------------------------------------------------------

def _simple() -> Builder:
    b = Builder()
    pos = b.acc(b.view(_quad_positions().tobytes()), 5126, 4, "VEC3")
    ind = b.acc(b.view(np.array([0, 1, 2, 0, 2, 3], np.uint16).tobytes()), 5123, 6, "SCALAR")
    b.gl["meshes"] = [{"primitives": [{"attributes": {"POSITION": pos}, "indices": ind}]}]
    b.gl["nodes"] = [{"mesh": 0}]
    return b


def test_simple_reads():                       # the control for the hostile edits below
    s = read_gltf(_simple().glb())
    assert s.meshes[0].primitives[0].indices.tolist() == [0, 1, 2, 0, 2, 3]


@pytest.mark.parametrize("edit,cls,path", [
    (lambda g: g["accessors"][0].update(count=5), CountError, "$.accessors[0].count"),
    (lambda g: g["accessors"][1].update(count=10**12), LimitError, "$.accessors[1].count"),
    (lambda g: g["accessors"][0].update(bufferView=9), JsonFormatError,
     "$.accessors[0].bufferView"),
    (lambda g: g["accessors"][0].update(componentType=5130), JsonFormatError,
     "$.accessors[0].componentType"),
    (lambda g: g["accessors"][0].update(count="4"), JsonFormatError, "$.accessors[0].count"),
    (lambda g: g["bufferViews"][0].update(byteLength=10**9), CountError,
     "$.bufferViews[0].byteLength"),
    (lambda g: g["bufferViews"][0].update(byteStride=6), JsonFormatError,
     "$.bufferViews[0].byteStride"),
    (lambda g: g["nodes"].append({"children": [0, 1]}), JsonFormatError, "$.nodes[1].children[1]"),
    (lambda g: g["nodes"].extend([{"children": [2]}, {"children": [1]}]), JsonFormatError,
     "$.nodes[1]"),
    (lambda g: g["meshes"][0]["primitives"][0].update(mode=9), JsonFormatError,
     "$.meshes[0].primitives[0].mode"),
    (lambda g: g["accessors"].append({"componentType": 5126, "count": 10**8, "type": "MAT4"})
     or g["meshes"][0]["primitives"][0]["attributes"].update(NORMAL=2), LimitError,
     "$.accessors[2].count"),
    (lambda g: g.update(extensionsRequired=["EXT_meshopt_compression"]), FormatError,
     "$.extensionsRequired[0]"),
    (lambda g: g["buffers"][0].update(uri="/etc/passwd"), FormatError, "$.buffers[0].uri"),
    (lambda g: g["asset"].update(version="1.0"), JsonFormatError, "$.asset.version"),
    # an index into a top-level "array" that is not one (was: InternalDecodeError,
    # TypeError: object of type 'int' has no len(), found by fuzzing the import)
    (lambda g: g.update(bufferViews=3), JsonFormatError, "$.bufferViews"),
    (lambda g: g.update(skins=5) or g["nodes"][0].update(skin=0), JsonFormatError, "$.skins"),
])
def test_hostile_json_edits(edit, cls, path):
    b = _simple()
    b.gl["buffers"][0]["byteLength"] = len(b.bin)
    edit(b.gl)
    with pytest.raises(cls) as e:
        read_gltf(glb_bytes(b.gl, bytes(b.bin)))
    assert e.value.path == path, str(e.value)
    assert not isinstance(e.value, InternalDecodeError)


def _draco(b: Builder, fallback: bool) -> bytes:
    """The simple quad marked Draco-compressed (as gltf-transform writes it when
    only ``extensionsUsed`` names the extension), with or without the plain copy;
    its "Draco data" is the plain positions, which no Draco decoder reads."""
    b.gl["buffers"][0]["byteLength"] = len(b.bin)
    b.gl["extensionsUsed"] = ["KHR_draco_mesh_compression"]
    b.gl["meshes"][0]["primitives"][0]["extensions"] = {
        "KHR_draco_mesh_compression": {"bufferView": 0, "attributes": {"POSITION": 0}}}
    if not fallback:
        del b.gl["accessors"][0]["bufferView"]
    return glb_bytes(b.gl, bytes(b.bin))


def test_draco_without_a_decoder_or_a_plain_copy_is_refused_by_name(monkeypatch):
    """Without DracoPy, the placeholder accessors would read as zeros (the import
    then said 'every triangle is degenerate'): refused, naming the extension and
    the remedy.  With it, data that is no Draco mesh is refused at its buffer
    view.  The plain copy, when there is one, is read either way (the control)."""
    from potsherd.scene import gltf_draco
    with pytest.raises(FormatError) as e:
        read_gltf(_draco(_simple(), fallback=False))
    assert e.value.path == ("$.meshes[0].primitives[0].extensions.KHR_draco_mesh_compression"
                            ".bufferView") and "does not decode" in str(e.value)
    monkeypatch.setattr(gltf_draco, "available", lambda: False)
    with pytest.raises(FormatError) as e:
        read_gltf(_draco(_simple(), fallback=False))
    assert e.value.path == "$.meshes[0].primitives[0].extensions.KHR_draco_mesh_compression"
    assert "decompress the file first" in str(e.value)
    s = read_gltf(_draco(_simple(), fallback=True))       # the plain copy is read
    assert np.array_equal(s.meshes[0].primitives[0].positions, _quad_positions())


def draco_box(required: bool = True) -> tuple[bytes, dict]:
    """A skinned, textured box compressed by Google's Draco encoder (DracoPy),
    laid out as KHR_draco_mesh_compression says: the accessors keep their types
    and have no buffer views, the extension maps each attribute to its Draco id.
    Returns the glb and the values the decoder gives back."""
    DracoPy = pytest.importorskip("DracoPy")
    pos = np.array([[x, y, z] for x in (0, 2) for y in (0, 1) for z in (0, 3)], np.float32)
    faces = np.array([[1, 2, 0], [3, 2, 1], [6, 5, 4], [6, 7, 5], [4, 1, 0], [4, 5, 1],
                      [3, 6, 2], [7, 6, 3], [2, 4, 0], [6, 4, 2], [5, 3, 1], [5, 7, 3]],
                     np.uint32)                                   # outward fronts
    uv = (pos[:, [0, 2]] / [2, 3]).astype(np.float64)
    joints = np.tile([1, 0, 0, 0], (8, 1)).astype(np.uint8)
    joints[pos[:, 0] == 0, 0] = 0
    weights = np.tile([1.0, 0, 0, 0], (8, 1)).astype(np.float32)
    data = DracoPy.encode(pos, faces, quantization_bits=16, tex_coord=uv, preserve_order=True,
                          generic_attributes={5: joints, 6: weights})
    mesh = DracoPy.decode(data)
    ids = {a["attribute_type"]: a["unique_id"] for a in mesh.attributes}
    n = len(mesh.points)
    b = Builder()
    view = b.view(data)
    acc = {name: b.acc(None, ct, n, typ) for name, ct, typ in
           (("POSITION", 5126, "VEC3"), ("TEXCOORD_0", 5126, "VEC2"), ("JOINTS_0", 5121, "VEC4"),
            ("WEIGHTS_0", 5126, "VEC4"))}
    ind = b.acc(None, 5125, len(mesh.faces) * 3, "SCALAR")
    ext = {"bufferView": view, "attributes": {"POSITION": ids[0], "TEXCOORD_0": ids[3],
                                              "JOINTS_0": 5, "WEIGHTS_0": 6}}
    b.gl["meshes"] = [{"primitives": [{"attributes": acc, "indices": ind,
                                       "extensions": {"KHR_draco_mesh_compression": ext}}]}]
    b.gl["nodes"] = [{"name": "hip"}, {"name": "leg", "translation": [2, 0, 0]},
                     {"mesh": 0, "skin": 0, "name": "box"}]
    ibm = np.stack([np.eye(4), np.linalg.inv(np.array(
        [[1, 0, 0, 2], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1.0]]))]).transpose(0, 2, 1)
    b.gl["skins"] = [{"joints": [0, 1], "inverseBindMatrices": b.acc(
        b.view(ibm.astype(np.float32).tobytes()), 5126, 2, "MAT4")}]
    b.gl["scenes"], b.gl["scene"] = [{"nodes": [0, 1, 2]}], 0
    b.gl["extensionsUsed"] = ["KHR_draco_mesh_compression"]
    if required:
        b.gl["extensionsRequired"] = ["KHR_draco_mesh_compression"]
    got = {"positions": np.asarray(mesh.points), "faces": np.asarray(mesh.faces),
           "uv": mesh.get_attribute_by_unique_id(ids[3])["data"],
           "joints": mesh.get_attribute_by_unique_id(5)["data"], "source": pos}
    return b.glb(), got


def test_a_draco_compressed_mesh_reads_like_a_plain_one():
    """Every attribute from the Draco mesh in its accessor's type (JOINTS as
    unsigned bytes, UVs and weights as floats), the faces as indices, with
    ``extensionsRequired`` naming the extension; the box keeps its corners
    within Draco's 16-bit quantisation step."""
    data, want = draco_box()
    s = read_gltf(data)
    prim = s.meshes[0].primitives[0]
    assert np.array_equal(prim.positions, want["positions"])
    assert np.array_equal(prim.indices, want["faces"].reshape(-1))
    assert np.array_equal(prim.uvs[0], want["uv"]) and prim.joints.dtype == np.uint8
    assert np.array_equal(prim.joints, want["joints"]) and np.allclose(prim.weights[:, 0], 1)
    step = 3 / 65535
    assert np.abs(np.sort(prim.positions, axis=0) - np.sort(want["source"], axis=0)).max() <= step
    corners = {tuple(np.round(p, 3)) for p in prim.positions[prim.indices]}
    assert corners == {tuple(p) for p in want["source"].tolist()}     # all 8, used by faces


def test_a_draco_box_imports_into_each_family(tmp_path):
    """Through the importers that take a skinned mesh: the same box comes back."""
    from potsherd.importer import import_gltf
    data, want = draco_box(required=False)
    for ext in ("n3cskins", "dts", "trwad", "fbx"):
        out = tmp_path / f"box.{ext}"
        import_gltf(data, out)
        back = potsherd.read(out)
        scene = back.codec.to_scene(back)
        pts = np.concatenate([t.positions for t in triangle_sets(scene)])
        size = np.ptp(pts, axis=0)
        assert np.allclose(sorted(size), [1, 2, 3], atol=0.02), (ext, size)


def test_potsherd_render_draws_a_draco_box_facing_out(tmp_path):
    """The renderer's own reader decodes Draco too: the 2 x 1 x 3 box, every
    face a front (none drawn magenta, the back-face colour)."""
    from potsherd.export import render as rd
    data, _ = draco_box()
    path = tmp_path / "box.glb"
    path.write_bytes(data)
    tris = rd.scene_triangles(rd.Gltf(str(path)))
    pts = np.concatenate([t["pos"].reshape(-1, 3) for t in tris])
    assert np.allclose(np.ptp(pts, axis=0), [2, 1, 3], atol=1e-3)
    p = np.concatenate([t["pos"] for t in tris])
    volume = np.einsum("ij,ij->i", p[:, 0], np.cross(p[:, 1], p[:, 2])).sum() / 6
    assert volume == pytest.approx(6.0, abs=0.01)         # counter-clockwise fronts outside


def test_damaged_draco_data_reads_or_is_refused_by_name():
    """600 copies of the box with a few bytes of its Draco stream changed: each
    reads, or is refused with a FormatError that is not an internal error (a
    stream that decoded to no points once reached numpy as ``len()`` of
    nothing)."""
    data, _ = draco_box()
    n = struct.unpack_from("<I", data, 12)[0]
    gl = json.loads(data[20:20 + n])
    binary = data[20 + n + 8:]
    view = gl["bufferViews"][0]
    off, length = view.get("byteOffset", 0), view["byteLength"]
    rng = np.random.default_rng(0)
    read = refused = 0
    for _ in range(600):
        b = bytearray(binary)
        for _ in range(int(rng.integers(1, 6))):
            b[off + int(rng.integers(0, length))] = int(rng.integers(0, 256))
        try:
            read_gltf(glb_bytes(gl, bytes(b)))
            read += 1
        except FormatError as e:
            assert not isinstance(e, InternalDecodeError), str(e)
            refused += 1
    assert read and refused                    # both outcomes occur: the damage is real


def test_bad_draco_attribute_ids_are_refused_by_path():
    data, _ = draco_box()
    n = struct.unpack_from("<I", data, 12)[0]
    gl = json.loads(data[20:20 + n])
    binary = data[20 + n + 8:]
    gl["meshes"][0]["primitives"][0]["extensions"]["KHR_draco_mesh_compression"][
        "attributes"]["TEXCOORD_0"] = 99
    with pytest.raises(FormatError) as e:
        read_gltf(glb_bytes(gl, binary))
    assert e.value.path == ("$.meshes[0].primitives[0].extensions.KHR_draco_mesh_compression"
                            ".attributes.TEXCOORD_0") and "no attribute of this id" in str(e.value)


def test_index_out_of_range_names_the_accessor():
    b = _simple()
    b.bin[48:50] = struct.pack("<H", 4)            # first index -> vertex 4 of 4
    with pytest.raises(CountError) as e:
        read_gltf(b.glb())
    assert e.value.path == "$.meshes[0].primitives[0].indices" and e.value.found == 4


def test_container_errors():
    good = _simple().glb()
    with pytest.raises(MagicError):
        read_gltf(b"PK\3\4" + good[4:])
    with pytest.raises(TruncatedError) as e:
        read_gltf(good[:30])
    assert e.value.path == "glb.length"
    with pytest.raises(JsonFormatError) as e:
        read_gltf(b'{"asset": {"version": "2.0"},')
    assert e.value.path == "$" and e.value.offset == 29      # the end, where a name was due
    with pytest.raises(LimitError):
        read_gltf(good, limits=Limits(max_input=100))
    with pytest.raises(LimitError):
        read_gltf(good, limits=Limits(max_elements=5))
    deep = _simple()
    deep.gl["nodes"] = [{"children": [i + 1]} for i in range(300)] + [{}]
    with pytest.raises(LimitError):
        read_gltf(deep.glb())


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_mutated_files_only_raise_format_errors(data):
    raw = bytearray(_simple().glb())
    for _ in range(data.draw(st.integers(1, 6))):
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        raw = raw[:data.draw(st.integers(0, len(raw)))]
    try:
        read_gltf(bytes(raw))
    except InternalDecodeError as e:            # a reader bug
        raise AssertionError(str(e)) from e
    except FormatError:
        pass


def test_all_texture_slots_round_trip():
    """The reader's extra texture slots are written back by the writer (and read again)."""
    s = textured_quad_scene()
    m = s.materials[0]
    m.normal_texture = TextureRef(0, extras={"scale": 0.5})
    m.occlusion_texture = TextureRef(0, texcoord=0, extras={"strength": 0.25})
    m.emissive_texture = TextureRef(0, wrap_s=33071, wrap_t=33071)
    m.metallic_roughness_texture = TextureRef(0)
    gl, _ = scene_to_gltf(s, True)
    mat = gl["materials"][0]
    assert mat["normalTexture"]["scale"] == 0.5 and mat["occlusionTexture"]["strength"] == 0.25
    assert "extras" not in mat["normalTexture"]
    assert len(gl["textures"]) == 2 and len(gl["samplers"]) == 2     # shared where equal
    back = roundtrip(s).materials[0]
    assert back.normal_texture.extras["scale"] == 0.5
    assert back.occlusion_texture.extras["strength"] == 0.25
    assert (back.emissive_texture.wrap_s, back.emissive_texture.wrap_t) == (33071, 33071)
    assert back.metallic_roughness_texture.image == 0
    assert back.base_color_texture.image == 0


def test_external_uri_cases(tmp_path):
    write_gltf(textured_quad_scene(), tmp_path / "q.gltf")
    gl = json.loads((tmp_path / "q.gltf").read_text())
    image_file = tmp_path / gl["images"][0]["uri"]
    image_file.unlink()                                   # a missing texture: kept as a name
    s = read_gltf(tmp_path / "q.gltf")
    assert s.images[0].data is None and s.images[0].uri == image_file.name
    assert any("kept as a reference" in w for w in s.warnings)
    (tmp_path / "q.bin").unlink()                         # a missing buffer: refused
    with pytest.raises(FormatError) as e:
        read_gltf(tmp_path / "q.gltf")
    assert e.value.path == "$.buffers[0].uri"
    with pytest.raises(FormatError) as e:                 # bytes: no folder to look in
        read_gltf((tmp_path / "q.gltf").read_bytes())
    assert e.value.path == "$.buffers[0].uri" and "no folder" in e.value.message


def test_names_the_writer_made_unique_read_back_as_stored():
    s = Scene(name="names")
    s.add_node(Node(name="joint"))
    s.add_node(Node(name="joint"))
    s.add_node(Node(name="b.001"))                       # a real name that looks renamed
    s.add_node(Node(name="joint.001", extras={"originalName": "other"}))
    gl, _ = scene_to_gltf(s, True)
    assert [n["name"] for n in gl["nodes"]] == ["joint", "joint.002", "b.001", "joint.001"]
    back = roundtrip(s)
    assert [n.name for n in back.nodes] == ["joint", "joint", "b.001", "joint.001"]
    assert [n.extras for n in back.nodes] == [{}, {}, {}, {"originalName": "other"}]


def test_an_instanced_nodes_morph_weight_keys_move_every_copy():
    """The instanced node hands its mesh to its copies; a weights animation on it
    went with nothing, so no copy morphed.  Each copy now has the keys."""
    b, _ = _instanced_triangle()
    up = b.acc(b.view(np.array([[0, 0, 1]] * 3, np.float32).tobytes()), 5126, 3, "VEC3")
    b.gl["meshes"][0]["primitives"][0]["targets"] = [{"POSITION": up}]
    times = b.acc(b.view(np.array([0.0, 1.0], np.float32).tobytes()), 5126, 2, "SCALAR",
                  min=[0.0], max=[1.0])
    values = b.acc(b.view(np.array([0.0, 1.0], np.float32).tobytes()), 5126, 2, "SCALAR")
    b.gl["animations"] = [{"samplers": [{"input": times, "output": values}],
                           "channels": [{"sampler": 0, "target": {"node": 0, "path": "weights"}}]}]
    s = read_gltf(b.glb())
    chans = s.animations[0].channels
    assert sorted(c.node for c in chans if c.path == "weights") == [0, 1, 2, 3]
    for c in chans:
        np.testing.assert_array_equal(np.asarray(c.values).reshape(-1), [0.0, 1.0])
