"""glTF names (unique, valid UTF-8) and the renderer's alpha modes."""
from __future__ import annotations

import io
import json
import os
import struct

import numpy as np
import pytest
from PIL import Image as PILImage

from potsherd.export import render as rd
from potsherd.export.gltf import scene_to_gltf, valid_text, write_glb, write_gltf
from potsherd.scene import (Animation, Channel, Image, Material, Mesh, Node, Primitive, Scene,
                            TextureRef)
from srgb_formula import decode, encode   # (IEC 61966-2-1, not the renderer's)

NEAREST, REPEAT, CLAMP = 9728, 10497, 33071


def _rig_scene() -> Scene:
    s = Scene(name="rig")
    root = s.add_node(Node(name="end_site"))
    for name in ("hip", "end_site", "end_site", "end_site.001", "end_site"):
        s.add_node(Node(name=name), parent=root)
    times = np.array([0.0, 1.0], np.float32)
    for name in ("run", "walk", "run"):
        s.add_animation(Animation(name=name, channels=[Channel(
            1, "translation", times, np.zeros((2, 3), np.float32), "LINEAR")]))
    return s


def test_node_joint_and_animation_names_are_made_unique():
    gl, _ = scene_to_gltf(_rig_scene())
    names = [n["name"] for n in gl["nodes"]]
    assert names == ["end_site", "hip", "end_site.002", "end_site.003", "end_site.001",
                     "end_site.004"]
    assert len(set(names)) == len(names)
    assert [n.get("extras", {}).get("originalName") for n in gl["nodes"]] == \
        [None, None, "end_site", "end_site", None, "end_site"]
    assert [a["name"] for a in gl["animations"]] == ["run", "walk", "run.001"]
    assert gl["animations"][2]["extras"] == {"originalName": "run"}
    assert "extras" not in gl["animations"][0]


def test_unique_names_leave_distinct_names_alone():
    s = Scene(name="plain")
    s.add_node(Node(name="a", extras={"k": 1}))
    s.add_node(Node(name="b"))
    gl, _ = scene_to_gltf(s)
    assert gl["nodes"] == [{"name": "a", "extras": {"k": 1}}, {"name": "b"}]


def test_names_from_undecodable_file_names_become_valid_utf8(tmp_path):
    cp949 = os.fsdecode("갑옷".encode("cp949"))              # surrogate escapes
    junk = os.fsdecode(b"\xff\xfe")                          # neither UTF-8 nor cp949
    assert valid_text({"name": cp949, "list": [junk, "ok"], cp949: 1}) == \
        {"name": "갑옷", "list": ["\ufffd\ufffd", "ok"], "갑옷": 1}
    s = Scene(name=cp949 + ".n3pmesh")
    s.add_node(Node(name=cp949))
    path = tmp_path / (cp949 + ".glb")
    write_glb(s, path)
    data = path.read_bytes()
    gl = json.loads(data[20:20 + struct.unpack_from("<I", data, 12)[0]].decode("utf-8"))
    assert gl["scenes"][0]["name"] == "갑옷.n3pmesh" and gl["nodes"][0]["name"] == "갑옷"


# ---- render alpha ------------------------------------------------------------------

def _png(pixels) -> bytes:
    buf = io.BytesIO()
    PILImage.fromarray(np.array(pixels, np.uint8)).save(buf, format="PNG")
    return buf.getvalue()


def _quad(z: float, material: int) -> Primitive:
    pos = np.array([[-1, -1, z], [1, -1, z], [1, 1, z], [-1, 1, z]], np.float32)
    uv = np.array([[0, 1], [1, 1], [1, 0], [0, 0]], np.float32)
    return Primitive(positions=pos, normals=np.tile([0.0, 0.0, 1.0], (4, 1)).astype(np.float32),
                     uvs=[uv], indices=np.array([0, 1, 2, 0, 2, 3], np.uint8), material=material)


def _alpha_scene(mode: str, left_alpha: int, mag_filter: int | None = NEAREST,
                 wrap: int = REPEAT) -> Scene:
    """A red quad behind a quad whose texture's left texel is magenta with
    ``left_alpha`` and whose right texel is opaque green (sampled NEAREST: two
    flat halves; glTF's unset filter is linear)."""
    s = Scene(name="alpha")
    img = s.add_image(Image(name="keyed", data=_png([[[255, 0, 255, left_alpha],
                                                       [0, 255, 0, 255]]])))
    red = s.add_material(Material(name="red", base_color=(1.0, 0.0, 0.0, 1.0)))
    ref = TextureRef(img, mag_filter=mag_filter, wrap_s=wrap, wrap_t=wrap)
    keyed = s.add_material(Material(name="keyed", base_color_texture=ref,
                                    alpha_mode=mode, double_sided=True))
    s.add_node(Node(name="back", mesh=s.add_mesh(Mesh(primitives=[_quad(-0.5, red)]))))
    s.add_node(Node(name="front", mesh=s.add_mesh(Mesh(primitives=[_quad(0.0, keyed)]))))
    return s


def _front_image(tmp_path, mode: str, left_alpha: int, **kw) -> np.ndarray:
    path = tmp_path / f"{mode}_{left_alpha}_{len(kw)}_{sorted(kw.items())}.glb"
    write_glb(_alpha_scene(mode, left_alpha, **kw), path)
    g = rd.Gltf(str(path))
    tris = rd.scene_triangles(g, None)
    d, up = rd.VIEWS["front (+Z)"]
    basis = rd._basis(d, up)
    q = np.concatenate([t["pos"].reshape(-1, 3) for t in tris]) @ basis.T
    return rd._raster(tris, basis, 64, (q.min(0), q.max(0)))


def _front_pixels(tmp_path, mode: str, left_alpha: int) -> tuple:
    img = _front_image(tmp_path, mode, left_alpha)
    return img[32, 16], img[32, 48]            # left half, right half


@pytest.mark.parametrize("mode", ["MASK", "BLEND"])
def test_alpha_cut_texels_show_what_is_behind(tmp_path, mode):
    left, right = _front_pixels(tmp_path, mode, 0)
    assert left[0] > 0.3 and left[1] < 0.01 and left[2] < 0.01        # the red quad behind
    assert right[1] > 0.3 and right[0] < 0.01 and right[2] < 0.01     # opaque green texel


def test_opaque_ignores_alpha_negative_control(tmp_path):
    left, _ = _front_pixels(tmp_path, "OPAQUE", 0)
    assert left[0] > 0.3 and abs(left[0] - left[2]) < 1e-9 and left[1] < 0.01   # magenta


def test_blend_mixes_half_transparent_texels(tmp_path):
    left, _ = _front_pixels(tmp_path, "BLEND", 128)
    red, _ = _front_pixels(tmp_path, "BLEND", 0)
    magenta, _ = _front_pixels(tmp_path, "OPAQUE", 0)
    # the texel's alpha is linear (never sRGB-decoded) and blending mixes linear
    # light: the pictures are sRGB-encoded, so the mix is of their decoded values
    a = 128 / 255
    want = encode(a * decode(magenta) + (1 - a) * decode(red))
    assert np.allclose(left, want, atol=1e-6)
    # (mixing the encoded values, as the renderer once did, is visibly darker)
    assert np.abs(left - (a * magenta + (1 - a) * red)).max() > 0.1
    # MASK with the default cutoff 0.5 keeps a texel of alpha 128/255 (> 0.5) whole
    kept, _ = _front_pixels(tmp_path, "MASK", 128)
    assert np.allclose(kept, magenta)


def test_scene_text_already_valid_is_kept_and_escapes_are_still_fixed():
    """The writer skips the string walk only when every string encodes as
    UTF-8; a surrogate-escaped (cp949) name anywhere is still decoded."""
    from potsherd.export.gltf import _text_is_valid
    cp949 = os.fsdecode("갑옷".encode("cp949"))
    assert _text_is_valid({"nodes": [{"name": "ok", "extras": {"k": ["é", 1.5]}}]})
    assert not _text_is_valid({"nodes": [{"name": "ok", "extras": {"k": [cp949]}}]})
    assert not _text_is_valid({cp949: 1})
    assert not _text_is_valid({"x": object()})  # not plain JSON: left to the walk
    sc = Scene(name="s")
    sc.add_node(name=cp949, extras={"label": cp949})
    gl, _ = scene_to_gltf(sc, True)
    assert gl["nodes"][0]["name"] == "갑옷" and gl["nodes"][0]["extras"]["label"] == "갑옷"


def test_textures_are_sampled_through_their_sampler(tmp_path):
    """An unset magFilter is linear, as viewers draw it: across the quad the
    two texels blend in linear light, one texel's colour at its centre and
    their decoded mean halfway; CLAMP_TO_EDGE keeps the edge texel's colour at
    the edge where REPEAT blends in the other side's; NEAREST (the control)
    gives two flat halves."""
    row = lambda **kw: _front_image(tmp_path, "OPAQUE", 255, **kw)[32]   # noqa: E731
    linear, clamp, nearest = row(mag_filter=None), row(mag_filter=None, wrap=CLAMP), row()
    covered = np.flatnonzero(np.abs(nearest - nearest[0]).max(1) > 0.05)   # (the quad)
    first, last = int(covered[0]), int(covered[-1])
    centre = (first + last) // 2
    magenta, green = nearest[first + 4], nearest[last - 4]    # (lit: one shade everywhere)
    assert magenta[1] == 0 and magenta[0] == magenta[2] > 0.5 and green[0] == green[2] == 0
    assert np.allclose(nearest[first:centre - 1], magenta, atol=1e-6)   # flat (the control)
    assert np.allclose(nearest[centre + 2:last + 1], green, atol=1e-6)
    # halfway between the texel centres (u = 1/2): the mean of the decoded colours
    mid = clamp[centre:centre + 2].mean(0)
    want = encode(0.5 * decode(magenta) + 0.5 * decode(green))
    assert np.allclose(mid, want, atol=0.03), (mid, want)
    assert np.abs(mid - 0.5 * (magenta + green)).max() > 0.1   # (not the encoded mean)
    # at the left edge: CLAMP keeps magenta, REPEAT blends in the green of the right edge
    assert np.allclose(clamp[first], magenta, atol=1e-6)
    assert linear[first][1] > 0.3 and linear[first][0] > 0.3
