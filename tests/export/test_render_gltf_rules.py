"""glTF rules the checking renderer (``potsherd render``) follows as a viewer does:
a mirroring node turns the front face over, EXT_mesh_gpu_instancing draws
every instance, a texture's image may come from EXT_texture_webp (or
KHR_texture_basisu, drawn untextured with a note), and KHR_texture_transform
moves the texture exactly as the reader bakes it for the importers.
Each test has its control: the same file without the rule's cause."""
from __future__ import annotations

import io

import numpy as np
from PIL import Image

from potsherd.export import render as rd
from potsherd.export.gltf import glb_bytes
from potsherd.scene.gltf_read import read_gltf

BACK_TINT = np.array([0.5, 0.0, 0.5])        # a back face with black albedo
BACKGROUND = np.array([0.22, 0.24, 0.27])
SIZE = 64


class Glb:
    """Hand-made glTF: accessors on one buffer, written to a .glb file."""

    def __init__(self):
        self.gl = {"asset": {"version": "2.0"}, "accessors": [], "bufferViews": [],
                   "buffers": [{"byteLength": 0}], "scenes": [{"nodes": [0]}]}
        self.bin = bytearray()

    def view(self, data: bytes) -> int:
        self.bin += b"\0" * ((-len(self.bin)) % 4)
        self.gl["bufferViews"].append({"buffer": 0, "byteOffset": len(self.bin),
                                       "byteLength": len(data)})
        self.bin += data
        return len(self.gl["bufferViews"]) - 1

    def acc(self, arr: np.ndarray, typ: str, ctype: int = 5126, **kw) -> int:
        self.gl["accessors"].append({"bufferView": self.view(np.ascontiguousarray(arr).tobytes()),
                                     "componentType": ctype, "count": len(arr), "type": typ, **kw})
        return len(self.gl["accessors"]) - 1

    def write(self, path) -> str:
        self.gl["buffers"][0]["byteLength"] = len(self.bin)
        path.write_bytes(glb_bytes(self.gl, bytes(self.bin)))
        return str(path)


def _box() -> tuple:
    """A unit cube, counter-clockwise seen from outside (24 vertices, 12 triangles)."""
    pos, idx = [], []
    for axis in range(3):
        for sign in (1.0, -1.0):
            n = np.zeros(3)
            n[axis] = sign
            u = np.roll(n, 1)
            v = np.cross(n, u)                       # u x v = n: counter-clockwise about n
            k = len(pos)
            pos += [0.5 * (n - u - v), 0.5 * (n + u - v), 0.5 * (n + u + v), 0.5 * (n - u + v)]
            idx += [k, k + 1, k + 2, k, k + 2, k + 3]
    return np.array(pos, np.float32), np.array(idx, np.uint16)


def _box_file(tmp_path, node: dict, reverse: bool = False, name: str = "box.glb") -> str:
    pos, idx = _box()
    if reverse:
        idx = idx.reshape(-1, 3)[:, ::-1].reshape(-1)
    b = Glb()
    b.gl["meshes"] = [{"primitives": [{"attributes": {"POSITION": b.acc(pos, "VEC3")},
                                       "indices": b.acc(idx, "SCALAR", 5123)}]}]
    b.gl["nodes"] = [dict(node, mesh=0)]
    return b.write(tmp_path / name)


def _facing(path: str) -> tuple:
    """(covered, back) pixel masks of the front view, drawn with black albedo so
    a front face is exactly black and a back face exactly the magenta tint."""
    tris = rd.scene_triangles(rd.Gltf(path))
    d, up = rd.VIEWS["front (+Z)"]
    basis = rd._basis(d, up)
    q = np.concatenate([t["pos"].reshape(-1, 3) for t in tris]) @ basis.T
    black = [dict(t, color=np.zeros_like(t["color"]), tex=None) for t in tris]
    img = rd._raster(black, basis, SIZE, (q.min(0), q.max(0)))
    covered = ~np.all(np.abs(img - BACKGROUND) < 1e-9, axis=2)
    back = np.all(np.abs(img - BACK_TINT) < 1e-9, axis=2)
    return covered, back


def test_box_is_outward_facing(tmp_path):
    """The baseline: the cube as built shows front faces only."""
    covered, back = _facing(_box_file(tmp_path, {}))
    assert covered.sum() > 1000 and back.sum() == 0


def test_a_mirroring_node_reverses_the_front_face(tmp_path):
    """glTF: a node whose world matrix has a negative determinant draws its
    triangles with the front face clockwise.  mirror.glb (a box on scale
    [-1, 1, 1]) rendered all magenta although it is correct glTF."""
    covered, back = _facing(_box_file(tmp_path, {"scale": [-1, 1, 1]}))
    assert covered.sum() > 1000 and back.sum() == 0
    # the mirror under a parent that mirrors too is a rotation: no reversal
    covered, back = _facing(_box_file(tmp_path, {"scale": [-1, -1, 1]}, name="rot.glb"))
    assert covered.sum() > 1000 and back.sum() == 0


def test_a_mirrored_box_wound_the_wrong_way_is_magenta(tmp_path):
    """The negative control: the same mirrored box with every triangle's index
    order reversed is inside-out, and every covered pixel is a back face."""
    covered, back = _facing(_box_file(tmp_path, {"scale": [-1, 1, 1]}, reverse=True))
    assert covered.sum() > 1000 and np.array_equal(back, covered)
    covered, back = _facing(_box_file(tmp_path, {}, reverse=True, name="plain.glb"))
    assert np.array_equal(back, covered)


def _instanced_file(tmp_path, scales=((1, 1, 1), (1, 1, 1), (-1, 1, 1)),
                    instanced: bool = True) -> str:
    pos, idx = _box()
    b = Glb()
    t = b.acc(np.array([[0, 0, 0], [3, 0, 0], [0, 3, 0]], np.float32), "VEC3")
    s = b.acc(np.array(scales, np.float32), "VEC3")
    b.gl["meshes"] = [{"primitives": [{"attributes": {"POSITION": b.acc(pos, "VEC3")},
                                       "indices": b.acc(idx, "SCALAR", 5123)}]}]
    b.gl["nodes"] = [{"mesh": 0, "translation": [0, 0, -5], "extensions": {
        "EXT_mesh_gpu_instancing": {"attributes": {"TRANSLATION": t, "SCALE": s}}}}]
    b.gl["extensionsUsed"] = ["EXT_mesh_gpu_instancing"]
    if not instanced:
        del b.gl["nodes"][0]["extensions"]
    return b.write(tmp_path / "inst.glb")


def test_every_gpu_instance_is_drawn_where_the_reader_puts_it(tmp_path):
    """EXT_mesh_gpu_instancing: the box once per instance, at node x instance
    (gt_instance.glb drew 12 of its 48 triangles); the mirrored instance is
    front-facing too.  The drawn corners are the reader's world triangles."""
    from potsherd.scene.ops import triangle_sets
    path = _instanced_file(tmp_path)
    (drawn,) = rd.scene_triangles(rd.Gltf(path))
    pos, idx = _box()
    assert drawn["pos"].shape == (36, 3, 3)
    centres = drawn["pos"].reshape(3, 12 * 3, 3).mean(1)
    np.testing.assert_allclose(centres, [[0, 0, -5], [3, 0, -5], [0, 3, -5]], atol=1e-6)
    covered, back = _facing(path)
    assert covered.sum() > 300 and back.sum() == 0
    reader = np.concatenate([t.positions[t.indices.reshape(-1, 3)] for t in
                             triangle_sets(read_gltf(path))])
    assert np.allclose(np.sort(drawn["pos"].reshape(-1, 3), 0), np.sort(reader.reshape(-1, 3), 0))
    sheet = rd.render(path, size=SIZE)
    assert sheet.info["notes"] == []


def test_without_the_extension_one_box_is_drawn(tmp_path):
    """The control: the same node without EXT_mesh_gpu_instancing is one box."""
    (drawn,) = rd.scene_triangles(rd.Gltf(_instanced_file(tmp_path, instanced=False)))
    assert drawn["pos"].shape == (12, 3, 3)
    np.testing.assert_allclose(drawn["pos"].reshape(-1, 3).mean(0), [0, 0, -5], atol=1e-6)


def _png(colours: list, fmt: str = "PNG") -> bytes:
    im = Image.new("RGB", (len(colours), 1))
    for x, c in enumerate(colours):
        im.putpixel((x, 0), c)
    buf = io.BytesIO()
    im.save(buf, fmt, **({"lossless": True} if fmt == "WEBP" else {}))
    return buf.getvalue()


def _textured_quad(tmp_path, image: bytes, texture: dict, info_ext: dict | None = None,
                   name: str = "quad.glb") -> str:
    """A quad facing +Z whose UVs all point at (0.25, 0.5): the left texel of a
    two-texel image."""
    b = Glb()
    pos = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], np.float32)
    uv = np.full((4, 2), [0.25, 0.5], np.float32)
    info = {"index": 0}
    if info_ext:
        info["extensions"] = info_ext
    b.gl.update({
        "images": [{"bufferView": b.view(image)}], "textures": [texture],
        "materials": [{"pbrMetallicRoughness": {"baseColorTexture": info}, "extensions": {
            "KHR_materials_unlit": {}}}],
        "meshes": [{"primitives": [{"attributes": {"POSITION": b.acc(pos, "VEC3"),
                                                   "TEXCOORD_0": b.acc(uv, "VEC2")},
                                    "indices": b.acc(np.array([0, 1, 2, 0, 2, 3], np.uint16),
                                                     "SCALAR", 5123), "material": 0}]}],
        "nodes": [{}]})
    b.gl["nodes"][0]["mesh"] = 0
    return b.write(tmp_path / name)


def _centre_texel(path: str) -> np.ndarray:
    """The base colour the front view's centre pixel samples, unshaded (linear light:
    the texel sRGB-decoded, which leaves 0 and 1 as they are)."""
    (tr,) = rd.scene_triangles(rd.Gltf(path))
    if tr["tex"] is None:
        return None
    bc = np.full((1, 3, 1), 1 / 3)
    return rd._fragment_rgba(tr, np.array([0]), bc)[0, :3]


RED, BLUE = (255, 0, 0), (0, 0, 255)


def test_a_webp_texture_from_its_extension_is_drawn(tmp_path):
    """gt_webp.glb: a texture with only ``extensions.EXT_texture_webp.source``
    failed with "cannot render (KeyError: 'source')"; it is drawn."""
    path = _textured_quad(tmp_path, _png([RED, BLUE], "WEBP"),
                          {"extensions": {"EXT_texture_webp": {"source": 0}}})
    assert np.array_equal(_centre_texel(path), [1, 0, 0])
    sheet = rd.render(path, size=SIZE)
    assert sheet.info["notes"] == []
    # the control: the same picture as a PNG on ``source`` samples the same texel
    path = _textured_quad(tmp_path, _png([RED, BLUE]), {"source": 0}, name="png.glb")
    assert np.array_equal(_centre_texel(path), [1, 0, 0])


def test_a_ktx2_texture_is_drawn_untextured_with_a_note(tmp_path, capsys):
    """KHR_texture_basisu's KTX2 cannot be decoded by Pillow: the render still
    comes out, untextured, and says so (caption and the module's stderr)."""
    ktx2 = rd.KTX2_MAGIC + bytes(80)
    path = _textured_quad(tmp_path, ktx2, {"extensions": {"KHR_texture_basisu": {"source": 0}}})
    assert _centre_texel(path) is None
    sheet = rd.render(path, size=SIZE)
    assert sheet.info["notes"] == ["image 0 is KTX2: drawn untextured"]
    from potsherd.cli.render import main as render_main
    assert render_main([path, str(tmp_path / "k.png"), "--size", "32"]) == 0
    assert "potsherd: warning: image 0 is KTX2: drawn untextured" in capsys.readouterr().err
    from potsherd.cli import main as cli_main                # and `potsherd render` says it
    assert cli_main(["render", str(path), str(tmp_path / "c.png"), "--size", "32"]) == 0
    assert "potsherd: warning: image 0 is KTX2: drawn untextured" in capsys.readouterr().err


def test_texture_transform_moves_the_texture_as_the_reader_bakes_it(tmp_path):
    """KHR_texture_transform offset (0.5, 0) moves (0.25, 0.5) onto the right
    (blue) texel; the renderer's UVs are the ones the reader bakes for importers."""
    tt = {"KHR_texture_transform": {"offset": [0.5, 0.0], "rotation": 0.0, "scale": [1, 1]}}
    path = _textured_quad(tmp_path, _png([RED, BLUE]), {"source": 0}, tt)
    assert np.array_equal(_centre_texel(path), [0, 0, 1])
    (tr,) = rd.scene_triangles(rd.Gltf(path))
    p = read_gltf(path).meshes[0].primitives[0]
    np.testing.assert_allclose(tr["uv"].reshape(-1, 2),
                               p.uvs[0][p.indices.reshape(-1)], atol=1e-6)
    assert np.allclose(tr["uv"], [0.75, 0.5])
    # the control: without the extension the left (red) texel
    path = _textured_quad(tmp_path, _png([RED, BLUE]), {"source": 0}, name="plain.glb")
    assert np.array_equal(_centre_texel(path), [1, 0, 0])
    # malformed, it is ignored as the reader ignores it, and the render says so
    path = _textured_quad(tmp_path, _png([RED, BLUE]), {"source": 0},
                          {"KHR_texture_transform": {"scale": [2]}}, name="bad.glb")
    assert np.array_equal(_centre_texel(path), [1, 0, 0])
    assert any("KHR_texture_transform ignored" in n for n in rd.render(path, size=SIZE).info["notes"])


def test_hostile_instancing_is_a_clean_render_error(tmp_path, capsys):
    """The renderer reads instances through the reader's checks: a bad accessor
    index is a FormatError naming the JSON path, exit status 1, no traceback
    and no output file."""
    from potsherd.cli import main
    path = _instanced_file(tmp_path)
    import json
    import struct
    data = bytearray(open(path, "rb").read())
    n = struct.unpack_from("<I", data, 12)[0]
    gl = json.loads(bytes(data[20:20 + n]))
    gl["nodes"][0]["extensions"]["EXT_mesh_gpu_instancing"]["attributes"]["SCALE"] = 99
    bin_chunk = bytes(data[20 + n + 8:])
    (tmp_path / "bad.glb").write_bytes(glb_bytes(gl, bin_chunk))
    assert main(["render", str(tmp_path / "bad.glb"), str(tmp_path / "bad.png")]) == 1
    err = capsys.readouterr().err
    assert "$.nodes[0].extensions.EXT_mesh_gpu_instancing.attributes.SCALE" in err
    assert "Traceback" not in err and not (tmp_path / "bad.png").exists()


def test_instanced_copies_are_bounded_in_the_renderer(tmp_path):
    """A few bytes per instance can copy a big mesh: the renderer stops at the
    reader's bound with a LimitError (the control: exactly the budget draws)."""
    from potsherd.core.errors import LimitError
    import pytest
    g = rd.Gltf(_instanced_file(tmp_path))
    g.copy_budget = 3 * 24                                 # 3 copies of 24 vertices
    assert len(rd.scene_triangles(g)[0]["pos"]) == 36
    g.copy_budget = 3 * 24 - 1
    with pytest.raises(LimitError) as e:
        rd.scene_triangles(g)
    assert e.value.path == "$.nodes[0].extensions.EXT_mesh_gpu_instancing"
