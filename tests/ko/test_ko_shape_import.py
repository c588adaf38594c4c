"""glTF into a Knight Online .n3shape: parts from mesh nodes and materials in the
shape's frame, and ``--like`` giving back the original (also through Blender)."""
from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image as PILImage

import potsherd
from blender_sim import BLENDER, blender_like, run_blender
from potsherd.export.gltf import write_glb
from potsherd.scene import (Image, Material, Mesh, Primitive, Scene, TextureRef, compute_normals,
                            quat_from_axis_angle)
from potsherd.scene.gltf_read import read_gltf
from test_ko_import import CODEC, corner_set, corpus, write_all

LAMP = "Object/obj_ka_01_lamp.n3shape"


def _box(center, size=1.0):
    c = np.asarray(center, np.float32)
    pos = np.array([[x, y, z] for x in (-.5, .5) for y in (-.5, .5) for z in (-.5, .5)],
                   np.float32) * size + c
    idx = np.array([0, 2, 1, 1, 2, 3, 4, 5, 6, 5, 7, 6, 0, 1, 4, 1, 5, 4,
                    2, 6, 3, 3, 6, 7, 0, 4, 2, 2, 4, 6, 1, 3, 5, 3, 7, 5], np.uint32)
    return pos, idx


def lamp_post() -> Scene:
    """A shape node (moved, turned 30 degrees about Y, scaled 2) holding a post
    with two materials (stone, a textured cap) and a lamp node of its own."""
    s = Scene(name="post")
    buf = io.BytesIO()
    PILImage.fromarray(np.full((8, 8, 3), (200, 120, 40), np.uint8)).save(buf, "PNG")
    img = s.add_image(Image(name="cap", data=buf.getvalue()))
    stone = s.add_material(Material(name="stone", base_color=(0.5, 0.5, 0.5, 1.0)))
    cap = s.add_material(Material(name="cap", base_color_texture=TextureRef(img)))
    root = s.add_node(name="post", translation=(10, 0, -4), scale=(2, 2, 2),
                      rotation=quat_from_axis_angle((0, 1, 0), np.pi / 6).reshape(4))
    p1, i1 = _box((0, 1, 0))
    p2, i2 = _box((0, 2, 0), 0.5)
    uv = p2[:, :2] - p2[:, :2].min(0)
    post = s.add_mesh(Mesh(name="post", primitives=[
        Primitive(positions=p1, indices=i1, material=stone),
        Primitive(positions=p2, indices=i2, uvs=[uv], material=cap)]))
    s.add_node(name="column", parent=root, mesh=post, translation=(0.5, 0, 0))
    p3, i3 = _box((0, 0, 0), 0.25)
    s.add_node(name="lamp", parent=root, translation=(0, 3, 0),
               mesh=s.add_mesh(Mesh(name="lamp", primitives=[Primitive(positions=p3, indices=i3,
                                                                        material=stone)])))
    return s


def drawn(files: list, tmp_path, name: str) -> Scene:
    """The imported shape as the export draws it, its files in the client's
    ``Object`` folder under ``tmp_path`` (the data root)."""
    out = tmp_path / "Object"
    out.mkdir()
    write_all(files, out)
    doc = potsherd.read(out / name)
    return doc.codec.to_scene(doc, source_path=str(out / name), data_root=str(tmp_path))


def test_a_new_shape_draws_what_the_gltf_draws(tmp_path):
    src = lamp_post()
    files = CODEC["n3shape"].from_scene(src, out_name="post.n3shape")
    names = [n for n, _ in files]
    assert names[0] == "post.n3shape" and len([n for n in names if n.endswith(".n3pmesh")]) == 3
    assert sum(n.endswith(".dxt") for n in names) == 1           # the cap's texture
    shape = dict(files)["post.n3shape"].root
    assert shape["partCount"] == 3
    assert all(bytes(p["mesh"]).startswith(b"object\\") for p in shape["parts"])
    assert [len(p["textures"]) for p in shape["parts"]] == [0, 1, 0]
    # the same world triangles
    assert corner_set(drawn(files, tmp_path, "post.n3shape")) == corner_set(src)
    # the shape's transform is the root's (mirrored into N3's axes)
    assert np.allclose(shape["transform"]["position"], [-10, 0, -4])
    assert np.allclose(shape["transform"]["scale"], [2, 2, 2])


def test_the_lamp_comes_back_byte_exact_straight_and_blender_like(tmp_path):
    path = corpus(LAMP)
    doc = potsherd.read(path)
    write_glb(doc.codec.to_scene(doc, source_path=str(path)), tmp_path / "x.glb")
    for scene in (read_gltf(tmp_path / "x.glb"), blender_like(read_gltf(tmp_path / "x.glb"))):
        files = CODEC["n3shape"].from_scene(scene, like=doc, out_name=path.name)
        assert [n for n, _ in files][0] == path.name and len(files) == 4
        for name, out in files:
            assert out.encode() == (path.parent / name).read_bytes(), name


def test_an_edited_part_rewrites_its_mesh_only(tmp_path):
    """Negative control: one part's vertex moved.  The shape file and the other
    meshes stay the original's; the edited mesh is regenerated under its name
    and holds the moved vertex."""
    path = corpus(LAMP)
    doc = potsherd.read(path)
    write_glb(doc.codec.to_scene(doc, source_path=str(path)), tmp_path / "x.glb")
    scene = blender_like(read_gltf(tmp_path / "x.glb"))
    node = next(n for n in scene.nodes if n.name.endswith("lamp_fire.n3pmesh"))
    p = scene.meshes[node.mesh].primitives[0]
    p.positions = p.positions.copy()
    p.positions[0] += np.float32(0.25)
    files = dict(CODEC["n3shape"].from_scene(scene, like=doc, out_name=path.name))
    changed = sorted(n for n, d in files.items() if d.encode() != (path.parent / n).read_bytes())
    assert changed == ["obj_ka_01_lamp_fire.n3pmesh"]
    assert any("geometry edited" in w for w in scene.warnings)


@pytest.mark.skipif(BLENDER is None, reason="Blender not installed")
def test_real_blender_round_trip_of_a_shape_is_byte_exact(tmp_path):
    path = corpus(LAMP)
    doc = potsherd.read(path)
    write_glb(doc.codec.to_scene(doc, source_path=str(path)), tmp_path / "x.glb")
    run_blender(tmp_path / "x.glb", tmp_path / "b.glb", tmp_path)
    files = CODEC["n3shape"].from_scene(read_gltf(tmp_path / "b.glb"), like=doc,
                                        out_name=path.name)
    for name, out in files:
        assert out.encode() == (path.parent / name).read_bytes(), name


@pytest.mark.parametrize("side", [262, 40], ids=["over the limit", "under it"])
def test_a_part_over_the_vertex_limit_is_split_into_parts(tmp_path, side):
    """A part over the engine's 65,535 vertices (16-bit indices) was refused; a
    shape can hold any number of parts, so it is split into compact patches
    that each fit, sharing the part's one texture, and the shape draws the
    same triangles.  A part under the limit (the control) stays one part."""
    s = Scene(name="field")
    buf = io.BytesIO()
    PILImage.fromarray(np.full((8, 8, 3), (30, 160, 40), np.uint8)).save(buf, "PNG")
    grass = s.add_material(Material(name="grass", base_color_texture=TextureRef(
        s.add_image(Image(name="grass", data=buf.getvalue())))))
    x, z = np.meshgrid(np.linspace(0, 50, side), np.linspace(0, 50, side))
    pos = np.stack([x.ravel(), np.sin(x.ravel()) * np.cos(z.ravel()), z.ravel()], 1)
    idx = np.arange(side * side).reshape(side, side)
    a, b, c, d = idx[:-1, :-1], idx[:-1, 1:], idx[1:, :-1], idx[1:, 1:]
    tris = np.concatenate([np.stack([a, c, b], -1).reshape(-1, 3),
                           np.stack([b, c, d], -1).reshape(-1, 3)])
    uv = np.stack([x.ravel(), z.ravel()], 1) / 50
    # smooth normals given: without them glTF means flat ones, a vertex per corner
    normals = compute_normals(pos.astype(np.float32), tris.reshape(-1).astype(np.uint32))
    s.add_node(name="field", mesh=s.add_mesh(Mesh(primitives=[Primitive(
        positions=pos.astype(np.float32), normals=normals, uvs=[uv.astype(np.float32)],
        indices=tris.reshape(-1).astype(np.uint32), material=grass)])))
    files = CODEC["n3shape"].from_scene(s, out_name="field.n3shape", no_lod=True)
    meshes = [d for n, d in files if n.endswith(".n3pmesh")]
    assert sum(n.endswith(".dxt") for n, _ in files) == 1             # one texture, shared
    shape = dict(files)["field.n3shape"].root
    if side * side <= 65535:
        assert len(meshes) == 1 and not any("split" in w for w in s.warnings)
    else:
        assert len(meshes) == 2 and shape["partCount"] == 2
        assert all(m.root["vertexCount"] <= 65535 for m in meshes)
        assert any("68644 vertices, over the engine's 65535: split into 2 parts" in w
                   for w in s.warnings)
        assert len({bytes(p["textures"][0]) for p in shape["parts"]}) == 1
    # the same world triangles
    assert corner_set(drawn(files, tmp_path, "field.n3shape")) == corner_set(s)
