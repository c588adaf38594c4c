"""The checking renderer's colours follow glTF's colour spaces.

glTF 2.0 (3.9.2, 3.9.3): baseColorTexture and emissiveTexture texels are
sRGB-encoded; baseColorFactor, COLOR_0 and emissiveFactor are linear.  The base
colour is decode(texel) x factor x COLOR_0 in linear light, lighting scales it
in linear light, emission is added there, and the pixel is sRGB-encoded at the
end.  So a white texture under linear COLOR_0 0.5 and a texture of sRGB 188
(linear 0.5) are the same surface, and must render to the same pixel; the
renderer that multiplied display values drew the first about 60 levels darker.

Expected values come from the IEC 61966-2-1 formulas in ``srgb_formula``
(not the renderer's own)."""
from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image as PILImage

from potsherd.export import render as rd
from potsherd.export.gltf import write_glb
from potsherd.scene import Image, Material, Mesh, Node, Primitive, Scene, TextureRef
from srgb_formula import decode, encode

SIZE = 64
GREY = 188          # sRGB level whose linear value is nearest 0.5


def _png(level: int) -> bytes:
    buf = io.BytesIO()
    PILImage.fromarray(np.full((2, 2, 3), level, np.uint8), "RGB").save(buf, format="PNG")
    return buf.getvalue()


def _quad_glb(path, *, texel: int | None = 255, colour: float | None = None,
              factor: float = 1.0, emissive: tuple = (0.0, 0.0, 0.0),
              emissive_texel: int | None = None, base: float | None = None) -> str:
    """A quad facing +Z (the front view's camera): a uniform ``texel`` texture
    (None: untextured), COLOR_0 = ``colour`` grey (None: none), baseColorFactor
    ``factor`` grey (``base``, when given, replaces it), emissiveFactor and an
    optional uniform emissive texture."""
    s = Scene(name="quad")
    pos = np.array([[-1, -1, 0], [1, -1, 0], [1, 1, 0], [-1, 1, 0]], np.float32)
    uv = np.array([[0, 1], [1, 1], [1, 0], [0, 0]], np.float32)
    prim = Primitive(positions=pos, normals=np.tile([0.0, 0.0, 1.0], (4, 1)).astype(np.float32),
                     uvs=[uv], indices=np.array([0, 1, 2, 0, 2, 3], np.uint8))
    if colour is not None:
        prim.colors = np.tile([colour, colour, colour, 1.0], (4, 1)).astype(np.float32)
    f = factor if base is None else base
    mat = Material(name="m", base_color=(f, f, f, 1.0), emissive=emissive)
    if texel is not None:
        mat.base_color_texture = TextureRef(s.add_image(Image(name="t", data=_png(texel))))
    if emissive_texel is not None:
        mat.emissive_texture = TextureRef(s.add_image(Image(name="e", data=_png(emissive_texel))))
    prim.material = s.add_material(mat)
    s.add_node(Node(name="quad", mesh=s.add_mesh(Mesh(primitives=[prim]))))
    write_glb(s, path)
    return str(path)


def _centre(path: str) -> np.ndarray:
    """The 8-bit RGB of the front tile's centre pixel (below the caption)."""
    a = np.asarray(rd.render(path, size=SIZE, views=("front (+Z)",))).astype(int)
    return a[14 + SIZE // 2, SIZE // 2]


def test_vertex_colour_half_equals_texel_188(tmp_path):
    """COLOR_0 linear 0.5 over white = texel sRGB 188 with no COLOR_0, same light."""
    assert abs(decode(GREY / 255) - 0.5) < 0.003            # 188 is linear 0.5
    coloured = _centre(_quad_glb(tmp_path / "c.glb", texel=255, colour=0.5))
    textured = _centre(_quad_glb(tmp_path / "t.glb", texel=GREY))
    assert np.abs(coloured - textured).max() <= 2, (coloured, textured)
    # and shading is linear light: decoded, each is half the white quad's value
    white = _centre(_quad_glb(tmp_path / "w.glb", texel=255))
    assert white[0] > 200 and len(set(white.tolist())) == 1
    want = 255 * encode(0.5 * decode(white / 255))
    assert np.abs(coloured - want).max() <= 2 and np.abs(textured - want).max() <= 2
    # negative control: the display-space product (texel level x COLOR_0 x shade,
    # what the renderer drew before) separates the two quads by far more
    shade = white / 255
    old_coloured, old_textured = 255 * 0.5 * shade, GREY * shade
    assert np.abs(old_coloured - old_textured).max() > 40


def test_base_colour_factor_half_equals_texel_188(tmp_path):
    """baseColorFactor 0.5 (linear) on a white texture = texel sRGB 188."""
    factored = _centre(_quad_glb(tmp_path / "f.glb", texel=255, factor=0.5))
    textured = _centre(_quad_glb(tmp_path / "t.glb", texel=GREY))
    assert np.abs(factored - textured).max() <= 2, (factored, textured)
    # untextured, uncoloured: the factor alone is the same linear 0.5
    plain = _centre(_quad_glb(tmp_path / "p.glb", texel=None, factor=0.5))
    assert np.abs(plain - textured).max() <= 2, (plain, textured)


def test_factor_colour_and_texel_multiply_in_linear_light(tmp_path):
    """factor x COLOR_0 x decode(texel): 0.8 x 0.5 x decode(200/255)."""
    white = _centre(_quad_glb(tmp_path / "w.glb", texel=255))
    got = _centre(_quad_glb(tmp_path / "x.glb", texel=200, colour=0.5, factor=0.8))
    want = 255 * encode(0.8 * 0.5 * decode(200 / 255) * decode(white / 255))
    assert np.abs(got - want).max() <= 2, (got, want)


@pytest.mark.parametrize("texel, factor", [(GREY, 1.0), (255, 0.5)])
def test_emission_is_added_in_linear_light(tmp_path, texel, factor):
    """On a black base colour only emission shows, unshaded: emissiveFactor x
    decode(emissive texel), encoded: texel 188 at factor 1 and white at factor
    0.5 both show 188 (the display-space product drew white x 0.5 as 128)."""
    got = _centre(_quad_glb(tmp_path / "e.glb", texel=None, base=0.0,
                            emissive=(factor,) * 3, emissive_texel=texel))
    want = 255 * encode(factor * decode(texel / 255))
    assert np.abs(got - want).max() <= 1, (got, want)
    assert abs(want - GREY) <= 1


def test_emissive_factor_without_texture_emits(tmp_path):
    """glTF's emissive texture defaults to white: the factor alone emits."""
    got = _centre(_quad_glb(tmp_path / "e.glb", texel=None, base=0.0, emissive=(0.5, 0.5, 0.5)))
    assert np.abs(got - 255 * encode(0.5)).max() <= 1, got
